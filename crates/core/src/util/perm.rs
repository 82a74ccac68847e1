//! A seeded bijection of `[0, n)` in O(1) memory.
//!
//! Generators need to scatter things without tables: zipf maps popularity
//! ranks to elements so that the hot elements land in different cache sets
//! instead of one contiguous run; chase visits elements in a random order that
//! is still a single cycle; the data pcs are spread over the code region. A
//! shuffled table would do all of that but costs `8 n` bytes per generator
//! (gigabytes for a large working set). A keyed Feistel network over the next
//! power of two, restricted to `[0, n)` by cycle walking, gives a permutation
//! of any `n` with a few multiplications per call and a few words of state.

use crate::util::rng::Rng;

/// Feistel rounds. Four rounds of a keyed multiplicative round function mix
/// every input bit into every output bit; it is a scatterer for simulated
/// addresses, not a cipher.
const ROUNDS: usize = 4;

/// A seeded permutation of `[0, n)`.
///
/// The network works on `b = ceil(log2 n)` bits, split into a high part of
/// `b / 2` bits and a low part of `b - b / 2` bits (unbalanced when `b` is
/// odd; the split alternates each round so that an even number of rounds ends
/// in the starting layout). Values `>= n` are sent through the network again
/// (cycle walking), which restricts a permutation of `[0, 2^b)` to one of
/// `[0, n)`; since `2^b < 2 n`, fewer than two passes are needed on average.
#[derive(Debug, Clone)]
pub struct Permutation {
    n: u64,
    /// Width of the high part in even rounds (the low part has `wide` bits).
    narrow: u32,
    /// Width of the low part in even rounds.
    wide: u32,
    keys: [u64; ROUNDS],
    mults: [u64; ROUNDS],
}

#[inline(always)]
fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

impl Permutation {
    /// A permutation of `[0, n)` keyed by the next draws of `rng`. `n = 0` is
    /// accepted and gives the empty permutation (`apply` is never valid then).
    pub fn new(n: u64, rng: &mut Rng) -> Permutation {
        let bits = if n <= 1 { 0 } else { 64 - (n - 1).leading_zeros() };
        let mut keys = [0u64; ROUNDS];
        let mut mults = [0u64; ROUNDS];
        for r in 0..ROUNDS {
            keys[r] = rng.next_u64();
            mults[r] = rng.next_u64() | 1;
        }
        Permutation { n, narrow: bits / 2, wide: bits - bits / 2, keys, mults }
    }

    /// Size of the domain.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// True for the permutation of the empty set.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The image of `x` in `[0, n)`. Inputs of `n` or more are first reduced
    /// modulo `n` (cycle walking from outside the domain might never return
    /// to it); the empty permutation returns `x` unchanged.
    #[inline]
    pub fn apply(&self, x: u64) -> u64 {
        let x = if x < self.n {
            x
        } else if self.n == 0 {
            return x;
        } else {
            x % self.n
        };
        let mut y = self.network(x);
        // Cycle walking: the orbit of x under the network returns to x, which
        // is < n, so this terminates; each extra pass has probability < 1/2.
        while y >= self.n {
            y = self.network(y);
        }
        y
    }

    /// One pass of the Feistel network over `[0, 2^b)`.
    #[inline(always)]
    fn network(&self, mut x: u64) -> u64 {
        for r in 0..ROUNDS {
            let (hi_bits, lo_bits) = if r % 2 == 0 { (self.narrow, self.wide) } else { (self.wide, self.narrow) };
            let lo = x & mask(lo_bits);
            let hi = x >> lo_bits;
            // Keyed round function of the low part, hi_bits wide: the top
            // bits of a 64-bit product depend on every input bit.
            let f = if hi_bits == 0 { 0 } else { (lo ^ self.keys[r]).wrapping_mul(self.mults[r]) >> (64 - hi_bits) };
            // New layout: the old low part on top, the mixed old high part below.
            x = (lo << hi_bits) | (hi ^ f);
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_permutation(n: u64, seed: u64) -> bool {
        let p = Permutation::new(n, &mut Rng::from_seed(seed));
        let mut seen = vec![false; n as usize];
        for x in 0..n {
            let y = p.apply(x);
            if y >= n || seen[y as usize] {
                return false;
            }
            seen[y as usize] = true;
        }
        true
    }

    #[test]
    fn is_a_permutation_for_every_small_n() {
        for n in 1..=300u64 {
            for seed in 0..3 {
                assert!(is_permutation(n, seed), "n = {n}, seed = {seed}");
            }
        }
        // Powers of two and their neighbours, where the split changes.
        for n in [511u64, 512, 513, 1023, 1024, 1025, 4095, 4096, 65_537] {
            assert!(is_permutation(n, 9), "n = {n}");
        }
    }

    #[test]
    fn different_keys_give_different_orders() {
        let n = 1000;
        let a = Permutation::new(n, &mut Rng::from_seed(1));
        let b = Permutation::new(n, &mut Rng::from_seed(2));
        let same = (0..n).filter(|&x| a.apply(x) == b.apply(x)).count();
        // Two independent random permutations agree in about one place.
        assert!(same < 10, "{same} fixed points in common");
    }

    #[test]
    fn scatters_consecutive_inputs() {
        // Consecutive inputs should not map to consecutive outputs: count how
        // often |p(x+1) - p(x)| == 1; a random permutation gives about 2.
        let n = 1 << 16;
        let p = Permutation::new(n, &mut Rng::from_seed(5));
        let adjacent = (0..n - 1).filter(|&x| p.apply(x).abs_diff(p.apply(x + 1)) == 1).count();
        assert!(adjacent < 20, "{adjacent} adjacent pairs");
        // And the low bits (cache-set index) of the first 64 outputs are spread.
        let mut sets = [0u32; 64];
        for x in 0..64 {
            sets[(p.apply(x) % 64) as usize] += 1;
        }
        assert!(sets.iter().all(|&c| c <= 6), "{sets:?}");
    }

    #[test]
    fn huge_domains_do_not_overflow() {
        let p = Permutation::new(u64::MAX, &mut Rng::from_seed(3));
        for x in [0, 1, u64::MAX / 2, u64::MAX - 1] {
            assert!(p.apply(x) < u64::MAX);
        }
        let one = Permutation::new(1, &mut Rng::from_seed(3));
        assert_eq!(one.apply(0), 0);
        // Out-of-domain inputs are reduced, not walked forever.
        assert_eq!(one.apply(1), 0);
        let p = Permutation::new(10, &mut Rng::from_seed(3));
        assert_eq!(p.apply(13), p.apply(3));
        assert_eq!(p.apply(u64::MAX), p.apply(u64::MAX % 10));
    }
}
