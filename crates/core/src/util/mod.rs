//! Small helpers shared by several layers.

pub mod rng;
