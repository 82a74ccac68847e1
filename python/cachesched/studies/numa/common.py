"""What the parts of the NUMA study share: the machine (the Sun Fire 6800
preset: 6 boards of 4 CPUs, 225/300 ns), the seven NAS kernels with 12
threads bound 2 per board and the master thread initialising the data (as
a default-compiled NPB run does), the scale, and the measures.

**Size.** The source ran NPB classes B and C, hundreds of MiB, far beyond
each CPU's 8 MiB external cache; kernels that could be simulated in minutes
are a few MiB and would live in that cache, leaving memory placement
nothing to act on. So the study scales the cache with the data, as scaled
simulations do: the L2 is 256 KiB (quick) or 1 MiB (full) instead of
8 MiB, and each thread's share of the data is several times larger than
it, as in the source.

**Time.** The source's runs last 26 s to 3901 s with a pass every 5 s; the
kernels here run for tens of simulated milliseconds. Each kernel's
migration interval is its bound run's time divided by :data:`PASSES`
(between the source's 6 passes for MG and 780 for SP), and the migration
cost per page, the source's 98 us, is scaled by the same factor as the
interval (interval / 5 s), so that the overhead keeps its proportion to
the interval.
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from .. import runs
from ..page import Section
from ..claims import claim, grade, pct  # noqa: F401 (the parts import them from here)

#: The kernels (the source's seven NAS applications) and their sizes.
KERNELS = ("bt", "cg", "ep", "ft", "lu", "mg", "sp")
SIZES = {
    "quick": {"bt": {"grid": 24}, "cg": {"rows": 7000}, "ep": {"pairs": 1 << 20}, "ft": {"nx": 64, "ny": 64, "nz": 32},
              "lu": {"grid": 24}, "mg": {"grid": 64}, "sp": {"grid": 24}},
    "full": {"bt": {"grid": 48}, "cg": {"rows": 28000}, "ep": {"pairs": 1 << 22},
             "ft": {"nx": 128, "ny": 128, "nz": 64}, "lu": {"grid": 48}, "mg": {"grid": 128}, "sp": {"grid": 48}},
}
#: Main-loop iterations per run.
ITERATIONS = {"quick": 6, "full": 8}
#: The L2 per CPU, scaled with the kernels (the preset's is 8 MiB).
L2 = {"quick": "256KiB", "full": "1MiB"}
THREADS, PER_BOARD, CPUS_PER_BOARD = 12, 2, 4
#: Migration passes per bound run (the interval is its time over this).
PASSES = 10
#: The source's interval (s) and cost per migrated page (us, Table 6).
SOURCE_INTERVAL_S, SOURCE_COPY_US = 5.0, 98.0
REASON = ("NAS-like kernels of a few MiB run for tens of milliseconds instead of NPB classes B and C for minutes; "
          "time scaled down (docs/numa.md, \"The study\")")


def machine(size: str, sampler: dict | None = None) -> dict:
    """The Sun Fire 6800 with its L2 scaled for ``size`` and an
    interconnect sampler (every 1024th transaction, the source's N, unless
    given)."""
    return {"preset": "numa-sunfire6800", "l2": {"size_bytes": L2[size]},
            "sampler": sampler or {"mode": "interval", "period": 1024}}


def tasks(kernel: str, size: str, bind: bool = True) -> list[dict]:
    """The kernel's 12 threads, master-initialised, bound 2 per board
    (thread i on board i mod 6) unless ``bind`` is false."""
    params = {"threads": THREADS, "init": "serial", "iterations": ITERATIONS[size], "accesses": 10**10,
              **SIZES[size][kernel]}
    entry = {"workload": {"kind": kernel, "params": params}, "count": THREADS, "asid": 1}
    if bind:
        entry["bind"] = "spread"
    return [entry]


def scaled(seconds: float, interval_cycles: int) -> int:
    """Cycles of a time of the source's (``seconds``), scaled by the factor
    that turns its 5 s interval into ``interval_cycles`` (module docs)."""
    return max(1, round(seconds * interval_cycles / SOURCE_INTERVAL_S))


def migration(interval_cycles: int, mode: str = "stop-the-world", **params: Any) -> list[dict]:
    """The page-migration mechanism at ``interval_cycles``, its cost per page
    scaled as the interval is (module docs); ``params`` add to its params."""
    copy = scaled(SOURCE_COPY_US * 1e-6, interval_cycles)
    return [{"kind": "page-migration", "params": {"interval": int(interval_cycles), "copy_time": copy,
                                                  "mode": mode, **params}}]


def linux(interval_cycles: int) -> list[dict]:
    """Linux's automatic NUMA balancing with its defaults (1 s to 60 s scan
    periods, 1 s delay, 256 MiB per scan; a 1 us hinting fault, a 10 us page
    move) scaled by the same factor as the migration interval."""
    cycles = {k: scaled(seconds, interval_cycles) for k, seconds in (
        ("scan_delay", 1.0), ("scan_period_min", 1.0), ("scan_period_max", 60.0), ("fault_time", 1e-6),
        ("copy_time", 10e-6), ("tick", 0.1))}
    return [{"kind": "numa-balancing", "params": cycles}]


def oracle_nodes(pages: pd.DataFrame) -> list[dict]:
    """Each sampled page's most-sampling node (ties: the lowest), as
    ``machine.memory.page_nodes``."""
    if pages.empty:
        return []
    best = pages.sort_values(["asid", "vpn", "samples", "node"], ascending=[True, True, False, True])
    best = best.drop_duplicates(["asid", "vpn"])
    return [{"asid": int(r.asid), "vpn": int(r.vpn), "node": int(r.node)} for r in best.itertuples()]


def simulator(ctx: Any, part: str):
    """Runs of ``part`` through the study's store."""
    return runs.simulator(ctx, f"numa-{part}-{ctx.size}")


def board(core: pd.Series) -> pd.Series:
    return core // CPUS_PER_BOARD


def nonlocal_share(traffic: pd.DataFrame) -> float:
    """Non-local demand transactions (requester's board is not the home
    node; reads and read-to-owns) over all of them: the source's %non-local."""
    demand = traffic.read_shared + traffic.read_own
    total = demand.sum()
    return float(demand[board(traffic.core) != traffic.node].sum() / total) if total else float("nan")


def distance(traffic: pd.DataFrame) -> pd.Series:
    """The source's D per CPU (cores that made transactions):
    |S_N/S_A - C_N/C_A| / (C_N/C_A)."""
    kinds = ["read_shared", "read_own", "upgrade", "writeback"]
    per = traffic.assign(all=traffic[kinds].sum(axis=1)).groupby("core")[["all", "sampled"]].sum()
    per = per[per["all"] > 0]
    p_all = per["all"] / per["all"].sum()
    p_sample = per["sampled"] / per["sampled"].sum()
    return (p_sample - p_all).abs() / p_all


def cycles(result: Any) -> int:
    """Execution time: the latest core's clock (the summary's cycles)."""
    return int(result.cores.cycles.max())


def notes(ctx: Any) -> str:
    return (f"<p>Sun Fire 6800 preset (6 boards x 4 CPUs, 169/225 cycles at 750 MHz) with a {L2[ctx.size]} L2 "
            f"scaled with the kernels, {THREADS} threads bound "
            f"{PER_BOARD} per board, master initialisation; kernel sizes {html.escape(str(SIZES[ctx.size]))}, "
            f"{ITERATIONS[ctx.size]} iterations; the migration interval is each kernel's bound run over {PASSES} and "
            "the cost per page is the source's 98 us scaled as the interval is. Methodology: docs/numa.md, "
            "\u201cThe study\u201d.</p>")


def part(ctx: Any, name: str, doc: str, table: Any, claims: Any, figures: Any, caption: str) -> Section:
    """:func:`..runs.part` with this study's reason for differences."""
    return runs.part(ctx, name, doc, table, claims, figures, caption, REASON)
