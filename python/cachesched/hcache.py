"""The hypervisor cache of seed 004, part B2 (docs/cache-locking.md):
each VM's trace through its own partition of a cache the hypervisor keeps,
with lines locked from its miss table, a victim buffer and LRU or
probability-based replacement, and the I/O response time of its misses.

``run(traces, **params)`` takes one trace per VM (any format the core
reads) and the params of ``[hcache]`` (see the docs), and returns a table
with a row per VM.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from . import _core


def run(traces: list[str | Path], **params: Any) -> pd.DataFrame:
    """Per VM: ``accesses`` (its requests), ``hits`` (``locked_hits`` of
    them), ``victim_hits``, ``misses``, ``bypasses``, ``evictions``,
    ``lines``, ``lock_wanted`` and ``locked`` (the blocks locked),
    ``miss_table`` ((block, misses) rows), ``io_seconds``, and ``miss_pct``
    and ``hit_pct`` (a victim-buffer hit counts as a hit: no disk access)."""
    text = _core.hcache_run(json.dumps(params), [str(t) for t in traces])
    df = pd.DataFrame(json.loads(text))
    served = df.hits + df.victim_hits
    return df.assign(miss_pct=100 * df.misses / df.accesses, hit_pct=100 * served / df.accesses)
