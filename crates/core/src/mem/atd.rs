//! The sampled auxiliary tag directory (ATD) of the elastic-time-slicing
//! estimator: how many last-level-cache misses a context switch *would*
//! cost a task, measured by emulating one.
//!
//! The hardware the elastic-time-slicing spec describes (§2) keeps one valid
//! bit per line of a sample of the LLC's sets (1/16 by default), in the
//! same (set, way) position as the main tag directory's line. An emulated
//! switch clears the bits; afterwards a fill sets the bit of the way it
//! fills, and a demand hit on a line whose bit is clear is a line the
//! switch would have lost: it counts one switch miss for the line's owner
//! and sets the bit, so the line counts once. The count scaled by the
//! sampling ratio is the estimate. The sample sets are split into two
//! alternating halves with a counter each; when the halves disagree too much
//! ([`Count::divergence`]) the estimate is not trusted.
//!
//! The machine ([`crate::mem::machine::Machine`]) owns an `Atd` when a
//! `cs-estimator` mechanism installed one, and calls [`Atd::hit`] and
//! [`Atd::fill`] from its LLC paths; without one it pays a single branch per
//! fill and per demand hit below the L1. The bits are kept for every set,
//! not only the sampled ones, so that the same pass also gives the count of
//! a full ATD (every set): the reference the sampling error is measured
//! against. The sampled count reads only the sampled sets' bits, so it is
//! exactly what the 1/16 hardware would count.
//!
//! What is counted is per *owner task* of the line hit (the owner id in
//! the tag, as the spec's shared-LLC extension counts per sharer), and an
//! emulated switch clears only the bits of the lines its task owns (with
//! equal way partitioning: its sharer's partition), so that one task's
//! emulated switch does not re-arm another's measurement.

use crate::mem::cache::Cache;
use crate::mem::tags::Slot;
use crate::types::TaskId;

/// One task's counts since its last emulated switch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Count {
    /// Switch misses seen in the sample sets, per half (even and odd
    /// sample sets, in the order of their index).
    pub halves: [u64; 2],
    /// Switch misses seen in every set (the full ATD).
    pub full: u64,
}

impl Count {
    /// Switch misses seen in the sample sets.
    pub fn sampled(&self) -> u64 {
        self.halves[0] + self.halves[1]
    }

    /// `|c1 - c2| / (c1 + c2)`; 0 when both are 0 (spec §2.5: no misses is
    /// an accurate measurement of none).
    pub fn divergence(&self) -> f64 {
        let [a, b] = self.halves;
        if a + b == 0 {
            0.0
        } else {
            a.abs_diff(b) as f64 / (a + b) as f64
        }
    }
}

/// An estimate of the switch misses of one task, read at its switch-out
/// (or, in the oracle timing, at the end of a window).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Estimate {
    /// The sampled count scaled by the sampling ratio.
    pub misses: u64,
    /// What it was computed from.
    pub count: Count,
    /// Whether the two halves agreed (divergence at most the threshold).
    pub reliable: bool,
    /// Clock of the task's core when it was read.
    pub time: u64,
}

/// Valid bits of one LLC (one per socket).
#[derive(Debug, Clone)]
struct Bits {
    /// Index of the LLC in the machine's caches.
    cache: usize,
    ways: usize,
    /// One bit per line, `set * ways + way`.
    words: Vec<u64>,
}

impl Bits {
    #[inline]
    fn get_set(&mut self, slot: Slot) -> bool {
        let i = slot.set * self.ways + slot.way;
        let (w, b) = (i / 64, 1u64 << (i % 64));
        let was = self.words[i / 64] & b != 0;
        self.words[w] |= b;
        was
    }

    fn clear(&mut self, i: usize) {
        self.words[i / 64] &= !(1u64 << (i % 64));
    }
}

/// The estimator's tag directory for every LLC of the machine, and its
/// counters per task.
#[derive(Debug, Clone)]
pub struct Atd {
    /// log2 of the sampling ratio: set `s` is sampled iff its low
    /// `shift` bits are 0 (spec §2.2: `s mod 16 == 0`).
    shift: u32,
    /// Per machine cache: which `llcs` entry watches it.
    watched: Vec<Option<u32>>,
    llcs: Vec<Bits>,
    /// Counts per task since its last emulated switch.
    counts: Vec<Count>,
}

impl Atd {
    /// Watch the caches at `llcs` (indexes into `caches`), sampling one set
    /// in `2^shift`.
    pub fn new(caches: &[Cache], llcs: &[usize], shift: u32) -> Atd {
        let mut watched = vec![None; caches.len()];
        let llcs = (llcs.iter().enumerate())
            .map(|(k, &c)| {
                watched[c] = Some(k as u32);
                let (sets, ways) = (caches[c].sets(), caches[c].ways());
                Bits { cache: c, ways, words: vec![0; (sets * ways).div_ceil(64)] }
            })
            .collect();
        Atd { shift, watched, llcs, counts: Vec::new() }
    }

    /// log2 of the sampling ratio.
    pub fn shift(&self) -> u32 {
        self.shift
    }

    #[inline]
    fn bits(&mut self, cache: usize) -> Option<&mut Bits> {
        let k = (*self.watched.get(cache)?)?;
        Some(&mut self.llcs[k as usize])
    }

    /// A line was placed in `slot` of cache `cache`: its bit is set (a line
    /// filled after the emulated switch is not one the switch would lose).
    #[inline]
    pub fn fill(&mut self, cache: usize, slot: Slot) {
        if let Some(bits) = self.bits(cache) {
            bits.get_set(slot);
        }
    }

    /// A demand hit on `slot` of cache `cache`, on a line brought in by
    /// `owner`: a switch miss of `owner` if the bit was clear.
    #[inline]
    pub fn hit(&mut self, cache: usize, slot: Slot, owner: TaskId) {
        let shift = self.shift;
        let Some(bits) = self.bits(cache) else { return };
        if bits.get_set(slot) || owner == TaskId::NONE {
            return;
        }
        let c = self.count_mut(owner);
        c.full += 1;
        if slot.set & ((1 << shift) - 1) == 0 {
            c.halves[(slot.set >> shift) & 1] += 1;
        }
    }

    fn count_mut(&mut self, task: TaskId) -> &mut Count {
        let t = task.0 as usize;
        if self.counts.len() <= t {
            self.counts.resize(t + 1, Count::default());
        }
        &mut self.counts[t]
    }

    /// Emulate a switch of `task`: clear the bits of the lines it owns in
    /// every watched LLC (`caches` are the machine's) and zero its counts.
    pub fn emulate_switch(&mut self, caches: &[Cache], task: TaskId) {
        for bits in &mut self.llcs {
            let cache = &caches[bits.cache];
            for set in 0..cache.sets() {
                for way in 0..bits.ways {
                    if cache.owner_at(Slot { set, way }) == task {
                        bits.clear(set * bits.ways + way);
                    }
                }
            }
        }
        *self.count_mut(task) = Count::default();
    }

    /// `task`'s counts since its last emulated switch.
    pub fn count(&self, task: TaskId) -> Count {
        self.counts.get(task.0 as usize).copied().unwrap_or_default()
    }

    /// The estimate of `task`'s counts now, trusted when the halves'
    /// divergence is at most `threshold`.
    pub fn estimate(&self, task: TaskId, threshold: f64) -> Estimate {
        let count = self.count(task);
        Estimate { misses: count.sampled() << self.shift, count, reliable: count.divergence() <= threshold, time: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::cache::{CacheParams, Req};
    use crate::mem::replacement::ReqKind;
    use crate::types::{LineAddr, VirtAddr};

    /// A 64-set, 2-way LRU cache and an ATD sampling 1 set in 16.
    fn setup() -> (Vec<Cache>, Atd) {
        let params = CacheParams { size_bytes: crate::units::ByteSize(64 * 2 * 64), ways: 2, ..Default::default() };
        let caches = vec![Cache::new(&params, 40, 1, "llc", "machine.llc").unwrap()];
        let atd = Atd::new(&caches, &[0], 4);
        (caches, atd)
    }

    /// Access `line` for `task` as the machine would: hit, or fill.
    fn access(caches: &mut [Cache], atd: &mut Atd, line: u64, task: u32) {
        let req = Req { kind: ReqKind::Load, pc: VirtAddr(0), task: TaskId(task) };
        let line = LineAddr(line);
        match caches[0].find(line) {
            Some(slot) => {
                caches[0].hit(slot, &req);
                atd.hit(0, slot, caches[0].owner_at(slot));
            }
            None => {
                caches[0].miss(line, &req);
                caches[0].fill(line, false, &req);
                atd.fill(0, caches[0].last_slot());
            }
        }
    }

    #[test]
    fn counts_main_hits_on_lines_present_at_the_emulated_switch_once() {
        let (mut caches, mut atd) = setup();
        // Task 0 warms lines in sets 0 (sampled, half 0), 16 (sampled,
        // half 1) and 1 (not sampled): lines s, s + 64.
        for line in [0, 64, 16, 80, 1, 65] {
            access(&mut caches, &mut atd, line, 0);
        }
        atd.emulate_switch(&caches, TaskId(0));
        // Re-touch 0, 64, 16 (twice), 1: five hits on lines present at the
        // switch, four of them distinct.
        for line in [0, 64, 16, 16, 1] {
            access(&mut caches, &mut atd, line, 0);
        }
        let c = atd.count(TaskId(0));
        assert_eq!(c.halves, [2, 1], "0 and 64 in set 0, 16 in set 16; the second 16 is not counted");
        assert_eq!(c.full, 4, "the unsampled set 1 counts in the full ATD only");
        let e = atd.estimate(TaskId(0), 0.2);
        assert_eq!(e.misses, 3 * 16);
        assert!(!e.reliable, "|2-1|/3 = 0.33 > 0.2");
        assert!(atd.estimate(TaskId(0), 0.34).reliable);
    }

    #[test]
    fn a_line_filled_after_the_switch_is_not_a_switch_miss() {
        let (mut caches, mut atd) = setup();
        access(&mut caches, &mut atd, 0, 0);
        atd.emulate_switch(&caches, TaskId(0));
        // 64 and 128 fill set 0 (evicting 0); hits on them are not counted,
        // nor is 0 when it comes back (a miss, then a fill).
        for line in [64, 128, 64, 128, 0, 0] {
            access(&mut caches, &mut atd, line, 0);
        }
        assert_eq!(atd.count(TaskId(0)), Count::default());
    }

    #[test]
    fn an_emulated_switch_clears_only_its_task_s_lines() {
        let (mut caches, mut atd) = setup();
        access(&mut caches, &mut atd, 0, 0);
        access(&mut caches, &mut atd, 64, 1);
        atd.emulate_switch(&caches, TaskId(0));
        atd.emulate_switch(&caches, TaskId(1));
        access(&mut caches, &mut atd, 0, 0);
        // Task 0 switching again clears its line, not task 1's.
        atd.emulate_switch(&caches, TaskId(0));
        access(&mut caches, &mut atd, 64, 1);
        access(&mut caches, &mut atd, 0, 0);
        assert_eq!(atd.count(TaskId(0)).halves, [1, 0]);
        assert_eq!(atd.count(TaskId(1)).halves, [1, 0]);
        // A hit counts for the line's owner, whoever makes it.
        atd.emulate_switch(&caches, TaskId(1));
        access(&mut caches, &mut atd, 64, 0);
        assert_eq!(atd.count(TaskId(1)).halves, [1, 0]);
    }

    /// Through the whole machine (a one-line L1, so every reference of a
    /// pattern that never repeats a line twice in a row reaches the LLC):
    /// the sampled count equals, in the sample sets, the number of LLC
    /// hits on lines present at the emulated switch and not evicted since,
    /// each counted once (the spec's naive saved-copy definition, from a
    /// list-per-set LRU model), and the estimate is 16 times that.
    #[test]
    fn the_machine_s_count_matches_a_saved_copy_model() {
        use crate::error::Issues;
        use crate::mem::machine::{Machine, MachineParams, MemoryParams};
        use crate::mem::page_table::FrameAllocation;
        use crate::types::{Access, Asid, CoreId};
        use std::collections::{HashSet, VecDeque};

        let (sets, ways) = (64u64, 16usize);
        let mut params = MachineParams {
            l1d: CacheParams { size_bytes: crate::units::ByteSize(64), ways: 1, ..Default::default() },
            llc: Some(CacheParams {
                size_bytes: crate::units::ByteSize(sets * ways as u64 * 64),
                ways: ways as u32,
                ..Default::default()
            }),
            tlb: None,
            memory: MemoryParams { frame_allocation: FrameAllocation::Identity, ..Default::default() },
            ..Default::default()
        };
        params.validate("machine", &mut Issues::default());
        let mut m = Machine::new(&params, 1, "machine").unwrap();
        m.add_tasks(1);
        m.install_atd(4);
        let mut model: Vec<VecDeque<u64>> = vec![VecDeque::new(); sets as usize];
        let (mut saved, mut expected, mut expected_full) = (HashSet::new(), 0u64, 0u64);
        let (mut x, mut prev) = (12345u64, u64::MAX);
        for i in 0..40_000 {
            if i == 20_000 {
                m.emulate_switch(TaskId(0));
                saved = model.iter().flatten().copied().collect();
            }
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let line = (x >> 33) % (sets * ways as u64 * 3 / 2);
            if line == prev {
                continue;
            }
            prev = line;
            m.access(CoreId(0), TaskId(0), Asid(0), &Access::load(line * 64, 8));
            let set = &mut model[(line % sets) as usize];
            if let Some(p) = set.iter().position(|&l| l == line) {
                set.remove(p);
                if saved.remove(&line) {
                    expected_full += 1;
                    expected += (line % sets).is_multiple_of(16) as u64;
                }
            } else if set.len() == ways {
                saved.remove(&set.pop_back().unwrap());
            }
            set.push_front(line);
        }
        let e = m.atd().unwrap().estimate(TaskId(0), 1.0);
        assert!(expected > 20, "the pattern exercises the sample sets: {expected}");
        assert_eq!(e.count.sampled(), expected);
        assert_eq!(e.count.full, expected_full);
        assert_eq!(e.misses, expected * 16);
    }

    #[test]
    fn divergence_of_nothing_is_zero() {
        assert_eq!(Count::default().divergence(), 0.0);
        assert_eq!(Count { halves: [3, 1], full: 0 }.divergence(), 0.5);
    }
}
