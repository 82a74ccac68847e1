//! What is counted for each task, level and node as a run goes: the
//! counters the memory hierarchy keeps (a task's hits and misses per level,
//! its TLB and memory counts, the misses its shadows attribute to a cause)
//! and the [`Counts`] of a stretch of its execution (a stint on a core, an
//! interval, a post-migration window). The results document that reports
//! them is `results`.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// Why a miss the shadow would have hit happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The task was switched out since it last used the line.
    Switch,
    /// The task moved to another core since it last used the line.
    Migration,
    /// Another task sharing the cache evicted the line while this one ran.
    Sharing,
}

/// Misses the shadows would have hit, by cause and access kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Induced {
    /// Switch-induced, by kind.
    pub switch: [u64; 3],
    /// Migration-induced, by kind.
    pub migration: [u64; 3],
    /// Sharing-induced, by kind.
    pub sharing: [u64; 3],
}

impl Induced {
    /// Count a miss of access kind `kind` (index) caused by `cause`.
    #[inline]
    pub fn add(&mut self, cause: Cause, kind: usize) {
        match cause {
            Cause::Switch => self.switch[kind] += 1,
            Cause::Migration => self.migration[kind] += 1,
            Cause::Sharing => self.sharing[kind] += 1,
        }
    }

    /// All induced misses.
    pub fn total(&self) -> u64 {
        [self.switch, self.migration, self.sharing].iter().flatten().sum()
    }
}

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

    /// Whether the core writes into caches of this level directly (the
    /// L1s); below them a store is a read for ownership.
    pub fn receives_stores(self) -> bool {
        matches!(self, Level::L1i | Level::L1d)
    }

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

/// A count per cache level (demand misses, resident lines), indexed by
/// [`Level`]; serialised as a table `{l1i, l1d, l2, llc}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PerLevel(pub [u64; Level::COUNT]);

impl Serialize for PerLevel {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(Level::COUNT))?;
        for (level, n) in [Level::L1i, Level::L1d, Level::L2, Level::Llc].iter().zip(self.0) {
            m.serialize_entry(level.name(), &n)?;
        }
        m.end()
    }
}

/// What a stretch of one task's execution did: the difference of two
/// snapshots of its counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// References.
    pub accesses: u64,
    /// Instructions.
    pub instructions: u64,
    /// Memory stall cycles.
    pub stall_cycles: u64,
    /// Scheduling overhead cycles (switch and migration costs, mechanisms).
    pub overhead_cycles: u64,
    /// Demand misses per level.
    pub misses: PerLevel,
    /// L1 TLB misses.
    pub tlb_misses: u64,
    /// Page walks.
    pub walks: u64,
}

impl Counts {
    /// A snapshot of a task's counters, with its overhead cycles.
    pub fn of(stats: &TaskStats, overhead_cycles: u64) -> Counts {
        Counts {
            accesses: stats.accesses,
            instructions: stats.instructions,
            stall_cycles: stats.stall_cycles,
            overhead_cycles,
            misses: PerLevel(std::array::from_fn(|l| stats.levels[l].total_misses())),
            tlb_misses: stats.tlb.l1_misses,
            walks: stats.tlb.walks,
        }
    }

    /// What happened between snapshot `start` and this one.
    pub fn since(&self, start: &Counts) -> Counts {
        Counts {
            accesses: self.accesses - start.accesses,
            instructions: self.instructions - start.instructions,
            stall_cycles: self.stall_cycles - start.stall_cycles,
            overhead_cycles: self.overhead_cycles - start.overhead_cycles,
            misses: PerLevel(std::array::from_fn(|l| self.misses.0[l] - start.misses.0[l])),
            tlb_misses: self.tlb_misses - start.tlb_misses,
            walks: self.walks - start.walks,
        }
    }

    /// Add another stretch.
    pub fn add(&mut self, other: &Counts) {
        self.accesses += other.accesses;
        self.instructions += other.instructions;
        self.stall_cycles += other.stall_cycles;
        self.overhead_cycles += other.overhead_cycles;
        for l in 0..Level::COUNT {
            self.misses.0[l] += other.misses.0[l];
        }
        self.tlb_misses += other.tlb_misses;
        self.walks += other.walks;
    }

    /// Cycles of the stretch: instructions at `base_cpi`, stalls, overhead.
    pub fn cycles(&self, base_cpi: f64) -> f64 {
        self.instructions as f64 * base_cpi + (self.stall_cycles + self.overhead_cycles) as f64
    }

    /// Misses per thousand instructions.
    pub fn mpki(&self) -> Mpki {
        let per_kilo = |n: u64| if self.instructions > 0 { n as f64 * 1000.0 / self.instructions as f64 } else { 0.0 };
        let [l1i, l1d, l2, llc] = self.misses.0.map(per_kilo);
        Mpki { l1i, l1d, l2, llc, tlb: per_kilo(self.tlb_misses), walks: per_kilo(self.walks) }
    }
}

/// Misses per thousand instructions, per level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Mpki {
    /// L1 instruction cache.
    pub l1i: f64,
    /// L1 data cache.
    pub l1d: f64,
    /// L2.
    pub l2: f64,
    /// LLC.
    pub llc: f64,
    /// L1 TLBs.
    pub tlb: f64,
    /// Page walks.
    pub walks: f64,
}

/// What one NUMA node served (a row of the results).
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
    /// Of `reads`, those by cores of other nodes: lines that crossed the
    /// interconnect to leave this node.
    pub remote_reads: u64,
    /// Of `writes`, those from the caches of other nodes' sockets.
    pub remote_writes: u64,
}

impl NodeStats {
    /// Add `other`'s reads and writes (not its pages: frames are counted
    /// where they are allocated).
    pub fn add_traffic(&mut self, other: &NodeStats) {
        self.reads += other.reads;
        self.writes += other.writes;
        self.remote_reads += other.remote_reads;
        self.remote_writes += other.remote_writes;
    }
}
