//! `aging`: the aging bit-vector predictor of TLB preservation (spec §3.5,
//! dissertation §4.2).
//!
//! Every L1 TLB entry keeps a history of `bits` bits (`B`). At the end of
//! every sampling window of `window_accesses` memory references (`W`) of
//! its address space, the history shifts right and its most significant bit
//! records whether the entry was referenced in that window:
//! `hist = (hist >> 1) | (ref << (B - 1))`. At a switch-out an entry is
//! saved iff `hist`, read as an unsigned number, is greater than
//! `threshold` (`T`). A new entry starts from zero.
//!
//! So `T = 2^k - 1` means "referenced in one of the newest `B - k`
//! windows": (4, 0) and (5, 1), the spec's two best pairs, select the same
//! entries (a test below reproduces the argument).

use serde::{Deserialize, Serialize};

use super::tlb_preserve::{check, shr, Age, Predictor};
use crate::error::Result;

/// What a switch-out in the middle of a sampling window does (the spec
/// evaluates both and does not say which won).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MidWindow {
    /// Option (a): the window ends there (shift, record the references of
    /// the partial window), then entries are selected; the address space's
    /// next window starts afresh.
    #[default]
    Close,
    /// Option (b): select on the history of the last completed window; the
    /// open window goes on across the switch.
    Last,
}

/// Params of `aging`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgingParams {
    /// History bits per entry (`B`, 1 to 32): windows remembered.
    pub bits: u32,
    /// An entry is saved iff its history is greater than this (`T`).
    pub threshold: u64,
    /// References of the address space per sampling window (`W`).
    pub window_accesses: u64,
    /// A switch-out inside a window: `"close"` it or use the `"last"` completed one.
    pub mid_window: MidWindow,
    /// The timestamp extension: an entry evicted from both TLB levels keeps
    /// its history (as if stored in its page-table entry with the window
    /// count) and gets it back, shifted by the windows since, when it is
    /// filled again; without it a refill from a page walk starts from zero.
    pub timestamps: bool,
}

impl Default for AgingParams {
    /// The spec's choice: (B, T) = (4, 0) with windows of 1M references.
    fn default() -> Self {
        AgingParams {
            bits: 4,
            threshold: 0,
            window_accesses: 1_000_000,
            mid_window: MidWindow::Close,
            timestamps: false,
        }
    }
}

impl AgingParams {
    /// Check the params (errors under `loc`, the predictor's path) and build it.
    pub fn build(&self, loc: &str) -> Result<Box<dyn Predictor>> {
        check(loc, "history", self.bits, self.threshold, self.window_accesses)?;
        Ok(Box::new(Aging(self.clone())))
    }
}

/// The predictor.
#[derive(Debug)]
pub struct Aging(pub AgingParams);

impl Predictor for Aging {
    fn window_accesses(&self) -> Option<u64> {
        Some(self.0.window_accesses)
    }

    fn closes_window_at_switch(&self) -> bool {
        self.0.mid_window == MidWindow::Close
    }

    fn remembers_evicted(&self) -> bool {
        self.0.timestamps
    }

    fn touch(&self, age: &mut Age) {
        age.referenced = true;
    }

    fn close(&self, age: &mut Age, n: u64) {
        let newest = (age.referenced as u64) << (self.0.bits - 1);
        age.value = shr((age.value >> 1) | newest, n - 1);
        age.referenced = false;
    }

    fn select(&self, age: &Age) -> bool {
        age.value > self.0.threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mech::tlb_preserve::bring;
    use crate::util::rng::Rng;

    fn aging(bits: u32, threshold: u64) -> Box<dyn Predictor> {
        AgingParams { bits, threshold, ..AgingParams::default() }.build("p").unwrap()
    }

    /// The history after `windows` (oldest first) of referenced flags.
    fn history(p: &dyn Predictor, windows: &[bool]) -> Age {
        let mut age = Age::new(0);
        for (w, &referenced) in windows.iter().enumerate() {
            bring(p, &mut age, w as u64);
            if referenced {
                p.touch(&mut age);
            }
        }
        bring(p, &mut age, windows.len() as u64);
        age
    }

    #[test]
    fn the_figure_4_2_example_selects_the_entries_referenced_lately() {
        // Three windows per interval, T = 1: select iff one of the two newest
        // windows referenced it (0xaaaa, 0xdfdf in the figure), not an entry
        // referenced only in the oldest window.
        let p = aging(3, 1);
        assert_eq!(history(p.as_ref(), &[true, false, true]).value, 0b101);
        assert!(p.select(&history(p.as_ref(), &[false, false, true])));
        assert!(p.select(&history(p.as_ref(), &[false, true, false])));
        assert!(!p.select(&history(p.as_ref(), &[true, false, false])));
        assert!(!p.select(&history(p.as_ref(), &[false, false, false])));
    }

    #[test]
    fn four_bits_over_zero_select_as_five_bits_over_one() {
        // "value > 1" on 5 bits holds iff one of the 4 newest bits is set,
        // which is "value > 0" on 4 bits; in general T = 2^k - 1 on B bits
        // means "referenced in the newest B - k windows".
        let (a, b) = (aging(4, 0), aging(5, 1));
        let mut rng = Rng::from_seed(7);
        for _ in 0..2000 {
            let n = 1 + rng.below(12) as usize;
            let windows: Vec<bool> = (0..n).map(|_| rng.below(4) == 0).collect();
            let (ha, hb) = (history(a.as_ref(), &windows), history(b.as_ref(), &windows));
            assert_eq!(a.select(&ha), b.select(&hb), "{windows:?}");
            let recent = windows.iter().rev().take(4).any(|&r| r);
            assert_eq!(a.select(&ha), recent, "{windows:?}");
        }
        for (bits, k) in [(6, 2), (6, 3), (3, 1)] {
            let p = aging(bits, (1 << k) - 1);
            for n in 1..10usize {
                for last in 0..n {
                    // Referenced once, `n - 1 - last` windows before the end.
                    let windows: Vec<bool> = (0..n).map(|w| w == last).collect();
                    let age = n - 1 - last;
                    assert_eq!(p.select(&history(p.as_ref(), &windows)), age < (bits - k) as usize);
                }
            }
        }
    }

    #[test]
    fn lazy_aging_equals_shifting_every_window() {
        let p = aging(5, 0);
        let mut age = Age::new(0);
        p.touch(&mut age);
        bring(p.as_ref(), &mut age, 3);
        assert_eq!(age.value, 0b00100, "closed once with the reference, then twice empty");
        bring(p.as_ref(), &mut age, 100);
        assert_eq!(age.value, 0);
    }

    #[test]
    fn bad_params_name_the_key() {
        let err = AgingParams { bits: 4, threshold: 15, ..AgingParams::default() }.build("m.select").err().unwrap();
        assert!(err.to_string().contains("m.select.params.threshold: a history of 4 bits is at most 15"), "{err}");
        let err = AgingParams { bits: 0, ..AgingParams::default() }.build("m.select").err().unwrap();
        assert!(err.to_string().contains("m.select.params.bits"), "{err}");
        let err = AgingParams { window_accesses: 0, ..AgingParams::default() }.build("m.select").err().unwrap();
        assert!(err.to_string().contains("m.select.params.window_accesses"), "{err}");
    }
}
