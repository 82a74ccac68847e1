"""The results store: an SQLite ledger of runs and a folder of their detail tables.

A run is keyed by a content hash of its full resolved configuration and the
cachesched version, so the same run is never stored twice and a sweep that is
started again finds what it already did. The ledger is written by one driver
at a time (a lock file the kernel releases when the driver dies), which is
what makes ``running`` rows left by a dead driver safe to run again.

The files on disk are the truth: each done run's folder holds its results
and the ledger the digests of its files, so a damaged file is found and the
run done again; each sweep's points are also kept in ``sweeps/``, so a
damaged ledger can be rebuilt from the folders (:func:`rebuild`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import sqlite3
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from . import _core
from ._files import write_text
from .errors import CacheschedError, ResultsError

DEFAULT_STORE = "cachesched-results"

#: What runs a run: the package's version and the build of the engine's
#: sources (a build from other sources is another engine: its runs are new runs).
ENGINE = f"{_core.__version__}+{_core.__build__}"


def default_store() -> str:
    """``$CACHESCHED_STORE``, else ``./cachesched-results``."""
    return os.environ.get("CACHESCHED_STORE", DEFAULT_STORE)
STATUSES = ("pending", "running", "done", "failed")

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    key      TEXT PRIMARY KEY,
    version  TEXT NOT NULL,
    config   TEXT NOT NULL,
    status   TEXT NOT NULL CHECK (status IN ('pending', 'running', 'done', 'failed')),
    metrics  TEXT,
    error    TEXT,
    detail   TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    updated  REAL NOT NULL,
    files    TEXT  -- JSON: the detail files' SHA-256 digests, by name
);
CREATE TABLE IF NOT EXISTS points (
    sweep    TEXT NOT NULL,
    position INTEGER NOT NULL,
    key      TEXT NOT NULL REFERENCES runs (key),
    variant  TEXT,
    axes     TEXT NOT NULL,  -- JSON, in the order of the spec
    PRIMARY KEY (sweep, position)
);
CREATE TABLE IF NOT EXISTS sweeps (
    name     TEXT PRIMARY KEY,
    spec     TEXT NOT NULL,
    updated  REAL NOT NULL
);
"""


def canonical(doc: Any) -> str:
    """JSON with sorted keys and no spaces: equal documents give equal text."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def run_key(config: dict, version: str) -> str:
    """The content hash naming a run: its resolved configuration and the version
    that runs it (a new version may count differently, so it is a new run)."""
    return hashlib.sha256(canonical({"config": config, "version": version}).encode()).hexdigest()


class StoreBusy(CacheschedError):
    """Another driver holds the store."""


class Store:
    """One results directory: ``ledger.sqlite`` (WAL) and ``runs/<key>/`` detail folders."""

    def __init__(self, directory: str | Path | None = None, *, create: bool = True):
        self.dir = Path(directory if directory is not None else default_store())
        path = self.dir / "ledger.sqlite"
        if not create and not path.exists():
            raise CacheschedError(f"{self.dir}: no results store here (no ledger.sqlite)")
        self.dir.mkdir(parents=True, exist_ok=True)
        # Autocommit; transactions are explicit, so each one is visible whole or not at all.
        self.db = sqlite3.connect(path, isolation_level=None, timeout=60)
        self.db.row_factory = sqlite3.Row
        try:
            if self.db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                raise sqlite3.DatabaseError("its integrity check failed")
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
            if "files" not in {r["name"] for r in self.db.execute("PRAGMA table_info(runs)")}:
                self.db.execute("ALTER TABLE runs ADD COLUMN files TEXT")  # a store older than the digests
        except sqlite3.DatabaseError as e:
            self.db.close()
            raise ResultsError(f"{path}: the results store's ledger is damaged ({e}). The runs in {self.dir / 'runs'} "
                               f"are intact: `cachesched results rebuild --store {self.dir}` makes a new ledger from "
                               "them (the damaged one is kept aside)") from None

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any error."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    @contextmanager
    def driving(self) -> Iterator[None]:
        """Hold the store for one driver. Rows a previous driver left ``running``
        are put back to ``pending``: that driver is dead, since the kernel
        released its lock, and its half-written detail folders are removed."""
        handle = open(self.dir / "driver.lock", "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise StoreBusy(f"{self.dir}: another sweep is running on this store") from None
        try:
            self._unclaim()
            shutil.rmtree(self.dir / "runs" / ".tmp", ignore_errors=True)
            try:
                yield
            finally:
                self._unclaim()  # after Ctrl-C or an error: what was in flight is pending again
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()

    def _unclaim(self) -> None:
        """Put every ``running`` row back to ``pending`` (only under the driver lock)."""
        with self.transaction() as db:
            db.execute("UPDATE runs SET status = 'pending', updated = ? WHERE status = 'running'", (time.time(),))

    def register(self, sweep: str, spec: dict, points: list[dict]) -> None:
        """Record a sweep's points and add their runs as ``pending`` (or as
        ``failed`` when ``error`` is set: a configuration that does not
        resolve). Runs already known keep their status: that is the resume."""
        now = time.time()
        kept = [{k: p.get(k) for k in ("position", "key", "variant", "axes", "version", "config", "error")}
                for p in points]
        (self.dir / "sweeps").mkdir(exist_ok=True)
        write_text(self._sweep_file(sweep), canonical({"name": sweep, "spec": spec, "points": kept}) + "\n")
        with self.transaction() as db:
            for p in points:
                status = "failed" if p.get("error") else "pending"
                db.execute("INSERT OR IGNORE INTO runs (key, version, config, status, error, updated) "
                           "VALUES (?, ?, ?, ?, ?, ?)", (p["key"], p["version"], canonical(p["config"]), status,
                                                         p.get("error"), now))
            db.execute("DELETE FROM points WHERE sweep = ?", (sweep,))
            db.executemany("INSERT INTO points (sweep, position, key, variant, axes) VALUES (?, ?, ?, ?, ?)",
                           [(sweep, p["position"], p["key"], p["variant"], json.dumps(p["axes"])) for p in points])
            db.execute("INSERT OR REPLACE INTO sweeps (name, spec, updated) VALUES (?, ?, ?)",
                       (sweep, canonical(spec), now))

    def _sweep_file(self, sweep: str) -> Path:
        """Where a sweep's points are kept beside the ledger."""
        return self.dir / "sweeps" / f"{hashlib.sha256(sweep.encode()).hexdigest()[:16]}.json"

    def to_run(self, keys: list[str], retry_failed: bool = False) -> list[str]:
        """The keys still to run, in the given order: not done (a done run whose
        detail files went missing or were damaged counts as not done), not
        failed unless ``retry_failed``."""
        wanted = ("pending", "running", "failed") if retry_failed else ("pending", "running")
        out = []
        for key in dict.fromkeys(keys):
            row = self.db.execute("SELECT status, detail, files FROM runs WHERE key = ?", (key,)).fetchone()
            if row["status"] == "done" and not self._intact(row):
                out.append(key)
            elif row["status"] in wanted:
                out.append(key)
        return out

    def _intact(self, row: sqlite3.Row) -> bool:
        """Whether a done run's detail files are all there as written: by
        their digests, or for a run stored before digests, by reading its
        results."""
        folder = self.dir / row["detail"]
        if not folder.is_dir():
            return False
        if row["files"] is None:
            from .results import Results

            try:
                Results.read(folder)
                return True
            except ResultsError:
                return False
        for name, digest in json.loads(row["files"]).items():
            try:
                if _digest((folder / name).read_bytes()) != digest:
                    return False
            except OSError:
                return False
        return True

    def config(self, key: str) -> dict:
        return json.loads(self.db.execute("SELECT config FROM runs WHERE key = ?", (key,)).fetchone()["config"])

    def claim(self, key: str) -> None:
        """Mark a run as handed to a worker."""
        with self.transaction() as db:
            db.execute("UPDATE runs SET status = 'running', attempts = attempts + 1, updated = ? WHERE key = ?",
                       (time.time(), key))

    def finish(self, key: str, metrics: dict, files: dict[str, bytes]) -> None:
        """Store a finished run: its detail files are written to a temporary
        folder and renamed into place, then one transaction marks it done. A
        crash in between leaves the run ``running``, so it runs again and its
        folder is replaced; a reader never sees a done run without its files."""
        detail = Path("runs") / key[:2] / key
        tmp = self.dir / "runs" / ".tmp" / f"{key}-{uuid.uuid4().hex}"
        tmp.mkdir(parents=True)
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        final = self.dir / detail
        final.parent.mkdir(parents=True, exist_ok=True)
        if final.exists():
            shutil.rmtree(final)
        os.rename(tmp, final)
        digests = canonical({name: _digest(data) for name, data in files.items()})
        with self.transaction() as db:
            db.execute("UPDATE runs SET status = 'done', metrics = ?, error = NULL, detail = ?, files = ?, updated = ? "
                       "WHERE key = ?", (canonical(metrics), str(detail), digests, time.time(), key))

    def fail(self, key: str, error: str) -> None:
        """Record a failed run and its error text."""
        with self.transaction() as db:
            db.execute("UPDATE runs SET status = 'failed', error = ?, updated = ? WHERE key = ?",
                       (error, time.time(), key))

    def sweeps(self) -> list[dict]:
        """Each sweep with its number of points in each status."""
        rows = self.db.execute(
            "SELECT p.sweep AS sweep, r.status AS status, COUNT(*) AS n FROM points p JOIN runs r USING (key) "
            "GROUP BY p.sweep, r.status ORDER BY p.sweep").fetchall()
        out: dict[str, dict] = {}
        for r in rows:
            out.setdefault(r["sweep"], {"sweep": r["sweep"], **{s: 0 for s in STATUSES}})[r["status"]] = r["n"]
        return list(out.values())

    def points(self, sweep: str | None = None) -> list[sqlite3.Row]:
        """Every point of a sweep (or of all sweeps) joined with its run."""
        query = ("SELECT p.sweep, p.position, p.variant, p.axes, r.* FROM points p JOIN runs r USING (key)"
                 + (" WHERE p.sweep = ?" if sweep is not None else "") + " ORDER BY p.sweep, p.position")
        return self.db.execute(query, (sweep,) if sweep is not None else ()).fetchall()

    def find(self, prefix: str) -> sqlite3.Row:
        """The run whose key starts with ``prefix``."""
        rows = self.db.execute("SELECT * FROM runs WHERE key LIKE ? LIMIT 2", (prefix + "%",)).fetchall()
        if len(rows) != 1:
            what = "no run" if not rows else "more than one run"
            raise CacheschedError(f"{self.dir}: {what} has a key starting with '{prefix}'")
        return rows[0]


def rebuild(directory: str | Path) -> dict[str, int]:
    """A new ledger for the store in ``directory`` from what is on disk: a
    done run for each run folder whose results read back (their files'
    digests taken now), and each sweep's points from ``sweeps/`` (a point
    whose run has no folder is pending again). The old ledger is moved aside
    to ``ledger.sqlite.old-<time>``, not deleted. Returns the counts of
    runs, sweeps, and run folders that were skipped because their results
    do not read back (they run again)."""
    from .results import Results

    root = Path(directory)
    if not (root / "runs").is_dir() and not (root / "ledger.sqlite").exists():
        raise CacheschedError(f"{root}: no results store here (no ledger.sqlite, no runs/)")
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for suffix in ("", "-wal", "-shm"):
        old = root / f"ledger.sqlite{suffix}"
        if old.exists():
            os.replace(old, root / f"ledger.sqlite{suffix}.old-{stamp}")
    store = Store(root)
    counts = {"runs": 0, "sweeps": 0, "skipped": 0}
    now = time.time()
    try:
        with store.transaction() as db:
            for folder in sorted(root.glob("runs/??/*")):
                if not folder.is_dir():
                    continue
                try:
                    results = Results.read(folder)
                except ResultsError:
                    counts["skipped"] += 1
                    continue
                files = {p.name: _digest(p.read_bytes()) for p in sorted(folder.iterdir()) if p.is_file()}
                db.execute("INSERT OR REPLACE INTO runs (key, version, config, status, metrics, detail, attempts, "
                           "updated, files) VALUES (?, ?, ?, 'done', ?, ?, 1, ?, ?)",
                           (folder.name, results.version, canonical(results.config), canonical(results.metrics()),
                            str(folder.relative_to(root)), now, canonical(files)))
                counts["runs"] += 1
            for path in sorted(root.glob("sweeps/*.json")):
                kept = json.loads(path.read_text())
                for p in kept["points"]:
                    status = "failed" if p.get("error") else "pending"
                    db.execute("INSERT OR IGNORE INTO runs (key, version, config, status, error, updated) "
                               "VALUES (?, ?, ?, ?, ?, ?)", (p["key"], p["version"], canonical(p["config"]), status,
                                                             p.get("error"), now))
                    db.execute("INSERT INTO points (sweep, position, key, variant, axes) VALUES (?, ?, ?, ?, ?)",
                               (kept["name"], p["position"], p["key"], p["variant"], json.dumps(p["axes"])))
                db.execute("INSERT INTO sweeps (name, spec, updated) VALUES (?, ?, ?)",
                           (kept["name"], canonical(kept["spec"]), now))
                counts["sweeps"] += 1
    finally:
        store.close()
    return counts


def _cell(value: Any) -> Any:
    """An axis value as a table cell: scalars stay, tables and lists become JSON text."""
    return value if isinstance(value, (str, int, float, bool)) or value is None else json.dumps(value, sort_keys=True)


def load(store: str | Path | None = None, sweep: str | None = None) -> pd.DataFrame:
    """A sweep's results from a results store (``cachesched sweep --store DIR``;
    default ``$CACHESCHED_STORE``, else ``./cachesched-results``)
    as one row per point: ``sweep``, ``position``, ``variant``, one column per
    axis (named by its key path), ``status``, ``key``, ``error``, ``detail``
    (the folder of the run's ``results.json`` and Parquet tables, absolute),
    then the summary metrics. All sweeps of the store if ``sweep`` is None.
    ``df.attrs["axes"]`` lists the axis columns."""
    db = Store(store, create=False)
    try:
        points = db.points(sweep)
    finally:
        db.close()
    rows, axes = [], {}
    for p in points:
        row = {"sweep": p["sweep"], "position": p["position"], "variant": p["variant"]}
        values = json.loads(p["axes"])
        axes.update(dict.fromkeys(values))
        row.update({k: _cell(v) for k, v in values.items()})
        row.update(status=p["status"], key=p["key"], error=p["error"],
                   detail=str((db.dir / p["detail"]).resolve()) if p["detail"] else None)
        row.update(json.loads(p["metrics"]) if p["metrics"] else {})
        rows.append(row)
    df = pd.DataFrame(rows)
    df.attrs["axes"] = list(axes)
    return df
