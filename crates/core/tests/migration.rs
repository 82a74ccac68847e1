//! The migration study's mechanisms (`cache-flush`, `l2-restore`,
//! `migration-prefetch`) on constructed runs: a restore of the whole L2 is
//! the run whose L2 never left (MI-MRR of the full selection is 100%), a
//! partial restore lies between, and the prefetcher's transfers follow the
//! spec's rules (nothing on a local migration, messages of 16 tags).

use cachesched_core::config;
use cachesched_core::counters::Level;
use cachesched_core::engine::Engine;
use cachesched_core::results::Results;
use serde_json::{json, Value};

fn run(config: Value) -> Results {
    let valid = config::from_value(config).unwrap_or_else(|e| panic!("{e}"));
    Engine::new(valid, None).and_then(|mut e| e.run(&mut |_| Ok(()))).unwrap_or_else(|e| panic!("{e}"))
}

/// 32 KiB, 8-way (64 sets): the "L2" of these runs, private or shared.
fn l2() -> Value {
    json!({"size_bytes": "32KiB", "ways": 8, "latency_cycles": 10})
}

/// One task of loads over a Zipf working set larger than the L2, forced to
/// migrate every 20k instructions between `sockets` x `cores` cores, on an
/// L1D + `levels` machine without TLBs, with `mechanisms`.
fn migrating(levels: Value, sockets: u32, cores: u32, destination: &str, timing: &str, mechanisms: Value) -> Results {
    let mut machine = json!({
        "preset": "teaching", "sockets": sockets, "cores_per_socket": cores, "tlb": false,
        "l1d": {"size_bytes": "2KiB", "ways": 2, "latency_cycles": 1}, "l2": false, "llc": false,
    });
    for (k, v) in levels.as_object().unwrap() {
        machine[k] = v.clone();
    }
    run(json!({
        "seed": 5,
        "machine": machine,
        "tasks": [{"workload": {"kind": "zipf", "params": {
            "accesses": 60_000, "working_set_bytes": "96KiB", "exponent": 0.9, "store_fraction": 0.0}}}],
        "scheduler": {"kind": "forced", "params": {"every": "20000 instr", "destination": destination, "timing": timing}},
        "mechanisms": mechanisms,
    }))
}

fn misses(r: &Results, level: Level) -> u64 {
    r.tasks[0].stats.levels[level as usize].misses.iter().sum()
}

fn counter(r: &Results, i: usize, name: &str) -> u64 {
    r.mechanisms[i].stats.iter().find(|(k, _)| *k == name).unwrap_or_else(|| panic!("no counter {name}")).1
}

fn migrations(r: &Results) -> usize {
    r.events.iter().filter(|e| e.event.name() == "migrate").count()
}

/// `migrating` with a private L2, between two cores of one socket
/// (`local`) or of two sockets (`remote`), live.
fn on_l2(destination: &str, timing: &str, mechanisms: Value) -> Results {
    let (sockets, cores) = if destination == "local" { (1, 2) } else { (2, 1) };
    migrating(json!({"l2": l2()}), sockets, cores, destination, timing, mechanisms)
}

/// The baseline: the destination's L1 and L2 flushed at every migration.
fn flushed(destination: &str) -> Results {
    on_l2(destination, "live", json!([{"kind": "cache-flush", "params": {"on": "migrate"}}]))
}

fn restored(select: Value) -> Results {
    let mechanisms = json!([
        {"kind": "cache-flush", "params": {"on": "migrate"}},
        {"kind": "l2-restore", "params": {"select": select}},
    ]);
    on_l2("local", "live", mechanisms)
}

#[test]
fn restoring_the_whole_l2_is_the_run_whose_l2_never_left() {
    // The reference: the same cache shared by both cores (an LLC), which a
    // migration does not lose; only the L1 is flushed.
    let kept = migrating(
        json!({"llc": l2()}),
        1,
        2,
        "local",
        "live",
        json!([{"kind": "cache-flush", "params": {"on": "migrate", "l2": false}}]),
    );
    let all = restored(json!({"kind": "all"}));
    let flushed = flushed("local");
    assert!(migrations(&all) >= 2);
    assert_eq!(migrations(&all), migrations(&flushed));
    assert_eq!(misses(&all, Level::L2), misses(&kept, Level::Llc), "MI-MRR of the full L2 is 100%");
    assert_eq!(misses(&all, Level::L1d), misses(&kept, Level::L1d));
    assert!(misses(&flushed, Level::L2) > misses(&all, Level::L2) + 100);
    // Every selected line was placed in the flushed destination (the last
    // switch-out, at the end of the run, is never restored).
    let restores = counter(&all, 1, "restores");
    assert_eq!(counter(&all, 1, "snapshots"), restores + 1);
    assert_eq!(counter(&all, 1, "installed"), 512 * restores);
}

#[test]
fn local_mru_restores_one_line_per_set_and_recovers_part_of_the_misses() {
    let one = restored(json!({"kind": "local-mru", "n": 1}));
    let all = restored(json!({"kind": "all"}));
    let flushed = flushed("local");
    let restores = counter(&one, 1, "restores");
    assert_eq!(restores as usize, migrations(&one));
    // The working set fills every one of the 64 sets.
    assert_eq!(counter(&one, 1, "selected"), 64 * counter(&one, 1, "snapshots"));
    assert_eq!(counter(&one, 1, "installed"), 64 * restores);
    let (m_one, m_all, m_flush) = (misses(&one, Level::L2), misses(&all, Level::L2), misses(&flushed, Level::L2));
    assert!(m_all < m_one && m_one < m_flush, "{m_all} < {m_one} < {m_flush}");
    // The L2 saw every placed line used or not, and some used.
    let l2 = one.caches.iter().filter(|c| c.level == Level::L2);
    let (placed, useful): (u64, u64) =
        l2.map(|c| (c.stats.migrated_in, c.stats.migrated_useful)).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    assert_eq!(placed, 64 * restores);
    assert!(useful > 0 && useful <= placed);
}

fn prefetching(destination: &str, timing: &str, params: Value) -> Results {
    let mechanisms = json!([
        {"kind": "cache-flush", "params": {"on": "migrate"}},
        {"kind": "migration-prefetch", "params": params},
    ]);
    on_l2(destination, timing, mechanisms)
}

#[test]
fn a_local_migration_sends_nothing() {
    let r = prefetching("local", "live", json!({}));
    assert_eq!(counter(&r, 1, "local_skipped") as usize, migrations(&r));
    assert_eq!((counter(&r, 1, "tags"), counter(&r, 1, "messages")), (0, 0));
    assert!(r.caches.iter().all(|c| c.stats.migrated_in == 0));
}

#[test]
fn live_migrations_send_the_selection_in_messages_of_16_tags() {
    let r = prefetching("remote", "live", json!({}));
    let n = migrations(&r) as u64;
    assert_eq!(counter(&r, 1, "live_transfers"), n);
    // Local MRU-1 of a full 64-set L2: 64 tags, 4 messages, per migration.
    assert_eq!((counter(&r, 1, "tags"), counter(&r, 1, "messages")), (64 * n, 4 * n));
    let all = prefetching("remote", "live", json!({"select": {"kind": "all"}, "tags_per_message": 10}));
    assert_eq!((counter(&all, 1, "tags"), counter(&all, 1, "messages")), (512 * n, 52 * n));
    // Every delivered tag was prefetched, dropped as present, or still waiting.
    let l2s: Vec<_> = r.caches.iter().filter(|c| c.level == Level::L2).collect();
    let handled: u64 = l2s.iter().map(|c| c.stats.migrated_in + c.stats.migrated_dropped).sum();
    assert!(handled <= 64 * n && handled >= 64 * (n - 1), "{handled}");
    let llc_or_memory_reads: u64 = r.memory.iter().map(|m| m.reads).sum();
    let flushed = flushed("remote");
    assert!(misses(&r, Level::L2) < misses(&flushed, Level::L2));
    assert!(llc_or_memory_reads > misses(&r, Level::L2), "prefetches read memory too");
}

#[test]
fn prefetches_issue_no_faster_than_the_rate_allows() {
    // At one prefetch per 10^9 cycles nothing issues in the whole run.
    let slow = prefetching("remote", "live", json!({"prefetches_per_cycle": 1e-9}));
    let flushed = flushed("remote");
    assert!(slow.caches.iter().all(|c| c.stats.migrated_in == 0));
    assert_eq!(misses(&slow, Level::L2), misses(&flushed, Level::L2));
    // Instant prefetching approaches the idealized restore of the same lines.
    let fast = prefetching("remote", "live", json!({"prefetches_per_cycle": 1e6}));
    let ideal = {
        let mechanisms = json!([
            {"kind": "cache-flush", "params": {"on": "migrate"}},
            {"kind": "l2-restore", "params": {}},
        ]);
        on_l2("remote", "live", mechanisms)
    };
    let gap = misses(&fast, Level::L2).abs_diff(misses(&ideal, Level::L2));
    assert!(gap <= migrations(&fast) as u64, "one reference per migration runs before the first prefetch: {gap}");
}

#[test]
fn delayed_migrations_go_through_the_directory() {
    let r = prefetching("remote", "delayed", json!({}));
    let n = migrations(&r) as u64;
    assert!(n >= 2);
    assert_eq!(counter(&r, 1, "delayed_transfers"), n);
    // Stored (4 messages), requested (1), sent (4).
    assert_eq!((counter(&r, 1, "tags"), counter(&r, 1, "messages")), (64 * n, 9 * n));
}

#[test]
fn bad_params_name_their_key() {
    let bad = |mechanism: Value, machine_l2: Value| {
        let config = json!({
            "machine": {"preset": "teaching", "l2": machine_l2},
            "workload": {"kind": "stream", "params": {"accesses": 10}},
            "mechanisms": [mechanism],
        });
        config::from_value(config).and_then(|v| Engine::new(v, None)).err().map(|e| e.to_string()).unwrap_or_default()
    };
    let e = bad(json!({"kind": "l2-restore", "params": {"select": {"kind": "regional-mru", "lines": 3}}}), l2());
    assert!(e.contains("mechanisms[0].params.select"), "{e}");
    let e = bad(json!({"kind": "migration-prefetch", "params": {"tags_per_message": 0}}), l2());
    assert!(e.contains("mechanisms[0].params.tags_per_message"), "{e}");
    let e = bad(json!({"kind": "l2-restore", "params": {"select": {"kind": "local-mru", "n": 1, "m": 2}}}), l2());
    assert!(e.contains("mechanisms[0].params"), "{e}");
    let e =
        bad(json!({"kind": "l2-restore"}), json!({"size_bytes": "32KiB", "ways": 8, "replacement": {"kind": "fifo"}}));
    assert!(e.contains("mechanisms[0].params.select") && e.contains("lru"), "{e}");
    let e = bad(json!({"kind": "l2-restore"}), json!(false));
    assert!(e.contains("mechanisms[0].kind") && e.contains("no L2"), "{e}");
}

/// Two tasks looping over 16 KiB each share one core and an LLC that holds
/// both: without an LLC flush every switch finds the LLC warm; with `llc =
/// true` each schedule misses its working set again, and the attribution
/// calls those misses switch-induced (the task's isolated shadow kept them).
#[test]
fn flushing_the_llc_at_every_switch_empties_it() {
    let with = |llc: bool| {
        run(json!({
            "machine": {"preset": "teaching", "cores_per_socket": 1, "tlb": false, "attribution": ["llc"],
                        "l1d": {"size_bytes": "2KiB", "ways": 2}, "l2": false},
            "tasks": [{"count": 2, "workload": {"kind": "stream", "params": {
                "accesses": 40_000, "working_set_bytes": "16KiB", "stride_bytes": 64}}}],
            "scheduler": {"kind": "round-robin", "params": {"quantum": 200_000}},
            "mechanisms": [{"kind": "cache-flush", "params": {"llc": llc}}],
        }))
    };
    let (kept, flushed) = (with(false), with(true));
    let lines = 16 * 1024 / 64;
    assert_eq!(misses(&kept, Level::Llc), lines, "only the first touches miss (task 0)");
    let switches = counter(&flushed, 0, "flushes");
    assert!(switches >= 10, "{switches} switch-ins");
    // Task 0 has half the switch-ins, each refetching its whole working set.
    assert!(misses(&flushed, Level::Llc) >= switches / 2 * lines, "{}", misses(&flushed, Level::Llc));
    let switch_induced: u64 =
        flushed.tasks.iter().map(|t| t.stats.levels[Level::Llc as usize].induced.switch.iter().sum::<u64>()).sum();
    assert!(switch_induced > 0);
}
