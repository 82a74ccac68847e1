"""``python -m cachesched.studies.ets [--quick] [-o DIR] [-j N]``: run the
ETS study and print its claims table."""

from __future__ import annotations

import argparse

from . import run


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m cachesched.studies.ets", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny traces of five programs (a few minutes)")
    parser.add_argument("-o", "--out", default="ets-study", help="output directory (default: ets-study)")
    parser.add_argument("-j", "--workers", type=int, default=2, help="simulations at once (default: 2)")
    args = parser.parse_args(argv)
    out = run(args.out, args.quick, args.workers)
    for c in out["claims"]:
        print(f"{c['id']:>3}  {c['verdict']:<15} {c['measured']}")
    print(out["notes"])
    print(f"report: {out['files']['index']}")


if __name__ == "__main__":
    main()
