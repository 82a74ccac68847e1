//! Run a configuration given as a JSON file through the engine, as
//! `cachesched run` does, and print the seconds it took (a benchmarking
//! aid: the same configs against two builds, without Python around them).
//! With a second path, also write the results there as JSON, without the
//! wall-clock fields, so that two builds' results can be compared with `cmp`.
//!
//! `cargo run --release --example run_config -- CONFIG.json [RESULTS.json]`
use std::time::Instant;

use cachesched_core::engine;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("a config as JSON");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let start = Instant::now();
    let mut results = engine::simulate_json(&text, None).unwrap_or_else(|e| panic!("{e}"));
    println!("{:.3} s for {} accesses", start.elapsed().as_secs_f64(), results.summary.accesses);
    if let Some(out) = args.next() {
        results.summary.wall_seconds = 0.0;
        results.summary.accesses_per_second = 0.0;
        let json = serde_json::to_string(&results).expect("results serialise");
        std::fs::write(&out, json).unwrap_or_else(|e| panic!("{out}: {e}"));
    }
}
