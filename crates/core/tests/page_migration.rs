//! `page-migration` on hand-made access sequences: the machine is driven
//! reference by reference and the pass is called directly, so every count
//! is computed by hand. A page read only by node 1 moves to node 1 after
//! one pass; a moved page stays frozen for `freeze` passes; ties and pages
//! below `min_samples` stay; a move invalidates the old frame's lines and
//! shoots down the page's TLB entries; the stop-the-world pause reaches
//! exactly the cores running the process; an engine run moves the pages
//! of a serially initialised array to the threads that use them.

use cachesched_core::config;
use cachesched_core::engine::Engine;
use cachesched_core::mech::page_migration::PageMigrationParams;
use cachesched_core::mech::{MechBuild, Mechanism, MechanismParams, PeriodCtx};
use cachesched_core::mem::machine::{Machine, MachineParams};
use cachesched_core::{Access, AccessKind, Asid, CoreId, TaskId, VirtAddr};
use serde_json::{json, Value};

const PAGE: u64 = 4096;
const ASID: Asid = Asid(1);

/// Two sockets of one core, a node each; every page starts on node 0.
fn machine() -> MachineParams {
    config::machine_from_value(json!({"machine": {
        "sockets": 2, "cores_per_socket": 1, "frequency_ghz": 1.0,
        "l1i": false, "l1d": {"size_bytes": "1KiB", "ways": 2, "line_bytes": 64, "latency_cycles": 1},
        "l2": false, "llc": false,
        "tlb": {"walk": "fixed", "walk_latency_cycles": 10, "l1d": {"entries": 16, "ways": 4}, "l2": false},
        "memory": {"nodes": 2, "node_bytes": "1MiB", "latency_cycles": 100, "remote_latency_cycles": 150,
                   "placement": {"bind": 0}, "frame_allocation": "sequential"},
        "sampler": {"mode": "exhaustive"},
    }}))
    .expect("a valid machine")
}

fn mechanism(params: Value, m: &MachineParams) -> Box<dyn Mechanism> {
    let p: PageMigrationParams = serde_json::from_value(params).expect("params");
    p.build(&MechBuild { machine: m, asids: vec![0], loc: "mechanisms[0]".into() }).expect("builds")
}

fn new_machine(m: &MachineParams) -> Machine {
    let mut machine = Machine::new(m, 1, "machine").unwrap();
    machine.add_tasks(2);
    machine.set_address_spaces(&[ASID]);
    machine.enable_coherence();
    machine
}

/// Core `core` loads every line of `pages` (page numbers) `times` times.
fn read(machine: &mut Machine, core: u32, pages: &[u64], times: usize) {
    for _ in 0..times {
        for &p in pages {
            for line in 0..PAGE / 64 {
                let a = Access {
                    addr: VirtAddr(p * PAGE + line * 64),
                    pc: VirtAddr(0),
                    instrs: 1,
                    size: 8,
                    kind: AccessKind::Load,
                };
                machine.access(CoreId(core), TaskId(core), ASID, &a);
            }
        }
    }
}

fn node_of(machine: &Machine, vpn: u64) -> u32 {
    machine.mapped_pages().find(|&(a, v, _, _)| a == ASID && v == vpn).expect("mapped").3
}

fn pass(mech: &mut Box<dyn Mechanism>, machine: &mut Machine, time: u64) -> Vec<(CoreId, u64)> {
    let running = [Some((TaskId(0), ASID)), Some((TaskId(1), ASID))];
    let mut release = Vec::new();
    let ctx = PeriodCtx {
        machine,
        time,
        running: &running,
        clocks: &[time + 10, time + 30],
        blocked: &[],
        release: &mut release,
    };
    mech.on_period(ctx).unwrap()
}

fn stat(mech: &mut Box<dyn Mechanism>, name: &str) -> u64 {
    mech.results().into_iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("{name}")).1
}

#[test]
fn a_page_read_only_by_node_1_moves_there_after_one_pass() {
    let m = machine();
    let mut machine = new_machine(&m);
    let mut mech = mechanism(json!({"interval": 1000}), &m);
    read(&mut machine, 1, &[10, 11, 12], 1);
    read(&mut machine, 0, &[20], 1);
    assert!((10..13).chain([20]).all(|p| node_of(&machine, p) == 0), "placement binds to node 0");
    pass(&mut mech, &mut machine, 1000);
    assert_eq!([10, 11, 12, 20].map(|p| node_of(&machine, p)), [1, 1, 1, 0]);
    assert_eq!(stat(&mut mech, "migrations"), 3);
    // Every line of the three pages was read once by core 1: 64 samples each.
    assert_eq!(stat(&mut mech, "samples"), 4 * 64);
    // Core 1's TLB held the three translations; its L1 held some lines.
    assert_eq!(stat(&mut mech, "tlb_entries"), 3);
    let old_frames_cached = machine.caches()[1].lines().count();
    assert_eq!(old_frames_cached, 0, "core 1's L1 held only lines of the moved pages");
    assert_eq!(stat(&mut mech, "lines_invalidated"), 16, "a 1 KiB L1 holds 16 lines");
    // The next reads go to node 1 and find a new frame.
    read(&mut machine, 1, &[10], 1);
    let nodes = machine.node_stats();
    assert_eq!(nodes[1].reads, 64);
}

#[test]
fn a_moved_page_is_frozen_for_freeze_passes_then_may_move_back() {
    let m = machine();
    let mut machine = new_machine(&m);
    let mut mech = mechanism(json!({"interval": 1000, "freeze": 3}), &m);
    read(&mut machine, 1, &[5], 1);
    pass(&mut mech, &mut machine, 1000);
    assert_eq!(node_of(&machine, 5), 1);
    // Node 0 now reads it more (cumulative counts: 64 by node 1, 128 by node 0 and growing).
    for (p, time) in (2..=4).zip([2000, 3000, 4000]) {
        read(&mut machine, 0, &[5], 2);
        pass(&mut mech, &mut machine, time);
        assert_eq!(node_of(&machine, 5), 1, "pass {p}: frozen");
    }
    assert_eq!(stat(&mut mech, "frozen"), 3);
    read(&mut machine, 0, &[5], 1);
    pass(&mut mech, &mut machine, 5000);
    assert_eq!(node_of(&machine, 5), 0, "the freeze expired");
    assert_eq!(stat(&mut mech, "migrations"), 2);
    assert_eq!(stat(&mut mech, "ping_pongs"), 1, "back to the node it left");
}

#[test]
fn ties_and_pages_below_the_threshold_stay() {
    let m = machine();
    let mut machine = new_machine(&m);
    let mut mech = mechanism(json!({"interval": 1000, "min_samples": 100}), &m);
    read(&mut machine, 1, &[7], 1); // 64 samples, below 100
    read(&mut machine, 0, &[8], 1);
    read(&mut machine, 1, &[8], 1); // a tie: 64 and 64
    pass(&mut mech, &mut machine, 1000);
    assert_eq!([7, 8].map(|p| node_of(&machine, p)), [0, 0]);
    assert_eq!(stat(&mut mech, "migrations"), 0);
    assert_eq!(stat(&mut mech, "below_threshold"), 1);
}

#[test]
fn stop_the_world_holds_every_thread_until_the_copies_are_done() {
    let m = machine();
    let mut machine = new_machine(&m);
    // 1 GHz: 98 us a page is 98,000 cycles; a 5,000-cycle pause.
    let mut mech = mechanism(json!({"interval": 1000, "pause_time": "5us"}), &m);
    read(&mut machine, 1, &[1, 2], 1);
    let stalls = pass(&mut mech, &mut machine, 1000);
    let resume = 1000 + 5000 + 2 * 98_000;
    assert_eq!(stalls, vec![(CoreId(0), resume - 1010), (CoreId(1), resume - 1030)]);
    let mut background = mechanism(json!({"interval": 1000, "mode": "background", "shootdown_time": "3us"}), &m);
    read(&mut machine, 1, &[3], 1);
    let stalls = pass(&mut background, &mut machine, 2000);
    assert_eq!(stalls, vec![(CoreId(0), 3000), (CoreId(1), 3000)]);
}

#[test]
fn a_dirty_line_of_a_moved_page_is_written_back_to_the_old_node() {
    let m = machine();
    let mut machine = new_machine(&m);
    let mut mech = mechanism(json!({"interval": 1000}), &m);
    let store = Access { addr: VirtAddr(9 * PAGE), pc: VirtAddr(0), instrs: 1, size: 8, kind: AccessKind::Store };
    machine.access(CoreId(1), TaskId(1), ASID, &store);
    let writes = machine.node_stats()[0].writes;
    pass(&mut mech, &mut machine, 1000);
    assert_eq!(node_of(&machine, 9), 1);
    assert_eq!(stat(&mut mech, "dirty_lines"), 1);
    assert_eq!(machine.node_stats()[0].writes, writes + 1);
}

#[test]
fn a_run_moves_serially_initialised_pages_to_the_threads_that_use_them() {
    // CG's master thread touches every page on board 0 (first touch); the
    // threads then read their rows: the pass moves pages to their boards.
    let run = |mechanisms: Value| {
        let doc = json!({
            "machine": {"preset": "numa-sunfire6800", "sampler": {"mode": "interval", "period": 64}},
            "tasks": [{"workload": {"kind": "cg", "params": {"threads": 12, "rows": 4000, "init": "serial"}},
                       "count": 12, "asid": 1, "bind": "spread"}],
            "mechanisms": mechanisms,
        });
        let mut engine = Engine::new(config::from_value(doc).unwrap(), None).unwrap();
        engine.run(&mut |_| Ok(())).unwrap()
    };
    let plain = run(json!([]));
    let migrated = run(json!([{"kind": "page-migration", "params": {"interval": "1ms", "copy_time": "10us"}}]));
    let stats: std::collections::HashMap<_, _> = migrated.mechanisms[0].stats.iter().cloned().collect();
    assert!(stats["passes"] >= 2 && stats["migrations"] > 0, "{stats:?}");
    let remote = |r: &cachesched_core::results::Results| {
        let reads: u64 = r.memory.iter().map(|n| n.reads).sum();
        r.memory.iter().map(|n| n.remote_reads).sum::<u64>() as f64 / reads as f64
    };
    assert!(remote(&migrated) < remote(&plain) * 0.95, "{} vs {}", remote(&migrated), remote(&plain));
}

#[test]
fn a_page_no_node_dominates_is_interleaved_when_asked() {
    // Cores 0 and 1 (nodes 0 and 1) read pages 6 and 7 equally (50% each,
    // below 0.6): page 6 belongs on node 6 mod 2 = 0, where it is, page 7
    // moves to node 1; page 8, which core 1 alone reads, moves to node 1.
    let m = machine();
    let mut machine = new_machine(&m);
    let mut mech = mechanism(json!({"interval": 1000, "interleave_below": 0.6}), &m);
    read(&mut machine, 0, &[6, 7], 1);
    read(&mut machine, 1, &[6, 7, 8], 1);
    pass(&mut mech, &mut machine, 1000);
    assert_eq!([6, 7, 8].map(|p| node_of(&machine, p)), [0, 1, 1]);
    assert_eq!((stat(&mut mech, "migrations"), stat(&mut mech, "interleaved")), (2, 1));
    // The source's policy keeps a tie where it is.
    let mut machine = new_machine(&m);
    let mut source = mechanism(json!({"interval": 1000}), &m);
    read(&mut machine, 0, &[7], 1);
    read(&mut machine, 1, &[7], 1);
    pass(&mut source, &mut machine, 1000);
    assert_eq!(node_of(&machine, 7), 0);
}

#[test]
fn the_sampled_pages_and_an_oracles_placement() {
    let m = machine();
    let mut machine = new_machine(&m);
    read(&mut machine, 1, &[10], 1);
    read(&mut machine, 0, &[10, 11], 1);
    machine.finish_sampling();
    let rows: Vec<_> = machine.sampled_pages().iter().map(|p| (p.vpn, p.home, p.node, p.samples)).collect();
    assert_eq!(rows, vec![(10, 0, 0, 64), (10, 0, 1, 64), (11, 0, 0, 64)]);
    // Pages listed in page_nodes go to their node on first touch, the others where placement says.
    let mut oracle = m.clone();
    oracle.memory.page_nodes = serde_json::from_value(json!([{"asid": 1, "vpn": 5, "node": 1}])).unwrap();
    let mut machine = new_machine(&oracle);
    read(&mut machine, 0, &[5, 6], 1);
    assert_eq!([5, 6].map(|p| node_of(&machine, p)), [1, 0]);
    let mut bad = serde_json::to_value(&oracle).unwrap();
    bad["memory"]["page_nodes"][0]["node"] = json!(7);
    let err = config::machine_from_value(json!({"machine": bad})).unwrap_err().to_string();
    assert!(err.contains("machine.memory.page_nodes[0].node"), "{err}");
}

fn balancing(m: &MachineParams) -> Box<dyn Mechanism> {
    let p: cachesched_core::mech::numa_balancing::NumaBalancingParams = serde_json::from_value(json!({
        "scan_delay": 1000, "scan_period_min": 1000, "scan_period_max": 8000, "fault_time": 500,
        "copy_time": 7000, "tick": 100,
    }))
    .unwrap();
    p.build(&MechBuild { machine: m, asids: vec![0], loc: "mechanisms[0]".into() }).unwrap()
}

#[test]
fn numa_balancing_moves_a_page_after_its_hinting_faults_pass_the_two_stage_filter() {
    let m = machine();
    let mut machine = new_machine(&m);
    let mut mech = balancing(&m);
    mech.attach(&mut machine).unwrap();
    read(&mut machine, 1, &[10], 1);
    read(&mut machine, 0, &[20], 1);
    assert!(pass(&mut mech, &mut machine, 500).is_empty(), "before the scan delay nothing happens");
    pass(&mut mech, &mut machine, 1000);
    assert_eq!(stat(&mut mech, "numa_pte_updates"), 2, "both mapped pages protected");
    // The next touch of each faults: 500 cycles beside the 10-cycle walk.
    // Page 10's, by core 1, is its first fault: it passes the filter and
    // the page moves to node 1; page 20's comes from its own node.
    let a = Access { addr: VirtAddr(10 * PAGE), pc: VirtAddr(0), instrs: 1, size: 8, kind: AccessKind::Load };
    let local = machine.access(CoreId(0), TaskId(0), ASID, &Access { addr: VirtAddr(20 * PAGE + 64), ..a });
    let remote = machine.access(CoreId(1), TaskId(1), ASID, &a);
    assert!(local >= 510 && remote >= 510, "{local}, {remote}");
    let again = machine.access(CoreId(1), TaskId(1), ASID, &Access { addr: VirtAddr(10 * PAGE + 128), ..a });
    assert!(again < 500, "one fault per protection: {again}");
    let stalls = pass(&mut mech, &mut machine, 1100);
    assert_eq!(node_of(&machine, 10), 1);
    assert_eq!(stalls, vec![(CoreId(1), 7000)], "the copy, on the faulting node's core");
    // Page 20's fault came from its own node 0: local. Now core 1 faults on
    // it once (filtered: the last fault was node 0's), then again: it moves.
    assert_eq!((stat(&mut mech, "numa_hint_faults"), stat(&mut mech, "numa_hint_faults_local")), (2, 1));
    let b = Access { addr: VirtAddr(20 * PAGE), ..a };
    machine.access(CoreId(1), TaskId(1), ASID, &b);
    pass(&mut mech, &mut machine, 1200);
    assert_eq!((node_of(&machine, 20), stat(&mut mech, "filtered")), (0, 0), "not protected again yet");
    pass(&mut mech, &mut machine, 2000); // the second scan, a period after the first
    machine.access(CoreId(1), TaskId(1), ASID, &b);
    pass(&mut mech, &mut machine, 2100);
    assert_eq!((node_of(&machine, 20), stat(&mut mech, "filtered")), (0, 1));
    // Nothing moved between the second scan and the third: the period
    // doubles to 2000, so the fourth scan comes at 5000.
    pass(&mut mech, &mut machine, 3000);
    machine.access(CoreId(1), TaskId(1), ASID, &b);
    pass(&mut mech, &mut machine, 3100);
    assert_eq!((node_of(&machine, 20), stat(&mut mech, "numa_pages_migrated")), (1, 2));
    assert_eq!(stat(&mut mech, "scan_period"), 2000);
    pass(&mut mech, &mut machine, 4000);
    assert_eq!(stat(&mut mech, "scans"), 3);
    // A page moved since: the period halves back to its minimum.
    pass(&mut mech, &mut machine, 5000);
    assert_eq!((stat(&mut mech, "scans"), stat(&mut mech, "scan_period")), (4, 1000));
}
