//! Where the time goes on a trace: decoding alone, then the machine alone
//! on the decoded accesses (a profiling aid).
//!
//! `cargo run --release --example bench_split -- TRACE.cst [standard|identity]`
use std::time::Instant;

use cachesched_core::config;
use cachesched_core::mem::machine::Machine;
use cachesched_core::trace::native::NativeReader;
use cachesched_core::trace::Workload;
use cachesched_core::{Access, Asid, CoreId, TaskId};

fn main() {
    let path = std::env::args().nth(1).expect("a .cst trace");
    let start = Instant::now();
    let mut reader = NativeReader::open(&path).unwrap();
    let mut buf = vec![Access::default(); 4096];
    let mut all = Vec::new();
    loop {
        let n = reader.fill(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        all.extend_from_slice(&buf[..n]);
    }
    let decode = start.elapsed().as_secs_f64();
    println!("decode: {:.2} ns/access ({} accesses)", decode * 1e9 / all.len() as f64, all.len());
    let only = std::env::args().nth(2);
    for (name, tlb) in [("standard", true), ("identity", false)] {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let mut cfg = config::from_json_str(r#"{"workload": {"kind": "stream"}}"#).unwrap().config;
        if !tlb {
            cfg.machine.tlb = None;
            cfg.machine.memory.frame_allocation = cachesched_core::mem::page_table::FrameAllocation::Identity;
        }
        let mut m = Machine::new(&cfg.machine, 1, "machine").unwrap();
        m.add_tasks(1);
        let start = Instant::now();
        let stall: u64 = all.chunks(4096).map(|b| m.access_batch(CoreId(0), TaskId(0), Asid(0), b)).sum();
        let secs = start.elapsed().as_secs_f64();
        println!("machine ({name}): {:.2} ns/access ({stall} stall cycles)", secs * 1e9 / all.len() as f64);
    }
}
