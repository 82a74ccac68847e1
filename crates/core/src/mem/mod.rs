//! The memory hierarchy: caches, replacement policies, TLBs, page tables and
//! the machine that wires them together, with the probes that watch it as
//! it runs: the attribution shadows, the notebook of misses they and the
//! first-touch sets learn from, and the sampled tag directory (ATD).

pub mod atd;
pub mod attribution;
pub mod blocklru;
pub mod cache;
pub mod machine;
pub mod notes;
pub mod page_table;
pub mod partition;
pub mod prefetch;
pub mod provisioning;
pub mod replacement;
pub mod tags;
pub mod tlb;
