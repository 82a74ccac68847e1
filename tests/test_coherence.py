"""Coherence (MESI between the cores' caches) against a plainly written
model of the protocol: random multi-core reference sequences replayed on
the machine and on the model must leave every cache with the same lines and
dirty bits, and count the same interconnect transactions and memory reads
and writes. The rules are those of docs/numa.md ("Coherence")."""

from __future__ import annotations

import random
from collections import Counter, OrderedDict

import pytest

import cachesched

LINE, PAGE = 64, 4096


class Model:
    """Private LRU write-back L1s, one per core, kept coherent by MESI with
    states read off where copies are (dirty: M; clean elsewhere too: S;
    else E), and first-touch pages handed out in order on each node."""

    def __init__(self, sockets: int, per_socket: int, nodes: int, node_bytes: int, size: int, ways: int):
        self.cores = sockets * per_socket
        self.node_of_core = [(c // per_socket) * nodes // sockets for c in range(self.cores)]
        self.nodes, self.per_node = nodes, node_bytes // PAGE
        self.sets, self.ways = size // (LINE * ways), ways
        # Per core, per set: line -> dirty, least recently used first.
        self.caches = [[OrderedDict() for _ in range(self.sets)] for _ in range(self.cores)]
        self.frames: dict[int, int] = {}
        self.used = [0] * nodes
        self.traffic = {(c, n): dict(read_shared=0, read_own=0, upgrade=0, writeback=0, cache_to_cache=0)
                        for c in range(self.cores) for n in range(nodes)}
        # Every transaction (requesting core, home node), in order.
        self.log: list[tuple[int, int]] = []
        self.reads = [0] * nodes
        self.writes = [0] * nodes
        self.remote_writes = [0] * nodes

    def line_of(self, core: int, addr: int) -> int:
        page = addr // PAGE
        if page not in self.frames:
            node = self.node_of_core[core]
            self.frames[page] = node * self.per_node + self.used[node]
            self.used[node] += 1
        return self.frames[page] * (PAGE // LINE) + addr % PAGE // LINE

    def home(self, line: int) -> int:
        return min(line // (PAGE // LINE) // self.per_node, self.nodes - 1)

    def set_of(self, core: int, line: int) -> OrderedDict:
        return self.caches[core][line % self.sets]

    def write_back(self, requester: int, line: int, from_node: int) -> None:
        home = self.home(line)
        self.writes[home] += 1
        self.remote_writes[home] += home != from_node
        self.traffic[requester, home]["writeback"] += 1
        self.log.append((requester, home))

    def fill(self, core: int, line: int, dirty: bool) -> None:
        s = self.set_of(core, line)
        if len(s) == self.ways:
            victim, victim_dirty = s.popitem(last=False)
            if victim_dirty:
                self.write_back(core, victim, self.node_of_core[core])
        s[line] = dirty

    def access(self, core: int, kind: str, addr: int) -> None:
        line = self.line_of(core, addr)
        home = self.home(line)
        s = self.set_of(core, line)
        others = [o for o in range(self.cores) if o != core and line in self.set_of(o, line)]
        row = self.traffic[core, home]
        if kind == "store":
            if s.get(line):  # Modified: silent.
                s.move_to_end(line)
                return
            dirty = any(self.set_of(o, line)[line] for o in others)
            for o in others:
                del self.set_of(o, line)[line]
            if line in s:
                s.move_to_end(line)
                s[line] = True
                row["upgrade"] += bool(others)
                if others:
                    self.log.append((core, home))
                return
            row["read_own"] += 1
            self.log.append((core, home))
            row["cache_to_cache"] += dirty
            self.reads[home] += not dirty
            self.fill(core, line, True)
            return
        if line in s:
            s.move_to_end(line)
            return
        owners = [o for o in others if self.set_of(o, line)[line]]
        for o in owners:
            self.set_of(o, line)[line] = False
            self.write_back(core, line, self.node_of_core[o])
        row["read_shared"] += 1
        self.log.append((core, home))
        row["cache_to_cache"] += bool(owners)
        self.reads[home] += not owners
        self.fill(core, line, False)

    def check_invariants(self) -> None:
        """One writer or many readers: a dirty line is in no other cache."""
        for c in range(self.cores):
            for s in self.caches[c]:
                for line, dirty in s.items():
                    if dirty:
                        assert all(line not in self.set_of(o, line) for o in range(self.cores) if o != c)


def machine(sockets: int, per_socket: int, nodes: int, size: int, ways: int) -> dict:
    return {
        "sockets": sockets, "cores_per_socket": per_socket,
        "l1d": {"size_bytes": size, "ways": ways, "line_bytes": LINE, "latency_cycles": 1},
        "l1i": False, "l2": False, "llc": False, "tlb": False,
        "memory": {"nodes": nodes, "node_bytes": "64KiB", "page_bytes": PAGE, "frame_allocation": "sequential",
                   "placement": "first-touch", "latency_cycles": 100,
                   **({"remote_latency_cycles": 150} if nodes > 1 else {})},
    }


def sequence(rng: random.Random, cores: int, n: int, lines: int) -> list[tuple[int, str, int]]:
    # Mostly a few hot lines (sharing, ping-pong), the rest over `lines`
    # lines (evictions).
    def line() -> int:
        return rng.randrange(6) * 17 % lines if rng.random() < 0.6 else rng.randrange(lines)
    return [(rng.randrange(cores), "store" if rng.random() < 0.4 else "load", line() * LINE + rng.randrange(8) * 8)
            for _ in range(n)]


@pytest.mark.parametrize("sockets,per_socket,nodes,size,ways", [
    (2, 1, 2, 512, 2),     # two nodes, tiny caches: many evictions
    (4, 1, 4, 1024, 4),
    (2, 2, 2, 2048, 2),    # two cores per socket
    (3, 1, 1, 512, 1),     # direct-mapped, one node
])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_mesi_matches_a_plain_model(sockets, per_socket, nodes, size, ways, seed):
    rng = random.Random(seed * 100 + sockets * 10 + ways)
    cores = sockets * per_socket
    accesses = sequence(rng, cores, 3000, lines=3 * PAGE // LINE)
    model = Model(sockets, per_socket, nodes, 64 * 1024, size, ways)
    for i, a in enumerate(accesses):
        model.access(*a)
        if i % 97 == 0:
            model.check_invariants()
    got = cachesched.replay(machine(sockets, per_socket, nodes, size, ways), accesses)
    for c, cache in enumerate(got["caches"]):
        want = sorted((line, dirty) for s in model.caches[c] for line, dirty in s.items())
        assert sorted(map(tuple, cache["lines"])) == want, cache["path"]
    traffic = {(t["core"], t["node"]): {k: t[k] for k in model.traffic[0, 0]} for t in got["traffic"]}
    assert all(t["sampled"] == 0 for t in got["traffic"])  # no sampler
    assert traffic == model.traffic
    assert [n["reads"] for n in got["memory"]] == model.reads
    assert [n["writes"] for n in got["memory"]] == model.writes
    assert [n["remote_writes"] for n in got["memory"]] == model.remote_writes
    # The sequences do exercise every transaction type.
    totals = {k: sum(row[k] for row in model.traffic.values()) for k in model.traffic[0, 0]}
    assert all(v > 0 for k, v in totals.items() if not (k == "upgrade" and cores == 1)), totals


def interval_samples(log: list[tuple[int, int]], period: int, depth: int) -> Counter:
    """The interval sampler with a reader that is never busy: every
    ``period``-th transaction starts a capture of it and the next
    ``depth - 1`` (a trigger during a capture is dropped)."""
    sampled: Counter = Counter()
    seen = capture = 0
    for key in log:
        seen += 1
        if seen == period:
            seen = 0
            capture = capture or depth
        if capture:
            capture -= 1
            sampled[key] += 1
    return sampled


@pytest.mark.parametrize("period,depth", [(7, 3), (64, 8), (5, 8)])
def test_the_interval_sampler_records_every_nth_transaction_and_the_next(period, depth):
    rng = random.Random(period)
    accesses = sequence(rng, 4, 4000, lines=3 * PAGE // LINE)
    model = Model(4, 1, 2, 64 * 1024, 1024, 2)
    for a in accesses:
        model.access(*a)
    m = {**machine(4, 1, 2, 1024, 2), "sampler": {"mode": "interval", "period": period, "depth": depth}}
    got = cachesched.replay(m, accesses)
    want = interval_samples(model.log, period, depth)
    assert {(t["core"], t["node"]): t["sampled"] for t in got["traffic"]} == {k: want[k] for k in model.traffic}
    assert sum(want.values()) > 0


def test_exhaustive_sampling_records_every_transaction():
    rng = random.Random(11)
    m = {**machine(2, 2, 2, 1024, 2), "sampler": {"mode": "exhaustive"}}
    got = cachesched.replay(m, sequence(rng, 4, 3000, lines=3 * PAGE // LINE))
    for t in got["traffic"]:
        assert t["sampled"] == t["read_shared"] + t["read_own"] + t["upgrade"] + t["writeback"]


def test_a_single_core_has_no_cache_to_cache_transfers():
    rng = random.Random(7)
    accesses = [(0, k, a) for _, k, a in sequence(rng, 1, 2000, lines=200)]
    got = cachesched.replay(machine(2, 1, 2, 512, 2), accesses)
    rows = [t for t in got["traffic"] if t["core"] == 0]
    assert sum(t["cache_to_cache"] for t in rows) == 0
    assert sum(t["upgrade"] for t in rows) == 0
    assert sum(t["read_shared"] + t["read_own"] for t in rows) > 0


def test_without_coherence_a_store_leaves_stale_copies():
    m = machine(2, 1, 2, 512, 2)
    accesses = [(0, "load", 0), (1, "load", 0), (1, "store", 0)]
    coherent = cachesched.replay(m, accesses)
    assert [c["lines"] for c in coherent["caches"]] == [[], [[0, True]]]
    stale = cachesched.replay({**m, "coherence": "none"}, accesses)
    assert [c["lines"] for c in stale["caches"]] == [[[0, False]], [[0, True]]]
    assert stale["traffic"] == []


def test_replay_names_a_core_that_does_not_exist():
    with pytest.raises(cachesched.ConfigError, match=r"accesses\[1\]\.core"):
        cachesched.replay(machine(2, 1, 2, 512, 2), [(0, "load", 0), (5, "load", 0)])


def kernel_run(sampler: dict, threads: int = 12) -> cachesched.Results:
    return cachesched.simulate({
        "machine": {"preset": "numa-sunfire6800", "sampler": sampler},
        "tasks": [{"workload": {"kind": "cg", "params": {"threads": threads, "rows": 3000}}, "count": threads,
                   "asid": 1, "bind": "spread"}],
    })


def distance(traffic):
    """The source's D per core: |S_N/S_A - C_N/C_A| / (C_N/C_A)."""
    kinds = ["read_shared", "read_own", "upgrade", "writeback"]
    per_core = traffic.assign(all=traffic[kinds].sum(axis=1)).groupby("core")[["all", "sampled"]].sum()
    per_core = per_core[per_core["all"] > 0]  # cores that ran a thread
    p_all = per_core["all"] / per_core["all"].sum()
    p_sample = per_core["sampled"] / per_core["sampled"].sum()
    return (p_sample - p_all).abs() / p_all


def test_sampling_a_threaded_kernel_exhaustively_has_distance_zero():
    r = kernel_run({"mode": "exhaustive"})
    assert len(r.traffic) == 24 * 6  # every core and node, 12 of the cores busy
    d = distance(r.traffic)
    assert len(d) == 12 and (d == 0).all()


def test_interval_sampling_takes_depth_over_period_of_the_transactions():
    r = kernel_run({"mode": "interval", "period": 256, "depth": 8})
    t = r.traffic
    total = t[["read_shared", "read_own", "upgrade", "writeback"]].to_numpy().sum()
    # A reader that takes no time keeps up: exactly 8 of every 256, give or take the last capture.
    assert abs(t.sampled.sum() - total * 8 / 256) <= 8
    assert distance(t).mean() < 0.1


@pytest.mark.parametrize("sampler,loc", [
    ({"period": 0}, "machine.sampler.period"),
    ({"depth": 0}, "machine.sampler.depth"),
    ({"read_time": "1M instr"}, "machine.sampler.read_time"),
    ({"mode": "sometimes"}, "machine.sampler.mode"),
])
def test_a_bad_sampler_is_named(sampler, loc):
    with pytest.raises(cachesched.ConfigError) as e:
        cachesched.replay({**machine(2, 1, 2, 512, 2), "sampler": sampler}, [])
    assert loc in [err["loc"] for err in e.value.errors()]


def test_a_sampler_needs_coherence():
    with pytest.raises(cachesched.ConfigError, match="machine.sampler"):
        cachesched.replay({**machine(2, 1, 2, 512, 2), "sampler": {}, "coherence": "none"}, [])
