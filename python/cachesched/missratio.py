"""Miss-ratio curves in one pass (docs/mrc.md).

:func:`mrc` reads a ``.cst`` trace once and returns the LRU miss ratio of
its data references for many cache sizes: fully associative (``sets=None``)
or set-associative with a fixed number of sets, every associativity at
once. :func:`plot` draws the curve with matplotlib.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import pandas as pd

from ._files import staged
from . import _core
from .errors import ConfigError


def mrc(path: str | Path, *, sets: int | None = None, line_bytes: int = 64,
        sizes: Iterable[int] | None = None, sample: float | None = None, thread: int | None = None,
        ifetch: bool = False, progress=None) -> pd.DataFrame:
    """The LRU miss-ratio curve of one thread of a ``.cst`` trace, from one pass.

    ``sets=None`` gives fully associative caches (``ways`` is None in the
    result); ``sets=S`` caches of ``S`` sets (``line % S`` indexes them),
    with sizes ``S * ways * line_bytes``. ``sizes`` (bytes) must then be
    multiples of ``S * line_bytes``; by default the curve is drawn at 1, 2,
    3, 4, 6, 8, 12, ... ways (lines, when fully associative) until only
    first references miss.

    Counted: loads and stores (and instruction fetches with ``ifetch=True``,
    as for a unified cache); an access that spans lines counts one reference
    per line, as the simulator's caches count it.

    ``sample=R`` (fully associative only) keeps the lines whose hash falls
    under ``R`` and scales their distances by ``1/R`` (SHARDS): faster on
    long traces, approximate (docs/mrc.md gives measured errors).

    Returns a DataFrame with the columns ``size_bytes``, ``ways``,
    ``miss_ratio``, ``misses`` (estimated, rounded, when sampled) and
    ``references`` (line references counted); ``attrs`` holds ``sets``,
    ``line_bytes``, ``rate`` (1.0 when exact), ``sampled``, ``cold`` and
    ``lines`` (distinct lines sampled). ``progress(done, total)`` gets the
    accesses read, about every million.
    """
    n_sets = 1 if sets is None else int(sets)
    if n_sets < 1:
        raise ConfigError.single("sets", "invalid_value", f"expected at least 1 set, got {sets}")
    ways = None
    if sizes is not None:
        unit = n_sets * line_bytes
        ways = []
        for size in sizes:
            size = int(size)
            if size <= 0 or size % unit:
                what = f"{n_sets} sets x {line_bytes} B" if sets is not None else f"the line size, {line_bytes} B"
                raise ConfigError.single("sizes", "invalid_value",
                                         f"expected a positive multiple of {what} = {unit} B, got {size}")
            ways.append(size // unit)
    import json

    out = json.loads(_core.trace_mrc(str(path), thread, n_sets, line_bytes, ways, sample, ifetch, progress))
    rows = out.pop("rows")
    exact = out["rate"] == 1.0
    frame = pd.DataFrame({
        "size_bytes": [r["ways"] * n_sets * line_bytes for r in rows],
        "ways": [r["ways"] if sets is not None else None for r in rows],
        "miss_ratio": [r["miss_ratio"] for r in rows],
        "misses": [out["references"] - (int(r["hits"]) if exact else round(r["hits"])) for r in rows],
        "references": [out["references"]] * len(rows),
    })
    frame.attrs.update(out)
    frame.attrs["fully_associative"] = sets is None
    return frame


def equivalent_machine(size_bytes: int, ways: int, line_bytes: int = 64) -> dict:
    """The one-level machine whose L1D counts what a curve counts: an LRU
    L1D of this geometry in which every reference (store hits too) updates
    recency, write-allocate, no TLB, identity translation, no lower levels;
    instruction fetches go to a separate L1I. Its L1D load and store misses
    equal ``misses`` of :func:`mrc` at this size (``sets = size / (ways *
    line_bytes)``; fully associative when that is 1)."""
    from . import reference

    machine = reference.equivalent_machine([(size_bytes, ways)], line_bytes)
    machine["l1d"]["store_hit_updates_replacement"] = True
    machine["l1i"] = {"size_bytes": 4096, "ways": 4, "line_bytes": line_bytes}
    return machine


def _size_label(size: float, _pos=None) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size:g} B"


def plot(curves: pd.DataFrame | dict[str, pd.DataFrame], path: str | Path | None = None, *, title: str | None = None):
    """Draw one or more curves (a DataFrame from :func:`mrc`, or a dict of
    label to DataFrame) as miss ratio against cache size (log scale); save
    to ``path`` (PNG, SVG, or anything matplotlib writes) if given. Returns
    the matplotlib Figure."""
    import matplotlib

    if path is not None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    if isinstance(curves, pd.DataFrame):
        curves = {_label(curves): curves}
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for label, frame in curves.items():
        ax.plot(frame["size_bytes"], frame["miss_ratio"], marker="o", markersize=3, label=label)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(_size_label))
    ax.set_xlabel("cache size")
    ax.set_ylabel("LRU miss ratio")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    if title:
        ax.set_title(title)
    fig.tight_layout()
    if path is not None:
        with staged(path) as temp:
            fig.savefig(temp, format=Path(path).suffix.lstrip(".") or None)
        plt.close(fig)
    return fig


def _label(frame: pd.DataFrame) -> str:
    a = frame.attrs
    what = "fully associative" if a.get("fully_associative", True) else f"{a.get('sets')} sets"
    if a.get("rate", 1.0) != 1.0:
        what += f", sampled at {a['rate']:g}"
    return what
