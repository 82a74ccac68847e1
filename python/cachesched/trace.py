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
    lines and 4 KiB pages, the address range, and the reuse distances of the
    data references (``reuse_cold`` first references, ``reuse_buckets[b]``
    reuses at a distance of 0 for ``b = 0``, else in ``[2^(b-1), 2^b)`` lines)."""
    return json.loads(_core.trace_scan(str(path), thread))


def lru_hit_ratio(scan_result: Mapping[str, Any], cache_bytes: int, line_bytes: int = 64) -> float:
    """Hit ratio of the data references in a fully associative LRU cache of
    ``cache_bytes`` (a power of two times 64 B: exact), from a :func:`scan`."""
    lines = cache_bytes // line_bytes
    if lines <= 0 or lines & (lines - 1):
        raise ValueError(f"cache_bytes: expected a power of two multiple of {line_bytes}, got {cache_bytes}")
    buckets = scan_result["reuse_buckets"]
    total = scan_result["reuse_cold"] + sum(buckets)
    return sum(buckets[:lines.bit_length()]) / total if total else 0.0


def median_reuse(scan_result: Mapping[str, Any]) -> tuple[int, int] | None:
    """The range ``[lo, hi)`` of lines holding the median reuse distance of
    the data references that are reuses, or None without reuses."""
    buckets = scan_result["reuse_buckets"]
    half, seen = sum(buckets) / 2, 0
    for b, n in enumerate(buckets):
        seen += n
        if n and seen >= half:
            return (0, 1) if b == 0 else (1 << (b - 1), 1 << b)
    return None


def slice(path: str | Path, output: str | Path, *, skip: int = 0, limit: int | None = None,
          thread: int | None = None, progress=None) -> dict:
    """Write accesses ``skip .. skip + limit`` of one thread of ``path`` to a new
    ``.cst`` file (as its thread 0); returns the new file's summary."""
    params: dict[str, Any] = {"path": str(Path(path).resolve()), "skip": skip}
    if limit is not None:
        params["limit"] = limit
    if thread is not None:
        params["thread"] = thread
    return generate({"kind": "trace", "params": params}, output, progress=progress)


def iter_chunks(path: str | Path, *, skip: int = 0, limit: int | None = None, thread: int | None = None,
                chunk: int = 1 << 16):
    """Yield a stream's accesses as DataFrames of at most ``chunk`` rows."""
    done = 0
    while limit is None or done < limit:
        want = chunk if limit is None else min(chunk, limit - done)
        frame = read(path, thread=thread, skip=skip + done, limit=want)
        if frame.empty:
            return
        yield frame
        done += len(frame)


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


def read_block(path: str | Path, format: str) -> pd.DataFrame:
    """A block I/O trace (``format``: ``msr``, ``tencent`` or ``alibaba``;
    docs/trace-formats.md) as a DataFrame: ``time_ns`` (after the first
    request), ``device`` (its name), ``write``, ``offset`` and ``bytes``,
    ``response_ns`` (MSR's recorded response time, else missing)."""
    doc = json.loads(_core.block_read(str(path), format))
    df = pd.DataFrame(doc["requests"], columns=["time_ns", "device", "write", "offset", "bytes", "response_ns"])
    return df.assign(device=[doc["devices"][d] for d in df.device])
