//! The configuration schema: one owner, in Rust.
//!
//! Python merges TOML files, dicts and keyword arguments into one JSON
//! document and hands it over; everything is parsed here with
//! `deny_unknown_fields` and `serde_path_to_error`, so errors name the exact
//! key path, and then validated semantically, collecting every problem.

pub mod plugin;
pub mod units;

pub use plugin::{parse_at, PluginConfig};
pub use units::{ByteSize, Resolved, Span};
