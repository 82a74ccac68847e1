"""The ETS study: the quick study end to end (every claim of the spec's
validation table measured, figures written, claims consistent with the
tables they come from, a parseable page), and the study's metric functions
on hand-computed cases."""

from __future__ import annotations

import csv
import math
from html.parser import HTMLParser

import pandas as pd
import pytest
from cachesched.studies import ets as study
from cachesched.studies.ets import common, estimator, latency, performance
from cachesched.studies.ets.common import Mix, Scale

VERDICTS = {"holds", "partly", "does not hold", "not comparable"}
SPEC_CLAIMS = {str(i) for i in range(1, 18)}  # spec §7, claims 1-17


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("ets-study")
    return out, study.run(out, quick=True, workers=2)


def test_every_claim_is_measured_with_a_verdict(quick):
    out, result = quick
    with open(out / "claims.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["id"] for r in rows} == SPEC_CLAIMS
    assert len(rows) == len(SPEC_CLAIMS)
    for r in rows:
        assert r["measured"].strip() and r["claim"].strip(), r
        assert r["verdict"] in VERDICTS, r
    assert [c["id"] for c in result["claims"]] == [r["id"] for r in rows]


def test_figures_and_tables_are_written(quick):
    out, _ = quick
    names = {p.stem for p in (out / "figures").glob("*.png")}
    assert {"ets_gain", "ets_slices", "ets_transitions", "ets_latency", "ets_estimator", "ets_switch_misses",
            "ets_shared", "ets_residual", "ets_slowdown"} <= names
    for name in names:
        assert (out / "figures" / f"{name}.svg").stat().st_size > 0
    for name in ("performance", "slices", "latency", "estimator", "sharing", "residual", "traces"):
        assert (out / "tables" / f"{name}.csv").exists()


def _claims(out) -> dict[str, dict]:
    return {r["id"]: r for r in pd.read_csv(out / "claims.csv", dtype=str).fillna("").to_dict("records")}


def test_claims_agree_with_their_tables(quick):
    out, _ = quick
    claims = _claims(out)
    perf = pd.read_csv(out / "tables" / "performance.csv")
    # Claim 2, recomputed by hand: the largest ETS gain over UTS-2.5 under LRU.
    ets = perf[(perf.scheduler == "ets") & (perf.policy == "lru")]
    ipc = perf[perf.policy == "lru"].pivot_table(index="app", columns="scheduler", values="ipc")
    gain = ipc["ets"] / ipc["uts-2.5"] - 1
    assert gain.max() == pytest.approx(ets.gain.max())
    assert claims["2"]["measured"].startswith(f"max {100 * gain.max():.1f}% ({gain.idxmax()})")
    # Claim 5: the mean latencies per scheduler.
    lat = pd.read_csv(out / "tables" / "latency.csv")
    mean = lat.groupby("scheduler").mean_ms.mean()
    assert claims["5"]["measured"].startswith(
        f"mean {mean['uts-10']:.2f} / {mean['uts-2.5']:.2f} / {mean['ets']:.2f} ms")
    # Claim 9: the largest divergence at 2 MB under LRU.
    est = pd.read_csv(out / "tables" / "estimator.csv")
    lru = est[(est.llc_mb == 2) & (est.policy == "lru")]
    assert claims["9"]["measured"].startswith(f"max {lru.divergence.max():.3f}")
    # And the claims functions give the same rows from the CSVs alone.
    again = performance.claims(perf, study.QUICK) + latency.claims(lat)
    for c in again:
        assert (c["measured"], c["verdict"]) == (claims[c["id"]]["measured"], claims[c["id"]]["verdict"])


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.seen = [], []

    def handle_starttag(self, tag, attrs):
        self.seen.append(tag)
        if tag not in ("meta", "img", "br"):
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()


def test_index_parses_with_claims_first(quick):
    out, _ = quick
    text = (out / "index.html").read_text()
    page = _Page()
    page.feed(text)
    page.close()
    assert page.stack == []
    assert page.seen.count("img") >= 9
    assert text.index("<h2>Claims</h2>") < text.index("<h2>Figures</h2>") < text.index("<h2>Tables</h2>")


# ---------------------------------------------------------------- metrics by hand


def test_table1_groups_and_scaled_thresholds():
    assert Scale(4).thresholds == [375, 1125, 2625] and Scale(4).quantum == 2_500_000
    t = [1500, 4500, 10500]
    assert [common.group(n, t) for n in (0, 1500, 1501, 4500, 4501, 10500, 10501)] == [1, 1, 2, 2, 3, 3, 4]


def _slices(lengths, estimates, reliable=None):
    q = Scale(4).quantum
    start = [sum(lengths[:i]) * q * 2 for i in range(len(lengths))]
    return pd.DataFrame({"start": start, "length": [k * q + 7 for k in lengths],
                         "estimate": pd.array(estimates, dtype="Int64"),
                         "reliable": pd.array(reliable or [True] * len(lengths), dtype="boolean")})


def test_table1_match_and_transitions_by_hand():
    scale = Scale(4)  # thresholds 375 / 1125 / 2625
    # 100 -> 1 (ok), 2000 -> 3 (ok), 5000 unreliable keeps 3 (ok), NaN skipped, 400 -> 2 but got 1 (miss).
    s = _slices([1, 1, 3, 3, 2, 1], [100, 2000, 5000, None, 400, 0], [True, True, False, True, True, True])
    assert performance.table1_match(s, scale) == pytest.approx(3 / 4)
    # lengths 1,1,3,3,2,1: changes at 1->3, 3->2, 2->1 of 5 pairs.
    assert performance.different(s, scale) == pytest.approx(3 / 5)


def test_estimates_by_hand():
    s = pd.DataFrame({"estimate": pd.array([160, None, 320], dtype="Int64"),
                      "full": pd.array([150, None, 350], dtype="Int64"),
                      "c1": pd.array([4, None, 12], dtype="Int64"), "c2": pd.array([6, None, 8], dtype="Int64"),
                      "llc_switch_misses": [100, 50, 250]})
    e = estimator.estimates(s)
    assert e["estimates"] == 2 and e["estimated"] == 480 and e["full"] == 500
    assert e["error"] == pytest.approx(20 / 500)
    assert e["divergence"] == pytest.approx(abs(16 - 14) / 30)
    assert e["actual"] == 400 and e["true_error"] == pytest.approx(80 / 400)


def test_storage_is_table_3():
    st = estimator.storage(2 << 20)
    assert st["atd_bytes"] == 256 and st["counter_bytes"] == 3  # 128 sets x 16 bits; 2 x 12 bits
    assert st["overhead"] == pytest.approx(259 / (2176 * 1024))  # 0.012 %


def test_latency_in_spec_ms_by_hand():
    q = Scale(4).quantum
    s = pd.DataFrame({"name": ["a", "a", "a", "b", "b"], "gap": [math.nan, 3 * q, 5 * q, math.nan, 3 * q]})
    g = latency.gaps(s, Scale(4)).set_index("name")
    assert g.loc["a", "gaps"] == 2 and g.loc["a", "mean_ms"] == pytest.approx(10.0)  # (7.5 + 12.5) / 2
    assert g.loc["a", "std_ms"] == pytest.approx(2.5) and g.loc["b", "std_ms"] == 0


def test_ratios_to_lru_and_to_1mb():
    df = pd.DataFrame({"app": ["x"] * 4, "policy": ["lru", "lru", "ship", "ship"], "llc_mb": [1, 4, 1, 4],
                       "actual": [10.0, 40.0, 20.0, 200.0]})
    r = estimator.ratios(df)
    assert r.vs_lru.tolist() == [1.0, 1.0, 2.0, 5.0]
    assert r.vs_1mb.tolist() == [1.0, 4.0, 1.0, 10.0]


def test_mixes():
    assert [m.names for m in common.mixes(["a", "b"], 3)] == [["a", "b", "a#2"], ["b", "a", "b#2"]]
    assert common.mixes(["a"], 4, fillers=True)[0].names == ["a", "filler1", "filler2", "filler3"]
    assert Mix(("a",), fillers=1).app == "a"
