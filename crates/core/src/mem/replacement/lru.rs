//! `lru`: true least-recently-used.
//!
//! Each line carries the time of its last use; the victim is the evictable
//! line used longest ago. Stamps make a hit one store instead of a reordering
//! of the set, and the scan for the oldest line happens only on a miss.

use serde::{Deserialize, Serialize};

use super::{min_evictable, Policy, ReplCtx, Replacement, Touch, VictimQuery};
use crate::error::Result;

/// `lru` has no parameters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LruParams {}

impl LruParams {
    /// Build the policy for a cache of the given geometry.
    pub fn build(&self, ctx: &ReplCtx) -> Result<Policy> {
        Ok(Policy::Lru(Lru { stamps: vec![0; ctx.sets * ctx.ways], ways: ctx.ways, clock: 1 }))
    }
}

/// True LRU by last-use stamps.
#[derive(Debug, Clone)]
pub struct Lru {
    stamps: Vec<u64>,
    ways: usize,
    clock: u64,
}

impl Lru {
    #[inline(always)]
    fn stamp(&mut self, t: &Touch) {
        self.stamps[t.set * self.ways + t.way] = self.clock;
        self.clock += 1;
    }
}

impl Replacement for Lru {
    #[inline(always)]
    fn on_hit(&mut self, t: &Touch) {
        self.stamp(t);
    }

    #[inline(always)]
    fn on_fill(&mut self, t: &Touch) {
        self.stamp(t);
    }

    fn rehit_is_noop(&self) -> bool {
        true
    }

    #[inline]
    fn victim(&mut self, q: &VictimQuery) -> usize {
        let base = q.set * self.ways;
        min_evictable(&self.stamps[base..base + self.ways], q)
    }
}

#[cfg(test)]
mod tests {
    use super::super::conformance::{ctx, touch};
    use super::*;
    use crate::mem::replacement::ReqKind;
    use crate::types::{TaskId, VirtAddr};

    fn query(set: usize) -> VictimQuery<'static> {
        VictimQuery { set, pc: VirtAddr(0), req: ReqKind::Load, task: TaskId(0), locked: None }
    }

    #[test]
    fn evicts_the_least_recently_used_way() {
        let mut p = LruParams::default().build(&ctx(1, 4)).unwrap();
        for way in 0..4 {
            p.on_fill(&touch(0, way));
        }
        // Use order 0,1,2,3 then hit 0 and 2: LRU is now 1, then 3.
        p.on_hit(&touch(0, 0));
        p.on_hit(&touch(0, 2));
        assert_eq!(p.victim(&query(0)), 1);
        p.on_fill(&touch(0, 1));
        assert_eq!(p.victim(&query(0)), 3);
    }

    #[test]
    fn skips_locked_ways() {
        let mut p = LruParams::default().build(&ctx(1, 4)).unwrap();
        for way in 0..4 {
            p.on_fill(&touch(0, way));
        }
        let locked = [true, true, false, false];
        let q = VictimQuery { locked: Some(&locked), ..query(0) };
        assert_eq!(p.victim(&q), 2);
    }
}
