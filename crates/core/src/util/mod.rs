//! Small helpers shared by several layers.

pub mod alloc;
pub mod hash;
pub mod perm;
pub mod rng;
pub mod staged;
pub mod varint;

/// Hint the host CPU to bring the host cache lines of `n` values from `p`
/// closer (the first and the last: a row of a set is at most two lines).
#[inline(always)]
pub fn prefetch_row<T>(p: *const T, n: usize) {
    prefetch(p);
    prefetch(p.wrapping_add(n.saturating_sub(1)));
}

/// Hint the host CPU to bring the cache line at `p` closer; a no-op where
/// the architecture has no such hint. Never faults, whatever `p`.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it reads nothing and never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The index of the smallest value, the first one on ties (0 if empty):
/// the LRU victim of a set from its stamps, on every eviction. Sets of
/// 4 to 64 ways in multiples of four are compared four at a time with SSE2
/// (part of every x86-64 CPU): a 16-way set in about 40 instructions
/// instead of a compare and two moves per way.
#[inline]
pub fn argmin(keys: &[u32]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if keys.len().is_multiple_of(4) && (4..=64).contains(&keys.len()) {
        // SAFETY: the length is a multiple of four between 4 and 64, as `argmin4` needs.
        return unsafe { argmin4(keys) };
    }
    keys.iter().enumerate().fold((0, u32::MAX), |best, (i, &k)| if k < best.1 { (i, k) } else { best }).0
}

/// [`argmin`] four lanes at a time.
///
/// # Safety
/// `keys.len()` must be a multiple of four between 4 and 64.
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn argmin4(keys: &[u32]) -> usize {
    use std::arch::x86_64::*;
    // SSE2 compares signed lanes: flipping the top bit orders unsigned
    // values the same way.
    let bias = _mm_set1_epi32(i32::MIN);
    let quad = |i: usize| _mm_xor_si128(_mm_loadu_si128(keys.as_ptr().add(4 * i).cast()), bias);
    let min = |a: __m128i, b: __m128i| {
        let greater = _mm_cmpgt_epi32(a, b);
        _mm_or_si128(_mm_and_si128(greater, b), _mm_andnot_si128(greater, a))
    };
    let quads = keys.len() / 4;
    let mut m = quad(0);
    for i in 1..quads {
        m = min(m, quad(i));
    }
    // Every lane to the minimum of the four.
    m = min(m, _mm_shuffle_epi32(m, 0b01_00_11_10));
    m = min(m, _mm_shuffle_epi32(m, 0b10_11_00_01));
    let mut at = 0u64;
    for i in 0..quads {
        at |= (_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(quad(i), m))) as u64) << (4 * i);
    }
    at.trailing_zeros() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argmin_finds_the_first_smallest_value() {
        let mut rng = rng::Rng::from_seed(11);
        for len in 0..=68 {
            for _ in 0..200 {
                // Few distinct values (ties), values across the top bit.
                let keys: Vec<u32> = (0..len)
                    .map(|_| if rng.chance(0.5) { rng.below(4) as u32 } else { u32::MAX - rng.below(4) as u32 })
                    .collect();
                let want = (0..len).min_by_key(|&i| (keys[i], i)).unwrap_or(0);
                assert_eq!(argmin(&keys), want, "{keys:?}");
            }
        }
    }
}
