//! `ship`: signature-based hit predictor, PC signatures (SHiP-PC, Wu et
//! al., MICRO 2011), on SRRIP-HP.
//!
//! A line remembers the signature of the access that filled it (a hash of
//! its pc) and whether it has been hit since (the outcome bit). A table of
//! saturating counters indexed by signature (the SHCT) learns which pcs fill
//! lines that get reused: a hit increments its line's counter, the removal
//! of a line that was never hit decrements it. A fill whose counter is 0 is
//! predicted distant (`2^M - 1`), any other long (`2^M - 2`). Hits, victims
//! and ageing are SRRIP's.
//!
//! **Signature.** The top `signature_bits` bits of the SplitMix64 finaliser
//! ([`mix64`]) of the pc: `mix64(pc) >> (64 - signature_bits)`. Every pc bit
//! reaches every signature bit, so nearby pcs spread over the table.
//!
//! **Write-backs** carry no pc: a line filled by a write-back from the level
//! above enters long and is left out of the learning (its hits and its
//! removal change no counter). Every other removal of a line, evictions and
//! invalidations alike, trains the table, as the hook cannot tell them apart.

use serde::{Deserialize, Serialize};

use super::rrip::{self, Rrpv};
use super::{Policy, ReplCtx, Replacement, ReqKind, Touch, VictimQuery};
use crate::error::Result;
use crate::util::rng::mix64;

/// Parameters of `ship`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShipParams {
    /// RRPV width M in bits (1 to 8).
    pub rrpv_bits: u32,
    /// Signature width (1 to 16); the SHCT has `2^signature_bits` counters.
    pub signature_bits: u32,
    /// Width of each SHCT counter (1 to 8).
    pub counter_bits: u32,
    /// Initial value of every SHCT counter (at most `2^counter_bits - 1`).
    pub counter_init: u32,
}

impl Default for ShipParams {
    fn default() -> Self {
        ShipParams { rrpv_bits: rrip::RRPV_BITS, signature_bits: 14, counter_bits: 3, counter_init: 1 }
    }
}

impl ShipParams {
    /// Build the policy for a cache of the given geometry.
    pub fn build(&self, ctx: &ReplCtx) -> Result<Policy> {
        let rrpv = Rrpv::new(self.rrpv_bits, ctx)?;
        ctx.check_range("signature_bits", self.signature_bits, 1, 16)?;
        ctx.check_range("counter_bits", self.counter_bits, 1, 8)?;
        let counter_max = (1u32 << self.counter_bits) - 1;
        ctx.check_range("counter_init", self.counter_init, 0, counter_max)?;
        Ok(Policy::Ship(Ship {
            rrpv,
            lines: ctx.per_line(Line::UNTRAINED)?,
            shct: vec![self.counter_init as u8; 1 << self.signature_bits],
            ways: ctx.ways,
            shift: 64 - self.signature_bits,
            counter_max: counter_max as u8,
        }))
    }
}

/// A line's signature and outcome bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Line {
    signature: u16,
    /// Hit since it was filled.
    reused: bool,
    /// Takes part in learning (not filled by a write-back).
    trained: bool,
}

impl Line {
    const UNTRAINED: Line = Line { signature: 0, reused: false, trained: false };
}

/// SHiP-PC.
#[derive(Debug, Clone)]
pub struct Ship {
    rrpv: Rrpv,
    lines: Vec<Line>,
    /// The signature history counter table.
    shct: Vec<u8>,
    ways: usize,
    /// `64 - signature_bits`.
    shift: u32,
    counter_max: u8,
}

impl Ship {
    /// The signature of `pc`.
    #[inline(always)]
    fn signature(&self, pc: u64) -> u16 {
        (mix64(pc) >> self.shift) as u16
    }
}

impl Replacement for Ship {
    #[inline(always)]
    fn on_hit(&mut self, t: &Touch) {
        self.rrpv.set(t.set, t.way, 0);
        let line = &mut self.lines[t.set * self.ways + t.way];
        if line.trained {
            line.reused = true;
            let counter = &mut self.shct[line.signature as usize];
            *counter = (*counter + 1).min(self.counter_max);
        }
    }

    #[inline(always)]
    fn on_fill(&mut self, t: &Touch) {
        let i = t.set * self.ways + t.way;
        if t.req == ReqKind::Writeback {
            self.lines[i] = Line::UNTRAINED;
            let long = self.rrpv.long();
            self.rrpv.set(t.set, t.way, long);
            return;
        }
        let signature = self.signature(t.pc.0);
        self.lines[i] = Line { signature, reused: false, trained: true };
        let value = if self.shct[signature as usize] == 0 { self.rrpv.distant() } else { self.rrpv.long() };
        self.rrpv.set(t.set, t.way, value);
    }

    #[inline(always)]
    fn on_evict(&mut self, t: &Touch) {
        let line = &mut self.lines[t.set * self.ways + t.way];
        if line.trained && !line.reused {
            let counter = &mut self.shct[line.signature as usize];
            *counter = counter.saturating_sub(1);
        }
        *line = Line::UNTRAINED;
    }

    #[inline]
    fn victim(&mut self, q: &VictimQuery) -> usize {
        self.rrpv.victim(q)
    }
}

#[cfg(test)]
mod tests {
    use super::super::conformance::{ctx, touch};
    use super::*;
    use crate::types::VirtAddr;

    fn ship() -> Ship {
        let Policy::Ship(p) = ShipParams::default().build(&ctx(1, 2)).unwrap() else { unreachable!() };
        p
    }

    fn at(way: usize, pc: u64, req: ReqKind) -> Touch {
        Touch { pc: VirtAddr(pc), req, ..touch(0, way) }
    }

    #[test]
    fn a_pc_whose_lines_die_unused_learns_to_insert_distant() {
        let mut p = ship();
        let sig = p.signature(0x400) as usize;
        assert_eq!(p.shct[sig], 1);
        p.on_fill(&at(0, 0x400, ReqKind::Load));
        assert_eq!(p.rrpv.get(0, 0), 2, "counter 1 predicts reuse");
        p.on_evict(&at(0, 0, ReqKind::Load));
        assert_eq!(p.shct[sig], 0);
        p.on_fill(&at(0, 0x400, ReqKind::Load));
        assert_eq!(p.rrpv.get(0, 0), 3, "counter 0 predicts no reuse");
        // A hit teaches the opposite; hits count every time, up to 7.
        for _ in 0..10 {
            p.on_hit(&at(0, 0x999, ReqKind::Load));
        }
        assert_eq!(p.shct[sig], 7);
        p.on_evict(&at(0, 0, ReqKind::Load));
        assert_eq!(p.shct[sig], 7, "a reused line's removal changes nothing");
    }

    #[test]
    fn write_back_fills_enter_long_and_do_not_learn() {
        let mut p = ship();
        let before = p.shct.clone();
        p.on_fill(&at(1, 0, ReqKind::Writeback));
        assert_eq!(p.rrpv.get(0, 1), 2);
        p.on_hit(&at(1, 0, ReqKind::Load));
        p.on_evict(&at(1, 0, ReqKind::Load));
        p.on_fill(&at(1, 0, ReqKind::Writeback));
        p.on_evict(&at(1, 0, ReqKind::Load));
        assert_eq!(p.shct, before);
    }

    #[test]
    fn signatures_spread_nearby_pcs() {
        let p = ship();
        let mut seen: Vec<u16> = (0..1000u64).map(|i| p.signature(0x40_0000 + 4 * i)).collect();
        seen.sort_unstable();
        seen.dedup();
        // 1000 pcs into 16K buckets: about 30 collide.
        assert!(seen.len() > 950, "{}", seen.len());
    }

    #[test]
    fn bad_params_name_the_key() {
        let p = ShipParams { counter_init: 8, ..Default::default() };
        let err = p.build(&ctx(1, 2)).unwrap_err().to_string();
        assert!(err.contains("machine.l1d.replacement.params.counter_init"), "{err}");
        let p = ShipParams { signature_bits: 17, ..Default::default() };
        assert!(p.build(&ctx(1, 2)).unwrap_err().to_string().contains("params.signature_bits"));
    }
}
