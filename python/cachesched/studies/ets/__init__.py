"""The elastic-time-slicing study (spec ``elastic-time-slicing.md``): every
experiment of its catalogue that a simulation can run, on the open suite,
and its validation table (§7) with the values measured here.

Modules, one per experiment group, each with ``table`` (runs through a
``simulate`` callable), ``claims`` and ``figures``:

- :mod:`.performance`: ETS vs UTS-2.5/5/10 per policy (E1, E3, E4, E6, E12);
- :mod:`.latency`: the co-runners' latency (E5);
- :mod:`.estimator`: estimator error and switch misses per LLC policy and
  size (E8, E9, E10, E11, E13, E14);
- :mod:`.sharing`: the estimator on a shared, way-partitioned LLC (E7, E8);
- :mod:`.residual`: the complete-eviction check (E2);
- :mod:`.report`: the files and the HTML page.

``run(out_dir, quick)`` records the traces it needs, runs everything and
writes the report; ``python -m cachesched.studies.ets`` does the same from
the command line. See docs/elastic-time-slicing.md, "The study".
"""

from __future__ import annotations

import json
import multiprocessing
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

from . import estimator, latency, performance, report, residual, sharing
from .common import Scale, config, mixes

#: Programs of the quick study (tiny traces: whole runs of 3M to 28M
#: instructions, recorded in seconds each).
QUICK_PROGRAMS = ("bzip2", "hmmer", "mcf", "omnetpp")
QUICK = Scale(factor=4, mix_size=4)
FULL = Scale(factor=4, mix_size=8)


class Simulator:
    """The ``simulate`` callable the tables take: runs a list of configs on
    a process pool, in order, and remembers each result by its config, so
    two experiments that need the same run share it."""

    def __init__(self, workers: int = 2):
        self.workers = workers
        self.cache: dict[str, object] = {}
        self.runs = 0

    def __call__(self, configs: Sequence[dict]) -> list[object]:
        keys = [json.dumps(c, sort_keys=True) for c in configs]
        todo = list(dict.fromkeys(k for k in keys if k not in self.cache))
        if todo:
            if self.workers > 1 and len(todo) > 1:
                ctx = multiprocessing.get_context("forkserver")
                with ProcessPoolExecutor(self.workers, mp_context=ctx) as pool:
                    done = list(pool.map(_simulate, todo))
            else:
                done = [_simulate(k) for k in todo]
            self.cache.update(zip(todo, done))
            self.runs += len(todo)
        return [self.cache[k] for k in keys]


def _simulate(key: str):
    from ...simulate import simulate

    return simulate(json.loads(key))


def manifests(programs: Sequence[str], size: str) -> dict[str, dict]:
    """Record (or reuse) each program's trace of ``size``."""
    from ...workloads import suite

    return {p: suite.record(p, size) for p in programs}


def run(out_dir: str | Path, quick: bool, workers: int = 2, programs: Sequence[str] | None = None,
        size: str | None = None) -> dict:
    """Run the study and write its report under ``out_dir``. ``quick``:
    the tiny traces of four programs, 4 tasks per core; else the small
    traces of every suite program (or of ``programs``), 8 tasks per core.
    Time is scaled down 4x in both. ``programs`` and ``size`` (a suite
    trace size) override the choice. Returns the claims, tables, the files written,
    the number of simulations and the seconds taken."""
    from ...workloads import suite

    start = time.monotonic()
    scale = QUICK if quick else FULL
    size = size or ("tiny" if quick else "small")
    programs = list(programs or (QUICK_PROGRAMS if quick else suite.PROGRAMS))
    found = manifests(programs, size)
    simulate = Simulator(workers)
    alone = mixes(programs, scale.mix_size, fillers=True)
    perf, dist = performance.table(alone, found, simulate, scale)
    lat = latency.table(mixes(programs, 4, fillers=True), found, simulate, scale)
    grid = estimator.ratios(estimator.table(alone, found, simulate, scale))
    shared = sharing.table(programs, found, simulate, scale)
    corun = mixes(programs, min(scale.mix_size, len(programs)))
    res = residual.table(corun, found, simulate, scale)
    claims = (performance.claims(perf, scale) + latency.claims(lat) + sharing.claims(shared)
              + estimator.claims(grid, shared, config(alone[0], found, "uts-2.5", scale))
              + residual.claims(res, scale))
    claims.sort(key=lambda c: int(c["id"]))
    tables = {"performance": perf, "slices": dist, "latency": lat, "estimator": grid, "sharing": shared,
              "residual": res, "traces": pd.DataFrame([{k: m.get(k) for k in (
                  "program", "stands_for", "size", "accesses", "instructions", "footprint_lines")}
                  for m in found.values()])}
    figures = (performance.figures(perf, dist) + latency.figures(lat) + estimator.figures(grid)
               + sharing.figures(shared) + residual.figures(res))
    elapsed = time.monotonic() - start
    notes = (f"{'quick' if quick else 'full'} study: {len(programs)} programs ({size} traces"
             f"{f', cut to {scale.max_accesses:,} accesses' if scale.max_accesses else ''}), time scaled down "
             f"{scale.factor}x (Q = {scale.quantum:,} cycles, Table 1 thresholds {scale.thresholds}), "
             f"{scale.mix_size} tasks per core; {simulate.runs} simulations in {elapsed:.0f} s on {workers} workers.")
    files = report.write(Path(out_dir), claims, tables, figures, notes)
    return {"claims": claims, "tables": tables, "files": files, "runs": simulate.runs,
            "seconds": time.monotonic() - start, "notes": notes}
