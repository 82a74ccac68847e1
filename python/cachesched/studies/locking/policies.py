"""Modern block-cache policies (beyond the dissertation): each workload's
loads through a partition of 2-64 KiB under libCacheSim's LRU, ARC,
S3-FIFO and LIRS (fully associative, as libCacheSim's caches are), beside
ours: the 4-way LRU partition, unlocked and with 5% locked and the victim
buffer, and the probability policy with both. The libCacheSim runs read
the same block stream (a reference's first block) from an oracleGeneral
trace written here; its LRU must miss what a fully associative partition
of ours misses (tests/test_hcache.py checks it on its own streams; here
the ``lru-check`` column holds ours).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..._files import staged
from . import common as c

CLAIMS = ()

#: libCacheSim's policies, by the name shown.
LIBCACHESIM = {"LRU (libCacheSim)": "LRU", "ARC": "ARC", "S3-FIFO": "S3FIFO", "LIRS": "LIRS"}
OURS = {"LRU 4-way": {}, "LRU 4-way, 5% locked + VB": {"lock_fraction": c.LOCK, "victim_buffer": c.VB},
        "probability, 5% locked + VB": {"lock_fraction": c.LOCK, "victim_buffer": c.VB,
                                        "replacement": {"kind": "probability"}}}


def oracle_trace(trace: Path, out: Path) -> Path:
    """The loads' blocks of a trace as libCacheSim's oracleGeneral binary
    (per request: u32 time, u64 object, u32 size, i64 next access)."""
    from ... import trace as traces

    if out.exists():
        return out
    df = traces.read(trace)
    blocks = df.addr[df.kind == traces.KIND_NAMES.index("load")].to_numpy().astype(np.uint64) >> np.uint64(6)
    record = np.dtype([("time", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
    rows = np.zeros(len(blocks), dtype=record)
    rows["time"], rows["id"], rows["size"], rows["next"] = np.arange(len(blocks)), blocks, 1, -1
    with staged(out) as temp:
        rows.tofile(temp)
    return out


def table(ctx) -> pd.DataFrame:
    import libcachesim

    configs = [{"labels": {"config": name, "size_kib": size // c.KiB}, "params": {"size_bytes": size, **params}}
               for size in c.SIZES for name, params in OURS.items()]
    configs += [{"labels": {"config": "lru-check", "size_kib": size // c.KiB},
                 "params": {"size_bytes": size, "ways": size // 64}} for size in c.SIZES]
    ours = c.hcache_runs(ctx, configs)[["config", "size_kib", "workload", "accesses", "misses", "miss_pct"]]
    folder = ctx.store / "locking"
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, path in c.traces(ctx).items():
        oracle = oracle_trace(path, folder / f"{name}-{ctx.size}.oracleGeneral")
        accesses = oracle.stat().st_size // 24

        def miss_ratio(config: dict) -> pd.DataFrame:
            reader = libcachesim.TraceReader(str(oracle), libcachesim.TraceType.ORACLE_GENERAL_TRACE)
            cache = getattr(libcachesim, config["params"]["libcachesim"])(cache_size=config["params"]["blocks"])
            return pd.DataFrame([{"miss_ratio": cache.process_trace(reader)[0]}])

        configs = [{"labels": {"config": shown, "size_kib": size // c.KiB},
                    "params": {"libcachesim": policy, "blocks": size // 64}}
                   for size in c.SIZES for shown, policy in LIBCACHESIM.items()]
        for config, df in zip(configs, c.stored(ctx, configs, [oracle], miss_ratio)):
            ratio = float(df.miss_ratio.iloc[0])
            rows.append({**config["labels"], "workload": c.WORKLOADS[name], "accesses": accesses,
                         "misses": round(ratio * accesses), "miss_pct": 100 * ratio})
    return pd.concat([ours, pd.DataFrame(rows)], ignore_index=True)


def claims(df: pd.DataFrame) -> list[dict]:
    return []


def figures(df: pd.DataFrame):
    series = {name: name for name in [*OURS, *LIBCACHESIM]}
    fig = c.workload_panels(df, "size_kib", series, "miss_pct", "partition (KiB)", "miss %", "policies")
    return [("locking_policies", "The dissertation's policy beside modern ones (beyond the seed)",
             "Miss ratio against partition size: libCacheSim's LRU, ARC, S3-FIFO and LIRS (fully associative) "
             "and our 4-way partition, plain, locked with the victim buffer, and with probability replacement.",
             fig)]


def run(ctx):
    return c.part(ctx, "policies", __doc__, table, claims, figures,
                  "Per policy, size and workload: requests, misses, miss ratio (%). ``lru-check``: our fully "
                  "associative LRU partition, which must equal libCacheSim's LRU.")
