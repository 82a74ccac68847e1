"""Plots and a self-contained HTML report of one run, several runs, or a
table of runs (docs/report.md).

>>> from cachesched import report
>>> paths = report.build("out/run1", "out/report")  # doctest: +SKIP

The input is normalised once by :func:`load` into :class:`Runs`; the
figures (:mod:`.figures`) and the page (:mod:`.page`) read only that, so a
new source of runs (the sweep store) needs only a table with a ``path``
column, or a new branch in :func:`load`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from . import figures, page
from .runs import Run, Runs, Source, from_table, load, metrics, read_run

__all__ = ["Run", "Runs", "Source", "build", "from_table", "load", "metrics", "read_run"]


def build(
    source: Source | Runs,
    out: str | Path,
    *,
    title: str = "cachesched report",
    formats: Sequence[str] = figures.FORMATS,
    variants: Sequence[str] | None = None,
) -> list[Path]:
    """Write the figures (each in ``formats``) and ``report.html`` into
    ``out``; returns the paths written, the page last.

    ``source`` is anything :func:`load` accepts (a :class:`~cachesched.Results`,
    a saved run directory, a directory of them, a mapping or list of them, a
    DataFrame of runs) or :class:`Runs`; ``variants`` names the DataFrame's
    variant columns when the default guess is wrong. PNG is always written:
    the page embeds it.
    """
    runs = source if isinstance(source, Runs) else load(source, variants)
    directory = Path(out)
    fmts = tuple(dict.fromkeys(["png", *formats]))
    drawn = figures.write(runs, directory, fmts)
    html = page.write(runs, drawn, directory / "report.html", title)
    return [p for d in drawn for p in d.files.values()] + [html]
