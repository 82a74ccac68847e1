//! Line-by-line reading for the text trace formats (lackey, din).
//!
//! Both formats are one record per line, arrive from pipes as often as from
//! files, and run to gigabytes, so lines are read into one reused buffer of
//! bounded length, and every line knows its number and byte offset for
//! error messages.

use std::io::{BufRead, BufReader, Read};

use crate::error::{Error, Result, TracePos};

/// Longest line accepted; a longer one is an error (so a binary file read
/// as text cannot grow memory without bound).
pub const MAX_LINE_BYTES: usize = 4096;

/// Splits a byte stream into lines, tracking where each one starts.
pub struct Lines<R> {
    src: BufReader<R>,
    buf: Vec<u8>,
    name: String,
    /// Byte offset of the start of the current line.
    start: u64,
    /// Byte offset just past the current line (its terminator included).
    end: u64,
    /// 1-based number of the current line (0 before the first).
    number: u64,
}

impl<R: Read> Lines<R> {
    /// Lines of `src`, named `name` in errors.
    pub fn new(src: R, name: impl Into<String>) -> Lines<R> {
        Lines {
            src: BufReader::with_capacity(1 << 16, src),
            buf: Vec::with_capacity(MAX_LINE_BYTES + 1),
            name: name.into(),
            start: 0,
            end: 0,
            number: 0,
        }
    }

    /// Read the next line; `false` at the end of the stream. The line,
    /// without its `\n` or `\r\n`, is then [`line`](Self::line).
    pub fn advance(&mut self) -> Result<bool> {
        self.buf.clear();
        self.start = self.end;
        let limit = MAX_LINE_BYTES as u64 + 1;
        let n = match (&mut self.src).take(limit).read_until(b'\n', &mut self.buf) {
            Ok(n) => n,
            Err(e) => {
                self.number += 1;
                return Err(self.error_at(self.buf.len(), format!("read failed: {e}")));
            }
        };
        if n == 0 {
            return Ok(false);
        }
        self.number += 1;
        self.end += n as u64;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
        } else if n as u64 == limit {
            return Err(self.error_at(0, format!("line longer than {MAX_LINE_BYTES} bytes")));
        }
        Ok(true)
    }

    /// The current line, without its terminator.
    pub fn line(&self) -> &[u8] {
        &self.buf
    }

    /// A trace error at byte `col` of the current line.
    pub fn error_at(&self, col: usize, message: impl Into<String>) -> Error {
        let pos = TracePos { offset: Some(self.start + col as u64), block: None, line: Some(self.number.max(1)) };
        Error::trace(&self.name, pos, message)
    }
}

/// What is wrong with a line, and at which byte of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bad {
    /// Byte of the line where the problem is.
    pub col: usize,
    /// What is wrong.
    pub message: String,
}

impl Bad {
    /// A problem at byte `col`.
    pub fn at(col: usize, message: impl Into<String>) -> Bad {
        Bad { col, message: message.into() }
    }
}

/// Cursor over one line's bytes for the small grammars of the text formats.
pub struct Cols<'a> {
    line: &'a [u8],
    /// Current byte of the line.
    pub at: usize,
}

impl<'a> Cols<'a> {
    /// A cursor at the start of `line`.
    pub fn new(line: &'a [u8]) -> Cols<'a> {
        Cols { line, at: 0 }
    }

    /// The byte under the cursor, if any.
    pub fn peek(&self) -> Option<u8> {
        self.line.get(self.at).copied()
    }

    /// Skip spaces and tabs; returns how many.
    pub fn blanks(&mut self) -> usize {
        let from = self.at;
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.at += 1;
        }
        self.at - from
    }

    /// Whether only blanks remain.
    pub fn at_end(&mut self) -> bool {
        self.blanks();
        self.at == self.line.len()
    }

    /// Consume `byte` or fail with `what` expected.
    pub fn expect(&mut self, byte: u8, what: &str) -> Result<(), Bad> {
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.unexpected(what))
        }
    }

    /// An error saying `what` was expected here.
    pub fn unexpected(&self, what: &str) -> Bad {
        match self.peek() {
            Some(b) if b.is_ascii_graphic() => Bad::at(self.at, format!("expected {what}, found '{}'", b as char)),
            Some(b) => Bad::at(self.at, format!("expected {what}, found byte 0x{b:02x}")),
            None => Bad::at(self.at, format!("expected {what}, found the end of the line")),
        }
    }

    /// A number in `radix` (16 or 10) of at most 64 bits; with `prefix`, a
    /// leading `0x`/`0X` is allowed (hexadecimal only).
    pub fn number(&mut self, radix: u32, prefix: bool, what: &str) -> Result<u64, Bad> {
        let from = self.at;
        let rest = &self.line[self.at..];
        if prefix && (rest.starts_with(b"0x") || rest.starts_with(b"0X")) {
            self.at += 2;
        }
        let digits = self.at;
        let mut value: u64 = 0;
        while let Some(d) = self.peek().and_then(|b| (b as char).to_digit(radix)) {
            value = value
                .checked_mul(radix as u64)
                .and_then(|v| v.checked_add(d as u64))
                .ok_or_else(|| Bad::at(from, format!("{what} does not fit in 64 bits")))?;
            self.at += 1;
        }
        if self.at == digits {
            return Err(self.unexpected(what));
        }
        Ok(value)
    }

    /// Require a blank or the end of the line after a field.
    pub fn field_end(&self, what: &str) -> Result<(), Bad> {
        match self.peek() {
            None | Some(b' ' | b'\t') => Ok(()),
            Some(_) => Err(self.unexpected(what)),
        }
    }
}

/// Whether `line` is one of valgrind's own messages (`==PID== ...`, or
/// `--PID-- ...` with `-v`).
pub fn is_valgrind_message(line: &[u8]) -> bool {
    let Some(&mark) = line.first() else { return false };
    if mark != b'=' && mark != b'-' || line.get(1) != Some(&mark) {
        return false;
    }
    let digits = line[2..].iter().take_while(|b| b.is_ascii_digit()).count();
    digits > 0 && line[2 + digits..].starts_with(&[mark, mark])
}

/// The complete lines of a file's first bytes `head` (a last line cut off
/// by the end of `head` is left out unless `head` is the whole file, which
/// is the case when it is shorter than `sniff_bytes`).
pub fn head_lines(head: &[u8], sniff_bytes: usize) -> impl Iterator<Item = &[u8]> {
    let whole = head.len() < sniff_bytes;
    let complete = if whole { head } else { &head[..head.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)] };
    complete.split(|&b| b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l)).filter(|l| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_track_numbers_and_offsets() {
        let mut lines = Lines::new(&b"ab\r\n\ncd"[..], "t");
        assert!(lines.advance().unwrap());
        assert_eq!(lines.line(), b"ab");
        assert!(lines.advance().unwrap());
        assert_eq!(lines.line(), b"");
        assert!(lines.advance().unwrap());
        assert_eq!(lines.line(), b"cd");
        assert_eq!(lines.error_at(1, "x").to_string(), "t: line 3: byte offset 6: x");
        assert!(!lines.advance().unwrap());
    }

    #[test]
    fn an_overlong_line_is_an_error() {
        let text = vec![b'a'; MAX_LINE_BYTES + 10];
        let mut lines = Lines::new(&text[..], "t");
        let err = lines.advance().unwrap_err().to_string();
        assert!(err.contains("line 1") && err.contains("longer than"), "{err}");
        let ok = vec![b'a'; MAX_LINE_BYTES];
        let mut lines = Lines::new(&ok[..], "t");
        assert!(lines.advance().unwrap());
        assert_eq!(lines.line().len(), MAX_LINE_BYTES);
    }

    #[test]
    fn numbers_parse_with_and_without_prefix_and_reject_overflow() {
        let mut c = Cols::new(b"0x1F 123 ffffffffffffffffff");
        assert_eq!(c.number(16, true, "a"), Ok(0x1f));
        c.blanks();
        assert_eq!(c.number(10, false, "b"), Ok(123));
        c.blanks();
        assert_eq!(c.number(16, true, "c").unwrap_err().col, 9);
        let mut c = Cols::new(b"zz");
        assert_eq!(c.number(16, true, "an address").unwrap_err().message, "expected an address, found 'z'");
    }

    #[test]
    fn valgrind_messages_are_recognised() {
        assert!(is_valgrind_message(b"==123== Lackey"));
        assert!(is_valgrind_message(b"--9-- hello"));
        assert!(!is_valgrind_message(b"==== x"));
        assert!(!is_valgrind_message(b"=-1-= x"));
        assert!(!is_valgrind_message(b"I  0400,3"));
    }
}
