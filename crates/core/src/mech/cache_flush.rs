//! `cache-flush`: a task finds none of its lines in its core's private
//! caches when it resumes, as on a core with no history.
//!
//! The migration study's protocol (spec §4.2) treats every context switch
//! as a migration by flushing the caches; its reference run keeps the L2.
//! This mechanism flushes the private caches of the core a task resumes on
//! (`l1 = true` flushes the L1 data and instruction caches, `l2 = true` the
//! L2), at every switch-in or only after a migration, writing dirty lines
//! down. List it before a mechanism that restores lines (`l2-restore`).
//!
//! `llc = true` also empties the LLC the core reads (every task's lines):
//! the elastic-time-slicing spec's methodology, which flushes every level
//! at each context switch to emulate co-runners that evict everything
//! (its complete-eviction assumption, spec §1.3).

use serde::{Deserialize, Serialize};

use super::tlb_flush::FlushOn;
use super::{EventCtx, MechBuild, Mechanism, MechanismParams};
use crate::counters::Level;
use crate::error::Result;
use crate::events::Event;

/// Params of `cache-flush`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheFlushParams {
    /// When: `"switch"` (default), `"migrate"` or `"never"`.
    pub on: FlushOn,
    /// Flush the L1s.
    pub l1: bool,
    /// Flush the L2.
    pub l2: bool,
    /// Also flush the LLC (all its lines), off by default.
    pub llc: bool,
}

impl Default for CacheFlushParams {
    fn default() -> Self {
        CacheFlushParams { on: FlushOn::Switch, l1: true, l2: true, llc: false }
    }
}

impl MechanismParams for CacheFlushParams {
    /// Build the mechanism.
    fn build(&self, _ctx: &MechBuild) -> Result<Box<dyn Mechanism>> {
        let mut levels = Vec::new();
        if self.l1 {
            levels.extend([Level::L1i, Level::L1d]);
        }
        if self.l2 {
            levels.push(Level::L2);
        }
        if self.llc {
            levels.push(Level::Llc);
        }
        Ok(Box::new(CacheFlush { on: self.on, levels, flushes: 0 }))
    }
}

struct CacheFlush {
    on: FlushOn,
    levels: Vec<Level>,
    flushes: u64,
}

impl Mechanism for CacheFlush {
    fn name(&self) -> &str {
        "cache-flush"
    }

    fn on_event(&mut self, ctx: EventCtx<'_>) -> Result<u64> {
        let due = matches!(
            (self.on, ctx.record.event),
            (FlushOn::Switch, Event::SwitchIn) | (FlushOn::Migrate, Event::Migrate { .. })
        );
        if let Some(core) = ctx.record.core.filter(|_| due) {
            ctx.machine.flush_levels(core, &self.levels, true);
            self.flushes += 1;
        }
        Ok(0)
    }

    fn reset_stats(&mut self) {
        self.flushes = 0;
    }

    fn results(&mut self) -> Vec<(&'static str, u64)> {
        vec![("flushes", self.flushes)]
    }
}
