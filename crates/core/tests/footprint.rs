//! The host-memory estimate that refuses oversized configurations
//! (`config::footprint`) against what the allocator actually hands out: a
//! counting global allocator measures each structure as it is built, and
//! whole runs at their peak. The estimate must bound the measure and stay
//! within a small factor of it.
//!
//! One test function: the counters are global, so nothing else may allocate
//! while a case is measured.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};

use cachesched_core::config::{self, footprint};
use cachesched_core::engine::Engine;
use cachesched_core::mem::cache::{Cache, CacheParams};
use cachesched_core::mem::machine::Machine;
use cachesched_core::mem::replacement::ReplacementConfig;
use cachesched_core::mem::tlb::{Tlb, TlbLevelParams};
use cachesched_core::plugin::PluginConfig;
use cachesched_core::trace::native::{NativeWriter, TraceHeader};
use cachesched_core::trace::{ThreadIndex, WorkloadConfig, WorkloadCtx};
use cachesched_core::units::ByteSize;
use cachesched_core::Access;
use serde_json::json;

struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; the
// counters only watch.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(layout.size() as i64, Relaxed) + layout.size() as i64;
        PEAK.fetch_max(now, Relaxed);
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(layout.size() as i64, Relaxed) + layout.size() as i64;
        PEAK.fetch_max(now, Relaxed);
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Relaxed);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let now =
            LIVE.fetch_add(new_size as i64 - layout.size() as i64, Relaxed) + new_size as i64 - layout.size() as i64;
        PEAK.fetch_max(now, Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The bytes `build` leaves allocated (what it returns, kept alive).
fn kept<T>(build: impl FnOnce() -> T) -> (T, u64) {
    let before = LIVE.load(Relaxed);
    let value = build();
    (value, (LIVE.load(Relaxed) - before) as u64)
}

/// The estimate bounds the measure and is not far above it.
fn bounds(what: &str, estimate: u64, measured: u64, slack: u64) {
    assert!(estimate >= measured, "{what}: estimated {estimate} B, measured {measured} B");
    assert!(estimate <= 2 * measured + slack, "{what}: estimated {estimate} B, far above the {measured} B measured");
}

#[test]
fn the_estimate_bounds_what_is_allocated() {
    // Each policy's state, on large and odd geometries; SHiP's table is
    // within the slack.
    let geometries = [(4 << 20, 16, false), (3 << 19, 12, false), (64 << 10, 1, false), (256 << 10, 8, true)];
    let mut measured_caches = 0;
    for name in ReplacementConfig::NAMES {
        for (size, ways, full) in geometries {
            let params = CacheParams {
                size_bytes: ByteSize(size),
                ways,
                fully_associative: full,
                replacement: PluginConfig::named(name),
                ..CacheParams::default()
            };
            // Some policies refuse some geometries (PLRU odd ways, set dueling a single set).
            let (Ok(cache), measured) = kept(|| Cache::new(&params, 40, 1, "c", "machine.l2")) else { continue };
            measured_caches += 1;
            let what = format!("{name} {size} B {ways}-way{}", if full { " (full)" } else { "" });
            bounds(&what, params.host_bytes(40), measured, 80 << 10);
            drop(cache);
        }
        let tlb = TlbLevelParams { entries: 1536, ways: 12, replacement: PluginConfig::named(name), latency_cycles: 0 };
        if let (Ok(t), measured) = kept(|| Tlb::new(&tlb, 1, "t", "machine.tlb.l2")) {
            bounds(&format!("{name} tlb"), tlb.host_bytes(), measured, 80 << 10);
            drop(t);
        }
    }
    assert!(measured_caches >= 3 * ReplacementConfig::NAMES.len(), "{measured_caches} caches measured");

    // Whole machines: every preset, and many NUMA nodes.
    for name in config::presets::NAMES {
        let c = config::from_value(json!({"machine": {"preset": name}, "workload": {"kind": "stream"}})).unwrap();
        let estimate: u64 = c.config.machine.host_bytes(1, 1, "machine").iter().map(|p| p.1).sum();
        let (m, measured) = kept(|| Machine::new(&c.config.machine, 1, "machine").unwrap());
        bounds(name, estimate, measured, 1 << 20);
        drop(m);
    }

    // Each workload kind, built and read a little: its peak stays under its
    // estimate (kernels that keep their data included).
    let ctx = WorkloadCtx {
        seed: 1,
        component: "task0".into(),
        loc: "workload".into(),
        base_dir: None,
        thread: ThreadIndex::SINGLE,
    };
    let trace = std::env::temp_dir().join(format!("footprint-{}.cst", std::process::id()));
    {
        let stream: PluginConfig =
            serde_json::from_value(json!({"kind": "stream", "params": {"accesses": 300_000}})).unwrap();
        let mut src = WorkloadConfig::parse(&stream, "w").unwrap().build(&ctx).unwrap();
        let mut writer = NativeWriter::create(&trace, &TraceHeader::new("footprint"), &[]).unwrap();
        let mut buf = vec![Access::default(); 4096];
        while let n @ 1.. = src.fill(&mut buf).unwrap() {
            writer.write_all_thread(0, &buf[..n]).unwrap();
        }
        writer.finish().unwrap();
    }
    let mut configs: Vec<serde_json::Value> =
        WorkloadConfig::NAMES.iter().filter(|k| **k != "trace").map(|k| json!({"kind": k})).collect();
    configs.push(json!({"kind": "trace", "params": {"path": trace.display().to_string()}}));
    configs.push(json!({"kind": "is", "params": {"keys": 1 << 22, "buckets": 1 << 14, "threads": 4}}));
    configs.push(json!({"kind": "mix", "params": {"components": [
        {"weight": 1.0, "workload": {"kind": "is", "params": {"keys": 1 << 20}}},
        {"weight": 1.0, "workload": {"kind": "zipf", "params": {"working_set_bytes": "1GiB"}}}]}}));
    for raw in configs {
        let plugin: PluginConfig = serde_json::from_value(raw.clone()).unwrap();
        let w = WorkloadConfig::parse(&plugin, "workload").unwrap();
        PEAK.store(LIVE.load(Relaxed), Relaxed);
        let base = LIVE.load(Relaxed);
        let threads = raw["params"]["threads"].as_u64().unwrap_or(1) as u32;
        let ctx = WorkloadCtx { thread: ThreadIndex { index: threads - 1, count: threads }, ..ctx.clone() };
        let mut built = w.build(&ctx).unwrap();
        built.fill(&mut vec![Access::default(); 4096]).unwrap();
        let peak = (PEAK.load(Relaxed) - base) as u64;
        assert!(w.host_bytes() >= peak, "{raw}: estimated {} B, peak {peak} B", w.host_bytes());
        drop(built);
    }
    let _ = std::fs::remove_file(&trace);

    // Whole runs at their peak, attribution shadows of many tasks included:
    // the run's parts (a workload's own tables aside) stay under the estimate.
    let runs = [
        (
            json!({"machine": {"preset": "standard"}, "workload": {"kind": "stream", "params": {"accesses": 200_000}}}),
            200_000,
        ),
        (
            json!({"machine": {"preset": "server-2s", "attribution": ["l2", "llc", "tlb.l1"], "memory": {"nodes": 64}},
                "tasks": [{"count": 16, "workload": {"kind": "uniform",
                                                     "params": {"accesses": 50_000, "working_set_bytes": "64MiB"}}}],
                "run": {"batch": 65536}}),
            16 * 50_000,
        ),
    ];
    for (run, accesses) in runs {
        let valid = config::from_value(run.clone()).unwrap();
        let estimate: u64 = footprint::parts(&valid.config, &valid.tasks).iter().map(|p| p.1).sum();
        PEAK.store(LIVE.load(Relaxed), Relaxed);
        let base = LIVE.load(Relaxed);
        let mut engine = Engine::new(valid, None).unwrap();
        engine.run(&mut |_| Ok(())).unwrap();
        let peak = (PEAK.load(Relaxed) - base) as u64;
        // Page tables and the lines each cache has seen grow with the pages
        // and lines touched, which the estimate leaves out: each access adds
        // at most a page entry and a line to the seen sets of four caches.
        let growth = 64 * accesses;
        assert!(estimate + growth >= peak, "{run}: estimated {estimate} B, peak {peak} B");
        assert!(estimate <= 2 * peak, "{run}: estimated {estimate} B, far above the peak {peak} B");
    }
}
