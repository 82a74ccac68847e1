"""Shared fixtures: small configurations that run in milliseconds."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest


def needed(found, what: str, how: str):
    """``found`` if it is there, else a failure saying how to get it: the
    suite's references and tools are part of it, so a missing one fails the
    tests that need it, never skips them."""
    if not found:
        pytest.fail(f"{what} is missing: {how}", pytrace=False)
    return found


def stored_runs(store: Path) -> list[tuple]:
    """Every run of a results store as (key, status, last update): equal
    before and after a second run when that run simulated nothing."""
    with sqlite3.connect(store / "ledger.sqlite") as db:
        return db.execute("select key, status, updated from runs order by key").fetchall()


def quick_study(name: str, out: Path) -> str:
    """``cachesched study NAME --quick -o OUT -q`` in a fresh process; its
    output (the test fails if the study does)."""
    proc = subprocess.run([sys.executable, "-m", "cachesched.cli", "study", name, "--quick", "-o", str(out), "-q"],
                          check=False, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def assert_rerun_simulates_nothing(name: str, out: Path) -> None:
    """A second quick study on ``out`` runs nothing again and writes the same claims."""
    before, runs = (out / "claims.csv").read_text(), stored_runs(out / "store")
    quick_study(name, out)
    assert stored_runs(out / "store") == runs, "nothing ran again"
    assert (out / "claims.csv").read_text() == before


@pytest.fixture
def run_cli():
    """Run the command line in a fresh process; returns the CompletedProcess."""

    def run(*args: str, check: bool = False) -> subprocess.CompletedProcess:
        proc = subprocess.run([sys.executable, "-m", "cachesched.cli", *args], capture_output=True, text=True,
                              timeout=600)
        if check and proc.returncode != 0:
            raise AssertionError(f"cachesched {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
        return proc

    return run


def mixed_accesses(seed: int, n: int, lines: tuple[int, int, int], sizes: tuple[int, ...] = (8,),
                   max_offset: int = 56) -> dict[str, np.ndarray]:
    """Loads, stores and ifetches over a hot set, a warm set and a cyclic
    sweep of ``lines`` lines each: reuses at several distances. Accesses of
    ``sizes`` bytes start anywhere below ``max_offset`` in their line."""
    rng = np.random.default_rng(seed)
    hot = rng.integers(0, lines[0], n) * 64
    warm = rng.integers(0, lines[1], n) * 64 + (1 << 20)
    sweep = (np.arange(n) % lines[2]) * 64 + (1 << 24)
    addr = np.choose(rng.integers(0, 3, n), [hot, warm, sweep]).astype(np.uint64) + rng.integers(
        0, max_offset, n).astype(np.uint64)
    kind = rng.choice([0, 1, 2], n, p=[0.6, 0.3, 0.1]).astype(np.uint8)
    size = rng.choice(sizes, n).astype(np.uint16)
    return {"addr": addr, "kind": kind, "size": size}


def lru_misses(blocks, capacity: int) -> int:
    """libCacheSim's LRU of ``capacity`` blocks over ``blocks``: its misses."""
    import libcachesim

    lru, misses = libcachesim.LRU(cache_size=capacity), 0
    for b in blocks:
        req = libcachesim.Request()
        req.obj_id, req.obj_size = b, 1
        misses += not lru.get(req)
    return misses
