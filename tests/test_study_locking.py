"""The cache locking study (docs/cache-locking.md, "The study"): Table 1's
arithmetic by hand, the quick study run whole through the command line,
its claims checked against the tables they come from and one run against
a plainly written LRU partition; a second run simulates nothing."""

from __future__ import annotations

import pandas as pd
import pytest
from cachesched import trace
from cachesched.studies import claims as claims_mod
from cachesched.studies.locking import PARTS, table1
from conftest import quick_study


def test_table1_geometry_is_the_dissertations_arithmetic():
    # 2048 / 128 = 16 blocks; 16 / 8 ways = 2 sets; a quarter is 4 blocks.
    assert table1.geometry() == {"blocks": 16, "sets": 2, "locked_blocks": 4}
    # 4 KiB of 64 B lines, 4 ways: 64 blocks, 16 sets; 5% is 3 blocks.
    assert table1.geometry(4096, 64, 4, 0.05) == {"blocks": 64, "sets": 16, "locked_blocks": 3}
    assert round(100 * 128 / 246, 2) == 52.03 and round(100 * 124 / 246, 2) == 50.41


def plain_lru_misses(blocks, sets: int, ways: int) -> int:
    """A set-associative LRU cache written plainly: a list per set, most
    recent last."""
    cache = [[] for _ in range(sets)]
    misses = 0
    for b in blocks:
        s = cache[b % sets]
        if b in s:
            s.remove(b)
        else:
            misses += 1
            if len(s) == ways:
                s.pop(0)
        s.append(b)
    return misses


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("locking") / "out"
    return out, quick_study("locking", out)


def table(out, name):
    return pd.read_csv(out / f"{name}.csv")


@pytest.mark.slow
def test_every_claim_is_measured_and_judged(quick):
    out, stdout = quick
    assert (out / "index.html").exists() and "index.html" in stdout
    df = claims_mod.Claims.read(out / "claims.csv")
    # The policies part (beyond the seed) has no claim of the source.
    assert set(df.part) == {p.name for p in PARTS} - {"policies"}
    assert df.verdict.isin(["holds", "partly", "does not hold"]).all(), df[["id", "verdict"]]
    short = df[df.verdict != "holds"]
    assert (short.difference.str.len() > 0).all() and (short.reason.str.len() > 0).all()
    for name in ("locking_size", "locking_assoc", "locking_response", "locking_lockpct", "locking_replacement",
                 "locking_policies", "locking_b1_response", "locking_b1_utilization", "locking_b1_processing",
                 "locking_cl1"):
        assert (out / f"{name}.png").exists()


@pytest.mark.slow
def test_the_claims_numbers_are_those_of_the_tables(quick):
    out, _ = quick
    claims = claims_mod.Claims.read(out / "claims.csv").set_index("id")
    size, assoc, response = table(out, "size"), table(out, "assoc"), table(out, "response")
    # The same configuration in two parts: 4 KiB, 4 ways.
    a = size[size.size_kib == 4].set_index(["config", "workload"]).misses
    b = assoc[assoc.ways == 4].set_index(["config", "workload"]).misses
    assert (a.loc[b.index] == b).all()
    # Eq. 3: every miss costs 2 x 50 + 10 + 4000 + 2000 us.
    assert ((response.io_seconds - response.misses * 6110e-6).abs() < 1e-6).all()
    # b21-never-worse counts the (workload, size) where locking does not raise misses.
    wide = size.pivot_table(index=["workload", "size_kib"], columns="config", values="miss_pct")
    kept = int((wide["none"] - wide["lock"] >= 0).sum())
    assert claims.loc["b21-never-worse", "measured"].startswith(f"gain >= 0 in {kept} of 24")
    cl1 = table(out, "cl1")
    a4 = cl1[cl1.experiment == "A4"].groupby("config").mean_delay.first()
    assert f"none {a4['none']:,.0f}" in claims.loc["a4-strategies", "measured"]
    # One batch of four: the mean delay per task is its slowest task over four.
    a2 = cl1[(cl1.experiment == "A2") & (cl1.app == "GIF") & (cl1.locked_pct == 25.0)]
    assert a2.mean_delay.iloc[0] == pytest.approx(a2.delay.max() / 4)
    t1 = table(out, "table1")
    assert t1.misses.iloc[0] == 246 and t1.top_misses.iloc[0] == 128
    assert "52.03%" in claims.loc["a1-share", "measured"]


@pytest.mark.slow
def test_our_fully_associative_lru_misses_what_libcachesims_does(quick):
    out, _ = quick
    df = table(out, "policies").pivot_table(index=["workload", "size_kib"], columns="config", values="misses")
    assert len(df) == 24 and (df["lru-check"] == df["LRU (libCacheSim)"]).all()


@pytest.mark.slow
def test_b1s_runs_keep_the_cache_whole_and_its_claims_use_them(quick):
    out, _ = quick
    df = table(out, "provisioning")
    claims = claims_mod.Claims.read(out / "claims.csv").set_index("id")
    replay = df[df["mode"] == "replay"]
    mid = replay[replay.cache_mib == 16].set_index(["policy", "server"]).mean_response_ms
    cut = 100 * (1 - mid["dynamic", "database"] / mid["static", "database"])
    assert f"database {cut:+.1f}%" in claims.loc["b1-response", "measured"]
    done = df[(df["mode"] == "credit") & (df.cache_mib == 8)].set_index(["policy", "server"]).completion_s
    cut = 100 * (1 - done["dynamic", "web server"] / done["static", "web server"])
    assert "8 MiB database" in claims.loc["b1-processing", "measured"]
    assert f"web server {cut:+.1f}%" in claims.loc["b1-processing", "measured"]
    # Under the scheduler or not, a VM requests the same blocks; the equal
    # split hits the same (its LRU shares do not depend on the timing).
    static = df[df.policy == "static"].pivot_table(index=["cache_mib", "server"], columns="mode",
                                                   values=["blocks", "misses"])
    assert (static["blocks", "replay"] == static["blocks", "credit"]).all()
    assert (static["misses", "replay"] == static["misses", "credit"]).all()
    # Static and MRC shares never move; every share is within the cache.
    fixed = df[df.policy != "dynamic"]
    assert (fixed.first_alloc == fixed.final_alloc).all()
    keys = ["mode", "cache_mib", "policy"]
    assert (df.groupby(keys).final_alloc.sum() <= df.groupby(keys).cache_mib.first() * 256).all()


@pytest.mark.slow
def test_a_run_of_the_study_is_a_plain_lru_partitions(quick):
    out, _ = quick
    from cachesched.workloads import suite

    m = suite.record("fft", "small")
    df = trace.read(m["trace"])
    loads = (df.addr[df.kind == trace.KIND_NAMES.index("load")].to_numpy() >> 6).tolist()
    size = table(out, "size")
    row = size[(size.config == "none") & (size.size_kib == 2) & (size.workload == "FFT")].iloc[0]
    assert row.accesses == len(loads)
    assert row.misses == plain_lru_misses(loads, sets=8, ways=4)


@pytest.mark.slow
def test_a_second_run_simulates_nothing(quick):
    out, _ = quick
    stored = sorted((p.name, p.stat().st_mtime_ns) for p in (out / "store" / "locking").iterdir())
    before = (out / "claims.csv").read_text()
    quick_study("locking", out)
    assert sorted((p.name, p.stat().st_mtime_ns) for p in (out / "store" / "locking").iterdir()) == stored
    assert (out / "claims.csv").read_text() == before
