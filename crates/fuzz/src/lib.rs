//! Fuzzing of everything in cachesched that reads a user's input: the trace
//! readers (lackey, din, ChampSim, `.cst`, and the recogniser with gzip and
//! xz in front of them) and the configuration parser.
//!
//! A [`Target`] takes bytes and says what became of them: accepted, or
//! rejected with an error that says where (a file position, a key path).
//! Anything else is a finding: a panic, an error that does not say where, a
//! stream that does not end. Two drivers feed the targets:
//!
//! - `cachesched-fuzz` (this crate's binary, [`campaign`]): a seeded
//!   mutation fuzzer over the seed inputs in `crates/fuzz/seeds`, guided by
//!   the outcomes it has not seen yet; it runs on the stable toolchain, and
//!   a short run is part of the test suite;
//! - `crates/fuzz/libfuzzer`: the same targets under libFuzzer, guided by
//!   coverage, for hosts with a nightly toolchain and `cargo fuzz`.
//!
//! Inputs that ever found a bug are kept in `crates/fuzz/regressions` and
//! replayed by the tests.

pub mod campaign;
pub mod memory;
pub mod mutate;
pub mod targets;

pub use targets::{check, Finding, Target, Verdict, TARGETS};
