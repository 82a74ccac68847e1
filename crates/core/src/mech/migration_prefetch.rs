//! `migration-prefetch`: the migration prefetcher of the spec (§5.4-5.5).
//! Tags, not data, follow a migrating task: the line addresses `select`
//! picks from the L2 it leaves go to the L2 it resumes on, whose engine
//! issues them as ordinary prefetches into that L2 only, `prefetches_per_cycle`
//! per cycle of the core's time (the spec's one per cycle), dropping those
//! already present. The prefetches read through the LLC and memory like
//! any miss, so they are coherent with whatever the task wrote.
//!
//! - **Live migration** (the task moved while running): the source L2 sends
//!   its selection at once, in messages of `tags_per_message` tags.
//! - **Delayed migration** (moved while waiting): at switch-out the source
//!   L2 stores its selection at its home directory (messages of tags), and
//!   when the task resumes elsewhere the destination fetches it (one
//!   request, then messages of tags). The table has no capacity limit; an
//!   entry is freed when it is fetched or superseded.
//! - **Local migrations** (source and destination share an LLC) send
//!   nothing unless `local = true`: the shared LLC serves the lines.
//! - With `context_switch = true`, a task resuming on the core it left
//!   fetches its stored tags as after a delayed migration (spec §5.5:
//!   the same mechanism across an ordinary context switch).
//!
//! The directory path's store messages are counted only for a selection
//! that is fetched: the spec's OS marks a task for migration while it still
//! runs, so the hardware stores tags only when they will be used.
//!
//! The L2 counts the prefetched lines (`migrated_in`), those dropped as
//! present (`migrated_dropped`), used (`migrated_useful`) and unused
//! (`migrated_unused`); this mechanism counts transfers, tags and messages.

use serde::{Deserialize, Serialize};

use super::l2_restore::select_from;
use super::l2_select::{Select, Selection};
use super::{counters, EventCtx, MechBuild, Mechanism, MechanismParams};
use crate::error::{Error, Result};
use crate::events::{Event, Locality, Timing};
use crate::types::{CoreId, LineAddr, TaskId};

/// Params of `migration-prefetch`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MigrationPrefetchParams {
    /// Which tags: `{ kind = "local-mru", n = 1 }` (default), `regional-mru`
    /// / `global-mru` with `lines`, or `all`.
    pub select: Selection,
    /// Only clean lines.
    pub clean_only: bool,
    /// Only lines the task brought in (the spec's proposed process-id filter).
    pub task_only: bool,
    /// Tags per message.
    pub tags_per_message: u32,
    /// Prefetches the destination L2 issues per cycle.
    pub prefetches_per_cycle: f64,
    /// Also transfer on migrations within a socket.
    pub local: bool,
    /// Also fetch stored tags when a task resumes on the core it left.
    pub context_switch: bool,
}

impl Default for MigrationPrefetchParams {
    fn default() -> Self {
        MigrationPrefetchParams {
            select: Selection::default(),
            clean_only: false,
            task_only: false,
            tags_per_message: 16,
            prefetches_per_cycle: 1.0,
            local: false,
            context_switch: false,
        }
    }
}

impl MechanismParams for MigrationPrefetchParams {
    /// Build the mechanism.
    fn build(&self, ctx: &MechBuild) -> Result<Box<dyn Mechanism>> {
        let select = Select { how: self.select, clean_only: self.clean_only, task_only: self.task_only };
        select.check(ctx)?;
        if self.tags_per_message == 0 {
            return Err(Error::config(ctx.at("tags_per_message"), "out_of_range", "expected at least 1"));
        }
        if !(self.prefetches_per_cycle.is_finite() && self.prefetches_per_cycle > 0.0) {
            return Err(Error::config(
                ctx.at("prefetches_per_cycle"),
                "out_of_range",
                format!("expected a positive number, got {}", self.prefetches_per_cycle),
            ));
        }
        Ok(Box::new(MigrationPrefetch {
            params: *self,
            select,
            stored: Vec::new(),
            migrated: None,
            counts: TransferCounts::default(),
        }))
    }
}

counters! {
    /// What `migration-prefetch` sent.
    pub struct TransferCounts {
        /// Live migrations whose tags were sent L2 to L2.
        live_transfers,
        /// Delayed migrations whose tags went through the directory.
        delayed_transfers,
        /// Same-core resumes that fetched their tags (`context_switch`).
        switch_transfers,
        /// Local migrations that sent nothing.
        local_skipped,
        /// Tags delivered to destination L2s.
        tags,
        /// Messages: tag messages, directory stores and fetch requests.
        messages,
    }
}

struct MigrationPrefetch {
    params: MigrationPrefetchParams,
    select: Select,
    /// Per task: the directory's copy of the selection made where it left.
    stored: Vec<Option<(CoreId, Vec<LineAddr>)>>,
    /// The task whose `Migrate` event was just handled (its `SwitchIn` follows).
    migrated: Option<TaskId>,
    counts: TransferCounts,
}

impl MigrationPrefetch {
    fn messages(&self, tags: usize) -> u64 {
        tags.div_ceil(self.params.tags_per_message as usize) as u64
    }

    /// Hand `lines` to `core`'s L2 prefetch engine.
    fn deliver(&mut self, ctx: &mut EventCtx<'_>, core: CoreId, task: TaskId, lines: &[LineAddr]) {
        self.counts.tags += lines.len() as u64;
        self.counts.messages += self.messages(lines.len());
        ctx.machine.queue_migration_prefetches(core, lines, task, self.params.prefetches_per_cycle);
    }

    /// Fetch `task`'s stored tags from the directory for `core`: they were
    /// stored (messages of tags), are requested (one message) and sent.
    fn fetch(&mut self, ctx: &mut EventCtx<'_>, core: CoreId, task: TaskId) -> bool {
        let Some((_, lines)) = self.stored[task.0 as usize].take() else { return false };
        self.counts.messages += self.messages(lines.len()) + 1;
        self.deliver(ctx, core, task, &lines);
        true
    }
}

impl Mechanism for MigrationPrefetch {
    fn name(&self) -> &str {
        "migration-prefetch"
    }

    fn on_event(&mut self, mut ctx: EventCtx<'_>) -> Result<u64> {
        let (Some(core), Some(task)) = (ctx.record.core, ctx.record.task) else { return Ok(0) };
        let t = task.0 as usize;
        if self.stored.len() <= t {
            self.stored.resize(t + 1, None);
        }
        match ctx.record.event {
            Event::SwitchOut => {
                let lines = select_from(ctx.machine, &self.select, core, task).into_iter().map(|(l, _)| l).collect();
                self.stored[t] = Some((core, lines));
            }
            Event::Migrate { from, locality, timing, .. } => {
                self.migrated = Some(task);
                if locality == Locality::Local && !self.params.local {
                    self.counts.local_skipped += 1;
                    self.stored[t] = None;
                    return Ok(0);
                }
                match timing {
                    Timing::Live => {
                        self.stored[t] = None;
                        let lines: Vec<LineAddr> =
                            select_from(ctx.machine, &self.select, from, task).into_iter().map(|(l, _)| l).collect();
                        self.counts.live_transfers += 1;
                        self.deliver(&mut ctx, core, task, &lines);
                    }
                    Timing::Delayed => self.counts.delayed_transfers += self.fetch(&mut ctx, core, task) as u64,
                }
            }
            Event::SwitchIn => {
                if self.migrated.take() != Some(task) && self.params.context_switch {
                    self.counts.switch_transfers += self.fetch(&mut ctx, core, task) as u64;
                }
                self.stored[t] = None;
            }
            Event::Tick | Event::Mark => {}
        }
        Ok(0)
    }

    fn reset_stats(&mut self) {
        self.counts = TransferCounts::default();
    }

    fn results(&mut self) -> Vec<(&'static str, u64)> {
        self.counts.named()
    }
}
