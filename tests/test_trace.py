"""Trace files from Python: columns in and out, generation."""

from __future__ import annotations

import numpy as np

from cachesched import trace


def test_columns_round_trip(tmp_path):
    rng = np.random.default_rng(3)
    n = 100_000
    cols = {
        "addr": rng.integers(0, 2**63, n, dtype=np.uint64),
        "kind": rng.integers(0, 3, n, dtype=np.uint8),
        "size": rng.integers(1, 65, n, dtype=np.uint16),
        "pc": rng.integers(0, 2**40, n, dtype=np.uint64),
        "instrs": rng.integers(0, 10, n, dtype=np.uint32),
    }
    summary = trace.write(tmp_path / "r.cst", cols)
    assert summary["accesses"] == n and summary["instructions"] == int(cols["instrs"].sum())
    back = trace.read(tmp_path / "r.cst")
    for name, values in cols.items():
        assert np.array_equal(back[name].to_numpy(), values), name
    part = trace.read(tmp_path / "r.cst", skip=70_000, limit=5)
    assert np.array_equal(part.addr.to_numpy(), cols["addr"][70_000:70_005])


def test_kind_names_and_defaults(tmp_path):
    trace.write(tmp_path / "k.cst", {"addr": [0, 64, 128], "kind": ["load", "store", "ifetch"]})
    df = trace.read(tmp_path / "k.cst")
    assert df.kind.tolist() == [0, 1, 2] and df["size"].tolist() == [8, 8, 8] and df.instrs.tolist() == [1, 1, 1]


def test_generation_is_deterministic(tmp_path):
    w = {"kind": "zipf", "params": {"accesses": 5000, "working_set_bytes": "1MiB"}}
    trace.generate(w, tmp_path / "a.cst", seed=4)
    trace.generate(w, tmp_path / "b.cst", seed=4)
    trace.generate(w, tmp_path / "c.cst", seed=5)
    a, b, c = (trace.read(tmp_path / f"{x}.cst") for x in "abc")
    assert a.equals(b) and not a.equals(c)
    assert trace.info(tmp_path / "a.cst")["meta"]["seed"] == 4
