"""Miss-ratio curves in one pass (`cachesched.mrc`, `cachesched mrc`).

The independent reference is the simulator itself, run once per size on a
one-level LRU machine (`missratio.equivalent_machine`): at every size the
curve's misses must equal the simulated L1D's, exactly, fully associative
and set-associative. The stack-distance code shares nothing with the cache
model. (The Rust proptests check the same against a brute-force LRU list.)
"""

from __future__ import annotations

import pytest

import cachesched
from cachesched import ConfigError, cli, missratio, trace
from conftest import mixed_accesses


@pytest.fixture(scope="module")
def mixed_trace(tmp_path_factory):
    """Loads, stores and ifetches over a hot set, a warm set and a sweep,
    with accesses of 1 to 16 bytes at any offset (some span two lines)."""
    cols = mixed_accesses(5, 30_000, (64, 1500, 700), sizes=(1, 4, 8, 16), max_offset=64)
    addr, kind, size = cols["addr"], cols["kind"], cols["size"]
    path = tmp_path_factory.mktemp("mrc") / "mixed.cst"
    trace.write(path, cols)
    spanning = int(((addr % 64 + size > 64) & (kind != 2)).sum())
    assert spanning > 500, "the trace must exercise accesses spanning two lines"
    return path


def simulated(path, size_bytes: int, ways: int) -> tuple[int, int]:
    """(references, misses) of the L1D of a one-level LRU machine."""
    r = cachesched.simulate({"machine": missratio.equivalent_machine(size_bytes, ways),
                             "workload": {"kind": "trace", "params": {"path": str(path)}}})
    c = r.caches.set_index("level").loc["l1d"]
    misses = int(c.load_misses + c.store_misses)
    return int(c.load_hits + c.store_hits) + misses, misses


def test_fully_associative_curve_equals_separate_simulations(mixed_trace):
    sizes = [1024, 4096, 16 << 10, 40 << 10, 128 << 10]
    curve = cachesched.mrc(mixed_trace, sizes=sizes)
    assert list(curve.size_bytes) == sizes and curve.ways.isna().all()
    assert curve.attrs["rate"] == 1.0
    for row in curve.itertuples():
        references, misses = simulated(mixed_trace, row.size_bytes, row.size_bytes // 64)
        assert (row.references, row.misses) == (references, misses), row.size_bytes
        assert row.miss_ratio == pytest.approx(misses / references, abs=1e-12)
    # The curve must span capacity misses and cold misses only, or it proves little.
    assert curve.misses.iloc[0] > 3 * curve.misses.iloc[-1] > 0


@pytest.mark.parametrize("sets", [16, 64])
def test_set_associative_curve_equals_separate_simulations(mixed_trace, sets):
    ways = [1, 2, 3, 4, 8, 16]
    curve = cachesched.mrc(mixed_trace, sets=sets, sizes=[sets * w * 64 for w in ways])
    assert list(curve.ways) == ways
    for row in curve.itertuples():
        assert simulated(mixed_trace, row.size_bytes, row.ways) == (row.references, row.misses), row.ways
    assert curve.misses.is_monotonic_decreasing and curve.misses.iloc[0] > curve.misses.iloc[-1]


def test_default_sizes_run_until_only_first_references_miss(mixed_trace):
    curve = cachesched.mrc(mixed_trace, sets=16)
    assert list(curve.ways[:6]) == [1, 2, 3, 4, 6, 8]
    assert curve.misses.iloc[-1] == curve.attrs["cold"] and curve.misses.iloc[-2] > curve.attrs["cold"]


def test_ifetches_count_only_when_asked(mixed_trace):
    data = cachesched.mrc(mixed_trace, sizes=[4096])
    unified = cachesched.mrc(mixed_trace, sizes=[4096], ifetch=True)
    kinds = trace.read(mixed_trace).kind.to_numpy()
    assert unified.references[0] > data.references[0] >= (kinds != 2).sum()


@pytest.mark.parametrize("name, bound", [("zipf", 0.08), ("loop", 0.02)])
def test_sampling_stays_within_the_documented_bound(tmp_path, name, bound):
    """docs/mrc.md: at a rate of 0.1, over 16 KiB to 32 MiB, the sampled
    curve of a 2M-access trace is within 0.08 (Zipf) and 0.02 (the
    benchmark's loop) of the exact one, in absolute miss ratio."""
    from cachesched import bench

    workloads = {"zipf": {"kind": "zipf", "params": {"working_set_bytes": "8MiB", "exponent": 0.8,
                                                     "accesses": 2_000_000}},
                 "loop": bench.workload(2_000_000)}
    path = tmp_path / f"{name}.cst"
    trace.generate(workloads[name], path, seed=3)
    sizes = [(16 << 10) << i for i in range(12)]
    exact = cachesched.mrc(path, sizes=sizes)
    sampled = cachesched.mrc(path, sizes=sizes, sample=0.1)
    # Hot lines make the sampled share of references vary around the rate.
    assert 0.05 < sampled.attrs["sampled"] / sampled.attrs["references"] < 0.5
    assert sampled.attrs["lines"] < 0.15 * exact.attrs["lines"]
    error = (sampled.miss_ratio - exact.miss_ratio).abs().max()
    assert error < bound, (exact.miss_ratio.tolist(), sampled.miss_ratio.tolist())
    assert exact.miss_ratio.iloc[0] - exact.miss_ratio.iloc[-1] > 0.04, "a curve with a shape"


def test_bad_options_raise_config_errors(mixed_trace):
    with pytest.raises(ConfigError, match="multiple of 16 sets x 64 B") as e:
        cachesched.mrc(mixed_trace, sets=16, sizes=[1000])
    assert e.value.errors()[0]["loc"] == "sizes"
    with pytest.raises(ConfigError, match="one set") as e:
        cachesched.mrc(mixed_trace, sets=16, sample=0.1)
    assert e.value.errors()[0]["loc"] == "sample"
    with pytest.raises(ConfigError, match="line_bytes"):
        cachesched.mrc(mixed_trace, line_bytes=48)


def test_cli_writes_the_table_csv_and_plots(mixed_trace, tmp_path, capsys):
    import pandas as pd

    csv, png, svg = tmp_path / "c.csv", tmp_path / "c.png", tmp_path / "c.svg"
    assert cli.main(["mrc", str(mixed_trace), "--sets", "16", "--sizes", "1KiB", "4KiB", "--csv", str(csv),
                     "-o", str(png), "-q"]) == 0
    frame = pd.read_csv(csv)
    assert list(frame.columns) == ["size_bytes", "ways", "miss_ratio", "misses", "references"]
    assert list(frame.ways) == [1, 4]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert cli.main(["mrc", str(mixed_trace), "-o", str(svg)]) == 0
    assert b"<svg" in svg.read_bytes()[:1000]
    out = capsys.readouterr().out
    assert "fully associative" in out and "miss ratio" in out
    assert cli.main(["mrc", str(mixed_trace), "--sets", "16", "--sizes", "1000"]) == 2


def test_progress_is_reported_and_an_exception_there_stops_the_pass(tmp_path):
    path = tmp_path / "long.cst"
    trace.generate({"kind": "uniform", "params": {"working_set_bytes": "1MiB", "accesses": 2_200_000}}, path)
    calls: list[tuple[int, int | None]] = []
    cachesched.mrc(path, sizes=[4096], progress=lambda done, total: calls.append((done, total)))
    assert len(calls) == 2 and calls[0][0] >= 1 << 20 and calls[-1][1] == 2_200_000

    class Stop(Exception):
        pass

    def stop(done, total):
        raise Stop

    with pytest.raises(Stop):
        cachesched.mrc(path, progress=stop)
