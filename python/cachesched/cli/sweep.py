"""sweep and results: sweeps into a results store, and the store's runs."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .._files import staged
from ..errors import CacheschedError
from .common import POSITIVE


def cmd_sweep(args: argparse.Namespace) -> int:
    from .. import sweep
    from ..store import default_store

    if args.dask and args.workers:
        raise SystemExit("error: --workers and --dask exclude each other (Dask's workers are the cluster's)")
    spec = sweep.load_sweep(args.spec)
    if args.bench:
        return _sweep_bench(spec, args.workers or 2, args.repeat)
    store = args.store or default_store()
    if not args.quiet:
        print(f"{sweep.describe(spec)}; store {store}", file=sys.stderr)
    out = sweep.run(spec, store=store, workers=args.workers, dask=args.dask, retry_failed=args.retry_failed,
                    progress=not args.quiet)
    invalid = f", {out.invalid} invalid configurations" if out.invalid else ""
    print(f"{out.points} points: {out.done} run, {out.failed} failed{invalid}, {out.skipped} already in the store "
          f"({out.seconds:.1f}s)")
    if out.failed or out.invalid:
        print(f"see the errors with: cachesched results ls {spec.name} --store {store} --status failed",
              file=sys.stderr)
    return 1 if out.failed or out.invalid else 0


def _sweep_bench(spec, workers: int, repeat: int) -> int:
    from .. import sweep

    before = os.getloadavg()[0]
    seconds = sweep.bench(spec, (1, workers), repeat)
    ratio = seconds[workers] / seconds[1]
    print(f"load average {before:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} cores "
          "(other processes take CPUs from the workers)")
    print(f"{sweep.describe(spec)}, local processes, fresh store each time, best of {repeat}")
    print(f"1 worker   {seconds[1]:8.2f} s")
    print(f"{workers} workers {seconds[workers]:8.2f} s")
    print(f"ratio      {ratio:8.3f}  ({workers} workers / 1 worker)")
    return 0


def cmd_results_ls(args: argparse.Namespace) -> int:
    from ..store import load
    from ..store import Store, default_store

    store = args.store or default_store()
    if args.sweep is None:
        db = Store(store, create=False)
        rows = db.sweeps()
        db.close()
        print(f"{'sweep':<24} {'points':>7} {'done':>6} {'failed':>7} {'pending':>8} {'running':>8}")
        for r in rows:
            total = sum(r[s] for s in ("pending", "running", "done", "failed"))
            print(f"{r['sweep']:<24} {total:>7} {r['done']:>6} {r['failed']:>7} {r['pending']:>8} {r['running']:>8}")
        return 0
    df = load(store, args.sweep)
    if df.empty:
        raise CacheschedError(f"{store}: no sweep named '{args.sweep}' (`cachesched results ls` lists them)")
    if args.status:
        df = df[df.status == args.status]
    axes = df.attrs["axes"] + (["variant"] if df.variant.notna().any() else [])
    shown = [c for c in ("cpi", "l1d_miss_ratio", "l2_miss_ratio", "llc_miss_ratio") if c in df.columns]
    table = df.assign(key=df.key.str[:12])[["key", "status", *axes, *shown]]
    text = table.to_string(index=False, max_colwidth=40)
    text += "".join(f"\n\n{r.key[:12]} failed: {r.error}" for _, r in df[df.status == "failed"].iterrows())
    try:
        print(text)
    except BrokenPipeError:  # `cachesched results ls x | head`
        sys.stdout = None
    return 0


def cmd_results_rebuild(args: argparse.Namespace) -> int:
    from ..store import default_store, rebuild

    store = args.store or default_store()
    counts = rebuild(store)
    skipped = f"; {counts['skipped']} run folders did not read back and will run again" if counts["skipped"] else ""
    print(f"{store}: a new ledger with {counts['runs']} runs and {counts['sweeps']} sweeps{skipped}")
    return 0


def cmd_results_show(args: argparse.Namespace) -> int:
    from ..store import Store

    db = Store(args.store, create=False)
    row = db.find(args.key)
    db.close()
    print(f"key      {row['key']}")
    print(f"status   {row['status']} (attempts {row['attempts']})")
    print(f"version  {row['version']}")
    if row["detail"]:
        print(f"detail   {db.dir / row['detail']}")
    if row["error"]:
        print(f"error    {row['error']}")
    if row["metrics"]:
        print("metrics  " + json.dumps(json.loads(row["metrics"]), indent=2).replace("\n", "\n         "))
    print("config   " + json.dumps(json.loads(row["config"]), indent=2).replace("\n", "\n         "))
    return 0


def cmd_results_export(args: argparse.Namespace) -> int:
    from ..store import load

    df = load(args.store, args.sweep)
    out = Path(args.output)
    if out.suffix not in (".parquet", ".csv"):
        raise SystemExit(f"error: {out}: give a .csv or .parquet file")
    with staged(out) as temp:
        if out.suffix == ".parquet":
            df.to_parquet(temp, index=False)
        else:
            df.to_csv(temp, index=False)
    print(f"wrote {len(df)} rows to {out}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the commands of this group to the parser."""
    sw = sub.add_parser("sweep", help="run a sweep of simulations into a results store (docs/sweeps.md)")
    sw.add_argument("spec", help="sweep file (TOML)")
    sw.add_argument("--workers", type=POSITIVE, metavar="N", help="local worker processes (default: one per core)")
    sw.add_argument("--dask", metavar="tcp://HOST:PORT", help="run on this Dask distributed scheduler")
    sw.add_argument("--store", metavar="DIR", help="results store (default $CACHESCHED_STORE or ./cachesched-results)")
    sw.add_argument("--retry-failed", action="store_true", help="run the failed runs again")
    sw.add_argument("--bench", action="store_true",
                    help="time the sweep with 1 worker and with --workers (default 2), in fresh stores; print the ratio")
    sw.add_argument("--repeat", type=POSITIVE, default=1, metavar="N", help="with --bench: best of N rounds")
    sw.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    sw.set_defaults(func=cmd_sweep)

    rs = sub.add_parser("results", help="the results store: list, show and export runs")
    rsub = rs.add_subparsers(dest="results_command", required=True, metavar="ACTION")
    rl = rsub.add_parser("ls", help="the sweeps of the store, or the points of one sweep")
    rl.add_argument("sweep", nargs="?")
    rl.add_argument("--status", choices=["pending", "running", "done", "failed"])
    rsh = rsub.add_parser("show", help="one run: status, metrics, error, configuration")
    rsh.add_argument("key", help="the run's key, or the start of it")
    rex = rsub.add_parser("export", help="a sweep's table (one row per point) as CSV or Parquet")
    rex.add_argument("sweep", nargs="?", help="default: every sweep of the store")
    rex.add_argument("-o", "--output", required=True, help="file.csv or file.parquet")
    rrb = rsub.add_parser("rebuild", help="a new ledger from the run folders, when the old one is damaged "
                                          "(it is kept aside)")
    for p, fn in ((rl, cmd_results_ls), (rsh, cmd_results_show), (rex, cmd_results_export),
                  (rrb, cmd_results_rebuild)):
        p.add_argument("--store", metavar="DIR", help="results store (default $CACHESCHED_STORE or ./cachesched-results)")
        p.set_defaults(func=fn)
