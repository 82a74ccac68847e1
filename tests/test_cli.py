"""The command line, run as a user would."""

from __future__ import annotations

import json

import pytest


def test_run_builtin_example_as_json(run_cli):
    proc = run_cli("run", "--example", "quickstart", "--accesses", "20000", "-q", "--json", "-", check=True)
    data = json.loads(proc.stdout)
    assert data["summary"]["accesses"] == 20000
    assert data["config"]["machine"]["preset"] == "standard"


def test_run_prints_a_report_and_writes_tables(run_cli, tmp_path):
    proc = run_cli("run", "--example", "teaching", "--out", str(tmp_path / "out"), check=True)
    assert "miss ratio" in proc.stdout and "l1d" in proc.stdout
    assert (tmp_path / "out" / "results.json").exists()
    assert (tmp_path / "out" / "caches.parquet").exists()


def test_config_errors_exit_2_with_the_key_path(run_cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[machine.l2]\nwayz = 8\n[workload]\nkind = "stream"\n')
    proc = run_cli("run", str(bad))
    assert proc.returncode == 2
    assert "machine.l2.wayz: unknown field" in proc.stderr
    proc = run_cli("run", "--example", "nope")
    assert proc.returncode == 2 and "quickstart" in proc.stderr


def test_trace_gen_and_info(run_cli, tmp_path):
    path = tmp_path / "z.cst"
    proc = run_cli("trace", "gen", "zipf", "-o", str(path), "--accesses", "10000",
                   "--param", "working_set_bytes=1MiB", "--param", "store_fraction=0.5", check=True)
    assert "10,000 accesses" in proc.stdout
    info = json.loads(run_cli("trace", "info", str(path), "--scan", "--json", check=True).stdout)
    assert info["summary"]["accesses"] == 10000
    scan = info["scan"]
    assert scan["loads"] + scan["stores"] == 10000
    assert 0.45 < scan["stores"] / 10000 < 0.55
    assert scan["lines_64"] <= (1 << 20) // 64
    text = run_cli("trace", "info", str(path), check=True).stdout
    assert "accesses      10,000" in text
    proc = run_cli("trace", "info", str(tmp_path / "missing.cst"))
    assert proc.returncode == 1 and "missing.cst" in proc.stderr


def test_presets_and_config(run_cli):
    listing = run_cli("presets", check=True).stdout
    assert "standard" in listing and "numa-sunfire6800" in listing
    toml = run_cli("presets", "teaching", check=True).stdout
    assert "[machine.l1d]" in toml
    cfg = json.loads(run_cli("config", "--example", "quickstart", "--set", "machine.l2.ways=8", check=True).stdout)
    assert cfg["machine"]["l2"]["ways"] == 8
    assert "quickstart" in run_cli("examples", check=True).stdout


def test_bench_runs_small_and_agrees_with_pycachesim(run_cli, tmp_path):
    proc = run_cli("bench", "--accesses", "200000", "--cache-dir", str(tmp_path), "--json", str(tmp_path / "b.json"),
                   check=True)
    assert "M accesses/s" in proc.stdout
    figures = json.loads((tmp_path / "b.json").read_text())
    assert figures["counts_agree"] is True
    assert figures["ours_tlb"] > 0 and figures["pycachesim"] > 0
    assert "NUMA, 16 threads" in proc.stdout and figures["numa"] > 0 and figures["numa_ratio"] > 0
    assert "region scheduling, one task" in proc.stdout and figures["region"] > 0 and figures["region_ratio"] > 0
    assert "hypervisor block cache" in proc.stdout and figures["block_cache_locked"] > 0
    assert figures["block_cache_ratio"] == figures["block_cache_locked"] / figures["block_cache_lru"]
    # The floor counted what the engine counts (it stops the command otherwise).
    assert "counts equal" in proc.stdout and figures["floor"]["accesses"] == 200_000
    assert figures["engine_floor_ratio"] == figures["floor"]["engine_ns"] / figures["floor"]["floor_ns"]
    assert figures["split_ratio"] == figures["floor"]["engine_ns"] / figures["floor"]["engine_split_ns"]
    assert "caches split by set over two threads, in memory" in proc.stdout
    assert "as run by default on this host" in proc.stdout and figures["single_split_ratio"] > 0
    # The scheduling scenario's bound: its wall time is at least its CPU
    # time (every thread's) over the host's CPUs, so its ratio at most the bound.
    for key in ("scheduling", "scheduling_attribution"):
        cpu, wall = figures[f"{key}_cpu_seconds"], 200_000 / figures[key]
        assert 0 < cpu <= figures["cpus"] * wall + 0.01
        assert figures[f"{key}_bound"] == pytest.approx(200_000 / figures["ours_tlb"] * figures["cpus"] / cpu)
        assert figures[f"{key}_ratio"] <= figures[f"{key}_bound"] * 1.05
    # callgrind's counts: the simulation thread's part of the process's.
    counted = figures["instructions_per_access"]
    assert 0 < counted["simulation_thread"] < counted["process"]
    assert figures["resident_mib"]["tenth"] > 0 and figures["resident_mib"]["whole"] > 0


def test_the_progress_bar_shows_in_a_terminal_only_and_is_erased_before_the_results(run_cli):
    """In a terminal a run of seconds shows a bar, erased before the report;
    into a log or a pipe no bar is written, whose last picture would stay."""
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import sys
    import termios

    args = ["run", "--example", "quickstart", "--set", "workload.params.accesses=60000000"]
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 80, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "cachesched.cli", *args], stdin=follower, stdout=follower,
                            stderr=follower, close_fds=True)
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        out += chunk
    assert proc.wait(timeout=300) == 0
    text = out.decode()
    assert "%|" in text, "a run of a few seconds shows a bar in a terminal"
    before_report = text[:text.index("accesses  ")]
    assert before_report.rstrip("\r\n").split("\r")[-1].strip() == "", "the last bar is erased"
    logged = run_cli(*args, check=True)
    assert "%|" not in logged.stderr and "accesses/s]" not in logged.stderr, logged.stderr[-300:]
