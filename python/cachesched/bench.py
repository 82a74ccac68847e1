"""The throughput benchmark: our engine against pycachesim on one fixed trace.

``cachesched bench`` generates (once, then reuses) a fixed synthetic trace
and times, in the same command so that machine noise hits both alike:

1. our engine on the standard machine (L1D 32 KiB 8-way, L2 1 MiB 16-way,
   LLC 8 MiB 16-way, two-level TLB, LRU), reading the ``.cst`` trace, its
   caches on one thread (the scenarios' baseline), and as it runs by
   default (its caches split by set over two threads where the host
   allows, ``run.split_sets``);
2. our engine with pycachesim's semantics (same caches, no TLB), whose hit
   and miss counts must equal pycachesim's;
3. pycachesim's batched ``loadstore`` API on the same accesses;
4. a scheduling scenario on the same accesses: 64 tasks (each a slice of
   the trace) on 2 sockets x 8 cores of the standard machine, round-robin
   with a 1 ms quantum and load balancing, with and without miss attribution
   on the L2 and the LLC;
5. a NUMA scenario on the same accesses: 16 threads of one process (each a
   slice of the trace) bound on 4 sockets of 4 cores with a node each,
   their caches coherent (MESI) and the interconnect sampled;
6. the hypervisor block cache (seed 004) on the trace's loads: a 4 KiB
   4-way partition of 64 B blocks with 5% locked from the two-pass miss
   table and the 12-block victim buffer, beside the same partition as a
   plain LRU block cache (nothing locked, no buffer), in requests per second
   (decoding the trace included in both);
7. the floor (``cachesched_core::floor``, docs/performance.md): the
   leanest simulator of the standard machine, timed beside the engine's
   machine on the same accesses decoded in memory (at most 10M of them),
   on one thread and split over three; its counts must equal the engine's;
   and the engine's machine with a single task's caches split by set over
   two threads (``run.split_sets``), whose counts must equal it too;
8. the host instructions per access, counted by valgrind's callgrind on
   2M accesses (or the benchmark's, if fewer) of the single task: the
   simulation thread's (inside the engine's run) and all the work's (the
   whole process, everything on one thread, less a run of one access),
   which noise does not touch;
9. the resident memory of the single task streaming the benchmark trace,
   and a trace a tenth as long, each in a process of its own.

With ``--repeat``, runs 1, 4 and 5 take turns (the best of each counts), so a
change in the host's load between repeats moves their ratio less.

It prints accesses per second for each and the ratios. Figures are recorded
in docs/performance.md with the command that produced them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from . import reference, trace
from .simulate import simulate

def workload(accesses: int) -> dict:
    """The benchmark's workload table for a trace of ``accesses`` references.

    A loop body of ten memory instructions, as a program's inner loop: four
    walk three 2 MiB arrays with an 8-byte stride (``a[i]``, ``a[i+1]``,
    ``b[i]`` loaded, ``c[i]`` stored) and six access a 32 MiB heap of 64-byte
    elements with Zipf popularity (exponent 1.5), two of them stores. So half
    the accesses are Zipf and half stream, 30% are stores, and every
    instruction is 3 instructions after the previous one. Over 50M accesses
    on the standard machine it misses in the L1D on 7.7% of accesses, in the
    L2 on 4.7% and in the LLC on 1.7% (MPKI 26, 16 and 6): the locality of a
    memory-intensive program.
    """
    def walk(array: int, store: bool = False, start: int = 0) -> dict:
        return {"stream": {"array": array, "stride_bytes": 8, "start_bytes": start}, "store": store,
                "instructions": 3}

    def heap(store: bool = False, offset: int | str = "random") -> dict:
        return {"zipf": {"heap": 0, "offset": offset}, "store": store, "instructions": 3}

    return {
        "kind": "loop",
        "params": {
            "accesses": accesses,
            "arrays": [{"size_bytes": "2MiB"}] * 3,
            "heaps": [{"working_set_bytes": "32MiB", "exponent": 1.5, "element_bytes": 64}],
            "sites": [walk(0), heap(), walk(1), heap(), heap(True, 0), walk(2, True), heap(), heap(), heap(True, 8),
                      walk(0, start=8)],
        },
    }


#: Cache geometry of the standard machine, (size, ways) top down.
GEOMETRY = [(32 << 10, 8), (1 << 20, 16), (8 << 20, 16)]


def bench_trace(accesses: int, cache_dir: Path) -> Path:
    """The benchmark trace of ``accesses`` references, generated on first use."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    # The name carries a digest of the definition, so a changed benchmark
    # never reuses an old trace.
    digest = hashlib.sha256(json.dumps(workload(accesses), sort_keys=True).encode()).hexdigest()[:10]
    path = cache_dir / f"bench-{accesses}-{digest}.cst"
    if path.exists():
        try:
            if trace.info(path)["summary"]["accesses"] == accesses:
                return path
        except Exception:  # a stale or broken file is simply regenerated
            pass
    tmp = path.with_suffix(".tmp")
    trace.generate(workload(accesses), tmp, seed=2026)
    tmp.replace(path)
    return path


def _ours(path: Path, machine: dict, **run) -> tuple[float, object, float]:
    return _timed({"machine": machine, "workload": {"kind": "trace", "params": {"path": str(path)}}, "run": run})


def _pycachesim(path: Path, accesses: int, chunk: int = 1 << 20) -> tuple[float, float, dict]:
    """Seconds inside pycachesim's ``loadstore`` only, seconds end to end
    (reading the trace and building its argument lists too), and its counts."""
    sim, levels = reference.hierarchy(GEOMETRY)
    inside = 0.0
    start_all = time.perf_counter()
    for start in range(0, accesses, chunk):
        runs = reference.loadstore_runs(trace.read(path, skip=start, limit=chunk))
        t = time.perf_counter()
        sim.loadstore(runs, length=8)
        inside += time.perf_counter() - t
    return inside, time.perf_counter() - start_all, reference.counts(levels)


#: Accesses of the callgrind count (the issue's figure).
CALLGRIND_ACCESSES = 2_000_000
#: Most accesses the floor holds in memory (24 bytes each).
FLOOR_ACCESSES = 10_000_000
#: Runs one single-task simulation of the trace ``argv[1]``, limited to
#: ``argv[2]`` accesses, with decoding and classification on threads of
#: their own unless ``argv[3]`` is ``one-thread``; the caches on one thread
#: (``run.split_sets`` off: the counts are of the work, not of how it is
#: spread, and a thread waiting for the other would count its spinning).
_SINGLE = ("import sys, cachesched; one = sys.argv[3:] == ['one-thread']; cachesched.simulate({'workload': "
           "{'kind': 'trace', 'params': {'path': sys.argv[1]}}, 'run': {'max_accesses': int(sys.argv[2]), "
           "'prefetch': not one, 'classify_thread': not one, 'split_sets': False}})")


def _callgrind(path: Path, accesses: int, toggle: str | None) -> int:
    """Host instructions callgrind counts in a process that simulates
    ``accesses`` of ``path``: inside functions matching ``toggle`` only
    (threads as by default), or all of them (everything on one thread,
    so that no thread's waiting is counted)."""
    args = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    if toggle:
        args.append(f"--toggle-collect={toggle}")
    # Python's start-up the same in every run: one hash seed, no bytecode written.
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run(args + [sys.executable, "-c", _SINGLE, str(path), str(accesses)]
                          + ([] if toggle else ["one-thread"]), capture_output=True, text=True, check=True, env=env)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if not found:
        raise RuntimeError(f"callgrind printed no count: {done.stderr[-500:]}")
    return int(found.group(1).replace(",", ""))


def instructions_per_access(path: Path, accesses: int) -> dict[str, float]:
    """Host instructions per access of the single task on the standard
    machine: on the simulation thread (inside ``Engine::run``; decoding and
    miss classification run on threads of their own), and all of the work
    (the whole process, everything on one thread, less one that simulates
    a single access)."""
    thread = _callgrind(path, accesses, "*Engine*run*")
    whole = _callgrind(path, accesses, None) - _callgrind(path, 1, None)
    return {"simulation_thread": thread / accesses, "process": whole / (accesses - 1)}


def resident_mib(path: Path, accesses: int) -> float:
    """Peak resident memory of a process that simulates ``accesses`` of
    ``path``, in MiB: its own high-water mark since it started (the
    process's ``ru_maxrss`` would also count the parent it was forked from)."""
    peak = "; print(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])"
    done = subprocess.run([sys.executable, "-c", _SINGLE + peak, str(path), str(accesses)],
                          capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1]) / 1024  # kB


#: Tasks of the scheduling scenario.
TASKS = 64


def _slices(path: Path, accesses: int, n: int, name: str) -> list[dict]:
    """``n`` tasks, the ``i``-th reading the ``i``-th ``1/n`` of the trace."""
    per = accesses // n
    return [{"name": f"{name}{i}", "workload": {"kind": "trace", "params": {
        "path": str(path), "skip": i * per, "limit": per}}} for i in range(n)]


def _cpu_seconds() -> float:
    """CPU time of this process so far, every thread's."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _timed(config: dict) -> tuple[float, object, float]:
    """Seconds of wall time a simulation takes, its results, and its CPU seconds."""
    start, cpu = time.perf_counter(), _cpu_seconds()
    results = simulate(config)
    return time.perf_counter() - start, results, _cpu_seconds() - cpu


def scheduling_config(path: Path, accesses: int, attribution: bool) -> dict:
    """The scheduling scenario: ``TASKS`` tasks, each reading its own slice
    of the benchmark trace, on 16 cores with balancing."""
    return {
        "machine": {"preset": "standard", "sockets": 2, "cores_per_socket": 8,
                    "attribution": ["l2", "llc"] if attribution else []},
        "tasks": _slices(path, accesses, TASKS, "slice"),
        "scheduler": {"kind": "balance", "params": {"quantum": "1ms", "period": "4ms"}},
    }


def region_config(path: Path, accesses: int) -> dict:
    """The region-scheduling scenario: the benchmark trace as one task on
    the standard machine split into two cache domains of one core, under
    ``region-scheduling`` as a user runs it: regions found at run time (a
    phase of 1 ms every 4 ms of its CPU time, accessed bits scanned every
    1 ms), falling back when regioning does not pay. Every reference goes
    through the mechanism's gate."""
    regioning = {"period": "4ms", "phase": "1ms", "scan_period": "1ms"}
    return {"machine": {"preset": "standard", "sockets": 2},
            "workload": {"kind": "trace", "params": {"path": str(path)}},
            "mechanisms": [{"kind": "region-scheduling", "params": {"regioning": regioning}}]}


#: Threads of the NUMA scenario, and their nodes.
THREADS, NODES = 16, 4


def numa_config(path: Path, accesses: int) -> dict:
    """The NUMA scenario: ``THREADS`` threads of one process, each reading
    its own slice of the benchmark trace (the same arrays and heap: shared
    lines), bound over 4 sockets of 4 cores with a node each, their caches
    kept coherent and the interconnect sampled every 1024th transaction."""
    threads = [{**t, "asid": 1, "affinity": [i]} for i, t in enumerate(_slices(path, accesses, THREADS, "thread"))]
    return {
        "machine": {"preset": "standard", "sockets": NODES, "cores_per_socket": THREADS // NODES,
                    "memory": {"remote_latency_cycles": 300}, "sampler": {"mode": "interval", "period": 1024}},
        "tasks": threads,
        "scheduler": {"kind": "pinned"},
    }


def run(accesses: int = 50_000_000, repeat: int = 1, with_pycachesim: bool = True,
        cache_dir: Path | None = None, out=print) -> dict:
    """Run the benchmark; returns the figures (also printed through ``out``)."""
    cache_dir = cache_dir or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "cachesched"
    out(f"benchmark trace: {accesses:,} accesses (a loop of Zipf and stream accesses, 30% stores) ...")
    path = bench_trace(accesses, cache_dir)
    info = trace.info(path)["summary"]
    out(f"  {path} ({info['bytes_per_access']:.2f} bytes/access)")
    figures: dict = {"accesses": accesses, "bytes_per_access": info["bytes_per_access"],
                     "load_average": os.getloadavg()[0], "cpus": os.cpu_count()}

    # The single task and the scenarios in turn, the best of each counting:
    # a change in the host's load between repeats then hits all three alike.
    runs: dict[str, list[tuple[float, object, float]]] = {"single": [], "single_split": [], "scheduling": [],
                                                    "scheduling_attribution": [], "numa": [], "region": []}
    for _ in range(repeat):
        # The scenarios' baseline keeps its caches on one thread, as they do.
        runs["single"].append(_ours(path, {"preset": "standard"}, split_sets=False))
        runs["single_split"].append(_ours(path, {"preset": "standard"}))
        runs["scheduling"].append(_timed(scheduling_config(path, accesses, False)))
        runs["scheduling_attribution"].append(_timed(scheduling_config(path, accesses, True)))
        runs["numa"].append(_timed(numa_config(path, accesses)))
        runs["region"].append(_timed(region_config(path, accesses)))
    best = {key: min(timings, key=lambda r: r[0]) for key, timings in runs.items()}
    seconds, results, _ = best["single"]
    figures["ours_tlb"] = accesses / seconds
    levels = results.levels.groupby("level")[["accesses", "misses"]].sum()
    figures["miss_ratio"] = {lv: float(row.misses / row.accesses) for lv, row in levels.iterrows()}
    out(f"cachesched, standard machine with TLBs: {figures['ours_tlb'] / 1e6:8.1f} M accesses/s")
    seconds, split, _ = best["single_split"]
    figures["single_split"] = accesses / seconds
    figures["single_split_ratio"] = figures["single_split"] / figures["ours_tlb"]
    out(f"the same, as run by default on this host ({split.host['threads']}): {figures['single_split'] / 1e6:5.1f} "
        f"M accesses/s, {figures['single_split_ratio']:.2f} x")

    for attribution, key in ((False, "scheduling"), (True, "scheduling_attribution")):
        seconds, sched, cpu = best[key]
        figures[key] = sched.summary["accesses"] / seconds
        figures[f"{key}_ratio"] = figures[key] / figures["ours_tlb"]
        # However its work were spread, it could not take less wall time
        # than its CPU time over the host's CPUs.
        figures[f"{key}_cpu_seconds"] = cpu
        figures[f"{key}_bound"] = bound = best["single"][0] * figures["cpus"] / cpu
        what = "with attribution (L2, LLC)" if attribution else "without attribution"
        out(f"scheduling, {TASKS} tasks on 16 cores, {what + ':':<27} {figures[key] / 1e6:5.1f} M accesses/s, "
            f"{figures[f'{key}_ratio']:.2f} x single-task ({sched.summary['switches']:,} switches, "
            f"{sched.summary['migrations']:,} migrations); its CPU time {cpu * 1e9 / accesses:.0f} ns per access, "
            f"so at most {bound:.2f} x on {figures['cpus']} CPUs")

    seconds, numa, _ = best["numa"]
    figures["numa"] = numa.summary["accesses"] / seconds
    figures["numa_ratio"] = figures["numa"] / figures["ours_tlb"]
    traffic = numa.traffic
    share = traffic.sampled.sum() / traffic[["read_shared", "read_own", "upgrade", "writeback"]].to_numpy().sum()
    out(f"NUMA, {THREADS} threads of one process on {NODES} nodes, coherent, sampled: {figures['numa'] / 1e6:5.1f} "
        f"M accesses/s, {figures['numa_ratio']:.2f} x single-task ({traffic.cache_to_cache.sum():,} "
        f"cache-to-cache transfers, {share:.2%} of transactions sampled)")

    seconds, region, _ = best["region"]
    figures["region"] = region.summary["accesses"] / seconds
    figures["region_ratio"] = figures["region"] / figures["ours_tlb"]
    m = region.mechanisms.iloc[0]
    fell = "fell back" if m[["fallback_c1", "fallback_c2", "fallback_c3"]].sum() else "did not fall back"
    out(f"region scheduling, one task on 2 cache domains, regions found at run time: {figures['region'] / 1e6:5.1f} "
        f"M accesses/s, {figures['region_ratio']:.2f} x single-task ({int(m.usched):,} micro-schedules, "
        f"{int(m.merges):,} merges, {fell})")

    from . import hcache

    def block(**params) -> tuple[float, int]:
        start = time.perf_counter()
        requests = int(hcache.run([path], size_bytes=4096, ways=4, **params).accesses.iloc[0])
        return time.perf_counter() - start, requests

    # Short runs: the two take turns, the best of at least three each.
    pairs = [(block(), block(lock_fraction=0.05, victim_buffer=12)) for _ in range(max(3, repeat))]
    (plain_s, requests), (locked_s, _) = min(p[0] for p in pairs), min(p[1] for p in pairs)
    figures["block_cache_lru"] = requests / plain_s
    figures["block_cache_locked"] = requests / locked_s
    figures["block_cache_ratio"] = figures["block_cache_locked"] / figures["block_cache_lru"]
    out(f"hypervisor block cache, 5% locked + victim buffer: {figures['block_cache_locked'] / 1e6:5.1f} M requests/s, "
        f"{figures['block_cache_ratio']:.2f} x a plain LRU block cache ({figures['block_cache_lru'] / 1e6:.1f} M/s; "
        f"{requests:,} loads)")

    from . import _core

    shorter = bench_trace(min(accesses, FLOOR_ACCESSES), cache_dir)
    floor = json.loads(_core.floor_run(str(shorter), max(repeat, 2)))
    figures["floor"] = floor
    figures["engine_floor_ratio"] = floor["engine_ns"] / floor["floor_ns"]
    out(f"the floor, {floor['accesses']:,} accesses in memory: engine's machine {floor['engine_ns']:.1f} ns/access, "
        f"floor {floor['floor_ns']:.1f} ns ({figures['engine_floor_ratio']:.2f} x the floor); the floor on three "
        f"threads {floor['halves_ns']:.1f} ns; decoding {floor['decoding_ns']:.1f} ns; counts equal")
    figures["split_ratio"] = floor["engine_ns"] / floor["engine_split_ns"]
    out(f"a single task's caches split by set over two threads, in memory: {floor['engine_split_ns']:.1f} ns/access, "
        f"{figures['split_ratio']:.2f} x the engine's machine on one thread; counts equal")
    if shutil.which("valgrind"):
        counted_accesses = min(accesses, CALLGRIND_ACCESSES)
        small = bench_trace(counted_accesses, cache_dir)
        figures["instructions_per_access"] = counted = instructions_per_access(small, counted_accesses)
        out(f"host instructions per access (callgrind, {counted_accesses:,} accesses): "
            f"{counted['simulation_thread']:.0f} on the simulation thread, {counted['process']:.0f} in all "
            "(decoding and classification included)")
    else:
        out("host instructions per access: valgrind is not installed (apt-get install valgrind)")
    tenth, whole = resident_mib(bench_trace(accesses // 10, cache_dir), accesses // 10), resident_mib(path, accesses)
    figures["resident_mib"] = {"tenth": tenth, "whole": whole, "ratio": whole / tenth}
    out(f"resident memory streaming a trace: {whole:.0f} MiB for {accesses:,} accesses, {tenth:.0f} MiB for a "
        f"trace a tenth as long ({whole / tenth:.2f} x)")

    equivalent = reference.equivalent_machine(GEOMETRY)
    seconds, same, _ = min((_ours(path, equivalent) for _ in range(repeat)), key=lambda r: r[0])
    figures["ours_pycachesim_semantics"] = accesses / seconds
    out(f"cachesched, pycachesim's semantics:     {figures['ours_pycachesim_semantics'] / 1e6:8.1f} M accesses/s")

    if with_pycachesim:
        try:
            import cachesim  # noqa: F401
        except ImportError:
            out("pycachesim is not installed (pip install pycachesim): skipping the comparison")
            return figures
        inside, end_to_end, counts = min((_pycachesim(path, accesses) for _ in range(repeat)), key=lambda r: r[0])
        figures["pycachesim"] = accesses / inside
        figures["pycachesim_end_to_end"] = accesses / end_to_end
        figures["counts_agree"] = reference.our_counts(same, 3) == counts
        out(f"pycachesim, inside its batched loadstore: {figures['pycachesim'] / 1e6:6.1f} M accesses/s")
        out(f"pycachesim, from the trace file:          {figures['pycachesim_end_to_end'] / 1e6:6.1f} M accesses/s "
            "(reading it and building loadstore's lists included)")
        out(f"ratio, with TLBs / pycachesim inside:   {figures['ours_tlb'] / figures['pycachesim']:8.1f} x")
        out(f"ratio, same semantics / pycachesim inside: "
            f"{figures['ours_pycachesim_semantics'] / figures['pycachesim']:5.1f} x")
        out(f"ratio, same semantics / pycachesim from the file: "
            f"{figures['ours_pycachesim_semantics'] / figures['pycachesim_end_to_end']:5.1f} x")
        out(f"hit and miss counts equal pycachesim's: {'yes' if figures['counts_agree'] else 'NO'}")
    out("miss ratios: " + ", ".join(f"{lv} {r:.4f}" for lv, r in figures["miss_ratio"].items()))
    out(f"(load average {figures['load_average']:.2f} on {figures['cpus']} CPUs)")
    return figures


def main_json(figures: dict) -> str:
    """The figures as JSON (for docs and scripts)."""
    return json.dumps(figures, indent=2)


#: The simulated cache of the MRC benchmark: the standard machine's L2 geometry.
MRC_CACHE = (1 << 20, 16)
#: Sizes per curve in the MRC benchmark (the issue's figure).
MRC_SIZES = 20


def mrc_run(accesses: int = 50_000_000, repeat: int = 1, cache_dir: Path | None = None, sample: float = 0.01,
            out=print) -> dict:
    """The MRC benchmark: one simulation of one cache size against one-pass
    curves over ``MRC_SIZES`` sizes, on the benchmark trace, in one process.

    The simulation is a one-level LRU cache of ``MRC_CACHE`` (1 MiB 16-way,
    1024 sets) on the machine of :func:`cachesched.missratio.equivalent_machine`.
    The curves: set-associative with the same 1024 sets (1 to 20 ways,
    64 KiB to 1.25 MiB, the simulated size among them), fully associative
    (20 sizes, 64 KiB to 1.25 MiB), and fully associative sampled at
    ``sample``. The simulated size's miss ratio must equal the curve's.
    """
    from .missratio import equivalent_machine, mrc

    cache_dir = cache_dir or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "cachesched"
    out(f"benchmark trace: {accesses:,} accesses ...")
    path = bench_trace(accesses, cache_dir)
    size, ways = MRC_CACHE
    sets = size // (ways * 64)
    figures: dict = {"accesses": accesses, "load_average": os.getloadavg()[0], "cpus": os.cpu_count()}

    seconds, results, _ = min((_ours(path, equivalent_machine(size, ways)) for _ in range(repeat)), key=lambda r: r[0])
    caches = results.caches.set_index("level").loc["l1d"]
    sim_misses = int(caches.load_misses + caches.store_misses)
    figures["simulation_seconds"] = seconds
    out(f"one simulation, {size >> 10} KiB {ways}-way LRU:           {seconds:7.2f} s  "
        f"({accesses / seconds / 1e6:.1f} M accesses/s, {sim_misses:,} misses)")

    def timed(**kwargs) -> tuple[float, pd.DataFrame]:
        start = time.perf_counter()
        frame = mrc(path, **kwargs)
        return time.perf_counter() - start, frame

    unit = sets * 64
    runs = [
        ("set_associative", f"MRC, {sets} sets, {MRC_SIZES} associativities:", {"sets": sets}, unit),
        ("fully_associative", f"MRC, fully associative, {MRC_SIZES} sizes:", {}, 64 * 1024),
        ("sampled", f"MRC, fully associative, sampled at {sample:g}:", {"sample": sample}, 64 * 1024),
    ]
    for key, label, kwargs, step in runs:
        sizes = [step * w for w in range(1, MRC_SIZES + 1)]
        seconds, frame = min((timed(sizes=sizes, **kwargs) for _ in range(repeat)), key=lambda r: r[0])
        figures[f"{key}_seconds"] = seconds
        figures[f"{key}_ratio"] = seconds / figures["simulation_seconds"]
        out(f"{label:<44} {seconds:7.2f} s  = {figures[f'{key}_ratio']:.2f} x the simulation (target <= 2)")
        if key == "set_associative":
            at = frame.set_index("size_bytes").loc[size]
            figures["curve_equals_simulation"] = int(at.misses) == sim_misses
            out(f"  the curve at {size >> 10} KiB: {int(at.misses):,} misses; equal to the simulation's: "
                f"{'yes' if figures['curve_equals_simulation'] else 'NO'}")
        figures[f"{key}_miss_ratio_1MiB"] = float(frame.set_index("size_bytes").miss_ratio.get(size, float("nan")))
    out(f"(load average {figures['load_average']:.2f} on {figures['cpus']} CPUs)")
    return figures
