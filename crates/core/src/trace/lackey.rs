//! valgrind lackey traces (`valgrind --tool=lackey --trace-mem=yes`).
//!
//! Lackey is the one tracer that runs any Linux program unmodified, so it is
//! how real programs become traces (`cachesched record` pipes it straight
//! into this reader). Its output is text, one reference per line:
//!
//! ```text
//! ==4711== Lackey, an example Valgrind tool      valgrind's messages: skipped
//! I  0401ab70,3                                  instruction fetch: address, size
//!  L 1fff000778,8                                data load
//!  S 1fff000770,8                                data store
//!  M 0421f0a8,4                                  modify: a load, then a store
//! ```
//!
//! Addresses are hexadecimal, sizes decimal. The address of the last `I`
//! line becomes the pc of the data accesses that follow it.
//!
//! Instruction counts: by default only data accesses are kept, and each
//! carries the number of `I` lines since the previous data access (the
//! store of an `M` line carries 0, being made by the same instruction), so
//! the trace's instruction total is lackey's, less the instructions after
//! the last data access. With [`LackeyOptions::ifetch`] every `I` line
//! becomes an instruction fetch carrying one instruction and data accesses
//! carry none, which makes the total exact.

use std::collections::VecDeque;
use std::io::Read;

use super::lines::{head_lines, is_valgrind_message, Bad, Cols, Lines};
use super::{Deferred, Stream};
use crate::error::Result;
use crate::types::{Access, AccessKind, VirtAddr};

/// How lackey's lines become accesses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LackeyOptions {
    /// Keep `I` lines as instruction fetches.
    pub ifetch: bool,
}

/// How many of valgrind's own message lines are kept for error reports.
const KEPT_MESSAGES: usize = 40;

/// One parsed line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    Instr { addr: u64, size: u16 },
    Data { kind: Op, addr: u64, size: u16 },
    Message,
    Blank,
}

/// The data operations of lackey's lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Load,
    Store,
    Modify,
}

/// Parse one line of lackey output.
fn parse(line: &[u8]) -> Result<Line, Bad> {
    if is_valgrind_message(line) {
        return Ok(Line::Message);
    }
    let mut c = Cols::new(line);
    if c.at_end() {
        return Ok(Line::Blank);
    }
    let mark = c.peek();
    let op = match mark {
        Some(b'I') => None,
        Some(b'L') => Some(Op::Load),
        Some(b'S') => Some(Op::Store),
        Some(b'M') => Some(Op::Modify),
        _ => return Err(c.unexpected("a lackey record ('I', 'L', 'S' or 'M') or a valgrind message")),
    };
    c.at += 1;
    if c.blanks() == 0 {
        return Err(c.unexpected("a blank after the record type"));
    }
    let addr = c.number(16, false, "a hexadecimal address")?;
    c.expect(b',', "',' after the address")?;
    let at = c.at;
    let size = c.number(10, false, "a decimal size")?;
    let size = match u16::try_from(size) {
        Ok(s) if s > 0 => s,
        _ => return Err(Bad::at(at, format!("size {size} is outside 1..=65535"))),
    };
    if !c.at_end() {
        return Err(c.unexpected("the end of the line after the size"));
    }
    Ok(match op {
        None => Line::Instr { addr, size },
        Some(kind) => Line::Data { kind, addr, size },
    })
}

/// Whether a file's first bytes look like lackey output: the first line
/// that is not blank is a lackey record or a valgrind message. (Only the
/// first, so that a damaged line further on is reported by the reader, with
/// its position, rather than making the format unrecognisable.)
pub fn sniff(head: &[u8]) -> bool {
    let first = head_lines(head, super::file::SNIFF_BYTES).find(|l| parse(l) != Ok(Line::Blank));
    first.is_some_and(|line| parse(line).is_ok())
}

/// Streams the accesses of a lackey trace from any reader (a file or a pipe).
pub struct LackeyReader<R> {
    lines: Lines<R>,
    options: LackeyOptions,
    /// Address of the last `I` line.
    pc: u64,
    /// `I` lines since the previous data access (without `ifetch`).
    pending: u32,
    /// The store half of an `M` line that did not fit in the caller's buffer.
    queued: Option<Access>,
    instructions: u64,
    messages: VecDeque<String>,
    done: bool,
    deferred: Deferred,
}

impl<R: Read> LackeyReader<R> {
    /// A reader of `src`, named `name` in errors.
    pub fn new(src: R, name: impl Into<String>, options: LackeyOptions) -> LackeyReader<R> {
        LackeyReader {
            lines: Lines::new(src, name),
            options,
            pc: 0,
            pending: 0,
            queued: None,
            instructions: 0,
            messages: VecDeque::new(),
            done: false,
            deferred: Deferred::default(),
        }
    }

    /// `I` lines read so far.
    pub fn instructions(&self) -> u64 {
        self.instructions
    }

    /// The last valgrind message lines read (at most 40), oldest first:
    /// what valgrind said about a failure, and lackey's closing counts.
    pub fn messages(&self) -> impl Iterator<Item = &str> {
        self.messages.iter().map(String::as_str)
    }

    fn keep_message(&mut self) {
        if self.messages.len() == KEPT_MESSAGES {
            self.messages.pop_front();
        }
        self.messages.push_back(String::from_utf8_lossy(self.lines.line()).into_owned());
    }
}

impl<R: Read + Send> Stream for LackeyReader<R> {
    fn fill_some(&mut self, buf: &mut [Access], n: &mut usize) -> Result<()> {
        if let Some(store) = self.queued.take() {
            if buf.is_empty() {
                self.queued = Some(store);
                return Ok(());
            }
            buf[0] = store;
            *n = 1;
        }
        while *n < buf.len() && !self.done {
            if !self.lines.advance()? {
                self.done = true;
                break;
            }
            let line = parse(self.lines.line()).map_err(|bad| self.lines.error_at(bad.col, bad.message))?;
            match line {
                Line::Instr { addr, size } => {
                    self.instructions += 1;
                    self.pc = addr;
                    if self.options.ifetch {
                        let pc = VirtAddr(addr);
                        buf[*n] = Access { addr: pc, pc, instrs: 1, size, kind: AccessKind::Ifetch };
                        *n += 1;
                    } else {
                        self.pending = self.pending.checked_add(1).ok_or_else(|| {
                            self.lines.error_at(0, "more than 2^32 - 1 instructions without a data access")
                        })?;
                    }
                }
                Line::Data { kind, addr, size } => {
                    let access = Access {
                        addr: VirtAddr(addr),
                        pc: VirtAddr(self.pc),
                        instrs: std::mem::take(&mut self.pending),
                        size,
                        kind: if kind == Op::Store { AccessKind::Store } else { AccessKind::Load },
                    };
                    buf[*n] = access;
                    *n += 1;
                    if kind == Op::Modify {
                        let store = Access { instrs: 0, kind: AccessKind::Store, ..access };
                        if *n < buf.len() {
                            buf[*n] = store;
                            *n += 1;
                        } else {
                            self.queued = Some(store);
                        }
                    }
                }
                Line::Message => self.keep_message(),
                Line::Blank => {}
            }
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
    use crate::trace::{access as acc, collect, Workload};

    fn read(text: &str, ifetch: bool) -> Result<Vec<Access>> {
        collect(&mut LackeyReader::new(text.as_bytes(), "t.lackey", LackeyOptions { ifetch }))
    }

    const SAMPLE: &str = "==7== Lackey, an example Valgrind tool\n\
                          I  0401ab70,3\n\
                          I  0401ab73,5\n \
                          S 1fff000778,8\n\
                          I  0401b770,1\n \
                          M 0421f0a8,4\n \
                          L 0421f0b0,16\n\
                          I  0401b771,7\n\
                          ==7== Exit code:       0\n";

    #[test]
    fn a_hand_computed_sample() {
        use AccessKind::*;
        assert_eq!(
            read(SAMPLE, false).unwrap(),
            vec![
                acc(Store, 0x1fff000778, 8, 0x0401ab73, 2),
                acc(Load, 0x0421f0a8, 4, 0x0401b770, 1),
                acc(Store, 0x0421f0a8, 4, 0x0401b770, 0),
                acc(Load, 0x0421f0b0, 16, 0x0401b770, 0),
            ]
        );
        assert_eq!(
            read(SAMPLE, true).unwrap(),
            vec![
                acc(Ifetch, 0x0401ab70, 3, 0x0401ab70, 1),
                acc(Ifetch, 0x0401ab73, 5, 0x0401ab73, 1),
                acc(Store, 0x1fff000778, 8, 0x0401ab73, 0),
                acc(Ifetch, 0x0401b770, 1, 0x0401b770, 1),
                acc(Load, 0x0421f0a8, 4, 0x0401b770, 0),
                acc(Store, 0x0421f0a8, 4, 0x0401b770, 0),
                acc(Load, 0x0421f0b0, 16, 0x0401b770, 0),
                acc(Ifetch, 0x0401b771, 7, 0x0401b771, 1),
            ]
        );
    }

    #[test]
    fn a_modify_split_across_buffers_keeps_its_store() {
        let mut r = LackeyReader::new(SAMPLE.as_bytes(), "t", LackeyOptions::default());
        let mut out = Vec::new();
        let mut buf = [Access::default(); 2];
        loop {
            let n = r.fill(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        assert_eq!(out, read(SAMPLE, false).unwrap());
        assert_eq!(r.instructions(), 4);
        assert_eq!(
            r.messages().collect::<Vec<_>>(),
            ["==7== Lackey, an example Valgrind tool", "==7== Exit code:       0"]
        );
    }

    #[test]
    fn errors_name_the_line_and_byte() {
        let err = read("I  0400,3\n L 12zz,8\n", false).unwrap_err().to_string();
        assert_eq!(err, "t.lackey: line 2: byte offset 15: expected ',' after the address, found 'z'");
        let err = read("I  0400,0\n", false).unwrap_err().to_string();
        assert!(err.contains("line 1: byte offset 8: size 0 is outside"), "{err}");
        let err = read("I  0400,3\nX\n", false).unwrap_err().to_string();
        assert!(err.contains("line 2: byte offset 10: expected a lackey record"), "{err}");
        let err = read("I  0400,3\n S 0500", false).unwrap_err().to_string();
        assert!(err.contains("line 2: byte offset 17: expected ','"), "{err}");
    }

    #[test]
    fn sniffing_needs_lackey_lines() {
        assert!(sniff(SAMPLE.as_bytes()));
        assert!(sniff(b"==1== x\n"));
        assert!(!sniff(b""));
        assert!(!sniff(b"0 1000\n2 2cb5\n"));
        assert!(!sniff(b"hello\nI  0400,3\n"));
        // A damaged line after the first is left for the reader to report.
        assert!(sniff(b"I  0400,3\nhello\n"));
    }
}
