"""Trace files: summaries, scans, generation, conversion from the lackey,
ChampSim and din formats, and columns to and from NumPy.

Access columns: ``kind`` (uint8: 0 load, 1 store, 2 ifetch), ``addr`` and
``pc`` (uint64), ``size`` (uint16) and ``instrs`` (uint32: instructions since
the previous access, counting the one making this access).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from . import _core
from .config import to_json

KIND_NAMES = ("load", "store", "ifetch")
COLUMNS = {"kind": "<u1", "addr": "<u8", "size": "<u2", "pc": "<u8", "instrs": "<u4"}


def info(path: str | Path) -> dict:
    """Header and totals of a ``.cst`` file, read from its index (fast)."""
    return json.loads(_core.trace_info(str(path)))


def scan(path: str | Path, thread: int | None = None) -> dict:
    """Read a whole stream: counts by kind, instructions, footprint in 64 B
    lines and 4 KiB pages, and the address range."""
    return json.loads(_core.trace_scan(str(path), thread))


def generate(workload: Mapping[str, Any], path: str | Path, *, seed: int = 1, progress=None) -> dict:
    """Write the stream of a workload (``{"kind": ..., "params": ...}``) to a
    ``.cst`` file; returns the file's summary."""
    return json.loads(_core.trace_generate(to_json(dict(workload), "workload"), str(path), seed, None, progress))


def convert(source: str | Path, path: str | Path, *, format: str = "auto", progress=None, **params: Any) -> dict:
    """Convert a trace in any supported format (lackey, champsim, din or cst;
    ``auto`` recognises it, gzip and xz included) to a ``.cst`` file.

    ``params`` are the other keys of a ``kind = "trace"`` workload (``skip``,
    ``limit``, ``ifetch``, ``access_bytes``; see docs/trace-formats.md).
    Returns ``{"format": ..., "summary": ...}``; ``progress(done, None)`` is
    called with the accesses read, about every million.
    """
    table = {"path": str(source), "format": format, **params}
    return json.loads(_core.trace_convert(to_json(table, "params"), str(path), progress))


def write(path: str | Path, accesses: pd.DataFrame | Mapping[str, Any], source: str = "python") -> dict:
    """Write accesses (a DataFrame or a dict of columns) to a ``.cst`` file.

    ``addr`` is required; ``kind`` defaults to loads, ``size`` to 8, ``pc`` to
    0 and ``instrs`` to 1. ``kind`` may hold codes or the names load, store
    and ifetch.
    """
    addr = np.asarray(accesses["addr"], dtype="<u8")
    n = len(addr)

    def col(name: str, default: int) -> np.ndarray:
        if name not in accesses:
            return np.full(n, default, dtype=COLUMNS[name])
        values = np.asarray(accesses[name])
        if name == "kind" and values.dtype.kind in "OUS":
            values = np.array([KIND_NAMES.index(str(v)) for v in values])
        return values.astype(COLUMNS[name])

    summary = _core.trace_write(str(path), addr.tobytes(), col("kind", 0).tobytes(), col("size", 8).tobytes(),
                                col("pc", 0).tobytes(), col("instrs", 1).tobytes(), source)
    return json.loads(summary)


def read(path: str | Path, thread: int | None = None, skip: int = 0, limit: int | None = None) -> pd.DataFrame:
    """Read a stream into a DataFrame with the columns kind, addr, size, pc, instrs."""
    cols = _core.trace_read(str(path), thread, skip, limit)
    return pd.DataFrame({name: np.frombuffer(cols[name], dtype=dtype) for name, dtype in COLUMNS.items()})
