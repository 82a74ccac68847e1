//! Run a configuration given as a JSON file through the engine, as
//! `cachesched run` does, and print the seconds it took (a benchmarking
//! aid: the same configs against two builds, without Python around them).
//!
//! `cargo run --release --example run_config -- CONFIG.json`
use std::time::Instant;

use cachesched_core::engine;

fn main() {
    let path = std::env::args().nth(1).expect("a config as JSON");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let start = Instant::now();
    let results = engine::simulate_json(&text, None).unwrap_or_else(|e| panic!("{e}"));
    println!("{:.3} s for {} accesses", start.elapsed().as_secs_f64(), results.summary.accesses);
}
