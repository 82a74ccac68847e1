//! The fuzz targets: what each does with an input, what counts as a correct
//! rejection, and its seed inputs and tokens.

use std::fmt;
use std::io::{Cursor, Write};
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;

use cachesched_core::config::{self, presets};
use cachesched_core::error::Error;
use cachesched_core::mem::machine::Machine;
use cachesched_core::trace::file::{TraceFormat, TraceParams};
use cachesched_core::trace::native::{self, NativeWriter, TraceHeader, WriterOptions};
use cachesched_core::trace::{Workload, WorkloadCtx};
use cachesched_core::{Access, AccessKind, VirtAddr};

use crate::memory;

/// What a target made of an input that it handled correctly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Read whole: this many accesses (traces) or a valid configuration (0).
    Accepted(u64),
    /// Refused with this error, which says where.
    Rejected(String),
}

/// An input a target did not handle correctly, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding(pub String);

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One thing to fuzz.
pub struct Target {
    /// Its name: `crates/fuzz/seeds/<name>` and `regressions/<name>` hold its inputs.
    pub name: &'static str,
    /// Handle one input.
    pub run: fn(&[u8]) -> Result<Verdict, Finding>,
    /// The seed inputs (besides the files in `seeds/<name>`).
    pub seeds: fn() -> Vec<Vec<u8>>,
    /// Fragments the mutator splices in: the format's own words.
    pub tokens: &'static [&'static [u8]],
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target { name: "trace", run: auto, seeds: every_trace_seed, tokens: TRACE_TOKENS },
    Target { name: "lackey", run: |d| trace(d, TraceFormat::Lackey), seeds: || files("lackey"), tokens: TRACE_TOKENS },
    Target { name: "din", run: |d| trace(d, TraceFormat::Din), seeds: || files("din"), tokens: TRACE_TOKENS },
    Target {
        name: "champsim",
        run: |d| trace(d, TraceFormat::Champsim),
        seeds: || files("champsim"),
        tokens: &[b"\0\0\0\0\0\0\0\0", b"\x01", b"\x40\x10\x40\0\0\0\0\0"],
    },
    Target { name: "cst", run: |d| trace(d, TraceFormat::Cst), seeds: cst_seeds, tokens: CST_TOKENS },
    // Checksums reject nearly every mutation of a .cst before its structure
    // is read: this target recomputes them first.
    Target { name: "cst-sealed", run: sealed, seeds: cst_seeds, tokens: CST_TOKENS },
    Target { name: "config", run: configuration, seeds: config_seeds, tokens: CONFIG_TOKENS },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// Host memory one input may take: what a configuration is allowed, and
/// room for the buffers around it.
pub const MEMORY_BUDGET: u64 = FUZZ_MEMORY + (64 << 20);

/// Run `target` on `data`, a panic included: the verdict, or what was wrong.
/// With [`memory::Watched`](crate::memory::Watched) installed, an input
/// that takes more than [`MEMORY_BUDGET`] of host memory is a finding too.
pub fn check(target: &Target, data: &[u8]) -> Result<Verdict, Finding> {
    let base = memory::start();
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| (target.run)(data)));
    let took = memory::peak(base);
    if took > MEMORY_BUDGET {
        return Err(Finding(format!(
            "took {} MiB of host memory, more than the {} MiB allowed",
            took >> 20,
            MEMORY_BUDGET >> 20
        )));
    }
    match outcome {
        Ok(outcome) => outcome,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            Err(Finding(format!("panicked: {what}")))
        }
    }
}

/// Silence the default panic message while fuzzing (a panic is reported as
/// a finding with its message); call once per process.
pub fn quiet_panics() {
    panic::set_hook(Box::new(|_| {}));
}

// ---------------------------------------------------------------------------
// Traces.

/// The most accesses a fuzz input may decode to: far more than any input of
/// a few KiB holds, so reaching it means a stream that does not end.
const MAX_ACCESSES: u64 = 1 << 26;

const NAME: &str = "fuzz-input";

const TRACE_TOKENS: &[&[u8]] = &[
    b"I  ",
    b" L ",
    b" S ",
    b" M ",
    b",",
    b"\n",
    b"==1== ",
    b"0x",
    b"ffffffffffffffff",
    b"10000000000000000",
    b"0 ",
    b"1 ",
    b"2 ",
    b"4 ",
    b"r ",
    b"w ",
    b"i ",
    b"c ",
    b"v ",
    b" 0\n",
    b" ffff\n",
    b" 10000\n",
    b"\x1f\x8b",
    b"\xfd7zXZ\0",
    b"CSTRACE\0",
];

const CST_TOKENS: &[&[u8]] =
    &[b"CSTRACE\0", b"CSTB", b"CSTI", b"CSTFOOT", b"\0\0\0\0", b"\xff\xff\xff\xff", b"\x28\xb5\x2f\xfd"];

/// Read `data` as a trace of `format` to its end.
fn trace(data: &[u8], format: TraceFormat) -> Result<Verdict, Finding> {
    let params = TraceParams { path: NAME.into(), format, ..TraceParams::default() };
    let outcome = params
        .open_source(Cursor::new(data.to_vec()), NAME.into(), "workload")
        .and_then(|(_, mut workload)| drain(workload.as_mut()));
    match outcome {
        Ok(n) if n > MAX_ACCESSES => {
            Err(Finding(format!("more than {MAX_ACCESSES} accesses from {} bytes", data.len())))
        }
        Ok(0) => Err(Finding("a trace of no accesses was accepted: a run of it would measure nothing".into())),
        Ok(n) => Ok(Verdict::Accepted(n)),
        Err(e) => positioned(e),
    }
}

fn auto(data: &[u8]) -> Result<Verdict, Finding> {
    trace(data, TraceFormat::Auto)
}

fn sealed(data: &[u8]) -> Result<Verdict, Finding> {
    let mut data = data.to_vec();
    native::reseal(&mut data);
    trace(&data, TraceFormat::Cst)
}

/// Read a workload to its end (or past [`MAX_ACCESSES`]); the accesses read.
fn drain(workload: &mut dyn Workload) -> cachesched_core::Result<u64> {
    let mut buf = vec![Access::default(); 4096];
    let mut n = 0u64;
    while n <= MAX_ACCESSES {
        match workload.fill(&mut buf)? {
            0 => break,
            got => n += got as u64,
        }
    }
    Ok(n)
}

/// A rejection if `e` says where the input is wrong, else a finding.
fn positioned(e: Error) -> Result<Verdict, Finding> {
    let placed = match &e {
        Error::Trace { pos, .. } => pos.offset.is_some() || pos.line.is_some() || pos.block.is_some(),
        Error::Config(issues) => issues.iter().all(|i| !i.loc.is_empty()),
        Error::Io { path, .. } => !path.is_empty(),
        Error::Simulation(_) => false,
    };
    if placed {
        Ok(Verdict::Rejected(e.to_string()))
    } else {
        Err(Finding(format!("an error that does not say where: {e:?}")))
    }
}

/// The seed files of `target`.
fn files(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds").join(target);
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a readable seed directory").path())
        .collect();
    paths.sort();
    paths.iter().map(|p| std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).collect()
}

/// `.cst` traces of one and of two threads, in blocks of a few records so
/// that small inputs hold several blocks and an index.
fn cst_seeds() -> Vec<Vec<u8>> {
    let accesses: Vec<Access> = (0..96u64)
        .map(|i| Access {
            addr: VirtAddr(0x1000 + (i * 72) % 4096 + (i / 7) * 8192),
            pc: VirtAddr(0x400000 + 4 * (i % 5)),
            instrs: 1 + (i % 3) as u32,
            size: [1, 2, 4, 8, 64][i as usize % 5],
            kind: [AccessKind::Load, AccessKind::Store, AccessKind::Ifetch][i as usize % 3],
        })
        .collect();
    [vec![0u32], vec![0, 3]]
        .into_iter()
        .map(|threads| {
            let mut bytes = Vec::new();
            let header = TraceHeader::new("fuzz seed").with_threads(threads.clone());
            let options = WriterOptions { block_records: 16, level: 1 };
            let mut writer = NativeWriter::new(&mut bytes, NAME, &header, options).expect("a valid header");
            for &t in &threads {
                writer.write_all_thread(t, &accesses).expect("a declared thread");
            }
            writer.finish().expect("written to memory");
            bytes
        })
        .collect()
}

/// Every trace seed, and the text ones compressed with gzip and with xz.
fn every_trace_seed() -> Vec<Vec<u8>> {
    let text: Vec<Vec<u8>> = ["lackey", "din"].iter().flat_map(|t| files(t)).collect();
    let mut out = text.clone();
    for t in &text {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(t).expect("in memory");
        out.push(gz.finish().expect("in memory"));
        let mut xz = xz2::write::XzEncoder::new(Vec::new(), 1);
        xz.write_all(t).expect("in memory");
        out.push(xz.finish().expect("in memory"));
    }
    out.extend(files("champsim"));
    out.extend(cst_seeds());
    out
}

// ---------------------------------------------------------------------------
// Configurations.

/// The host memory a fuzzed configuration may ask for: enough for every
/// preset, small enough that building thousands of machines a second does
/// not exhaust the host.
const FUZZ_MEMORY: u64 = 256 << 20;

/// Codes of problems that concern the whole document, which have no key.
const ROOT_CODES: &[&str] = &["invalid_toml", "invalid_json", "invalid_type"];

const CONFIG_TOKENS: &[&[u8]] = &[
    b"\n[machine]\n",
    b"\n[[tasks]]\n",
    b"\n[workload]\n",
    b"\n[run]\n",
    b"\n[scheduler]\n",
    b"\n[[mechanisms]]\n",
    b"size_bytes = ",
    b"ways = ",
    b"line_bytes = ",
    b"entries = ",
    b"nodes = ",
    b"kind = ",
    b"params = ",
    b"count = ",
    b"asid = ",
    b"threads = ",
    b"batch = ",
    b"max_memory = ",
    b"\"1TiB\"",
    b"\"16777216TiB\"",
    b"\"1.5MiB\"",
    b"\"2.5ms\"",
    b"\"1M instr\"",
    b"nan",
    b"inf",
    b"-inf",
    b"-1",
    b"0",
    b"4294967296",
    b"18446744073709551616",
    b"1e300",
    b"true",
    b"\"lru\"",
    b"\"ship\"",
    b"\"drrip\"",
    b"\"plru\"",
    b"\"random\"",
    b"\"zipf\"",
    b"\"chase\"",
    b"\"cg\"",
    b"\"is\"",
    b"\"trace\"",
    b"\"round-robin\"",
    b"\"forced\"",
    b"\"hypervisor\"",
    b"\"tlb-preserve\"",
    b"\"cs-estimator\"",
    b"= {",
    b"}",
    b"[",
    b"]",
    b"\"",
    b"'",
    b".",
    b"=",
];

/// Parse `data` as a TOML configuration, validate it, and build its
/// machine and its tasks' workloads (a first batch of accesses of each).
fn configuration(data: &[u8]) -> Result<Verdict, Finding> {
    // The command line and the Python API refuse what is not UTF-8 (with
    // the file and line) before the core sees it.
    let Ok(text) = std::str::from_utf8(data) else {
        return Ok(Verdict::Rejected("not UTF-8".into()));
    };
    let mut value: serde_json::Value = match toml::from_str(text) {
        Ok(v) => v,
        // The core's own error for it.
        Err(_) => return config_error(config::from_toml_str(text).err()),
    };
    bound_memory(&mut value);
    let valid = match config::from_value(value) {
        Ok(valid) => valid,
        Err(e) => return config_error(Some(e)),
    };
    if let Err(e) = Machine::new(&valid.config.machine, valid.config.seed, "machine") {
        return positioned(e);
    }
    for (i, task) in valid.tasks.iter().enumerate() {
        let ctx = WorkloadCtx {
            seed: valid.config.seed,
            component: format!("task{i}"),
            loc: task.workload_loc.clone(),
            base_dir: None,
            thread: task.thread,
        };
        let first = task.workload.build(&ctx).and_then(|mut w| w.fill(&mut [Access::default(); 1024]));
        if let Err(e) = first {
            return positioned(e);
        }
    }
    Ok(Verdict::Accepted(0))
}

/// Lower `run.max_memory` to [`FUZZ_MEMORY`] (if `run` is a table).
fn bound_memory(value: &mut serde_json::Value) {
    let Some(doc) = value.as_object_mut() else { return };
    let run = doc.entry("run").or_insert_with(|| serde_json::json!({}));
    if let Some(run) = run.as_object_mut() {
        let asked = run.get("max_memory").and_then(|m| m.as_u64()).unwrap_or(u64::MAX);
        run.insert("max_memory".into(), asked.min(FUZZ_MEMORY).into());
    }
}

/// A rejection if every problem of a configuration error has a key (or is
/// about the whole document, and a TOML error says its line), else a finding.
fn config_error(e: Option<Error>) -> Result<Verdict, Finding> {
    let Some(e) = e else {
        return Err(Finding("TOML the parser refused was accepted by the core".into()));
    };
    let Error::Config(issues) = &e else { return positioned(e) };
    for issue in issues {
        let keyed = !issue.loc.is_empty() || ROOT_CODES.contains(&issue.code);
        let toml_placed = issue.code != "invalid_toml" || issue.message.contains("line");
        if !keyed || !toml_placed || issue.message.is_empty() {
            return Err(Finding(format!("a configuration error that does not say where: {issue:?}")));
        }
    }
    Ok(Verdict::Rejected(e.to_string()))
}

/// The seed configurations, and every preset as a machine of its own.
fn config_seeds() -> Vec<Vec<u8>> {
    let mut out = files("config");
    for name in presets::NAMES {
        // The preset's tables, without its description and source.
        let text = presets::text(name).expect("a shipped preset");
        let machine = &text[text.find("[machine]").expect("a machine table")..];
        out.push(format!("[workload]\nkind = \"stream\"\n\n{machine}").into_bytes());
    }
    out
}
