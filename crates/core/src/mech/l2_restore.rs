//! `l2-restore`: the idealized L2 preservation of the migration study (spec
//! §4.2, step 7). When a task is switched out, the lines `select` picks
//! from its core's L2 are remembered; when it resumes (after a migration,
//! or after any switch with `on = "switch"`), they are placed in the L2 of
//! the core it resumes on before its first reference, data and all, with
//! no time or traffic: the upper bound a real transfer can approach.
//!
//! The L2 counts the placed lines (`migrated_in`), those already there
//! (`migrated_dropped`), and of the placed ones those a demand reference
//! used (`migrated_useful`) or that left unused (`migrated_unused`); the
//! study computes Efficiency and MI-MRR from these and from the misses of
//! runs with the same migration points (flush, no flush, restore).

use serde::{Deserialize, Serialize};

use super::l2_select::{Select, Selection};
use super::tlb_flush::FlushOn;
use super::{counters, EventCtx, MechBuild, Mechanism, MechanismParams};
use crate::counters::Level;
use crate::error::Result;
use crate::events::Event;
use crate::mem::machine::Machine;
use crate::types::{CoreId, LineAddr, TaskId};

/// Params of `l2-restore`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct L2RestoreParams {
    /// Which lines: `{ kind = "local-mru", n = 1 }` (default),
    /// `regional-mru` / `global-mru` with `lines`, or `all`.
    pub select: Selection,
    /// Only clean lines.
    pub clean_only: bool,
    /// Only lines the task brought in.
    pub task_only: bool,
    /// Restore after a migration only (`"migrate"`, default) or after every
    /// switch (`"switch"`, for a protocol that flushes at every switch).
    pub on: FlushOn,
}

impl Default for L2RestoreParams {
    fn default() -> Self {
        L2RestoreParams { select: Selection::default(), clean_only: false, task_only: false, on: FlushOn::Migrate }
    }
}

impl MechanismParams for L2RestoreParams {
    /// Build the mechanism.
    fn build(&self, ctx: &MechBuild) -> Result<Box<dyn Mechanism>> {
        let select = Select { how: self.select, clean_only: self.clean_only, task_only: self.task_only };
        select.check(ctx)?;
        Ok(Box::new(L2Restore { select, on: self.on, saved: Vec::new(), counts: RestoreCounts::default() }))
    }
}

counters! {
    /// What `l2-restore` did.
    pub struct RestoreCounts {
        /// Selections made (switch-outs).
        snapshots,
        /// Lines selected, over all snapshots.
        selected,
        /// Of those, dirty at the source.
        selected_dirty,
        /// Restores made (switch-ins that placed a selection).
        restores,
        /// Lines placed by the restores.
        installed,
    }
}

/// The lines `select` picks from `core`'s L2 for `task`, with their dirty bits.
pub(super) fn select_from(machine: &Machine, select: &Select, core: CoreId, task: TaskId) -> Vec<(LineAddr, bool)> {
    let Some(l2) = machine.private_cache(core, Level::L2) else { return Vec::new() };
    let cache = &machine.caches()[l2];
    select.apply(&cache.resident_lines(), cache.sets(), task)
}

struct L2Restore {
    select: Select,
    on: FlushOn,
    /// Per task: the core it left and the lines selected there.
    saved: Vec<Option<(CoreId, Vec<LineAddr>)>>,
    counts: RestoreCounts,
}

impl Mechanism for L2Restore {
    fn name(&self) -> &str {
        "l2-restore"
    }

    fn on_event(&mut self, ctx: EventCtx<'_>) -> Result<u64> {
        let (Some(core), Some(task)) = (ctx.record.core, ctx.record.task) else { return Ok(0) };
        let t = task.0 as usize;
        if self.saved.len() <= t {
            self.saved.resize(t + 1, None);
        }
        match ctx.record.event {
            Event::SwitchOut => {
                let chosen = select_from(ctx.machine, &self.select, core, task);
                self.counts.snapshots += 1;
                self.counts.selected += chosen.len() as u64;
                self.counts.selected_dirty += chosen.iter().filter(|(_, dirty)| *dirty).count() as u64;
                self.saved[t] = Some((core, chosen.into_iter().map(|(line, _)| line).collect()));
            }
            Event::SwitchIn => {
                let Some((from, lines)) = self.saved[t].take() else { return Ok(0) };
                if from == core && self.on != FlushOn::Switch || self.on == FlushOn::Never {
                    return Ok(0);
                }
                self.counts.restores += 1;
                // Oldest first, so that the destination orders them as the source did.
                for line in lines.into_iter().rev() {
                    self.counts.installed += ctx.machine.install(core, Level::L2, line, task) as u64;
                }
            }
            _ => {}
        }
        Ok(0)
    }

    fn reset_stats(&mut self) {
        self.counts = RestoreCounts::default();
    }

    fn results(&mut self) -> Vec<(&'static str, u64)> {
        self.counts.named()
    }
}
