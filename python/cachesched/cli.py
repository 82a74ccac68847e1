"""The ``cachesched`` command line."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

from ._files import staged, write_text
from . import __version__
from .config import presets, resolve
from .errors import CacheschedError, ConfigError


def _examples() -> dict[str, Path]:
    root = resources.files("cachesched") / "examples"
    return {p.name.removesuffix(".toml"): Path(str(p)) for p in root.iterdir() if p.name.endswith(".toml")}


def _config_source(args: argparse.Namespace) -> Path:
    if args.example:
        examples = _examples()
        if args.example not in examples:
            known = ", ".join(sorted(examples))
            msg = f"unknown example '{args.example}'; built-in examples: {known}"
            raise ConfigError.single("", "unknown_example", msg)
        return examples[args.example]
    if not args.config:
        raise ConfigError.single("", "missing_config",
                                 "give a configuration file, or --example NAME (see `cachesched examples`)")
    return Path(args.config)


def _overrides(args: argparse.Namespace) -> list[str]:
    extra = list(args.set or [])
    if getattr(args, "seed", None) is not None:
        extra.append(f"seed={args.seed}")
    if getattr(args, "accesses", None) is not None:
        extra.append(f"run.max_accesses={args.accesses}")
    return extra


def cmd_run(args: argparse.Namespace) -> int:
    from .simulate import simulate

    results = simulate(_config_source(args), overrides=_overrides(args), progress=not args.quiet)
    if args.out:
        results.save(args.out)
    if args.json == "-":
        print(results.to_json())
    else:
        if args.json:
            results.to_json(args.json)
        if not args.quiet:
            print(results.format())
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    print(json.dumps(resolve(_config_source(args), _overrides(args)), indent=2))
    return 0


def cmd_presets(args: argparse.Namespace) -> int:
    shipped = presets()
    if args.name:
        match = [p for p in shipped if p["name"] == args.name]
        if not match:
            names = ", ".join(p["name"] for p in shipped)
            raise ConfigError.single("machine.preset", "unknown_preset",
                                     f"unknown preset '{args.name}'; expected one of: {names}")
        print(match[0]["toml"], end="")
        return 0
    width = max(len(p["name"]) for p in shipped)
    for p in shipped:
        print(f"{p['name']:<{width}}  {p['description']}")
    return 0


def cmd_examples(args: argparse.Namespace) -> int:
    for name, path in sorted(_examples().items()):
        first = path.read_text().splitlines()[0].lstrip("# ").strip()
        print(f"{name:<16} {first}")
    return 0


def cmd_trace_info(args: argparse.Namespace) -> int:
    from . import trace

    info = trace.info(args.file)
    if args.scan:
        info["scan"] = trace.scan(args.file, args.thread)
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"file          {info['path']}")
    print(f"source        {info['source']}")
    print(f"threads       {', '.join(map(str, info['threads']))}")
    print(f"page size     {info['page_bytes']} B")
    s = info["summary"]
    if s is None:
        print(f"index         missing ({info['index_problem']}); the trace is readable block by block")
    else:
        print(f"accesses      {s['accesses']:,}")
        print(f"instructions  {s['instructions']:,}")
        print(f"size          {s['file_bytes']:,} bytes in {s['blocks']:,} blocks "
              f"({s['bytes_per_access']:.2f} bytes/access)")
    if args.scan:
        sc = info["scan"]
        total = sc["accesses"] or 1
        print(f"mix           {sc['loads'] / total:.1%} loads, {sc['stores'] / total:.1%} stores, "
              f"{sc['ifetches'] / total:.1%} ifetches")
        print(f"footprint     {sc['lines_64']:,} lines of 64 B, {sc['pages_4k']:,} pages of 4 KiB")
        if sc["min_addr"] is not None:
            print(f"addresses     {sc['min_addr']:#x} .. {sc['max_addr']:#x}")
        median = trace.median_reuse(sc)
        if median is not None:
            print(f"reuse         median distance {median[0]:,}-{median[1]:,} lines; fully associative LRU "
                  "hit ratio " + ", ".join(f"{name} {trace.lru_hit_ratio(sc, size):.3f}" for name, size in
                                           [("32 KiB", 32 << 10), ("1 MiB", 1 << 20), ("8 MiB", 8 << 20)]))
    return 0


def cmd_trace_slice(args: argparse.Namespace) -> int:
    from . import trace

    summary = trace.slice(args.file, args.output, skip=args.skip, limit=args.limit, thread=args.thread)
    print(f"wrote {summary['accesses']:,} accesses to {args.output} ({summary['file_bytes']:,} bytes)")
    return 0


def cmd_trace_cat(args: argparse.Namespace) -> int:
    from . import trace

    index = args.skip
    print(f"{'#':>12} {'kind':<6} {'address':>18} {'size':>4} {'pc':>18} {'instrs':>6}")
    for frame in trace.iter_chunks(args.file, skip=args.skip, limit=args.limit, thread=args.thread):
        lines = [f"{index + i:>12} {trace.KIND_NAMES[k]:<6} {a:#18x} {s:>4} {p:#18x} {n:>6}"
                 for i, (k, a, s, p, n) in enumerate(zip(frame["kind"], frame["addr"], frame["size"], frame["pc"],
                                                          frame["instrs"]))]
        print("\n".join(lines))
        index += len(frame)
    return 0


def cmd_trace_gen(args: argparse.Namespace) -> int:
    from . import trace
    from .config import merge, parse_override

    params: dict = {}
    for text in args.param or []:
        params = merge(params, parse_override(text))
    if args.accesses is not None:
        params["accesses"] = args.accesses
    workload = {"kind": args.kind, "params": params}
    summary = trace.generate(workload, args.output, seed=args.seed)
    print(f"wrote {summary['accesses']:,} accesses to {args.output} "
          f"({summary['file_bytes']:,} bytes, {summary['bytes_per_access']:.2f} bytes/access)")
    return 0


def _progress(quiet: bool, unit: str):
    """A progress callback and its closer: a bar on stderr, none if quiet."""
    if quiet:
        return None, lambda: None
    from .progress import bar

    return bar(unit)


def _wrote(summary: dict, path: str, source_bytes: int | None = None) -> str:
    text = (f"wrote {summary['accesses']:,} accesses, {summary['instructions']:,} instructions to {path} "
            f"({summary['file_bytes']:,} bytes, {summary['bytes_per_access']:.2f} bytes/access")
    if source_bytes:
        text += f", {source_bytes / summary['file_bytes']:.1f}x smaller than the input"
    return text + ")"


def cmd_trace_convert(args: argparse.Namespace) -> int:
    from . import trace

    params: dict = {}
    if args.access_bytes is not None:
        params["access_bytes"] = args.access_bytes
    if args.ifetch:
        params["ifetch"] = True
    if args.skip:
        params["skip"] = args.skip
    if args.limit is not None:
        params["limit"] = args.limit
    progress, close = _progress(args.quiet, " accesses")
    try:
        result = trace.convert(args.input, args.output, format=args.format, progress=progress, **params)
    finally:
        close()
    if not args.quiet:
        print(f"read {args.input} as {result['format']}; "
              + _wrote(result["summary"], args.output, Path(args.input).stat().st_size))
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    from .record import record

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    progress, close = _progress(args.quiet, " lackey accesses")
    try:
        result = record(command, args.output, skip=args.skip, limit=args.limit, ifetch=args.ifetch,
                        progress=progress)
    finally:
        close()
    if not args.quiet:
        how = "stopped at the limit" if result["limit_reached"] else "the program ran to its end"
        print(f"{_wrote(result, args.output)}; {how}", file=sys.stderr)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from . import bench

    figures = bench.run(accesses=args.accesses, repeat=args.repeat, with_pycachesim=not args.no_pycachesim,
                        cache_dir=Path(args.cache_dir) if args.cache_dir else None)
    if args.json:
        write_text(args.json, bench.main_json(figures) + "\n")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from . import sweep
    from .store import default_store

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
    from . import sweep

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
    from .results import load
    from .store import Store, default_store

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
    from .store import default_store, rebuild

    store = args.store or default_store()
    counts = rebuild(store)
    skipped = f"; {counts['skipped']} run folders did not read back and will run again" if counts["skipped"] else ""
    print(f"{store}: a new ledger with {counts['runs']} runs and {counts['sweeps']} sweeps{skipped}")
    return 0


def cmd_results_show(args: argparse.Namespace) -> int:
    from .store import Store

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
    from .results import load

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


def cmd_report(args: argparse.Namespace) -> int:
    from . import report

    source = args.results[0] if len(args.results) == 1 else args.results
    try:
        paths = report.build(source, args.out, title=args.title, formats=args.format.split(","))
    except FileNotFoundError as e:
        raise SystemExit(f"error: {e}") from None
    print(f"wrote {len(paths) - 1} figure files and {paths[-1]}")
    return 0


_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}


def _size(text: str) -> int:
    """A size in bytes as configs write them: ``4096``, ``32KiB``, ``1MiB``,
    ``1TiB`` (K, KB and KiB are all 1024)."""
    import re

    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise argparse.ArgumentTypeError(f"expected a size such as 32768, 32KiB, 1MiB or 1TiB, got {text!r}")
    size = int(m.group(1)) * _UNITS[m.group(2).lower()]
    if not 0 < size < 1 << 64:
        raise argparse.ArgumentTypeError(f"expected a size above 0 and below 2^64 bytes, got {text!r}")
    return size


def _whole(lo: int, hi: int = (1 << 64) - 1):
    """An argparse type: a whole number in ``[lo, hi]`` (the core's counts are
    unsigned 64-bit, threads 32-bit), or a usage error that says so."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not lo <= value <= hi:
            bound = f"at least {lo}" if hi == (1 << 64) - 1 else f"from {lo} to {hi}"
            raise argparse.ArgumentTypeError(f"expected a whole number {bound}, got {text!r}")
        return value

    return parse


#: Argument types: counts that may be 0, counts of at least 1, thread ids.
_COUNT, _POSITIVE, _THREAD = _whole(0), _whole(1), _whole(0, (1 << 32) - 1)


def cmd_mrc(args: argparse.Namespace) -> int:
    from . import missratio

    if args.bench:
        from . import bench

        figures = bench.mrc_run(accesses=args.accesses, repeat=args.repeat, sample=args.sample or 0.01,
                                cache_dir=Path(args.cache_dir) if args.cache_dir else None)
        if args.json:
            write_text(args.json, bench.main_json(figures) + "\n")
        return 0
    if not args.trace:
        raise ConfigError.single("", "missing_trace", "give a .cst trace (or --bench)")
    sizes = [s for group in args.sizes for s in group] if args.sizes else None
    progress, close = _progress(args.quiet, " accesses")
    try:
        frame = missratio.mrc(args.trace, sets=args.sets, line_bytes=args.line_bytes, sizes=sizes,
                              sample=args.sample, thread=args.thread, ifetch=args.ifetch, progress=progress)
    finally:
        close()
    if args.csv:
        with staged(args.csv) as temp:
            frame.to_csv(temp, index=False)
    if args.output:
        missratio.plot(frame, args.output, title=Path(args.trace).name)
    if not args.quiet:
        a = frame.attrs
        what = "fully associative" if args.sets is None else f"{args.sets} sets"
        if a["rate"] != 1.0:
            footprint = f"{a['lines']:,} distinct lines sampled (about {a['lines'] / a['rate']:,.0f} in all)"
            sampled = f", sampled at {a['rate']:g} ({a['sampled']:,} references kept)"
        else:
            footprint, sampled = f"{a['lines']:,} distinct lines", ""
        lines = [f"{args.trace}: {a['references']:,} line references, {footprint}; LRU, {what}{sampled}",
                 f"{'size':>12} {'ways':>6} {'miss ratio':>10} {'misses':>14}"]
        for row in frame.itertuples():
            ways = "-" if row.ways is None else f"{row.ways}"
            lines.append(f"{missratio._size_label(row.size_bytes):>12} {ways:>6} {row.miss_ratio:>10.4f} "
                         f"{row.misses:>14,}")
        lines += [f"wrote {path}" for path in (args.csv, args.output) if path]
        try:
            print("\n".join(lines))
        except BrokenPipeError:
            # `cachesched mrc x.cst | head`: the reader has seen enough.
            sys.stdout = None
            return 0
    return 0


def _suite_names(args: argparse.Namespace) -> list[str]:
    from .workloads import suite

    names = args.only.split(",") if args.only else list(suite.PROGRAMS)
    unknown = [n for n in names if n not in suite.PROGRAMS]
    if unknown:
        raise SystemExit(f"error: --only: unknown program {unknown[0]!r}; the suite has {', '.join(suite.PROGRAMS)}")
    return names


def cmd_suite_list(args: argparse.Namespace) -> int:
    from .workloads import suite

    recorded = {m["program"]: m for m in suite.manifests(args.size)}
    print(f"{'program':<10} {'stands for':<16} {'binary':<10} {'installed':<9} {'accesses':>12} "
          f"{'footprint':>11}  input")
    for name, p in suite.PROGRAMS.items():
        installed = "yes" if p.package is None or p.executable(Path(".")) else "no"
        m = recorded.get(name)
        accesses = f"{m['accesses']:,}" if m else "-"
        footprint = f"{m['footprint_lines'] * 64 / 2**20:.1f} MiB" if m else "-"
        print(f"{name:<10} {p.stands_for:<16} {p.binary:<10} {installed:<9} {accesses:>12} {footprint:>11}  "
              f"{m['input'] if m else ''}")
    return 0


def cmd_suite_install(args: argparse.Namespace) -> int:
    import shutil

    from .workloads import suite

    missing = suite.missing_packages(_suite_names(args))
    if args.browser and not (shutil.which("chromium") or shutil.which("chromium-browser")):
        missing.append("chromium")
    if not missing:
        print("every suite program is installed" + (", and chromium" if args.browser else ""))
        return 0
    root = [] if os.geteuid() == 0 else ["sudo"]
    if root and shutil.which("sudo") is None:
        print("run as root: apt-get install -y --no-install-recommends " + " ".join(missing), file=sys.stderr)
        return 1
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [*root, "apt-get", "install", "-y", "-q", "--no-install-recommends", *missing]
    print("installing " + ", ".join(missing), file=sys.stderr)
    if subprocess.run(install, env=env).returncode == 0:
        return 0
    # A fresh machine may have no package lists yet.
    if subprocess.run([*root, "apt-get", "update", "-q"], env=env).returncode != 0:
        return 1
    return subprocess.run(install, env=env).returncode


def cmd_suite_record(args: argparse.Namespace) -> int:
    from .workloads import suite

    for name in _suite_names(args):
        progress, close = _progress(args.quiet, f" {name} accesses")
        try:
            m = suite.record(name, args.size, out_dir=Path(args.out) if args.out else None, force=args.force,
                             progress=progress)
        finally:
            close()
        print(f"{name:<10} {m['accesses']:>12,} accesses  {m['instructions']:>14,} instructions  "
              f"{m['footprint_lines'] * 64 / 2**20:7.1f} MiB  {m['trace']}")
    return 0


def cmd_study(args: argparse.Namespace) -> int:
    import inspect
    import time

    from . import studies
    from .studies.claims import Claims

    study = studies.get(args.name)
    out = Path(args.out or f"study-{args.name}" + ("-quick" if args.quick else ""))
    options = {"parts": args.parts.split(",") if args.parts else None, "size": args.size, "store": args.store,
               "workers": args.workers, "dask": args.dask, "progress": not args.quiet}
    # Each study takes the options that make sense for it; asking for one it
    # does not take is an error, not silently ignored.
    takes = inspect.signature(study.run).parameters
    refused = [k for k, v in options.items() if v not in (None, False) and k not in takes and k != "progress"]
    if refused:
        raise ConfigError.single(refused[0], "invalid_value",
                                 f"study {args.name} does not take --{refused[0]}")
    start = time.perf_counter()
    study.run(out, quick=args.quick, **{k: v for k, v in options.items() if k in takes})
    claims = Claims.read(out / "claims.csv")
    for c in claims.itertuples(index=False):
        print(f"{c.id:<4} {c.verdict:<24} {c.measured if isinstance(c.measured, str) else ''}")
    print(f"{out / 'index.html'} ({time.perf_counter() - start:.0f} s)")
    return 0


def cmd_suite_validate(args: argparse.Namespace) -> int:
    import tempfile

    from .workloads import suite

    names = args.only.split(",") if args.only else list(suite.VALIDATED)
    worst = 0.0
    print(f"{'program':<10} {'instructions':>12} {'D1 misses':>10} {'cachegrind':>10} {'diff':>7} "
          f"{'LL data':>9} {'cachegrind':>10} {'diff':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            r = suite.validate(name, Path(tmp) / name)
            diffs = []
            for key in ("d1_misses", "ll_data_misses"):
                ours, theirs = r[key]["ours"], r[key]["cachegrind"]
                diffs.append((ours - theirs) / theirs if theirs else 0.0)
            worst = max(worst, *map(abs, diffs))
            print(f"{name:<10} {r['instructions']['ours']:>12,} {r['d1_misses']['ours']:>10,} "
                  f"{r['d1_misses']['cachegrind']:>10,} {diffs[0]:>+7.2%} {r['ll_data_misses']['ours']:>9,} "
                  f"{r['ll_data_misses']['cachegrind']:>10,} {diffs[1]:>+7.2%}")
    print(f"largest difference {worst:.2%} (tolerance 2%)")
    return 0 if worst <= 0.02 else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cachesched",
        description="Simulate what OS and hypervisor scheduling does to caches, TLBs and NUMA memory.",
    )
    parser.add_argument("--version", action="version", version=f"cachesched {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def config_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("config", nargs="?", help="TOML configuration file")
        p.add_argument("--example", metavar="NAME", help="use a built-in example instead of a file")
        p.add_argument("--set", action="append", metavar="KEY=VALUE",
                       help="override a key, e.g. --set machine.l2.ways=8 (repeatable)")
        p.add_argument("--seed", type=_COUNT, help="same as --set seed=N")
        p.add_argument("--accesses", type=_POSITIVE, help="same as --set run.max_accesses=N")

    run = sub.add_parser("run", help="simulate a configuration")
    config_args(run)
    run.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE ('-' for stdout)")
    run.add_argument("--out", metavar="DIR", help="write results.json and Parquet tables into DIR")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no report")
    run.set_defaults(func=cmd_run)

    cfg = sub.add_parser("config", help="print a configuration as the simulator will run it")
    config_args(cfg)
    cfg.set_defaults(func=cmd_config)

    pre = sub.add_parser("presets", help="list the machine presets, or print one")
    pre.add_argument("name", nargs="?", help="preset to print as TOML")
    pre.set_defaults(func=cmd_presets)

    ex = sub.add_parser("examples", help="list the built-in example configurations")
    ex.set_defaults(func=cmd_examples)

    tr = sub.add_parser("trace", help="inspect and generate trace files")
    tsub = tr.add_subparsers(dest="trace_command", required=True, metavar="ACTION")
    info = tsub.add_parser("info", help="summary of a .cst trace (add --scan for footprint and mix)")
    info.add_argument("file")
    info.add_argument("--scan", action="store_true", help="read the whole trace: mix, footprint, addresses")
    info.add_argument("--thread", type=_THREAD, help="thread of a multi-thread trace (with --scan)")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=cmd_trace_info)
    gen = tsub.add_parser("gen", help="write a synthetic workload's stream to a .cst file")
    gen.add_argument("kind", help="stream, uniform, zipf, chase, loop, phases, mix (docs/workloads.md), or a one-thread kernel: cg, mg, ft, is, ep, latency (docs/kernels.md)")
    gen.add_argument("-o", "--output", required=True, help="trace file to write")
    gen.add_argument("--accesses", type=_POSITIVE, help="length of the stream")
    gen.add_argument("--param", action="append", metavar="KEY=VALUE",
                     help="a generator parameter, e.g. --param working_set_bytes=64MiB (repeatable)")
    gen.add_argument("--seed", type=_COUNT, default=1)
    gen.set_defaults(func=cmd_trace_gen)
    sl = tsub.add_parser("slice", help="copy a range of a trace's accesses to a new .cst file")
    sl.add_argument("file")
    sl.add_argument("-o", "--output", required=True, help="trace file to write")
    sl.add_argument("--skip", type=_COUNT, default=0, help="accesses to leave out at the start")
    sl.add_argument("--limit", type=_POSITIVE, help="accesses to keep (default: all after the skip)")
    sl.add_argument("--thread", type=_THREAD, help="thread of a multi-thread trace")
    sl.set_defaults(func=cmd_trace_slice)
    cat = tsub.add_parser("cat", help="print a trace's accesses as text")
    cat.add_argument("file")
    cat.add_argument("--skip", type=_COUNT, default=0, help="accesses to leave out at the start")
    cat.add_argument("--limit", type=_POSITIVE, help="accesses to print (default: all)")
    cat.add_argument("--thread", type=_THREAD, help="thread of a multi-thread trace")
    cat.set_defaults(func=cmd_trace_cat)

    conv = tsub.add_parser("convert", help="convert a lackey, ChampSim, din (or .cst) trace to a .cst file")
    conv.add_argument("input", help="trace to read; gzip and xz are decompressed")
    conv.add_argument("output", help=".cst file to write")
    conv.add_argument("--format", default="auto", choices=["auto", "lackey", "champsim", "din", "cst"],
                      help="input format (default: recognised from the first bytes)")
    conv.add_argument("--access-bytes", type=_whole(1, 65535), help="ChampSim only: bytes per access (default 64)")
    conv.add_argument("--ifetch", action="store_true", help="lackey only: keep instruction fetches")
    conv.add_argument("--skip", type=_COUNT, default=0, help="accesses to leave out at the start")
    conv.add_argument("--limit", type=_POSITIVE, help="accesses to keep after the skip (default: all)")
    conv.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    conv.set_defaults(func=cmd_trace_convert)

    rec = sub.add_parser("record", help="record a program's memory accesses with valgrind lackey",
                         usage="cachesched record -o OUT.cst [--skip N] [--limit M] [--ifetch] [-q] -- PROGRAM ARGS...")
    rec.add_argument("-o", "--output", required=True, help=".cst file to write")
    rec.add_argument("--skip", type=_COUNT, default=0, metavar="N",
                     help="drop the accesses of the first N instructions (warm-up)")
    rec.add_argument("--limit", type=_POSITIVE, metavar="M", help="stop after M accesses (and stop the program)")
    rec.add_argument("--ifetch", action="store_true", help="keep instruction fetches as accesses")
    rec.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    rec.add_argument("command", nargs=argparse.REMAINDER, help="the program and its arguments, after --")
    rec.set_defaults(func=cmd_record)

    su = sub.add_parser("suite", help="the benchmark suite of real programs: install, record, validate")
    ssub = su.add_subparsers(dest="suite_command", required=True, metavar="ACTION")
    sizes = ("tiny", "small", "full")
    sl_ = ssub.add_parser("list", help="the programs, what they stand for, and what is recorded")
    sl_.add_argument("--size", choices=sizes, default="small")
    sl_.set_defaults(func=cmd_suite_list)
    si = ssub.add_parser("install", help="install the missing programs from Debian's packages (as root)")
    si.add_argument("--only", metavar="A,B", help="some programs only")
    si.add_argument("--browser", action="store_true",
                    help="also chromium, the browser the test suite opens the HTML report in")
    si.set_defaults(func=cmd_suite_install)
    sr = ssub.add_parser("record", help="record each program's trace (cached; --force records again)")
    sr.add_argument("--size", choices=sizes, default="small", help="input size (default small)")
    sr.add_argument("--only", metavar="A,B", help="some programs only")
    sr.add_argument("--out", metavar="DIR", help="where traces go (default ~/.cache/cachesched/suite/SIZE)")
    sr.add_argument("--force", action="store_true", help="record again even if cached")
    sr.add_argument("-q", "--quiet", action="store_true", help="no progress")
    sr.set_defaults(func=cmd_suite_record)
    sv = ssub.add_parser("validate", help="compare D1 and LL misses with cachegrind on whole tiny runs")
    sv.add_argument("--only", metavar="A,B", help="programs to compare (default: bzip2, mcf, omnetpp, sqlite)")
    sv.set_defaults(func=cmd_suite_validate)

    from .studies import STUDIES

    st = sub.add_parser("study", help="re-run a source document's experiments; claims beside measured values "
                                      "(docs/studies.md)")
    st.add_argument("name", choices=sorted(STUDIES), help="; ".join(f"{k}: {v[1]}" for k, v in STUDIES.items()))
    st.add_argument("--quick", action="store_true", help="the short version (small traces, scaled-down intervals)")
    st.add_argument("-o", "--out", metavar="DIR", help="report directory (default ./study-NAME[-quick])")
    st.add_argument("--parts", metavar="A,B", help="run only these parts (the others are listed as not run)")
    st.add_argument("--size", choices=["tiny", "small", "full"], help="suite trace size (default: small if --quick, "
                                                                     "else full)")
    st.add_argument("--store", metavar="DIR", help="results store of the runs (default DIR/store; reused on resume)")
    st.add_argument("--workers", type=_POSITIVE, default=2, metavar="N", help="local worker processes (default 2)")
    st.add_argument("--dask", metavar="tcp://HOST:PORT", help="run on this Dask distributed scheduler")
    st.add_argument("-q", "--quiet", action="store_true", help="no progress")
    st.set_defaults(func=cmd_study)

    sw = sub.add_parser("sweep", help="run a sweep of simulations into a results store (docs/sweeps.md)")
    sw.add_argument("spec", help="sweep file (TOML)")
    sw.add_argument("--workers", type=_POSITIVE, metavar="N", help="local worker processes (default: one per core)")
    sw.add_argument("--dask", metavar="tcp://HOST:PORT", help="run on this Dask distributed scheduler")
    sw.add_argument("--store", metavar="DIR", help=f"results store (default $CACHESCHED_STORE or ./cachesched-results)")
    sw.add_argument("--retry-failed", action="store_true", help="run the failed runs again")
    sw.add_argument("--bench", action="store_true",
                    help="time the sweep with 1 worker and with --workers (default 2), in fresh stores; print the ratio")
    sw.add_argument("--repeat", type=_POSITIVE, default=1, metavar="N", help="with --bench: best of N rounds")
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

    rep = sub.add_parser("report", help="figures (PNG, SVG) and a self-contained HTML page of saved runs")
    rep.add_argument("results", nargs="+", metavar="RESULTS",
                     help="a run directory (cachesched run --out), a directory of them, or a runs table (.csv, "
                          ".parquet) with a path column; several are compared")
    rep.add_argument("-o", "--out", required=True, metavar="DIR", help="directory for the figures and report.html")
    rep.add_argument("--title", default="cachesched report", help="the page's title")
    rep.add_argument("--format", default="png,svg", metavar="FMT,FMT",
                     help="figure formats (default png,svg; PNG is always written, the page embeds it)")
    rep.set_defaults(func=cmd_report)

    mr = sub.add_parser("mrc", help="LRU miss ratio of every cache size from one pass over a trace")
    mr.add_argument("trace", nargs="?", help=".cst trace")
    mr.add_argument("--thread", type=_THREAD, help="thread of a multi-thread trace")
    mr.add_argument("--sets", type=_POSITIVE, help="caches of this many sets, every associativity (default: fully associative)")
    mr.add_argument("--line-bytes", type=_POSITIVE, default=64, help="line size (default 64)")
    mr.add_argument("--sizes", type=_size, nargs="+", action="append", metavar="SIZE",
                    help="cache sizes, e.g. 32KiB 1MiB (default: 1, 2, 3, 4, 6, 8, ... ways or lines)")
    mr.add_argument("--sample", type=float, metavar="R",
                    help="spatial sampling rate, fully associative only (e.g. 0.01; default: exact)")
    mr.add_argument("--ifetch", action="store_true", help="count instruction fetches too (a unified cache)")
    mr.add_argument("-o", "--output", metavar="FILE", help="plot the curve to FILE (PNG, SVG, PDF)")
    mr.add_argument("--csv", metavar="FILE", help="write the curve as CSV")
    mr.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no table")
    mr.add_argument("--bench", action="store_true",
                    help="time one simulation of one size against one-pass curves of 20 sizes on the benchmark trace")
    mr.add_argument("--accesses", type=_POSITIVE, default=50_000_000, help="--bench: trace length (default 50M)")
    mr.add_argument("--repeat", type=_POSITIVE, default=1, help="--bench: runs of each; the best counts")
    mr.add_argument("--cache-dir", help="--bench: where the benchmark trace is kept (default ~/.cache/cachesched)")
    mr.add_argument("--json", metavar="FILE", help="--bench: also write the figures as JSON")
    mr.set_defaults(func=cmd_mrc)

    be = sub.add_parser("bench", help="throughput benchmark against pycachesim")
    be.add_argument("--accesses", type=_POSITIVE, default=50_000_000, help="trace length (default 50M)")
    be.add_argument("--repeat", type=_POSITIVE, default=1, help="runs of each simulator; the best counts")
    be.add_argument("--no-pycachesim", action="store_true", help="time our engine only")
    be.add_argument("--cache-dir", help="where the benchmark trace is kept (default ~/.cache/cachesched)")
    be.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    be.set_defaults(func=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except CacheschedError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `cachesched ... | head`: the reader has seen enough. Point stdout at
        # /dev/null so that Python's exit flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
