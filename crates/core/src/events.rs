//! What the scheduler does, as the engine records it and the mechanisms see
//! it: context switches, migrations (local or remote, live or delayed),
//! ticks and marks, and the rows of the event log.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use crate::types::{CoreId, TaskId};

/// Whether a migration keeps the task on its socket (its LLC) or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Locality {
    /// Same socket: the shared LLC may still hold the task's lines.
    Local,
    /// Another socket: only memory (or the old socket's caches) holds them.
    Remote,
}

/// When a task was moved, relative to its running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Timing {
    /// Moved while running; it resumes on the destination at once, with the
    /// source's caches still hot.
    Live,
    /// Moved while descheduled; it resumes on the destination later.
    Delayed,
}

/// Something the scheduler did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The task stopped running on the core (quantum over, moved, finished).
    SwitchOut,
    /// The task started running on the core.
    SwitchIn,
    /// The task starts on `to` after last running on `from` (recorded just
    /// before its `SwitchIn` on `to`).
    Migrate {
        /// Core it last ran on.
        from: CoreId,
        /// Core it runs on now.
        to: CoreId,
        /// Same socket or not.
        locality: Locality,
        /// Moved while running or while waiting.
        timing: Timing,
    },
    /// The scheduler's periodic tick (load balancing, hypervisor bookkeeping).
    Tick,
    /// A point a mechanism asked for inside the task's slice
    /// ([`Mechanism::mark`]); the task keeps running.
    Mark,
}

impl Event {
    /// Name used in the event table.
    pub fn name(&self) -> &'static str {
        match self {
            Event::SwitchOut => "switch_out",
            Event::SwitchIn => "switch_in",
            Event::Migrate { .. } => "migrate",
            Event::Tick => "tick",
            Event::Mark => "mark",
        }
    }
}

/// One row of the event log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventRecord {
    /// Clock of the core where it happened (for ticks: the tick's time), in cycles.
    pub time: u64,
    /// The core, if any (ticks have none).
    pub core: Option<CoreId>,
    /// The task, if any (ticks have none).
    pub task: Option<TaskId>,
    /// What happened.
    pub event: Event,
}

impl Serialize for EventRecord {
    /// Flat rows: `{time, core, task, event, from, to, locality, timing}`,
    /// the last four only for migrations.
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("time", &self.time)?;
        m.serialize_entry("core", &self.core)?;
        m.serialize_entry("task", &self.task)?;
        m.serialize_entry("event", self.event.name())?;
        if let Event::Migrate { from, to, locality, timing } = self.event {
            m.serialize_entry("from", &from)?;
            m.serialize_entry("to", &to)?;
            m.serialize_entry("locality", &locality)?;
            m.serialize_entry("timing", &timing)?;
        }
        m.end()
    }
}
