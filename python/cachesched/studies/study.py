"""The study framework: a :class:`Study` is one source document's
experiments, split into :class:`Part`\\ s run in order; every study is run
by :meth:`Study.run`, which hands each part a :class:`Context` and writes
one report (claims table, page, figures, tables).

A part is a module with ``CLAIMS`` (its claims as ``(id, claim, spec
value)``, registered before anything runs, so a part left out or not built
still lists them) and ``run(ctx) -> Section``: it runs its simulations
through :mod:`.runs` into ``ctx.store`` (parallel, Dask-capable, stored
once, resumable), judges its claims on ``ctx.claims`` and returns its page
section with the tables its claims come from. Tables of the parts already
run are in ``ctx.tables``, for a claim that spans two parts.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .._files import write_text
from ..errors import ConfigError
from .claims import Claims
from .page import Section, write
from .runs import Simulated

#: The options every study takes, with :meth:`Study.run`'s defaults.
OPTIONS = ("parts", "size", "store", "workers", "dask", "progress")


@dataclass(frozen=True)
class Part:
    """One part of a study: its name (for ``--parts``), the spec section it
    reproduces, its title, and the module that runs it."""

    name: str
    section: str
    title: str
    module: str


@dataclass
class Context:
    """What a part gets: where to write, how big a study, the claims to
    judge, how to run simulations, the study's own ``options`` (those in
    :attr:`Study.extra`), the tables of the parts run before it, and
    ``state`` that the parts of one run share (traces recorded once)."""

    study: str
    out: Path
    quick: bool
    size: str
    store: Path
    workers: int | None
    dask: Any
    progress: bool
    options: dict[str, Any] = field(default_factory=dict)
    claims: Claims = field(default_factory=Claims)
    simulated: Simulated = field(default_factory=Simulated)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)

    def log(self, message: str) -> None:
        if self.progress:
            print(f"[study {self.study}] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Study:
    """A source document's experiments. ``sizes`` gives the suite trace size
    of the quick and the full study; ``extra`` the options this study takes
    beyond :data:`OPTIONS` (name -> what it means); ``notes(ctx)`` adds the
    study's own lines (HTML) to the page's introduction."""

    name: str
    title: str
    spec: str
    parts: tuple[Part, ...]
    sizes: Mapping[str, str]
    extra: Mapping[str, str] = field(default_factory=dict)
    notes: Callable[[Context], str] | None = None
    #: Whether its runs are the open suite's programs (else its own workloads).
    suite: bool = True
    #: Whether it runs the suite's ``ref`` recordings (each program's
    #: heaviest SimPoint window, ``suite.representative``).
    takes_ref: bool = False

    @property
    def accepts(self) -> tuple[str, ...]:
        """Every option :meth:`run` takes besides ``out`` and ``quick``."""
        return OPTIONS + tuple(self.extra)

    def run(self, out: str | Path, *, quick: bool = False, parts: list[str] | None = None, size: str | None = None,
            store: str | Path | None = None, workers: int | None = 2, dask: Any = None, progress: bool = False,
            **options: Any) -> Path:
        """Run the parts (all by default) and write the report into ``out``:
        ``index.html``, ``claims.csv``, each part's figures (PNG, SVG) and
        tables (CSV, Parquet). ``quick`` runs the short version; ``size``
        overrides the suite trace size (``tiny``, ``small``, ``full``, and
        ``ref`` for the studies that take it). Runs
        are stored in ``store`` (default ``out/store``), so running again
        resumes. Returns the page's path."""
        names = [p.name for p in self.parts]
        chosen = parts or names
        bad = [p for p in chosen if p not in names]
        if bad:
            raise ConfigError.single("parts", "invalid_value",
                                     f"unknown part(s) {', '.join(bad)}; the study's parts: {', '.join(names)}")
        if size and not self.suite and size not in self.sizes.values():
            raise ConfigError.single("size", "invalid_value", f"study {self.name} runs sizes "
                                     f"{', '.join(sorted(set(self.sizes.values())))}, not {size}")
        if size == "ref" and not self.takes_ref:
            raise ConfigError.single("size", "invalid_value", f"study {self.name} does not run the suite's ref "
                                     "recordings (studies migration and ets do)")
        refused = sorted(set(options) - set(self.extra))
        if refused:
            raise ConfigError.single(refused[0], "invalid_value", f"study {self.name} does not take {refused[0]}")
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        ctx = Context(study=self.name, out=out, quick=quick, size=size or self.sizes["quick" if quick else "full"],
                      store=Path(store) if store else out / "store", workers=workers, dask=dask, progress=progress,
                      options=options)
        sections, timings, began = [], [], time.perf_counter()
        for part in self.parts:
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
            ctx.tables.update({name: df for name, (df, _) in section.tables.items()})
            timings.append(f"{part.name} {time.perf_counter() - start:.0f} s")
        seconds = time.perf_counter() - began
        sim = ctx.simulated
        done = {"seconds": seconds, "runs": sim.runs, "reused": sim.reused, "accesses": sim.accesses,
                "accesses_per_s": sim.accesses / seconds if seconds > 0 else 0.0}
        write_text(out / "simulated.json", json.dumps(done, indent=2))
        mode = f"{'quick' if quick else 'full'}" + (f" (suite size {ctx.size})" if self.suite else "")
        where = " on the open suite (docs/suite.md)," if self.suite else ","
        intro = (f"<p>Re-runs the experiments of <code>{self.spec}</code>{where} "
                 f"{mode}; see docs/studies.md. Wall time: {', '.join(timings) or 'nothing run'}. "
                 f"Simulated: {sim.runs} runs through the sweep machinery ({sim.reused} reused from the store), "
                 f"{sim.accesses:,} references, {done['accesses_per_s'] / 1e6:.1f} M references/s of wall time.</p>"
                 + (self.notes(ctx) if self.notes else ""))
        return write(out, self.title, intro, sections, ctx.claims)
