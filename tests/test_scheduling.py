"""Many tasks on many cores: TOML and Python configs end to end, schedulers
written in Python, the scheduling tables, and every scheduling config error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cachesched
from cachesched import ConfigError, SimulationError

ROOT = Path(__file__).resolve().parents[1]

# Nothing stalls: each reference costs its one instruction, one cycle.
FLAT = {"l1d": {"latency_cycles": 0}, "l2": False, "llc": False, "tlb": False, "memory": {"latency_cycles": 0}}


def flat(cores: int = 1) -> dict:
    return {**FLAT, "cores_per_socket": cores}


def stream(n: int, i: int) -> dict:
    return {"kind": "stream", "params": {"accesses": n, "instructions_per_access": 1, "base_addr": (i + 1) << 32}}


def tasks(*lengths: int) -> list[dict]:
    return [{"workload": stream(n, i)} for i, n in enumerate(lengths)]


def switches(r: cachesched.Results) -> list[tuple[int, int, int, str]]:
    ev = r.events
    ev = ev[ev.event.isin(["switch_in", "switch_out"])]
    return list(zip(ev.time, ev.core, ev.task, ev.event))


def test_a_toml_config_with_replicated_tasks(tmp_path):
    path = tmp_path / "sched.toml"
    path.write_text("""
seed = 3
[machine]
preset = "server-2s"

[[tasks]]
name = "db"
count = 3
asid = 7
workload = { kind = "zipf", params = { accesses = 20_000, working_set_bytes = "512KiB" } }

[[tasks]]
workload = { kind = "stream", params = { accesses = 10_000 } }
count = 2
affinity = [0, 1]

[scheduler]
kind = "balance"
params = { quantum = "20us", period = "100us" }

[stats]
interval = "10K instr"
window = "5K instr"

[run]
switch_cycles = 200
""")
    r = cachesched.simulate(path)
    t = r.tasks
    assert list(t.name) == ["db.0", "db.1", "db.2", "task3", "task4"]
    assert list(t.asid) == [7, 7, 7, 0, 1], "copies share an explicit asid; the others get the lowest free ones"
    assert r.summary["tasks"] == 5
    assert t.instructions.sum() == r.summary["instructions"] == r.intervals.instructions.sum()
    assert r.cores.accesses.sum() == r.summary["accesses"]
    assert (t.overhead_cycles == 200 * t.switches).all()
    ev = r.events
    assert list(ev.columns) == ["time", "core", "task", "event", "from_core", "to_core", "locality", "timing"]
    assert set(ev.event) <= {"switch_in", "switch_out", "migrate", "tick"}
    for task in (3, 4):
        assert set(ev[(ev.task == task) & (ev.event == "switch_in")].core) <= {0, 1}, "affinity"
    ticks = ev[ev.event == "tick"]
    period = round(100e3 * r.config["machine"]["frequency_ghz"])  # 100 us in cycles
    assert ticks.core.isna().all() and list(ticks.time) == [period * (k + 1) for k in range(len(ticks))]
    assert r.summary["switches"] == (ev.event == "switch_in").sum()
    assert r.config["scheduler"]["params"]["imbalance"] == 2, "defaults are filled in"
    assert "switches" in r.format()


def test_forced_migrations_fill_the_windows_table():
    r = cachesched.simulate({
        "machine": {"preset": "server-2s"},
        "tasks": [{"workload": {"kind": "zipf", "params": {"accesses": 30_000, "instructions_per_access": 1}}}],
        "scheduler": {"kind": "forced", "params": {"every": "4K instr", "timing": "delayed"}},
        "stats": {"window": "4K instr"},
    })
    w = r.windows
    assert len(w) == r.summary["migrations"] == 30_000 // 4000
    assert (w.locality == "remote").all() and (w.timing == "delayed").all()
    assert (w[w.complete].instructions == 4000).all()
    assert {"l2_misses", "l2_mpki", "cpi"} <= set(w.columns)


def test_the_old_single_workload_config_still_runs_one_task():
    r = cachesched.simulate({"workload": stream(5000, 0)})
    assert len(r.tasks) == 1 and r.summary["switches"] == 1
    assert r.config["scheduler"]["kind"] == "round-robin"


class HighestFirst:
    """Always run the waiting task with the highest id; count the calls."""

    def __init__(self):
        self.picks = 0

    def pick(self, core, state):
        self.picks += 1
        waiting = [t["task"] for t in state["tasks"] if t["state"] == "waiting"]
        return max(waiting) if waiting else None

    def quantum(self, task, core, state):
        return "300 instr"


def test_a_python_scheduler_decides_every_switch():
    policy = HighestFirst()
    r = cachesched.simulate({"machine": flat(), "tasks": tasks(1000, 1000)}, scheduler=policy)
    # Task 1 keeps winning until it finishes (its slices end at 300, 600,
    # 900 and it goes on each time), then task 0 runs.
    assert switches(r) == [(0, 0, 1, "switch_in"), (1000, 0, 1, "switch_out"),
                           (1000, 0, 0, "switch_in"), (2000, 0, 0, "switch_out")]
    assert policy.picks == 1 + 4 + 4, "once at the start, then at each slice end"
    assert r.config["scheduler"] == {"kind": "python", "params": {"class": "HighestFirst", "quantum": "10ms"}}


class WatchesBarriers:
    """The default decisions, noting the threads it sees waiting at a barrier."""

    def __init__(self):
        self._blocked = set()

    def pick(self, core, state):
        self._blocked |= {t["task"] for t in state["tasks"] if t["state"] == "blocked"}
        assert all(t["task"] not in q for q in state["queues"] for t in state["tasks"] if t["state"] == "blocked")
        return state["queues"][core][0] if state["queues"][core] else None


def test_a_python_scheduler_sees_threads_waiting_at_a_barrier():
    # Two EP threads, the second on a node whose memory is remote: the first
    # waits for it at every barrier, off every queue.
    policy = WatchesBarriers()
    cachesched.simulate({
        "machine": {"sockets": 2, "cores_per_socket": 1, "l2": False, "llc": False, "tlb": False,
                    "memory": {"placement": {"bind": 0}, "latency_cycles": 20, "remote_latency_cycles": 200}},
        "tasks": [{"count": 2, "asid": 1, "workload": {"kind": "ep", "params": {
            "threads": 2, "pairs": 4096, "batch": 512, "iterations": 2, "accesses": 1 << 40}}}],
        "scheduler": {"kind": "python"}}, scheduler=policy)
    assert policy._blocked == {0}


class PileThenSpread:
    """Place every task on core 0; at each tick move one waiting task to an idle core."""

    period = 500

    def __init__(self):
        self.ticks = []

    def place(self, task, state):
        return 0

    def balance(self, state):
        self.ticks.append(state["now"])
        idle = [c for c, t in enumerate(state["running"]) if t is None and not state["queues"][c]]
        waiting = state["queues"][0]
        return [(waiting[0], idle[0])] if idle and waiting else []


def test_python_placement_and_balancing():
    policy = PileThenSpread()
    r = cachesched.simulate({"machine": flat(2), "tasks": tasks(1000, 1000, 1000),
                             "scheduler": {"kind": "python", "params": {"quantum": "400 instr"}}},
                            scheduler=policy)
    ev = r.events
    # Core 0 runs task 0 until 400, then task 1; at the tick at 500 task 2
    # (waiting on core 0, never run) moves to idle core 1 and starts there.
    assert switches(r)[:4] == [(0, 0, 0, "switch_in"), (400, 0, 0, "switch_out"), (400, 0, 1, "switch_in"),
                               (500, 1, 2, "switch_in")]
    moved = ev[ev.event == "migrate"]
    assert ((moved.from_core == 0) & (moved.to_core == 1) & (moved.timing == "delayed")).all()
    assert policy.ticks[:2] == [500, 1000]
    assert r.summary["instructions"] == 3000


class Raises:
    def pick(self, core, state):
        raise KeyError("no such queue")


class PicksNonsense:
    def __init__(self, answer):
        self.answer = answer

    def pick(self, core, state):
        return self.answer


class BadQuantum:
    def quantum(self, task, core, state):
        return "2 fortnights"


def test_python_scheduler_errors_come_back_as_exceptions():
    cfg = {"machine": flat(), "tasks": tasks(100, 100)}
    with pytest.raises(KeyError, match="no such queue"):
        cachesched.simulate(cfg, scheduler=Raises())
    with pytest.raises(TypeError):
        cachesched.simulate(cfg, scheduler=PicksNonsense("first"))
    with pytest.raises(SimulationError, match="scheduler 'python' picked task 99 for core 0, which is not waiting"):
        cachesched.simulate(cfg, scheduler=PicksNonsense(99))
    with pytest.raises(ValueError, match="unknown time unit"):
        cachesched.simulate(cfg, scheduler=BadQuantum())
    with pytest.raises(SimulationError, match="leaves every core idle while tasks wait"):
        cachesched.simulate(cfg, scheduler=PicksNonsense(None))


def config_errors(cfg) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as info:
        cachesched.simulate(cfg)
    return [(e["loc"], e["code"]) for e in info.value.errors()]


W = {"kind": "stream"}


@pytest.mark.parametrize("cfg, loc, code", [
    ({"tasks": []}, "tasks", "out_of_range"),
    ({"tasks": [{"workload": W, "count": 0}]}, "tasks[0].count", "out_of_range"),
    ({"tasks": [{"workload": W, "asid": 4096}]}, "tasks[0].asid", "out_of_range"),
    ({"tasks": [{"workload": W, "affinity": [0, 8]}]}, "tasks[0].affinity[1]", "out_of_range"),
    ({"tasks": [{"workload": W, "affinity": []}]}, "tasks[0].affinity", "out_of_range"),
    ({"tasks": [{"workload": W, "cores": [0]}]}, "tasks[0].cores", "unknown_field"),
    ({"tasks": [{"count": 2}]}, "tasks[0].workload", "missing_field"),
    ({"tasks": [{"workload": {"kind": "zipf", "params": {"exponent": "steep"}}}]},
     "tasks[0].workload.params.exponent", "invalid_type"),
    ({"workload": W, "tasks": [{"workload": W}]}, "tasks", "invalid_value"),
    ({"workload": W, "scheduler": {"kind": "lottery"}}, "scheduler.kind", "unknown_kind"),
    ({"workload": W, "scheduler": {"kind": "round-robin", "params": {"quantum": 0}}},
     "scheduler.params.quantum", "out_of_range"),
    ({"workload": W, "scheduler": {"kind": "round-robin", "params": {"quantum": "0ms"}}},
     "scheduler.params.quantum", "out_of_range"),
    ({"workload": W, "scheduler": {"kind": "round-robin", "params": {"quantum": "soon"}}},
     "scheduler.params.quantum", "invalid_value"),
    ({"workload": W, "scheduler": {"kind": "round-robin", "params": {"quantum": -5}}},
     "scheduler.params.quantum", "invalid_value"),
    ({"workload": W, "scheduler": {"kind": "round-robin", "params": {"quantom": "1ms"}}},
     "scheduler.params.quantom", "unknown_field"),
    ({"workload": W, "scheduler": {"kind": "balance", "params": {"period": "1M instr"}}},
     "scheduler.params.period", "invalid_value"),
    ({"workload": W, "scheduler": {"kind": "balance", "params": {"imbalance": 0}}},
     "scheduler.params.imbalance", "out_of_range"),
    ({"workload": W, "scheduler": {"kind": "forced"}}, "scheduler.params.destination", "out_of_range"),
    ({"workload": W, "machine": {"sockets": 2}, "scheduler": {"kind": "forced", "params": {"destination": "local"}}},
     "scheduler.params.destination", "out_of_range"),
    ({"workload": W, "scheduler": {"kind": "forced", "params": {"timing": "soon"}}},
     "scheduler.params.timing", "unknown_variant"),
    ({"tasks": [{"workload": W}], "scheduler": {"kind": "hypervisor"}}, "tasks[0].vm", "missing_field"),
    ({"tasks": [{"workload": W, "vm": 0}, {"workload": W, "vm": 1}],
      "scheduler": {"kind": "hypervisor", "params": {"vcpus": [1, 2, 3]}}}, "scheduler.params.vcpus", "invalid_value"),
    ({"tasks": [{"workload": W, "vm": 0}], "scheduler": {"kind": "hypervisor", "params": {"vcpus": 0}}},
     "scheduler.params.vcpus", "out_of_range"),
    ({"tasks": [{"workload": W, "vm": 0}], "scheduler": {"kind": "hypervisor", "params": {"policy": "fair"}}},
     "scheduler.params.policy", "unknown_variant"),
    ({"tasks": [{"workload": W, "vm": 0}, {"workload": W, "vm": 1}],
      "scheduler": {"kind": "hypervisor", "params": {"policy": "credit", "weight": [256, 0]}}},
     "scheduler.params.weight", "out_of_range"),
    ({"tasks": [{"workload": W, "vm": 0}], "scheduler": {"kind": "hypervisor",
                                                        "params": {"policy": "credit", "slice": "5M instr"}}},
     "scheduler.params.slice", "invalid_value"),
    ({"workload": W, "scheduler": {"kind": "python"}}, "scheduler.kind", "python_only"),
    ({"workload": W, "stats": {"interval": "1ms"}}, "stats.interval", "invalid_value"),
    ({"workload": W, "stats": {"window": 1000}}, "stats.window", "invalid_value"),
    ({"workload": W, "run": {"switch_cycles": -1}}, "run.switch_cycles", "invalid_value"),
])
def test_scheduling_config_errors_name_the_key(cfg, loc, code):
    assert (loc, code) in config_errors(cfg)


def test_a_scheduler_object_needs_the_python_kind():
    doc = json.dumps({"workload": W, "scheduler": {"kind": "balance"}})
    with pytest.raises(ConfigError, match="needs scheduler.kind = 'python'"):
        cachesched._core.simulate(doc, None, None, HighestFirst())


@pytest.mark.slow
def test_the_scheduling_example_runs(run_cli):
    proc = run_cli("run", str(ROOT / "examples" / "scheduling.toml"), "--set", "run.max_accesses=300000", check=True)
    assert "migrations" in proc.stdout


class Misspelled:
    def pik(self, core, state):  # meant pick: it would never be called
        return None


class Helper:
    def pick(self, core, state):
        return None

    def score(self, task):  # a public method the engine does not call
        return 0


class PeriodTypo:
    periode = "1ms"

    def balance(self, state):
        return []


class WithState:
    """Public state and private helpers are the policy's own business."""

    picks = 0
    period = "1ms"

    def _score(self, task):
        return task

    def pick(self, core, state):
        waiting = [t["task"] for t in state["tasks"] if t["state"] == "waiting"]
        return max(waiting, key=self._score) if waiting else None


@pytest.mark.parametrize("policy, words", [
    (Misspelled(), "Misspelled.pik is not a method the engine uses (did you mean pick?)"),
    (Helper(), "Helper.score is not a method the engine uses; hooks are place, pick, quantum, balance"),
    (PeriodTypo(), "PeriodTypo.periode is not an attribute the engine uses (did you mean period?)"),
])
def test_a_python_scheduler_with_an_unknown_hook_is_refused(policy, words):
    with pytest.raises(cachesched.ConfigError) as info:
        cachesched.simulate({"machine": flat(), "tasks": tasks(1000, 1000)}, scheduler=policy)
    assert words in str(info.value), str(info.value)
    assert info.value.errors()[0]["loc"] == "scheduler" and info.value.errors()[0]["code"] == "unknown_hook"


def test_public_state_and_private_helpers_are_allowed():
    r = cachesched.simulate({"machine": flat(), "tasks": tasks(1000, 1000)}, scheduler=WithState())
    assert r.summary["accesses"] == 2000
