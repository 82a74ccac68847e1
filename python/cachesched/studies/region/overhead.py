"""Overhead (spec E2, the source's section 5.1).

memlat with two regions that fit one cache domain's cache with room to
spare (2 x 1 MiB on Clovertown, 2 x 2 MiB on Westmere: no set conflicts
to win back), so that unification wins nothing and
every cost shows: confined, and unified with per-cache page tables (a
move costs the measured micro-schedule) and with one shared copy (a move
also rewrites the entries of both domains' regions, ``pte_time`` each).
``A`` sets the micro-schedule rate; the overhead is the share of the
unified run's time it would not have spent confined (``1 - confined /
unified``), as the source quotes it (1.5% per 1,000 moves a second is
15.86 us x 1,000 of each second). Then region scheduling as a user
runs it, regions found at run time and falling back when regioning does
not pay, on the same memlat: its overhead over a run without it.
"""

from __future__ import annotations

import pandas as pd

from . import common as c

CLAIMS = (
    ("6", "5.5% overhead at 700 usched/s without per-cache page tables, over 90% of it switching caches",
     "5.5%, >90%"),
    ("7", "A micro-schedule costs 47,600 cycles on Clovertown (1.5% per 1,000/s) and 17,800 on Westmere (0.6%)",
     "1.5% / 0.6% per 1,000/s"),
    ("8", "Overall overhead below 3%, typically 2%", "<3%"),
)

#: Regions that fit one domain's cache, per machine (MiB).
FITS = {"clovertown": 1, "westmere": 2}
LOG2_A = [10, 12, 14, 16]


def table(ctx) -> pd.DataFrame:
    simulate = c.simulator(ctx, "overhead")
    cells, configs = [], []
    for name, m in c.MACHINES.items():
        S = FITS[name] * c.MiB
        for a in LOG2_A:
            A = 1 << a
            warm, measured = c.run_length(S, A)
            base = {"machine": {"preset": m["preset"], "tlb": False},
                    "tasks": [{"workload": c.memlat(S, A, warm + measured)}],
                    "scheduler": {"kind": "pinned"}, "run": {"warmup_accesses": warm}}
            for tables, caches in (("confined", (0, 0)), ("per-cache", (0, 1)), ("shared", (0, 1))):
                mech = c.region_map(S, caches, m["usched"])
                mech[0]["params"]["page_tables"] = "shared" if tables == "shared" else "per-cache"
                cells.append((name, a, tables, m["ghz"]))
                configs.append({**base, "mechanisms": mech})
        # Region scheduling as a user runs it, against no mechanism.
        warm, measured = c.run_length(S, 1 << 16)
        base = {"machine": {"preset": m["preset"], "tlb": False},
                "tasks": [{"workload": c.memlat(S, 1 << 16, warm + measured)}],
                "scheduler": {"kind": "pinned"}, "run": {"warmup_accesses": warm}}
        cells += [(name, 16, "none", m["ghz"]), (name, 16, "regioning", m["ghz"])]
        configs += [base, {**base, "mechanisms": c.regioned(name)}]
    results = simulate(configs)
    rows = []
    for (name, a, tables, ghz), r in zip(cells, results):
        m = r.mechanisms if tables != "none" else None
        get = (lambda k: int(m[k].iloc[0])) if m is not None else (lambda k: 0)
        fallbacks = sum(get(k) for k in ("fallback_c1", "fallback_c2", "fallback_c3")) if tables == "regioning" else 0
        rows.append({"machine": name, "log2_A": a, "run": tables, "cycles": int(r.summary["cycles"]),
                     "usched": get("usched"), "switch_cycles": get("switch_cycles"),
                     "mechanism_cycles": get("cycles"), "fallbacks": fallbacks, "ghz": ghz})
    df = pd.DataFrame(rows)
    # Each run against its reference: the memlat maps against confined,
    # regioning against no mechanism.
    df["reference"] = df.run.map({"confined": "confined", "per-cache": "confined", "shared": "confined",
                                  "none": "none", "regioning": "none"})
    ref = df[df.run == df.reference].set_index(["machine", "log2_A", "reference"]).cycles
    df["overhead"] = [1 - ref[(r.machine, r.log2_A, r.reference)] / r.cycles for r in df.itertuples()]
    df["usched_per_s"] = df.usched / (df.cycles / (df.ghz * 1e9))
    return df.drop(columns="ghz")


def _slope(d: pd.DataFrame) -> float:
    """Overhead per 1,000 micro-schedules a second, fitted through 0."""
    x, y = d.usched_per_s / 1000, d.overhead
    return float((x * y).sum() / (x * x).sum())


def claims(df: pd.DataFrame) -> list[dict]:
    shared = df[(df.machine == "clovertown") & (df.run == "shared")]
    at700 = 0.7 * _slope(shared)
    share = float(shared.switch_cycles.sum() / shared.mechanism_cycles.sum())
    slopes = {m: _slope(df[(df.machine == m) & (df.run == "per-cache")]) for m in c.MACHINES}
    user = df[df.run == "regioning"].set_index("machine")
    return [
        c.claim("6", f"{c.pct(at700)} at 700/s, {c.pct(share)} of it switching caches (Clovertown)",
                c.grade(abs(at700 - 0.055) < 0.015 and share > 0.9, abs(at700 - 0.055) < 0.03 or share > 0.8),
                "pte_time is derived from this claim for a 922-page working set; here the regions are 512 pages, "
                "and the source's two figures do not add up: with a micro-schedule of 47,600 cycles on top, "
                "switching caches can be at most about 82% of a 5.5% overhead"),
        c.claim("7", f"{c.pct(slopes['clovertown'], 2)} per 1,000/s on Clovertown, "
                     f"{c.pct(slopes['westmere'], 2)} on Westmere",
                c.grade(abs(slopes["clovertown"] - 0.0159) < 0.002 and abs(slopes["westmere"] - 0.0064) < 0.001,
                        slopes["clovertown"] > slopes["westmere"]),
                "the model charges the measured cost per move; the slope checks that nothing else grows with "
                "the rate (the source's 1.5% and 0.6% are 47,600 and 17,800 cycles at 3 and 2.8 GHz)"),
        c.claim("8", ", ".join(f"{m} {c.pct(r.overhead, 2)} ({r.usched} moves, fell back {r.fallbacks} time(s))"
                               for m, r in user.iterrows()),
                c.grade((user.overhead.abs() < 0.03).all() and (user.overhead.abs() < 0.025).any(),
                        (user.overhead.abs() < 0.05).all()),
                "regioning finds the two regions fit one cache and falls back (C2) at the end of its first "
                "phase; its faults and scans cost nothing by default (the source gives no figure for them)"),
    ]


def figures(df: pd.DataFrame):
    from ...report.figures import new_figure

    fig, ax = new_figure(ncols=2, width=9, height=3.4)
    for a, (name, d) in zip(ax[0], df[df.run.isin(["per-cache", "shared"])].groupby("machine", sort=False)):
        for run, g in d.groupby("run"):
            a.plot(g.usched_per_s, 100 * g.overhead, marker="o", label=f"{run} page tables")
        a.set_xscale("log")
        c.label(a, "micro-schedules per second", "overhead (%)", name)
    return [("region_overhead", "Overhead per micro-schedule rate (E2)",
             "Unified memlat whose regions fit one cache, against confined: the cost of moving, with one page-table "
             "copy per cache and with one shared copy.", fig)]


def run(ctx):
    return c.part(ctx, "overhead", __doc__, table, claims, figures,
                  "Per machine, access time and run: time, micro-schedules, their cycles (cache switches apart), "
                  "the overhead over the confined run (or over no mechanism) and the rate.")
