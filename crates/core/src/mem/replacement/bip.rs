//! `bip`: bimodal insertion policy (Qureshi et al., ISCA 2007).
//!
//! LIP, except that with a small probability `epsilon` (the bimodal
//! throttle, 1/32 by default) a filled line goes to the MRU position as in
//! LRU. It keeps part of a thrashing working set like LIP and still adapts
//! when the working set changes. The coin is a seeded stream of the cache,
//! drawn once per fill.

use serde::{Deserialize, Serialize};

use super::recency::{Insert, Recency};
use super::{Bimodal, Policy, ReplCtx};
use crate::error::Result;

/// Parameters of `bip`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BipParams {
    /// Probability of inserting at MRU instead of LRU (0 to 1).
    pub epsilon: f64,
    /// Extra salt mixed into the cache's seed (another stream, same run seed).
    pub salt: u64,
}

impl Default for BipParams {
    fn default() -> Self {
        BipParams { epsilon: Bimodal::EPSILON, salt: 0 }
    }
}

impl BipParams {
    /// Build the policy for a cache of the given geometry.
    pub fn build(&self, ctx: &ReplCtx) -> Result<Policy> {
        let coin = Bimodal::new(self.epsilon, self.salt, ctx)?;
        Ok(Policy::Bip(Recency::new(ctx, Rarely(coin))?))
    }
}

/// BIP.
pub type Bip = Recency<Rarely>;

/// BIP's insertion: at MRU with the coin's probability, else at LRU.
#[derive(Debug, Clone)]
pub struct Rarely(Bimodal);

impl Insert for Rarely {
    #[inline(always)]
    fn at_mru(&mut self, _set: usize) -> bool {
        self.0.rare()
    }
}

#[cfg(test)]
mod tests {
    use super::super::conformance::{ctx, query, touch};
    use super::*;
    use crate::mem::replacement::Replacement;

    #[test]
    fn about_one_fill_in_32_goes_to_mru() {
        // Fill way 0 over and over in a full 2-way set: the victim stays way 0
        // after an LRU insertion and becomes way 1 after an MRU one.
        let mut p = BipParams::default().build(&ctx(1, 2)).unwrap();
        p.on_fill(&touch(0, 1));
        p.on_fill(&touch(0, 0));
        let mut mru = 0;
        for _ in 0..32_000 {
            let v = p.victim(&query(0));
            p.on_fill(&touch(0, v));
            if p.victim(&query(0)) != v {
                mru += 1;
            }
        }
        // 1000 expected; 5 sigma is about 155.
        assert!((845..1155).contains(&mru), "{mru}");
    }

    #[test]
    fn epsilon_out_of_range_names_the_key() {
        let p = BipParams { epsilon: 1.5, ..Default::default() };
        let err = p.build(&ctx(1, 2)).unwrap_err().to_string();
        assert!(err.contains("machine.l1d.replacement.params.epsilon"), "{err}");
    }
}
