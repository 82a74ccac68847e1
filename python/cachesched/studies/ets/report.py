"""Writes the ETS study's outputs: ``tables/*.csv``, ``figures/*.png|svg``,
``claims.csv`` and a small self-contained ``index.html`` (claims first,
then figures with captions, then tables). Kept apart from the experiments:
the shared study writer replaces the HTML part."""

from __future__ import annotations

import base64
import html
from pathlib import Path

import pandas as pd

from ..._files import staged, write_text
from ...report.figures import FORMATS, STYLE

CLAIM_COLUMNS = ["id", "claim", "measured", "verdict", "why"]


def write(out: Path, claims: list[dict], tables: dict[str, pd.DataFrame],
          figures: list[tuple[str, str, str, object]], notes: str = "") -> dict:
    """Write everything under ``out``; returns the paths written."""
    from matplotlib import rc_context

    out = Path(out)
    (out / "tables").mkdir(parents=True, exist_ok=True)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    with staged(out / "claims.csv") as temp:
        pd.DataFrame(claims, columns=CLAIM_COLUMNS).to_csv(temp, index=False)
    for name, df in tables.items():
        with staged(out / "tables" / f"{name}.csv") as temp:
            df.to_csv(temp, index=False)
    drawn = []
    for name, title, caption, fig in figures:
        with rc_context(STYLE):
            for fmt in FORMATS:
                with staged(out / "figures" / f"{name}.{fmt}") as temp:
                    fig.savefig(temp, format=fmt)
        drawn.append((name, title, caption))
    write_text(out / "index.html", page(claims, tables, drawn, out, notes))
    return {"claims": out / "claims.csv", "index": out / "index.html",
            "tables": sorted((out / "tables").glob("*.csv")), "figures": sorted((out / "figures").glob("*.png"))}


def page(claims: list[dict], tables: dict[str, pd.DataFrame], drawn: list[tuple[str, str, str]], out: Path,
         notes: str) -> str:
    """The HTML page, PNGs embedded (it stands alone)."""
    rows = "".join(
        f'<tr class="{html.escape(c["verdict"].replace(" ", "-"))}">'
        + "".join(f"<td>{html.escape(str(c[k]))}</td>" for k in CLAIM_COLUMNS) + "</tr>" for c in claims)
    head = "".join(f"<th>{k}</th>" for k in CLAIM_COLUMNS)
    figs = []
    for name, title, caption in drawn:
        data = base64.b64encode((out / "figures" / f"{name}.png").read_bytes()).decode()
        figs.append(f'<figure id="{name}"><h3>{html.escape(title)}</h3><img alt="{html.escape(title)}" '
                    f'src="data:image/png;base64,{data}"><figcaption>{html.escape(caption)} '
                    f'(<a href="figures/{name}.svg">svg</a>)</figcaption></figure>')
    tabs = "".join(f'<h3 id="table-{name}">{name} (<a href="tables/{name}.csv">csv</a>)</h3>'
                   + df.to_html(index=False, float_format=lambda x: f"{x:.4g}", border=0)
                   for name, df in tables.items())
    style = ("body{font-family:sans-serif;max-width:1200px;margin:auto}table{border-collapse:collapse;"
             "font-size:small}td,th{border:1px solid #ccc;padding:2px 6px;vertical-align:top}"
             "tr.holds{background:#e6f4e6}tr.partly{background:#fff6dc}tr.does-not-hold{background:#fbe3e3}"
             "tr.not-comparable{background:#eee}img{max-width:100%}")
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>ETS study</title><style>{style}</style>"
            f"</head><body><h1>Elastic time slicing: the study</h1><p>{html.escape(notes)}</p>"
            f"<h2>Claims</h2><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
            f"<h2>Figures</h2>{''.join(figs)}<h2>Tables</h2>{tabs}</body></html>\n")
