"""A study's report: one self-contained ``index.html`` with the claims
table first, then one section per part of the study (its method, figures
and tables), a part not built yet said to be so.

The page reuses the run report's look and pieces (:mod:`cachesched.report.page`:
the stylesheet, the sortable tables, figures embedded as PNG data URIs), so
it loads nothing from the network or from beside it.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from .._files import staged, write_text
from ..store import ENGINE
from ..report import page as run_page
from ..report.figures import Drawn
from .claims import NOT_RUN, Claims

CSS = run_page.CSS + """
.verdict-holds { color: #1a7f37; } .verdict-partly { color: #9a6700; }
.verdict-does-not-hold { color: #cf222e; } .verdict-not-comparable { color: #6e7781; }
.verdict-not-run-in-this-version { color: #888; }
.notrun { color: #666; font-style: italic; }
"""


@dataclass
class Section:
    """One part of a study on the page: ``method`` is HTML (trusted, written
    by the part); ``tables`` maps a file stem to (table, caption); a part
    with ``status`` other than "run" shows only its title and that status."""

    part: str
    title: str
    status: str = "run"
    method: str = ""
    figures: list[Drawn] = field(default_factory=list)
    tables: dict[str, tuple[pd.DataFrame, str]] = field(default_factory=dict)


def _claims(claims: Claims) -> str:
    df = claims.frame().drop(columns=["values"])
    rows = []
    for c in df.itertuples(index=False):
        cls = "verdict-" + c.verdict.replace(" ", "-")
        cells = [c.id, c.part, c.claim, c.spec, c.measured]
        tds = "".join(f'<td class="text" style="white-space: normal">{html.escape(str(v))}</td>' for v in cells)
        rest = "".join(f'<td class="text" style="white-space: normal">{html.escape(str(v))}</td>'
                       for v in (c.difference, c.reason, c.source))
        rows.append(f'<tr id="claim-{html.escape(c.id)}">{tds}<td class="text {cls}">{html.escape(c.verdict)}</td>'
                    f"{rest}</tr>")
    head = "".join(f'<th class="text">{h}</th>' for h in
                   ("id", "part", "claim", "spec", "measured here", "verdict", "difference", "likely reason",
                    "from"))
    return (f'<div class="scroll"><table class="sortable claims"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def _section(s: Section) -> str:
    out = [f'<section id="part-{html.escape(s.part)}"><h2>{html.escape(s.title)}</h2>']
    if s.status != "run":
        out.append(f'<p class="notrun">{html.escape(s.status)}.</p></section>')
        return "\n".join(out)
    out.append(s.method)
    out.extend(run_page.figure(d) for d in s.figures)
    for name, (df, caption) in s.tables.items():
        out.append(f"<h3>{html.escape(name)}</h3>"
                   + run_page.table(df, f"{caption} Files: {name}.csv, {name}.parquet."))
    out.append("</section>")
    return "\n".join(out)


def render(title: str, intro: str, sections: list[Section], claims: Claims) -> str:
    """The whole page."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    counts = claims.frame()["verdict"].value_counts()
    summary = ", ".join(f"{n} {v}" for v, n in counts.items())
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p class=meta>cachesched {html.escape(ENGINE)} (version+build of the engine's sources), {stamp}. "
        "Click a column header to sort.</p>",
        intro,
        (f"<h2>Claims</h2><p>{len(claims.items)} claims: {html.escape(summary)}. "
        f"Parts marked “{NOT_RUN}” are not built yet. The same table is in claims.csv.</p>"),
        _claims(claims),
        *(_section(s) for s in sections),
        f"<script>{run_page.SCRIPT}</script></body></html>",
    ]
    return "\n".join(parts) + "\n"


def write(out: Path, title: str, intro: str, sections: list[Section], claims: Claims) -> Path:
    """Write every section's tables (CSV and Parquet), ``claims.csv`` and
    ``index.html`` into ``out``; returns the page's path."""
    out.mkdir(parents=True, exist_ok=True)
    for s in sections:
        for name, (df, _) in s.tables.items():
            with staged(out / f"{name}.csv") as temp:
                df.to_csv(temp, index=False)
            with staged(out / f"{name}.parquet") as temp:
                df.to_parquet(temp, index=False)
    claims.write(out / "claims.csv")
    path = out / "index.html"
    write_text(path, render(title, intro, sections, claims))
    return path


def method(doc: str) -> str:
    """A part module's docstring as the HTML of its method: paragraphs, its
    ``- `` lists as lists, ````code```` as code, Sphinx roles as plain names."""
    text = html.escape(re.sub(r":\w+:`\.?([^`]+)`", r"\1", doc))
    text = re.sub(r"``([^`]+)``", r"<code>\1</code>", text)
    out = []
    for block in text.strip().split("\n\n"):
        lines = [line.strip() for line in block.splitlines()]
        if lines[0].startswith("- "):
            items: list[str] = []
            for line in lines:
                if line.startswith("- "):
                    items.append(line[2:])
                else:
                    items[-1] += " " + line
            out.append("<ul>" + "".join(f"<li>{item}</li>" for item in items) + "</ul>")
        else:
            out.append(f"<p>{' '.join(lines)}</p>")
    return "\n".join(out)
