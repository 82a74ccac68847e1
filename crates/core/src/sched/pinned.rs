//! `pinned`: tasks run only on the cores of their affinity masks.
//!
//! Like `taskset`: a task with a mask of one core never leaves it; a task
//! with a wider mask starts on the least loaded core of its mask and may be
//! taken by any core of the mask that would otherwise be idle. A task
//! without a mask is pinned to the core it is placed on at the start.

use serde::{Deserialize, Serialize};

use super::{default_quantum, SchedBuild, SchedCtx, Scheduler, Slice};
use crate::error::Result;
use crate::types::{CoreId, TaskId};
use crate::units::Span;

/// Params of `pinned`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PinnedParams {
    /// Slice of every task.
    pub quantum: Span,
}

impl Default for PinnedParams {
    fn default() -> Self {
        PinnedParams { quantum: default_quantum() }
    }
}

impl PinnedParams {
    /// Build the policy.
    pub fn build(&self, ctx: &SchedBuild) -> Result<Box<dyn Scheduler>> {
        Ok(Box::new(Pinned { quantum: ctx.slice(self.quantum, "quantum")? }))
    }
}

struct Pinned {
    quantum: Slice,
}

impl Scheduler for Pinned {
    /// Its decisions read affinities and the queues.
    fn reads_others_progress(&self) -> bool {
        false
    }

    fn pick(&mut self, ctx: &SchedCtx, core: CoreId) -> Result<Option<TaskId>> {
        if let Some(&t) = ctx.queues[core.0 as usize].front() {
            return Ok(Some(t));
        }
        // Idle: the first waiting task whose mask names this core, scanning
        // the other queues in core order.
        let mut waiting = ctx.queues.iter().flatten();
        Ok(waiting.find(|&&t| ctx.tasks[t.0 as usize].spec.affinity.is_some() && ctx.allows(t, core)).copied())
    }

    fn quantum(&mut self, _: &SchedCtx, _: TaskId, _: CoreId) -> Result<Slice> {
        Ok(self.quantum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testing::{spec, State};

    #[test]
    fn an_idle_core_takes_only_tasks_whose_mask_names_it() {
        let mut specs: Vec<_> = (0..3).map(spec).collect();
        specs[1].affinity = Some(vec![CoreId(0), CoreId(1)]);
        specs[2].affinity = Some(vec![CoreId(0)]);
        let mut s = State::new(1, 2, specs);
        s.run(0, 0);
        s.wait(2, 0);
        s.wait(1, 0);
        let mut p = PinnedParams::default().build(&s.build()).unwrap();
        assert_eq!(p.pick(&s.ctx(0), CoreId(1)).unwrap(), Some(TaskId(1)), "task 2 is pinned to core 0");
        s.queues[0].pop_back();
        assert_eq!(p.pick(&s.ctx(0), CoreId(1)).unwrap(), None);
        assert_eq!(p.place(&s.ctx(0), TaskId(2)).unwrap(), CoreId(0));
    }
}
