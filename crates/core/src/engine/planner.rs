//! The sockets apart: how far the sockets may run on separate threads
//! before a scheduling decision (the horizon), and the run of each socket on
//! its own thread up to it (see docs/performance.md, "Sockets in parallel").

use super::{CoreRun, Engine, StepCtx, TaskRun};
use crate::error::{Error, Result};
use crate::mem::machine::Part;
use crate::sched::TaskView;
use crate::types::{CoreId, TaskId};

/// The least simulated work, in cycles summed over the cores that run,
/// worth running the sockets on separate threads for (each stretch starts
/// and joins threads: tens of microseconds).
pub(super) const APART_WORK: u64 = 200_000;

/// What one socket runs in a stretch with the sockets apart: its cores
/// (numbered within it) with their tasks, and the tasks' address spaces.
#[derive(Default)]
pub(super) struct SocketPlan {
    pub(super) lanes: Vec<(usize, TaskId)>,
    pub(super) spaces: Vec<usize>,
}

/// Per socket, what it runs in a stretch.
pub(super) type Plan = Vec<SocketPlan>;

/// A running task, in a stretch with the sockets apart: the core it runs
/// on (numbered within its socket), its stream and its view.
pub(super) struct Lane<'e> {
    pub(super) core: usize,
    pub(super) run: &'e mut TaskRun,
    pub(super) view: &'e mut TaskView,
}

/// One socket's share of [`Engine::run_apart`]: its first core's number,
/// its part of the machine, its cores and their tasks. Runs the core with
/// the lowest clock (then the lowest number), as the serial loop does,
/// until every core is past `horizon`, or past the time at which one of
/// them must decide (what the serial loop runs before that decision);
/// returns the references run.
pub(super) fn run_socket(
    job: (usize, Part<'_>, &mut [CoreRun], Vec<Lane<'_>>),
    horizon: u64,
    ctx: &StepCtx,
) -> Result<u64> {
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
                (chunk.len(), stall, 0, part.task(task).instructions - counted)
            });
            done += n as u64;
            run.close_chunk(core, view)?;
        }
        if core.pending {
            horizon = horizon.min(core.clock);
        }
    }
}

impl Engine {
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
    pub(super) fn horizon(&self) -> Option<(u64, Plan)> {
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
    pub(super) fn run_apart(&mut self, horizon: u64, plan: Plan) -> Result<()> {
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
}
