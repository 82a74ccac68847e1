//! Schedulers: who runs where, for how long.
//!
//! The engine owns the run queues (one FIFO per core) and the state of every
//! task; a [`Scheduler`] only decides. It is asked where a new task waits
//! ([`Scheduler::place`]), which task a free core runs next
//! ([`Scheduler::pick`]), for how long ([`Scheduler::quantum`]), what happens
//! to a task whose quantum is over ([`Scheduler::expire`]), and, every
//! [`Scheduler::period`] cycles, which waiting tasks to move
//! ([`Scheduler::balance`]). Decisions happen once per quantum, so they may
//! allocate; the per-access loop never calls in here.
//!
//! One policy per file, registered by one line below.

pub mod balance;
pub mod elastic;
pub mod forced;
pub mod hypervisor;
pub mod pinned;
pub mod python;
pub mod round_robin;

use std::collections::VecDeque;

use crate::error::{join_path, Error, Result};
use crate::events::Timing;
use crate::mem::atd::Estimate;
use crate::types::{Asid, CoreId, TaskId};
use crate::units::{Budget, Span};

/// The most tasks a run may have: 2^16, sixteen per core of the largest
/// machine (4096 cores).
pub const MAX_TASKS: usize = 1 << 16;

/// What a policy knows of a task: what decides where and when it may run
/// (its workload is the engine's business).
#[derive(Debug, Clone)]
pub struct TaskInfo {
    /// Name in the results.
    pub name: String,
    /// Address space.
    pub asid: Asid,
    /// Virtual machine, if any.
    pub vm: Option<u32>,
    /// Allowed cores, sorted; `None` allows every core.
    pub affinity: Option<Vec<CoreId>>,
    /// Reference limit.
    pub max_accesses: Option<u64>,
    /// Config path of its entry, e.g. `tasks[2]`, for errors.
    pub loc: String,
}

impl TaskInfo {
    /// Whether the task may run on `core`.
    pub fn allows(&self, core: CoreId) -> bool {
        self.affinity.as_ref().is_none_or(|a| a.binary_search(&core).is_ok())
    }
}

/// Sockets and cores, numbered socket-major.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Topology {
    /// Sockets.
    pub sockets: u32,
    /// Cores per socket.
    pub cores_per_socket: u32,
}

impl Topology {
    /// Total cores.
    pub fn cores(&self) -> u32 {
        self.sockets * self.cores_per_socket
    }

    /// Socket of `core`.
    pub fn socket_of(&self, core: CoreId) -> u32 {
        core.0 / self.cores_per_socket
    }

    /// Whether two cores share a socket (and its LLC).
    pub fn same_socket(&self, a: CoreId, b: CoreId) -> bool {
        self.socket_of(a) == self.socket_of(b)
    }
}

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    /// In the run queue of a core.
    Waiting(CoreId),
    /// Running on a core.
    Running(CoreId),
    /// Off every core and queue, waiting at a barrier for the other threads
    /// of its process; back in a queue when they have all arrived.
    Blocked,
    /// Its workload ended or it reached its reference limit.
    Finished,
}

/// What a policy sees of one task.
#[derive(Debug, Clone)]
pub struct TaskView {
    /// The task's static description (name, asid, vm, affinity).
    pub spec: TaskInfo,
    /// Where it is.
    pub state: TaskState,
    /// Core it ran on last, if it has run.
    pub last_core: Option<CoreId>,
    /// Clock of that core when it last stopped running (0 if it never ran).
    pub last_ran: u64,
    /// Instructions retired since the start (warm-up included).
    pub instructions: u64,
    /// Cycles spent running since the start, as counted by the cores' clocks.
    pub cycles: u64,
    /// Instructions of its current (or last) slice.
    pub slice_instructions: u64,
    /// Cycles of its current (or last) slice.
    pub slice_cycles: u64,
    /// The latest estimate of the misses a context switch costs it, as a
    /// `cs-estimator` mechanism published it (updated at each switch-out;
    /// `None` without one, or before the first).
    pub switch_estimate: Option<Estimate>,
    /// The cache domain (socket) a mechanism confined it to, if any
    /// (`region-scheduling` moves a task to the domain of the region it
    /// touches and keeps it there): it may run only on that domain's cores.
    pub cache: Option<u32>,
}

impl TaskView {
    /// A task that has not been placed yet.
    pub fn new(spec: TaskInfo) -> TaskView {
        TaskView {
            spec,
            state: TaskState::Finished,
            last_core: None,
            last_ran: 0,
            instructions: 0,
            cycles: 0,
            slice_instructions: 0,
            slice_cycles: 0,
            switch_estimate: None,
            cache: None,
        }
    }

    /// Whether it may run on `core`: its affinity and its confinement allow it.
    pub fn allows(&self, core: CoreId, topology: Topology) -> bool {
        self.spec.allows(core) && self.cache.is_none_or(|s| topology.socket_of(core) == s)
    }
}

/// The scheduling state a decision is taken on.
pub struct SchedCtx<'a> {
    /// Clock of the deciding core (for `balance`, the tick's time), in cycles.
    pub now: u64,
    /// The machine's shape.
    pub topology: Topology,
    /// Every task, indexed by id.
    pub tasks: &'a [TaskView],
    /// Run queue of each core, front first.
    pub queues: &'a [VecDeque<TaskId>],
    /// Task running on each core.
    pub running: &'a [Option<TaskId>],
}

impl SchedCtx<'_> {
    /// Tasks running or waiting on `core`.
    pub fn load(&self, core: CoreId) -> usize {
        self.queues[core.0 as usize].len() + self.running[core.0 as usize].is_some() as usize
    }

    /// Whether `task` may run on `core`.
    pub fn allows(&self, task: TaskId, core: CoreId) -> bool {
        self.tasks[task.0 as usize].allows(core, self.topology)
    }

    /// All cores, in order.
    pub fn cores(&self) -> impl Iterator<Item = CoreId> {
        (0..self.topology.cores()).map(CoreId)
    }

    /// The allowed core with the fewest tasks (lowest id on ties).
    pub fn least_loaded(&self, task: TaskId) -> CoreId {
        self.cores().filter(|&c| self.allows(task, c)).min_by_key(|&c| (self.load(c), c)).unwrap_or(CoreId(0))
    }
}

/// How long a task may run: until either limit is reached (`None`: no limit
/// of that kind; both `None`: until it finishes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Slice {
    /// Cycles of the running core.
    pub cycles: Option<u64>,
    /// Instructions of the task.
    pub instructions: Option<u64>,
}

impl Slice {
    /// A slice of one budget.
    pub fn of(budget: Budget) -> Slice {
        match budget {
            Budget::Cycles(n) => Slice { cycles: Some(n), instructions: None },
            Budget::Instructions(n) => Slice { cycles: None, instructions: Some(n) },
        }
    }

    /// The shorter of two slices, limit by limit.
    pub fn min(self, other: Slice) -> Slice {
        let pick = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        Slice { cycles: pick(self.cycles, other.cycles), instructions: pick(self.instructions, other.instructions) }
    }
}

/// What happens to a task whose slice is over and that has not finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// Back to the end of its core's run queue.
    Requeue,
    /// Move to `to`: `Live` runs it there at once (preempting what runs
    /// there, which resumes next), `Delayed` queues it at the end of `to`'s
    /// queue.
    Move {
        /// Destination core.
        to: CoreId,
        /// Live or delayed.
        timing: Timing,
    },
}

/// A balancing decision: move `task` to `to`. A waiting task changes queue
/// (its migration is delayed); a running one is moved live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    /// The task.
    pub task: TaskId,
    /// Destination core.
    pub to: CoreId,
}

/// A scheduling policy. Every hook gets the current state; hooks return
/// `Result` so that a policy written in Python can stop the run with its
/// exception.
pub trait Scheduler: Send {
    /// Run queue a task joins when the run starts (tasks are placed in id
    /// order). Default: the allowed core with the fewest tasks.
    fn place(&mut self, ctx: &SchedCtx, task: TaskId) -> Result<CoreId> {
        Ok(ctx.least_loaded(task))
    }

    /// The waiting task `core` runs next, from any queue, or `None` to leave
    /// it idle. Called when the core's task finished, its slice ended
    /// (after [`Scheduler::expire`]), or the core is idle and a queue changed.
    /// Default: the head of the core's own queue.
    fn pick(&mut self, ctx: &SchedCtx, core: CoreId) -> Result<Option<TaskId>> {
        Ok(ctx.queues[core.0 as usize].front().copied())
    }

    /// The slice `task` gets now that it starts (or keeps) running on `core`.
    fn quantum(&mut self, ctx: &SchedCtx, task: TaskId, core: CoreId) -> Result<Slice>;

    /// `task`'s slice on `core` is over and it has work left (its
    /// `slice_*` counters say how much it ran). Default: requeue it.
    fn expire(&mut self, ctx: &SchedCtx, task: TaskId, core: CoreId) -> Result<Expiry> {
        let _ = (ctx, task, core);
        Ok(Expiry::Requeue)
    }

    /// `task` finished on its core (its `slice_*` counters hold its last slice).
    fn finished(&mut self, ctx: &SchedCtx, task: TaskId) -> Result<()> {
        let _ = (ctx, task);
        Ok(())
    }

    /// `task` stops on its core to wait (at a barrier, for a server's next
    /// request, for its block I/O), its `slice_*` counters holding what it
    /// ran of its slice; once woken it joins the queue of that core.
    /// Default: nothing.
    fn blocked(&mut self, ctx: &SchedCtx, task: TaskId) -> Result<()> {
        let _ = (ctx, task);
        Ok(())
    }

    /// A mechanism confined `task`, running, to a cache domain (its view's
    /// `cache`: region scheduling's micro-schedule) and takes it off its
    /// core: the allowed core whose queue it joins. Default: the allowed
    /// core with the fewest tasks.
    fn relocate(&mut self, ctx: &SchedCtx, task: TaskId) -> Result<CoreId> {
        Ok(ctx.least_loaded(task))
    }

    /// Cycles between two calls of [`Scheduler::balance`]; `None` never calls it.
    fn period(&self) -> Option<u64> {
        None
    }

    /// The periodic tick: tasks to move.
    fn balance(&mut self, ctx: &SchedCtx) -> Result<Vec<Move>> {
        let _ = ctx;
        Ok(Vec::new())
    }

    /// Whether a decision on one core (`pick`, `quantum`, `expire`,
    /// `finished`) may read the progress (`instructions`, `cycles`,
    /// `slice_*`) of tasks running on other cores. Only if not may the
    /// engine run the sockets on separate threads between decisions
    /// (`run.parallel_sockets`): another socket's tasks may then have run
    /// past the decision's time. Default: it may.
    fn reads_others_progress(&self) -> bool {
        true
    }
}

/// What a scheduler is built from.
pub struct SchedBuild {
    /// The machine's shape.
    pub topology: Topology,
    /// Clock frequency, to convert times to cycles.
    pub frequency_ghz: f64,
    /// The tasks it will schedule.
    pub tasks: Vec<TaskInfo>,
    /// Config path of the scheduler's params, e.g. `scheduler.params`.
    pub loc: String,
}

impl SchedBuild {
    /// A span that must be above zero, as a slice.
    pub fn slice(&self, span: Span, key: &str) -> Result<Slice> {
        self.positive(span, key).map(Slice::of)
    }

    /// A span that must be above zero.
    pub fn positive(&self, span: Span, key: &str) -> Result<Budget> {
        let budget = span.resolve(self.frequency_ghz);
        if budget.amount() == 0 {
            return Err(Error::config(self.at(key), "out_of_range", format!("expected a span above 0, got {span}")));
        }
        Ok(budget)
    }

    /// A time (not instructions) above zero, in cycles.
    pub fn cycles(&self, span: Span, key: &str) -> Result<u64> {
        match self.positive(span, key)? {
            Budget::Cycles(n) => Ok(n),
            Budget::Instructions(_) => {
                Err(Error::config(self.at(key), "invalid_value", format!("expected a time or cycles, got {span}")))
            }
        }
    }

    /// The config path of one of the params.
    pub fn at(&self, key: &str) -> String {
        join_path(&self.loc, key)
    }
}

crate::register! {
    /// Every scheduling policy.
    family "scheduler", SchedulerConfig,
    fn build(&self, ctx: &SchedBuild) -> Result<Box<dyn Scheduler>>;
    "round-robin" => RoundRobin(round_robin::RoundRobinParams),
    "pinned" => Pinned(pinned::PinnedParams),
    "balance" => Balance(balance::BalanceParams),
    "forced" => Forced(forced::ForcedParams),
    "hypervisor" => Hypervisor(hypervisor::HypervisorParams),
    "python" => Python(python::PythonParams),
    "ets" => Ets(elastic::EtsParams),
}

/// The default quantum of the policies that take one: 10 ms, the Linux
/// default the elastic-time-slicing spec names.
pub fn default_quantum() -> Span {
    Span::millis(10.0)
}

#[cfg(test)]
pub(crate) mod testing {
    //! A hand-made scheduling state for the policies' unit tests.

    use super::*;

    /// `n` tasks waiting on the cores given, on `topology`.
    pub struct State {
        pub topology: Topology,
        pub specs: Vec<TaskInfo>,
        pub tasks: Vec<TaskView>,
        pub queues: Vec<VecDeque<TaskId>>,
        pub running: Vec<Option<TaskId>>,
    }

    pub fn spec(i: usize) -> TaskInfo {
        TaskInfo {
            name: format!("task{i}"),
            asid: Asid(i as u32),
            vm: None,
            affinity: None,
            max_accesses: None,
            loc: format!("tasks[{i}]"),
        }
    }

    impl State {
        pub fn new(sockets: u32, cores_per_socket: u32, specs: Vec<TaskInfo>) -> State {
            let topology = Topology { sockets, cores_per_socket };
            let cores = topology.cores() as usize;
            let tasks = specs.iter().map(|spec| TaskView::new(spec.clone())).collect();
            State { topology, specs, tasks, queues: vec![VecDeque::new(); cores], running: vec![None; cores] }
        }

        pub fn wait(&mut self, task: u32, core: u32) {
            self.queues[core as usize].push_back(TaskId(task));
            self.tasks[task as usize].state = TaskState::Waiting(CoreId(core));
        }

        pub fn run(&mut self, task: u32, core: u32) {
            self.running[core as usize] = Some(TaskId(task));
            self.tasks[task as usize].state = TaskState::Running(CoreId(core));
        }

        pub fn ctx(&self, now: u64) -> SchedCtx<'_> {
            SchedCtx { now, topology: self.topology, tasks: &self.tasks, queues: &self.queues, running: &self.running }
        }

        pub fn build(&self) -> SchedBuild {
            SchedBuild {
                topology: self.topology,
                frequency_ghz: 1.0,
                tasks: self.specs.clone(),
                loc: "scheduler.params".into(),
            }
        }
    }
}
