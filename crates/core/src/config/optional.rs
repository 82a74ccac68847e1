//! Optional tables that can be switched off with `false`.
//!
//! TOML has no null, so a level that a preset defines (`[machine.llc]`) is
//! removed by writing `llc = false`. Python's `None` works too.

use serde::de::{self, value::MapAccessDeserializer, Deserialize, Deserializer, MapAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;

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
