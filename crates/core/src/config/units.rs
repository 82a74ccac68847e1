//! Quantities with units in configs: `size_bytes = "32KiB"`, `quantum = "2.5ms"`.
//!
//! Users think in KiB and milliseconds; the core works in bytes and cycles.
//! These types accept either a bare number (bytes, or cycles) or a string with
//! a unit, and serialise back to the plain number.

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

/// A span of simulated time: a number of cycles, or a string with a unit:
/// `"2.5ms"`, `"100us"`, `"10ns"`, `"4000000cycles"`, `"1M instructions"`
/// (the latter counts retired instructions instead of cycles).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Span {
    /// Plain cycles.
    Cycles(u64),
    /// Text with a unit; resolved by [`Span::resolve`].
    Text(SpanText),
}

/// The parsed form of a textual span.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpanText {
    /// Magnitude in the unit below.
    pub value: f64,
    /// The unit.
    pub unit: SpanUnit,
}

/// Units a span may be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanUnit {
    Seconds,
    Cycles,
    Instructions,
}

/// A span resolved against a clock frequency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Resolved {
    /// Measured in core cycles.
    Cycles(u64),
    /// Measured in retired instructions.
    Instructions(u64),
}

impl Span {
    /// Convert to cycles or instructions at `frequency_ghz`.
    pub fn resolve(self, frequency_ghz: f64) -> Resolved {
        match self {
            Span::Cycles(c) => Resolved::Cycles(c),
            Span::Text(SpanText { value, unit: SpanUnit::Seconds }) => {
                Resolved::Cycles((value * frequency_ghz * 1e9).round() as u64)
            }
            Span::Text(SpanText { value, unit: SpanUnit::Cycles }) => Resolved::Cycles(value.round() as u64),
            Span::Text(SpanText { value, unit: SpanUnit::Instructions }) => {
                Resolved::Instructions(value.round() as u64)
            }
        }
    }
}

impl SpanText {
    /// Parse `"<number>[ ][K|M|G]<unit>"`.
    pub fn parse(text: &str) -> Result<SpanText, String> {
        let t = text.trim();
        let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(t.len());
        let number: f64 = t[..split]
            .replace('_', "")
            .parse()
            .map_err(|_| format!("cannot read '{text}' as a time span (e.g. \"2.5ms\", \"1M instructions\")"))?;
        let mut unit = t[split..].trim();
        let mut scale = 1.0;
        for (prefix, s) in [("K ", 1e3), ("M ", 1e6), ("G ", 1e9), ("K", 1e3), ("M", 1e6), ("G", 1e9)] {
            let rest = unit.strip_prefix(prefix);
            if let Some(rest) = rest.filter(|r| r.starts_with("cyc") || r.starts_with("ins")) {
                unit = rest.trim();
                scale = s;
                break;
            }
        }
        let (unit, seconds) = match unit {
            "s" | "sec" => (SpanUnit::Seconds, 1.0),
            "ms" => (SpanUnit::Seconds, 1e-3),
            "us" | "µs" => (SpanUnit::Seconds, 1e-6),
            "ns" => (SpanUnit::Seconds, 1e-9),
            "" | "cycle" | "cycles" => (SpanUnit::Cycles, 1.0),
            "instruction" | "instructions" | "instr" | "insn" => (SpanUnit::Instructions, 1.0),
            other => {
                return Err(format!(
                    "unknown time unit '{other}' in '{text}' (use s, ms, us, ns, cycles or instructions)"
                ))
            }
        };
        let value = number * scale * seconds;
        if !value.is_finite() || value <= 0.0 {
            return Err(format!("a time span must be positive, got '{text}'"));
        }
        Ok(SpanText { value, unit })
    }
}

impl Serialize for SpanText {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let unit = match self.unit {
            SpanUnit::Seconds => "s",
            SpanUnit::Cycles => "cycles",
            SpanUnit::Instructions => "instructions",
        };
        s.serialize_str(&format!("{}{}", self.value, if unit == "s" { "s" } else { unit }))
    }
}

impl<'de> Deserialize<'de> for SpanText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        SpanText::parse(&s).map_err(de::Error::custom)
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

    #[test]
    fn spans_resolve_with_the_clock() {
        let ms = Span::Text(SpanText::parse("2.5ms").unwrap());
        assert_eq!(ms.resolve(4.0), Resolved::Cycles(10_000_000));
        let ins = Span::Text(SpanText::parse("1M instructions").unwrap());
        assert_eq!(ins.resolve(4.0), Resolved::Instructions(1_000_000));
        assert_eq!(Span::Text(SpanText::parse("3Mcycles").unwrap()).resolve(1.0), Resolved::Cycles(3_000_000));
        assert_eq!(Span::Cycles(42).resolve(3.0), Resolved::Cycles(42));
        assert!(SpanText::parse("5 fortnights").is_err());
        assert!(SpanText::parse("-1ms").is_err());
    }
}
