"""Part D of the migration study (spec §6): the migration prefetcher against
stride and stream prefetchers at the L2, alone and combined (the spec's five
configurations), on remote live migrations with Local MRU-1 tags; the runs
and metrics are those of :mod:`.prefetch`."""

from __future__ import annotations

from pathlib import Path

from .prefetch import (
    PLAN,
    PROGRAMS,
    _reason,
    hardware_claims,
    hardware_figures,
    hardware_table,
)

CLAIMS = (
    ("P1", "Migration prefetcher alone beats stride alone and stream alone, except hmmer (stream −2.85 %)",
     "except hmmer, 2.85 %"),
    ("P2", "Migration + stride or + stream gains further, except omnetpp", "except omnetpp"),
    ("P3", "hmmer improves by 3.97 % with migration + stream", "3.97 %"),
)


def run(ctx):
    """Run part D and judge P1-P3; returns its page section."""
    from .. import runs
    from ..page import Section

    traces = {b: Path(m["trace"]) for b, m in runs.traces(ctx, PROGRAMS).items()}
    df = hardware_table(traces, PLAN[ctx.quick]["pmw"], runs.simulator(ctx, f"migration-hwpf-{ctx.size}"))
    runs.record_claims(ctx.claims, hardware_claims(df), _reason(ctx), source="hwpf_runs")
    drawn = runs.draw(lambda: hardware_figures(df), ctx.out)
    method = ("<p>The runs of the migration-prefetcher part (remote live migrations, Local MRU-1 tags), with a "
              "<code>stride</code> (Chen and Baer, 256 entries, degree 1) or <code>stream</code> (Srinath et al., "
              "64 streams, distance 16, degree 2) prefetcher on the L2 (docs/prefetchers.md), alone or with the "
              "migration prefetcher; CPI over the windows, normalised to the migration prefetcher alone.</p>")
    return Section("hwpf", "", method=method, figures=drawn,
                   tables={"hwpf_runs": (df, "One row per run: the five configurations and no prefetcher at all.")})
