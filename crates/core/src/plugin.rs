//! Tagged plug-in configs: `{ kind = "...", params = { ... } }`.
//!
//! A plug-in family (replacement policies, workloads, schedulers, ...) is
//! parsed in two steps. The outer document is parsed with the raw
//! [`PluginConfig`] (kind name plus untyped params) so that serde tracks key
//! paths; then [`register!`](crate::register) turns the raw form into the
//! family's typed enum, parsing `params` with the typed struct of that kind
//! and prefixing every error with the plug-in's location. This gives errors
//! like `machine.l2.replacement.params.seed: invalid type: ...` and
//! `workload.kind: unknown workload 'zipff'; expected one of: ...`.
//!
//! Also [`optional`]: tables that a configuration may switch off with `false`.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, value::MapAccessDeserializer, DeserializeOwned, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::error::{join_path, Error, Result};

/// A plug-in selection before its params are typed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginConfig {
    /// Registered name of the implementation.
    pub kind: String,
    /// The implementation's parameters; missing means all defaults.
    #[serde(default)]
    pub params: serde_json::Value,
}

impl PluginConfig {
    /// A selection of `kind` with default params.
    pub fn named(kind: &str) -> PluginConfig {
        PluginConfig { kind: kind.to_string(), params: serde_json::Value::Null }
    }
}

/// Parse a JSON value into `T`, reporting the key path under `loc`.
pub fn parse_at<T: DeserializeOwned>(value: &serde_json::Value, loc: &str) -> Result<T> {
    let value = if value.is_null() { serde_json::Value::Object(Default::default()) } else { value.clone() };
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = render(e.path());
        let message = e.into_inner().to_string();
        let mut at = join_path(loc, &path);
        // serde reports a missing field at the table that lacks it; point at the field.
        if let Some(field) = message.strip_prefix("missing field `").and_then(|m| m.split('`').next()) {
            at = join_path(&at, field);
        }
        Error::config(at, serde_code(&message), message)
    })
}

/// A key path as configs write it: `machine.l2.ways`, `tasks[0].asid`; a
/// key that is empty or holds a dot, a blank or a quote is quoted
/// (`machine."".x`), so that every key has a visible place.
fn render(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        let key = match segment {
            Segment::Seq { index } => {
                out.push_str(&format!("[{index}]"));
                continue;
            }
            Segment::Map { key } | Segment::Enum { variant: key } => key.as_str(),
            Segment::Unknown => "?",
        };
        if !out.is_empty() {
            out.push('.');
        }
        if key.is_empty() || key.contains(['.', ' ', '"', '[', ']']) {
            out.push_str(&serde_json::Value::from(key).to_string());
        } else {
            out.push_str(key);
        }
    }
    out
}

/// A stable code for the common serde failures, for tests and tooling.
fn serde_code(message: &str) -> &'static str {
    if message.starts_with("unknown field") {
        "unknown_field"
    } else if message.starts_with("missing field") {
        "missing_field"
    } else if message.starts_with("invalid type") {
        "invalid_type"
    } else if message.starts_with("unknown variant") {
        "unknown_variant"
    } else {
        "invalid_value"
    }
}

// ---------------------------------------------------------------------------
// Optional tables that can be switched off with `false`: TOML has no null,
// so a level a preset defines (`[machine.llc]`) is removed by `llc = false`
// (Python's `None` works too).

/// `deserialize_with` helper: a table gives `Some`, `false` or null gives `None`.
pub fn optional<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct V<T>(PhantomData<T>);

    impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
        type Value = Option<T>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a table, or false to leave it out")
        }

        fn visit_bool<E: de::Error>(self, on: bool) -> Result<Self::Value, E> {
            if on {
                Err(E::custom("`true` is not a table: give the table, or false to leave it out"))
            } else {
                Ok(None)
            }
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            T::deserialize(MapAccessDeserializer::new(map)).map(Some)
        }
    }

    d.deserialize_any(V(PhantomData))
}

/// Declares a plug-in family: the typed config enum, its parser from a
/// [`PluginConfig`], the list of registered names, and one dispatching
/// constructor taking one context argument, optionally followed by one
/// dispatching `&mut self` method (a family whose params type nested
/// plug-ins when the config is read). Each params type implements them as
/// methods of the same signatures (inherent, or of a trait in scope).
///
/// ```ignore
/// register! {
///     /// Synthetic workload generators.
///     family "workload", SyntheticConfig,
///     fn build(&self, seed: u64) -> Result<Box<dyn Workload>>;
///     "stream" => Stream(StreamParams),
///     "zipf" => Zipf(ZipfParams),
/// }
/// ```
#[macro_export]
macro_rules! register {
    (
        $(#[$doc:meta])*
        family $family:literal, $enum:ident,
        fn $build:ident(&self, $arg:ident : $argty:ty) -> $ret:ty;
        $(fn $update:ident(&mut self, $uarg:ident : $uargty:ty) -> $uret:ty;)?
        $($name:literal => $variant:ident($params:ty)),+ $(,)?
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq)]
        pub enum $enum {
            $(
                #[doc = concat!("`kind = \"", $name, "\"`")]
                $variant($params)
            ),+
        }

        impl $enum {
            /// Registered names, in registration order.
            pub const NAMES: &'static [&'static str] = &[$($name),+];

            /// Type the params of a raw selection found at `loc`.
            pub fn parse(raw: &$crate::plugin::PluginConfig, loc: &str) -> $crate::error::Result<Self> {
                let params_loc = $crate::error::join_path(loc, "params");
                match raw.kind.as_str() {
                    $($name => Ok($enum::$variant($crate::plugin::parse_at(&raw.params, &params_loc)?)),)+
                    other => Err($crate::error::Error::config(
                        $crate::error::join_path(loc, "kind"),
                        "unknown_kind",
                        format!("unknown {} '{}'; expected one of: {}", $family, other, Self::NAMES.join(", ")),
                    )),
                }
            }

            /// The registered name of this selection.
            pub fn kind(&self) -> &'static str {
                match self { $($enum::$variant(_) => $name),+ }
            }

            /// Back to the raw form, with every default filled in.
            pub fn to_raw(&self) -> $crate::plugin::PluginConfig {
                let params = match self {
                    $($enum::$variant(p) => serde_json::to_value(p).expect("params serialise to JSON")),+
                };
                $crate::plugin::PluginConfig { kind: self.kind().to_string(), params }
            }

            /// Construct the implementation.
            pub fn $build(&self, $arg: $argty) -> $ret {
                match self { $($enum::$variant(p) => p.$build($arg)),+ }
            }
        }

        $crate::register!(@update [$($update, $uarg, $uargty, $uret)?] $enum, $($variant),+);
    };
    (@update [] $enum:ident, $($variant:ident),+) => {};
    (@update [$update:ident, $uarg:ident, $uargty:ty, $uret:ty] $enum:ident, $($variant:ident),+) => {
        impl $enum {
            /// Dispatch to the selected params.
            pub fn $update(&mut self, $uarg: $uargty) -> $uret {
                match self { $($enum::$variant(p) => p.$update($uarg)),+ }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SimConfig;
    use serde_json::json;

    fn loc(value: serde_json::Value) -> String {
        match parse_at::<SimConfig>(&value, "") {
            Err(Error::Config(issues)) => issues[0].loc.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_key_of_a_path_has_a_visible_place() {
        assert_eq!(loc(json!({"machine": {"l2": {"wayz": 8}}})), "machine.l2.wayz");
        assert_eq!(loc(json!({"tasks": [{"asid": "x"}]})), "tasks[0].asid");
        // Found by fuzzing: an empty key named nothing at all.
        assert_eq!(loc(json!({"": {"o": 1}})), "\"\"");
        assert_eq!(loc(json!({"machine": {"": 1}})), "machine.\"\"");
        assert_eq!(loc(json!({"machine": {"l2.ways": 1}})), "machine.\"l2.ways\"");
    }
}
