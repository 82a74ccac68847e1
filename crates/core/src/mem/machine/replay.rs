//! Replaying references of several cores in a given interleaving, without
//! the engine's scheduler or clocks: what coherence is checked against (a
//! plainly written protocol model in the tests replays the same sequence).

use serde::Serialize;

use super::{Machine, MachineParams, Protocol, Traffic};
use crate::counters::NodeStats;
use crate::error::{Error, Result};
use crate::types::{Access, Asid, CoreId, TaskId};

/// One cache after a replay: its valid lines, each with its dirty bit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplayedCache {
    /// Component path (`socket0/core1/l1d`).
    pub path: String,
    /// Its lines as (physical line number, dirty), in slot order.
    pub lines: Vec<(u64, bool)>,
}

/// What a replay leaves: every cache's contents, the interconnect
/// transactions (under coherence) and the memory nodes' counters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Replayed {
    /// Per cache instance.
    pub caches: Vec<ReplayedCache>,
    /// Per core and home node (empty without coherence).
    pub traffic: Vec<Traffic>,
    /// Per node.
    pub memory: Vec<NodeStats>,
}

impl Machine {
    /// Run `accesses` in order, each on its core, as threads of one address
    /// space (core `c`'s references are task `c`'s), one after the other in
    /// time, with coherence unless `params.coherence` is `"none"`.
    pub fn replay(params: &MachineParams, seed: u64, accesses: &[(CoreId, Access)]) -> Result<Replayed> {
        let mut m = Machine::new(params, seed, "machine")?;
        let cores = m.cores();
        if let Some(i) = accesses.iter().position(|(c, _)| c.0 as usize >= cores) {
            let message = format!("core {} does not exist: the machine has {cores}", accesses[i].0 .0);
            return Err(Error::config(format!("accesses[{i}].core"), "out_of_range", message));
        }
        m.add_tasks(cores);
        m.set_address_spaces(&[Asid(0)]);
        if params.coherence == Protocol::Mesi {
            m.enable_coherence();
        }
        // One clock for all: the order given is the order in time.
        let mut clock = 0u64;
        for (core, a) in accesses {
            m.set_clock(clock);
            let stall = m.access(*core, TaskId(core.0), Asid(0), a);
            clock += (a.instrs as f64 * m.base_cpi()) as u64 + stall as u64;
        }
        m.finish_sampling();
        let caches = m
            .caches
            .iter()
            .map(|c| ReplayedCache {
                path: c.path.clone(),
                lines: c.resident_lines().iter().map(|r| (r.line.0, r.dirty)).collect(),
            })
            .collect();
        Ok(Replayed { caches, traffic: m.traffic().map_or_else(Vec::new, <[_]>::to_vec), memory: m.node_stats() })
    }
}
