//! `round-robin`: a fixed quantum, one FIFO run queue per core, no moves.
//!
//! Tasks are spread over their allowed cores at the start (fewest tasks
//! first) and never leave them: the baseline that isolates the cost of
//! context switches from that of migrations.

use serde::{Deserialize, Serialize};

use super::{default_quantum, SchedBuild, SchedCtx, Scheduler, Slice};
use crate::error::Result;
use crate::types::{CoreId, TaskId};
use crate::units::Span;

/// Params of `round-robin`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RoundRobinParams {
    /// Slice of every task: a time, cycles or instructions.
    pub quantum: Span,
}

impl Default for RoundRobinParams {
    fn default() -> Self {
        RoundRobinParams { quantum: default_quantum() }
    }
}

impl RoundRobinParams {
    /// Build the policy.
    pub fn build(&self, ctx: &SchedBuild) -> Result<Box<dyn Scheduler>> {
        Ok(Box::new(RoundRobin { quantum: ctx.slice(self.quantum, "quantum")? }))
    }
}

struct RoundRobin {
    quantum: Slice,
}

impl Scheduler for RoundRobin {
    /// Its decisions read the queues only.
    fn reads_others_progress(&self) -> bool {
        false
    }

    fn quantum(&mut self, _: &SchedCtx, _: TaskId, _: CoreId) -> Result<Slice> {
        Ok(self.quantum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testing::{spec, State};
    use crate::units::Budget;

    #[test]
    fn spreads_tasks_and_takes_the_head_of_the_queue() {
        let mut s = State::new(1, 2, (0..3).map(spec).collect());
        let mut rr = RoundRobinParams { quantum: Span::parse("2 ms").unwrap() }.build(&s.build()).unwrap();
        for t in 0..3 {
            let core = rr.place(&s.ctx(0), TaskId(t)).unwrap();
            s.wait(t, core.0);
        }
        assert_eq!(s.queues[0], [TaskId(0), TaskId(2)]);
        assert_eq!(s.queues[1], [TaskId(1)]);
        assert_eq!(rr.pick(&s.ctx(0), CoreId(0)).unwrap(), Some(TaskId(0)));
        let q = rr.quantum(&s.ctx(0), TaskId(0), CoreId(0)).unwrap();
        assert_eq!(q, Slice::of(Budget::Cycles(2_000_000)), "2 ms at 1 GHz");
    }

    #[test]
    fn a_zero_quantum_is_an_error_naming_the_key() {
        let s = State::new(1, 1, vec![spec(0)]);
        let err = RoundRobinParams { quantum: Span::cycles(0) }.build(&s.build()).err().unwrap().to_string();
        assert!(err.contains("scheduler.params.quantum: expected a span above 0"), "{err}");
    }
}
