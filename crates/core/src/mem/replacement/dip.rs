//! `dip`: dynamic insertion policy (Qureshi et al., ISCA 2007).
//!
//! Set dueling between LRU and BIP ([`dueling`](super::dueling)): 32 leader
//! sets always use LRU, 32 always BIP (complement-select), a 10-bit PSEL
//! counts their demand misses, and the other sets use BIP while PSEL's top
//! bit is 1. Hits promote to MRU everywhere. DIP keeps LRU's hits on
//! workloads that fit and BIP's on those that thrash.

use serde::{Deserialize, Serialize};

use super::dueling::{self, Duel};
use super::recency::{Insert, Recency};
use super::{Bimodal, Policy, ReplCtx};
use crate::error::Result;

/// Parameters of `dip`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DipParams {
    /// BIP's probability of inserting at MRU (0 to 1).
    pub epsilon: f64,
    /// Leader sets per policy (at most half the sets).
    pub leader_sets: u32,
    /// Width of the PSEL counter (1 to 31).
    pub psel_bits: u32,
    /// Extra salt mixed into the cache's seed (another stream, same run seed).
    pub salt: u64,
}

impl Default for DipParams {
    fn default() -> Self {
        DipParams {
            epsilon: Bimodal::EPSILON,
            leader_sets: dueling::LEADER_SETS,
            psel_bits: dueling::PSEL_BITS,
            salt: 0,
        }
    }
}

impl DipParams {
    /// Build the policy for a cache of the given geometry.
    pub fn build(&self, ctx: &ReplCtx) -> Result<Policy> {
        let duel = Duel::new(self.epsilon, self.salt, self.leader_sets, self.psel_bits, ctx)?;
        Ok(Policy::Dip(Recency::new(ctx, duel)?))
    }
}

/// DIP-SD: policy A is LRU, policy B is BIP.
pub type Dip = Recency<Duel>;

impl Insert for Duel {
    #[inline(always)]
    fn at_mru(&mut self, set: usize) -> bool {
        self.inserts_as_a(set)
    }

    #[inline(always)]
    fn on_miss(&mut self, set: usize) {
        Duel::on_miss(self, set);
    }
}

#[cfg(test)]
mod tests {
    use super::super::conformance::{ctx, query, touch};
    use super::*;
    use crate::mem::replacement::Replacement;

    fn dip(sets: usize, ways: usize) -> Dip {
        let p = DipParams { leader_sets: 1, epsilon: 0.0, ..Default::default() };
        match p.build(&ctx(sets, ways)).unwrap() {
            Policy::Dip(d) => d,
            _ => unreachable!(),
        }
    }

    #[test]
    fn followers_switch_from_lru_to_bip_when_lru_leaders_miss_more() {
        // 4 sets, one leader each: set 0 leads for LRU, set 3 for BIP
        // (epsilon 0: pure LIP); sets 1 and 2 follow.
        let mut p = dip(4, 2);
        let fill_and_probe = |p: &mut Dip, set: usize| {
            p.on_fill(&touch(set, 1));
            p.on_fill(&touch(set, 0));
            // LRU insertion leaves way 1 the victim; LIP leaves way 0.
            p.victim(&query(set))
        };
        assert_eq!(fill_and_probe(&mut p, 0), 1);
        assert_eq!(fill_and_probe(&mut p, 3), 0);
        assert_eq!(fill_and_probe(&mut p, 2), 1, "followers start with LRU");
        p.on_miss(&touch(0, 0));
        assert_eq!(fill_and_probe(&mut p, 2), 0, "one LRU-leader miss tips a fresh PSEL to BIP");
        p.on_miss(&touch(3, 0));
        p.on_miss(&touch(3, 0));
        assert_eq!(fill_and_probe(&mut p, 1), 1);
    }

    #[test]
    fn too_many_leaders_name_the_key() {
        let err = DipParams::default().build(&ctx(32, 4)).unwrap_err().to_string();
        assert!(err.contains("machine.l1d.replacement.params.leader_sets"), "{err}");
    }
}
