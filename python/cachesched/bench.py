"""The throughput benchmark: our engine against pycachesim on one fixed trace.

``cachesched bench`` generates (once, then reuses) a fixed synthetic trace
and times, in the same command so that machine noise hits both alike:

1. our engine on the standard machine (L1D 32 KiB 8-way, L2 1 MiB 16-way,
   LLC 8 MiB 16-way, two-level TLB, LRU), reading the ``.cst`` trace;
2. our engine with pycachesim's semantics (same caches, no TLB), whose hit
   and miss counts must equal pycachesim's;
3. pycachesim's batched ``loadstore`` API on the same accesses.

It prints accesses per second for each and the ratios. Figures are recorded
in docs/performance.md with the command that produced them.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from . import reference, trace
from .simulate import simulate

def workload(accesses: int) -> dict:
    """The benchmark's workload table for a trace of ``accesses`` references.

    A Zipf-popular heap (70% of accesses, 16 MiB of 64-byte elements, exponent
    1.5) interleaved with two sequential 8-byte streams over 4 MiB arrays
    (30%); 30% of accesses are stores, 3 instructions per access. On the
    standard machine this misses in the L1D on about 8% of accesses, in the
    L2 on 5% and in the LLC on 1.3% (MPKI 27, 16 and 4): the locality of a
    memory-intensive program, not of a cache-hostile kernel.
    """
    return {
        "kind": "mix",
        "params": {
            "accesses": accesses,
            "components": [
                {"weight": 0.7, "workload": {"kind": "zipf", "params": {
                    "working_set_bytes": "16MiB", "exponent": 1.5, "store_fraction": 0.3,
                    "base_addr": 0x10_0000_0000}}},
                {"weight": 0.3, "workload": {"kind": "stream", "params": {
                    "working_set_bytes": "4MiB", "stride_bytes": 8, "streams": 2, "store_fraction": 0.3,
                    "base_addr": 0x20_0000_0000}}},
            ],
        },
    }


#: Cache geometry of the standard machine, (size, ways) top down.
GEOMETRY = [(32 << 10, 8), (1 << 20, 16), (8 << 20, 16)]


def bench_trace(accesses: int, cache_dir: Path) -> Path:
    """The benchmark trace of ``accesses`` references, generated on first use."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / f"bench-{accesses}.cst"
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


def _ours(path: Path, machine: dict) -> tuple[float, object]:
    start = time.perf_counter()
    results = simulate({"machine": machine, "workload": {"kind": "trace", "params": {"path": str(path)}}})
    return time.perf_counter() - start, results


def _pycachesim(path: Path, accesses: int, chunk: int = 1 << 20) -> tuple[float, dict]:
    sim, levels = reference.hierarchy(GEOMETRY)
    elapsed = 0.0
    for start in range(0, accesses, chunk):
        runs = reference.loadstore_runs(trace.read(path, skip=start, limit=chunk))
        t = time.perf_counter()
        sim.loadstore(runs, length=8)
        elapsed += time.perf_counter() - t
    return elapsed, reference.counts(levels)


def run(accesses: int = 50_000_000, repeat: int = 1, with_pycachesim: bool = True,
        cache_dir: Path | None = None, out=print) -> dict:
    """Run the benchmark; returns the figures (also printed through ``out``)."""
    cache_dir = cache_dir or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "cachesched"
    out(f"benchmark trace: {accesses:,} accesses (Zipf + stream mix, 30% stores) ...")
    path = bench_trace(accesses, cache_dir)
    info = trace.info(path)["summary"]
    out(f"  {path} ({info['bytes_per_access']:.2f} bytes/access)")
    figures: dict = {"accesses": accesses, "bytes_per_access": info["bytes_per_access"],
                     "load_average": os.getloadavg()[0], "cpus": os.cpu_count()}

    best = min((_ours(path, {"preset": "standard"}) for _ in range(repeat)), key=lambda r: r[0])
    seconds, results = best
    figures["ours_tlb"] = accesses / seconds
    levels = results.levels.groupby("level")[["accesses", "misses"]].sum()
    figures["miss_ratio"] = {lv: float(row.misses / row.accesses) for lv, row in levels.iterrows()}
    out(f"cachesched, standard machine with TLBs: {figures['ours_tlb'] / 1e6:8.1f} M accesses/s")

    equivalent = reference.equivalent_machine(GEOMETRY)
    seconds, same = min((_ours(path, equivalent) for _ in range(repeat)), key=lambda r: r[0])
    figures["ours_pycachesim_semantics"] = accesses / seconds
    out(f"cachesched, pycachesim's semantics:     {figures['ours_pycachesim_semantics'] / 1e6:8.1f} M accesses/s")

    if with_pycachesim:
        try:
            import cachesim  # noqa: F401
        except ImportError:
            out("pycachesim is not installed (pip install pycachesim): skipping the comparison")
            return figures
        seconds, counts = min((_pycachesim(path, accesses) for _ in range(repeat)), key=lambda r: r[0])
        figures["pycachesim"] = accesses / seconds
        figures["counts_agree"] = reference.our_counts(same, 3) == counts
        out(f"pycachesim, batched loadstore API:      {figures['pycachesim'] / 1e6:8.1f} M accesses/s")
        out(f"ratio, with TLBs / pycachesim:          {figures['ours_tlb'] / figures['pycachesim']:8.1f} x")
        out(f"ratio, same semantics / pycachesim:     "
            f"{figures['ours_pycachesim_semantics'] / figures['pycachesim']:8.1f} x")
        out(f"hit and miss counts equal pycachesim's: {'yes' if figures['counts_agree'] else 'NO'}")
    out("miss ratios: " + ", ".join(f"{lv} {r:.4f}" for lv, r in figures["miss_ratio"].items()))
    out(f"(load average {figures['load_average']:.2f} on {figures['cpus']} CPUs)")
    return figures


def main_json(figures: dict) -> str:
    """The figures as JSON (for docs and scripts)."""
    return json.dumps(figures, indent=2)
