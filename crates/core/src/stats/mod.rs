//! Counters per task, and the serialisable results of a run.
//!
//! Per-cache counters live in each [`Cache`](crate::mem::cache::Cache) and
//! [`Tlb`](crate::mem::tlb::Tlb); this module holds what is attributed to a
//! task (its own hits and misses at each level, its instructions and cycles)
//! and the [`Results`] document that leaves the core as JSON.

pub mod attribution;

use serde::Serialize;

use crate::mem::cache::CacheStats;
use crate::mem::tlb::TlbStats;
use crate::stats::attribution::Induced;

/// Cache levels as seen by a task (its L1s, its L2, its socket's LLC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[repr(u8)]
pub enum Level {
    /// Level-1 instruction cache.
    L1i = 0,
    /// Level-1 data cache.
    L1d = 1,
    /// Private level-2 cache.
    L2 = 2,
    /// Shared last-level cache.
    Llc = 3,
}

impl Level {
    /// Number of levels.
    pub const COUNT: usize = 4;

    /// Name used in stats keys and config sections.
    pub fn name(self) -> &'static str {
        match self {
            Level::L1i => "l1i",
            Level::L1d => "l1d",
            Level::L2 => "l2",
            Level::Llc => "llc",
        }
    }
}

/// A task's demand hits and misses at one level, by access kind
/// (load, store, ifetch).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LevelCounters {
    /// Hits by kind.
    pub hits: [u64; 3],
    /// Misses by kind.
    pub misses: [u64; 3],
    /// Misses on lines the cache had never held, by kind (when the level is
    /// attributed, only those not counted as induced).
    pub compulsory: [u64; 3],
    /// Misses the task's isolated shadow would have hit, by cause (zero
    /// unless the level is in `machine.attribution`); the rest of the
    /// non-compulsory misses are capacity/conflict misses.
    pub induced: Induced,
}

impl LevelCounters {
    /// Total misses.
    pub fn total_misses(&self) -> u64 {
        self.misses.iter().sum()
    }

    /// Total accesses.
    pub fn total_accesses(&self) -> u64 {
        self.hits.iter().sum::<u64>() + self.total_misses()
    }
}

/// A task's address translations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TlbCounters {
    /// L1 TLB hits (data and instruction TLBs together).
    pub l1_hits: u64,
    /// L1 TLB misses.
    pub l1_misses: u64,
    /// Second-level TLB hits.
    pub l2_hits: u64,
    /// Second-level TLB misses.
    pub l2_misses: u64,
    /// First-level TLB misses its isolated shadow would have hit, by cause.
    pub l1_induced: Induced,
    /// Second-level TLB misses its isolated shadow would have hit, by cause.
    pub l2_induced: Induced,
    /// Page walks.
    pub walks: u64,
    /// Cycles spent in page walks.
    pub walk_cycles: u64,
}

/// Everything attributed to one task.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TaskStats {
    /// Memory references made.
    pub accesses: u64,
    /// Instructions retired.
    pub instructions: u64,
    /// Cycles added by the memory hierarchy (translation and data).
    pub stall_cycles: u64,
    /// Per level, indexed by [`Level`].
    pub levels: [LevelCounters; Level::COUNT],
    /// Line reads served by memory on the task's own node.
    pub memory_local: u64,
    /// Line reads served by memory on another node.
    pub memory_remote: u64,
    /// Address translation.
    pub tlb: TlbCounters,
}

/// One task's row in the results.
#[derive(Debug, Clone, Serialize)]
pub struct TaskResult {
    /// Task index.
    pub task: u32,
    /// Task name.
    pub name: String,
    /// Cycles spent: `instructions * base_cpi + stall_cycles`.
    pub cycles: f64,
    /// Cycles per instruction.
    pub cpi: f64,
    /// The counters.
    #[serde(flatten)]
    pub stats: TaskStats,
}

/// One cache instance's row in the results.
#[derive(Debug, Clone, Serialize)]
pub struct CacheResult {
    /// Component path, e.g. `socket0/core0/l1d`.
    pub path: String,
    /// Which level it is.
    pub level: Level,
    /// The counters.
    #[serde(flatten)]
    pub stats: CacheStats,
}

/// One TLB instance's row in the results.
#[derive(Debug, Clone, Serialize)]
pub struct TlbResult {
    /// Component path, e.g. `socket0/core0/dtlb`.
    pub path: String,
    /// The counters.
    #[serde(flatten)]
    pub stats: TlbStats,
}

/// One NUMA node's row in the results.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NodeStats {
    /// Node index.
    pub node: u32,
    /// Lines read from this node.
    pub reads: u64,
    /// Lines written back to this node.
    pub writes: u64,
    /// Pages allocated on this node.
    pub pages: u64,
}

/// Run-wide totals.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// Memory references simulated after warm-up.
    pub accesses: u64,
    /// Instructions retired after warm-up.
    pub instructions: u64,
    /// Cycles of the slowest core.
    pub cycles: u64,
    /// Cycles per instruction: `cycles / instructions`.
    pub cpi: f64,
    /// References skipped for warm-up (caches warmed, stats discarded).
    pub warmup_accesses: u64,
    /// Wall-clock seconds the simulation took.
    pub wall_seconds: f64,
    /// Simulated references per wall-clock second.
    pub accesses_per_second: f64,
}

/// Everything a run reports; serialised to JSON for Python.
#[derive(Debug, Clone, Serialize)]
pub struct Results {
    /// cachesched version that produced the results.
    pub version: &'static str,
    /// The resolved configuration (presets applied, defaults filled in).
    pub config: serde_json::Value,
    /// Totals.
    pub summary: Summary,
    /// Per task.
    pub tasks: Vec<TaskResult>,
    /// Per cache instance.
    pub caches: Vec<CacheResult>,
    /// Per TLB instance.
    pub tlbs: Vec<TlbResult>,
    /// Per NUMA node.
    pub memory: Vec<NodeStats>,
}
