//! Size and speed of the native `.cst` trace format.
//!
//! Writes a trace of a realistic access mix (half strided walks over large
//! arrays, half Zipf-popular lines of a 64 MiB heap, from a loop body with
//! fixed instructions; see `DemoMix`), reads it back, and prints bytes per
//! access and encode/decode rates. Then does the same for the shuffled worst
//! case. Run with:
//!
//! ```text
//! cargo run --release -p cachesched-core --example cst_throughput [-- ACCESSES [realistic|shuffled]]
//! ```
//!
//! Generating the accesses is not timed; encoding includes compression and
//! writing the file, decoding includes reading it (from the page cache) and
//! is the best of three passes.

use std::time::{Duration, Instant};

use cachesched_core::trace::native::{DemoMix, NativeReader, NativeWriter, TraceHeader};
use cachesched_core::trace::Workload;
use cachesched_core::{Access, Result};

const CHUNK: usize = 1 << 20;

fn run(label: &str, n: u64, make: fn(u64) -> DemoMix) -> Result<()> {
    let path = std::env::temp_dir().join(format!("cst_throughput_{}.cst", std::process::id()));
    let mut mix = make(42);
    let mut chunk = vec![Access::default(); CHUNK];
    let mut writer = NativeWriter::create(&path, &TraceHeader::new(format!("DemoMix {label}")))?;
    let mut encode = Duration::ZERO;
    let mut left = n;
    while left > 0 {
        let k = left.min(CHUNK as u64) as usize;
        for a in &mut chunk[..k] {
            *a = mix.next_access();
        }
        let t = Instant::now();
        for a in &chunk[..k] {
            writer.write(a)?;
        }
        encode += t.elapsed();
        left -= k as u64;
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
    let mut mix = make(42);
    let mut reader = NativeReader::open(&path)?;
    let mut checked = 0u64;
    loop {
        let got = reader.fill(&mut buf)?;
        if got == 0 {
            break;
        }
        for a in &buf[..got] {
            assert_eq!(*a, mix.next_access(), "access {checked} differs");
            checked += 1;
        }
    }
    assert_eq!((count, checked), (n, n));
    std::fs::remove_file(&path).ok();

    let rate = |d: Duration| n as f64 / d.as_secs_f64() / 1e6;
    println!(
        "{label:>9}: {n} accesses, {} bytes, {:.3} bytes/access, encode {:.1} M accesses/s, decode {:.1} M accesses/s (checksum {sum:x})",
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
    let mixes: [(&str, fn(u64) -> DemoMix); 2] = [("realistic", DemoMix::new), ("shuffled", DemoMix::shuffled)];
    for (label, make) in mixes {
        if only.as_deref().is_none_or(|o| o == label) {
            run(label, n, make)?;
        }
    }
    Ok(())
}
