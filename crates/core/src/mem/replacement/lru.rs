//! `lru`: true least-recently-used.
//!
//! Each line carries the time of its last use; the victim is the evictable
//! line used longest ago. Stamps make a hit one store instead of a reordering
//! of the set, and the scan for the oldest line happens only on a miss.

use serde::{Deserialize, Serialize};

use super::{Policy, ReplCtx, Replacement, Stamps, Touch, VictimQuery};
use crate::error::Result;

/// `lru` has no parameters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LruParams {}

impl LruParams {
    /// Build the policy for a cache of the given geometry.
    pub fn build(&self, ctx: &ReplCtx) -> Result<Policy> {
        Ok(Policy::Lru(Lru { stamps: Stamps::new(ctx)? }))
    }
}

/// True LRU by last-use stamps.
#[derive(Debug, Clone)]
pub struct Lru {
    pub(super) stamps: Stamps,
}

impl Replacement for Lru {
    fn sets_apart(&self) -> bool {
        true
    }

    #[inline(always)]
    fn on_hit(&mut self, t: &Touch) {
        self.stamps.stamp(t.set, t.way);
    }

    #[inline(always)]
    fn on_fill(&mut self, t: &Touch) {
        self.stamps.stamp(t.set, t.way);
    }

    fn rehit_is_noop(&self) -> bool {
        true
    }

    fn recency(&self, set: usize, way: usize) -> Option<u32> {
        Some(self.stamps.get(set, way))
    }

    #[inline]
    fn victim(&mut self, q: &VictimQuery) -> usize {
        self.stamps.oldest(q.set, q.locked)
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
    fn victims_survive_the_clock_running_out() {
        // Start 100 ticks before the 32-bit clock runs out; a reference with
        // unbounded stamps must pick the same victims throughout.
        let (sets, ways) = (4, 4);
        let mut lru = Lru { stamps: Stamps::new(&ctx(sets, ways)).unwrap() };
        lru.stamps.set_clocks(u32::MAX - 100, u32::MAX / 2);
        let mut reference = vec![0u64; sets * ways];
        let mut rng = crate::util::rng::Rng::from_seed(7);
        for tick in 1..=1000u64 {
            let set = rng.below(sets as u64) as usize;
            let way = if rng.chance(0.5) {
                let way = rng.below(ways as u64) as usize;
                lru.on_hit(&touch(set, way));
                way
            } else {
                let way = lru.victim(&query(set));
                let want = (0..ways).min_by_key(|&w| (reference[set * ways + w], w)).unwrap();
                assert_eq!(way, want, "tick {tick}");
                lru.on_fill(&touch(set, way));
                way
            };
            reference[set * ways + way] = tick;
        }
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
