//! The multi-task engine and its schedulers, checked against hand-computed
//! schedules, a small independent model of round-robin, and a direct
//! machine loop for single-task runs.

use cachesched_core::config::{self, ValidConfig};
use cachesched_core::counters::Level;
use cachesched_core::engine::Engine;
use cachesched_core::error::{Error, Result};
use cachesched_core::events::Event;
use cachesched_core::mech::{AccessCtx, EventCtx, Mechanism};
use cachesched_core::mem::machine::Machine;
use cachesched_core::results::Results;
use cachesched_core::sched::{SchedCtx, Scheduler, Slice};
use cachesched_core::trace::{collect, WorkloadCtx};
use cachesched_core::types::{Asid, CoreId, TaskId};
use cachesched_core::units::Budget;
use serde_json::{json, Value};

fn valid(config: Value) -> ValidConfig {
    config::from_value(config).unwrap_or_else(|e| panic!("{e}"))
}

fn run(config: Value) -> Results {
    Engine::new(valid(config), None).and_then(|mut e| e.run(&mut |_| Ok(()))).unwrap_or_else(|e| panic!("{e}"))
}

/// The results without what legitimately differs between two runs.
fn comparable(r: &Results) -> Value {
    let mut v = serde_json::to_value(r).unwrap();
    v["config"]["run"]["batch"] = Value::Null;
    v["config"]["run"]["prefetch"] = Value::Null;
    v["config"]["run"]["classify_thread"] = Value::Null;
    v["config"]["run"]["parallel_sockets"] = Value::Null;
    v["host"] = Value::Null;
    v
}

/// The path and values of the first difference between two documents.
fn difference(a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.iter().find_map(|(k, v)| difference(v, y.get(k).unwrap_or(&Value::Null)).map(|d| format!("{k}.{d}")))
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            x.iter().zip(y).enumerate().find_map(|(i, (v, w))| difference(v, w).map(|d| format!("[{i}].{d}")))
        }
        _ if a == b => None,
        _ => Some(format!(": {a} != {b}")),
    }
}

/// Assert two results are the same but for wall time, batch size and the
/// work done on other threads.
fn assert_same(a: &Results, b: &Results, what: &str) {
    if let Some(d) = difference(&comparable(a), &comparable(b)) {
        panic!("{what}: {d}");
    }
}

/// A machine where nothing stalls: every reference costs its instructions
/// at one cycle each, so schedules can be computed by hand.
fn flat_machine(sockets: u32, cores_per_socket: u32) -> Value {
    json!({
        "sockets": sockets, "cores_per_socket": cores_per_socket,
        "l1d": {"latency_cycles": 0}, "l2": false, "llc": false, "tlb": false,
        "memory": {"latency_cycles": 0},
    })
}

/// A stream of `n` references, one instruction each, at its own addresses.
fn stream(n: u64, base: u64) -> Value {
    json!({"kind": "stream", "params": {
        "accesses": n, "instructions_per_access": 1, "store_fraction": 0, "base_addr": base,
        "working_set_bytes": "64KiB", "access_bytes": 64,
    }})
}

fn tasks(lengths: &[u64]) -> Value {
    Value::Array(
        lengths.iter().enumerate().map(|(i, &n)| json!({"workload": stream(n, (i as u64 + 1) << 32)})).collect(),
    )
}

/// (time, core, task, event name) of every event.
fn events(r: &Results) -> Vec<(u64, u32, u32, &'static str)> {
    r.events
        .iter()
        .map(|e| (e.time, e.core.map_or(u32::MAX, |c| c.0), e.task.map_or(u32::MAX, |t| t.0), e.event.name()))
        .collect()
}

/// An independent model of round-robin on one core: tasks of `lengths`
/// instructions, a quantum of `q` instructions, `cost` cycles per
/// switch-in, one cycle per instruction. Returns the switch-ins and
/// switch-outs with their times.
fn round_robin_model(lengths: &[u64], q: u64, cost: u64) -> Vec<(u64, u32, u32, &'static str)> {
    let mut left = lengths.to_vec();
    let mut queue: std::collections::VecDeque<usize> = (0..lengths.len()).collect();
    let (mut now, mut out, mut last) = (0, Vec::new(), None);
    while let Some(t) = queue.pop_front() {
        if last != Some(t) {
            out.push((now, 0, t as u32, "switch_in"));
            now += cost;
        }
        let ran = left[t].min(q);
        now += ran;
        left[t] -= ran;
        let next = if left[t] > 0 {
            queue.push_back(t);
            queue.front().copied()
        } else {
            None
        };
        if next != Some(t) {
            out.push((now, 0, t as u32, "switch_out"));
        }
        last = Some(t);
    }
    out
}

#[test]
fn round_robin_switches_where_the_model_says() {
    for (lengths, q, cost) in
        [(vec![1000, 1000], 300, 0), (vec![1000, 450, 20], 300, 10), (vec![700], 100, 5), (vec![600, 300, 900], 300, 3)]
    {
        let r = run(json!({
            "machine": flat_machine(1, 1),
            "tasks": tasks(&lengths),
            "scheduler": {"kind": "round-robin", "params": {"quantum": format!("{q} instr")}},
            "run": {"switch_cycles": cost, "batch": 64},
        }));
        assert_eq!(events(&r), round_robin_model(&lengths, q, cost), "lengths {lengths:?} q {q} cost {cost}");
        let total: u64 = lengths.iter().sum();
        let switches = r.events.iter().filter(|e| e.event == Event::SwitchIn).count() as u64;
        assert_eq!(r.summary.switches, switches);
        assert_eq!(r.summary.cycles, total + cost * switches);
        assert_eq!(r.cores[0].counts.overhead_cycles, cost * switches);
    }
}

#[test]
fn a_quantum_in_time_is_converted_with_the_frequency() {
    // 2 GHz: 150 ns = 300 cycles = 300 instructions on the flat machine.
    let mut machine = flat_machine(1, 1);
    machine["frequency_ghz"] = json!(2.0);
    let r = run(json!({
        "machine": machine,
        "tasks": tasks(&[1000, 1000]),
        "scheduler": {"kind": "round-robin", "params": {"quantum": "150ns"}},
    }));
    assert_eq!(events(&r), round_robin_model(&[1000, 1000], 300, 0));
}

#[test]
fn pinned_tasks_never_migrate_and_run_only_on_their_core() {
    let entries: Vec<Value> =
        (0..8).map(|i| json!({"workload": stream(3000, (i + 1) << 32), "affinity": [i % 4]})).collect();
    let r = run(json!({
        "machine": {"sockets": 2, "cores_per_socket": 2},
        "tasks": entries,
        "scheduler": {"kind": "pinned", "params": {"quantum": "500 instr"}},
    }));
    assert_eq!(r.summary.migrations, 0);
    for e in &r.events {
        assert_eq!(e.core.unwrap().0, e.task.unwrap().0 % 4, "{e:?}");
    }
    // Two tasks per core, 3000 instructions each at 500 per slice: 6 slices each.
    assert!(r.tasks.iter().all(|t| t.switches == 6), "{:?}", r.tasks.iter().map(|t| t.switches).collect::<Vec<_>>());
}

/// Two tasks whose 48 KiB working sets each fit a 64 KiB L2 but not
/// together. With identity frames each of the 128 L2 sets holds 6 lines of
/// each task; the L1 (32 KiB) misses every reference of a 48 KiB sweep.
fn l2_pair(scheduler: Value, cores: u32, affinity: bool) -> Results {
    let sweep = 768; // lines of 48 KiB
    let entries: Vec<Value> = (0..2u64)
        .map(|i| {
            let w = json!({"kind": "stream", "params": {
                "accesses": 4 * sweep, "instructions_per_access": 1, "store_fraction": 0,
                "base_addr": (i + 1) << 20, "working_set_bytes": "48KiB", "access_bytes": 64,
            }});
            if affinity {
                json!({"workload": w, "affinity": [i]})
            } else {
                json!({"workload": w})
            }
        })
        .collect();
    run(json!({
        "machine": {
            "cores_per_socket": cores, "llc": false, "tlb": false,
            "l2": {"size_bytes": "64KiB", "ways": 8},
            "memory": {"frame_allocation": "identity"},
            "attribution": ["l2"],
        },
        "tasks": entries,
        "scheduler": scheduler,
    }))
}

#[test]
fn sharing_a_core_costs_l2_misses_that_separate_cores_do_not() {
    let l2_misses =
        |r: &Results| r.tasks.iter().map(|t| t.stats.levels[Level::L2 as usize].total_misses()).sum::<u64>();
    // Alternating full sweeps: after the other task's 6 lines per set, LRU
    // keeps only 2 of this task's 6 and its sweep evicts them before reuse,
    // so every reference misses the L2: 2 tasks x 4 sweeps x 768.
    let rr = l2_pair(json!({"kind": "round-robin", "params": {"quantum": "768 instr"}}), 1, false);
    assert_eq!(l2_misses(&rr), 2 * 4 * 768);
    assert_eq!(rr.summary.switches, 8);
    let l2 = Level::L2 as usize;
    for t in &rr.tasks {
        // Alone, 6 lines per 8-way set always hit: every miss after the
        // first sweep is switch-induced, the working set per switch.
        let c = t.stats.levels[l2];
        assert_eq!((c.compulsory[0], c.induced.switch[0]), (768, 3 * 768));
        assert_eq!(c.induced.migration[0] + c.induced.sharing[0], 0);
        // Each of its 3 returns finds 2 of its 6 lines per set (256 lines)
        // of the 768 it left.
        assert_eq!(t.residual.returns, 3);
        assert_eq!((t.residual.left.0[l2], t.residual.found.0[l2]), (3 * 768, 3 * 256));
    }
    // One core each: only the first sweep misses, and nothing is induced.
    let pinned = l2_pair(json!({"kind": "pinned"}), 2, true);
    assert_eq!(l2_misses(&pinned), 2 * 768);
    assert!(pinned.tasks.iter().all(|t| t.stats.levels[Level::L2 as usize].total_accesses() == 4 * 768));
    assert!(pinned.tasks.iter().all(|t| t.stats.levels[l2].induced.total() == 0));
}

/// One task sweeping a 48 KiB working set (768 lines, fits the L2) 4 times
/// on 2 sockets x 2 cores, forced to move after each sweep.
fn migrating_sweeps(destination: &str) -> Results {
    run(json!({
        "machine": {
            "sockets": 2, "cores_per_socket": 2, "tlb": false,
            "l2": {"size_bytes": "64KiB", "ways": 8},
            "llc": {"size_bytes": "256KiB", "ways": 8},
            "memory": {"frame_allocation": "sequential"},
            "attribution": ["l2", "llc"],
        },
        "tasks": [{"workload": {"kind": "stream", "params": {
            "accesses": 4 * 768, "instructions_per_access": 1, "store_fraction": 0,
            "working_set_bytes": "48KiB", "access_bytes": 64,
        }}}],
        "scheduler": {"kind": "forced", "params": {"every": "768 instr", "destination": destination}},
    }))
}

#[test]
fn migrations_cost_the_working_set_minus_what_the_shared_llc_keeps() {
    let (l2, llc) = (Level::L2 as usize, Level::Llc as usize);
    // Remote: core 0 -> 2 -> 0 -> 2. The first move finds both caches of
    // the other socket cold: the whole working set is migration-induced at
    // the L2 and the LLC (whose lines it never held); coming back finds
    // everything where it was left.
    let remote = migrating_sweeps("remote");
    let t = &remote.tasks[0];
    assert_eq!(t.migrations_remote, 3);
    assert_eq!(t.stats.levels[l2].induced.migration[0], 768);
    assert_eq!(t.stats.levels[llc].induced.migration[0], 768);
    assert_eq!(t.stats.levels[l2].total_misses(), 2 * 768, "the first sweep's and the first move's");
    // Local: core 0 -> 1 -> 0 -> 1. The shared LLC keeps every line.
    let local = migrating_sweeps("local");
    let t = &local.tasks[0];
    assert_eq!(t.migrations_local, 3);
    assert_eq!(t.stats.levels[l2].induced.migration[0], 768);
    assert_eq!(t.stats.levels[llc].total_misses(), 768, "compulsory only");
    assert_eq!(t.stats.levels[llc].induced.total(), 0);
}

fn forced(every: &str, batch: u32, timing: &str, locality: &str) -> Results {
    run(json!({
        "machine": {"preset": "server-2s", "llc": false},
        "tasks": [{"workload": {"kind": "zipf", "params": {
            "accesses": 60_003, "working_set_bytes": "256KiB", "instructions_per_access": 1,
        }}}],
        "scheduler": {"kind": "forced", "params": {"every": every, "timing": timing, "destination": locality}},
        "stats": {"window": "5000 instr"},
        "run": {"batch": batch},
    }))
}

#[test]
fn forced_migrations_fall_at_the_same_points_whatever_the_batch() {
    let r = forced("5000 instr", 4096, "live", "remote");
    let migrations: Vec<_> = r.events.iter().filter(|e| matches!(e.event, Event::Migrate { .. })).collect();
    let instructions = r.tasks[0].stats.instructions;
    assert_eq!(migrations.len() as u64, instructions / 5000, "{instructions} instructions");
    let cores_per_socket = r.config["machine"]["cores_per_socket"].as_u64().unwrap() as u32;
    for (k, e) in migrations.iter().enumerate() {
        let (from, to) = if k % 2 == 0 { (0, cores_per_socket) } else { (cores_per_socket, 0) };
        let Event::Migrate { from: f, to: t, .. } = e.event else { unreachable!() };
        assert_eq!((f.0, t.0), (from, to), "remote: the same position on the other socket");
    }
    // Each window spans exactly the instructions between two migration points.
    let complete: Vec<_> = r.windows.iter().filter(|w| w.complete).collect();
    assert_eq!(complete.len(), migrations.len() - 1);
    assert!(complete.iter().all(|w| w.counts.instructions == 5000));
    for batch in [1, 7, 333] {
        assert_same(&forced("5000 instr", batch, "live", "remote"), &r, &format!("batch {batch}"));
    }
    // A period in cycles: points depend on stalls, still not on the batch.
    let cycles = forced("50000 cycles", 4096, "delayed", "local");
    assert!(cycles.summary.migrations >= 2);
    let local = |e: &&cachesched_core::events::EventRecord| match e.event {
        Event::Migrate { from, to, locality, .. } => {
            to.0 == (from.0 + 1) % cores_per_socket && locality == cachesched_core::events::Locality::Local
        }
        _ => true,
    };
    assert!(cycles.events.iter().all(|e| local(&e)), "the next core of the same socket");
    for batch in [1, 50] {
        assert_same(&forced("50000 cycles", batch, "delayed", "local"), &cycles, &format!("batch {batch}"));
    }
}

#[test]
fn live_and_delayed_migrations_are_labelled() {
    for timing in ["live", "delayed"] {
        let r = forced("5000 instr", 4096, timing, "remote");
        let labels: Vec<String> = r
            .events
            .iter()
            .filter_map(|e| match e.event {
                Event::Migrate { timing, locality, .. } => Some(format!("{timing:?}/{locality:?}").to_lowercase()),
                _ => None,
            })
            .collect();
        assert!(!labels.is_empty() && labels.iter().all(|l| *l == format!("{timing}/remote")), "{labels:?}");
    }
}

fn flat_vm_tasks(vms: &[u32], length: u64) -> Value {
    Value::Array(
        vms.iter()
            .enumerate()
            .map(|(i, &vm)| json!({"workload": stream(length, (i as u64 + 1) << 32), "vm": vm}))
            .collect(),
    )
}

#[test]
fn hypervisor_splits_a_vm_slice_among_its_guests() {
    // One core, VM 0 with 4 guests and VM 1 with 2, a 1000-cycle slice:
    // guests of VM 0 get 250 cycles each, those of VM 1 500.
    let r = run(json!({
        "machine": flat_machine(1, 1),
        "tasks": flat_vm_tasks(&[0, 0, 0, 0, 1, 1], 1000),
        "scheduler": {"kind": "hypervisor", "params": {"slice": 1000}},
    }));
    let ins: Vec<(u64, u32)> =
        r.events.iter().filter(|e| e.event == Event::SwitchIn).map(|e| (e.time, e.task.unwrap().0)).take(8).collect();
    let expected = [(0, 0), (250, 1), (500, 2), (750, 3), (1000, 4), (1500, 5), (2000, 0), (2250, 1)];
    assert_eq!(ins, expected);
    assert_eq!(r.summary.cycles, 6000, "nothing idles, nothing stalls");
}

#[test]
fn hypervisor_over_subscription_keeps_vcpus_on_their_cores() {
    // 4 VMs x 1 VCPU on 2 cores: VCPUs 0 and 2 share core 0, 1 and 3 core 1.
    let r = run(json!({
        "machine": flat_machine(1, 2),
        "tasks": flat_vm_tasks(&[0, 0, 1, 2, 3, 3], 2000),
        "scheduler": {"kind": "hypervisor", "params": {"slice": 1000}},
    }));
    let home = [0, 0, 1, 0, 1, 1];
    assert!(r.events.iter().all(|e| e.core.unwrap().0 == home[e.task.unwrap().0 as usize]), "{:?}", events(&r));
    assert_eq!(r.summary.migrations, 0);
    // Core 0 runs 3 guests of 2000 instructions, core 1 as many.
    assert_eq!(r.cores.iter().map(|c| c.counts.instructions).collect::<Vec<_>>(), vec![6000, 6000]);
}

/// The cycle at which each task last stopped running.
fn finish_times(r: &Results) -> Vec<u64> {
    let mut end = vec![0; r.tasks.len()];
    for e in r.events.iter().filter(|e| e.event == Event::SwitchOut) {
        end[e.task.unwrap().0 as usize] = e.time;
    }
    end
}

fn credit(params: Value) -> Value {
    let mut p = json!({"policy": "credit", "slice": 30_000, "tick": 10_000});
    p.as_object_mut().unwrap().extend(params.as_object().unwrap().clone());
    json!({"kind": "hypervisor", "params": p})
}

#[test]
fn credit_shares_a_core_among_vms_by_weight() {
    // One core; VM 0 weighs twice VMs 1 and 2 and has twice their work: at
    // shares 2:1:1 all three end together, at 4 times the small work.
    // Without credits the core is shared evenly and the small ones end at 3.
    let work = 600_000;
    let vms = json!([
        {"workload": stream(2 * work, 1 << 32), "vm": 0},
        {"workload": stream(work, 2 << 32), "vm": 1},
        {"workload": stream(work, 3 << 32), "vm": 2},
    ]);
    let weighted = run(json!({
        "machine": flat_machine(1, 1), "tasks": vms,
        "scheduler": credit(json!({"weight": [512, 256, 256]})),
    }));
    let end = finish_times(&weighted);
    for (vm, &t) in end.iter().enumerate() {
        let share = t as f64 / (4 * work) as f64;
        assert!((0.9..=1.0).contains(&share), "VM {vm} ended at {t}: {end:?}");
    }
    let fixed = run(json!({
        "machine": flat_machine(1, 1), "tasks": vms,
        "scheduler": {"kind": "hypervisor", "params": {"slice": 30_000}},
    }));
    let end = finish_times(&fixed);
    assert!(end[1] <= 3 * work + 30_000 && end[2] <= 3 * work + 60_000, "{end:?}");
    assert_eq!(end[0], 4 * work);
}

#[test]
fn credit_vcpus_migrate_to_idle_cores() {
    // 2 cores; VMs 0 and 2 start on core 0, VM 1 (short) on core 1. Fixed
    // VCPUs leave core 1 idle once VM 1 ends; with credits it takes a VCPU
    // of core 0, and the work ends near half of the total.
    let (long, short) = (1_000_000, 100_000);
    let vms = json!([
        {"workload": stream(long, 1 << 32), "vm": 0},
        {"workload": stream(short, 2 << 32), "vm": 1},
        {"workload": stream(long, 3 << 32), "vm": 2},
    ]);
    let fixed = run(json!({
        "machine": flat_machine(1, 2), "tasks": vms,
        "scheduler": {"kind": "hypervisor", "params": {"slice": 30_000}},
    }));
    assert_eq!((fixed.summary.cycles, fixed.summary.migrations), (2 * long, 0));
    let credit = run(json!({"machine": flat_machine(1, 2), "tasks": vms, "scheduler": credit(json!({}))}));
    let even = (2 * long + short) / 2;
    assert!(credit.summary.cycles <= even + 60_000, "{} against {even}", credit.summary.cycles);
    assert!(credit.summary.migrations > 0);
}

fn balance_run(batch: u32) -> Results {
    // 8 tasks on 4 cores; those that start on cores 2 and 3 are short, so
    // those cores go idle and take waiting tasks from cores 0 and 1.
    let lengths = [20_000, 20_000, 1000, 1000, 20_000, 20_000, 1000, 1000];
    run(json!({
        "machine": {"sockets": 2, "cores_per_socket": 2, "llc": false},
        "tasks": tasks(&lengths),
        "scheduler": {"kind": "balance", "params": {"quantum": "2000 instr", "period": 20_000}},
        "run": {"batch": batch},
    }))
}

#[test]
fn balancing_moves_waiting_tasks_to_idle_cores() {
    let r = balance_run(4096);
    let migrations: Vec<_> = r
        .events
        .iter()
        .filter_map(|e| match e.event {
            Event::Migrate { from, to, timing, .. } => Some((from.0, to.0, timing)),
            _ => None,
        })
        .collect();
    assert!(!migrations.is_empty());
    assert!(migrations.iter().all(|m| m.2 == cachesched_core::events::Timing::Delayed), "{migrations:?}");
    assert!(migrations.iter().any(|m| m.0 < 2 && m.1 >= 2), "cores 2 and 3 take work from socket 0");
    let ticks: Vec<u64> = r.events.iter().filter(|e| e.event == Event::Tick).map(|e| e.time).collect();
    assert!(ticks.iter().enumerate().all(|(k, &t)| t == 20_000 * (k as u64 + 1)), "{ticks:?}");
    assert_eq!(r.summary.instructions, 4 * 20_000 + 4 * 1000);
    // Private caches only: the batch size changes nothing.
    assert_same(&balance_run(5), &r, "batch 5");
}

#[test]
fn runs_are_deterministic_with_shared_caches() {
    let config = json!({
        "machine": {"preset": "server-2s"},
        "tasks": [
            {"workload": {"kind": "zipf", "params": {"accesses": 20_000, "working_set_bytes": "2MiB"}}, "count": 6},
            {"workload": {"kind": "stream", "params": {"accesses": 20_000}}, "count": 4, "asid": 100},
        ],
        "scheduler": {"kind": "balance", "params": {"quantum": "20us", "period": "50us"}},
        "stats": {"interval": "10K instr", "window": "5K instr"},
        "run": {"batch": 256, "switch_cycles": 500, "migration_cycles": 2000},
    });
    let a = run(config.clone());
    assert_same(&a, &run(config.clone()), "a second run");
    // Producer threads hand over buffers of several batches: the same chunks.
    let mut inline = config;
    inline["run"]["prefetch"] = json!(false);
    assert_same(&a, &run(inline), "accesses produced inline");
    assert_eq!(a.tasks.len(), 10);
    assert_eq!(a.tasks[7].name, "task7");
    assert!(a.tasks[6..].iter().all(|t| t.asid == 100), "threads of one process share an asid");
    assert_eq!(a.tasks.iter().map(|t| t.asid).take(6).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4, 5]);
    // Intervals and per-core rows add up to the task totals.
    let interval_instr: u64 = a.intervals.iter().map(|i| i.counts.instructions).sum();
    assert_eq!(interval_instr, a.summary.instructions);
    let core_accesses: u64 = a.cores.iter().map(|c| c.counts.accesses).sum();
    assert_eq!(core_accesses, a.summary.accesses);
    let core_l2: u64 = a.cores.iter().map(|c| c.counts.misses.0[Level::L2 as usize]).sum();
    let task_l2: u64 = a.tasks.iter().map(|t| t.stats.levels[Level::L2 as usize].total_misses()).sum();
    assert_eq!(core_l2, task_l2);
    let overhead: u64 = a.tasks.iter().map(|t| t.overhead_cycles).sum();
    assert_eq!(overhead, 500 * a.summary.switches + 2000 * a.summary.migrations);
}

#[test]
fn classifying_on_a_worker_thread_counts_the_same() {
    // Eight tasks whose working sets together overflow the LLC, switched
    // every few thousand instructions on two cores: every level and both
    // TLBs see induced misses, and the slices their switch-induced LLC misses.
    let config = json!({
        "machine": {"preset": "standard", "sockets": 1, "cores_per_socket": 2,
                    "attribution": ["l1d", "l2", "llc", "tlb.l1", "tlb.l2"]},
        "tasks": [{"workload": {"kind": "zipf", "params": {"accesses": 60_000, "working_set_bytes": "2MiB", "exponent": 0.6}}, "count": 8}],
        "scheduler": {"kind": "round-robin", "params": {"quantum": "0.05ms"}},
        "stats": {"interval": "40K instr", "window": "10K instr"},
        "run": {"warmup_accesses": 20_000, "batch": 512},
    });
    let threaded = run(config.clone());
    let mut inline = config;
    inline["run"]["classify_thread"] = json!(false);
    assert_same(&threaded, &run(inline), "attribution applied inline");
    let task = &threaded.tasks[3].stats;
    for level in [Level::L1d, Level::L2, Level::Llc] {
        assert!(task.levels[level as usize].induced.switch[0] > 0, "{level:?}");
    }
    assert!(task.tlb.l1_induced.switch[0] > 0 && task.levels[Level::Llc as usize].compulsory[0] > 0);
    let slices: u64 = threaded.slices.iter().map(|s| s.llc_switch_misses).sum();
    assert!(slices > 0);
}

/// `config` run with the sockets on separate threads and serially: the same
/// results; and, on a host with a second CPU, most references simulated
/// apart (else the comparison would say nothing).
fn assert_same_apart(config: Value, what: &str) {
    let run_with = |apart: bool| {
        let mut config = config.clone();
        config["run"]["parallel_sockets"] = json!(apart);
        let mut engine = Engine::new(valid(config), None).unwrap();
        let results = engine.run(&mut |_| Ok(())).unwrap_or_else(|e| panic!("{what}: {e}"));
        (results, engine.accesses_apart())
    };
    let ((apart, n), (serial, none)) = (run_with(true), run_with(false));
    assert_eq!(none, 0);
    if std::thread::available_parallelism().map_or(1, |n| n.get()) > 1 {
        let all = apart.summary.accesses;
        assert!(n > all / 4, "{what}: only {n} of {all} references with the sockets apart");
    }
    assert_same(&apart, &serial, what);
}

/// Separate processes of different lengths, so that streams end and cores
/// idle; working sets beyond the L2, shared LLCs, two NUMA nodes.
fn apart_tasks(n: u64, accesses: u64) -> Vec<Value> {
    (0..n)
        .map(|i| {
            json!({"workload": {"kind": "zipf", "params": {
                "accesses": accesses + 3_000 * i, "working_set_bytes": "512KiB", "base_addr": (i + 1) << 30,
            }}})
        })
        .collect()
}

fn apart_machine(sockets: u32, cores_per_socket: u32) -> Value {
    json!({
        "sockets": sockets, "cores_per_socket": cores_per_socket,
        "l2": {"size_bytes": "64KiB", "ways": 8, "prefetcher": {"kind": "stream"}},
        "llc": {"size_bytes": "256KiB", "ways": 16},
        "memory": {"remote_latency_cycles": 300},
    })
}

#[test]
fn sockets_apart_give_what_the_serial_loop_gives() {
    let balance = json!({"kind": "balance", "params": {"quantum": "0.05ms", "period": "0.2ms"}});
    assert_same_apart(
        json!({"machine": apart_machine(2, 2), "tasks": apart_tasks(10, 40_000), "scheduler": balance}),
        "balancing, slices in time",
    );
    assert_same_apart(
        json!({
            "machine": apart_machine(2, 2),
            "tasks": apart_tasks(6, 40_000),
            "scheduler": {"kind": "round-robin", "params": {"quantum": "60K instr"}},
        }),
        "round-robin, slices in instructions",
    );
    assert_same_apart(
        json!({
            "machine": apart_machine(2, 2),
            "tasks": apart_tasks(4, 60_000),
            "scheduler": {"kind": "forced", "params": {"every": "90K instr", "destination": "remote"}},
        }),
        "forced remote migrations",
    );
    let pinned: Vec<Value> = (apart_tasks(8, 30_000).into_iter().enumerate())
        .map(|(i, mut t)| {
            t["affinity"] = json!([i % 4]);
            t
        })
        .collect();
    assert_same_apart(
        json!({
            "machine": apart_machine(4, 1),
            "tasks": pinned,
            "scheduler": {"kind": "pinned", "params": {"quantum": "0.04ms"}},
            "run": {"switch_cycles": 500},
        }),
        "four sockets, pinned",
    );
    // Threads of one process share an address space: without coherence,
    // never on two sockets at once apart, so this one runs partly serially.
    let mut threads = apart_tasks(8, 40_000);
    for t in &mut threads[..4] {
        t["asid"] = json!(7);
    }
    let mut incoherent = apart_machine(2, 2);
    incoherent["coherence"] = json!("none");
    assert_same_apart(
        json!({"machine": incoherent, "tasks": threads, "scheduler": balance}),
        "threads sharing an address space",
    );
    // With coherence a store on one socket removes copies on the other:
    // nothing runs apart.
    let config = json!({"machine": apart_machine(2, 2), "tasks": threads, "scheduler": balance});
    let mut engine = Engine::new(valid(config), None).unwrap();
    engine.run(&mut |_| Ok(())).unwrap();
    assert_eq!(engine.accesses_apart(), 0);
}

/// A single task on the multi-task engine gives exactly what the machine
/// gives when fed its accesses directly (the old single-task engine).
#[test]
fn a_single_task_alone_matches_a_direct_machine_loop() {
    for (workload, warmup, max, machine) in [
        (json!({"kind": "zipf", "params": {"accesses": 30_000, "working_set_bytes": "4MiB"}}), 0, None, "standard"),
        (json!({"kind": "loop", "params": {"accesses": 20_000}}), 5000, Some(9000), "migration-tlb"),
        (json!({"kind": "chase", "params": {"accesses": 5000}}), 100, None, "server-2s"),
    ] {
        let mut config =
            json!({"machine": {"preset": machine}, "workload": workload, "run": {"warmup_accesses": warmup}});
        if let Some(m) = max {
            config["run"]["max_accesses"] = json!(m);
        }
        let r = run(config.clone());
        let v = valid(config);
        let mut m = Machine::new(&v.config.machine, v.config.seed, "machine").unwrap();
        m.add_tasks(1);
        let ctx = WorkloadCtx {
            seed: v.config.seed,
            component: "task0".into(),
            loc: "workload".into(),
            base_dir: None,
            thread: Default::default(),
        };
        let accesses = collect(v.tasks[0].workload.build(&ctx).unwrap().as_mut()).unwrap();
        let end = max.map_or(accesses.len(), |m| (warmup + m) as usize).min(accesses.len());
        let (warm, measured) = accesses[..end].split_at(warmup as usize);
        m.access_batch(CoreId(0), TaskId(0), Asid(0), warm);
        m.reset_stats();
        m.access_batch(CoreId(0), TaskId(0), Asid(0), measured);
        m.settle_counts().unwrap();
        assert_eq!(r.tasks[0].stats, m.tasks[0], "{machine}");
        assert_eq!(r.summary.cycles, m.cycles_of(TaskId(0)).round() as u64);
        assert_eq!(r.summary.switches, (warmup == 0) as u64, "the one switch-in at the start");
        let caches: Vec<_> = m.caches().iter().map(|c| c.stats.clone()).collect();
        assert_eq!(r.caches.iter().map(|c| c.stats.clone()).collect::<Vec<_>>(), caches);
    }
}

/// Counts what it sees; flushes the TLBs of a migrating task's new core.
#[derive(Default)]
struct Recorder {
    events: Vec<(u64, &'static str)>,
    accesses: u64,
    per_access: bool,
}

struct Shared(std::sync::Arc<std::sync::Mutex<Recorder>>);

impl Mechanism for Shared {
    fn name(&self) -> &str {
        "recorder"
    }

    fn on_event(&mut self, ctx: EventCtx<'_>) -> Result<u64> {
        if let Event::Migrate { to, .. } = ctx.record.event {
            ctx.machine.flush_tlbs(to, ctx.asid);
        }
        self.0.lock().unwrap().events.push((ctx.record.time, ctx.record.event.name()));
        Ok(if ctx.record.event == Event::SwitchIn { 7 } else { 0 })
    }

    fn wants_accesses(&self) -> bool {
        self.0.lock().unwrap().per_access
    }

    fn on_access(&mut self, _: AccessCtx<'_>) -> u32 {
        self.0.lock().unwrap().accesses += 1;
        0
    }
}

#[test]
fn mechanisms_see_every_event_and_optionally_every_access() {
    let config = json!({
        "machine": {"preset": "server-2s"},
        "tasks": [{"workload": {"kind": "zipf", "params": {"accesses": 20_000}}, "count": 3}],
        "scheduler": {"kind": "forced", "params": {"every": "5000 instr", "quantum": "2000 instr"}},
    });
    let plain = run(config.clone());
    for per_access in [false, true] {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Recorder { per_access, ..Default::default() }));
        let mut engine = Engine::new(valid(config.clone()), None).unwrap();
        engine.add_mechanism(Box::new(Shared(seen.clone()))).unwrap();
        let r = engine.run(&mut |_| Ok(())).unwrap();
        let seen = seen.lock().unwrap();
        let logged: Vec<(u64, &str)> = r.events.iter().map(|e| (e.time, e.event.name())).collect();
        assert_eq!(seen.events, logged);
        assert_eq!(seen.accesses, if per_access { r.summary.accesses } else { 0 });
        let overhead: u64 = r.tasks.iter().map(|t| t.overhead_cycles).sum();
        assert_eq!(overhead, 7 * r.summary.switches, "the mechanism's cost is charged");
        let dtlb_flushed: u64 = r.tlbs.iter().map(|t| t.stats.flushed).sum();
        assert!(dtlb_flushed > 0 || r.summary.migrations == 0);
        assert!(r.summary.migrations > 0 && plain.summary.migrations == r.summary.migrations);
    }
}

fn issues(config: Value) -> Vec<(String, &'static str)> {
    match config::from_value(config) {
        Err(Error::Config(found)) => found.into_iter().map(|i| (i.loc, i.code)).collect(),
        other => panic!("expected config errors, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn impossible_setups_name_the_key() {
    let w = json!({"kind": "stream"});
    let two = json!({"sockets": 2, "cores_per_socket": 2});
    let cases = [
        (json!({"tasks": []}), "tasks", "out_of_range"),
        (json!({"tasks": [{"workload": w, "count": 0}]}), "tasks[0].count", "out_of_range"),
        (json!({"tasks": [{"workload": w, "asid": 4096}]}), "tasks[0].asid", "out_of_range"),
        (
            json!({"machine": two, "tasks": [{"workload": w}, {"workload": w, "affinity": [1, 9]}]}),
            "tasks[1].affinity[1]",
            "out_of_range",
        ),
        (json!({"tasks": [{"workload": w, "affinity": []}]}), "tasks[0].affinity", "out_of_range"),
        (json!({"tasks": [{"workload": {"kind": "zipff"}}]}), "tasks[0].workload.kind", "unknown_kind"),
        (json!({"tasks": [{"workload": w, "prio": 3}]}), "tasks[0].prio", "unknown_field"),
        (json!({"workload": w, "tasks": [{"workload": w}]}), "tasks", "invalid_value"),
        (
            json!({"workload": w, "scheduler": {"kind": "round-robin", "params": {"quantum": 0}}}),
            "scheduler.params.quantum",
            "out_of_range",
        ),
        (
            json!({"workload": w, "scheduler": {"kind": "round-robin", "params": {"quantum": "2 fortnights"}}}),
            "scheduler.params.quantum",
            "invalid_value",
        ),
        (json!({"workload": w, "scheduler": {"kind": "fifo"}}), "scheduler.kind", "unknown_kind"),
        (json!({"workload": w, "scheduler": {"kind": "forced"}}), "scheduler.params.destination", "out_of_range"),
        (json!({"workload": w, "scheduler": {"kind": "hypervisor"}}), "workload.vm", "missing_field"),
        (json!({"tasks": [{"workload": w}], "scheduler": {"kind": "hypervisor"}}), "tasks[0].vm", "missing_field"),
        (
            json!({"workload": w, "scheduler": {"kind": "balance", "params": {"period": "1M instr"}}}),
            "scheduler.params.period",
            "invalid_value",
        ),
        (
            json!({"workload": w, "scheduler": {"kind": "balance", "params": {"imbalance": 0}}}),
            "scheduler.params.imbalance",
            "out_of_range",
        ),
        (json!({"workload": w, "stats": {"interval": "2ms"}}), "stats.interval", "invalid_value"),
        (json!({"workload": w, "stats": {"window": 0}}), "stats.window", "invalid_value"),
    ];
    for (config, loc, code) in cases {
        let found = issues(config.clone());
        assert!(found.contains(&(loc.to_string(), code)), "{config}: {found:?}");
    }
}

/// Core 0 serves the task's first slice, then never picks anything again;
/// core 1 takes whatever waits in core 0's queue (or its own) once core 0
/// has served.
struct HandOff {
    served: bool,
}

impl Scheduler for HandOff {
    fn place(&mut self, _: &SchedCtx, _: TaskId) -> Result<CoreId> {
        Ok(CoreId(0))
    }

    fn pick(&mut self, ctx: &SchedCtx, core: CoreId) -> Result<Option<TaskId>> {
        let head = ctx.queues[0].front().copied();
        Ok(match (core.0, self.served) {
            (0, false) => {
                self.served = head.is_some();
                head
            }
            (1, true) => head.or(ctx.queues[1].front().copied()),
            _ => None,
        })
    }

    fn quantum(&mut self, _: &SchedCtx, _: TaskId, _: CoreId) -> Result<Slice> {
        Ok(Slice::of(Budget::Instructions(1000)))
    }
}

#[test]
fn a_task_its_core_will_not_pick_again_wakes_an_idle_core() {
    // Core 1 sits idle from the start; when core 0 declines the task after
    // its first slice, core 1 must look at the queues again and take it.
    let config = valid(json!({"machine": flat_machine(1, 2), "tasks": tasks(&[3000])}));
    let r = Engine::with_scheduler(config, None, Some(Box::new(HandOff { served: false })))
        .and_then(|mut e| e.run(&mut |_| Ok(())))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.tasks[0].stats.instructions, 3000, "the task ran to its end");
    let migrations: Vec<_> = r.events.iter().filter(|e| matches!(e.event, Event::Migrate { .. })).collect();
    assert_eq!(migrations.len(), 1);
    assert_eq!(r.cores[1].counts.instructions, 2000, "core 1 ran the rest");
}

#[test]
fn the_python_kind_needs_an_object_from_python() {
    let v =
        valid(json!({"workload": {"kind": "stream"}, "scheduler": {"kind": "python", "params": {"class": "Mine"}}}));
    let Err(Error::Config(found)) = Engine::new(v, None) else { panic!("expected a config error") };
    assert_eq!((found[0].loc.as_str(), found[0].code), ("scheduler.kind", "python_only"));
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// Tasks (separate processes) on private caches only, with the default
    /// random frames on two NUMA nodes: each process's frames depend on its
    /// own touches only, so nothing may depend on the batch size.
    fn private(seed: u64, batch: u32, quantum: u64, tasks: u64, kind: &str) -> Results {
        let entries: Vec<Value> = (0..tasks)
            .map(|i| {
                json!({"workload": {"kind": "zipf", "params": {
                    "accesses": 3000 + 500 * i, "working_set_bytes": "256KiB", "base_addr": (i + 1) << 30,
                }}})
            })
            .collect();
        run(json!({
            "seed": seed,
            // An L2 smaller than the working sets, so that where pages land
            // in it matters.
            "machine": {
                "sockets": 2, "cores_per_socket": 2, "llc": false,
                "l2": {"size_bytes": "64KiB", "ways": 4},
            },
            "tasks": entries,
            "scheduler": {"kind": kind, "params": {"quantum": quantum}},
            "stats": {"interval": "2K instr", "window": "1K instr"},
            "run": {"batch": batch, "switch_cycles": 100},
        }))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]

        #[test]
        fn the_batch_size_changes_nothing_on_private_caches(
            seed in 1u64..1000,
            batch in 1u32..300,
            quantum in 2000u64..20_000,
            tasks in 1u64..7,
            kind in prop::sample::select(vec!["round-robin", "balance"]),
        ) {
            let reference = private(seed, 4096, quantum, tasks, kind);
            assert_same(&private(seed, batch, quantum, tasks, kind), &reference, &format!("batch {batch}"));
        }

        #[test]
        fn counts_add_up(seed in 1u64..1000, quantum in 2000u64..20_000, tasks in 1u64..7) {
            let r = private(seed, 512, quantum, tasks, "balance");
            let instructions: u64 = r.intervals.iter().map(|i| i.counts.instructions).sum();
            prop_assert_eq!(instructions, r.summary.instructions);
            let core_misses: u64 = r.cores.iter().map(|c| c.counts.misses.0.iter().sum::<u64>()).sum();
            let task_misses: u64 =
                r.tasks.iter().map(|t| t.stats.levels.iter().map(|l| l.total_misses()).sum::<u64>()).sum();
            prop_assert_eq!(core_misses, task_misses);
            let ins = r.events.iter().filter(|e| e.event == Event::SwitchIn).count() as u64;
            let outs = r.events.iter().filter(|e| e.event == Event::SwitchOut).count() as u64;
            prop_assert_eq!(ins, r.summary.switches);
            prop_assert_eq!(outs, ins, "every task that starts also stops");
            prop_assert!(r.windows.iter().all(|w| !w.complete || w.counts.instructions >= 1000));
        }

        #[test]
        fn miss_causes_are_disjoint_and_a_task_alone_has_none_induced(
            seed in 1u64..1000,
            tasks in 1u64..6,
            kind in prop::sample::select(vec!["round-robin", "balance", "forced"]),
        ) {
            let entries: Vec<Value> = (0..tasks)
                .map(|i| json!({"workload": {"kind": "zipf", "params": {
                    "accesses": 4000, "working_set_bytes": "96KiB", "base_addr": (i + 1) << 30,
                }}}))
                .collect();
            let params = match kind {
                "forced" => json!({"every": "3K instr", "quantum": "2K instr"}),
                _ => json!({"quantum": "2K instr"}),
            };
            let r = run(json!({
                "seed": seed,
                "machine": {
                    "sockets": 2, "cores_per_socket": 2,
                    "l2": {"size_bytes": "64KiB", "ways": 8}, "llc": {"size_bytes": "128KiB", "ways": 8},
                    "attribution": ["l1d", "l2", "llc", "tlb.l1", "tlb.l2"],
                },
                "tasks": entries,
                "scheduler": {"kind": kind, "params": params},
            }));
            for t in &r.tasks {
                for c in &t.stats.levels {
                    for k in 0..3 {
                        let induced = c.induced.switch[k] + c.induced.migration[k] + c.induced.sharing[k];
                        prop_assert!(c.compulsory[k] + induced <= c.misses[k]);
                    }
                }
            }
            // Alone on the machine a task is switched out and back in by
            // round-robin and balancing and finds all its lines: nothing is
            // induced. (Forced moves leave its lines behind.)
            if tasks == 1 && kind != "forced" {
                let t = &r.tasks[0];
                prop_assert!(t.stats.levels.iter().all(|c| c.induced.total() == 0));
                prop_assert_eq!(t.stats.tlb.l1_induced.total() + t.stats.tlb.l2_induced.total(), 0);
            }
        }
    }
}

#[test]
fn bound_copies_get_a_core_each_spread_over_the_sockets_or_packed() {
    let affinity = |bind: &str, count: u32| -> Vec<u32> {
        let c = valid(
            json!({"machine": flat_machine(6, 4), "tasks": [{"count": count, "bind": bind, "workload": stream(10, 0)}]}),
        );
        c.tasks
            .iter()
            .map(|t| {
                t.info
                    .affinity
                    .as_ref()
                    .map(|a| {
                        assert_eq!(a.len(), 1);
                        a[0].0
                    })
                    .unwrap()
            })
            .collect()
    };
    // The study's 12 threads on 6 boards of 4: two per board, round-robin.
    assert_eq!(affinity("spread", 12), [0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21]);
    assert_eq!(affinity("packed", 5), [0, 1, 2, 3, 4]);
    // And they run there.
    let r = run(
        json!({"machine": flat_machine(2, 2), "tasks": [{"count": 2, "bind": "spread", "workload": stream(1000, 0)}]}),
    );
    let busy: Vec<u32> = r.cores.iter().filter(|c| c.cycles > c.idle_cycles).map(|c| c.core).collect();
    assert_eq!(busy, [0, 2]);
}

#[test]
fn binding_more_copies_than_cores_or_with_an_affinity_is_a_config_error() {
    let issues =
        |task: Value| match config::from_json_str(&json!({"machine": flat_machine(1, 2), "tasks": [task]}).to_string())
        {
            Err(cachesched_core::Error::Config(i)) => i.into_iter().map(|i| (i.loc, i.message)).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
    let found = issues(json!({"count": 3, "bind": "spread", "workload": stream(10, 0)}));
    assert_eq!(found[0].0, "tasks[0].bind");
    assert!(found[0].1.contains("3 copies bound one to a core, but the machine has 2 core(s)"), "{found:?}");
    let found = issues(json!({"count": 2, "bind": "packed", "affinity": [0], "workload": stream(10, 0)}));
    assert_eq!(found[0], ("tasks[0].bind".to_string(), "give bind or affinity, not both".to_string()));
}
