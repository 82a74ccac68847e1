"""SimPoint phase selection: basic-block vectors from valgrind's exp-bbv,
the clustering and its choice of phases, windows recorded as a trace's
threads, and the weighted estimate against cachegrind's whole runs."""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pytest

import cachesched.config
from cachesched import reference, trace
from cachesched.errors import RecordError
from cachesched.workloads import simpoint, suite


def phased(sequence: str, seed: int = 1) -> simpoint.BBV:
    """Basic-block vectors of a run whose intervals go through the phases in
    ``sequence`` (a letter per interval): each phase runs its own ten blocks
    with random counts, and a rare block runs everywhere."""
    rng = np.random.default_rng(seed)
    blocks = {phase: range(10 * i, 10 * i + 10) for i, phase in enumerate(sorted(set(sequence)))}
    vectors = []
    for phase in sequence:
        v = {b: int(rng.integers(800, 1200)) * 1000 for b in blocks[phase]}
        v[999] = int(rng.integers(1, 100))
        vectors.append(v)
    return simpoint.BBV(10_000_000, vectors, sum(sum(v.values()) for v in vectors))


def test_choose_finds_the_phases_and_weighs_them_by_their_share():
    sequence = "A" * 20 + "B" * 10 + "A" * 10 + "C" * 20
    points = simpoint.choose(phased(sequence))
    assert points.k == 3
    # One representative per phase, weighted by the phase's share of the run.
    assert sorted(sequence[i] for i in points.intervals) == ["A", "B", "C"]
    share = {p: sequence.count(p) / len(sequence) for p in "ABC"}
    assert {sequence[i]: w for i, w in zip(points.intervals, points.weights)} == pytest.approx(share)
    assert sum(points.weights) == pytest.approx(1.0)
    # Every interval's cluster is its phase's.
    by_phase = {}
    for phase, label in zip(sequence, points.labels):
        by_phase.setdefault(phase, set()).add(label)
    assert all(len(labels) == 1 for labels in by_phase.values()) and len(set(points.labels)) == 3
    # The same input and seed give the same choice.
    again = simpoint.choose(phased(sequence))
    assert (again.intervals, again.weights, again.labels) == (points.intervals, points.weights, points.labels)
    # A run that does the same in every interval is one phase.
    same = simpoint.BBV(100, [{1: 60, 2: 40}] * 12, 1200)
    one = simpoint.choose(same)
    assert (one.k, one.weights, set(one.labels)) == (1, [1.0], {0})


def test_bic_is_simpoints_score():
    # Four points on a line in two clusters of two, by hand: the variance is
    # the squared distances over n * d, 4 * 0.25 / 4; the likelihood
    # -n d (log(2 pi var) + 1) / 2 + sum n_c log(n_c / n); 1 + 2 + 1
    # parameters, each costing log(n) / 2.
    points = np.array([[0.0], [1.0], [3.0], [4.0]])
    labels, centres = np.array([0, 0, 1, 1]), np.array([[0.5], [3.5]])
    variance = 4 * 0.25 / 4
    likelihood = -4 * (math.log(2 * math.pi * variance) + 1) / 2 + 2 * 2 * math.log(0.5)
    assert simpoint.bic(points, labels, centres) == pytest.approx(likelihood - 4 / 2 * math.log(4))


def test_a_broken_bbv_file_names_its_line(tmp_path):
    bad = tmp_path / "bb.out"
    bad.write_text("T:1:100   :2:50\nT:1:x\n")
    with pytest.raises(RecordError, match=r"bb.out:2: not a basic-block vector line"):
        simpoint.read_bbv(bad, 100)
    bad.write_text("T:1:100\n")
    with pytest.raises(RecordError, match="no '# Total instructions' line"):
        simpoint.read_bbv(bad, 100)


@pytest.fixture(scope="module")
def fft(tmp_path_factory):
    """The suite's FFT on its tiny input (about 0.76M instructions)."""
    work = tmp_path_factory.mktemp("fft")
    return suite.prepare("fft", "tiny", work), work


def test_exp_bbv_counts_every_instruction_cachegrind_does(fft):
    run, work = fft
    bbv = simpoint.profile(run.argv, 100_000, cwd=work)
    assert len(bbv.vectors) == bbv.total_instructions // 100_000
    # Whole intervals, the tail after the last left out.
    assert all(abs(sum(v.values()) - 100_000) <= 1 for v in bbv.vectors)
    assert bbv.starts()[1] == sum(bbv.vectors[0].values())
    # exp-bbv counts about 1,700 instructions fewer than cachegrind and
    # lackey, which agree exactly: its start-up differs, so windows found
    # by it land that much early in a recording (0.2% of this run, 0.02%
    # of a 10M-instruction interval).
    assert bbv.total_instructions == pytest.approx(reference.cachegrind(run.argv, cwd=work)["Ir"], abs=5000)


def test_windows_hold_their_instructions_and_the_chain_is_deterministic(fft, tmp_path):
    run, work = fft
    out = tmp_path / "fft.cst"
    recorded = simpoint.record(run.argv, out, interval=100_000, warmup=150_000, cwd=work)
    about = recorded["simpoint"]
    threads = trace.info(out)["summary"]["threads"]
    assert len(threads) == len(about["windows"]) == len(recorded["warmup_accesses"])
    assert sum(w["weight"] for w in about["windows"]) == pytest.approx(1.0)
    for t, w in zip(threads, about["windows"]):
        assert w["from"] == max(0, w["start"] - 150_000) and w["end"] > w["start"]
        # The instructions from the window's first to its last access: all
        # but those after the last access, a few at most.
        assert 0 <= (w["end"] - w["from"]) - t["instructions"] < 50
    # The warm-up accesses the recording counted are those the trace shows.
    assert [w["warmup_accesses"] for w in simpoint.windows_of(out)] == recorded["warmup_accesses"]
    # The same program, input and seed: the same windows and the same
    # accesses, but for the addresses of a few loads of the dynamic loader
    # indexed by the kernel's random bytes (AT_RANDOM, new at every exec).
    again = tmp_path / "again.cst"
    assert simpoint.record(run.argv, again, interval=100_000, warmup=150_000, cwd=work)["simpoint"] == about
    for thread in range(len(threads)):
        a, b = trace.read(out, thread=thread), trace.read(again, thread=thread)
        assert a.drop(columns="addr").equals(b.drop(columns="addr"))
        moved = a.index[a.addr != b.addr]
        assert len(moved) <= 4 and (a.kind[moved] == 0).all() and (a["size"][moved] == 1).all()


def test_windows_are_refused_with_a_skip_or_out_of_order(fft, tmp_path):
    from cachesched.record import record

    run, work = fft
    with pytest.raises(RecordError, match="windows are"):
        record(run.argv, tmp_path / "x.cst", windows=[(10, 5, 20)], cwd=work)
    with pytest.raises(RecordError, match="windows are"):
        record(run.argv, tmp_path / "x.cst", skip=5, windows=[(0, 5, 20)], cwd=work)
    plain = tmp_path / "plain.cst"
    trace.generate({"kind": "stream", "params": {"accesses": 100}}, plain)
    with pytest.raises(RecordError, match="not a SimPoint trace"):
        simpoint.windows_of(plain)


@pytest.mark.parametrize("name, args", [("omnetpp", None), ("mcf", ["20000", "8", "400", "1"])])
def test_the_weighted_estimate_is_within_5_percent_of_cachegrinds_whole_run(name, args, tmp_path):
    # A 1 MiB last level, which a 5M-instruction warm-up fills (docs/suite.md:
    # with 8 MiB the windows start colder than the run and overestimate it).
    caches = {"i1": (32 << 10, 8), "d1": (32 << 10, 8), "ll": (1 << 20, 16)}
    run = suite.prepare(name, "small", tmp_path)
    argv = [run.argv[0], *args] if args else run.argv
    found = simpoint.validate(argv, tmp_path, caches=caches, interval=1_000_000, warmup=5_000_000)
    for ratio in ("d1", "lld"):
        assert found[ratio]["ours"] == pytest.approx(found[ratio]["cachegrind"], rel=0.05)


def test_record_simpoints_from_the_command_line(run_cli, fft, tmp_path):
    run, work = fft
    out = tmp_path / "cli.cst"
    proc = run_cli("record", "--simpoints", "--interval", "100000", "-o", str(out), "--", *run.argv, check=True)
    assert "of 7 intervals" in proc.stderr and "thread 0: interval" in proc.stderr
    assert len(trace.info(out)["threads"]) == len(simpoint.windows_of(out))
    proc = run_cli("record", "--simpoints", "--skip", "5", "-o", str(out), "--", *run.argv)
    assert proc.returncode != 0 and "takes neither --skip nor --limit" in proc.stderr
    info = run_cli("trace", "info", str(out), check=True).stdout
    assert "windows of 7 intervals of 100,000 instructions" in info and "thread 0: interval" in info
    # The command's weighted rows are the library's on the same machine.
    printed = json.loads(run_cli("trace", "estimate", str(out), "--preset", "teaching", "--json", check=True).stdout)
    teaching = cachesched.config.resolve({"machine": {"preset": "teaching"}, "workload": {"kind": "stream"}})
    expected = simpoint.estimate(out, machine=teaching["machine"])
    assert [r["misses"] for r in printed] == pytest.approx(expected.misses.tolist())
    table = run_cli("trace", "estimate", str(out), check=True).stdout
    assert "weighted by their phases' shares" in table and "l1d" in table
    # A run of the trace without a thread says what its threads are.
    config = tmp_path / "run.toml"
    config.write_text(f'[workload]\nkind = "trace"\nparams = {{ path = "{out}" }}\n')
    proc = run_cli("run", str(config), "-q")
    assert proc.returncode != 0 and "workload.params.thread" in proc.stderr
    assert "a SimPoint trace, each thread a window of one run" in proc.stderr


def test_a_run_shorter_than_an_interval_or_failing_is_named(tmp_path):
    with pytest.raises(RecordError, match="shorter than one interval"):
        simpoint.record(["true"], tmp_path / "t.cst", interval=10_000_000)
    with pytest.raises(RecordError, match="exited with status 1 under exp-bbv"):
        simpoint.profile(["false"], 1_000_000)
    assert not (tmp_path / "t.cst").exists()


def test_a_run_whose_work_is_on_another_thread_is_refused(tmp_path):
    # exp-bbv profiles threads apart, lackey counts the run's instructions
    # as one sequence: windows chosen in the first thread would land
    # elsewhere. A helper thread that does nothing much is let pass.
    work = ("import threading; t = threading.Thread(target=lambda: sum(range({n}))); t.start(); t.join()")
    with pytest.raises(RecordError, match="on threads other than its first"):
        simpoint.profile([sys.executable, "-S", "-c", work.format(n=3_000_000)], 1_000_000)
    bbv = simpoint.profile([sys.executable, "-S", "-c", "sum(range(2_000_000)); " + work.format(n=10)], 1_000_000)
    assert bbv.total_instructions > 50_000_000
    # The suite's threaded programs are recorded at ref with a skip and a limit.
    assert [n for n, p in suite.PROGRAMS.items() if p.threaded] == ["sjeng", "povray"]
    assert not suite.windowed("ref", False, "sjeng") and suite.windowed("ref", False, "mcf")


def test_ref_lists_windows_but_for_threaded_programs_a_skip_and_a_limit(tmp_path, monkeypatch):
    # What `suite ls --size ref` and the studies find recorded: mcf's
    # windows and sjeng's plain recording, not the other kind of either.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    ref = suite.cache_dir("ref")
    ref.mkdir(parents=True)
    for stem, program, windows in [("mcf-simpoints", "mcf", True), ("mcf", "mcf", False),
                                   ("sjeng", "sjeng", False), ("sjeng-simpoints", "sjeng", True)]:
        about = {"program": program, **({"simpoint": {"windows": []}} if windows else {})}
        (ref / f"{stem}.json").write_text(json.dumps(about))
    assert sorted((m["program"], "simpoint" in m) for m in suite.manifests("ref")) == [("mcf", True), ("sjeng", False)]
