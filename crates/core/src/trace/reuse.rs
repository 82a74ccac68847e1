//! Reuse distances of a stream: for each reference to a line, how many
//! distinct other lines were referenced since that line's previous
//! reference (its LRU stack distance). A fully associative LRU cache of
//! `C` lines hits exactly the references whose distance is below `C`, so
//! the histogram tells at a glance which cache sizes a trace needs.
//!
//! Computed in O(log n) per reference with a Fenwick tree over time that
//! marks, for every line, the time of its latest reference: the distance
//! is the number of marks after the line's previous time. Times are
//! renumbered whenever the tree fills, so memory follows the footprint,
//! not the trace length.

use crate::util::hash::U64Map;

/// Power-of-two buckets: bucket 0 holds distance 0, bucket `b > 0` the
/// distances in `[2^(b-1), 2^b)`.
pub const BUCKETS: usize = 65;

/// How many references had each reuse distance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReuseHistogram {
    /// First references (no previous use: an infinite distance).
    pub cold: u64,
    /// Reuses per distance bucket (see [`BUCKETS`]).
    pub buckets: [u64; BUCKETS],
}

impl Default for ReuseHistogram {
    fn default() -> Self {
        ReuseHistogram { cold: 0, buckets: [0; BUCKETS] }
    }
}

impl ReuseHistogram {
    /// References with a distance below `lines`: the hits of a fully
    /// associative LRU cache of `lines` lines, counted to bucket precision
    /// (exact when `lines` is a power of two).
    pub fn within(&self, lines: u64) -> u64 {
        self.buckets[..bucket(lines.saturating_sub(1)) + 1].iter().sum()
    }

    /// All references counted.
    pub fn total(&self) -> u64 {
        self.cold + self.buckets.iter().sum::<u64>()
    }
}

/// Reuse distances of one stream, in lines.
#[derive(Debug, Clone)]
pub struct ReuseDistances {
    /// Line -> time of its latest reference (1-based).
    last: U64Map,
    /// Fenwick tree over times 1..tree.len(): 1 where a time is some line's latest reference.
    tree: Vec<u32>,
    now: usize,
    /// The distances so far.
    pub histogram: ReuseHistogram,
}

impl Default for ReuseDistances {
    fn default() -> Self {
        ReuseDistances { last: U64Map::default(), tree: vec![0; 1 << 16], now: 0, histogram: ReuseHistogram::default() }
    }
}

/// The bucket of a distance.
pub fn bucket(distance: u64) -> usize {
    (u64::BITS - distance.leading_zeros()) as usize
}

impl ReuseDistances {
    fn add(&mut self, mut i: usize, delta: i32) {
        while i < self.tree.len() {
            self.tree[i] = self.tree[i].wrapping_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Marks at times `1..=i`.
    fn prefix(&self, mut i: usize) -> u64 {
        let mut sum = 0u64;
        while i > 0 {
            sum += self.tree[i] as u64;
            i &= i - 1;
        }
        sum
    }

    /// Record a reference to `line`; returns its distance (`None`: first reference).
    pub fn record(&mut self, line: u64) -> Option<u64> {
        if self.now + 1 == self.tree.len() {
            self.renumber();
        }
        self.now += 1;
        let now = self.now;
        let previous = std::mem::replace(self.last.entry(line, 0), now as u64) as usize;
        let distance = (previous != 0).then(|| {
            let d = self.prefix(now - 1) - self.prefix(previous);
            self.add(previous, -1);
            d
        });
        self.add(now, 1);
        match distance {
            Some(d) => self.histogram.buckets[bucket(d)] += 1,
            None => self.histogram.cold += 1,
        }
        distance
    }

    /// Give the live times the ranks 1..=lines, keeping their order, in a
    /// tree twice that size (at least as large as before).
    fn renumber(&mut self) {
        let mut times: Vec<u64> = self.last.values_mut().map(|t| *t).collect();
        times.sort_unstable();
        for t in self.last.values_mut() {
            *t = times.binary_search(t).expect("a live time") as u64 + 1;
        }
        let size = (2 * times.len() + 2).max(self.tree.len());
        self.now = times.len();
        // Linear-time build of a tree whose first `now` times are marked.
        self.tree = vec![0; size];
        for i in 1..size {
            self.tree[i] += (i <= self.now) as u32;
            let parent = i + (i & i.wrapping_neg());
            if parent < size {
                self.tree[parent] += self.tree[i];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The textbook definition: distinct lines since the previous reference.
    fn brute_force(stream: &[u64]) -> Vec<Option<u64>> {
        (0..stream.len())
            .map(|t| {
                let previous = stream[..t].iter().rposition(|&l| l == stream[t])?;
                let mut seen: Vec<u64> = stream[previous + 1..t].to_vec();
                seen.sort_unstable();
                seen.dedup();
                Some(seen.len() as u64)
            })
            .collect()
    }

    proptest! {
        #[test]
        fn agrees_with_the_definition(stream in proptest::collection::vec(0u64..50, 0..400), small_tree in any::<bool>()) {
            let mut r = ReuseDistances::default();
            if small_tree {
                // Force many renumberings.
                r.tree = vec![0; 4];
            }
            let got: Vec<Option<u64>> = stream.iter().map(|&l| r.record(l)).collect();
            prop_assert_eq!(&got, &brute_force(&stream));
            prop_assert_eq!(r.histogram.total(), stream.len() as u64);
        }
    }

    #[test]
    fn a_cyclic_sweep_reuses_at_its_length_and_lru_of_that_size_hits_nothing() {
        let mut r = ReuseDistances::default();
        for _ in 0..3 {
            for line in 0..64 {
                r.record(line);
            }
        }
        let h = &r.histogram;
        assert_eq!(h.cold, 64);
        // Every reuse has 63 other lines in between: bucket [32, 64).
        assert_eq!(h.buckets[bucket(63)], 128);
        assert_eq!(h.within(64), 128, "64 lines of LRU hold the sweep");
        assert_eq!(h.within(32), 0, "32 lines of LRU hold none of it");
    }
}
