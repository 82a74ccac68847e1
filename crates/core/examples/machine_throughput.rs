//! Throughput of the machine alone on an in-memory stream (no trace decoding,
//! no workload generation in the timed loop): a profiling aid.
//!
//! `cargo run --release --example machine_throughput [accesses]`

use std::time::Instant;

use cachesched_core::config;
use cachesched_core::mem::machine::Machine;
use cachesched_core::util::rng::Rng;
use cachesched_core::{Access, AccessKind, Asid, CoreId, TaskId, VirtAddr};

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(20_000_000);
    let mut rng = Rng::from_seed(42);
    let (mut stream, zipf_lines) = (0u64, 1u64 << 20);
    let accesses: Vec<Access> = (0..n)
        .map(|_| {
            let addr = if rng.chance(0.5) {
                stream = (stream + 8) % (256 << 20);
                0x10_0000_0000 + stream
            } else {
                // Log-uniform ranks approximate Zipf(1); scatter them with a multiplier.
                let rank = (zipf_lines as f64).powf(rng.next_f64()) as u64;
                0x20_0000_0000 + (rank.wrapping_mul(0x9E37_79B9) % zipf_lines) * 64
            };
            let kind = if rng.chance(0.3) { AccessKind::Store } else { AccessKind::Load };
            Access { addr: VirtAddr(addr), pc: VirtAddr(0x400000), instrs: 3, size: 8, kind }
        })
        .collect();
    for tlb in [true, false] {
        let mut cfg = config::from_json_str(r#"{"workload": {"kind": "stream"}}"#).unwrap().config;
        if !tlb {
            cfg.machine.tlb = None;
        }
        let mut m = Machine::new(&cfg.machine, 1, "machine").unwrap();
        m.add_tasks(1);
        let start = Instant::now();
        let mut cycles = 0u64;
        for a in &accesses {
            cycles += m.access(CoreId(0), TaskId(0), Asid(0), a) as u64;
        }
        let secs = start.elapsed().as_secs_f64();
        println!("tlb={tlb}: {:.1} M accesses/s (stall cycles {cycles})", n as f64 / secs / 1e6);
        for c in m.caches() {
            let s = &c.stats;
            let (h, mi): (u64, u64) = (s.hits[..3].iter().sum(), s.misses[..3].iter().sum());
            println!("  {:<22} demand miss ratio {:.4} of {}", c.path, mi as f64 / (h + mi) as f64, h + mi);
        }
    }
}
