"""Traces in the field's formats: `trace convert` for each, and the
simulator reading each directly, checked against hand-computed accesses."""

from __future__ import annotations

import gzip
import lzma
import struct

import pytest

from cachesched import simulate, trace
from cachesched.errors import ConfigError, TraceError

LACKEY = """==4711== Lackey, an example Valgrind tool
==4711== Command: ./a.out
I  0401ab70,3
I  0401ab73,5
 S 1fff000778,8
I  0401b770,1
 M 0421f0a8,4
 L 0421f0b0,16
I  0401b771,7
==4711== Exit code:       0
"""

# kind (0 load, 1 store, 2 ifetch), addr, size, pc, instrs: by lackey's definition.
LACKEY_ACCESSES = [
    (1, 0x1FFF000778, 8, 0x0401AB73, 2),
    (0, 0x0421F0A8, 4, 0x0401B770, 1),
    (1, 0x0421F0A8, 4, 0x0401B770, 0),
    (0, 0x0421F0B0, 16, 0x0401B770, 0),
]


def champsim_record(ip: int, dst: tuple = (0, 0), src: tuple = (0, 0, 0, 0)) -> bytes:
    """One 64-byte input_instr, packed as ChampSim's struct lays it out."""
    return struct.pack("<QBB2B4B2Q4Q", ip, 0, 0, 0, 0, 0, 0, 0, 0, *dst, *src)


CHAMPSIM = (champsim_record(0x400000) + champsim_record(0x400004, dst=(0x9000, 0), src=(0, 0x1000, 0, 0x2000))
            + champsim_record(0x400008, src=(0x3000, 0, 0, 0)))
CHAMPSIM_ACCESSES = [
    (0, 0x1000, 64, 0x400004, 2),
    (0, 0x2000, 64, 0x400004, 0),
    (1, 0x9000, 64, 0x400004, 0),
    (0, 0x3000, 64, 0x400008, 1),
]

# Traditional din as Dinero IV reads it: word-aligned 4-byte records; 4 is cache control.
DIN = "2 400\n0 1003\n1 2000 a comment\n4 0\n2 404\n0 0x3008\n"
DIN_ACCESSES = [
    (2, 0x400, 4, 0x400, 1),
    (0, 0x1000, 4, 0x400, 0),
    (1, 0x2000, 4, 0x400, 0),
    (2, 0x404, 4, 0x404, 1),
    (0, 0x3008, 4, 0x404, 0),
]
XDIN = "r 1001 8\nW 0x2000 40\nc 0 0\n"
XDIN_ACCESSES = [(0, 0x1001, 8, 0, 1), (1, 0x2000, 0x40, 0, 1)]


def rows(path) -> list[tuple]:
    df = trace.read(path)
    return list(zip(df.kind, df.addr, df["size"], df.pc, df.instrs))


CASES = {
    "lackey": (LACKEY.encode(), LACKEY_ACCESSES),
    "champsim": (CHAMPSIM, CHAMPSIM_ACCESSES),
    "din": (DIN.encode(), DIN_ACCESSES),
    "xdin": (XDIN.encode(), XDIN_ACCESSES),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_convert_each_format(run_cli, tmp_path, name):
    data, expected = CASES[name]
    src = tmp_path / f"in.{name}"
    src.write_bytes(data)
    proc = run_cli("trace", "convert", str(src), str(tmp_path / "out.cst"), check=True)
    assert f"as {'din' if 'din' in name else name}" in proc.stdout
    assert rows(tmp_path / "out.cst") == expected
    info = trace.info(tmp_path / "out.cst")
    assert info["meta"]["converted_from"]["path"] == str(src)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("compress", [gzip.compress, lzma.compress])
def test_convert_compressed(tmp_path, name, compress):
    data, expected = CASES[name]
    (tmp_path / "in").write_bytes(compress(data))
    assert trace.convert(tmp_path / "in", tmp_path / "out.cst")["summary"]["accesses"] == len(expected)
    assert rows(tmp_path / "out.cst") == expected


def test_forced_format_and_options(tmp_path):
    (tmp_path / "c.bin").write_bytes(CHAMPSIM)
    result = trace.convert(tmp_path / "c.bin", tmp_path / "c.cst", format="champsim", access_bytes=8)
    assert result["format"] == "champsim" and result["summary"]["accesses"] == 4
    assert {r[2] for r in rows(tmp_path / "c.cst")} == {8}
    (tmp_path / "l.txt").write_text(LACKEY)
    trace.convert(tmp_path / "l.txt", tmp_path / "l.cst", ifetch=True)
    assert [r[0] for r in rows(tmp_path / "l.cst")] == [2, 2, 1, 2, 0, 1, 0, 2]
    with pytest.raises(ConfigError) as e:
        trace.convert(tmp_path / "l.txt", tmp_path / "x.cst", access_bytes=8)
    assert e.value.errors()[0]["loc"] == "params.access_bytes"


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_simulator_reads_each_format_directly(tmp_path, name):
    data, _ = CASES[name]
    (tmp_path / "in.trace").write_bytes(data)
    trace.convert(tmp_path / "in.trace", tmp_path / "in.cst")

    def run(path):
        config = {"machine": {"preset": "teaching"}, "workload": {"kind": "trace", "params": {"path": str(path)}}}
        results = simulate(config)
        return results.summary, results.levels

    (direct, direct_levels), (converted, converted_levels) = run(tmp_path / "in.trace"), run(tmp_path / "in.cst")
    assert direct["accesses"] == len(CASES[name][1])
    assert direct == converted
    assert direct_levels.equals(converted_levels)


def test_errors_name_the_file_line_and_offset(run_cli, tmp_path):
    bad = tmp_path / "bad.lackey"
    bad.write_text(LACKEY.replace(" L 0421f0b0,16", " L 0421f0b0;16"))
    proc = run_cli("trace", "convert", str(bad), str(tmp_path / "o.cst"))
    assert proc.returncode == 1
    assert f"{bad}: line 8: byte offset 151: expected ',' after the address, found ';'" in proc.stderr

    cut = tmp_path / "cut.champsim.xz"
    cut.write_bytes(lzma.compress(CHAMPSIM[:-10]))
    with pytest.raises(TraceError) as e:
        trace.convert(cut, tmp_path / "o.cst")
    assert e.value.path == str(cut) and e.value.offset == 128 and "truncated" in str(e.value)

    (tmp_path / "text").write_text("hello, world\n")
    proc = run_cli("trace", "convert", str(tmp_path / "text"), str(tmp_path / "o.cst"))
    assert proc.returncode == 1 and "unrecognised trace format (known: cst, lackey, din, champsim)" in proc.stderr


def test_convert_keeps_a_range_of_accesses(run_cli, tmp_path):
    (tmp_path / "c.bin").write_bytes(CHAMPSIM)
    run_cli("trace", "convert", str(tmp_path / "c.bin"), str(tmp_path / "c.cst"), "--skip", "1", "--limit", "2",
            check=True)
    assert [r[:2] for r in rows(tmp_path / "c.cst")] == [r[:2] for r in CHAMPSIM_ACCESSES[1:3]]
