//! The hypervisor cache of seed 004 (spec cache-locking.md, section 1):
//! one VM's private partition of a cache the hypervisor keeps for its
//! VMs' block I/O, set-associative over blocks, with the dissertation's
//! three additions: lines locked from a miss table (never evicted), a
//! victim buffer of recently evicted blocks, and probability-based
//! replacement.
//!
//! A partition sees block numbers only (an address's block is
//! `addr >> log2(line)`); turning traces into blocks and partitions into
//! results is the run layer's work.

use crate::util::hash::U64Map;

/// An empty way.
const INVALID: u64 = u64::MAX;

/// What happened to one access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// In the partition (a locked line or not).
    Hit { locked: bool },
    /// Not in the partition but in its victim buffer: swapped back in, no disk access.
    VictimHit,
    /// A miss: fetched from the disk array (and installed unless bypassed).
    Miss,
}

/// Counters of a partition.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    pub accesses: u64,
    pub hits: u64,
    /// Of the hits, those on locked lines.
    pub locked_hits: u64,
    /// Misses the victim buffer served.
    pub victim_hits: u64,
    pub misses: u64,
    /// Misses the probability policy did not install (its `bypass` fallback).
    pub bypasses: u64,
    pub evictions: u64,
}

/// The probability-based replacement's state (spec 1.6, formalised there):
/// during the first `warmup` accesses it is LRU and counts each block's
/// accesses (the history); after, it keeps each block's accesses among
/// the last `window`. A victim is the unlocked line whose current
/// probability (its share of the window) is lowest among those below
/// their history probability (their share of the warm-up), ties to the
/// least recently used; if none is below, LRU (`bypass = false`) or no
/// victim: the missed block is not installed (`bypass = true`, the
/// "not evicted" read literally).
#[derive(Debug)]
pub struct Probability {
    warmup: u64,
    window: usize,
    bypass: bool,
    seen: u64,
    history: U64Map,
    recent: U64Map,
    /// The window's blocks, oldest first from `next`.
    ring: Vec<u64>,
    next: usize,
}

impl Probability {
    pub fn new(warmup: u64, window: usize, bypass: bool) -> Probability {
        Probability {
            warmup,
            window: window.max(1),
            bypass,
            seen: 0,
            history: U64Map::default(),
            recent: U64Map::default(),
            ring: Vec::new(),
            next: 0,
        }
    }

    /// Count an access to `block` (before its lookup).
    fn touch(&mut self, block: u64) {
        self.seen += 1;
        if self.seen <= self.warmup {
            *self.history.entry(block, 0) += 1;
            return;
        }
        if self.ring.len() < self.window {
            self.ring.push(block);
        } else {
            let old = std::mem::replace(&mut self.ring[self.next], block);
            *self.recent.entry(old, 0) -= 1;
            self.next = (self.next + 1) % self.window;
        }
        *self.recent.entry(block, 0) += 1;
    }

    fn active(&self) -> bool {
        self.seen > self.warmup
    }

    /// The current and the history probability of `block`.
    fn probabilities(&self, block: u64) -> (f64, f64) {
        let current = self.recent.get(block).unwrap_or(0) as f64 / self.ring.len().max(1) as f64;
        let history = self.history.get(block).unwrap_or(0) as f64 / self.warmup.max(1) as f64;
        (current, history)
    }
}

/// A fully associative, LRU buffer of blocks evicted from the partition
/// (spec 1.5: 12 per VM in the dissertation).
#[derive(Debug, Default)]
pub struct VictimBuffer {
    capacity: usize,
    /// Most recently inserted last.
    blocks: Vec<u64>,
}

impl VictimBuffer {
    pub fn new(capacity: usize) -> VictimBuffer {
        VictimBuffer { capacity, blocks: Vec::with_capacity(capacity) }
    }

    /// Take `block` out if it is here.
    fn take(&mut self, block: u64) -> bool {
        match self.blocks.iter().position(|&b| b == block) {
            Some(i) => {
                self.blocks.remove(i);
                true
            }
            None => false,
        }
    }

    /// Keep `block`, dropping the least recently inserted if full.
    fn put(&mut self, block: u64) {
        if self.capacity == 0 {
            return;
        }
        if self.blocks.len() == self.capacity {
            self.blocks.remove(0);
        }
        self.blocks.push(block);
    }
}

/// One VM's partition.
#[derive(Debug)]
pub struct Partition {
    sets: u64,
    ways: usize,
    /// Per way of each set: its block, its last use, whether it is locked.
    blocks: Vec<u64>,
    used: Vec<u64>,
    locked: Vec<bool>,
    clock: u64,
    /// Blocks to lock when they are installed (locking without preload).
    pending: Vec<u64>,
    victims: VictimBuffer,
    probability: Option<Probability>,
    pub counts: Counts,
}

impl Partition {
    /// A partition of `sets` sets of `ways` ways (any `sets` at least 1:
    /// blocks map to sets modulo), with a victim buffer of `victims`
    /// blocks and LRU or `probability` replacement.
    pub fn new(sets: u64, ways: usize, victims: usize, probability: Option<Probability>) -> Partition {
        let lines = sets as usize * ways;
        Partition {
            sets,
            ways,
            blocks: vec![INVALID; lines],
            used: vec![0; lines],
            locked: vec![false; lines],
            clock: 0,
            pending: Vec::new(),
            victims: VictimBuffer::new(victims),
            probability,
            counts: Counts::default(),
        }
    }

    pub fn lines(&self) -> usize {
        self.blocks.len()
    }

    fn set(&self, block: u64) -> std::ops::Range<usize> {
        let s = (block % self.sets) as usize * self.ways;
        s..s + self.ways
    }

    /// Lock up to `most` of `candidates` (most wanted first), never more
    /// than `ways - 1` in one set (one way stays replaceable): a candidate
    /// whose set is full of locks is skipped (spec 1.4's decision). A
    /// candidate in the partition is locked where it is; one that is not
    /// is, with `preload` (at the start, when every set has room), installed
    /// now without a miss, else locked when it is next installed. Returns
    /// the blocks chosen.
    pub fn lock(&mut self, candidates: &[u64], most: usize, preload: bool) -> Vec<u64> {
        let mut per_set = vec![0usize; self.sets as usize];
        let mut chosen = Vec::new();
        for &b in candidates {
            if chosen.len() == most {
                break;
            }
            let s = (b % self.sets) as usize;
            if per_set[s] + 1 >= self.ways || chosen.contains(&b) {
                continue;
            }
            per_set[s] += 1;
            chosen.push(b);
            if let Some(way) = self.set(b).find(|&w| self.blocks[w] == b) {
                self.locked[way] = true;
            } else if preload {
                let way = self.set(b).find(|&w| self.blocks[w] == INVALID).expect("a way is free at the start");
                (self.blocks[way], self.locked[way]) = (b, true);
            } else {
                self.pending.push(b);
            }
        }
        chosen
    }

    /// One access to `block`.
    pub fn access(&mut self, block: u64) -> Outcome {
        self.clock += 1;
        self.counts.accesses += 1;
        if let Some(p) = &mut self.probability {
            p.touch(block);
        }
        let set = self.set(block);
        if let Some(way) = set.clone().find(|&w| self.blocks[w] == block) {
            self.used[way] = self.clock;
            self.counts.hits += 1;
            self.counts.locked_hits += self.locked[way] as u64;
            return Outcome::Hit { locked: self.locked[way] };
        }
        let from_victims = self.victims.take(block);
        let outcome = if from_victims {
            self.counts.victim_hits += 1;
            Outcome::VictimHit
        } else {
            self.counts.misses += 1;
            Outcome::Miss
        };
        match self.victim(set) {
            Some(way) => {
                let old = self.blocks[way];
                if old != INVALID {
                    self.counts.evictions += 1;
                    self.victims.put(old);
                }
                let lock = self.pending.iter().position(|&b| b == block);
                if let Some(i) = lock {
                    self.pending.swap_remove(i);
                }
                (self.blocks[way], self.used[way], self.locked[way]) = (block, self.clock, lock.is_some());
            }
            // Not installed: a block the victim buffer held stays there.
            None => {
                if from_victims {
                    self.victims.put(block);
                }
                self.counts.bypasses += 1;
            }
        }
        outcome
    }

    /// The way of `set` to fill: an empty one, else by the policy among
    /// the unlocked ones (`None`: do not install).
    fn victim(&self, set: std::ops::Range<usize>) -> Option<usize> {
        if let Some(way) = set.clone().find(|&w| self.blocks[w] == INVALID) {
            return Some(way);
        }
        let unlocked = set.filter(|&w| !self.locked[w]);
        let lru = unlocked.clone().min_by_key(|&w| self.used[w]);
        let Some(p) = self.probability.as_ref().filter(|p| p.active()) else { return lru };
        let eligible = unlocked.filter_map(|w| {
            let (current, history) = p.probabilities(self.blocks[w]);
            (current < history).then_some((current, self.used[w], w))
        });
        match eligible.min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1))) {
            Some((_, _, w)) => Some(w),
            None if p.bypass => None,
            None => lru,
        }
    }
}

/// The miss table of one VM (spec 1.3): the `k` blocks with the most
/// misses in `blocks` on an unlocked LRU partition of `sets` x `ways`
/// (the two-pass profile), most first, ties to the lower block.
pub fn miss_table(blocks: &[u64], sets: u64, ways: usize, k: usize) -> Vec<(u64, u64)> {
    let mut profile = Partition::new(sets, ways, 0, None);
    let mut misses = MissCounter::default();
    for &b in blocks {
        misses.count(b, profile.access(b));
    }
    misses.top(k)
}

/// Misses per block, for a miss table.
#[derive(Debug, Default)]
pub struct MissCounter {
    counts: U64Map,
    blocks: Vec<u64>,
}

impl MissCounter {
    /// Count `outcome`, an access to `block`, if it is a miss.
    pub fn count(&mut self, block: u64, outcome: Outcome) {
        if outcome == Outcome::Miss {
            let n = self.counts.entry(block, 0);
            if *n == 0 {
                self.blocks.push(block);
            }
            *n += 1;
        }
    }

    /// The `k` blocks with the most misses, most first, ties to the lower block.
    pub fn top(&self, k: usize) -> Vec<(u64, u64)> {
        top(&self.counts, &self.blocks, k)
    }
}

/// The `k` blocks of `blocks` with the highest counts in `counts`, most
/// first, ties to the lower block.
fn top(counts: &U64Map, blocks: &[u64], k: usize) -> Vec<(u64, u64)> {
    let mut distinct: Vec<u64> = blocks.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    let mut rows: Vec<(u64, u64)> =
        distinct.into_iter().filter_map(|b| counts.get(b).filter(|&n| n > 0).map(|n| (b, n))).collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    rows.truncate(k);
    rows
}

/// The cost of a miss (spec 1.7, eq. 4): `2 T_FC + T_cc + (1 - h_cc) (T_seek + T_rot)`,
/// in microseconds; a hit costs nothing. The dissertation gives no values:
/// the defaults are the spec's (a 15k RPM disk behind Fibre Channel).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IoParams {
    pub fc_us: f64,
    pub controller_us: f64,
    pub seek_us: f64,
    pub rotation_us: f64,
    /// The disk-array controller cache's hit ratio, in [0, 1].
    pub controller_hit: f64,
}

impl Default for IoParams {
    fn default() -> Self {
        IoParams { fc_us: 50.0, controller_us: 10.0, seek_us: 4000.0, rotation_us: 2000.0, controller_hit: 0.0 }
    }
}

impl IoParams {
    /// The expected cost of one miss, in microseconds.
    pub fn miss_us(&self) -> f64 {
        2.0 * self.fc_us + self.controller_us + (1.0 - self.controller_hit) * (self.seek_us + self.rotation_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_with_a_locked_line_keeps_it_and_evicts_among_the_others() {
        // One set of 2 ways, block 7 locked: 1, 2, 1 ... only one way turns over.
        let mut p = Partition::new(1, 2, 0, None);
        assert_eq!(p.lock(&[7], 1, true), vec![7]);
        let outcomes: Vec<Outcome> = [1, 2, 1, 7].iter().map(|&b| p.access(b)).collect();
        assert_eq!(outcomes, [Outcome::Miss, Outcome::Miss, Outcome::Miss, Outcome::Hit { locked: true }]);
        assert_eq!((p.counts.misses, p.counts.locked_hits, p.counts.evictions), (3, 1, 2));
    }

    #[test]
    fn at_most_ways_minus_one_locks_per_set() {
        let mut p = Partition::new(2, 2, 0, None);
        // Blocks 0, 2, 4 map to set 0: one lock there; 1 to set 1.
        assert_eq!(p.lock(&[0, 2, 4, 1], 3, true), vec![0, 1]);
        let mut q = Partition::new(2, 4, 0, None);
        assert_eq!(q.lock(&[0, 2, 4, 6, 1], 3, false), vec![0, 2, 4]);
        // Without preload a chosen block locks when it arrives.
        q.access(0);
        assert_eq!(q.locked.iter().filter(|&&l| l).count(), 1);
    }

    #[test]
    fn the_victim_buffer_swaps_an_evicted_block_back() {
        let mut p = Partition::new(1, 1, 2, None);
        let outcomes: Vec<Outcome> = [1, 2, 1, 3, 2, 4, 1].iter().map(|&b| p.access(b)).collect();
        use Outcome::*;
        // 1 evicted by 2 into the buffer, back (2 out); 3 in (1 out), 2 back
        // (3 out); 4 in (2 out: the buffer keeps its last two, 3 and 2), so 1 is gone.
        assert_eq!(outcomes, [Miss, Miss, VictimHit, Miss, VictimHit, Miss, Miss]);
    }

    #[test]
    fn the_miss_table_is_the_top_of_a_plain_count() {
        // Direct-mapped, one set: every access that differs from the last misses.
        let blocks = [5, 6, 5, 6, 5, 9, 9, 3];
        assert_eq!(miss_table(&blocks, 1, 1, 3), vec![(5, 3), (6, 2), (3, 1)]);
    }
}
