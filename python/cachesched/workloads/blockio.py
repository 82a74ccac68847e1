"""Block I/O workloads recorded from real programs: the file I/O of a
database, a file server and a web server, each run under strace and turned
into an MSR Cambridge block trace (:mod:`cachesched.iorecord`). They are the
VMs of the thin-provisioning experiment (seed 004, part B1: the
dissertation's database, file and web servers).

- ``database``: sqlite3 running pgbench's TPC-B-like transactions (an
  update of a random account, its read-back, updates of its teller and
  branch, a history row; a rollback journal) on a file database whose
  page cache is kept small (256 KiB), so its pages are read from the file;
- ``file``: tar archiving a generated tree of files (sizes log-normal
  around 24 KiB) and extracting the archive into a copy;
- ``web``: ``programs/webread.py`` serving pages of a generated site
  (sizes log-normal around 16 KiB) by popularity (Zipf), each read whole.

Inputs are generated here, deterministically; traces are cached under
``$XDG_CACHE_HOME/cachesched/blockio/<size>/`` with a manifest.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
from pathlib import Path

from .._files import write_text
from .suite import PROGRAMS_DIR, SIZES, _by_size

SERVERS = ("database", "file", "web")
#: What recording them needs: {binary: Debian package}.
TOOLS = {"strace": "strace", "sqlite3": "sqlite3", "tar": "tar"}


def missing_packages() -> list[str]:
    """Debian packages recording the workloads needs and this machine lacks."""
    return sorted({package for binary, package in TOOLS.items() if shutil.which(binary) is None})


def _sizes(rng: random.Random, n: int, median: int) -> list[int]:
    return [max(256, int(rng.lognormvariate(0, 1) * median)) for _ in range(n)]


def _database(work: Path, size: str) -> tuple[list[str], str]:
    accounts, transactions = _by_size(size, (100_000, 4_000), (1_000_000, 40_000), tiny=(2_000, 100))
    rng = random.Random(1)
    lines = ["PRAGMA cache_size = -256;",
             "CREATE TABLE branches(bid INTEGER PRIMARY KEY, bbalance INTEGER, filler TEXT);",
             "CREATE TABLE tellers(tid INTEGER PRIMARY KEY, bid INTEGER, tbalance INTEGER, filler TEXT);",
             "CREATE TABLE accounts(aid INTEGER PRIMARY KEY, bid INTEGER, abalance INTEGER, filler TEXT);",
             "CREATE TABLE history(tid INTEGER, bid INTEGER, aid INTEGER, delta INTEGER, mtime INTEGER, filler TEXT);",
             f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {accounts // 1000 + 1}) "
             "INSERT INTO branches SELECT i, 0, printf('%88s', '') FROM n;",
             f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {accounts // 100 + 1}) "
             "INSERT INTO tellers SELECT i, 1 + i / 10, 0, printf('%84s', '') FROM n;",
             f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {accounts}) "
             "INSERT INTO accounts SELECT i, 1 + i / 1000, 0, printf('%84s', '') FROM n;"]
    for t in range(transactions):
        aid, tid, delta = rng.randint(1, accounts), rng.randint(1, accounts // 100 + 1), rng.randint(-5000, 5000)
        bid = 1 + tid // 10
        lines += ["BEGIN;", f"UPDATE accounts SET abalance = abalance + {delta} WHERE aid = {aid};",
                  f"SELECT abalance FROM accounts WHERE aid = {aid};",
                  f"UPDATE tellers SET tbalance = tbalance + {delta} WHERE tid = {tid};",
                  f"UPDATE branches SET bbalance = bbalance + {delta} WHERE bid = {bid};",
                  f"INSERT INTO history VALUES ({tid}, {bid}, {aid}, {delta}, {t}, 'x');", "COMMIT;"]
    write_text(work / "oltp.sql", "\n".join(lines) + "\n")
    return (["sqlite3", "bank.db", ".read oltp.sql"],
            f"{accounts:,} accounts, {transactions:,} TPC-B-like transactions (pgbench's), sqlite page cache 256 KiB")


def _file(work: Path, size: str) -> tuple[list[str], str]:
    dirs, per_dir = _by_size(size, (20, 40), (60, 100), tiny=(3, 10))
    rng = random.Random(2)
    total = 0
    for d in range(dirs):
        folder = work / "tree" / f"d{d:03d}"
        folder.mkdir(parents=True)
        for i, n in enumerate(_sizes(rng, per_dir, 24 << 10)):
            (folder / f"f{i:04d}.dat").write_bytes(rng.randbytes(n))
            total += n
    return (["sh", "-c", "tar -cf tree.tar tree && mkdir copy && tar -xf tree.tar -C copy"],
            f"a tree of {dirs * per_dir:,} files ({total / 2**20:.1f} MiB) archived by tar and extracted again")


def _web(work: Path, size: str) -> tuple[list[str], str]:
    pages, requests = _by_size(size, (800, 6_000), (4_000, 60_000), tiny=(50, 200))
    rng = random.Random(3)
    (work / "site").mkdir()
    total = 0
    for i, n in enumerate(_sizes(rng, pages, 16 << 10)):
        (work / "site" / f"p{i:05d}.html").write_bytes(rng.randbytes(n))
        total += n
    shutil.copy(PROGRAMS_DIR / "webread.py", work)
    return ([sys.executable, "webread.py", "site", str(requests), "1"],
            f"{requests:,} requests over {pages:,} pages ({total / 2**20:.1f} MiB), Zipf popularity, read whole")


PREPARE = {"database": _database, "file": _file, "web": _web}


def cache_dir(size: str) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "cachesched" / "blockio" / size


def record(name: str, size: str = "small", *, out_dir: Path | None = None, force: bool = False) -> dict:
    """Record one server's file I/O (or reuse the cached trace); returns its manifest."""
    from .. import iorecord

    if name not in PREPARE:
        raise ValueError(f"unknown block workload {name!r}; there are {', '.join(SERVERS)}")
    if size not in SIZES:
        raise ValueError(f"size: expected one of {', '.join(SIZES)}, got {size!r}")
    out_dir = out_dir or cache_dir(size)
    out_dir.mkdir(parents=True, exist_ok=True)
    path, manifest_path = out_dir / f"{name}.csv", out_dir / f"{name}.json"
    if not force and path.exists() and manifest_path.exists():
        return json.loads(manifest_path.read_text())
    work = out_dir / f"{name}.work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    argv, what = PREPARE[name](work, size)
    summary = iorecord.record(argv, path, cwd=work, host=name)
    shutil.rmtree(work, ignore_errors=True)
    manifest = {"workload": name, "size": size, "command": [Path(argv[0]).name, *argv[1:]], "input": what, **summary}
    write_text(manifest_path, json.dumps(manifest, indent=2) + "\n")
    return manifest
