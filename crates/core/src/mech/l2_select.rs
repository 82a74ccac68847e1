//! Which lines of a core's L2 a migration carries (spec §4.4): the most
//! recently used lines of every set (Local MRU-n), of every region of
//! consecutive sets (Regional MRU), of the whole cache (Global MRU), or all
//! valid lines; optionally only clean lines, or only the task's own.
//!
//! Recency comes from the L2's replacement policy (LRU's last-use stamps,
//! one clock per cache, so comparable across sets: the spec's global
//! timestamps). Selections are listed most recent first, the order in which
//! a migration prefetcher sends them.

use serde::{Deserialize, Serialize};

use super::MechBuild;
use crate::error::{Error, Result};
use crate::mem::cache::Resident;
use crate::types::{LineAddr, TaskId};

/// A selection policy: `{ kind = "local-mru", n = 1 }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Selection {
    /// The `n` most recently used valid lines of every set.
    LocalMru {
        /// Lines per set.
        n: u32,
    },
    /// The most recently used valid line of each region of `sets / lines`
    /// consecutive sets (for fewer lines than sets).
    RegionalMru {
        /// Lines selected (a power of two, at most the number of sets).
        lines: u32,
    },
    /// The `lines` most recently used valid lines of the cache.
    GlobalMru {
        /// Lines selected.
        lines: u32,
    },
    /// Every valid line.
    All,
}

impl Default for Selection {
    fn default() -> Self {
        Selection::LocalMru { n: 1 }
    }
}

/// A selection with its filters, as a mechanism's params give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Select {
    /// The policy.
    pub how: Selection,
    /// Only lines that are not dirty.
    pub clean_only: bool,
    /// Only lines the migrating task brought in.
    pub task_only: bool,
}

impl Select {
    /// Check the policy against the machine: MRU policies need recency
    /// (an LRU L2), Regional MRU a power of two of at most the L2's sets.
    pub fn check(&self, ctx: &MechBuild) -> Result<()> {
        let Some(l2) = &ctx.machine.l2 else {
            return Err(Error::config(
                super::join_path(&ctx.loc, "kind"),
                "invalid_value",
                "this mechanism carries L2 lines: the machine has no L2",
            ));
        };
        let sets = (l2.lines() / l2.effective_ways().max(1)).max(1);
        let bad = |message: String| Err(Error::config(ctx.at("select"), "invalid_value", message));
        if !matches!(self.how, Selection::All) && l2.replacement.kind != "lru" {
            return bad(format!(
                "{:?} needs the L2's recency: machine.l2.replacement must be lru, not {}",
                self.how, l2.replacement.kind
            ));
        }
        match self.how {
            Selection::LocalMru { n: 0 } | Selection::GlobalMru { lines: 0 } => {
                bad("select nothing: expected at least 1".into())
            }
            Selection::RegionalMru { lines } if !lines.is_power_of_two() || lines as u64 > sets => {
                bad(format!("regional-mru needs a power of two of at most the L2's {sets} sets, got {lines}"))
            }
            _ => Ok(()),
        }
    }

    /// The lines of `resident` (a cache of `sets` sets) to carry for `task`,
    /// most recent first, with their dirty bits.
    pub fn apply(&self, resident: &[Resident], sets: usize, task: TaskId) -> Vec<(LineAddr, bool)> {
        let recency = |r: &Resident| r.recency.unwrap_or(0);
        let mut eligible: Vec<&Resident> =
            resident.iter().filter(|r| !(self.clean_only && r.dirty || self.task_only && r.owner != task)).collect();
        // Most recent first; ties (no recency) keep set order.
        eligible.sort_by_key(|r| std::cmp::Reverse(recency(r)));
        let mut chosen: Vec<&Resident> = match self.how {
            Selection::All => eligible,
            Selection::GlobalMru { lines } => eligible.into_iter().take(lines as usize).collect(),
            Selection::LocalMru { n } => {
                let mut taken = vec![0u32; sets];
                eligible.retain(|r| {
                    taken[r.set] += 1;
                    taken[r.set] <= n
                });
                eligible
            }
            Selection::RegionalMru { lines } => {
                let per_region = (sets / lines as usize).max(1);
                let mut taken = vec![false; sets.div_ceil(per_region)];
                eligible.retain(|r| !std::mem::replace(&mut taken[r.set / per_region], true));
                eligible
            }
        };
        chosen.sort_by_key(|r| std::cmp::Reverse(recency(r)));
        chosen.into_iter().map(|r| (r.line, r.dirty)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sets` sets of `ways` lines; line `s * 100 + w` in set `s`, used at
    /// time `w * sets + s` (so way 3 of every set is newer than way 2 of any).
    fn cache(sets: usize, ways: usize) -> Vec<Resident> {
        (0..sets)
            .flat_map(|s| {
                (0..ways).map(move |w| Resident {
                    set: s,
                    line: LineAddr((s * 100 + w) as u64),
                    recency: Some((w * sets + s) as u32),
                    dirty: w % 2 == 1,
                    owner: TaskId((s % 2) as u32),
                })
            })
            .collect()
    }

    fn lines(select: Select, resident: &[Resident], sets: usize) -> Vec<u64> {
        select.apply(resident, sets, TaskId(0)).into_iter().map(|(l, _)| l.0).collect()
    }

    #[test]
    fn local_mru_1_takes_exactly_the_newest_line_of_every_valid_set() {
        let mut resident = cache(8, 4);
        resident.retain(|r| r.set != 5); // an empty set contributes nothing
        let chosen = lines(Select { how: Selection::LocalMru { n: 1 }, ..Select::default() }, &resident, 8);
        assert_eq!(chosen, [703, 603, 403, 303, 203, 103, 3]);
        let two = lines(Select { how: Selection::LocalMru { n: 2 }, ..Select::default() }, &resident, 8);
        assert_eq!(two.len(), 14);
        assert!(two.contains(&702) && !two.contains(&701));
    }

    #[test]
    fn global_and_regional_mru_use_recency_across_sets() {
        let resident = cache(8, 4);
        let global = lines(Select { how: Selection::GlobalMru { lines: 3 }, ..Select::default() }, &resident, 8);
        assert_eq!(global, [703, 603, 503]);
        // Two regions of four sets: the newest line of sets 0-3 and of 4-7.
        let regional = lines(Select { how: Selection::RegionalMru { lines: 2 }, ..Select::default() }, &resident, 8);
        assert_eq!(regional, [703, 303]);
    }

    #[test]
    fn filters_drop_dirty_lines_and_other_tasks_lines() {
        let resident = cache(4, 4);
        let clean = Select { how: Selection::LocalMru { n: 1 }, clean_only: true, task_only: false };
        assert_eq!(lines(clean, &resident, 4), [302, 202, 102, 2]);
        let own = Select { how: Selection::All, clean_only: false, task_only: true };
        assert!(lines(own, &resident, 4).iter().all(|l| (l / 100) % 2 == 0));
        assert_eq!(lines(own, &resident, 4).len(), 8);
        assert_eq!(lines(Select { how: Selection::All, ..Select::default() }, &resident, 4).len(), 16);
    }
}
