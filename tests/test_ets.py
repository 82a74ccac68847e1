"""Elastic time slicing end to end: the cs-estimator and the ets scheduler
from a TOML config against uniform slicing, the slices table and the
measures built on it, and config errors naming their key path."""

from __future__ import annotations

import cachesched
import pytest
from cachesched import ConfigError, ets

QUANTUM = 20_000  # cycles: "20us" at 1 GHz

# Two tasks on one core with a 256 KiB 16-way LLC (256 sets, 16 sampled):
# each loops over 96 KiB, so most of its lines survive the other's slice.
TOML = """
[machine]
frequency_ghz = 1.0
l1d = { size_bytes = "4KiB", ways = 4 }
l2 = { size_bytes = "8KiB", ways = 4 }
llc = { size_bytes = "256KiB", ways = 16, latency_cycles = 24 }
attribution = ["llc"]

[[tasks]]
count = 2
workload = { kind = "stream", params = { accesses = 300_000, working_set_bytes = 98304, stride_bytes = 64 } }
"""

ETS = """
[scheduler]
kind = "ets"
params = { quantum = "20us", thresholds = [50, 150, 350] }

[[mechanisms]]
kind = "cs-estimator"
"""

UTS = """
[scheduler]
kind = "round-robin"
params = { quantum = "20us" }

[[mechanisms]]
kind = "cs-estimator"
"""


def run(tmp_path, text: str) -> cachesched.Results:
    path = tmp_path / "run.toml"
    path.write_text(TOML + text)
    return cachesched.simulate(path)


def test_uts_slices_are_one_quantum_and_ets_slices_grow(tmp_path):
    uts = run(tmp_path, UTS).slices
    assert len(uts) > 20
    full = uts[uts.end < uts.groupby("task").end.transform("max")]  # not the last, cut short by the end
    assert (full.length - QUANTUM).abs().max() < 1_000, "one access of overshoot at most"
    elastic = run(tmp_path, ETS).slices
    assert elastic.estimate.notna().mean() > 0.9, "an emulated switch in (almost) every schedule"
    assert elastic.length.max() >= 2 * QUANTUM, "a reusing task earns longer slices"
    assert len(elastic) < len(uts), "longer but fewer slices"


def test_ets_keeps_cpu_time_fair(tmp_path):
    s = run(tmp_path, ETS).slices
    # While both run, each task's CPU time stays within one base quantum
    # of the other's (two tasks: every round is one slice each).
    both = s[s.end <= s.groupby("task").end.max().min()]
    cpu = both.groupby("task").length.sum()
    assert abs(cpu[0] - cpu[1]) <= 4 * QUANTUM + 1_000


def test_measures_from_the_slices_table(tmp_path):
    r = run(tmp_path, ETS)
    dist = ets.distribution(r)
    assert set(dist.columns) == {"task", "ms", "schedules", "fraction", "time_fraction"}
    assert dist.groupby("task").fraction.sum().round(9).eq(1).all()
    tr = ets.transitions(r)
    assert ((tr.same + tr.different).round(9) == 1).all()
    lat = ets.latency(r)
    assert (lat.mean_ms > 0).all()
    est = ets.estimation(r)
    assert (est.estimated > 0).all() and (est.full > 0).all()
    assert (est.estimated % 16 == 0).all(), "sampled counts scaled by 16"
    # Both working sets fit the LLC together: a real switch costs nothing
    # there, which the attribution (the actual) says.
    assert (est.actual == 0).all()
    m = r.mechanisms.iloc[0]
    assert m.kind == "cs-estimator" and m.estimated_misses == est.estimated.sum()


def test_uts_latency_is_the_co_runner_s_slice(tmp_path):
    lat = ets.latency(run(tmp_path, UTS))
    assert lat.mean_ms.sub(0.02).abs().max() < 0.002 and lat.std_ms.max() < 0.002


@pytest.mark.parametrize("timing", ["end-window", "oracle"])
def test_other_timings_publish_estimates(tmp_path, timing):
    text = ETS + f'params = {{ timing = "{timing}", window = "5us", period = "5us" }}\n'
    s = run(tmp_path, text).slices
    assert s.estimate.notna().sum() > 10


def test_partitioned_shared_llc(tmp_path):
    text = TOML.replace("[machine]", "[machine]\ncores_per_socket = 2") + """
[scheduler]
kind = "round-robin"
params = { quantum = "20us" }

[[mechanisms]]
kind = "cs-estimator"
params = { partition = true }
"""
    path = tmp_path / "run.toml"
    path.write_text(text)
    r = cachesched.simulate(path)
    assert set(r.slices.core) == {0, 1}


@pytest.mark.parametrize("params, loc", [
    ('{ thresholds = [10, 5] }', "scheduler.params.thresholds[1]"),
    ('{ initial = 9 }', "scheduler.params.initial"),
    ('{ elastic = ["nobody"] }', "scheduler.params.elastic[0]"),
    ('{ quantum = "0us" }', "scheduler.params.quantum"),
])
def test_bad_scheduler_params_name_the_key(tmp_path, params, loc):
    text = f'[scheduler]\nkind = "ets"\nparams = {params}\n'
    with pytest.raises(ConfigError) as e:
        run(tmp_path, text)
    assert loc in str(e.value)


@pytest.mark.parametrize("params, loc", [
    ('{ sample_ratio = 3 }', "mechanisms[0].params.sample_ratio"),
    ('{ divergence = -1.0 }', "mechanisms[0].params.divergence"),
    ('{ timing = "sometimes" }', "mechanisms[0].params.timing"),
])
def test_bad_estimator_params_name_the_key(tmp_path, params, loc):
    text = f'[[mechanisms]]\nkind = "cs-estimator"\nparams = {params}\n'
    with pytest.raises(ConfigError) as e:
        run(tmp_path, text)
    assert loc in str(e.value)
