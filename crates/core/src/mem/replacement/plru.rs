//! `plru`: tree pseudo-LRU.
//!
//! A binary tree of `ways - 1` bits per set points towards the pseudo-least
//! recently used half at every level; a touch flips the bits on its path to
//! point away from the touched way. The victim follows the bits from the root.
//! Cheap in hardware, and the policy most real L1s use.

use serde::{Deserialize, Serialize};

use super::{Policy, ReplCtx, Replacement, Touch, VictimQuery};
use crate::error::{Error, Result};

/// `plru` has no parameters; it needs a power-of-two associativity of at most 64.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlruParams {}

impl PlruParams {
    /// Build the policy for a cache of the given geometry.
    pub fn build(&self, ctx: &ReplCtx) -> Result<Policy> {
        if !ctx.ways.is_power_of_two() || ctx.ways > 64 {
            return Err(Error::config(
                &ctx.loc,
                "unsupported_geometry",
                format!("tree PLRU needs a power-of-two number of ways up to 64, got {}", ctx.ways),
            ));
        }
        Ok(Policy::Plru(Plru { bits: ctx.per_set(0)?, ways: ctx.ways }))
    }
}

/// Tree PLRU. Node `n` (root 1, children `2n` and `2n+1`) has bit `n` in the
/// set's word; a 0 bit sends the victim search left, a 1 bit right.
#[derive(Debug, Clone)]
pub struct Plru {
    bits: Vec<u64>,
    ways: usize,
}

impl Plru {
    #[inline]
    fn touch(&mut self, set: usize, way: usize) {
        let mut word = self.bits[set];
        let (mut node, mut lo, mut span) = (1usize, 0usize, self.ways);
        while span > 1 {
            span /= 2;
            let right = way >= lo + span;
            // Point away from the touched half.
            if right {
                word &= !(1 << node);
                lo += span;
            } else {
                word |= 1 << node;
            }
            node = 2 * node + right as usize;
        }
        self.bits[set] = word;
    }

    /// Whether any way in `[lo, lo + span)` is evictable.
    fn any_evictable(q: &VictimQuery, lo: usize, span: usize) -> bool {
        (lo..lo + span).any(|w| q.evictable(w))
    }
}

impl Replacement for Plru {
    fn sets_apart(&self) -> bool {
        true
    }

    #[inline(always)]
    fn on_hit(&mut self, t: &Touch) {
        self.touch(t.set, t.way);
    }

    #[inline(always)]
    fn on_fill(&mut self, t: &Touch) {
        self.touch(t.set, t.way);
    }

    fn rehit_is_noop(&self) -> bool {
        true
    }

    fn victim(&mut self, q: &VictimQuery) -> usize {
        let word = self.bits[q.set];
        let (mut node, mut lo, mut span) = (1usize, 0usize, self.ways);
        while span > 1 {
            span /= 2;
            let mut right = word & (1 << node) != 0;
            // With locked lines, leave a subtree that has nothing to evict.
            if q.locked.is_some() && !Self::any_evictable(q, if right { lo + span } else { lo }, span) {
                right = !right;
            }
            if right {
                lo += span;
            }
            node = 2 * node + right as usize;
        }
        lo
    }
}

#[cfg(test)]
mod tests {
    use super::super::conformance::{ctx, touch};
    use super::*;
    use crate::mem::replacement::ReqKind;
    use crate::types::{TaskId, VirtAddr};

    fn q(locked: Option<&[bool]>) -> VictimQuery<'_> {
        VictimQuery { set: 0, pc: VirtAddr(0), req: ReqKind::Load, task: TaskId(0), locked }
    }

    #[test]
    fn textbook_four_way_sequence() {
        // Fill A,B,C,D into ways 0..3: the tree points to way 0 (A).
        let mut p = PlruParams::default().build(&ctx(1, 4)).unwrap();
        for way in 0..4 {
            p.on_fill(&touch(0, way));
        }
        assert_eq!(p.victim(&q(None)), 0);
        // Touch A: root now points right; the right pair last touched D, so C.
        p.on_hit(&touch(0, 0));
        assert_eq!(p.victim(&q(None)), 2);
        // Touch C: root points left; the left pair last touched A, so B.
        p.on_hit(&touch(0, 2));
        assert_eq!(p.victim(&q(None)), 1);
    }

    #[test]
    fn approximates_lru_on_cyclic_use() {
        // Touching ways in order 0..8 makes way 0 the victim, as true LRU would.
        let mut p = PlruParams::default().build(&ctx(1, 8)).unwrap();
        for way in 0..8 {
            p.on_hit(&touch(0, way));
        }
        assert_eq!(p.victim(&q(None)), 0);
    }

    #[test]
    fn rejects_non_power_of_two_ways() {
        let err = PlruParams::default().build(&ctx(1, 12)).unwrap_err();
        assert!(err.to_string().contains("machine.l1d.replacement: tree PLRU needs"), "{err}");
    }

    #[test]
    fn avoids_fully_locked_subtrees() {
        let mut p = PlruParams::default().build(&ctx(1, 4)).unwrap();
        for way in 0..4 {
            p.on_fill(&touch(0, way));
        }
        let locked = [true, true, false, true];
        assert_eq!(p.victim(&q(Some(&locked))), 2);
    }
}
