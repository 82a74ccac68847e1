"""Trace tools: reuse distances in `trace info --scan`, `trace slice`, `trace cat`."""

from __future__ import annotations

import subprocess
import sys
from collections import OrderedDict

import numpy as np
import pytest

from cachesched import cli, trace
from conftest import mixed_accesses


def lru_hits(lines: list[int], capacity: int) -> int:
    """A fully associative LRU cache of `capacity` lines, simulated directly."""
    cache: OrderedDict[int, None] = OrderedDict()
    hits = 0
    for line in lines:
        if line in cache:
            hits += 1
            cache.move_to_end(line)
        else:
            cache[line] = None
            if len(cache) > capacity:
                cache.popitem(last=False)
    return hits


@pytest.fixture
def mixed_trace(tmp_path):
    cols = mixed_accesses(11, 20_000, (100, 3000, 5000))
    path = tmp_path / "mixed.cst"
    trace.write(path, cols)
    return path, cols["addr"], cols["kind"]


def test_lru_hit_ratios_from_reuse_distances_equal_an_lru_cache(mixed_trace):
    path, addr, kind = mixed_trace
    data_lines = [int(a) >> 6 for a, k in zip(addr, kind) if k != 2]
    scan = trace.scan(path)
    assert scan["reuse_cold"] == len(set(data_lines))
    assert scan["reuse_cold"] + sum(scan["reuse_buckets"]) == len(data_lines)
    for capacity in (64, 128, 1024, 4096, 8192):
        want = lru_hits(data_lines, capacity) / len(data_lines)
        assert trace.lru_hit_ratio(scan, capacity * 64) == pytest.approx(want, abs=1e-12), capacity
    with pytest.raises(ValueError, match="cache_bytes"):
        trace.lru_hit_ratio(scan, 3000)


def test_info_prints_the_reuse_summary(mixed_trace, capsys):
    path, _, _ = mixed_trace
    assert cli.main(["trace", "info", str(path), "--scan"]) == 0
    out = capsys.readouterr().out
    assert "reuse         median distance" in out and "32 KiB" in out


def test_slice_keeps_exactly_the_range(mixed_trace, tmp_path):
    path, addr, _ = mixed_trace
    out = tmp_path / "part.cst"
    assert cli.main(["trace", "slice", str(path), "-o", str(out), "--skip", "12345", "--limit", "777"]) == 0
    part, whole = trace.read(out), trace.read(path)
    assert len(part) == 777
    for column in trace.COLUMNS:
        assert np.array_equal(part[column].to_numpy(), whole[column].to_numpy()[12345:12345 + 777]), column
    trace.slice(path, out, skip=19_990)
    assert np.array_equal(trace.read(out).addr.to_numpy(), addr[19_990:])


def test_cat_prints_each_access_once_in_order(mixed_trace, capsys):
    path, addr, kind = mixed_trace
    # Chunks of the reader are 65536: cross none here, but start past the first block.
    assert cli.main(["trace", "cat", str(path), "--skip", "19000", "--limit", "50"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert len(rows) == 50
    for i, row in enumerate(rows):
        index, name, address, size, pc, instrs = row.split()
        assert int(index) == 19000 + i
        assert int(address, 16) == addr[19000 + i] and name == trace.KIND_NAMES[kind[19000 + i]]


def test_cat_reads_across_chunks(mixed_trace):
    path, addr, _ = mixed_trace
    chunks = list(trace.iter_chunks(path, skip=100, chunk=4096))
    assert [len(c) for c in chunks][:4] == [4096] * 4
    assert np.array_equal(np.concatenate([c.addr.to_numpy() for c in chunks]), addr[100:])


def test_output_into_a_closed_pipe_ends_quietly(mixed_trace):
    # `cachesched trace cat x.cst | head -1`: no traceback, success.
    path, _, _ = mixed_trace
    proc = subprocess.run(f"{sys.executable} -m cachesched.cli trace cat {path} | head -1", shell=True,
                          capture_output=True, text=True, check=True)
    assert proc.stdout.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
