"""suite list, install, record, validate: the open benchmark suite."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from .common import progress_bar


def _suite_names(args: argparse.Namespace) -> list[str]:
    from ..workloads import suite

    names = args.only.split(",") if args.only else list(suite.PROGRAMS)
    unknown = [n for n in names if n not in suite.PROGRAMS]
    if unknown:
        raise SystemExit(f"error: --only: unknown program {unknown[0]!r}; the suite has {', '.join(suite.PROGRAMS)}")
    return names


def cmd_suite_list(args: argparse.Namespace) -> int:
    from ..workloads import suite

    simpoints = suite.windowed(args.size, args.simpoints)
    recorded = {m["program"]: m for m in suite.manifests(args.size, simpoints=args.simpoints)}
    windows = " windows" if simpoints else ""
    print(f"{'program':<10} {'stands for':<16} {'binary':<10} {'installed':<9} {'accesses':>12} "
          f"{'footprint':>11} {'peak RSS':>10} {'trace':>9} {'took':>7}{windows}  input")
    for name, p in suite.PROGRAMS.items():
        installed = "yes" if p.package is None or p.executable(Path(".")) else "no"
        m = recorded.get(name)
        accesses = f"{m['accesses']:,}" if m else "-"
        footprint = f"{m['footprint_lines'] * 64 / 2**20:.1f} MiB" if m else "-"
        size = f"{m['trace_bytes'] / 2**20:.1f} MiB" if m else "-"
        rss = f"{m['peak_rss_bytes'] / 2**20:.1f} MiB" if m and "peak_rss_bytes" in m else "-"
        took = f"{m['record_seconds']:.0f} s" if m and "record_seconds" in m else "-"
        count = ""
        if simpoints:
            count = f" {len(m['simpoint']['windows']) if m and 'simpoint' in m else '-':>7}"
        print(f"{name:<10} {p.stands_for:<16} {p.binary:<10} {installed:<9} {accesses:>12} {footprint:>11} "
              f"{rss:>10} {size:>9} {took:>7}{count}  {m['input'] if m else ''}")
    return 0


def cmd_suite_install(args: argparse.Namespace) -> int:
    import shutil

    from ..workloads import suite

    from ..workloads import blockio

    missing = suite.missing_packages(_suite_names(args))
    if not args.only:  # everything: the recorded block I/O workloads' tools too
        missing = sorted(set(missing) | set(blockio.missing_packages()))
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
    from ..workloads import suite

    for name in _suite_names(args):
        # Whole runs recorded as windows count instructions up to the last one.
        unit = "instructions" if suite.windowed(args.size, args.simpoints, name) else "accesses"
        progress, close = progress_bar(args.quiet, f" {name} {unit}")
        try:
            m = suite.record(name, args.size, out_dir=Path(args.out) if args.out else None, force=args.force,
                             progress=progress, simpoints=args.simpoints)
        finally:
            close()
        print(f"{name:<10} {m['accesses']:>12,} accesses  {m['instructions']:>14,} instructions  "
              f"{m['footprint_lines'] * 64 / 2**20:7.1f} MiB  {m['trace']}")
    return 0


def cmd_suite_validate(args: argparse.Namespace) -> int:
    import tempfile

    from ..workloads import suite

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


def register(sub: argparse._SubParsersAction) -> None:
    """Add the commands of this group to the parser."""
    su = sub.add_parser("suite", help="the benchmark suite of real programs: install, record, validate")
    ssub = su.add_subparsers(dest="suite_command", required=True, metavar="ACTION")
    sizes = ("tiny", "small", "full", "ref")
    sl_ = ssub.add_parser("list", aliases=["ls"], help="the programs, what they stand for, and what is recorded")
    sl_.add_argument("--size", choices=sizes, default="small")
    sl_.add_argument("--simpoints", action="store_true", help="the recordings of whole runs' SimPoint windows")
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
    sr.add_argument("--simpoints", action="store_true",
                    help="record each whole run's phases as SimPoint windows (<name>-simpoints.cst) instead of a "
                         "window after a skip (always at --size ref)")
    sr.add_argument("-q", "--quiet", action="store_true", help="no progress")
    sr.set_defaults(func=cmd_suite_record)
    sv = ssub.add_parser("validate", help="compare D1 and LL misses with cachegrind on whole tiny runs")
    sv.add_argument("--only", metavar="A,B", help="programs to compare (default: bzip2, mcf, omnetpp, sqlite)")
    sv.set_defaults(func=cmd_suite_validate)
