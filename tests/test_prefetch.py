"""Hardware prefetchers at the L2, end to end, against a reference written
here: a two-level LRU hierarchy of lists with a next-line prefetcher on the
L2, as docs/prefetchers.md describes it (trigger on an L2 demand miss,
fetch the next lines of the same 4 KiB page unless present, the fetched
lines placed most recently used)."""

from __future__ import annotations

import numpy as np
import pytest

import cachesched
from cachesched import reference, trace

L1, L2 = (2048, 2), (16384, 4)  # (bytes, ways): 16 and 64 sets of 64 B lines


class Level:
    def __init__(self, size: int, ways: int):
        self.sets = [[] for _ in range(size // (ways * 64))]
        self.ways = ways

    def lookup(self, line: int) -> bool:
        s = self.sets[line % len(self.sets)]
        if line in s:
            s.remove(line)
            s.insert(0, line)
            return True
        return False

    def insert(self, line: int) -> int | None:
        s = self.sets[line % len(self.sets)]
        s.insert(0, line)
        return s.pop() if len(s) > self.ways else None


def reference_counts(lines: list[int], degree: int) -> dict:
    l1, l2 = Level(*L1), Level(*L2)
    prefetched: set[int] = set()
    n = dict(l2_hits=0, l2_misses=0, issued=0, dropped=0, useful=0, unused=0)

    def fill_l2(line: int) -> None:
        victim = l2.insert(line)
        if victim in prefetched:
            prefetched.discard(victim)
            n["unused"] += 1

    for line in lines:
        if l1.lookup(line):
            continue
        if l2.lookup(line):
            n["l2_hits"] += 1
            if line in prefetched:
                prefetched.discard(line)
                n["useful"] += 1
        else:
            n["l2_misses"] += 1
            fill_l2(line)
            for d in range(1, degree + 1):
                nxt = line + d
                if nxt // 64 != line // 64:
                    break
                if nxt in l2.sets[nxt % len(l2.sets)]:
                    n["dropped"] += 1
                else:
                    n["issued"] += 1
                    fill_l2(nxt)
                    prefetched.add(nxt)
        l1.insert(line)
    return n


def simulate(path, prefetcher: dict | None) -> dict:
    machine = reference.equivalent_machine([L1, L2])
    machine["l2"]["prefetcher"] = prefetcher if prefetcher is not None else False
    return cachesched.simulate({"machine": machine, "workload": {"kind": "trace", "params": {"path": str(path)}}})


@pytest.mark.parametrize("degree", [1, 3])
@pytest.mark.parametrize("seed", [1, 2])
def test_next_line_matches_the_list_reference(tmp_path, seed, degree):
    # Short sequential runs from random starting lines over 2 MiB: both
    # useful and wasted prefetches, page ends, and proposals already present.
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, 32768, 3000)
    lengths = rng.integers(1, 12, 3000)
    lines = [int(s + i) for s, n in zip(starts, lengths) for i in range(n)]
    path = tmp_path / "runs.cst"
    trace.write(path, {"addr": np.array(lines, dtype=np.uint64) * 64, "kind": ["load"] * len(lines)})
    caches = simulate(path, {"kind": "next_line", "params": {"degree": degree}}).caches.set_index("level")
    want = reference_counts(lines, degree)
    l2 = caches.loc["l2"]
    assert (l2.load_hits, l2.load_misses) == (want["l2_hits"], want["l2_misses"])
    assert (l2.prefetch_misses, l2.prefetch_hits) == (want["issued"], want["dropped"])
    assert (l2.prefetch_useful, l2.prefetch_unused) == (want["useful"], want["unused"])
    assert want["useful"] > 0 and want["unused"] > 0 and want["dropped"] > 0


def test_prefetchers_cut_the_misses_of_the_patterns_they_know(tmp_path):
    stream = {"kind": "stream", "params": {"working_set_bytes": "4MiB", "stride_bytes": 64, "accesses": 60_000}}
    path = tmp_path / "stream.cst"
    trace.generate(stream, path, seed=3)
    base = simulate(path, None).caches.set_index("level").loc["l2"]
    for kind in ("next_line", "stream"):
        l2 = simulate(path, {"kind": kind}).caches.set_index("level").loc["l2"]
        assert l2.load_misses < base.load_misses * (0.55 if kind == "next_line" else 0.1), kind
        assert l2.prefetch_useful > 0.9 * l2.prefetch_misses, kind


def test_prefetcher_errors_name_the_key():
    machine = reference.equivalent_machine([L1, L2])
    machine["l2"]["prefetcher"] = {"kind": "stride", "params": {"entries": 100}}
    with pytest.raises(cachesched.ConfigError, match=r"machine\.l2\.prefetcher\.params\.entries"):
        cachesched.simulate({"machine": machine, "workload": {"kind": "stream", "params": {"accesses": 10}}})
    machine["l2"]["prefetcher"] = {"kind": "stream", "params": {"dgree": 2}}
    with pytest.raises(cachesched.ConfigError, match=r"machine\.l2\.prefetcher\.params"):
        cachesched.simulate({"machine": machine, "workload": {"kind": "stream", "params": {"accesses": 10}}})
