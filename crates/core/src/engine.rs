//! The engine: runs the tasks on the machine's cores under a scheduler.
//!
//! [`Engine::new`] builds everything from a validated config (the builder
//! step, where every config error surfaces); [`Engine::run`] simulates and
//! returns [`Results`].
//!
//! Each core has its own clock. The engine always advances the core whose
//! clock is lowest (ties: busy before idle, then the lowest id) by one chunk
//! of at most `run.batch` references of its task, so shared LLCs see the
//! cores' references in time order to within a chunk, and every scheduling
//! decision, tick and event is taken in time order exactly. A chunk ends
//! early at the next deadline: the end of the slice, the next tick, an
//! interval or window boundary, the end of warm-up. Deadlines in
//! instructions are met exactly (the chunk ends with the access that
//! reaches them); deadlines in cycles too, by shrinking chunks near them
//! to what cannot overshoot (see [`cut`]). So switch and migration points
//! do not depend on `run.batch`; only the interleaving of references of
//! different cores in a shared cache does.
//!
//! Each task's accesses are pulled in batches into its own reused buffer,
//! and a chunk is handed to the machine as one slice: the per-access loop
//! stays tight and allocation-free. Scheduling work happens once per slice.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Instant;

use crate::config::{footprint, ValidConfig};
use crate::counters::{Counts, Level};
use crate::error::{Error, Result};
use crate::events::{Event, EventRecord, Locality, Timing};
use crate::mech::{AccessCtx, EventCtx, Mechanism};
use crate::mem::machine::{Machine, Part};
use crate::results::{
    CacheResult, CoreResult, CoreTotals, Host, IntervalRow, MechanismResult, Results, SliceRow, Summary, TaskResult,
    TaskSchedCounts, TlbResult, WindowRow,
};
use crate::sched::{Expiry, SchedCtx, Scheduler, TaskState, TaskView, Topology};
use crate::trace::prefetch::Prefetched;
use crate::trace::{Workload, WorkloadCtx};
use crate::types::{Access, CoreId, TaskId};
use crate::util::alloc;

/// How far a run has come, handed to the progress callback.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// References simulated so far (warm-up included).
    pub done: u64,
    /// References the run will simulate, if known.
    pub total: Option<u64>,
}

/// References between two progress callbacks (also how often the engine
/// checks for conditions that end a run, such as exhausted memory).
const PROGRESS_EVERY: u64 = 1 << 20;

/// Most tasks whose accesses a shared pool of threads produces ahead: each
/// holds three buffers of two batches.
const POOLED_TASKS: usize = 512;

/// The least simulated work, in cycles summed over the cores that run,
/// worth running the sockets on separate threads for (each stretch starts
/// and joins threads: tens of microseconds).
const APART_WORK: u64 = 200_000;

/// What one socket runs in a stretch with the sockets apart: its cores
/// (numbered within it) with their tasks, and the tasks' address spaces.
#[derive(Default)]
struct SocketPlan {
    lanes: Vec<(usize, TaskId)>,
    spaces: Vec<usize>,
}

/// Per socket, what it runs in a stretch.
type Plan = Vec<SocketPlan>;

/// One task's stream and bookkeeping.
struct TaskRun {
    id: TaskId,
    workload: Box<dyn Workload>,
    buf: Vec<Access>,
    pos: usize,
    len: usize,
    /// At least the `instrs` of every access in `buf`, if the workload knows.
    most_instrs: Option<u32>,
    /// References run, warm-up included (for `max_accesses`).
    accesses: u64,
    /// Its workload ended or it reached its limit; the core will retire it.
    ended: bool,
    /// It was moved while running and has not run since.
    moved_live: bool,
    /// The core it left last and its lines there then (the residual measure).
    left: Option<(CoreId, [u64; Level::COUNT])>,
    counts: TaskSchedCounts,
    interval: Option<Mark>,
    window: Option<Window>,
    /// Its current schedule (since its last switch-in), for the `slices`
    /// table, with the mark of its switch-induced LLC misses at the start.
    schedule: Option<(SliceRow, Option<usize>)>,
}

/// The start of a task's current interval.
struct Mark {
    index: u64,
    start: u64,
    counts: Counts,
    /// Task instructions at which it ends.
    end: u64,
}

/// An open post-migration window.
struct Window {
    row: WindowRow,
    counts: Counts,
    end: u64,
}

/// One core's clock and state.
#[derive(Default)]
struct CoreRun {
    /// The clock is `round(instructions * base_cpi) + stall + other`.
    instructions: u64,
    stall: u64,
    /// Overhead and idle cycles.
    other: u64,
    clock: u64,
    /// Must take a scheduling decision before running again.
    pending: bool,
    /// Queue generation it last looked at and found nothing to run.
    seen: Option<u64>,
    /// End of the running task's slice: core clock and task instructions.
    until_cycles: Option<u64>,
    until_instructions: Option<u64>,
    /// The running task's counters when it switched in (or warm-up ended).
    stint: Counts,
    /// The next mark a mechanism asked for in the running slice (core
    /// clock), and its period.
    mark: Option<(u64, Option<u64>)>,
    totals: CoreTotals,
}

impl CoreRun {
    fn sync_clock(&mut self, base_cpi: f64) {
        self.clock = (self.instructions as f64 * base_cpi).round() as u64 + self.stall + self.other;
    }
}

/// What running a chunk needs of the run's settings.
#[derive(Clone, Copy)]
struct StepCtx {
    batch: usize,
    base_cpi: f64,
    /// More than any one reference can stall (for cycle deadlines, see [`cut`]).
    max_stall: u64,
    next_tick: Option<u64>,
}

impl TaskRun {
    /// Make sure accesses are buffered; false (with `ended` set, and the
    /// task's `core` to decide) if the stream ended or the task reached its
    /// `limit`.
    fn refill(&mut self, core: &mut CoreRun, limit: Option<u64>) -> Result<bool> {
        let limited = limit.is_some_and(|m| self.accesses >= m);
        if !limited && self.pos == self.len {
            self.len = self.workload.fill_vec(&mut self.buf)?;
            self.most_instrs = self.workload.most_instrs();
            self.pos = 0;
        }
        if limited || self.len == 0 {
            self.ended = true;
            core.pending = true;
            return Ok(false);
        }
        Ok(true)
    }

    /// Run the next chunk of at most `most` buffered references on `core`,
    /// cut at its deadlines, through `access` (which returns the chunk's
    /// stall cycles, cycles of mechanisms' work, and instructions); advance
    /// the core's clock and the task's view. Returns the references run and
    /// the mechanisms' cycles.
    fn run_chunk(
        &mut self,
        core: &mut CoreRun,
        view: &mut TaskView,
        ctx: &StepCtx,
        most: u64,
        access: impl FnOnce(&[Access]) -> (u64, u64, u64),
    ) -> (usize, u64) {
        let instr_marks =
            [core.until_instructions, self.interval.as_ref().map(|m| m.end), self.window.as_ref().map(|w| w.end)];
        let instr_room = instr_marks.into_iter().flatten().min().map(|m| m.saturating_sub(view.instructions));
        let cycle_deadlines = [core.until_cycles, ctx.next_tick, core.mark.map(|m| m.0)];
        let cycle_room = cycle_deadlines.into_iter().flatten().min().map(|m| m - core.clock);
        let chunk = &self.buf[self.pos..self.pos + most as usize];
        let n = cut(chunk, self.most_instrs, instr_room, cycle_room, ctx.base_cpi, ctx.max_stall);
        let (stall, extra, instructions) = access(&chunk[..n]);
        self.pos += n;
        self.accesses += n as u64;
        let before = core.clock;
        core.instructions += instructions;
        core.stall += stall;
        core.sync_clock(ctx.base_cpi);
        let ran = core.clock - before;
        view.instructions += instructions;
        view.cycles += ran;
        view.slice_instructions += instructions;
        view.slice_cycles += ran;
        (n, extra)
    }

    /// At most how many references the next chunk may take: to the next
    /// multiple of the batch size in the buffer (a producer's buffer holds
    /// several batches, and chunks end where a buffer of one batch would
    /// have: the interleaving of tasks on shared caches does not depend on
    /// who produced the accesses), and to the task's `limit`.
    fn most(&self, batch: usize, limit: Option<u64>) -> u64 {
        let left = limit.map_or(u64::MAX, |m| m - self.accesses);
        ((self.len - self.pos).min(batch - self.pos % batch) as u64).min(left)
    }

    /// After a chunk: whether the slice ended; and a look ahead, so that a
    /// task whose stream ends with its slice finishes now instead of being
    /// switched in again for nothing.
    fn close_chunk(&mut self, core: &mut CoreRun, view: &TaskView) -> Result<()> {
        let reached = |mark: Option<u64>, value: u64| mark.is_some_and(|m| value >= m);
        if reached(core.until_instructions, view.instructions) || reached(core.until_cycles, core.clock) {
            core.pending = true;
        }
        self.refill(core, view.spec.max_accesses).map(|_| ())
    }
}

/// A simulation ready to run.
pub struct Engine {
    config: ValidConfig,
    machine: Machine,
    scheduler: Box<dyn Scheduler>,
    mechanisms: Vec<Box<dyn Mechanism>>,
    per_access: bool,
    topology: Topology,
    base_cpi: f64,
    /// More than any one reference can stall (for cycle deadlines, see [`cut`]).
    max_stall: u64,
    /// Whether the sockets may run on separate threads between decisions.
    apart: bool,
    /// References simulated with the sockets apart.
    accesses_apart: u64,
    /// The host memory the run may hold (checked with the progress).
    memory_limit: Option<u64>,
    tasks: Vec<TaskRun>,
    views: Vec<TaskView>,
    queues: Vec<VecDeque<TaskId>>,
    running: Vec<Option<TaskId>>,
    cores: Vec<CoreRun>,
    unfinished: usize,
    next_tick: Option<u64>,
    /// Bumped whenever a run queue changes, so idle cores know to look again.
    generation: u64,
    /// References simulated, warm-up included.
    done: u64,
    measuring: bool,
    /// Clock of the core that ran the last warm-up reference.
    warm_time: u64,
    events: Vec<EventRecord>,
    intervals: Vec<IntervalRow>,
    windows: Vec<WindowRow>,
    slices: Vec<SliceRow>,
    /// Per row of `slices` with attributed LLC misses, the marks of its
    /// switch-induced misses at its start and end.
    slice_marks: Vec<(usize, usize, usize)>,
}

impl Engine {
    /// Build the machine, the workloads and the scheduler; `base_dir`
    /// resolves relative trace paths.
    pub fn new(config: ValidConfig, base_dir: Option<PathBuf>) -> Result<Engine> {
        Engine::with_scheduler(config, base_dir, None)
    }

    /// As [`Engine::new`], with a scheduler built elsewhere (a Python
    /// policy) instead of the configured one.
    pub fn with_scheduler(
        config: ValidConfig,
        base_dir: Option<PathBuf>,
        scheduler: Option<Box<dyn Scheduler>>,
    ) -> Result<Engine> {
        let seed = config.config.seed;
        let mut machine = Machine::new(&config.config.machine, seed, "machine")?;
        machine.add_tasks(config.tasks.len());
        machine.set_address_spaces(&config.tasks.iter().map(|t| t.info.asid).collect::<Vec<_>>());
        let scheduler = match scheduler {
            Some(s) => s,
            None => config.scheduler.build(&config.sched_build())?,
        };
        let run = &config.config.run;
        let host_cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if run.classify_thread && host_cpus > 1 {
            machine.classify_on_thread()?;
        }
        // A producer thread per task while each can have a host CPU beside
        // the simulation's; beyond that, the spare CPUs' threads shared by
        // all tasks, up to POOLED_TASKS (their buffers add up).
        let n = config.tasks.len();
        let own_threads = run.prefetch && n < host_cpus;
        let pooled = run.prefetch && !own_threads && host_cpus > 1 && n <= POOLED_TASKS;
        let mut workloads = Vec::with_capacity(n);
        for (i, spec) in config.tasks.iter().enumerate() {
            let ctx = WorkloadCtx {
                seed,
                component: format!("task{i}"),
                loc: spec.workload_loc.clone(),
                base_dir: base_dir.clone(),
                thread: spec.thread,
            };
            let mut workload = spec.workload.build(&ctx)?;
            if own_threads {
                workload = Box::new(Prefetched::new(workload, 4 * run.batch as usize)?);
            }
            workloads.push(workload);
        }
        if pooled {
            let batch = 2 * run.batch as usize;
            workloads = Prefetched::pooled(workloads, host_cpus - 1, batch)?
                .into_iter()
                .map(|p| Box::new(p) as Box<dyn crate::trace::Workload>)
                .collect();
        }
        let mut tasks = Vec::with_capacity(n);
        for (i, (spec, workload)) in config.tasks.iter().zip(workloads).enumerate() {
            let counts = TaskSchedCounts { asid: spec.info.asid.0, vm: spec.info.vm, ..Default::default() };
            tasks.push(TaskRun {
                id: TaskId(i as u32),
                workload,
                buf: alloc::filled(run.batch as usize, Access::default(), "access buffers", "run.batch")?,
                pos: 0,
                most_instrs: None,
                len: 0,
                accesses: 0,
                ended: false,
                moved_live: false,
                left: None,
                counts,
                interval: None,
                window: None,
                schedule: None,
            });
        }
        let views = config.tasks.iter().map(|spec| TaskView::new(spec.info.clone())).collect();
        let topology = config.topology();
        let cores = topology.cores() as usize;
        let mechanisms: Vec<Box<dyn Mechanism>> = (config.mechanisms.iter().enumerate())
            .map(|(i, m)| m.build(&config.mech_build(i)))
            .collect::<Result<_>>()?;
        let per_access = mechanisms.iter().any(|m| m.wants_accesses());
        // Sockets apart: nothing that crosses sockets at every reference (a
        // mechanism, a shadow, the tag directory) or counts references
        // across them (warm-up ends only in serial steps; `max_accesses`,
        // the interval and window rows are not split yet), and decisions
        // that do not look at other cores' progress (see `horizon`).
        let apart = run.parallel_sockets
            && !scheduler.reads_others_progress()
            && host_cpus > 1
            && topology.sockets > 1
            && machine.sockets_apart()
            && mechanisms.is_empty()
            && run.max_accesses.is_none()
            && config.config.stats.interval.is_none()
            && config.config.stats.window.is_none();
        Ok(Engine {
            memory_limit: footprint::limit(&config.config),
            base_cpi: config.config.machine.base_cpi,
            max_stall: machine.max_stall(),
            apart,
            accesses_apart: 0,
            next_tick: scheduler.period(),
            unfinished: config.tasks.len(),
            measuring: config.config.run.warmup_accesses == 0,
            config,
            machine,
            scheduler,
            mechanisms,
            per_access,
            topology,
            tasks,
            views,
            queues: vec![VecDeque::new(); cores],
            running: vec![None; cores],
            cores: (0..cores).map(|_| CoreRun::default()).collect(),
            generation: 0,
            done: 0,
            warm_time: 0,
            events: Vec::new(),
            intervals: Vec::new(),
            windows: Vec::new(),
            slices: Vec::new(),
            slice_marks: Vec::new(),
        })
    }

    /// Add a mechanism; it sees every event of the run.
    pub fn add_mechanism(&mut self, mechanism: Box<dyn Mechanism>) {
        self.per_access |= mechanism.wants_accesses();
        self.apart = false;
        self.mechanisms.push(mechanism);
    }

    /// The machine, for inspection.
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// References simulated so far with the sockets on separate threads
    /// (`run.parallel_sockets`): how much of the run could use them.
    pub fn accesses_apart(&self) -> u64 {
        self.accesses_apart
    }

    /// Simulate until every task has finished or `run.max_accesses`,
    /// calling `progress` about every million references; an error from the
    /// callback (e.g. an interrupt) stops the run.
    pub fn run(&mut self, progress: &mut dyn FnMut(Progress) -> Result<()>) -> Result<Results> {
        let started = Instant::now();
        let warmup = self.config.config.run.warmup_accesses;
        let limit = self.config.config.run.max_accesses.map(|m| m.saturating_add(warmup));
        let hints: Option<u64> = self.tasks.iter().map(|t| t.workload.len_hint()).sum();
        let total = match (limit, hints) {
            (Some(l), Some(h)) => Some(l.min(h)),
            (l, h) => l.or(h),
        };
        if self.measuring {
            self.start_measuring(0);
        }
        self.place_tasks()?;
        let mut next_report = PROGRESS_EVERY;
        while self.unfinished > 0 && limit.is_none_or(|l| self.done < l) {
            if let Some((horizon, plan)) = self.horizon() {
                self.run_apart(horizon, plan)?;
            }
            let c = self.lowest();
            if self.next_tick.is_some_and(|t| self.cores[c].clock >= t) {
                self.tick()?;
            } else if self.needs_decision(c) {
                self.decide(c)?;
            } else if let Some(task) = self.running[c] {
                self.step(c, task, limit)?;
            } else {
                self.wait(c)?;
            }
            if self.done >= next_report {
                next_report = self.done + PROGRESS_EVERY;
                self.check_machine()?;
                progress(Progress { done: self.done, total })?;
            }
        }
        self.check_machine()?;
        progress(Progress { done: self.done, total: Some(self.done) })?;
        if !self.measuring {
            // Everything ended inside the warm-up: nothing was measured.
            self.start_measuring(0);
        }
        self.close();
        self.machine.settle_counts()?;
        let marks = self.machine.marks();
        for &(row, open, close) in &self.slice_marks {
            self.slices[row].llc_switch_misses = marks[close] - marks[open];
        }
        Ok(self.results(self.done.min(warmup), started.elapsed().as_secs_f64()))
    }

    fn check_machine(&self) -> Result<()> {
        if self.machine.memory_exhausted() {
            return Err(Error::Simulation(
                "physical memory exhausted on every NUMA node: raise machine.memory.node_bytes".into(),
            ));
        }
        footprint::check_resident(self.memory_limit)
    }

    /// Ask the scheduler something about the state at time `now`.
    fn ask<T>(&mut self, now: u64, question: impl FnOnce(&mut dyn Scheduler, &SchedCtx) -> Result<T>) -> Result<T> {
        let ctx =
            SchedCtx { now, topology: self.topology, tasks: &self.views, queues: &self.queues, running: &self.running };
        question(self.scheduler.as_mut(), &ctx)
    }

    fn policy(&self) -> &'static str {
        self.config.scheduler.kind()
    }

    /// Put every task in the run queue the scheduler names; every core then
    /// decides what to run.
    fn place_tasks(&mut self) -> Result<()> {
        for t in 0..self.tasks.len() {
            let task = TaskId(t as u32);
            let core = self.ask(0, |s, ctx| s.place(ctx, task))?;
            self.check_core(task, core, "placed")?;
            self.queues[core.0 as usize].push_back(task);
            self.views[t].state = TaskState::Waiting(core);
        }
        self.cores.iter_mut().for_each(|c| c.pending = true);
        Ok(())
    }

    /// A scheduler's choice of `core` for `task` must exist and be allowed.
    fn check_core(&self, task: TaskId, core: CoreId, verb: &str) -> Result<()> {
        if core.0 >= self.topology.cores() || !self.views[task.0 as usize].spec.allows(core) {
            return Err(Error::Simulation(format!(
                "scheduler '{}' {verb} task {task} on core {core}, which does not exist or is outside its affinity",
                self.policy()
            )));
        }
        Ok(())
    }

    fn needs_decision(&self, c: usize) -> bool {
        let core = &self.cores[c];
        core.pending || (self.running[c].is_none() && core.seen != Some(self.generation))
    }

    /// The core to advance: lowest clock, then busy before idle, then lowest id.
    fn lowest(&self) -> usize {
        (0..self.cores.len())
            .min_by_key(|&c| {
                let idle = self.running[c].is_none() && !self.needs_decision(c);
                (self.cores[c].clock, idle, c)
            })
            .expect("a machine has cores")
    }

    fn sync_clock(&mut self, c: usize) {
        self.cores[c].sync_clock(self.base_cpi);
    }

    /// Charge `cycles` of overhead to core `c` and, if given, to a task.
    fn charge(&mut self, c: usize, task: Option<TaskId>, cycles: u64) {
        if cycles == 0 {
            return;
        }
        self.cores[c].other += cycles;
        self.sync_clock(c);
        if self.measuring {
            self.cores[c].totals.counts.overhead_cycles += cycles;
            if let Some(t) = task {
                self.tasks[t.0 as usize].counts.overhead_cycles += cycles;
            }
        }
    }

    /// Advance idle core `c` by `cycles`; only idling after the end of
    /// warm-up is measured (a core may lag behind the one that ended it).
    fn idle(&mut self, c: usize, cycles: u64) {
        let core = &mut self.cores[c];
        if self.measuring {
            core.totals.idle_cycles += (core.clock + cycles).saturating_sub(core.clock.max(self.warm_time));
        }
        core.other += cycles;
        self.sync_clock(c);
    }

    /// Record an event, hand it to the mechanisms, and charge what they cost
    /// to its core and task.
    fn emit(&mut self, time: u64, core: Option<usize>, task: Option<TaskId>, event: Event) -> Result<()> {
        let record = EventRecord { time, core: core.map(|c| CoreId(c as u32)), task, event };
        if self.measuring && self.config.config.stats.events {
            self.events.push(record);
        }
        let asid = task.map(|t| self.views[t.0 as usize].spec.asid);
        let mut extra = 0;
        for m in &mut self.mechanisms {
            extra += m.on_event(EventCtx { machine: &mut self.machine, record: &record, asid })?;
        }
        if let Some(c) = core {
            self.charge(c, task, extra);
        }
        Ok(())
    }

    /// The scheduler's periodic tick: balancing moves.
    fn tick(&mut self) -> Result<()> {
        let time = self.next_tick.expect("a tick is due");
        self.next_tick = self.scheduler.period().map(|p| time + p.max(1));
        self.emit(time, None, None, Event::Tick)?;
        let moves = self.ask(time, |s, ctx| s.balance(ctx))?;
        for m in moves {
            let t = m.task.0 as usize;
            if t >= self.views.len() {
                return Err(Error::Simulation(format!(
                    "scheduler '{}' moved task {}, which does not exist",
                    self.policy(),
                    m.task
                )));
            }
            self.check_core(m.task, m.to, "moved")?;
            match self.views[t].state {
                TaskState::Waiting(q) if q == m.to => {}
                TaskState::Waiting(q) => {
                    let queue = &mut self.queues[q.0 as usize];
                    queue.retain(|&x| x != m.task);
                    self.queues[m.to.0 as usize].push_back(m.task);
                    self.views[t].state = TaskState::Waiting(m.to);
                    self.tasks[t].moved_live = false;
                    self.generation += 1;
                }
                TaskState::Running(q) if q == m.to => {}
                TaskState::Running(q) => {
                    let c = q.0 as usize;
                    self.switch_out(c, m.task)?;
                    self.cores[c].pending = true;
                    self.move_task(m.task, m.to, Timing::Live)?;
                }
                TaskState::Finished => {
                    let message = format!("scheduler '{}' moved task {}, which has finished", self.policy(), m.task);
                    return Err(Error::Simulation(message));
                }
            }
        }
        Ok(())
    }

    /// Take a running task off core `c` (its slice is over, it moves, or it
    /// ended), closing its stint there.
    fn switch_out(&mut self, c: usize, task: TaskId) -> Result<()> {
        self.running[c] = None;
        let now = self.cores[c].clock;
        let counts = Counts::of(&self.machine.tasks[task.0 as usize], 0);
        if self.measuring {
            let stint = counts.since(&self.cores[c].stint);
            self.cores[c].totals.counts.add(&stint);
        }
        self.views[task.0 as usize].last_ran = now;
        self.machine.switched_out(task);
        self.tasks[task.0 as usize].left = Some((CoreId(c as u32), self.machine.resident(CoreId(c as u32), task)));
        self.cores[c].until_cycles = None;
        self.cores[c].until_instructions = None;
        self.cores[c].mark = None;
        self.emit(now, Some(c), Some(task), Event::SwitchOut)?;
        self.close_schedule(task, now);
        Ok(())
    }

    /// `task` was switched out at `now`: take the switch-miss estimate a
    /// mechanism published, and record the schedule in the `slices` table.
    fn close_schedule(&mut self, task: TaskId, now: u64) {
        let ti = task.0 as usize;
        let estimate = self.machine.atd().and_then(|a| a.published(task));
        self.views[ti].switch_estimate = estimate;
        let Some((mut row, opened)) = self.tasks[ti].schedule.take() else { return };
        let llc = &self.machine.tasks[ti].levels[Level::Llc as usize];
        row.end = now;
        row.instructions = self.views[ti].instructions - row.instructions;
        row.llc_misses = llc.total_misses() - row.llc_misses;
        // Switch-induced misses are classified off the simulation's path:
        // the row takes their difference once the run has settled them.
        if let (Some(open), Some(close)) = (opened, self.machine.mark_switch_misses(task, Level::Llc)) {
            self.slice_marks.push((self.slices.len(), open, close));
        }
        row.set_estimate(estimate.filter(|e| e.time > row.start));
        self.slices.push(row);
    }

    /// Queue `task` (already off any core) on `to`: at the front if live,
    /// preempting what runs there, else at the back.
    fn move_task(&mut self, task: TaskId, to: CoreId, timing: Timing) -> Result<()> {
        let d = to.0 as usize;
        self.views[task.0 as usize].state = TaskState::Waiting(to);
        self.tasks[task.0 as usize].moved_live = timing == Timing::Live;
        self.generation += 1;
        match timing {
            Timing::Delayed => self.queues[d].push_back(task),
            Timing::Live => {
                if let Some(other) = self.running[d] {
                    self.switch_out(d, other)?;
                    self.queues[d].push_front(other);
                    self.views[other.0 as usize].state = TaskState::Waiting(to);
                }
                self.queues[d].push_front(task);
                self.cores[d].pending = true;
            }
        }
        Ok(())
    }

    /// Core `c` decides: retire or requeue its task, then pick the next.
    fn decide(&mut self, c: usize) -> Result<()> {
        self.cores[c].pending = false;
        let core = CoreId(c as u32);
        let now = self.cores[c].clock;
        // A task whose slice ended and that stays in this core's queue: it
        // is switched out only if something else is picked.
        let mut requeued = None;
        if let Some(t) = self.running[c] {
            let ti = t.0 as usize;
            if self.tasks[ti].ended {
                self.switch_out(c, t)?;
                self.views[ti].state = TaskState::Finished;
                self.unfinished -= 1;
                self.close_rows(t, c);
                self.ask(now, |s, ctx| s.finished(ctx, t))?;
            } else {
                match self.ask(now, |s, ctx| s.expire(ctx, t, core))? {
                    Expiry::Move { to, timing } if to != core => {
                        self.check_core(t, to, "moved")?;
                        self.switch_out(c, t)?;
                        self.move_task(t, to, timing)?;
                    }
                    _ => {
                        self.running[c] = None;
                        self.queues[c].push_back(t);
                        self.views[ti].state = TaskState::Waiting(core);
                        requeued = Some(t);
                    }
                }
            }
        }
        let picked = self.ask(now, |s, ctx| s.pick(ctx, core))?;
        let Some(next) = picked else {
            if let Some(t) = requeued {
                // It waits in the queue now: idle cores may want it.
                self.running[c] = Some(t);
                self.switch_out(c, t)?;
                self.generation += 1;
            }
            self.cores[c].seen = Some(self.generation);
            return Ok(());
        };
        let ni = next.0 as usize;
        let TaskState::Waiting(q) = self.views.get(ni).map_or(TaskState::Finished, |v| v.state) else {
            let message =
                format!("scheduler '{}' picked task {next} for core {core}, which is not waiting", self.policy());
            return Err(Error::Simulation(message));
        };
        self.check_core(next, core, "picked")?;
        self.queues[q.0 as usize].retain(|&x| x != next);
        if requeued == Some(next) {
            // The same task goes on: a new slice, no switch.
            self.running[c] = Some(next);
            self.views[ni].state = TaskState::Running(core);
            return self.new_slice(c, next);
        }
        self.generation += 1;
        if let Some(t) = requeued {
            self.running[c] = Some(t);
            self.switch_out(c, t)?;
        }
        self.switch_in(c, next)
    }

    /// Start `task` on core `c`: migration and switch events and costs, then a slice.
    fn switch_in(&mut self, c: usize, task: TaskId) -> Result<()> {
        let ti = task.0 as usize;
        let core = CoreId(c as u32);
        // A task cannot resume before it stopped elsewhere.
        let ready = self.views[ti].last_ran;
        if ready > self.cores[c].clock {
            self.idle(c, ready - self.cores[c].clock);
        }
        let now = self.cores[c].clock;
        self.running[c] = Some(task);
        self.views[ti].state = TaskState::Running(core);
        let counts = Counts::of(&self.machine.tasks[ti], 0);
        self.cores[c].stint = counts;
        let mut cost = self.config.config.run.switch_cycles;
        let mut residual = None;
        if let (Some((left_core, left)), true) = (self.tasks[ti].left, self.measuring) {
            if left_core == core {
                let found = self.machine.resident(core, task);
                self.tasks[ti].counts.residual.add(left, found);
                residual = Some((left[Level::Llc as usize], found[Level::Llc as usize]));
            }
        }
        if self.measuring && self.config.config.stats.slices {
            let llc = &self.machine.tasks[ti].levels[Level::Llc as usize];
            let (instructions, misses) = (self.views[ti].instructions, llc.total_misses());
            let row = SliceRow::open(task.0, core.0, now, (instructions, misses), residual);
            self.tasks[ti].schedule = Some((row, self.machine.mark_switch_misses(task, Level::Llc)));
        }
        if let Some(from) = self.views[ti].last_core.filter(|&f| f != core) {
            self.machine.moved(task);
            let locality = if self.topology.same_socket(from, core) { Locality::Local } else { Locality::Remote };
            let timing = if self.tasks[ti].moved_live { Timing::Live } else { Timing::Delayed };
            if self.measuring {
                self.tasks[ti].counts.migrated(locality);
                self.cores[c].totals.migrations_in += 1;
                self.open_window(task, now, (from, core), locality, timing);
            }
            cost += self.config.config.run.migration_cycles;
            self.emit(now, Some(c), Some(task), Event::Migrate { from, to: core, locality, timing })?;
        }
        self.tasks[ti].moved_live = false;
        self.views[ti].last_core = Some(core);
        if self.measuring {
            self.tasks[ti].counts.switches += 1;
            self.cores[c].totals.switches += 1;
        }
        self.emit(now, Some(c), Some(task), Event::SwitchIn)?;
        self.charge(c, Some(task), cost);
        self.new_slice(c, task)
    }

    /// Ask the scheduler for `task`'s next slice on core `c`.
    fn new_slice(&mut self, c: usize, task: TaskId) -> Result<()> {
        let slice = self.ask(self.cores[c].clock, |s, ctx| s.quantum(ctx, task, CoreId(c as u32)))?;
        let view = &mut self.views[task.0 as usize];
        view.slice_instructions = 0;
        view.slice_cycles = 0;
        // At least one cycle or instruction, so that every slice makes progress.
        self.cores[c].until_cycles = slice.cycles.map(|n| self.cores[c].clock + n.max(1));
        self.cores[c].until_instructions = slice.instructions.map(|n| view.instructions + n.max(1));
        let mark = self.mechanisms.iter().filter_map(|m| m.mark(slice.cycles)).min_by_key(|m| m.after);
        self.cores[c].mark = mark.map(|m| (self.cores[c].clock + m.after, m.every));
        Ok(())
    }

    /// Idle core `c` found nothing to run: move its clock to the next moment
    /// something can change (another core's clock or the next tick).
    fn wait(&mut self, c: usize) -> Result<()> {
        let busy = (0..self.cores.len())
            .filter(|&d| d != c && (self.running[d].is_some() || self.needs_decision(d)))
            .map(|d| self.cores[d].clock);
        let Some(target) = busy.chain(self.next_tick).min() else {
            let waiting: Vec<String> = self.queues.iter().flatten().map(|t| t.to_string()).collect();
            return Err(Error::Simulation(format!(
                "scheduler '{}' leaves every core idle while tasks wait: {}",
                self.policy(),
                waiting.join(", ")
            )));
        };
        let now = self.cores[c].clock;
        self.idle(c, target.saturating_sub(now).max(1));
        Ok(())
    }

    /// Run one chunk of `task` on core `c`.
    fn step(&mut self, c: usize, task: TaskId, limit: Option<u64>) -> Result<()> {
        if let Some((at, every)) = self.cores[c].mark.filter(|m| self.cores[c].clock >= m.0) {
            self.cores[c].mark = every.map(|e| (at + e.max(1), Some(e)));
            return self.emit(self.cores[c].clock, Some(c), Some(task), Event::Mark);
        }
        let ti = task.0 as usize;
        if !self.tasks[ti].refill(&mut self.cores[c], self.views[ti].spec.max_accesses)? {
            return Ok(());
        }
        let ctx = self.step_ctx();
        let spec = &self.views[ti].spec;
        let mut most = self.tasks[ti].most(ctx.batch, spec.max_accesses);
        if !self.measuring {
            most = most.min(self.config.config.run.warmup_accesses - self.done);
        }
        if let Some(l) = limit {
            most = most.min(l - self.done);
        }
        let (id, asid) = (CoreId(c as u32), spec.asid);
        let Engine { machine, mechanisms, per_access, .. } = self;
        let (n, extra) = self.tasks[ti].run_chunk(&mut self.cores[c], &mut self.views[ti], &ctx, most, |chunk| {
            let counted = machine.tasks[ti].instructions;
            let (stall, extra) = if *per_access {
                let (mut stall, mut extra) = (0u64, 0u64);
                for a in chunk {
                    let cycles = machine.access(id, task, asid, a);
                    stall += cycles as u64;
                    for m in mechanisms.iter_mut() {
                        let ctx = AccessCtx { machine, core: id, task, asid, access: a, stall_cycles: cycles };
                        extra += m.on_access(ctx) as u64;
                    }
                }
                (stall, extra)
            } else {
                (machine.access_batch(id, task, asid, chunk), 0)
            };
            // The machine counted the chunk's instructions as it read it.
            (stall, extra, machine.tasks[ti].instructions - counted)
        });
        self.done += n as u64;
        self.charge(c, Some(task), extra);
        let (now, done_instr) = (self.cores[c].clock, self.views[ti].instructions);
        if !self.measuring && self.done == self.config.config.run.warmup_accesses {
            self.start_measuring(now);
        }
        let reached = |mark: Option<u64>, value: u64| mark.is_some_and(|m| value >= m);
        if reached(self.tasks[ti].interval.as_ref().map(|m| m.end), done_instr) {
            self.close_interval(task, c, true);
        }
        if reached(self.tasks[ti].window.as_ref().map(|w| w.end), done_instr) {
            self.close_window(task, true);
        }
        self.tasks[ti].close_chunk(&mut self.cores[c], &self.views[ti])
    }

    fn step_ctx(&self) -> StepCtx {
        StepCtx {
            batch: self.config.config.run.batch as usize,
            base_cpi: self.base_cpi,
            max_stall: self.max_stall,
            next_tick: self.next_tick,
        }
    }

    /// How far the sockets may run apart, and what each socket runs, if it
    /// is worth it. Up to the horizon nothing may happen that a socket
    /// could not see coming: a tick, or the wait or decision of a core that
    /// is not running. The end of a slice or a stream is seen by its own
    /// socket, which stops there ([`run_socket`]); the others may run past
    /// it, since a decision looks only at its own core and at waiting
    /// tasks (the scheduler reads no other running task's progress). The
    /// horizon is also the first slice end expected anywhere, so that no
    /// socket runs far ahead while another, stopped early, would catch up
    /// alone. See docs/performance.md, "Sockets in parallel".
    fn horizon(&self) -> Option<(u64, Plan)> {
        if !self.apart || !self.measuring {
            return None;
        }
        let mut horizon = self.next_tick.unwrap_or(u64::MAX);
        for (c, core) in self.cores.iter().enumerate() {
            if self.running[c].is_none() || self.needs_decision(c) {
                horizon = horizon.min(core.clock);
            }
            if let Some((at, _)) = core.mark {
                horizon = horizon.min(at);
            }
        }
        let running = |c: usize| self.running[c].filter(|_| !self.cores[c].pending);
        for (c, core) in self.cores.iter().enumerate() {
            let Some(t) = running(c) else { continue };
            let view = &self.views[t.0 as usize];
            let instructions = core.until_instructions.map(|u| {
                // At the task's cycles per instruction so far.
                let cpi = if view.instructions > 0 { view.cycles as f64 / view.instructions as f64 } else { 1.0 };
                let left = u.saturating_sub(view.instructions) as f64 * cpi.max(self.base_cpi);
                core.clock.saturating_add(left as u64)
            });
            horizon = [core.until_cycles, instructions].into_iter().flatten().fold(horizon, u64::min);
        }
        // Worth it: work on two sockets or more (checked before anything is
        // allocated, as this is asked before every serial step).
        let cores_per_socket = self.topology.cores_per_socket as usize;
        let below = |c: usize| running(c).filter(|_| self.cores[c].clock < horizon);
        let (mut work, mut first, mut sockets) = (0, None, 0);
        for c in (0..self.cores.len()).filter(|&c| below(c).is_some()) {
            work += horizon - self.cores[c].clock;
            let socket = c / cores_per_socket;
            if first != Some(socket) {
                (first, sockets) = (Some(socket), sockets + 1);
            }
        }
        if sockets < 2 || work < APART_WORK {
            return None;
        }
        let mut plan: Plan = (0..self.topology.sockets).map(|_| SocketPlan::default()).collect();
        let mut socket_of_space = std::collections::HashMap::new();
        for c in 0..self.cores.len() {
            let Some(t) = below(c) else { continue };
            let space = self.machine.space_of(self.views[t.0 as usize].spec.asid);
            let socket = c / cores_per_socket;
            // An address space's page table can be on one socket only.
            match *socket_of_space.entry(space).or_insert(socket) {
                s if s != socket => return None,
                _ if !plan[socket].spaces.contains(&space) => plan[socket].spaces.push(space),
                _ => {}
            }
            plan[socket].lanes.push((c % cores_per_socket, t));
        }
        Some((horizon, plan))
    }

    /// Run each socket's part of `plan` on a thread of its own (the first on
    /// this one) up to `horizon`: per socket the same chunks, in the same
    /// order, as the serial loop; sockets share no cache, so the order of
    /// chunks of different sockets does not matter. Each socket works on
    /// its slices of the machine and a share of what sockets share (the
    /// task and node counters, the page tables of its tasks, its notes),
    /// taken back afterwards.
    fn run_apart(&mut self, horizon: u64, plan: Plan) -> Result<()> {
        let spaces: Vec<Vec<usize>> = plan.iter().map(|p| p.spaces.clone()).collect();
        let ran: Vec<Vec<usize>> = plan.iter().map(|p| p.lanes.iter().map(|&(_, t)| t.0 as usize).collect()).collect();
        let mut place = vec![None; self.tasks.len()];
        for (s, p) in plan.iter().enumerate() {
            for &(c, t) in &p.lanes {
                place[t.0 as usize] = Some((s, c));
            }
        }
        let ctx = self.step_ctx();
        let cores_per_socket = self.topology.cores_per_socket as usize;
        let mut shares = self.machine.share_out(&spaces);
        let mut lanes: Vec<Vec<Lane>> = plan.iter().map(|_| Vec::new()).collect();
        for ((run, view), place) in self.tasks.iter_mut().zip(self.views.iter_mut()).zip(place) {
            if let Some((s, c)) = place {
                lanes[s].push(Lane { core: c, run, view });
            }
        }
        let sockets = self.machine.parts(&mut shares).into_iter().zip(self.cores.chunks_mut(cores_per_socket));
        let jobs: Vec<_> = sockets.zip(lanes).enumerate().filter(|(_, (_, lanes))| !lanes.is_empty()).collect();
        let done: Vec<Result<u64>> = std::thread::scope(|scope| {
            let mut jobs =
                jobs.into_iter().map(|(s, ((part, cores), lanes))| (s * cores_per_socket, part, cores, lanes));
            let here = jobs.next().expect("a plan has two sockets");
            let there: Vec<_> = jobs.map(|job| scope.spawn(|| run_socket(job, horizon, &ctx))).collect();
            let mut done = vec![run_socket(here, horizon, &ctx)];
            let lost = || Err(Error::Simulation("a thread simulating a socket stopped unexpectedly".into()));
            done.extend(there.into_iter().map(|t| t.join().unwrap_or_else(|_| lost())));
            done
        });
        self.machine.take_back(shares, &ran);
        for d in done {
            let n = d?;
            self.done += n;
            self.accesses_apart += n;
        }
        Ok(())
    }

    /// The end of warm-up, at time `now`: forget every counter; intervals start now.
    fn start_measuring(&mut self, now: u64) {
        self.measuring = true;
        self.warm_time = now;
        self.machine.reset_stats();
        self.mechanisms.iter_mut().for_each(|m| m.reset_stats());
        for (t, run) in self.tasks.iter_mut().enumerate() {
            let spec = &self.views[t].spec;
            run.counts = TaskSchedCounts { asid: spec.asid.0, vm: spec.vm, ..Default::default() };
            run.window = None;
            run.interval = self.config.interval.map(|every| Mark {
                index: 0,
                start: self.views[t].last_ran,
                counts: Counts::default(),
                end: self.views[t].instructions + every,
            });
        }
        for (c, core) in self.cores.iter_mut().enumerate() {
            core.totals = CoreTotals::default();
            core.stint = Counts::default();
            if let Some(t) = self.running[c] {
                if let Some(m) = &mut self.tasks[t.0 as usize].interval {
                    m.start = core.clock;
                }
            }
        }
    }

    fn open_window(
        &mut self,
        task: TaskId,
        now: u64,
        (from, to): (CoreId, CoreId),
        locality: Locality,
        timing: Timing,
    ) {
        let Some(size) = self.config.window else { return };
        self.close_window(task, false);
        let ti = task.0 as usize;
        let row = WindowRow {
            task: task.0,
            start: now,
            from: from.0,
            to: to.0,
            locality,
            timing,
            complete: false,
            cycles: 0.0,
            cpi: 0.0,
            counts: Counts::default(),
        };
        let counts = Counts::of(&self.machine.tasks[ti], self.tasks[ti].counts.overhead_cycles);
        self.tasks[ti].window = Some(Window { row, counts, end: self.views[ti].instructions + size });
    }

    fn close_window(&mut self, task: TaskId, complete: bool) {
        let ti = task.0 as usize;
        let Some(w) = self.tasks[ti].window.take() else { return };
        let counts = Counts::of(&self.machine.tasks[ti], self.tasks[ti].counts.overhead_cycles).since(&w.counts);
        let cycles = counts.cycles(self.base_cpi);
        let cpi = if counts.instructions > 0 { cycles / counts.instructions as f64 } else { 0.0 };
        self.windows.push(WindowRow { complete, cycles, cpi, counts, ..w.row });
    }

    /// Record `task`'s current interval (it ran on core `c`); open the next if `more`.
    fn close_interval(&mut self, task: TaskId, c: usize, more: bool) {
        let ti = task.0 as usize;
        let Some(mark) = self.tasks[ti].interval.take() else { return };
        let now = self.cores[c].clock;
        let counts = Counts::of(&self.machine.tasks[ti], self.tasks[ti].counts.overhead_cycles);
        let stretch = counts.since(&mark.counts);
        if stretch.accesses > 0 {
            self.intervals.push(IntervalRow::new(
                task.0,
                mark.index,
                (mark.start, now),
                c as u32,
                stretch,
                self.base_cpi,
            ));
        }
        if more {
            let end = mark.end + self.config.interval.expect("an interval was open");
            self.tasks[ti].interval = Some(Mark { index: mark.index + 1, start: now, counts, end });
        }
    }

    /// A task finished on core `c`: its last interval and window end.
    fn close_rows(&mut self, task: TaskId, c: usize) {
        self.close_interval(task, c, false);
        self.close_window(task, false);
    }

    /// The run ends: close the stints of running tasks and every open row.
    fn close(&mut self) {
        for c in 0..self.cores.len() {
            if let Some(t) = self.running[c] {
                let stint = Counts::of(&self.machine.tasks[t.0 as usize], 0).since(&self.cores[c].stint);
                self.cores[c].totals.counts.add(&stint);
                self.close_rows(t, c);
            }
        }
        for t in 0..self.tasks.len() {
            let task = TaskId(t as u32);
            let core = self.views[t].last_core.map_or(0, |c| c.0 as usize);
            self.close_rows(task, core);
        }
    }

    fn results(&mut self, warmup_accesses: u64, wall_seconds: f64) -> Results {
        let m = &self.machine;
        let tasks: Vec<TaskResult> = (0..self.tasks.len())
            .map(|i| {
                let name = self.views[i].spec.name.clone();
                TaskResult::new(i as u32, name, &m.tasks[i], self.tasks[i].counts, self.base_cpi)
            })
            .collect();
        let cores: Vec<CoreResult> = (0..self.cores.len())
            .map(|c| {
                let core = CoreId(c as u32);
                CoreResult::new(c as u32, self.topology.socket_of(core), self.cores[c].totals, self.base_cpi)
            })
            .collect();
        let accesses: u64 = tasks.iter().map(|t| t.stats.accesses).sum();
        let instructions: u64 = tasks.iter().map(|t| t.stats.instructions).sum();
        let cycles = cores.iter().map(|c| c.cycles).max().unwrap_or(0);
        // Rows are recorded as the cores' chunks come, which depends on
        // the batch size; their order in the results must not.
        self.intervals.sort_by_key(|r| (r.task, r.index));
        self.windows.sort_by_key(|r| (r.task, r.start));
        Results {
            version: env!("CARGO_PKG_VERSION"),
            config: self.config.to_json(),
            summary: Summary {
                tasks: tasks.len() as u64,
                accesses,
                instructions,
                cycles,
                cpi: if instructions > 0 { cycles as f64 / instructions as f64 } else { 0.0 },
                switches: tasks.iter().map(|t| t.switches).sum(),
                migrations: tasks.iter().map(|t| t.migrations_local + t.migrations_remote).sum(),
                warmup_accesses,
            },
            host: Host {
                wall_seconds,
                accesses_per_second: if wall_seconds > 0.0 {
                    (accesses + warmup_accesses) as f64 / wall_seconds
                } else {
                    0.0
                },
            },
            tasks,
            cores,
            intervals: std::mem::take(&mut self.intervals),
            windows: std::mem::take(&mut self.windows),
            slices: std::mem::take(&mut self.slices),
            events: std::mem::take(&mut self.events),
            caches: m
                .caches()
                .iter()
                .zip(m.cache_levels())
                .map(|(c, &level)| CacheResult { path: c.path.clone(), level, stats: c.stats.clone() })
                .collect(),
            tlbs: m.tlbs().iter().map(|t| TlbResult { path: t.path.clone(), stats: t.stats.clone() }).collect(),
            memory: m.node_stats(),
            mechanisms: (self.mechanisms.iter_mut().enumerate())
                .map(|(i, mech)| MechanismResult {
                    index: i as u32,
                    kind: mech.name().to_string(),
                    stats: mech.results(),
                })
                .collect(),
        }
    }
}

/// A running task, in a stretch with the sockets apart: the core it runs
/// on (numbered within its socket), its stream and its view.
struct Lane<'e> {
    core: usize,
    run: &'e mut TaskRun,
    view: &'e mut TaskView,
}

/// One socket's share of [`Engine::run_apart`]: its first core's number,
/// its part of the machine, its cores and their tasks. Runs the core with
/// the lowest clock (then the lowest number), as the serial loop does,
/// until every core is past `horizon`, or past the time at which one of
/// them must decide (what the serial loop runs before that decision);
/// returns the references run.
fn run_socket(job: (usize, Part<'_>, &mut [CoreRun], Vec<Lane<'_>>), horizon: u64, ctx: &StepCtx) -> Result<u64> {
    let (first_core, mut part, cores, mut lanes) = job;
    let (mut done, mut horizon) = (0, horizon);
    loop {
        let ready = lanes.iter_mut().filter(|l| !cores[l.core].pending && cores[l.core].clock < horizon);
        let Some(Lane { core: c, run, view }) = ready.min_by_key(|l| (cores[l.core].clock, l.core)) else {
            return Ok(done);
        };
        let core = &mut cores[*c];
        if run.refill(core, view.spec.max_accesses)? {
            let (id, task, asid) = (CoreId((first_core + *c) as u32), run.id, view.spec.asid);
            let most = run.most(ctx.batch, view.spec.max_accesses);
            let (n, _) = run.run_chunk(core, view, ctx, most, |chunk| {
                let counted = part.task(task).instructions;
                let stall = part.run(id, task, asid, chunk);
                (stall, 0, part.task(task).instructions - counted)
            });
            done += n as u64;
            run.close_chunk(core, view)?;
        }
        if core.pending {
            horizon = horizon.min(core.clock);
        }
    }
}

/// How many of `accesses` (a prefix) to run: stop after the access that
/// brings the instructions to `instr_room`, and, for a deadline `cycle_room`
/// cycles away, after the first access at which the deadline *might* be
/// reached, bounding each access's cost by its instructions at `base_cpi`
/// plus `max_stall` (plus one cycle of rounding). So a chunk never runs past
/// a deadline by more than its last access, and near a cycle deadline
/// chunks shrink to one access. `most_instrs`, if known, is at least every
/// access's instructions.
fn cut(
    accesses: &[Access],
    most_instrs: Option<u32>,
    instr_room: Option<u64>,
    cycle_room: Option<u64>,
    base_cpi: f64,
    max_stall: u64,
) -> usize {
    // Most chunks are far from every deadline: then a bound of the whole
    // chunk's totals says so, without the walk, whose chain of float
    // additions is a few cycles per access. The margin covers the rounding
    // by which that chain's sum may differ from this product (relatively at
    // most one part in 10^12 for a chunk of a few thousand accesses), and
    // both bounds only grow along the chunk: the walk would cut nowhere.
    // With `most_instrs` the bound needs no read of the accesses, which a
    // producer thread wrote and the host may have to fetch from afar: the
    // machine's reads of them are the first.
    let n = accesses.len() as u64;
    let total = most_instrs.map_or_else(|| accesses.iter().map(|a| a.instrs as u64).sum(), |m| m as u64 * n);
    let end = 1.0 + total as f64 * base_cpi + (n * max_stall) as f64;
    if instr_room.is_none_or(|r| total < r) && cycle_room.is_none_or(|r| end * (1.0 + 1e-9) + 1.0 < r as f64) {
        return accesses.len();
    }
    cut_by_walking(accesses, instr_room, cycle_room, base_cpi, max_stall)
}

/// [`cut`] access by access.
fn cut_by_walking(
    accesses: &[Access],
    instr_room: Option<u64>,
    cycle_room: Option<u64>,
    base_cpi: f64,
    max_stall: u64,
) -> usize {
    let mut instructions = 0u64;
    let mut bound = 1.0;
    for (i, a) in accesses.iter().enumerate() {
        instructions += a.instrs as u64;
        bound += a.instrs as f64 * base_cpi + max_stall as f64;
        if instr_room.is_some_and(|r| instructions >= r) || cycle_room.is_some_and(|r| bound >= r as f64) {
            return i + 1;
        }
    }
    accesses.len()
}

/// Parse, build and run a configuration given as JSON text, without progress.
pub fn simulate_json(text: &str, base_dir: Option<PathBuf>) -> Result<Results> {
    let config = crate::config::from_json_str(text)?;
    Engine::new(config, base_dir)?.run(&mut |_| Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::rng::Rng;

    #[test]
    fn a_chunk_is_cut_where_the_loop_access_by_access_cuts_it() {
        let mut rng = Rng::from_seed(3);
        for _ in 0..20_000 {
            let n = rng.below(300) as usize;
            let accesses: Vec<Access> =
                (0..n).map(|_| Access { instrs: rng.below(6) as u32, ..Access::load(0, 8) }).collect();
            let cpi = [1.0, 0.5, 0.3, 1.7][rng.below(4) as usize];
            let stall = rng.below(400);
            // Deadlines around where the chunk ends: both sides of the shortcut.
            let total = accesses.len() as u64;
            let instrs: u64 = accesses.iter().map(|a| a.instrs as u64).sum();
            let end = 1 + (instrs as f64 * cpi) as u64 + total * stall;
            let (dx, dy) = (rng.below(2 * stall + 8), rng.below(2 * stall + 8));
            let instr_room = rng.chance(0.5).then(|| (instrs + dx).saturating_sub(stall + 4).max(1));
            let cycle_room = rng.chance(0.7).then(|| (end + dy).saturating_sub(stall + 4).max(1));
            // No bound, the tightest, or a loose one: the same cut.
            let most = accesses.iter().map(|a| a.instrs).max().unwrap_or(0);
            let bound = [None, Some(most), Some(most + rng.below(4) as u32)][rng.below(3) as usize];
            assert_eq!(
                cut(&accesses, bound, instr_room, cycle_room, cpi, stall),
                cut_by_walking(&accesses, instr_room, cycle_room, cpi, stall),
                "{bound:?} {instr_room:?} {cycle_room:?} cpi {cpi} stall {stall}"
            );
        }
    }
}
