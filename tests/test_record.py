"""Recording real programs under valgrind lackey, checked against lackey's
own instruction count, and the ways recording can fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from cachesched import trace
from cachesched.errors import RecordError
from cachesched.record import record

from conftest import needed

needed(shutil.which("valgrind"), "valgrind, which records the programs", "apt-get install valgrind")
needed(shutil.which("gcc"), "gcc, which builds the test's program", "apt-get install gcc")

TRUE = shutil.which("true")


def test_instruction_fetches_add_up_to_lackeys_own_count(tmp_path):
    full = record([TRUE], tmp_path / "full.cst", ifetch=True)
    assert not full["limit_reached"]
    # Lackey's closing "guest instrs" line is its own count, read apart from the trace.
    assert full["lackey_instructions"] > 10_000
    assert full["instructions"] == full["instructions_read"] == full["lackey_instructions"]
    scan = trace.scan(tmp_path / "full.cst")
    assert scan["ifetches"] == full["lackey_instructions"]

    # Without fetches, the trace counts every instruction up to the last data access.
    data = record([TRUE], tmp_path / "data.cst")
    assert data["lackey_instructions"] - 100 < data["instructions"] <= data["lackey_instructions"]
    assert trace.scan(tmp_path / "data.cst")["ifetches"] == 0


PROGRAM = r"""
#include <stdio.h>
volatile int a[1000];
int main(void) {
    int sum = 0;
    for (int i = 0; i < 1000; i++) a[i] = i;
    for (int i = 0; i < 1000; i++) sum += a[i];
    printf("%p %d\n", (void *)a, sum);
    return 0;
}
"""


def test_a_programs_own_array_accesses_are_all_there(tmp_path):
    (tmp_path / "p.c").write_text(PROGRAM)
    subprocess.run(["gcc", "-O1", "-o", str(tmp_path / "p"), str(tmp_path / "p.c")], check=True)
    with open(tmp_path / "out.txt", "w") as out:
        record([str(tmp_path / "p")], tmp_path / "p.cst", stdout=out)
    base, total = (tmp_path / "out.txt").read_text().split()
    assert int(total) == sum(range(1000))
    # The program prints its array's address as it runs under valgrind: the addresses lackey traces.
    base = int(base, 16)
    df = trace.read(tmp_path / "p.cst")
    on_array = df[(df.addr >= base) & (df.addr < base + 4000)]
    stores, loads = on_array[on_array.kind == 1], on_array[on_array.kind == 0]
    # Exactly one 4-byte store then one 4-byte load per element, in order, each from one pc.
    assert stores.addr.tolist() == [base + 4 * i for i in range(1000)]
    assert loads.addr.tolist() == [base + 4 * i for i in range(1000)]
    assert set(on_array["size"]) == {4}
    assert stores.pc.nunique() == 1 and loads.pc.nunique() == 1
    assert stores.index.max() < loads.index.min()


def test_skip_drops_whole_instructions(tmp_path):
    skip = 50_000
    result = record([TRUE], tmp_path / "skip.cst", ifetch=True, skip=skip)
    assert result["instructions"] == result["lackey_instructions"] - skip
    assert trace.info(tmp_path / "skip.cst")["meta"]["skip_instructions"] == skip


def test_limit_stops_valgrind_and_the_command_line_records_its_metadata(run_cli, tmp_path):
    out = tmp_path / "ls.cst"
    proc = run_cli("record", "-o", str(out), "--skip", "1000", "--limit", "5000", "--", "ls", "-l", "/", check=True)
    assert "stopped at the limit" in proc.stderr
    info = trace.info(out)
    assert info["summary"]["accesses"] == 5000
    assert info["meta"]["command"] == ["ls", "-l", "/"]
    assert info["meta"]["skip_instructions"] == 1000 and info["meta"]["limit"] == 5000
    assert info["source"] == "valgrind lackey: ls -l /"
    df = trace.read(out)
    assert set(df.kind) <= {0, 1} and (df.pc > 0).all()


def test_failures_are_clear(tmp_path):
    out = tmp_path / "x.cst"
    with pytest.raises(RecordError, match="program not found: no-such-program-xyz"):
        record(["no-such-program-xyz"], out)
    with pytest.raises(RecordError, match="false exited with status 1 under valgrind"):
        record([shutil.which("false")], out)
    assert not out.exists()
    with pytest.raises(RecordError, match="was killed by signal SIGKILL"):
        record(["sh", "-c", "kill -KILL $$"], out)
    with pytest.raises(RecordError, match="empty trace"):
        record([TRUE], out, skip=10**12)
    assert not out.exists()
    # A failed recording leaves a trace that was there before as it was.
    out.write_bytes(b"an earlier trace")
    with pytest.raises(RecordError, match="false exited with status 1 under valgrind"):
        record([shutil.which("false")], out)
    assert out.read_bytes() == b"an earlier trace"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.cst"]


def test_valgrind_missing(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty)}
    proc = subprocess.run([sys.executable, "-m", "cachesched.cli", "record", "-o", str(tmp_path / "x.cst"), "--", TRUE],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 1
    assert "valgrind is not installed" in proc.stderr
