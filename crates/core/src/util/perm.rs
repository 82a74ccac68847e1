//! Seeded bijections of `[0, n)`.
//!
//! Used wherever something must be scattered without repeats and without an
//! O(n) table: physical frames handed out in random order, hot Zipf ranks
//! spread over cache sets, a pointer chase's visiting order.

use super::rng::{mix64, Rng};

/// A pseudo-random permutation of `[0, n)`: a 4-round Feistel network over
/// the smallest even number of bits that covers `n`, with cycle-walking to
/// stay inside the range (at most 4 network passes are expected per call).
#[derive(Debug, Clone)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    /// A permutation of `[0, n)` drawn from `rng` (`n >= 1`).
    pub fn new(n: u64, rng: &mut Rng) -> Permutation {
        let bits = 64 - (n.max(2) - 1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        Permutation { n, half_bits, keys: [rng.next_u64(), rng.next_u64(), rng.next_u64(), rng.next_u64()] }
    }

    /// Size of the domain.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// True for the permutation of the empty range (never built by `new`).
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    #[inline]
    fn network(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut left, mut right) = (x >> self.half_bits, x & mask);
        for key in self.keys {
            let next = left ^ (mix64(right ^ key) & mask);
            left = right;
            right = next;
        }
        (left << self.half_bits) | right
    }

    /// The image of `x < n`.
    #[inline]
    pub fn apply(&self, x: u64) -> u64 {
        debug_assert!(x < self.n);
        let mut y = self.network(x);
        while y >= self.n {
            y = self.network(y);
        }
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_a_bijection_for_many_sizes() {
        let mut rng = Rng::from_seed(9);
        for n in [1u64, 2, 3, 7, 64, 100, 1000, 4097] {
            let p = Permutation::new(n, &mut rng);
            let mut seen = vec![false; n as usize];
            for x in 0..n {
                let y = p.apply(x);
                assert!(y < n && !seen[y as usize], "n={n} x={x} y={y}");
                seen[y as usize] = true;
            }
        }
    }

    #[test]
    fn scatters_neighbours() {
        let p = Permutation::new(1 << 20, &mut Rng::from_seed(1));
        let moved_far = (0..1000u64).filter(|&x| p.apply(x).abs_diff(p.apply(x + 1)) > 1000).count();
        assert!(moved_far > 900, "{moved_far}");
    }
}
