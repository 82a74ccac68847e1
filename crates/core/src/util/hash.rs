//! Maps and sets of 64-bit keys for the miss path.
//!
//! Page tables and first-touch sets are keyed by page or line numbers and
//! consulted on TLB and cache misses. A flat open-addressed table of
//! (key, value) pairs finds a key with one multiply and usually one probe,
//! several times faster than `std`'s `HashMap` with SipHash, and nothing here
//! is ever iterated in an order that reaches the output.

/// The key that marks an empty slot (never a valid key).
pub const EMPTY: u64 = u64::MAX;

/// A map from `u64` keys (anything but [`EMPTY`]) to `u64` values, with
/// linear probing, kept at most three quarters full: probes stay short
/// (four entries share a host cache line), and a smaller table keeps more
/// of itself in the host's caches, which pays more than the extra probes.
///
/// A key and its value share one 16-byte entry: the tables outgrow the host
/// caches (a scheduling run's first-touch sets hold millions of pages), and a
/// lookup then costs one host cache miss instead of one for the key and
/// another for the value.
#[derive(Clone)]
pub struct U64Map {
    entries: Vec<Entry>,
    len: usize,
    /// 64 - log2(entries.len()): a key's home slot is the top bits of its product.
    shift: u32,
}

/// One slot of a [`U64Map`].
#[derive(Clone, Copy)]
struct Entry {
    key: u64,
    value: u64,
}

const VACANT: Entry = Entry { key: EMPTY, value: 0 };

impl Default for U64Map {
    fn default() -> Self {
        U64Map { entries: vec![VACANT; 1024], len: 0, shift: 64 - 10 }
    }
}

impl std::fmt::Debug for U64Map {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("U64Map").field("len", &self.len).finish()
    }
}

impl U64Map {
    /// Where `key`'s probe starts.
    #[inline(always)]
    fn home(&self, key: u64) -> usize {
        // Fibonacci hashing: the top bits of the product depend on every bit
        // of the key. (Middle bits do not depend on the key's top bits, such
        // as a page key's asid: 64 address spaces' copies of one page would
        // share a home slot.)
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// The slot holding `key`, or the empty slot where it would go.
    #[inline(always)]
    fn slot(&self, key: u64) -> usize {
        let mask = self.entries.len() - 1;
        let mut i = self.home(key);
        while self.entries[i].key != key && self.entries[i].key != EMPTY {
            i = (i + 1) & mask;
        }
        i
    }

    fn grow(&mut self) {
        let size = self.entries.len() * 2;
        let entries = std::mem::replace(&mut self.entries, vec![VACANT; size]);
        self.shift -= 1;
        for e in entries {
            if e.key != EMPTY {
                let i = self.slot(e.key);
                self.entries[i] = e;
            }
        }
    }

    /// Ask the host to bring `key`'s home slot closer.
    #[inline(always)]
    pub fn prefetch(&self, key: u64) {
        crate::util::prefetch(self.entries.as_ptr().wrapping_add(self.home(key)));
    }

    /// The value of `key`, if present.
    #[inline]
    pub fn get(&self, key: u64) -> Option<u64> {
        debug_assert!(key != EMPTY);
        let e = self.entries[self.slot(key)];
        (e.key == key).then_some(e.value)
    }

    /// A mutable reference to the value of `key`, inserting `default` first
    /// if the key is absent.
    #[inline]
    pub fn entry(&mut self, key: u64, default: u64) -> &mut u64 {
        debug_assert!(key != EMPTY);
        let mut i = self.slot(key);
        if self.entries[i].key == EMPTY {
            if (self.len + 1) * 4 > self.entries.len() * 3 {
                self.grow();
                i = self.slot(key);
            }
            self.entries[i] = Entry { key, value: default };
            self.len += 1;
        }
        &mut self.entries[i].value
    }

    /// Set the value of `key`.
    pub fn insert(&mut self, key: u64, value: u64) {
        *self.entry(key, value) = value;
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no key was inserted.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A set of line numbers, one bit per line, grouped by 64 (a 4 KiB page of
/// 64 B lines) in a [`U64Map`] from group to bits.
///
/// Used to tell compulsory misses (first reference of a line by a cache) from
/// the others. It is consulted on every miss: one probe into a flat table.
#[derive(Clone, Default)]
pub struct SeenSet {
    groups: U64Map,
    len: u64,
}

impl std::fmt::Debug for SeenSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeenSet").field("len", &self.len).finish()
    }
}

impl SeenSet {
    /// Record `key`; true if it was not in the set before.
    #[inline]
    pub fn insert(&mut self, key: u64) -> bool {
        // `key >> 6` is never EMPTY (u64::MAX), whatever the key.
        let bits = self.groups.entry(key >> 6, 0);
        let bit = 1u64 << (key & 63);
        let fresh = *bits & bit == 0;
        *bits |= bit;
        self.len += fresh as u64;
        fresh
    }

    /// Ask the host to bring the group of `key` closer.
    #[inline(always)]
    pub fn prefetch(&self, key: u64) {
        self.groups.prefetch(key >> 6);
    }

    /// Whether `key` was recorded.
    pub fn contains(&self, key: u64) -> bool {
        self.groups.get(key >> 6).is_some_and(|bits| bits & (1 << (key & 63)) != 0)
    }

    /// Number of distinct keys recorded.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    #[test]
    fn keys_differing_in_their_top_bits_spread() {
        // One page in 64 address spaces: page-table keys differ only above bit 52.
        let map = U64Map::default();
        let homes: HashSet<usize> = (0..64u64).map(|asid| map.home(asid << 52 | 0x1234)).collect();
        assert!(homes.len() >= 48, "{} distinct home slots of 64", homes.len());
    }

    #[test]
    fn map_agrees_with_std() {
        let mut rng = crate::util::rng::Rng::from_seed(7);
        let mut ours = U64Map::default();
        let mut reference = HashMap::new();
        for _ in 0..50_000 {
            // Clustered and scattered keys, many repeats, growth past 1024.
            let key = if rng.chance(0.5) { rng.below(3000) } else { rng.next_u64() >> 1 };
            let value = rng.next_u64();
            if rng.chance(0.3) {
                assert_eq!(ours.get(key), reference.get(&key).copied());
            } else {
                ours.insert(key, value);
                reference.insert(key, value);
            }
        }
        assert_eq!(ours.len(), reference.len());
        assert!(reference.iter().all(|(&k, &v)| ours.get(k) == Some(v)));
    }

    #[test]
    fn seen_set_agrees_with_a_hash_set() {
        let mut rng = crate::util::rng::Rng::from_seed(3);
        let mut ours = SeenSet::default();
        let mut reference = HashSet::new();
        for _ in 0..20_000 {
            let key = rng.below(1 << 20) * if rng.chance(0.5) { 1 } else { 1 << 30 } + rng.below(2);
            assert_eq!(ours.insert(key), reference.insert(key));
        }
        assert_eq!(ours.len(), reference.len() as u64);
        assert!(reference.iter().all(|&k| ours.contains(k)));
        assert!(!ours.contains(u64::MAX - 1));
        assert!(ours.insert(u64::MAX), "the largest key is storable");
    }
}
