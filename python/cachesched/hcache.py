"""The hypervisor cache of seed 004, part B2 (docs/cache-locking.md):
each VM's trace through its own partition of a cache the hypervisor keeps,
with lines locked from its miss table, a victim buffer and LRU or
probability-based replacement, and the I/O response time of its misses.

``run(traces, **params)`` takes one trace per VM (any format the core
reads) and the params of ``[hcache]`` (see the docs), and returns a table
with a row per VM. ``provision(traces, **params)`` runs part B1: the VMs'
block traces at once through shares of one cache, fixed or moved by the
thin-provisioning rules over time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from . import _core
from .results import BLOCK_SERIES_COLUMNS, block_vms


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


class Provisioned(NamedTuple):
    """A thin-provisioning run: ``vms`` (a row per VM: ``requests``,
    ``blocks``, ``hits``, ``misses``, ``miss_pct``, ``completion_s``,
    ``mean_response_ms``, ``p95_response_ms``, ``full_at_s`` (when its share
    first filled; NaN if never), ``first_alloc``, ``peak_alloc``,
    ``final_alloc`` (blocks), ``replacement_flags``), ``series`` (a row per
    VM and interval: ``time_s``, ``alloc``, ``used``, ``requests``,
    ``misses``, ``borrowed``, ``released``), ``thresholds`` (a row per VM:
    ``requests``, ``misses``, ``lines``), the blocks shared (``lines``) and
    the free ``pool`` at the end."""

    vms: pd.DataFrame
    series: pd.DataFrame
    thresholds: pd.DataFrame
    lines: int
    pool: int


def provision(traces: list[str | Path], **params: Any) -> Provisioned:
    """Run one block trace per VM through its share of the cache
    (docs/cache-locking.md, "Thin provisioning")."""
    out = json.loads(_core.provision_run(json.dumps(params), [str(t) for t in traces]))
    series = pd.DataFrame(out["series"], columns=BLOCK_SERIES_COLUMNS)
    return Provisioned(block_vms(out["vms"]), series, pd.DataFrame(out["thresholds"]), out["lines"], out["pool"])
