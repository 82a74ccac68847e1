"""The L2 and prefetcher parts of the migration study: the metrics'
formulas (spec §4.3) on hand-computed numbers, and the selection rule."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from cachesched.studies.migration import l2, prefetch


def test_selection_rule_is_regional_below_one_line_per_set_then_local_mru_n():
    sets = l2.l2_sets(2 << 20)  # 2048 sets of 16 ways
    assert sets == 2048
    assert l2.Scheme("local", 512).select(sets) == {"kind": "regional-mru", "lines": 512}
    assert l2.Scheme("local", 2048).select(sets) == {"kind": "local-mru", "n": 1}
    assert l2.Scheme("local", 8192).select(sets) == {"kind": "local-mru", "n": 4}
    assert l2.Scheme("global", 512).select(sets) == {"kind": "global-mru", "lines": 512}
    assert l2.Scheme("full").select(sets) == {"kind": "all"}
    assert [m["kind"] for m in l2.Scheme("flush").mechanisms(sets)] == ["cache-flush"]


def test_efficiency_mi_mrr_and_cpi_reduction_by_hand():
    # flush: 1000 misses per window, full restore: 400; S of 256 lines: 800.
    rows = [
        {"benchmark": "b", "l2_bytes": 1, "pmw": 1, "scheme": "flush", "size": None, "l2_misses": 1000.0, "cpi": 2.0,
         "restored": 0.0},
        {"benchmark": "b", "l2_bytes": 1, "pmw": 1, "scheme": "full", "size": None, "l2_misses": 400.0, "cpi": 1.5,
         "restored": 4000.0},
        {"benchmark": "b", "l2_bytes": 1, "pmw": 1, "scheme": "local", "size": 256, "l2_misses": 800.0, "cpi": 1.9,
         "restored": 250.0},
    ]
    df = l2.derive(pd.DataFrame(rows)).set_index("scheme")
    assert df.loc["local", "efficiency"] == pytest.approx(200 / 250)
    assert df.loc["local", "mi_mrr"] == pytest.approx(200 / 600)
    assert df.loc["full", "mi_mrr"] == pytest.approx(1.0)
    assert df.loc["local", "cpi_reduction"] == pytest.approx(0.05)
    assert math.isnan(df.loc["flush", "efficiency"])


def test_prefetch_traffic_and_reductions_by_hand():
    base = {"benchmark": "b", "timing": "live", "pmw": 1, "latency": 150, "windows": 2, "migrations": 2,
            "tags": 0, "tag_messages": 0, "migration_prefetches": 0, "hardware_prefetches": 0, "prefetched_used": 0}
    rows = [
        {**base, "tags_sent": "none", "l2_misses": 500.0, "cpi": 4.0, "demand_l2_misses": 1000},
        {**base, "tags_sent": "local-mru", "l2_misses": 300.0, "cpi": 3.0, "demand_l2_misses": 600, "tags": 128,
         "tag_messages": 8, "migration_prefetches": 100},
    ]
    df = prefetch._derive(pd.DataFrame(rows), ["benchmark", "timing", "pmw", "latency"],
                          pd.Series([True, False])).set_index("tags_sent")
    assert df.loc["local-mru", "miss_reduction_pct"] == pytest.approx(0.4)
    assert df.loc["local-mru", "cpi_reduction"] == pytest.approx(0.25)
    # 8 tag messages + 2 x 100 prefetches over 2 x 1000 baseline misses.
    assert df.loc["local-mru", "extra_traffic"] == pytest.approx(208 / 2000)
    assert df.loc["none", "extra_traffic"] == 0
