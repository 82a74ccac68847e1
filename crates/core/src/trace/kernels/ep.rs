//! `kind = "ep"`: NAS EP, Gaussian deviates by the Marsaglia polar method,
//! embarrassingly parallel.
//!
//! The `pairs` pairs of uniform numbers are made in batches of `batch`
//! pairs, split among the threads in OpenMP static blocks of batches. For
//! each batch, a thread fills its private buffer `x` (`2 * batch` doubles)
//! with uniform numbers, then walks it by pairs: a pair inside the unit
//! circle gives two deviates `X`, `Y`, and the count of its annulus
//! `l = max(|X|, |Y|)` is incremented in the thread's private `q` (10
//! doubles). After its last batch the thread adds its `q` and sums into the
//! shared totals (NAS's critical section) and the iteration ends:
//!
//! ```text
//! for batch in my batches:
//!     for i in 0..2 batch:  x[i] = uniform(batch, i)
//!     for i in 0..batch:    (a, b) = (x[2i], x[2i+1]); if a^2 + b^2 <= 1: q[l]++
//! for l in 0..10: total[l] += q[l];  sx, sy likewise
//! ```
//!
//! The data: the shared totals (`total[10]`, `sx`, `sy`), then one block
//! per thread holding its `x` and `q`. The footprint is small and almost all
//! private, and the uniform numbers of batch `k` depend only on the seed and
//! `k` (NAS jumps its generator to batch `k`), so the deviates do not depend
//! on the thread count.

use crate::error::{Issues, Result};
use crate::trace::synthetic::common::{field_loc, Length};
use crate::trace::{Workload, WorkloadCtx};

use super::{
    check_work, draw, draw_key, drive, kernel_params, lay_out_sites, share, Kernel, Layout, NasClass, NasSized, Out,
    Shared, Site, SiteSpec, L, S,
};

kernel_params! {
    /// Parameters of `kind = "ep"`.
    pub struct EpParams {
        /// Pairs of uniform numbers, a multiple of `batch` (default 2^22).
        pub pairs: u64 = 1 << 22,
        /// Pairs per batch, at least 1 (default 2^16, NAS's `NK`).
        pub batch: u64 = 1 << 16,
    }
}

/// NAS EP's classes (NPB 3.3 `setparams.c`: `2^m` pairs; `NK = 2^16` pairs
/// per batch); its one iteration is the whole run.
impl NasSized for EpParams {
    const NAS: Option<&'static str> = Some("EP");

    fn take_class(&mut self, class: NasClass) {
        let m = [24, 25, 28, 30, 32][class.index()];
        (self.pairs, self.batch, self.iterations) = (1 << m, 1 << 16, 1);
    }
}

/// Annuli counted in `q`.
const ANNULI: u64 = 10;

const GEN: usize = 0;
const PAIR_A: usize = 1;
const PAIR_B: usize = 2;
const Q_LOAD: usize = 3;
const Q_STORE: usize = 4;
const RED_Q: usize = 5;
const RED_TOTAL: usize = 6;
const RED_STORE: usize = 7;
const SITES: [SiteSpec; 8] = [
    (S, 8, 12), // x[i] = the next uniform (vranlc's multiply and mask)
    (L, 8, 4),  // x[2i]
    (L, 8, 1),  // x[2i+1]
    (L, 8, 30), // q[l] (after log, sqrt and the annulus)
    (S, 8, 2),  // q[l] + 1
    (L, 8, 3),  // q[l] in the reduction
    (L, 8, 1),  // total[l]
    (S, 8, 2),  // total[l] += q[l]
];

/// The annulus of pair `i` of batch `k` if it is inside the unit circle.
fn annulus(draws: u64, k: u64, i: u64, batch: u64) -> Option<u64> {
    let uniform = |j: u64| 2.0 * ((draw(draws, 2 * (k * batch + i) + j) >> 11) as f64 / (1u64 << 53) as f64) - 1.0;
    let (a, b) = (uniform(0), uniform(1));
    let t = a * a + b * b;
    if t > 1.0 || t == 0.0 {
        return None;
    }
    let f = (-2.0 * t.ln() / t).sqrt();
    Some(((a * f).abs().max((b * f).abs()) as u64).min(ANNULI - 1))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Generate,
    Pairs,
    Reduce,
}

/// One thread of EP.
struct Ep {
    sites: [Site; 8],
    draws: u64,
    batch: u64,
    x: u64,
    q: u64,
    totals: u64,
    batches: std::ops::Range<u64>,
    phase: Phase,
    k: u64,
    i: u64,
}

impl Kernel for Ep {
    fn step(&mut self, out: &mut Out) -> bool {
        let s = &self.sites;
        match self.phase {
            Phase::Generate => {
                out.put(&s[GEN], self.x + 8 * self.i);
                self.i += 1;
                if self.i == 2 * self.batch {
                    (self.phase, self.i) = (Phase::Pairs, 0);
                }
                false
            }
            Phase::Pairs => {
                out.put(&s[PAIR_A], self.x + 16 * self.i);
                out.put(&s[PAIR_B], self.x + 16 * self.i + 8);
                if let Some(l) = annulus(self.draws, self.k, self.i, self.batch) {
                    out.put(&s[Q_LOAD], self.q + 8 * l);
                    out.put(&s[Q_STORE], self.q + 8 * l);
                }
                self.i += 1;
                if self.i == self.batch {
                    self.i = 0;
                    self.k += 1;
                    self.phase = if self.k == self.batches.end {
                        // The batch loop's barrier, before the reduction.
                        out.barrier();
                        Phase::Reduce
                    } else {
                        Phase::Generate
                    };
                }
                false
            }
            Phase::Reduce => {
                // q[0..10] into total[0..10], then the two sums (held in
                // registers until here).
                let l = self.i;
                if l < ANNULI {
                    out.put(&s[RED_Q], self.q + 8 * l);
                }
                out.put(&s[RED_TOTAL], self.totals + 8 * l);
                out.put(&s[RED_STORE], self.totals + 8 * l);
                self.i += 1;
                if self.i == ANNULI + 2 {
                    (self.phase, self.i, self.k) = (Phase::Generate, 0, self.batches.start);
                    return true;
                }
                false
            }
        }
    }
}

impl EpParams {
    /// Validate and build; `length` says whether `accesses` applies.
    pub(crate) fn build_with(&self, ctx: &WorkloadCtx, length: Length) -> Result<Box<dyn Workload>> {
        let mut issues = Issues::default();
        let at = |f: &str| field_loc(&ctx.loc, f);
        let batch_ok = (1..=1 << 32).contains(&self.batch);
        issues.check(batch_ok, at("batch"), "out_of_range", format!("batch must be in [1, 2^32], got {}", self.batch));
        let batch = if batch_ok { self.batch } else { 1 };
        issues.check(
            self.pairs >= 1 && self.pairs.is_multiple_of(batch) && self.pairs <= 1 << 60,
            at("pairs"),
            "not_multiple",
            format!("pairs must be a positive multiple of batch = {batch} (at most 2^60), got {}", self.pairs),
        );
        let mut layout = Layout::new(self.base_addr);
        let totals = layout.place((ANNULI + 2) * 8);
        let common = self.common();
        let (x0, stride) = layout.place_per_thread(2 * batch * 8 + ANNULI * 8, common.threads.max(1));
        let (sites, code_bytes) = lay_out_sites(self.code_base, &SITES);
        let shared = [Shared { addr: totals, elem: 8, stride: 8, n: ANNULI + 2, owner: None }];
        let (thread, init) = common.validate("ep", ctx, length, &mut layout, code_bytes, &shared, &mut issues);
        let batches = self.pairs / batch;
        check_work(batches, thread.count, &at("threads"), "batches", &mut issues);
        issues.finish()?;
        let x = x0 + stride * thread.index as u64;
        let batches = share(batches, thread.index, thread.count);
        let kernel = Ep {
            sites,
            draws: draw_key(ctx.seed, "ep"),
            batch,
            x,
            q: x + 2 * batch * 8,
            totals,
            k: batches.start,
            batches,
            phase: Phase::Generate,
            i: 0,
        };
        Ok(drive(kernel, init, &common, length))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::types::AccessKind;
    use serde_json::json;

    const B: u64 = 0x10_0000_0000;

    #[test]
    fn a_thread_makes_its_batches_then_reduces() {
        // 8 batches of 64 pairs over 2 threads: 4 batches each. Totals at
        // B (96 bytes), thread t's block at B + 4K (t + 1): x then q.
        let p = json!({"pairs": 512, "batch": 64, "threads": 2, "iterations": 1});
        let streams = threads("ep", &p, 3);
        let mut accepted = 0;
        for (t, s) in streams.iter().enumerate() {
            let block = B + 4096 * (t as u64 + 1);
            let q = block + 128 * 8;
            // Per batch: 128 stores of x in order, then 64 pairs of loads.
            let gen: Vec<u64> = s
                .iter()
                .filter(|a| a.kind == AccessKind::Store && (block..q).contains(&a.addr.0))
                .map(|a| a.addr.0 - block)
                .collect();
            let expected: Vec<u64> = (0..4).flat_map(|_| (0..128).map(|i| 8 * i)).collect();
            assert_eq!(gen, expected);
            let pairs = s.iter().filter(|a| a.kind == AccessKind::Load && (block..q).contains(&a.addr.0)).count();
            assert_eq!(pairs, 4 * 128);
            // Each accepted pair loads and stores one q[l]; about pi / 4
            // of the pairs are inside the circle.
            let hits = s.iter().filter(|a| a.kind == AccessKind::Store && (q..q + 80).contains(&a.addr.0)).count();
            accepted += hits;
            // The reduction ends the stream: 10 q loads, 12 totals updated.
            let tail = &s[s.len() - 34..];
            assert!(tail.iter().all(|a| a.addr.0 < B + 96 || (q..q + 80).contains(&a.addr.0)));
            assert_eq!(tail.iter().filter(|a| a.kind == AccessKind::Store).count(), 12);
        }
        // 512 pairs: binomial with p = 0.785, standard deviation 9.3.
        assert!((accepted as f64 - 512.0 * std::f64::consts::FRAC_PI_4).abs() < 5.0 * 9.3, "{accepted}");
    }

    #[test]
    fn annuli_follow_the_gaussian_tail() {
        // An accepted pair lands in annulus l with probability
        // P(max(|X|, |Y|) in [l, l+1)) for independent standard normals,
        // (2 Phi(l+1) - 1)^2 - (2 Phi(l) - 1)^2: 0.4661, 0.4450, 0.0835.
        let p = json!({"pairs": 1 << 16, "batch": 1 << 12, "iterations": 1});
        let s = thread("ep", &p, 1, 0, 1);
        let q = B + 4096 + 8192 * 8;
        let mut counts = [0f64; 10];
        for a in s.iter().filter(|a| a.kind == AccessKind::Store && (q..q + 80).contains(&a.addr.0)) {
            counts[((a.addr.0 - q) / 8) as usize] += 1.0;
        }
        let n: f64 = counts.iter().sum();
        let expected = [0.4661, 0.4450, 0.0835];
        for (l, e) in expected.iter().enumerate() {
            let sigma = (n * e * (1.0 - e)).sqrt();
            assert!((counts[l] - n * e).abs() < 5.0 * sigma, "annulus {l}: {} of {n}", counts[l]);
        }
    }

    #[test]
    fn ep_errors_name_the_key() {
        let w = |s: &str| format!("workload.params.{s}");
        let e = build_err_as("ep", json!({"pairs": 100, "batch": 64}), 0, 1);
        assert_eq!(e, [(w("pairs"), "not_multiple")]);
        let e = build_err_as("ep", json!({"batch": 0}), 0, 1);
        assert_eq!(e[0], (w("batch"), "out_of_range"));
        let e = build_err_as("ep", json!({"pairs": 128, "batch": 64, "threads": 4}), 0, 4);
        assert_eq!(e, [(w("threads"), "too_large")]);
    }
}
