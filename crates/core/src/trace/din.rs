//! Dinero din traces, traditional and extended, read as Dinero IV reads them.
//!
//! Dinero is the reference cache simulator of textbooks and of many
//! published traces; Dinero IV is one of our correctness references, so
//! this reader follows its two text readers (`-informat d` and `-informat D`)
//! to the letter. One record per line; anything after the last field is a
//! comment.
//!
//! Traditional din (`label address`): a hexadecimal label 0 read, 1 write,
//! 2 instruction fetch, 3 miscellaneous (Dinero IV simulates it as a read),
//! 4 copy back and 5 invalidate (cache control, not references: skipped);
//! a hexadecimal address. Dinero IV treats every record as a 4-byte access
//! at the address rounded down to a multiple of 4, and so does this reader.
//!
//! Extended din (`label address size`): label `r`, `w`, `i`, `m`, `c`, `v`
//! (either case) with the same meanings, hexadecimal address and size.
//!
//! Numbers may carry a `0x` prefix. A file's first record decides which of
//! the two it is. din has no pcs: an access's pc is the address of the last
//! instruction fetch before it (0 before the first). Instruction counts: an
//! instruction fetch counts one instruction; a trace without them (most
//! data-only traces) counts one per data access, and so does a trace with
//! them for its data accesses before the first fetch.

use std::io::Read;

use super::lines::{head_lines, Bad, Cols, Lines};
use super::{Deferred, Stream};
use crate::error::Result;
use crate::types::{Access, AccessKind, VirtAddr};

/// The two din dialects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    /// `label address`, numeric labels (Dinero IV `-informat d`).
    Traditional,
    /// `label address size`, letter labels (Dinero IV `-informat D`).
    Extended,
}

/// One parsed record: a reference, or cache control (skipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Record {
    Ref { kind: AccessKind, addr: u64, size: u16 },
    Control,
    Blank,
}

/// The dialect of a record line, from its first field; `None` for a blank line.
fn dialect_of(line: &[u8]) -> Option<Dialect> {
    let start = line.iter().position(|b| !matches!(b, b' ' | b'\t'))?;
    let single = matches!(line.get(start + 1), None | Some(b' ' | b'\t'));
    // "c" is also a hexadecimal digit, but 12 is no traditional label.
    Some(match line[start].to_ascii_lowercase() {
        b'r' | b'w' | b'i' | b'm' | b'c' | b'v' if single => Dialect::Extended,
        _ => Dialect::Traditional,
    })
}

/// Parse one line in `dialect`.
fn parse(line: &[u8], dialect: Dialect) -> Result<Record, Bad> {
    let mut c = Cols::new(line);
    if c.at_end() {
        return Ok(Record::Blank);
    }
    let at = c.at;
    let code = match dialect {
        Dialect::Traditional => {
            let label = c.number(16, true, "a hexadecimal label")?;
            if label > 5 {
                return Err(Bad::at(at, format!("label {label:x} is not a din label (0 to 5)")));
            }
            label as u8
        }
        Dialect::Extended => {
            let code = match c.peek().map(|b| b.to_ascii_lowercase()) {
                Some(b'r') => 0,
                Some(b'w') => 1,
                Some(b'i') => 2,
                Some(b'm') => 3,
                Some(b'c') => 4,
                Some(b'v') => 5,
                _ => return Err(c.unexpected("an extended din label (r, w, i, m, c or v)")),
            };
            c.at += 1;
            code
        }
    };
    c.field_end("a blank after the label")?;
    c.blanks();
    let addr = c.number(16, true, "a hexadecimal address")?;
    c.field_end("a blank or the end of the line after the address")?;
    let (addr, size) = match dialect {
        Dialect::Traditional => (addr & !3, 4),
        Dialect::Extended => {
            c.blanks();
            let at = c.at;
            let size = c.number(16, true, "a hexadecimal size")?;
            c.field_end("a blank or the end of the line after the size")?;
            match u16::try_from(size) {
                Ok(s) if s > 0 || code >= 4 => (addr, s),
                _ => return Err(Bad::at(at, format!("size {size:#x} is outside 1..=0xffff"))),
            }
        }
    };
    Ok(match code {
        0 | 3 => Record::Ref { kind: AccessKind::Load, addr, size },
        1 => Record::Ref { kind: AccessKind::Store, addr, size },
        2 => Record::Ref { kind: AccessKind::Ifetch, addr, size },
        _ => Record::Control,
    })
}

/// Whether a file's first bytes look like din: the first line that is not
/// blank is a din record (only the first, as for lackey).
pub fn sniff(head: &[u8]) -> bool {
    let mut lines = head_lines(head, super::file::SNIFF_BYTES);
    let first = lines.find_map(|line| dialect_of(line).map(|dialect| (line, dialect)));
    first.is_some_and(|(line, dialect)| parse(line, dialect).is_ok())
}

/// Streams the accesses of a din trace from any reader.
pub struct DinReader<R> {
    lines: Lines<R>,
    dialect: Option<Dialect>,
    /// Address of the last instruction fetch.
    pc: u64,
    /// Whether an instruction fetch has been seen (from then on only fetches
    /// count instructions).
    fetches: bool,
    done: bool,
    deferred: Deferred,
}

impl<R: Read> DinReader<R> {
    /// A reader of `src`, named `name` in errors.
    pub fn new(src: R, name: impl Into<String>) -> DinReader<R> {
        DinReader {
            lines: Lines::new(src, name),
            dialect: None,
            pc: 0,
            fetches: false,
            done: false,
            deferred: Deferred::default(),
        }
    }
}

impl<R: Read + Send> Stream for DinReader<R> {
    fn fill_some(&mut self, buf: &mut [Access], n: &mut usize) -> Result<()> {
        while *n < buf.len() && !self.done {
            if !self.lines.advance()? {
                self.done = true;
                break;
            }
            let line = self.lines.line();
            let Some(dialect) = self.dialect.or_else(|| dialect_of(line)) else { continue };
            self.dialect = Some(dialect);
            let record = parse(line, dialect).map_err(|bad| {
                let hint = match dialect {
                    Dialect::Traditional => "traditional din (the first record's dialect)",
                    Dialect::Extended => "extended din (the first record's dialect)",
                };
                self.lines.error_at(bad.col, format!("{}; reading as {hint}", bad.message))
            })?;
            let Record::Ref { kind, addr, size } = record else { continue };
            let instrs = match kind {
                AccessKind::Ifetch => {
                    self.fetches = true;
                    self.pc = addr;
                    1
                }
                _ => u32::from(!self.fetches),
            };
            buf[*n] = Access { addr: VirtAddr(addr), pc: VirtAddr(self.pc), instrs, size, kind };
            *n += 1;
        }
        Ok(())
    }

    fn deferred(&mut self) -> &mut Deferred {
        &mut self.deferred
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{access as acc, collect};

    fn read(text: &str) -> Result<Vec<Access>> {
        collect(&mut DinReader::new(text.as_bytes(), "t.din"))
    }

    #[test]
    fn traditional_records_as_dinero_iv_reads_them() {
        use AccessKind::*;
        // The example of the din format's documentation, plus the skipped labels.
        let text = "2 0 \n0 1000\n0 70f60888\n2 2cb5 a comment\n1 70f60890\n3 0x17\n4 0\n5 40\n1 70f6088c\n";
        assert_eq!(
            read(text).unwrap(),
            vec![
                acc(Ifetch, 0, 4, 0, 1),
                acc(Load, 0x1000, 4, 0, 0),
                acc(Load, 0x70f60888, 4, 0, 0),
                acc(Ifetch, 0x2cb4, 4, 0x2cb4, 1),
                acc(Store, 0x70f60890, 4, 0x2cb4, 0),
                acc(Load, 0x14, 4, 0x2cb4, 0),
                acc(Store, 0x70f6088c, 4, 0x2cb4, 0),
            ]
        );
    }

    #[test]
    fn data_only_traces_count_one_instruction_per_access() {
        let got = read("0 100\n1 104\n2 400\n0 108\n").unwrap();
        assert_eq!(got.iter().map(|a| a.instrs).collect::<Vec<_>>(), [1, 1, 1, 0]);
    }

    #[test]
    fn extended_records() {
        use AccessKind::*;
        let text = "i 400 4\nR 0x1001 8 load\nw 2000 0x40\nm 30 1\nc 0 0\nv 0 0\n";
        assert_eq!(
            read(text).unwrap(),
            vec![
                acc(Ifetch, 0x400, 4, 0x400, 1),
                acc(Load, 0x1001, 8, 0x400, 0),
                acc(Store, 0x2000, 0x40, 0x400, 0),
                acc(Load, 0x30, 1, 0x400, 0),
            ]
        );
    }

    #[test]
    fn errors_name_the_line_byte_and_dialect() {
        let err = read("0 100\n7 200\n").unwrap_err().to_string();
        assert_eq!(
            err,
            "t.din: line 2: byte offset 6: label 7 is not a din label (0 to 5); reading as traditional din \
             (the first record's dialect)"
        );
        let err = read("r 100 4\n0 200\n").unwrap_err().to_string();
        assert!(err.contains("line 2: byte offset 8: expected an extended din label"), "{err}");
        let err = read("r 100\n").unwrap_err().to_string();
        assert!(err.contains("line 1: byte offset 5: expected a hexadecimal size"), "{err}");
        let err = read("r 100 0\n").unwrap_err().to_string();
        assert!(err.contains("size 0x0 is outside"), "{err}");
        let err = read("0 10g\n").unwrap_err().to_string();
        assert!(err.contains("line 1: byte offset 4: expected a blank or the end"), "{err}");
    }

    #[test]
    fn sniffing() {
        assert!(sniff(b"2 0 \n0 1000\n"));
        assert!(sniff(b"r 100 4\ni 400 4\n"));
        assert!(!sniff(b"I  0400,3\n"));
        assert!(!sniff(b"hello world\n"));
        assert!(!sniff(b"r 100\n0 100\n"));
        assert!(!sniff(b""));
    }
}
