"""The media server under consolidation (spec E8, the source's sections
5.4-5.5, Fig. 24).

Clovertown. A media server VM (one VCPU) answers requests that arrive at
random (a Poisson process, one per millisecond on average); each request
is the work of transcoding one second of a call's G.711 mu-law audio to
A-law, the open suite's ``sox`` recorded by valgrind (0.85 M instructions,
its start-up skipped), as a media server bridging two carriers does for
every call. The response time of a request is from its arrival to the end
of its work, in simulated time. Three runs, as the source's: (a) the
server alone; (b) consolidated with four SPEC VMs (one VCPU each: the
open suite's mcf, omnetpp, gcc and h264ref, each replayed for as long as
the server runs) under Xen's credit scheduler; (c) the same under region
scheduling on credit, the server the preferred VM: its regions on cache
domain 0, the SPEC VMs' on domain 1 (the source's unfair allocation,
spec 7.11's decision: a reserved cache, given as a partition), regions
found at run time, the idle-CPU rule on, no fall-back.

**Time.** Every time constant is a tenth of the source's, so that a run
of a few hundred requests covers what the source's does in seconds: the
credit scheduler's tick is 1 ms and its slice 3 ms, regioning takes a
phase of 1 ms every 100 ms of a task's CPU time with a scan every 10 ms,
the idle-CPU rule looks every 1 ms. A woken VCPU waits in its core's
queue (UNDER ahead of OVER) until the running VCPU's slice ends: Xen's
BOOST, which lets a waking VCPU preempt, is not modelled
(docs/scheduling.md). Measured per run: each request's response, wait and
service time; each SPEC VM's instructions per cycle of the run (its
progress while the server runs). The full study repeats each run with
three seeds (the arrivals differ) and reports their means.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import common as c

CLAIMS = (
    ("12", "The media server's average response: 7.765 / 19.415 / 32.535 ms (about 40% better)", "40%"),
    ("13", "Up to 15% slowdown of sphinx as the media server's co-runner", "15%"),
)

RUNS = ("alone", "credit", "region")
SPEC = ("mcf", "omnetpp", "gcc", "h264ref")
#: Requests per run and seeds, by study size.
SIZES = {"quick": (100, (1,)), "full": (400, (1, 2, 3))}
GHZ = c.MACHINES["clovertown"]["ghz"]
#: The source's average responses (ms): alone, credit, region.
SOURCE = {"alone": 7.765, "credit": 32.535, "region": 19.415}


def _config(sox: str, traces: dict, run: str, count: int, seed: int) -> dict:
    server = {"name": "media", "vm": 0, "asid": 0, "workload": {"kind": "trace", "params": {"path": str(sox)}},
              "requests": {"count": count, "interval": "1ms", "arrivals": "poisson"}}
    tasks = [server]
    if run != "alone":
        tasks += [{"name": p, "vm": i + 1, "asid": i + 1, "background": True,
                   "workload": {"kind": "trace", "params": {"path": str(traces[p])}}} for i, p in enumerate(SPEC)]
    config = {"seed": seed, "machine": {"preset": "region-clovertown", "tlb": False}, "tasks": tasks,
              "scheduler": {"kind": "hypervisor", "params": {"policy": "credit", "tick": "1ms", "slice": "3ms"}}}
    if run == "region":
        partition = [{"asid": 0, "caches": [0]}] + [{"asid": i + 1, "caches": [1]} for i in range(len(SPEC))]
        config["mechanisms"] = c.regioned("clovertown", fallback=False, partition=partition, period="100ms",
                                          scan_period="10ms", idle_tick="1ms")
    return config


def table(ctx) -> tuple[pd.DataFrame, dict[str, list[float]]]:
    """The table, and every request's response (ms) per run (for the figure)."""
    from ...workloads import suite

    count, seeds = SIZES[ctx.size]
    sox = suite.record("sox", "small")["trace"]
    traces = {p: suite.record(p, "small")["trace"] for p in SPEC}
    cells = [(seed, run) for seed in seeds for run in RUNS]
    results = c.simulator(ctx, "server")([_config(sox, traces, run, count, seed) for seed, run in cells])
    rows, responses = [], {}
    for (seed, run), r in zip(cells, results):
        q = r.requests
        ms = q.response / (GHZ * 1e6)
        responses.setdefault(run, []).extend(ms.tolist())
        row = {"seed": seed, "run": run, "requests": len(q), "avg_ms": ms.mean(), "p50_ms": ms.median(),
               "p95_ms": ms.quantile(0.95), "sd_ms": ms.std(), "wait_ms": q.wait.mean() / (GHZ * 1e6),
               "service_ms": (q.end - q.start).mean() / (GHZ * 1e6)}
        cycles = r.summary["cycles"]
        t = r.tasks.set_index("name")
        for p in SPEC:
            row[f"{p}_ipc"] = float(t.instructions[p]) / cycles if p in t.index else np.nan
        row["usched"] = c.usched(r) if run == "region" else 0
        rows.append(row)
    return pd.DataFrame(rows), responses


def _means(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop(columns="seed").groupby("run", sort=False).mean(numeric_only=True)


def claims(df: pd.DataFrame) -> list[dict]:
    m = _means(df)
    avg = m.avg_ms
    better = 1 - avg.region / avg.credit
    shape = avg.alone < avg.region < avg.credit
    slow = {p: 1 - m.loc["region", f"{p}_ipc"] / m.loc["credit", f"{p}_ipc"] for p in SPEC}
    worst = max(slow, key=slow.get)
    scaled = " / ".join(f"{SOURCE[k] / 10:.3f}" for k in RUNS)
    return [
        c.claim("12", f"average response alone {avg.alone:.3f} ms, credit {avg.credit:.3f} ms, region "
                      f"{avg.region:.3f} ms: {c.pct(better)} below credit (the source's, time scaled by a tenth: "
                      f"{scaled} ms, 40.3% below); 95th percentile {m.p95_ms.credit:.2f} ms under credit, "
                      f"{m.p95_ms.region:.2f} ms under region scheduling; spread (sd) {m.sd_ms.credit:.2f} against "
                      f"{m.sd_ms.region:.2f} ms",
                c.grade(bool(shape) and abs(better - 0.403) <= 0.10, bool(shape) and better > 0),
                "under credit a request that arrives while the SPEC VCPUs hold every core waits for a slice to end "
                "(its wait is most of its response); with the server preferred, the SPEC VMs' regions are on "
                "domain 1, so their VCPUs run there and leave the server's domain free but when the idle-CPU rule "
                "lends it to them; the service time itself changes little (sox's 0.85 M instructions fit either "
                "cache). The order of the three runs is the source's; the size of the gain depends on how long "
                "the idle-CPU rule lends the domain"),
        c.claim("13", "SPEC VMs' progress under region scheduling against credit: "
                      + ", ".join(f"{p} {c.pct(-slow[p])}" for p in SPEC) + f" (largest slowdown: {worst})",
                c.grade(0 < slow[worst] <= 0.20, slow[worst] <= 0.30),
                "four SPEC VCPUs on the two cores of their domain instead of four: they lose CPU time, won back "
                "only while the idle-CPU rule lends them the server's idle cores; the open suite has no sphinx, so "
                "the largest slowdown of the four stands for it"),
    ]


def figures(df: pd.DataFrame, responses: dict[str, list[float]]):
    from ...report.figures import new_figure

    fig, ax = new_figure(ncols=2, width=9, height=3.4)
    for run, values in responses.items():
        v = np.sort(values)
        ax[0, 0].step(v, np.arange(1, len(v) + 1), where="post", label=run)
    c.label(ax[0, 0], "response time (ms)", "requests answered within it", "responses (Fig. 24)")
    m = _means(df)
    ipc = m.loc[["credit", "region"], [f"{p}_ipc" for p in SPEC]].T.rename(index=lambda k: k[:-4])
    ipc.plot.bar(ax=ax[0, 1], rot=0)
    c.label(ax[0, 1], None, "instructions per cycle", "the SPEC VMs' progress")
    return [("region_server", "The media server under consolidation (E8)",
             "Left: the cumulative number of requests against their response time, alone, consolidated under "
             "credit and under region scheduling with the server preferred (a flatter, shorter line is better). "
             "Right: each SPEC VM's instructions per cycle in the consolidated runs.", fig)]


def run(ctx):
    return c.part_with(ctx, "server", __doc__, table, claims, figures,
                       "Per seed and run: requests, response time (average, median, 95th percentile, spread), mean wait "
                       "and service time (ms), each SPEC VM's instructions per cycle and the micro-schedules.")
