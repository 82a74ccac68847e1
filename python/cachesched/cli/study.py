"""study: re-run a source document's experiments."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import ConfigError
from .common import POSITIVE

#: Options of ``cachesched study`` that only some studies take (``Study.extra``),
#: as they reach :meth:`Study.run`.
EXTRA = {"programs": lambda text: text.split(",")}


def cmd_study(args: argparse.Namespace) -> int:
    import time

    from .. import studies
    from ..studies.claims import Claims

    study = studies.get(args.name)
    out = Path(args.out or f"study-{args.name}" + ("-quick" if args.quick else ""))
    extra = {k: parse(getattr(args, k)) for k, parse in EXTRA.items() if getattr(args, k) is not None}
    # A study is asked what it takes: an option it does not take is an error,
    # not silently ignored.
    refused = [k for k in extra if k not in study.accepts]
    if refused:
        raise ConfigError.single(refused[0], "invalid_value", f"study {args.name} does not take --{refused[0]}")
    start = time.perf_counter()
    study.run(out, quick=args.quick, parts=args.parts.split(",") if args.parts else None, size=args.size,
              store=args.store, workers=args.workers, dask=args.dask, progress=not args.quiet, **extra)
    claims = Claims.read(out / "claims.csv")
    for c in claims.itertuples(index=False):
        print(f"{c.id:<4} {c.verdict:<24} {c.measured}")
    done = json.loads((out / "simulated.json").read_text())
    print(f"simulated {done['runs']} runs ({done['reused']} reused from the store): {done['accesses']:,} references, "
          f"{done['accesses_per_s'] / 1e6:.1f} M references/s of wall time")
    print(f"{out / 'index.html'} ({time.perf_counter() - start:.0f} s)")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the commands of this group to the parser."""
    from ..studies import STUDIES

    st = sub.add_parser("study", help="re-run a source document's experiments; claims beside measured values "
                                      "(docs/studies.md)")
    st.add_argument("name", choices=sorted(STUDIES), help="; ".join(f"{k}: {v[1]}" for k, v in STUDIES.items()))
    st.add_argument("--quick", action="store_true", help="the short version (small traces, scaled-down intervals)")
    st.add_argument("-o", "--out", metavar="DIR", help="report directory (default ./study-NAME[-quick])")
    st.add_argument("--parts", metavar="A,B", help="run only these parts (the others are listed as not run)")
    st.add_argument("--size", choices=["tiny", "small", "full", "ref"],
                    help="suite trace size (default: the study's, for --quick or the full study)")
    st.add_argument("--programs", metavar="A,B", help="suite programs to run, for the studies that take it (ets)")
    st.add_argument("--store", metavar="DIR", help="results store of the runs (default DIR/store; reused on resume)")
    st.add_argument("--workers", type=POSITIVE, default=2, metavar="N", help="local worker processes (default 2)")
    st.add_argument("--dask", metavar="tcp://HOST:PORT", help="run on this Dask distributed scheduler")
    st.add_argument("-q", "--quiet", action="store_true", help="no progress")
    st.set_defaults(func=cmd_study)
