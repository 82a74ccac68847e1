//! `kind = "zipf"`: skewed random accesses, rank `r` chosen with probability
//! proportional to `1 / r^exponent`, over the elements of a working set.
//!
//! Real working sets are skewed: a few hot objects take most accesses
//! (key-value stores, page caches, web objects). Zipf is the standard model
//! for that and gives replacement policies and cache partitioning something
//! to win on. Ranks are mapped to elements through a seeded [`Permutation`]
//! so the hot elements are scattered over cache sets and pages instead of
//! sitting in one contiguous run.
//!
//! The sampler ([`ZipfSampler`]) is exact, O(1) expected time per draw and
//! O(log n) memory: an alias table over the hottest ranks one by one and
//! the rest in geometric bands, with a rejection step inside a band that
//! almost never needs a transcendental function. Rejection-inversion
//! (Hörmann & Derflinger 1996, as in Apache Commons
//! `RejectionInversionZipfSampler`) has the same guarantees with O(1) memory
//! but pays an `exp` and a `log` on every draw: measured here at about 55 ns
//! per draw, against about 12 ns for the banded table alone and a budget of
//! about 10 ns per access.

use crate::error::{Issues, Result};
use crate::trace::{Workload, WorkloadCtx};
use crate::units::ByteSize;
use crate::util::rng::Rng;

use super::common::{
    build_leaf, element_count, field_loc, leaf_params, stream_rng, AddrGen, Length, DEFAULT_WORKING_SET_BYTES,
};
use crate::util::perm::Permutation;

/// Ranks that get a table column each; the rest are sampled in bands. At
/// 24 bytes a column, the table of a generator takes 192 KiB plus about
/// 0.2 KiB (0.8 KiB for `exponent >= 4`) per factor of e in `n / HEAD_RANKS`:
/// under 200 KiB for any working set up to 2^64 bytes with `exponent <= 1`.
/// A larger head makes the default working set (16384 elements) cheaper to
/// sample but costs host cache for every zipf task; 8192 measured best.
pub const HEAD_RANKS: u64 = 1 << 13;

/// Table values with this bit set are band indices, not ranks or elements.
const BAND_FLAG: u64 = 1 << 63;

leaf_params! {
    /// Parameters of `kind = "zipf"`.
    ///
    /// The working set holds `n = floor(working_set_bytes / element_bytes)`
    /// elements. Each data access draws a rank `r` in `[1, n]` with
    /// probability `1 / (r^exponent H(n, exponent))`, where `H` is the
    /// generalised harmonic number, and touches the first `access_bytes` of
    /// the element that rank maps to.
    pub struct ZipfParams {
        /// Bytes of the region accessed (default 1MiB).
        pub working_set_bytes: ByteSize = ByteSize(DEFAULT_WORKING_SET_BYTES),
        /// Skew `s > 0` (default 0.99); 1 is classic Zipf, larger is more skewed.
        pub exponent: f64 = 0.99,
        /// Bytes per element, the unit of popularity (default 64, one cache line).
        pub element_bytes: ByteSize = ByteSize(64),
    }
    default store_fraction = 0.3;
}

/// One column of an alias table.
#[derive(Debug, Clone, Copy)]
struct Column {
    /// Keep this column's own value when the 64-bit coin is below this.
    keep_below: u64,
    own: u64,
    alias: u64,
}

/// Walker/Vose alias table: O(1) sampling from a fixed discrete
/// distribution, returning a stored value per outcome (a rank, or the
/// element the rank maps to) so a draw touches one column only.
#[derive(Debug, Clone)]
struct Alias {
    columns: Box<[Column]>,
}

impl Alias {
    /// A table drawing `values[i]` with probability proportional to
    /// `weights[i]` (non-negative, not all zero).
    fn new(weights: &[f64], values: &[u64]) -> Alias {
        let m = weights.len();
        let total: f64 = weights.iter().sum();
        let mut scaled: Vec<f64> = weights.iter().map(|w| w * m as f64 / total).collect();
        let mut keep = vec![1.0f64; m];
        let mut alias: Vec<usize> = (0..m).collect();
        let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..m).partition(|&i| scaled[i] < 1.0);
        while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
            small.pop();
            keep[s] = scaled[s];
            alias[s] = l;
            scaled[l] -= 1.0 - scaled[s];
            if scaled[l] < 1.0 {
                large.pop();
                small.push(l);
            }
        }
        // Columns left over (only rounding puts them on either list) keep
        // their own value with probability 1.
        let two_64 = 18_446_744_073_709_551_616.0;
        let columns = (0..m)
            .map(|i| Column {
                keep_below: if alias[i] == i { u64::MAX } else { (keep[i] * two_64) as u64 },
                own: values[i],
                alias: values[alias[i]],
            })
            .collect();
        Alias { columns }
    }

    /// One value.
    #[inline(always)]
    fn sample(&self, rng: &mut Rng) -> u64 {
        // The high half of r * m is a uniform column, the low half a uniform
        // fraction for the coin (Lemire's multiply-shift, both halves used).
        let product = rng.next_u64() as u128 * self.columns.len() as u128;
        let column = &self.columns[(product >> 64) as usize];
        if (product as u64) < column.keep_below {
            column.own
        } else {
            column.alias
        }
    }
}

/// A band of consecutive tail ranks sampled uniformly, then thinned.
#[derive(Debug, Clone, Copy)]
struct Band {
    lo: u64,
    len: u64,
    inv_lo: f64,
}

/// Samples Zipf ranks in `[1, n]`, or the elements they map to.
///
/// One alias table holds the first `head` ranks, rank `k` with weight
/// `h(k) = k^-s`, and then bands `[lo, lo + len)` covering the remaining
/// ranks, band `[lo, lo + len)` with the weight `len * h(lo)` of a box over
/// it. A band draw picks `k` uniformly in the band and accepts it with
/// probability `h(k) / h(lo) = (1 + x)^-s`, `x = k / lo - 1`; a rejection
/// starts over from the table. Every rank's accepted mass is therefore
/// exactly `h(k)` (a head rank directly; a band rank as
/// `len h(lo) * 1/len * h(k)/h(lo)`), so the distribution is exact up to
/// floating-point rounding. Bands grow geometrically
/// (`len = max(1, floor(lo / (8 min(max(s, 1), 4))))`, keeping `s x < 1/8`),
/// so there are O(log n) of them and a band draw is accepted with
/// probability above 0.88 wherever the tail carries real mass. The
/// acceptance test is decided by bounds, `1 - s x <= (1 + x)^-s <=
/// 1 - s x + s (s + 1) x^2 / 2`, and computes the power only between them
/// (under 1% of band draws for `s = 1`).
///
/// Built with a [`Permutation`] ([`scattered`](Self::scattered)), it returns
/// the element `perm(rank - 1)` instead of the rank; the table then stores
/// elements, so the hot ranks skip the permutation.
#[derive(Debug, Clone)]
pub struct ZipfSampler {
    exponent: f64,
    /// Values of head ranks, or `BAND_FLAG | band index`.
    table: Alias,
    bands: Box<[Band]>,
    /// Rank -> element, if scattering.
    perm: Option<Permutation>,
}

impl ZipfSampler {
    /// A sampler of ranks `[1, n]` with exponent `s > 0`, with up to
    /// [`HEAD_RANKS`] ranks in the table one by one.
    pub fn new(n: u64, exponent: f64) -> ZipfSampler {
        ZipfSampler::with_head(n, exponent, HEAD_RANKS)
    }

    /// As [`new`](Self::new) with `head` ranks in the table one by one (0:
    /// all in bands; `>= n`: no bands). `1 <= n < 2^63`, `exponent > 0`.
    pub fn with_head(n: u64, exponent: f64, head: u64) -> ZipfSampler {
        ZipfSampler::build(n, exponent, head, None)
    }

    /// A sampler of elements: rank `r` is drawn as above and returned as
    /// `perm.apply(r - 1)`, in `[0, n)`. `perm` must have length `n`.
    pub fn scattered(n: u64, exponent: f64, head: u64, perm: Permutation) -> ZipfSampler {
        ZipfSampler::build(n, exponent, head, Some(perm))
    }

    fn build(n: u64, exponent: f64, head: u64, perm: Option<Permutation>) -> ZipfSampler {
        let head = head.min(n);
        let mut z = ZipfSampler { exponent, table: Alias::new(&[1.0], &[0]), bands: Box::new([]), perm };
        let h = |k: u64| (-exponent * (k as f64).ln()).exp();
        let mut weights: Vec<f64> = (1..=head).map(h).collect();
        let mut values: Vec<u64> = (1..=head).map(|k| z.value(k)).collect();
        let step = 1.0 / (8.0 * exponent.clamp(1.0, 4.0));
        let mut bands = Vec::new();
        let mut lo = head + 1;
        while lo <= n {
            let len = ((lo as f64 * step) as u64).clamp(1, n - lo + 1);
            weights.push(len as f64 * h(lo));
            values.push(BAND_FLAG | bands.len() as u64);
            bands.push(Band { lo, len, inv_lo: 1.0 / lo as f64 });
            lo += len;
        }
        z.table = Alias::new(&weights, &values);
        z.bands = bands.into();
        z
    }

    /// A rank in `[1, n]`, or its element in `[0, n)` if scattered.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let v = self.table.sample(rng);
        if v & BAND_FLAG == 0 {
            return v;
        }
        self.finish(v, rng)
    }

    /// Fill `out` with independent draws, each distributed as one of
    /// [`sample`](Self::sample) (but not the same sequence: the random
    /// numbers are used in another order). Faster for many draws: the
    /// table lookups of all of them come first, back to back with no branch
    /// between them, so their cache misses overlap; the draws that landed in
    /// a band then take the band step. Each draw still uses fresh random
    /// numbers for every trial, so the draws are independent and exact.
    pub fn sample_many(&self, rng: &mut Rng, out: &mut [u64]) {
        for v in out.iter_mut() {
            *v = self.table.sample(rng);
        }
        for v in out.iter_mut() {
            if *v & BAND_FLAG != 0 {
                *v = self.finish(*v, rng);
            }
        }
    }

    /// Complete a draw whose table lookup returned the band `v`: the band
    /// step, and on rejection new draws until one is accepted.
    #[inline]
    fn finish(&self, mut v: u64, rng: &mut Rng) -> u64 {
        loop {
            let band = &self.bands[(v & !BAND_FLAG) as usize];
            let k = band.lo + rng.below(band.len);
            let x = (k - band.lo) as f64 * band.inv_lo;
            if accept(rng.next_f64(), x, self.exponent) {
                return self.value(k);
            }
            v = self.table.sample(rng);
            if v & BAND_FLAG == 0 {
                return v;
            }
        }
    }

    /// Number of bands (for tests and sizing).
    pub fn bands(&self) -> usize {
        self.bands.len()
    }

    /// What a draw of rank `k` returns.
    #[inline(always)]
    fn value(&self, k: u64) -> u64 {
        match &self.perm {
            Some(perm) => perm.apply(k - 1),
            None => k,
        }
    }
}

/// `coin < (1 + x)^-s` for `x >= 0`, `s > 0`, deciding by the bounds
/// `1 - s x <= (1 + x)^-s <= 1 - s x + s (s + 1) x^2 / 2` (the tangent at 0,
/// and Taylor's theorem with a negative third derivative) when they suffice.
#[inline(always)]
fn accept(coin: f64, x: f64, s: f64) -> bool {
    let sx = s * x;
    if coin < 1.0 - sx {
        return true;
    }
    if coin >= 1.0 - sx + 0.5 * (s + 1.0) * sx * x {
        return false;
    }
    coin < (-s * x.ln_1p()).exp()
}

/// The address source of a zipf generator.
#[derive(Debug, Clone)]
struct ZipfGen {
    /// Draws elements (ranks already scattered).
    sampler: ZipfSampler,
    element_bytes: u64,
}

impl AddrGen for ZipfGen {
    #[inline(always)]
    fn next_offset(&mut self, rng: &mut Rng) -> u64 {
        self.sampler.sample(rng) * self.element_bytes
    }
}

impl ZipfParams {
    /// Validate and build the generator with its own length.
    pub fn build(&self, ctx: &WorkloadCtx) -> Result<Box<dyn Workload>> {
        self.build_with(ctx, Length::Own)
    }

    /// Validate and build; `length` says whether `accesses` applies.
    pub(crate) fn build_with(&self, ctx: &WorkloadCtx, length: Length) -> Result<Box<dyn Workload>> {
        let mut issues = Issues::default();
        let at = |field: &str| field_loc(&ctx.loc, field);
        let common = self.common();
        issues.check(
            self.exponent > 0.0 && self.exponent.is_finite(),
            at("exponent"),
            "out_of_range",
            format!("exponent must be a number above 0, got {}", self.exponent),
        );
        let element = self.element_bytes.0;
        let mut elements = element_count(&ctx.loc, self.working_set_bytes.0, element, common.access_bytes, &mut issues);
        if elements.is_some_and(|n| n >= BAND_FLAG) {
            issues.push(at("working_set_bytes"), "too_large", "working_set_bytes / element_bytes must be below 2^63");
            elements = None;
        }
        common.validate(&ctx.loc, length, elements.map(|n| n * element), &mut issues);
        issues.finish()?;
        let n = elements.unwrap_or(1);
        let perm = Permutation::new(n, &mut stream_rng(ctx, "layout"));
        let gen =
            ZipfGen { sampler: ZipfSampler::scattered(n, self.exponent, HEAD_RANKS, perm), element_bytes: element };
        Ok(build_leaf(gen, &common, ctx, length))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{build, build_err, take};
    use super::*;
    use serde_json::json;

    /// The exact pmf of ranks 1..=n, computed directly.
    fn pmf(n: u64, s: f64) -> Vec<f64> {
        let weights: Vec<f64> = (1..=n).map(|k| 1.0 / (k as f64).powf(s)).collect();
        let total: f64 = weights.iter().sum();
        weights.iter().map(|w| w / total).collect()
    }

    /// Check the frequencies of ranks 1..=10 and of rank bands beyond,
    /// each within 5 standard deviations of the binomial count. With
    /// `scatter`, sample elements and count each under its rank (found by
    /// applying the same permutation to every rank).
    fn check_sampler(n: u64, s: f64, head: u64, draws: u64, seed: u64, scatter: bool) {
        check_sampler_in_batches(n, s, head, draws, seed, scatter, 1);
    }

    /// As `check_sampler`, drawing with `sample_many` in batches of `batch`
    /// (1: one by one with `sample`).
    fn check_sampler_in_batches(n: u64, s: f64, head: u64, draws: u64, seed: u64, scatter: bool, batch: usize) {
        let perm = Permutation::new(n, &mut Rng::from_seed(seed ^ 99));
        let mut rank_of = vec![0u64; n as usize];
        for r in 1..=n {
            rank_of[perm.apply(r - 1) as usize] = r;
        }
        let z = if scatter { ZipfSampler::scattered(n, s, head, perm) } else { ZipfSampler::with_head(n, s, head) };
        let mut rng = Rng::from_seed(seed);
        let mut counts = vec![0u64; n as usize + 1];
        let mut drawn = Vec::with_capacity(draws as usize);
        let mut chunk = vec![0u64; batch];
        while (drawn.len() as u64) < draws {
            if batch == 1 {
                drawn.push(z.sample(&mut rng));
            } else {
                z.sample_many(&mut rng, &mut chunk);
                drawn.extend_from_slice(&chunk);
            }
        }
        drawn.truncate(draws as usize);
        for mut k in drawn {
            if scatter {
                assert!(k < n, "element {k}");
                k = rank_of[k as usize];
            }
            assert!((1..=n).contains(&k), "rank {k}");
            counts[k as usize] += 1;
        }
        let p = pmf(n, s);
        let mut bands: Vec<(u64, u64)> = (1..=10).map(|k| (k, k)).collect();
        bands.extend([(11, 20), (21, 50), (51, 100), (101, 300), (301, 700), (701, n)]);
        for (lo, hi) in bands {
            let prob: f64 = p[lo as usize - 1..hi as usize].iter().sum();
            let got: u64 = counts[lo as usize..=hi as usize].iter().sum();
            let expected = prob * draws as f64;
            let sigma = (draws as f64 * prob * (1.0 - prob)).sqrt();
            assert!(
                (got as f64 - expected).abs() <= 5.0 * sigma,
                "s = {s}, head = {head}, ranks {lo}..={hi}: {got} vs {expected:.0} +- {sigma:.0}"
            );
        }
    }

    #[test]
    fn bands_alone_match_the_exact_pmf() {
        for s in [0.5, 1.0, 1.2, 3.0] {
            check_sampler(1000, s, 0, 300_000, 11, false);
        }
    }

    #[test]
    fn table_and_tail_together_match_the_exact_pmf() {
        for s in [0.5, 1.0, 1.2] {
            // The head boundary falls inside the checked bands.
            check_sampler(1000, s, 15, 300_000, 12, false);
            // Everything in the table.
            check_sampler(1000, s, 1000, 300_000, 13, false);
            // Elements instead of ranks, from the table and the tail.
            check_sampler(1000, s, 15, 300_000, 14, true);
        }
    }

    #[test]
    fn batched_draws_match_the_exact_pmf() {
        for s in [0.5, 1.0, 3.0] {
            // The head boundary falls inside the checked bands; batches of
            // 64 and of an odd size.
            check_sampler_in_batches(1000, s, 15, 300_000, 21, false, 64);
            check_sampler_in_batches(1000, s, 15, 300_000, 22, true, 7);
        }
    }

    #[test]
    fn batched_and_single_draws_agree_without_bands() {
        // With every rank in the table a draw uses one random number either
        // way, so the sequences are equal.
        let z = ZipfSampler::with_head(100, 1.0, 100);
        let (mut a, mut b) = (Rng::from_seed(5), Rng::from_seed(5));
        let mut batch = [0u64; 50];
        z.sample_many(&mut a, &mut batch);
        let one: Vec<u64> = (0..50).map(|_| z.sample(&mut b)).collect();
        assert_eq!(batch.to_vec(), one);
    }

    #[test]
    fn band_acceptance_is_exactly_the_power() {
        // The bounds hold, and the decision equals coin < (1 + x)^-s for
        // coins just either side of the power, at the bounds and at random.
        let mut rng = Rng::from_seed(3);
        for s in [0.01, 0.5, 0.99, 1.0, 1.2, 3.0, 4.0, 10.0, 60.0] {
            for i in 0..=200 {
                let x = i as f64 / 800.0; // 0 ..= 1/4, beyond the bands' 1/8
                let p = (1.0 + x).powf(-s);
                let (lower, upper) = (1.0 - s * x, 1.0 - s * x + s * (s + 1.0) * x * x / 2.0);
                assert!(lower <= p * (1.0 + 1e-12) && p <= upper * (1.0 + 1e-12), "s {s} x {x}");
                let mut coins = vec![p * (1.0 - 1e-9), p * (1.0 + 1e-9), lower, upper];
                coins.extend((0..20).map(|_| lower.max(0.0) + rng.next_f64() * (upper - lower)));
                for coin in coins.into_iter().filter(|c| (0.0..1.0).contains(c)) {
                    if (coin - p).abs() > 1e-12 {
                        assert_eq!(accept(coin, x, s), coin < p, "s {s} x {x} coin {coin}");
                    }
                }
            }
        }
    }

    #[test]
    fn extreme_exponents_still_sample() {
        // Nearly uniform and nearly deterministic: both terminate and stay
        // in range, and rank 1 dominates the second.
        for (s, p1_min) in [(0.001, 0.0), (8.0, 0.99), (60.0, 0.999)] {
            let z = ZipfSampler::with_head(1 << 30, s, 4);
            assert!(z.bands() < 2500, "s = {s}: {} bands", z.bands());
            let mut rng = Rng::from_seed(1);
            let ones = (0..10_000)
                .map(|_| z.sample(&mut rng))
                .inspect(|&k| assert!((1..=1 << 30).contains(&k)))
                .filter(|&k| k == 1)
                .count();
            assert!(ones as f64 / 10_000.0 >= p1_min, "s = {s}: {ones}");
        }
    }

    #[test]
    fn hottest_addresses_have_the_zipf_frequencies_and_are_scattered() {
        // 256 elements of 64 bytes; the most, second and third most frequent
        // addresses should carry the probabilities of ranks 1, 2, 3.
        let (n, s, draws) = (256u64, 1.0, 200_000usize);
        let mut w = build("zipf", json!({"working_set_bytes": n * 64, "exponent": s, "base_addr": 0}));
        let mut counts = vec![0u64; n as usize];
        for a in take(&mut *w, draws) {
            assert!(a.addr.0 < n * 64 && a.addr.0 % 64 == 0);
            counts[(a.addr.0 / 64) as usize] += 1;
        }
        let mut order: Vec<usize> = (0..n as usize).collect();
        order.sort_by_key(|&e| std::cmp::Reverse(counts[e]));
        let p = pmf(n, s);
        for r in 0..3 {
            let got = counts[order[r]] as f64 / draws as f64;
            let sigma = (p[r] * (1.0 - p[r]) / draws as f64).sqrt();
            assert!((got - p[r]).abs() < 5.0 * sigma, "rank {}: {got} vs {}", r + 1, p[r]);
        }
        // The 8 hottest elements are not a contiguous run.
        let mut hot: Vec<usize> = order[..8].to_vec();
        hot.sort();
        assert!(hot[7] - hot[0] > 8, "{hot:?}");
    }

    #[test]
    fn zipf_errors_name_the_key() {
        let e = build_err("zipf", json!({"exponent": 0.0}));
        assert_eq!(e, [("workload.params.exponent".into(), "out_of_range")]);
        let e = build_err("zipf", json!({"exponent": -1.5}));
        assert_eq!(e, [("workload.params.exponent".into(), "out_of_range")]);
        let e = build_err("zipf", json!({"working_set_bytes": 32}));
        assert_eq!(e, [("workload.params.working_set_bytes".into(), "too_small")]);
        let e = build_err("zipf", json!({"element_bytes": 0}));
        assert_eq!(e, [("workload.params.element_bytes".into(), "out_of_range")]);
        let e = build_err("zipf", json!({"element_bytes": 4}));
        assert_eq!(e, [("workload.params.access_bytes".into(), "too_large")]);
    }
}
