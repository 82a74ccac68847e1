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

/// A set of line (or page) numbers, stored as a bitmap in chunks of 4096.
///
/// Used to tell compulsory misses (first reference of a line by a cache) from
/// the others; memory is one bit per line ever touched.
#[derive(Default, Clone)]
pub struct SeenSet {
    chunks: FxHashMap<u64, Box<[u64; 64]>>,
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
        let chunk = self
            .chunks
            .entry(key >> 12)
            .or_insert_with(|| Box::new([0; 64]));
        let (word, bit) = (((key >> 6) & 63) as usize, key & 63);
        let fresh = chunk[word] & (1 << bit) == 0;
        chunk[word] |= 1 << bit;
        self.len += fresh as u64;
        fresh
    }

    /// Whether `key` was recorded.
    pub fn contains(&self, key: u64) -> bool {
        self.chunks
            .get(&(key >> 12))
            .is_some_and(|c| c[((key >> 6) & 63) as usize] & (1 << (key & 63)) != 0)
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
            let key = rng.below(1 << 20) * if rng.chance(0.5) { 1 } else { 1 << 30 };
            assert_eq!(ours.insert(key), reference.insert(key));
        }
        assert_eq!(ours.len(), reference.len() as u64);
        assert!(reference.iter().all(|&k| ours.contains(k)));
        assert!(!ours.contains(u64::MAX));
    }
}
