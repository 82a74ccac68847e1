"""The results store: an SQLite ledger of runs and a folder of their detail tables.

A run is keyed by a content hash of its full resolved configuration and the
cachesched version, so the same run is never stored twice and a sweep that is
started again finds what it already did. The ledger is written by one driver
at a time (a lock file the kernel releases when the driver dies), which is
what makes ``running`` rows left by a dead driver safe to run again.
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

from .errors import CacheschedError

DEFAULT_STORE = "cachesched-results"


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
    updated  REAL NOT NULL
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
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)

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

    def to_run(self, keys: list[str], retry_failed: bool = False) -> list[str]:
        """The keys still to run, in the given order: not done (a done run whose
        detail folder went missing counts as not done), not failed unless
        ``retry_failed``."""
        wanted = ("pending", "running", "failed") if retry_failed else ("pending", "running")
        out = []
        for key in dict.fromkeys(keys):
            row = self.db.execute("SELECT status, detail FROM runs WHERE key = ?", (key,)).fetchone()
            if row["status"] == "done" and not (self.dir / row["detail"]).is_dir():
                out.append(key)
            elif row["status"] in wanted:
                out.append(key)
        return out

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
        with self.transaction() as db:
            db.execute("UPDATE runs SET status = 'done', metrics = ?, error = NULL, detail = ?, updated = ? "
                       "WHERE key = ?", (canonical(metrics), str(detail), time.time(), key))

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
