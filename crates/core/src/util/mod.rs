//! Small helpers shared by several layers.

pub mod hash;
pub mod perm;
pub mod rng;
pub mod varint;
