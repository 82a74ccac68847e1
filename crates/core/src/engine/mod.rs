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
//! to what cannot overshoot (see `chunks::cut`). So switch and migration points
//! do not depend on `run.batch`; only the interleaving of references of
//! different cores in a shared cache does.
//!
//! Each task's accesses are pulled in batches into its own reused buffer,
//! and a chunk is handed to the machine as one slice: the per-access loop
//! stays tight and allocation-free. Scheduling work happens once per slice.
//!
//! The files of this folder: `build` (the engine from a configuration),
//! `chunks` (a task's chunk of references and where it must end), `rows`
//! (warm-up, intervals, windows and the results), `planner` (the sockets
//! on separate threads between decisions); this file holds the run loop and
//! the scheduling decisions and events.

mod barriers;
mod build;
mod chunks;
mod io;
mod planner;
mod requests;
mod rows;

use chunks::{StepCtx, TaskRun};

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::path::PathBuf;
use std::time::Instant;

use crate::config::{footprint, ValidConfig};
use crate::counters::{Counts, Level};
use crate::error::{Error, Result};
use crate::events::{Event, EventRecord, Locality, Timing};
use crate::mech::{EventCtx, Mechanism, PeriodCtx};
use crate::mem::machine::Machine;
use crate::results::{CoreTotals, IntervalRow, RequestRow, Results, SliceRow, WindowRow};
use crate::sched::{Expiry, SchedCtx, Scheduler, TaskState, TaskView, Topology};
use crate::thinprov::BlockCache;
use crate::types::{Asid, CoreId, TaskId};

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

/// A simulation ready to run.
pub struct Engine {
    config: ValidConfig,
    machine: Machine,
    scheduler: Box<dyn Scheduler>,
    mechanisms: Vec<Box<dyn Mechanism>>,
    /// Accesses run one at a time: a mechanism watches or gates them.
    per_access: bool,
    /// The mechanisms that gate accesses ([`Mechanism::gate`]), in order.
    gates: Vec<usize>,
    topology: Topology,
    base_cpi: f64,
    /// More than any one reference can stall (for cycle deadlines, see `chunks::cut`).
    max_stall: u64,
    /// Whether the sockets may run on separate threads between decisions.
    apart: bool,
    /// References simulated with the sockets apart.
    accesses_apart: u64,
    /// How the run uses host threads for the caches, for `host.threads`.
    threads: String,
    /// The host memory the run may hold (checked with the progress).
    memory_limit: Option<u64>,
    tasks: Vec<TaskRun>,
    views: Vec<TaskView>,
    queues: Vec<VecDeque<TaskId>>,
    running: Vec<Option<TaskId>>,
    cores: Vec<CoreRun>,
    unfinished: usize,
    next_tick: Option<u64>,
    /// Per mechanism with a period: its index, its next point and period.
    periods: Vec<(usize, u64, u64)>,
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
    /// The threads of each process whose threads meet at barriers.
    groups: Vec<Vec<TaskId>>,
    /// Sleeping tasks (servers waiting for a request, VMs for their block
    /// I/O), by when they wake.
    timers: BinaryHeap<Reverse<(u64, u32)>>,
    /// The requests that ended.
    requests: Vec<RequestRow>,
    /// The hypervisor's block cache, if tasks issue block I/O.
    block_cache: Option<BlockCache>,
}

impl Engine {
    /// Add a mechanism; it sees every event of the run.
    pub fn add_mechanism(&mut self, mut mechanism: Box<dyn Mechanism>) -> Result<()> {
        mechanism.attach(&mut self.machine)?;
        if mechanism.gates_accesses() {
            self.gates.push(self.mechanisms.len());
        }
        self.per_access |= !self.gates.is_empty() || mechanism.wants_accesses();
        self.apart = false;
        if let Some(p) = mechanism.period() {
            self.periods.push((self.mechanisms.len(), p.max(1), p.max(1)));
        }
        self.mechanisms.push(mechanism);
        Ok(())
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
            if let Some(p) = self.periods.iter().position(|&(_, at, _)| self.cores[c].clock >= at) {
                self.period(p)?;
            } else if self.next_wake().is_some_and(|t| self.cores[c].clock >= t) {
                self.wake();
            } else if self.next_tick.is_some_and(|t| self.cores[c].clock >= t) {
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
        self.machine.finish_sampling();
        self.machine.settle_counts()?;
        let marks = self.machine.marks();
        for &(row, open, close) in &self.slice_marks {
            self.slices[row].llc_switch_misses = marks[close] - marks[open];
        }
        Ok(self.results(self.done.min(warmup), started.elapsed().as_secs_f64()))
    }

    fn check_machine(&self) -> Result<()> {
        self.machine.check_split()?;
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
        if core.0 >= self.topology.cores() || !self.views[task.0 as usize].allows(core, self.topology) {
            return Err(Error::Simulation(format!(
                "scheduler '{}' {verb} task {task} on core {core}, which does not exist or is outside its affinity \
                 (or the cache domain a mechanism confined it to)",
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
        let (mut extra, mut published) = (0, None);
        for m in &mut self.mechanisms {
            extra +=
                m.on_event(EventCtx { machine: &mut self.machine, record: &record, asid, published: &mut published })?;
        }
        if let (Some(t), Some(estimate)) = (task, published) {
            self.tasks[t.0 as usize].published = Some(estimate);
        }
        if let Some(c) = core {
            self.charge(c, task, extra);
        }
        Ok(())
    }

    /// Mechanism `periods[p]`'s point: every core has reached it.
    fn period(&mut self, p: usize) -> Result<()> {
        let (m, time, every) = self.periods[p];
        self.periods[p].1 = time + every;
        let running: Vec<_> =
            (self.running.iter()).map(|r| r.map(|t| (t, self.views[t.0 as usize].spec.asid))).collect();
        let clocks: Vec<u64> = self.cores.iter().map(|c| c.clock).collect();
        let blocked = self.blocked_by_confinement();
        let mut release = Vec::new();
        let ctx = PeriodCtx {
            machine: &mut self.machine,
            time,
            running: &running,
            clocks: &clocks,
            blocked: &blocked,
            release: &mut release,
        };
        for (core, cycles) in self.mechanisms[m].on_period(ctx)? {
            let c = core.0 as usize;
            self.charge(c, self.running[c], cycles);
        }
        for t in release {
            if let Some(view) = self.views.get_mut(t.0 as usize) {
                view.cache = None;
                self.generation += 1; // idle cores look again
            }
        }
        Ok(())
    }

    /// Waiting tasks that only their cache domain keeps off an idle core
    /// (one running nothing, its queue empty), with their address spaces.
    fn blocked_by_confinement(&self) -> Vec<(TaskId, Asid)> {
        let idle: Vec<CoreId> = (0..self.cores.len())
            .filter(|&c| self.running[c].is_none() && self.queues[c].is_empty())
            .map(|c| CoreId(c as u32))
            .collect();
        if idle.is_empty() {
            return Vec::new();
        }
        let blocked = |v: &TaskView| {
            matches!(v.state, TaskState::Waiting(_))
                && v.cache.is_some()
                && idle.iter().any(|&c| v.spec.allows(c) && !v.allows(c, self.topology))
        };
        (self.views.iter().enumerate())
            .filter(|(_, v)| blocked(v))
            .map(|(t, v)| (TaskId(t as u32), v.spec.asid))
            .collect()
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
                // It goes back to the queue it left when it is released.
                TaskState::Blocked => {}
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

    /// `task` was switched out at `now`: show the schedulers the switch-miss
    /// estimate a mechanism published last, and record the schedule in the
    /// `slices` table.
    fn close_schedule(&mut self, task: TaskId, now: u64) {
        let ti = task.0 as usize;
        let estimate = self.tasks[ti].published;
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

    /// A mechanism stopped `task`, running on core `c`, before an access
    /// and moves it to cache domain `socket` (a micro-schedule): confine it
    /// there and queue it on the core of the domain the scheduler names; the
    /// access is its first there.
    fn micro_schedule(&mut self, c: usize, task: TaskId, socket: u32) -> Result<()> {
        let ti = task.0 as usize;
        self.views[ti].cache = Some(socket);
        let to = self.ask(self.cores[c].clock, |s, ctx| s.relocate(ctx, task))?;
        if !self.views[ti].allows(to, self.topology) {
            return Err(Error::Simulation(format!(
                "a mechanism moved task {task} to cache domain {socket}, none of whose cores its affinity allows"
            )));
        }
        self.switch_out(c, task)?;
        self.cores[c].pending = true;
        self.move_task(task, to, Timing::Delayed)
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
            if self.tasks[ti].blocked {
                self.ask(now, |s, ctx| s.blocked(ctx, t))?;
                self.switch_out(c, t)?;
                self.views[ti].state = TaskState::Blocked;
            } else if std::mem::take(&mut self.tasks[ti].resume) {
                // Released before it left the core: it goes on when the last arrived.
                let at = self.tasks[ti].arrived_at;
                if at > now {
                    self.idle(c, at - now);
                }
                return Ok(());
            } else if self.tasks[ti].ended {
                self.switch_out(c, t)?;
                self.views[ti].state = TaskState::Finished;
                self.unfinished -= !self.tasks[ti].background as usize;
                self.end_requests(t);
                self.close_rows(t, c);
                self.ask(now, |s, ctx| s.finished(ctx, t))?;
                // The threads waiting for it at a barrier wait no more.
                if let Some(g) = self.tasks[ti].group {
                    self.release(g, now)?;
                }
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
        self.start_request(task, self.cores[c].clock);
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
        let Some(target) = busy.chain(self.next_tick).chain(self.next_wake()).min() else {
            let mut waiting: Vec<String> = self.queues.iter().flatten().map(|t| t.to_string()).collect();
            let blocked = (0..self.tasks.len()).filter(|&t| self.tasks[t].blocked);
            waiting.extend(blocked.map(|t| format!("{} (at barrier {})", TaskId(t as u32), self.tasks[t].crossed)));
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
}

/// Parse, build and run a configuration given as JSON text, without progress.
pub fn simulate_json(text: &str, base_dir: Option<PathBuf>) -> Result<Results> {
    let config = crate::config::from_json_str(text)?;
    Engine::new(config, base_dir)?.run(&mut |_| Ok(()))
}
