"""The migration study: spec tlb-preservation-and-migration-prefetch.md
(S. Reza's dissertation, "Reducing Migration-induced Misses in an
Over-Subscribed Multiprocessor System"), run by ``cachesched study migration``.

The study has four parts (:data:`PARTS`), one module each, run in order:

- ``tlb`` (§3): TLB preservation, simple save/restore and the aging
  predictors: :mod:`.tlb`;
- ``l2`` (§4): the idealized L2 selection study: :mod:`.l2`;
- ``prefetch`` (§5): the migration prefetcher: :mod:`.prefetch`;
- ``hwpf`` (§6): the comparison with stride and stream prefetchers:
  :mod:`.hwpf`.

**Adding a part.** Write ``studies/migration/<name>.py`` with ``CLAIMS``
(its claims as ``(id, claim, spec value)``; the runner registers them) and
``run(ctx: Context) -> Section``, which runs its simulations with
:func:`cachesched.studies.runs.run` into ``ctx.store`` (sweep names
starting ``migration-<name>``), judges each claim from its measured tables
(``ctx.claims["L1"].judge(...)``), draws its figures into ``ctx.out`` and
returns its page section with its tables. Then add it to :data:`PARTS`.
docs/studies.md has the details; :mod:`.tlb` is a worked example.
"""

from __future__ import annotations

import importlib
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ..claims import Claims
from ..page import Section, write

TITLE = "Migration study: TLB preservation and migration prefetching"
#: Suite size for the quick study and for the full one.
#: Quick uses ``small``, not ``tiny``: the tiny inputs of hmmer, gcc, gobmk and
#: h264ref are their small inputs recorded whole (10M to over 200M
#: references, many minutes of valgrind each), and the others' tiny runs are
#: mostly start-up, while small traces are 2M references of the programs'
#: steady state after a warm-up skip, recorded in under a minute each.
SIZES = {"quick": "small", "full": "full"}


@dataclass(frozen=True)
class Part:
    """One part of the study: its name, spec section and title, and its module."""

    name: str
    section: str
    title: str
    module: str


PARTS = (
    Part("tlb", "§3", "TLB preservation: save/restore and aging predictors", "cachesched.studies.migration.tlb"),
    Part("l2", "§4", "Idealized L2 selection (Local/Regional/Global MRU)", "cachesched.studies.migration.l2"),
    Part("prefetch", "§5", "Migration prefetcher (live and delayed)", "cachesched.studies.migration.prefetch"),
    Part("hwpf", "§6", "Migration prefetcher versus stride and stream prefetchers",
         "cachesched.studies.migration.hwpf"),
)


@dataclass
class Context:
    """What a part gets: where to write, how big a study, the claims to
    register on, and how to run simulations."""

    out: Path
    quick: bool
    size: str
    store: Path
    workers: int | None
    dask: Any
    progress: bool
    claims: Claims = field(default_factory=Claims)

    def log(self, message: str) -> None:
        if self.progress:
            print(f"[study migration] {message}", file=sys.stderr, flush=True)


def run(out: str | Path, *, quick: bool = False, parts: list[str] | None = None, size: str | None = None,
        store: str | Path | None = None, workers: int | None = 2, dask: Any = None,
        progress: bool = False) -> Path:
    """Run the study's parts (all built ones by default) and write the report
    into ``out``: ``index.html``, ``claims.csv``, each part's figures (PNG,
    SVG) and tables (CSV, Parquet). ``quick`` runs the short version (small
    traces, scaled-down intervals); ``size`` overrides the suite size
    (``tiny``, ``small``, ``full``). Runs are stored in ``store`` (default
    ``out/store``), so running again resumes. Returns the page's path."""
    names = [p.name for p in PARTS]
    chosen = parts or names
    bad = [p for p in chosen if p not in names]
    if bad:
        raise ConfigError.single("parts", "invalid_value",
                                 f"unknown part(s) {', '.join(bad)}; the study's parts: {', '.join(names)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ctx = Context(out=out, quick=quick, size=size or SIZES["quick" if quick else "full"],
                  store=Path(store) if store else out / "store", workers=workers, dask=dask, progress=progress)
    sections, timings = [], []
    for part in PARTS:
        title = f"{part.section} {part.title}"
        module = importlib.import_module(part.module)
        ctx.claims.planned(part.name, module.CLAIMS)
        if part.name not in chosen:
            status = "not run: left out by --parts"
            for c in ctx.claims.items:
                if c.part == part.name:
                    c.verdict = status
            sections.append(Section(part.name, title, status=status))
            continue
        start = time.perf_counter()
        ctx.log(f"part {part.name}: {part.title}")
        section = module.run(ctx)
        section.title = title
        sections.append(section)
        timings.append(f"{part.name} {time.perf_counter() - start:.0f} s")
    mode = f"quick (suite size {ctx.size})" if quick else f"full (suite size {ctx.size})"
    intro = (f"<p>Re-runs the experiments of <code>tlb-preservation-and-migration-prefetch.md</code> "
             f"on the open suite (docs/suite.md), {mode}; see docs/studies.md. Wall time: "
             f"{', '.join(timings) or 'nothing run'}.</p>")
    return write(out, TITLE, intro, sections, ctx.claims)
