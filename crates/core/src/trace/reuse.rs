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

/// One set's time: the marks of its recent times in a ring of bits, the
/// older ones in a Fenwick tree.
#[derive(Debug, Clone)]
struct SetTimes {
    /// Over times 1..tree.len(): 1 where a time at or before `flushed` is
    /// some line's latest reference.
    tree: Vec<u32>,
    /// The set's latest time (0: never referenced).
    now: u32,
    /// Times up to this one are in the tree; later ones in `window`.
    flushed: u32,
    /// Marks of times in `(flushed, now]`, bit `t % bits` for time `t`.
    window: Vec<u64>,
    /// Marks in the tree and in the window.
    tree_marks: u64,
    window_marks: u64,
    /// The set's lines, in order of first reference (one mark each).
    lines: Vec<u64>,
}

impl SetTimes {
    fn new(tree: usize, window_words: usize) -> SetTimes {
        SetTimes {
            tree: vec![0; tree.max(2)],
            now: 0,
            flushed: 0,
            window: vec![0; window_words.max(1)],
            tree_marks: 0,
            window_marks: 0,
            lines: Vec::new(),
        }
    }

    #[inline]
    fn add(&mut self, mut i: usize, delta: i32) {
        while i < self.tree.len() {
            self.tree[i] = self.tree[i].wrapping_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Marks at times `1..=i` of the tree.
    #[inline]
    fn prefix(&self, mut i: usize) -> u64 {
        let mut sum = 0u64;
        while i > 0 {
            sum += self.tree[i] as u64;
            i &= i - 1;
        }
        sum
    }

    /// Bits of the window.
    #[inline]
    fn bits(&self) -> u32 {
        self.window.len() as u32 * 64
    }

    /// Flip the window's bit of time `t`.
    #[inline]
    fn flip(&mut self, t: u32) {
        let bit = t & (self.bits() - 1);
        self.window[(bit / 64) as usize] ^= 1 << (bit % 64);
    }

    #[inline]
    fn marked(&self, t: u32) -> bool {
        let bit = t & (self.bits() - 1);
        self.window[(bit / 64) as usize] >> (bit % 64) & 1 != 0
    }

    /// Marks at times `a+1..=b` of the window.
    #[inline]
    fn window_count(&self, a: u32, b: u32) -> u64 {
        let mask_bits = self.bits() - 1;
        let mut n = 0;
        let mut t = a + 1;
        while t <= b {
            let bit = t & mask_bits;
            let take = (64 - bit % 64).min(b - t + 1);
            let mask = if take == 64 { !0 } else { ((1u64 << take) - 1) << (bit % 64) };
            n += (self.window[(bit / 64) as usize] & mask).count_ones() as u64;
            t += take;
        }
        n
    }
}

/// LRU stack distances within each set of a cache of `sets` sets (see the
/// module documentation). One set: the fully associative distances.
///
/// Memory: a map entry and a line number per distinct line, and per set a
/// tree of at most twice its lines (eight times with one set; at least the
/// initial size) and a window of recent times. No
/// allocation per reference beyond that growth.
#[derive(Debug, Clone)]
pub struct StackDistances {
    /// Line -> its set's time of the line's latest reference (1-based).
    last: U64Map,
    sets: Vec<SetTimes>,
    /// A renumbered tree holds this many times per line: renumbering (a
    /// sort of the set's lines) comes every `spread - 1` references per line.
    spread: usize,
}

impl StackDistances {
    /// Distances within each of `sets` sets (at least 1).
    pub fn new(sets: u64) -> StackDistances {
        let sets = sets.max(1);
        // One set starts large (it is the whole footprint) and keeps the
        // marks of its last 2048 times out of its tree: most reuses are
        // that recent and then cost a few popcounts instead of tree walks
        // through a tree larger than the host's caches. Many sets start
        // small, with a window of 64 times.
        if sets == 1 {
            StackDistances::with_sizes(sets, 1 << 16, 128)
        } else {
            StackDistances::with_sizes(sets, 16, 1)
        }
    }

    /// As [`StackDistances::new`], with trees of `initial` entries at first
    /// (small ones force renumbering, for tests) and windows of
    /// `window_words` x 64 recent times (a power of two).
    pub fn with_sizes(sets: u64, initial: usize, window_words: usize) -> StackDistances {
        let sets = usize::try_from(sets.max(1)).expect("a set count that fits in memory");
        assert!(window_words.is_power_of_two(), "a window of a power of two of words");
        // One large tree renumbers rarely (8 times per line: 32 bytes per
        // line); many small ones stay small enough for the host's caches.
        let spread = if sets == 1 { 8 } else { 2 };
        StackDistances { last: U64Map::default(), sets: vec![SetTimes::new(initial, window_words); sets], spread }
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
            Self::renumber(set, &mut self.last, self.spread);
        }
        let slot = self.last.entry(line, 0);
        let previous = *slot as usize;
        if previous != 0 && previous == set.now as usize {
            // The set's latest reference again: distance 0, and its mark is
            // already the latest.
            return Some(0);
        }
        set.now += 1;
        let now = set.now;
        *slot = now as u64;
        if now - set.flushed > set.bits() {
            // The oldest time of the window moves to the tree.
            let t = set.flushed + 1;
            if set.marked(t) {
                set.flip(t);
                set.window_marks -= 1;
                set.add(t as usize, 1);
                set.tree_marks += 1;
            }
            set.flushed = t;
        }
        let previous = previous as u32;
        let distance = if previous == 0 {
            set.lines.push(line);
            None
        } else if previous > set.flushed {
            // Marks after the previous time, all in the window.
            let d = set.window_count(previous, now - 1);
            set.flip(previous);
            set.window_marks -= 1;
            Some(d)
        } else {
            // The window's marks and the tree's after the previous time.
            let d = set.window_marks + set.tree_marks - set.prefix(previous as usize);
            set.add(previous as usize, -1);
            set.tree_marks -= 1;
            Some(d)
        };
        set.flip(now);
        set.window_marks += 1;
        distance
    }

    /// Give the set's live times the ranks 1..=lines, keeping their order,
    /// in a tree `spread` times that size (at least as large as before).
    #[cold]
    fn renumber(set: &mut SetTimes, last: &mut U64Map, spread: usize) {
        let mut order: Vec<(u64, u64)> = set.lines.iter().map(|&l| (last.get(l).expect("a set's line"), l)).collect();
        order.sort_unstable();
        for (rank, &(_, l)) in order.iter().enumerate() {
            last.insert(l, rank as u64 + 1);
        }
        let size = (spread * order.len() + 2).max(set.tree.len());
        set.now = order.len() as u32;
        // Every mark goes to the tree; the window starts empty.
        set.flushed = set.now;
        set.window.fill(0);
        set.tree_marks = order.len() as u64;
        set.window_marks = 0;
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
                r.stack = StackDistances::with_sizes(1, 4, 1);
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
            window_words in prop_oneof![Just(1usize), Just(2)],
        ) {
            let mut s = StackDistances::with_sizes(sets, initial, window_words);
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
