"""`region-scheduling` (seed 003): pages of a region mapped to one cache
domain, and a task micro-scheduled to the domain of the region it touches.
Checked against the timing model written out here: with TLBs off, a
reference costs its instructions plus the latency of the level that served
it, and each micro-schedule its fixed cost."""

import tomllib

import cachesched
import pytest
from cachesched import ConfigError

MiB = 1 << 20
BASE = 0x10_0000_0000  # where the latency kernel lays its regions out
USCHED = 47_600        # the default: Clovertown's measured micro-schedule


def preset(name: str) -> dict:
    text = next(p for p in cachesched.presets() if p["name"] == name)["toml"]
    return tomllib.loads(text)["machine"]


def memlat(S: int, A: int, caches: list | None, accesses: int = 300_000, **params):
    """Two regions of S bytes chased A loads at a time (spec E1), on
    Clovertown; ``caches``: each region's cache domain (``None`` in the list:
    opened where first touched), or no mechanism at all."""
    w = {"kind": "latency", "params": {"regions": 2, "region_bytes": S, "visit_accesses": A, "accesses": accesses}}
    cfg = {"machine": {"preset": "region-clovertown", "tlb": False}, "tasks": [{"workload": w}],
           "scheduler": {"kind": "pinned"}}
    if caches is not None:
        regions = [{"asid": 0, "start": BASE + i * S, "bytes": S, **({} if c is None else {"cache": c})}
                   for i, c in enumerate(caches)]
        cfg["mechanisms"] = [{"kind": "region-scheduling", "params": {"regions": regions, **params}}]
    return cachesched.simulate(cfg)


def counters(r) -> dict:
    m = r.mechanisms
    return m.iloc[0].to_dict() if len(m) else {"usched": 0, "opened": 0, "cycles": 0}


def modelled_cycles(r) -> int:
    """The run's cycles from its counts: instructions at CPI 1, each
    reference the latency of the level that served it, each micro-schedule
    and opening what the mechanism charged."""
    m = preset("region-clovertown")
    levels = r.levels.groupby("level")[["hits", "misses"]].sum()
    stall = (levels.loc["l1d", "hits"] * m["l1d"]["latency_cycles"] + levels.loc["llc", "hits"] * m["llc"]["latency_cycles"]
             + levels.loc["llc", "misses"] * m["memory"]["latency_cycles"])
    return int(r.summary["instructions"] + stall + counters(r)["cycles"])


def test_unification_wins_what_the_misses_say_when_two_regions_overflow_one_cache():
    # 2 x 3 MiB against 4 MiB caches: confined, the regions evict each other.
    S, A = 3 * MiB, 65536
    confined, unified = memlat(S, A, [0, 0]), memlat(S, A, [0, 1])
    for r in (confined, unified):
        assert r.summary["cycles"] == modelled_cycles(r)
    switches = 300_000 // A  # region switches in the run, each a micro-schedule when unified
    assert counters(unified)["usched"] == switches and counters(confined)["usched"] == 0
    assert unified.summary["migrations"] == switches
    # Each region keeps its cache: far fewer misses (beyond the cold ones,
    # only conflicts of a 3 MiB region in a 4 MiB cache), enough to pay the moves.
    llc = lambda r: r.levels.groupby("level").misses.sum()["llc"]
    assert llc(unified) < 0.6 * llc(confined)
    assert unified.summary["cycles"] < confined.summary["cycles"]


def test_unification_loses_exactly_the_usched_cost_when_both_regions_fit_one_cache():
    S, A = 1 * MiB, 65536
    confined, unified = memlat(S, A, [0, 0]), memlat(S, A, [0, 1])
    lv = lambda r: r.levels.groupby("level")[["hits", "misses"]].sum()
    assert lv(unified).equals(lv(confined))
    assert unified.summary["cycles"] - confined.summary["cycles"] == (300_000 // A) * USCHED
    # A cheaper micro-schedule (Westmere's 17,800 cycles) loses less.
    west = memlat(S, A, [0, 1], usched_time=17_800)
    assert west.summary["cycles"] - confined.summary["cycles"] == (300_000 // A) * 17_800


def test_a_region_without_a_cache_opens_where_it_is_first_touched():
    # Both open on domain 0, where the task starts: it never moves.
    r = memlat(1 * MiB, 65536, [None, None], open_time=1000)
    c = counters(r)
    assert (c["usched"], c["opened"], c["cycles"]) == (0, 2, 2000)
    assert r.summary["migrations"] == 0
    confined = memlat(1 * MiB, 65536, None)
    assert r.summary["cycles"] == confined.summary["cycles"] + 2000


def test_a_task_moved_to_a_domain_stays_there_under_a_balancing_scheduler():
    # Two processes start on domain 0's two cores; each one's region is on
    # domain 1. Each moves there at its first reference, and the balancer,
    # which would spread them over the idle cores of domain 0, may not take
    # them back: they share domain 1's two cores.
    w = {"kind": "latency", "params": {"regions": 1, "region_bytes": MiB, "visit_accesses": 4096, "accesses": 200_000}}
    regions = [{"asid": a, "start": BASE, "bytes": MiB, "cache": 1} for a in range(2)]
    r = cachesched.simulate({
        "machine": {"preset": "region-clovertown", "tlb": False},
        "tasks": [{"workload": w, "asid": a, "affinity": [0, 1, 2, 3]} for a in range(2)],
        "scheduler": {"kind": "balance", "params": {"quantum": "1ms", "period": "2ms"}},
        "mechanisms": [{"kind": "region-scheduling", "params": {"regions": regions}}]})
    assert counters(r)["usched"] == 2
    per_socket = preset("region-clovertown")["cores_per_socket"]
    for task, cores in r.slices.groupby("task").core.apply(list).items():
        assert cores[0] // per_socket == 0 and {c // per_socket for c in cores[1:]} == {1}, (task, cores)


@pytest.mark.parametrize("regions, key", [
    ([{"asid": 0, "start": BASE, "bytes": MiB, "cache": 2}], "mechanisms[0].params.regions[0].cache"),
    ([{"asid": 0, "start": BASE, "bytes": 0}], "mechanisms[0].params.regions[0].bytes"),
    ([{"asid": 0, "start": BASE, "bytes": MiB}, {"asid": 0, "start": BASE + 4096, "bytes": 4096}],
     "mechanisms[0].params.regions[1].start"),
])
def test_bad_regions_name_the_key(regions, key):
    w = {"kind": "latency", "params": {"accesses": 1000}}
    with pytest.raises(ConfigError) as e:
        cachesched.simulate({"machine": {"preset": "region-clovertown"}, "workload": w,
                             "mechanisms": [{"kind": "region-scheduling", "params": {"regions": regions}}]})
    assert key in str(e.value)


def regioned_memlat(S: int, A: int, accesses: int = 2_000_000, **regioning):
    w = {"kind": "latency", "params": {"regions": 2, "region_bytes": S, "visit_accesses": A, "accesses": accesses}}
    return cachesched.simulate({
        "machine": {"preset": "region-clovertown", "tlb": False}, "tasks": [{"workload": w}],
        "scheduler": {"kind": "pinned"},
        "mechanisms": [{"kind": "region-scheduling",
                        "params": {"regioning": {"period": "20ms", "phase": "10ms", **regioning}}}]})


def test_regioning_finds_memlats_two_regions_and_maps_them_to_the_two_caches():
    S, A = 3 * MiB, 65536
    r = regioned_memlat(S, A)
    c = counters(r)
    assert c["phases"] >= 1 and c["merges"] > 0 and c["usched"] > 0
    # Every condition holds: 6 MiB is more than one cache, less than both.
    assert (c["fallback_c1"], c["fallback_c2"], c["fallback_c3"]) == (0, 0, 0)
    pages = S // 4096
    first = BASE // 4096
    which = lambda vpn: (vpn - first) // pages  # memlat region of a page
    t = r.regions
    assert t.pages.sum() == 2 * pages and set(t.kind) <= {"regular", "seed"}
    # Each memlat region ends on one cache, the two on different caches: as
    # one regular region, or as the seeds of the one torn down last.
    caches = {m: set(t[t.region.map(which) == m].cache) for m in (0, 1)}
    assert all(len(v) == 1 for v in caches.values()) and caches[0] != caches[1]
    regular = t[t.kind == "regular"]
    assert len(regular) >= 1 and (regular.pages == pages).all()
    # Faster than both regions confined to one cache.
    w = {"kind": "latency", "params": {"regions": 2, "region_bytes": S, "visit_accesses": A, "accesses": 2_000_000}}
    confined = cachesched.simulate({"machine": {"preset": "region-clovertown", "tlb": False},
                                    "tasks": [{"workload": w}], "scheduler": {"kind": "pinned"}})
    assert r.summary["cycles"] < confined.summary["cycles"]
    # Same config, same regions.
    assert regioned_memlat(S, A).regions.equals(t)


def test_regioning_merges_nothing_a_task_does_not_come_back_to_soon():
    # A sweep over 16 MiB: a page is revisited a whole pass later, far more
    # than the merge time: every page stays its own seed region.
    w = {"kind": "stream", "params": {"working_set_bytes": "16MiB", "stride_bytes": 64, "accesses": 1_000_000}}
    r = cachesched.simulate({
        "machine": {"preset": "region-clovertown", "tlb": False}, "tasks": [{"workload": w}],
        "scheduler": {"kind": "pinned"},
        "mechanisms": [{"kind": "region-scheduling",
                        "params": {"regioning": {"period": "5ms", "phase": "5ms", "fallback": False}}}]})
    c = counters(r)
    assert c["phases"] >= 1 and c["touches"] > 0 and c["merges"] == 0
    assert set(r.regions.kind) == {"seed"}


@pytest.mark.parametrize("regioning, key", [
    ({"merge_distance": 0}, "mechanisms[0].params.regioning.merge_distance"),
    ({"idle_tick": 0}, "mechanisms[0].params.regioning.idle_tick"),
    ({"phase": 0}, "mechanisms[0].params.regioning.phase"),
    ({"stack": [{"asid": 0, "start": BASE, "bytes": MiB, "cache": 0}]}, "mechanisms[0].params.regioning.stack[0].cache"),
    ({"min_access": 0}, "mechanisms[0].params.regioning.min_access"),
    ({"history_bits": 65}, "mechanisms[0].params.regioning.history_bits"),
    ({"history_bits": 0}, "mechanisms[0].params.regioning.history_bits"),
    ({"max_access": 100}, "mechanisms[0].params.regioning.max_access"),
    # The preferred (partitioned) address space must be one a task has.
    ({"partition": [{"asid": 7, "caches": [0]}]}, "mechanisms[0].params.regioning.partition[0].asid"),
    ({"partition": [{"asid": 0, "caches": [2]}]}, "mechanisms[0].params.regioning.partition[0].caches[0]"),
])
def test_bad_regioning_names_the_key(regioning, key):
    with pytest.raises(ConfigError) as e:
        cachesched.simulate({"machine": {"preset": "region-clovertown"},
                             "workload": {"kind": "latency", "params": {"accesses": 1000}},
                             "mechanisms": [{"kind": "region-scheduling", "params": {"regioning": regioning}}]})
    assert key in str(e.value)


def test_code_and_stack_pages_are_global_and_never_move_a_task():
    # A uniform workload with instruction fetches in a 16 KiB code region
    # (4 pages), and its data range declared a stack: every page global.
    w = {"kind": "uniform", "params": {"working_set_bytes": "64KiB", "ifetch_fraction": 0.3, "accesses": 200_000}}
    stack = [{"asid": 0, "start": BASE, "bytes": "64KiB"}]
    r = cachesched.simulate({
        "machine": {"preset": "region-clovertown", "tlb": False}, "tasks": [{"workload": w}],
        "scheduler": {"kind": "pinned"},
        "mechanisms": [{"kind": "region-scheduling",
                        "params": {"regioning": {"period": "1ms", "phase": "1ms", "stack": stack}}}]})
    t = r.regions
    assert set(t.kind) == {"global"} and t.cache.isna().all()
    assert t.pages.sum() == 16 + 4
    c = counters(r)
    assert (c["usched"], c["opened"], c["touches"], c["merges"]) == (0, 0, 0, 0)


def fell_back(r) -> tuple:
    c = counters(r)
    return c["fallback_c1"], c["fallback_c2"], c["fallback_c3"]


def test_c2_a_working_set_that_fits_one_cache_goes_back_to_ordinary_scheduling():
    # 2 x 1 MiB fits one 4 MiB cache: at the first phase's end the regions
    # become global, no task moves, and the run costs what the confined one does.
    # (Runs of 1 MiB regions hit the cache: phases come sooner to fit the run.)
    r = regioned_memlat(1 * MiB, 65536, period="4ms", phase="2ms")
    assert fell_back(r) == (0, 1, 0)
    assert set(r.regions.kind) == {"global"} and counters(r)["usched"] == 0
    w = {"kind": "latency", "params": {"regions": 2, "region_bytes": MiB, "visit_accesses": 65536, "accesses": 2_000_000}}
    confined = cachesched.simulate({"machine": {"preset": "region-clovertown", "tlb": False},
                                    "tasks": [{"workload": w}], "scheduler": {"kind": "pinned"}})
    assert r.summary["cycles"] == confined.summary["cycles"]


def test_c2_judges_every_address_space_together_so_two_that_fit_one_cache_each_are_balanced():
    # Spec E3: two 4 MiB memlats and two 16 KiB ones, one per VM, the two
    # large ones placed on domain 0 by the credit scheduler. Each fits one
    # 4 MiB cache, together they do not: nothing falls back, the balancer
    # puts the two large ones on different domains, and they run as fast as
    # when pinned apart, far faster than together.
    def run(scheduler, mechanisms=(), affinity=None):
        tasks = []
        for i, S in enumerate([4 * MiB, 4 * MiB, 16 << 10, 16 << 10]):
            w = {"kind": "latency", "params": {"regions": 1, "region_bytes": S, "accesses": 1_500_000,
                                               "base_addr": BASE + (i << 32)}}
            tasks.append({"workload": w, "asid": i, **({"affinity": [affinity[i]]} if affinity else {"vm": i})})
        return cachesched.simulate({"machine": {"preset": "region-clovertown", "tlb": False}, "tasks": tasks,
                                    "scheduler": scheduler, "mechanisms": list(mechanisms)})
    credit = {"kind": "hypervisor", "params": {"policy": "credit"}}
    mech = {"kind": "region-scheduling", "params": {"regioning": {"period": "5ms", "phase": "1ms",
                                                                  "scan_period": "1ms"}}}
    regioned = run(credit, [mech])
    assert fell_back(regioned) == (0, 0, 0)
    t = regioned.regions
    large = {a: set(t[t.asid == a].cache) for a in (0, 1)}
    assert all(len(v) == 1 for v in large.values()) and large[0] != large[1]
    together = run(credit).tasks.cycles[:2]
    apart = run({"kind": "pinned"}, affinity=[0, 2, 1, 3]).tasks.cycles[:2]
    assert (together > 1.5 * apart).all()
    assert (regioned.tasks.cycles[:2] < 1.1 * apart.max()).all()


def test_the_idle_cpu_rule_releases_a_task_that_waits_for_a_busy_domain_while_a_core_idles():
    # Spec 2.5. Two 4 MiB memlats start on domain 0, two long 16 KiB ones
    # keep domain 1's cores busy. The balancer maps one large memlat to
    # domain 1, where it waits (credit slices of 30 ms) while its old core
    # idles. With the rule, after two 10 ms points of that it is released
    # and runs again on domain 0 until the next balancing pass moves it
    # back; without, it waits.
    def run(idle: bool):
        tasks = []
        for i, (S, n) in enumerate([(4 * MiB, 1_000_000)] * 2 + [(16 << 10, 20_000_000)] * 2):
            w = {"kind": "latency", "params": {"regions": 1, "region_bytes": S, "accesses": n,
                                               "base_addr": BASE + (i << 32)}}
            tasks.append({"workload": w, "asid": i, "vm": i})
        mech = {"kind": "region-scheduling", "params": {"regioning": {
            "period": "5ms", "phase": "1ms", "scan_period": "1ms", "idle_release": idle}}}
        return cachesched.simulate({"machine": {"preset": "region-clovertown", "tlb": False}, "tasks": tasks,
                                    "scheduler": {"kind": "hypervisor", "params": {"policy": "credit"}},
                                    "mechanisms": [mech]})
    tick = 30_000_000  # 10 ms at 3 GHz
    for idle in (True, False):
        r = run(idle)
        ev = r.events[r.events.task == 0]
        ins = ev[ev.event == "switch_in"]
        moved = int(ev[(ev.event == "switch_out") & (ev.time > 0)].time.iloc[0])  # its micro-schedule
        there = int(ins[ins.core >= 2].time.iloc[0])  # it first runs on domain 1
        meanwhile = ins[(ins.time > moved) & (ins.time < there)]
        if idle:
            assert counters(r)["idle_releases"] == 1
            assert len(meanwhile) and (meanwhile.core < 2).all() and (meanwhile.time >= moved + tick).all()
        else:
            assert counters(r)["idle_releases"] == 0 and meanwhile.empty


def test_c3_a_working_set_that_overflows_every_cache_goes_back_to_ordinary_scheduling():
    r = regioned_memlat(6 * MiB, 65536)  # 12 MiB against 2 x 4 MiB
    assert fell_back(r) == (0, 0, 1)
    assert set(r.regions.kind) == {"global"}


@pytest.mark.parametrize("window, fails", [
    ({"min_access": 60_000}, False),   # about 65,536 references per micro-schedule: inside
    ({"min_access": 100_000}, True),   # too few per micro-schedule
    ({"max_access": 60_000}, True),    # too many: the gain is marginal
    ({"max_access": 100_000}, False),
])
def test_c1_references_per_micro_schedule_outside_the_window_go_back_to_ordinary_scheduling(window, fails):
    # Unified after the first phase, the task moves once per 65,536
    # references; the second phase's end judges that rate. (The merge
    # distance defaults to min_access: fixed here so that the regions stay
    # apart whatever the window.)
    r = regioned_memlat(3 * MiB, 65536, merge_distance=4096, **window)
    assert fell_back(r) == ((1, 0, 0) if fails else (0, 0, 0))
    if fails:
        assert set(r.regions.kind) == {"global"}
        # No move after the fall-back: the micro-schedules all came before.
        assert counters(r)["usched"] > 0


def test_without_fallback_a_fitting_working_set_is_unified_and_pays_for_it():
    # Visits of 65,536 references are far apart (merge_distance 4,096):
    # the two regions stay apart and are unified, for nothing.
    r = regioned_memlat(1 * MiB, 65536, period="4ms", phase="2ms", fallback=False)
    assert fell_back(r) == (0, 0, 0) and counters(r)["usched"] > 0
    confined = regioned_memlat(1 * MiB, 65536, period="4ms", phase="2ms")
    assert fell_back(confined) == (0, 1, 0)
    assert r.summary["cycles"] > confined.summary["cycles"]


class WatchCaches:
    """A Python policy that records, at each balancing pass, the cache
    domain each task is confined to."""

    period = 200_000

    def __init__(self):
        self.seen = set()

    def balance(self, state):
        self.seen |= {(t["task"], t["cache"]) for t in state["tasks"] if t["state"] != "finished"}
        return []


def test_a_python_policy_sees_the_domain_a_task_is_confined_to():
    policy = WatchCaches()
    w = {"kind": "latency", "params": {"regions": 1, "region_bytes": MiB, "visit_accesses": 4096, "accesses": 100_000}}
    cachesched.simulate({
        "machine": {"preset": "region-clovertown", "tlb": False}, "tasks": [{"workload": w}],
        "scheduler": {"kind": "python"},
        "mechanisms": [{"kind": "region-scheduling",
                        "params": {"regions": [{"asid": 0, "start": BASE, "bytes": MiB, "cache": 1}]}}]},
        scheduler=policy)
    # It starts on domain 0, moves to domain 1 at its first reference.
    assert (0, 1) in policy.seen and policy.seen <= {(0, None), (0, 1)}


def test_without_per_cache_page_tables_a_move_rewrites_the_entries_of_both_domains():
    # Each move closes the 256 pages of the region left and opens the 256
    # of the region entered: 512 entries at pte_time each, on top of usched.
    S, A = 1 * MiB, 65536
    per_cache = memlat(S, A, [0, 1])
    shared = memlat(S, A, [0, 1], page_tables="shared", pte_time=100)
    moves = counters(shared)["usched"]
    assert moves == counters(per_cache)["usched"] == 300_000 // A
    assert counters(shared)["switch_cycles"] == moves * 512 * 100
    assert shared.summary["cycles"] - per_cache.summary["cycles"] == moves * 512 * 100
    assert counters(per_cache)["switch_cycles"] == 0
    with pytest.raises(ConfigError) as e:
        memlat(S, A, [0, 1], page_tables="both")
    assert "mechanisms[0].params.page_tables" in str(e.value)


def test_a_partition_keeps_each_address_spaces_regions_on_its_domains():
    # Two processes that would each unify their two regions; partitioned,
    # process 0 keeps domain 0 and process 1 domain 1 (the source's
    # isolation), wherever their tasks start.
    w = {"kind": "latency", "params": {"regions": 2, "region_bytes": 3 * MiB, "visit_accesses": 65536,
                                       "accesses": 2_000_000}}
    part = [{"asid": 0, "caches": [0]}, {"asid": 1, "caches": [1]}]
    r = cachesched.simulate({
        "machine": {"preset": "region-clovertown", "tlb": False},
        "tasks": [{"workload": w, "asid": a} for a in range(2)],
        "scheduler": {"kind": "pinned"},
        "mechanisms": [{"kind": "region-scheduling",
                        "params": {"regioning": {"period": "20ms", "phase": "10ms", "fallback": False,
                                                 "partition": part}}}]})
    t = r.regions[r.regions.kind != "global"]
    assert set(t[t.asid == 0].cache) == {0} and set(t[t.asid == 1].cache) == {1}
    per_socket = preset("region-clovertown")["cores_per_socket"]
    ev = r.events[r.events.event == "switch_in"]
    for task in (0, 1):
        cores = ev[ev.task == task].core.tolist()
        # After at most one move, each runs only on its process's domain.
        assert {c // per_socket for c in cores[1:]} <= {task}, (task, cores)


def test_bad_partitions_name_the_key():
    for partition, key in [([{"asid": 0, "caches": []}], "regioning.partition[0].caches"),
                           ([{"asid": 0, "caches": [5]}], "regioning.partition[0].caches[0]"),
                           ([{"asid": 0, "caches": [0]}, {"asid": 0, "caches": [1]}], "regioning.partition[1].asid")]:
        with pytest.raises(ConfigError) as e:
            cachesched.simulate({"machine": {"preset": "region-clovertown"},
                                 "workload": {"kind": "latency", "params": {"accesses": 1000}},
                                 "mechanisms": [{"kind": "region-scheduling",
                                                 "params": {"regioning": {"partition": partition}}}]})
        assert f"mechanisms[0].params.{key}" in str(e.value)


def test_each_scan_records_the_pages_touched_since_the_last():
    # No stalls and an instruction per reference: the address space's
    # virtual time is its reference count, so scan k (every 1,000 cycles)
    # sees the pages of references 1,000 (k - 1) + 1 to 1,000 k.
    flat = {"sockets": 1, "cores_per_socket": 1, "l1d": {"latency_cycles": 0}, "l2": False, "llc": False,
            "tlb": False, "memory": {"latency_cycles": 0}}
    w = {"kind": "stream", "params": {"working_set_bytes": 40 * 4096, "stride_bytes": 512, "accesses": 12_000,
                                      "instructions_per_access": 1, "base_addr": BASE}}
    r = cachesched.simulate({"machine": flat, "tasks": [{"workload": w}], "scheduler": {"kind": "pinned"},
                             "mechanisms": [{"kind": "region-scheduling", "params": {"regioning": {
                                 "period": 5000, "phase": 2500, "scan_period": 1000, "fallback": False,
                                 "series": True}}}]})
    s = r.series
    assert (s.mechanism == 0).all() and (s.asid == 0).all()
    seen = s[s.name == "accessed"].groupby("time").key.apply(set)
    pages = [(BASE + (i * 512) % (40 * 4096)) // 4096 for i in range(12_000)]
    expected = {1000 * k: set(pages[1000 * (k - 1):1000 * k]) for k in range(1, 13)}
    assert seen.to_dict() == expected
    # One loads row per scan and domain; the one phase that ended (5,000 to
    # 7,500 cycles of CPU time; the next ends after the run) is recorded.
    assert list(s[s.name == "load"].time) == list(expected)
    phase = s[s.name.isin(["merges", "teardowns", "regions", "seeds", "global_pages"])]
    assert len(phase) == 5 and set(phase.time) == {7500}
    c = counters(r)
    assert phase.set_index("name").value["merges"] == c["merges"]


def test_the_phase_series_adds_up_to_the_counters_and_the_regions():
    r = regioned_memlat(3 * MiB, 65536, series=True)
    s, c = r.series, counters(r)
    by = lambda name: s[s.name == name]
    assert len(by("merges")) == c["phases"] and by("merges").value.sum() == c["merges"]
    assert by("teardowns").value.sum() == c["teardowns"] and by("mapped").value.sum() == c["mapped"]
    # Without history, nothing is recorded.
    assert regioned_memlat(3 * MiB, 65536).series.empty
