//! Quantities with units in configs: `size_bytes = "32KiB"`.
//!
//! Users think in KiB and MiB; the core works in bytes. These types accept
//! either a bare number or a string with a unit, and serialise back to the
//! plain number.

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A size in bytes, written as `32768`, `"32KiB"`, `"1 MiB"`, `"2GiB"` or `"64B"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteSize(pub u64);

impl ByteSize {
    /// Parse `"<number>[ ]<unit>"` with binary (KiB, MiB, GiB, TiB; also K, M, G,
    /// KB, MB, GB, which mean the same powers of two) or no unit (bytes).
    pub fn parse(text: &str) -> Result<ByteSize, String> {
        let t = text.trim();
        let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(t.len());
        let (number, unit) = (t[..split].replace('_', ""), t[split..].trim());
        let value: f64 = number.parse().map_err(|_| format!("cannot read '{text}' as a size (e.g. \"32KiB\")"))?;
        let scale: u64 = match unit.to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" | "kib" => 1 << 10,
            "m" | "mb" | "mib" => 1 << 20,
            "g" | "gb" | "gib" => 1 << 30,
            "t" | "tb" | "tib" => 1 << 40,
            _ => return Err(format!("unknown size unit '{unit}' in '{text}' (use B, KiB, MiB, GiB or TiB)")),
        };
        let bytes = value * scale as f64;
        if bytes.fract() != 0.0 || bytes < 0.0 || bytes > u64::MAX as f64 {
            return Err(format!("'{text}' is not a whole number of bytes"));
        }
        Ok(ByteSize(bytes as u64))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (unit, shift) in [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)] {
            if b >= 1 << shift && b.is_multiple_of(1 << shift) {
                return write!(f, "{}{unit}", b >> shift);
            }
        }
        write!(f, "{b}B")
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size in bytes: a number or a string such as \"32KiB\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ByteSize, E> {
                Ok(ByteSize(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ByteSize, E> {
                u64::try_from(v).map(ByteSize).map_err(|_| E::custom(format!("a size cannot be negative, got {v}")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ByteSize, E> {
                if v >= 0.0 && v.fract() == 0.0 {
                    Ok(ByteSize(v as u64))
                } else {
                    Err(E::custom(format!("a size must be a whole number of bytes, got {v}")))
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ByteSize, E> {
                ByteSize::parse(v).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_and_without_units() {
        assert_eq!(ByteSize::parse("32KiB"), Ok(ByteSize(32 * 1024)));
        assert_eq!(ByteSize::parse("1 MiB"), Ok(ByteSize(1 << 20)));
        assert_eq!(ByteSize::parse("1.5MiB"), Ok(ByteSize(3 << 19)));
        assert_eq!(ByteSize::parse("64"), Ok(ByteSize(64)));
        assert_eq!(ByteSize::parse("8M"), Ok(ByteSize(8 << 20)));
        assert!(ByteSize::parse("12 parsecs").unwrap_err().contains("unknown size unit"));
        assert!(ByteSize::parse("0.3B").is_err());
        assert_eq!(ByteSize(1536 << 10).to_string(), "1536KiB");
        assert_eq!(ByteSize(8 << 20).to_string(), "8MiB");
    }
}
