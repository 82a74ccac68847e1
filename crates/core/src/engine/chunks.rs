//! A task's chunk of references on its core: its buffer, where the chunk
//! must end (instruction and cycle deadlines, met exactly: see [`cut`]), and
//! the counts it adds to the task and the core.

use super::{CoreRun, Engine, Mark, Window};
use crate::counters::Level;
use crate::error::Result;
use crate::events::Event;
use crate::mech::{AccessCtx, Gate, GateCtx};
use crate::mem::atd::Estimate;
use crate::results::{SliceRow, TaskSchedCounts};
use crate::sched::TaskView;
use crate::trace::Workload;
use crate::types::{Access, CoreId, TaskId};

/// One task's stream and bookkeeping.
pub(super) struct TaskRun {
    pub(super) id: TaskId,
    pub(super) workload: Box<dyn Workload>,
    pub(super) buf: Vec<Access>,
    pub(super) pos: usize,
    pub(super) len: usize,
    /// At least the `instrs` of every access in `buf`, if the workload knows.
    pub(super) most_instrs: Option<u32>,
    /// References run, warm-up included (for `max_accesses`).
    pub(super) accesses: u64,
    /// Its workload ended or it reached its limit; the core will retire it.
    pub(super) ended: bool,
    /// It was moved while running and has not run since.
    pub(super) moved_live: bool,
    /// The core it left last and its lines there then (the residual measure).
    pub(super) left: Option<(CoreId, [u64; Level::COUNT])>,
    pub(super) counts: TaskSchedCounts,
    pub(super) interval: Option<Mark>,
    pub(super) window: Option<Window>,
    /// Its current schedule (since its last switch-in), for the `slices`
    /// table, with the mark of its switch-induced LLC misses at the start.
    pub(super) schedule: Option<(SliceRow, Option<usize>)>,
    /// The switch-miss estimate a mechanism published last for the task
    /// (the schedulers see it from its next switch-out on).
    pub(super) published: Option<Estimate>,
    /// Its process's barrier group, if its threads meet at barriers.
    pub(super) group: Option<usize>,
    /// Barriers it has arrived at.
    pub(super) crossed: u64,
    /// Barriers the last fill crossed, not yet arrived at.
    pub(super) arrived: u64,
    /// When it arrived at its last barrier (once released: when it may go on).
    pub(super) arrived_at: u64,
    /// It waits at a barrier (its core will switch it out).
    pub(super) blocked: bool,
    /// It was released before its core switched it out: it goes on.
    pub(super) resume: bool,
    /// Requests the last fill began, not yet begun (a server's).
    pub(super) begun: u64,
    /// The core's clock at the last fill (a server's request before it ended then).
    pub(super) filled_at: u64,
    /// Its stream was cut short by its limit.
    pub(super) cut: bool,
    /// If it serves requests: their arrivals and the one in progress.
    pub(super) server: Option<super::requests::Server>,
    /// A co-runner's load: the run does not wait for it to end.
    pub(super) background: bool,
    /// If it issues block I/O: its requests.
    pub(super) io: Option<super::io::IoStream>,
}

/// What running a chunk needs of the run's settings.
#[derive(Clone, Copy)]
pub(super) struct StepCtx {
    pub(super) batch: usize,
    pub(super) base_cpi: f64,
    /// More than any one reference can stall (for cycle deadlines, see [`cut`]).
    pub(super) max_stall: u64,
    pub(super) next_tick: Option<u64>,
}

impl TaskRun {
    /// Make sure accesses are buffered; false (with `ended` set, and the
    /// task's `core` to decide) if the stream ended or the task reached its
    /// `limit`.
    pub(super) fn refill(&mut self, core: &mut CoreRun, limit: Option<u64>) -> Result<bool> {
        let limited = limit.is_some_and(|m| self.accesses >= m);
        // Not past barriers it has not arrived at yet (a last, empty fill's).
        if !limited && self.pos == self.len && self.arrived == 0 {
            self.len = self.workload.fill_vec(&mut self.buf)?;
            self.most_instrs = self.workload.most_instrs();
            self.arrived = self.workload.barriers();
            self.begun = self.workload.requests();
            self.filled_at = core.clock;
            self.pos = 0;
        }
        if limited || (self.len == 0 && self.arrived == 0) {
            self.cut = limited;
            self.ended = true;
            core.pending = true;
            return Ok(false);
        }
        Ok(true)
    }

    /// Run the next chunk of at most `most` buffered references on `core`,
    /// cut at its deadlines, through `access` (which returns how many of the
    /// chunk's references ran, all unless a mechanism stopped the task
    /// before one, their stall cycles, cycles of mechanisms' work, and
    /// instructions); advance the core's clock and the task's view. Returns
    /// the references run and the mechanisms' cycles.
    pub(super) fn run_chunk(
        &mut self,
        core: &mut CoreRun,
        view: &mut TaskView,
        ctx: &StepCtx,
        most: u64,
        access: impl FnOnce(&[Access]) -> (usize, u64, u64, u64),
    ) -> (usize, u64) {
        let instr_marks =
            [core.until_instructions, self.interval.as_ref().map(|m| m.end), self.window.as_ref().map(|w| w.end)];
        let instr_room = instr_marks.into_iter().flatten().min().map(|m| m.saturating_sub(view.instructions));
        let io_due = self.io.as_ref().map(|io| core.clock + io.due.saturating_sub(view.cycles));
        let cycle_deadlines = [core.until_cycles, ctx.next_tick, core.mark.map(|m| m.0), io_due];
        let cycle_room = cycle_deadlines.into_iter().flatten().min().map(|m| m - core.clock);
        let chunk = &self.buf[self.pos..self.pos + most as usize];
        let n = cut(chunk, self.most_instrs, instr_room, cycle_room, ctx.base_cpi, ctx.max_stall);
        let (n, stall, extra, instructions) = access(&chunk[..n]);
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
    pub(super) fn most(&self, batch: usize, limit: Option<u64>) -> u64 {
        let left = limit.map_or(u64::MAX, |m| m - self.accesses);
        ((self.len - self.pos).min(batch - self.pos % batch) as u64).min(left)
    }

    /// After a chunk: whether the slice ended; and a look ahead, so that a
    /// task whose stream ends with its slice finishes now instead of being
    /// switched in again for nothing.
    pub(super) fn close_chunk(&mut self, core: &mut CoreRun, view: &TaskView) -> Result<()> {
        let reached = |mark: Option<u64>, value: u64| mark.is_some_and(|m| value >= m);
        if reached(core.until_instructions, view.instructions) || reached(core.until_cycles, core.clock) {
            core.pending = true;
        }
        self.refill(core, view.spec.max_accesses).map(|_| ())
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
pub(super) fn cut(
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
pub(super) fn cut_by_walking(
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

impl Engine {
    /// Run one chunk of `task` on core `c`.
    pub(super) fn step(&mut self, c: usize, task: TaskId, limit: Option<u64>) -> Result<()> {
        if let Some((at, every)) = self.cores[c].mark.filter(|m| self.cores[c].clock >= m.0) {
            self.cores[c].mark = every.map(|e| (at + e.max(1), Some(e)));
            return self.emit(self.cores[c].clock, Some(c), Some(task), Event::Mark);
        }
        let ti = task.0 as usize;
        if !self.tasks[ti].refill(&mut self.cores[c], self.views[ti].spec.max_accesses)? {
            return Ok(());
        }
        let crossed = std::mem::take(&mut self.tasks[ti].arrived);
        if crossed > 0 && self.arrive(c, task, crossed)? {
            return Ok(());
        }
        if std::mem::take(&mut self.tasks[ti].begun) > 0 && self.begin_request(c, task)? {
            return Ok(());
        }
        if self.tasks[ti].io.as_ref().is_some_and(|io| self.views[ti].cycles >= io.due) {
            self.issue(c, task);
            return Ok(());
        }
        if self.tasks[ti].pos == self.tasks[ti].len {
            // Its last fill was empty after barriers: the next one ends it.
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
        self.machine.set_clock(self.cores[c].clock);
        let Engine { machine, mechanisms, per_access, gates, .. } = self;
        let (mut moving, mut released) = (None, false);
        let (n, extra) = self.tasks[ti].run_chunk(&mut self.cores[c], &mut self.views[ti], &ctx, most, |chunk| {
            let counted = machine.tasks[ti].instructions;
            let (ran, stall, extra) = if *per_access {
                let (mut ran, mut stall, mut extra) = (0, 0u64, 0u64);
                for a in chunk {
                    for &g in gates.iter() {
                        match mechanisms[g].gate(GateCtx { machine, core: id, task, asid, access: a }) {
                            Gate::Run { cycles } => extra += cycles,
                            Gate::Move { socket, cycles } => {
                                extra += cycles;
                                moving = Some(socket);
                                break;
                            }
                            Gate::Release => released = true,
                        }
                    }
                    if moving.is_some() {
                        break;
                    }
                    let cycles = machine.access(id, task, asid, a);
                    stall += cycles as u64;
                    for m in mechanisms.iter_mut() {
                        let ctx = AccessCtx { machine, core: id, task, asid, access: a, stall_cycles: cycles };
                        extra += m.on_access(ctx) as u64;
                    }
                    ran += 1;
                }
                (ran, stall, extra)
            } else {
                (chunk.len(), machine.access_batch(id, task, asid, chunk), 0)
            };
            // The machine counted the chunk's instructions as it read it.
            (ran, stall, extra, machine.tasks[ti].instructions - counted)
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
        if released {
            self.views[ti].cache = None;
        }
        self.tasks[ti].close_chunk(&mut self.cores[c], &self.views[ti])?;
        match moving {
            Some(socket) => self.micro_schedule(c, task, socket),
            None => Ok(()),
        }
    }

    pub(super) fn step_ctx(&self) -> StepCtx {
        StepCtx {
            batch: self.config.config.run.batch as usize,
            base_cpi: self.base_cpi,
            max_stall: self.max_stall,
            next_tick: self.next_tick,
        }
    }
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
