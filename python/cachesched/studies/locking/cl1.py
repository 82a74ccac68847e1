"""Level-1 cache locking in a 4-core processor (spec A2-A4, Figs. 10-11,
section 4.1): private 8-way I1 and D1 caches, a shared 1 MB 8-way L2,
128 B lines; a fetch costs 1 unit, a level-1 miss 1 more from the L2 and
15 more from memory (:mod:`cachesched.cl1lock`). The applications, with
their instruction fetches recorded (``small``: 2 M references; FFT 8 M):
FFT (``programs/fft.c``), GIF (netpbm's ``pamtogif``), JPEG (``cjpeg``),
MPEG3 (``lame`` encoding) and, for MPEG-4 part 2, which Debian ships
only inside ffmpeg, x264 (MPEG-4 part 10).

- A2: random locking of 0-50% of a 4 KiB I1 (0 to 4 ways), each
  application on all four cores at once;
- A3: the I1 from 4 to 64 KiB, no locking and 25% random locking, for
  FFT, GIF and MPEG4;
- A4: the random, static and dynamic strategies (and none) on a queue of
  the five applications four times over, batches of four, each strategy
  deciding whether and how much to lock.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...workloads import suite
from . import common as c

CLAIMS = (
    ("a2-ushape", "Random locking of a large application's I1 (MPEG4): mean delay falls up to 25% locked, "
                  "rises beyond", "Fig. 10"),
    ("a2-fft", "FFT gains nothing from locking: it fits in the I1", "Fig. 10; FFT 2.34 KB"),
    ("a2-large", "Large applications (MPEG3, MPEG4) benefit most; GIF and JPEG a little", "Fig. 10"),
    ("a3-size", "Mean delay per task falls as the I1 grows from 4 to 64 KB, with and without 25% locking",
     "Fig. 11"),
    ("a4-strategies", "Dynamic locking beats static by up to 35% and random by up to 22% in mean delay per task",
     "4.1: 35%, 22%"),
)

APPS = {"fft": "FFT", "gif": "GIF", "jpeg": "JPEG", "mpeg3": "MPEG3", "h264ref": "MPEG4"}
SIZES_KIB = (4, 8, 16, 32, 64)


def runs(ctx, configs: list[dict], paths: dict) -> pd.DataFrame:
    from ... import cl1lock

    def compute(config: dict) -> pd.DataFrame:
        r = cl1lock.run([paths[j] for j in config["jobs"]], **config["params"])
        return r.tasks.drop(columns=["trace"]).assign(mean_delay=r.mean_delay)

    results = c.stored(ctx, configs, sorted(set(paths.values())), compute)
    rows = [df.assign(app=[APPS[config["jobs"][j]] for j in df.job], **config["labels"])
            for config, df in zip(configs, results)]
    return pd.concat(rows, ignore_index=True)


def table(ctx) -> pd.DataFrame:
    paths = {}
    for name in APPS:
        ctx.log(f"trace {name} with fetches ({ctx.size})")
        paths[name] = Path(suite.record(name, ctx.size, ifetch=True)["trace"])
    configs = [{"labels": {"experiment": "A2", "config": "random", "locked_pct": 12.5 * k, "l1_kib": 4},
                "params": {"strategy": "random", "lock_ways": k}, "jobs": [app] * 4}
               for app in APPS for k in range(5)]
    configs += [{"labels": {"experiment": "A3", "config": name, "locked_pct": 25.0 * bool(k), "l1_kib": kib},
                 "params": {"strategy": "random" if k else "none", "lock_ways": k, "l1_bytes": kib * 1024},
                 "jobs": [app] * 4}
                for app in ("fft", "gif", "h264ref") for kib in SIZES_KIB for name, k in (("none", 0), ("random", 2))]
    queue = list(APPS) * 4
    configs += [{"labels": {"experiment": "A4", "config": s, "locked_pct": float("nan"), "l1_kib": 4},
                 "params": {"strategy": s}, "jobs": queue} for s in ("none", "random", "static", "dynamic")]
    return runs(ctx, configs, paths)


def per_run(df: pd.DataFrame, experiment: str, keys: list[str]) -> pd.DataFrame:
    d = df[df.experiment == experiment]
    return d.groupby(keys, as_index=False).agg(mean_delay=("mean_delay", "first"), i1_misses=("i1_misses", "sum"))


def claims(df: pd.DataFrame) -> list[dict]:
    a2 = per_run(df, "A2", ["app", "locked_pct"]).pivot_table(index="app", columns="locked_pct", values="mean_delay")
    change = 100 * (a2.div(a2[0.0], axis=0) - 1)  # % over no locking
    mp4 = change.loc["MPEG4"]
    ushape = mp4.idxmin() == 25.0 and mp4[25.0] < 0 and mp4[50.0] > mp4[25.0]
    out = [c.claim("a2-ushape", "MPEG4 (x264), mean delay against none: " + ", ".join(
        f"{k:g}% {v:+.2f}%" for k, v in mp4.items()), c.grade(ushape, mp4.min() < 0),
        "locking random blocks keeps blocks that are no hotter than the ones they displace: a benefit needs "
        "locked blocks that would miss more than what misses in the ways they take")]
    fft = change.loc["FFT"]
    out.append(c.claim("a2-fft", "FFT, mean delay against none: " + ", ".join(f"{k:g}% {v:+.2f}%" for k, v in
                                                                               fft.items()),
                       c.grade(fft.min() >= -0.1, fft.min() >= -1), ""))
    best = change.drop(columns=0.0).min(axis=1)
    large = max(best["MPEG3"], best["MPEG4"]) <= min(best["GIF"], best["JPEG"])
    out.append(c.claim("a2-large", "best change per application: " + ", ".join(f"{a} {v:+.2f}%" for a, v in
                                                                              best.items()),
                       c.grade(large and best.min() < 0, best.min() < 0),
                       "with 1 unit per fetch, an I1 miss costs 1-16 units beside every fetch's 1: a few thousand "
                       "misses move a task of 1.5 million instructions by well under 1%"))
    a3 = per_run(df, "A3", ["app", "config", "l1_kib"])
    falls = {(a, cf): g.sort_values("l1_kib").mean_delay.is_monotonic_decreasing
             for (a, cf), g in a3.groupby(["app", "config"])}
    out.append(c.claim("a3-size", "mean delay falls with the I1 size in " + ", ".join(
        f"{a} {cf}" for (a, cf), ok in falls.items() if ok) + f" ({sum(falls.values())} of {len(falls)})",
        c.grade(all(falls.values()), any(falls.values())),
        "once an application's code fits, a larger I1 changes nothing (FFT's 3 KiB fits at 4 KiB)"))
    a4 = per_run(df, "A4", ["config"]).set_index("config").mean_delay
    vs_static, vs_random = 100 * (1 - a4["dynamic"] / a4["static"]), 100 * (1 - a4["dynamic"] / a4["random"])
    out.append(c.claim("a4-strategies", f"dynamic against static {vs_static:+.2f}%, against random "
                                        f"{vs_random:+.2f}% (none {a4['none']:,.0f}, random {a4['random']:,.0f}, "
                                        f"static {a4['static']:,.0f}, dynamic {a4['dynamic']:,.0f} units)",
                       c.grade(abs(vs_static - 35) <= 10 and abs(vs_random - 22) <= 10,
                               vs_static > 0 and vs_random > 0),
                       "the dynamic and static cores lock only when a profile of their jobs says it lowers misses; "
                       "at 4 KiB it never does here, so they differ from no locking only by their preloads; the "
                       "dissertation's 35% and 22% come from a model whose configuration it does not give"))
    return out


def figures(df: pd.DataFrame):
    from ...report.figures import new_figure

    fig, ax = new_figure(ncols=3, nrows=1, width=4.2, height=3.2)
    a2 = per_run(df, "A2", ["app", "locked_pct"])
    for app, g in a2.groupby("app"):
        base = g[g.locked_pct == 0].mean_delay.iloc[0]
        ax[0, 0].plot(g.locked_pct, 100 * (g.mean_delay / base - 1), marker="o", ms=3, label=app)
    c.label(ax[0, 0], "I1 locked (%)", "mean delay vs none (%)", "random locking (Fig. 10)")
    a3 = per_run(df, "A3", ["app", "config", "l1_kib"])
    for (app, cf), g in a3.groupby(["app", "config"]):
        ax[0, 1].plot(g.l1_kib, g.mean_delay, marker="o", ms=3, ls="-" if cf == "none" else "--",
                      label=f"{app}, {'none' if cf == 'none' else '25% random'}")
    ax[0, 1].set_xscale("log", base=2)
    c.label(ax[0, 1], "I1 (KiB)", "mean delay per task (units)", "I1 size (Fig. 11)")
    a4 = per_run(df, "A4", ["config"])
    ax[0, 2].bar(a4.config, a4.mean_delay)
    ax[0, 2].set(ylabel="mean delay per task (units)", title="strategies (A4)")
    return [("locking_cl1", "Level-1 locking in a 4-core processor (A2-A4; Figs. 10-11)",
             "Mean delay per task: random locking of a 4 KiB I1, the I1's size with and without 25% random "
             "locking, and the three strategies on a queue of the five applications.", fig)]


def run(ctx):
    return c.part(ctx, "cl1", __doc__, table, claims, figures,
                  "Per experiment, configuration and task: the job's batch and core, its delay, instructions, I1, "
                  "D1 and L2 misses, ways locked, code bytes, the run's mean delay per task, the application.")
