//! Small helpers shared by several layers.

pub mod rng;
pub mod varint;
