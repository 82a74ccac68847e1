"""mrc: miss-ratio curves of every size from one pass."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .._files import staged, write_text
from ..errors import ConfigError
from .common import POSITIVE, THREAD, progress_bar, size_arg


def cmd_mrc(args: argparse.Namespace) -> int:
    from .. import missratio

    if args.bench:
        from .. import bench

        figures = bench.mrc_run(accesses=args.accesses, repeat=args.repeat, sample=args.sample or 0.01,
                                cache_dir=Path(args.cache_dir) if args.cache_dir else None)
        if args.json:
            write_text(args.json, bench.main_json(figures) + "\n")
        return 0
    if not args.trace:
        raise ConfigError.single("", "missing_trace", "give a .cst trace (or --bench)")
    sizes = [s for group in args.sizes for s in group] if args.sizes else None
    progress, close = progress_bar(args.quiet, " accesses")
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


def register(sub: argparse._SubParsersAction) -> None:
    """Add the commands of this group to the parser."""
    mr = sub.add_parser("mrc", help="LRU miss ratio of every cache size from one pass over a trace")
    mr.add_argument("trace", nargs="?", help=".cst trace")
    mr.add_argument("--thread", type=THREAD, help="thread of a multi-thread trace")
    mr.add_argument("--sets", type=POSITIVE, help="caches of this many sets, every associativity (default: fully associative)")
    mr.add_argument("--line-bytes", type=POSITIVE, default=64, help="line size (default 64)")
    mr.add_argument("--sizes", type=size_arg, nargs="+", action="append", metavar="SIZE",
                    help="cache sizes, e.g. 32KiB 1MiB (default: 1, 2, 3, 4, 6, 8, ... ways or lines)")
    mr.add_argument("--sample", type=float, metavar="R",
                    help="spatial sampling rate, fully associative only (e.g. 0.01; default: exact)")
    mr.add_argument("--ifetch", action="store_true", help="count instruction fetches too (a unified cache)")
    mr.add_argument("-o", "--output", metavar="FILE", help="plot the curve to FILE (PNG, SVG, PDF)")
    mr.add_argument("--csv", metavar="FILE", help="write the curve as CSV")
    mr.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no table")
    mr.add_argument("--bench", action="store_true",
                    help="time one simulation of one size against one-pass curves of 20 sizes on the benchmark trace")
    mr.add_argument("--accesses", type=POSITIVE, default=50_000_000, help="--bench: trace length (default 50M)")
    mr.add_argument("--repeat", type=POSITIVE, default=1, help="--bench: runs of each; the best counts")
    mr.add_argument("--cache-dir", help="--bench: where the benchmark trace is kept (default ~/.cache/cachesched)")
    mr.add_argument("--json", metavar="FILE", help="--bench: also write the figures as JSON")
    mr.set_defaults(func=cmd_mrc)
