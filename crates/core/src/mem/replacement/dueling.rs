//! Set dueling (Qureshi et al., ISCA 2007), shared by `dip` and `drrip`.
//!
//! A few *leader* sets always use policy A (LRU, SRRIP), as many always use
//! policy B (BIP, BRRIP); a saturating counter, PSEL, counts up on a demand
//! miss in an A leader and down on one in a B leader. Every other (*follower*)
//! set uses B while the most significant bit of PSEL is 1, else A.
//!
//! **Leader sets: complement-select.** The sets are cut into `leaders`
//! regions of `R = sets / leaders` consecutive sets (the last `sets mod
//! leaders` sets belong to no region and follow). In region `r`, the set at
//! offset `r mod R` leads for A and the set at offset `R - 1 - (r mod R)`
//! leads for B (when `R` is odd these coincide for one region, whose B
//! leader is then the next offset, `(r mod R + 1) mod R`). With 1024 sets and
//! 32 leaders this is the paper's rule: a set leads for A when the 5 bits
//! above the low 5 equal the low 5 bits, for B when they equal their
//! complement. It needs `R >= 2`, i.e. at most `sets / 2` leaders per policy.
//!
//! **PSEL** starts at `2^(bits-1) - 1`, just below the midpoint, so that the
//! followers start with policy A (the baseline) until the leaders' misses
//! say otherwise.

use super::{Bimodal, ReplCtx};
use crate::error::Result;

/// What a set does in the duel.
const FOLLOWER: u8 = 0;
const LEADER_A: u8 = 1;
const LEADER_B: u8 = 2;

/// Default leader sets per policy (both papers).
pub(crate) const LEADER_SETS: u32 = 32;
/// Default PSEL width in bits (both papers).
pub(crate) const PSEL_BITS: u32 = 10;

/// Leader roles per set and the PSEL counter.
#[derive(Debug, Clone)]
pub(crate) struct Dueling {
    /// `FOLLOWER`, `LEADER_A` or `LEADER_B` per set.
    roles: Vec<u8>,
    psel: u32,
    max: u32,
    msb: u32,
}

impl Dueling {
    /// The duel for the cache in `ctx` with `leader_sets` leaders per policy
    /// and a `psel_bits`-bit selector; errors name the param at fault.
    pub(crate) fn new(leader_sets: u32, psel_bits: u32, ctx: &ReplCtx) -> Result<Dueling> {
        ctx.check_range("psel_bits", psel_bits, 1, 31)?;
        ctx.check_range("leader_sets", leader_sets, 1, u32::MAX)?;
        let leaders = leader_sets as usize;
        if ctx.sets > 0 && 2 * leaders > ctx.sets {
            return Err(ctx.param_error(
                "leader_sets",
                "out_of_range",
                format!(
                    "{leaders} leader sets per policy need at least {} sets, the cache has {}; \
                     lower leader_sets to at most {}",
                    2 * leaders,
                    ctx.sets,
                    ctx.sets / 2
                ),
            ));
        }
        let mut roles = ctx.per_set(FOLLOWER)?;
        if ctx.sets > 0 {
            for (set, role) in leader_roles(ctx.sets, leaders) {
                roles[set] = role;
            }
        }
        let msb = 1 << (psel_bits - 1);
        Ok(Dueling { roles, psel: msb - 1, max: (msb << 1) - 1, msb })
    }

    /// Whether `set` uses policy B now.
    #[inline(always)]
    pub(crate) fn uses_b(&self, set: usize) -> bool {
        match self.roles[set] {
            FOLLOWER => self.psel & self.msb != 0,
            role => role == LEADER_B,
        }
    }

    /// A demand miss in `set`: a leader's miss moves PSEL away from its policy.
    #[inline(always)]
    pub(crate) fn on_miss(&mut self, set: usize) {
        match self.roles[set] {
            LEADER_A => self.psel = (self.psel + 1).min(self.max),
            LEADER_B => self.psel = self.psel.saturating_sub(1),
            _ => {}
        }
    }

    #[cfg(test)]
    pub(crate) fn psel(&self) -> u32 {
        self.psel
    }
}

/// The insertion of a duel between a policy and its bimodal variant, both
/// DIP's (LRU against BIP) and DRRIP's (SRRIP against BRRIP): a line filled
/// in a set that uses B takes A's insertion only when the bimodal coin comes
/// up (one draw), else B's own; in a set that uses A, A's (no draw).
#[derive(Debug, Clone)]
pub struct Duel {
    coin: Bimodal,
    duel: Dueling,
}

impl Duel {
    /// The duel for the cache in `ctx` (params as in [`Dueling::new`] and [`Bimodal::new`]).
    pub(crate) fn new(epsilon: f64, salt: u64, leader_sets: u32, psel_bits: u32, ctx: &ReplCtx) -> Result<Duel> {
        Ok(Duel { coin: Bimodal::new(epsilon, salt, ctx)?, duel: Dueling::new(leader_sets, psel_bits, ctx)? })
    }

    /// Whether a line filled in `set` takes policy A's insertion.
    #[inline(always)]
    pub(crate) fn inserts_as_a(&mut self, set: usize) -> bool {
        !self.duel.uses_b(set) || self.coin.rare()
    }

    /// A demand miss in `set`.
    #[inline(always)]
    pub(crate) fn on_miss(&mut self, set: usize) {
        self.duel.on_miss(set);
    }
}

/// The leader sets, as (set, role), of `sets` sets with `leaders` per policy
/// (`2 * leaders <= sets`), by complement-select (module docs).
fn leader_roles(sets: usize, leaders: usize) -> impl Iterator<Item = (usize, u8)> {
    let r = sets / leaders;
    (0..leaders).flat_map(move |region| {
        let a = region % r;
        let mut b = r - 1 - a;
        if b == a {
            b = (a + 1) % r;
        }
        [(region * r + a, LEADER_A), (region * r + b, LEADER_B)]
    })
}

#[cfg(test)]
mod tests {
    use super::super::conformance::ctx;
    use super::*;

    #[test]
    fn complement_select_of_the_paper() {
        // 1024 sets, 32 leaders: A when bits 5..10 equal bits 0..5, B when
        // they equal their complement.
        let d = Dueling::new(32, 10, &ctx(1024, 16)).unwrap();
        for set in 0..1024 {
            let (hi, lo) = (set >> 5, set & 31);
            let want = if hi == lo {
                LEADER_A
            } else if hi == !lo & 31 {
                LEADER_B
            } else {
                FOLLOWER
            };
            assert_eq!(d.roles[set], want, "set {set}");
        }
    }

    #[test]
    fn leaders_are_distinct_for_any_geometry() {
        for sets in 2..200 {
            for leaders in 1..=sets / 2 {
                let d = Dueling::new(leaders as u32, 10, &ctx(sets, 4)).unwrap();
                assert_eq!(d.roles.iter().filter(|&&r| r == LEADER_A).count(), leaders, "{sets} {leaders}");
                assert_eq!(d.roles.iter().filter(|&&r| r == LEADER_B).count(), leaders, "{sets} {leaders}");
            }
        }
    }

    #[test]
    fn psel_saturates_and_its_msb_picks_the_followers_policy() {
        let mut d = Dueling::new(1, 3, &ctx(4, 4)).unwrap();
        // 4 sets, one leader each: A is set 0, B is set 3; 1 and 2 follow.
        assert_eq!((d.uses_b(0), d.uses_b(3), d.uses_b(2)), (false, true, false));
        assert_eq!(d.psel(), 3);
        d.on_miss(0);
        assert!(d.uses_b(2), "A's leader missed: followers switch to B");
        (0..10).for_each(|_| d.on_miss(0));
        assert_eq!(d.psel(), 7);
        (0..10).for_each(|_| d.on_miss(3));
        assert_eq!(d.psel(), 0);
        assert!(!d.uses_b(1));
        d.on_miss(1);
        assert_eq!(d.psel(), 0, "followers' misses do not count");
    }

    #[test]
    fn bad_params_name_the_key() {
        let err = Dueling::new(32, 10, &ctx(32, 4)).unwrap_err().to_string();
        assert!(err.contains("machine.l1d.replacement.params.leader_sets"), "{err}");
        assert!(err.contains("at most 16"), "{err}");
        let err = Dueling::new(4, 0, &ctx(32, 4)).unwrap_err().to_string();
        assert!(err.contains("machine.l1d.replacement.params.psel_bits"), "{err}");
        let err = Dueling::new(0, 10, &ctx(32, 4)).unwrap_err().to_string();
        assert!(err.contains("params.leader_sets"), "{err}");
        // Without sets (config validation) only the params themselves are checked.
        Dueling::new(32, 10, &ctx(0, 4)).unwrap();
    }
}
