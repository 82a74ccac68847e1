//! Miss-ratio curves in one pass: the LRU miss ratio of every cache size
//! from a single read of a stream.
//!
//! An LRU cache of `S` sets and `W` ways hits a reference exactly when the
//! reference's stack distance within its set (distinct other lines of the
//! same set referenced since the line's previous reference) is below `W`.
//! So one histogram of per-set distances ([`StackDistances`]) gives the
//! hits of every associativity `W` for a fixed `S`, and with `S = 1` of
//! every fully associative size. Memory follows the footprint.
//!
//! Which references count: data references (loads and stores; instruction
//! fetches only when asked, as for a unified cache), each line an access
//! touches counted as one reference, as the simulator's caches count them.
//!
//! Optional spatial sampling (SHARDS, Waldspurger et al., FAST 2015): only
//! lines whose hash falls under a rate `R` are tracked, their distances
//! stand for distances `1/R` times larger, and the difference between the
//! expected and the actual number of sampled references is counted as
//! hits at distance 0 (the paper's SHARDS-adj). Only for one set: a few
//! ways of a set cannot be resolved by distances scaled by `1/R`.

use super::prefetch::Prefetched;
use super::reuse::StackDistances;
use super::Workload;
use crate::error::{Error, Result};
use crate::types::{Access, AccessKind};

/// Sampling decisions use the top bits of the hash, compared with the
/// rate in units of `2^-SAMPLE_BITS`.
const SAMPLE_BITS: u32 = 24;

/// What a pass counts, and over which cache geometry.
#[derive(Debug, Clone, PartialEq)]
pub struct MrcOptions {
    /// Sets of the caches of the curve (1: fully associative).
    pub sets: u64,
    /// Line size in bytes; a power of two.
    pub line_bytes: u64,
    /// Spatial sampling rate in (0, 1], `None` for the exact curve.
    pub sample_rate: Option<f64>,
    /// Count instruction fetches too (a unified cache).
    pub ifetch: bool,
}

impl Default for MrcOptions {
    fn default() -> Self {
        MrcOptions { sets: 1, line_bytes: 64, sample_rate: None, ifetch: false }
    }
}

impl MrcOptions {
    /// Reject impossible options, naming the option.
    pub fn validate(&self) -> Result<()> {
        if self.sets == 0 || self.sets > 1 << 20 {
            return Err(Error::config(
                "sets",
                "invalid_value",
                format!("expected 1 to 2^20 sets (each set has its own tree and window), got {}", self.sets),
            ));
        }
        if !self.line_bytes.is_power_of_two() || self.line_bytes < 4 {
            let message = format!("expected a power of two of at least 4, got {}", self.line_bytes);
            return Err(Error::config("line_bytes", "invalid_value", message));
        }
        if let Some(rate) = self.sample_rate {
            if !(rate > 0.0 && rate <= 1.0) || threshold(rate) == 0 {
                let message = format!("expected a rate in [2^-{SAMPLE_BITS}, 1], got {rate}");
                return Err(Error::config("sample", "invalid_value", message));
            }
            if self.sets > 1 {
                let message = "sampling needs one set (fully associative): the few ways of a set cannot be \
                               resolved by distances scaled by 1/rate";
                return Err(Error::config("sample", "invalid_combination", message));
            }
        }
        Ok(())
    }
}

/// The rate as a threshold on `SAMPLE_BITS`-bit hashes.
fn threshold(rate: f64) -> u64 {
    (rate * (1u64 << SAMPLE_BITS) as f64).round() as u64
}

/// A line's hash for sampling (the splitmix64 finaliser): uniform and
/// unrelated to the line's set.
#[inline]
fn hash(line: u64) -> u64 {
    let mut x = line ^ 0x6A09_E667_F3BC_C909;
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The result of a pass: a histogram of per-set stack distances, from which
/// [`MissRatioCurve::miss_ratio`] gives the miss ratio of any associativity.
#[derive(Debug, Clone, PartialEq)]
pub struct MissRatioCurve {
    /// Sets of the caches of the curve (1: fully associative).
    pub sets: u64,
    /// Line size in bytes.
    pub line_bytes: u64,
    /// The sampling rate actually used (a multiple of `2^-24`); 1 when exact.
    pub rate: f64,
    /// Line references counted, sampled or not.
    pub references: u64,
    /// Line references whose line was sampled (all of them when exact).
    pub sampled: u64,
    /// Sampled first references (cold misses of every size).
    pub cold: u64,
    /// Distinct lines sampled.
    pub lines: u64,
    /// Sampled reuses by per-set distance: `histogram[d]` references had
    /// `d` other lines of their set referenced since their line's previous use.
    pub histogram: Vec<u64>,
}

impl MissRatioCurve {
    /// Hits of an LRU cache of `sets` x `ways` lines (estimated when
    /// sampled, exact otherwise).
    pub fn hits(&self, ways: u64) -> f64 {
        // A sampled distance d stands for d / rate: it hits when d < ways * rate.
        let within = ((ways as f64 * self.rate).ceil() as usize).min(self.histogram.len());
        let sampled_hits: u64 = self.histogram[..within].iter().sum();
        if self.rate == 1.0 {
            return sampled_hits as f64;
        }
        let adjust = self.references as f64 * self.rate - self.sampled as f64;
        ((sampled_hits as f64 + adjust) / self.rate).clamp(0.0, self.references as f64)
    }

    /// Miss ratio of an LRU cache of `sets` x `ways` lines (0 without references).
    pub fn miss_ratio(&self, ways: u64) -> f64 {
        if self.references == 0 {
            return 0.0;
        }
        1.0 - self.hits(ways) / self.references as f64
    }

    /// The fewest ways with which only first references miss.
    pub fn ways_for_cold_only(&self) -> u64 {
        (self.histogram.len() as f64 / self.rate).ceil() as u64
    }

    /// Ways at which to draw the curve when none are asked for: 1, 2, 3, 4,
    /// 6, 8, 12, 16, ... (powers of two and their midpoints) up to the first
    /// at which only first references miss.
    pub fn default_ways(&self) -> Vec<u64> {
        let end = self.ways_for_cold_only().max(1);
        let mut ways: Vec<u64> = Vec::new();
        let mut p = 1u64;
        loop {
            for w in [p, p + p / 2] {
                if ways.last() != Some(&w) {
                    ways.push(w);
                }
                if w >= end {
                    return ways;
                }
            }
            p *= 2;
        }
    }
}

/// One pass in progress: feed it accesses, then [`MrcPass::finish`].
#[derive(Debug)]
pub struct MrcPass {
    stack: StackDistances,
    line_shift: u32,
    ifetch: bool,
    /// Sample lines whose hash is under this (`1 << SAMPLE_BITS`: all).
    threshold: u64,
    curve: MissRatioCurve,
}

impl MrcPass {
    /// A pass with these options.
    pub fn new(options: &MrcOptions) -> Result<MrcPass> {
        options.validate()?;
        let threshold = options.sample_rate.map_or(1 << SAMPLE_BITS, threshold);
        Ok(MrcPass {
            stack: StackDistances::new(options.sets),
            line_shift: options.line_bytes.trailing_zeros(),
            ifetch: options.ifetch,
            threshold,
            curve: MissRatioCurve {
                sets: options.sets,
                line_bytes: options.line_bytes,
                rate: threshold as f64 / (1u64 << SAMPLE_BITS) as f64,
                references: 0,
                sampled: 0,
                cold: 0,
                lines: 0,
                histogram: Vec::new(),
            },
        })
    }

    /// Count one reference to `line`.
    #[inline]
    pub fn record_line(&mut self, line: u64) {
        self.curve.references += 1;
        if self.threshold != 1 << SAMPLE_BITS && hash(line) >> (64 - SAMPLE_BITS) >= self.threshold {
            return;
        }
        self.curve.sampled += 1;
        match self.stack.record(line) {
            Some(d) => {
                let d = d as usize;
                if d >= self.curve.histogram.len() {
                    // Grows with the footprint only (a distance is below it).
                    self.curve.histogram.resize((d + 1).next_power_of_two(), 0);
                }
                self.curve.histogram[d] += 1;
            }
            None => self.curve.cold += 1,
        }
    }

    /// Count an access: each line it touches, if its kind counts.
    #[inline]
    pub fn record(&mut self, a: &Access) {
        if a.kind == AccessKind::Ifetch && !self.ifetch {
            return;
        }
        let first = a.addr.0 >> self.line_shift;
        let last = a.addr.0.saturating_add(a.size.max(1) as u64 - 1) >> self.line_shift;
        for line in first..=last {
            self.record_line(line);
        }
    }

    /// The curve of what was recorded.
    pub fn finish(mut self) -> MissRatioCurve {
        let used = self.curve.histogram.iter().rposition(|&n| n > 0).map_or(0, |d| d + 1);
        self.curve.histogram.truncate(used);
        self.curve.lines = self.stack.lines();
        self.curve
    }
}

/// Read `workload` to its end (decoding on a second thread) and compute its
/// curve; `progress(done, total)` gets the accesses read about every
/// million and may stop the pass by returning an error.
pub fn mrc_workload(
    workload: Box<dyn Workload>,
    options: &MrcOptions,
    progress: &mut dyn FnMut(u64, Option<u64>) -> Result<()>,
) -> Result<MissRatioCurve> {
    let mut pass = MrcPass::new(options)?;
    let mut workload = Prefetched::new(workload, 1 << 14)?;
    let total = workload.len_hint();
    let mut buf = vec![Access::default(); 1 << 12];
    let mut done = 0u64;
    loop {
        let n = workload.fill(&mut buf)?;
        if n == 0 {
            break;
        }
        for a in &buf[..n] {
            pass.record(a);
        }
        done += n as u64;
        if done % (1 << 20) < n as u64 {
            progress(done, total)?;
        }
    }
    Ok(pass.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::VirtAddr;
    use proptest::prelude::*;

    /// An `S`-set, `W`-way LRU cache simulated directly: each set's lines,
    /// most recent first, cut to `W`. Returns the misses.
    fn lru_misses(lines: &[u64], sets: u64, ways: usize) -> u64 {
        let mut cache: Vec<Vec<u64>> = vec![Vec::new(); sets as usize];
        let mut misses = 0;
        for &l in lines {
            let set = &mut cache[(l % sets) as usize];
            match set.iter().position(|&x| x == l) {
                Some(i) => {
                    set.remove(i);
                }
                None => {
                    misses += 1;
                    set.truncate(ways - 1);
                }
            }
            set.insert(0, l);
        }
        misses
    }

    fn access(addr: u64, size: u16, kind: AccessKind) -> Access {
        Access { addr: VirtAddr(addr), pc: VirtAddr(0), instrs: 1, size, kind }
    }

    proptest! {
        #[test]
        fn every_associativity_agrees_with_an_lru_cache(
            lines in proptest::collection::vec(0u64..120, 0..600),
            sets in prop_oneof![Just(1u64), Just(2), Just(3), Just(8)],
        ) {
            let mut pass = MrcPass::new(&MrcOptions { sets, ..MrcOptions::default() }).unwrap();
            for &l in &lines {
                pass.record_line(l);
            }
            let curve = pass.finish();
            prop_assert_eq!(curve.references, lines.len() as u64);
            for ways in 1..=curve.ways_for_cold_only() + 1 {
                let misses = lines.len() as u64 - curve.hits(ways) as u64;
                prop_assert_eq!(misses, lru_misses(&lines, sets, ways as usize), "{} ways", ways);
            }
            prop_assert_eq!(lines.len() as u64 - curve.hits(curve.ways_for_cold_only()) as u64, curve.cold);
        }
    }

    #[test]
    fn ifetches_are_left_out_and_spanning_accesses_count_each_line() {
        let mut pass = MrcPass::new(&MrcOptions::default()).unwrap();
        pass.record(&access(0x1000, 8, AccessKind::Load));
        pass.record(&access(0x2000, 8, AccessKind::Ifetch));
        pass.record(&access(0x103c, 8, AccessKind::Store)); // lines 0x40 and 0x41
        let curve = pass.finish();
        assert_eq!((curve.references, curve.cold, curve.histogram.clone()), (3, 2, vec![1]));

        let mut unified = MrcPass::new(&MrcOptions { ifetch: true, ..MrcOptions::default() }).unwrap();
        unified.record(&access(0x2000, 8, AccessKind::Ifetch));
        assert_eq!(unified.finish().references, 1);
    }

    #[test]
    fn default_ways_end_where_only_cold_misses_remain() {
        let curve = |histogram: Vec<u64>| MissRatioCurve {
            histogram,
            ..MrcPass::new(&MrcOptions::default()).unwrap().finish()
        };
        assert_eq!(curve(vec![]).default_ways(), vec![1]);
        assert_eq!(curve(vec![1; 5]).default_ways(), vec![1, 2, 3, 4, 6]);
        assert_eq!(curve(vec![1; 8]).default_ways(), vec![1, 2, 3, 4, 6, 8]);
    }

    #[test]
    fn options_are_checked() {
        let bad = |o: MrcOptions| MrcPass::new(&o).unwrap_err().to_string();
        assert!(bad(MrcOptions { sets: 0, ..MrcOptions::default() }).contains("sets"));
        assert!(bad(MrcOptions { line_bytes: 48, ..MrcOptions::default() }).contains("line_bytes"));
        assert!(bad(MrcOptions { sample_rate: Some(0.0), ..MrcOptions::default() }).contains("sample"));
        let both = MrcOptions { sets: 64, sample_rate: Some(0.1), ..MrcOptions::default() };
        assert!(bad(both).contains("one set"));
    }

    #[test]
    fn sampling_estimates_a_cyclic_sweep_closely() {
        // A sweep over 20,000 lines, four times: every reuse at distance 19,999.
        let lines: Vec<u64> = (0..4).flat_map(|_| 0..20_000u64).collect();
        let mut pass = MrcPass::new(&MrcOptions { sample_rate: Some(0.05), ..MrcOptions::default() }).unwrap();
        lines.iter().for_each(|&l| pass.record_line(l));
        let curve = pass.finish();
        assert!((curve.sampled as f64 / lines.len() as f64 - 0.05).abs() < 0.01, "{}", curve.sampled);
        assert!(curve.miss_ratio(19_000) > 0.99, "{}", curve.miss_ratio(19_000));
        assert!(curve.miss_ratio(21_000) < 0.26, "{}", curve.miss_ratio(21_000));
    }
}
