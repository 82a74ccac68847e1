//! The memory hierarchy: caches, replacement policies, TLBs, page tables and
//! the machine that wires them together.

pub mod cache;
pub mod machine;
pub mod page_table;
pub mod prefetch;
pub mod replacement;
pub mod tags;
pub mod tlb;
