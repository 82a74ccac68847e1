"""Latency between consecutive schedules of the co-runners (spec E5,
Figure 8; claim 5).

Four tasks share a core (one VM with four workloads, spec §3.3: the
paper's 30 / 7.5 ms imply four): the application of interest and three
filler co-runners, every level flushed at each switch (the runs of
:mod:`.performance` when it too has four tasks per core), under UTS-2.5, UTS-10 and ETS with the
application of interest elastic. A co-runner's latency is the gap from the
end of one of its schedules to the start of the next, in spec ms (Q = 2.5
ms); per run, the co-runners' means are averaged and the largest
(population) standard deviation kept.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..page import Section
from ..runs import draw, record_claims
from .common import (
    reason,
    Mix,
    Scale,
    Simulate,
    claim,
    common,
    config,
    grade,
    method,
    mixes,
    setup,
    simulator,
    spec_ms,
)

KINDS = ("uts-2.5", "uts-10", "ets")
#: The paper's values (ms): mean per scheduler, and ETS's largest std (HMMER).
PAPER = {"uts-10": 30.0, "uts-2.5": 7.5, "ets": 7.5}
PAPER_STD = 3.7


CLAIMS = (
    ("5", "Co-runner latency under UTS-10 / UTS-2.5 / ETS; its std under UTS; ETS's largest std",
     "30 / 7.5 / 7.5 ms; 0; 3.7 ms (HMMER)"),
)


def gaps(s: pd.DataFrame, scale: Scale) -> pd.DataFrame:
    """Per task: number of gaps, their mean and population std in spec ms."""
    s = s.dropna(subset=["gap"])
    ms = spec_ms(s.gap.astype(float), scale).groupby(s.name)
    return pd.DataFrame({"gaps": ms.size(), "mean_ms": ms.mean(), "std_ms": ms.std(ddof=0)}).reset_index()


def table(mixes: list[Mix], manifests: dict[str, dict], simulate: Simulate, scale: Scale) -> pd.DataFrame:
    """One row per mix and scheduler: the co-runners' latency (LRU, 2 MB)."""
    keys, configs = [], []
    for mix in mixes:
        for kind in KINDS:
            keys.append((mix, kind))
            configs.append(config(mix, manifests, kind, scale, flush=True))
    rows = []
    for (mix, kind), result in zip(keys, simulate(configs)):
        g = gaps(common(result), scale)
        co = g[g.name != mix.app]
        rows.append({"app": mix.app, "tasks": len(mix.names), "scheduler": kind, "gaps": int(co.gaps.sum()),
                     "mean_ms": float(co.mean_ms.mean()), "std_ms": float(co.std_ms.max())})
    return pd.DataFrame(rows)


def claims(df: pd.DataFrame) -> list[dict]:
    """Claim 5 from the table of :func:`table`."""
    mean = df.groupby("scheduler").mean_ms.mean()
    uts_std = float(df[df.scheduler != "ets"].std_ms.max())
    ets = df[df.scheduler == "ets"].set_index("app").std_ms
    app, top = (str(ets.idxmax()), float(ets.max())) if ets.notna().any() else ("-", float("nan"))
    means_ok = all(abs(mean.get(k, np.nan) - v) <= 0.1 * v for k, v in PAPER.items())
    uts_ok = all(abs(mean.get(k, np.nan) - PAPER[k]) <= 0.1 * PAPER[k] for k in ("uts-10", "uts-2.5"))
    std_ok = uts_std <= 0.5 and abs(top - PAPER_STD) <= 1.0
    return [claim("5", f"mean {mean.get('uts-10', np.nan):.2f} / {mean.get('uts-2.5', np.nan):.2f} / "
                  f"{mean.get('ets', np.nan):.2f} ms; UTS max std {uts_std:.2f} ms; ETS max std {top:.2f} ms ({app})",
                  grade(means_ok and std_ok and app == "hmmer", uts_ok and means_ok),
                  f"{int(df.tasks.iloc[0])} tasks per core; spec ms = cycles / Q x 2.5; end-to-start gaps; the std "
                  "depends on which slices the elastic task earns (k=2: 2.5, k=3: 3.5, k=4: 4.3 ms)")]


def figures(df: pd.DataFrame) -> list[tuple[str, str, str, object]]:
    """Figure 8: the co-runners' mean latency and its std per application."""
    from ...report.figures import grouped_bars, new_figure

    fig, axes = new_figure(ncols=2, width=4.4)
    grouped_bars(axes[0, 0], df, "app", "mean_ms", "co-runner latency, mean (spec ms)", hue="scheduler")
    grouped_bars(axes[0, 1], df, "app", "std_ms", "co-runner latency, max std (spec ms)", hue="scheduler")
    return [("ets_latency", "Latency of the co-runners (Fig 8)",
             ("Mean and largest standard deviation of the gaps between consecutive schedules of the co-runners of "
             "each application of interest, 4 tasks per core, LRU 2 MB."), fig)]


def run(ctx) -> Section:
    """Run E5 and judge claim 5; returns the page section."""
    s = setup(ctx)
    df = table(mixes(s.programs, 4, fillers=True), s.manifests, simulator(ctx, "latency"), s.scale)
    record_claims(ctx.claims, claims(df), reason(ctx), source="latency")
    drawn = draw(lambda: figures(df), ctx.out)
    return Section("latency", "", method=method(__doc__), figures=drawn, tables={
        "latency": (df, "One row per application of interest and scheduler: its co-runners' gaps in spec ms.")})
