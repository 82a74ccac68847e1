//! Size and speed of the native `.cst` trace format.
//!
//! Writes a trace of the default `loop` workload (a loop body of four strided
//! walks over large arrays and four Zipf-popular accesses to a 64 MiB heap,
//! each instruction with its own pc and instruction count; see
//! `docs/workloads.md`), reads it back, and prints bytes per access and
//! encode/decode rates. Then does the same for a `mix` of the same data
//! structures (the four walks and the heap, in about the same proportions,
//! with the same stores and instructions per access), which interleaves them at
//! random instead of in program order: what a trace loses when accesses come
//! in no order a program would produce. Run with:
//!
//! ```text
//! cargo run --release -p cachesched-core --example cst_throughput [-- ACCESSES [loop|mix]]
//! ```
//!
//! Generating the accesses is not timed; encoding includes compression and
//! writing the file, decoding includes reading it (from the page cache) and
//! is the best of three passes.

use std::time::{Duration, Instant};

use cachesched_core::plugin::PluginConfig;
use cachesched_core::trace::native::{NativeReader, NativeWriter, TraceHeader};
use cachesched_core::trace::{Workload, WorkloadConfig, WorkloadCtx};
use cachesched_core::{Access, Result};
use serde_json::{json, Value};

const CHUNK: usize = 1 << 20;

/// The workload `kind` with `params`, `n` accesses long, seeded with 42.
fn build(kind: &str, params: &Value, n: u64) -> Result<Box<dyn Workload>> {
    let mut params = params.clone();
    params["accesses"] = json!(n);
    let raw = PluginConfig { kind: kind.to_string(), params };
    let ctx = WorkloadCtx {
        seed: 42,
        component: "task0".into(),
        loc: "workload".into(),
        base_dir: None,
        thread: Default::default(),
    };
    WorkloadConfig::parse(&raw, "workload")?.build(&ctx)
}

/// The default loop's data structures interleaved at random: each of the
/// four arrays walked by its own stream (weight 1, one access per
/// iteration), the heap by a zipf with four times the weight and a quarter
/// of its accesses stores, 2.375 instructions per access (the loop body's 19
/// per 8 accesses, before skips and long paths). Regions are placed where
/// the loop places them.
fn mix_params() -> Value {
    let base = 0x10_0000_0000u64;
    let mib = |m: u64| m << 20;
    let stream = |offset: u64, size: u64, stride: u64, access: u64, store: f64| {
        json!({"weight": 1.0, "workload": {"kind": "stream", "params": {
            "base_addr": base + mib(offset), "working_set_bytes": mib(size), "stride_bytes": stride,
            "access_bytes": access, "store_fraction": store, "instructions_per_access": 2.375}}})
    };
    json!({"components": [
        stream(0, 256, 8, 8, 0.0),
        stream(256, 256, 8, 8, 0.0),
        stream(512, 128, 64, 8, 0.0),
        stream(640, 512, 4, 4, 1.0),
        {"weight": 4.0, "workload": {"kind": "zipf", "params": {
            "base_addr": base + mib(1152), "working_set_bytes": mib(64), "exponent": 0.99,
            "element_bytes": 64, "store_fraction": 0.25, "instructions_per_access": 2.375}}},
    ]})
}

fn run(label: &str, n: u64, kind: &str, params: &Value) -> Result<()> {
    let path = std::env::temp_dir().join(format!("cst_throughput_{}.cst", std::process::id()));
    let mut workload = build(kind, params, n)?;
    let mut chunk = vec![Access::default(); CHUNK];
    let mut writer = NativeWriter::create(&path, &TraceHeader::new(format!("cst_throughput {label}")), &[])?;
    let mut encode = Duration::ZERO;
    loop {
        let k = workload.fill(&mut chunk)?;
        if k == 0 {
            break;
        }
        let t = Instant::now();
        for a in &chunk[..k] {
            writer.write(a)?;
        }
        encode += t.elapsed();
    }
    let t = Instant::now();
    let summary = writer.finish()?;
    encode += t.elapsed();

    // Decode, timed, keeping a checksum so the work cannot be skipped. The
    // best of three passes is reported: on a shared machine the slower ones
    // measure the neighbours.
    let mut buf = vec![Access::default(); 4096];
    let (mut count, mut sum) = (0u64, 0u64);
    let mut decode = Duration::MAX;
    for _ in 0..3 {
        (count, sum) = (0, 0);
        let t = Instant::now();
        let mut reader = NativeReader::open(&path)?;
        loop {
            let got = reader.fill(&mut buf)?;
            if got == 0 {
                break;
            }
            for a in &buf[..got] {
                sum = sum.wrapping_add(a.addr.0 ^ a.instrs as u64);
            }
            count += got as u64;
        }
        decode = decode.min(t.elapsed());
    }

    // Check, untimed, that the file holds exactly what was generated.
    let mut again = build(kind, params, n)?;
    let mut expected = vec![Access::default(); 4096];
    let mut reader = NativeReader::open(&path)?;
    let mut checked = 0u64;
    loop {
        let got = reader.fill(&mut buf)?;
        if got == 0 {
            break;
        }
        let mut filled = 0;
        while filled < got {
            filled += again.fill(&mut expected[filled..got])?;
        }
        for (a, e) in buf[..got].iter().zip(&expected[..got]) {
            assert_eq!(a, e, "access {checked} differs");
            checked += 1;
        }
    }
    assert_eq!((count, checked), (n, n));
    std::fs::remove_file(&path).ok();

    let rate = |d: Duration| n as f64 / d.as_secs_f64() / 1e6;
    println!(
        "{label:>4}: {n} accesses, {} bytes, {:.3} bytes/access, encode {:.1} M accesses/s, decode {:.1} M accesses/s (checksum {sum:x})",
        summary.file_bytes,
        summary.bytes_per_access(),
        rate(encode),
        rate(decode),
    );
    Ok(())
}

fn main() -> Result<()> {
    let n = std::env::args().nth(1).map(|s| s.parse::<u64>().expect("ACCESSES must be a number")).unwrap_or(20_000_000);
    let only = std::env::args().nth(2);
    let cases = [("loop", "loop", json!({})), ("mix", "mix", mix_params())];
    for (label, kind, params) in &cases {
        if only.as_deref().is_none_or(|o| o == *label) {
            run(label, n, kind, params)?;
        }
    }
    Ok(())
}
