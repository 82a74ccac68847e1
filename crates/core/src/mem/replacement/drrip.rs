//! `drrip`: dynamic RRIP (Jaleel et al., ISCA 2010).
//!
//! Set dueling ([`dueling`](super::dueling)) between SRRIP-HP and BRRIP: 32
//! leader sets always insert as SRRIP, 32 as BRRIP (complement-select), a
//! 10-bit PSEL counts their demand misses, and the other sets insert as
//! BRRIP while PSEL's top bit is 1. Hits, victims and ageing are RRIP's
//! everywhere. Scan-resistant like SRRIP and thrash-resistant like BRRIP.

use serde::{Deserialize, Serialize};

use super::dueling::{self, Duel};
use super::rrip::{self, Insert, Rrip, Rrpv};
use super::{Bimodal, Policy, ReplCtx};
use crate::error::Result;

/// Parameters of `drrip`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DrripParams {
    /// RRPV width M in bits (1 to 8).
    pub rrpv_bits: u32,
    /// BRRIP's probability of inserting at `2^M - 2` (0 to 1).
    pub epsilon: f64,
    /// Leader sets per policy (at most half the sets).
    pub leader_sets: u32,
    /// Width of the PSEL counter (1 to 31).
    pub psel_bits: u32,
    /// Extra salt mixed into the cache's seed (another stream, same run seed).
    pub salt: u64,
}

impl Default for DrripParams {
    fn default() -> Self {
        DrripParams {
            rrpv_bits: rrip::RRPV_BITS,
            epsilon: Bimodal::EPSILON,
            leader_sets: dueling::LEADER_SETS,
            psel_bits: dueling::PSEL_BITS,
            salt: 0,
        }
    }
}

impl DrripParams {
    /// Build the policy for a cache of the given geometry.
    pub fn build(&self, ctx: &ReplCtx) -> Result<Policy> {
        let rrpv = Rrpv::new(self.rrpv_bits, ctx)?;
        let duel = Duel::new(self.epsilon, self.salt, self.leader_sets, self.psel_bits, ctx)?;
        Ok(Policy::Drrip(Rrip { rrpv, insert: duel }))
    }
}

/// DRRIP: policy A is SRRIP-HP, policy B is BRRIP.
pub type Drrip = Rrip<Duel>;

impl Insert for Duel {
    #[inline(always)]
    fn rrpv(&mut self, rrpv: &Rrpv, set: usize) -> u8 {
        if self.inserts_as_a(set) {
            rrpv.long()
        } else {
            rrpv.distant()
        }
    }

    #[inline(always)]
    fn on_miss(&mut self, set: usize) {
        Duel::on_miss(self, set);
    }
}

#[cfg(test)]
mod tests {
    use super::super::conformance::{ctx, touch};
    use super::*;
    use crate::mem::replacement::Replacement;

    #[test]
    fn followers_insert_as_the_leader_that_misses_less() {
        let p = DrripParams { leader_sets: 1, epsilon: 0.0, ..Default::default() };
        let Policy::Drrip(mut p) = p.build(&ctx(4, 1)).unwrap() else { unreachable!() };
        // Set 0 leads for SRRIP, set 3 for BRRIP; 1 and 2 follow.
        let inserted = |p: &mut Drrip, set| {
            p.on_fill(&touch(set, 0));
            p.rrpv.get(set, 0)
        };
        assert_eq!((inserted(&mut p, 0), inserted(&mut p, 3), inserted(&mut p, 2)), (2, 3, 2));
        p.on_miss(&touch(0, 0));
        assert_eq!(inserted(&mut p, 1), 3, "an SRRIP-leader miss tips a fresh PSEL to BRRIP");
        p.on_miss(&touch(3, 0));
        p.on_miss(&touch(2, 0));
        assert_eq!(inserted(&mut p, 1), 2, "a BRRIP-leader miss tips it back; followers do not count");
    }
}
