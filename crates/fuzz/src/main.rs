//! `cachesched-fuzz`: a mutation-fuzzing campaign over every target.
//!
//! ```sh
//! cargo run --release -p cachesched-fuzz -- --inputs 10000000
//! ```
//!
//! Options: `--inputs N` (all targets together; default 1,000,000),
//! `--target NAME` (repeatable; default all), `--seed S`, `--threads T`
//! (default: the host's CPUs), `--found DIR` (where inputs that found
//! something are written; default `crates/fuzz/found`), `--write-seeds DIR`
//! (write each target's seed inputs to `DIR/<target>/` and stop: a starting
//! corpus for libFuzzer, `crates/fuzz/libfuzzer`). Prints per target
//! the inputs run, read whole and refused, the distinct outcomes (the most
//! one shard saw), the findings, and the inputs per second on one thread.
//! Exits with 1 if any input was not handled correctly.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use cachesched_fuzz::campaign::{self, Report};
use cachesched_fuzz::memory;
use cachesched_fuzz::targets::{quiet_panics, target, Target, TARGETS};

#[global_allocator]
static ALLOCATOR: memory::Watched = memory::Watched;

/// Inputs per shard: a target's share is run as shards of this size, each
/// with its own seed, so that threads share the work evenly.
const SHARD: u64 = 250_000;

fn main() {
    let mut inputs: u64 = 1_000_000;
    let mut names: Vec<String> = Vec::new();
    let mut seed: u64 = 1;
    let mut threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut found = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("found");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage(&format!("{arg} needs a value")));
        match arg.as_str() {
            "--inputs" => inputs = number(&value()),
            "--target" => names.push(value()),
            "--seed" => seed = number(&value()),
            "--threads" => threads = number(&value()).max(1) as usize,
            "--found" => found = PathBuf::from(value()),
            "--write-seeds" => {
                write_seeds(&PathBuf::from(value()));
                return;
            }
            _ => usage(&format!("unknown argument {arg}")),
        }
    }
    let chosen: Vec<&Target> = if names.is_empty() {
        TARGETS.iter().collect()
    } else {
        names.iter().map(|n| target(n).unwrap_or_else(|| usage(&format!("no target {n}")))).collect()
    };
    quiet_panics();
    let per_target = inputs.div_ceil(chosen.len() as u64);
    let shards: Vec<(usize, u64, u64)> = (0..chosen.len())
        .flat_map(|t| (0..per_target.div_ceil(SHARD)).map(move |s| (t, s, SHARD.min(per_target - s * SHARD))))
        .collect();
    let next = AtomicUsize::new(0);
    let reports: Mutex<Vec<(Report, f64)>> = Mutex::new(vec![(Report::default(), 0.0); chosen.len()]);
    let start = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads.min(shards.len()) {
            scope.spawn(|| {
                while let Some(&(t, shard, n)) = shards.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let began = Instant::now();
                    let r = campaign::run(
                        chosen[t],
                        n,
                        seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (t as u64) << 32 ^ shard,
                    );
                    let mut all = reports.lock().expect("no thread panics holding it");
                    let (total, seconds) = &mut all[t];
                    total.inputs += r.inputs;
                    total.accepted += r.accepted;
                    total.rejected += r.rejected;
                    total.outcomes = total.outcomes.max(r.outcomes);
                    total.findings.extend(r.findings);
                    *seconds += began.elapsed().as_secs_f64();
                }
            });
        }
    });
    let reports = reports.into_inner().expect("no thread panicked");
    println!(
        "{:<9} {:>12} {:>11} {:>11} {:>9} {:>9} {:>10}",
        "target", "inputs", "accepted", "rejected", "outcomes", "findings", "inputs/s"
    );
    let mut failed = false;
    for (t, (r, seconds)) in chosen.iter().zip(&reports) {
        println!(
            "{:<9} {:>12} {:>11} {:>11} {:>9} {:>9} {:>10.0}",
            t.name,
            r.inputs,
            r.accepted,
            r.rejected,
            r.outcomes,
            r.findings.len(),
            r.inputs as f64 / seconds.max(1e-9)
        );
        for (input, what) in &r.findings {
            failed = true;
            std::fs::create_dir_all(&found).expect("a writable folder for findings");
            let path = found.join(format!("{}-{:016x}", t.name, fnv(input)));
            std::fs::write(&path, input).expect("a writable folder for findings");
            println!("  {what}\n    input: {}", path.display());
        }
    }
    let total: u64 = reports.iter().map(|(r, _)| r.inputs).sum();
    let findings: usize = reports.iter().map(|(r, _)| r.findings.len()).sum();
    println!("{total} inputs in {:.0} s on {threads} threads; findings: {findings}", start.elapsed().as_secs_f64());
    std::process::exit(failed as i32);
}

/// Each target's seeds as files `dir/<target>/seed-<i>`.
fn write_seeds(dir: &std::path::Path) {
    for t in TARGETS {
        let folder = dir.join(t.name);
        std::fs::create_dir_all(&folder).unwrap_or_else(|e| usage(&format!("{}: {e}", folder.display())));
        for (i, seed) in (t.seeds)().iter().enumerate() {
            std::fs::write(folder.join(format!("seed-{i}")), seed)
                .unwrap_or_else(|e| usage(&format!("{}: {e}", folder.display())));
        }
    }
}

fn number(text: &str) -> u64 {
    text.replace('_', "").parse().unwrap_or_else(|_| usage(&format!("expected a number, got {text}")))
}

fn usage(problem: &str) -> ! {
    eprintln!("cachesched-fuzz: {problem}");
    eprintln!("usage: cachesched-fuzz [--inputs N] [--target NAME]... [--seed S] [--threads T] [--found DIR]");
    eprintln!("       cachesched-fuzz --write-seeds DIR");
    std::process::exit(2)
}

/// A short name for an input (FNV-1a).
fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}
