"""Level-1 locking in a multicore (seed 004, part A; docs/cache-locking.md,
"Level-1 locking"): the 4-core model without locking against a plainly
written one (LRU lists per set, the cores' references merged in time
order), the mean delay per task as spec 2.4 defines it, locked ways that
keep their blocks, and bad params named."""

from __future__ import annotations

import random

import pytest

from cachesched import ConfigError, cl1lock, trace

LINE = 128


def job(path, seed, n, code, data):
    rng = random.Random(seed)
    kinds, addrs = [], []
    for _ in range(n):
        if rng.random() < 0.6:
            kinds.append("ifetch")
            addrs.append(0x400000 + LINE * int(rng.triangular(0, code, 0)))
        else:
            kinds.append("load")
            addrs.append(0x10000000 + LINE * rng.randrange(data))
    trace.write(path, {"addr": addrs, "kind": kinds})
    return path, [(k, a // LINE) for k, a in zip(kinds, addrs)]


class Lru:
    def __init__(self, sets, ways):
        self.sets, self.ways, self.lines = sets, ways, [[] for _ in range(sets)]

    def access(self, line):
        s = self.lines[line % self.sets]
        hit = line in s
        if hit:
            s.remove(line)
        elif len(s) == self.ways:
            s.pop(0)
        s.append(line)
        return hit


def plain(jobs, cores, l1, l2, ways=8, l2_ways=8):
    """Delays of each job, batches of ``cores``, caches kept across batches."""
    i1 = [Lru(l1 // LINE // ways, ways) for _ in range(cores)]
    d1 = [Lru(l1 // LINE // ways, ways) for _ in range(cores)]
    shared = Lru(l2 // LINE // l2_ways, l2_ways)
    delays, batches = [], []
    for b in range(0, len(jobs), cores):
        batch = jobs[b:b + cores]
        at, clock = [0] * len(batch), [0] * len(batch)
        while True:
            live = [c for c in range(len(batch)) if at[c] < len(batch[c])]
            if not live:
                break
            c = min(live, key=lambda c: (clock[c], c))
            kind, line = batch[c][at[c]]
            at[c] += 1
            if kind == "ifetch":
                clock[c] += 1
            if (i1 if kind == "ifetch" else d1)[c].access(line):
                continue
            clock[c] += 1 if shared.access(line) else 16
        delays += clock
        batches.append(max(clock))
    return delays, sum(batches) / len(jobs)


def test_without_locking_it_is_the_plain_model(tmp_path):
    made = [job(tmp_path / f"j{i}.cst", i, 4000, code, data)
            for i, (code, data) in enumerate([(60, 100), (20, 400), (90, 30), (40, 200), (70, 70)])]
    paths, refs = [p for p, _ in made], [r for _, r in made]
    r = cl1lock.run(paths, strategy="none", l1_bytes=2048, l2_bytes=16384)
    delays, mean = plain(refs, 4, 2048, 16384)
    assert r.tasks.delay.tolist() == delays
    assert r.mean_delay == pytest.approx(mean)
    assert r.tasks.batch.tolist() == [0, 0, 0, 0, 1] and r.tasks.core.tolist() == [0, 1, 2, 3, 0]
    assert (r.tasks.instructions == [sum(k == "ifetch" for k, _ in j) for j in refs]).all()


def test_locked_ways_keep_the_most_missed_blocks(tmp_path):
    # Nine blocks of one set of an 8-way I1 (4 sets of 128 B lines) fetched
    # round after round: plain LRU misses every fetch. Dynamic locking of 2
    # ways preloads the blocks in BAMI order (all tie at 100 misses, so by
    # block) until the set is full and locks ways 0 and 1, blocks 0 and 4:
    # they hit always. In the first round 8-28 hit where they were
    # preloaded and 32 misses; from then on the other seven cycle through
    # six LRU ways and miss every time.
    blocks = [4 * i for i in range(9)]
    path = tmp_path / "loop.cst"
    trace.write(path, {"addr": [LINE * b for b in blocks] * 100, "kind": ["ifetch"] * 900})
    free = cl1lock.run([path], cores=1, strategy="none", l1_bytes=4096)
    locked = cl1lock.run([path], cores=1, strategy="dynamic", lock_ways=2, l1_bytes=4096)
    assert free.tasks.i1_misses.iloc[0] == 900
    assert locked.tasks.i1_misses.iloc[0] == 1 + 99 * 7
    assert locked.tasks.locked_ways.iloc[0] == 2
    # Left to decide, a core whose job's code (9 blocks) fits its I1 locks nothing.
    chosen = cl1lock.run([path], cores=1, strategy="dynamic", l1_bytes=4096)
    assert chosen.tasks.locked_ways.iloc[0] == 0


@pytest.mark.parametrize("params, key", [
    ({"lock_ways": 8}, "lock_ways"),
    ({"l1_bytes": 3000}, "l1_bytes"),
    ({"strategy": "greedy"}, "strategy"),
    ({"line_bytes": 100}, "line_bytes"),
])
def test_bad_params_name_their_key(tmp_path, params, key):
    path, _ = job(tmp_path / "j.cst", 1, 10, 4, 4)
    with pytest.raises(ConfigError, match=key):
        cl1lock.run([path], **params)
