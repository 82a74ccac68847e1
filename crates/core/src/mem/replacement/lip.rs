//! `lip`: LRU insertion policy (Qureshi et al., ISCA 2007).
//!
//! LRU, except that a filled line is placed at the LRU position: it is the
//! set's next victim unless it is hit first, when it moves to MRU as in
//! LRU. A working set larger than the cache then keeps part of itself
//! instead of thrashing. A building block of `bip` and `dip`.

use serde::{Deserialize, Serialize};

use super::recency::{Insert, Recency};
use super::{Policy, ReplCtx};
use crate::error::Result;

/// `lip` has no parameters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LipParams {}

impl LipParams {
    /// Build the policy for a cache of the given geometry.
    pub fn build(&self, ctx: &ReplCtx) -> Result<Policy> {
        Ok(Policy::Lip(Recency::new(ctx, AtLru)?))
    }
}

/// LIP.
pub type Lip = Recency<AtLru>;

/// LIP's insertion: always at LRU.
#[derive(Debug, Clone)]
pub struct AtLru;

impl Insert for AtLru {
    fn sets_apart(&self) -> bool {
        true
    }

    #[inline(always)]
    fn at_mru(&mut self, _set: usize) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::super::conformance::{ctx, query, touch};
    use super::*;
    use crate::mem::replacement::Replacement;

    #[test]
    fn a_filled_line_is_the_next_victim_until_hit() {
        let mut p = LipParams::default().build(&ctx(1, 4)).unwrap();
        for way in 0..4 {
            p.on_fill(&touch(0, way));
        }
        // Each fill went below the others: way 3 is LRU.
        assert_eq!(p.victim(&query(0)), 3);
        p.on_fill(&touch(0, 3));
        assert_eq!(p.victim(&query(0)), 3, "a refill stays at LRU");
        p.on_hit(&touch(0, 3));
        assert_eq!(p.victim(&query(0)), 2, "a hit promotes it to MRU");
    }

    #[test]
    fn victims_survive_both_clocks_running_out() {
        let mut lip = Recency::new(&ctx(1, 4), AtLru).unwrap();
        for way in 0..4 {
            lip.on_fill(&touch(0, way));
        }
        lip.on_hit(&touch(0, 1));
        lip.on_hit(&touch(0, 0));
        // Order, oldest first: 3, 2, 1, 0. Renumbering must keep it.
        lip.stamps.set_clocks(u32::MAX, 0);
        lip.on_fill(&touch(0, 2));
        assert_eq!(lip.victim(&query(0)), 2);
        lip.on_hit(&touch(0, 2));
        assert_eq!(lip.victim(&query(0)), 3);
        lip.on_hit(&touch(0, 3));
        assert_eq!(lip.victim(&query(0)), 1);
    }
}
