"""The benchmark suite: generated inputs, real programs recorded under
valgrind, and the comparison of our D1 and LL misses with cachegrind's."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

from cachesched import cli, trace
from cachesched.workloads import inputs, suite


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("name", list(suite.PROGRAMS))
def test_every_program_runs_natively_on_its_generated_input(name, tmp_path):
    program = suite.PROGRAMS[name]
    if program.executable(tmp_path) is None and program.package is not None:
        pytest.fail(f"{program.binary} is missing: run `cachesched suite install` (the README's test command does)")
    run = suite.prepare(name, "tiny", tmp_path / name)
    # Some write their output to stdout (pamtogif), as recording lets them.
    done = subprocess.run(run.argv, cwd=tmp_path / name, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    assert run.input


def test_inputs_are_the_same_bytes_for_a_seed(tmp_path):
    for seed in (1, 1, 2):
        inputs.mailbox(tmp_path / f"m{seed}.txt", 50, seed=seed)
        inputs.video(tmp_path / f"v{seed}.yuv", 32, 16, 2, seed=seed)
        inputs.protein_family(tmp_path / f"a{seed}.sto", tmp_path / f"d{seed}.fa", 4, 30, 20, seed=seed)
    assert digest(tmp_path / "m1.txt") != digest(tmp_path / "m2.txt")
    assert digest(tmp_path / "v1.yuv") != digest(tmp_path / "v2.yuv")
    # Written twice with seed 1: the second write must reproduce the first.
    first = digest(tmp_path / "m1.txt")
    inputs.mailbox(tmp_path / "m1.txt", 50, seed=1)
    assert digest(tmp_path / "m1.txt") == first


def test_the_g711_encoder_is_the_reference_encoder_on_every_sample():
    import struct
    import warnings

    with warnings.catch_warnings():  # deprecated in 3.11-3.12; audioop-lts from 3.13
        warnings.simplefilter("ignore", DeprecationWarning)
        import audioop
    samples = range(-32768, 32768)
    reference = audioop.lin2ulaw(struct.pack(f"<{len(samples)}h", *samples), 2)
    assert bytes(inputs.ulaw(s) for s in samples) == reference


def test_sox_decodes_the_generated_call_back_to_its_samples(tmp_path):
    # sox's own G.711 decoder: each sample back to within its mu-law step
    # (the step grows with the magnitude: 2^(segment + 3), at most 1,024).
    import struct

    inputs.g711_call(tmp_path / "call.ul", 0.5, seed=3)
    subprocess.run(["sox", "-t", "ul", "-r", "8000", "-c", "1", "call.ul", "-t", "s16", "call.raw"],
                   cwd=tmp_path, check=True)
    raw = (tmp_path / "call.raw").read_bytes()
    decoded = struct.unpack(f"<{len(raw) // 2}h", raw)
    original = inputs.voice(0.5, seed=3)
    assert len(decoded) == len(original) == 4000
    for a, b in zip(original, decoded):
        assert abs(a - b) <= max(8, abs(a) // 16 + 8), (a, b)
    assert max(abs(a) for a in original) > 4000, "talk spurts, not only noise"


def test_unknown_program_and_size_are_named(tmp_path):
    with pytest.raises(ValueError, match="unknown suite program 'spec'"):
        suite.prepare("spec", "small", tmp_path)
    with pytest.raises(ValueError, match="size: expected one of tiny, small, full"):
        suite.prepare("bzip2", "huge", tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bzip2", "omnetpp"])
def test_small_recordings_have_the_promised_length_and_a_manifest(name, tmp_path):
    m = suite.record(name, "small", out_dir=tmp_path)
    program = suite.PROGRAMS[name]
    assert m["accesses"] == program.limit["small"], "the run is long enough to reach the limit"
    assert m["skipped_instructions"] == program.skip["small"]
    info = trace.info(m["trace"])
    assert info["summary"]["accesses"] == m["accesses"]
    assert m["footprint_lines"] > 100 and m["instructions"] > 0
    assert (tmp_path / f"{name}.json").exists() and not (tmp_path / f"{name}.work").exists()
    # A second call reuses the recording.
    again = suite.record(name, "small", out_dir=tmp_path)
    assert again == m


@pytest.mark.slow
def test_a_recording_with_fetches_is_a_trace_of_its_own(tmp_path):
    plain = suite.record("omnetpp", "small", out_dir=tmp_path)
    m = suite.record("omnetpp", "small", out_dir=tmp_path, ifetch=True)
    assert m["trace"].endswith("omnetpp-ifetch.cst") and m["ifetch"] and not plain["ifetch"]
    assert m["skipped_instructions"] == plain["skipped_instructions"] and m["accesses"] == 2_000_000
    kinds = trace.read(m["trace"]).kind.value_counts()
    # lackey fetches every instruction once: as many fetches as instructions.
    assert kinds[trace.KIND_NAMES.index("ifetch")] == m["instructions"]
    assert (trace.read(plain["trace"]).kind != trace.KIND_NAMES.index("ifetch")).all()


@pytest.mark.slow
@pytest.mark.parametrize("name", suite.VALIDATED)
def test_d1_and_ll_data_misses_agree_with_cachegrind(name, tmp_path):
    r = suite.validate(name, tmp_path / name)
    for key in ("d1_misses", "ll_data_misses"):
        ours, theirs = r[key]["ours"], r[key]["cachegrind"]
        assert theirs > 500, f"{key}: too few misses to compare"
        assert abs(ours - theirs) <= 0.02 * theirs, f"{name} {key}: ours {ours}, cachegrind {theirs}"
    # Both ran the same program: instruction counts match closely too.
    ir = r["instructions"]
    assert abs(ir["ours"] - ir["cachegrind"]) <= 0.01 * ir["cachegrind"]


def test_list_shows_every_program(capsys):
    assert cli.main(["suite", "list"]) == 0
    out = capsys.readouterr().out
    for name, program in suite.PROGRAMS.items():
        assert name in out and program.stands_for in out


def test_the_generated_music_survives_mp3_encoding_and_decoding(tmp_path):
    # lame encodes it and mpg123 decodes it back: as many frames (within
    # the codec's delay and padding, a few 1,152-sample granules) and sound,
    # not silence.
    import array
    import wave

    inputs.music(tmp_path / "music.wav", 1.0, seed=2)
    subprocess.run(["lame", "--quiet", "-b", "128", "music.wav", "music.mp3"], cwd=tmp_path, check=True)
    subprocess.run(["mpg123", "-q", "-w", "back.wav", "music.mp3"], cwd=tmp_path, check=True)
    with wave.open(str(tmp_path / "back.wav")) as w:
        frames, channels = w.getnframes(), w.getnchannels()
        samples = array.array("h", w.readframes(frames))
    assert channels == 2 and abs(frames - inputs.MUSIC_RATE) <= 4 * 1152
    assert max(abs(s) for s in samples) > 4000


def test_a_whole_run_recorded_as_simpoint_windows(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    m = suite.record("fft", "tiny", simpoints=True)
    about = m["simpoint"]
    assert m["trace"].endswith("fft-simpoints.cst") and m["skipped_instructions"] == 0
    assert about["interval"] == suite.SIMPOINT_INTERVAL["tiny"]
    assert about["warmup_instructions"] == suite.SIMPOINT_WARMUP * about["interval"]
    assert sum(w["weight"] for w in about["windows"]) == pytest.approx(1.0)
    summary = trace.info(m["trace"])["summary"]
    assert len(summary["threads"]) == len(about["windows"]) and summary["accesses"] == m["accesses"]
    # Listed apart from the recordings after a skip; a second call reuses it.
    assert [x["program"] for x in suite.manifests("tiny", simpoints=True)] == ["fft"]
    assert suite.manifests("tiny") == []
    assert suite.record("fft", "tiny", simpoints=True) == m
    assert cli.main(["suite", "list", "--size", "tiny", "--simpoints"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("fft "))
    assert f"{m['accesses']:,}" in line and f" {len(about['windows'])} " in line
    # The heaviest window, as a trace of its own, stands for the program.
    weights = [w["weight"] for w in about["windows"]]
    heaviest = weights.index(max(weights))
    one = suite.representative(m)
    assert one["window"]["thread"] == heaviest and one["window"]["weight"] == max(weights)
    mine, theirs = trace.read(one["trace"]), trace.read(m["trace"], thread=heaviest)
    assert len(mine) == one["accesses"] == len(theirs) > 0
    assert (mine.values == theirs.values).all()
    assert len(trace.info(one["trace"])["summary"]["threads"]) == 1
    assert suite.representative(m) == one, "cached"
    assert suite.manifests("tiny") == [] and len(suite.manifests("tiny", simpoints=True)) == 1


def test_peak_rss_is_the_childs_own_resident_set(tmp_path):
    # A child that touches every page of 64 MiB holds at least that; the
    # interpreter adds tens of MiB at most.
    grow = suite.Run([sys.executable, "-c", "b = bytearray(64 << 20); b[::4096] = b'x' * (16 << 10)"], "64 MiB")
    rss = suite.peak_rss(grow, tmp_path)
    assert 64 << 20 <= rss < 96 << 20, rss
    # Only this child's: a small one after it is small.
    assert suite.peak_rss(suite.Run(["true"], ""), tmp_path) < 16 << 20
    with pytest.raises(RuntimeError, match="exited with status 3"):
        suite.peak_rss(suite.Run([sys.executable, "-c", "raise SystemExit(3)"], ""), tmp_path)


@pytest.mark.parametrize("name", ["mcf", "omnetpp"])
def test_ref_inputs_outgrow_the_last_level_cache(name, tmp_path):
    # Their ref runs hold at least 8 times an 8 MiB last level, many times
    # what their small runs hold.
    ref = suite.peak_rss(suite.prepare(name, "ref", tmp_path / "ref"), tmp_path / "ref")
    small = suite.peak_rss(suite.prepare(name, "small", tmp_path / "small"), tmp_path / "small")
    assert ref >= 64 << 20 and ref > 4 * small, (ref, small)


def test_ref_is_recorded_as_simpoint_windows(tmp_path, monkeypatch, capsys):
    # The fft's tiny run stands in for a ref run (a real one takes minutes).
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    prepare = suite.prepare
    monkeypatch.setattr(suite, "prepare", lambda name, size, work: prepare(name, "tiny", work))
    monkeypatch.setitem(suite.SIMPOINT_INTERVAL, "ref", suite.SIMPOINT_INTERVAL["tiny"])
    m = suite.record("fft", "ref")
    assert m["trace"].endswith("fft-simpoints.cst") and m["size"] == "ref"
    assert len(trace.info(m["trace"])["summary"]["threads"]) == len(m["simpoint"]["windows"])
    assert m["peak_rss_bytes"] > m["footprint_pages"] * 4096 // 2 and m["record_seconds"] > 0
    assert [x["program"] for x in suite.manifests("ref")] == ["fft"]
    assert cli.main(["suite", "list", "--size", "ref"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("fft "))
    assert f" {len(m['simpoint']['windows'])} " in line


def test_an_interrupted_suite_recording_resumes_at_the_program_it_was_on(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    peak_rss, calls = suite.peak_rss, []

    def interrupted(run, work):
        # Interrupted once, after arraysort's trace is written and before
        # its manifest is.
        calls.append(run.argv[0])
        if "arraysort" in run.argv[0] and len(calls) == 2:
            raise KeyboardInterrupt
        return peak_rss(run, work)

    monkeypatch.setattr(suite, "peak_rss", interrupted)
    assert cli.main(["suite", "record", "--size", "tiny", "--only", "fft,arraysort", "-q"]) == 130
    folder = suite.cache_dir("tiny")
    first = (folder / "fft.cst").stat().st_mtime_ns
    assert (folder / "fft.json").exists() and not (folder / "arraysort.json").exists()
    assert cli.main(["suite", "record", "--size", "tiny", "--only", "fft,arraysort", "-q"]) == 0
    assert len(calls) == 3, "fft is not recorded again, arraysort is"
    assert (folder / "fft.cst").stat().st_mtime_ns == first
    m = json.loads((folder / "arraysort.json").read_text())
    assert trace.info(m["trace"])["summary"]["accesses"] == m["accesses"] > 0
    assert not list(folder.glob("*.partial")) and not list(folder.glob("*.work"))
