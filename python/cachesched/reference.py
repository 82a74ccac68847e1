"""Running the same trace through pycachesim, the independent reference.

pycachesim (an optional dependency: ``pip install pycachesim``) is used by
the tests to check our hit and miss counts and by ``cachesched bench`` to
compare speed. Its semantics match ours under the configuration that
:func:`equivalent_machine` returns (see docs/validation.md).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

LEVEL_NAMES = ("l1d", "l2", "llc")


def loadstore_runs(accesses: pd.DataFrame) -> list[tuple[list[int], list[int]]]:
    """The accesses as pycachesim's batched ``loadstore`` argument: a list of
    (loads, stores) pairs that replays them in order (a pair's loads run
    before its stores, so a new pair starts at every load after a store)."""
    kinds = accesses["kind"].to_numpy()
    if (kinds == 2).any():
        raise ValueError("pycachesim has no instruction fetches")
    n = len(kinds)
    if n == 0:
        return []
    stores = kinds == 1
    starts = np.concatenate(([0], np.flatnonzero(~stores[1:] & stores[:-1]) + 1))
    ends = np.append(starts[1:], n)
    # Where each pair's stores begin: its first store, or its end if none.
    next_store = np.minimum.accumulate(np.where(stores, np.arange(n), n)[::-1])[::-1]
    splits = np.minimum(next_store[starts], ends)
    addrs = accesses["addr"].to_numpy().tolist()
    return [(addrs[a:m], addrs[m:b]) for a, m, b in zip(starts.tolist(), splits.tolist(), ends.tolist())]


def equivalent_machine(geometry: list[tuple[int, int]], line_bytes: int = 64) -> dict:
    """A ``machine`` table whose semantics are pycachesim's for the given
    (size in bytes, ways) per level, top down (1 to 3 levels)."""
    machine: dict = {"preset": "standard", "tlb": False, "memory": {"frame_allocation": "identity"}}
    for i, name in enumerate(LEVEL_NAMES):
        if i < len(geometry):
            size, ways = geometry[i]
            machine[name] = {"size_bytes": size, "ways": ways, "line_bytes": line_bytes}
        else:
            machine[name] = False
    machine["l1d"]["store_hit_updates_replacement"] = False
    return machine


def hierarchy(geometry: list[tuple[int, int]], line_bytes: int = 64):
    """A pycachesim ``CacheSimulator`` for (size in bytes, ways) per level,
    top down: LRU, write-back; write-allocate at L1 only, so that lower
    levels allocate written-back lines without fetching them."""
    import cachesim

    mem = cachesim.MainMemory()
    below = None
    levels = []
    for i in reversed(range(len(geometry))):
        size, ways = geometry[i]
        links = {"store_to": below, "load_from": below} if below is not None else {}
        cache = cachesim.Cache(f"L{i + 1}", size // (ways * line_bytes), ways, line_bytes, "LRU",
                               write_back=True, write_allocate=(i == 0), **links)
        if below is None:
            mem.load_to(cache)
            mem.store_from(cache)
        levels.insert(0, cache)
        below = cache
    return cachesim.CacheSimulator(levels[0], mem), levels


def counts(levels) -> dict[str, dict[str, int]]:
    """pycachesim's counters per level, in our names: ``hits`` and ``misses``
    of the requests it counts (see :func:`our_counts`), ``stores_in``
    (written-back lines arriving from above; None at L1) and ``dirty_out``
    (dirty lines evicted)."""
    return {
        LEVEL_NAMES[i]: {
            "hits": c.HIT_count,
            "misses": c.MISS_count,
            "stores_in": c.STORE_count if i > 0 else None,
            "dirty_out": c.EVICT_count,
        }
        for i, c in enumerate(levels)
    }


def our_counts(results, levels: int) -> dict[str, dict[str, int]]:
    """The same counters from our :class:`~cachesched.Results`.

    pycachesim counts a hit only when a line is loaded: at L1 a store hit is
    neither a hit nor a miss there; below L1 every demand request (our loads,
    and stores' reads for ownership) arrives as a load.
    """
    caches = results.caches.set_index("level")
    out = {}
    for i, name in enumerate(LEVEL_NAMES[:levels]):
        c = caches.loc[name]
        store_hits = c.store_hits if i > 0 else 0
        out[name] = {
            "hits": int(c.load_hits + store_hits + c.ifetch_hits),
            "misses": int(c.load_misses + c.store_misses + c.ifetch_misses),
            "stores_in": int(c.writeback_hits + c.writeback_misses) if i > 0 else None,
            "dirty_out": int(c.dirty_evictions),
        }
    return out


# --- cachegrind ----------------------------------------------------------

# cachegrind's events, as its output file names them.
CACHEGRIND_EVENTS = ("Ir", "I1mr", "ILmr", "Dr", "D1mr", "DLmr", "Dw", "D1mw", "DLmw")


def cachegrind_machine(i1: tuple[int, int] = (32 << 10, 8), d1: tuple[int, int] = (32 << 10, 8),
                       ll: tuple[int, int] = (8 << 20, 16), line_bytes: int = 64) -> dict:
    """A ``machine`` table simulating what ``valgrind --tool=cachegrind`` does
    with ``--I1``, ``--D1`` and ``--LL`` of these (size in bytes, ways): an
    L1I and an L1D, LRU and write-allocate, over one unified last level that
    sees their misses; no TLB and no translation (cachegrind indexes by
    virtual address). See docs/validation.md for what still differs."""
    def level(size_ways: tuple[int, int]) -> dict:
        size, ways = size_ways
        return {"size_bytes": size, "ways": ways, "line_bytes": line_bytes, "replacement": {"kind": "lru"},
                "write_policy": "write-back", "write_allocate": True}

    return {"preset": "standard", "sockets": 1, "cores_per_socket": 1, "tlb": False,
            "memory": {"frame_allocation": "identity"}, "l1i": level(i1), "l1d": level(d1), "l2": False,
            "llc": {**level(ll), "inclusion": "non-inclusive"}}


def cachegrind(argv: list[str], *, cwd=None, i1: tuple[int, int] = (32 << 10, 8),
               d1: tuple[int, int] = (32 << 10, 8), ll: tuple[int, int] = (8 << 20, 16),
               line_bytes: int = 64) -> dict[str, int]:
    """Run a program under cachegrind with these caches; returns its totals
    by event name (:data:`CACHEGRIND_EVENTS`)."""
    import subprocess
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cachegrind.out"
        geometry = [f"--{name}={size},{ways},{line_bytes}" for name, (size, ways) in (("I1", i1), ("D1", d1),
                                                                                          ("LL", ll))]
        done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--cachegrind-out-file={out}",
                               *geometry, *argv], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
        if done.returncode != 0:
            raise RuntimeError(f"cachegrind failed ({done.returncode}): {done.stderr[-2000:]}")
        fields: dict[str, list[str]] = {}
        for line in out.read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("events", "summary"):
                fields[key] = value.split()
    return {event: int(n) for event, n in zip(fields["events"], fields["summary"])}
