"""report: figures and an HTML page of saved runs."""

from __future__ import annotations

import argparse


def cmd_report(args: argparse.Namespace) -> int:
    from .. import report

    source = args.results[0] if len(args.results) == 1 else args.results
    try:
        paths = report.build(source, args.out, title=args.title, formats=args.format.split(","))
    except FileNotFoundError as e:
        raise SystemExit(f"error: {e}") from None
    print(f"wrote {len(paths) - 1} figure files and {paths[-1]}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the commands of this group to the parser."""
    rep = sub.add_parser("report", help="figures (PNG, SVG) and a self-contained HTML page of saved runs")
    rep.add_argument("results", nargs="+", metavar="RESULTS",
                     help="a run directory (cachesched run --out), a directory of them, or a runs table (.csv, "
                          ".parquet) with a path column; several are compared")
    rep.add_argument("-o", "--out", required=True, metavar="DIR", help="directory for the figures and report.html")
    rep.add_argument("--title", default="cachesched report", help="the page's title")
    rep.add_argument("--format", default="png,svg", metavar="FMT,FMT",
                     help="figure formats (default png,svg; PNG is always written, the page embeds it)")
    rep.set_defaults(func=cmd_report)
