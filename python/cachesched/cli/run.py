"""run, config, presets, examples: simulate a configuration and look at it."""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path

from ..config import presets, resolve
from ..errors import ConfigError
from .common import COUNT, POSITIVE


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
    from ..simulate import simulate

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
    if args.verbose:
        host = results.host
        print(f"host: {host['wall_seconds']:.2f} s, {host['accesses_per_second'] / 1e6:.1f} M references/s; "
              f"{host['threads']}", file=sys.stderr)
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


def register(sub: argparse._SubParsersAction) -> None:
    """Add the commands of this group to the parser."""
    def config_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("config", nargs="?", help="TOML configuration file")
        p.add_argument("--example", metavar="NAME", help="use a built-in example instead of a file")
        p.add_argument("--set", action="append", metavar="KEY=VALUE",
                       help="override a key, e.g. --set machine.l2.ways=8 (repeatable)")
        p.add_argument("--seed", type=COUNT, help="same as --set seed=N")
        p.add_argument("--accesses", type=POSITIVE, help="same as --set run.max_accesses=N")

    run = sub.add_parser("run", help="simulate a configuration")
    config_args(run)
    run.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE ('-' for stdout)")
    run.add_argument("--out", metavar="DIR", help="write results.json and Parquet tables into DIR")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no report")
    run.add_argument("-v", "--verbose", action="store_true",
                     help="also say how the host ran it: wall time, rate, and the threads its caches used")
    run.set_defaults(func=cmd_run)

    cfg = sub.add_parser("config", help="print a configuration as the simulator will run it")
    config_args(cfg)
    cfg.set_defaults(func=cmd_config)

    pre = sub.add_parser("presets", help="list the machine presets, or print one")
    pre.add_argument("name", nargs="?", help="preset to print as TOML")
    pre.set_defaults(func=cmd_presets)

    ex = sub.add_parser("examples", help="list the built-in example configurations")
    ex.set_defaults(func=cmd_examples)
