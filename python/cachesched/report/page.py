"""The report's HTML page: one self-contained file.

Figures are embedded as PNG data URIs and the tables are sorted by a few
lines of inline JavaScript, so the page opens from a mail attachment, an
archive or an air-gapped cluster: it loads nothing from the network and
nothing from beside it.
"""

from __future__ import annotations

import base64
import html
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from .._files import write_text
from .. import __version__
from .figures import Drawn
from .runs import Runs

#: The task table's columns shown on the page (those present in the runs).
TASK_COLUMNS = ["run", "task", "name", "workload", "vm", "instructions", "cycles", "cpi", "switches",
                "migrations_local", "migrations_remote", "overhead_cycles", "l1d_mpki", "l2_mpki", "llc_mpki",
                "tlb_mpki"]
#: Task tables longer than this are cut on the page (the Parquet files hold them whole).
MAX_ROWS = 500

CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; border-bottom: 1px solid #ddd; padding-bottom: .2em; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: .9em; color: #555; }
.scroll { overflow-x: auto; max-height: 40em; overflow-y: auto; margin: 1em 0; }
table { border-collapse: collapse; font-size: .85em; }
caption { caption-side: bottom; text-align: left; padding-top: .4em; }
th, td { padding: .25em .6em; border-bottom: 1px solid #eee; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; cursor: pointer; user-select: none; position: sticky; top: 0; }
th[data-dir="asc"]::after { content: " \\25B2"; } th[data-dir="desc"]::after { content: " \\25BC"; }
td.text, th.text { text-align: left; }
.meta { color: #666; font-size: .85em; }
"""

# Click a header to sort by it, again to reverse; numbers compare as numbers.
SCRIPT = """
document.querySelectorAll("table.sortable th").forEach(function (th) {
  th.addEventListener("click", function () {
    var table = th.closest("table"), body = table.tBodies[0], col = th.cellIndex;
    var dir = th.dataset.dir === "asc" ? "desc" : "asc";
    table.querySelectorAll("th").forEach(function (h) { delete h.dataset.dir; });
    th.dataset.dir = dir;
    var key = function (row) {
      var text = row.cells[col].dataset.value || row.cells[col].textContent, n = parseFloat(text);
      return isNaN(n) ? text : n;
    };
    var rows = Array.prototype.slice.call(body.rows).sort(function (a, b) {
      var x = key(a), y = key(b), c = (typeof x === typeof y) ? (x < y ? -1 : x > y ? 1 : 0)
                                                             : (typeof x === "number" ? -1 : 1);
      return dir === "asc" ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
"""


def _cell(value: Any) -> str:
    """One table cell: numbers right-aligned and rounded for reading, with
    the exact value kept in ``data-value`` for sorting."""
    if isinstance(value, bool) or value is None or (isinstance(value, float) and math.isnan(value)):
        return f'<td class="text">{"" if value is None or isinstance(value, float) else value}</td>'
    if isinstance(value, int):
        return f'<td data-value="{value}">{value:,}</td>'
    if isinstance(value, float):
        shown = f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:.4g}"
        return f'<td data-value="{value!r}">{shown}</td>'
    return f'<td class="text">{html.escape(str(value))}</td>'


def table(df: pd.DataFrame, caption: str = "") -> str:
    """A sortable HTML table of a DataFrame (pandas' missing values left blank)."""
    cols = list(df.columns)
    head = "".join(f'<th{"" if pd.api.types.is_numeric_dtype(df[c]) else " class=text"}>{html.escape(str(c))}</th>'
                   for c in cols)
    body = []
    for row in df.astype(object).where(df.notna(), None).itertuples(index=False):
        body.append("<tr>" + "".join(_cell(v.item() if hasattr(v, "item") else v) for v in row) + "</tr>")
    cap = f"<caption class=meta>{html.escape(caption)}</caption>" if caption else ""
    return (f'<div class="scroll"><table class="sortable">{cap}<thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def figure(d: Drawn) -> str:
    """A figure embedded as a PNG data URI, with its title and caption."""
    data = base64.b64encode(d.files["png"].read_bytes()).decode("ascii")
    files = ", ".join(p.name for p in d.files.values())
    return (f'<figure id="fig-{d.name}"><h3>{html.escape(d.title)}</h3>'
            f'<img alt="{html.escape(d.title)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(d.caption)} <span class=meta>Files: {html.escape(files)}.</span>"
            f"</figcaption></figure>")


def _tasks(runs: Runs) -> str:
    """The per-task table of every detailed run (cut at :data:`MAX_ROWS`)."""
    tasks = runs.stacked("tasks")
    if not len(tasks):
        return ""
    shown = tasks[[c for c in TASK_COLUMNS if c in tasks]]
    note = f"first {MAX_ROWS} of {len(shown)} tasks" if len(shown) > MAX_ROWS else f"{len(shown)} tasks"
    return f"<h2>Tasks</h2>{table(shown.head(MAX_ROWS), note)}"


def render(runs: Runs, drawn: list[Drawn], title: str) -> str:
    """The whole page: the runs table, the figures, the per-task table."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        (f"<p class=meta>cachesched {html.escape(__version__)}, {stamp}; {len(runs.runs)} run(s). "
         "Click a column header to sort.</p>"),
        "<h2>Runs</h2>", table(runs.table(), "run-wide totals; miss ratios and MPKI are demand misses over all tasks"),
        "<h2>Figures</h2>", *(figure(d) for d in drawn),
        _tasks(runs),
        f"<script>{SCRIPT}</script></body></html>",
    ]
    return "\n".join(parts) + "\n"


def write(runs: Runs, drawn: list[Drawn], path: Path, title: str) -> Path:
    """Write the page to ``path``."""
    write_text(path, render(runs, drawn, title))
    return path
