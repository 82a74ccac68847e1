"""The presets of modern machines give, run through the simulator, the
latencies their sources measured (the figures typed here from the sources
the presets' ``source`` fields cite), and their cache domains."""

import tomllib

import cachesched
import pytest

# Intel Memory Latency Checker on a 4-socket Xeon E7-4800 v2, ns, row = the
# reading socket (Willhalm, Intel Developer Zone blog, 2014-01-28).
E7_4800_V2_NS = [[136, 194, 198, 201], [194, 135, 194, 196], [201, 194, 135, 200], [202, 197, 198, 135]]


def memory_cycles(preset: str, reader_socket: int, home: int) -> float:
    """Cycles a read of memory costs: a core of ``reader_socket`` walks 1024
    distinct lines of node ``home`` once (every access misses every cache)."""
    text = next(p for p in cachesched.presets() if p["name"] == preset)["toml"]
    cores_per_socket = tomllib.loads(text)["machine"]["cores_per_socket"]
    r = cachesched.simulate({
        "machine": {"preset": preset, "tlb": False, "memory": {"placement": {"bind": home}}},
        "tasks": [{"workload": {"kind": "stream", "params": {"working_set_bytes": "64KiB", "stride_bytes": 64,
                                                             "accesses": 1024}},
                   "affinity": [reader_socket * cores_per_socket]}],
        "scheduler": {"kind": "pinned"},
    })
    s = r.summary
    return (s["cycles"] - s["instructions"]) / s["accesses"]


@pytest.mark.parametrize("reader", range(4))
def test_the_4_socket_preset_gives_the_measured_matrix(reader):
    for home in range(4):
        expected = E7_4800_V2_NS[reader][home] * 2.8
        assert memory_cycles("numa-xeon-4s", reader, home) == pytest.approx(expected, rel=0.01), (reader, home)


def test_the_2_socket_preset_gives_the_measured_local_and_remote_latency():
    # 82 ns local (MLC on a Skylake-SP), 154 ns remote (pointer chase on a
    # dual Xeon Platinum 8180), at 2.5 GHz.
    assert memory_cycles("numa-xeon-2s", 0, 0) == pytest.approx(82 * 2.5, rel=0.01)
    assert memory_cycles("numa-xeon-2s", 0, 1) == pytest.approx(154 * 2.5, rel=0.01)
    assert memory_cycles("numa-xeon-2s", 1, 0) == pytest.approx(154 * 2.5, rel=0.01)


def test_the_rome_preset_has_an_l3_per_4_core_complex_with_the_measured_latencies():
    # AnandTech's EPYC 7742 at 3.4 GHz: L3 ~34 cycles, memory ~122 ns (NPS1).
    assert memory_cycles("region-rome", 0, 0) == pytest.approx(122 * 3.4, rel=0.01)
    # A 4 MiB sweep, after a first pass, misses the 512 KiB L2 and hits the
    # complex's 16 MiB L3 on every access.
    r = cachesched.simulate({
        "machine": {"preset": "region-rome", "tlb": False},
        "tasks": [{"workload": {"kind": "stream", "params": {"working_set_bytes": "4MiB", "stride_bytes": 64,
                                                             "accesses": 2 * 65536}},
                   "affinity": [5]}],
        "scheduler": {"kind": "pinned"}, "run": {"warmup_accesses": 65536},
    })
    s = r.summary
    assert (s["cycles"] - s["instructions"]) / s["accesses"] == 34
    llcs = r.caches[r.caches.level == "llc"].path.tolist()
    assert len(llcs) == 16
    # Core 5 is the second core of complex 1: its L3 served the sweep, no other did.
    used = r.caches[(r.caches.level == "llc") & (r.caches.load_hits > 0)].path.tolist()
    assert used == ["socket1/llc"]
