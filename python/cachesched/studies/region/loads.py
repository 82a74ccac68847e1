"""Cache loads over time (spec E5, the source's Fig. 18).

The region-scheduled run of the balancing part (E3), read again from the
store: the load of a cache domain at a time is the sum of the working sets
of the memlats that run on its cores then. The source plots its balancer's
loads; these are the loads the caches carry, which follow them once the
tasks have moved. Its result is qualitative: unbalanced first, balanced
after the micro-schedules.
"""

from __future__ import annotations

import pandas as pd

from . import balancing as b
from . import common as c

CLAIMS = ()


def _loads(events: pd.DataFrame, sizes: list[int], per_domain: int) -> pd.DataFrame:
    """Per domain over time: the working sets (MiB) of the memlats running on it."""
    rows, where = [], {}
    for e in events[events.event.isin(["switch_in", "switch_out"])].itertuples():
        if e.event == "switch_in":
            where[e.task] = int(e.core) // per_domain
        else:
            where.pop(e.task, None)
        load = [0.0, 0.0]
        for t, d in where.items():
            load[d] += sizes[int(t)] / c.MiB
        rows.append({"time": int(e.time), "domain_0": load[0], "domain_1": load[1]})
    return pd.DataFrame(rows).groupby("time").last().reset_index()


def table(ctx) -> pd.DataFrame:
    simulate = c.simulator(ctx, "balancing")
    names = list(b.SIZES)
    results = simulate([b.config(name, "region", ctx.size) for name in names])
    frames = []
    for name, r in zip(names, results):
        large, small, _ = b.SIZES[name]
        d = _loads(r.events, [large, large, small, small], b.cores_per_domain(name))
        frames.append(d.assign(machine=name, ms=d.time / (c.MACHINES[name]["ghz"] * 1e6)))
    return pd.concat(frames, ignore_index=True)


def claims(df: pd.DataFrame) -> list[dict]:
    return []


def figures(df: pd.DataFrame):
    from ...report.figures import new_figure

    fig, ax = new_figure(ncols=2, width=9, height=3.2)
    for a, (name, d) in zip(ax[0], df.groupby("machine", sort=False)):
        for domain in ("domain_0", "domain_1"):
            a.step(d.ms, d[domain], where="post", label=domain.replace("_", " "))
        c.label(a, "time (ms)", "working sets running (MiB)", name)
    return [("region_loads", "Cache loads over time under region scheduling (E5)",
             "The working sets of the memlats running on each domain's cores: the two large ones start on domain "
             "0; at the end of the first regioning phase the balancer maps one to domain 1 and it moves there.",
             fig)]


def run(ctx):
    return c.part(ctx, "loads", __doc__, table, claims, figures,
                  "Per machine, at each switch: the working sets (MiB) of the memlats running on each domain.")
