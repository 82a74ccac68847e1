"""Phase selection as SimPoint 3.0 does it: basic-block vectors from
valgrind's exp-bbv over fixed intervals of instructions, projected at
random to a few dimensions, clustered by k-means with the number of
clusters chosen by the Bayesian information criterion, and one
representative interval per cluster, weighted by its cluster's share of
the run (Hamerly, Perelman, Lau and Calder, "SimPoint 3.0: Faster and More
Flexible Program Analysis", JILP 2005).

A program's run is profiled once (:func:`profile`), the phases chosen
(:func:`choose`), and the chosen intervals recorded, each after a warm-up
prefix, into one trace whose threads are the windows
(:func:`cachesched.record.record` with ``windows``); results over it are
the windows' results weighted (:func:`estimate`). docs/suite.md,
"SimPoint windows".
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
# Imported with the module, before any program is profiled: importing it
# sets variables of this process's environment, which the programs inherit.
from sklearn.cluster import KMeans

from ..errors import RecordError

#: Instructions per interval, SimPoint's usual 10M.
INTERVAL = 10_000_000
#: Dimensions of the random projection (SimPoint 3.0's default, 15).
DIMS = 15
#: Most clusters tried (SimPoint 3.0's ``-maxK``).
MAX_K = 30
#: k-means runs per k, from different seeds (SimPoint 3.0's ``-numInitSeeds``).
SEEDS = 5
#: The smallest k whose BIC reaches this fraction of the range between the
#: worst and the best k is chosen (SimPoint 3.0's ``-bicThreshold``).
BIC_THRESHOLD = 0.9


@dataclass
class BBV:
    """A run's basic-block vectors: per interval, the instructions each basic
    block executed in it (exp-bbv's counts), and the run's total."""

    interval: int
    vectors: list[dict[int, int]]
    total_instructions: int

    def starts(self) -> list[int]:
        """The first instruction of each interval (exp-bbv's intervals need
        not be exactly ``interval`` long)."""
        sizes = [sum(v.values()) for v in self.vectors]
        return [0, *np.cumsum(sizes)[:-1].tolist()] if sizes else []


def read_bbv(path: str | Path, interval: int) -> BBV:
    """Parse exp-bbv's output file (``--bb-out-file``): a ``T`` line per
    interval of ``:block:count`` pairs, then comments with the totals."""
    vectors, total = [], None
    with open(path, encoding="ascii") as f:
        for n, line in enumerate(f, 1):
            if line.startswith("T"):
                try:
                    pairs = (p.split(":") for p in line[1:].split())
                    vectors.append({int(b): int(c) for _, b, c in pairs})
                except ValueError:
                    raise RecordError(f"{path}:{n}: not a basic-block vector line: {line[:60]!r}") from None
            elif "Total instructions:" in line:
                total = int(line.split(":")[1])
    if total is None:
        raise RecordError(f"{path}: no '# Total instructions' line: exp-bbv did not finish")
    return BBV(interval, vectors, total)


def profile(command: Sequence[str], interval: int = INTERVAL, *, cwd: str | Path | None = None,
            stdout=subprocess.DEVNULL, env: dict[str, str] | None = None) -> BBV:
    """Run ``command`` to its end under ``valgrind --tool=exp-bbv`` with
    intervals of ``interval`` instructions (in ``cwd``, with the environment
    ``env``, this process's if None); its basic-block vectors."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise RecordError("valgrind is not installed (or not on PATH); install it, e.g. `apt-get install valgrind`")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bb.out"
        done = subprocess.run([valgrind, "--tool=exp-bbv", f"--interval-size={interval}", f"--bb-out-file={out}",
                               "--log-file=/dev/null", *command], cwd=cwd, stdout=stdout, stderr=subprocess.PIPE,
                              env=env)
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace")[-2000:]
            raise RecordError(f"{command[0]} exited with status {done.returncode} under exp-bbv" +
                              (f"; it said:\n{said}" if said else ""))
        bbv = read_bbv(out, interval)
        # exp-bbv writes each other thread's vectors to bb.out.<thread>;
        # lackey's instruction count, which places the windows, is the
        # whole run's, so work on other threads would shift them.
        others = sum(read_bbv(f, interval).total_instructions for f in Path(tmp).glob("bb.out.*"))
        if others > bbv.total_instructions // 1000:
            raise RecordError(f"{command[0]} ran {others:,} instructions on threads other than its first (and "
                              f"{bbv.total_instructions:,} on it): SimPoint windows are placed in one thread's "
                              "instructions; record it with a skip and a limit instead")
        return bbv


@dataclass
class SimPoints:
    """The phases :func:`choose` found: per cluster its representative
    interval and weight (in interval order), every interval's cluster, and
    the BIC of each k tried."""

    intervals: list[int]
    weights: list[float]
    labels: list[int]
    bic: dict[int, float] = field(default_factory=dict)

    @property
    def k(self) -> int:
        return len(self.intervals)


def project(bbv: BBV, dims: int = DIMS, seed: int = 0) -> np.ndarray:
    """Each interval's vector, normalised to sum 1 (so that intervals
    compare by where the program spent its time, not how long they were),
    times a random matrix of ``dims`` columns uniform in [-1, 1] whose row
    for a block depends on the block's number and ``seed`` only."""
    blocks = sorted({b for v in bbv.vectors for b in v})
    column = {b: i for i, b in enumerate(blocks)}
    matrix = np.random.default_rng(seed).uniform(-1.0, 1.0, size=(len(blocks), dims))
    out = np.zeros((len(bbv.vectors), dims))
    for i, v in enumerate(bbv.vectors):
        total = sum(v.values())
        if total:
            rows = [column[b] for b in v]
            out[i] = np.asarray(list(v.values()), dtype=float) @ matrix[rows] / total
    return out


def bic(points: np.ndarray, labels: np.ndarray, centres: np.ndarray) -> float:
    """The Bayesian information criterion of a clustering under identical
    spherical Gaussians, as SimPoint 3.2's ``KMeans::bicScore`` scores it
    (every interval of equal weight): the log-likelihood, with the variance
    the squared distances to the centres over ``n * d``, less half the
    parameters times log n."""
    n, d = points.shape
    k = len(centres)
    # Kept above zero for clusters of identical points.
    variance = max(float(((points - centres[labels]) ** 2).sum()) / (d * n), 1e-300)
    sizes = np.bincount(labels, minlength=k)
    sizes = sizes[sizes > 0]
    likelihood = -n * d * (math.log(2 * math.pi * variance) + 1) / 2 + float((sizes * np.log(sizes / n)).sum())
    parameters = (k - 1) + k * d + 1
    return likelihood - parameters / 2 * math.log(n)


def choose(bbv: BBV, max_k: int = MAX_K, dims: int = DIMS, seed: int = 0, seeds: int = SEEDS,
           bic_threshold: float = BIC_THRESHOLD) -> SimPoints:
    """Cluster ``bbv``'s intervals with k-means for k = 1 .. ``max_k`` (and
    at most half the intervals; ``seeds`` starts each, the best kept),
    score each k by its BIC, take
    the smallest k within ``bic_threshold`` of the range between the worst
    and the best score, and in each cluster the interval nearest its
    centre, weighted by the cluster's share of the intervals."""
    if not bbv.vectors:
        raise RecordError("no complete interval to choose from: the run is shorter than one interval "
                          f"({bbv.interval:,} instructions); take a shorter interval")
    points = project(bbv, dims, seed)
    n = len(points)
    fits, scores = {}, {}
    # At most half the intervals: clusters of one interval have no spread,
    # and the score of a clustering without spread is unbounded.
    most = min(max_k, len(np.unique(points, axis=0)), max(1, n // 2))
    for k in range(1, most + 1):
        fit = KMeans(n_clusters=k, n_init=seeds, random_state=seed).fit(points)
        fits[k], scores[k] = fit, bic(points, fit.labels_, fit.cluster_centers_)
    low, high = min(scores.values()), max(scores.values())
    k = min(k for k, s in scores.items() if s >= low + bic_threshold * (high - low))
    fit = fits[k]
    labels = fit.labels_
    chosen = []
    for c in range(k):
        members = np.flatnonzero(labels == c)
        if len(members):
            distances = ((points[members] - fit.cluster_centers_[c]) ** 2).sum(axis=1)
            chosen.append((int(members[np.argmin(distances)]), len(members) / n))
    chosen.sort()
    return SimPoints([i for i, _ in chosen], [w for _, w in chosen], labels.tolist(), scores)


def windows(bbv: BBV, points: SimPoints, warmup: int) -> list[dict]:
    """Each chosen interval as a window of instructions: ``from`` (the
    warm-up's first, at most ``warmup`` before), ``start`` and ``end``, with
    its interval and weight."""
    starts = bbv.starts()
    out = []
    for interval, weight in zip(points.intervals, points.weights):
        start = starts[interval]
        end = start + sum(bbv.vectors[interval].values())
        out.append({"interval": interval, "weight": weight, "from": max(0, start - warmup), "start": start,
                    "end": end})
    return out


def record(command: Sequence[str], output: str | Path, *, interval: int = INTERVAL, warmup: int | None = None,
           max_k: int = MAX_K, seed: int = 0, ifetch: bool = False, cwd: str | Path | None = None,
           stdout=subprocess.DEVNULL, progress=None) -> dict:
    """Profile ``command`` with exp-bbv, choose its phases and record them:
    one window per phase, each after ``warmup`` instructions (default one
    interval) of warm-up, as the threads of the trace ``output``, whose
    header says (``meta.simpoint``) which interval each window is and its
    weight. Returns the recording's summary with ``simpoint`` (the same,
    each window's warm-up accesses included). ``progress(done, total)``
    counts the recording's instructions up to the last window's end."""
    from ..record import record as record_run

    warmup = interval if warmup is None else warmup
    # The environment is part of a program's input (its start-up reads it):
    # both runs get the same, or the windows would land off their intervals.
    env = dict(os.environ)
    bbv = profile(command, interval, cwd=cwd, stdout=stdout, env=env)
    points = choose(bbv, max_k=max_k, seed=seed)
    chosen = windows(bbv, points, warmup)
    about = {"interval": interval, "warmup_instructions": warmup, "total_instructions": bbv.total_instructions,
             "intervals": len(bbv.vectors), "seed": seed, "bic": {str(k): v for k, v in points.bic.items()},
             "windows": chosen}
    recorded = record_run(command, output, ifetch=ifetch, cwd=cwd, stdout=stdout, progress=progress, env=env,
                          windows=[(w["from"], w["start"], w["end"]) for w in chosen], meta={"simpoint": about})
    for w, n in zip(chosen, recorded["warmup_accesses"]):
        w["warmup_accesses"] = n
    return {**recorded, "simpoint": about}


def windows_of(path: str | Path) -> list[dict]:
    """The windows of a trace :func:`record` wrote, each with its thread and
    the accesses of its warm-up (counted from the trace: the accesses whose
    instructions fall before the window's start)."""
    from .. import trace

    meta = trace.info(path)["meta"]
    about = meta.get("simpoint") if isinstance(meta, dict) else None
    if not about:
        raise RecordError(f"{path}: not a SimPoint trace (its header has no meta.simpoint; record it with "
                          "`cachesched record --simpoints`)")
    out = []
    for thread, w in enumerate(about["windows"]):
        warm = w["start"] - w["from"]
        instrs = trace.read(path, thread=thread)["instrs"].to_numpy()
        # The accesses of instructions before the window's start.
        warmup_accesses = int(np.searchsorted(np.cumsum(instrs, dtype=np.int64), warm, side="right"))
        out.append({**w, "thread": thread, "warmup_accesses": warmup_accesses})
    return out


def estimate(path: str | Path, machine: dict | None = None, run: dict | None = None):
    """Simulate each window of the SimPoint trace ``path`` on ``machine``
    after its warm-up, and weigh the windows: per window and level its
    accesses, misses and instructions, and a row ``window = "weighted"``
    whose counts are the windows' weighted by their phases' shares (so its
    ratios are the whole run's estimates); a row per level and access kind.
    ``compulsory`` counts the misses on lines the window's simulation had
    not seen, warm-up included: a large share of them at a level says the
    warm-up was too short to fill it. A pandas DataFrame."""
    import pandas as pd

    from .. import simulate

    counts = ["accesses", "misses", "compulsory"]
    rows = []
    for w in windows_of(path):
        config = {"workload": {"kind": "trace", "params": {"path": str(path), "thread": w["thread"]}},
                  "run": {**(run or {}), "warmup_accesses": w["warmup_accesses"]}}
        if machine is not None:
            config["machine"] = machine
        results = simulate(config)
        levels = results.levels.groupby(["level", "kind"], sort=False)[counts].sum()
        for (level, kind), row in levels.iterrows():
            rows.append({"window": str(w["thread"]), "interval": w["interval"], "weight": w["weight"],
                         "level": level, "kind": kind, **{c: int(row[c]) for c in counts},
                         "instructions": int(results.summary["instructions"])})
    table = pd.DataFrame(rows)
    weighted = table.assign(**{c: table[c] * table.weight for c in counts})
    total = weighted.groupby(["level", "kind"], sort=False)[counts].sum().reset_index()
    # A window without a row at a level contributes nothing there, but its
    # instructions count in every level's.
    each = table.drop_duplicates("window")
    total = total.assign(window="weighted", interval=-1, weight=each.weight.sum(),
                         instructions=(each.instructions * each.weight).sum())
    table = pd.concat([table, total[table.columns]], ignore_index=True)
    return table.assign(miss_ratio=table.misses / table.accesses, mpki=table.misses * 1000 / table.instructions)


def describe(about: dict) -> list[str]:
    """A line per window of a SimPoint trace's ``meta.simpoint`` (its
    warm-up's accesses too, when known)."""
    lines = []
    for thread, w in enumerate(about["windows"]):
        accesses = f" ({w['warmup_accesses']:,} accesses)" if "warmup_accesses" in w else ""
        lines.append(f"  thread {thread}: interval {w['interval']}, weight {w['weight']:.3f}, instructions "
                     f"{w['start']:,} to {w['end']:,} after {w['start'] - w['from']:,} of warm-up{accesses}")
    return lines


def validate(argv: Sequence[str], cwd: str | Path, *, caches: dict, interval: int, warmup: int) -> dict:
    """Run ``argv`` whole under cachegrind with ``caches`` (``i1``, ``d1``,
    ``ll``: (bytes, ways)), record its SimPoint windows (fetches kept:
    cachegrind's last level sees the L1I's misses) and estimate it on the
    equivalent machine; both sides' D1 and LLd miss ratios (misses per data
    reference) and the windows (docs/suite.md, "SimPoint windows")."""
    from .. import reference

    theirs = reference.cachegrind(list(argv), cwd=cwd, **caches)
    data = theirs["Dr"] + theirs["Dw"]
    out = Path(cwd) / "simpoint-validate.cst"
    recorded = record(argv, out, interval=interval, warmup=warmup, ifetch=True, cwd=cwd)
    table = estimate(out, machine=reference.cachegrind_machine(**caches))
    weighted = table[(table.window == "weighted") & table.kind.isin(["load", "store"])]
    ours = weighted.groupby("level")[["accesses", "misses"]].sum()
    return {
        "windows": len(recorded["simpoint"]["windows"]),
        "instructions": recorded["simpoint"]["total_instructions"],
        "d1": {"ours": ours.loc["l1d"].misses / ours.loc["l1d"].accesses,
               "cachegrind": (theirs["D1mr"] + theirs["D1mw"]) / data},
        "lld": {"ours": ours.loc["llc"].misses / ours.loc["l1d"].accesses,
                "cachegrind": (theirs["DLmr"] + theirs["DLmw"]) / data},
    }
