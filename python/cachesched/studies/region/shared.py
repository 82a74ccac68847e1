"""Shared pages (spec E6, the source's Fig. 14): how much of a program's
memory region scheduling leaves global.

Code and stack pages are global: open in every domain, never regioned,
their lines possibly cached in several domains (the source's "moderate"
overhead). The rule is the mechanism's: a page is code if an instruction
is fetched from it, stack if it lies in the stack's range (traces carry no
stack pointer: the range where valgrind places the client's stack,
:data:`~cachesched.workloads.suite.STACK_RANGE`). The open suite's
programs are recorded here with their instruction fetches (``small``, the
same skip, 2M references counting the fetches). Per program: the share
of global pages among all the pages the window touches (*static*, the
pages in its page tables) and among those each stretch of 100,000
references touches (*dynamic*, what a scan finds accessed: mean, least
and most).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import common as c

CLAIMS = ()

PROGRAMS = {"quick": ("gcc", "omnetpp"),
            "full": ("gcc", "omnetpp", "gobmk", "hmmer", "h264ref", "povray", "xalancbmk", "perlbench")}
#: References per stretch (a scan's worth).
STRETCH = 100_000


def shares(df: pd.DataFrame, stack: tuple[int, int]) -> dict:
    """The static and dynamic shares of global pages of a trace's
    accesses ``df`` (``kind``, ``addr``)."""
    from ... import trace

    page = (df.addr.to_numpy() >> 12).astype(np.int64)
    code = np.unique(page[df.kind.to_numpy() == trace.KIND_NAMES.index("ifetch")])
    in_stack = (df.addr.to_numpy() >= stack[0]) & (df.addr.to_numpy() < stack[1])
    glob = np.union1d(code, np.unique(page[in_stack]))
    touched = np.unique(page)
    dynamic = []
    for start in range(0, len(page), STRETCH):
        pages = np.unique(page[start:start + STRETCH])
        dynamic.append(np.isin(pages, glob).mean())
    return {"pages": len(touched), "code_pages": len(code), "global_pages": len(glob),
            "static": len(glob) / len(touched), "dynamic_mean": float(np.mean(dynamic)),
            "dynamic_min": float(np.min(dynamic)), "dynamic_max": float(np.max(dynamic))}


def table(ctx) -> pd.DataFrame:
    from ... import trace
    from ...workloads import suite

    rows = []
    for p in PROGRAMS[ctx.size]:
        m = suite.record(p, "small", ifetch=True)
        rows.append({"program": p, **shares(trace.read(m["trace"]), suite.STACK_RANGE)})
    return pd.DataFrame(rows)


def claims(df: pd.DataFrame) -> list[dict]:
    return []


def figures(df: pd.DataFrame):
    from ...report.figures import new_figure

    fig, ax = new_figure(width=7, height=3.2)
    x = np.arange(len(df))
    a = ax[0, 0]
    a.bar(x - 0.2, 100 * df.static, width=0.4, label="static (all pages touched)")
    err = 100 * np.vstack([df.dynamic_mean - df.dynamic_min, df.dynamic_max - df.dynamic_mean])
    a.bar(x + 0.2, 100 * df.dynamic_mean, width=0.4, yerr=err, capsize=3, label="dynamic (per 100,000 references)")
    a.set_xticks(x, df.program)
    c.label(a, None, "global pages (%)", "shared (global) pages (Fig. 14)")
    return [("region_shared", "Shared pages (E6, Fig. 14)",
             "The share of code and stack pages, which stay global, among the pages each program's window "
             "touches (static) and among those each 100,000 references touch (dynamic: mean, least and most).", fig)]


def run(ctx):
    return c.part(ctx, "shared", __doc__, table, claims, figures,
                  "Per program: pages touched, code pages, global (code and stack) pages, the static share and the "
                  "dynamic share's mean, least and most.")
