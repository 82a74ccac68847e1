"""Miss attribution from Python: the causes columns and the config errors."""

import math

import pytest

import cachesched as cs


def test_a_task_alone_has_only_compulsory_and_capacity_misses():
    r = cs.simulate({
        "machine": {"attribution": ["l1d", "l2", "llc", "tlb.l1", "tlb.l2"]},
        "workload": {"kind": "zipf", "params": {"working_set_bytes": "4MiB"}},
        "run": {"max_accesses": 200_000},
    })
    lv = r.levels
    assert set(lv.level) == {"l1d", "l2", "llc"}
    assert (lv.switch_induced + lv.migration_induced + lv.sharing_induced).sum() == 0
    # Capacity is the rest of the misses, and there are some: 4 MiB of Zipf
    # does not fit the 32 KiB L1.
    assert (lv.capacity == lv.misses - lv.compulsory).all()
    assert lv[lv.level == "l1d"].capacity.sum() > 0
    tasks = r.tasks
    assert tasks.tlb_l1_switch_induced.sum() == 0 and tasks.tlb_l2_migration_induced.sum() == 0


def test_levels_not_attributed_leave_capacity_unknown():
    r = cs.simulate({"machine": {"attribution": ["l2"]}, "workload": {"kind": "zipf"},
                     "run": {"max_accesses": 50_000}})
    lv = r.levels
    assert lv[lv.level == "l2"].capacity.notna().all()
    assert all(math.isnan(x) for x in lv[lv.level != "l2"].capacity)


@pytest.mark.parametrize("attribution, key, words", [
    (["l3"], "machine.attribution[0]", "unknown variant"),
    (["llc", "l2"], "machine.attribution[1]", "no l2"),
    ("l2", "machine.attribution", "sequence"),
])
def test_bad_attribution_names_the_key(attribution, key, words):
    with pytest.raises(cs.ConfigError) as e:
        cs.simulate({"machine": {"attribution": attribution, "l2": False}, "workload": {"kind": "zipf"}})
    err = e.value.errors()[0]
    assert err["loc"] == key, e.value.errors()
    assert words in err["msg"]


def test_the_report_shows_causes_only_for_attributed_levels():
    run = {"workload": {"kind": "zipf"}, "run": {"max_accesses": 20_000}}
    with_causes = cs.simulate({**run, "machine": {"attribution": ["l2"]}}).format()
    rows = with_causes.split("misses by cause")[1].splitlines()[1:]
    assert [r.split()[0] for r in rows] == ["l2"]
    shares = [float(x.rstrip("%")) for x in rows[0].split()[1:]]
    assert abs(sum(shares) - 100) < 0.5, "the causes split all the misses"
    assert "misses by cause" not in cs.simulate(run).format()


def test_the_report_shows_the_tlb_levels_asked_for():
    r = cs.simulate("examples/scheduling.toml")
    assert r.config["machine"]["attribution"] == ["l2", "tlb.l1", "tlb.l2"]
    rows = {line.split()[0]: line.split()[1:] for line in
            r.format().split("misses by cause")[1].splitlines()[1:] if line.startswith(("l2", "tlb"))}
    assert list(rows) == ["l2", "tlb.l1", "tlb.l2"]
    for level in ("l1", "l2"):
        # From the raw counters: each task's misses, and its induced ones summed over the access kinds.
        misses = sum(t["tlb"][f"{level}_misses"] for t in r.raw["tasks"])
        induced = [sum(sum(t["tlb"][f"{level}_induced"][c]) for t in r.raw["tasks"])
                   for c in ("switch", "migration", "sharing")]
        want = ["-"] + [f"{100 * n / misses:.1f}%" for n in [misses - sum(induced), *induced]]
        assert rows[f"tlb.{level}"] == want
    assert any(float(x.rstrip("%")) > 0 for x in rows["tlb.l2"][2:]), "the scheduling example induces TLB misses"
