//! `srrip`: static re-reference interval prediction, hit priority
//! (SRRIP-HP, Jaleel et al., ISCA 2010).
//!
//! Each line has an M-bit RRPV ([`rrip`](super::rrip)). A filled line is
//! predicted a long re-reference interval (`2^M - 2`), a hit predicts a near
//! one (0), and the victim is the first way predicted distant (`2^M - 1`),
//! ageing the set when there is none. Lines that are never reused leave
//! before those that were: scan-resistant where LRU is not.

use serde::{Deserialize, Serialize};

use super::rrip::{self, Insert, Rrip, Rrpv};
use super::{Policy, ReplCtx};
use crate::error::Result;

/// Parameters of `srrip`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SrripParams {
    /// RRPV width M in bits (1 to 8).
    pub rrpv_bits: u32,
}

impl Default for SrripParams {
    fn default() -> Self {
        SrripParams { rrpv_bits: rrip::RRPV_BITS }
    }
}

impl SrripParams {
    /// Build the policy for a cache of the given geometry.
    pub fn build(&self, ctx: &ReplCtx) -> Result<Policy> {
        Ok(Policy::Srrip(Rrip { rrpv: Rrpv::new(self.rrpv_bits, ctx)?, insert: Long }))
    }
}

/// SRRIP-HP.
pub type Srrip = Rrip<Long>;

/// SRRIP's insertion: always long (`2^M - 2`).
#[derive(Debug, Clone)]
pub struct Long;

impl Insert for Long {
    fn sets_apart(&self) -> bool {
        true
    }

    #[inline(always)]
    fn rrpv(&mut self, rrpv: &Rrpv, _set: usize) -> u8 {
        rrpv.long()
    }
}

#[cfg(test)]
mod tests {
    use super::super::conformance::{ctx, query, touch};
    use super::*;
    use crate::mem::replacement::Replacement;

    #[test]
    fn a_short_scan_does_not_evict_reused_lines() {
        // 4 ways hold a, b, c, d; a and b are reused (RRPV 0), c and d not (2).
        let mut p = SrripParams::default().build(&ctx(1, 4)).unwrap();
        for way in 0..4 {
            p.on_fill(&touch(0, way));
        }
        p.on_hit(&touch(0, 0));
        p.on_hit(&touch(0, 1));
        // A scan of new lines e, f, g, h: none is found distant, the set
        // ages (0,0,2,2 -> 1,1,3,3), e replaces c, f replaces d (1,1,2,2),
        // the set ages again (2,2,3,3) for g and h, which replace c and d.
        // LRU would have lost a and b to e and f.
        for (i, want) in [2, 3, 2, 3].into_iter().enumerate() {
            assert_eq!(p.victim(&query(0)), want, "scan line {i}");
            p.on_fill(&touch(0, want));
        }
        // A fifth scan line finds every line at 2, ages them all to 3 and
        // takes a: SRRIP resists scans of bounded length only.
        assert_eq!(p.victim(&query(0)), 0);
    }

    #[test]
    fn wider_rrpvs_insert_at_two_to_the_m_minus_two() {
        let Policy::Srrip(mut p) = SrripParams { rrpv_bits: 3 }.build(&ctx(1, 2)).unwrap() else { unreachable!() };
        p.on_fill(&touch(0, 0));
        p.on_fill(&touch(0, 1));
        p.on_hit(&touch(0, 0));
        assert_eq!((p.rrpv.get(0, 0), p.rrpv.get(0, 1)), (0, 6));
        assert_eq!(p.victim(&query(0)), 1);
        assert_eq!((p.rrpv.get(0, 0), p.rrpv.get(0, 1)), (1, 7));
    }
}
