"""Probability-based replacement (spec B2.7, Figs. 42-45): each
workload's misses over the partition sizes with 5% locked and the victim
buffer, under LRU and the probability policy (spec 1.6's formalisation:
the first 10% of the requests build the history, a window of as many
requests the current counts; when no line is below its history
probability, the LRU line goes, or, read literally, the block is not
installed: ``bypass``).
"""

from __future__ import annotations

import pandas as pd

from . import common as c

CLAIMS = (
    ("b27-fewer", "The probability policy has fewer misses than LRU at 2 and 4 KB", "7.8; spec 4.5(5)"),
    ("b27-best", "Its best size: Array Sort 2 KB, FFT 4 KB, Gzip 2 KB, MP3 2 KB", "7.8"),
)

CONFIGS = {"LRU": {}, "probability": {"replacement": {"kind": "probability"}},
           "probability (bypass)": {"replacement": {"kind": "probability", "fallback": "bypass"}}}


def table(ctx) -> pd.DataFrame:
    configs = [{"labels": {"config": name, "size_kib": size // c.KiB},
                "params": {"size_bytes": size, "lock_fraction": c.LOCK, "victim_buffer": c.VB, **params}}
               for size in c.SIZES for name, params in CONFIGS.items()]
    return c.hcache_runs(ctx, configs)


def claims(df: pd.DataFrame) -> list[dict]:
    wide = df[df.size_kib.isin([2, 4])].pivot_table(index=["workload", "size_kib"], columns="config",
                                                     values="misses")
    fewer = wide["probability"] < wide["LRU"]
    either = fewer | (wide["probability (bypass)"] < wide["LRU"])
    out = [c.claim("b27-fewer", "probability / LRU misses at 2 and 4 KiB: " + "; ".join(
        f"{w} {k} KiB x{r['probability'] / r['LRU']:.3f} (bypass x{r['probability (bypass)'] / r['LRU']:.3f})"
        for (w, k), r in wide.iterrows()), c.grade(fewer.all(), either.any()),
        "the policy keeps a line only while its share of recent requests is at least its share in the warm-up: "
        "a workload whose hot blocks change after the warm-up evicts the blocks it now needs")]
    saved = c.gain(df, "size_kib", "LRU", "probability", "misses")
    best = saved.loc[saved.groupby("workload").gain.idxmax()].set_index("workload")
    source = {"Array Sort": 2, "FFT": 4, "Gzip": 2, "MP3": 2}
    match = [best.size_kib[w] == k for w, k in source.items()]
    out.append(c.claim("b27-best", "most misses saved at " + ", ".join(
        f"{w} {best.size_kib[w]} KiB ({best.gain[w]:+,.0f})" for w in source), c.grade(all(match), any(match)),
        "the policy saves misses on Gzip only (b27-fewer): elsewhere its best size is where it loses least"))
    return out


def figures(df: pd.DataFrame):
    series = {name: name for name in CONFIGS}
    fig = c.workload_panels(df, "size_kib", series, "misses", "partition (KiB)", "misses", "replacement")
    return [("locking_replacement", "Misses under LRU and probability-based replacement (B2.7; Figs. 42-45)",
             "5% locked with the victim buffer; the probability policy falling back to LRU, or bypassing.", fig)]


def run(ctx):
    return c.part(ctx, "replacement", __doc__, table, claims, figures,
                  "Per policy, size and workload: the counts and ratios of the size part (bypasses: misses the "
                  "policy did not install).")
