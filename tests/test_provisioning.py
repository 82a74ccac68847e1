"""Thin provisioning over time (seed 004, part B1; docs/cache-locking.md,
"Thin provisioning"): the equal split is each VM's plain LRU of its share
(libCacheSim's), the timing of hand-made streams worked out by hand, the
rules' moves add up, the MRC shares are the best split of a plain
brute-force search; and recording a real program's file I/O as a block
trace, against what the program did."""

from __future__ import annotations

import random
import sys

import pytest

from cachesched import ConfigError, hcache, iorecord, trace
from conftest import lru_misses

FILETIME = 128166372003061629  # an MSR timestamp: 100 ns ticks


def write_msr(path, requests):
    """``requests``: (time_us, write, offset, bytes)."""
    path.write_text("".join(f"{FILETIME + 10 * t},vm,0,{'Write' if w else 'Read'},{o},{n},0\n"
                            for t, w, o, n in requests))
    return path


def random_stream(seed, n, hot, cold):
    rng = random.Random(seed)
    out, t = [], 0
    for _ in range(n):
        t += rng.randrange(1, 400)
        block = rng.randrange(hot) if rng.random() < 0.7 else hot + rng.randrange(cold)
        out.append((t, rng.random() < 0.2, block * 4096, 4096 * rng.choice((1, 1, 2))))
    return out


def blocks_of(requests):
    return [b for _, _, o, n in sorted(requests, key=lambda r: r[0]) for b in range(o // 4096, (o + n - 1) // 4096 + 1)]


def test_the_equal_split_is_each_vms_lru_of_its_share(tmp_path):
    streams = [random_stream(s, 3000, hot, 400) for s, hot in ((1, 30), (2, 120), (3, 60))]
    paths = [write_msr(tmp_path / f"vm{i}.csv", s) for i, s in enumerate(streams)]
    run = hcache.provision(paths, cache_bytes=3 * 50 * 4096 + 4096, policy="static")
    assert run.lines == 151 and run.pool == 1
    for vm, s in zip(run.vms.itertuples(), streams):
        blocks = blocks_of(s)
        assert (vm.blocks, vm.requests) == (len(blocks), len(s))
        assert vm.misses == lru_misses(blocks, 50)
        assert vm.first_alloc == vm.final_alloc == 50


def test_given_shares_are_each_vms_lru_of_that_size(tmp_path):
    streams = [random_stream(s, 2000, 40, 200) for s in (4, 5)]
    paths = [write_msr(tmp_path / f"s{i}.csv", s) for i, s in enumerate(streams)]
    run = hcache.provision(paths, cache_bytes=100 * 4096, policy="static", shares=[70, 20])
    assert run.pool == 10 and run.vms.final_alloc.tolist() == [70, 20]
    for vm, s, share in zip(run.vms.itertuples(), streams, (70, 20)):
        assert vm.misses == lru_misses(blocks_of(s), share)


def test_a_vm_waits_for_its_previous_request(tmp_path):
    # Hits 10 us, misses 2 x 50 + 10 + 4000 + 2000 = 6110 us. Blocks 0 and
    # 1 miss (0 - 12,220 us); block 0 again arrives at 1,000 us, starts at
    # 12,220 and hits (ends 12,230); at 20,000 us block 2 misses (ends 26,110).
    path = write_msr(tmp_path / "a.csv", [(0, False, 0, 8192), (1000, False, 0, 4096), (20000, True, 8192, 4096)])
    vm = hcache.provision([path], policy="static").vms.iloc[0]
    assert (vm.hits, vm.misses) == (1, 3)
    assert vm.completion_s == pytest.approx(26_110e-6)
    assert vm.mean_response_ms == pytest.approx((12_220 + 11_230 + 6_110) / 3 / 1000)
    assert vm.p95_response_ms == pytest.approx(12.22)


def test_the_rules_move_blocks_and_keep_the_total(tmp_path):
    busy = [(i * 50, False, (i % 400) * 4096, 4096) for i in range(4000)]
    idle = [(i * 20000, False, (i % 3) * 4096, 4096) for i in range(40)]
    paths = [write_msr(tmp_path / "busy.csv", busy), write_msr(tmp_path / "idle.csv", idle)]
    run = hcache.provision(paths, cache_bytes=512 * 4096, interval="100ms", hit_us=0,
                           thresholds=[{"requests": 1, "misses": 1, "lines": 16},
                                       {"requests": 5, "misses": 5, "lines": 16}])
    s = run.series
    per_time = s.groupby("time_s").alloc.sum()
    assert (per_time <= 512).all()
    assert run.vms.final_alloc.sum() + run.pool == 512
    busy_vm, idle_vm = run.vms.iloc[0], run.vms.iloc[1]
    assert busy_vm.final_alloc > 256 > idle_vm.final_alloc
    # Every move is the threshold's quantum.
    assert (s.borrowed % 16 == 0).all() and (s.released % 16 == 0).all()
    # A dynamic run has fewer misses for the busy VM than the equal split.
    static = hcache.provision(paths, cache_bytes=512 * 4096, policy="static").vms.iloc[0]
    assert busy_vm.misses < static.misses


def test_measured_thresholds_are_the_equal_splits_medians(tmp_path):
    s = random_stream(5, 2000, 50, 300)
    path = write_msr(tmp_path / "a.csv", s)
    run = hcache.provision([path, path], cache_bytes=64 * 4096, interval="10ms")
    static = hcache.provision([path, path], cache_bytes=64 * 4096, interval="10ms", policy="static")
    busy = static.series[(static.series.vm == 0) & (static.series.requests > 0)]
    t = run.thresholds.iloc[0]
    assert t.requests == sorted(busy.requests)[len(busy) // 2]
    assert t.misses == sorted(busy.misses)[len(busy) // 2]
    assert t.lines == 2  # 1/16 of 32


def test_mrc_shares_are_the_best_split(tmp_path):
    # Two VMs; a brute force over every split in quanta of 8 blocks finds
    # the fewest total misses of plain LRUs: the MRC shares reach it.
    streams = [random_stream(7, 3000, 40, 100), random_stream(8, 3000, 90, 60)]
    paths = [write_msr(tmp_path / f"v{i}.csv", s) for i, s in enumerate(streams)]
    run = hcache.provision(paths, cache_bytes=128 * 4096, policy="mrc", mrc_quantum=8)
    blocks = [blocks_of(s) for s in streams]
    best = min(lru_misses(blocks[0], a) + lru_misses(blocks[1], 128 - a) for a in range(8, 121, 8))
    assert run.vms.misses.sum() == best
    assert run.vms.first_alloc.sum() == 128


@pytest.mark.parametrize("params, key", [
    ({"interval": "0s"}, "interval"),
    ({"interval": "soon"}, "interval"),
    ({"policy": "fair"}, "policy"),
    ({"hypervisor_bytes": 2 << 30}, "hypervisor_bytes"),
    ({"threshold_share": 0}, "threshold_share"),
    ({"thresholds": [{"requests": 1, "misses": 1, "lines": 1}] * 3}, "thresholds"),
    ({"mrc_sample": 0}, "mrc_sample"),
    ({"time_scale": 0}, "time_scale"),
    ({"cache_bytes": 4096}, "cache_bytes"),
    ({"shares": [10_000, 10_000]}, "shares: the shares sum to 20000 blocks, over the cache's 16384"),
    ({"shares": [10]}, "shares: give one share per VM"),
    ({"shares": [10, 10], "policy": "mrc"}, "shares: policy mrc chooses"),
])
def test_bad_params_name_their_key(tmp_path, params, key):
    path = write_msr(tmp_path / "a.csv", [(0, False, 0, 4096)])
    with pytest.raises(ConfigError, match=key):
        hcache.provision([path, path], **params)


WRITER = """
import os, sys
fd = os.open("data.bin", os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b"a" * 4096)
os.pwrite(fd, b"b" * 100, 8192)
os.lseek(fd, 0, os.SEEK_SET)
os.read(fd, 10)
os.read(fd, 20)
os.close(fd)
other = os.open("other.bin", os.O_WRONLY | os.O_CREAT, 0o644)
os.write(other, b"c" * 50)
os.close(other)
"""


def test_a_programs_file_io_becomes_its_block_requests(tmp_path):
    # The script lives outside the recorded directory: every request is the
    # script's own I/O on its two files, the first file's extent first.
    (tmp_path / "writer.py").write_text(WRITER)
    data = tmp_path / "data"
    data.mkdir()
    out = tmp_path / "io.csv"
    summary = iorecord.record([sys.executable, str(tmp_path / "writer.py")], out, cwd=data)
    df = trace.read_block(out, "msr")
    rows = list(zip(df.write, df.offset, df.bytes))
    e = iorecord.EXTENT
    assert rows == [(True, 0, 4096), (True, 8192, 100), (False, 0, 10), (False, 10, 20), (True, e, 50)]
    assert summary == {"requests": 5, "reads": 2, "writes": 3, "read_bytes": 30, "write_bytes": 4246, "files": 2,
                       "trace": str(out)}
    assert (df.time_ns.diff().dropna() >= 0).all()


def test_the_recorded_servers_are_block_traces(tmp_path):
    from cachesched.workloads import blockio

    for name in blockio.SERVERS:
        m = blockio.record(name, "tiny", out_dir=tmp_path)
        df = trace.read_block(m["trace"], "msr")
        assert len(df) == m["requests"] > 50
        assert df.bytes.sum() == m["read_bytes"] + m["write_bytes"]
    assert m["writes"] == 0  # the web reader only reads
