//! Small helpers shared by several layers.

pub mod hash;
pub mod perm;
pub mod rng;
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
