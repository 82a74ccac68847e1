"""The ``cachesched`` command line: one module per command group, each with
its handlers and a ``register(sub)`` that adds its subcommands."""

from __future__ import annotations

import argparse
import os
import sys

from .. import __version__
from ..errors import CacheschedError, ConfigError
from . import bench, mrc, report, run, study, suite, sweep, trace


#: The command groups, in the order ``cachesched --help`` lists them.
GROUPS = (run, trace, suite, study, sweep, report, mrc, bench)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cachesched",
        description="Simulate what OS and hypervisor scheduling does to caches, TLBs and NUMA memory.",
    )
    parser.add_argument("--version", action="version", version=f"cachesched {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in GROUPS:
        group.register(sub)
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
