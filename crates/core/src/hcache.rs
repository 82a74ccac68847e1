//! The hypervisor cache simulation (seed 004, part B2; spec
//! cache-locking.md, sections 1.3-1.7 and 3.3): each VM's trace through
//! its own partition of the hypervisor cache, one VM after another as the
//! dissertation runs them, with the lines its miss table names locked,
//! its victim buffer and its replacement policy; the I/O response time of
//! its misses (spec 1.7). The partition itself is `mem::partition`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Issues, Result};
use crate::mem::partition::{miss_table, Counts, IoParams, MissCounter, Partition, Probability};
use crate::trace::blockio::{self, BlockFormat};
use crate::trace::file::TraceParams;
use crate::trace::{Workload, WorkloadCtx};
use crate::types::{Access, AccessKind};
use crate::units::ByteSize;

/// Params of a hypervisor-cache run (the `[hcache]` table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HcacheParams {
    /// Each VM's partition (default 4 KiB, the dissertation's best size).
    pub size_bytes: ByteSize,
    /// Block (line) size (default 64 B: spec 4's decision; the dissertation gives none).
    pub line_bytes: u32,
    /// Ways per set (default 4: spec 3.3's decision for the size sweeps).
    pub ways: u32,
    /// Share of the partition's lines to lock, in [0, 1) (the dissertation: 5% to 30%).
    pub lock_fraction: f64,
    /// Miss-table rows per VM, the most blocks that can be locked (default 20).
    pub miss_table: u32,
    /// How the miss table is built: `two-pass` (default: a profile of the
    /// whole trace on the unlocked partition, the lines locked from the
    /// start) or `online` (the misses of the first `online_warmup` share of
    /// the requests, the lines locked then and for the rest of the run).
    pub table: TableMode,
    /// The online table's share of the requests (default 0.1).
    pub online_warmup: f64,
    /// Install the locked blocks at the start, without a miss (default), or
    /// lock each when it first arrives.
    pub preload: bool,
    /// Victim-buffer blocks per VM (the dissertation: 12; default 0, none).
    pub victim_buffer: u32,
    /// The victim buffer's blocks come out of the partition (default: in
    /// addition to it).
    pub carve_out: bool,
    /// `lru` or `probability`.
    pub replacement: Replacement,
    /// Which references of a trace are requests (default loads only, as
    /// the dissertation's filter keeps lackey's `L` lines); of a block
    /// trace, `load` stands for reads and `store` for writes.
    pub kinds: Vec<AccessKind>,
    /// The traces are block I/O traces in this layout (`msr`, `tencent`,
    /// `alibaba`); none: memory-reference traces.
    pub block_format: Option<BlockFormat>,
    /// The I/O cost of a miss (spec 1.7).
    pub io: IoParams,
}

impl Default for HcacheParams {
    fn default() -> Self {
        HcacheParams {
            size_bytes: ByteSize(4096),
            line_bytes: 64,
            ways: 4,
            lock_fraction: 0.0,
            miss_table: 20,
            table: TableMode::TwoPass,
            online_warmup: 0.1,
            preload: true,
            victim_buffer: 0,
            carve_out: false,
            replacement: Replacement::default(),
            kinds: vec![AccessKind::Load],
            block_format: None,
            io: IoParams::default(),
        }
    }
}

/// How a VM's miss table is built (spec 1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TableMode {
    TwoPass,
    Online,
}

/// The replacement policy of every partition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Replacement {
    /// `lru` (default) or `probability` (spec 1.6).
    pub kind: PolicyName,
    /// Probability: the share of a VM's requests that builds the history (default 0.1).
    pub warmup: f64,
    /// Probability: requests in the window of current counts (default: as many as the warm-up).
    pub window: Option<u64>,
    /// Probability: when no line is below its history probability, evict
    /// the LRU line (`lru`, default) or do not install the block (`bypass`).
    pub fallback: Fallback,
}

impl Default for Replacement {
    fn default() -> Self {
        Replacement { kind: PolicyName::Lru, warmup: 0.1, window: None, fallback: Fallback::Lru }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyName {
    Lru,
    Probability,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fallback {
    Lru,
    Bypass,
}

/// One VM's run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VmResult {
    pub vm: u32,
    pub trace: String,
    #[serde(flatten)]
    pub counts: Counts,
    /// Lines of its partition.
    pub lines: u64,
    /// Lines the lock fraction asks for, and the blocks locked (fewer when
    /// the miss table is shorter or sets fill with locks).
    pub lock_wanted: u64,
    pub locked: Vec<u64>,
    /// Its miss table: (block, misses) from the unlocked profile, most first.
    pub miss_table: Vec<(u64, u64)>,
    /// Total I/O response time of its misses, in seconds (spec 1.7, eq. 3).
    pub io_seconds: f64,
}

impl HcacheParams {
    /// Check every key, naming the problems.
    pub fn validate(&self, loc: &str) -> Result<()> {
        let mut issues = Issues::default();
        let at = |k: &str| if loc.is_empty() { k.to_string() } else { format!("{loc}.{k}") };
        let line = self.line_bytes as u64;
        issues.check(line.is_power_of_two(), at("line_bytes"), "out_of_range", "expected a power of two");
        issues.check(self.ways >= 1, at("ways"), "out_of_range", "expected at least 1 way");
        issues.check(
            (0.0..1.0).contains(&self.lock_fraction),
            at("lock_fraction"),
            "out_of_range",
            format!("expected a share in [0, 1), got {}", self.lock_fraction),
        );
        issues.check(self.miss_table >= 1, at("miss_table"), "out_of_range", "expected at least 1 row");
        issues.check(
            self.online_warmup > 0.0 && self.online_warmup < 1.0,
            at("online_warmup"),
            "out_of_range",
            format!("expected a share in (0, 1), got {}", self.online_warmup),
        );
        issues.check(!self.kinds.is_empty(), at("kinds"), "out_of_range", "give at least one kind of reference");
        let r = &self.replacement;
        issues.check(
            r.warmup > 0.0 && r.warmup < 1.0,
            at("replacement.warmup"),
            "out_of_range",
            format!("expected a share in (0, 1), got {}", r.warmup),
        );
        issues.check(r.window != Some(0), at("replacement.window"), "out_of_range", "expected at least 1 request");
        issues.check(
            (0.0..=1.0).contains(&self.io.controller_hit),
            at("io.controller_hit"),
            "out_of_range",
            "expected a ratio in [0, 1]",
        );
        if line.is_power_of_two() && self.ways >= 1 && self.sets() == 0 {
            let message = format!(
                "{} B holds no set of {} ways of {line} B{}",
                self.size_bytes.0,
                self.ways,
                if self.carve_out { " once the victim buffer is carved out" } else { "" }
            );
            issues.push(at("size_bytes"), "out_of_range", message);
        }
        issues.finish()
    }

    /// Sets of a partition (its lines, less the victim buffer's if carved
    /// out, in whole sets).
    fn sets(&self) -> u64 {
        let lines = self.size_bytes.0 / self.line_bytes as u64;
        let lines = if self.carve_out { lines.saturating_sub(self.victim_buffer as u64) } else { lines };
        lines / self.ways as u64
    }
}

/// The requests of a trace: the blocks of its references of `kinds` (a
/// reference that straddles two blocks counts for its first).
pub fn blocks(path: &Path, kinds: &[AccessKind], line_bytes: u32) -> Result<Vec<u64>> {
    let shift = line_bytes.trailing_zeros();
    let mut out = Vec::new();
    for_each_reference(path, |a| {
        if kinds.contains(&a.kind) {
            out.push(a.addr.0 >> shift);
        }
    })?;
    Ok(out)
}

/// Every reference of a trace (any format the core reads), in order,
/// decoded a buffer at a time.
pub fn for_each_reference(path: &Path, mut visit: impl FnMut(&Access)) -> Result<()> {
    let ctx = WorkloadCtx {
        seed: 0,
        component: "hcache".into(),
        loc: "traces".into(),
        base_dir: None,
        thread: Default::default(),
    };
    let params = TraceParams { path: path.display().to_string(), ..TraceParams::default() };
    let mut workload: Box<dyn Workload> = params.build(&ctx)?;
    let mut buf = vec![Access::default(); 1 << 14];
    loop {
        let n = workload.fill(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        buf[..n].iter().for_each(&mut visit);
    }
}

/// Bits a block number keeps below its device's index, in a block trace.
const DEVICE_SHIFT: u32 = 48;

/// The requests of a block trace: every block of `line_bytes` each request
/// of `kinds` (reads as loads, writes as stores) covers, the device's index
/// in the top bits so that devices' blocks differ.
pub fn block_requests(path: &Path, format: BlockFormat, kinds: &[AccessKind], line_bytes: u32) -> Result<Vec<u64>> {
    Ok(request_blocks(path, format, kinds, line_bytes)?.into_iter().flat_map(|r| r.blocks).collect())
}

/// One request of a block trace, in blocks.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockReq {
    /// Nanoseconds after the trace's first request.
    pub time_ns: u64,
    /// The response time the trace recorded, if it did.
    pub response_ns: Option<u64>,
    /// The blocks it covers (see [`block_requests`]).
    pub blocks: std::ops::RangeInclusive<u64>,
}

/// The requests of a block trace of `kinds`, in the trace's order.
pub fn request_blocks(
    path: &Path,
    format: BlockFormat,
    kinds: &[AccessKind],
    line_bytes: u32,
) -> Result<Vec<BlockReq>> {
    let trace = blockio::read(path, format)?;
    let shift = line_bytes.trailing_zeros();
    let mut out = Vec::new();
    for r in trace.requests {
        let kind = if r.write { AccessKind::Store } else { AccessKind::Load };
        if !kinds.contains(&kind) || r.bytes == 0 {
            continue;
        }
        let end = r.offset.checked_add(r.bytes - 1).filter(|e| (e >> shift) >> DEVICE_SHIFT == 0);
        let Some(end) = end else {
            let message = format!(
                "a request at byte {} of {} bytes reaches beyond 2^48 blocks of {line_bytes} B",
                r.offset, r.bytes
            );
            return Err(Error::config("block_format", "out_of_range", message));
        };
        let device = (r.device as u64) << DEVICE_SHIFT;
        let blocks = device | r.offset >> shift..=device | end >> shift;
        out.push(BlockReq { time_ns: r.time_ns, response_ns: r.response_ns, blocks });
    }
    Ok(out)
}

/// Run VM `i`'s trace `traces[i]` through its partition, for every VM.
pub fn run(params: &HcacheParams, traces: &[PathBuf]) -> Result<Vec<VmResult>> {
    params.validate("")?;
    if traces.is_empty() {
        return Err(Error::config("traces", "out_of_range", "give at least one trace, one per VM"));
    }
    let kinds = &params.kinds;
    let (sets, ways) = (params.sets(), params.ways as usize);
    traces
        .iter()
        .enumerate()
        .map(|(vm, path)| {
            let blocks = match params.block_format {
                Some(format) => block_requests(path, format, kinds, params.line_bytes)?,
                None => blocks(path, kinds, params.line_bytes)?,
            };
            let mut result = simulate(params, &blocks, sets, ways);
            (result.vm, result.trace) = (vm as u32, path.display().to_string());
            Ok(result)
        })
        .collect()
}

/// One VM's requests `blocks` through a partition of `sets` x `ways`.
fn simulate(params: &HcacheParams, blocks: &[u64], sets: u64, ways: usize) -> VmResult {
    let lines = sets * ways as u64;
    let wanted = match params.lock_fraction {
        f if f > 0.0 => ((f * lines as f64).round() as u64).max(1),
        _ => 0,
    };
    let k = params.miss_table as usize;
    let r = &params.replacement;
    let probability = (r.kind == PolicyName::Probability).then(|| {
        let warmup = ((r.warmup * blocks.len() as f64).round() as u64).max(1);
        Probability::new(warmup, r.window.unwrap_or(warmup) as usize, r.fallback == Fallback::Bypass)
    });
    let mut partition = Partition::new(sets, ways, params.victim_buffer as usize, probability);
    let rows = |table: &[(u64, u64)]| table.iter().map(|&(b, _)| b).collect::<Vec<u64>>();
    let (table, locked) = match params.table {
        TableMode::TwoPass => {
            let table = miss_table(blocks, sets, ways, k);
            let locked = partition.lock(&rows(&table), wanted as usize, params.preload);
            for &b in blocks {
                partition.access(b);
            }
            (table, locked)
        }
        TableMode::Online => {
            // The warm-up's misses, then its top blocks locked where they
            // are, or when they next arrive.
            let warmup = ((params.online_warmup * blocks.len() as f64).round() as usize).min(blocks.len());
            let mut misses = MissCounter::default();
            for &b in &blocks[..warmup] {
                misses.count(b, partition.access(b));
            }
            let table = misses.top(k);
            let locked = partition.lock(&rows(&table), wanted as usize, false);
            for &b in &blocks[warmup..] {
                partition.access(b);
            }
            (table, locked)
        }
    };
    let counts = partition.counts;
    VmResult {
        vm: 0,
        trace: String::new(),
        counts,
        lines,
        lock_wanted: wanted,
        locked,
        miss_table: table,
        io_seconds: counts.misses as f64 * params.io.miss_us() * 1e-6,
    }
}
