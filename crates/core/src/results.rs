//! The results of a run: the [`Results`] document that leaves the core as
//! JSON, and its rows (per task, core, interval, post-migration window,
//! schedule, cache, TLB, node and mechanism).
//!
//! Per-cache counters live in each [`Cache`](crate::mem::cache::Cache) and
//! [`Tlb`](crate::mem::tlb::Tlb), and what is attributed to a task (its
//! hits and misses at each level, the [`Counts`] of a stretch of its
//! execution) in `counters`; the rows here are built from them when the
//! run ends.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::counters::{Counts, Level, Mpki, NodeStats, PerLevel, TaskStats};
use crate::events::{EventRecord, Locality, Timing};
use crate::mech::{RegionRow, SeriesRow};
use crate::mem::cache::CacheStats;
use crate::mem::machine::{SampledPage, Traffic};
use crate::mem::tlb::TlbStats;
use crate::thinprov::ProvisionRun;

fn ratio(a: f64, b: u64) -> f64 {
    if b > 0 {
        a / b as f64
    } else {
        0.0
    }
}

/// One task's row in the results.
#[derive(Debug, Clone, Serialize)]
pub struct TaskResult {
    /// Task index.
    pub task: u32,
    /// Task name.
    pub name: String,
    /// Address space.
    pub asid: u32,
    /// Virtual machine, if any.
    pub vm: Option<u32>,
    /// Cycles spent: `instructions * base_cpi + stall_cycles + overhead_cycles`.
    pub cycles: f64,
    /// Cycles per instruction.
    pub cpi: f64,
    /// Cycles of switch and migration costs (and mechanisms) charged to it.
    pub overhead_cycles: u64,
    /// Times it was switched in.
    pub switches: u64,
    /// Migrations within a socket.
    pub migrations_local: u64,
    /// Migrations across sockets.
    pub migrations_remote: u64,
    /// Misses per thousand instructions.
    pub mpki: Mpki,
    /// Lines it found again on returning to a core.
    pub residual: Residual,
    /// The counters.
    #[serde(flatten)]
    pub stats: TaskStats,
}

impl TaskResult {
    /// The row of a task from its counters.
    pub fn new(task: u32, name: String, stats: &TaskStats, sched: TaskSchedCounts, base_cpi: f64) -> TaskResult {
        let counts = Counts::of(stats, sched.overhead_cycles);
        let cycles = counts.cycles(base_cpi);
        TaskResult {
            task,
            name,
            asid: sched.asid,
            vm: sched.vm,
            cycles,
            cpi: ratio(cycles, stats.instructions),
            overhead_cycles: sched.overhead_cycles,
            switches: sched.switches,
            migrations_local: sched.migrations[0],
            migrations_remote: sched.migrations[1],
            mpki: counts.mpki(),
            residual: sched.residual,
            stats: stats.clone(),
        }
    }
}

/// What the scheduler did to one task.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskSchedCounts {
    /// Address space.
    pub asid: u32,
    /// Virtual machine.
    pub vm: Option<u32>,
    /// Overhead cycles.
    pub overhead_cycles: u64,
    /// Switch-ins.
    pub switches: u64,
    /// Migrations, local then remote.
    pub migrations: [u64; 2],
    /// Lines it left on cores and found again when it came back.
    pub residual: Residual,
}

/// The residual-lines measure: when a task comes back to the core it last
/// ran on, how many of the lines it left there (in the caches that core
/// uses, brought in on its behalf) it finds again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Residual {
    /// Switch-ins on the core the task last left.
    pub returns: u64,
    /// Its lines in each level when it left, summed over those returns.
    pub left: PerLevel,
    /// Its lines in each level when it came back, summed over those returns.
    pub found: PerLevel,
}

impl Residual {
    /// Count a return to a core where the task left `left` lines and finds `found`.
    pub fn add(&mut self, left: [u64; Level::COUNT], found: [u64; Level::COUNT]) {
        self.returns += 1;
        for l in 0..Level::COUNT {
            self.left.0[l] += left[l];
            self.found.0[l] += found[l];
        }
    }
}

impl TaskSchedCounts {
    /// Count a migration.
    pub fn migrated(&mut self, locality: Locality) {
        self.migrations[(locality == Locality::Remote) as usize] += 1;
    }
}

/// One core's row in the results.
#[derive(Debug, Clone, Serialize)]
pub struct CoreResult {
    /// Core index.
    pub core: u32,
    /// Its socket.
    pub socket: u32,
    /// Cycles of its clock since warm-up: running, idle and overhead.
    pub cycles: u64,
    /// Cycles with nothing to run.
    pub idle_cycles: u64,
    /// Cycles per instruction while running (idle excluded).
    pub cpi: f64,
    /// Tasks switched in.
    pub switches: u64,
    /// Tasks that arrived by migration.
    pub migrations_in: u64,
    /// Misses per thousand instructions.
    pub mpki: Mpki,
    /// What its tasks did on it.
    #[serde(flatten)]
    pub counts: Counts,
}

/// One row of the time series: a task's counters over `stats.interval` of
/// its instructions (the last row of a task may be shorter).
#[derive(Debug, Clone, Serialize)]
pub struct IntervalRow {
    /// Task index.
    pub task: u32,
    /// Interval number, from 0 at the end of warm-up.
    pub index: u64,
    /// Clock of its core at the interval's start and end.
    pub start: u64,
    /// See `start`.
    pub end: u64,
    /// Core it ran on at the end.
    pub core: u32,
    /// Cycles of the task in the interval.
    pub cycles: f64,
    /// Its CPI.
    pub cpi: f64,
    /// The counters.
    #[serde(flatten)]
    pub counts: Counts,
}

/// A task's first `stats.window` instructions after one of its migrations.
#[derive(Debug, Clone, Serialize)]
pub struct WindowRow {
    /// Task index.
    pub task: u32,
    /// Clock of the destination when the task arrived.
    pub start: u64,
    /// Source core.
    pub from: u32,
    /// Destination core.
    pub to: u32,
    /// Same socket or not.
    pub locality: Locality,
    /// Live or delayed.
    pub timing: Timing,
    /// False when the task migrated again, finished or the run ended first.
    pub complete: bool,
    /// Cycles of the task in the window.
    pub cycles: f64,
    /// Its CPI.
    pub cpi: f64,
    /// The counters.
    #[serde(flatten)]
    pub counts: Counts,
}

impl IntervalRow {
    /// A row from the counters of the stretch.
    pub fn new(task: u32, index: u64, span: (u64, u64), core: u32, counts: Counts, base_cpi: f64) -> IntervalRow {
        let cycles = counts.cycles(base_cpi);
        let cpi = ratio(cycles, counts.instructions);
        IntervalRow { task, index, start: span.0, end: span.1, core, cycles, cpi, counts }
    }
}

impl CoreResult {
    /// A row from a core's totals.
    pub fn new(core: u32, socket: u32, totals: CoreTotals, base_cpi: f64) -> CoreResult {
        let c = totals.counts;
        CoreResult {
            core,
            socket,
            cycles: (c.instructions as f64 * base_cpi).round() as u64
                + c.stall_cycles
                + c.overhead_cycles
                + totals.idle_cycles,
            idle_cycles: totals.idle_cycles,
            cpi: ratio(c.cycles(base_cpi), c.instructions),
            switches: totals.switches,
            migrations_in: totals.migrations_in,
            mpki: c.mpki(),
            counts: c,
        }
    }
}

/// A core's counters since warm-up.
#[derive(Debug, Clone, Copy, Default)]
pub struct CoreTotals {
    /// What its tasks did on it; `overhead_cycles` is the core's.
    pub counts: Counts,
    /// Idle cycles.
    pub idle_cycles: u64,
    /// Switch-ins.
    pub switches: u64,
    /// Arrivals by migration.
    pub migrations_in: u64,
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

/// One request of a server task (`[[tasks]] requests`), in core cycles:
/// it arrived, its work began to run, its work ended. Its response time is
/// `end - arrival`, of which `start - arrival` it waited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RequestRow {
    pub task: u32,
    /// Its index among the task's requests.
    pub request: u64,
    pub arrival: u64,
    pub start: u64,
    pub end: u64,
}

/// One schedule of a task: from a switch-in to the next switch-out (a task
/// that keeps its core for another slice stays in the same schedule).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SliceRow {
    /// The task.
    pub task: u32,
    /// The core it ran on.
    pub core: u32,
    /// Core clock at the switch-in and at the switch-out.
    pub start: u64,
    /// See `start`.
    pub end: u64,
    /// Instructions retired.
    pub instructions: u64,
    /// LLC demand misses.
    pub llc_misses: u64,
    /// Of those, switch-induced (0 unless `llc` is in `machine.attribution`):
    /// the cost of the switch *before* this schedule.
    pub llc_switch_misses: u64,
    /// LLC lines of the task on this core when it last left it and now
    /// (`None` when it last ran elsewhere, or never).
    pub residual_left: Option<u64>,
    /// See `residual_left`.
    pub residual_found: Option<u64>,
    /// The switch-miss estimate published in this schedule (`None` without
    /// a `cs-estimator`, or when no emulated switch happened in it): the
    /// predicted cost of the switch *after* it.
    pub estimate: Option<u64>,
    /// The two halves' sampled counts behind it.
    pub c1: Option<u64>,
    /// See `c1`.
    pub c2: Option<u64>,
    /// The count a full tag directory (every set) made over the same window.
    pub full: Option<u64>,
    /// Whether the halves agreed (else a scheduler keeps the slice it had).
    pub reliable: Option<bool>,
}

impl SliceRow {
    /// A schedule opening at `start`, with the task's instructions and LLC
    /// misses so far (closed by subtracting).
    pub fn open(task: u32, core: u32, start: u64, so_far: (u64, u64), residual: Option<(u64, u64)>) -> SliceRow {
        let (instructions, llc_misses) = so_far;
        SliceRow {
            task,
            core,
            start,
            instructions,
            llc_misses,
            residual_left: residual.map(|r| r.0),
            residual_found: residual.map(|r| r.1),
            ..Default::default()
        }
    }

    /// Fill in the estimate columns.
    pub fn set_estimate(&mut self, estimate: Option<crate::mem::atd::Estimate>) {
        self.estimate = estimate.map(|e| e.misses);
        self.c1 = estimate.map(|e| e.count.halves[0]);
        self.c2 = estimate.map(|e| e.count.halves[1]);
        self.full = estimate.map(|e| e.count.full);
        self.reliable = estimate.map(|e| e.reliable);
    }
}

/// Run-wide totals.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// Tasks.
    pub tasks: u64,
    /// Memory references simulated after warm-up.
    pub accesses: u64,
    /// Instructions retired after warm-up.
    pub instructions: u64,
    /// Cycles of the core whose clock went furthest (the makespan).
    pub cycles: u64,
    /// Cycles per instruction: `cycles / instructions` (for one task, its CPI).
    pub cpi: f64,
    /// Context switches (switch-ins).
    pub switches: u64,
    /// Migrations.
    pub migrations: u64,
    /// References skipped for warm-up (caches warmed, stats discarded).
    pub warmup_accesses: u64,
}

/// How long the host took: the one part of the results that is not a
/// function of the configuration and seed, kept apart so that two runs'
/// results compare equal without it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Host {
    /// Wall-clock seconds the simulation took.
    pub wall_seconds: f64,
    /// Simulated references (warm-up included) per wall-clock second.
    pub accesses_per_second: f64,
    /// How the caches used host threads: split by set over two, or one
    /// and why (see `run.split_sets`).
    pub threads: String,
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
    /// The host's timings.
    pub host: Host,
    /// Per task.
    pub tasks: Vec<TaskResult>,
    /// Per core.
    pub cores: Vec<CoreResult>,
    /// Per task and interval of `stats.interval` instructions.
    pub intervals: Vec<IntervalRow>,
    /// Per migration: the post-migration window of `stats.window` instructions.
    pub windows: Vec<WindowRow>,
    /// Per schedule of a task (`stats.slices`), in the order they ended.
    pub slices: Vec<SliceRow>,
    /// The event log.
    pub events: Vec<EventRecord>,
    /// Per cache instance.
    pub caches: Vec<CacheResult>,
    /// Per TLB instance.
    pub tlbs: Vec<TlbResult>,
    /// Per NUMA node.
    pub memory: Vec<NodeStats>,
    /// Per requesting core and home node: the interconnect transactions,
    /// when coherence was on (threads sharing an address space; none:
    /// left out).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub traffic: Vec<Traffic>,
    /// Per sampled page and requesting node, with `stats.pages` (none:
    /// left out).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pages: Vec<SampledPage>,
    /// Per mechanism, in the order of `mechanisms` (none: left out).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mechanisms: Vec<MechanismResult>,
    /// The regions a `region-scheduling` mechanism keeps at the end (none:
    /// left out).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub regions: Vec<RegionRow>,
    /// The mechanisms' time series (none: left out).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<SeriesRow>,
    /// Per request of the server tasks that ended in the run, by task and
    /// index (none: left out).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<RequestRow>,
    /// The hypervisor's block cache and the VMs' requests through it
    /// (`[block_cache]`; none: left out). Its times are in seconds of the
    /// run from its start, warm-up included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_cache: Option<ProvisionRun>,
}

/// The counters of one mechanism of the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MechanismResult {
    /// Its position in `mechanisms`.
    pub index: u32,
    /// Its kind, e.g. `tlb-preserve`.
    pub kind: String,
    /// Its counters, by name (see `docs/mechanisms.md`), serialised as a
    /// table in this order.
    #[serde(serialize_with = "named_counters")]
    pub stats: Vec<(&'static str, u64)>,
}

fn named_counters<S: Serializer>(counters: &[(&'static str, u64)], s: S) -> Result<S::Ok, S::Error> {
    let mut m = s.serialize_map(Some(counters.len()))?;
    for (name, n) in counters {
        m.serialize_entry(name, n)?;
    }
    m.end()
}
