"""The ``cachesched`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path

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


def cmd_bench(args: argparse.Namespace) -> int:
    from . import bench

    figures = bench.run(accesses=args.accesses, repeat=args.repeat, with_pycachesim=not args.no_pycachesim,
                        cache_dir=Path(args.cache_dir) if args.cache_dir else None)
    if args.json:
        Path(args.json).write_text(bench.main_json(figures) + "\n")
    return 0


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
        p.add_argument("--seed", type=int, help="same as --set seed=N")
        p.add_argument("--accesses", type=int, help="same as --set run.max_accesses=N")

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
    info.add_argument("--thread", type=int, help="thread of a multi-thread trace (with --scan)")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=cmd_trace_info)
    gen = tsub.add_parser("gen", help="write a synthetic workload's stream to a .cst file")
    gen.add_argument("kind", help="stream, uniform, zipf, chase, loop, phases, mix (docs/workloads.md), or a one-thread kernel: cg, mg, ft, is, ep, latency (docs/kernels.md)")
    gen.add_argument("-o", "--output", required=True, help="trace file to write")
    gen.add_argument("--accesses", type=int, help="length of the stream")
    gen.add_argument("--param", action="append", metavar="KEY=VALUE",
                     help="a generator parameter, e.g. --param working_set_bytes=64MiB (repeatable)")
    gen.add_argument("--seed", type=int, default=1)
    gen.set_defaults(func=cmd_trace_gen)

    be = sub.add_parser("bench", help="throughput benchmark against pycachesim")
    be.add_argument("--accesses", type=int, default=50_000_000, help="trace length (default 50M)")
    be.add_argument("--repeat", type=int, default=1, help="runs of each simulator; the best counts")
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


if __name__ == "__main__":
    sys.exit(main())
