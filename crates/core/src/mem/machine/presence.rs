//! The snoop filter: which caches may hold a line, so that a snoop probes
//! those instead of every cache off the requester's paths.
//!
//! Lines fall into buckets by their low bits; each bucket keeps a bit per
//! cache. A fill sets the bit of its cache; a snoop that probes a cache and
//! finds no line of the bucket there clears it. Evictions and invalidations
//! leave their bits (clearing them would need a hook on every path by which
//! a line leaves a cache): a set bit may be stale and costs one probe, a
//! clear bit is never wrong. A bit can be cleared only for a cache whose set
//! is the line's low bits and which has no more sets than there are buckets
//! (every line of a bucket is then in one set, which the probe scans); other
//! caches keep their bits once set.

use super::Cache;
use crate::types::LineAddr;

/// Buckets per line of the largest cache: with 4, a cache's lines set at
/// most a quarter of its bits, so a snoop seldom probes a cache in vain.
const BUCKETS_PER_LINE: u64 = 4;

/// The table's bytes at most (a larger machine gets fewer buckets per line).
const MAX_BYTES: u64 = 16 << 20;

/// Per bucket of lines, the caches that may hold one.
#[derive(Debug)]
pub(super) struct Presence {
    /// Buckets minus one (a mask of the line number).
    mask: u64,
    /// 64-bit words per bucket (one bit per cache).
    words: usize,
    bits: Vec<u64>,
    /// Caches whose bits a probe may clear, as one bucket's words.
    clears: Vec<u64>,
}

impl Presence {
    /// A filter over `caches`, seeded with the lines they hold now.
    pub(super) fn new(caches: &[Cache]) -> Presence {
        let words = caches.len().div_ceil(64).max(1);
        let lines = caches.iter().map(|c| (c.sets() * c.ways()) as u64).max().unwrap_or(1);
        let most = 1u64 << (MAX_BYTES / (8 * words as u64)).max(1).ilog2();
        let buckets = (lines * BUCKETS_PER_LINE).next_power_of_two().min(most).max(64);
        let mask = buckets - 1;
        let mut clears = vec![0u64; words];
        for (i, c) in caches.iter().enumerate() {
            if c.sets().is_power_of_two() && c.sets() as u64 <= mask + 1 {
                clears[i / 64] |= 1 << (i % 64);
            }
        }
        let mut p = Presence { mask, words, bits: vec![0; (mask as usize + 1) * words], clears };
        for (i, c) in caches.iter().enumerate() {
            for line in c.lines() {
                p.fill(i, line);
            }
        }
        p
    }

    /// Words per bucket (of a mask of caches).
    pub(super) fn words(&self) -> usize {
        self.words
    }

    /// Cache `c` received `line`.
    #[inline]
    pub(super) fn fill(&mut self, c: usize, line: LineAddr) {
        let at = (line.0 & self.mask) as usize * self.words + c / 64;
        self.bits[at] |= 1 << (c % 64);
    }

    /// Ask the host to bring `line`'s bucket into its caches.
    #[inline]
    pub(super) fn prefetch(&self, line: LineAddr) {
        let at = (line.0 & self.mask) as usize * self.words;
        crate::util::prefetch_row(self.bits.as_ptr().wrapping_add(at), self.words);
    }

    /// Probe for `line` the caches of `among` (a mask of `words` words)
    /// that may hold it: `probe(cache)` looks (and may invalidate) and
    /// returns whether the cache holds the line afterwards. A cache that
    /// does not, and holds no other line of the bucket, loses its bit.
    /// With `kin` (per cache, a mask of `words` words), a cache found
    /// holding the line narrows the probes left to its kin.
    #[inline]
    pub(super) fn snoop(
        &mut self,
        caches: &mut [Cache],
        among: &[u64],
        kin: Option<&[u64]>,
        line: LineAddr,
        mut probe: impl FnMut(usize, &mut Cache) -> bool,
    ) {
        let words = self.words;
        let base = (line.0 & self.mask) as usize * words;
        // First have the host fetch every candidate's set, so that their
        // host cache misses overlap.
        for (w, &among) in among.iter().enumerate() {
            let mut m = self.bits[base + w] & among;
            while m != 0 {
                caches[w * 64 + m.trailing_zeros() as usize].prefetch_tags(line);
                m &= m - 1;
            }
        }
        let mut found = None;
        for (w, &among) in among.iter().enumerate() {
            let mut m = self.bits[base + w] & among;
            if let (Some(kin), Some(f)) = (kin, found) {
                m &= kin[f * words + w];
            }
            while m != 0 {
                let bit = m & m.wrapping_neg();
                m ^= bit;
                let c = w * 64 + bit.trailing_zeros() as usize;
                let cache = &mut caches[c];
                if probe(c, cache) {
                    if let Some(kin) = kin {
                        m &= kin[c * words + w];
                        found.get_or_insert(c);
                    }
                } else if self.clears[w] & bit != 0 && !cache.holds_bucket(line, self.mask) {
                    self.bits[base + w] &= !bit;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::cache::{CacheParams, Filled, Req};
    use crate::mem::replacement::ReqKind;
    use crate::plugin::PluginConfig;
    use crate::types::{TaskId, VirtAddr};
    use crate::units::ByteSize;
    use proptest::prelude::*;

    /// A cache of hashed fingerprints (with full tags) ...
    fn cache(sets: u64, ways: u32) -> Cache {
        cache_of(sets, ways, 64)
    }

    /// ... or, for line numbers below `2^line_bits` small enough, exact ones.
    fn cache_of(sets: u64, ways: u32, line_bits: u32) -> Cache {
        let p = CacheParams {
            size_bytes: ByteSize(sets * ways as u64 * 64),
            ways,
            replacement: PluginConfig::named("lru"),
            ..CacheParams::default()
        };
        Cache::new(&p, line_bits, 1, "test", "machine.l1d").unwrap()
    }

    fn has_bit(p: &Presence, c: usize, line: LineAddr) -> bool {
        p.bits[(line.0 & p.mask) as usize * p.words + c / 64] & 1 << (c % 64) != 0
    }

    proptest! {
        /// Whatever fills, silent invalidations and snoops happen, a cache
        /// holding a line has its bit, and a snoop probes every cache of
        /// those asked that holds the line. Lines collide in few buckets
        /// (they differ above the bucket bits); caches have a power of two
        /// of sets, one set among them (bits cleared), or three (bits
        /// kept), with hashed or exact fingerprints.
        #[test]
        fn a_clear_bit_is_never_wrong(seed in 0u64..1000) {
            let mut rng = crate::util::rng::Rng::from_seed(seed);
            let mut caches = vec![cache(4, 2), cache(3, 2), cache(1, 4), cache(8, 1), cache_of(4, 2, 20)];
            let mut p = Presence::new(&caches);
            let req = Req { kind: ReqKind::Load, pc: VirtAddr(0), task: TaskId(0) };
            for _ in 0..400 {
                let line = LineAddr(rng.below(8) | rng.below(4) << 16);
                let c = rng.below(caches.len() as u64) as usize;
                match rng.below(3) {
                    0 => {
                        if caches[c].find(line).is_none() {
                            if let Filled::Placed(_) = caches[c].fill(line, false, &req) {
                                p.fill(c, line);
                            }
                        }
                    }
                    1 => {
                        if let Some(slot) = caches[c].find(line) {
                            caches[c].invalidate(slot);
                        }
                    }
                    _ => {
                        let among = [rng.below(32)];
                        let invalidate = rng.chance(0.5);
                        let holders: Vec<usize> = (0..caches.len())
                            .filter(|&i| among[0] >> i & 1 == 1 && caches[i].contains(line))
                            .collect();
                        let mut probed = Vec::new();
                        p.snoop(&mut caches, &among, None, line, |i, cache| {
                            probed.push(i);
                            match cache.find(line) {
                                Some(slot) if invalidate => {
                                    cache.invalidate(slot);
                                    false
                                }
                                found => found.is_some(),
                            }
                        });
                        prop_assert!(holders.iter().all(|h| probed.contains(h)), "{holders:?} not all in {probed:?}");
                    }
                }
                for (i, cache) in caches.iter().enumerate() {
                    for l in cache.lines() {
                        prop_assert!(has_bit(&p, i, l), "cache {i} holds {l:?} without its bit");
                    }
                }
            }
        }
    }

    #[test]
    fn a_probe_that_finds_the_bucket_empty_clears_the_bit() {
        let mut caches = vec![cache(4, 2)];
        let mut p = Presence::new(&caches);
        let req = Req { kind: ReqKind::Load, pc: VirtAddr(0), task: TaskId(0) };
        let (a, b) = (LineAddr(5), LineAddr(5 | 1 << 16));
        for line in [a, b] {
            caches[0].fill(line, false, &req);
            p.fill(0, line);
        }
        let slot = caches[0].find(a).unwrap();
        caches[0].invalidate(slot);
        // `b` shares the bucket: the bit stays.
        p.snoop(&mut caches, &[1], None, a, |_, c| c.contains(a));
        assert!(has_bit(&p, 0, a));
        let slot = caches[0].find(b).unwrap();
        caches[0].invalidate(slot);
        p.snoop(&mut caches, &[1], None, a, |_, c| c.contains(a));
        assert!(!has_bit(&p, 0, a));
        let mut probes = 0;
        p.snoop(&mut caches, &[1], None, b, |_, _| {
            probes += 1;
            false
        });
        assert_eq!(probes, 0, "a clear bit spares the probe");
    }

    #[test]
    fn a_cache_found_holding_the_line_narrows_the_probes_to_its_kin() {
        // 70 caches (two words of bits), all holding the line; cache 0's
        // kin is {0, 1, 66}, every other cache's kin is every cache.
        let mut caches: Vec<Cache> = (0..70).map(|_| cache(1, 2)).collect();
        let req = Req { kind: ReqKind::Load, pc: VirtAddr(0), task: TaskId(0) };
        let line = LineAddr(3);
        for c in &mut caches {
            c.fill(line, false, &req);
        }
        let mut p = Presence::new(&caches);
        let mut kin = vec![!0u64; 70 * 2];
        kin[..2].copy_from_slice(&[0b11, 1 << 2]);
        let mut probe = |kin: Option<&[u64]>| {
            let mut probed = Vec::new();
            p.snoop(&mut caches, &[!0, !0], kin, line, |c, _| {
                probed.push(c);
                true
            });
            probed
        };
        assert_eq!(probe(Some(&kin)), [0, 1, 66]);
        assert_eq!(probe(None), (0..70).collect::<Vec<_>>());
    }
}
