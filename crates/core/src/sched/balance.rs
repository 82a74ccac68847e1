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

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::{default_quantum, Move, SchedBuild, SchedCtx, Scheduler, Slice};
use crate::error::{Error, Result};
use crate::types::{CoreId, TaskId};
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
        Ok(Box::new(Balance {
            quantum: ctx.slice(self.quantum, "quantum")?,
            period: ctx.cycles(self.period, "period")?,
            hot_cycles,
            params: self.clone(),
        }))
    }
}

struct Balance {
    quantum: Slice,
    period: u64,
    hot_cycles: u64,
    params: BalanceParams,
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
    fn candidate(&self, ctx: &SchedCtx, src: CoreId, dst: CoreId, taken: &HashSet<TaskId>) -> Option<TaskId> {
        let movable = ctx.queues[src.0 as usize].iter().copied().filter(|t| {
            let view = &ctx.tasks[t.0 as usize];
            let cold = view.last_core.is_none() || ctx.now.saturating_sub(view.last_ran) >= self.hot_cycles;
            !taken.contains(t) && cold && ctx.allows(*t, dst)
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
        self.sources(ctx, loads, dst).into_iter().find_map(|src| Some((src, self.candidate(ctx, src, dst, taken)?)))
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

    fn period(&self) -> Option<u64> {
        Some(self.period)
    }

    fn balance(&mut self, ctx: &SchedCtx) -> Result<Vec<Move>> {
        let mut loads: Vec<usize> = ctx.cores().map(|c| ctx.load(c)).collect();
        let mut taken = HashSet::new();
        let mut moves = Vec::new();
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
}
