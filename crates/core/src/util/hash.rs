//! Fast hashing for integer keys on the miss path.
//!
//! Page tables and first-touch sets are keyed by page or line numbers; the
//! standard SipHash is needlessly slow for them, and we never iterate these
//! maps in an order that reaches the output.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The Fx hash (from rustc): one multiply per word.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }

    #[inline]
    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }

    #[inline]
    fn write_u32(&mut self, word: u32) {
        self.write_u64(word as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashMap` with the Fx hash.
pub type FxHashMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// A set of line numbers, one bit per line, grouped by 64 (a 4 KiB page of
/// 64 B lines) in an open-addressed table.
///
/// Used to tell compulsory misses (first reference of a line by a cache) from
/// the others. It is consulted on every miss, so a lookup is one probe into
/// a flat array of (group, bits) pairs: one host cache miss at most.
#[derive(Clone)]
pub struct SeenSet {
    keys: Vec<u64>,
    bits: Vec<u64>,
    groups: usize,
    len: u64,
}

const EMPTY: u64 = u64::MAX;

impl Default for SeenSet {
    fn default() -> Self {
        SeenSet { keys: vec![EMPTY; 1024], bits: vec![0; 1024], groups: 0, len: 0 }
    }
}

impl std::fmt::Debug for SeenSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeenSet").field("len", &self.len).finish()
    }
}

impl SeenSet {
    #[inline(always)]
    fn slot(&self, group: u64) -> usize {
        let mask = self.keys.len() - 1;
        let mut i = (group.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) as usize & mask;
        while self.keys[i] != group && self.keys[i] != EMPTY {
            i = (i + 1) & mask;
        }
        i
    }

    fn grow(&mut self) {
        let size = self.keys.len() * 2;
        let old_keys = std::mem::replace(&mut self.keys, vec![EMPTY; size]);
        let old_bits = std::mem::replace(&mut self.bits, vec![0; size]);
        for (k, b) in old_keys.into_iter().zip(old_bits) {
            if k != EMPTY {
                let i = self.slot(k);
                self.keys[i] = k;
                self.bits[i] = b;
            }
        }
    }

    /// Record `key`; true if it was not in the set before.
    #[inline]
    pub fn insert(&mut self, key: u64) -> bool {
        // Keys are line numbers: u64::MAX >> 6 can never be a group.
        let group = key >> 6;
        let mut i = self.slot(group);
        if self.keys[i] == EMPTY {
            if (self.groups + 1) * 2 > self.keys.len() {
                self.grow();
                i = self.slot(group);
            }
            self.keys[i] = group;
            self.groups += 1;
        }
        let bit = 1u64 << (key & 63);
        let fresh = self.bits[i] & bit == 0;
        self.bits[i] |= bit;
        self.len += fresh as u64;
        fresh
    }

    /// Whether `key` was recorded.
    pub fn contains(&self, key: u64) -> bool {
        let i = self.slot(key >> 6);
        self.keys[i] == key >> 6 && self.bits[i] & (1 << (key & 63)) != 0
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
    use std::collections::HashSet;

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
    }
}
