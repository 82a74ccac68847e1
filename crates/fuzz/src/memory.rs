//! A global allocator that watches each thread's live bytes, for the
//! drivers to install (`#[global_allocator]`): a fuzz input that makes the
//! code take more host memory than the configuration's check allowed is a
//! finding, and no input may take the host down.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// No thread may hold more: an allocation past it fails (Rust then aborts
/// the process with an allocation error) rather than wake the kernel's OOM
/// killer on a shared machine.
pub const HARD_LIMIT: u64 = 4 << 30;

thread_local! {
    static LIVE: Cell<u64> = const { Cell::new(0) };
    static PEAK: Cell<u64> = const { Cell::new(0) };
}

/// The watching allocator: the system's, with per-thread counts.
pub struct Watched;

fn grow(bytes: u64) -> bool {
    LIVE.try_with(|live| {
        let now = live.get() + bytes;
        if now > HARD_LIMIT {
            return false;
        }
        live.set(now);
        PEAK.with(|peak| peak.set(peak.get().max(now)));
        true
    })
    .unwrap_or(true)
}

fn shrink(bytes: u64) {
    // A block freed by another thread than the one that took it: saturate.
    let _ = LIVE.try_with(|live| live.set(live.get().saturating_sub(bytes)));
}

// SAFETY: every call is passed on to the system allocator unchanged, or
// refused with a null pointer as `GlobalAlloc` allows.
unsafe impl GlobalAlloc for Watched {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if grow(layout.size() as u64) {
            System.alloc(layout)
        } else {
            std::ptr::null_mut()
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if grow(layout.size() as u64) {
            System.alloc_zeroed(layout)
        } else {
            std::ptr::null_mut()
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        shrink(layout.size() as u64);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = layout.size() as u64;
        let new = new_size as u64;
        if new > old && !grow(new - old) {
            return std::ptr::null_mut();
        }
        let p = System.realloc(ptr, layout, new_size);
        if new < old {
            shrink(old - new);
        } else if p.is_null() {
            shrink(new - old);
        }
        p
    }
}

/// Start a new measure on this thread: its live bytes now, from which
/// [`peak`] counts.
pub fn start() -> u64 {
    let now = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(now));
    now
}

/// The most bytes this thread held since [`start`] returned `base`, above
/// `base` (0 without the allocator installed).
pub fn peak(base: u64) -> u64 {
    PEAK.with(Cell::get).saturating_sub(base)
}
