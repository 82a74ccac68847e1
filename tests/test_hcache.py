"""The hypervisor cache (seed 004, part B2; docs/cache-locking.md) against
a plainly written model of the same partition here: LRU sets over blocks,
locked lines from a brute-force miss table, a victim buffer, and the
probability policy as spec section 1.6 formalises it."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from cachesched import ConfigError, hcache, trace


class Model:
    """One partition, written the plain way: a list of (block, last use,
    locked) per set."""

    def __init__(self, sets, ways, victims=0, probability=None):
        self.sets, self.ways = sets, ways
        self.lines = [[] for _ in range(sets)]
        self.victims, self.capacity = [], victims
        self.prob = probability  # (warmup, window, bypass) or None
        self.seen, self.history, self.window = 0, Counter(), []
        self.clock = 0
        self.counts = Counter()
        self.pending = []

    def lock(self, candidates, most, preload=True):
        """Lock in place if present, else preload (at the start) or lock on arrival."""
        per_set, chosen = Counter(), []
        for b in candidates:
            if len(chosen) == most:
                break
            if per_set[b % self.sets] + 1 >= self.ways or b in chosen:
                continue
            per_set[b % self.sets] += 1
            chosen.append(b)
            present = [line for line in self.lines[b % self.sets] if line[0] == b]
            if present:
                present[0][2] = True
            elif preload:
                self.lines[b % self.sets].append([b, 0, True])
            else:
                self.pending.append(b)
        return chosen

    def victim(self, lines):
        if len(lines) < self.ways:
            return "free"
        unlocked = [line for line in lines if not line[2]]
        lru = min(unlocked, key=lambda line: line[1])
        if self.prob is None or self.seen <= self.prob[0]:
            return lru
        warmup = self.prob[0]
        current = Counter(self.window)
        eligible = [line for line in unlocked
                    if current[line[0]] / len(self.window) < self.history[line[0]] / warmup]
        if eligible:
            return min(eligible, key=lambda line: (current[line[0]] / len(self.window), line[1]))
        return None if self.prob[2] else lru

    def access(self, b):
        self.clock += 1
        self.counts["accesses"] += 1
        if self.prob:
            self.seen += 1
            if self.seen <= self.prob[0]:
                self.history[b] += 1
            else:
                self.window = (self.window + [b])[-self.prob[1]:]
        lines = self.lines[b % self.sets]
        for line in lines:
            if line[0] == b:
                line[1] = self.clock
                self.counts["hits"] += 1
                self.counts["locked_hits"] += line[2]
                return
        from_victims = b in self.victims
        if from_victims:
            self.victims.remove(b)
            self.counts["victim_hits"] += 1
        else:
            self.counts["misses"] += 1
        v = self.victim(lines)
        if v is None:
            if from_victims:
                self.victims.append(b)
            self.counts["bypasses"] += 1
            return
        if v != "free":
            lines.remove(v)
            self.counts["evictions"] += 1
            if self.capacity:
                self.victims = (self.victims + [v[0]])[-self.capacity:]
        lines.append([b, self.clock, b in self.pending])
        if b in self.pending:
            self.pending.remove(b)


def brute_miss_table(blocks, sets, ways, k):
    model, misses = Model(sets, ways), Counter()
    for b in blocks:
        before = model.counts["misses"]
        model.access(b)
        misses[b] += model.counts["misses"] - before
    return sorted(((b, n) for b, n in misses.items() if n), key=lambda r: (-r[1], r[0]))[:k]


def write(tmp_path, blocks, name="t.cst", line=64):
    path = tmp_path / name
    trace.write(path, {"addr": [b * line + 8 for b in blocks]})
    return path


def stream(seed, n=4000, hot=24, cold=300):
    """Blocks with a hot set and a long tail, as a program's loads."""
    rng = random.Random(seed)
    return [rng.randrange(hot) if rng.random() < 0.6 else rng.randrange(cold) for _ in range(n)]


KEYS = ("accesses", "hits", "locked_hits", "victim_hits", "misses", "bypasses", "evictions")


@pytest.mark.parametrize("seed, size, ways, lock, victims", [
    (1, 2048, 4, 0.0, 0), (2, 2048, 4, 0.05, 0), (3, 4096, 2, 0.3, 0), (4, 4096, 4, 0.15, 12),
    (5, 1024, 16, 0.25, 12), (6, 8192, 8, 0.1, 3),
])
def test_lru_locking_and_the_victim_buffer_count_what_the_plain_model_counts(tmp_path, seed, size, ways, lock, victims):
    blocks = stream(seed)
    sets = size // 64 // ways
    r = hcache.run([write(tmp_path, blocks)], size_bytes=size, ways=ways, lock_fraction=lock,
                   victim_buffer=victims).iloc[0]
    table = brute_miss_table(blocks, sets, ways, 20)
    assert [tuple(row) for row in r.miss_table] == table
    model = Model(sets, ways, victims)
    wanted = max(1, round(lock * sets * ways)) if lock > 0 else 0
    assert r.lock_wanted == wanted
    assert r.locked == model.lock([b for b, _ in table], wanted)
    for b in blocks:
        model.access(b)
    assert {k: int(r[k]) for k in KEYS} == {k: model.counts[k] for k in KEYS}
    assert r.miss_pct == pytest.approx(100 * model.counts["misses"] / len(blocks))


@pytest.mark.parametrize("preload", [True, False])
def test_an_online_table_locks_the_warm_ups_most_missed_blocks_from_then_on(tmp_path, preload):
    blocks = stream(21, n=5000)
    warmup, sets, ways = 750, 8, 4  # 15% of 5,000; 2 KiB of 4 ways
    r = hcache.run([write(tmp_path, blocks)], size_bytes=2048, ways=ways, lock_fraction=0.2, table="online",
                   online_warmup=0.15, victim_buffer=5, preload=preload).iloc[0]
    model, misses = Model(sets, ways, 5), Counter()
    for b in blocks[:warmup]:
        before = model.counts["misses"]
        model.access(b)
        misses[b] += model.counts["misses"] - before
    table = sorted(((b, n) for b, n in misses.items() if n), key=lambda row: (-row[1], row[0]))[:20]
    assert [tuple(row) for row in r.miss_table] == table
    # Online, nothing is preloaded: a block not in the partition locks when it next arrives.
    assert r.locked == model.lock([b for b, _ in table], round(0.2 * 32), preload=False)
    for b in blocks[warmup:]:
        model.access(b)
    assert {k: int(r[k]) for k in KEYS} == {k: model.counts[k] for k in KEYS}
    assert r.locked_hits > 0


@pytest.mark.parametrize("bypass", [False, True])
def test_probability_replacement_evicts_what_the_plain_model_evicts(tmp_path, bypass):
    # A hot set that changes half-way: the history says which blocks were
    # hot, the window which are now.
    rng = random.Random(9)
    blocks = [rng.randrange(40) for _ in range(1500)] + [rng.randrange(30, 90) for _ in range(1500)]
    warmup, window = 300, 200
    r = hcache.run([write(tmp_path, blocks)], size_bytes=1024, ways=4, victim_buffer=4,
                   replacement={"kind": "probability", "warmup": warmup / len(blocks), "window": window,
                                "fallback": "bypass" if bypass else "lru"}).iloc[0]
    model = Model(4, 4, 4, (warmup, window, bypass))
    for b in blocks:
        model.access(b)
    assert {k: int(r[k]) for k in KEYS} == {k: model.counts[k] for k in KEYS}
    assert (r.bypasses > 0) == bypass


def test_locked_lines_are_never_evicted_and_no_lock_is_plain_lru(tmp_path):
    blocks = stream(11)
    path = write(tmp_path, blocks)
    locked = hcache.run([path], size_bytes=2048, ways=4, lock_fraction=0.25).iloc[0]
    # Every access to a locked block after the preload hits.
    assert locked.locked_hits == sum(b in set(locked.locked) for b in blocks)
    plain = hcache.run([path], size_bytes=2048, ways=4).iloc[0]
    assert plain.locked == [] and plain.locked_hits == 0
    lru = Model(8, 4)
    for b in blocks:
        lru.access(b)
    assert plain.misses == lru.counts["misses"]


def test_the_io_time_is_the_misses_times_a_misss_cost_and_vms_run_apart(tmp_path):
    a, b = write(tmp_path, stream(1), "a.cst"), write(tmp_path, stream(2), "b.cst")
    r = hcache.run([a, b], io={"fc_us": 50, "controller_us": 10, "seek_us": 4000, "rotation_us": 2000,
                               "controller_hit": 0.5})
    assert list(r.vm) == [0, 1]
    # 2 x 50 + 10 + (1 - 0.5) x 6000 = 3,110 us a miss.
    assert r.io_seconds.tolist() == pytest.approx((r.misses * 3110e-6).tolist())
    alone = hcache.run([b]).iloc[0]
    assert alone.misses == r.misses[1], "each VM has its own partition"


def test_stores_are_left_out_unless_asked(tmp_path):
    path = tmp_path / "mixed.cst"
    trace.write(path, {"addr": [64 * i for i in range(10)], "kind": ["load", "store"] * 5})
    assert hcache.run([path]).accesses[0] == 5
    assert hcache.run([path], kinds=["load", "store"]).accesses[0] == 10


@pytest.mark.parametrize("lines", [8, 32, 64])
def test_a_fully_associative_lru_partition_misses_what_libcachesims_lru_misses(tmp_path, lines):
    import libcachesim

    blocks = stream(lines, n=6000, hot=lines * 2, cold=lines * 20)
    r = hcache.run([write(tmp_path, blocks)], size_bytes=lines * 64, ways=lines).iloc[0]
    lru = libcachesim.LRU(cache_size=lines)
    misses = 0
    for b in blocks:
        req = libcachesim.Request()
        req.obj_id, req.obj_size = b, 1
        misses += not lru.get(req)
    assert r.misses == misses and r.accesses == len(blocks)


MSR = """Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime
128166372003061629,web,0,Read,0,4096,1556
128166372003071629,web,0,Read,65536,128,900
128166372003081629,web,1,Read,0,64,100
128166372003091629,web,0,Write,0,4096,300
128166372003101629,web,0,Read,4032,128,700
"""


def test_a_block_trace_reads_as_the_blocks_its_requests_cover(tmp_path):
    path = tmp_path / "web.csv"
    path.write_text(MSR)
    df = trace.read_block(path, "msr")
    assert df.device.tolist() == ["web.0", "web.0", "web.1", "web.0", "web.0"]
    assert df.time_ns.tolist() == [0, 1_000_000, 2_000_000, 3_000_000, 4_000_000]
    assert df.response_ns.tolist()[:2] == [155_600, 90_000]
    # Reads only (the default kinds): 64 blocks of 64 B, then 2, then one
    # of the other disk, then 2 (4032-4159 straddles blocks 63 and 64).
    blocks = list(range(64)) + [1024, 1025] + [(1 << 48) | 0] + [63, 64]
    r = hcache.run([path], block_format="msr", size_bytes=2048, ways=4).iloc[0]
    model = Model(8, 4)
    for b in blocks:
        model.access(b)
    assert {k: int(r[k]) for k in KEYS} == {k: model.counts[k] for k in KEYS}
    writes = hcache.run([path], block_format="msr", kinds=["store"]).iloc[0]
    assert writes.accesses == 64


def test_a_malformed_block_trace_names_the_file_and_the_line(tmp_path):
    from cachesched import TraceError

    path = tmp_path / "bad.csv"
    path.write_text(MSR.replace("web,1,Read", "web,1,Trim"))
    with pytest.raises(TraceError, match=r"bad\.csv.*line 4.*unknown request type 'Trim'"):
        hcache.run([path], block_format="msr")
    with pytest.raises(ConfigError, match="format"):
        trace.read_block(path, "spc")
    far = tmp_path / "far.csv"
    far.write_text("128166372003061629,web,0,Read,18446744073709551615,2,1\n")
    with pytest.raises(ConfigError, match="beyond 2\\^48 blocks"):
        hcache.run([far], block_format="msr")


@pytest.mark.parametrize("params, key", [
    ({"lock_fraction": 1.0}, "lock_fraction"),
    ({"lock_fraction": -0.1}, "lock_fraction"),
    ({"miss_table": 0}, "miss_table"),
    ({"table": "offline"}, "table"),
    ({"online_warmup": 1.0}, "online_warmup"),
    ({"victim_buffer": -1}, "victim_buffer"),
    ({"ways": 0}, "ways"),
    ({"line_bytes": 48}, "line_bytes"),
    ({"size_bytes": 256, "ways": 8}, "size_bytes"),
    ({"size_bytes": 1024, "victim_buffer": 12, "carve_out": True, "ways": 8}, "size_bytes"),
    ({"replacement": {"kind": "mru"}}, "replacement.kind"),
    ({"kinds": ["modify"]}, "kinds"),
])
def test_bad_params_name_the_key(tmp_path, params, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        hcache.run([write(tmp_path, [1, 2, 3])], **params)
