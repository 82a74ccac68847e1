//! Run a configuration given as a JSON file through the engine, as
//! `cachesched run` does, and print the seconds it took and how many
//! references ran with the sockets apart (a benchmarking aid: the same
//! configs against two builds, without Python around them).
//! With a second path, also write the results there as JSON, without the
//! wall-clock fields, so that two builds' results can be compared with `cmp`.
//!
//! `cargo run --release --example run_config -- CONFIG.json [RESULTS.json]`
use std::time::Instant;

use cachesched_core::config;
use cachesched_core::engine::Engine;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("a config as JSON");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let start = Instant::now();
    let config = config::from_json_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let mut engine = Engine::new(config, None).unwrap_or_else(|e| panic!("{e}"));
    let mut results = engine.run(&mut |_| Ok(())).unwrap_or_else(|e| panic!("{e}"));
    let (seconds, accesses) = (start.elapsed().as_secs_f64(), results.summary.accesses);
    println!("{seconds:.3} s for {accesses} accesses ({} with the sockets apart)", engine.accesses_apart());
    println!("{}", results.host.threads);
    if let Some(out) = args.next() {
        results.host = Default::default();
        let json = serde_json::to_string(&results).expect("results serialise");
        std::fs::write(&out, json).unwrap_or_else(|e| panic!("{out}: {e}"));
    }
}
