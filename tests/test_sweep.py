"""Sweeps: the spec, the local executor, the results store, failures and resuming."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import cachesched
from cachesched import sweep as sw
from cachesched.cli import main
from cachesched.executors import LocalExecutor
from cachesched.store import load, run_key
from cachesched.store import Store

#: Columns that measure the host, not the simulation.
WALL = ("wall_seconds", "accesses_per_second")


def spec(accesses: int = 50_000, **extra) -> dict:
    """8 runs on the teaching machine: 2 L2 sizes x 2 working sets x 2 seeds."""
    return {
        "name": "small",
        "base": {"machine": {"preset": "teaching"}, "run": {"prefetch": False},
                 "workload": {"kind": "zipf", "params": {"working_set_bytes": "64KiB", "accesses": accesses}}},
        "axes": {"machine.l2.size_bytes": ["16KiB", "64KiB"], "workload.params.working_set_bytes": ["32KiB", "256KiB"],
                 "seed": [1, 2]},
        **extra,
    }


def stable(df: pd.DataFrame) -> pd.DataFrame:
    """What must not depend on the executor or the worker count: everything
    but host timings and where the store is."""
    return df.drop(columns=[*WALL, "detail"]).sort_values("position").reset_index(drop=True)


def detail_json(df: pd.DataFrame) -> list[bytes]:
    """Each run's results.json (host timings are saved apart, in host.json)."""
    return [(Path(path) / "results.json").read_bytes() for path in df.sort_values("position").detail]


# ---------------------------------------------------------------- the spec


def test_product_zip_and_variants_make_the_points():
    s = sw.load_sweep(spec())
    points = s.points()
    assert len(points) == 8
    assert points[0].axes == {"machine.l2.size_bytes": "16KiB", "workload.params.working_set_bytes": "32KiB", "seed": 1}
    assert points[0].config["workload"]["params"] == {"working_set_bytes": "32KiB", "accesses": 50_000}
    assert points[-1].config["seed"] == 2 and points[-1].config["machine"] == {"preset": "teaching",
                                                                               "l2": {"size_bytes": "64KiB"}}
    zipped = sw.load_sweep({**spec(), "mode": "zip", "axes": {"seed": [1, 2, 3], "machine.l2.ways": [2, 4, 8]}})
    assert [(p.config["seed"], p.config["machine"]["l2"]["ways"]) for p in zipped.points()] == [(1, 2), (2, 4), (3, 8)]
    varied = sw.load_sweep({**spec(), "variants": {"lru": {"machine.l2.replacement": {"kind": "lru"}},
                                                    "plru": {"machine.l2.replacement": {"kind": "plru"}}}})
    assert len(varied.points()) == 16
    assert [p.variant for p in varied.points()][7:9] == ["lru", "plru"]


def test_key_paths_index_lists_and_merge_like_set(tmp_path):
    base = {"tasks": [{"workload": {"kind": "zipf", "params": {"accesses": 10}}},
                      {"workload": {"kind": "stream"}}]}
    out = sw.with_value(base, "tasks[1].workload.params.accesses", 5)
    assert out["tasks"][1]["workload"] == {"kind": "stream", "params": {"accesses": 5}}
    assert base["tasks"][1] == {"workload": {"kind": "stream"}}  # the base is never changed
    # A changed plug-in kind replaces the table, as --set does.
    assert sw.with_value(base, "tasks[0].workload", {"kind": "chase"})["tasks"][0]["workload"] == {"kind": "chase"}
    # Nested TOML tables under [axes] are key paths too.
    path = tmp_path / "s.toml"
    path.write_text('base = "base.toml"\n[axes]\nmachine.l2.ways = [2, 4]\n"tasks[0].workload.params.accesses" = [1]\n')
    (tmp_path / "base.toml").write_text('[[tasks]]\nworkload = { kind = "zipf" }\n')
    s = sw.load_sweep(path)
    assert s.name == "s" and list(s.axes) == ["machine.l2.ways", "tasks[0].workload.params.accesses"]
    assert s.base_dir == tmp_path.resolve() and len(s.points()) == 2


def test_sweep_files_and_text_that_do_not_parse(tmp_path):
    with pytest.raises(cachesched.ConfigError, match="<sweep text>: not valid TOML"):
        sw.load_sweep("axes = [")
    with pytest.raises(cachesched.ConfigError, match="cannot read the sweep"):
        sw.load_sweep(tmp_path / "missing.toml")


@pytest.mark.parametrize("change, loc, words", [
    ({"axis": [1]}, "axis", "unknown field"),
    ({"mode": "grid"}, "mode", "product, zip"),
    ({"axes": {"seed": []}}, "axes.seed", "non-empty list"),
    ({"axes": {"seed": 3}}, "axes.seed", "non-empty list"),
    ({"axes": {"machine..l2": [1]}}, "axes.machine..l2", "not a key path"),
    ({"axes": {"tasks[2].workload": [{}]}}, "axes.tasks[2].workload", "no key 'tasks'"),
    ({"variants": {"v": {"machine[0]": 1}}}, "variants.v.machine[0]", "machine is not a list"),
    ({"mode": "zip", "axes": {"seed": [1, 2], "machine.l2.ways": [2]}}, "axes.machine.l2.ways", "equal length"),
    ({"base": None}, "base", "needs a base"),
    ({"base": "missing.toml"}, "base", "no configuration file"),
    ({"variants": {"a": 1}}, "variants.a", "table of key paths"),
])
def test_spec_errors_name_the_key(change, loc, words):
    doc = {**spec(), **change}
    if change.get("base", 0) is None:
        del doc["base"]
    with pytest.raises(cachesched.ConfigError) as e:
        sw.load_sweep(doc)
    assert e.value.errors()[0]["loc"] == loc
    assert words in str(e.value) and str(e.value).startswith(loc)


# ---------------------------------------------------------------- running


def test_local_sweep_stores_every_run_and_a_rerun_skips_them(tmp_path):
    store = tmp_path / "store"
    out = cachesched.run_sweep(spec(), store=store, workers=2, progress=False)
    assert (out.points, out.done, out.failed, out.skipped) == (8, 8, 0, 0)
    df = load(store, "small")
    assert df.attrs["axes"] == ["machine.l2.size_bytes", "workload.params.working_set_bytes", "seed"]
    assert len(df) == 8 and (df.status == "done").all() and df.key.is_unique
    assert list(df.columns[:6]) == ["sweep", "position", "variant", "machine.l2.size_bytes",
                                    "workload.params.working_set_bytes", "seed"]
    assert (df.accesses == 50_000).all() and df.l1d_miss_ratio.between(0, 1).all()
    # The bigger working set misses more in the L1D, whatever the L2 and seed.
    by_ws = df.groupby("workload.params.working_set_bytes").l1d_miss_ratio.mean()
    assert by_ws["256KiB"] > by_ws["32KiB"]
    # The detail folder holds what Results.save writes.
    first = Path(df.detail[0])
    assert json.loads((first / "results.json").read_text())["summary"]["accesses"] == 50_000
    assert (first / "levels.parquet").exists()
    again = cachesched.run_sweep(spec(), store=store, workers=1, progress=False)
    assert (again.done, again.skipped) == (0, 8)
    # One worker gives the same results as two.
    one = tmp_path / "one"
    cachesched.run_sweep(spec(), store=one, workers=1, progress=False)
    pd.testing.assert_frame_equal(stable(load(one)), stable(df))
    assert detail_json(load(one)) == detail_json(df)


def test_a_failing_run_is_recorded_with_its_error_and_the_others_complete(tmp_path):
    # ways=3 does not resolve (caught before running); a negative exponent
    # is caught when the workload is built (in the worker).
    doc = spec(axes={"seed": [1, 2]},
               variants={"good": {}, "bad-ways": {"machine.l2.ways": 3},
                         "bad-exponent": {"workload.params.exponent": -1.0}})
    out = cachesched.run_sweep(doc, store=tmp_path, workers=2, progress=False)
    assert (out.points, out.done, out.failed, out.invalid) == (6, 2, 2, 2)  # bad-ways never reaches a worker
    df = load(tmp_path).set_index(["variant", "seed"])
    assert (df.loc["good", "status"] == "done").all()
    assert (df.loc["bad-ways", "status"] == "failed").all() and (df.loc["bad-exponent", "status"] == "failed").all()
    assert df.loc[("bad-ways", 1), "error"].startswith("ConfigError") and "machine.l2" in df.loc[("bad-ways", 1), "error"]
    assert "exponent" in df.loc[("bad-exponent", 1), "error"]
    # Failed runs are finished: not tried again unless asked.
    again = cachesched.run_sweep(doc, store=tmp_path, progress=False)
    assert (again.done, again.failed, again.skipped, again.invalid) == (0, 0, 4, 2)
    retried = cachesched.run_sweep(doc, store=tmp_path, workers=2, retry_failed=True, progress=False)
    assert (retried.done, retried.failed, retried.invalid) == (0, 2, 2)
    assert load(tmp_path).set_index(["variant", "seed"]).error.equals(df.error)


def test_a_worker_of_another_version_refuses_the_run():
    outcome = sw.execute({"key": "k", "config": {}, "version": "0.0.0-other"})
    assert not outcome["ok"] and "keyed for 0.0.0-other" in outcome["error"]


def test_an_engine_built_from_other_sources_runs_everything_again(tmp_path):
    # The engine is the version and the hash of the Rust sources it was built from.
    assert sw.ENGINE == f"{cachesched.__version__}+{cachesched._core.__build__}"
    assert len(cachesched._core.__build__) == 16 and int(cachesched._core.__build__, 16) >= 0
    store = tmp_path / "store"
    cachesched.run_sweep(spec(), store=store, workers=1, progress=False)
    # Make the store one that another build (before a fix to the simulator)
    # filled: its runs keyed and marked as that engine's.
    other = "0.1.0+0000000000000000"
    with sqlite3.connect(store / "ledger.sqlite") as db:
        for key, config in db.execute("SELECT key, config FROM runs").fetchall():
            old = run_key(json.loads(config), other)
            db.execute("UPDATE runs SET key = ?, version = ? WHERE key = ?", (old, other, key))
            db.execute("UPDATE points SET key = ? WHERE key = ?", (old, key))
    # This engine reuses none of them: it runs all eight again.
    again = cachesched.run_sweep(spec(), store=store, workers=1, progress=False)
    assert (again.done, again.skipped) == (8, 0)
    with sqlite3.connect(store / "ledger.sqlite") as db:
        used = db.execute("SELECT DISTINCT version FROM points JOIN runs USING (key)").fetchall()
    assert used == [(sw.ENGINE,)]


def die_once(job: dict) -> dict:
    """A run whose worker process is killed the first time it runs it."""
    marker = Path(job["marker"])
    if job["die"] and not marker.exists():
        marker.write_text("died")
        os.kill(os.getpid(), signal.SIGKILL)
    return {"ok": True, "value": job["key"]}


def test_local_executor_survives_a_worker_killed_mid_run(tmp_path):
    jobs = [{"key": str(i), "die": i == 3, "marker": str(tmp_path / "marker")} for i in range(8)]
    with LocalExecutor(2) as ex:
        seen = [outcome["value"] for _, outcome in ex.run(die_once, iter(jobs))]
    assert sorted(seen) == [str(i) for i in range(8)]  # each once, the killed one included
    assert (tmp_path / "marker").exists()


def _driver(store: Path, spec_path: Path, *extra: str, out: int | None = subprocess.PIPE) -> subprocess.Popen:
    """``cachesched sweep`` in a process group of its own (so nothing it starts can outlive the test)."""
    return subprocess.Popen([sys.executable, "-m", "cachesched.cli", "sweep", str(spec_path), "--store", str(store),
                             "-q", *extra], stdout=out, stderr=out, text=True, start_new_session=True)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _done(store: Path) -> int:
    path = store / "ledger.sqlite"
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM runs WHERE status = 'done'").fetchone()[0]
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0


def test_a_driver_killed_midway_resumes_with_no_lost_or_duplicated_run(tmp_path):
    spec_path = tmp_path / "s.toml"
    spec_path.write_text("""name = "small"
[base]
machine = { preset = "teaching" }
run = { prefetch = false }
workload = { kind = "zipf", params = { working_set_bytes = "64KiB", accesses = 150_000 } }
[axes]
"machine.l2.size_bytes" = ["16KiB", "64KiB"]
"workload.params.working_set_bytes" = ["32KiB", "256KiB"]
seed = [1, 2]
""")
    store = tmp_path / "store"
    driver = _driver(store, spec_path, "--workers", "1", out=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while _done(store) < 2 and driver.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(10)
        done_at_kill = _done(store)
        assert 2 <= done_at_kill < 8, "the driver should have been killed midway"
        # Its fork server and worker notice and exit by themselves.
        deadline = time.monotonic() + 20
        while _group_alive(driver.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _group_alive(driver.pid), "a worker outlived its driver"
    finally:
        if _group_alive(driver.pid):
            os.killpg(driver.pid, signal.SIGKILL)
    resumed = _driver(store, spec_path, "--workers", "2")
    stdout, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr
    assert f"{8 - done_at_kill} run, 0 failed, {done_at_kill} already in the store" in stdout
    with sqlite3.connect(store / "ledger.sqlite") as db:
        assert db.execute("SELECT COUNT(*), COUNT(DISTINCT key) FROM runs").fetchone() == (8, 8)
        assert db.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall() == [("done", 8)]
        assert db.execute("SELECT COUNT(*) FROM points").fetchone() == (8,)
    assert len(list((store / "runs").glob("*/*"))) == 8  # glob leaves out the hidden .tmp
    assert not any((store / "runs" / ".tmp").iterdir())
    clean = tmp_path / "clean"
    cachesched.run_sweep(spec_path, store=clean, workers=2, progress=False)
    pd.testing.assert_frame_equal(stable(load(store)), stable(load(clean)))
    assert detail_json(load(store)) == detail_json(load(clean))


def test_zero_workers_is_a_config_error(tmp_path):
    with pytest.raises(cachesched.ConfigError, match="workers: expected at least 1, got 0"):
        cachesched.run_sweep(spec(), store=tmp_path, workers=0, progress=False)


def test_a_store_has_one_driver_at_a_time(tmp_path):
    db = Store(tmp_path)
    with db.driving():
        with pytest.raises(cachesched.CacheschedError, match="another sweep"):
            cachesched.run_sweep(spec(), store=tmp_path, progress=False)


def test_cli_sweep_and_results_commands(run_cli, tmp_path, capsys):
    spec_path = Path(__file__).parent.parent / "examples" / "sweep.toml"
    store = str(tmp_path / "store")
    proc = run_cli("sweep", str(spec_path), "--store", store, "--workers", "2", "-q")
    assert proc.returncode == 0, proc.stderr
    assert "12 points: 12 run, 0 failed, 0 already in the store" in proc.stdout

    def results(*args: str) -> str:  # in this process: a fresh interpreter per command costs seconds here
        assert main(["results", *args, "--store", store]) == 0
        return capsys.readouterr().out

    listing = results("ls")
    assert "sweep" in listing and " 12 " in listing
    points = results("ls", "sweep")
    assert "machine.l2.size_bytes" in points and points.count("done") == 12
    key = load(store).key[0]
    shown = results("show", key[:10])
    assert key in shown and "status   done" in shown and '"preset": "teaching"' in shown
    results("export", "sweep", "-o", str(tmp_path / "t.csv"))
    results("export", "-o", str(tmp_path / "t.parquet"))
    csv, parquet = pd.read_csv(tmp_path / "t.csv"), pd.read_parquet(tmp_path / "t.parquet")
    assert len(csv) == len(parquet) == 12 and list(csv.columns) == list(parquet.columns)
    assert set(csv.variant) == {"lru", "plru"}
    assert main(["results", "ls", "--store", str(tmp_path / "nothing")]) == 1
    assert "no results store" in capsys.readouterr().err
    assert main(["results", "ls", "nope", "--store", store]) == 1
    assert "no sweep named 'nope'" in capsys.readouterr().err
