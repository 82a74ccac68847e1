"""Access patterns and region discovery over time (spec E6, the source's
Figs. 16, 19 and 23).

Clovertown. Each workload runs alone in a VM with one VCPU under region
scheduling on credit, regions found at run time (a phase of 1 ms every
5 ms, a scan every 1 ms) and recorded (``regioning.series``): at each
scan the pages whose accessed bit it found set (the source's A-bit map,
Fig. 19) and each domain's load (Fig. 16); at each phase's end the merges,
teardowns, regions and global pages (Fig. 23). No fall-back, so that
discovery goes on for the whole run. The workloads: the two phase models
of spec section 5, shaped like the source's Fig. 19 patterns, and the
open suite's programs of E7.

- *stable* (libquantum- and povray-like): one working set of 6 MiB
  (more than one domain's 4 MiB L2, less than both) accessed at random
  for the whole run;
- *dynamic* (namd- and sphinx-like): the working set moves: six phases of
  1.5 MiB each, every one at another place of a 9 MiB range, accessed at
  random, two passes.

Measured per run: the phases, the merges in the first and the second half
of them (the source: many at first, then rapidly fewer), the regular
regions, seeds and teardowns at the end, and how much of each scan's
accessed pages the scan before also found (the mean Jaccard similarity
of consecutive scans' sets: 1 for a pattern that never changes).
"""

from __future__ import annotations

import pandas as pd

from . import common as c

CLAIMS = ()

#: The open suite's programs, by study size (quick: E7's).
PROGRAMS = {"quick": ("mcf", "omnetpp", "gcc", "h264ref"),
            "full": ("mcf", "omnetpp", "gcc", "h264ref", "povray", "xalancbmk", "gobmk", "hmmer")}
#: References of a phase model's run, by study size.
MODEL_ACCESSES = {"quick": 4_000_000, "full": 12_000_000}
GHZ = c.MACHINES["clovertown"]["ghz"]


def models(accesses: int) -> dict[str, dict]:
    """The stable and the dynamic phase model, ``accesses`` references each."""
    def uniform(nbytes: int, base: int) -> dict:
        return {"kind": "uniform", "params": {"working_set_bytes": nbytes, "base_addr": base}}

    stable = uniform(6 * c.MiB, c.BASE)
    steps = [c.BASE + k * 3 * c.MiB // 2 for k in (0, 3, 1, 5, 2, 4)]  # six places of a 9 MiB range
    dynamic = {"kind": "phases", "params": {"repeat": 2, "phases": [
        {"accesses": accesses // 12, "workload": uniform(3 * c.MiB // 2, base)} for base in steps]}}
    stable["params"]["accesses"] = accesses
    return {"stable": stable, "dynamic": dynamic}


def _config(workload: dict) -> dict:
    return {"machine": {"preset": "region-clovertown", "tlb": False},
            "tasks": [{"workload": workload, "vm": 0}],
            "scheduler": {"kind": "hypervisor", "params": {"policy": "credit"}},
            "mechanisms": c.regioned("clovertown", fallback=False, series=True)}


def _workloads(ctx) -> dict[str, dict]:
    from ...workloads import suite

    out = models(MODEL_ACCESSES[ctx.size])
    for p in PROGRAMS[ctx.size]:
        out[p] = {"kind": "trace", "params": {"path": str(suite.record(p, "small")["trace"])}}
    return out


def _stability(accessed: pd.DataFrame) -> float:
    """The mean Jaccard similarity of consecutive scans' accessed pages."""
    sets = accessed.groupby("time").key.apply(set).tolist()
    pairs = [len(a & b) / len(a | b) for a, b in zip(sets, sets[1:]) if a | b]
    return sum(pairs) / len(pairs) if pairs else float("nan")


def table(ctx) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """The table, and each run's series (for the figures)."""
    workloads = _workloads(ctx)
    results = c.simulator(ctx, "discovery")([_config(w) for w in workloads.values()])
    rows, series = [], {}
    for name, r in zip(workloads, results):
        s = r.series.assign(ms=lambda d: d.time / (GHZ * 1e6))
        series[name] = s
        ends = s[s.name == "merges"].reset_index(drop=True)
        half = len(ends) // 2
        last = s[s.time == s[s.name == "regions"].time.max()].set_index("name").value
        rows.append({"workload": name, "phases": len(ends), "merges_first_half": int(ends.value[:half].sum()),
                     "merges_second_half": int(ends.value[half:].sum()),
                     "teardowns": int(s[s.name == "teardowns"].value.sum()),
                     "regions": int(last.get("regions", 0)), "seeds": int(last.get("seeds", 0)),
                     "global_pages": int(last.get("global_pages", 0)),
                     "scans": int(s[s.name == "load"].time.nunique()),
                     "stability": _stability(s[s.name == "accessed"]), "usched": c.usched(r),
                     "ms": float(r.summary["cycles"] / (GHZ * 1e6))})
    return pd.DataFrame(rows), series


def claims(df: pd.DataFrame) -> list[dict]:
    return []


def figures(df: pd.DataFrame, series: dict[str, pd.DataFrame]):
    from ...report.figures import new_figure

    names = list(series)
    cols = 3
    rows = -(-len(names) // cols)
    maps, ax = new_figure(nrows=rows, ncols=cols, width=3.4, height=2.4)
    for i, name in enumerate(names):
        a = ax[i // cols, i % cols]
        s = series[name]
        hit = s[s.name == "accessed"]
        # Pages by their rank among those touched: a heap and a stack far
        # apart still show their structure.
        rank = hit.key.rank(method="dense") - 1
        a.scatter(hit.ms, rank * 4096 / c.MiB, s=1, marker="s", linewidths=0)
        a.set_title(name, fontsize=9)
        a.set_xlabel("virtual time (ms)", fontsize=8)
        a.set_ylabel("touched pages, in order (MiB)", fontsize=8)
    for j in range(len(names), rows * cols):
        ax[j // cols, j % cols].set_visible(False)
    time, ax2 = new_figure(ncols=3, width=3.4, height=3.2)
    for name in names:
        s = series[name]
        ends = s[s.name == "merges"]
        ax2[0, 0].plot(ends.ms, ends.value.cumsum(), marker=".", label=name)
        regions = s[s.name == "regions"]
        ax2[0, 1].plot(regions.ms, regions.value, marker=".", label=name)
        load = s[s.name == "load"].pivot_table(index="ms", columns="key", values="value")
        ax2[0, 2].plot(load.index, load.sum(axis=1) * 4096 / c.MiB, label=name)
    c.label(ax2[0, 0], "virtual time (ms)", "merges so far", "merges (Fig. 23)")
    c.label(ax2[0, 1], "virtual time (ms)", "regular regions", "regions")
    c.label(ax2[0, 2], "virtual time (ms)", "working sets mapped (MiB)", "cache loads (Fig. 16)")
    return [("region_abit_maps", "Accessed-bit maps (E6, Fig. 19)",
             "Each scan's accessed pages (a dot per page and scan, the pages in address order without the gaps "
             "between them) over the address space's virtual time: the stable model keeps one band, the dynamic "
             "one's moves, and the suite's programs show both.", maps),
            ("region_discovery", "Region discovery over time (E6, Figs. 16 and 23)",
             "Merges so far, regular regions and the working sets mapped to the domains (both together), at each "
             "phase's end or scan.", time)]


def run(ctx):
    return c.part_with(ctx, "discovery", __doc__, table, claims, figures,
                       "Per workload: regioning phases, merges in the first and second half of them, teardowns, "
                       "regular regions, seeds and global pages at the last phase's end, scans, the stability of the "
                       "accessed pages from scan to scan, micro-schedules and the run's length (ms).")
