"""The NUMA page-migration study (docs/numa.md, "The study"): its measures
on hand-made traffic tables, and the quick study run whole through the
command line, its claims checked against the tables they come from and
against the runs in its store; a second run simulates nothing."""

from __future__ import annotations

import pandas as pd
import pytest
from cachesched.studies import claims as claims_mod
from cachesched.studies.numa import PARTS, common
from conftest import assert_rerun_simulates_nothing, quick_study


def traffic(rows: list[tuple[int, int, int, int, int]]) -> pd.DataFrame:
    """(core, node, read_shared, read_own, sampled) rows, the rest 0."""
    df = pd.DataFrame(rows, columns=["core", "node", "read_shared", "read_own", "sampled"])
    return df.assign(upgrade=0, writeback=0, cache_to_cache=0)


def test_the_non_local_share_is_by_the_requesters_board():
    # Core 0 and 5 are on boards 0 and 1 (4 CPUs a board).
    t = traffic([(0, 0, 6, 2, 0), (0, 1, 1, 1, 0), (5, 0, 3, 0, 0), (5, 1, 7, 0, 0)])
    # Non-local: core 0 to node 1 (2), core 5 to node 0 (3); of 20.
    assert common.nonlocal_share(t) == pytest.approx(5 / 20)


def test_the_distance_is_each_cpus_sampled_share_against_its_share():
    # Core 0 makes 3/4 of the transactions but 1/2 of the samples; core 4 1/4 and 1/2.
    t = traffic([(0, 0, 30, 0, 5), (4, 0, 10, 0, 5), (8, 0, 0, 0, 0)])
    d = common.distance(t)
    assert list(d.index) == [0, 4]  # a CPU without transactions has no D
    assert d[0] == pytest.approx(abs(0.5 - 0.75) / 0.75) and d[4] == pytest.approx(abs(0.5 - 0.25) / 0.25)


def test_the_migration_cost_scales_with_the_interval():
    # A 5 s interval at 750 MHz keeps the source's 98 us per page.
    (m,) = common.migration(int(5 * 0.75e9))
    assert m["params"]["copy_time"] == round(98e-6 * 0.75e9)
    (m,) = common.migration(int(5 * 0.75e9) // 1000)
    assert m["params"]["copy_time"] == round(98e-6 * 0.75e9 / 1000)


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("numa") / "out"
    return out, quick_study("numa", out)


@pytest.mark.slow
def test_every_claim_is_measured_and_judged(quick):
    out, stdout = quick
    assert (out / "index.html").exists() and "index.html" in stdout
    df = claims_mod.Claims.read(out / "claims.csv")
    parts = {p.name for p in PARTS}
    assert set(df.part) == parts
    assert df.verdict.isin(["holds", "partly", "does not hold", "not comparable"]).all(), df[["id", "verdict"]]
    assert (df.verdict == "not comparable").sum() == 1  # E3: no banks per CPU
    # A claim that does not fully hold says by how much and why.
    short = df[df.verdict != "holds"]
    assert (short.difference.str.len() > 0).all() and (short.reason.str.len() > 0).all()


@pytest.mark.slow
def test_the_claims_numbers_are_those_of_their_tables(quick):
    out = quick[0]
    claims = claims_mod.Claims.read(out / "claims.csv").set_index("id")
    mig = pd.read_csv(out / "migration.csv").set_index("kernel")
    assert len(mig) == 7
    reduction = 1 - mig.nonlocal_stw / mig.nonlocal_bound
    assert reduction.to_numpy() == pytest.approx(mig.reduction.to_numpy())
    assert f"MG {100 * mig.reduction['mg']:.1f}%" in claims.loc["E4a", "measured"]
    sampling = pd.read_csv(out / "sampling.csv").set_index("mode")
    assert f"{sampling.loc['N=1024', 'avg_d']:.3f}" in claims.loc["E1a", "measured"]
    # Interval sampling takes 8/N while the reader keeps up (the runs, not the spec).
    for n in (4096, 1024, 256):
        assert sampling.loc[f"N={n}", "sampled"] == pytest.approx(8 / n, rel=0.05)
    interval = pd.read_csv(out / "interval.csv")
    assert set(interval.factor) == {0.2, 0.4, 1, 2, 4, 10}


@pytest.mark.slow
def test_master_initialisation_puts_most_accesses_off_board_and_migration_brings_them_home(quick):
    mig = pd.read_csv(quick[0] / "migration.csv").set_index("kernel")
    # Every page on board 0, threads on six boards: about 5/6 non-local for
    # the partitioned kernels (the source's sanity check); EP has no shared data.
    assert (mig.drop("ep").nonlocal_bound > 0.6).all()
    assert (mig.drop("ep").reduction > 0.1).all() and (mig.drop("ep").migrations > 0).all()


@pytest.mark.slow
def test_a_second_study_on_the_same_directory_reuses_the_stored_runs(quick):
    assert_rerun_simulates_nothing("numa", quick[0])


def test_a_size_the_study_does_not_run_is_refused(run_cli, tmp_path):
    proc = run_cli("study", "numa", "--size", "small", "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "study numa runs sizes full, quick, not small" in proc.stderr
    assert not (tmp_path / "out" / "index.html").exists()
