//! Barriers between the threads of a kernel: every thread meets the same
//! barriers, in the places the algorithm's parallel loops end; a phase
//! ends when its slowest thread ends, so a slowed or descheduled thread
//! holds the others, and threads that end together end at one time.

use cachesched_core::config::{self, ValidConfig};
use cachesched_core::engine::simulate_json;
use cachesched_core::results::Results;
use cachesched_core::trace::WorkloadCtx;
use cachesched_core::types::Access;
use serde_json::{json, Value};

fn valid(config: Value) -> ValidConfig {
    config::from_json_str(&config.to_string()).unwrap()
}

fn run(config: Value) -> Results {
    simulate_json(&config.to_string(), None).unwrap()
}

/// Each thread's stream as (accesses, barriers), to the end.
fn streams(kernel: &str, params: Value, threads: u32) -> Vec<(u64, u64)> {
    let mut params = params;
    params["threads"] = json!(threads);
    let c = valid(json!({
        "machine": {"sockets": 1, "cores_per_socket": threads},
        "tasks": [{"count": threads, "asid": 1, "workload": {"kind": kernel, "params": params}}],
    }));
    c.tasks
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let ctx = WorkloadCtx {
                seed: 1,
                component: format!("task{i}"),
                loc: spec.workload_loc.clone(),
                base_dir: None,
                thread: spec.thread,
            };
            let mut w = spec.workload.build(&ctx).unwrap();
            assert_eq!(w.synchronizes(), threads > 1);
            let (mut accesses, mut barriers) = (0u64, 0u64);
            let mut buf = vec![Access::default(); 1000];
            loop {
                let n = w.fill_vec(&mut buf).unwrap();
                barriers += w.barriers();
                if n == 0 && w.barriers() == 0 {
                    break;
                }
                accesses += n as u64;
            }
            (accesses, barriers)
        })
        .collect()
}

#[test]
fn every_thread_meets_the_barriers_of_its_kernels_parallel_loops() {
    let big = 1u64 << 40;
    // Two iterations each; barriers per iteration from the algorithms' loops.
    let cases = [
        // CG: spmv, dot, update, rho, direction.
        ("cg", json!({"rows": 64, "row_nonzeros": 4, "iterations": 2, "accesses": big}), 2 * 5),
        // EP: the batch loop, then the reduction.
        ("ep", json!({"pairs": 4096, "batch": 256, "iterations": 2, "accesses": big}), 2 * 2),
        // IS: key generation once; per iteration the counting loop, the
        // scatter loop and the ranking loop.
        ("is", json!({"keys": 4096, "max_key": 1024, "buckets": 16, "iterations": 2, "accesses": big}), 1 + 2 * 3),
        // FT: the evolution and the three passes.
        ("ft", json!({"nx": 8, "ny": 8, "nz": 8, "iterations": 2, "accesses": big}), 2 * 4),
        // BT: compute_rhs, the x, y and z solves, add.
        ("bt", json!({"grid": 4, "iterations": 2, "accesses": big}), 2 * 5),
        // SP: BT's passes and the four pointwise transforms between them.
        ("sp", json!({"grid": 4, "iterations": 2, "accesses": big}), 2 * 9),
        // LU: rhs, a barrier per plane of each sweep (4 planes), the update.
        ("lu", json!({"grid": 4, "iterations": 2, "accesses": big}), 2 * (1 + 4 + 4 + 1)),
    ];
    for (kernel, params, expected) in cases {
        let threads = streams(kernel, params.clone(), 3);
        for (t, &(accesses, barriers)) in threads.iter().enumerate() {
            assert!(accesses > 0, "{kernel} thread {t}");
            assert_eq!(barriers, expected, "{kernel} thread {t}");
        }
        // One thread alone meets none.
        let alone = streams(kernel, params, 1);
        assert!(alone[0].0 > 0 && alone[0].1 == 0, "{kernel}");
    }
    // MG: one barrier per operator of the V-cycle, every thread alike.
    let mg = streams("mg", json!({"grid": 16, "iterations": 1, "accesses": big}), 3);
    assert!(mg.iter().all(|&(_, b)| b == mg[0].1 && b > 4), "{mg:?}");
    // A parallel initialisation ends with one more.
    let init =
        streams("ep", json!({"pairs": 4096, "batch": 256, "iterations": 1, "accesses": big, "init": "parallel"}), 2);
    assert!(init.iter().all(|&(_, b)| b == 3), "{init:?}");
}

/// Two EP threads, one per socket; pages on node 0, remote memory 10x slower.
fn ep_pair(extra: Option<Value>) -> Results {
    let mut tasks = vec![json!({"count": 2, "asid": 1, "workload": {"kind": "ep", "params": {
        "threads": 2, "pairs": 8192, "batch": 512, "iterations": 4, "accesses": 1u64 << 40}}})];
    tasks.extend(extra);
    run(json!({
        "machine": {"sockets": 2, "cores_per_socket": 1, "l2": false, "llc": false, "tlb": false,
                    "l1d": {"size_bytes": "1KiB", "ways": 2},
                    "memory": {"placement": {"bind": 0}, "latency_cycles": 20, "remote_latency_cycles": 200}},
        "tasks": tasks,
        "run": {"prefetch": false},
        "stats": {"slices": true},
    }))
}

/// (schedules, end of the last) of `task`.
fn schedules(r: &Results, task: u32) -> (usize, u64) {
    let rows: Vec<_> = r.slices.iter().filter(|s| s.task == task).collect();
    (rows.len(), rows.iter().map(|s| s.end).max().unwrap_or(0))
}

#[test]
fn a_slowed_thread_holds_the_other_at_every_barrier_and_both_end_together() {
    let r = ep_pair(None);
    let (fast, slow) = (&r.cores[0], &r.cores[1]);
    assert!(slow.cycles - slow.idle_cycles > fast.cycles - fast.idle_cycles, "remote memory slows thread 1");
    assert_eq!(slow.idle_cycles, 0, "the slow thread never waits");
    assert!(fast.idle_cycles > 0, "the fast thread waits at the barriers");
    // Thread 0 leaves its core at each barrier it waits at and comes back
    // when thread 1 arrives; thread 1 runs through. The last barrier ends
    // the streams: both end when the slow one does.
    let ((fast_runs, fast_end), (slow_runs, slow_end)) = (schedules(&r, 0), schedules(&r, 1));
    assert_eq!(slow_runs, 1);
    assert!(fast_runs > 4, "it waited at the barriers of 4 iterations: {fast_runs} schedules");
    assert_eq!(fast_end, slow_end);
    // Without barriers (two processes of one thread each), the fast one ends first.
    let single = |asid: u32| {
        json!({"asid": asid, "workload": {"kind": "ep", "params": {
            "pairs": 4096, "batch": 512, "iterations": 4, "accesses": 1u64 << 40}}})
    };
    let apart = run(json!({
        "machine": {"sockets": 2, "cores_per_socket": 1, "l2": false, "llc": false, "tlb": false,
                    "l1d": {"size_bytes": "1KiB", "ways": 2},
                    "memory": {"placement": {"bind": 0}, "latency_cycles": 20, "remote_latency_cycles": 200}},
        "tasks": [single(0), single(1)],
        "stats": {"slices": true},
    }));
    assert!(schedules(&apart, 0).1 < schedules(&apart, 1).1);
}

#[test]
fn a_descheduled_thread_holds_the_other() {
    // A third task shares thread 0's core (placed on the least-loaded core,
    // the lowest first): thread 0 runs half the time, and thread 1 on its
    // own core waits for it.
    let other = json!({"workload": {"kind": "stream", "params": {"accesses": 400_000, "working_set_bytes": "4KiB"}}});
    let alone = ep_pair(None);
    let shared = ep_pair(Some(other));
    assert!(shared.cores[1].idle_cycles > alone.cores[1].idle_cycles, "thread 1 waits for its descheduled twin");
    let a = &shared.tasks;
    assert_eq!(a[0].stats.instructions, alone.tasks[0].stats.instructions, "the same work");
}

#[test]
fn barriers_keep_runs_deterministic() {
    let a = serde_json::to_value(&ep_pair(None).summary).unwrap();
    let b = serde_json::to_value(&ep_pair(None).summary).unwrap();
    assert_eq!(a, b);
}

#[test]
fn threads_without_work_in_some_phases_cross_several_barriers_at_once() {
    // MG on a 16-point grid with 4 threads: the coarse grids have fewer
    // planes than threads, so threads 2 and 3 cross several barriers in
    // one fill while 0 and 1 wait at the first of them; those must go on.
    for threads in [4u32, 12] {
        let r = run(json!({
            "machine": {"preset": "standard", "sockets": 2, "cores_per_socket": 6},
            "tasks": [{"workload": {"kind": "mg", "params": {"threads": threads, "accesses": 20_000, "grid": 16}},
                       "count": threads, "asid": 1}],
        }));
        assert_eq!(r.tasks.len(), threads as usize);
        assert!(r.tasks.iter().all(|t| t.stats.accesses > 0), "{threads} threads");
    }
}
