//! Access streams: trace files, synthetic generators and kernels.
//!
//! Everything that feeds a task implements [`Workload`]. Streams are pulled in
//! batches so that the engine's hot loop calls through the trait object once
//! per few thousand accesses, not once per access.

pub mod blockio;
pub mod champsim;
pub mod convert;
pub mod din;
pub mod file;
pub mod kernels;
pub mod lackey;
pub mod lines;
pub mod mrc;
pub mod native;
pub mod prefetch;
pub mod replay;
pub mod reuse;
pub mod synthetic;

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::types::Access;

/// A source of [`Access`]es for one task.
pub trait Workload: Send {
    /// Write the next accesses into `buf`, starting at index 0, and return how
    /// many were written. Returns 0 only when the stream has ended; a shorter
    /// non-zero count does not mean the end.
    fn fill(&mut self, buf: &mut [Access]) -> Result<usize>;

    /// [`Workload::fill`] into a buffer the workload may swap for one of
    /// its own, of any length: no copy for a workload that receives its
    /// accesses in buffers (one produced on another thread). The caller
    /// keeps whatever buffer it gets back, and the first count accesses of
    /// it are the stream's next ones.
    fn fill_vec(&mut self, buf: &mut Vec<Access>) -> Result<usize> {
        self.fill(buf)
    }

    /// Total number of accesses the stream will produce, if known (for
    /// progress reporting; never used to decide results).
    fn len_hint(&self) -> Option<u64> {
        None
    }

    /// At least the `instrs` of every access the last fill returned, if
    /// known without reading them (a producer on another thread measured
    /// it): the engine then need not read a chunk's accesses before the
    /// machine does to see that it ends far from every deadline.
    fn most_instrs(&self) -> Option<u32> {
        None
    }

    /// Whether the stream is one thread of a process whose threads meet at
    /// barriers ([`Workload::barriers`]); the engine then keeps it off
    /// producer threads, where its barriers would not travel.
    fn synchronizes(&self) -> bool {
        false
    }

    /// Barriers the stream crossed before the first access the last fill
    /// returned: the thread waits at them until every other live thread of
    /// its process has crossed as many. A last fill of 0 accesses may
    /// report barriers: the thread waits at them, and the next fill ends
    /// the stream.
    fn barriers(&self) -> u64 {
        0
    }

    /// Requests begun at the first access of the last fill (0 or 1): a
    /// request-driven task's stream ([`replay::Replay`]) begins each
    /// request's work with a fill of its own.
    fn requests(&self) -> u64 {
        0
    }
}

/// What a workload needs to know about where it is built.
#[derive(Debug, Clone)]
pub struct WorkloadCtx {
    /// The run's seed.
    pub seed: u64,
    /// Component path used to derive this workload's random stream, e.g. `task0`.
    pub component: String,
    /// Config key path of the workload, for error messages, e.g. `workload`.
    pub loc: String,
    /// Directory that relative trace paths are resolved against.
    pub base_dir: Option<PathBuf>,
    /// Which thread of its process the task is: its copy index and the
    /// `count` of its `[[tasks]]` entry. Multithreaded kernels take their
    /// share of the work from it; other workloads ignore it.
    pub thread: ThreadIndex,
}

/// A task's place among the threads of its process: copy `index` of the
/// `count` copies of one `[[tasks]]` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadIndex {
    /// This thread, in `[0, count)`.
    pub index: u32,
    /// Threads of the process (the entry's `count`), at least 1.
    pub count: u32,
}

impl ThreadIndex {
    /// The only thread of a single-threaded task.
    pub const SINGLE: ThreadIndex = ThreadIndex { index: 0, count: 1 };
}

impl Default for ThreadIndex {
    fn default() -> ThreadIndex {
        ThreadIndex::SINGLE
    }
}

impl WorkloadCtx {
    /// Context for a nested workload (a phase or a mix component).
    pub fn child(&self, component: &str, loc: &str) -> WorkloadCtx {
        WorkloadCtx {
            seed: self.seed,
            component: format!("{}/{component}", self.component),
            loc: crate::error::join_path(&self.loc, loc),
            base_dir: self.base_dir.clone(),
            thread: self.thread,
        }
    }
}

crate::register! {
    /// Every kind of access stream a task can run.
    family "workload", WorkloadConfig,
    fn build(&self, ctx: &WorkloadCtx) -> Result<Box<dyn Workload>>;
    "trace" => Trace(file::TraceParams),
    "stream" => Stream(synthetic::stream::StreamParams),
    "uniform" => Uniform(synthetic::uniform::UniformParams),
    "zipf" => Zipf(synthetic::zipf::ZipfParams),
    "chase" => Chase(synthetic::chase::ChaseParams),
    "phases" => Phases(synthetic::phases::PhasesParams),
    "mix" => Mix(synthetic::mix::MixParams),
    "loop" => Loop(synthetic::r#loop::LoopParams),
    "cg" => Cg(kernels::cg::CgParams),
    "mg" => Mg(kernels::mg::MgParams),
    "ft" => Ft(kernels::ft::FtParams),
    "is" => Is(kernels::is::IsParams),
    "ep" => Ep(kernels::ep::EpParams),
    "bt" => Bt(kernels::bt::BtParams),
    "sp" => Sp(kernels::sp::SpParams),
    "lu" => Lu(kernels::lu::LuParams),
    "latency" => Latency(kernels::latency::LatencyParams),
}

/// Host bytes a generator holds at most: its alias tables (a Zipf head of
/// 2^13 ranks and its bands), layouts and small buffers.
const GENERATOR_BYTES: u64 = 1 << 20;

/// Host bytes a trace reader holds at most: a `.cst` block raw and decoded
/// (2^16 records), or a text reader's decompression and line buffers.
const READER_BYTES: u64 = 8 << 20;

impl WorkloadConfig {
    /// Host bytes the workload holds at most, for the check of a run's
    /// memory before it is built (`config::footprint`): its tables and
    /// buffers, and the data of the kernels that keep theirs.
    pub fn host_bytes(&self) -> u64 {
        match self {
            WorkloadConfig::Is(p) => p.host_bytes(),
            WorkloadConfig::Mix(p) => p.host_bytes(),
            WorkloadConfig::Phases(p) => p.phases.iter().map(|ph| nested_host_bytes(&ph.workload)).sum(),
            WorkloadConfig::Trace(_) => READER_BYTES,
            _ => GENERATOR_BYTES,
        }
    }
}

/// [`WorkloadConfig::host_bytes`] of a nested workload's raw config (one
/// that does not parse is refused elsewhere, and counts nothing here).
pub(crate) fn nested_host_bytes(raw: &crate::plugin::PluginConfig) -> u64 {
    WorkloadConfig::parse(raw, "").map_or(0, |w| w.host_bytes())
}

/// A workload over accesses held in memory (tests, and streams handed over
/// from Python).
#[derive(Debug, Clone)]
pub struct VecWorkload {
    accesses: Vec<Access>,
    next: usize,
}

impl VecWorkload {
    /// Replay `accesses` once.
    pub fn new(accesses: Vec<Access>) -> VecWorkload {
        VecWorkload { accesses, next: 0 }
    }
}

impl Workload for VecWorkload {
    fn fill(&mut self, buf: &mut [Access]) -> Result<usize> {
        let n = buf.len().min(self.accesses.len() - self.next);
        buf[..n].copy_from_slice(&self.accesses[self.next..self.next + n]);
        self.next += n;
        Ok(n)
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.accesses.len() as u64)
    }
}

/// A reader of a format that is read front to back (lackey, din, ChampSim).
/// Every `Stream` is a [`Workload`] whose errors arrive after the accesses
/// read before them, and which ends for good after an error.
pub trait Stream: Send {
    /// Write accesses into `buf[*n..]`, advancing `*n`; stop when `buf` is
    /// full or the stream ends. On an error, the accesses already written
    /// are still delivered.
    fn fill_some(&mut self, buf: &mut [Access], n: &mut usize) -> Result<()>;

    /// Where the reader keeps an error until its accesses are delivered.
    fn deferred(&mut self) -> &mut Deferred;
}

/// An error waiting to be returned by a [`Stream`].
#[derive(Debug, Default)]
pub struct Deferred {
    error: Option<Error>,
    failed: bool,
}

impl<T: Stream> Workload for T {
    fn fill(&mut self, buf: &mut [Access]) -> Result<usize> {
        let deferred = self.deferred();
        if let Some(e) = deferred.error.take() {
            return Err(e);
        }
        if deferred.failed {
            return Ok(0);
        }
        let mut n = 0;
        let result = self.fill_some(buf, &mut n);
        match result {
            Ok(()) => Ok(n),
            Err(e) => {
                let deferred = self.deferred();
                deferred.failed = true;
                if n == 0 {
                    return Err(e);
                }
                deferred.error = Some(e);
                Ok(n)
            }
        }
    }
}

/// An access with every field given (the readers' tests).
#[cfg(test)]
pub(crate) fn access(kind: crate::types::AccessKind, addr: u64, size: u16, pc: u64, instrs: u32) -> Access {
    use crate::types::VirtAddr;
    Access { addr: VirtAddr(addr), pc: VirtAddr(pc), instrs, size, kind }
}

/// Drain a workload into a vector (tests and small tools only).
pub fn collect(workload: &mut dyn Workload) -> Result<Vec<Access>> {
    let mut out = Vec::new();
    let mut buf = vec![Access::default(); 4096];
    loop {
        let n = workload.fill(&mut buf)?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
}
