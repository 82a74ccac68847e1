"""The Python API end to end: simulate, Results tables, determinism, progress."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

import cachesched


def sweep(passes: int = 2, lines: int = 128) -> dict:
    """``lines`` consecutive 64-byte lines, one load each, ``passes`` times."""
    return {"kind": "stream", "params": {"working_set_bytes": lines * 64, "stride_bytes": 64, "access_bytes": 8,
                                          "store_fraction": 0.0, "accesses": passes * lines,
                                          "instructions_per_access": 1.0}}


def test_hand_computed_sweep_on_the_teaching_machine():
    # 128 lines = 8 KiB: twice the 4 KiB L1, a quarter of the 32 KiB L2.
    # Pass 1: every line misses everywhere (compulsory). Pass 2: an LRU L1
    # holding half the array has evicted every line before its reuse, so all
    # miss again; the L2 holds them all and hits.
    r = cachesched.simulate({"machine": {"preset": "teaching", "tlb": False}, "workload": sweep()})
    df = r.levels.set_index("level")
    assert df.loc["l1d", "accesses"] == 256 and df.loc["l1d", "misses"] == 256
    assert df.loc["l1d", "compulsory"] == 128
    assert df.loc["l2", "accesses"] == 256 and df.loc["l2", "misses"] == 128
    assert df.loc["l2", "compulsory"] == 128
    assert df.loc["llc", "accesses"] == 128 and df.loc["llc", "misses"] == 128
    # Additive timing: 256 instructions at CPI 1, 128 memory reads (100
    # cycles) and 128 L2 hits (10 cycles).
    assert r.summary["cycles"] == 256 + 128 * 100 + 128 * 10
    assert r.tasks.loc[0, "stall_cycles"] == 128 * 100 + 128 * 10


def test_hand_computed_remote_reads_on_a_two_node_slit():
    # Two sockets of one core, pages bound to node 1, a SLIT of 10/30: the
    # task on socket 0 reads 128 new lines from node 1 at 100 x 30 / 10 cycles
    # each; its twin on socket 1 reads its own 128 at the local 100.
    machine = {"preset": "teaching", "tlb": False, "sockets": 2, "cores_per_socket": 1, "l2": False, "llc": False,
               "memory": {"placement": {"bind": 1}, "distances": [[10, 30], [30, 10]], "latency_cycles": 100,
                          "frame_allocation": "sequential"}}
    tasks = [{"affinity": [c], "asid": c, "workload": sweep(passes=1)} for c in (0, 1)]
    r = cachesched.simulate({"machine": machine, "tasks": tasks})
    assert r.tasks.stall_cycles.tolist() == [128 * 300, 128 * 100]
    mem = r.memory.set_index("node")
    assert mem.loc[1, "reads"] == 256 and mem.loc[1, "remote_reads"] == 128
    assert mem.loc[0, ["reads", "remote_reads", "remote_writes"]].tolist() == [0, 0, 0]


def test_results_tables_and_exports(tmp_path):
    r = cachesched.simulate({"machine": {"preset": "teaching"}, "workload": sweep(passes=3)})
    assert set(r.levels.level) == {"l1d", "l2", "llc"}
    assert (r.levels.hits + r.levels.misses == r.levels.accesses).all()
    assert r.miss_ratio("l1d") == pytest.approx(1.0)
    caches = r.caches.set_index("path")
    assert list(caches.index) == ["socket0/llc", "socket0/core0/l1d", "socket0/core0/l2",
                                  "socket0/core1/l1d", "socket0/core1/l2"]
    assert caches.loc["socket0/core1/l1d", "load_hits"] + caches.loc["socket0/core1/l1d", "load_misses"] == 0
    assert len(r.tlbs) == 4 and r.tlbs.hits.sum() + r.tlbs.misses.sum() > 0
    again = cachesched.Results.from_json(r.to_json())
    assert again.summary == r.summary
    out = r.save(tmp_path / "out")
    assert json.loads((out / "results.json").read_text())["summary"] == r.summary
    assert pq.read_table(out / "levels.parquet").num_rows == len(r.levels)
    assert set(r.to_arrow()) == {"tasks", "cores", "levels", "intervals", "windows", "slices", "events", "caches", "tlbs",
                                 "memory"}


def test_a_server_s_requests_table_says_when_each_waited_and_ended(tmp_path):
    # One core, no stalls: a request of 100 one-cycle references every
    # 1,000 cycles beside a load that runs 300-instruction quanta. A request
    # waits for the load's quantum to end (quanta end at 100 + 300 j), then
    # runs 100 cycles.
    flat = {"sockets": 1, "cores_per_socket": 1, "l1d": {"latency_cycles": 0}, "l2": False, "llc": False,
            "tlb": False, "memory": {"latency_cycles": 0}}
    server = {"workload": sweep(passes=1, lines=100), "requests": {"count": 5, "interval": 1000, "arrivals": "fixed"}}
    load = {"workload": sweep(passes=1, lines=1000), "background": True}
    r = cachesched.simulate({"machine": flat, "tasks": [server, load], "run": {"switch_cycles": 0},
                             "scheduler": {"kind": "round-robin", "params": {"quantum": "300 instr"}}})
    t, starts = 0, []
    for k in range(5):
        while t < 1000 * k:
            t += 300
        starts.append(t)
        t += 100
    req = r.requests
    assert req.arrival.tolist() == [1000 * k for k in range(5)]
    assert req.start.tolist() == starts and (req.end - req.start == 100).all()
    assert (req.response == req.end - req.arrival).all() and (req.wait == req.start - req.arrival).all()
    assert r.summary["cycles"] == starts[-1] + 100, "the load does not outlast the server"
    out = r.save(tmp_path / "out")
    assert pq.read_table(out / "requests.parquet").column("response").to_pylist() == req.response.tolist()


def test_same_config_and_seed_give_identical_results():
    cfg = {"seed": 7, "workload": {"kind": "zipf", "params": {"working_set_bytes": "4MiB", "accesses": 50_000}}}
    a, b = cachesched.simulate(cfg), cachesched.simulate(cfg)
    assert a.to_json() == b.to_json()  # everything but the host's timings
    assert a.host.keys() == {"wall_seconds", "accesses_per_second", "threads"}
    c = cachesched.simulate({**cfg, "seed": 8})
    assert c.summary["cycles"] != a.summary["cycles"]


def test_progress_callback_reports_monotonically_to_the_total():
    seen = []
    cachesched.simulate({"workload": {"kind": "uniform", "params": {"accesses": 3_000_000}}},
                        progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (3_000_000, 3_000_000)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert len(seen) >= 3


def test_overrides_and_sections_merge_over_the_file(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('[machine]\npreset = "teaching"\n[workload]\nkind = "stream"\n')
    cfg = cachesched.resolve(path, overrides=["machine.l2.ways=8", "run.max_accesses=100"],
                             workload={"params": {"accesses": 1000}})
    assert cfg["machine"]["l2"]["ways"] == 8
    assert cfg["machine"]["l2"]["size_bytes"] == 32 * 1024
    assert cfg["run"]["max_accesses"] == 100
    assert cfg["workload"]["params"]["accesses"] == 1000
    r = cachesched.simulate(path, overrides=["run.max_accesses=100"])
    assert r.summary["accesses"] == 100


def test_warmup_discards_the_first_references():
    w = sweep(passes=2)
    r = cachesched.simulate({"machine": {"preset": "teaching", "tlb": False}, "workload": w,
                             "run": {"warmup_accesses": 128}})
    df = r.levels.set_index("level")
    assert r.summary["accesses"] == 128 and r.summary["warmup_accesses"] == 128
    assert df.loc["l2", "misses"] == 0, "the warm L2 holds the whole array"


def test_every_preset_runs():
    names = [p["name"] for p in cachesched.presets()]
    assert {"standard", "teaching", "server-2s", "migration-tlb", "migration-l2", "migration-prefetch", "ets",
            "numa-sunfire6800", "region-clovertown", "region-westmere", "locking-cl1"} <= set(names)
    for name in names:
        r = cachesched.simulate({"machine": {"preset": name},
                                 "workload": {"kind": "zipf", "params": {"accesses": 2000}}})
        assert r.summary["accesses"] == 2000, name
