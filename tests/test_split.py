"""A lone task's caches split by set over two threads (``run.split_sets``):
for every configuration the engine accepts the results equal the serial
run's, byte for byte; the configurations it refuses say why.

Which configurations qualify is decided here independently, from the
resolved machine: every cache's policy decides each set alone (LRU, FIFO,
PLRU, LIP, SRRIP), has an even number of sets and no prefetcher, no level
is attributed, no sampler (it makes the caches coherent)."""

from __future__ import annotations

import json
import os

import pytest

import cachesched
from cachesched import trace
from cachesched.config import presets, resolve
from conftest import mixed_accesses

SETS_APART = {"lru", "fifo", "plru", "lip", "srrip"}
SPLIT = "the caches split by set over two threads"


@pytest.fixture(scope="module")
def mixed_trace(tmp_path_factory):
    """Loads, stores and fetches of 1 to 16 bytes at any offset (some across
    lines) over 40 MiB: hits and misses at every level, TLB misses."""
    cols = mixed_accesses(11, 120_000, (64, 20_000, 40_000), sizes=(1, 4, 8, 16), max_offset=64)
    cols["addr"] = cols["addr"] * 25 // 16 // 8 * 8 + cols["addr"] % 8
    path = tmp_path_factory.mktemp("split") / "mixed.cst"
    trace.write(path, cols)
    return path


def config(path, machine: dict, split: bool, **run) -> dict:
    # Without a producer thread, so that a two-CPU host splits too.
    return {"machine": machine, "workload": {"kind": "trace", "params": {"path": str(path)}},
            "run": {"prefetch": False, "warmup_accesses": 10_000, "split_sets": split, **run},
            "stats": {"interval": "30000 instr"}}


def expected_refusal(machine: dict) -> str | None:
    """Why the split must not run on ``machine`` (resolved), if it must not."""
    for name in ("l1i", "l1d", "l2", "llc"):
        c = machine.get(name)
        if not c:
            continue
        sets = 1 if c.get("fully_associative") else c["size_bytes"] // (c["ways"] * c["line_bytes"])
        if c["replacement"]["kind"] not in SETS_APART or sets % 2:
            return "sets"
        if c.get("prefetcher"):
            return "prefetcher"
    if machine.get("attribution"):
        return "attributed"
    if machine.get("sampler"):
        return "coherent"
    return None


def without_switch(results) -> dict:
    doc = json.loads(results.to_json())
    doc["config"]["run"].pop("split_sets")
    return doc


def compare(path, machine: dict, **run):
    """Both runs' results, checked equal; the split run's host note."""
    split = cachesched.simulate(config(path, machine, True, **run))
    serial = cachesched.simulate(config(path, machine, False, **run))
    assert serial.host["threads"] == "one thread for the caches: run.split_sets is off"
    assert without_switch(split) == without_switch(serial)
    return split.host["threads"]


@pytest.mark.parametrize("preset", [p["name"] for p in presets()])
def test_every_preset_splits_as_it_may_and_counts_what_the_serial_run_counts(mixed_trace, preset):
    machine = {"preset": preset}
    why = expected_refusal(resolve(config(mixed_trace, machine, True), [])["machine"])
    threads = compare(mixed_trace, machine, max_accesses=100_000)
    if why is None:
        assert threads == SPLIT
    else:
        assert threads.startswith("one thread for the caches:") and why in threads, threads


def test_every_preset_splits_for_a_lone_task():
    refused = {p["name"]: why for p in presets()
               if (why := expected_refusal(resolve({"machine": {"preset": p["name"]}, "workload": {"kind": "stream"}},
                                                   [])["machine"]))}
    assert refused == {}


@pytest.mark.parametrize("policy", sorted(SETS_APART - {"lru"}))
def test_each_policy_that_decides_sets_alone_splits_exactly(mixed_trace, policy):
    machine = {"preset": "standard", "l2": {"replacement": {"kind": policy}},
               "llc": {"replacement": {"kind": policy}}}
    assert compare(mixed_trace, machine) == SPLIT


@pytest.mark.parametrize("machine, reason", [
    ({"llc": {"replacement": {"kind": "drrip"}}}, "socket0/llc decides across sets"),
    ({"llc": {"replacement": {"kind": "ship"}}}, "socket0/llc decides across sets"),
    ({"l2": {"replacement": {"kind": "random"}}}, "socket0/core0/l2 decides across sets"),
    ({"l2": {"replacement": {"kind": "bip"}}}, "socket0/core0/l2 decides across sets"),
    ({"l2": {"prefetcher": {"kind": "stream"}}}, "socket0/core0/l2 has a prefetcher"),
    ({"llc": {"size_bytes": 3 * 16 * 64, "ways": 16}}, "socket0/llc has an odd number of sets"),
    ({"attribution": ["llc"]}, "attributed"),
])
def test_a_configuration_it_refuses_says_why_and_runs_on_one_thread(mixed_trace, machine, reason):
    threads = compare(mixed_trace, {"preset": "standard", **machine}, max_accesses=30_000)
    assert threads.startswith("one thread for the caches:") and reason in threads, threads


def test_two_tasks_and_mechanisms_run_on_one_thread(mixed_trace):
    base = config(mixed_trace, {"preset": "standard"}, True, max_accesses=20_000)
    two = {**base, "tasks": [{"workload": base["workload"]}] * 2}
    two.pop("workload")
    assert cachesched.simulate(two).host["threads"].endswith("2 tasks (only a lone task's caches split)")
    tlb = {**base, "mechanisms": [{"kind": "tlb-flush"}]}
    assert "a mechanism is configured" in cachesched.simulate(tlb).host["threads"]


def test_on_two_cpus_the_split_takes_the_producers_cpu(mixed_trace):
    cfg = config(mixed_trace, {"preset": "standard"}, True, max_accesses=20_000, prefetch=True)
    threads = cachesched.simulate(cfg).host["threads"]
    cpus = os.cpu_count() or 1
    assert threads == (SPLIT if cpus >= 3 else f"{SPLIT}, the references decoded on the first (the host has {cpus} CPUs)")


def test_verbose_run_says_how_the_caches_ran(run_cli, tmp_path, mixed_trace):
    toml = tmp_path / "split.toml"
    toml.write_text(f'[workload]\nkind = "trace"\nparams = {{ path = "{mixed_trace}" }}\n'
                    '[run]\nprefetch = false\nmax_accesses = 20000\n')
    proc = run_cli("run", str(toml), "-q", "-v", check=True)
    assert SPLIT in proc.stderr
    off = run_cli("run", str(toml), "-q", "-v", "--set", "run.split_sets=false", check=True)
    assert "run.split_sets is off" in off.stderr
