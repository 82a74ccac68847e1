"""bench: throughput against pycachesim and of the scheduling scenario."""

from __future__ import annotations

import argparse
from pathlib import Path

from .._files import write_text
from .common import POSITIVE


def cmd_bench(args: argparse.Namespace) -> int:
    from .. import bench

    figures = bench.run(accesses=args.accesses, repeat=args.repeat, with_pycachesim=not args.no_pycachesim,
                        cache_dir=Path(args.cache_dir) if args.cache_dir else None)
    if args.json:
        write_text(args.json, bench.main_json(figures) + "\n")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the commands of this group to the parser."""
    be = sub.add_parser("bench", help="throughput benchmark against pycachesim")
    be.add_argument("--accesses", type=POSITIVE, default=50_000_000, help="trace length (default 50M)")
    be.add_argument("--repeat", type=POSITIVE, default=1, help="runs of each simulator; the best counts")
    be.add_argument("--no-pycachesim", action="store_true", help="time our engine only")
    be.add_argument("--cache-dir", help="where the benchmark trace is kept (default ~/.cache/cachesched)")
    be.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    be.set_defaults(func=cmd_bench)
