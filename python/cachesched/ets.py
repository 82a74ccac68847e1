"""Measures of elastic time slicing from a run's ``slices`` table.

Each function takes :class:`~cachesched.results.Results` (of a run with the
``ets`` scheduler or ``round-robin``, and usually a ``cs-estimator``) and
returns a small pandas table; see ``docs/elastic-time-slicing.md``.
"""

from __future__ import annotations

import pandas as pd

from .results import Results


def _cycles_per_ms(results: Results) -> float:
    return results.config["machine"]["frequency_ghz"] * 1e6


def distribution(results: Results) -> pd.DataFrame:
    """Per task and slice length (ms, rounded to 0.01): the number of
    schedules, their fraction of the task's schedules, and their fraction of
    its time (spec Figure 6b)."""
    df = results.slices.assign(ms=lambda d: (d.length / _cycles_per_ms(results)).round(2))
    out = df.groupby(["task", "ms"]).agg(schedules=("length", "size"), cycles=("length", "sum")).reset_index()
    out["fraction"] = out.schedules / out.groupby("task").schedules.transform("sum")
    out["time_fraction"] = out.cycles / out.groupby("task").cycles.transform("sum")
    return out.drop(columns="cycles")


def transitions(results: Results) -> pd.DataFrame:
    """Per task: over consecutive schedules, the fraction whose length stays
    the same and the fraction that changes (spec Figure 9)."""
    df = results.slices.sort_values(["task", "start"])
    rows = []
    for task, g in df.groupby("task"):
        ms = (g.length / _cycles_per_ms(results)).round(2).tolist()
        pairs = list(zip(ms, ms[1:]))
        same = sum(a == b for a, b in pairs)
        n = len(pairs)
        rows.append({"task": task, "transitions": n, "same": same / n if n else float("nan"),
                     "different": (n - same) / n if n else float("nan")})
    return pd.DataFrame(rows, columns=["task", "transitions", "same", "different"])


def latency(results: Results) -> pd.DataFrame:
    """Per task: mean and (population) standard deviation, in ms, of the gap
    between the end of one of its schedules and the start of the next (the
    latency a co-runner sees, spec 3.3)."""
    df = results.slices.dropna(subset=["gap"])
    g = (df.gap / _cycles_per_ms(results)).groupby(df.task)
    return pd.DataFrame({"gaps": g.size(), "mean_ms": g.mean(), "std_ms": g.std(ddof=0)}).reset_index()


def estimation(results: Results) -> pd.DataFrame:
    """Per task: estimates published, how many were reliable, the estimates
    summed against the full directory's counts over the same windows (``sampling_error``,
    ``|est - full| / full``), the mean per-schedule absolute error, and the
    switch-induced LLC misses the attribution measured (``actual``, 0
    unless ``llc`` is in ``machine.attribution``)."""
    df = results.slices
    rows = []
    for task, g in df.groupby("task"):
        e = g.dropna(subset=["estimate"])
        est, full = int(e.estimate.sum()), int(e.full.sum())
        per = ((e.estimate - e.full).abs() / e.full.where(e.full > 0)).astype(float)
        rows.append({"task": task, "estimates": len(e), "reliable": int(e.reliable.sum()), "estimated": est,
                     "full": full, "sampling_error": abs(est - full) / full if full else float("nan"),
                     "mean_schedule_error": float(per.mean()), "actual": int(g.llc_switch_misses.sum())})
    return pd.DataFrame(rows, columns=["task", "estimates", "reliable", "estimated", "full", "sampling_error",
                                       "mean_schedule_error", "actual"])
