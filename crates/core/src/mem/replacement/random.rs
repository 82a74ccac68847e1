//! `random`: a uniformly random evictable way, from a seeded stream.
//!
//! The stream is derived from the run's seed and the cache's component path,
//! so runs are reproducible and caches do not share random numbers.

use serde::{Deserialize, Serialize};

use super::{Policy, ReplCtx, Replacement, Touch, VictimQuery};
use crate::error::Result;
use crate::util::rng::Rng;

/// Parameters of `random`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RandomParams {
    /// Extra salt mixed into the cache's seed (to draw a different stream
    /// without changing the run's seed).
    pub salt: u64,
}

impl RandomParams {
    /// Build the policy for a cache of the given geometry.
    pub fn build(&self, ctx: &ReplCtx) -> Result<Policy> {
        let rng = Rng::for_component(ctx.seed ^ self.salt, &ctx.component);
        Ok(Policy::Random(Random { rng, ways: ctx.ways }))
    }
}

/// Random replacement.
#[derive(Debug, Clone)]
pub struct Random {
    rng: Rng,
    ways: usize,
}

impl Replacement for Random {
    #[inline(always)]
    fn on_hit(&mut self, _t: &Touch) {}

    #[inline(always)]
    fn on_fill(&mut self, _t: &Touch) {}

    fn rehit_is_noop(&self) -> bool {
        true
    }

    #[inline]
    fn victim(&mut self, q: &VictimQuery) -> usize {
        if q.locked.is_none() {
            return self.rng.below(self.ways as u64) as usize;
        }
        // Uniform over the evictable ways: pick the k-th of them.
        let free = (0..self.ways).filter(|&w| q.evictable(w)).count();
        let k = self.rng.below(free as u64) as usize;
        (0..self.ways).filter(|&w| q.evictable(w)).nth(k).expect("k < number of evictable ways")
    }
}

#[cfg(test)]
mod tests {
    use super::super::conformance::ctx;
    use super::*;
    use crate::mem::replacement::ReqKind;
    use crate::types::{TaskId, VirtAddr};

    #[test]
    fn victims_are_uniform_over_the_unlocked_ways() {
        // 3 of 8 ways free: each should get a third of the victims.
        let mut p = RandomParams::default().build(&ctx(1, 8)).unwrap();
        let locked = [true, false, true, true, false, true, false, true];
        let q = VictimQuery { set: 0, pc: VirtAddr(0), req: ReqKind::Load, task: TaskId(0), locked: Some(&locked) };
        let mut counts = [0; 8];
        (0..9000).for_each(|_| counts[p.victim(&q)] += 1);
        // 3000 expected each; 5 sigma is about 220.
        for way in [1, 4, 6] {
            assert!((2780..3220).contains(&counts[way]), "{counts:?}");
        }
        assert_eq!(counts[1] + counts[4] + counts[6], 9000);
    }

    #[test]
    fn victims_are_spread_over_all_ways_and_reproducible() {
        let q = VictimQuery { set: 0, pc: VirtAddr(0), req: ReqKind::Load, task: TaskId(0), locked: None };
        let draw = || {
            let mut p = RandomParams::default().build(&ctx(1, 8)).unwrap();
            (0..8000).map(|_| p.victim(&q)).collect::<Vec<_>>()
        };
        let a = draw();
        assert_eq!(a, draw());
        let mut counts = [0; 8];
        a.iter().for_each(|&w| counts[w] += 1);
        // 1000 expected per way; 5 sigma is about 150.
        assert!(counts.iter().all(|&c| (850..1150).contains(&c)), "{counts:?}");
    }
}
