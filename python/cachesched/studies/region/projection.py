"""Hardware execution migration (the source's outlook, claim 15).

The source expects hardware that migrates execution to cut a
micro-schedule from tens of thousands of cycles to about 100. The model
cannot check what such hardware would cost; it can show what that cost
would do to the unification map: E1's grid again (the same confined runs,
read from E1's store), unified with a 100-cycle micro-schedule.
"""

from __future__ import annotations

import pandas as pd

from ..claims import NOT_COMPARABLE
from . import common as c
from .unification import grid

CLAIMS = (
    ("15", "Hardware execution migration could cut a micro-schedule to about 100 cycles", "~100 cycles"),
)

HARDWARE = 100


def table(ctx) -> pd.DataFrame:
    simulate = c.simulator(ctx, "unification")
    cells, configs = [], []
    for name, s_mib, a, base, regions in grid(ctx):
        usched = c.MACHINES[name]["usched"]
        cells.append((name, s_mib, a))
        configs += [{**base, "mechanisms": regions(caches, cost)}
                    for caches, cost in (((0, 0), usched), ((0, 1), usched), ((0, 1), HARDWARE))]
    results = simulate(configs)
    rows = []
    for i, (name, s_mib, a) in enumerate(cells):
        confined, measured, hardware = (int(r.summary["cycles"]) for r in results[3 * i:3 * i + 3])
        rows.append({"machine": name, "S_MiB": s_mib, "log2_A": a, "confined": confined,
                     "gain_measured": confined / measured, "gain_hardware": confined / hardware})
    return pd.DataFrame(rows)


def claims(df: pd.DataFrame) -> list[dict]:
    said = []
    for name, d in df.groupby("machine", sort=False):
        said.append(f"{name}: unification gains (over 5%) in {(d.gain_hardware > 1.05).sum()} of {len(d)} cells at "
                    f"{HARDWARE} cycles against {(d.gain_measured > 1.05).sum()} at the measured cost, and loses at "
                    f"most {c.pct(1 - d.gain_hardware.min())} (against {c.pct(1 - d.gain_measured.min())})")
    return [c.claim("15", "; ".join(said), NOT_COMPARABLE,
                    "a cost estimate for hardware the model cannot check; the figures show what that cost would do "
                    "to the unification map: the losses at short visits all but vanish and the gains reach shorter "
                    "visits; working sets that fit one cache still gain nothing")]


def figures(df: pd.DataFrame):
    from ...report.figures import new_figure

    fig, ax = new_figure(ncols=2, width=9, height=3.4)
    for a, (name, d) in zip(ax[0], df.groupby("machine", sort=False)):
        for col, label in (("gain_measured", "measured cost"), ("gain_hardware", f"{HARDWARE} cycles")):
            best = d.groupby("log2_A")[col].min()
            a.plot(best.index, best, marker="o", label=f"worst cell, {label}")
        a.axhline(1, color="grey", linewidth=0.8)
        c.label(a, "log2 A (references per visit)", "confined / unified", name)
    return [("region_projection", "A 100-cycle micro-schedule (claim 15)",
             "Per access time A, the worst cell of the unification map over the working sets: with the measured "
             "micro-schedule and with a hardware migration of 100 cycles.", fig)]


def run(ctx):
    return c.part(ctx, "projection", __doc__, table, claims, figures,
                  "Per machine, working set and access time: the confined run's cycles and the unification gain at the "
                  "measured micro-schedule cost and at 100 cycles.")
