"""Sweeps on a real Dask cluster: a scheduler and two workers on loopback, started here."""

from __future__ import annotations

import importlib.util
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pandas as pd
import pytest

import cachesched
from cachesched.store import load

from conftest import needed
from test_sweep import detail_json, spec, stable

needed(importlib.util.find_spec("distributed"), "dask.distributed, which these tests run on",
       "pip install -e '.[test]'")
import distributed  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[str]:
    """``dask scheduler`` and two ``dask worker`` processes of one thread each,
    on free loopback ports; the scheduler's address. Torn down at the end."""
    beside = Path(sys.executable).parent / "dask"
    dask = str(beside) if beside.exists() else shutil.which("dask")
    needed(dask, "the `dask` command, which starts the cluster", "pip install -e '.[test]'")
    address = f"tcp://127.0.0.1:{_free_port()}"
    logs = tmp_path_factory.mktemp("dask")
    procs: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> None:
        log = open(logs / f"{name}.log", "w")
        procs.append(subprocess.Popen([dask, *args], stdout=log, stderr=subprocess.STDOUT, cwd=logs))
        log.close()

    try:
        start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
              "--no-dashboard")
        for i in range(2):
            start(f"worker{i}", "worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--no-dashboard",
                  "--name", f"w{i}")
        with distributed.Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def test_a_sweep_on_dask_equals_the_local_one(cluster, tmp_path):
    on_dask = cachesched.run_sweep(spec(), store=tmp_path / "dask", dask=cluster, progress=False)
    assert (on_dask.points, on_dask.done, on_dask.failed) == (8, 8, 0)
    cachesched.run_sweep(spec(), store=tmp_path / "local", workers=2, progress=False)
    remote, local = load(tmp_path / "dask"), load(tmp_path / "local")
    pd.testing.assert_frame_equal(stable(remote), stable(local))
    assert detail_json(remote) == detail_json(local)
    # Both workers took part.
    with distributed.Client(cluster) as client:
        assert len(client.nthreads()) == 2


def test_a_connected_client_runs_a_sweep_and_failures_come_back(cluster, tmp_path):
    doc = spec(axes={"seed": [1, 2]}, variants={"good": {}, "bad": {"workload.params.exponent": -1.0}})
    with distributed.Client(cluster) as client:
        out = cachesched.run_sweep(doc, store=tmp_path, dask=client, progress=False)
        assert client.status == "running"  # a client we were given is left open
    assert (out.done, out.failed) == (2, 2)
    df = load(tmp_path)
    assert df[df.variant == "bad"].error.str.contains("exponent").all()


def test_cli_runs_on_dask(cluster, run_cli, tmp_path):
    spec_path = tmp_path / "s.toml"
    spec_path.write_text('[base]\nmachine = { preset = "teaching" }\n'
                         'workload = { kind = "zipf", params = { accesses = 20_000 } }\n[axes]\nseed = [1, 2]\n')
    proc = run_cli("sweep", str(spec_path), "--dask", cluster, "--store", str(tmp_path / "store"), "-q")
    assert proc.returncode == 0, proc.stderr
    assert "2 points: 2 run, 0 failed" in proc.stdout


def test_a_dask_worker_killed_mid_sweep_loses_no_run(cluster, tmp_path):
    # Dask reschedules what the dead worker held; its nanny starts a new one.
    import os
    import signal
    import threading
    import time

    from test_sweep import _done

    doc = spec(accesses=150_000)
    result: dict = {}
    sweeping = threading.Thread(target=lambda: result.update(
        out=cachesched.run_sweep(doc, store=tmp_path, dask=cluster, progress=False)))
    with distributed.Client(cluster) as client:
        pids = client.run(os.getpid)
        sweeping.start()
        deadline = time.monotonic() + 120
        while _done(tmp_path) < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(next(iter(pids.values())), signal.SIGKILL)
        assert _done(tmp_path) < 8, "the worker should have been killed midway"
        sweeping.join(300)
        assert (result["out"].done, result["out"].failed) == (8, 0)
        client.wait_for_workers(2, timeout=120)  # the nanny's new worker, for the tests after this one
    df = load(tmp_path)
    assert (df.status == "done").all() and df.key.is_unique and len(df) == 8
