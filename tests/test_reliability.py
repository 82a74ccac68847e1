"""Reliability: no command destroys a user's file, no configuration aborts
the process, no traceback where an error is due, text traces from pipes,
and result files that two identical runs write byte for byte alike."""

from __future__ import annotations

import gzip
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import cachesched
from cachesched import ConfigError, TraceError, trace

DIN = "".join(f"{k} {a:x}\n" for k, a in [(0, 0x1000), (1, 0x2040), (0, 0x1008), (2, 0x400000)] * 50)
SWEEP = {
    "name": "tiny",
    "base": {"machine": {"preset": "teaching"}, "run": {"prefetch": False},
             "workload": {"kind": "zipf", "params": {"working_set_bytes": "64KiB", "accesses": 20_000}}},
    "axes": {"machine.l2.size_bytes": ["16KiB", "64KiB"], "seed": [1, 2]},
}


def no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "panicked" not in proc.stderr, proc.stderr


def leftovers(folder: Path, keep: set[str]) -> list[str]:
    """Files in ``folder`` other than ``keep``: a staged output left behind."""
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


@pytest.fixture
def cst(tmp_path) -> Path:
    path = tmp_path / "z.cst"
    trace.generate({"kind": "zipf", "params": {"accesses": 50_000, "working_set_bytes": "1MiB"}}, path)
    return path


# ------------------------------------------------------------ 1. data loss


@pytest.mark.parametrize("how", ["din", "cst", "slice", "link"])
def test_an_output_that_is_an_input_is_refused_and_the_input_kept(run_cli, tmp_path, cst, how):
    din = tmp_path / "a.din"
    din.write_text(DIN)
    link = tmp_path / "link.cst"
    link.symlink_to(cst)
    args = {"din": ["trace", "convert", str(din), str(din)],
            "cst": ["trace", "convert", str(cst), str(cst)],
            "slice": ["trace", "slice", str(cst), "-o", str(cst), "--limit", "10"],
            "link": ["trace", "convert", str(cst), str(link)]}[how]
    before = {p: p.read_bytes() for p in (din, cst)}
    proc = run_cli(*args)
    no_traceback(proc)
    assert proc.returncode == 2, proc.stderr
    assert "is also an input" in proc.stderr, proc.stderr
    assert {p: p.read_bytes() for p in (din, cst)} == before
    assert link.is_symlink()
    assert leftovers(tmp_path, {"a.din", "z.cst", "link.cst"}) == []


def test_the_python_api_refuses_it_too(cst):
    before = cst.read_bytes()
    with pytest.raises(ConfigError, match="is also an input"):
        trace.convert(cst, cst)
    with pytest.raises(ConfigError, match="is also an input"):
        trace.slice(cst, cst, limit=5)
    assert cst.read_bytes() == before


def test_a_failed_conversion_leaves_nothing_and_keeps_what_was_there(run_cli, tmp_path):
    bad = tmp_path / "bad.din"
    bad.write_text("0 1000\n0 2000\nnot a record\n")
    out = tmp_path / "out.cst"
    proc = run_cli("trace", "convert", "--format", "din", str(bad), str(out))
    assert proc.returncode == 1 and "line 3" in proc.stderr
    assert not out.exists()
    out.write_bytes(b"precious")
    proc = run_cli("trace", "convert", "--format", "din", str(bad), str(out))
    assert proc.returncode == 1
    assert out.read_bytes() == b"precious"
    assert leftovers(tmp_path, {"bad.din", "out.cst"}) == []


def test_a_stopped_generation_leaves_nothing(tmp_path):
    out = tmp_path / "g.cst"
    out.write_bytes(b"precious")

    def stop(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        trace.generate({"kind": "stream", "params": {"accesses": 5_000_000}}, out, progress=stop)
    assert out.read_bytes() == b"precious"
    assert leftovers(tmp_path, {"g.cst"}) == []


def test_saved_results_replace_each_file_whole(tmp_path):
    r = cachesched.simulate({"machine": {"preset": "teaching"}, "workload": {"kind": "stream",
                                                                             "params": {"accesses": 1000}}})
    out, doc = tmp_path / "out", tmp_path / "r.json"

    def inodes() -> dict[str, int]:
        return {p.name: p.stat().st_ino for p in [*out.iterdir(), doc]}

    r.save(out)
    r.to_json(doc)
    before = inodes()
    r.save(out)
    r.to_json(doc)
    # A file rewritten in place keeps its inode; one staged beside it and
    # renamed onto it has a new one (the old is still alive when it is made).
    assert {name: ino != before[name] for name, ino in inodes().items()} == {name: True for name in before}
    assert leftovers(out, set(before)) == [] and leftovers(tmp_path, {"out", "r.json"}) == []
    # Through a link, the file it names gets the content and the link stays.
    (tmp_path / "link.json").symlink_to(doc)
    doc.write_text("old")
    r.to_json(tmp_path / "link.json")
    assert (tmp_path / "link.json").is_symlink() and json.loads(doc.read_text())["summary"]["accesses"] == 1000


# ------------------------------------------------------- 2. aborts


@pytest.mark.parametrize("setting, key, figure", [
    ('machine.llc.size_bytes="1TiB"', "machine.llc.size_bytes", "GiB of host memory"),
    ("machine.tlb.l1d.entries=2147483648", "machine.tlb.l1d.entries", "GiB of host memory"),
    ('machine.l2.size_bytes="512GiB"', "machine.l2.size_bytes", "GiB of host memory"),
    ("run.batch=4000000000", "run.batch", "2^24"),
    ("machine.memory.nodes=1000000000", "machine.memory.nodes", "at most 1024 nodes"),
])
def test_a_machine_too_large_for_the_host_is_refused_at_validation(run_cli, setting, key, figure):
    for command in (["config"], ["run", "-q"]):
        proc = run_cli(*command, "--example", "quickstart", "--set", setting, "--accesses", "1000")
        no_traceback(proc)
        assert proc.returncode == 2, (command, proc.returncode, proc.stderr)
        assert f"{key}: " in proc.stderr and figure in proc.stderr, proc.stderr


def test_run_max_memory_bounds_the_machine():
    base = {"machine": {"preset": "standard"}, "workload": {"kind": "stream", "params": {"accesses": 1000}}}
    with pytest.raises(ConfigError) as info:
        cachesched.resolve({**base, "run": {"max_memory": "1MiB"}})
    (issue,) = info.value.errors()
    assert issue["code"] == "too_large"
    assert issue["loc"] == "machine.llc.size_bytes", issue  # the largest part of the standard machine
    assert "run.max_memory" in issue["msg"] and "MiB" in issue["msg"]
    assert cachesched.resolve({**base, "run": {"max_memory": "1GiB"}})["run"]["max_memory"] == 1 << 30


def test_attribution_shadows_count_per_task():
    tasks = [{"workload": {"kind": "stream", "params": {"accesses": 1000}}, "count": 4096}]
    with pytest.raises(ConfigError) as info:
        cachesched.resolve({"machine": {"preset": "standard", "attribution": ["llc"]}, "tasks": tasks,
                            "run": {"max_memory": "4GiB"}})
    assert info.value.errors()[0]["loc"] == "machine.attribution"


# ------------------------------------------------------- 3. tracebacks


@pytest.fixture
def store(tmp_path, run_cli) -> Path:
    spec = tmp_path / "s.toml"
    spec.write_text(_toml(SWEEP))
    store = tmp_path / "store"
    run_cli("sweep", str(spec), "--store", str(store), "--workers", "1", "-q", check=True)
    return store


def _toml(doc: dict) -> str:
    # Enough TOML for the sweep above: inline tables for the nested values.
    def value(v):
        if isinstance(v, dict):
            return "{ " + ", ".join(f'"{k}" = {value(x)}' for k, x in v.items()) + " }"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(v)

    lines = [f'name = "{doc["name"]}"', "[base]"]
    lines += [f'"{k}" = {value(v)}' for k, v in doc["base"].items()]
    lines += ["[axes]"] + [f'"{k}" = {value(v)}' for k, v in doc["axes"].items()]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_a_damaged_ledger_is_reported_and_rebuilt_from_the_runs(run_cli, tmp_path, store, damage):
    ledger = store / "ledger.sqlite"
    con = sqlite3.connect(ledger)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = ledger.read_bytes()
    ledger.write_bytes(data[:5000] if damage == "truncate" else data[:100] + os.urandom(len(data) - 100))
    for args in (["results", "ls"], ["results", "ls", "tiny"], ["sweep", str(tmp_path / "s.toml")]):
        proc = run_cli(*args, "--store", str(store))
        no_traceback(proc)
        assert proc.returncode == 1, proc.stderr
        assert str(ledger) in proc.stderr and "cachesched results rebuild" in proc.stderr, proc.stderr
    proc = run_cli("results", "rebuild", "--store", str(store), check=True)
    assert "4 runs" in proc.stdout
    proc = run_cli("sweep", str(tmp_path / "s.toml"), "--store", str(store), "-q", check=True)
    assert "0 run" in proc.stdout and "4 already in the store" in proc.stdout, proc.stdout
    df = cachesched.results.load(store, "tiny")
    assert list(df.status) == ["done"] * 4 and df.cpi.notna().all()


def test_a_damaged_result_file_is_run_again_and_report_names_it(run_cli, tmp_path, store):
    runs = sorted(store.glob("runs/*/*/results.json"))
    assert len(runs) == 4
    runs[0].write_text('{"broken')
    proc = run_cli("report", str(runs[0].parent), "-o", str(tmp_path / "rep"))
    no_traceback(proc)
    assert proc.returncode == 1 and str(runs[0]) in proc.stderr, proc.stderr
    proc = run_cli("sweep", str(tmp_path / "s.toml"), "--store", str(store), "-q", check=True)
    assert "1 run" in proc.stdout and "3 already in the store" in proc.stdout, proc.stdout
    assert json.loads(runs[0].read_text())["summary"]["accesses"] == 20_000
    # A damaged table is found the same way.
    tables = sorted(runs[1].parent.glob("*.parquet"))
    tables[0].write_bytes(tables[0].read_bytes()[:-10])
    proc = run_cli("sweep", str(tmp_path / "s.toml"), "--store", str(store), "-q", check=True)
    assert "1 run" in proc.stdout, proc.stdout


def test_a_config_file_that_is_not_utf8(run_cli, tmp_path):
    bad = tmp_path / "latin1.toml"
    bad.write_bytes('name = "caf\xe9"\n'.encode("latin-1"))
    proc = run_cli("run", str(bad))
    no_traceback(proc)
    assert proc.returncode == 2 and str(bad) in proc.stderr and "UTF-8" in proc.stderr, proc.stderr


@pytest.mark.parametrize("args, flag", [
    (["trace", "cat", "{cst}", "--skip", "-5"], "--skip"),
    (["trace", "cat", "{cst}", "--thread", "-1"], "--thread"),
    (["trace", "cat", "{cst}", "--limit", "-1"], "--limit"),
    (["trace", "slice", "{cst}", "-o", "{out}", "--limit", "-3"], "--limit"),
    (["trace", "info", "{cst}", "--scan", "--thread", "-2"], "--thread"),
    (["mrc", "{cst}", "--line-bytes", "-64"], "--line-bytes"),
    (["mrc", "{cst}", "--sets", "0"], "--sets"),
    (["trace", "gen", "stream", "-o", "{out}", "--accesses", "-10"], "--accesses"),
    (["trace", "convert", "{cst}", "{out}", "--skip", "-1"], "--skip"),
    (["record", "-o", "{out}", "--limit", "0", "--", "true"], "--limit"),
    (["bench", "--accesses", "-5"], "--accesses"),
    (["run", "--example", "teaching", "--accesses", "-5"], "--accesses"),
])
def test_negative_numbers_on_the_command_line_are_usage_errors(run_cli, tmp_path, cst, args, flag):
    args = [a.format(cst=cst, out=tmp_path / "o.cst") for a in args]
    proc = run_cli(*args)
    no_traceback(proc)
    assert proc.returncode == 2, proc.stderr
    assert flag in proc.stderr, proc.stderr
    assert not (tmp_path / "o.cst").exists()


# ------------------------------------------------ 4. errors without a key


@pytest.mark.parametrize("setting, key", [
    ("machine.frequency_ghz=nan", "machine.frequency_ghz"),
    ("machine.frequency_ghz=inf", "machine.frequency_ghz"),
    ("workload.params.components[0].workload.params.exponent=nan", "workload"),
])
def test_non_finite_numbers_name_their_key(run_cli, setting, key):
    proc = run_cli("config", "--example", "quickstart", "--set", setting)
    no_traceback(proc)
    assert proc.returncode == 2
    assert f"{key}" in proc.stderr and ": expected a finite number" in proc.stderr, proc.stderr


def test_a_nan_inside_a_list_names_its_index():
    cfg = {"machine": {"preset": "teaching"}, "workload": {"kind": "mix", "params": {"components": [
        {"weight": 1.0, "workload": {"kind": "zipf", "params": {"exponent": float("nan")}}}]}}}
    with pytest.raises(ConfigError, match=r"workload\.params\.components\[0\]\.workload\.params\.exponent: "):
        cachesched.resolve(cfg)


@pytest.mark.parametrize("size", [2**64, 2**64 + 64, 2**70])
def test_sizes_of_64_bits_and_more_are_refused(size):
    with pytest.raises(ConfigError) as info:
        cachesched.resolve({"machine": {"l2": {"size_bytes": size}}, "workload": {"kind": "stream"}})
    (issue,) = info.value.errors()
    assert issue["loc"] == "machine.l2.size_bytes" and "2^64" in issue["msg"], issue
    with pytest.raises(ConfigError, match="2\\^64"):
        cachesched.resolve({"machine": {"l2": {"size_bytes": "16777216TiB"}}, "workload": {"kind": "stream"}})


# ------------------------------------------------------------ 5. pipes


@pytest.mark.parametrize("format", ["din", "auto"])
def test_text_traces_convert_from_a_pipe(tmp_path, format):
    out = tmp_path / "p.cst"
    proc = subprocess.run([sys.executable, "-m", "cachesched.cli", "trace", "convert", "--format", format,
                           "/dev/stdin", str(out)], input=DIN, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    frame = trace.read(out)
    assert len(frame) == 200 and list(frame.addr[:4]) == [0x1000, 0x2040, 0x1008, 0x400000]


def test_compressed_lackey_from_a_fifo_runs(tmp_path):
    lackey = "".join(f" L {0x1000 + 64 * i:08x},8\n S {0x9000 + 8 * i:08x},4\n" for i in range(500))
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    feeder = subprocess.Popen(["sh", "-c", f"gzip -c > '{fifo}'"], stdin=subprocess.PIPE)
    feeder.stdin.write(lackey.encode())
    feeder.stdin.close()
    r = cachesched.simulate({"machine": {"preset": "teaching"},
                             "workload": {"kind": "trace", "params": {"path": str(fifo), "format": "lackey"}}})
    feeder.wait(timeout=60)
    assert r.summary["accesses"] == 1000


def test_a_cst_from_a_pipe_says_it_needs_a_file(tmp_path, cst):
    proc = subprocess.run([sys.executable, "-m", "cachesched.cli", "trace", "convert", "/dev/stdin",
                           str(tmp_path / "o.cst")], input=cst.read_bytes(), capture_output=True, timeout=120)
    proc.stderr = proc.stderr.decode()
    no_traceback(proc)
    assert proc.returncode == 1 and "/dev/stdin" in proc.stderr and "pipe" in proc.stderr, proc.stderr
    assert not (tmp_path / "o.cst").exists()


# ------------------------------------------------- 6. determinism of files


def test_two_identical_runs_write_identical_result_files(run_cli, tmp_path):
    for n in (1, 2):
        run_cli("run", "--example", "teaching", "--accesses", "50000", "-q", "--out", str(tmp_path / f"o{n}"),
                "--json", str(tmp_path / f"r{n}.json"), check=True)
    assert (tmp_path / "r1.json").read_bytes() == (tmp_path / "r2.json").read_bytes()
    files = sorted(p.name for p in (tmp_path / "o1").iterdir())
    assert "results.json" in files and "host.json" in files
    for name in files:
        if name != "host.json":
            assert (tmp_path / "o1" / name).read_bytes() == (tmp_path / "o2" / name).read_bytes(), name
    host = json.loads((tmp_path / "o1" / "host.json").read_text())
    assert host["wall_seconds"] > 0 and host["accesses_per_second"] > 0
    doc = json.loads((tmp_path / "o1" / "results.json").read_text())
    assert "wall_seconds" not in json.dumps(doc)


def test_host_timings_stay_reachable():
    r = cachesched.simulate({"machine": {"preset": "teaching"}, "workload": {"kind": "stream",
                                                                             "params": {"accesses": 1000}}})
    assert r.host["wall_seconds"] > 0
    assert "simulated in" in r.format()
    assert "host" not in json.loads(r.to_json())


# ------------------------------------------------------------ 7. minor


def test_mrc_sizes_take_the_units_configs_take(run_cli, cst):
    proc = run_cli("mrc", str(cst), "--sizes", "32KiB", "1TiB", "-q", "--csv", "/dev/stdout")
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert str(1 << 40) in proc.stdout


@pytest.mark.parametrize("format", ["din", "lackey", "champsim"])
def test_an_empty_trace_is_refused(run_cli, tmp_path, format):
    empty = tmp_path / "empty.trace"
    empty.write_bytes(b"")
    cfg = {"workload": {"kind": "trace", "params": {"path": str(empty), "format": format}}}
    with pytest.raises(TraceError, match="holds no accesses"):
        cachesched.simulate(cfg)
    proc = run_cli("trace", "convert", "--format", format, str(empty), str(tmp_path / "e.cst"))
    assert proc.returncode == 1 and "holds no accesses" in proc.stderr, proc.stderr
    assert not (tmp_path / "e.cst").exists()
    gz = tmp_path / "empty.gz"
    gz.write_bytes(gzip.compress(b""))
    with pytest.raises(TraceError, match="holds no accesses"):
        cachesched.simulate({"workload": {"kind": "trace", "params": {"path": str(gz), "format": format}}})
