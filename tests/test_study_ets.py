"""The ETS study: the quick study end to end through the shared study
framework (every claim of the spec's validation table measured and judged,
figures and tables written, claims consistent with the tables they come
from, a parseable page, a second run resumed from the store), the claims
judged on hand-made tables whose verdict is known, and the study's metric
functions on hand-computed cases."""

from __future__ import annotations

import math
import sqlite3
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pandas as pd
import pytest
from cachesched.studies import claims as claims_mod
from cachesched.studies import ets as study
from cachesched.studies import migration
from cachesched.studies.ets import common, estimator, latency, performance, residual, sharing
from cachesched.studies.ets.common import Mix, Scale
from conftest import assert_rerun_simulates_nothing, quick_study, stored_runs

SPEC_CLAIMS = {str(i) for i in range(1, 18)}  # spec §7, claims 1-17
FIGURES = {"ets_gain", "ets_slices", "ets_transitions", "ets_latency", "ets_estimator", "ets_switch_misses",
           "ets_shared", "ets_residual", "ets_slowdown"}
TABLES = ("performance", "slices", "traces", "latency", "sharing", "estimator", "residual")


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """The quick study, run once through the command line."""
    out = tmp_path_factory.mktemp("ets-study") / "out"
    return out, quick_study("ets", out)


def _claims(out) -> pd.DataFrame:
    return claims_mod.Claims.read(out / "claims.csv").set_index("id")


def test_every_claim_is_measured_and_judged_with_the_shared_columns(quick):
    out, stdout = quick
    df = claims_mod.Claims.read(out / "claims.csv")
    assert list(df.columns) == list(claims_mod.COLUMNS)
    assert set(df.id) == SPEC_CLAIMS and len(df) == len(SPEC_CLAIMS)
    parts = {p.name for p in study.PARTS}
    for r in df.itertuples(index=False):
        assert r.measured.strip() and r.claim.strip() and r.spec.strip(), r
        assert r.verdict in claims_mod.VERDICTS and r.verdict != claims_mod.NOT_RUN, r
        assert r.part in parts, r
        # A difference and a reason exactly when the claim does not fully hold.
        assert bool(r.difference) == bool(r.reason) == (r.verdict != "holds"), r
        # The reason names the traces the quick study ran.
        assert r.verdict in ("holds", "not comparable") or common.TRACES["tiny"] in r.reason, r
        assert f"{r.id:<4} {r.verdict:<24} {r.measured}" in stdout
    assert df.set_index("id").loc["15", "verdict"] == "not comparable"


def test_figures_and_tables_are_written(quick):
    out, _ = quick
    for name in FIGURES:
        png = (out / f"{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 5000, name
        ET.parse(out / f"{name}.svg")
    for name in TABLES:
        csv, parquet = pd.read_csv(out / f"{name}.csv"), pd.read_parquet(out / f"{name}.parquet")
        assert len(parquet) and csv.shape == parquet.shape and list(csv.columns) == list(parquet.columns), name


def test_claims_agree_with_their_tables(quick):
    out, _ = quick
    claims = _claims(out)
    perf = pd.read_csv(out / "performance.csv")
    # Claim 2, recomputed by hand: the largest ETS gain over UTS-2.5 under LRU.
    ets = perf[(perf.scheduler == "ets") & (perf.policy == "lru")]
    ipc = perf[perf.policy == "lru"].pivot_table(index="app", columns="scheduler", values="ipc")
    gain = ipc["ets"] / ipc["uts-2.5"] - 1
    assert gain.max() == pytest.approx(ets.gain.max())
    assert claims.loc["2", "measured"].startswith(f"max {100 * gain.max():.1f}% ({gain.idxmax()})")
    # Claim 5: the mean latencies per scheduler.
    lat = pd.read_csv(out / "latency.csv")
    mean = lat.groupby("scheduler").mean_ms.mean()
    assert claims.loc["5", "measured"].startswith(
        f"mean {mean['uts-10']:.2f} / {mean['uts-2.5']:.2f} / {mean['ets']:.2f} ms")
    # Claim 9: the largest divergence at 2 MB under LRU.
    est = pd.read_csv(out / "estimator.csv")
    lru = est[(est.llc_mb == 2) & (est.policy == "lru")]
    assert claims.loc["9", "measured"].startswith(f"max {lru.divergence.max():.3f}")
    # Claim 8's second half is the sharing part's 4-sharer mean.
    share = pd.read_csv(out / "sharing.csv")
    assert f"{100 * share[share.sharers == 4].error.mean():.1f}% (4 sharers" in claims.loc["8", "measured"]
    # And the claims functions give the same rows from the CSVs alone.
    again = performance.claims(perf, common.QUICK) + latency.claims(lat) + residual.claims(
        pd.read_csv(out / "residual.csv"), common.QUICK)
    for c in again:
        assert (c["measured"], c["verdict"]) == (claims.loc[c["id"], "measured"], claims.loc[c["id"], "verdict"])


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.ids, self.urls = [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.urls += [attrs[k] for k in ("src", "href") if k in attrs]
        if "id" in attrs:
            self.ids.append(attrs["id"])
        if tag not in ("meta", "img", "br"):
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()


def test_the_page_parses_claims_first_then_the_parts_in_order(quick):
    out, _ = quick
    page = _Page()
    page.feed((out / "index.html").read_text(encoding="utf-8"))
    page.close()
    assert page.stack == []
    assert sum(u.startswith("data:image/png;base64,") for u in page.urls) == len(FIGURES)
    assert all(u.startswith(("data:", "#")) for u in page.urls), "the page links nothing outside itself"
    sections = [i for i in page.ids if i.startswith("part-")]
    assert sections == [f"part-{p.name}" for p in study.PARTS]
    assert page.ids.index("claim-1") < page.ids.index(sections[0])


@pytest.mark.slow
def test_a_second_study_on_the_same_directory_reuses_the_stored_runs(quick):
    out = quick[0]
    # Equal configurations of two parts are one run (latency's are performance's, 4 tasks per core).
    with sqlite3.connect(out / "store" / "ledger.sqlite") as db:
        points, keys = db.execute("select count(*), count(distinct key) from points").fetchone()
    assert keys == len(stored_runs(out / "store")) < points
    assert_rerun_simulates_nothing("ets", out)


def test_an_option_the_study_does_not_take_is_refused(run_cli, tmp_path):
    proc = run_cli("study", "migration", "--programs", "mcf", "-o", str(tmp_path / "out"))
    assert proc.returncode == 2 and "study migration does not take --programs" in proc.stderr
    assert not (tmp_path / "out").exists()
    assert "programs" in study.STUDY.accepts and "programs" not in migration.STUDY.accepts


# ---------------------------------------------------------------- claims on hand-made tables


def _verdicts(found: list[dict]) -> dict[str, str]:
    return {c["id"]: c["verdict"] for c in found}


def _performance(**by_app) -> pd.DataFrame:
    """ETS rows under every policy: app -> (slowdown, gain, gap to UTS-10, different, Table 1 match)."""
    rows = [{"app": app, "policy": policy, "scheduler": "ets", "schedules": 10, "slowdown": v[0], "gain": v[1],
             "gap_uts10": v[2], "different": v[3], "table1": v[4]}
            for policy in ("lru", "drrip", "ship") for app, v in by_app.items()]
    return pd.DataFrame(rows)


def test_performance_claims_on_a_table_shaped_like_the_paper_hold():
    # hmmer has the largest slowdown and gain (54%); 2 of 4 gain >= 5% and > 10% (the paper's 15 and 11 of 29
    # within 15 points); gaps to UTS-10 at most 4%; xalancbmk changes slice length most (68%), 3 of 4 >= 10%.
    df = _performance(hmmer=(0.54, 0.54, 0.03, 0.30, 1.0), xalancbmk=(0.20, 0.12, 0.04, 0.68, 1.0),
                      mcf=(0.10, 0.04, 0.01, 0.20, 0.97), bzip2=(0.0, 0.0, 0.0, 0.0, 1.0))
    found = performance.claims(df, Scale(4))
    assert _verdicts(found) == {"1": "holds", "2": "holds", "3": "holds", "4": "holds", "6": "holds",
                                "12": "holds", "15": "not comparable", "17": "holds"}


def test_performance_claims_that_miss_the_paper_do_not_hold_or_hold_partly():
    # The largest slowdown is bzip2's 10%; ETS is 10% short of UTS-10 at most but 3% on average under every
    # policy; a third of the schedules follow Table 1.
    df = _performance(hmmer=(0.05, 0.05, 0.02, 0.0, 0.3), bzip2=(0.10, 0.02, 0.10, 0.0, 0.4),
                      mcf=(0.02, 0.01, 0.01, 0.0, 0.3), gcc=(0.01, 0.0, 0.0, 0.0, 0.3))
    v = _verdicts(performance.claims(df, Scale(4)))
    assert (v["1"], v["4"], v["17"]) == ("does not hold", "partly", "does not hold")
    assert v["2"] == "partly"  # hmmer's gain is the largest, but 5% is not 54%
    assert (v["3"], v["6"], v["12"]) == ("does not hold",) * 3


def _latency(ets_std: float, app: str, uts10: float = 30.0) -> pd.DataFrame:
    rows = []
    for a in ("hmmer", "mcf"):
        rows += [{"app": a, "tasks": 4, "scheduler": "uts-10", "mean_ms": uts10, "std_ms": 0.0},
                 {"app": a, "tasks": 4, "scheduler": "uts-2.5", "mean_ms": 7.5, "std_ms": 0.0},
                 {"app": a, "tasks": 4, "scheduler": "ets", "mean_ms": 7.5, "std_ms": ets_std if a == app else 1.0}]
    return pd.DataFrame(rows)


def test_latency_claim_on_hand_made_tables():
    assert _verdicts(latency.claims(_latency(3.7, "hmmer"))) == {"5": "holds"}
    assert _verdicts(latency.claims(_latency(2.5, "mcf"))) == {"5": "partly"}  # means right, std elsewhere
    assert _verdicts(latency.claims(_latency(3.7, "hmmer", uts10=20.0))) == {"5": "does not hold"}


def test_residual_claim_on_hand_made_tables():
    def df(found):
        return pd.DataFrame({"mix": ["a+b", "a+b"], "task": ["a", "b"], "returns": [3, 3], "left": [100, 100],
                             "found": found, "nonzero": [int(f > 0) for f in found],
                             "found_share": [f / 100 for f in found]})

    assert _verdicts(residual.claims(df([0, 0]), Scale(4))) == {"16": "holds"}
    assert _verdicts(residual.claims(df([3, 5]), Scale(4))) == {"16": "partly"}
    assert _verdicts(residual.claims(df([100, 90]), Scale(4))) == {"16": "does not hold"}


def _sharing(errors: list[float], sharers: int = 2) -> pd.DataFrame:
    return pd.DataFrame({"app": [f"p{i}" for i in range(len(errors))], "sharers": sharers, "llc_mb": 2 * sharers,
                         "error": errors})


def test_sharing_claim_on_hand_made_tables():
    assert _verdicts(sharing.claims(_sharing([0.02, 0.03, 0.04, 0.01]))) == {"7": "holds"}
    assert _verdicts(sharing.claims(_sharing([0.02, 0.06, 0.12, 0.12]))) == {"7": "partly"}  # mean 8%
    assert _verdicts(sharing.claims(_sharing([0.5, 0.6]))) == {"7": "does not hold"}


def _grid(error: float, vs_lru: dict[str, float], vs_1mb: float) -> pd.DataFrame:
    rows = []
    for app in ("a", "b"):
        for policy in ("lru", "drrip", "ship"):
            for mb in (1, 2, 4):
                rows.append({"app": app, "policy": policy, "llc_mb": mb, "error": error, "divergence": 0.05,
                             "vs_lru": vs_lru.get(policy, 1.0), "vs_1mb": vs_1mb if mb == 4 else 1.0})
    return pd.DataFrame(rows)


USED = {"mechanisms": [{"kind": "cs-estimator", "params": {}}], "machine": {"llc": {"size_bytes": 2 << 20}}}


def test_estimator_claims_on_hand_made_tables():
    grid = _grid(0.027, {"drrip": 1.6, "ship": 2.0}, 6.0)
    assert _verdicts(estimator.claims(grid, _sharing([0.025, 0.025], sharers=4), USED)) == {
        "8": "holds", "9": "holds", "10": "holds", "11": "holds", "13": "holds", "14": "holds"}
    # Errors of 8% are within the paper's 10% adequacy only; no policy changes the switch misses; they do not
    # grow with the LLC; without the sharing part, claim 8's second half is missing.
    found = estimator.claims(_grid(0.08, {}, 1.0), None, USED)
    v = _verdicts(found)
    assert (v["8"], v["10"], v["11"], v["13"]) == ("does not hold", "partly", "does not hold", "does not hold")
    assert "4 sharers not run" in next(c["measured"] for c in found if c["id"] == "8")


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
