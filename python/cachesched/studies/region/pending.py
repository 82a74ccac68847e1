"""Experiments of the spec not built yet (issue 22 continues): the
programs' access maps and merges over time (E6's Figs. 14, 16, 19, 23).
They judge no claim of the spec's table.
"""

from __future__ import annotations

from ..page import Section

CLAIMS = ()


def run(ctx) -> Section:
    return Section("pending", "", status="not built in this version (issue 22)")
