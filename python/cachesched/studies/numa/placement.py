"""Local against non-local placement (spec E2 and E3, Tables 2 and 3).

One thread on board 0 walks a 64 MiB array (8 times its 8 MiB L2, so that
every reference misses, as the source's invalidation before each access
ensures) sequentially (64-byte stride), strided (4,160 bytes, a page and
a line) and at random (uniform 64-byte elements), its pages bound to board
0 (local) or board 1 (non-local). The slowdown is the non-local time over
the local one. E3, the same walk on two CPUs of one board, needs the
source's banks controlled per CPU, which the model does not have.
"""

from __future__ import annotations

import pandas as pd

from ..claims import NOT_COMPARABLE
from ..page import Section
from . import common as c

CLAIMS = (
    ("E2", "Non-local placement slows an uncached walk about as the latency ratio (1.33), attenuated",
     "1.25, 1.23, 1.18 (sequential, strided, random)"),
    ("E3", "Local pages are 7-11% slower from the board's other CPU (banks controlled by a sibling)",
     "1.11, 1.08, 1.07"),
)

PATTERNS = {
    "sequential": {"stream": {"array": 0, "stride_bytes": 64}, "instructions": 3},
    "strided": {"stream": {"array": 0, "stride_bytes": 4160}, "instructions": 3},
    "random": {"zipf": {"heap": 0, "offset": 0}, "instructions": 3},
}
ACCESSES = {"quick": 200_000, "full": 1_000_000}


def workload(site: dict, accesses: int) -> dict:
    # A near-zero Zipf exponent draws the elements uniformly.
    return {"kind": "loop", "params": {
        "accesses": accesses, "arrays": [{"size_bytes": "64MiB"}],
        "heaps": [{"working_set_bytes": "64MiB", "exponent": 0.001, "element_bytes": 64}], "sites": [site]}}


def table(ctx) -> pd.DataFrame:
    simulate = c.simulator(ctx, "placement")
    configs = [{"machine": {"preset": "numa-sunfire6800", "memory": {"placement": {"bind": node}}},
                "tasks": [{"workload": workload(site, ACCESSES[ctx.size])}]}
               for site in PATTERNS.values() for node in (0, 1)]
    results = simulate(configs)
    rows = []
    for i, name in enumerate(PATTERNS):
        local, remote = c.cycles(results[2 * i]), c.cycles(results[2 * i + 1])
        rows.append({"pattern": name, "local": local, "non_local": remote, "slowdown": remote / local})
    return pd.DataFrame(rows)


def claims(df: pd.DataFrame) -> list[dict]:
    s = df.set_index("pattern").slowdown
    measured = ", ".join(f"{v:.3f}" for v in s)
    return [
        c.claim("E2", f"{measured} (sequential, strided, random; latency ratio 1.33)",
                c.grade(((s >= 1.1) & (s <= 1.26)).all(), ((s >= 1.1) & (s <= 1.34)).all()),
                "the model charges each miss its whole latency, with no memory-level parallelism to hide part of "
                "it (the spec's MLP factor); only the TLB walks of the strided and random walks dilute it"),
        c.claim("E3", "not modelled: memory is per board, not per controlling CPU", NOT_COMPARABLE,
                "the source explains the difference by memory banks each CPU of a board controls; the model's "
                "memory is one node per board (the spec's bank model is optional, 6.1)"),
    ]


def figures(df: pd.DataFrame):
    from ...report.figures import grouped_bars, new_figure

    fig, ax = new_figure(width=6)
    long = df.melt(id_vars="pattern", value_vars=["local", "non_local"], var_name="run", value_name="cycles")
    grouped_bars(ax[0, 0], long.assign(mcycles=long.cycles / 1e6), "pattern", "mcycles", "time (M cycles)")
    return [("numa_placement", "Local and non-local placement (E2)",
             "Time of one thread walking a 64 MiB array, its pages on its board or another (Table 2).", fig)]


def run(ctx) -> Section:
    return c.part(ctx, "placement", __doc__, table, claims, figures,
                  "Per access pattern: time with local and non-local pages, and the slowdown.")
