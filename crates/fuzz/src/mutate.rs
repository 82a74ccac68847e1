//! Seeded mutations of an input: the byte-level ones of AFL and libFuzzer
//! (bit flips, interesting bytes, inserted and deleted ranges, splices) and
//! two that reach deeper into text formats (a format's words spliced in,
//! numbers swapped for boundary values).

use cachesched_core::util::rng::Rng;

/// Inputs never grow past this; the readers' limits are per line or
/// record, so longer inputs only run slower.
pub const MAX_LEN: usize = 16 << 10;

/// Bytes at the edges of signed and unsigned ranges, and text structure.
const BYTES: &[u8] = &[0, 1, 0x7f, 0x80, 0xff, b'\n', b' ', b',', b'0', b'9', b'f', b'-', b'"', b'=', b'[', b'.'];

/// Numbers at the edges of what the formats' fields hold.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "255",
    "256",
    "65535",
    "65536",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "1e300",
    "0.5",
    "nan",
];

/// A source of mutated inputs.
pub struct Mutator {
    rng: Rng,
}

impl Mutator {
    /// Mutations drawn from the stream seeded `seed`.
    pub fn new(seed: u64) -> Mutator {
        Mutator { rng: Rng::from_seed(seed) }
    }

    /// A number in `[0, n)` (0 if `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            self.rng.below(n as u64) as usize
        }
    }

    /// `input` changed one to four times; `other` is a second input to
    /// splice from, `tokens` the format's words.
    pub fn mutate(&mut self, input: &[u8], other: &[u8], tokens: &[&[u8]]) -> Vec<u8> {
        let mut data = input.to_vec();
        for _ in 0..1 + self.below(4) {
            self.once(&mut data, other, tokens);
        }
        data.truncate(MAX_LEN);
        data
    }

    fn once(&mut self, data: &mut Vec<u8>, other: &[u8], tokens: &[&[u8]]) {
        let len = data.len();
        let at = self.below(len + 1);
        match self.below(11) {
            0 if len > 0 => {
                let i = self.below(len);
                data[i] ^= 1 << self.below(8);
            }
            1 if len > 0 => {
                let i = self.below(len);
                data[i] = BYTES[self.below(BYTES.len())];
            }
            2 if len > 0 => {
                let i = self.below(len);
                data[i] = self.rng.next_u64() as u8;
            }
            3 => {
                let token = tokens.get(self.below(tokens.len())).copied().unwrap_or(b"\n");
                data.splice(at..at, token.iter().copied());
            }
            4 => {
                let token = tokens.get(self.below(tokens.len())).copied().unwrap_or(b"\n");
                let end = (at + token.len()).min(len);
                data.splice(at..end, token.iter().copied());
            }
            5 if len > 0 => {
                let n = 1 + self.below((len / 4).clamp(1, 64));
                let end = (at + n).min(len);
                data.drain(at.min(len)..end);
            }
            6 if len > 0 => {
                let start = self.below(len);
                let n = 1 + self.below((len - start).min(256));
                let copy = data[start..start + n].to_vec();
                data.splice(at..at, copy);
            }
            7 => {
                let n = 1 + self.below(16);
                let fresh: Vec<u8> = (0..n).map(|_| self.rng.next_u64() as u8).collect();
                data.splice(at..at, fresh);
            }
            8 => data.truncate(at),
            9 if !other.is_empty() => {
                let from = self.below(other.len());
                data.truncate(at);
                data.extend_from_slice(&other[from..]);
            }
            _ => self.swap_number(data),
        }
    }

    /// Replace a run of digits (or, if there is none, a byte) by a
    /// boundary number.
    fn swap_number(&mut self, data: &mut Vec<u8>) {
        let number = NUMBERS[self.below(NUMBERS.len())].as_bytes();
        let digits: Vec<usize> = (0..data.len()).filter(|&i| data[i].is_ascii_digit()).collect();
        if digits.is_empty() {
            let at = self.below(data.len() + 1);
            data.splice(at..at, number.iter().copied());
            return;
        }
        let start = digits[self.below(digits.len())];
        let end = (start..data.len()).find(|&i| !data[i].is_ascii_hexdigit()).unwrap_or(data.len());
        data.splice(start..end, number.iter().copied());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_are_seeded_and_change_the_input() {
        let seed = b"I  0400,3\n L 1000,8\n".to_vec();
        let run = |s| {
            let mut m = Mutator::new(s);
            (0..200).map(|_| m.mutate(&seed, b"0 100\n", &[b" M "])).collect::<Vec<_>>()
        };
        assert_eq!(run(5), run(5), "the same seed gives the same inputs");
        assert_ne!(run(5), run(6));
        let changed = run(5).iter().filter(|d| **d != seed).count();
        assert!(changed > 180, "{changed} of 200 inputs changed");
        assert!(run(5).iter().all(|d| d.len() <= MAX_LEN));
        assert!(run(5).iter().any(|d| d.windows(3).any(|w| w == b" M ")), "tokens are spliced in");
    }
}
