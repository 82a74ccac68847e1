//! cachesched-core: a fast functional simulator of what operating-system and
//! hypervisor scheduling does to caches, TLBs and NUMA memory.
//!
//! The crate knows nothing of Python; `crates/py` wraps it. See
//! `docs/architecture.md` for the layers and the names used here.

pub mod cl1lock;
pub mod config;
pub mod counters;
pub mod engine;
pub mod error;
pub mod events;
pub mod floor;
pub mod hcache;
pub mod mech;
pub mod mem;
pub mod plugin;
pub mod results;
pub mod sched;
pub mod thinprov;
pub mod trace;
pub mod types;
pub mod units;
pub mod util;

pub use error::{Error, Result};
pub use types::{Access, AccessKind, Asid, CoreId, Cycle, LineAddr, PhysAddr, TaskId, VirtAddr};
