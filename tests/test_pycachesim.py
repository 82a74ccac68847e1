"""Exact agreement with pycachesim on hit and miss counts per level.

pycachesim is an independent cache simulator. Under the configuration of
:func:`cachesched.reference.equivalent_machine` its semantics and ours
coincide (docs/validation.md says why): we check every level's demand hits
and misses, the written-back lines each lower level receives, and the dirty
lines each level evicts, for hierarchies of 1, 2 and 3 levels on four
different synthetic traces.
"""

from __future__ import annotations

import importlib.util

import pytest

import cachesched
from cachesched import reference, trace

from conftest import needed

needed(importlib.util.find_spec("cachesim"), "pycachesim, the reference of these tests", "pip install -e '.[test]'")

# (size in bytes, ways) per level: small enough that every level misses.
GEOMETRY = [(4096, 4), (32768, 8), (262144, 16)]

WORKLOADS = {
    "uniform": {"kind": "uniform", "params": {"working_set_bytes": "512KiB", "store_fraction": 0.3}},
    "zipf": {"kind": "zipf", "params": {"working_set_bytes": "2MiB", "exponent": 0.9, "store_fraction": 0.3}},
    "stream": {"kind": "stream", "params": {"working_set_bytes": "1MiB", "stride_bytes": 24, "streams": 3,
                                            "store_fraction": 0.3}},
    "chase": {"kind": "chase", "params": {"working_set_bytes": "384KiB", "store_fraction": 0.2}},
}


@pytest.fixture(scope="module", params=sorted(WORKLOADS))
def generated(request, tmp_path_factory):
    name = request.param
    path = tmp_path_factory.mktemp("traces") / f"{name}.cst"
    workload = WORKLOADS[name]
    workload = {**workload, "params": {**workload["params"], "accesses": 150_000, "access_bytes": 8}}
    trace.generate(workload, path, seed=11)
    return path, trace.read(path)


@pytest.mark.parametrize("levels", [1, 2, 3])
def test_hits_and_misses_agree_with_pycachesim(generated, levels):
    path, accesses = generated
    assert len(accesses) == 150_000
    geometry = GEOMETRY[:levels]
    ours = cachesched.simulate({"machine": reference.equivalent_machine(geometry),
                                "workload": {"kind": "trace", "params": {"path": str(path)}}})
    sim, caches = reference.hierarchy(geometry)
    sim.loadstore(reference.loadstore_runs(accesses), length=8)
    got, want = reference.our_counts(ours, levels), reference.counts(caches)
    assert got == want
    # Every level must have been exercised, or the comparison proves little.
    assert all(v["misses"] > 100 for v in got.values()), got


def test_loadstore_runs_replay_the_accesses_in_order():
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(1)
    for n in [0, 1, 2, 7, 1000]:
        kinds = rng.integers(0, 2, n).astype(np.uint8)
        addrs = rng.integers(0, 1000, n).astype(np.uint64)
        runs = reference.loadstore_runs(pd.DataFrame({"kind": kinds, "addr": addrs}))
        replay = [(k, a) for loads, stores in runs for k, a in [(0, x) for x in loads] + [(1, x) for x in stores]]
        assert replay == list(zip(kinds.tolist(), addrs.tolist()))
        # Maximal pairs: each pair but the last ends with stores, each but the first starts with loads.
        assert all(stores and loads for (_, stores), (loads, _) in zip(runs, runs[1:]))
