"""The migration interval swept (spec E7).

CG and FT, bound, with stop-the-world migration at 0.2, 0.4, 1, 2, 4 and 10
times their base interval (the bound run over 10: the source's 1 to 50 s
around its 5 s), each with its cost per page scaled as its interval is.
The source found the interval has "no major impact".
"""

from __future__ import annotations

import pandas as pd

from ..page import Section
from . import common as c

CLAIMS = (("E7", "The migration interval (1 s to 50 s) has no major impact on execution time", "flat"),)

FACTORS = (0.2, 0.4, 1, 2, 4, 10)
KERNELS = ("cg", "ft")


def table(ctx) -> pd.DataFrame:
    simulate = c.simulator(ctx, "interval")
    runs = simulate([{"machine": c.machine(ctx.size), "tasks": c.tasks(k, ctx.size)} for k in KERNELS])
    bound = dict(zip(KERNELS, runs))
    configs, labels = [], []
    for k in KERNELS:
        base = max(1, c.cycles(bound[k]) // c.PASSES)
        for f in FACTORS:
            configs.append({"machine": c.machine(ctx.size), "tasks": c.tasks(k, ctx.size),
                            "mechanisms": c.migration(max(1, round(base * f)), "stop-the-world")})
            labels.append((k, f))
    rows = []
    for (k, f), r in zip(labels, simulate(configs)):
        rows.append({"kernel": k, "factor": f, "seconds_at_source_scale": c.SOURCE_INTERVAL_S * f,
                     "time": c.cycles(r), "time_bound": c.cycles(bound[k]), "nonlocal": c.nonlocal_share(r.traffic),
                     "migrations": int(r.mechanisms.iloc[0].migrations)})
    return pd.DataFrame(rows)


def claims(df: pd.DataFrame) -> list[dict]:
    spread = df.groupby("kernel").time.agg(lambda t: t.max() / t.min() - 1)
    return [c.claim("E7", ", ".join(f"{k.upper()}: slowest {v:+.1%} over fastest" for k, v in spread.items()),
                    c.grade((spread <= 0.05).all(), (spread <= 0.15).all()),
                    "the shortest intervals pass before the first iteration's partition shows in the samples, "
                    "and each pass's invalidated lines weigh more in a run of a few iterations")]


def figures(df: pd.DataFrame):
    from ...report.figures import new_figure

    fig, ax = new_figure(width=7)
    a = ax[0, 0]
    for k, g in df.groupby("kernel"):
        a.plot(g.seconds_at_source_scale, g.time / g.time_bound, marker="o", label=k.upper())
    a.set_xscale("log")
    a.set_xlabel("interval (s, at the source's scale)")
    a.set_ylabel("time / bound time")
    a.legend()
    return [("numa_interval", "Interval sweep (E7)", "Execution time against the migration interval.", fig)]


def run(ctx) -> Section:
    return c.part(ctx, "interval", __doc__, table, claims, figures,
                  "Per kernel and interval: time, non-local share and migrations.")
