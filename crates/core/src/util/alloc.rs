//! Allocations whose size comes from the user, made so that a failure is an
//! error naming the key that asked for it, not an abort of the process.
//!
//! `vec![x; n]` aborts when the allocator says no. Configurations are
//! checked against the host's memory before anything is built
//! (`config::footprint`), so these failures are rare: another process took
//! the memory meanwhile, or the allocator refused a size that looked fine.

use std::alloc::{self, Layout};

use crate::error::{Error, Result};

/// Types whose all-zero bit pattern is a valid value (`0`, `false`), so
/// that zeroed memory straight from the allocator is a vector of them.
///
/// # Safety
/// Every bit of every value may be zero.
pub unsafe trait Zero: Copy {}

// SAFETY: integers and bool have all-zero values (0, false).
unsafe impl Zero for u8 {}
// SAFETY: as above.
unsafe impl Zero for u16 {}
// SAFETY: as above.
unsafe impl Zero for u32 {}
// SAFETY: as above.
unsafe impl Zero for u64 {}
// SAFETY: as above.
unsafe impl Zero for bool {}

/// The error of an allocation of `n` values of `T` for `what`, asked for by
/// the key `loc`.
fn refused<T>(n: usize, what: &str, loc: &str) -> Error {
    let bytes = (n as u128) * std::mem::size_of::<T>() as u128;
    Error::config(loc, "too_large", format!("the host would not give the {} bytes of {what}: reduce this value", bytes))
}

/// `n` zeros: memory the allocator hands out zeroed, mapped only as it is
/// touched (a large shadow that a run uses little costs little).
pub fn zeroed<T: Zero>(n: usize, what: &str, loc: &str) -> Result<Vec<T>> {
    if n == 0 || std::mem::size_of::<T>() == 0 {
        return Ok(Vec::new());
    }
    let layout = Layout::array::<T>(n).map_err(|_| refused::<T>(n, what, loc))?;
    // SAFETY: the layout has a non-zero size (n > 0, T not zero-sized).
    let ptr = unsafe { alloc::alloc_zeroed(layout) } as *mut T;
    if ptr.is_null() {
        return Err(refused::<T>(n, what, loc));
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout
    // of `n` values of `T`, all initialised (zero is a valid `T`: `Zero`).
    Ok(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

/// `n` copies of `value`.
pub fn filled<T: Clone>(n: usize, value: T, what: &str, loc: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| refused::<T>(n, what, loc))?;
    v.resize(n, value);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_vectors_are_what_vec_gives() {
        assert_eq!(zeroed::<u32>(5, "x", "k").unwrap(), vec![0u32; 5]);
        assert_eq!(zeroed::<bool>(3, "x", "k").unwrap(), vec![false; 3]);
        assert!(zeroed::<u64>(0, "x", "k").unwrap().is_empty());
        assert_eq!(filled(4, 7u16, "x", "k").unwrap(), vec![7u16; 4]);
        let mut v = zeroed::<u64>(1000, "x", "k").unwrap();
        v.push(1); // a normal vector: it grows and frees as any other
        assert_eq!(v.len(), 1001);
    }

    #[test]
    fn a_size_the_host_cannot_give_is_an_error_naming_the_key() {
        for e in [
            zeroed::<u64>(usize::MAX / 4, "tags", "machine.llc.size_bytes").unwrap_err(),
            zeroed::<u64>(1 << 60, "tags", "machine.llc.size_bytes").unwrap_err(),
            filled(1 << 60, 3u32, "tags", "machine.llc.size_bytes").unwrap_err(),
        ] {
            match e {
                Error::Config(issues) => {
                    assert_eq!((issues[0].loc.as_str(), issues[0].code), ("machine.llc.size_bytes", "too_large"));
                    assert!(issues[0].message.contains("bytes of tags"), "{}", issues[0].message);
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
