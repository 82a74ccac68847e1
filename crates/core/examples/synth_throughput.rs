//! Generation speed of each synthetic workload and kernel (thread 0 of
//! one), in accesses per second.
//!
//! ```text
//! cargo run --release --example synth_throughput [ACCESSES_PER_CASE] [CASE]
//! ```
//!
//! Each case builds a generator (default params, 1MiB working set, unless
//! the case says otherwise) producing `ACCESSES_PER_CASE` accesses (default
//! 50,000,000, the size of the benchmark's streams) and drains it through
//! `Workload::fill` into a 4096-access buffer, as the engine does. `CASE`
//! (a kind, e.g. `zipf`) runs only the cases of that kind.
//!
//! Two rates are printed: over the whole run, and over the fastest window
//! of 1M accesses. On a shared machine the second is the better estimate
//! of what the code can do; the first says what it did.

use std::time::Instant;

use cachesched_core::plugin::PluginConfig;
use cachesched_core::trace::{WorkloadConfig, WorkloadCtx};
use cachesched_core::Access;
use serde_json::json;

const WINDOW: u64 = 1_000_000;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = match args.next() {
        None => 50_000_000,
        Some(arg) => match arg.replace('_', "").parse() {
            Ok(n) => n,
            Err(_) => {
                eprintln!("usage: synth_throughput [ACCESSES_PER_CASE] [KIND]");
                std::process::exit(2);
            }
        },
    };
    let only = args.next();
    let cases = [
        ("stream", json!({"accesses": n})),
        ("stream", json!({"accesses": n, "streams": 3, "store_fraction": 0.0})),
        ("uniform", json!({"accesses": n})),
        ("uniform", json!({"accesses": n, "ifetch_fraction": 0.25})),
        ("zipf", json!({"accesses": n})),
        ("zipf", json!({"accesses": n, "working_set_bytes": "64MiB"})),
        ("zipf", json!({"accesses": n, "working_set_bytes": "1GiB", "exponent": 0.8})),
        ("chase", json!({"accesses": n})),
        (
            "phases",
            json!({"repeat": 10, "phases": [
                {"accesses": n / 20, "workload": {"kind": "stream"}},
                {"accesses": n / 20, "workload": {"kind": "zipf"}},
            ]}),
        ),
        (
            "mix",
            json!({"accesses": n, "components": [
                {"weight": 0.5, "workload": {"kind": "stream"}},
                {"weight": 0.5, "workload": {"kind": "uniform"}},
            ]}),
        ),
        ("loop", json!({"accesses": n})),
        (
            "loop",
            json!({"accesses": n, "arrays": [{"size_bytes": "64MiB"}, {"size_bytes": "64MiB"}],
                   "sites": [{"stream": {"array": 0}}, {"stream": {"array": 1}, "store": true}]}),
        ),
        ("cg", json!({"accesses": n})),
        ("mg", json!({"accesses": n})),
        ("ft", json!({"accesses": n})),
        ("is", json!({"accesses": n})),
        ("ep", json!({"accesses": n})),
        ("latency", json!({"accesses": n})),
    ];
    println!("{:<8} {:>12} {:>12} {:>8}  params (N = accesses per case)", "kind", "overall/s", "best 1M/s", "best ns");
    for (kind, params) in cases {
        if only.as_deref().is_some_and(|o| o != kind) {
            continue;
        }
        let raw = PluginConfig { kind: kind.to_string(), params: params.clone() };
        let ctx = WorkloadCtx {
            seed: 1,
            component: "task0".into(),
            loc: "workload".into(),
            base_dir: None,
            thread: Default::default(),
        };
        let built = WorkloadConfig::parse(&raw, "workload").and_then(|c| c.build(&ctx));
        let mut workload = match built {
            Ok(w) => w,
            Err(e) => {
                eprintln!("{kind}: {e}");
                std::process::exit(1);
            }
        };
        let mut buf = vec![Access::default(); 4096];
        let (mut total, mut checksum) = (0u64, 0u64);
        let (mut window_start, mut window_count) = (Instant::now(), 0u64);
        let mut best = f64::INFINITY;
        let start = Instant::now();
        loop {
            let got = match workload.fill(&mut buf) {
                Ok(0) => break,
                Ok(got) => got,
                Err(e) => {
                    eprintln!("{kind}: {e}");
                    std::process::exit(1);
                }
            };
            total += got as u64;
            window_count += got as u64;
            checksum = checksum.wrapping_add(buf[got - 1].addr.0);
            if window_count >= WINDOW {
                let ns = window_start.elapsed().as_secs_f64() * 1e9 / window_count as f64;
                best = best.min(ns);
                (window_start, window_count) = (Instant::now(), 0);
            }
        }
        let secs = start.elapsed().as_secs_f64();
        let shown = params.to_string().replace(&n.to_string(), "N");
        println!(
            "{kind:<8} {:>12.0} {:>12.0} {:>8.2}  {shown} (checksum {:04x})",
            total as f64 / secs,
            1e9 / best,
            best,
            checksum & 0xffff
        );
    }
}
