"""Parts C and D of the migration study (spec §5-6): the migration
prefetcher, and hardware prefetchers to compare with it.

A benchmark runs on one CPU of a 2-socket machine (preset
`migration-prefetch`: one CPU per socket, its 2MB 8-way L2 the chip's last
level, 150-cycle memory) and is forced to migrate to the other socket every
post-migration window (PMW) of its instructions, live or delayed. The
destination's caches are flushed at every migration (`cache-flush`), as the
dissertation's process lands on a CPU where it has never run. The baseline
has no migration hardware; `migration-prefetch` sends Local MRU-1 or All
valid tags. Metrics over the complete windows:

- L2 misses per migration and their reduction (absolute and %, spec §8
  item 1: the figures' axis is ambiguous);
- CPI reduction = (CPI(base) - CPI(scheme)) / CPI(base);
- extra traffic = (tag messages + 2 x prefetches issued) / (2 x the
  baseline's demand L2 misses): a demand miss is a request and a reply, as
  is each prefetch; what the prefetches add over the baseline's messages.

Part D attaches a stride or stream prefetcher to the L2 (docs/prefetchers.md)
alone and with the migration prefetcher: the spec's five configurations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

Simulate = Callable[[Sequence[dict]], Sequence[object]]

#: The migration prefetcher's tag selections of the implementation study.
SELECTIONS = {"local-mru": {"kind": "local-mru", "n": 1}, "all": {"kind": "all"}}

#: Part D: name -> (hardware prefetcher at the L2 or None, migration prefetcher on).
HARDWARE = {
    "migration": (None, True),
    "stride": ({"kind": "stride"}, False),
    "stream": ({"kind": "stream"}, False),
    "migration+stride": ({"kind": "stride"}, True),
    "migration+stream": ({"kind": "stream"}, True),
}


def config(trace: str | Path, pmw: int, timing: str, *, select: str | None, latency: int = 150,
           hardware: dict | None = None) -> dict:
    """One run: `select` the migration prefetcher's tags (None: no
    migration hardware), `hardware` an L2 prefetcher or None."""
    mechanisms = [{"kind": "cache-flush", "params": {"on": "migrate"}}]
    if select is not None:
        mechanisms.append({"kind": "migration-prefetch", "params": {"select": SELECTIONS[select]}})
    machine = {"preset": "migration-prefetch", "tlb": False,
               "memory": {"latency_cycles": latency, "remote_latency_cycles": latency}}
    if hardware is not None:
        machine["l2"] = {"prefetcher": hardware}
    name = f"prefetch/{Path(trace).stem}/{timing}/pmw{pmw}/lat{latency}/{select or 'none'}/{(hardware or {}).get('kind', '-')}"
    return {
        "name": name,
        "machine": machine,
        "workload": {"kind": "trace", "params": {"path": str(trace)}},
        "scheduler": {"kind": "forced", "params": {"every": f"{pmw} instr", "destination": "remote", "timing": timing}},
        "stats": {"window": f"{pmw} instr"},
        "mechanisms": mechanisms,
    }


def measure(result) -> dict:
    """L2 misses and CPI per migration over the complete windows; the tags,
    messages and prefetches the run sent."""
    w = result.windows
    w = w[w.complete]
    l2 = result.caches[result.caches.level == "l2"]
    mech = result.mechanisms
    mp = mech[mech.kind == "migration-prefetch"]
    migrations = len(result.windows)  # a window opens at every migration
    return {
        "windows": len(w),
        "migrations": migrations,
        "l2_misses": float(w.l2_misses.mean()) if len(w) else float("nan"),
        "cpi": float(w.cycles.sum() / w.instructions.sum()) if len(w) else float("nan"),
        "demand_l2_misses": int(l2.load_misses.sum() + l2.store_misses.sum() + l2.ifetch_misses.sum()),
        "tags": int(mp.tags.iloc[0]) if len(mp) else 0,
        "tag_messages": int(mp.messages.iloc[0]) if len(mp) else 0,
        "migration_prefetches": int(l2.migrated_in.sum()),
        "hardware_prefetches": int(l2.prefetch_misses.sum()),
        "prefetched_used": int(l2.migrated_useful.sum() + l2.prefetch_useful.sum()),
    }


def _derive(df: pd.DataFrame, group: list[str], base_mask: pd.Series) -> pd.DataFrame:
    base = df[base_mask].set_index(group)[["l2_misses", "cpi", "demand_l2_misses"]]
    df = df.join(base.add_suffix("_base"), on=group)
    df["miss_reduction"] = df.l2_misses_base - df.l2_misses
    df["miss_reduction_pct"] = df.miss_reduction / df.l2_misses_base
    df["cpi_reduction"] = (df.cpi_base - df.cpi) / df.cpi_base
    prefetches = df.migration_prefetches + df.hardware_prefetches
    df["extra_traffic"] = (df.tag_messages + 2 * prefetches) / (2 * df.demand_l2_misses_base).where(
        df.demand_l2_misses_base > 0)
    return df


def migration_table(traces: dict[str, Path], pmws: Sequence[int], latencies: Sequence[int], simulate: Simulate,
                    timings: Sequence[str] = ("live", "delayed")) -> pd.DataFrame:
    """Part C: every benchmark, timing, PMW and memory latency, without
    migration hardware and with each tag selection."""
    keys, configs = [], []
    for bench, trace in traces.items():
        for timing in timings:
            for pmw in pmws:
                for latency in latencies:
                    for select in (None, *SELECTIONS):
                        keys.append((bench, timing, pmw, latency, select or "none"))
                        configs.append(config(trace, pmw, timing, select=select, latency=latency))
    rows = [dict(zip(("benchmark", "timing", "pmw", "latency", "tags_sent"), k), **measure(r))
            for k, r in zip(keys, simulate(configs))]
    df = pd.DataFrame(rows)
    return _derive(df, ["benchmark", "timing", "pmw", "latency"], df.tags_sent == "none")


def hardware_table(traces: dict[str, Path], pmw: int, simulate: Simulate) -> pd.DataFrame:
    """Part D: the five configurations (remote live migration, Local MRU-1
    tags, spec §6's assumption), CPI normalised to the migration prefetcher
    alone, plus the run without any prefetcher for reference."""
    keys, configs = [], []
    for bench, trace in traces.items():
        for name, (hardware, migration) in {"none": (None, False), **HARDWARE}.items():
            keys.append((bench, name))
            configs.append(config(trace, pmw, "live", select="local-mru" if migration else None, hardware=hardware))
    rows = [dict(zip(("benchmark", "config"), k), **measure(r)) for k, r in zip(keys, simulate(configs))]
    df = pd.DataFrame(rows)
    df = _derive(df, ["benchmark"], df.config == "none")
    own = df[df.config == "migration"].set_index("benchmark").cpi
    df["cpi_vs_migration"] = df.cpi / df.benchmark.map(own)
    return df


def _pct(x: float) -> str:
    return "n/a" if np.isnan(x) else f"{100 * x:.1f}%"


def _range(values: pd.Series) -> str:
    return f"{_pct(values.min())} to {_pct(values.max())}" if len(values) else "n/a"


def _claim(out: list[dict]):
    def add(cid: str, claim: str, measured: str, verdict: str, why: str = "") -> None:
        out.append({"id": cid, "claim": claim, "measured": measured, "verdict": verdict, "why": why})
    return add


def claims(mig: pd.DataFrame) -> list[dict]:
    """The claims of spec §5.8 (M1-M8) with the values measured in the
    table of :func:`migration_table`."""
    out: list[dict] = []
    add = _claim(out)

    pmw, latency = mig.pmw.max(), mig.latency.min()
    main = mig[(mig.pmw == pmw) & (mig.latency == latency)]
    for timing, ids, cpi_range in (("live", ("M1", "M2", "M3"), (0.015, 0.12)), ("delayed", ("M4", "M5", "M6"), (0.015, 0.27))):
        t = main[main.timing == timing]
        if t.empty:
            continue
        by = t.pivot_table(index="benchmark", columns="tags_sent", values=["miss_reduction", "cpi_reduction", "extra_traffic"])
        red, cpi, traffic = by["miss_reduction"], by["cpi_reduction"], by["extra_traffic"]
        removes = (red[["local-mru", "all"]] > 0).all(axis=1).mean()
        add(ids[0], f"{timing.capitalize()}: both Local MRU and All remove many L2 misses; which removes more depends "
            "on the benchmark (All on bzip2; Local MRU on hmmer, h264 and omnetpp, live)",
            "; ".join(f"{b}: local {_pct(t[(t.benchmark == b) & (t.tags_sent == 'local-mru')].miss_reduction_pct.iloc[0])}, "
                      f"all {_pct(t[(t.benchmark == b) & (t.tags_sent == 'all')].miss_reduction_pct.iloc[0])}"
                      for b in red.index),
            "holds" if removes == 1 else "partly" if removes >= 0.5 else "does not hold",
            "miss reduction per migration, % of the baseline's L2 misses in the window")
        lo, hi = cpi_range
        local = cpi["local-mru"]
        within = local.between(lo * 0.5, hi * 1.5).mean()
        ge = (cpi["local-mru"] >= cpi["all"] - 0.005).mean()
        add(ids[1], f"{timing.capitalize()}: Local MRU cuts CPI by {_pct(lo)} to {_pct(hi)}, and is >= All for most "
            "benchmarks",
            f"Local MRU {_range(local)}; Local MRU >= All on {_pct(ge)} of benchmarks",
            "holds" if local.between(lo, hi).all() and ge >= 0.5 else "partly" if within >= 0.5 or ge >= 0.5
            else "does not hold")
        add(ids[2], f"{timing.capitalize()}: All floods the network with extra messages (up to ~1600%); Local MRU "
            "keeps extra traffic low",
            f"extra traffic: Local MRU {_range(traffic['local-mru'])}, All {_range(traffic['all'])}",
            "holds" if (traffic["all"] > 3 * traffic["local-mru"]).all() else
            "partly" if (traffic["all"] > traffic["local-mru"]).all() else "does not hold",
            "extra messages = tag messages + 2 per prefetch, over 2 per baseline demand L2 miss")
    delayed = mig[(mig.timing == "delayed") & (mig.tags_sent != "none") & (mig.latency == latency)]
    if delayed.pmw.nunique() >= 2:
        gm = delayed.groupby(["tags_sent", "pmw"]).cpi_reduction.apply(lambda c: float(np.exp(np.log1p(c).mean()) - 1))
        add("M7", "Delayed, PMW sweep: with All the CPI reduction levels off after 1-1.5M instructions; with Local "
            "MRU it declines slowly as the window grows",
            "; ".join(f"{sel}: " + ", ".join(f"{p:,} {_pct(v)}" for (s2, p), v in gm.items() if s2 == sel)
                      for sel in ("local-mru", "all")),
            "holds" if gm["local-mru"].is_monotonic_decreasing else "partly",
            "geometric mean over benchmarks of 1 + CPI reduction, minus 1; windows scaled to the traces' length")
    live = mig[(mig.timing == "live") & (mig.tags_sent == "local-mru") & (mig.pmw == pmw)]
    if live.latency.nunique() >= 2:
        curve = live.groupby("latency").cpi_reduction.mean()
        mid = curve[curve.index <= 225]
        add("M8", "Memory-latency sweep: from 150 cycles the benefit mostly grows up to 225 cycles, then levels off",
            ", ".join(f"{lat} cycles {_pct(v)}" for lat, v in curve.items()),
            "holds" if mid.is_monotonic_increasing and len(curve) > len(mid) and
            curve.iloc[-1] - mid.iloc[-1] <= mid.iloc[-1] - mid.iloc[0] else
            "partly" if mid.is_monotonic_increasing else "does not hold",
            "mean CPI reduction of Local MRU over benchmarks, live migration")
    return out


def hardware_claims(hw: pd.DataFrame) -> list[dict]:
    """The claims of spec §6 (P1-P3) with the values measured in the table
    of :func:`hardware_table`."""
    out: list[dict] = []
    add = _claim(out)
    if len(hw):
        t = hw.pivot_table(index="benchmark", columns="config", values="cpi")
        beats = (t["migration"] <= t[["stride", "stream"]].min(axis=1))
        add("P1", "The migration prefetcher alone beats stride alone and stream alone on every benchmark except hmmer",
            ", ".join(f"{b} {'yes' if v else 'no'}" for b, v in beats.items()),
            "holds" if beats.drop("hmmer", errors="ignore").all() else
            "partly" if beats.mean() >= 0.5 else "does not hold", "CPI over the windows, lower is better")
        combined = t[["migration+stride", "migration+stream"]].min(axis=1) < t["migration"]
        add("P2", "Migration + stride or + stream gains further on every benchmark except omnetpp",
            ", ".join(f"{b} {'yes' if v else 'no'}" for b, v in combined.items()),
            "holds" if combined.drop("omnetpp", errors="ignore").all() else
            "partly" if combined.mean() >= 0.5 else "does not hold")
        if "hmmer" in t.index:
            h = t.loc["hmmer"]
            add("P3", "hmmer (streaming): stream alone beats the migration prefetcher (2.85%); migration + stream "
                "improves on it by 3.97%",
                f"stream vs migration {_pct(h['migration'] / h['stream'] - 1)}; migration + stream vs migration "
                f"{_pct(h['migration'] / h['migration+stream'] - 1)}",
                "holds" if h["stream"] < h["migration"] and h["migration+stream"] < h["migration"] else
                "partly" if h["migration+stream"] < h["migration"] else "does not hold")
    return out


def figures(mig: pd.DataFrame) -> list[tuple[str, str, str, object]]:
    """The figures of Part C as (name, title, caption, Figure): miss
    reduction, CPI reduction and extra traffic per benchmark for live and
    delayed migration (Figs 5.24-5.30), the PMW and latency sweeps (Figs
    5.31-5.33)."""
    from ...report.figures import grouped_bars, new_figure

    out = []
    pmw, latency = mig.pmw.max(), mig.latency.min()
    main = mig[(mig.pmw == pmw) & (mig.latency == latency) & (mig.tags_sent != "none")].assign(
        miss_pct=lambda d: 100 * d.miss_reduction_pct, cpi_pct=lambda d: 100 * d.cpi_reduction,
        traffic_pct=lambda d: 100 * d.extra_traffic)
    for timing, figs in (("live", "Figs 5.24-5.26"), ("delayed", "Figs 5.28-5.30")):
        t = main[main.timing == timing]
        if t.empty:
            continue
        fig, axes = new_figure(ncols=3, width=4.2)
        for ax, (col, label) in zip(axes[0], (("miss_pct", "L2 misses removed (%)"), ("cpi_pct", "CPI reduction (%)"),
                                             ("traffic_pct", "extra traffic (%)"))):
            grouped_bars(ax, t, "benchmark", col, label, hue="tags_sent")
        out.append((f"prefetch_{timing}", f"{timing.capitalize()} migration prefetching ({figs})",
                    (f"Local MRU-1 and All tags per benchmark, remote {timing} migrations, PMW {pmw:,} "
                     f"instructions, {latency}-cycle memory; relative to the same runs without migration hardware."),
                    fig))
    for col, label, name, caption in (("pmw", "window (instructions)", "prefetch_pmw", "Figs 5.31-5.32"),
                                      ("latency", "memory latency (cycles)", "prefetch_latency", "Fig 5.33")):
        other = "latency" if col == "pmw" else "pmw"
        timing = "delayed" if col == "pmw" else "live"
        d = mig[(mig.tags_sent != "none") & (mig.timing == timing) & (mig[other] == mig[other].min() if col == "pmw" else mig[other] == pmw)]
        if d[col].nunique() < 2:
            continue
        fig, ax = new_figure()
        for sel, g in d.groupby("tags_sent"):
            curve = g.groupby(col).cpi_reduction.mean()
            ax[0, 0].plot(curve.index, 100 * curve.to_numpy(), "o-", label=sel)
        ax[0, 0].set_xlabel(label)
        ax[0, 0].set_ylabel("CPI reduction (%, mean)")
        ax[0, 0].legend(fontsize="small")
        out.append((name, f"CPI reduction against the {label.split(' (')[0]} ({caption})",
                    f"Mean over benchmarks, {timing} migrations.", fig))
    return out


def hardware_figures(hw: pd.DataFrame) -> list[tuple[str, str, str, object]]:
    """The hardware-prefetcher comparison of Part D (Fig 5.34)."""
    from ...report.figures import grouped_bars, new_figure

    out = []
    if len(hw):
        d = hw[hw.config != "none"]
        fig, ax = new_figure(width=8)
        grouped_bars(ax[0, 0], d, "benchmark", "cpi_vs_migration", "CPI / CPI of migration prefetching alone",
                      hue="config")
        out.append(("prefetch_hardware", "Against hardware prefetchers (Fig 5.34)",
                    ("CPI of the five configurations normalised to the migration prefetcher alone (lower is "
                     "better); remote live migrations, Local MRU-1 tags."), fig))
    return out


# ---------------------------------------------------------------- the part

#: Benchmarks of the implementation study (§5.7-5.8, §6).
PROGRAMS = ("bzip2", "h264ref", "hmmer", "mcf", "omnetpp", "sjeng")
#: Per study (quick or not): the main window, the windows of the PMW sweep
#: (delayed) and the memory latencies of the latency sweep (live). The quick
#: study's windows are the spec's x 1/4, for traces of about 7M instructions.
PLAN = {
    True: {"pmw": 500_000, "pmws": (250_000, 500_000), "latencies": (150, 225, 300)},
    False: {"pmw": 2_000_000, "pmws": (500_000, 1_000_000, 1_500_000, 2_000_000),
            "latencies": (150, 175, 200, 225, 250, 275, 300)},
}

CLAIMS = (
    ("M1", ("Live: Local MRU and All both remove many misses; All more for bzip2, Local MRU more for hmmer, "
            "h264, omnetpp"), "ordering"),
    ("M2", "Live: Local MRU cuts CPI by 1.5–12 %", "1.5–12 %"),
    ("M3", "Live: All creates many unused extra messages; Local MRU keeps traffic low", "ordering"),
    ("M4", "Delayed: All removes more misses for bzip2, omnetpp, sjeng; Local MRU about the same for hmmer, h264",
     "ordering"),
    ("M5", "Delayed: Local MRU cuts CPI by 1.5–27 %", "1.5–27 %"),
    ("M6", "Delayed: All's extra traffic up to ~1600 %; Local MRU low", "~1600 %"),
    ("M7", "PMW sweep: All levels off after 1–1.5M instructions; 1–5 % for PMW 512K–1M", "1–5 %"),
    ("M8", "Memory-latency sweep: benefit grows up to 225 cycles, then levels off (not omnetpp, h264)",
     "225 cycles"),
)


def _reason(ctx) -> str:
    return (f"open programs instead of SPEC CPU2006 (suite size {ctx.size}); "
            + ("windows of the spec's length x 1/4" if ctx.quick else "the spec's windows")
            + "; no coherence or network model (traffic counted in messages); migrations every window along one run, "
              "so live and delayed differ only in the messages (the destination is flushed either way)")


def run(ctx):
    """Run part C and judge M1-M8; returns its page section."""
    from .. import runs
    from ..page import Section

    plan = PLAN[ctx.quick]
    traces = {b: Path(m["trace"]) for b, m in runs.traces(ctx, PROGRAMS).items()}
    sim = runs.simulator(ctx, f"migration-prefetch-{ctx.size}")
    main = migration_table(traces, [plan["pmw"]], plan["latencies"][:1], sim)
    sweep_pmw = migration_table(traces, plan["pmws"], plan["latencies"][:1], sim, timings=("delayed",))
    sweep_latency = migration_table(traces, [plan["pmw"]], plan["latencies"], sim, timings=("live",))
    df = pd.concat([main, sweep_pmw, sweep_latency]).drop_duplicates(
        subset=["benchmark", "timing", "pmw", "latency", "tags_sent"]).reset_index(drop=True)
    runs.record_claims(ctx.claims, claims(df), _reason(ctx), source="prefetch_runs")
    drawn = runs.draw(lambda: figures(df), ctx.out)
    method = ("<p>Each benchmark runs on one CPU of the <code>migration-prefetch</code> machine (2 sockets x 1 CPU, "
              "L1D 64KiB 4-way, the socket's 2MB 8-way L2, 150-cycle memory, no TLB) and is forced to migrate to the "
              f"other socket every {plan['pmw']:,} instructions (live or delayed); the destination's caches are "
              "flushed at each migration, as for a process landing where it never ran. "
              "<code>migration-prefetch</code> sends Local MRU-1 or All valid tags in messages of 16, prefetched "
              "into the L2 at one per cycle; the baseline has no migration hardware. Extra traffic = (tag messages "
              "+ 2 per prefetch) / (2 per baseline demand L2 miss).</p>")
    return Section("prefetch", "", method=method, figures=drawn,
                   tables={"prefetch_runs": (df, "One row per run: window means and reductions against the baseline.")})
