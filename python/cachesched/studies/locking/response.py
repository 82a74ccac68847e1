"""The total I/O response time (spec B2.5, Figs. 34-37, eqs. 3-4): each
miss fetched from the disk array at ``2 T_FC + T_cc + T_seek + T_rot``
(50 + 50 + 10 + 4000 + 2000 us, the spec's defaults, no controller
hits), a hit and a victim-buffer hit at no cost; no lock, 5% locked and
5% locked with the victim buffer, over the partition sizes. The runs are
the size part's.
"""

from __future__ import annotations

import pandas as pd

from . import common as c
from .size import CONFIGS

CLAIMS = (
    ("b25-order", "Total I/O response time: no lock > lock > lock+VB", "7.6; spec 4.5(6)"),
    ("b25-best", "The largest benefit: Array Sort at 2 KB; FFT, Gzip and MP3 at 4 KB", "7.6"),
    ("b25-follows", "Response time follows the miss count (eq. 3)", "spec 4.5(6)"),
)


def table(ctx) -> pd.DataFrame:
    configs = [{"labels": {"config": name, "size_kib": size // c.KiB}, "params": {"size_bytes": size, **params}}
               for size in c.SIZES for name, params in CONFIGS.items() if name != "VB"]
    return c.hcache_runs(ctx, configs)[["config", "size_kib", "workload", "accesses", "misses", "io_seconds"]]


def claims(df: pd.DataFrame) -> list[dict]:
    wide = df.pivot_table(index=["workload", "size_kib"], columns="config", values="io_seconds")
    strict = (wide["none"] > wide["lock"]) & (wide["lock"] > wide["lock+VB"])
    weak = (wide["none"] >= wide["lock"]) & (wide["lock"] >= wide["lock+VB"])
    out = [c.claim("b25-order", f"none > lock > lock+VB in {strict.sum()} of {len(wide)} (workload, size); "
                                f"weakly in {weak.sum()}; lock+VB below none in "
                                f"{(wide['lock+VB'] < wide['none']).sum()}",
                   c.grade(strict.all(), (wide["lock+VB"] < wide["none"]).all()),
                   "lock-only is not below no lock everywhere (b21-never-worse); the VB always lowers it")]
    benefit = (wide["none"] - wide["lock+VB"]).reset_index(name="saved")
    best = benefit.loc[benefit.groupby("workload").saved.idxmax()].set_index("workload")
    source = {"Array Sort": 2, "FFT": 4, "Gzip": 4, "MP3": 4}
    match = [best.size_kib[w] == k for w, k in source.items()]
    out.append(c.claim("b25-best", "largest saving at " + ", ".join(
        f"{w} {best.size_kib[w]} KiB ({best.saved[w]:.1f} s)" for w in source), c.grade(all(match), any(match)),
        "a saving in seconds is a saving in misses, which grows with the misses there are to save: at our "
        "workloads' sizes the largest come where the partition is smallest"))
    per_miss = df.io_seconds / df.misses.where(df.misses > 0)
    spread = per_miss.max() / per_miss.min()
    out.append(c.claim("b25-follows", f"seconds per miss {per_miss.min() * 1e6:.0f}-{per_miss.max() * 1e6:.0f} us "
                                      f"in every run (spread x{spread:.3f})", c.grade(spread < 1.0001, False)))
    return out


def figures(df: pd.DataFrame):
    series = {"none": "no lock", "lock": "5% locked", "lock+VB": "5% locked + VB"}
    fig = c.workload_panels(df, "size_kib", series, "io_seconds", "partition (KiB)", "total I/O time (s)",
                            "response time")
    return [("locking_response", "Total I/O response time (B2.5; Figs. 34-37)",
             "Eq. 3 over each run: the misses times the cost of a miss from the disk array (6.11 ms).", fig)]


def run(ctx):
    return c.part(ctx, "response", __doc__, table, claims, figures,
                  "Per configuration, size and workload: requests, misses and the total I/O time (s).")
