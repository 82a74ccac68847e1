//! Quantities with units in configs: `size_bytes = "32KiB"`, `quantum = "2.5ms"`.
//!
//! Users think in KiB and milliseconds; the core works in bytes, cycles and
//! instructions. These types accept either a bare number or a string with a
//! unit; sizes serialise back to the plain number, spans to their text.

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The largest direct cost of a switch or a migration (`run.switch_cycles`,
/// `run.migration_cycles`, a mechanism's costs): about 6 minutes at 3 GHz.
pub const MAX_COST_CYCLES: u64 = 1 << 40;

/// 2^64 as a float: the first size that does not fit in a `u64` (`u64::MAX
/// as f64` rounds up to it, so `>` against that would let it through).
const TWO_TO_64: f64 = 18_446_744_073_709_551_616.0;

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
        if bytes >= TWO_TO_64 {
            return Err(format!("'{text}' is 2^64 bytes or more; sizes must be below 2^64"));
        }
        if bytes.fract() != 0.0 || bytes < 0.0 {
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
                // Integers past u64 arrive as floats: refused, not saturated.
                if v >= TWO_TO_64 {
                    Err(E::custom(format!("a size must be below 2^64 bytes, got {v}")))
                } else if v >= 0.0 && v.fract() == 0.0 {
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

/// A span of simulated time or work: cycles (`4000000`, `"4M cycles"`), a
/// time converted with the machine's frequency (`"2.5ms"`, `"100us"`,
/// `"20ns"`, `"1s"`), or retired instructions (`"1M instr"`,
/// `"500K instructions"`). Numbers may carry a `K`, `M` or `G` multiplier
/// (powers of ten) before `cycles` or `instr`. Zero is allowed here; each
/// user says whether it accepts it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    value: f64,
    unit: SpanUnit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SpanUnit {
    Cycles,
    Instructions,
    Seconds,
    Millis,
    Micros,
    Nanos,
}

/// A span resolved against the clock: what a quantum or period counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Budget {
    /// Core cycles.
    Cycles(u64),
    /// Retired instructions.
    Instructions(u64),
}

impl Budget {
    /// The amount, whatever it counts.
    pub fn amount(self) -> u64 {
        match self {
            Budget::Cycles(n) | Budget::Instructions(n) => n,
        }
    }
}

impl Span {
    /// A span of `n` cycles.
    pub fn cycles(n: u64) -> Span {
        Span { value: n as f64, unit: SpanUnit::Cycles }
    }

    /// A span of `n` instructions.
    pub fn instructions(n: u64) -> Span {
        Span { value: n as f64, unit: SpanUnit::Instructions }
    }

    /// A span of `ms` milliseconds.
    pub fn millis(ms: f64) -> Span {
        Span { value: ms, unit: SpanUnit::Millis }
    }

    /// A span of `us` microseconds.
    pub fn micros(us: f64) -> Span {
        Span { value: us, unit: SpanUnit::Micros }
    }

    /// Parse the text forms listed on [`Span`].
    pub fn parse(text: &str) -> Result<Span, String> {
        let t = text.trim();
        let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(t.len());
        let value: f64 = t[..split]
            .replace('_', "")
            .parse()
            .map_err(|_| format!("cannot read '{text}' as a time span (e.g. \"2.5ms\", 10000 cycles, \"1M instr\")"))?;
        let mut unit = t[split..].trim();
        let mut scale = 1.0;
        for (prefix, s) in [("K", 1e3), ("M", 1e6), ("G", 1e9)] {
            if let Some(rest) = unit.strip_prefix(prefix).map(str::trim_start) {
                if rest.starts_with("cycle") || rest.starts_with("instr") {
                    (unit, scale) = (rest, s);
                }
            }
        }
        let unit = match unit {
            "" | "cycle" | "cycles" => SpanUnit::Cycles,
            "instr" | "instrs" | "instruction" | "instructions" => SpanUnit::Instructions,
            "s" => SpanUnit::Seconds,
            "ms" => SpanUnit::Millis,
            "us" | "µs" => SpanUnit::Micros,
            "ns" => SpanUnit::Nanos,
            other => {
                return Err(format!("unknown time unit '{other}' in '{text}' (use s, ms, us, ns, cycles or instr)"))
            }
        };
        let value = value * scale;
        if !value.is_finite() {
            return Err(format!("'{text}' is not a finite time span"));
        }
        Ok(Span { value, unit })
    }

    /// Cycles or instructions, converting times at `frequency_ghz`
    /// (rounded to the nearest cycle).
    pub fn resolve(self, frequency_ghz: f64) -> Budget {
        let seconds = match self.unit {
            SpanUnit::Cycles => return Budget::Cycles(self.value.round() as u64),
            SpanUnit::Instructions => return Budget::Instructions(self.value.round() as u64),
            SpanUnit::Seconds => 1.0,
            SpanUnit::Millis => 1e-3,
            SpanUnit::Micros => 1e-6,
            SpanUnit::Nanos => 1e-9,
        };
        Budget::Cycles((self.value * seconds * frequency_ghz * 1e9).round() as u64)
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.unit {
            SpanUnit::Cycles => " cycles",
            SpanUnit::Instructions => " instr",
            SpanUnit::Seconds => "s",
            SpanUnit::Millis => "ms",
            SpanUnit::Micros => "us",
            SpanUnit::Nanos => "ns",
        };
        write!(f, "{}{unit}", self.value)
    }
}

impl Serialize for Span {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.unit {
            SpanUnit::Cycles if self.value.fract() == 0.0 => s.serialize_u64(self.value as u64),
            _ => s.serialize_str(&self.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for Span {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Span;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a time span: cycles, or a string such as \"2.5ms\" or \"1M instr\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Span, E> {
                Ok(Span::cycles(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Span, E> {
                u64::try_from(v)
                    .map(Span::cycles)
                    .map_err(|_| E::custom(format!("a time span cannot be negative, got {v}")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Span, E> {
                Span::parse(v).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_parse_and_resolve() {
        let at = |t: &str| Span::parse(t).unwrap().resolve(4.0);
        assert_eq!(at("2.5ms"), Budget::Cycles(10_000_000), "the ETS quantum: 2.5 ms at 4 GHz");
        assert_eq!(at("100us"), Budget::Cycles(400_000));
        assert_eq!(at("20 ns"), Budget::Cycles(80));
        assert_eq!(at("1s"), Budget::Cycles(4_000_000_000));
        assert_eq!(at("5000"), Budget::Cycles(5000));
        assert_eq!(at("4M cycles"), Budget::Cycles(4_000_000));
        assert_eq!(at("1M instr"), Budget::Instructions(1_000_000));
        assert_eq!(at("500K instructions"), Budget::Instructions(500_000));
        assert_eq!(at("2_000 instr"), Budget::Instructions(2000));
        assert!(Span::parse("3 fortnights").unwrap_err().contains("unknown time unit"));
        assert!(Span::parse("ms").is_err());
    }

    #[test]
    fn spans_round_trip_through_their_text() {
        for text in ["2.5ms", "100us", "1000000 instr", "7 cycles", "3s"] {
            let span = Span::parse(text).unwrap();
            assert_eq!(Span::parse(&span.to_string()).unwrap(), span, "{text}");
        }
        assert_eq!(serde_json::to_value(Span::cycles(42)).unwrap(), serde_json::json!(42));
        assert_eq!(serde_json::to_value(Span::parse("1M instr").unwrap()).unwrap(), serde_json::json!("1000000 instr"));
    }

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
    fn sizes_of_2_to_the_64_and_more_are_refused_not_saturated() {
        assert!(ByteSize::parse("16777216TiB").unwrap_err().contains("2^64"));
        assert!(ByteSize::parse("18446744073709551616").unwrap_err().contains("2^64"));
        assert_eq!(ByteSize::parse("16777215TiB"), Ok(ByteSize(16_777_215 << 40)));
        // JSON integers past u64 arrive as floats.
        for text in ["18446744073709551616", "18446744073709551680", "1e30"] {
            let err = serde_json::from_str::<ByteSize>(text).unwrap_err().to_string();
            assert!(err.contains("below 2^64"), "{text}: {err}");
        }
        assert_eq!(serde_json::from_str::<ByteSize>("18446744073709551615").unwrap(), ByteSize(u64::MAX));
    }
}
