"""Mechanisms end to end: TLB flushing and TLB preservation from TOML and
Python configs, their counters in ``Results.mechanisms``, and their config
errors."""

from __future__ import annotations

import cachesched
import pytest
from cachesched import ConfigError

PAGES = 48

# Two tasks take turns on one core of the TLB study's machine (256-entry
# 4-way L1 TLB over a 512-entry L2 TLB of its victims), each walking 48
# pages, one reference per page, 1000 references per slice.
TOML = f"""
[machine]
preset = "migration-tlb"
cores_per_socket = 1

[[tasks]]
count = 2
workload = {{ kind = "stream", params = {{ accesses = 12_000, working_set_bytes = {PAGES * 4096}, stride_bytes = 4096, instructions_per_access = 3.0 }} }}

[scheduler]
kind = "round-robin"
params = {{ quantum = "3000 instr" }}
"""

TLB_COUNTERS = ["snapshots", "restores", "candidates", "saved", "rejected", "reused", "unused", "reused_l1",
                "reused_l2", "reused_walk", "false_negatives", "false_negative_l1", "false_negative_l2",
                "false_negative_walk", "unrestored", "save_cycles", "restore_cycles", "cycles"]


def run(tmp_path, mechanisms: str, **kw) -> cachesched.Results:
    path = tmp_path / "run.toml"
    path.write_text(TOML + mechanisms)
    return cachesched.simulate(path, **kw)


def check_consistent(row) -> None:
    """The counters of one tlb-preserve row add up."""
    assert row.reused + row.unused == row.saved
    assert row.saved + row.rejected == row.candidates
    assert row.reused_l1 + row.reused_l2 + row.reused_walk == row.reused
    assert row.false_negative_l1 + row.false_negative_l2 + row.false_negative_walk == row.false_negatives
    assert row.false_negatives <= row.rejected
    assert row.cycles == row.save_cycles + row.restore_cycles


def test_preservation_removes_the_misses_a_flush_causes(tmp_path):
    kept = run(tmp_path, "")
    flushed = run(tmp_path, '\n[[mechanisms]]\nkind = "tlb-flush"\n')
    preserved = run(tmp_path, '\n[[mechanisms]]\nkind = "tlb-flush"\n'.replace("tlb-flush", "tlb-preserve"))
    switches = int(flushed.tasks.switches[0])
    assert switches >= 6
    assert list(kept.tasks.tlb_l1_misses) == [PAGES, PAGES], "tagged TLBs keep both working sets"
    assert list(flushed.tasks.tlb_l1_misses) == [PAGES * switches] * 2
    assert list(preserved.tasks.tlb_l1_misses) == [PAGES, PAGES], "only the first round misses"
    assert kept.mechanisms.empty and list(kept.mechanisms.columns) == ["index", "kind"]
    assert "mechanisms" not in kept.tables()
    assert list(flushed.mechanisms.kind) == ["tlb-flush"] and flushed.mechanisms.flushes[0] == 2 * switches

    m = preserved.mechanisms
    assert list(m.columns) == ["index", "kind", *TLB_COUNTERS]
    row = m.iloc[0]
    check_consistent(row)
    assert row.restores == 2 * (switches - 1)
    assert row.saved == row.reused == row.reused_l1 == PAGES * row.restores
    assert row.false_negatives == row.rejected == 0
    assert row.cycles == preserved.tasks.overhead_cycles.sum(), "the mechanism's cycles are charged to the tasks"
    assert "mechanism 0 (tlb-preserve): snapshots" in preserved.format()
    assert preserved.config["mechanisms"][0]["params"]["select"] == {"kind": "all", "params": {}}


def test_an_aging_predictor_from_python_saves_fewer_entries(tmp_path):
    # Half the pages are walked by a second stream site that a branch skips
    # most of the time: aging with short windows rejects many of those.
    def simulate(select: dict) -> cachesched.Results:
        loop = {"kind": "loop", "params": {
            "accesses": 40_000,
            "arrays": [{"size_bytes": 32 * 4096}, {"size_bytes": 64 * 4096}],
            "sites": [{"stream": {"array": 0, "stride_bytes": 4096}},
                      {"stream": {"array": 1, "stride_bytes": 4096}, "skip_probability": 0.9}]}}
        return cachesched.simulate({
            "machine": {"preset": "migration-tlb", "cores_per_socket": 1},
            "tasks": [{"workload": loop, "count": 2}],
            "scheduler": {"kind": "round-robin", "params": {"quantum": "6000 instr"}},
        }, mechanisms=[{"kind": "tlb-preserve", "params": {"select": select, "reuse_window_accesses": 1000}}])

    everything = simulate({"kind": "all"}).mechanisms.iloc[0]
    aged = simulate({"kind": "aging", "params": {"bits": 2, "threshold": 0, "window_accesses": 100}}).mechanisms.iloc[0]
    counted = simulate({"kind": "aging-total", "params": {"threshold": 1, "window_accesses": 100}}).mechanisms.iloc[0]
    for row in (everything, aged, counted):
        check_consistent(row)
    assert everything.rejected == 0 and everything.unused > 0
    assert aged.restores == everything.restores
    assert 0 < aged.saved < everything.saved
    assert aged.unused < everything.unused, "the predictor drops entries that go unused"
    assert counted.rejected > 0


@pytest.mark.parametrize("mechanism, loc", [
    ({"kind": "tlb-keep"}, "mechanisms[0].kind"),
    ({"kind": "tlb-preserve", "params": {"asid": True}}, "mechanisms[0].params.asid"),
    ({"kind": "tlb-preserve", "params": {"flush": {"scope": "core"}}}, "mechanisms[0].params.flush.scope"),
    ({"kind": "tlb-preserve", "params": {"save_cycles_per_entry": -1}}, "mechanisms[0].params.save_cycles_per_entry"),
    ({"kind": "tlb-preserve", "params": {"select": {"kind": "aging", "params": {"bits": 40}}}},
     "mechanisms[0].params.select.params.bits"),
    ({"kind": "tlb-preserve", "params": {"select": {"kind": "aging", "params": {"bits": 3, "threshold": 7}}}},
     "mechanisms[0].params.select.params.threshold"),
    ({"kind": "tlb-preserve", "params": {"select": {"kind": "aging-total", "params": {"window": 5}}}},
     "mechanisms[0].params.select.params.window"),
    ({"kind": "tlb-flush", "params": {"on": "sometimes"}}, "mechanisms[0].params.on"),
])
def test_bad_mechanism_params_name_the_key(mechanism, loc):
    with pytest.raises(ConfigError) as info:
        cachesched.simulate({"workload": {"kind": "stream"}, "mechanisms": [mechanism]})
    assert [e["loc"] for e in info.value.errors()] == [loc]
    assert loc in str(info.value)


def test_mechanism_tables_are_saved(tmp_path):
    r = run(tmp_path, '\n[[mechanisms]]\nkind = "tlb-preserve"\nparams = { select = { kind = "aging" } }\n')
    out = r.save(tmp_path / "out")
    assert (out / "mechanisms.parquet").exists()
    again = cachesched.Results.from_json(r.to_json())
    assert again.mechanisms.equals(r.mechanisms)


MIGRATION_TOML = """
seed = 3

[machine]
preset = "teaching"
sockets = 2
cores_per_socket = 1
tlb = false
l1d = { size_bytes = "2KiB", ways = 2 }
l2 = { size_bytes = "32KiB", ways = 8 }
llc = false

[[tasks]]
workload = { kind = "zipf", params = { accesses = 40000, working_set_bytes = "96KiB", exponent = 0.9 } }

[scheduler]
kind = "forced"
params = { every = "20000 instr", destination = "remote", timing = "live" }

[[mechanisms]]
kind = "cache-flush"
params = { on = "migrate" }
"""


@pytest.mark.parametrize("second", [
    "",
    '[[mechanisms]]\nkind = "l2-restore"\nparams = { select = { kind = "global-mru", lines = 128 } }\n',
    '[[mechanisms]]\nkind = "migration-prefetch"\n',
])
def test_l2_migration_mechanisms_from_toml(tmp_path, second):
    path = tmp_path / "migrate.toml"
    path.write_text(MIGRATION_TOML + second)
    r = cachesched.simulate(path)
    l2 = r.caches[r.caches.level == "l2"]
    migrations = int((r.events.event == "migrate").sum())
    assert migrations >= 2
    placed = int(l2.migrated_in.sum())
    if not second:
        assert placed == 0 and list(r.mechanisms.kind) == ["cache-flush"]
        return
    row = r.mechanisms.iloc[1]
    if "l2-restore" in second:
        assert row.selected == 128 * row.snapshots and placed == row.installed == 128 * row.restores
    else:
        assert row.live_transfers == migrations and row.messages == 4 * migrations
        assert 0 < placed <= row.tags
    assert 0 < int(l2.migrated_useful.sum()) <= placed


@pytest.mark.parametrize("params, loc", [
    ({"select": {"kind": "local-mru", "n": 0}}, "mechanisms[0].params.select"),
    ({"prefetches_per_cycle": -1}, "mechanisms[0].params.prefetches_per_cycle"),
    ({"select": {"kind": "nearest"}}, "mechanisms[0].params"),
])
def test_bad_migration_prefetch_params_name_the_key(params, loc):
    config = {"machine": {"preset": "teaching"}, "workload": {"kind": "stream", "params": {"accesses": 10}},
              "mechanisms": [{"kind": "migration-prefetch", "params": params}]}
    with pytest.raises(ConfigError, match=loc.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        cachesched.simulate(config)
