//! Variable-length integers (LEB128 and prefix varints) and zigzag mapping.
//!
//! Trace formats store most numbers as small deltas; a varint spends one byte
//! per 7 bits of magnitude so a delta below 128 costs a single byte, and
//! zigzag folds signed deltas onto unsigned ones so that small negative values
//! stay small. Two layouts are provided: LEB128 (a continuation bit in every
//! byte; the common interchange layout) and the *prefix varint* (the length
//! in the low bits of the first byte), which the `.cst` trace format uses
//! because it decodes without a branch per byte: about ten instructions for
//! any length, where LEB128 needs several times that on multi-byte values.
//!
//! The decoders take untrusted bytes: they never read past the slice, never
//! panic, and reject encodings that overflow 64 bits, returning `None`
//! instead so the caller can attach a file position to the error.

/// Largest number of bytes a `u64` takes in LEB128.
pub const MAX_LEN_U64: usize = 10;

/// Map a signed integer onto an unsigned one so that values near zero (of
/// either sign) get small codes: 0, -1, 1, -2, 2, ... become 0, 1, 2, 3, 4, ...
#[inline(always)]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[inline(always)]
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Number of bytes [`write_u64`] uses for `v`.
#[inline]
pub fn len_u64(v: u64) -> usize {
    // 1 byte for 0..=127, then one more byte per 7 further bits.
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Append the LEB128 encoding of `v` to `out` (low 7-bit group first, high
/// bit of each byte set when more bytes follow).
#[inline]
pub fn write_u64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Append the LEB128 encoding of `zigzag(v)` to `out`.
#[inline]
pub fn write_i64(out: &mut Vec<u8>, v: i64) {
    write_u64(out, zigzag(v));
}

/// Decode one LEB128 `u64` from `buf` at `*pos`, advancing `*pos` past it.
///
/// Returns `None` (leaving `*pos` unspecified) if the encoding runs past the
/// end of `buf` or does not fit in 64 bits (more than 10 bytes, or a 10th
/// byte above 1). Non-minimal encodings (e.g. `0x80 0x00` for 0) are accepted.
#[inline(always)]
pub fn read_u64(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let p = *pos;
    if let Some(&[b0, b1, b2, b3, b4, b5, b6, b7]) = buf.get(p..p.wrapping_add(8)) {
        // Fast path for encodings of up to 8 bytes with 8 bytes readable:
        // find the terminating byte from the continuation bits and gather
        // the 7-bit groups without a data-dependent branch per byte.
        let x = u64::from_le_bytes([b0, b1, b2, b3, b4, b5, b6, b7]);
        let stops = !x & 0x8080_8080_8080_8080;
        if stops != 0 {
            let len = (stops.trailing_zeros() / 8 + 1) as usize;
            // Keep the `len` bytes of this encoding (len == 8 keeps all).
            let x = x & (u64::MAX >> (64 - 8 * len as u32));
            let x = (x & 0x007f_007f_007f_007f) | ((x & 0x7f00_7f00_7f00_7f00) >> 1);
            let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
            let x = (x & 0x0000_0000_0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4);
            *pos = p + len;
            return Some(x);
        }
    }
    let first = *buf.get(p)?;
    *pos = p + 1;
    if first < 0x80 {
        return Some(first as u64);
    }
    read_u64_slow(buf, pos, first)
}

/// The multi-byte tail of [`read_u64`], kept out of line so the one-byte
/// fast path inlines into decoding loops.
#[inline(never)]
fn read_u64_slow(buf: &[u8], pos: &mut usize, first: u8) -> Option<u64> {
    let mut value = (first & 0x7f) as u64;
    let mut shift = 7u32;
    loop {
        let byte = *buf.get(*pos)?;
        *pos += 1;
        if shift == 63 {
            // 10th byte: only the lowest bit still fits, and it must end here.
            if byte > 1 {
                return None;
            }
            return Some(value | (byte as u64) << 63);
        }
        value |= ((byte & 0x7f) as u64) << shift;
        if byte < 0x80 {
            return Some(value);
        }
        shift += 7;
    }
}

/// Number of bytes [`write_prefix`] uses for `v`: 1 to 8 for values below
/// 2^56 (7 bits per byte), 9 above.
#[inline]
pub fn prefix_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    if bits > 56 {
        9
    } else {
        bits.div_ceil(7)
    }
}

/// Append the prefix-varint encoding of `v` to `out`.
///
/// A value of `n` bytes (`n` = 1..=8) is stored as the `n`-byte
/// little-endian integer `(v << n) | (1 << (n - 1))`: the first byte's
/// trailing zero bits count `n - 1`, and the value sits above them. Values
/// of 2^56 and above take a zero byte followed by the 8-byte little-endian
/// value.
#[inline]
pub fn write_prefix(out: &mut Vec<u8>, v: u64) {
    let n = prefix_len(v);
    if n == 9 {
        out.push(0);
        out.extend_from_slice(&v.to_le_bytes());
    } else {
        let x = (v << n) | (1 << (n - 1));
        // Write all 8 bytes and keep `n`: cheaper than a variable-length copy.
        let len = out.len();
        out.extend_from_slice(&x.to_le_bytes());
        out.truncate(len + n);
    }
}

/// Decode one prefix varint from `buf` at `*pos`, advancing `*pos` past it;
/// `None` (leaving `*pos` unchanged) if it runs past the end of `buf`.
/// Every byte sequence that fits is a valid encoding (non-minimal ones
/// included), so there is no overflow case.
#[inline(always)]
pub fn read_prefix(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let p = *pos;
    if let Some(bytes) = buf.get(p..).and_then(|b| b.first_chunk::<8>()) {
        let x = u64::from_le_bytes(*bytes);
        let first = x as u8;
        if first != 0 {
            let n = first.trailing_zeros() + 1;
            *pos = p + n as usize;
            return Some((x & (u64::MAX >> (64 - 8 * n))) >> n);
        }
    }
    read_prefix_tail(buf, pos)
}

/// [`read_prefix`] for a value near the end of `buf` or of 9 bytes.
#[inline(never)]
fn read_prefix_tail(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let p = *pos;
    let first = *buf.get(p)?;
    if first == 0 {
        let bytes = buf.get(p + 1..p + 9)?;
        let mut b = [0u8; 8];
        b.copy_from_slice(bytes);
        *pos = p + 9;
        return Some(u64::from_le_bytes(b));
    }
    let n = first.trailing_zeros() as usize + 1;
    let bytes = buf.get(p..p + n)?;
    let mut b = [0u8; 8];
    b[..n].copy_from_slice(bytes);
    *pos = p + n;
    Some(u64::from_le_bytes(b) >> n)
}

/// Decode one zigzag LEB128 `i64` (see [`read_u64`] for the failure cases).
#[inline(always)]
pub fn read_i64(buf: &[u8], pos: &mut usize) -> Option<i64> {
    read_u64(buf, pos).map(unzigzag)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_encodings() {
        let cases: &[(u64, &[u8])] = &[
            (0, &[0x00]),
            (1, &[0x01]),
            (127, &[0x7f]),
            (128, &[0x80, 0x01]),
            (300, &[0xac, 0x02]),
            (16_383, &[0xff, 0x7f]),
            (16_384, &[0x80, 0x80, 0x01]),
            (u64::MAX, &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
        ];
        for &(v, bytes) in cases {
            let mut out = Vec::new();
            write_u64(&mut out, v);
            assert_eq!(out, bytes, "encoding of {v}");
            assert_eq!(len_u64(v), bytes.len(), "length of {v}");
            let mut pos = 0;
            assert_eq!(read_u64(bytes, &mut pos), Some(v));
            assert_eq!(pos, bytes.len());
        }
    }

    #[test]
    fn zigzag_orders_by_magnitude() {
        let order = [0i64, -1, 1, -2, 2, -3];
        for (code, v) in order.iter().enumerate() {
            assert_eq!(zigzag(*v), code as u64);
            assert_eq!(unzigzag(code as u64), *v);
        }
        assert_eq!(zigzag(i64::MIN), u64::MAX);
        assert_eq!(zigzag(i64::MAX), u64::MAX - 1);
    }

    #[test]
    fn rejects_truncated_and_overflowing_input() {
        let mut pos = 0;
        assert_eq!(read_u64(&[], &mut pos), None);
        let mut pos = 0;
        assert_eq!(read_u64(&[0x80], &mut pos), None);
        let mut pos = 0;
        assert_eq!(read_u64(&[0xff, 0xff], &mut pos), None);
        // A 10th byte carrying more than the top bit overflows.
        let over = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        let mut pos = 0;
        assert_eq!(read_u64(&over, &mut pos), None);
        // An 11-byte encoding never fits.
        let long = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00];
        let mut pos = 0;
        assert_eq!(read_u64(&long, &mut pos), None);
    }

    #[test]
    fn prefix_known_encodings() {
        let cases: &[(u64, &[u8])] = &[
            (0, &[0x01]),
            (1, &[0x03]),
            (127, &[0xff]),
            (128, &[0x02, 0x02]),
            ((1 << 14) - 1, &[0xfe, 0xff]),
            (1 << 14, &[0x04, 0x00, 0x02]),
            ((1 << 56) - 1, &[0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            (1 << 56, &[0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01]),
            (u64::MAX, &[0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
        ];
        for &(v, bytes) in cases {
            let mut out = Vec::new();
            write_prefix(&mut out, v);
            assert_eq!(out, bytes, "encoding of {v}");
            assert_eq!(prefix_len(v), bytes.len(), "length of {v}");
            let mut pos = 0;
            assert_eq!(read_prefix(bytes, &mut pos), Some(v));
            assert_eq!(pos, bytes.len());
        }
    }

    #[test]
    fn prefix_rejects_truncated_input() {
        for bytes in [&[][..], &[0x02], &[0x00, 1, 2, 3, 4, 5, 6, 7], &[0x80, 1, 2, 3, 4, 5, 6]] {
            let mut pos = 0;
            assert_eq!(read_prefix(bytes, &mut pos), None, "{bytes:?}");
            assert_eq!(pos, 0);
        }
    }

    #[test]
    fn accepts_non_minimal_encodings() {
        let mut pos = 0;
        assert_eq!(read_u64(&[0x80, 0x00], &mut pos), Some(0));
        assert_eq!(pos, 2);
    }

    proptest! {
        #[test]
        fn round_trips_sequences(values in proptest::collection::vec(any::<u64>(), 0..64),
                                 signed in proptest::collection::vec(any::<i64>(), 0..64)) {
            let mut out = Vec::new();
            for &v in &values { write_u64(&mut out, v); }
            for &v in &signed { write_i64(&mut out, v); }
            let expected_len: usize = values.iter().map(|&v| len_u64(v)).sum::<usize>()
                + signed.iter().map(|&v| len_u64(zigzag(v))).sum::<usize>();
            prop_assert_eq!(out.len(), expected_len);
            let mut pos = 0;
            for &v in &values { prop_assert_eq!(read_u64(&out, &mut pos), Some(v)); }
            for &v in &signed { prop_assert_eq!(read_i64(&out, &mut pos), Some(v)); }
            prop_assert_eq!(pos, out.len());
        }

        #[test]
        fn fast_and_tail_paths_agree(v in any::<u64>(), pad in 0usize..12) {
            // The same value decoded with plenty of bytes after it (fast
            // path) and at the very end of the buffer (byte-by-byte path).
            let mut tail = Vec::new();
            write_u64(&mut tail, v);
            let mut padded = tail.clone();
            padded.extend(vec![0xffu8; pad]);
            let (mut p1, mut p2) = (0, 0);
            prop_assert_eq!(read_u64(&padded, &mut p1), Some(v));
            prop_assert_eq!(read_u64(&tail, &mut p2), Some(v));
            prop_assert_eq!(p1, tail.len());
            prop_assert_eq!(p2, tail.len());
        }

        #[test]
        fn prefix_round_trips_at_any_position(values in proptest::collection::vec(
            prop_oneof![any::<u64>(), 0u64..300, (0u32..64).prop_map(|b| 1u64 << b)], 0..40),
            pad in 0usize..10) {
            let mut out = Vec::new();
            for &v in &values { write_prefix(&mut out, v); }
            let len = out.len();
            prop_assert_eq!(len, values.iter().map(|&v| prefix_len(v)).sum::<usize>());
            // Decoding must not depend on what follows the last value.
            out.extend(vec![0u8; pad]);
            let mut pos = 0;
            for &v in &values { prop_assert_eq!(read_prefix(&out, &mut pos), Some(v)); }
            prop_assert_eq!(pos, len);
        }

        #[test]
        fn prefix_never_reads_past_the_end(bytes in proptest::collection::vec(any::<u8>(), 0..32)) {
            let mut pos = 0;
            while read_prefix(&bytes, &mut pos).is_some() {
                prop_assert!(pos <= bytes.len());
            }
        }

        #[test]
        fn never_reads_past_the_end(bytes in proptest::collection::vec(any::<u8>(), 0..32)) {
            let mut pos = 0;
            while pos < bytes.len() {
                let before = pos;
                match read_u64(&bytes, &mut pos) {
                    Some(_) => prop_assert!(pos > before && pos <= bytes.len()),
                    None => break,
                }
            }
        }
    }
}
