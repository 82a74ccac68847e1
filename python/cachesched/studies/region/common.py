"""What the parts of the region-scheduling study share: the machines (the
spec's Clovertown, 2 domains of 2 cores sharing a 4 MiB L2, and Westmere,
2 sockets of 6 sharing a 12 MiB L3), memlat (the ``latency`` kernel: two
equal regions chased at random, A loads at a time), the micro-schedule's
measured cost on each machine, and the measures.

**Time.** Each run first warms the caches (two passes over every region,
and a visit of each, not measured) and then measures at least 16 visits of
each region, in whole pairs of visits, so that normalised performance
compares steady states, not cold starts.

**Regions.** E1 gives the region map (region 1 on domain 0, region 2 on
domain 1 when unified, both on domain 0 when confined), as the source's
memlat experiment does: it measures what unification can win, not how
regioning finds the regions (E6 does).
"""

from __future__ import annotations

from typing import Any

from .. import runs
from ..runs import label  # noqa: F401 (the parts use it from here)
from ..claims import claim, grade, pct  # noqa: F401 (the parts import them from here)
from ..page import Section

MiB = 1 << 20
#: Where the latency kernel lays its regions out.
BASE = 0x10_0000_0000
#: Per machine: the preset, the micro-schedule's cost (spec 2.9) and the clock.
MACHINES = {
    "clovertown": {"preset": "region-clovertown", "usched": 47_600, "ghz": 3.0},
    "westmere": {"preset": "region-westmere", "usched": 17_800, "ghz": 2.8},
}
REASON = ("a trace-driven model: each miss costs the memory's whole latency, with no memory-level parallelism and "
          "no hardware prefetching to hide it (docs/region-scheduling.md, \"The study\")")


def memlat(S: int, A: int, accesses: int) -> dict:
    """memlat's workload: two regions of ``S`` bytes, ``A`` loads per visit."""
    return {"kind": "latency", "params": {"regions": 2, "region_bytes": S, "visit_accesses": A,
                                          "accesses": accesses}}


def chase(S: int, accesses: int, i: int) -> dict:
    """memlat with one region of ``S`` bytes, the ``i``-th of a run (each
    at its own addresses)."""
    return {"kind": "latency", "params": {"regions": 1, "region_bytes": S, "accesses": accesses,
                                          "base_addr": BASE + (i << 32)}}


#: Regioning scaled to runs of tens of milliseconds: a phase of 1 ms every
#: 5 ms, a scan every 1 ms (the source's 10 ms per 1 s, scans every 100 ms).
SCALED = {"period": "5ms", "phase": "1ms", "scan_period": "1ms"}


def regioned(machine: str, **regioning: Any) -> list[dict]:
    """Region scheduling with regions found at run time (:data:`SCALED`,
    with ``regioning`` added) and ``machine``'s micro-schedule cost."""
    return [{"kind": "region-scheduling", "params": {"usched_time": MACHINES[machine]["usched"],
                                                     "regioning": {**SCALED, **regioning}}}]


def region_map(S: int, caches: tuple[int, int], usched: int) -> list[dict]:
    """The region-scheduling mechanism with memlat's two regions on ``caches``."""
    regions = [{"asid": 0, "start": BASE + i * S, "bytes": S, "cache": c} for i, c in enumerate(caches)]
    return [{"kind": "region-scheduling", "params": {"regions": regions, "usched_time": usched}}]


def run_length(S: int, A: int) -> tuple[int, int]:
    """(warm-up, measured) references of a memlat run, in whole pairs of
    visits: to warm up, at least two passes over each region's nodes (and
    one visit of each); then at least 16 visits of each region and 1.5 M
    references."""
    pair = 2 * A
    visits = max(1, -(-2 * (S // 64) // A))
    return visits * pair, pair * max(16, -(-1_500_000 // pair))


def simulator(ctx: Any, part: str):
    """Runs of ``part`` through the study's store."""
    return runs.simulator(ctx, f"region-{part}-{ctx.size}")


def usched(result: Any) -> int:
    """The measured micro-schedules of a run with the mechanism."""
    m = result.mechanisms
    return int(m.usched.iloc[0]) if len(m) else 0


def notes(ctx: Any) -> str:
    return ("<p>Clovertown (2 cache domains of 2 cores, a 4 MiB 16-way L2 each, usched 47,600 cycles) and Westmere "
            "(2 sockets of 6, a 12 MiB 16-way L3 each, usched 17,800 cycles) as the spec's section 3.2 gives them; "
            "TLBs off in memlat runs, which measure caches. Methodology: docs/region-scheduling.md, "
            "\u201cThe study\u201d.</p>")


def part(ctx: Any, name: str, doc: str, table: Any, claims: Any, figures: Any, caption: str) -> Section:
    """:func:`..runs.part` with this study's reason for differences."""
    return runs.part(ctx, name, doc, table, claims, figures, caption, REASON)


def part_with(ctx: Any, name: str, doc: str, table: Any, claims: Any, figures: Any, caption: str) -> Section:
    """:func:`..runs.part_with` with this study's reason for differences."""
    return runs.part_with(ctx, name, doc, table, claims, figures, caption, REASON)
