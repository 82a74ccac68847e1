"""What the ETS study's experiments share: the scaled time base, the mixes
of suite programs, the run configuration, and the measures every table
takes from a run's ``slices`` table.

The spec's quantum Q is 2.5 ms = 10M cycles at 4 GHz; the suite's traces
are a few million instructions, so time is scaled down by ``Scale.factor``:
Q becomes 10M / factor cycles and Table 1's thresholds are divided by the
same factor (the same switch-miss stall as a share of a slice selects the
same group). The machine is the spec's (preset ``ets``). Times are then
reported in *spec milliseconds*: cycles / Q x 2.5.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import runs
from ..claims import claim, grade, pct  # noqa: F401 (the parts import them from here)
from ..page import method  # noqa: F401

Simulate = Callable[[Sequence[dict]], Sequence[object]]

#: The spec's base quantum, cycles at 4 GHz (2.5 ms), and Table 1.
SPEC_QUANTUM = 10_000_000
SPEC_MS = 2.5
THRESHOLDS = (1500, 4500, 10500)
MB = 1 << 20
#: The LLC policies the paper evaluates.
POLICIES = ("lru", "drrip", "ship")
#: Uniform slicing baselines, in quanta.
UTS = {"uts-2.5": 1, "uts-5": 2, "uts-10": 4}


@dataclass(frozen=True)
class Scale:
    """How far time is scaled down, how many tasks share a core, and the
    accesses each program's trace is cut to (None: whole)."""

    factor: int = 16
    mix_size: int = 4
    max_accesses: int | None = None

    @property
    def quantum(self) -> int:
        return SPEC_QUANTUM // self.factor

    @property
    def thresholds(self) -> list[int]:
        return [max(1, round(t / self.factor)) for t in THRESHOLDS]


#: A filler co-runner: one access per this many instructions over a 4 KiB
#: array, a time slice that costs almost nothing to simulate.
FILLER_INSTRUCTIONS = 4000
#: Worst cycles per access of a program (a miss to memory through every level).
WORST_ACCESS_CYCLES = 434


@dataclass(frozen=True)
class Mix:
    """Tasks sharing one core (or cores): suite programs, the first the
    application of interest, then ``fillers`` filler co-runners (which
    outlast the application of interest). ``cores`` gives each program's
    core (all on core 0 by default)."""

    programs: tuple[str, ...]
    fillers: int = 0
    cores: tuple[int, ...] | None = None

    @property
    def app(self) -> str:
        return self.programs[0]

    @property
    def names(self) -> list[str]:
        """Task names: the program, with ``#2``, ``#3`` for repeats, then
        ``filler1``, ``filler2``, ..."""
        seen: dict[str, int] = {}
        out = []
        for p in self.programs:
            seen[p] = seen.get(p, 0) + 1
            out.append(p if seen[p] == 1 else f"{p}#{seen[p]}")
        return out + [f"filler{i + 1}" for i in range(self.fillers)]


def mixes(programs: Sequence[str], size: int, *, fillers: bool = False) -> list[Mix]:
    """One mix per program as the application of interest: with
    ``fillers``, it and ``size - 1`` filler co-runners; else its co-runners
    are the next ``size - 1`` programs in cyclic order (repeating when there
    are fewer programs than places)."""
    if fillers:
        return [Mix((p,), fillers=size - 1) for p in programs]
    n = len(programs)
    return [Mix(tuple(programs[(i + j) % n] for j in range(size))) for i in range(n)]


def scheduler(kind: str, scale: Scale, elastic: str | None = None) -> dict:
    """``ets`` (only ``elastic`` follows its estimates) or a ``uts-*`` baseline."""
    if kind == "ets":
        return {"kind": "ets", "params": {"quantum": scale.quantum, "thresholds": scale.thresholds,
                                          "elastic": [elastic]}}
    return {"kind": "round-robin", "params": {"quantum": UTS[kind] * scale.quantum}}


def accesses(manifest: dict, scale: Scale) -> int:
    """Accesses of a program's trace in a run (cut to ``scale.max_accesses``)."""
    return min(manifest["accesses"], scale.max_accesses or manifest["accesses"])


def _filler(name: str, manifest: dict, scale: Scale) -> dict:
    n = accesses(manifest, scale)
    cycles = manifest["instructions"] * n // manifest["accesses"] + WORST_ACCESS_CYCLES * n
    return {"name": name, "workload": {"kind": "stream", "params": {
        "accesses": cycles // FILLER_INSTRUCTIONS + 1, "working_set_bytes": 4096, "stride_bytes": 64,
        "instructions_per_access": FILLER_INSTRUCTIONS}}}


def config(mix: Mix, manifests: dict[str, dict], kind: str, scale: Scale, *, policy: str = "lru",
           llc_bytes: int = 2 * MB, cores: int = 1, partition: bool = False, flush: bool = False,
           limit: int | None = None) -> dict:
    """One run of ``mix`` on the ``ets`` machine: the LLC's policy and size,
    the estimator (midpoint timing, 1/16 sample sets) and the LLC's
    switch-miss attribution always on, so that every run measures both the
    estimate and the actual. ``flush`` empties every cache level at each
    switch-in (the spec's methodology, §1.3-1.4); ``limit`` caps the run's
    accesses. ``manifests`` are the suite's, by program."""
    names = mix.names
    cut = {"limit": scale.max_accesses} if scale.max_accesses else {}
    tasks = [{"name": name, "workload": {"kind": "trace", "params": {"path": str(manifests[p]["trace"]), **cut}},
              **({"affinity": [mix.cores[i]]} if mix.cores else {})}
             for i, (p, name) in enumerate(zip(mix.programs, names))]
    tasks += [_filler(name, manifests[mix.app], scale) for name in names[len(mix.programs):]]
    mechanisms = [{"kind": "cs-estimator", "params": {"partition": partition}}]
    if flush:
        mechanisms.insert(0, {"kind": "cache-flush", "params": {"llc": True}})
    name = (f"ets/{'+'.join(names)}/{kind}/{policy}/{llc_bytes // MB}MB/c{cores}"
            f"{'/part' if partition else ''}{'/flush' if flush else ''}/s{scale.factor}")
    return {
        "name": name,
        "machine": {"preset": "ets", "cores_per_socket": cores, "attribution": ["llc"],
                    "llc": {"size_bytes": llc_bytes, "replacement": {"kind": policy}}},
        "tasks": tasks,
        "scheduler": scheduler(kind, scale, names[0]),
        "mechanisms": mechanisms,
        "stats": {"events": False},
        "run": {"max_accesses": limit} if limit else {},
    }


def limit(mix: Mix, manifests: dict[str, dict], scale: Scale) -> int:
    """Accesses of a run of programs only: as many per task as the mix's
    shortest trace has, so that little is simulated after the first task
    ends."""
    return len(mix.programs) * min(accesses(manifests[p], scale) for p in mix.programs)


def common(results) -> pd.DataFrame:
    """The run's schedules, named, up to the moment the first task ended
    (every co-runner still running: the traces do not rewind), each with
    its length in quanta (``k``)."""
    s = results.slices
    names = results.tasks.set_index("task").name
    s = s.assign(name=s.task.map(names))
    cutoff = s.groupby("task").end.max().min()
    return s[s.end <= cutoff]


def quanta(s: pd.DataFrame, scale: Scale) -> pd.Series:
    """Schedule lengths in whole quanta (the last reference may overshoot)."""
    return (s.length / scale.quantum).round().astype(int)


def group(estimate: float, thresholds: Sequence[int]) -> int:
    """Table 1: the slice, in quanta, an estimate selects (N <= t1: 1,
    ..., N > t_last: len(thresholds) + 1)."""
    return 1 + sum(estimate > t for t in thresholds)


def spec_ms(cycles: float, scale: Scale) -> float:
    """Cycles of a scaled run as spec milliseconds (Q = 2.5 ms)."""
    return cycles / scale.quantum * SPEC_MS


def geomean(values) -> float:
    v = np.asarray(list(values), dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return float(np.exp(np.log(v).mean())) if len(v) else float("nan")


#: Programs of the quick study (tiny traces: whole runs of 3M to 28M
#: instructions, recorded in seconds each).
QUICK_PROGRAMS = ("bzip2", "hmmer", "mcf", "omnetpp")
QUICK = Scale(factor=4, mix_size=4)
FULL = Scale(factor=4, mix_size=8)
#: What the traces are, by suite size: a part of every claim's reason.
TRACES = {"tiny": "whole runs of a few million instructions", "small": "windows of 2M accesses",
          "full": "windows of 30M accesses", "ref": "each program's heaviest SimPoint window (60M instructions)"}


def reason(ctx: Any) -> str:
    """What every claim's difference from the paper shares."""
    return f"open programs instead of SPEC CPU2006, {TRACES[ctx.size]}, time scaled down"


@dataclass(frozen=True)
class Setup:
    """What every part of one ETS study run uses: the programs, the time
    scale, and each program's suite manifest (its trace recorded once)."""

    programs: tuple[str, ...]
    scale: Scale
    manifests: dict[str, dict]


def setup(ctx: Any) -> Setup:
    """The run's :class:`Setup`: ``--programs`` or the study's choice (four
    programs quick, the suite's batch programs full), their traces recorded on first use."""
    if "ets" not in ctx.state:
        from ...workloads import suite

        programs = ctx.options.get("programs") or (QUICK_PROGRAMS if ctx.quick else suite.BATCH)
        ctx.state["ets"] = Setup(tuple(programs), QUICK if ctx.quick else FULL, runs.traces(ctx, programs))
    return ctx.state["ets"]


def simulator(ctx: Any, part: str) -> Simulate:
    """Runs of ``part`` through the study's store (equal configurations of two
    parts are one stored run)."""
    return runs.simulator(ctx, f"ets-{part}-{ctx.size}" + ("-quick" if ctx.quick else ""))


def notes(ctx: Any) -> str:
    """The page's lines on how the study was scaled."""
    if "ets" not in ctx.state:
        return ""
    s = setup(ctx)
    return (f"<p>{len(s.programs)} programs ({html.escape(', '.join(s.programs))}; {ctx.size} traces"
            f"{f', cut to {s.scale.max_accesses:,} accesses' if s.scale.max_accesses else ''}), time scaled down "
            f"{s.scale.factor}x (Q = {s.scale.quantum:,} cycles, Table 1 thresholds "
            f"{'/'.join(map(str, s.scale.thresholds))}), {s.scale.mix_size} tasks per core; times in spec ms "
            "(cycles / Q x 2.5). Methodology: docs/elastic-time-slicing.md, \u201cThe study\u201d.</p>")
