"""Sweeps: a base configuration, axes of values, named variants, run as many simulations.

A sweep is written in TOML (or as a dict)::

    name = "l2-sizes"
    base = "base.toml"                # or an inline [base] table
    mode = "product"                  # or "zip"
    [axes]
    "machine.l2.size_bytes" = ["16KiB", "32KiB", "64KiB"]
    seed = [1, 2]
    [variants.lru]
    "machine.l2.replacement" = { kind = "lru" }

Each point's configuration is the base, then its variant's keys, then its axis
values, each merged at its key path as ``--set`` merges (``tasks[0].workload``
indexes a list). The runs go through an :class:`~cachesched.executors.Executor` and into a
:class:`~cachesched.store.Store`; see docs/sweeps.md.
"""

from __future__ import annotations

import copy
import itertools
import re
import sys
import time
import tomllib
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from .config import load as load_config
from .config import merge, read_toml, resolve
from .errors import CacheschedError, ConfigError
from .executors import Job, Outcome, make_executor
from .store import ENGINE, Store, run_key

SPEC_KEYS = ("name", "base", "mode", "axes", "variants")
MODES = ("product", "zip")
_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)((?:\[\d+\])*)")


def _error(loc: str, code: str, msg: str) -> ConfigError:
    return ConfigError.single(loc, code, msg)


def parse_path(path: str) -> list[str | int]:
    """``tasks[0].workload.kind`` -> ``["tasks", 0, "workload", "kind"]``."""
    keys: list[str | int] = []
    for part in path.split("."):
        m = _SEGMENT.fullmatch(part)
        if not m:
            raise _error(path, "invalid_key_path",
                         "not a key path (names separated by dots, list items as [N], e.g. tasks[0].workload)")
        keys.append(m.group(1))
        keys.extend(int(i) for i in re.findall(r"\d+", m.group(2)))
    return keys


def with_value(doc: dict, path: str, value: Any) -> dict:
    """A copy of ``doc`` with ``value`` at ``path``, merged as ``--set path=value``
    merges: tables key by key, a plug-in table whose ``kind`` changes replaced
    whole, anything else replaced. A list item (``tasks[0]``) must exist."""
    keys = parse_path(path)
    cut = max((i for i, k in enumerate(keys) if isinstance(k, int)), default=-1) + 1
    if cut == 0:
        return merge(doc, _nest(keys, value))
    out = copy.deepcopy(doc)
    node: Any = out
    for i, key in enumerate(keys[: cut - 1]):
        node = _step(node, key, keys[: i + 1])
    index = keys[cut - 1]
    _step(node, index, keys[:cut])
    rest = keys[cut:]
    if not rest:
        old = node[index]
        node[index] = merge(old, value) if isinstance(old, dict) and isinstance(value, Mapping) else copy.deepcopy(value)
    elif not isinstance(node[index], dict):
        raise _error(_render(keys[:cut]), "invalid_key_path", "is not a table")
    else:
        node[index] = merge(node[index], _nest(rest, value))
    return out


def _step(node: Any, key: str | int, upto: list[str | int]) -> Any:
    """``node[key]`` on the way down a key path, or an error naming where it stops."""
    parent = _render(upto[:-1]) or "the configuration"
    if isinstance(key, int):
        if not isinstance(node, list) or key >= len(node):
            size = f"has {len(node)} items" if isinstance(node, list) else "is not a list"
            raise _error(_render(upto), "invalid_key_path", f"no item {key}: {parent} {size}")
    elif not isinstance(node, dict) or key not in node:
        raise _error(_render(upto), "invalid_key_path", f"{parent} has no key '{key}' to index into")
    return node[key]


def _nest(keys: list[str | int], value: Any) -> dict:
    """``["a", "b"], 1`` -> ``{"a": {"b": 1}}``."""
    out: Any = value
    for key in reversed(keys):
        out = {key: out}
    return out


def _render(keys: list[str | int]) -> str:
    out = ""
    for k in keys:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else k)
    return out


def _flatten_axes(table: Mapping[str, Any], prefix: str = "") -> dict[str, list]:
    """Axes written as nested tables (TOML's bare ``machine.l2.size_bytes = [...]``)
    become flat key paths; every leaf must be a non-empty list of values."""
    out: dict[str, list] = {}
    for key, value in table.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, Mapping):
            out.update(_flatten_axes(value, path))
        elif isinstance(value, list) and value:
            _within("axes", path, parse_path, path)
            out[path] = value
        else:
            got = "an empty list" if isinstance(value, list) else f"{type(value).__name__} {value!r}"
            raise _error(f"axes.{path}", "invalid_axis", f"expected a non-empty list of values, got {got}")
    return out


@dataclass(frozen=True)
class Point:
    """One run of a sweep: its place, variant, axis values and configuration."""

    position: int
    variant: str | None
    axes: dict[str, Any]
    config: dict


@dataclass
class Sweep:
    """A validated sweep specification."""

    name: str
    base: dict
    axes: dict[str, list] = field(default_factory=dict)
    mode: str = "product"
    variants: dict[str, dict] = field(default_factory=dict)
    base_dir: Path | None = None
    spec: dict = field(default_factory=dict)

    def points(self) -> list[Point]:
        """Every variant crossed with the axes' combinations (their product, or
        their values taken together in ``zip`` mode), in a stable order."""
        names = list(self.axes)
        combos = (itertools.product(*self.axes.values()) if self.mode == "product"
                  else zip(*self.axes.values()))
        combos = list(combos)
        out = []
        for variant in list(self.variants) or [None]:
            for values in combos:
                doc = self.base
                for path, value in (self.variants[variant] if variant else {}).items():
                    doc = _within(f"variants.{variant}", path, with_value, doc, path, value)
                for path, value in zip(names, values):
                    doc = _within("axes", path, with_value, doc, path, value)
                out.append(Point(len(out), variant, dict(zip(names, values)), doc))
        return out


def _within(where: str, path: str, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``, its key-path errors located in the spec: ``axes.<path>``."""
    try:
        return fn(*args)
    except ConfigError as e:
        problem = e.errors()[0]
        msg = problem["msg"] if problem["loc"] == path else f"{problem['loc']}: {problem['msg']}"
        raise _error(f"{where}.{path}", problem["code"], msg) from None


def load_sweep(spec: Mapping[str, Any] | str | Path | Sweep) -> Sweep:
    """Read and check a sweep: a TOML file, TOML text or a dict. Errors are
    :class:`~cachesched.errors.ConfigError` naming the key of the spec."""
    if isinstance(spec, Sweep):
        return spec
    where: Path | None = None
    if isinstance(spec, Path) or (isinstance(spec, str) and "\n" not in spec and "=" not in spec):
        where = Path(spec)
        doc = read_toml(where, "sweep")
    elif isinstance(spec, str):
        doc = _parse(spec, "<sweep text>")
    else:
        doc = copy.deepcopy(dict(spec))
    unknown = [k for k in doc if k not in SPEC_KEYS]
    if unknown:
        raise _error(unknown[0], "unknown_field", f"unknown field, expected one of: {', '.join(SPEC_KEYS)}")
    here = where.resolve().parent if where else None
    base, base_dir = _base(doc.get("base"), here)
    mode = doc.get("mode", "product")
    if mode not in MODES:
        raise _error("mode", "invalid_value", f"expected one of: {', '.join(MODES)}, got {mode!r}")
    axes = _flatten_axes(_table(doc, "axes"))
    if mode == "zip" and len({len(v) for v in axes.values()}) > 1:
        first = next(iter(axes))
        odd = next(k for k, v in axes.items() if len(v) != len(axes[first]))
        raise _error(f"axes.{odd}", "invalid_axis", f"zip mode needs axes of equal length: {len(axes[odd])} values, "
                                                     f"but axes.{first} has {len(axes[first])}")
    variants = {}
    for name, keys in _table(doc, "variants").items():
        if not isinstance(keys, Mapping):
            raise _error(f"variants.{name}", "invalid_type", "expected a table of key paths and values")
        variants[name] = dict(keys)
        for path in keys:
            _within(f"variants.{name}", path, parse_path, path)
    name = doc.get("name", where.stem if where else "sweep")
    if not isinstance(name, str) or not name:
        raise _error("name", "invalid_type", "expected a non-empty string")
    sweep = Sweep(name, base, axes, mode, variants, base_dir, doc)
    sweep.points()  # key paths that do not fit the base fail now, before anything runs
    return sweep


def _parse(text: str, where: str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise _error(where, "invalid_toml", f"not valid TOML: {e}") from None


def _table(doc: Mapping, key: str) -> Mapping:
    value = doc.get(key, {})
    if not isinstance(value, Mapping):
        raise _error(key, "invalid_type", f"expected a table, got {type(value).__name__}")
    return value


def _base(value: Any, here: Path | None) -> tuple[dict, Path | None]:
    """The base configuration: an inline table, or a path (relative to the sweep file)."""
    if value is None:
        raise _error("base", "missing_field", "a sweep needs a base configuration (a table or a file path)")
    if isinstance(value, str):
        path = (here / value) if here and not Path(value).is_absolute() else Path(value)
        if not path.exists():
            raise _error("base", "unreadable", f"no configuration file {path}")
        return load_config(path)
    if isinstance(value, Mapping):
        return dict(value), here
    raise _error("base", "invalid_type", f"expected a table or a file path, got {type(value).__name__}")


# ---------------------------------------------------------------- running


def execute(job: Job) -> Outcome:
    """Run one simulation in a worker. Never raises: a failure is an outcome,
    so one bad run cannot stop a sweep. Returns the summary metrics and the
    detail files' bytes (the driver writes them, so workers need no shared disk)."""
    from .simulate import simulate

    if job.get("version", ENGINE) != ENGINE:
        # The run's key names the engine that must run it (a Dask worker may have another installed).
        return {"ok": False, "error": f"this worker has cachesched {ENGINE}, the run is keyed for {job['version']}"}
    try:
        results = simulate(job["config"], base_dir=job.get("base_dir"))
        return {"ok": True, "metrics": results.metrics(), "files": results.files()}
    except ConfigError as e:
        problems = [f"{p['loc']}: {p['msg']}" for p in e.errors()]
        return {"ok": False, "error": "\n".join([f"ConfigError: {e}", *problems[1:]]) if problems else str(e)}
    except CacheschedError as e:
        return {"ok": False, "error": f"{type(e).__name__}: {e}"}
    except Exception:  # a bug, but the sweep goes on; the traceback is the report
        return {"ok": False, "error": traceback.format_exc()}


@dataclass
class Outcomes:
    """What a sweep did: counts of runs by what happened to them."""

    points: int = 0
    #: Points whose configuration does not resolve (recorded failed, never run).
    invalid: int = 0
    skipped: int = 0
    done: int = 0
    failed: int = 0
    seconds: float = 0.0
    #: References the runs done simulated, warm-up included.
    accesses: int = 0


def _register(store: Store, sweep: Sweep) -> tuple[list[str], set[str]]:
    """Resolve every point and register it in the store: the keys in point
    order, and those of points whose configuration does not resolve (recorded
    failed with the error, under a hash of the unresolved document)."""
    version = ENGINE
    records = []
    for p in sweep.points():
        rec = {"position": p.position, "variant": p.variant, "axes": p.axes, "version": version}
        try:
            rec["config"] = resolve(p.config)
        except ConfigError as e:
            rec.update(config={"unresolved": p.config}, error=f"ConfigError: {e}")
        rec["key"] = run_key(rec["config"], version)
        records.append(rec)
    store.register(sweep.name, sweep.spec, records)
    return [r["key"] for r in records], {r["key"] for r in records if "error" in r}


def _bar(total: int, quiet: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, unit=" runs", file=sys.stderr, disable=quiet or None, dynamic_ncols=True,
                smoothing=0.1)


def run(
    spec: Mapping[str, Any] | str | Path | Sweep,
    *,
    store: str | Path | Store | None = None,
    workers: int | None = None,
    dask: Any = None,
    retry_failed: bool = False,
    progress: bool = True,
) -> Outcomes:
    """Run a sweep into a store, skipping the runs the store already has.

    ``store`` defaults to ``$CACHESCHED_STORE``, else ``./cachesched-results``.
    ``workers`` local processes (default: one per core), or the Dask cluster
    ``dask`` (a scheduler address or a ``distributed.Client``). Failed runs
    are recorded with their error and not tried again unless
    ``retry_failed``. Read the results with :func:`cachesched.store.load`.
    """
    sweep = load_sweep(spec)
    db = store if isinstance(store, Store) else Store(store)
    start = time.perf_counter()
    try:
        with db.driving():
            keys, invalid = _register(db, sweep)
            todo = [k for k in db.to_run(keys, retry_failed) if k not in invalid]
            out = Outcomes(points=len(keys), invalid=len(invalid),
                           skipped=len(dict.fromkeys(keys)) - len(todo) - len(invalid))
            _drive(db, sweep, todo, out, make_executor(workers, dask), progress)
    finally:
        if not isinstance(store, Store):
            db.close()
    out.seconds = time.perf_counter() - start
    return out


def _drive(db: Store, sweep: Sweep, todo: list[str], out: Outcomes, executor: Any, progress: bool) -> None:
    """Hand the runs to the executor, one claim as each leaves, and record each
    outcome as it comes back."""
    base_dir = str(sweep.base_dir) if sweep.base_dir else None

    def jobs() -> Iterator[Job]:
        for key in todo:
            db.claim(key)
            yield {"key": key, "config": db.config(key), "base_dir": base_dir, "version": ENGINE}

    bar = _bar(len(todo), not progress)
    try:
        with executor:
            for job, outcome in executor.run(execute, jobs()):
                if outcome["ok"]:
                    db.finish(job["key"], outcome["metrics"], outcome["files"])
                    out.done += 1
                    metrics = outcome["metrics"]
                    out.accesses += int(metrics.get("accesses") or 0) + int(metrics.get("warmup_accesses") or 0)
                else:
                    db.fail(job["key"], outcome["error"])
                    out.failed += 1
                bar.set_postfix_str(f"done {out.done}, failed {out.failed}, left {len(todo) - out.done - out.failed}",
                                    refresh=False)
                bar.update()
    finally:
        bar.close()


# ---------------------------------------------------------------- benchmark


def bench(spec: Mapping[str, Any] | str | Path | Sweep, workers: tuple[int, ...] = (1, 2),
          repeat: int = 1) -> dict[int, float]:
    """Wall-clock seconds of the whole sweep with each number of local workers,
    each time into a fresh store (so nothing is skipped); the best of
    ``repeat`` rounds, the worker counts taking turns so that a change in the
    machine's load falls on all of them. The fork server is started first:
    only the first sweep of a process pays for it, whatever its worker count."""
    import tempfile

    from .executors import LocalExecutor

    LocalExecutor(1).warm_up()
    sweep = load_sweep(spec)
    seconds: dict[int, float] = {}
    for _ in range(repeat):
        for n in workers:
            with tempfile.TemporaryDirectory() as tmp:
                outcome = run(sweep, store=Path(tmp) / "store", workers=n, progress=False)
            if outcome.failed or outcome.invalid:
                raise CacheschedError(f"{outcome.failed + outcome.invalid} runs of the benchmark sweep failed")
            seconds[n] = min(seconds.get(n, float("inf")), outcome.seconds)
    return seconds


def describe(sweep: Sweep) -> str:
    """One line: the sweep's name, points and axes."""
    axes = ", ".join(f"{k} ({len(v)})" for k, v in sweep.axes.items()) or "no axes"
    variants = f", {len(sweep.variants)} variants" if sweep.variants else ""
    return f"sweep {sweep.name}: {len(sweep.points())} runs, {sweep.mode} of {axes}{variants}"

