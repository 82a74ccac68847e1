"""Part B of the migration study (spec §4): the idealized L2 preservation.

A benchmark runs alone and is forced to migrate between two cores every
post-migration window (PMW) of its own instructions, so that every run of a
benchmark migrates at the same points (spec §8 item 19). At each migration
the destination's L1s and L2 are flushed (`cache-flush`): the task resumes
on a core with no history, as the dissertation's flushed context switch.
The runs differ only in what is put back into the L2 before the task
resumes (`l2-restore`): nothing (*flush*), the whole L2 (*full*, the
reference: exactly the run whose L2 never left, see docs/mechanisms.md), or
a selection of S lines by Local/Regional MRU (*local*) or Global MRU
(*global*). Metrics over the complete windows (spec §4.3):

- Efficiency = (misses(flush) - misses(S)) / |S| per migration;
- MI-MRR = (misses(flush) - misses(S)) / (misses(flush) - misses(full));
- CPI reduction = (CPI(flush) - CPI(S)) / CPI(flush), CPI over the windows;
- touched = restored lines a demand reference used / restored lines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

#: Selection sizes of the dissertation (lines), plus the full L2.
SIZES = (256, 512, 1024, 2048, 4096, 8192, 16384)

Simulate = Callable[[Sequence[dict]], Sequence[object]]


@dataclass(frozen=True)
class Scheme:
    """One run of a benchmark: what is restored."""

    name: str  # "flush", "full", "local" or "global"
    size: int | None = None  # lines, for local and global

    def mechanisms(self, sets: int) -> list[dict]:
        flush = {"kind": "cache-flush", "params": {"on": "migrate"}}
        if self.name == "flush":
            return [flush]
        return [flush, {"kind": "l2-restore", "params": {"select": self.select(sets)}}]

    def select(self, sets: int) -> dict:
        if self.name == "full":
            return {"kind": "all"}
        if self.name == "global":
            return {"kind": "global-mru", "lines": self.size}
        # The dissertation's rule (§4.4): Regional MRU below one line per
        # set, Local MRU-n from there on.
        if self.size < sets:
            return {"kind": "regional-mru", "lines": self.size}
        return {"kind": "local-mru", "n": self.size // sets}


def schemes(sizes: Sequence[int] = SIZES) -> list[Scheme]:
    """flush, full, and local and global MRU at every size."""
    return [Scheme("flush"), Scheme("full")] + [Scheme(k, s) for s in sizes for k in ("local", "global")]


def l2_sets(l2_bytes: int, ways: int = 16, line: int = 64) -> int:
    return l2_bytes // (ways * line)


def config(trace: str | Path, l2_bytes: int, pmw: int, scheme: Scheme, memory_cycles: int = 200) -> dict:
    """The run of `scheme` on `trace`: the Part B machine (preset
    `migration-l2`, no TLB: this part studies the L2), forced live
    migrations between its two cores every `pmw` instructions."""
    return {
        "name": f"l2/{Path(trace).stem}/{l2_bytes >> 20}MiB/pmw{pmw}/{scheme.name}{scheme.size or ''}",
        "machine": {"preset": "migration-l2", "tlb": False, "l2": {"size_bytes": l2_bytes},
                    "memory": {"latency_cycles": memory_cycles}},
        "workload": {"kind": "trace", "params": {"path": str(trace)}},
        "scheduler": {"kind": "forced", "params": {"every": f"{pmw} instr", "destination": "local", "timing": "live"}},
        "stats": {"window": f"{pmw} instr"},
        "mechanisms": scheme.mechanisms(l2_sets(l2_bytes)),
    }


def measure(result) -> dict:
    """Per-migration L2 misses and CPI over the complete windows, and what
    the restores placed and how much of it was used."""
    w = result.windows
    w = w[w.complete]
    caches = result.caches[result.caches.level == "l2"]
    mech = result.mechanisms
    restore = mech[mech.kind == "l2-restore"]
    restores = int(restore.restores.iloc[0]) if len(restore) else 0
    placed = int(caches.migrated_in.sum())
    return {
        "windows": len(w),
        "l2_misses": float(w.l2_misses.mean()) if len(w) else float("nan"),
        "cpi": float(w.cycles.sum() / w.instructions.sum()) if len(w) else float("nan"),
        "restored": placed / restores if restores else 0.0,
        "selected_dirty": float(restore.selected_dirty.iloc[0] / max(int(restore.snapshots.iloc[0]), 1))
        if len(restore) else 0.0,
        "touched": float(caches.migrated_useful.sum() / placed) if placed else float("nan"),
    }


def table(traces: dict[str, Path], combos: Sequence[tuple[int, int]], simulate: Simulate,
          sizes: Sequence[int] = SIZES) -> pd.DataFrame:
    """Every run of every benchmark at every (L2 size, PMW) of `combos`, with
    the metrics relative to the flush and full runs of the same triple."""
    keys, configs = [], []
    for bench, trace in traces.items():
        for l2, pmw in combos:
            for s in schemes([z for z in sizes if z < l2_sets(l2) * 16]):
                keys.append((bench, l2, pmw, s.name, s.size))
                configs.append(config(trace, l2, pmw, s))
    rows = [dict(zip(("benchmark", "l2_bytes", "pmw", "scheme", "size"), k), **measure(r))
            for k, r in zip(keys, simulate(configs))]
    df = pd.DataFrame(rows)
    return derive(df)


def derive(df: pd.DataFrame) -> pd.DataFrame:
    """Add Efficiency, MI-MRR and CPI reduction against the flush and full
    runs of the same benchmark, L2 size and PMW."""
    group = ["benchmark", "l2_bytes", "pmw"]
    base = df[df.scheme == "flush"].set_index(group)[["l2_misses", "cpi"]]
    full = df[df.scheme == "full"].set_index(group)[["l2_misses", "restored"]]
    df = df.join(base.add_suffix("_flush"), on=group).join(full.add_suffix("_full"), on=group)
    removed = df.l2_misses_flush - df.l2_misses
    df["efficiency"] = np.where(df.restored > 0, removed / df.restored.where(df.restored > 0), np.nan)
    benefit = df.l2_misses_flush - df.l2_misses_full
    df["mi_mrr"] = removed / benefit.where(benefit > 0)
    df["cpi_reduction"] = (df.cpi_flush - df.cpi) / df.cpi_flush
    df["cpi_reduction_per_kline"] = df.cpi_reduction / (df.restored / 1024).where(df.restored > 0)
    return df


def _pct(x: float) -> str:
    return "n/a" if np.isnan(x) else f"{100 * x:.0f}%"


def claims(df: pd.DataFrame) -> list[dict]:
    """The claims of spec §4.6 (L1-L9) with the values measured in `df`
    (from :func:`table`): each a dict of id, claim, measured, verdict
    (``holds``, ``partly``, ``does not hold``, ``not comparable``) and why."""
    out = []
    pmw = df.pmw.max()
    main = df[df.pmw == pmw]
    l2_small = main.l2_bytes.min()

    def add(cid: str, claim: str, measured: str, verdict: str, why: str = "") -> None:
        out.append({"id": cid, "claim": claim, "measured": measured, "verdict": verdict, "why": why})

    full = main[(main.scheme == "full") & (main.l2_bytes == l2_small)].set_index("benchmark").touched
    add("L1", "Restoring the whole L2 is inefficient: mcf and bzip2 touch < 30% of the restored lines, most "
        "benchmarks <= 16% (2MB L2)",
        ", ".join(f"{b} {_pct(v)}" for b, v in full.items()),
        "holds" if (full < 0.30).all() and (full <= 0.16).mean() >= 0.5
        else "partly" if (full < 0.30).mean() >= 0.5 else "does not hold",
        "touched = restored lines a demand reference used before they left")
    twelve = main[(main.scheme == "local") & (main["size"] == main.l2_bytes // 64 // 8)]
    hits = twelve[twelve.mi_mrr >= 0.5]
    add("L2", "In several cases >= 50% of the full-L2 benefit (MI-MRR) comes from saving 12.5% of the lines",
        f"{len(hits)} of {len(twelve)} benchmark x L2 cases: "
        + ", ".join(f"{r.benchmark} {r.l2_bytes >> 20}MB {_pct(r.mi_mrr)}" for r in twelve.itertuples()),
        "holds" if len(hits) >= 2 else "partly" if len(hits) == 1 else "does not hold")
    pair = main[main.scheme.isin(["local", "global"])].pivot_table(
        index=["benchmark", "l2_bytes", "size"], columns="scheme", values="mi_mrr").dropna()
    as_good = (pair.local >= pair["global"] - 0.01).mean() if len(pair) else np.nan
    h264 = pair.loc["h264ref"] if "h264ref" in pair.index.get_level_values(0) else None
    h264_gap = float((h264.local - h264["global"]).mean()) if h264 is not None and len(h264) else np.nan
    add("L3", "Local/Regional MRU is as good as or better than Global MRU in general; on h264 (streaming) Local "
        "MRU is significantly better",
        f"local >= global (within 1 point of MI-MRR) in {_pct(as_good)} of cases; h264ref: local - global = "
        f"{h264_gap:+.2f} MI-MRR on average",
        "holds" if as_good >= 0.5 and h264_gap > 0.05 else "partly" if as_good >= 0.5 or h264_gap > 0.05
        else "does not hold")
    small = main[main.scheme.isin(["local", "global"]) & (main["size"] < np.where(main.l2_bytes <= 2 << 20, 1024, 2048))
                 & (main.benchmark != "h264ref")]
    share = (small.efficiency > 0.7).mean() if len(small) else np.nan
    add("L4", "Efficiency is almost always > 70% for S < 1024 (2MB) or S < 2048 (4MB), except h264",
        f"{_pct(share)} of {len(small)} such points above 70% (median {_pct(small.efficiency.median())})",
        "holds" if share >= 0.9 else "partly" if share >= 0.5 else "does not hold")
    over = main[(main.efficiency > 1.0) | (main.mi_mrr > 1.0)]
    add("L5", "Efficiency or MI-MRR above 100% appear as artifacts of migration points that differ between runs",
        f"{len(over)} values above 100% with identical migration points",
        "holds" if over.empty else "partly",
        "our runs migrate at identical points (spec §8 item 19), so no value above 100% can come from measurement; "
        "any left would come from restored lines changing later evictions")
    by_l2 = main[main.scheme == "local"].pivot_table(index=["benchmark", "size"], columns="l2_bytes", values="efficiency")
    if by_l2.shape[1] >= 2:
        small_l2, big_l2 = by_l2.columns.min(), by_l2.columns.max()
        change = (by_l2[big_l2] - by_l2[small_l2]).groupby(level=0).mean()
        others = change.drop("mcf", errors="ignore")
        mcf = change.get("mcf", np.nan)
        add("L6", "Efficiency stays the same or falls with the 4MB L2, except mcf, whose efficiency rises",
            ", ".join(f"{b} {v:+.2f}" for b, v in change.items()),
            "holds" if (others <= 0.05).all() and mcf > 0 else "partly" if (others <= 0.05).mean() >= 0.5
            else "does not hold", "mean change of efficiency from the small to the large L2, same S")
    local = main[(main.scheme == "local") & (main.l2_bytes == l2_small)].sort_values("size")
    falls = local.groupby("benchmark").cpi.apply(lambda c: bool((np.diff(c.to_numpy()) <= 1e-9).all()))
    best = local.groupby("benchmark").apply(
        lambda g: g.loc[g.cpi_reduction_per_kline.idxmax(), "size"] if g.cpi_reduction_per_kline.notna().any() else np.nan,
        include_groups=False)
    add("L7", "CPI falls as S grows; the largest CPI reduction per line is at about 2K lines",
        f"CPI never rises with S for {int(falls.sum())} of {len(falls)} benchmarks; best size per line: "
        + ", ".join(f"{b} {'-' if np.isnan(s) else int(s)}" for b, s in best.items()),
        "holds" if falls.all() and best.between(1024, 4096).mean() >= 0.5
        else "partly" if falls.mean() >= 0.5 else "does not hold")
    at8k = local[local["size"] == 8192].set_index("benchmark").cpi_reduction
    rest = at8k.drop("h264ref", errors="ignore")
    add("L8", "At S = 8K lines the CPI falls by 2-7%, except h264 (about 1%)",
        ", ".join(f"{b} {_pct(v)}" for b, v in at8k.items()),
        "holds" if rest.between(0.02, 0.07).all() else "partly" if rest.between(0.01, 0.10).mean() >= 0.5
        else "does not hold")
    pm = df[(df.scheme == "local") & (df.l2_bytes == df.l2_bytes.max())]
    gm = pm.groupby("pmw").cpi.apply(lambda c: float(np.exp(np.log(c).mean())))
    if len(gm) >= 2:
        short, long_ = gm.iloc[0], gm.iloc[-1]
        diff = abs(short - long_) / long_
        add("L9", "PMW sensitivity (Local MRU, 4MB, geometric mean CPI): the shortest window differs from the "
            "longest (1M vs 2M) by 33-41%",
            f"{gm.index[0]:,} vs {gm.index[-1]:,} instructions: {_pct(diff)}",
            "holds" if 0.33 <= diff <= 0.41 else "partly" if 0.2 <= diff <= 0.5 else "does not hold")
    return out


def figures(df: pd.DataFrame) -> list[tuple[str, str, str, object]]:
    """The figures of Part B as (name, title, caption, matplotlib Figure),
    shaped like the dissertation's: Fig 5.2 (lines touched after a full
    restore), Figs 5.3-5.14 (Efficiency and MI-MRR against S, Local and
    Global MRU), Figs 5.15-5.18 (CPI reduction against S) and Fig 5.19 (the
    PMW's effect)."""
    from ...report.figures import grouped_bars, new_figure

    out = []
    pmw = df.pmw.max()
    main = df[df.pmw == pmw]
    full = main[main.scheme == "full"].assign(l2=lambda d: (d.l2_bytes // (1 << 20)).astype(str) + " MB",
                                             touched_pct=lambda d: 100 * d.touched)
    fig, ax = new_figure()
    grouped_bars(ax[0, 0], full, "benchmark", "touched_pct", "restored lines used (%)", hue="l2")
    out.append(("l2_full_touched", "Whole-L2 restore: lines used (Fig 5.2)",
                ("Share of the lines a full restore places that a demand reference uses before they leave, per "
                 f"benchmark and L2 size (PMW {pmw:,} instructions)."), fig))
    sel = main[main.scheme.isin(["local", "global"])]
    benches = sorted(sel.benchmark.unique())
    for metric, label, name, figs in (("efficiency", "Efficiency", "l2_efficiency", "Figs 5.3-5.14"),
                                      ("mi_mrr", "MI-MRR", "l2_mi_mrr", "Figs 5.3-5.14"),
                                      ("cpi_reduction", "CPI reduction", "l2_cpi_reduction", "Figs 5.15-5.18")):
        l2s = sorted(sel.l2_bytes.unique())
        fig, axes = new_figure(ncols=len(benches), nrows=len(l2s), width=3.0, height=2.6)
        for row, l2 in enumerate(l2s):
            for col, bench in enumerate(benches):
                ax = axes[row, col]
                for scheme, style in (("local", "o-"), ("global", "s--")):
                    d = sel[(sel.benchmark == bench) & (sel.l2_bytes == l2) & (sel.scheme == scheme)].sort_values("size")
                    ax.plot(d["size"], 100 * d[metric], style, label="Local/Regional MRU" if scheme == "local" else "Global MRU")
                ax.set_xscale("log", base=2)
                ax.set_title(f"{bench}, {l2 >> 20} MB", fontsize="small")
                if col == 0:
                    ax.set_ylabel(f"{label} (%)")
                if row == len(l2s) - 1:
                    ax.set_xlabel("lines selected")
        axes[0, 0].legend(fontsize="x-small")
        out.append((name, f"{label} against the selection size ({figs})",
                    f"{label} of Local/Regional MRU and Global MRU selections per benchmark and L2 size.", fig))
    local = df[(df.scheme == "local") & (df.l2_bytes == df.l2_bytes.max())]
    if local.pmw.nunique() >= 2:
        gm = local.groupby(["pmw", "size"]).cpi.apply(lambda c: float(np.exp(np.log(c).mean()))).reset_index()
        fig, ax = new_figure()
        for p, d in gm.groupby("pmw"):
            ax[0, 0].plot(d["size"], d.cpi, "o-", label=f"PMW {p:,}")
        ax[0, 0].set_xscale("log", base=2)
        ax[0, 0].set_xlabel("lines selected")
        ax[0, 0].set_ylabel("CPI (geometric mean)")
        ax[0, 0].legend(fontsize="small")
        out.append(("l2_pmw", "Post-migration window (Fig 5.19)",
                    "Geometric mean CPI over benchmarks of Local MRU restores with the larger L2, per window length.", fig))
    return out


# ---------------------------------------------------------------- the part

#: Benchmarks of the idealized study (§4.1).
PROGRAMS = ("bzip2", "h264ref", "hmmer", "mcf", "omnetpp", "sjeng")
#: Per study (quick or not): selection sizes, and the (L2 bytes, PMW) runs.
#: The quick study's windows are the spec's 2M/1M instructions x 1/4, for
#: traces of about 7M instructions (suite size small).
PLAN = {
    True: {"sizes": (256, 1024, 4096, 8192),
           "combos": ((2 << 20, 500_000), (4 << 20, 500_000), (4 << 20, 250_000))},
    False: {"sizes": SIZES,
            "combos": ((2 << 20, 2_000_000), (4 << 20, 2_000_000), (4 << 20, 1_500_000), (4 << 20, 1_000_000))},
}

CLAIMS = (
    ("L1", "Saving the whole L2 gives low Efficiency: mcf and bzip2 touch < 30 % of restored lines, most ≤ 16 %",
     "< 30 % / ≤ 16 %"),
    ("L2", "≥ 50 % of the full-L2 benefit (MI-MRR) from saving 12.5 % of the lines, in several cases", "≥ 50 %"),
    ("L3", "Local/Regional MRU as good as or better than Global MRU; much better for h264", "Local ≥ Global"),
    ("L4", "Efficiency > 70 % for S < 1024 (2MB) or S < 2048 (4MB), except h264", "> 70 %"),
    ("L5", "Efficiency > 100 % artifacts (bzip2 512, omnetpp 256/512); MI-MRR > 100 % for sjeng",
     "artifacts of differing migration points"),
    ("L6", "Efficiency same or lower with the 4MB L2, except mcf where it rises", "mcf rises"),
    ("L7", "CPI falls as S grows; gains from 2K lines; largest CPI reduction per line at ~2K lines", "~2K lines"),
    ("L8", "At S = 8K, CPI reduction 2–7 %, h264 ~1 %", "2–7 %"),
    ("L9", "PMW 1M versus 2M: 33–41 % larger benefit (20–40 % in general)", "33–41 %"),
)


def run(ctx):
    """Run part B and judge L1-L9; returns its page section."""
    from .. import runs
    from ..page import Section

    plan = PLAN[ctx.quick]
    traces = {b: Path(m["trace"]) for b, m in runs.traces(ctx, PROGRAMS).items()}
    ctx.log(f"{len(PROGRAMS)} benchmarks x {len(plan['combos'])} (L2, PMW) x {2 + 2 * len(plan['sizes'])} runs")
    df = table(traces, plan["combos"], runs.simulator(ctx, f"migration-l2-{ctx.size}"), plan["sizes"])
    reason = (f"open programs instead of SPEC CPU2006 (suite size {ctx.size}); "
              + ("windows of 500K/250K instructions for the spec's 2M/1M" if ctx.quick else "the spec's windows")
              + "; one process alone, no OS activity; migrations every window along one run")
    runs.record_claims(ctx.claims, claims(df), reason, source="l2_runs")
    drawn = runs.draw(lambda: figures(df), ctx.out)
    method = (f"<p>Each benchmark runs alone on the <code>migration-l2</code> machine (L1I 16KiB 2-way, L1D 16KiB "
              f"4-way, private 16-way L2 of 2 or 4 MB, 200-cycle memory, no TLB) and is forced to migrate between "
              f"its two cores every window of its instructions ({', '.join(f'{p:,}' for p in sorted({p for _, p in plan['combos']}))}), "
              "so every run of a benchmark migrates at the same points. At each migration the destination's L1s and "
              "L2 are flushed (<code>cache-flush</code>) and <code>l2-restore</code> places the selection taken from "
              "the L2 the task left: nothing (flush), all valid lines (full, the reference), or S lines by "
              "Local/Regional MRU (Regional below one line per set) or Global MRU. Metrics over the complete "
              "windows: Efficiency = misses removed per migration / lines restored per migration; MI-MRR = misses "
              "removed / misses the full restore removes; CPI reduction against the flush run.</p>")
    return Section("l2", "", method=method, figures=drawn,
                   tables={"l2_runs": (df, "One row per run: window means and the metrics against flush and full.")})
