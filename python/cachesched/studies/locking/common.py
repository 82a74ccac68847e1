"""What the parts of the cache locking study share: the workloads (the
dissertation's Array Sort, Gzip, FFT and MP3, recorded from the open
suite's ``LOCKING`` programs), the hypervisor cache's defaults, and the
runs of :func:`cachesched.hcache.run` kept in the study's store.

**Defaults** (spec section 5's decisions, docs/cache-locking.md): 64 B
blocks, 4 ways in the size sweeps, a 4 KiB partition in the others,
loads only (the dissertation's filter), the two-pass miss table of 20
blocks per VM, locked blocks preloaded, a 12-block victim buffer in
addition to the partition, LRU.

**Runs.** A configuration is run over the four traces at once (one VM
each, as the dissertation runs them one at a time); its result is kept
in ``store/locking/`` under a key of the configuration and the traces, so
a study stopped half-way resumes and a re-run reuses what it has. Runs
go over ``workers`` threads (the core releases the GIL).
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd

from ..._files import write_text
from ...store import ENGINE
from .. import runs
from ..runs import label
from ..claims import claim, grade, pct  # noqa: F401 (the parts import them from here)
from ..page import Section

KiB = 1024
#: The suite programs and the dissertation's names for them.
WORKLOADS = {"arraysort": "Array Sort", "gzip": "Gzip", "fft": "FFT", "mp3": "MP3"}
#: The partition sizes of the size sweeps (spec 3.3) and the associativities.
SIZES = (2 * KiB, 4 * KiB, 8 * KiB, 16 * KiB, 32 * KiB, 64 * KiB)
WAYS = (2, 4, 8, 16)
#: The default lock share and the dissertation's victim buffer.
LOCK, VB = 0.05, 12
REASON = ("our workloads are rebuilt from the dissertation's descriptions (sources and inputs not given), with "
          "64 B blocks and 4 ways where it states none: absolute miss ratios differ, trends are compared "
          "(docs/cache-locking.md, \"The study\")")


def traces(ctx: Any) -> dict[str, Path]:
    """Each workload's trace at the study's size (recorded if not cached)."""
    found = ctx.state.get("locking_traces")
    if found is None:
        found = {name: Path(m["trace"]) for name, m in runs.traces(ctx, WORKLOADS).items()}
        ctx.state["locking_traces"] = found
    return found


def _key(config: dict, paths: list[Path]) -> str:
    described = [(str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in paths]
    run = {k: v for k, v in config.items() if k != "labels"}
    text = json.dumps({"run": run, "traces": described, "engine": ENGINE}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def stored(ctx: Any, configs: list[dict], files: list[Path], compute: Any) -> list[pd.DataFrame]:
    """``compute(config)`` of each configuration over ``files``, each kept
    in ``store/locking/`` under a key of all but its labels, the files and
    the engine that ran it (a
    stopped study resumes, a re-run reuses), run over ``workers`` threads,
    with a progress bar (in a terminal)."""
    folder = ctx.store / "locking"
    folder.mkdir(parents=True, exist_ok=True)

    def one(config: dict) -> pd.DataFrame:
        path = folder / f"{_key(config, files)}.json"
        if path.exists():
            return pd.read_json(path, orient="records")
        df = compute(config)
        write_text(path, df.to_json(orient="records"))
        return df

    from ...progress import bar

    update, close = bar(" runs") if ctx.progress else (lambda done, total: None, lambda: None)
    done = [0]

    def counted(config: dict) -> pd.DataFrame:
        df = one(config)
        done[0] += 1
        update(done[0], len(configs))
        return df

    try:
        with ThreadPoolExecutor(max_workers=max(1, ctx.workers or 1)) as pool:
            return list(pool.map(counted, configs))
    finally:
        close()


def hcache_runs(ctx: Any, configs: list[dict], paths: dict[str, Path] | None = None) -> pd.DataFrame:
    """Run each configuration (``labels`` of its own beside the hcache
    ``params``: ``{"labels": {...}, "params": {...}}``) over the workloads'
    traces (or ``paths``); one row per configuration and workload: the
    labels, ``workload`` and the VM's results (:func:`cachesched.hcache.run`)."""
    from ... import hcache

    paths = paths or traces(ctx)
    names, files = list(paths), list(paths.values())
    results = stored(ctx, configs, files, lambda config: hcache.run(files, **config["params"]))
    rows = [df.assign(workload=[WORKLOADS.get(n, n) for n in names], locked=df.locked.map(len), **config["labels"])
            for config, df in zip(configs, results)]
    return pd.concat(rows, ignore_index=True).drop(columns=["trace", "miss_table", "vm"])


def gain(df: pd.DataFrame, x: str, base: str, other: str, y: str = "miss_pct") -> pd.DataFrame:
    """Per workload and ``x``: ``y`` of configurations ``base`` and
    ``other`` and the gain (base - other, in points)."""
    wide = df.pivot_table(index=["workload", x], columns="config", values=y).reset_index()
    return wide.assign(gain=wide[base] - wide[other])


def notes(ctx: Any) -> str:
    return ("<p>The hypervisor cache (part B2): each workload's loads through a VM's private partition, 64 B blocks, "
            "the two-pass miss table of 20 blocks, locked blocks preloaded, a 12-block victim buffer beside the "
            "partition, LRU unless said. Methodology: docs/cache-locking.md, \u201cThe study\u201d.</p>")


def part(ctx: Any, name: str, doc: str, table: Any, claims: Any, figures: Any, caption: str) -> Section:
    """:func:`..runs.part` with this study's reason for differences."""
    return runs.part(ctx, name, doc, table, claims, figures, caption, REASON)


def part_with(ctx: Any, name: str, doc: str, table: Any, claims: Any, figures: Any, caption: str) -> Section:
    """:func:`..runs.part_with` with this study's reason for differences."""
    return runs.part_with(ctx, name, doc, table, claims, figures, caption, REASON)


def workload_panels(df: pd.DataFrame, x: str, series: dict[str, str], y: str, xlabel: str, ylabel: str,
                    title: str, logx: bool = True):
    """A figure of four panels, one per workload: ``y`` against ``x`` for
    each ``series`` (column ``config`` value -> legend label)."""
    from ...report.figures import new_figure

    fig, axes = new_figure(ncols=2, nrows=2, width=4.2, height=3)
    for a, workload in zip(axes.flat, WORKLOADS.values()):
        w = df[df.workload == workload]
        for config, legend in series.items():
            s = w[w.config == config].sort_values(x)
            a.plot(s[x], s[y], marker="o", ms=3, label=legend)
        if logx:
            a.set_xscale("log", base=2)
        ticks = sorted(w[x].unique())
        a.set_xticks(ticks, [f"{t:g}" for t in ticks])
        label(a, xlabel, ylabel, f"{workload}: {title}")
    return fig
