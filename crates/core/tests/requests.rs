//! Server tasks (`[[tasks]] requests`) and background loads, checked
//! against schedules worked out by hand on a machine where every reference
//! costs one cycle.

use cachesched_core::config;
use cachesched_core::engine::Engine;
use cachesched_core::error::Error;
use cachesched_core::results::{RequestRow, Results};
use serde_json::{json, Value};

fn run(config: Value) -> Results {
    let valid = config::from_value(config).unwrap_or_else(|e| panic!("{e}"));
    Engine::new(valid, None).and_then(|mut e| e.run(&mut |_| Ok(()))).unwrap_or_else(|e| panic!("{e}"))
}

/// One core where every reference costs its one instruction's cycle.
fn flat(cores: u32) -> Value {
    json!({
        "sockets": 1, "cores_per_socket": cores,
        "l1d": {"latency_cycles": 0}, "l2": false, "llc": false, "tlb": false,
        "memory": {"latency_cycles": 0},
    })
}

/// `n` references of one instruction each.
fn stream(n: u64, base: u64) -> Value {
    json!({"kind": "stream", "params": {
        "accesses": n, "instructions_per_access": 1, "store_fraction": 0,
        "base_addr": base, "working_set_bytes": "64KiB", "access_bytes": 64,
    }})
}

fn server(work: u64, count: u64, interval: u64, arrivals: &str) -> Value {
    json!({"name": "server", "workload": stream(work, 1 << 32),
           "requests": {"count": count, "interval": interval, "arrivals": arrivals}})
}

fn config(tasks: Vec<Value>, quantum: &str, batch: u32) -> Value {
    json!({"machine": flat(1), "tasks": tasks,
           "scheduler": {"kind": "round-robin", "params": {"quantum": quantum}},
           "run": {"switch_cycles": 0, "batch": batch}})
}

fn rows(r: &Results) -> Vec<(u64, u64, u64)> {
    r.requests.iter().map(|q: &RequestRow| (q.arrival, q.start, q.end)).collect()
}

#[test]
fn a_server_alone_answers_each_request_in_its_work_time() {
    let r = run(config(vec![server(1000, 10, 5000, "fixed")], "1M instr", 256));
    let expected: Vec<_> = (0..10).map(|k| (5000 * k, 5000 * k, 5000 * k + 1000)).collect();
    assert_eq!(rows(&r), expected);
    assert!(r.requests.iter().enumerate().all(|(k, q)| q.request == k as u64 && q.task == 0));
    assert_eq!(r.summary.cycles, 46_000, "the run ends with the last request");
    assert_eq!(r.tasks[0].stats.instructions, 10_000, "each request runs the workload once");
}

#[test]
fn requests_that_come_faster_than_the_work_queue() {
    let r = run(config(vec![server(1000, 8, 600, "fixed")], "1M instr", 100));
    // Each starts when the one before it ends.
    let expected: Vec<_> = (0..8).map(|k| (600 * k, 1000 * k, 1000 * (k + 1))).collect();
    assert_eq!(rows(&r), expected);
}

/// The schedule by hand: on one core under round-robin, a hog runs whole
/// quanta of `q` cycles; a request that arrives while it runs starts when
/// its quantum ends, and runs `work` cycles.
fn beside_a_hog(work: u64, count: u64, interval: u64, q: u64) -> Vec<(u64, u64, u64)> {
    let (mut t, mut out) = (0, Vec::new());
    for k in 0..count {
        let arrival = k * interval;
        while t < arrival {
            t += q;
        }
        out.push((arrival, t, t + work));
        t += work;
    }
    out
}

#[test]
fn a_server_beside_a_background_load_waits_for_its_quantum_to_end() {
    // The load's 5,000 references are replayed as long as the server runs.
    let tasks = vec![server(100, 40, 3333, "fixed"), json!({"workload": stream(5000, 2 << 32), "background": true})];
    for batch in [64, 4096] {
        let r = run(config(tasks.clone(), "2000 instr", batch));
        let expected = beside_a_hog(100, 40, 3333, 2000);
        assert_eq!(rows(&r), expected, "batch {batch}");
        let end = expected.last().unwrap().2;
        assert_eq!(r.summary.cycles, end, "the background load does not outlast the server");
        assert_eq!(r.tasks[1].stats.instructions, end - 40 * 100, "it ran whenever the server did not");
    }
}

#[test]
fn poisson_arrivals_have_the_mean_gap_and_the_spread_of_an_exponential() {
    let r = run(config(vec![server(1, 4000, 10_000, "poisson")], "1M instr", 256));
    let arrivals: Vec<f64> = r.requests.iter().map(|q| q.arrival as f64).collect();
    let gaps: Vec<f64> = arrivals.windows(2).map(|w| w[1] - w[0]).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
    assert!((mean / 10_000.0 - 1.0).abs() < 0.05, "mean gap {mean}");
    assert!((sd / mean - 1.0).abs() < 0.06, "coefficient of variation {}", sd / mean);
    assert!(arrivals[0] > 0.0, "the first arrives after a gap");
    // An idle server starts each request when it arrives.
    assert!(r.requests.iter().all(|q| q.start == q.arrival && q.end == q.start + 1));
    let again = run(config(vec![server(1, 4000, 10_000, "poisson")], "1M instr", 17));
    assert_eq!(r.requests, again.requests, "the same seed draws the same arrivals");
}

#[test]
fn a_request_cut_by_its_task_limit_leaves_no_row() {
    let mut task = server(1000, 10, 5000, "fixed");
    task["max_accesses"] = json!(2500);
    let r = run(config(vec![task], "1M instr", 256));
    assert_eq!(rows(&r), vec![(0, 0, 1000), (5000, 5000, 6000)]);
}

fn issues(config: Value) -> Vec<(String, &'static str)> {
    match config::from_value(config) {
        Err(Error::Config(issues)) => issues.iter().map(|i| (i.loc.clone(), i.code)).collect(),
        Err(e) => panic!("expected config issues, got {e}"),
        Ok(_) => panic!("the config was accepted"),
    }
}

#[test]
fn bad_requests_name_their_key() {
    let with =
        |requests: Value| config(vec![json!({"workload": stream(10, 1 << 32), "requests": requests})], "1M instr", 64);
    let cases = [
        (with(json!({"count": 0, "interval": "1ms"})), "tasks[0].requests.count", "out_of_range"),
        (with(json!({"count": 5, "interval": "0ms"})), "tasks[0].requests.interval", "out_of_range"),
        (with(json!({"count": 5, "interval": "5 instr"})), "tasks[0].requests.interval", "invalid_value"),
    ];
    for (config, key, code) in cases {
        assert_eq!(issues(config), vec![(key.to_string(), code)]);
    }
    let unknown = issues(with(json!({"count": 5, "interval": 10, "arrivals": "bursty"})));
    assert!(unknown[0].0.starts_with("tasks[0].requests"), "{unknown:?}");
    let both = json!({"workload": stream(10, 0), "requests": {"count": 1, "interval": 10}, "background": true});
    let plain = json!({"workload": stream(10, 1 << 32)});
    let both = issues(config(vec![both, plain], "1M instr", 64));
    assert_eq!(both, vec![("tasks[0].background".to_string(), "invalid_value")]);
    let only = json!({"workload": stream(10, 0), "background": true});
    assert_eq!(issues(config(vec![only], "1M instr", 64)), vec![("tasks".to_string(), "invalid_value")]);
}
