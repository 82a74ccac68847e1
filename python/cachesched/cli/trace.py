"""trace info, gen, slice, cat, convert, and record: trace files and real programs."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .common import COUNT, POSITIVE, THREAD, progress_bar, whole_arg, wrote_line


def cmd_trace_info(args: argparse.Namespace) -> int:
    from .. import trace

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
    about = info["meta"].get("simpoint") if isinstance(info["meta"], dict) else None
    if about:
        print(f"simpoint      {len(about['windows'])} windows of {about['intervals']:,} intervals of "
              f"{about['interval']:,} instructions ({about['total_instructions']:,} in the run), each thread a "
              "window (`cachesched trace estimate` weighs them):")
        from ..workloads.simpoint import describe

        print("\n".join(describe(about)))
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


def cmd_trace_estimate(args: argparse.Namespace) -> int:
    from ..config import resolve
    from ..workloads import simpoint

    # The machine as a run would resolve it (the workload is only there to
    # make a whole config; each window replaces it).
    base = {"machine": {"preset": args.preset or "standard"}, "workload": {"kind": "stream"}}
    machine = resolve(base, list(args.set or []))["machine"]
    table = simpoint.estimate(args.file, machine=machine)
    if args.json:
        print(table.to_json(orient="records", indent=2))
        return 0
    weighted = table[table.window == "weighted"]
    print(f"{args.file}: {table.window.nunique() - 1} SimPoint windows, weighted by their phases' shares")
    print(f"{'level':<6} {'kind':<7} {'accesses':>14} {'misses':>14} {'miss ratio':>10} {'MPKI':>8} "
          f"{'compulsory':>10}")
    for row in weighted.itertuples():
        share = row.compulsory / row.misses if row.misses else 0.0
        print(f"{row.level:<6} {row.kind:<7} {row.accesses:>14,.0f} {row.misses:>14,.0f} {row.miss_ratio:>10.4f} "
              f"{row.mpki:>8.2f} {share:>10.1%}")
    return 0


def cmd_trace_slice(args: argparse.Namespace) -> int:
    from .. import trace

    summary = trace.slice(args.file, args.output, skip=args.skip, limit=args.limit, thread=args.thread)
    print(f"wrote {summary['accesses']:,} accesses to {args.output} ({summary['file_bytes']:,} bytes)")
    return 0


def cmd_trace_cat(args: argparse.Namespace) -> int:
    from .. import trace

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
    from .. import trace
    from ..config import merge, parse_override

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


def cmd_trace_convert(args: argparse.Namespace) -> int:
    from .. import trace

    params: dict = {}
    if args.access_bytes is not None:
        params["access_bytes"] = args.access_bytes
    if args.ifetch:
        params["ifetch"] = True
    if args.skip:
        params["skip"] = args.skip
    if args.limit is not None:
        params["limit"] = args.limit
    progress, close = progress_bar(args.quiet, " accesses")
    try:
        result = trace.convert(args.input, args.output, format=args.format, progress=progress, **params)
    finally:
        close()
    if not args.quiet:
        print(f"read {args.input} as {result['format']}; "
              + wrote_line(result["summary"], args.output, Path(args.input).stat().st_size))
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    from ..record import record

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if args.simpoints:
        return _record_simpoints(args, command)
    progress, close = progress_bar(args.quiet, " lackey accesses")
    try:
        result = record(command, args.output, skip=args.skip, limit=args.limit, ifetch=args.ifetch,
                        progress=progress)
    finally:
        close()
    if not args.quiet:
        how = "stopped at the limit" if result["limit_reached"] else "the program ran to its end"
        print(f"{wrote_line(result, args.output)}; {how}", file=sys.stderr)
    return 0


def _record_simpoints(args: argparse.Namespace, command: list[str]) -> int:
    from ..errors import RecordError
    from ..workloads import simpoint

    if args.skip or args.limit is not None:
        raise RecordError("--simpoints chooses its own windows: it takes neither --skip nor --limit")
    if not args.quiet:
        print(f"profiling {command[0]} with exp-bbv, intervals of {args.interval:,} instructions ...",
              file=sys.stderr)
    progress, close = progress_bar(args.quiet, " instructions")
    try:
        result = simpoint.record(command, args.output, interval=args.interval, warmup=args.warmup,
                                 max_k=args.max_k, seed=args.seed, ifetch=args.ifetch, progress=progress,
                                 stdout=None)
    finally:
        close()
    if not args.quiet:
        about = result["simpoint"]
        print(f"{wrote_line(result, args.output)}; {len(about['windows'])} windows of "
              f"{about['intervals']:,} intervals ({about['total_instructions']:,} instructions):", file=sys.stderr)
        print("\n".join(simpoint.describe(about)), file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the commands of this group to the parser."""
    tr = sub.add_parser("trace", help="inspect and generate trace files")
    tsub = tr.add_subparsers(dest="trace_command", required=True, metavar="ACTION")
    info = tsub.add_parser("info", help="summary of a .cst trace (add --scan for footprint and mix)")
    info.add_argument("file")
    info.add_argument("--scan", action="store_true", help="read the whole trace: mix, footprint, addresses")
    info.add_argument("--thread", type=THREAD, help="thread of a multi-thread trace (with --scan)")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=cmd_trace_info)
    gen = tsub.add_parser("gen", help="write a synthetic workload's stream to a .cst file")
    gen.add_argument("kind", help="stream, uniform, zipf, chase, loop, phases, mix (docs/workloads.md), or a "
                                  "one-thread kernel: cg, mg, ft, is, ep, bt, sp, lu, latency (docs/kernels.md)")
    gen.add_argument("-o", "--output", required=True, help="trace file to write")
    gen.add_argument("--accesses", type=POSITIVE, help="length of the stream")
    gen.add_argument("--param", action="append", metavar="KEY=VALUE",
                     help="a generator parameter, e.g. --param working_set_bytes=64MiB (repeatable)")
    gen.add_argument("--seed", type=COUNT, default=1)
    gen.set_defaults(func=cmd_trace_gen)
    est = tsub.add_parser("estimate", help="simulate each window of a SimPoint trace (record --simpoints) and "
                                           "weigh them into the whole run's miss ratios")
    est.add_argument("file")
    est.add_argument("--preset", help="machine preset (default: the standard machine)")
    est.add_argument("--set", action="append", metavar="KEY=VALUE",
                     help="a machine setting, e.g. --set machine.llc.size_bytes=1MiB (repeatable)")
    est.add_argument("--json", action="store_true", help="print every window's rows and the weighted ones as JSON")
    est.set_defaults(func=cmd_trace_estimate)
    sl = tsub.add_parser("slice", help="copy a range of a trace's accesses to a new .cst file")
    sl.add_argument("file")
    sl.add_argument("-o", "--output", required=True, help="trace file to write")
    sl.add_argument("--skip", type=COUNT, default=0, help="accesses to leave out at the start")
    sl.add_argument("--limit", type=POSITIVE, help="accesses to keep (default: all after the skip)")
    sl.add_argument("--thread", type=THREAD, help="thread of a multi-thread trace")
    sl.set_defaults(func=cmd_trace_slice)
    cat = tsub.add_parser("cat", help="print a trace's accesses as text")
    cat.add_argument("file")
    cat.add_argument("--skip", type=COUNT, default=0, help="accesses to leave out at the start")
    cat.add_argument("--limit", type=POSITIVE, help="accesses to print (default: all)")
    cat.add_argument("--thread", type=THREAD, help="thread of a multi-thread trace")
    cat.set_defaults(func=cmd_trace_cat)

    conv = tsub.add_parser("convert", help="convert a lackey, ChampSim, din (or .cst) trace to a .cst file")
    conv.add_argument("input", help="trace to read; gzip and xz are decompressed")
    conv.add_argument("output", help=".cst file to write")
    conv.add_argument("--format", default="auto", choices=["auto", "lackey", "champsim", "din", "cst"],
                      help="input format (default: recognised from the first bytes)")
    conv.add_argument("--access-bytes", type=whole_arg(1, 65535), help="ChampSim only: bytes per access (default 64)")
    conv.add_argument("--ifetch", action="store_true", help="lackey only: keep instruction fetches")
    conv.add_argument("--skip", type=COUNT, default=0, help="accesses to leave out at the start")
    conv.add_argument("--limit", type=POSITIVE, help="accesses to keep after the skip (default: all)")
    conv.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    conv.set_defaults(func=cmd_trace_convert)

    rec = sub.add_parser("record", help="record a program's memory accesses with valgrind lackey",
                         usage="cachesched record -o OUT.cst [--skip N] [--limit M | --simpoints [--interval N] [--warmup N] "
                               "[--max-k K]] [--ifetch] [-q] -- PROGRAM ARGS...")
    rec.add_argument("-o", "--output", required=True, help=".cst file to write")
    rec.add_argument("--skip", type=COUNT, default=0, metavar="N",
                     help="drop the accesses of the first N instructions (warm-up)")
    rec.add_argument("--limit", type=POSITIVE, metavar="M", help="stop after M accesses (and stop the program)")
    rec.add_argument("--ifetch", action="store_true", help="keep instruction fetches as accesses")
    rec.add_argument("--simpoints", action="store_true",
                     help="profile the run with exp-bbv and record only its phases' representative intervals, "
                          "each after a warm-up, as the trace's threads (SimPoint; docs/suite.md)")
    rec.add_argument("--interval", type=POSITIVE, default=10_000_000, metavar="N",
                     help="with --simpoints: instructions per interval (default 10,000,000)")
    rec.add_argument("--warmup", type=COUNT, metavar="N",
                     help="with --simpoints: instructions of warm-up before each window (default one interval)")
    rec.add_argument("--max-k", type=POSITIVE, default=30, metavar="K",
                     help="with --simpoints: most phases (default 30)")
    rec.add_argument("--seed", type=COUNT, default=0, help="with --simpoints: the projection's and k-means' seed")
    rec.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    rec.add_argument("command", nargs=argparse.REMAINDER, help="the program and its arguments, after --")
    rec.set_defaults(func=cmd_record)
