//! `brrip`: bimodal RRIP (Jaleel et al., ISCA 2010).
//!
//! SRRIP-HP, except that a filled line is predicted distant (`2^M - 1`), and
//! long (`2^M - 2`) only with a small probability `epsilon` (1/32 by
//! default). Lines of a working set larger than the cache mostly leave at
//! once, so a part of it stays: thrash-resistant. The coin is a seeded
//! stream of the cache, drawn once per fill.

use serde::{Deserialize, Serialize};

use super::rrip::{self, Insert, Rrip, Rrpv};
use super::{Bimodal, Policy, ReplCtx};
use crate::error::Result;

/// Parameters of `brrip`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BrripParams {
    /// RRPV width M in bits (1 to 8).
    pub rrpv_bits: u32,
    /// Probability of inserting at `2^M - 2` instead of `2^M - 1` (0 to 1).
    pub epsilon: f64,
    /// Extra salt mixed into the cache's seed (another stream, same run seed).
    pub salt: u64,
}

impl Default for BrripParams {
    fn default() -> Self {
        BrripParams { rrpv_bits: rrip::RRPV_BITS, epsilon: Bimodal::EPSILON, salt: 0 }
    }
}

impl BrripParams {
    /// Build the policy for a cache of the given geometry.
    pub fn build(&self, ctx: &ReplCtx) -> Result<Policy> {
        let rrpv = Rrpv::new(self.rrpv_bits, ctx)?;
        Ok(Policy::Brrip(Rrip { rrpv, insert: Distant(Bimodal::new(self.epsilon, self.salt, ctx)?) }))
    }
}

/// BRRIP.
pub type Brrip = Rrip<Distant>;

/// BRRIP's insertion: distant, long with the coin's probability.
#[derive(Debug, Clone)]
pub struct Distant(Bimodal);

impl Insert for Distant {
    #[inline(always)]
    fn rrpv(&mut self, rrpv: &Rrpv, _set: usize) -> u8 {
        rrpv.bimodal(&mut self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::conformance::{ctx, touch};
    use super::*;
    use crate::mem::replacement::Replacement;

    #[test]
    fn about_one_fill_in_32_is_long_the_rest_distant() {
        let Policy::Brrip(mut p) = BrripParams::default().build(&ctx(1, 1)).unwrap() else { unreachable!() };
        let mut long = 0;
        for _ in 0..32_000 {
            p.on_fill(&touch(0, 0));
            match p.rrpv.get(0, 0) {
                2 => long += 1,
                3 => {}
                other => panic!("inserted at {other}"),
            }
        }
        // 1000 expected; 5 sigma is about 155.
        assert!((845..1155).contains(&long), "{long}");
    }
}
