//! Scheduling events and the mechanisms that react to them.
//!
//! The engine records every context switch, migration and scheduler tick as
//! an [`EventRecord`] (the event log of the results) and hands each one to
//! the [`Mechanism`]s of the run, with the machine, so that a mechanism can
//! save, flush, restore or prefetch state at exactly the moment the
//! scheduler acts. A mechanism may also watch every access; that hook is off
//! unless the mechanism asks for it, so runs without one pay nothing.
//!
//! The configurable mechanisms are listed in `[[mechanisms]]` (one file
//! each, registered by one line below); they are called in that order.

pub mod aging;
pub mod aging_total;
pub mod cache_flush;
pub mod cs_estimator;
pub mod l2_restore;
pub mod l2_select;
pub mod migration_prefetch;
pub mod numa_balancing;
pub mod page_migration;
pub mod region_scheduling;
mod regions;
pub mod tlb_flush;
pub mod tlb_preserve;

use crate::error::{join_path, Issues, Result};
use crate::events::EventRecord;
use crate::mem::atd::Estimate;
use crate::mem::machine::{Machine, MachineParams};
use crate::types::{Access, Asid, CoreId, TaskId};
use crate::units::{Budget, Span};

use serde::Serialize;

/// What a mechanism sees when an event happens.
pub struct EventCtx<'a> {
    /// The machine, to flush, save or restore state.
    pub machine: &'a mut Machine,
    /// The event.
    pub record: &'a EventRecord,
    /// Address space of the event's task, if it has one.
    pub asid: Option<Asid>,
    /// What the mechanism tells the schedulers about the event's task: its
    /// latest switch-miss estimate (`TaskView::switch_estimate`, which they
    /// see from the task's next switch-out on). The engine takes it from
    /// here; nothing a mechanism publishes goes back through the machine.
    pub published: &'a mut Option<Estimate>,
}

/// What a mechanism sees of one access, after the machine ran it.
pub struct AccessCtx<'a> {
    /// The machine.
    pub machine: &'a mut Machine,
    /// Core that made the access.
    pub core: CoreId,
    /// Task that made it.
    pub task: TaskId,
    /// Its address space.
    pub asid: Asid,
    /// The access.
    pub access: &'a Access,
    /// Stall cycles the machine charged for it.
    pub stall_cycles: u32,
}

/// What a gating mechanism sees of an access before the machine runs it
/// ([`Mechanism::gate`]).
pub struct GateCtx<'a> {
    /// The machine (for its page size).
    pub machine: &'a Machine,
    /// Core about to make the access.
    pub core: CoreId,
    /// Task about to make it.
    pub task: TaskId,
    /// Its address space.
    pub asid: Asid,
    /// The access.
    pub access: &'a Access,
}

/// What a gating mechanism decides about an access before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// The access runs here, after `cycles` of the mechanism's work (a
    /// fault and its handler), charged to the core and the task.
    Run {
        /// Cycles charged before the access.
        cycles: u64,
    },
    /// The access does not run here: the task is stopped before it, charged
    /// `cycles`, and moved to a core of cache domain `socket`, to which it is
    /// confined from then on; the access is its first there.
    Move {
        /// The cache domain (socket of the machine) it moves to.
        socket: u32,
        /// Cycles charged on the core it leaves.
        cycles: u64,
    },
    /// The access runs here, and the task is confined to no domain any
    /// more (its address space went back to ordinary scheduling).
    Release,
}

/// What a mechanism sees at one of its periodic points
/// ([`Mechanism::period`]).
pub struct PeriodCtx<'a> {
    /// The machine.
    pub machine: &'a mut Machine,
    /// The point's time: every core's clock has reached it.
    pub time: u64,
    /// Per core: the task it runs, with the task's address space.
    pub running: &'a [Option<(TaskId, Asid)>],
    /// Per core: its clock (at least `time`).
    pub clocks: &'a [u64],
    /// Tasks waiting in a run queue that only their confinement to a cache
    /// domain keeps off a core idle at this point (spec 2.5's conflict),
    /// with their address spaces.
    pub blocked: &'a [(TaskId, Asid)],
    /// Tasks the mechanism releases from their cache domains (filled by it;
    /// the scheduler may then run them anywhere their affinity allows).
    pub release: &'a mut Vec<TaskId>,
}

/// A mechanism that reacts to scheduling events (TLB preservation, migration
/// prefetching, cache locking, ...).
pub trait Mechanism: Send {
    /// Name, for errors and results.
    fn name(&self) -> &str;

    /// Called once, when the engine is built and before any access: set up
    /// what the mechanism needs in the machine (a probe, a partition).
    fn attach(&mut self, machine: &mut Machine) -> Result<()> {
        let _ = machine;
        Ok(())
    }

    /// Called for every event, after the engine has updated its own state and
    /// before the task's next access. Returns extra cycles the mechanism
    /// costs; they are charged to the event's core and task (none for ticks).
    fn on_event(&mut self, ctx: EventCtx<'_>) -> Result<u64> {
        let _ = ctx;
        Ok(0)
    }

    /// Where in a slice of `slice_cycles` cycles (`None`: a slice in
    /// instructions or unbounded) the mechanism wants an [`Event::Mark`](crate::events::Event::Mark)
    /// for the running task, asked whenever a slice starts. The engine ends
    /// a chunk there exactly, as at any cycle deadline. Default: none.
    fn mark(&self, slice_cycles: Option<u64>) -> Option<Mark> {
        let _ = slice_cycles;
        None
    }

    /// Whether [`Mechanism::on_access`] should be called. Asked once when
    /// the mechanism is added; when no mechanism wants it, the engine runs
    /// accesses in batches without the hook.
    fn wants_accesses(&self) -> bool {
        false
    }

    /// Whether [`Mechanism::gate`] should be called (asked once when the
    /// mechanism is added; a gating mechanism makes the run go access by
    /// access, as [`Mechanism::wants_accesses`] does).
    fn gates_accesses(&self) -> bool {
        false
    }

    /// Called before every access when [`Mechanism::gates_accesses`] is
    /// true, in the order of the mechanisms; the first that moves the task
    /// decides, and the mechanisms after it are not asked.
    fn gate(&mut self, ctx: GateCtx<'_>) -> Gate {
        let _ = ctx;
        Gate::Run { cycles: 0 }
    }

    /// Called after every access when [`Mechanism::wants_accesses`] is true.
    /// Returns extra stall cycles.
    fn on_access(&mut self, ctx: AccessCtx<'_>) -> u32 {
        let _ = ctx;
        0
    }

    /// Every how many cycles of simulated time the mechanism acts on its
    /// own ([`Mechanism::on_period`]); asked once. Default: never.
    fn period(&self) -> Option<u64> {
        None
    }

    /// Called at each multiple of [`Mechanism::period`], once every core's
    /// clock has reached it (so every thread is at or past that point, as
    /// when a process is stopped). Returns stall cycles per core, each
    /// charged to the core and the task it runs: a stop-the-world pause,
    /// a TLB shootdown's interrupt.
    fn on_period(&mut self, ctx: PeriodCtx<'_>) -> Result<Vec<(CoreId, u64)>> {
        let _ = ctx;
        Ok(Vec::new())
    }

    /// The regions it keeps, at the end of the run (the results' `regions`
    /// table; only `region-scheduling` has any).
    fn regions(&self) -> Vec<RegionRow> {
        Vec::new()
    }

    /// Its time series, taken at the end of the run (the results' `series`
    /// table, rows of every mechanism in order; `mechanism` is set by the
    /// engine).
    fn series(&mut self) -> Vec<SeriesRow> {
        Vec::new()
    }

    /// Warm-up is over: forget every counter (the mechanism's state, such
    /// as saved entries or predictor history, stays).
    fn reset_stats(&mut self) {}

    /// The run is over: close whatever is open and return the mechanism's
    /// counters, by name (reported in this order in `Results.mechanisms`).
    fn results(&mut self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// One region of region scheduling at the end of the run (a row of the
/// `regions` table).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegionRow {
    /// Its address space.
    pub asid: u32,
    /// The page that founded it (its first page, for a given range).
    pub region: u64,
    /// `given`, `seed`, `regular` or `global`.
    pub kind: &'static str,
    /// The cache domain it is mapped to, if any.
    pub cache: Option<u32>,
    /// Its pages (touched ones, for regions found at run time).
    pub pages: u64,
    /// Its working-set estimate in pages (spec 2.7; none for a given range).
    pub working_set: Option<f64>,
}

/// One point of a mechanism's time series ([`Mechanism::series`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesRow {
    /// The mechanism's position in `mechanisms`.
    pub mechanism: u32,
    /// The address space it is of.
    pub asid: u32,
    /// When, on the mechanism's clock (region scheduling: the address
    /// space's virtual time, the cycles of its tasks' references).
    pub time: u64,
    /// What is measured (the mechanism's docs list its names).
    pub name: &'static str,
    /// What of: a cache domain, a page; 0 for the address space itself.
    pub key: u64,
    pub value: f64,
}

/// A point inside a slice, asked for by [`Mechanism::mark`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    /// Cycles after the start of the slice.
    pub after: u64,
    /// Then again every this many cycles until the slice ends.
    pub every: Option<u64>,
}

/// Declares a struct of `u64` counters and its `named()` list, in
/// declaration order, for [`Mechanism::results`].
macro_rules! counters {
    ($(#[$meta:meta])* pub struct $name:ident { $($(#[$doc:meta])* $field:ident,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct $name { $($(#[$doc])* pub $field: u64,)+ }

        impl $name {
            /// The counters by name, in declaration order.
            pub fn named(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($field), self.$field)),+]
            }
        }
    };
}
pub(crate) use counters;

/// What the params of every mechanism (one per `kind`) provide: the hooks
/// the registration below dispatches to.
pub trait MechanismParams {
    /// Type nested plug-ins and fill in their defaults, once, when the
    /// config is read (`loc` is the mechanism's path), so that the resolved
    /// config shows them. Most mechanisms have none.
    fn resolve(&mut self, loc: &str) -> Result<()> {
        let _ = loc;
        Ok(())
    }

    /// Build the mechanism, or a config error at the key that is wrong.
    fn build(&self, ctx: &MechBuild) -> Result<Box<dyn Mechanism>>;
}

/// What a configured mechanism is built from.
pub struct MechBuild<'a> {
    /// The machine it will act on (validated).
    pub machine: &'a MachineParams,
    /// The address spaces of the run's tasks, sorted, each once.
    pub asids: Vec<u32>,
    /// Config path of the mechanism, e.g. `mechanisms[0]`.
    pub loc: String,
}

impl MechBuild<'_> {
    /// The config path of one of the params.
    pub fn at(&self, key: &str) -> String {
        join_path(&join_path(&self.loc, "params"), key)
    }

    /// Param `key`, a time span, in cycles at the machine's clock; at least
    /// `least`, else an issue at the key (and 0).
    pub fn cycles(&self, issues: &mut Issues, key: &str, span: Span, least: u64) -> u64 {
        match span.resolve(self.machine.frequency_ghz) {
            Budget::Cycles(c) if c >= least => c,
            _ => {
                let what = if least > 0 { "a time above 0" } else { "a time" };
                issues.push(self.at(key), "invalid_value", format!("expected {what} (or cycles), got {span}"));
                0
            }
        }
    }
}

crate::register! {
    /// Every configurable mechanism (`[[mechanisms]]`).
    family "mechanism", MechanismConfig,
    fn build(&self, ctx: &MechBuild) -> Result<Box<dyn Mechanism>>;
    fn resolve(&mut self, loc: &str) -> Result<()>;
    "tlb-flush" => TlbFlush(tlb_flush::TlbFlushParams),
    "tlb-preserve" => TlbPreserve(tlb_preserve::TlbPreserveParams),
    "cache-flush" => CacheFlush(cache_flush::CacheFlushParams),
    "l2-restore" => L2Restore(l2_restore::L2RestoreParams),
    "migration-prefetch" => MigrationPrefetch(migration_prefetch::MigrationPrefetchParams),
    "cs-estimator" => CsEstimator(cs_estimator::CsEstimatorParams),
    "page-migration" => PageMigration(page_migration::PageMigrationParams),
    "numa-balancing" => NumaBalancing(numa_balancing::NumaBalancingParams),
    "region-scheduling" => RegionScheduling(region_scheduling::RegionSchedulingParams),
}
