"""The complete-eviction check (spec E2; claim 16).

Suite programs (``mix_size`` of them, distinct while the suite has enough)
share one core round-robin at Q with a 2 MB LRU LLC and no flush. A task's
residual lines are its LLC lines there when it left that are still there
when it comes back (``residual_found`` of the slices table); the spec's
assumption, and the paper's measurement, is zero. Counted over the
schedules before the first program ended.
"""

from __future__ import annotations

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
    limit,
    method,
    mixes,
    pct,
    setup,
    simulator,
)


CLAIMS = (
    ("16", "Residual lines of 8 applications round-robin at 2.5 ms over 30 co-schedules", "zero"),
)


def table(mixes: list[Mix], manifests: dict[str, dict], simulate: Simulate, scale: Scale) -> pd.DataFrame:
    """One row per task of each mix: returns, lines left, lines found again."""
    configs = [config(mix, manifests, "uts-2.5", scale, limit=limit(mix, manifests, scale)) for mix in mixes]
    rows = []
    for mix, result in zip(mixes, simulate(configs)):
        s = common(result).dropna(subset=["residual_found"])
        for name, g in s.groupby("name"):
            left, found = int(g.residual_left.sum()), int(g.residual_found.sum())
            rows.append({"mix": "+".join(mix.names), "task": name, "returns": len(g), "left": left, "found": found,
                         "nonzero": int((g.residual_found > 0).sum()),
                         "found_share": found / left if left else 0.0})
    return pd.DataFrame(rows)


def claims(df: pd.DataFrame, scale: Scale) -> list[dict]:
    """Claim 16."""
    found, left = int(df.found.sum()), int(df.left.sum())
    share = found / left if left else 0.0
    return [claim("16", f"{found:,} of {left:,} lines left ({pct(share)}) found again over "
                  f"{int(df.returns.sum())} returns "
                  f"in {df.mix.nunique()} mixes; {int(df.nonzero.sum())} returns with residual lines",
                  grade(found == 0, share <= 0.05),
                  f"time scaled {scale.factor}x: three co-runner slices of {scale.quantum:,} cycles can fetch at most "
                  f"~{3 * scale.quantum // 400:,} of the LLC's 32,768 lines, and the open programs' footprints are "
                  "small; this is why the performance runs flush, as the paper's do")]


def figures(df: pd.DataFrame) -> list[tuple[str, str, str, object]]:
    """Residual lines per task and mix."""
    from ...report.figures import grouped_bars, new_figure

    fig, ax = new_figure(width=8)
    grouped_bars(ax[0, 0], df.assign(pct=100 * df.found_share, m=df.mix.str.split("+").str[0]), "task", "pct",
                  "lines found again / lines left (%)", hue="m")
    return [("ets_residual", "Residual lines (E2)",
             ("Share of a task's LLC lines still present when it returns, per task, mixes named by their first "
             "program; round-robin at Q, 2 MB LRU, no flush."), fig)]


def run(ctx) -> Section:
    """Run E2 and judge claim 16; returns the page section."""
    s = setup(ctx)
    corun = mixes(s.programs, min(s.scale.mix_size, len(s.programs)))
    df = table(corun, s.manifests, simulator(ctx, "residual"), s.scale)
    record_claims(ctx.claims, claims(df, s.scale), reason(ctx), source="residual")
    drawn = draw(lambda: figures(df), ctx.out)
    return Section("residual", "", method=method(__doc__), figures=drawn, tables={
        "residual": (df, "One row per task of each mix: returns, LLC lines left and found again.")})
