"""Multithreaded kernels end to end: a kernel's threads are the copies of one
[[tasks]] entry sharing an asid, from Python and from TOML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cachesched
from cachesched import ConfigError

ROOT = Path(__file__).resolve().parents[1]

# CG with 2048 rows of 16 entries, from the 4 KiB-aligned base: rowptr is
# 2049 * 4 bytes (3 pages), colidx 32768 * 4 (32 pages), values 32768 * 8
# (64 pages), and p, q, z, r 2048 * 8 each (4 pages each). One iteration
# touches all of them.
CG = {"rows": 2048, "row_nonzeros": 16, "iterations": 1}
CG_PAGES = 3 + 32 + 64 + 4 * 4
# Per row: 2 rowptr loads, 16 x 3 for the product, the store of q[j], then
# 2 + 6 + 1 + 3 in the vector loops.
CG_ACCESSES_PER_ROW = 2 + 16 * 3 + 1 + 12


def cg_tasks(threads: int, count: int, asid: int | None) -> dict:
    entry = {"name": "cg", "count": count, "workload": {"kind": "cg", "params": {**CG, "threads": threads}}}
    if asid is not None:
        entry["asid"] = asid
    return {"seed": 5, "machine": {"preset": "teaching"}, "tasks": [entry]}


def test_threads_of_one_process_share_its_pages():
    r = cachesched.simulate(cg_tasks(threads=4, count=4, asid=1))
    tasks = r.tasks
    assert list(tasks.asid) == [1, 1, 1, 1]
    # Each thread did its quarter of the rows: 512 rows each.
    assert list(tasks.accesses) == [512 * CG_ACCESSES_PER_ROW] * 4
    # The page table holds one frame per page of the process, however many
    # threads touched it.
    assert r.memory.pages.sum() == CG_PAGES


def test_single_threaded_copies_are_separate_processes():
    # The same kernel as 4 independent one-thread processes: each does all
    # the rows and has its own frames.
    r = cachesched.simulate(cg_tasks(threads=1, count=4, asid=None))
    assert len(set(r.tasks.asid)) == 4
    assert list(r.tasks.accesses) == [2048 * CG_ACCESSES_PER_ROW] * 4
    assert r.memory.pages.sum() == 4 * CG_PAGES


def test_runs_are_identical():
    config = cg_tasks(threads=4, count=4, asid=1)
    a, b = cachesched.simulate(config), cachesched.simulate(config)
    assert a.summary == b.summary
    assert a.levels.equals(b.levels)
    assert a.tasks.equals(b.tasks)


@pytest.mark.parametrize(
    ("threads", "count", "asid", "loc"),
    [
        (4, 2, 1, "tasks[0].workload.params.threads"),  # fewer tasks than threads
        (4, 4, None, "tasks[0].asid"),  # threads need one address space
        (1, 4, 1, "tasks[0].workload.params.threads"),  # copies share an asid but the kernel has one thread
    ],
)
def test_thread_mismatches_name_the_key(threads, count, asid, loc):
    with pytest.raises(ConfigError) as info:
        cachesched.simulate(cg_tasks(threads=threads, count=count, asid=asid))
    assert [e["loc"] for e in info.value.errors()] == [loc]


def test_a_workload_table_runs_one_thread():
    with pytest.raises(ConfigError) as info:
        cachesched.simulate({"workload": {"kind": "is", "params": {"threads": 2}}})
    assert info.value.errors()[0]["loc"] == "workload.params.threads"
    assert "count = 2" in info.value.errors()[0]["msg"]


def test_the_example_runs_from_toml(run_cli):
    proc = run_cli("run", str(ROOT / "examples" / "nas-kernels.toml"), "--set", "run.max_accesses=200000",
                   "-q", "--json", "-", check=True)
    data = json.loads(proc.stdout)
    names = [t["name"] for t in data["tasks"]]
    assert names[:4] == ["cg.0", "cg.1", "cg.2", "cg.3"]
    assert len({t["asid"] for t in data["tasks"] if t["name"].startswith("cg")}) == 1


def numa_cg(init: str) -> dict:
    # 2 sockets of 2 cores, one NUMA node each, first-touch placement, and
    # fixed page walks (no page-table frames in the counts). Threads 0-1
    # are placed on socket 0, 2-3 on socket 1.
    config = cg_tasks(threads=4, count=4, asid=1)
    config["machine"] = {"preset": "server-2s", "cores_per_socket": 2, "tlb": {"walk": "fixed"}}
    config["tasks"][0]["workload"]["params"]["init"] = init
    return config


def test_a_serial_initialisation_puts_every_page_on_thread_0s_node():
    r = cachesched.simulate(numa_cg("serial"))
    pages = dict(zip(r.memory.node, r.memory.pages))
    # The 115 data pages are first touched by thread 0 (socket 0); the
    # others wait at the barrier until it is done.
    assert pages == {0: CG_PAGES, 1: 0}
    # Spinning first, they touch one more page: the flag's.
    spinning = numa_cg("serial")
    spinning["tasks"][0]["workload"]["params"]["init_spin"] = 2
    m = cachesched.simulate(spinning).memory.set_index("node")
    assert m.pages.sum() == CG_PAGES + 1 and m.pages[0] >= CG_PAGES
    # A parallel initialisation splits the pages between the nodes of the
    # threads that own them.
    r = cachesched.simulate(numa_cg("parallel"))
    pages = dict(zip(r.memory.node, r.memory.pages))
    assert sum(pages.values()) == CG_PAGES
    assert 0.4 * CG_PAGES < pages[1] < 0.6 * CG_PAGES


def test_a_nas_class_sizes_cg_as_npb_does():
    # NPB 3.3's class S of CG: na = 1400, nonzer = 7. NAS's makea gives a row
    # nonzer * (nonzer + 1) + 1 entries on average; one inner iteration walks
    # rowptr ((na + 1) 4-byte ints), colidx and values (4 and 8 bytes per
    # entry) and the vectors p, q, z, r (na doubles each), each array from a
    # page boundary. An explicit key (iterations) overrides the class's.
    na, nonzer = 1400, 7
    entries = na * (nonzer * (nonzer + 1) + 1)
    pages = [-(-b // 4096) for b in ((na + 1) * 4, entries * 4, entries * 8, na * 8, na * 8, na * 8, na * 8)]
    r = cachesched.simulate({"machine": {"preset": "teaching"},
                             "workload": {"kind": "cg", "params": {"class": "S", "iterations": 1,
                                                                    "accesses": 10**8}}})
    assert r.memory.pages.sum() == sum(pages)
    assert r.summary["accesses"] == na * (2 + 3 * entries // na + 1 + 12)
