//! The tag store shared by caches and TLBs: which key sits in which way of
//! which set, and a fast search for it.
//!
//! Beside each 64-bit tag sits a 32-bit fingerprint. A lookup compares the
//! fingerprints of a whole set four at a time with SSE2 (part of every
//! x86-64 CPU), then confirms the one or two candidates against the full
//! tags: about a dozen instructions for an 8-way set, where comparing 64-bit
//! tags one by one costs several times that, and no branch that depends on
//! where in the set the key sits. The search is on every simulated memory
//! reference, twice (TLB and L1), so this is the simulator's innermost loop.
//!
//! When every key fits in 31 bits above the set index (physical line
//! numbers of a machine whose memory size is known), the fingerprint *is*
//! the tag: no confirmation, so a lookup reads only the set's fingerprints,
//! one host cache line for a 16-way set. That halves the host memory a
//! miss in a large simulated cache touches.

use crate::error::Result;
use crate::util::alloc;

/// The tag of an empty way. No real key is all ones: line numbers are
/// addresses shifted right, TLB keys keep the top bits for small asids.
pub const INVALID: u64 = u64::MAX;

/// Where a key sits: set and way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// Set index.
    pub set: usize,
    /// Way within the set.
    pub way: usize,
}

/// Maps a line or page number to a set: a mask for power-of-two set counts
/// (the common case), a modulo otherwise.
#[derive(Debug, Clone, Copy)]
pub struct SetIndex {
    sets: u64,
    mask: u64,
}

impl SetIndex {
    /// Indexing into `sets` sets (at least 1).
    pub fn new(sets: usize) -> SetIndex {
        let sets = sets.max(1) as u64;
        SetIndex { sets, mask: if sets.is_power_of_two() { sets - 1 } else { u64::MAX } }
    }

    /// The set of `x`.
    #[inline(always)]
    pub fn of(self, x: u64) -> usize {
        if self.mask != u64::MAX {
            (x & self.mask) as usize
        } else {
            (x % self.sets) as usize
        }
    }
}

/// Tags of `sets x ways` entries with their fingerprints.
#[derive(Debug, Clone)]
pub struct TagArray {
    sets: usize,
    ways: usize,
    /// Full tags, kept only when fingerprints are hashed.
    tags: Vec<u64>,
    /// Fingerprints, padded per set to a multiple of four.
    prints: Vec<u32>,
    /// Ways per set in `prints` (`ways` rounded up to four).
    stride: usize,
    /// Where set 0's fingerprints start in `prints`: aligned to 64 bytes so
    /// that a set of up to 16 ways is one host cache line.
    origin: usize,
    /// Entries holding a key: once every entry does (a warm cache), no fill
    /// needs to look for an empty way.
    valid: usize,
    /// Set-index bits, when fingerprints are exact tags (`None`: hashed).
    exact: Option<u32>,
    /// Bit `w` set for every real way `w` of a set (not the padding).
    way_mask: u64,
}

/// The fingerprint of the empty way in an exact array: no 31-bit tag.
const EMPTY_PRINT: u32 = u32::MAX;

impl TagArray {
    /// An empty array of `sets` sets of `ways` ways holding keys below
    /// `2^key_bits`; `size_key` is the key that sized it (named if the host
    /// cannot give the memory).
    pub fn new(sets: usize, ways: usize, key_bits: u32, size_key: &str) -> Result<TagArray> {
        let stride = ways.div_ceil(4) * 4;
        let set_bits = sets.trailing_zeros();
        // With at most 32 set bits, INVALID (all ones) shifts to EMPTY_PRINT.
        let exact =
            (sets.is_power_of_two() && set_bits <= 32 && key_bits.saturating_sub(set_bits) <= 31).then_some(set_bits);
        let mut t = TagArray {
            sets,
            ways,
            tags: if exact.is_some() { Vec::new() } else { alloc::filled(sets * ways, INVALID, "tags", size_key)? },
            prints: Vec::new(),
            stride,
            origin: 0,
            valid: 0,
            exact,
            way_mask: if ways >= 64 { u64::MAX } else { (1 << ways) - 1 },
        };
        let empty = t.print(INVALID);
        t.prints = alloc::filled(sets * stride + 15, empty, "tags", size_key)?;
        t.origin = (64 - (t.prints.as_ptr() as usize & 63)) / 4 % 16;
        Ok(t)
    }

    /// Host bytes an array of `sets x ways` for keys below `2^key_bits`
    /// holds: fingerprints, padded sets and all, and the tags unless the
    /// fingerprints are the tags.
    pub fn host_bytes(sets: u64, ways: u64, key_bits: u32) -> u64 {
        let set_bits = sets.trailing_zeros();
        let exact = sets.is_power_of_two() && set_bits <= 32 && key_bits.saturating_sub(set_bits) <= 31;
        let tags = if exact { 0 } else { sets.saturating_mul(ways).saturating_mul(8) };
        let prints = sets.saturating_mul(ways.div_ceil(4) * 4).saturating_add(15).saturating_mul(4);
        tags.saturating_add(prints)
    }

    /// The fingerprint of a key: its tag bits above the set index in an exact
    /// array, else a 32-bit hash mixing all bits (so that keys differing only
    /// in high bits, such as asids, still differ).
    #[inline(always)]
    fn print(&self, key: u64) -> u32 {
        match self.exact {
            Some(set_bits) => (key >> set_bits) as u32,
            None => (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32,
        }
    }

    /// Number of sets.
    pub fn sets(&self) -> usize {
        self.sets
    }

    /// Ways per set.
    pub fn ways(&self) -> usize {
        self.ways
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.sets * self.ways
    }

    /// True for an array without entries (never built by `new` with sets and ways).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Flat index of a slot (for per-entry arrays kept beside the tags).
    #[inline(always)]
    pub fn index(&self, slot: Slot) -> usize {
        slot.set * self.ways + slot.way
    }

    /// The slot of flat index `i`.
    pub fn slot(&self, i: usize) -> Slot {
        Slot { set: i / self.ways, way: i % self.ways }
    }

    #[inline(always)]
    fn print_at(&self, slot: Slot) -> u32 {
        self.prints[self.origin + slot.set * self.stride + slot.way]
    }

    /// The tag in `slot` ([`INVALID`] if empty).
    #[inline(always)]
    pub fn get(&self, slot: Slot) -> u64 {
        match self.exact {
            Some(set_bits) => match self.print_at(slot) {
                EMPTY_PRINT => INVALID,
                p => (p as u64) << set_bits | slot.set as u64,
            },
            None => self.tags[self.index(slot)],
        }
    }

    /// Whether `slot` holds `key` (of set `slot.set`).
    #[inline(always)]
    pub fn holds(&self, slot: Slot, key: u64) -> bool {
        match self.exact {
            Some(_) => self.print_at(slot) == self.print(key),
            None => self.tags[self.index(slot)] == key,
        }
    }

    /// Put `key` in `slot` ([`INVALID`] empties it).
    #[inline(always)]
    pub fn set(&mut self, slot: Slot, key: u64) {
        debug_assert!(self.exact.is_none_or(|b| key == INVALID || key >> b >> 31 == 0), "key too wide");
        let was_valid = self.get(slot) != INVALID;
        self.valid = self.valid + (key != INVALID) as usize - was_valid as usize;
        if self.exact.is_none() {
            let i = self.index(slot);
            self.tags[i] = key;
        }
        let p = self.print(key);
        self.prints[self.origin + slot.set * self.stride + slot.way] = p;
    }

    /// The way of `set` holding `key`, if any.
    #[inline(always)]
    pub fn find(&self, set: usize, key: u64) -> Option<Slot> {
        assert!(set < self.sets);
        if self.stride > 64 {
            return self.find_wide(set, key);
        }
        // SAFETY: `set < sets` (asserted), so the set's `stride` fingerprints
        // start at `origin + set * stride` inside `prints` (`origin` below 16,
        // `sets * stride + 15` long).
        let mut candidates = unsafe {
            match_prints(self.prints.as_ptr().add(self.origin + set * self.stride), self.stride, self.print(key))
        } & self.way_mask;
        if self.exact.is_some() {
            return (candidates != 0).then(|| Slot { set, way: candidates.trailing_zeros() as usize });
        }
        let base = set * self.ways;
        while candidates != 0 {
            let way = candidates.trailing_zeros() as usize;
            // SAFETY: way < ways (the mask drops the padding), so
            // base + way < (set + 1) * ways <= tags.len().
            if unsafe { *self.tags.get_unchecked(base + way) } == key {
                return Some(Slot { set, way });
            }
            candidates &= candidates - 1;
        }
        None
    }

    /// [`TagArray::find`] for sets wider than a 64-bit candidate mask (large
    /// fully associative arrays): a plain scan.
    #[cold]
    fn find_wide(&self, set: usize, key: u64) -> Option<Slot> {
        (0..self.ways).map(|way| Slot { set, way }).find(|&slot| self.holds(slot, key))
    }

    /// Ask the host to bring `set`'s fingerprints (and tags) into its caches.
    #[inline(always)]
    pub fn prefetch(&self, set: usize) {
        crate::util::prefetch_row(self.prints.as_ptr().wrapping_add(self.origin + set * self.stride), self.stride);
        if self.exact.is_none() {
            crate::util::prefetch_row(self.tags.as_ptr().wrapping_add(set * self.ways), self.ways);
        }
    }

    /// Whether every entry holds a key.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.valid == self.len()
    }

    /// The first empty way of `set`, if any.
    #[inline]
    pub fn first_invalid(&self, set: usize) -> Option<usize> {
        if self.is_full() {
            return None;
        }
        self.find(set, INVALID).map(|s| s.way)
    }

    /// Every valid entry as (flat index, tag).
    pub fn valid(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        (0..self.len()).map(|i| (i, self.get(self.slot(i)))).filter(|&(_, t)| t != INVALID)
    }
}

/// A [`TagArray`]'s search with its geometry copied into locals, for a loop
/// that looks many keys up in a row (the machine's L1 hit run): the compiler
/// keeps the geometry in registers instead of reloading it from the array
/// after every store the loop makes elsewhere. Only for power-of-two sets of
/// at most 64 ways, where the set is a mask of the key.
#[derive(Clone, Copy)]
pub struct Lookup<'a> {
    /// Fingerprints from set 0's first.
    prints: &'a [u32],
    tags: &'a [u64],
    set_mask: u64,
    stride: usize,
    ways: usize,
    way_mask: u64,
    /// Set-index bits when fingerprints are exact (`u32::MAX`: hashed).
    exact_shift: u32,
}

impl<'a> Lookup<'a> {
    /// The slot holding `key`, whose set is `key & (sets - 1)`.
    #[inline(always)]
    pub fn find(&self, key: u64) -> Option<Slot> {
        self.find_in::<0>(key)
    }

    /// Fingerprints per set (ways rounded up to four).
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// [`Lookup::find`] with the fingerprints per set known when compiling
    /// (`STRIDE`, which must be [`Lookup::stride`]; 0 for any): the set's
    /// comparisons become straight-line code without a dispatch.
    #[inline(always)]
    pub fn find_in<const STRIDE: usize>(&self, key: u64) -> Option<Slot> {
        debug_assert!(STRIDE == 0 || STRIDE == self.stride);
        let stride = if STRIDE == 0 { self.stride } else { STRIDE };
        let set = (key & self.set_mask) as usize;
        let base = set * stride;
        let print = if self.exact_shift != u32::MAX {
            (key >> self.exact_shift) as u32
        } else {
            (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32
        };
        // SAFETY: `set_mask` is `sets - 1` and `prints` holds `sets * stride`
        // fingerprints from set 0's (see `TagArray::lookup`), so the set's
        // `stride` fingerprints are in bounds.
        let mut candidates = unsafe { match_prints(self.prints.as_ptr().add(base), stride, print) } & self.way_mask;
        if self.exact_shift != u32::MAX {
            return (candidates != 0).then(|| Slot { set, way: candidates.trailing_zeros() as usize });
        }
        while candidates != 0 {
            let way = candidates.trailing_zeros() as usize;
            if self.tags[set * self.ways + way] == key {
                return Some(Slot { set, way });
            }
            candidates &= candidates - 1;
        }
        None
    }
}

impl TagArray {
    /// The array's search for a run of lookups, if its geometry allows one
    /// (power-of-two sets, at most 64 ways).
    pub fn lookup(&self) -> Option<Lookup<'_>> {
        (self.sets.is_power_of_two() && self.stride <= 64).then(|| Lookup {
            prints: &self.prints[self.origin..],
            tags: &self.tags,
            set_mask: self.sets as u64 - 1,
            stride: self.stride,
            ways: self.ways,
            way_mask: self.way_mask,
            exact_shift: self.exact.unwrap_or(u32::MAX),
        })
    }
}

/// Bit `w` set for every `w` with `set[w] == p`, as a lookup compares a
/// set's fingerprints; `set` holds a multiple of four, at most 64.
#[inline(always)]
pub fn matches(set: &[u32], p: u32) -> u64 {
    assert!(set.len().is_multiple_of(4) && set.len() <= 64, "a set of 4, 8, ... 64 fingerprints");
    // SAFETY: `set` holds `set.len()` readable u32s, a multiple of four up to 64.
    unsafe { match_prints(set.as_ptr(), set.len(), p) }
}

/// Bit `w` set for every `w < stride` with `prints[w] == p`.
///
/// # Safety
/// `prints` must point to `stride` readable u32s; `stride` is a multiple of
/// four and at most 64.
#[inline(always)]
unsafe fn match_prints(prints: *const u32, stride: usize, p: u32) -> u64 {
    debug_assert!(stride.is_multiple_of(4) && stride <= 64);
    // The common associativities get straight-line code; others loop.
    match stride {
        4 => match4(prints, p),
        8 => match4(prints, p) | match4(prints.add(4), p) << 4,
        16 => {
            match4(prints, p)
                | match4(prints.add(4), p) << 4
                | match4(prints.add(8), p) << 8
                | match4(prints.add(12), p) << 12
        }
        _ => (0..stride / 4).fold(0, |m, i| m | match4(prints.add(4 * i), p) << (4 * i)),
    }
}

/// Bits 0-3 set where the four u32s at `prints` equal `p`.
///
/// # Safety
/// `prints` must point to four readable u32s.
#[inline(always)]
unsafe fn match4(prints: *const u32, p: u32) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SSE2 is part of the x86-64 baseline.
        use std::arch::x86_64::{_mm_castsi128_ps, _mm_cmpeq_epi32, _mm_loadu_si128, _mm_movemask_ps, _mm_set1_epi32};
        let v = _mm_loadu_si128(prints.cast());
        _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(v, _mm_set1_epi32(p as i32)))) as u64
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        (0..4).fold(0, |m, i| m | ((*prints.add(i) == p) as u64) << i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn matches_marks_the_equal_fingerprints(quads in 1usize..17, prints in proptest::collection::vec(0u32..4, 64), p in 0u32..4) {
            let set = &prints[..4 * quads];
            let expected = set.iter().enumerate().filter(|&(_, &x)| x == p).fold(0u64, |m, (w, _)| m | 1 << w);
            prop_assert_eq!(matches(set, p), expected);
        }

        #[test]
        fn find_agrees_with_a_linear_scan(
            ways in 1usize..20, keys in proptest::collection::vec(0u64..40, 0..60), probes in proptest::collection::vec(0u64..40, 1..40),
            exact in any::<bool>(),
        ) {
            // Keys below 40 fit 6 bits: exact fingerprints; 64 bits: hashed.
            let mut t = TagArray::new(2, ways, if exact { 6 } else { 64 }, "k").unwrap();
            let mut model: Vec<Option<u64>> = vec![None; 2 * ways];
            for (i, &k) in keys.iter().enumerate() {
                let set = (k % 2) as usize;
                let way = i % ways;
                // Keep keys unique within a set, as caches do.
                if model[set * ways..(set + 1) * ways].contains(&Some(k)) {
                    continue;
                }
                t.set(Slot { set, way }, k);
                model[set * ways + way] = Some(k);
            }
            for &k in &probes {
                let set = (k % 2) as usize;
                let want = model[set * ways..(set + 1) * ways].iter().position(|&m| m == Some(k));
                prop_assert_eq!(t.find(set, k).map(|s| s.way), want);
            }
        }
    }

    #[test]
    fn keys_differing_only_in_high_bits_are_told_apart() {
        let mut t = TagArray::new(1, 8, 64, "k").unwrap();
        t.set(Slot { set: 0, way: 3 }, (1 << 52) | 7);
        assert_eq!(t.find(0, 7), None);
        assert_eq!(t.find(0, (1 << 52) | 7), Some(Slot { set: 0, way: 3 }));
        assert_eq!(t.first_invalid(0), Some(0));
        for way in 0..8 {
            t.set(Slot { set: 0, way }, 100 + way as u64);
        }
        assert_eq!(t.first_invalid(0), None, "full");
        t.set(Slot { set: 0, way: 5 }, INVALID);
        assert_eq!(t.first_invalid(0), Some(5), "an invalidation makes room again");
    }

    #[test]
    fn fully_associative_arrays_of_many_ways() {
        let mut t = TagArray::new(1, 512, 64, "k").unwrap();
        for w in 0..512 {
            t.set(Slot { set: 0, way: w }, 1000 + w as u64);
        }
        assert_eq!(t.find(0, 1000 + 300), Some(Slot { set: 0, way: 300 }));
        assert_eq!(t.find(0, 5), None);
        assert_eq!(t.first_invalid(0), None);
    }
}
