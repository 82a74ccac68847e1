//! `aging-total`: the aging plus total-access predictor of TLB preservation
//! (spec §3.6, dissertation §4.3).
//!
//! Every L1 TLB entry keeps a saturating counter of `bits` bits, incremented
//! on every reference to it; at the end of every sampling window of
//! `window_accesses` references of its address space it is halved (the
//! spec's reading of "shift the counter by one"). At a switch-out an entry
//! is saved iff its counter is greater than `threshold`. So an entry used
//! heavily early in the interval can still qualify, unlike with `aging`. A
//! new entry starts from zero. The spec leaves the counter width, `W` and
//! `T` open; the default threshold is its Fig 4.3 example's.

use serde::{Deserialize, Serialize};

use super::tlb_preserve::{check, shr, Age, Predictor};
use crate::error::Result;

/// Params of `aging-total`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgingTotalParams {
    /// Counter width in bits (1 to 32); it saturates at `2^bits - 1`.
    pub bits: u32,
    /// An entry is saved iff its counter is greater than this.
    pub threshold: u64,
    /// References of the address space per sampling window.
    pub window_accesses: u64,
}

impl Default for AgingTotalParams {
    fn default() -> Self {
        AgingTotalParams { bits: 16, threshold: 32, window_accesses: 1_000_000 }
    }
}

impl AgingTotalParams {
    /// Check the params (errors under `loc`, the predictor's path) and build it.
    pub fn build(&self, loc: &str) -> Result<Box<dyn Predictor>> {
        let most = check(loc, "counter", self.bits, self.threshold, self.window_accesses)?;
        Ok(Box::new(AgingTotal { params: self.clone(), most }))
    }
}

/// The predictor.
#[derive(Debug)]
pub struct AgingTotal {
    params: AgingTotalParams,
    most: u64,
}

impl Predictor for AgingTotal {
    fn window_accesses(&self) -> Option<u64> {
        Some(self.params.window_accesses)
    }

    fn touch(&self, age: &mut Age) {
        age.value = (age.value + 1).min(self.most);
    }

    fn close(&self, age: &mut Age, n: u64) {
        age.value = shr(age.value, n);
    }

    fn select(&self, age: &Age) -> bool {
        age.value > self.params.threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mech::tlb_preserve::bring;

    fn counter(p: &dyn Predictor, per_window: &[u64]) -> Age {
        let mut age = Age::new(0);
        for (w, &n) in per_window.iter().enumerate() {
            bring(p, &mut age, w as u64);
            (0..n).for_each(|_| p.touch(&mut age));
        }
        age
    }

    #[test]
    fn heavy_early_use_survives_where_light_use_does_not() {
        // Fig 4.3's intent with T = 32: 200 references two windows ago are
        // still 50 > 32; 20 references a window ago are 10.
        let p = AgingTotalParams::default().build("p").unwrap();
        let heavy = counter(p.as_ref(), &[200, 0, 0]);
        assert_eq!(heavy.value, 50);
        assert!(p.select(&heavy));
        assert!(!p.select(&counter(p.as_ref(), &[0, 20, 0])));
        assert!(p.select(&counter(p.as_ref(), &[0, 0, 33])), "the open window counts in full");
    }

    #[test]
    fn the_counter_saturates() {
        let p = AgingTotalParams { bits: 3, threshold: 2, ..AgingTotalParams::default() }.build("p").unwrap();
        assert_eq!(counter(p.as_ref(), &[100]).value, 7);
        let err = AgingTotalParams { bits: 3, threshold: 7, ..AgingTotalParams::default() }.build("x").err().unwrap();
        assert!(err.to_string().contains("x.params.threshold"), "{err}");
    }
}
