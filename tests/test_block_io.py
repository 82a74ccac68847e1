"""VMs' block I/O in the engine (``[[tasks]] io`` with ``[block_cache]``;
docs/cache-locking.md, "VMs under the scheduler"): a task issues its block
trace's requests as it runs, each after its think time, and sleeps while
the hypervisor's block cache serves it. Checked against a plain model of
one core's round-robin queue with tasks that think and sleep, and the
per-VM hits and misses against libCacheSim's LRU of each share."""

from __future__ import annotations

import json
import random
from collections import deque

import pytest

from cachesched import ConfigError, simulate
from conftest import lru_misses

FILETIME = 128166372003061629  # an MSR timestamp: 100 ns ticks
HIT_US, MISS_US = 10.37, 123.1  # odd figures: no ties between wake-ups and slice ends
IO = {"fc_us": 0.0, "controller_us": MISS_US, "seek_us": 0.0, "rotation_us": 0.0}


def write_msr(path, requests):
    """``requests``: (time, offset, bytes, response), times in 100 ns ticks."""
    path.write_text("".join(f"{FILETIME + t},vm,0,Read,{o},{n},{r}\n" for t, o, n, r in requests))
    return path


def random_trace(seed, n, hot):
    rng = random.Random(seed)
    out, t = [], 0
    for _ in range(n):
        t += rng.randrange(200, 3000)
        response = rng.randrange(0, 150)
        out.append((t, rng.randrange(hot) * 4096, 4096 * rng.choice((1, 1, 2)), response))
        t += response
    return out


def think_us(trace):
    """A request's think time: from the previous one's recorded end to its start."""
    out, end = [], None
    for t, _, _, r in trace:
        out.append(0 if end is None else max(0, t - end) / 10)
        end = t + r if end is None else max(end, t + r)
    return out


def service_us(trace, share):
    """Each request's time in the cache: a plain LRU of ``share`` blocks."""
    lru, out = [], []
    for _, o, n, _ in trace:
        cost = 0.0
        for b in range(o // 4096, (o + n - 1) // 4096 + 1):
            if b in lru:
                lru.remove(b)
                cost += HIT_US
            else:
                if len(lru) == share:
                    lru.pop(0)
                cost += MISS_US
            lru.append(b)
        out.append(cost)
    return out


def round_robin(tasks, quantum):
    """One core, a FIFO queue, slices of ``quantum``; each task thinks
    (runs) and sleeps on its requests in turn: the time each request is
    served, per task."""
    queue, wakes, t = deque(range(len(tasks))), [], 0.0
    state = [{"next": 0, "left": tasks[k][0][0], "served": []} for k in range(len(tasks))]

    def wake_until(now):
        for w in sorted(x for x in wakes if x[0] <= now):
            wakes.remove(w)
            queue.append(w[1])

    while queue or wakes:
        if not queue:
            t = min(wakes)[0]
            wake_until(t)
            continue
        k = queue.popleft()
        think, service = tasks[k]
        s = state[k]
        if s["next"] == len(think):
            continue  # its last request served: it ends
        run = min(s["left"], quantum)
        t += run
        s["left"] -= run
        wake_until(t)
        if s["left"] > 0:
            queue.append(k)
            continue
        end = t + service[s["next"]]
        s["served"].append(end)
        s["next"] += 1
        s["left"] = think[s["next"]] if s["next"] < len(think) else 0
        wakes.append((end, k))
    return [s["served"] for s in state]


def config(traces, scheduler, cores=1, **cache):
    return {
        "machine": {"preset": "standard", "sockets": 1, "cores_per_socket": cores},
        "scheduler": scheduler,
        "run": {"switch_cycles": 0, "migration_cycles": 0},
        "tasks": [{"vm": i, "io": str(p), "workload": {"kind": "stream", "params": {"working_set_bytes": "8KiB"}}}
                  for i, p in enumerate(traces)],
        "block_cache": {"cache_bytes": 2 * 24 * 4096, "policy": "static", "hit_us": HIT_US, "io": IO,
                        "interval": "200us", **cache},
    }


def test_one_vm_alone_thinks_then_waits_for_each_request(tmp_path):
    trace = random_trace(1, 60, 40)
    path = write_msr(tmp_path / "a.csv", trace)
    cfg = config([path], {"kind": "round-robin"}, cache_bytes=24 * 4096)
    vm = simulate(cfg).block_vms.iloc[0]
    think, service = think_us(trace), service_us(trace, 24)
    misses = sum(c > HIT_US * 2 for c in service)
    assert vm.requests == 60 and vm.misses >= misses
    # Alone on its core, a VM's requests are served after all its think
    # time and all the service before them: completion is their sum (the
    # engine stops within one reference of each request's due time).
    expected = sum(think) + sum(service)
    assert vm.completion_s * 1e6 == pytest.approx(expected, rel=1e-4)
    assert vm.mean_response_ms * 1e3 == pytest.approx(sum(service) / 60, rel=1e-9)


def test_vms_sharing_a_core_issue_requests_as_the_queue_lets_them_run(tmp_path):
    traces = [random_trace(s, 40, 30) for s in (2, 3, 4)]
    paths = [write_msr(tmp_path / f"vm{i}.csv", t) for i, t in enumerate(traces)]
    cfg = config(paths, {"kind": "round-robin", "params": {"quantum": "47.3us"}}, cache_bytes=3 * 16 * 4096)
    got = simulate(cfg).block_vms
    tasks = [(think_us(t), service_us(t, 16)) for t in traces]
    served = round_robin(tasks, 47.3)
    for vm, ends in zip(got.itertuples(), served):
        assert vm.completion_s * 1e6 == pytest.approx(ends[-1], rel=1e-4)
        alone = sum(tasks[vm.vm][0]) + sum(tasks[vm.vm][1])
        assert ends[-1] > alone  # the others' turns delay it


def test_vms_under_credit_each_hit_in_their_own_share(tmp_path):
    traces = [random_trace(s, 80, hot) for s, hot in ((5, 20), (6, 60), (7, 35))]
    paths = [write_msr(tmp_path / f"vm{i}.csv", t) for i, t in enumerate(traces)]
    cfg = config(paths, {"kind": "hypervisor", "params": {"policy": "credit", "slice": "100us"}},
                 cache_bytes=3 * 24 * 4096)
    res = simulate(cfg)
    alone = [simulate(config([p], {"kind": "round-robin"}, cache_bytes=24 * 4096)).block_vms.iloc[0] for p in paths]
    for vm, t, solo in zip(res.block_vms.itertuples(), traces, alone):
        blocks = [b for _, o, n, _ in t for b in range(o // 4096, (o + n - 1) // 4096 + 1)]
        assert (vm.blocks, vm.misses) == (len(blocks), lru_misses(blocks, 24))
        assert vm.task == vm.vm and vm.completion_s > solo.completion_s
    # The credit scheduler shares one core: the last VM ends after the
    # CPU time of all three and the service of its own requests.
    cpu = sum(sum(think_us(t)) for t in traces) * 1e-6
    assert res.block_vms.completion_s.max() > cpu
    # Intervals close in the run's time: every share stays within the cache.
    assert (res.block_series.groupby("time_s").alloc.sum() <= 72).all()


def test_dynamic_shares_move_and_runs_repeat_exactly(tmp_path):
    busy = [(i * 400, (i % 90) * 4096, 4096, 50) for i in range(300)]
    idle = [(i * 9000, (i % 4) * 4096, 4096, 50) for i in range(15)]
    paths = [write_msr(tmp_path / "busy.csv", busy), write_msr(tmp_path / "idle.csv", idle)]
    cfg = config(paths, {"kind": "hypervisor", "params": {"policy": "credit"}}, cores=2, policy="dynamic",
                 cache_bytes=2 * 48 * 4096, thresholds=[{"requests": 1, "misses": 1, "lines": 8},
                                                        {"requests": 1, "misses": 1, "lines": 8}])
    first, again = simulate(cfg), simulate(cfg)
    assert first.to_json() == again.to_json()
    vms = first.block_vms
    assert vms.peak_alloc[0] > 48 and vms.final_alloc[1] < 48  # the idle VM gave blocks to the busy one
    assert vms.final_alloc.sum() + json.loads(first.to_json())["block_cache"]["pool"] == 96


@pytest.mark.parametrize("change, key", [
    (lambda c: c.pop("block_cache"), "block_cache"),
    (lambda c: [t.pop("io") for t in c["tasks"]], "block_cache"),
    (lambda c: c["tasks"][0].update(background=True), "tasks[0].io"),
    (lambda c: c["block_cache"].update(shares=[30, 30]), "block_cache.shares"),
    (lambda c: c["block_cache"].update(interval="0s"), "block_cache.interval"),
])
def test_bad_block_io_configs_name_the_key(tmp_path, change, key):
    path = write_msr(tmp_path / "a.csv", random_trace(1, 5, 4))
    cfg = config([path, path], {"kind": "round-robin"})
    change(cfg)
    with pytest.raises(ConfigError) as e:
        simulate(cfg)
    assert key in str(e.value)


def test_a_malformed_trace_line_is_named(tmp_path):
    path = write_msr(tmp_path / "a.csv", random_trace(1, 5, 4))
    path.write_text(path.read_text() + "128166372003061629,vm,0,Read,12x,4096,0\n")
    with pytest.raises(Exception, match=r"a\.csv.*line 6"):
        simulate(config([path], {"kind": "round-robin"}))
