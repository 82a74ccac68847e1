//! Shared behaviour of every registered scheduler, mechanism and prefetcher,
//! as the replacement policies have theirs (`mem/replacement/mod.rs`): each
//! builds with its defaults, refuses an unknown param at its key path, and
//! in a run of several tasks conserves the work, lets every task finish,
//! reports what it must, and gives the same results twice.

use cachesched_core::config;
use cachesched_core::engine::Engine;
use cachesched_core::error::Error;
use cachesched_core::mech::MechanismConfig;
use cachesched_core::mem::prefetch::PrefetcherConfig;
use cachesched_core::mem::replacement::ReqKind;
use cachesched_core::results::Results;
use cachesched_core::sched::SchedulerConfig;
use serde_json::{json, Value};

/// Accesses of each task of the runs below.
const ACCESSES: u64 = 30_000;

/// Four tasks on a 2-socket machine of 2 cores each (what every built-in
/// policy can schedule: `forced` needs two sockets, `hypervisor` a VM per
/// task), each a loop body of array streams (strides for the prefetchers)
/// and Zipf heaps that miss in the L1 and the L2.
fn config(extra: Value) -> Value {
    let mut doc = json!({
        "machine": {"preset": "server-2s", "cores_per_socket": 2,
                    "l2": {"replacement": {"kind": "lru"}}},
        "tasks": [{"count": 4, "vm": 0, "workload": {"kind": "loop", "params": {"accesses": ACCESSES}}}],
        "run": {"prefetch": false},
    });
    merge(&mut doc, extra);
    doc
}

fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                merge(b.entry(k).or_insert(Value::Null), v);
            }
        }
        (b, o) => *b = o,
    }
}

fn run(doc: &Value) -> Results {
    let valid = config::from_value(doc.clone()).unwrap_or_else(|e| panic!("{doc}: {e}"));
    Engine::new(valid, None).and_then(|mut e| e.run(&mut |_| Ok(()))).unwrap_or_else(|e| panic!("{doc}: {e}"))
}

/// The results without what differs between two runs (host timings).
fn comparable(r: &Results) -> Value {
    let mut v = serde_json::to_value(r).unwrap();
    v["host"] = Value::Null;
    v
}

/// Every task ran all its accesses, and two runs agree.
fn check_run(doc: &Value, what: &str) -> Results {
    let r = run(doc);
    assert_eq!(r.tasks.len(), 4, "{what}");
    for t in &r.tasks {
        assert_eq!(t.stats.accesses, ACCESSES, "{what}: task {} did not run all its accesses", t.task);
    }
    assert_eq!(r.summary.accesses, 4 * ACCESSES, "{what}");
    assert_eq!(comparable(&r), comparable(&run(doc)), "{what}: two runs differ");
    r
}

/// An unknown param of the plug-in at `loc` is refused there.
fn refuses_unknown(doc: Value, loc: &str) {
    match config::from_value(doc) {
        Err(Error::Config(issues)) => {
            assert!(
                issues.iter().any(|i| i.loc == format!("{loc}.params.bogus") && i.code == "unknown_field"),
                "{loc}: {issues:?}"
            )
        }
        other => panic!("{loc}: expected an unknown-field error, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn every_scheduler_schedules_every_task_to_its_end() {
    // `python` needs an object from Python (tests/test_scheduling.py).
    let names: Vec<&str> = SchedulerConfig::NAMES.iter().copied().filter(|n| *n != "python").collect();
    assert!(names.len() >= 6, "{names:?}");
    for name in names {
        let scheduler = json!({"kind": name});
        let r = check_run(&config(json!({"scheduler": scheduler})), name);
        assert!(r.summary.switches >= 4, "{name}: every task was switched in");
        refuses_unknown(config(json!({"scheduler": {"kind": name, "params": {"bogus": 1}}})), "scheduler");
    }
    // Policies chosen by a param.
    let variants = [
        json!({"kind": "hypervisor", "params": {"policy": "credit", "tick": "10us"}}),
        json!({"kind": "balance", "params": {"cache_aware": true, "period": "10us"}}),
    ];
    for scheduler in variants {
        let r = check_run(&config(json!({"scheduler": scheduler})), &scheduler.to_string());
        assert!(r.summary.switches >= 4, "{scheduler}: every task was switched in");
    }
}

#[test]
fn every_mechanism_runs_beside_migrations_and_reports_its_counters() {
    assert!(MechanismConfig::NAMES.len() >= 6);
    for name in MechanismConfig::NAMES {
        // Forced migrations across the sockets give every mechanism its events.
        let mut doc = config(json!({
            "scheduler": {"kind": "forced", "params": {"every": "20K instr"}},
            "mechanisms": [{"kind": name}],
        }));
        if *name == "page-migration" {
            // It reads the interconnect sampler, and acts every interval.
            doc["machine"]["sampler"] = json!({"mode": "exhaustive"});
            doc["mechanisms"][0]["params"] = json!({"interval": "20us"});
        }
        let r = check_run(&doc, name);
        assert!(r.summary.migrations > 0, "{name}: the run migrated");
        assert_eq!(r.mechanisms.len(), 1, "{name}");
        assert_eq!(r.mechanisms[0].kind, *name);
        assert!(!r.mechanisms[0].stats.is_empty(), "{name} reports counters");
        let mut bad = doc.clone();
        bad["mechanisms"][0]["params"] = json!({"bogus": 1});
        refuses_unknown(bad, "mechanisms[0]");
    }
}

#[test]
fn every_prefetcher_prefetches_without_changing_the_demand_stream() {
    assert!(PrefetcherConfig::NAMES.len() >= 3);
    let plain = run(&config(json!({})));
    for name in PrefetcherConfig::NAMES {
        for level in ["l1d", "l2", "llc"] {
            let what = format!("{name} on {level}");
            let doc = config(json!({"machine": {level: {"prefetcher": {"kind": name}}}}));
            let r = check_run(&doc, &what);
            // Prefetching moves misses, never the references the tasks make.
            for (a, b) in r.tasks.iter().zip(&plain.tasks) {
                assert_eq!(a.stats.instructions, b.stats.instructions, "{what}");
            }
            let at_level: Vec<_> = r.caches.iter().filter(|c| c.path.ends_with(level)).collect();
            // Every prefetched line is counted once, used or unused, when it
            // is first hit or leaves.
            let prefetched: u64 = at_level
                .iter()
                .map(|c| c.stats.hits[ReqKind::Prefetch as usize] + c.stats.misses[ReqKind::Prefetch as usize])
                .sum();
            let settled: u64 = at_level.iter().map(|c| c.stats.prefetch_useful + c.stats.prefetch_unused).sum();
            assert!(prefetched > 0, "{what}: it prefetched");
            assert!(settled > 0 && settled <= prefetched, "{what}: {settled} settled of {prefetched} prefetches");
            let loc = format!("machine.{level}.prefetcher");
            refuses_unknown(
                config(json!({"machine": {level: {"prefetcher": {"kind": name, "params": {"bogus": 1}}}}})),
                &loc,
            );
        }
    }
}
