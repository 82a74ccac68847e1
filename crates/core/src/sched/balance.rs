//! `balance`: round-robin per core plus periodic load balancing, in the
//! style of Linux's CFS balancer and DynamoRIO's drmemtrace scheduler.
//!
//! Every `period` the balancer evens out the run queues: while some core has
//! at least `imbalance` more tasks than the least loaded one, it moves one
//! waiting task there, taking it from a core of the same socket first (the
//! LLC is shared) and preferring a task that last ran on the destination (its
//! lines may still be there). A task that stopped running less than
//! `migration_threshold` ago is cache-hot and stays. An idle core also takes
//! a waiting task at once (`idle_steal`), by the same preferences.
//!
//! `cache_aware` adds the cache-aware load balancing of the Linux patch
//! series (Zijlstra, RFC March 2025; Chen Yu and Tim Chen, v2-v4 Dec 2025 to
//! Apr 2026). Per process (address space) it keeps each LLC's occupancy, the
//! cycles its threads ran there, halved every 10 ms (the series' epoch); the
//! LLC of the highest occupancy is the process's preferred LLC. Each pass
//! first pulls the process's threads there (waiting ones change queue,
//! running ones move live) to its least loaded cores, unless the process
//! has more threads than the LLC has cores, and stops when the LLC is
//! overloaded (as many tasks as cores); ordinary balancing then takes no
//! thread away from its preferred LLC unless that LLC is over-full (more
//! tasks than cores).

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use super::{default_quantum, Move, SchedBuild, SchedCtx, Scheduler, Slice, TaskState};
use crate::error::{Error, Result};
use crate::types::{Asid, CoreId, TaskId};
use crate::units::{Budget, Span};

/// Params of `balance`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BalanceParams {
    /// Slice of every task.
    pub quantum: Span,
    /// Time between two balancing passes.
    pub period: Span,
    /// Difference in tasks (running plus waiting) between two cores that
    /// triggers a move; at least 1.
    pub imbalance: u32,
    /// A task that stopped running less than this long ago is not moved.
    pub migration_threshold: Span,
    /// Prefer moving a task to the core it last ran on.
    pub prefer_last_core: bool,
    /// Take tasks from cores of the same socket before remote ones.
    pub same_socket_first: bool,
    /// A core with nothing to run takes a waiting task from another core.
    pub idle_steal: bool,
    /// Pull each process's threads onto the LLC where they ran most.
    pub cache_aware: bool,
}

impl Default for BalanceParams {
    fn default() -> Self {
        BalanceParams {
            quantum: default_quantum(),
            period: Span::millis(4.0),
            imbalance: 2,
            migration_threshold: Span::cycles(0),
            prefer_last_core: true,
            same_socket_first: true,
            idle_steal: true,
            cache_aware: false,
        }
    }
}

impl BalanceParams {
    /// Build the policy.
    pub fn build(&self, ctx: &SchedBuild) -> Result<Box<dyn Scheduler>> {
        if self.imbalance == 0 {
            return Err(Error::config(ctx.at("imbalance"), "out_of_range", "expected at least 1"));
        }
        let hot_cycles = match self.migration_threshold.resolve(ctx.frequency_ghz) {
            Budget::Cycles(n) => n,
            Budget::Instructions(_) => {
                return Err(Error::config(ctx.at("migration_threshold"), "invalid_value", "expected a time or cycles"))
            }
        };
        let period = ctx.cycles(self.period, "period")?;
        let epoch = Span::millis(10.0).resolve(ctx.frequency_ghz).amount() as f64;
        Ok(Box::new(Balance {
            quantum: ctx.slice(self.quantum, "quantum")?,
            period,
            hot_cycles,
            params: self.clone(),
            decay: 0.5f64.powf(period as f64 / epoch),
            occupancy: BTreeMap::new(),
        }))
    }
}

struct Balance {
    quantum: Slice,
    period: u64,
    hot_cycles: u64,
    params: BalanceParams,
    /// `cache_aware`: what occupancy keeps of itself from one pass to the next.
    decay: f64,
    /// `cache_aware`: per process, per LLC (socket), its threads' decayed cycles there.
    occupancy: BTreeMap<Asid, Vec<f64>>,
}

impl Balance {
    /// Cores to take a task from for `dst`, best first: loaded enough, same
    /// socket first if asked, then the most loaded, then the lowest id.
    fn sources(&self, ctx: &SchedCtx, loads: &[usize], dst: CoreId) -> Vec<CoreId> {
        let need = loads[dst.0 as usize] + self.params.imbalance as usize;
        let mut found: Vec<CoreId> = ctx.cores().filter(|&c| c != dst && loads[c.0 as usize] >= need).collect();
        found.sort_by_key(|&c| {
            let remote = self.params.same_socket_first && !ctx.topology.same_socket(c, dst);
            (remote, std::cmp::Reverse(loads[c.0 as usize]), c)
        });
        found
    }

    /// The waiting task of `src` to move to `dst`: allowed there and not
    /// cache-hot; one that last ran on `dst` if asked, else the one that
    /// stopped running longest ago.
    fn candidate(
        &self,
        ctx: &SchedCtx,
        loads: &[usize],
        src: CoreId,
        dst: CoreId,
        taken: &HashSet<TaskId>,
    ) -> Option<TaskId> {
        let movable = ctx.queues[src.0 as usize].iter().copied().filter(|t| {
            let view = &ctx.tasks[t.0 as usize];
            let cold = view.last_core.is_none() || ctx.now.saturating_sub(view.last_ran) >= self.hot_cycles;
            !taken.contains(t) && cold && ctx.allows(*t, dst) && !self.keeps(ctx, loads, *t, src, dst)
        });
        let last_here = |t: &TaskId| ctx.tasks[t.0 as usize].last_core == Some(dst);
        if self.params.prefer_last_core {
            if let Some(t) = movable.clone().find(last_here) {
                return Some(t);
            }
        }
        movable.min_by_key(|t| ctx.tasks[t.0 as usize].last_ran)
    }

    fn steal(&self, ctx: &SchedCtx, loads: &[usize], dst: CoreId, taken: &HashSet<TaskId>) -> Option<(CoreId, TaskId)> {
        self.sources(ctx, loads, dst)
            .into_iter()
            .find_map(|src| Some((src, self.candidate(ctx, loads, src, dst, taken)?)))
    }
}

impl Balance {
    /// `cache_aware`: the LLC (socket) where `asid`'s threads ran most.
    fn preferred(&self, asid: Asid) -> Option<u32> {
        let occupancy = self.occupancy.get(&asid)?;
        let (best, most) = occupancy.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))?;
        (*most > 0.0).then_some(best as u32)
    }

    /// Tasks running or waiting on the cores of `socket`.
    fn socket_load(ctx: &SchedCtx, loads: &[usize], socket: u32) -> usize {
        ctx.cores().filter(|&c| ctx.topology.socket_of(c) == socket).map(|c| loads[c.0 as usize]).sum()
    }

    /// `cache_aware`: whether `task` stays on `src`'s LLC, its process's
    /// preferred one, rather than go to `dst` on another, that LLC not
    /// being over-full.
    fn keeps(&self, ctx: &SchedCtx, loads: &[usize], task: TaskId, src: CoreId, dst: CoreId) -> bool {
        let home = ctx.topology.socket_of(src);
        self.params.cache_aware
            && !ctx.topology.same_socket(src, dst)
            && self.preferred(ctx.tasks[task.0 as usize].spec.asid) == Some(home)
            && Self::socket_load(ctx, loads, home) <= ctx.topology.cores_per_socket as usize
    }

    /// `cache_aware`: the moves that pull each process's threads onto its
    /// preferred LLC.
    fn aggregate(&self, ctx: &SchedCtx, loads: &mut [usize], taken: &mut HashSet<TaskId>) -> Vec<Move> {
        let mut moves = Vec::new();
        for &asid in self.occupancy.keys() {
            let Some(llc) = self.preferred(asid) else { continue };
            let threads: Vec<TaskId> = (0..ctx.tasks.len() as u32)
                .map(TaskId)
                .filter(|t| {
                    let view = &ctx.tasks[t.0 as usize];
                    view.spec.asid == asid && view.state != TaskState::Finished
                })
                .collect();
            if threads.len() > ctx.topology.cores_per_socket as usize {
                continue;
            }
            for t in threads {
                let at = match ctx.tasks[t.0 as usize].state {
                    TaskState::Waiting(c) | TaskState::Running(c) => c,
                    _ => continue,
                };
                if ctx.topology.socket_of(at) == llc {
                    continue;
                }
                if Self::socket_load(ctx, loads, llc) >= ctx.topology.cores_per_socket as usize {
                    break;
                }
                let dst = ctx
                    .cores()
                    .filter(|&c| ctx.topology.socket_of(c) == llc && ctx.allows(t, c))
                    .min_by_key(|&c| (loads[c.0 as usize], c));
                let Some(dst) = dst else { continue };
                loads[at.0 as usize] -= 1;
                loads[dst.0 as usize] += 1;
                taken.insert(t);
                moves.push(Move { task: t, to: dst });
            }
        }
        moves
    }

    /// `cache_aware`: the cycles `task` just ran count for its process's
    /// occupancy of the LLC of `core`.
    fn occupy(&mut self, ctx: &SchedCtx, task: TaskId, core: CoreId) {
        if !self.params.cache_aware {
            return;
        }
        let view = &ctx.tasks[task.0 as usize];
        let llc = ctx.topology.socket_of(core) as usize;
        let occupancy =
            self.occupancy.entry(view.spec.asid).or_insert_with(|| vec![0.0; ctx.topology.sockets as usize]);
        occupancy[llc] += view.slice_cycles as f64;
    }
}

impl Scheduler for Balance {
    /// Its decisions read the queues and waiting tasks' last run.
    fn reads_others_progress(&self) -> bool {
        false
    }

    fn pick(&mut self, ctx: &SchedCtx, core: CoreId) -> Result<Option<TaskId>> {
        if let Some(&t) = ctx.queues[core.0 as usize].front() {
            return Ok(Some(t));
        }
        if !self.params.idle_steal {
            return Ok(None);
        }
        let loads: Vec<usize> = ctx.cores().map(|c| ctx.load(c)).collect();
        Ok(self.steal(ctx, &loads, core, &HashSet::new()).map(|(_, t)| t))
    }

    fn quantum(&mut self, _: &SchedCtx, _: TaskId, _: CoreId) -> Result<Slice> {
        Ok(self.quantum)
    }

    fn expire(&mut self, ctx: &SchedCtx, task: TaskId, core: CoreId) -> Result<super::Expiry> {
        self.occupy(ctx, task, core);
        Ok(super::Expiry::Requeue)
    }

    fn finished(&mut self, ctx: &SchedCtx, task: TaskId) -> Result<()> {
        if let Some(core) = ctx.tasks[task.0 as usize].last_core {
            self.occupy(ctx, task, core);
        }
        Ok(())
    }

    fn period(&self) -> Option<u64> {
        Some(self.period)
    }

    fn balance(&mut self, ctx: &SchedCtx) -> Result<Vec<Move>> {
        let mut loads: Vec<usize> = ctx.cores().map(|c| ctx.load(c)).collect();
        let mut taken = HashSet::new();
        let mut moves = self.aggregate(ctx, &mut loads, &mut taken);
        let decay = self.decay;
        self.occupancy.values_mut().flatten().for_each(|o| *o *= decay);
        loop {
            let mut targets: Vec<CoreId> = ctx.cores().collect();
            targets.sort_by_key(|&c| (loads[c.0 as usize], c));
            let Some((src, dst, task)) =
                targets.into_iter().find_map(|dst| self.steal(ctx, &loads, dst, &taken).map(|(s, t)| (s, dst, t)))
            else {
                return Ok(moves);
            };
            loads[src.0 as usize] -= 1;
            loads[dst.0 as usize] += 1;
            taken.insert(task);
            moves.push(Move { task, to: dst });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testing::{spec, State};

    fn balancer(s: &State, params: BalanceParams) -> Box<dyn Scheduler> {
        params.build(&s.build()).unwrap()
    }

    #[test]
    fn evens_out_queues_same_socket_first() {
        // 2 sockets x 2 cores; core 0 runs task 0 and has 4 waiting (load 5),
        // the other cores are empty.
        let mut s = State::new(2, 2, (0..5).map(spec).collect());
        s.run(0, 0);
        for t in 1..5 {
            s.wait(t, 0);
        }
        let mut b = balancer(&s, BalanceParams::default());
        let moves = b.balance(&s.ctx(100)).unwrap();
        // Loads 5,0,0,0: core 1 (same socket, lowest id) gets the first task,
        // then core 2 and 3 (remote): loads 2,1,1,1, and no core is 2 above another.
        let to: Vec<u32> = moves.iter().map(|m| m.to.0).collect();
        assert_eq!(to, vec![1, 2, 3]);
        assert_eq!(moves[0].task, TaskId(1), "never ran: all equally cold, the first in the queue");
    }

    #[test]
    fn prefers_a_task_that_last_ran_on_the_destination_and_spares_hot_ones() {
        let mut s = State::new(1, 2, (0..4).map(spec).collect());
        s.run(0, 0);
        for t in 1..4 {
            s.wait(t, 0);
        }
        s.tasks[1].last_core = Some(CoreId(0));
        s.tasks[1].last_ran = 50;
        s.tasks[2].last_core = Some(CoreId(0));
        s.tasks[2].last_ran = 900;
        s.tasks[3].last_core = Some(CoreId(1));
        s.tasks[3].last_ran = 950;
        let mut b = balancer(&s, BalanceParams::default());
        assert_eq!(b.pick(&s.ctx(1000), CoreId(1)).unwrap(), Some(TaskId(3)), "it last ran on core 1");
        let params =
            BalanceParams { prefer_last_core: false, migration_threshold: Span::cycles(200), ..Default::default() };
        let mut b = balancer(&s, params);
        assert_eq!(b.pick(&s.ctx(1000), CoreId(1)).unwrap(), Some(TaskId(1)), "the coldest");
        assert_eq!(b.pick(&s.ctx(100), CoreId(1)).unwrap(), None, "every task ran within 200 cycles");
    }

    #[test]
    fn respects_affinity_and_the_threshold_of_imbalance() {
        let mut specs: Vec<_> = (0..3).map(spec).collect();
        specs[1].affinity = Some(vec![CoreId(0)]);
        let mut s = State::new(1, 2, specs);
        s.run(0, 0);
        s.wait(1, 0);
        let mut b = balancer(&s, BalanceParams::default());
        assert!(b.balance(&s.ctx(0)).unwrap().is_empty(), "task 1 may not leave core 0");
        s.wait(2, 0);
        let moves = b.balance(&s.ctx(0)).unwrap();
        assert_eq!(moves, vec![Move { task: TaskId(2), to: CoreId(1) }]);
        let mut b = balancer(&s, BalanceParams { imbalance: 4, ..Default::default() });
        assert!(b.balance(&s.ctx(0)).unwrap().is_empty(), "loads 3 and 0 differ by less than 4");
    }

    /// `n` tasks of which the first `threads` are one process (asid 0).
    fn process(threads: usize, n: usize) -> Vec<crate::sched::TaskInfo> {
        (0..n)
            .map(|i| crate::sched::TaskInfo {
                asid: crate::types::Asid(if i < threads { 0 } else { i as u32 }),
                ..spec(i)
            })
            .collect()
    }

    /// Task `t` ran a slice of `cycles` on `core`.
    fn ran(b: &mut Box<dyn Scheduler>, s: &mut State, t: u32, core: u32, cycles: u64) {
        s.tasks[t as usize].slice_cycles = cycles;
        b.expire(&s.ctx(0), TaskId(t), CoreId(core)).unwrap();
    }

    fn cache_aware() -> BalanceParams {
        BalanceParams { cache_aware: true, ..Default::default() }
    }

    #[test]
    fn cache_aware_pulls_a_process_onto_the_llc_where_it_ran_most() {
        // 2 LLCs of 2 cores; process 0's two threads ran 300 cycles on LLC 1
        // and 200 on LLC 0, and both wait on LLC 0.
        let mut s = State::new(2, 2, process(2, 2));
        let mut b = balancer(&s, cache_aware());
        ran(&mut b, &mut s, 0, 0, 200);
        ran(&mut b, &mut s, 1, 3, 300);
        s.run(0, 0);
        s.wait(1, 1);
        let moves = b.balance(&s.ctx(0)).unwrap();
        assert_eq!(moves, vec![Move { task: TaskId(0), to: CoreId(2) }, Move { task: TaskId(1), to: CoreId(3) }]);
        // Plain balancing sees nothing to even out.
        let mut plain = balancer(&s, BalanceParams::default());
        assert!(plain.balance(&s.ctx(0)).unwrap().is_empty());
    }

    #[test]
    fn cache_aware_leaves_a_process_with_more_threads_than_the_llc_has_cores_and_stops_at_a_full_llc() {
        // Three threads, two cores per LLC: only plain balancing moves them.
        let mut s = State::new(2, 2, process(3, 3));
        let mut b = balancer(&s, cache_aware());
        ran(&mut b, &mut s, 0, 2, 100);
        (0..3).for_each(|t| s.wait(t, 0));
        let plain = balancer(&s, BalanceParams::default()).balance(&s.ctx(0)).unwrap();
        assert_eq!(b.balance(&s.ctx(0)).unwrap(), plain);
        // Two threads; LLC 1 holds one other task: one thread fits, then it is full.
        let mut s = State::new(2, 2, process(2, 3));
        let mut b = balancer(&s, cache_aware());
        ran(&mut b, &mut s, 0, 2, 100);
        s.run(0, 0);
        s.run(1, 1);
        s.run(2, 3);
        assert_eq!(b.balance(&s.ctx(0)).unwrap(), vec![Move { task: TaskId(0), to: CoreId(2) }]);
    }

    #[test]
    fn cache_aware_balancing_takes_no_thread_off_its_preferred_llc() {
        // Process 0 prefers LLC 0; its thread waits on core 0 behind another
        // task; core 1 (LLC 0) and LLC 1 are idle.
        let mut s = State::new(2, 2, process(2, 3));
        let mut b = balancer(&s, cache_aware());
        ran(&mut b, &mut s, 0, 0, 100);
        s.run(2, 0);
        s.wait(0, 0);
        assert_eq!(b.pick(&s.ctx(0), CoreId(2)).unwrap(), None, "the thread stays on LLC 0");
        assert_eq!(b.pick(&s.ctx(0), CoreId(1)).unwrap(), Some(TaskId(0)), "a core of its LLC takes it");
        let mut plain = balancer(&s, BalanceParams::default());
        assert_eq!(plain.pick(&s.ctx(0), CoreId(2)).unwrap(), Some(TaskId(0)));
    }
}
