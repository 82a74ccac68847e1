"""The study framework every study runs on (cachesched.studies.study): a
made-up two-part study whose parts run real simulations through the shared
runner. Parts run in order and see the tables of those before them; a part
left out lists its claims as not run; unknown parts and options the study
does not take are errors that write nothing; a second run resumes from the
store without running anything again."""

from __future__ import annotations

import json

import sys
import types

import pandas as pd
import pytest
from cachesched.errors import ConfigError
from cachesched.store import ENGINE
from cachesched.studies import claims as claims_mod
from cachesched.studies import runs
from cachesched.studies.page import Section
from cachesched.studies.study import Part, Study
from conftest import stored_runs

SEEN: list[tuple[str, object]] = []


def _point(size: str) -> runs.Point:
    return runs.Point({"l2": size}, {
        "machine": {"preset": "teaching", "l2": {"size_bytes": size}},
        "tasks": [{"workload": {"kind": "zipf", "params": {"working_set_bytes": "64KiB", "accesses": 20_000}}}]})


def _misses(ctx) -> Section:
    table = runs.run([_point("16KiB"), _point("64KiB")], ctx.store, "toy-misses", workers=ctx.workers,
                     progress=False, simulated=ctx.simulated)
    caches = pd.concat([runs.detail(row, "caches").assign(l2=row["l2"]) for _, row in table.iterrows()])
    l2 = caches[caches.level == "l2"].groupby("l2").load_misses.sum().rename("misses")
    SEEN.append(("misses", ctx.options.get("scale")))
    ctx.claims["X1"].judge([("a larger L2 misses less", l2["64KiB"] < l2["16KiB"])],
                           f"{l2['16KiB']} and {l2['64KiB']} misses", reason="made up", source="misses")
    return Section("misses", "", tables={"misses": (l2.reset_index(), "L2 misses per size.")})


def _ratio(ctx) -> Section:
    SEEN.append(("ratio", sorted(ctx.tables)))
    m = ctx.tables["misses"].set_index("l2").misses
    ctx.claims["X2"].judge([("the ratio is above 1", m["16KiB"] / m["64KiB"] > 1)], f"{m['16KiB'] / m['64KiB']:.2f}",
                           source="misses")
    return Section("ratio", "")


def _module(name: str, claims: tuple, run) -> str:
    module = types.ModuleType(name)
    module.CLAIMS, module.run = claims, run
    sys.modules[name] = module
    return name


TOY = Study(name="toy", title="A made-up study", spec="toy.md", sizes={"quick": "tiny", "full": "small"},
            extra={"scale": "a made-up option"},
            parts=(Part("misses", "§1", "L2 misses", _module("toy_misses", (("X1", "larger caches miss less", "-"),),
                                                                     _misses)),
                   Part("ratio", "§2", "Their ratio", _module("toy_ratio", (("X2", "the ratio exceeds 1", "> 1"),),
                                                                  _ratio))))


@pytest.fixture(autouse=True)
def _clear():
    SEEN.clear()


def test_parts_run_in_order_and_a_later_part_sees_the_earlier_tables(tmp_path):
    page = TOY.run(tmp_path / "out", quick=True, scale=3)
    assert page == tmp_path / "out" / "index.html" and page.exists()
    assert SEEN == [("misses", 3), ("ratio", ["misses"])]
    df = claims_mod.Claims.read(tmp_path / "out" / "claims.csv")
    assert list(df.columns) == list(claims_mod.COLUMNS)
    assert df.set_index("id").verdict.to_dict() == {"X1": "holds", "X2": "holds"}
    assert (tmp_path / "out" / "misses.csv").exists() and (tmp_path / "out" / "misses.parquet").exists()
    text = page.read_text(encoding="utf-8")
    assert text.index('id="claim-X1"') < text.index('id="part-misses"') < text.index('id="part-ratio"')
    assert "toy.md" in text and "suite size tiny" in text
    # The page names the engine that made it, build included.
    assert f"cachesched {ENGINE} " in text


def test_a_second_run_resumes_from_the_store(tmp_path):
    TOY.run(tmp_path / "out", quick=True)
    before, claims = stored_runs(tmp_path / "out" / "store"), (tmp_path / "out" / "claims.csv").read_text()
    assert [status for _, status, _ in before] == ["done", "done"]
    # What ran is counted: two runs of 20,000 references each.
    first = json.loads((tmp_path / "out" / "simulated.json").read_text())
    assert (first["runs"], first["reused"], first["accesses"]) == (2, 0, 40_000)
    assert first["accesses_per_s"] == pytest.approx(40_000 / first["seconds"])
    TOY.run(tmp_path / "out", quick=True)
    assert stored_runs(tmp_path / "out" / "store") == before, "nothing ran again"
    assert (tmp_path / "out" / "claims.csv").read_text() == claims
    again = json.loads((tmp_path / "out" / "simulated.json").read_text())
    assert (again["runs"], again["reused"], again["accesses"]) == (0, 2, 0)


def test_a_part_left_out_lists_its_claims_as_not_run(tmp_path):
    TOY.run(tmp_path / "out", parts=["misses"])
    assert [name for name, _ in SEEN] == ["misses"]
    df = claims_mod.Claims.read(tmp_path / "out" / "claims.csv").set_index("id")
    assert df.loc["X2", "verdict"] == "not run: left out by --parts" and df.loc["X1", "verdict"] == "holds"


@pytest.mark.parametrize(("options", "loc", "message"), [
    ({"parts": ["misses", "nope"]}, "parts", "unknown part(s) nope; the study's parts: misses, ratio"),
    ({"programs": ["mcf"]}, "programs", "study toy does not take programs"),
    ({"size": "ref"}, "size", "study toy does not run the suite's ref recordings (studies migration and ets do)"),
])
def test_unknown_parts_and_options_are_config_errors_that_write_nothing(tmp_path, options, loc, message):
    with pytest.raises(ConfigError) as err:
        TOY.run(tmp_path / "out", **options)
    assert err.value.errors()[0]["loc"] == loc and message in str(err.value)
    assert not (tmp_path / "out").exists() and SEEN == []


def test_a_study_says_what_it_accepts():
    assert TOY.accepts == ("parts", "size", "store", "workers", "dask", "progress", "scale")
