"""Experiments of the spec not built yet (issue 22 continues): memlat
beside a SPEC program (E4), the programs' access maps and merges over
time (E6's Figs. 14, 16, 19, 23) and the media server under
consolidation (E8). Their claims are listed so that the table shows what
this version does not run yet.
"""

from __future__ import annotations

from ..page import Section

CLAIMS = (
    ("12", "The media server's average response: 7.765 / 19.415 / 32.535 ms (about 40% better)", "40%"),
    ("13", "Up to 15% slowdown of sphinx as the media server's co-runner", "15%"),
)


def run(ctx) -> Section:
    return Section("pending", "", status="not built in this version (issue 22)")
