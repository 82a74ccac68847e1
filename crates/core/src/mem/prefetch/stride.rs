//! `stride`: the pc-indexed reference prediction table of Chen and Baer,
//! "Effective hardware-based data prefetching for high-performance
//! processors" (IEEE Trans. Computers, 1995).
//!
//! A direct-mapped table of `entries` entries indexed and tagged by the
//! pc holds each instruction's last line, its stride (in lines) and a state
//! of the paper's four-state machine: a correct stride moves
//! initial/transient to steady and no-prediction to transient; a wrong one
//! moves steady to initial (keeping the stride), initial to transient and
//! transient or no-prediction to no-prediction (taking the new stride). In
//! the steady state, with a non-zero stride, the next `degree` lines along
//! the stride are fetched. References without a pc (0) are ignored.

use serde::{Deserialize, Serialize};

use super::{check_degree, Observed, Prefetch, PrefetchCtx, Prefetcher, Proposals};
use crate::error::{join_path, Error, Result};

/// Parameters of `stride`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StrideParams {
    /// Table entries (a power of two).
    pub entries: u32,
    /// Lines fetched per steady reference.
    pub degree: u32,
}

impl Default for StrideParams {
    fn default() -> Self {
        StrideParams { entries: 256, degree: 1 }
    }
}

/// The most entries a reference prediction table may have (hardware keeps
/// hundreds).
pub const MAX_ENTRIES: u32 = 1 << 20;

impl StrideParams {
    /// Build the prefetcher.
    pub fn build(&self, ctx: &PrefetchCtx) -> Result<Prefetcher> {
        check_degree(self.degree, &ctx.loc)?;
        if !self.entries.is_power_of_two() || self.entries > MAX_ENTRIES {
            return Err(Error::config(
                join_path(&ctx.loc, "params.entries"),
                "not_power_of_two",
                format!("expected a power of two of at most 2^20, got {}", self.entries),
            ));
        }
        Ok(Prefetcher::Stride(Stride { table: vec![Entry::default(); self.entries as usize], degree: self.degree }))
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum State {
    #[default]
    Initial,
    Transient,
    Steady,
    NoPrediction,
}

#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    pc: u64,
    last: i64,
    stride: i64,
    state: State,
}

/// The reference prediction table.
#[derive(Debug, Clone)]
pub struct Stride {
    table: Vec<Entry>,
    degree: u32,
}

impl Prefetch for Stride {
    fn observe(&mut self, seen: &Observed, out: &mut Proposals) {
        let pc = seen.pc.0;
        if pc == 0 {
            return;
        }
        let line = seen.line.0 as i64;
        // Instructions are at least a byte apart; mix so that nearby pcs spread.
        let i = (crate::util::rng::mix64(pc) as usize) & (self.table.len() - 1);
        let e = &mut self.table[i];
        if e.pc != pc {
            *e = Entry { pc, last: line, stride: 0, state: State::Initial };
            return;
        }
        let stride = line - e.last;
        let correct = stride == e.stride;
        e.state = match (e.state, correct) {
            (State::Initial | State::Transient | State::Steady, true) => State::Steady,
            (State::NoPrediction, true) => State::Transient,
            (State::Steady, false) => State::Initial,
            (State::Initial, false) => State::Transient,
            (State::Transient | State::NoPrediction, false) => State::NoPrediction,
        };
        if !correct && e.state != State::Initial {
            e.stride = stride;
        }
        e.last = line;
        if e.state == State::Steady && e.stride != 0 {
            for k in 1..=self.degree as i64 {
                out.push((line + k * e.stride) as i128);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{LineAddr, VirtAddr};

    fn observe(p: &mut Prefetcher, pc: u64, line: u64) -> Vec<u64> {
        let mut out = Proposals::new(LineAddr(line), 12);
        p.observe(&Observed { line: LineAddr(line), pc: VirtAddr(pc), hit: false }, &mut out);
        out.lines().iter().map(|l| l.0).collect()
    }

    #[test]
    fn predicts_once_a_stride_repeats_per_pc() {
        let ctx = PrefetchCtx { page_lines_shift: 12, loc: "l2.prefetcher".into() };
        let mut p = StrideParams { entries: 64, degree: 2 }.build(&ctx).unwrap();
        assert!(observe(&mut p, 0x400, 100).is_empty(), "new entry");
        assert!(observe(&mut p, 0x404, 7).is_empty(), "another pc");
        assert!(observe(&mut p, 0x400, 103).is_empty(), "initial -> transient, stride 3");
        assert_eq!(observe(&mut p, 0x400, 106), [109, 112], "transient -> steady");
        assert_eq!(observe(&mut p, 0x400, 109), [112, 115]);
        // A wrong stride drops to initial but keeps the stride ...
        assert!(observe(&mut p, 0x400, 200).is_empty());
        // ... so resuming it from there is steady again at once.
        assert_eq!(observe(&mut p, 0x400, 203), [206, 209]);
        assert!(observe(&mut p, 0, 206).is_empty(), "no pc, no prediction");
        assert!(StrideParams { entries: 100, degree: 1 }.build(&ctx).is_err());
    }
}
