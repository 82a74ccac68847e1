"""Bad input gets a clear error naming the key, file, offset or block, and
never a Rust panic."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cachesched
from cachesched import ConfigError, TraceError, trace

GOOD = {"workload": {"kind": "stream", "params": {"accesses": 1000}}}


def config_errors(cfg) -> list[dict]:
    with pytest.raises(ConfigError) as info:
        cachesched.simulate(cfg)
    assert isinstance(info.value, ValueError)
    return info.value.errors()


@pytest.mark.parametrize("cfg, loc, code", [
    ({**GOOD, "machine": {"l2": {"wayz": 8}}}, "machine.l2.wayz", "unknown_field"),
    ({**GOOD, "machine": {"l2": {"ways": "many"}}}, "machine.l2.ways", "invalid_type"),
    ({**GOOD, "machine": {"l1d": {"size_bytes": "32 parsecs"}}}, "machine.l1d.size_bytes", "invalid_value"),
    ({**GOOD, "machine": {"l1d": {"line_bytes": 48}}}, "machine.l1d.line_bytes", "not_power_of_two"),
    ({**GOOD, "machine": {"l1d": {"ways": 12}}}, "machine.l1d.size_bytes", "invalid_geometry"),
    ({**GOOD, "machine": {"preset": "cray-1"}}, "machine.preset", "unknown_preset"),
    ({**GOOD, "machine": {"sockets": 0}}, "machine.sockets", "out_of_range"),
    ({**GOOD, "machine": {"tlb": {"l2": {"entries": 100, "ways": 12}}}}, "machine.tlb.l2.entries",
     "invalid_geometry"),
    ({**GOOD, "machine": {"l2": {"replacement": {"kind": "belady"}}}}, "machine.l2.replacement.kind",
     "unknown_kind"),
    ({**GOOD, "machine": {"l2": {"replacement": {"kind": "plru"}, "ways": 12, "size_bytes": "768KiB"}}},
     "machine.l2.replacement", "unsupported_geometry"),
    ({"workload": {"kind": "zipff"}}, "workload.kind", "unknown_kind"),
    ({"workload": {"kind": "zipf", "params": {"exponent": "steep"}}}, "workload.params.exponent", "invalid_type"),
    ({"workload": {"kind": "trace"}}, "workload.params.path", "missing_field"),
    ({"machine": {}}, "workload", "missing_field"),
    ({**GOOD, "run": {"batch": 0}}, "run.batch", "out_of_range"),
    ({**GOOD, "run": {"switch_cycles": 2**64 - 1}}, "run.switch_cycles", "out_of_range"),
    ({**GOOD, "run": {"migration_cycles": 2**40 + 1}}, "run.migration_cycles", "out_of_range"),
    ({**GOOD, "sed": 3}, "sed", "unknown_field"),
    ({**GOOD, "machine": {"sockets": 2, "memory": {"distances": [[10, 21], [21]]}}}, "machine.memory.distances",
     "invalid_value"),
    ({**GOOD, "machine": {"sockets": 2, "memory": {"distances": [[10, 21], [21, 0]]}}},
     "machine.memory.distances[1][1]", "invalid_value"),
    ({**GOOD, "machine": {"sockets": 2, "memory": {"distances": [[10, "far"], [21, 10]]}}},
     "machine.memory.distances[0][1]", "invalid_type"),
])
def test_config_errors_name_the_key_path(cfg, loc, code):
    errors = config_errors(cfg)
    assert (loc, code) in [(e["loc"], e["code"]) for e in errors], errors


def test_all_problems_are_reported_at_once():
    errors = config_errors({"machine": {"l1d": {"line_bytes": 48}, "l2": {"ways": 0}}})
    locs = {e["loc"] for e in errors}
    assert {"machine.l1d.line_bytes", "machine.l2.ways", "workload"} <= locs


def test_bad_toml_file_and_missing_config(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("seed = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        cachesched.simulate(path)
    with pytest.raises(ConfigError, match="cannot read"):
        cachesched.simulate(tmp_path / "absent.toml")


def test_missing_trace_names_the_file(tmp_path):
    missing = tmp_path / "nowhere.cst"
    with pytest.raises(TraceError) as info:
        cachesched.simulate({"workload": {"kind": "trace", "params": {"path": str(missing)}}})
    assert isinstance(info.value, OSError)
    assert "nowhere.cst" in str(info.value)


@pytest.fixture
def small_trace(tmp_path):
    path = tmp_path / "t.cst"
    trace.generate({"kind": "uniform", "params": {"accesses": 200_000, "working_set_bytes": "1MiB"}}, path)
    return path


def test_corrupt_trace_says_where(small_trace):
    data = bytearray(small_trace.read_bytes())
    data[len(data) // 2] ^= 0xFF
    small_trace.write_bytes(bytes(data))
    with pytest.raises(TraceError) as info:
        cachesched.simulate({"workload": {"kind": "trace", "params": {"path": str(small_trace)}}})
    assert info.value.offset is not None and info.value.block is not None
    assert "t.cst" in str(info.value) and "byte offset" in str(info.value)


def test_truncated_trace_says_where(small_trace):
    data = small_trace.read_bytes()
    small_trace.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(TraceError) as info:
        cachesched.simulate({"workload": {"kind": "trace", "params": {"path": str(small_trace)}}})
    assert "truncated" in str(info.value) and info.value.offset is not None


leaves = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                   st.text(max_size=8), st.sampled_from(["lru", "zipf", "standard", "32KiB", "inclusive"]))
keys = st.sampled_from(["machine", "l1d", "l2", "llc", "tlb", "ways", "size_bytes", "line_bytes", "kind",
                        "params", "workload", "preset", "memory", "nodes", "accesses", "replacement", "run"])
documents = st.recursive(leaves, lambda inner: st.dictionaries(keys, inner, max_size=4), max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(doc=st.dictionaries(keys, documents, max_size=4))
def test_no_config_makes_the_core_panic(doc):
    try:
        cachesched.simulate(json.loads(json.dumps(doc, default=str)), overrides=["run.max_accesses=100"])
    except cachesched.CacheschedError as e:
        assert not isinstance(e, cachesched.InternalError), e


@settings(max_examples=100, deadline=None)
@given(blob=st.binary(max_size=512))
def test_no_bytes_make_the_trace_reader_panic(tmp_path_factory, blob):
    path = tmp_path_factory.mktemp("fuzz") / "x.cst"
    path.write_bytes(blob)
    with pytest.raises(TraceError):
        cachesched.simulate({"workload": {"kind": "trace", "params": {"path": str(path)}}})


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    path = tmp_path_factory.mktemp("pristine") / "p.cst"
    trace.generate({"kind": "zipf", "params": {"accesses": 3000, "working_set_bytes": "64KiB"}}, path)
    return path.read_bytes(), trace.read(path)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_damaged_traces_fail_cleanly_or_read_identically(tmp_path_factory, pristine, data):
    original, content = pristine
    damaged = bytearray(original)
    if data.draw(st.booleans(), label="truncate"):
        damaged = damaged[: data.draw(st.integers(0, len(original) - 1), label="length")]
    else:
        for _ in range(data.draw(st.integers(1, 4), label="flips")):
            at = data.draw(st.integers(0, len(original) - 1), label="offset")
            damaged[at] ^= data.draw(st.integers(1, 255), label="mask")
    path = tmp_path_factory.mktemp("damaged") / "d.cst"
    path.write_bytes(bytes(damaged))
    try:
        back = trace.read(path)
    except TraceError as e:
        assert e.path and "d.cst" in str(e)
        return
    # zstd ignores a few bits; anything it accepts must decode to the same accesses.
    assert back.equals(content)


@pytest.mark.parametrize("cfg, loc", [
    ({**GOOD, "machine": {"frequency_ghz": float("nan")}}, "machine.frequency_ghz"),
    ({**GOOD, "machine": {"attribution": ["l2"], "base_cpi": float("inf")}}, "machine.base_cpi"),
    ({"tasks": [{"workload": {"kind": "zipf", "params": {"exponent": float("-inf")}}}]},
     "tasks[0].workload.params.exponent"),
])
def test_a_non_finite_number_names_its_key(cfg, loc):
    with pytest.raises(ConfigError) as e:
        cachesched.simulate(cfg)
    assert [x["loc"] for x in e.value.errors()] == [loc]
    assert "finite" in str(e.value)
