//! Throughput of the machine alone on an in-memory stream (no trace decoding,
//! no workload generation in the timed loop): a profiling aid.
//!
//! `cargo run --release --example machine_throughput [accesses] [footprint_bytes]`

use std::time::Instant;

use cachesched_core::config;
use cachesched_core::mem::machine::Machine;
use cachesched_core::util::rng::Rng;
use cachesched_core::{Access, AccessKind, Asid, CoreId, TaskId, VirtAddr};

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).map(|s| s.parse().unwrap()).collect();
    let n = *args.first().unwrap_or(&20_000_000) as usize;
    let footprint = *args.get(1).unwrap_or(&(16 << 10));
    let mut rng = Rng::from_seed(42);
    let accesses: Vec<Access> = (0..n)
        .map(|_| {
            let addr = 0x10_0000_0000 + rng.below(footprint / 8) * 8;
            let kind = if rng.chance(0.3) { AccessKind::Store } else { AccessKind::Load };
            Access { addr: VirtAddr(addr), pc: VirtAddr(0x400000), instrs: 3, size: 8, kind }
        })
        .collect();
    let variants: &[bool] = if args.get(2) == Some(&1) { &[true] } else { &[true, false] };
    let start = Instant::now();
    let sum: u64 = accesses.iter().map(|a| a.addr.0 ^ a.kind as u64).fold(0, |x, y| x.wrapping_add(y));
    println!("baseline read of the stream: {:.2} ns each ({sum})", start.elapsed().as_secs_f64() * 1e9 / n as f64);
    for &tlb in variants {
        let mut cfg = config::from_json_str(r#"{"workload": {"kind": "stream"}}"#).unwrap().config;
        if !tlb {
            cfg.machine.tlb = None;
        }
        let mut m = Machine::new(&cfg.machine, 1, "machine").unwrap();
        m.add_tasks(1);
        let start = Instant::now();
        let cycles: u64 = accesses.chunks(4096).map(|b| m.access_batch(CoreId(0), TaskId(0), Asid(0), b)).sum();
        let secs = start.elapsed().as_secs_f64();
        println!(
            "tlb={tlb}: {:.1} M accesses/s ({:.2} ns each; stall cycles {cycles})",
            n as f64 / secs / 1e6,
            secs * 1e9 / n as f64
        );
    }
}
