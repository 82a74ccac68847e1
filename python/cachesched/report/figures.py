"""The report's figures, drawn with matplotlib's Agg canvas and written as
PNG and SVG.

Each figure is one function of :class:`~cachesched.report.runs.Runs` that
returns a matplotlib ``Figure``, or ``None`` when its tables are empty (a
run without ``stats.interval`` has no time series), so a report shows what
its runs recorded and nothing else. Figures are built on
``matplotlib.figure.Figure`` with an Agg canvas, never through pyplot: no
window, no global state, safe in a sweep's worker processes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .._files import staged
from ..results import LEVELS
from .runs import Run, Runs

#: Formats written for every figure; the HTML page embeds the PNG.
FORMATS = ("png", "svg")
#: Up to this many tasks (or workloads) get a bar each; more are grouped by workload.
MAX_GROUPS = 24
#: Up to this many tasks get their own line in a time series.
MAX_LINES = 12
#: Up to this many runs get a time-series panel each (and curves around events).
MAX_PANELS = 4
#: Per-task bars are drawn for up to this many runs (a colour each); beyond,
#: the comparison of runs says it better.
MAX_COLOURS = 8
#: Intervals before and after an event in the event-aligned figure.
AROUND = (-3, 4)
STYLE = {"svg.hashsalt": "cachesched", "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False,
         "axes.spines.right": False, "figure.dpi": 100, "font.size": 9}


@dataclass
class Drawn:
    """A figure written to disk: its file stem, title, a caption that says
    which table it comes from, and the files (one per format)."""

    name: str
    title: str
    caption: str
    files: dict[str, Path] = field(default_factory=dict)


def new_figure(ncols: int = 1, nrows: int = 1, width: float = 6.4, height: float = 3.6) -> tuple[Figure, np.ndarray]:
    """A figure on an Agg canvas with a grid of axes (always a 2-D array),
    ``width`` inches per column up to 13 in all (a page's width)."""
    fig = Figure(figsize=(min(width * ncols, 13.0), height * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def _levels(runs: Runs) -> list[str]:
    """The cache levels present in any run, in hierarchy order."""
    present = {k.removesuffix("_miss_ratio") for r in runs.runs for k in r.metrics if k.endswith("_miss_ratio")}
    return [lv for lv in LEVELS if lv in present]


def _focus_level(levels: list[str]) -> str | None:
    """The level whose misses a time series shows: the last private one
    (L2 if present), where switches and migrations cost most."""
    for lv in ("l2", "l1d", "llc", "l1i"):
        if lv in levels:
            return lv
    return None


def grouped_bars(ax: Axes, df: pd.DataFrame, group: str, value: str, ylabel: str, hue: str = "run") -> None:
    """Bars of ``value`` per ``group`` (x axis), one colour per ``hue``."""
    pivot = df.pivot_table(index=group, columns=hue, values=value, sort=False, dropna=False)
    n_runs = max(len(pivot.columns), 1)
    width = 0.8 / n_runs
    x = np.arange(len(pivot.index))
    for i, run in enumerate(pivot.columns):
        ax.bar(x + (i - (n_runs - 1) / 2) * width, pivot[run].to_numpy(), width, label=str(run))
    ax.set_xticks(x, [str(g) for g in pivot.index], rotation=45 if len(x) > 6 else 0, ha="right" if len(x) > 6 else "center")
    ax.set_ylabel(ylabel)
    if n_runs > 1:
        ax.legend(fontsize="small")


def _few_runs(tasks: pd.DataFrame) -> bool:
    """Whether a colour per run stays readable."""
    return len(tasks) > 0 and tasks["run"].nunique() <= MAX_COLOURS


def _group_column(tasks: pd.DataFrame) -> str:
    """Bars per task for a single small run, else per workload."""
    one_run = tasks["run"].nunique() == 1
    return "name" if one_run and tasks["name"].nunique() <= MAX_GROUPS else "workload"


def _short(key: str) -> str:
    """A config key path's last part (``machine.l2.size_bytes`` -> ``size_bytes``)."""
    return key.rsplit(".", 1)[-1]


def comparison(runs: Runs) -> tuple[pd.DataFrame, str | None]:
    """The runs table with an ``x`` column for the comparison's axis and
    the name of the column colouring the bars: with two variant columns or
    more, the first with 2 to 6 values colours them (a policy) and the
    others, joined, make the axis (sizes), if that puts several runs at
    some point of the axis; otherwise each run is a bar."""
    table = runs.table()
    text = table[runs.variants].map(lambda v: "" if pd.isna(v) else str(v))
    for hue in runs.variants if len(runs.variants) > 1 else []:
        if 2 <= text[hue].nunique() <= 6:
            rest = [v for v in runs.variants if v != hue]
            x = text[rest].agg(lambda row: " / ".join(v for v in row if v), axis=1)
            if x.nunique() < len(table):
                return table.assign(x=x, colour=text[hue]), hue
            break
    return table.assign(x=table["run"].astype(str), colour=""), None


def fig_runs(runs: Runs) -> Figure | None:
    """CPI and miss ratio per level, a bar per run (several runs only)."""
    if len(runs.runs) < 2:
        return None
    table, hue = comparison(runs)
    panels = [("cpi", "CPI")] + [(f"{lv}_miss_ratio", f"{lv} miss ratio") for lv in _levels(runs)]
    panels = [(c, label) for c, label in panels if c in table]
    if not panels:
        return None
    fig, axes = new_figure(ncols=len(panels), width=4.2 if len(panels) > 1 else 6.4)
    axis_name = " / ".join(_short(v) for v in runs.variants if v != hue) if hue else ""
    for ax, (column, label) in zip(axes[0], panels):
        grouped_bars(ax, table, "x", column, label, hue="colour")
        ax.set_title(label, fontsize="medium")
        ax.set_xlabel(axis_name)
        if len(table) > 3:
            ax.tick_params(axis="x", labelrotation=40)
            for tick in ax.get_xticklabels():
                tick.set_horizontalalignment("right")
        legend = ax.get_legend()
        if legend and ax is not axes[0, 0]:
            legend.remove()  # one legend says it for every panel
        elif legend and hue:
            legend.set_title(_short(hue), prop={"size": "small"})
    return fig


def fig_miss_ratio(runs: Runs) -> Figure | None:
    """Demand miss ratio per level, per task or workload, one colour per run."""
    levels = runs.stacked("levels")
    tasks = runs.stacked("tasks")
    if not len(levels) or not _few_runs(tasks):
        return None
    group = _group_column(tasks)
    df = levels.merge(tasks[["run", "task", "name", "workload"]], on=["run", "task"])
    names = [lv for lv in LEVELS if lv in set(df.level)]
    fig, axes = new_figure(ncols=len(names), width=4.2 if len(names) > 1 else 6.4)
    for ax, lv in zip(axes[0], names):
        part = df[df.level == lv].groupby(["run", group], sort=False)[["misses", "accesses"]].sum().reset_index()
        part["miss_ratio"] = part.misses / part.accesses
        grouped_bars(ax, part, group, "miss_ratio", f"{lv} miss ratio")
        ax.set_title(lv)
    return fig


def fig_cpi(runs: Runs) -> Figure | None:
    """CPI per task or workload (its cycles over its instructions), one colour per run."""
    tasks = runs.stacked("tasks")
    if not _few_runs(tasks):
        return None
    group = _group_column(tasks)
    part = tasks.groupby(["run", group], sort=False)[["cycles", "instructions"]].sum().reset_index()
    part["cpi"] = part.cycles / part.instructions
    fig, axes = new_figure()
    grouped_bars(axes[0, 0], part, group, "cpi", "CPI")
    return fig


def _ms(run: Run) -> float:
    """Cycles per millisecond of the run's machine."""
    return float(run.results.config["machine"].get("frequency_ghz", 1.0)) * 1e6


def _timeline_panel(ax: Axes, run: Run, column: str, label: str) -> None:
    """One run's per-interval ``column`` against time, a line per task (the
    median when there are too many), and a tick per migration at the top."""
    iv = run.results.intervals
    ms = _ms(run)
    tasks = sorted(iv.task.unique())
    for task in tasks[:MAX_LINES]:
        part = iv[iv.task == task]
        ax.plot(part.end / ms, part[column], lw=0.9, marker=".", ms=3, label=f"task {task}")
    if len(tasks) > MAX_LINES:
        by_index = iv.groupby("index").agg(end=("end", "median"), value=(column, "median"))
        ax.plot(by_index.end / ms, by_index.value, color="black", lw=1.6, label="median of all tasks")
    ev = run.results.events
    migrations = ev[ev.event == "migrate"].time.astype(float) / ms
    if len(migrations):
        ax.plot(migrations, np.ones(len(migrations)), "|", color="crimson", ms=8,
                transform=ax.get_xaxis_transform(), label="migration", clip_on=False)
    ax.set_xlabel("time (ms)")
    ax.set_ylabel(label)


def fig_timeline(runs: Runs) -> Figure | None:
    """Per-interval CPI and MPKI against time, migrations marked (``intervals``, ``events``)."""
    with_iv = [r for r in runs.detailed() if len(r.results.intervals)][:MAX_PANELS]
    if not with_iv:
        return None
    level = _focus_level(_levels(runs))
    cols = [("cpi", "CPI")] + ([(f"{level}_mpki", f"{level} MPKI")] if level else [])
    fig, axes = new_figure(ncols=len(cols), nrows=len(with_iv), width=5.0, height=3.0)
    for row, run in zip(axes, with_iv):
        for ax, (column, label) in zip(row, cols):
            _timeline_panel(ax, run, column, label)
            ax.set_title(run.label if len(runs.runs) > 1 else label, fontsize="medium")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside right upper", fontsize="small")
    return fig


def around(intervals: pd.DataFrame, events: pd.DataFrame, column: str) -> pd.DataFrame:
    """Event-aligned means: for each event of a task (a resumption after a
    switch or a migration), the task's intervals from ``AROUND[0]`` before
    the one the event falls in to ``AROUND[1] - 1`` after, and the mean of
    ``column`` at each offset, each value divided by the task's mean over
    all its intervals first (so that tasks of different CPI entering and
    leaving the average at the edges do not make a bump of their own).
    Columns: event, offset, mean, count."""
    rows = []
    for task, iv in intervals.groupby("task"):
        iv = iv.sort_values("index").reset_index(drop=True)
        scale = iv[column].mean()
        if not scale > 0:
            continue
        starts, ends = iv.start.to_numpy(), iv.end.to_numpy()
        ev = events[events.task == task]
        first_in = ev[ev.event == "switch_in"].time.min()
        for kind, times in (("switch", ev[(ev.event == "switch_in") & (ev.time > first_in)].time),
                            ("migration", ev[ev.event == "migrate"].time)):
            for t in times.astype(float):
                pos = int(np.searchsorted(ends, t, side="right"))
                if pos >= len(iv) or starts[pos] > t:
                    continue
                for off in range(*AROUND):
                    if 0 <= pos + off < len(iv):
                        rows.append({"event": kind, "offset": off, "value": iv.at[pos + off, column] / scale})
    if not rows:
        return pd.DataFrame(columns=["event", "offset", "mean", "count"])
    df = pd.DataFrame(rows)
    return df.groupby(["event", "offset"])["value"].agg(mean="mean", count="count").reset_index()


def fig_around_events(runs: Runs) -> Figure | None:
    """Mean CPI and MPKI in the intervals before and after a switch or a
    migration, interval 0 holding the event (``intervals``, ``events``)."""
    level = _focus_level(_levels(runs))
    cols = [("cpi", "CPI")] + ([(f"{level}_mpki", f"{level} MPKI")] if level else [])
    curves = []
    for run in runs.detailed()[:MAX_PANELS]:
        iv, ev = run.results.intervals, run.results.events
        if len(iv) and len(ev):
            curves += [(run.label, column, around(iv, ev, column)) for column, _ in cols]
    # A curve needs intervals on both sides of its events to say anything.
    if not any(c.offset.nunique() > 1 for _, _, c in curves):
        return None
    fig, axes = new_figure(ncols=len(cols), width=4.6)
    for ax, (column, label) in zip(axes[0], cols):
        for run_label, col, curve in curves:
            if col != column:
                continue
            for kind, part in curve.groupby("event"):
                name = kind if len(runs.runs) == 1 else f"{run_label}: {kind}"
                ax.plot(part.offset, part["mean"], marker="o", ms=3, label=f"{name} ({part['count'].max()})")
        ax.axvline(0, color="gray", lw=0.8, ls="--")
        ax.axhline(1, color="gray", lw=0.8)
        ax.set_xlabel("interval relative to the event")
        ax.set_ylabel(f"{label} / task's mean")
        ax.legend(fontsize="small")
    return fig


def _strip(ax: Axes, data: list[np.ndarray], rng: np.random.Generator) -> None:
    """The values behind each box, as jittered points."""
    for i, values in enumerate(data):
        ax.plot(i + 1 + rng.uniform(-0.15, 0.15, len(values)), values, ".", color="0.35", alpha=0.6, ms=4)


def fig_windows(runs: Runs) -> Figure | None:
    """CPI of each post-migration window over its task's CPI, by locality
    and timing (``windows``, ``tasks``)."""
    parts = []
    for r in runs.detailed():
        w = r.results.windows
        if len(w):
            task_cpi = r.results.tasks.set_index("task").cpi
            parts.append(w.assign(run=r.label, ratio=w.cpi / w.task.map(task_cpi)))
    if not parts:
        return None
    w = pd.concat(parts, ignore_index=True)
    w = w[w.instructions > 0]
    w["kind"] = w.locality + " " + w.timing
    groups = [(run, kind) for run in dict.fromkeys(w.run) for kind in sorted(set(w[w.run == run].kind))]
    fig, axes = new_figure()
    ax = axes[0, 0]
    data = [w[(w.run == run) & (w.kind == kind)].ratio.dropna().to_numpy() for run, kind in groups]
    ax.boxplot(data, tick_labels=[kind if len(runs.runs) == 1 else f"{run}\n{kind}" for run, kind in groups],
               showfliers=False)
    _strip(ax, data, np.random.default_rng(0))
    ax.axhline(1, color="gray", lw=0.8, ls="--")
    ax.set_ylabel("window CPI / the task's CPI")
    return fig


def fig_distributions(runs: Runs) -> Figure | None:
    """Distributions over tasks of CPI and MPKI per level, one box per run (``tasks``)."""
    tasks = runs.stacked("tasks")
    if not len(tasks):
        return None
    cols = [("cpi", "CPI")] + [(f"{lv}_mpki", f"{lv} MPKI") for lv in LEVELS
                               if f"{lv}_mpki" in tasks and tasks[f"{lv}_mpki"].fillna(0).any()]
    fig, axes = new_figure(ncols=len(cols), width=3.2)
    order = list(dict.fromkeys(tasks.run))
    rng = np.random.default_rng(0)
    for ax, (column, label) in zip(axes[0], cols):
        data = [tasks[tasks.run == run][column].dropna().to_numpy() for run in order]
        ax.boxplot(data, tick_labels=order if len(order) > 1 else [""], showfliers=False)
        _strip(ax, data, rng)
        ax.set_title(label, fontsize="medium")
        if len(order) > 3:
            ax.tick_params(axis="x", labelrotation=45)
    return fig


#: Every figure: file stem, title, caption (the tables it reads), function.
FIGURES: list[tuple[str, str, str, Callable[[Runs], Figure | None]]] = [
    ("runs", "Runs compared", "CPI and demand miss ratio per cache level of each run (summary, levels).", fig_runs),
    ("miss_ratio", "Miss ratio per level",
     ("Demand misses over demand accesses, per task (one run) or per workload, one colour per run (levels, "
      "tasks)."), fig_miss_ratio),
    ("cpi", "CPI per task",
     "Cycles over instructions, scheduling overhead included, per task or workload (tasks).", fig_cpi),
    ("timeline", "Time series",
     ("CPI and MPKI of every stats.interval of each task's instructions, against the clock at the interval's "
      "end; red ticks are migrations (intervals, events)."), fig_timeline),
    ("around_events", "Around switches and migrations",
     ("Mean over events of the task's intervals before and after a switch (resumption after a context switch) "
      "or a migration, each divided by the task's mean; interval 0 holds the event, the legend counts events "
      "(intervals, events)."), fig_around_events),
    ("windows", "After migrations",
     ("CPI of each post-migration window (stats.window instructions on the new core) over its task's CPI for "
      "the whole run, by locality and timing; points are windows (windows, tasks)."), fig_windows),
    ("distributions", "Distributions over tasks",
     "Per-task CPI and MPKI per level; boxes show quartiles, points are tasks (tasks).", fig_distributions),
]


def write(runs: Runs, out: Path, formats: tuple[str, ...] = FORMATS) -> list[Drawn]:
    """Draw every figure that has data and write it in each format to ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    drawn = []
    with rc_context(STYLE):
        for name, title, caption, draw in FIGURES:
            fig = draw(runs)
            if fig is not None:
                drawn.append(save(fig, out, Drawn(name=name, title=title, caption=caption), formats))
    return drawn


def save(fig: Figure, out: Path, drawn: Drawn, formats: tuple[str, ...] = FORMATS) -> Drawn:
    """Write ``fig`` as ``out/NAME.FMT`` in each format (SVGs without a date,
    so they are deterministic); returns ``drawn`` with its files. Call it
    inside ``rc_context(STYLE)`` for the report's look."""
    out.mkdir(parents=True, exist_ok=True)
    for fmt in formats:
        path = out / f"{drawn.name}.{fmt}"
        with staged(path) as temp:
            fig.savefig(temp, format=fmt, metadata={"Date": None} if fmt == "svg" else None)
        drawn.files[fmt] = path
    return drawn
