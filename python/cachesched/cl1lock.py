"""Level-1 cache locking in a multicore (seed 004, part A;
docs/cache-locking.md, "Level-1 locking"): jobs run in batches of one per
core on private I1 and D1 caches and a shared L2, each I1 with ways
locked by the random, static or dynamic strategy; the mean delay per task.

``run(traces, **params)`` takes one trace per job (with its instruction
fetches: ``cachesched record --ifetch``) and returns the tasks and the
mean delay per task.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from . import _core


class Locked(NamedTuple):
    """A run: ``tasks`` (a row per job: ``batch``, ``core``, ``delay``,
    ``instructions``, ``i1_misses``, ``d1_misses``, ``l2_misses``,
    ``locked_ways``, ``code_bytes``) and ``mean_delay`` (the batches'
    slowest delays summed, over the tasks)."""

    tasks: pd.DataFrame
    mean_delay: float


def run(traces: list[str | Path], **params: Any) -> Locked:
    out = json.loads(_core.cl1lock_run(json.dumps(params), [str(t) for t in traces]))
    return Locked(pd.DataFrame(out["tasks"]), out["mean_delay"])
