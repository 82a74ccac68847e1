//! Reuse distances of a stream: for each reference to a line, how many
//! distinct other lines were referenced since that line's previous
//! reference (its LRU stack distance). A fully associative LRU cache of
//! `C` lines hits exactly the references whose distance is below `C`, so
//! the histogram tells at a glance which cache sizes a trace needs.
//!
//! [`StackDistances`] computes the distances within each set of a cache of
//! `S` sets (lines map to set `line % S`; one set is fully associative): an
//! `S`-set, `W`-way LRU cache hits exactly the references whose distance
//! within their set is below `W`. It takes O(log n) per reference with a
//! Fenwick tree over each set's time that marks, for every line, the time
//! of its latest reference: the distance is the number of marks after the
//! line's previous time. A set's times are renumbered whenever its tree
//! fills, so memory follows the footprint, not the trace length.

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

/// Reuse distances of one stream, in lines, counted in power-of-two buckets.
#[derive(Debug, Clone)]
pub struct ReuseDistances {
    stack: StackDistances,
    /// The distances so far.
    pub histogram: ReuseHistogram,
}

impl Default for ReuseDistances {
    fn default() -> Self {
        ReuseDistances { stack: StackDistances::new(1), histogram: ReuseHistogram::default() }
    }
}

/// The bucket of a distance.
pub fn bucket(distance: u64) -> usize {
    (u64::BITS - distance.leading_zeros()) as usize
}

impl ReuseDistances {
    /// Record a reference to `line`; returns its distance (`None`: first reference).
    pub fn record(&mut self, line: u64) -> Option<u64> {
        let distance = self.stack.record(line);
        match distance {
            Some(d) => self.histogram.buckets[bucket(d)] += 1,
            None => self.histogram.cold += 1,
        }
        distance
    }
}

/// The Fenwick tree over one set's time.
#[derive(Debug, Clone)]
struct SetTimes {
    /// Over times 1..tree.len(): 1 where a time is some line's latest reference.
    tree: Vec<u32>,
    /// The set's latest time (0: never referenced).
    now: u32,
    /// The set's lines, in order of first reference (one mark each).
    lines: Vec<u64>,
}

impl SetTimes {
    fn new(tree: usize) -> SetTimes {
        SetTimes { tree: vec![0; tree.max(2)], now: 0, lines: Vec::new() }
    }

    #[inline]
    fn add(&mut self, mut i: usize, delta: i32) {
        while i < self.tree.len() {
            self.tree[i] = self.tree[i].wrapping_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Marks at times `1..=i`.
    #[inline]
    fn prefix(&self, mut i: usize) -> u64 {
        let mut sum = 0u64;
        while i > 0 {
            sum += self.tree[i] as u64;
            i &= i - 1;
        }
        sum
    }
}

/// LRU stack distances within each set of a cache of `sets` sets (see the
/// module documentation). One set: the fully associative distances.
///
/// Memory: a map entry and a line number per distinct line, and per set a
/// tree of at most twice its lines (at least `initial_tree` entries). No
/// allocation per reference beyond that growth.
#[derive(Debug, Clone)]
pub struct StackDistances {
    /// Line -> its set's time of the line's latest reference (1-based).
    last: U64Map,
    sets: Vec<SetTimes>,
}

impl StackDistances {
    /// Distances within each of `sets` sets (at least 1).
    pub fn new(sets: u64) -> StackDistances {
        let sets = sets.max(1);
        // One set starts large (it is the whole footprint); many start small.
        let initial = if sets == 1 { 1 << 16 } else { 16 };
        StackDistances::with_initial_tree(sets, initial)
    }

    /// As [`StackDistances::new`], with trees of `initial` entries at first
    /// (small ones force renumbering, for tests).
    pub fn with_initial_tree(sets: u64, initial: usize) -> StackDistances {
        let sets = usize::try_from(sets.max(1)).expect("a set count that fits in memory");
        StackDistances { last: U64Map::default(), sets: vec![SetTimes::new(initial); sets] }
    }

    /// Number of sets.
    pub fn sets(&self) -> u64 {
        self.sets.len() as u64
    }

    /// Distinct lines referenced so far.
    pub fn lines(&self) -> u64 {
        self.last.len() as u64
    }

    /// Record a reference to `line` (any line number but `u64::MAX`; line
    /// numbers are addresses shifted right); returns its distance within its
    /// set (`None`: the line's first reference).
    #[inline]
    pub fn record(&mut self, line: u64) -> Option<u64> {
        debug_assert!(line != u64::MAX, "u64::MAX is not a line number");
        let n = self.sets.len() as u64;
        // A power of two of sets (the usual case) indexes without a division.
        let s = if n.is_power_of_two() { line & (n - 1) } else { line % n };
        let set = &mut self.sets[s as usize];
        if set.now as usize + 1 == set.tree.len() {
            Self::renumber(set, &mut self.last);
        }
        let slot = self.last.entry(line, 0);
        let previous = *slot as usize;
        if previous != 0 && previous == set.now as usize {
            // The set's latest reference again: distance 0, and its mark is
            // already the latest.
            return Some(0);
        }
        set.now += 1;
        let now = set.now as usize;
        *slot = now as u64;
        let distance = if previous != 0 {
            // Marks after the previous time: all of the set's lines but
            // those last referenced at or before it.
            let d = set.lines.len() as u64 - set.prefix(previous);
            set.add(previous, -1);
            Some(d)
        } else {
            set.lines.push(line);
            None
        };
        set.add(now, 1);
        distance
    }

    /// Give the set's live times the ranks 1..=lines, keeping their order,
    /// in a tree twice that size (at least as large as before).
    #[cold]
    fn renumber(set: &mut SetTimes, last: &mut U64Map) {
        let mut times: Vec<u64> = set.lines.iter().map(|&l| last.get(l).expect("a set's line")).collect();
        times.sort_unstable();
        for &l in &set.lines {
            let t = last.entry(l, 0);
            *t = times.binary_search(t).expect("a live time") as u64 + 1;
        }
        let size = (2 * times.len() + 2).max(set.tree.len());
        set.now = times.len() as u32;
        // Linear-time build of a tree whose first `now` times are marked.
        set.tree.clear();
        set.tree.resize(size, 0);
        for i in 1..size {
            set.tree[i] += (i <= set.now as usize) as u32;
            let parent = i + (i & i.wrapping_neg());
            if parent < size {
                set.tree[parent] += set.tree[i];
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
                r.stack = StackDistances::with_initial_tree(1, 4);
            }
            let got: Vec<Option<u64>> = stream.iter().map(|&l| r.record(l)).collect();
            prop_assert_eq!(&got, &brute_force(&stream));
            prop_assert_eq!(r.histogram.total(), stream.len() as u64);
        }
    }

    /// An `S`-set LRU cache as lists: each set's lines, most recent first.
    /// A reference's distance is its position in its set's list.
    fn per_set_lists(stream: &[u64], sets: u64) -> Vec<Option<u64>> {
        let mut lists: Vec<Vec<u64>> = vec![Vec::new(); sets as usize];
        stream
            .iter()
            .map(|&l| {
                let list = &mut lists[(l % sets) as usize];
                let at = list.iter().position(|&x| x == l);
                if let Some(i) = at {
                    list.remove(i);
                }
                list.insert(0, l);
                at.map(|i| i as u64)
            })
            .collect()
    }

    proptest! {
        #[test]
        fn per_set_distances_agree_with_lru_lists(
            stream in proptest::collection::vec(0u64..80, 0..500),
            sets in 1u64..9,
            initial in prop_oneof![Just(2usize), Just(16), Just(1 << 10)],
        ) {
            let mut s = StackDistances::with_initial_tree(sets, initial);
            let got: Vec<Option<u64>> = stream.iter().map(|&l| s.record(l)).collect();
            prop_assert_eq!(got, per_set_lists(&stream, sets));
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
