"""Running a study's simulations through the sweep machinery, so they run
in parallel (local workers or Dask), are stored once in a results store, and
a study stopped half-way resumes where it stopped (docs/sweeps.md).

A study describes its runs as :class:`Point`\\ s: labels of its own (which
benchmark, which experiment, which parameters) and a whole configuration.
They become one zip-mode sweep over the configuration's top-level tables;
the store's table comes back with the labels beside each run's metrics and
the folder of its detail tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .. import sweep
from ..errors import SimulationError
from ..store import load
from .claims import NOT_COMPARABLE
from .page import Section, method

#: The configuration's top-level tables a study point may set.
KEYS = ("machine", "tasks", "scheduler", "mechanisms", "run", "stats", "seed")


@dataclass
class Simulated:
    """What a study's sweeps ran: runs simulated now and reused from the
    store, and the references the runs simulated now (warm-up included)."""

    runs: int = 0
    reused: int = 0
    accesses: int = 0

    def add(self, outcome: sweep.Outcomes) -> None:
        self.runs += outcome.done
        self.reused += outcome.skipped
        self.accesses += outcome.accesses


@dataclass
class Point:
    """One run of a study: ``labels`` (columns of the returned table) and
    its configuration (top-level keys among :data:`KEYS`)."""

    labels: dict[str, Any]
    config: dict[str, Any]


def run(points: list[Point], store: str | Path, name: str, *, workers: int | None = 2, dask: Any = None,
        progress: bool = False, simulated: Simulated | None = None) -> pd.DataFrame:
    """Run every point (those already in ``store`` are not run again) and
    return one row per point, in order: its labels, ``status``, ``detail``
    (the folder of its ``results.json`` and Parquet tables) and the summary
    metrics; what ran is added to ``simulated``. Raises
    :class:`SimulationError` naming the first failed run."""
    used = sorted({k for p in points for k in p.config}, key=KEYS.index)
    unknown = {k for p in points for k in p.config} - set(KEYS)
    if unknown:
        raise ValueError(f"study points may set only {', '.join(KEYS)}, not {', '.join(sorted(unknown))}")
    axes = {k: [p.config.get(k, [] if k in ("tasks", "mechanisms") else {}) for p in points] for k in used}
    outcome = sweep.run({"name": name, "mode": "zip", "base": {}, "axes": axes}, store=store, workers=workers,
                        dask=dask, progress=progress)
    if simulated is not None:
        simulated.add(outcome)
    df = load(store, name).sort_values("position").reset_index(drop=True)
    failed = df[df["status"] != "done"]
    if len(failed):
        row = failed.iloc[0]
        raise SimulationError(f"{len(failed)} run(s) of {name} failed; the first ({points[row.position].labels}): "
                              f"{row.error}")
    labels = pd.DataFrame([p.labels for p in points])
    keep = [c for c in df.columns if c not in used and c not in ("sweep", "position", "variant", "key", "error")]
    return pd.concat([labels, df[keep]], axis=1)


def detail(row: Any, table: str) -> pd.DataFrame:
    """One detail table (``tasks``, ``mechanisms``, ...) of a run of :func:`run`'s table."""
    return pd.read_parquet(Path(row["detail"]) / f"{table}.parquet")


def traces(ctx: Any, programs: Any) -> dict[str, dict]:
    """The suite manifest of each program's trace at the study's size,
    recorded if not cached (docs/suite.md). A ``ref`` recording holds a
    whole run's SimPoint windows: its heaviest window, warm-up included,
    stands for the program (:func:`suite.representative`)."""
    from ..workloads import suite

    out = {}
    for name in programs:
        ctx.log(f"trace {name} ({ctx.size})")
        m = suite.record(name, ctx.size)
        out[name] = suite.representative(m) if "simpoint" in m else m
    return out


class _Detail:
    """A stored run's detail tables as attributes (``r.windows``,
    ``r.caches``, ...), read when asked for: what a part's measuring
    function takes from a :class:`~cachesched.results.Results`."""

    def __init__(self, row: Any) -> None:
        self._row = row

    def __getattr__(self, table: str) -> pd.DataFrame:
        return detail(self._row, table)

    @property
    def summary(self) -> dict[str, Any]:
        """The run's summary metrics (``cycles``, ``accesses``, ... of the
        measured part), as :attr:`cachesched.results.Results.summary` has them."""
        return {k: self._row[k] for k in ("cycles", "accesses", "instructions", "switches", "migrations")
                if k in self._row}


def simulator(ctx: Any, name: str):
    """A function from whole run configurations (``workload`` or ``tasks``,
    ``name`` ignored) to their results' detail tables, in order, that runs
    them as the study sweep ``name`` in ``ctx.store`` (parallel, stored,
    resumable): for parts whose experiments are written as configurations."""

    def simulate(configs: list[dict]) -> list[_Detail]:
        points = []
        for i, config in enumerate(configs):
            config = {k: v for k, v in config.items() if k != "name"}
            if "workload" in config:
                config["tasks"] = [{"workload": config.pop("workload")}]
            points.append(Point({"index": i}, config))
        table = run(points, ctx.store, name, workers=ctx.workers, dask=ctx.dask, progress=ctx.progress,
                    simulated=ctx.simulated)
        return [_Detail(row) for _, row in table.iterrows()]

    return simulate


def record_claims(claims: Any, found: list[dict], reason: str, source: str) -> None:
    """Set claims from a part's judgements (``id``, ``measured``, ``verdict``,
    ``why``). For a claim that does not fully hold, the difference is the
    measured value beside the spec's, and the likely reason the judgement's
    ``why`` followed by the part's general ``reason``."""
    for judged in found:
        claim = claims[judged["id"]]
        claim.measured, claim.verdict, claim.source = judged["measured"], judged["verdict"], source
        claim.values = {"measured": judged["measured"]}
        if judged["verdict"] != "holds":
            claim.difference = f"measured {judged['measured']}; the spec: {claim.spec}"
            # The part's general reason explains a difference, not what is not modelled.
            general = reason if judged["verdict"] != NOT_COMPARABLE else ""
            claim.reason = "; ".join(r for r in (judged.get("why"), general) if r)


def label(ax: Any, x: str | None, y: str, title: str) -> None:
    """Name a panel's axes and title, and show its legend."""
    if x:
        ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(title)
    ax.legend(fontsize=8)


def draw(make: Any, out: Path) -> list:
    """Draw a part's figures (``make()`` returns (name, title, caption,
    Figure) tuples) in the report's style and save them into ``out``."""
    from matplotlib import rc_context

    from ..report.figures import STYLE, Drawn, save

    with rc_context(STYLE):
        return [save(fig, out, Drawn(name=name, title=title, caption=caption))
                for name, title, caption, fig in make()]


def part(ctx: Any, name: str, doc: str, table: Any, claims: Any, figures: Any, caption: str,
         reason: str) -> Section:
    """Run a part whose claims come from one table: ``table(ctx)``, its
    claims judged from it (``reason``: the study's general reason for a
    difference), its figures drawn; returns its page section (method from
    ``doc``)."""
    df = table(ctx)
    record_claims(ctx.claims, claims(df), reason, source=name)
    drawn = draw(lambda: figures(df), ctx.out)
    return Section(name, "", method=method(doc), figures=drawn, tables={name: (df, caption)})


def part_with(ctx: Any, name: str, doc: str, table: Any, claims: Any, figures: Any, caption: str,
              reason: str) -> Section:
    """:func:`part` for a ``table(ctx)`` that returns the table and what
    only the figures draw (every request's response, every interval's
    shares), which ``figures(df, extra)`` takes."""
    held: dict[str, Any] = {}

    def measured(ctx: Any) -> Any:
        df, held["extra"] = table(ctx)
        return df

    return part(ctx, name, doc, measured, claims, lambda df: figures(df, held["extra"]), caption, reason)
