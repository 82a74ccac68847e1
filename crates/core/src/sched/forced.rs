//! `forced`: migrate every task every N of its own instructions or cycles.
//!
//! The migration experiments of the TLB-preservation and migration-prefetch
//! spec move a task to another core at fixed points of its execution and
//! compare runs with and without a mechanism; the spec asks for identical
//! migration points in every run. Points here are counted in the task's own
//! instructions (or its own running cycles) from its start, so they fall at
//! N, 2N, 3N, ... whatever else runs, and the engine cuts batches exactly
//! there. The destination is fixed by the source: the next core of the same
//! socket (`local`) or the same position on the next socket (`remote`).
//! Tasks sharing a core are time-sliced by `quantum` between migrations.

use serde::{Deserialize, Serialize};

use super::{default_quantum, Expiry, SchedBuild, SchedCtx, Scheduler, Slice, Topology};
use crate::error::{Error, Result};
use crate::events::{Locality, Timing};
use crate::types::{CoreId, TaskId};
use crate::units::{Budget, Span};

/// Params of `forced`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ForcedParams {
    /// Distance between two migrations of a task, in its own instructions
    /// (`"2M instr"`, the spec's post-migration window) or running time.
    pub every: Span,
    /// `local` (same socket) or `remote` (next socket).
    pub destination: Locality,
    /// `live` (moved while running, resumes at once) or `delayed`
    /// (descheduled, queued at the destination).
    pub timing: Timing,
    /// Slice of tasks that share a core between migrations.
    pub quantum: Span,
}

impl Default for ForcedParams {
    fn default() -> Self {
        ForcedParams {
            every: Span::instructions(2_000_000),
            destination: Locality::Remote,
            timing: Timing::Live,
            quantum: default_quantum(),
        }
    }
}

impl ForcedParams {
    /// Build the policy; the topology must offer a destination of the asked locality.
    pub fn build(&self, ctx: &SchedBuild) -> Result<Box<dyn Scheduler>> {
        let t = ctx.topology;
        let (possible, why) = match self.destination {
            Locality::Local => (t.cores_per_socket >= 2, "a local migration needs at least 2 cores per socket"),
            Locality::Remote => (t.sockets >= 2, "a remote migration needs at least 2 sockets"),
        };
        if !possible {
            return Err(Error::config(ctx.at("destination"), "out_of_range", why));
        }
        if let Some(task) = ctx.tasks.iter().find(|t| t.affinity.is_some()) {
            let at = crate::error::join_path(&task.loc, "affinity");
            return Err(Error::config(at, "invalid_value", "the forced scheduler chooses every core itself"));
        }
        Ok(Box::new(Forced {
            every: ctx.positive(self.every, "every")?,
            destination: self.destination,
            timing: self.timing,
            quantum: ctx.slice(self.quantum, "quantum")?,
            next: vec![0; ctx.tasks.len()],
        }))
    }
}

struct Forced {
    every: Budget,
    destination: Locality,
    timing: Timing,
    quantum: Slice,
    /// Per task: how many migration periods it has completed.
    next: Vec<u64>,
}

impl Forced {
    /// The task's progress in the unit of `every`.
    fn progress(&self, ctx: &SchedCtx, task: TaskId) -> u64 {
        let view = &ctx.tasks[task.0 as usize];
        match self.every {
            Budget::Cycles(_) => view.cycles,
            Budget::Instructions(_) => view.instructions,
        }
    }

    /// Where the next migration point of `task` is.
    fn point(&self, task: TaskId) -> u64 {
        (self.next[task.0 as usize] + 1) * self.every.amount()
    }
}

/// The destination of a migration from `core`.
pub fn destination(topology: Topology, core: CoreId, locality: Locality) -> CoreId {
    let per = topology.cores_per_socket;
    let (socket, index) = (core.0 / per, core.0 % per);
    match locality {
        Locality::Local => CoreId(socket * per + (index + 1) % per),
        Locality::Remote => CoreId((socket + 1) % topology.sockets * per + index),
    }
}

impl Scheduler for Forced {
    /// Its decisions read the deciding task's own progress only.
    fn reads_others_progress(&self) -> bool {
        false
    }

    fn quantum(&mut self, ctx: &SchedCtx, task: TaskId, _: CoreId) -> Result<Slice> {
        let left = self.point(task).saturating_sub(self.progress(ctx, task)).max(1);
        let until_point = Slice::of(match self.every {
            Budget::Cycles(_) => Budget::Cycles(left),
            Budget::Instructions(_) => Budget::Instructions(left),
        });
        Ok(self.quantum.min(until_point))
    }

    fn expire(&mut self, ctx: &SchedCtx, task: TaskId, core: CoreId) -> Result<Expiry> {
        if self.progress(ctx, task) < self.point(task) {
            return Ok(Expiry::Requeue);
        }
        self.next[task.0 as usize] += 1;
        Ok(Expiry::Move { to: destination(ctx.topology, core, self.destination), timing: self.timing })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testing::{spec, State};

    #[test]
    fn destinations_are_fixed_by_the_source() {
        let t = Topology { sockets: 2, cores_per_socket: 4 };
        assert_eq!(destination(t, CoreId(3), Locality::Local), CoreId(0));
        assert_eq!(destination(t, CoreId(1), Locality::Local), CoreId(2));
        assert_eq!(destination(t, CoreId(1), Locality::Remote), CoreId(5));
        assert_eq!(destination(t, CoreId(6), Locality::Remote), CoreId(2));
    }

    #[test]
    fn migrates_at_multiples_of_every() {
        let mut s = State::new(2, 1, vec![spec(0)]);
        let params =
            ForcedParams { every: Span::instructions(1000), quantum: Span::instructions(300), ..Default::default() };
        let mut f = params.build(&s.build()).unwrap();
        s.run(0, 0);
        let q = f.quantum(&s.ctx(0), TaskId(0), CoreId(0)).unwrap();
        assert_eq!(q.instructions, Some(300));
        s.tasks[0].instructions = 900;
        assert_eq!(f.expire(&s.ctx(0), TaskId(0), CoreId(0)).unwrap(), Expiry::Requeue);
        assert_eq!(f.quantum(&s.ctx(0), TaskId(0), CoreId(0)).unwrap().instructions, Some(100), "stops at 1000");
        s.tasks[0].instructions = 1000;
        let to = Expiry::Move { to: CoreId(1), timing: Timing::Live };
        assert_eq!(f.expire(&s.ctx(0), TaskId(0), CoreId(0)).unwrap(), to);
        assert_eq!(f.quantum(&s.ctx(0), TaskId(0), CoreId(1)).unwrap().instructions, Some(300));
    }

    #[test]
    fn impossible_destinations_name_the_key() {
        let s = State::new(1, 4, vec![spec(0)]);
        let err = ForcedParams::default().build(&s.build()).err().unwrap().to_string();
        assert!(err.contains("scheduler.params.destination: a remote migration needs at least 2 sockets"), "{err}");
        let s = State::new(2, 1, vec![spec(0)]);
        let params = ForcedParams { destination: Locality::Local, ..Default::default() };
        assert!(params.build(&s.build()).is_err());
    }
}
