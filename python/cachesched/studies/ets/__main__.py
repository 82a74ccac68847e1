"""``python -m cachesched.studies.ets [--quick] [-o DIR] [-j N] [--size S]
[--programs a,b]``: run the ETS study and print its claims table."""

from __future__ import annotations

import argparse

from . import run


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m cachesched.studies.ets", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny traces of four programs (under 2 minutes)")
    parser.add_argument("-o", "--out", default="ets-study", help="output directory (default: ets-study)")
    parser.add_argument("-j", "--workers", type=int, default=2, help="simulations at once (default: 2)")
    parser.add_argument("--size", choices=("tiny", "small", "full"), help="suite trace size (default: tiny with "
                        "--quick, else small)")
    parser.add_argument("--programs", help="comma-separated suite programs (default: the study's choice)")
    args = parser.parse_args(argv)
    out = run(args.out, args.quick, args.workers, args.programs.split(",") if args.programs else None, args.size)
    for c in out["claims"]:
        print(f"{c['id']:>3}  {c['verdict']:<15} {c['measured']}")
    print(out["notes"])
    print(f"report: {out['files']['index']}")


if __name__ == "__main__":
    main()
