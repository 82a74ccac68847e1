"""memlat beside a SPEC program (spec E4, the source's Fig. 17).

Clovertown: two 4 MiB memlats, one 16 KiB memlat and one of the open
suite's programs (``small`` traces), one VM with one VCPU each, numbered so
that Xen's credit scheduler first places the program on domain 0 beside a
large memlat, the other large one and the small one on domain 1. Against
it, region scheduling on credit (regions found at run time, a phase of
1 ms every 5 ms, a scan every 1 ms). The source gives no number, only that
balancing shows "substantial potential for all SPEC benchmarks"; here the
program's time under credit over its time under region scheduling.
"""

from __future__ import annotations

import pandas as pd

from . import common as c

CLAIMS = ()

PROGRAMS = {"quick": ("omnetpp", "mcf"), "full": ("omnetpp", "mcf", "gcc", "h264ref")}


def _config(trace: str, region: bool) -> dict:
    program = {"kind": "trace", "params": {"path": str(trace)}}
    workloads = [c.chase(4 * c.MiB, 1_500_000, 0), program, c.chase(4 * c.MiB, 1_500_000, 2),
                 c.chase(16 << 10, 1_500_000, 3)]
    config = {"machine": {"preset": "region-clovertown", "tlb": False},
              "tasks": [{"workload": w, "vm": i, "asid": i} for i, w in enumerate(workloads)],
              "scheduler": {"kind": "hypervisor", "params": {"policy": "credit"}}}
    if region:
        config["mechanisms"] = c.regioned("clovertown")
    return config


def table(ctx) -> pd.DataFrame:
    from ...workloads import suite

    programs = PROGRAMS[ctx.size]
    traces = {p: suite.record(p, "small")["trace"] for p in programs}
    simulate = c.simulator(ctx, "contention")
    results = simulate([_config(traces[p], region) for p in programs for region in (False, True)])
    rows = []
    for i, program in enumerate(programs):
        credit, region = results[2 * i], results[2 * i + 1]
        ends = [r.events[r.events.event == "switch_out"].groupby("task").time.max() for r in (credit, region)]
        rows.append({"program": program, "credit": int(ends[0][1]), "region": int(ends[1][1]),
                     "memlat_credit": int(ends[0][[0, 2]].max()), "memlat_region": int(ends[1][[0, 2]].max()),
                     "usched": c.usched(region)})
    df = pd.DataFrame(rows)
    df["gain"] = df.credit / df.region
    return df


def claims(df: pd.DataFrame) -> list[dict]:
    return []


def figures(df: pd.DataFrame):
    from ...report.figures import new_figure

    fig, ax = new_figure(width=5, height=3.2)
    df.set_index("program")[["gain"]].plot.bar(ax=ax[0, 0], rot=0, legend=False)
    ax[0, 0].axhline(1, color="grey", linewidth=0.8)
    ax[0, 0].set_ylabel("credit time / region time")
    return [("region_contention", "A program beside two large memlats (E4)",
             "Each program's time under credit over its time under region scheduling, on Clovertown beside two "
             "4 MiB memlats and a 16 KiB one.", fig)]


def run(ctx):
    return c.part(ctx, "contention", __doc__, table, claims, figures,
                  "Per program: its finish time (cycles) under credit and region scheduling, the large memlats' "
                  "latest finish under both, the micro-schedules and the program's gain.")
