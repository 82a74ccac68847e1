"""Thin provisioning (spec B1, section 3.2, Figs. 12-17): three VMs, a
database, a file server and a web server, share one hypervisor cache;
each VM's stream is the file I/O of a real program recorded as a block
trace (:mod:`cachesched.workloads.blockio`: sqlite3 running pgbench's
TPC-B-like transactions, tar archiving and extracting a tree, a web-like
reader serving pages by popularity). The shares are the equal split
(static, the dissertation's baseline), moved every second by the six
rules (dynamic), or fixed at the split the VMs' miss-ratio curves call
best (MRC, beyond the dissertation). The cache is 8, 16 and 32 MiB (the
three streams touch about 120 MiB); 4 KiB blocks, hits 10 us, misses
6.11 ms (eq. 4); each VM serves its requests one at a time.

**Load and thresholds.** The recorded times are those of the programs on
this machine, whose page cache served them: replayed as they are, every
VM is saturated (a heavy workload). The thresholds are measured there, as
the dissertation measures them "while the VM runs a heavy workload": each
VM's median requests and misses per second under the equal split, and
1/16 of a share as `C_Threshold`. The compared runs then stretch each
VM's times so that under the equal split it is busy 60% of the time (its
saturated run's length over 0.6 of its trace's span).

**Under the scheduler** (mode ``credit``; the rows above are mode
``replay``). The same three VMs also run as tasks of the engine, one VCPU
each, under Xen's credit scheduler on two cores: each issues its requests
as its VCPU runs, a request once the VM has run for the think time the
trace recorded before it (the gap from the previous request's end), and
waits while the cache serves it. A VM's processing time is then its CPU
time, its turns behind the other VCPUs and its I/O, as the dissertation's
Fig. 14 measures it. The CPU work between requests is a small loop of a
thousand instructions per reference (its caches are not what B1 studies);
the thresholds are those of the replay.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...workloads import blockio
from . import common as c

CLAIMS = (
    ("b1-response", "Dynamic allocation cuts response time: database 25%, file server 17%, web server 14%",
     "Fig. 14: 25%, 17%, 14%"),
    ("b1-limit", "With static allocation every server reaches its cache limit; with dynamic allocation none "
                 "converges (reaches it later or never)", "4.2; Figs. 15-17"),
    ("b1-utilization", "Each server's cache utilization is higher with dynamic allocation", "Figs. 15-17"),
    ("b1-processing", "Dynamic allocation cuts each server's processing time (the VMs under the hypervisor's "
                      "scheduler)", "Fig. 14; spec 3.2"),
)

SERVERS = {"database": "database", "file": "file server", "web": "web server"}
CACHES_MIB = (8, 16, 32)
POLICIES = ("static", "dynamic", "mrc")
MIB = 1 << 20
#: The share of time each VM is busy under the equal split, its times stretched.
UTILIZATION = 0.6
#: The cores the VMs' VCPUs share under the credit scheduler.
CORES = 2


def scheduled(traces, mib: int, policy: str, thresholds: list[dict]):
    """The VMs as tasks of the engine under the credit scheduler, each
    issuing its block trace: their rows and the intervals' series."""
    from ... import simulate

    cpu = {"kind": "stream", "params": {"working_set_bytes": "16KiB", "instructions_per_access": 1000}}
    r = simulate({
        "machine": {"preset": "standard", "sockets": 1, "cores_per_socket": CORES},
        "scheduler": {"kind": "hypervisor", "params": {"policy": "credit"}},
        "tasks": [{"name": name, "vm": i, "io": str(t), "workload": cpu} for i, (name, t) in
                  enumerate(zip(SERVERS, traces))],
        "block_cache": {"cache_bytes": mib * MIB, "policy": policy, "thresholds": thresholds},
    })
    return r.block_vms, r.block_series


def table(ctx) -> tuple[pd.DataFrame, pd.DataFrame]:
    from ... import hcache

    from ... import trace

    traces = [blockio.record(name, ctx.size)["trace"] for name in SERVERS]
    spans = [trace.read_block(t, "msr").time_ns.max() * 1e-9 for t in traces]
    rows, series = [], []
    for mib in CACHES_MIB:
        heavy = hcache.provision(traces, cache_bytes=mib * MIB, policy="static")
        thresholds = heavy.thresholds.to_dict("records")
        scales = [busy / (UTILIZATION * span) for busy, span in zip(heavy.vms.completion_s, spans)]
        for mode, policy in [(m, p) for m in ("replay", "credit") for p in POLICIES]:
            if mode == "replay":
                r = hcache.provision(traces, cache_bytes=mib * MIB, policy=policy, thresholds=thresholds,
                                     time_scale=scales)
                vms, steps, scale = r.vms, r.series, scales
            else:
                (vms, steps), scale = scheduled(traces, mib, policy, thresholds), 1.0
            used = steps.groupby("vm").used.mean()
            rows.append(vms.assign(mode=mode, cache_mib=mib, policy=policy, server=list(SERVERS.values()),
                                   mean_used_mib=used.to_numpy() * 4096 / MIB, time_scale=scale,
                                   threshold_requests=[t["requests"] for t in thresholds],
                                   threshold_misses=[t["misses"] for t in thresholds])
                        .drop(columns=["trace", "vm", "task"], errors="ignore"))
            series.append(steps.assign(mode=mode, cache_mib=mib, policy=policy,
                                       server=steps.vm.map(dict(enumerate(SERVERS.values())))))
    return pd.concat(rows, ignore_index=True), pd.concat(series, ignore_index=True)


def claims(df: pd.DataFrame) -> list[dict]:
    scheduled_df, df = df[df["mode"] == "credit"], df[df["mode"] == "replay"]
    mid = df[df.cache_mib == 16].set_index(["policy", "server"])
    source = {"database": 25, "file server": 17, "web server": 14}
    cut = {s: 100 * (1 - mid.mean_response_ms["dynamic", s] / mid.mean_response_ms["static", s]) for s in source}
    near = [abs(cut[s] - v) <= 10 for s, v in source.items()]
    out = [c.claim("b1-response", "at 16 MiB, mean response time: " + ", ".join(
        f"{s} {cut[s]:+.1f}%" for s in source) + "; at 8 and 32 MiB: " + "; ".join(
        ", ".join(f"{s} {100 * (1 - g.mean_response_ms['dynamic', s] / g.mean_response_ms['static', s]):+.1f}%"
                  for s in source) for _, g in
        ((m, df[df.cache_mib == m].set_index(["policy", "server"])) for m in (8, 32))),
        c.grade(all(near) and all(v > 0 for v in cut.values()), any(v > 0 for v in cut.values())),
        "the rules give blocks to a VM that is busy and misses (rule 1) whether or not more blocks would "
        "turn its misses into hits: the file server's stream never reuses a block, so what it borrows "
        "is lost, and the web server's gain depends on who gave")]
    full = df[df.cache_mib == 16].set_index(["policy", "server"]).full_at_s
    static_full = [not np.isnan(full["static", s]) for s in source]
    later = [np.isnan(full["dynamic", s]) or full["dynamic", s] > full["static", s] for s in source]
    fmt = lambda t: "never" if np.isnan(t) else f"{t:.0f} s"  # noqa: E731
    out.append(c.claim("b1-limit", "at 16 MiB, share first full, static / dynamic: " + ", ".join(
        f"{s} {fmt(full['static', s])} / {fmt(full['dynamic', s])}" for s in source),
        c.grade(all(static_full) and all(later), any(static_full) and any(later)),
        "a share the rules shrink fills sooner than the equal one, and the rules shrink shares from the "
        "first interval (rule 6: a VM below its request threshold with room to spare gives)"))
    used = {s: (mid.mean_used_mib["dynamic", s], mid.mean_used_mib["static", s]) for s in source}
    higher = [d > st for d, st in used.values()]
    out.append(c.claim("b1-utilization", "at 16 MiB, mean MiB held, dynamic / static: " + ", ".join(
        f"{s} {d:.1f} / {st:.1f}" for s, (d, st) in used.items()), c.grade(all(higher), any(higher)),
        "capacity moves between the VMs: what a borrower holds more, a donor holds less; the dissertation's "
        "Task Manager figures were the guests' own caches, not shares of one"))
    done = scheduled_df.set_index(["cache_mib", "policy", "server"]).completion_s
    cuts = {(m, s): 100 * (1 - done[m, "dynamic", s] / done[m, "static", s]) for m in CACHES_MIB for s in source}
    out.append(c.claim("b1-processing", f"under credit on {CORES} cores, processing time cut by dynamic "
                       "allocation: " + "; ".join(f"{m} MiB " + ", ".join(f"{s} {cuts[m, s]:+.1f}%" for s in source)
                                                  for m in CACHES_MIB),
                       c.grade(all(v > 1 for v in cuts.values()), any(v > 1 for v in cuts.values())),
                       "a cut counts above 1% (below it, the order in which VCPUs run decides); a VM's processing "
                       "time is mostly its misses' disk time, so it follows its misses: the rules "
                       "move blocks to the busy VM that misses (the file server, whose stream never reuses a "
                       "block) from VMs that would have hit in them"))
    return out


def figures(df: pd.DataFrame, series: pd.DataFrame):
    from ...report.figures import new_figure

    def bars(d: pd.DataFrame, column: str, ylabel: str):
        """Per cache size, ``column`` of each server under each policy."""
        fig, axes = new_figure(ncols=3, nrows=1, width=4.2, height=3.2)
        for a, mib in zip(axes[0], CACHES_MIB):
            x = np.arange(len(SERVERS))
            for i, policy in enumerate(POLICIES):
                p = d[(d.cache_mib == mib) & (d.policy == policy)].set_index("server").reindex(SERVERS.values())
                a.bar(x + (i - 1) * 0.27, p[column], width=0.27, label=policy)
            a.set_xticks(x, [s.split()[0] for s in SERVERS.values()])
            c.label(a, None, ylabel, f"{mib} MiB cache")
        return fig

    scheduled_df, df = df[df["mode"] == "credit"], df[df["mode"] == "replay"]
    response = ("locking_b1_response", "Response time, static against dynamic allocation (B1; Fig. 14)",
                "Each server's mean response time with the equal split, the rules, and the split from the "
                "miss-ratio curves, for three cache sizes.", bars(df, "mean_response_ms", "mean response (ms)"))
    fig, axes = new_figure(ncols=3, nrows=1, width=4.2, height=3.2)
    s = series[(series["mode"] == "replay") & (series.cache_mib == 16)]
    for a, server in zip(axes[0], SERVERS.values()):
        for policy in ("static", "dynamic"):
            p = s[(s.server == server) & (s.policy == policy)]
            a.plot(p.time_s, p.used * 4096 / MIB, label=f"{policy}: held")
            a.plot(p.time_s, p.alloc * 4096 / MIB, ls="--", label=f"{policy}: share")
        c.label(a, "simulated time (s)", "MiB", server)
    used = ("locking_b1_utilization", "Cache utilization over time (B1; Figs. 15-17)",
            "At 16 MiB: each server's share and the blocks it holds, static and dynamic.", fig)
    processing = ("locking_b1_processing", "Processing time under the credit scheduler (B1; Fig. 14)",
                  f"Each server VM's time from its first request to its last one's end, its VCPU under Xen's credit "
                  f"scheduler with the others on {CORES} cores, for three cache sizes and three allocations.",
                  bars(scheduled_df, "completion_s", "processing time (s)"))
    return [response, used, processing]


def run(ctx):
    return c.part_with(ctx, "provisioning", __doc__, table, claims, figures,
                       "Per mode (replay: the traces' own times; credit: the VMs under the scheduler), cache size, "
                       "policy and server: requests, blocks, hits, misses, completion (s), mean and "
                       "95th percentile response (ms), when its share first filled (s), its share first, at most and "
                       "last (blocks), rule-4 reports, miss %, mean MiB held.")
