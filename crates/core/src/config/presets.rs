//! Machine presets: the configurations of the source documents and a few
//! reference machines, shipped inside the library.
//!
//! Each preset is a TOML file in `crates/core/presets/` with a description,
//! where its numbers come from, and a `[machine]` table. A config names one
//! with `machine.preset` and overrides any key.

use serde_json::Value;

use crate::error::{Error, Result};

/// The preset a config gets when it names none.
pub const DEFAULT: &str = "standard";

macro_rules! presets {
    ($($name:literal),+ $(,)?) => {
        /// Names of the shipped presets.
        pub const NAMES: &[&str] = &[$($name),+];

        /// The TOML text of a preset.
        pub fn text(name: &str) -> Option<&'static str> {
            match name {
                $($name => Some(include_str!(concat!("../../presets/", $name, ".toml"))),)+
                _ => None,
            }
        }
    };
}

presets!(
    "standard",
    "teaching",
    "server-2s",
    "migration-tlb",
    "migration-l2",
    "migration-prefetch",
    "ets",
    "numa-sunfire6800",
    "numa-sunfire15k",
    "numa-xeon-2s",
    "numa-xeon-4s",
    "region-clovertown",
    "region-westmere",
    "region-rome",
    "locking-cl1",
);

fn parse(name: &str) -> Result<Value> {
    let text = text(name).ok_or_else(|| {
        Error::config(
            "machine.preset",
            "unknown_preset",
            format!("unknown preset '{name}'; expected one of: {}", NAMES.join(", ")),
        )
    })?;
    toml::from_str(text).map_err(|e| Error::config("machine.preset", "invalid_preset", format!("preset '{name}': {e}")))
}

/// The `[machine]` table of a preset, as JSON.
pub fn machine(name: &str) -> Result<Value> {
    Ok(parse(name)?.get("machine").cloned().unwrap_or(Value::Null))
}

/// (name, description, source) of every preset.
pub fn describe() -> Vec<(&'static str, String, String)> {
    NAMES
        .iter()
        .map(|&name| {
            let v = parse(name).expect("shipped presets parse");
            let field = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
            (name, field("description"), field("source"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_has_a_description_and_a_source() {
        for (name, description, source) in describe() {
            assert!(!description.is_empty() && !source.is_empty(), "{name}");
        }
    }
}
