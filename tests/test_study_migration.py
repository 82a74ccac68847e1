"""The migration study (docs/studies.md): the claims helper, and the quick
study run whole through the command line, its outputs checked against each
other: every TLB claim measured and judged, its numbers the ones in the
tables it names, figures and a self-contained page written, the parts not
built yet listed as not run."""

from __future__ import annotations

import importlib
import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from cachesched.studies import claims as claims_mod
from conftest import assert_rerun_simulates_nothing, quick_study
from cachesched.studies.migration import PARTS
from cachesched.studies.migration.tlb import CLAIMS, INTERVALS, SPEC_WINDOWS, UNUSED, M

FIGURES = ["fig4_4_save_restore", "fig4_5_first_reuse", "fig4_6_9_aging_pairs", "fig4_10_13_aging_4_0",
           "fig4_14_windows", "fig4_15_18_best_windows", "fig4_19_20_aging_total"]
FIGURES += ["l2_full_touched", "l2_efficiency", "l2_mi_mrr", "l2_cpi_reduction", "l2_pmw", "prefetch_live",
            "prefetch_delayed", "prefetch_pmw", "prefetch_latency", "prefetch_hardware"]


def test_a_claim_holds_only_when_every_check_passes():
    c = claims_mod.Claims()
    a = c.add("X1", "p", "text", "1").judge([("a", True), ("b", True)], "m", reason="r", v=1)
    b = c.add("X2", "p", "text", "2").judge([("a", True), ("b is 2", False)], "m", reason="shorter traces")
    d = c.add("X3", "p", "text", "3").judge([("a", False)], "m")
    assert (a.verdict, a.difference, a.reason) == ("holds", "", "")
    assert (b.verdict, b.difference, b.reason) == ("partly", "not: b is 2", "shorter traces")
    assert d.verdict == "does not hold"
    c.planned("q", [("Y1", "later", "5")])
    assert c["Y1"].verdict == "not run in this version"
    with pytest.raises(ValueError, match="registered twice"):
        c.add("X1", "p", "again", "")
    assert list(c.frame().columns) == list(claims_mod.COLUMNS)


def test_an_unknown_part_is_a_config_error(run_cli, tmp_path):
    proc = run_cli("study", "migration", "--parts", "tlb,l3", "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "unknown part(s) l3; the study's parts: tlb, l2, prefetch, hwpf" in proc.stderr


class Page(HTMLParser):
    """Collects what the checks need from index.html; fails on unbalanced tags."""

    VOID = frozenset({"meta", "img", "br", "hr", "link", "input"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.urls: list[str] = []
        self.ids: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.urls += [attrs[k] for k in ("src", "href") if k in attrs]
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """The quick study, run once through the command line."""
    out = tmp_path_factory.mktemp("study") / "out"
    return out, quick_study("migration", out)


@pytest.mark.slow
def test_the_quick_study_writes_its_page(quick):
    out, stdout = quick
    assert "index.html" in stdout and (out / "index.html").exists()


@pytest.mark.slow
def test_every_tlb_claim_is_measured_and_judged_and_later_parts_are_listed_as_not_run(quick):
    out = quick[0]
    df = claims_mod.Claims.read(out / "claims.csv").set_index("id")
    for id, _, _ in CLAIMS:
        row = df.loc[id]
        assert row.part == "tlb"
        assert row.verdict in ("holds", "partly", "does not hold"), id
        assert row.measured and row.source and json.loads(row["values"]), id
        # A difference and a reason exactly when the claim does not fully hold.
        assert bool(row.difference) == (row.verdict != "holds"), id
        assert bool(row.reason) == (row.verdict != "holds"), id
    # Every part is built: every claim of every part is measured and judged.
    for part in PARTS:
        module = importlib.import_module(part.module)
        for id, _, _ in module.CLAIMS:
            row = df.loc[id]
            assert row.part == part.name and row.measured, id
            assert row.verdict in ("holds", "partly", "does not hold"), id
            assert bool(row.difference) == bool(row.reason) == (row.verdict != "holds"), id


@pytest.mark.slow
def test_the_claims_numbers_are_those_of_their_tables(quick):
    out = quick[0]
    values = {r.id: json.loads(r["values"]) for _, r in claims_mod.Claims.read(out / "claims.csv").iterrows()}
    sr = pd.read_csv(out / "tlb_save_restore.csv")
    sr3 = sr[sr.interval == 3 * M].set_index("benchmark")
    for b in UNUSED:
        assert values["T1"]["reuse_pct"][b] == pytest.approx(sr3.reuse_pct[b])
        assert values["T3"]["unused_pct"][b] == pytest.approx(sr3.unused_pct[b])
        assert values["T2"]["first_hit_pct"][b] == pytest.approx(sr3.first_hit_pct[b])
    # T1's verdict, worked out again from the table.
    rest = sr3.reuse_pct.drop("omnetpp")
    checks = [rest.between(60, 100).all(), sr3.reuse_pct["omnetpp"] == sr3.reuse_pct.min()]
    expected = "holds" if all(checks) else "partly" if any(checks) else "does not hold"
    assert claims_mod.Claims.read(out / "claims.csv").set_index("id").loc["T1", "verdict"] == expected

    a40 = pd.read_csv(out / "tlb_aging_4_0.csv")
    fn3 = a40[a40.interval == 3 * M].set_index("benchmark").fn_pct
    assert values["T6"]["fn_pct"] == pytest.approx(fn3.to_dict())

    best = pd.read_csv(out / "tlb_best_windows.csv")
    assert set(zip(best.interval, best.window)) == set(SPEC_WINDOWS.items())
    cut1 = best[best.interval == 1 * M].set_index("benchmark").footprint_cut_pct
    assert values["T8"]["footprint_cut_pct"] == pytest.approx(cut1.to_dict())

    wm = pd.read_csv(out / "tlb_windows_mean.csv")
    for cs in INTERVALS:
        part = wm[wm.interval == cs]
        w = int(part.window[part.f1.idxmax()])
        label = f"{cs / M:g}M"
        assert values["T7"]["best_window"][label] == (f"{w / M:g}M" if w >= M else f"{w / 1000:g}K")

    pairs = pd.read_csv(out / "tlb_aging_pairs.csv")
    p3 = pairs[pairs.interval == 3 * M]
    a = p3[(p3.bits == 4) & (p3.threshold == 0)].saved_per_switch.to_numpy()
    b = p3[(p3.bits == 5) & (p3.threshold == 1)].saved_per_switch.to_numpy()
    assert values["T4"]["same_4_0_5_1"] == bool(np.allclose(a, b))


@pytest.mark.slow
def test_the_mechanism_counters_add_up_in_every_run(quick):
    runs = pd.read_csv(quick[0] / "tlb_runs.csv")
    kept = runs[runs.experiment != "flush"]
    assert (kept.saved == kept.reused + kept.unused).all()
    assert (kept.candidates == kept.saved + kept.rejected).all()
    assert (kept.reused == kept.reused_l1 + kept.reused_l2 + kept.reused_walk).all()
    assert (kept.restores > 0).all(), "every run has switches after its warm-up"
    assert (kept[kept.predictor == "all"].rejected == 0).all()


@pytest.mark.slow
def test_a_second_study_on_the_same_directory_reuses_the_stored_runs(quick):
    assert_rerun_simulates_nothing("migration", quick[0])


@pytest.mark.slow
def test_the_figures_and_the_page_are_written_and_self_contained(quick):
    out = quick[0]
    for name in FIGURES:
        png = (out / f"{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 5000, name
        ET.parse(out / f"{name}.svg")
    page = Page()
    page.feed((out / "index.html").read_text(encoding="utf-8"))
    page.close()
    assert page.stack == [], page.stack
    images = [u for u in page.urls if u.startswith("data:image/png;base64,")]
    assert len(images) == len(FIGURES)
    assert all(u.startswith(("data:", "#")) for u in page.urls), "the page links nothing outside itself"
    assert {"claim-T1", "claim-T11", "part-tlb", "part-l2", "part-prefetch", "part-hwpf"} <= page.ids
    assert 'class="text verdict-not-run' not in (out / "index.html").read_text(encoding="utf-8"), "every part ran"


@pytest.mark.slow
def test_the_l2_and_prefetcher_claims_come_from_their_tables(quick):
    out = quick[0]
    claims = claims_mod.Claims.read(out / "claims.csv").set_index("id")
    l2 = pd.read_csv(out / "l2_runs.csv")
    # L8, worked out again: Local MRU at 8K lines, the smaller L2, the main window.
    main = l2[(l2.pmw == l2.pmw.max()) & (l2.l2_bytes == l2.l2_bytes.min()) & (l2.scheme == "local")]
    at8k = main[main["size"] == 8192].set_index("benchmark").cpi_reduction
    for bench, value in at8k.items():
        assert f"{bench} {100 * value:.0f}%" in claims.loc["L8", "measured"]
    # MI-MRR of the full restore is 100% by construction, and no selection beats it by much.
    assert (l2[l2.scheme == "full"].mi_mrr == 1.0).all()
    hw = pd.read_csv(out / "hwpf_runs.csv").pivot_table(index="benchmark", columns="config", values="cpi")
    for bench, row in hw.iterrows():
        beats = row["migration"] <= min(row["stride"], row["stream"])
        assert f"{bench} {'yes' if beats else 'no'}" in claims.loc["P1", "measured"]
    pf = pd.read_csv(out / "prefetch_runs.csv")
    assert (pf[pf.tags_sent == "none"].extra_traffic == 0).all()
    assert (pf[pf.tags_sent != "none"].tags > 0).all()
