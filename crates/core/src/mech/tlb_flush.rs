//! `tlb-flush`: a task finds none of its translations when it resumes.
//!
//! The machine's TLBs are asid-tagged, so a context switch by itself flushes
//! nothing. The TLB-preservation spec models a migration (and a context
//! switch, a migration to the same core) by flushing both TLB levels: the
//! task resumes on a core with no history. This mechanism does that, and is
//! the baseline that `tlb-preserve` (which flushes the same way before it
//! restores) is compared against.

use serde::{Deserialize, Serialize};

use super::{EventCtx, MechBuild, Mechanism, MechanismParams};

use crate::error::{Error, Result};
use crate::events::Event;

/// When to flush.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlushOn {
    /// Whenever a task is switched in (on the core it resumes on).
    #[default]
    Switch,
    /// Only when it resumes on another core than the one it left.
    Migrate,
    /// Never.
    Never,
}

/// Which entries a flush removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlushScope {
    /// Only the resuming task's address space (a tagged TLB losing it).
    #[default]
    Task,
    /// Every entry (an untagged TLB).
    All,
}

/// Params of `tlb-flush` (also `tlb-preserve`'s `flush`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlbFlushParams {
    /// When: `"switch"` (default), `"migrate"` or `"never"`.
    pub on: FlushOn,
    /// What: `"task"` (default) or `"all"`.
    pub scope: FlushScope,
}

impl MechanismParams for TlbFlushParams {
    /// Build the mechanism.
    fn build(&self, ctx: &MechBuild) -> Result<Box<dyn Mechanism>> {
        needs_tlb(ctx)?;
        Ok(Box::new(TlbFlush { params: *self, flushes: 0 }))
    }
}

impl TlbFlushParams {
    /// Flush the TLBs of the event's core (L1s and L2) if this event calls
    /// for it: at `SwitchIn` for `switch`, at `Migrate` (the destination)
    /// for `migrate`. Returns whether it flushed.
    pub fn apply(&self, ctx: &mut EventCtx<'_>) -> bool {
        let due = matches!(
            (self.on, ctx.record.event),
            (FlushOn::Switch, Event::SwitchIn) | (FlushOn::Migrate, Event::Migrate { .. })
        );
        let Some(core) = ctx.record.core.filter(|_| due) else { return false };
        let asid = match self.scope {
            FlushScope::Task => ctx.asid,
            FlushScope::All => None,
        };
        ctx.machine.flush_tlbs(core, asid);
        true
    }
}

/// A TLB mechanism needs a machine with TLBs.
pub(super) fn needs_tlb(ctx: &MechBuild) -> Result<()> {
    match ctx.machine.tlb {
        Some(_) => Ok(()),
        None => Err(Error::config(
            super::join_path(&ctx.loc, "kind"),
            "invalid_value",
            "this mechanism needs TLBs: the machine has none (machine.tlb = false)",
        )),
    }
}

struct TlbFlush {
    params: TlbFlushParams,
    flushes: u64,
}

impl Mechanism for TlbFlush {
    fn name(&self) -> &str {
        "tlb-flush"
    }

    fn on_event(&mut self, mut ctx: EventCtx<'_>) -> Result<u64> {
        self.flushes += self.params.apply(&mut ctx) as u64;
        Ok(0)
    }

    fn reset_stats(&mut self) {
        self.flushes = 0;
    }

    fn results(&mut self) -> Vec<(&'static str, u64)> {
        vec![("flushes", self.flushes)]
    }
}
