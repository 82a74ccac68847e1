//! Re-reference prediction values (Jaleel et al., ISCA 2010), shared by
//! `srrip`, `brrip`, `drrip` and `ship`.
//!
//! Each line has an M-bit RRPV: 0 predicts a near re-reference, `2^M - 1`
//! ("distant") a re-reference so far off that the line is the next victim.
//! The victim is the first evictable way, scanning from way 0, whose RRPV is
//! distant; when there is none, every RRPV of the set is incremented and the
//! scan repeats. Here the repetition is one step: all RRPVs grow by the
//! distance of the highest evictable one from distant (saturating), which
//! leaves the set exactly as the loop would.
//!
//! SRRIP, BRRIP and DRRIP differ only in where a filled line starts: each
//! is an [`Rrip`] with its own [`Insert`] rule. SHiP learns from hits and
//! evictions too and uses [`Rrpv`] directly.

use super::{Bimodal, ReplCtx, Replacement, Touch, VictimQuery};
use crate::error::Result;

/// Where an RRIP policy places a filled line.
pub trait Insert: Clone + std::fmt::Debug {
    /// The RRPV of a line filled in `set`.
    fn rrpv(&mut self, rrpv: &Rrpv, set: usize) -> u8;

    /// A demand miss in `set` (set dueling learns here). Optional.
    fn on_miss(&mut self, _set: usize) {}

    /// Whether the rule looks at nothing beyond the set
    /// ([`Replacement::sets_apart`]). Optional; the default is `false`.
    fn sets_apart(&self) -> bool {
        false
    }
}

/// An RRIP policy: hits predict a near re-reference (RRPV 0), victims are
/// the first distant way after ageing, fills follow `I`.
#[derive(Debug, Clone)]
pub struct Rrip<I> {
    pub(crate) rrpv: Rrpv,
    pub(crate) insert: I,
}

impl<I: Insert> Replacement for Rrip<I> {
    fn sets_apart(&self) -> bool {
        self.insert.sets_apart()
    }

    #[inline(always)]
    fn on_hit(&mut self, t: &Touch) {
        self.rrpv.set(t.set, t.way, 0);
    }

    #[inline(always)]
    fn on_fill(&mut self, t: &Touch) {
        let value = self.insert.rrpv(&self.rrpv, t.set);
        self.rrpv.set(t.set, t.way, value);
    }

    #[inline(always)]
    fn on_miss(&mut self, t: &Touch) {
        self.insert.on_miss(t.set);
    }

    #[inline]
    fn victim(&mut self, q: &VictimQuery) -> usize {
        self.rrpv.victim(q)
    }
}

/// Default RRPV width M (the paper's 2 bits).
pub(crate) const RRPV_BITS: u32 = 2;

/// One RRPV per line.
#[derive(Debug, Clone)]
pub struct Rrpv {
    values: Vec<u8>,
    ways: usize,
    distant: u8,
}

impl Rrpv {
    /// RRPVs of `bits` bits (1 to 8) for the cache in `ctx`.
    pub(crate) fn new(bits: u32, ctx: &ReplCtx) -> Result<Rrpv> {
        ctx.check_range("rrpv_bits", bits, 1, 8)?;
        let distant = ((1u32 << bits) - 1) as u8;
        Ok(Rrpv { values: ctx.per_line(distant)?, ways: ctx.ways, distant })
    }

    /// `2^M - 1`: re-referenced in the distant future (BRRIP's insertion).
    #[inline(always)]
    pub(crate) fn distant(&self) -> u8 {
        self.distant
    }

    /// `2^M - 2`: a long re-reference interval (SRRIP's insertion; 0 when M is 1).
    #[inline(always)]
    pub(crate) fn long(&self) -> u8 {
        self.distant.saturating_sub(1)
    }

    /// BRRIP's insertion: distant, except long with the coin's probability.
    #[inline(always)]
    pub(crate) fn bimodal(&self, coin: &mut Bimodal) -> u8 {
        if coin.rare() {
            self.long()
        } else {
            self.distant
        }
    }

    /// Set the RRPV of `set`, `way`.
    #[inline(always)]
    pub(crate) fn set(&mut self, set: usize, way: usize, value: u8) {
        self.values[set * self.ways + way] = value;
    }

    /// The RRPV of `set`, `way`.
    #[cfg(test)]
    pub(crate) fn get(&self, set: usize, way: usize) -> u8 {
        self.values[set * self.ways + way]
    }

    /// The first evictable way with a distant RRPV, after ageing the set as
    /// often as it takes for there to be one.
    #[inline]
    pub(crate) fn victim(&mut self, q: &VictimQuery) -> usize {
        let base = q.set * self.ways;
        let values = &mut self.values[base..base + self.ways];
        let (mut way, mut highest) = (usize::MAX, 0u8);
        for (w, &v) in values.iter().enumerate() {
            if (way == usize::MAX || v > highest) && q.evictable(w) {
                (way, highest) = (w, v);
                if v == self.distant {
                    return w;
                }
            }
        }
        debug_assert!(way != usize::MAX, "victim asked for a set with no evictable way");
        let age = self.distant - highest;
        for v in values.iter_mut() {
            *v = v.saturating_add(age).min(self.distant);
        }
        way
    }
}

#[cfg(test)]
mod tests {
    use super::super::conformance::ctx;
    use super::*;
    use crate::mem::replacement::ReqKind;
    use crate::types::{TaskId, VirtAddr};

    fn q(locked: Option<&[bool]>) -> VictimQuery<'_> {
        VictimQuery { set: 0, pc: VirtAddr(0), req: ReqKind::Load, task: TaskId(0), locked }
    }

    #[test]
    fn ages_the_set_until_a_way_is_distant() {
        let mut r = Rrpv::new(2, &ctx(1, 4)).unwrap();
        for (way, v) in [1, 0, 2, 1].into_iter().enumerate() {
            r.set(0, way, v);
        }
        assert_eq!(r.victim(&q(None)), 2);
        assert_eq!((0..4).map(|w| r.get(0, w)).collect::<Vec<_>>(), [2, 1, 3, 2]);
        // A distant way is taken without ageing; the first of several.
        r.set(0, 0, 3);
        assert_eq!(r.victim(&q(None)), 0);
        assert_eq!((0..4).map(|w| r.get(0, w)).collect::<Vec<_>>(), [3, 1, 3, 2]);
    }

    #[test]
    fn locked_ways_are_aged_but_never_chosen() {
        let mut r = Rrpv::new(2, &ctx(1, 4)).unwrap();
        for (way, v) in [3, 0, 1, 3].into_iter().enumerate() {
            r.set(0, way, v);
        }
        let locked = [true, false, false, true];
        assert_eq!(r.victim(&q(Some(&locked))), 2);
        assert_eq!((0..4).map(|w| r.get(0, w)).collect::<Vec<_>>(), [3, 2, 3, 3]);
    }

    #[test]
    fn one_bit_rrpvs_insert_long_at_zero() {
        let r = Rrpv::new(1, &ctx(1, 4)).unwrap();
        assert_eq!((r.long(), r.distant()), (0, 1));
        let r = Rrpv::new(3, &ctx(1, 4)).unwrap();
        assert_eq!((r.long(), r.distant()), (6, 7));
        let err = Rrpv::new(0, &ctx(1, 4)).unwrap_err().to_string();
        assert!(err.contains("machine.l1d.replacement.params.rrpv_bits"), "{err}");
        assert!(Rrpv::new(9, &ctx(1, 4)).is_err());
    }
}
