"""The report's input: one run, several runs, or a table of runs, as one
shape (:class:`Runs`), so the figures and the page never care where the
runs came from (a saved directory today, the sweep store's table later)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..results import LEVELS, Results

#: Columns of a runs table that are neither variants nor metrics (those of
#: the sweep store's ``cachesched.store.load`` among them).
BOOKKEEPING = {"run", "path", "results_dir", "detail", "status", "error", "hash", "key", "id", "config",
               "version", "sweep", "position", "started", "finished", "created", "wall_seconds",
               "accesses_per_second", "warmup_accesses", "worker"}
#: Summary metrics of a run (a runs table may carry any of them as columns).
BASE_METRICS = ("accesses", "instructions", "cycles", "cpi", "tasks", "switches", "migrations")
#: Where a runs table may say a run's saved directory, first found wins.
PATH_COLUMNS = ("path", "results_dir", "detail")
#: At most this many configuration keys that differ between runs become variant columns.
MAX_VARIANTS = 6
#: Labels are built from the variant values when at most this many differ
#: (else they are names): legends and axis ticks must stay short.
MAX_LABEL_KEYS = 2

Source = Results | str | Path | pd.DataFrame | Mapping[str, Any] | Sequence[Any]


def metric_names() -> list[str]:
    """Every metric a run row may hold: the summary's, and miss ratio and MPKI per level."""
    per_level = [f"{lv}_{m}" for lv in LEVELS for m in ("miss_ratio", "mpki")]
    return [*BASE_METRICS, *per_level, "tlb_mpki"]


@dataclass
class Run:
    """One run: its label, its variant values, its metrics, and its full
    results when they are at hand (a table row without a path has none)."""

    label: str
    variant: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    results: Results | None = None
    #: A runs table's ``status`` (e.g. ``done``, ``failed``), shown beside the run.
    status: str | None = None


@dataclass
class Runs:
    """The runs a report covers, in order, and the names of the columns that
    tell them apart (``variants``; empty for a single run)."""

    runs: list[Run]
    variants: list[str]

    def table(self) -> pd.DataFrame:
        """One row per run: ``run`` (its label), the variant columns, the metrics."""
        with_status = any(r.status is not None for r in self.runs)
        rows = [{"run": r.label, **{v: r.variant.get(v) for v in self.variants},
                 **({"status": r.status} if with_status else {}), **r.metrics} for r in self.runs]
        return pd.DataFrame(rows)

    def detailed(self) -> list[Run]:
        """The runs whose per-task, per-interval and event tables are available."""
        return [r for r in self.runs if r.results is not None]

    def stacked(self, table: str) -> pd.DataFrame:
        """One of the :class:`~cachesched.Results` tables of every detailed run,
        stacked, with a ``run`` column first (and ``workload`` for tasks)."""
        parts = []
        for r in self.detailed():
            df = getattr(r.results, table)
            if len(df):
                parts.append(df.assign(run=r.label)[["run", *df.columns]])
        if not parts:
            return pd.DataFrame()
        out = pd.concat(parts, ignore_index=True)
        if table == "tasks":
            out.insert(1, "workload", out["name"].map(workload_of))
        return out


def workload_of(task_name: str) -> str:
    """The workload a task belongs to: its name without the copy number
    (``zipf.3`` -> ``zipf``); unnamed tasks (``task3``) stand alone."""
    head, sep, tail = task_name.rpartition(".")
    return head if sep and tail.isdigit() else task_name


def metrics(results: Results) -> dict[str, float]:
    """The run-wide metrics of one run: the summary's totals, and the demand
    miss ratio and MPKI of each level over all tasks."""
    s = results.summary
    out: dict[str, float] = {k: s[k] for k in BASE_METRICS if k in s}
    levels = results.levels
    kilo = s["instructions"] / 1000 if s.get("instructions") else float("nan")
    for lv in LEVELS:
        part = levels[levels.level == lv]
        if len(part):
            acc, miss = part.accesses.sum(), part.misses.sum()
            out[f"{lv}_miss_ratio"] = float(miss / acc) if acc else float("nan")
            out[f"{lv}_mpki"] = float(miss / kilo)
    tasks = results.tasks
    if "tlb_l1_misses" in tasks:
        out["tlb_mpki"] = float(tasks.tlb_l1_misses.sum() / kilo)
    return out


def read_run(directory: str | Path) -> Results:
    """The results a run saved with :meth:`Results.save` (see :meth:`Results.read`)."""
    return Results.read(directory)


def _flatten(doc: Any, prefix: str = "") -> dict[str, Any]:
    """A nested config as ``key.path: value`` pairs (lists kept whole, as JSON)."""
    if isinstance(doc, Mapping):
        out: dict[str, Any] = {}
        for k, v in doc.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    value = json.dumps(doc, sort_keys=True) if isinstance(doc, list) else doc
    return {prefix.removesuffix("."): value}


def config_variants(configs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What tells runs apart: the config keys whose values differ between
    them (none if there are more than :data:`MAX_VARIANTS`: then the runs
    differ in too much for columns to say it, and their names must)."""
    flat = [_flatten(c) for c in configs]
    keys = sorted({k for f in flat for k in f})
    differ = [k for k in keys if len({json.dumps(f.get(k), sort_keys=True, default=str) for f in flat}) > 1]
    if len(configs) < 2 or len(differ) > MAX_VARIANTS:
        return [{} for _ in configs]
    return [{k: f.get(k) for k in differ} for f in flat]


def _missing(value: Any) -> bool:
    """None or NaN (a table's empty cell); lists and dicts are values."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def _label(variant: dict[str, Any], fallback: str, max_keys: int = MAX_LABEL_KEYS) -> str:
    """A short label from variant values: ``kind=lru, size_bytes=65536`` up
    to :data:`MAX_LABEL_KEYS` keys, the values alone (``lru / 16KiB /
    32KiB``) up to ``max_keys``, leaving out the keys a run does not have;
    ``fallback`` when there are none or too many to read."""
    shown = {k: v for k, v in variant.items() if not _missing(v)}
    if not shown or len(variant) > max(max_keys, MAX_LABEL_KEYS):
        return fallback
    if len(variant) > MAX_LABEL_KEYS:
        return " / ".join(str(v) for v in shown.values())
    return ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in shown.items())


def _from_results(named: list[tuple[str, Results]]) -> Runs:
    """Runs from full results, told apart by the config keys that differ."""
    variants = config_variants([r.config for _, r in named])
    runs = [Run(label=_label(v, name), variant=v, metrics=metrics(r), results=r)
            for (name, r), v in zip(named, variants)]
    keys = list(dict.fromkeys(k for v in variants for k in v))
    return Runs(runs=_unique_labels(runs), variants=keys)


def _unique_labels(runs: list[Run]) -> list[Run]:
    """Labels are figure legends and table keys: make repeated ones distinct."""
    seen: dict[str, int] = {}
    for r in runs:
        n = seen.get(r.label, 0)
        seen[r.label] = n + 1
        if n:
            r.label = f"{r.label} #{n + 1}"
    return runs


def _run_dirs(directory: Path) -> list[Path]:
    """The saved runs directly inside a directory, by name."""
    return sorted(p for p in directory.iterdir() if (p / "results.json").is_file())


def from_table(df: pd.DataFrame, variants: Sequence[str] | None = None) -> Runs:
    """Runs from a table with one row per run (the sweep store's shape).

    Columns: the variant columns (``variants``, by default every column that
    is neither a metric nor bookkeeping such as ``status`` or ``key``), any
    metrics (``cpi``, ``l2_miss_ratio``, ...), and optionally ``path`` (or
    ``results_dir``, or the sweep store's ``detail``): the run's saved
    directory, read for the per-task, per-interval and event figures and to
    fill in missing metrics. The sweep store's ``cachesched.store.load``
    returns this shape.
    """
    known = set(metric_names()) | BOOKKEEPING
    keys = list(variants) if variants is not None else [c for c in df.columns if c not in known]
    path_col = next((c for c in PATH_COLUMNS if c in df.columns), None)
    runs = []
    for i, row in enumerate(df.to_dict("records")):
        variant = {k: row[k] for k in keys}
        results = read_run(row[path_col]) if path_col and isinstance(row[path_col], (str, Path)) else None
        found = {k: float(row[k]) for k in metric_names() if k in row and pd.notna(row[k])}
        measured = metrics(results) if results is not None else {}
        label = str(row["run"]) if "run" in row else _label(variant, f"run {i}", MAX_VARIANTS)
        status = str(row["status"]) if "status" in row and pd.notna(row["status"]) else None
        runs.append(Run(label=label, variant=variant, metrics={**found, **measured}, results=results, status=status))
    return Runs(runs=_unique_labels(runs), variants=keys)


def read_table(path: Path) -> pd.DataFrame:
    """A runs table from CSV or Parquet (an export of the sweep store), its
    relative run paths taken as relative to the table's directory."""
    df = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    for col in PATH_COLUMNS:
        if col in df:
            df[col] = [str(path.parent / p) if isinstance(p, str) and not Path(p).is_absolute() else p
                       for p in df[col]]
    return df


def _store_table(path: Path) -> pd.DataFrame:
    """Every run of a sweep results store (``cachesched sweep --store``),
    through the store's own reader."""
    from .. import results

    reader = getattr(results, "load", None)
    if reader is None:
        raise FileNotFoundError(f"{path} is a sweep results store, but this cachesched cannot read one")
    return reader(path)


def load(source: Source, variants: Sequence[str] | None = None) -> Runs:
    """The runs of ``source``: a :class:`~cachesched.Results`; a directory
    written by :meth:`Results.save`; a directory of such directories (one
    run each, labelled by the config keys that differ, else by name); a
    ``results.json`` file; a mapping of labels to results or directories; a
    list of any of these; a pandas DataFrame of runs (see :func:`from_table`),
    or a CSV or Parquet file of one; or a sweep results store's directory.
    """
    if isinstance(source, pd.DataFrame):
        return from_table(source, variants)
    if isinstance(source, Results):
        return _from_results([("run", source)])
    if isinstance(source, (str, Path)):
        path = Path(source)
        if path.suffix in (".csv", ".parquet"):
            return from_table(read_table(path), variants)
        if (path / "ledger.sqlite").is_file():
            return from_table(_store_table(path), variants)
        if path.is_dir() and not (path / "results.json").is_file():
            dirs = _run_dirs(path)
            if not dirs:
                raise FileNotFoundError(f"{path}: no results.json in it or in any directory inside it")
            return _from_results([(d.name, read_run(d)) for d in dirs])
        return _from_results([(path.stem if path.is_file() else path.name, read_run(path))])
    if isinstance(source, Mapping):
        return _from_results([(str(k), v if isinstance(v, Results) else read_run(v)) for k, v in source.items()])
    items = list(source)
    return _from_results([(f"run {i}" if isinstance(v, Results) else Path(v).name,
                           v if isinstance(v, Results) else read_run(v)) for i, v in enumerate(items)])
