//! ChampSim instruction traces (`input_instr`, as in ChampSim's
//! `inc/trace_instruction.h`).
//!
//! The DPC and CRC championship traces of SPEC programs are published in
//! this format, so reading it gives the simulator the field's standard
//! workloads. Each instruction is one 64-byte little-endian record, with no
//! file header:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | `ip`, the instruction's address |
//! | 8 | 1 | `is_branch` |
//! | 9 | 1 | `branch_taken` |
//! | 10 | 2 | `destination_registers[2]` |
//! | 12 | 4 | `source_registers[4]` |
//! | 16 | 16 | `destination_memory[2]`, u64 each |
//! | 32 | 32 | `source_memory[4]`, u64 each |
//!
//! Each non-zero source memory operand becomes a load and each non-zero
//! destination operand a store (loads first, in array order), with the
//! record's `ip` as pc and a fixed size (64 bytes unless configured: the
//! format does not record sizes). The first access of a record carries the
//! records since the previous access (its own included); the others 0.
//! Records after the last access are not counted. Branch and register
//! fields are not used.

use std::io::{BufReader, ErrorKind, Read};

use super::{Deferred, Stream};
use crate::error::{Error, Result, TracePos};
use crate::types::{Access, AccessKind, VirtAddr};

/// Bytes of one record.
pub const RECORD_BYTES: usize = 64;
/// Access size used when none is configured.
pub const DEFAULT_ACCESS_BYTES: u16 = 64;

/// Whether a file's first bytes look like ChampSim records: at least one
/// whole record, and in each whole record a non-zero ip and branch flags
/// that are 0 or 1 (which no text file has).
pub fn sniff(head: &[u8]) -> bool {
    let records = head.chunks_exact(RECORD_BYTES);
    records.len() > 0 && records.into_iter().all(|r| r[..8] != [0; 8] && r[8] <= 1 && r[9] <= 1)
}

/// Streams the accesses of a ChampSim trace (decompressed) from any reader.
pub struct ChampsimReader<R> {
    /// Buffered: decompressors are slow to call for 64 bytes at a time.
    src: BufReader<R>,
    name: String,
    size: u16,
    /// Byte offset of the next record.
    offset: u64,
    /// Accesses of the current record not yet returned.
    queue: [Access; 6],
    queued: usize,
    next: usize,
    /// Records since the previous access.
    pending: u32,
    done: bool,
    deferred: Deferred,
}

impl<R: Read> ChampsimReader<R> {
    /// A reader of `src`, named `name` in errors, giving each access
    /// `access_bytes` bytes (at least 1).
    pub fn new(src: R, name: impl Into<String>, access_bytes: u16) -> ChampsimReader<R> {
        ChampsimReader {
            src: BufReader::with_capacity(1 << 16, src),
            name: name.into(),
            size: access_bytes.max(1),
            offset: 0,
            queue: [Access::default(); 6],
            queued: 0,
            next: 0,
            pending: 0,
            done: false,
            deferred: Deferred::default(),
        }
    }

    fn error(&self, message: String) -> Error {
        Error::trace(&self.name, TracePos { offset: Some(self.offset), ..TracePos::default() }, message)
    }

    /// Read the next record into the queue; `false` at the end.
    fn next_record(&mut self) -> Result<bool> {
        let mut record = [0u8; RECORD_BYTES];
        let mut got = 0;
        while got < RECORD_BYTES {
            match self.src.read(&mut record[got..]) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(self.error(format!("read failed after {got} bytes of this record: {e}"))),
            }
        }
        if got == 0 {
            return Ok(false);
        }
        if got < RECORD_BYTES {
            return Err(self.error(format!(
                "truncated: the last record has {got} of its {RECORD_BYTES} bytes (the file ends at byte {})",
                self.offset + got as u64
            )));
        }
        let word = |at: usize| u64::from_le_bytes(record[at..at + 8].try_into().expect("8 bytes"));
        let pc = VirtAddr(word(0));
        self.pending = self
            .pending
            .checked_add(1)
            .ok_or_else(|| self.error("more than 2^32 - 1 instructions without a memory access".into()))?;
        let sources = (0..4).map(|i| (AccessKind::Load, word(32 + 8 * i)));
        let destinations = (0..2).map(|i| (AccessKind::Store, word(16 + 8 * i)));
        self.queued = 0;
        self.next = 0;
        for (kind, addr) in sources.chain(destinations).filter(|&(_, addr)| addr != 0) {
            let instrs = std::mem::take(&mut self.pending);
            self.queue[self.queued] = Access { addr: VirtAddr(addr), pc, instrs, size: self.size, kind };
            self.queued += 1;
        }
        self.offset += RECORD_BYTES as u64;
        Ok(true)
    }
}

impl<R: Read + Send> Stream for ChampsimReader<R> {
    fn fill_some(&mut self, buf: &mut [Access], n: &mut usize) -> Result<()> {
        while *n < buf.len() {
            if self.next < self.queued {
                let k = (self.queued - self.next).min(buf.len() - *n);
                buf[*n..*n + k].copy_from_slice(&self.queue[self.next..self.next + k]);
                self.next += k;
                *n += k;
            } else if self.done || !self.next_record()? {
                self.done = true;
                break;
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

    /// One record, laid out independently of the reader.
    fn record(ip: u64, dst: [u64; 2], src: [u64; 4]) -> Vec<u8> {
        let mut r = ip.to_le_bytes().to_vec();
        r.extend_from_slice(&[1, 0, 3, 4, 5, 6, 7, 8]);
        dst.iter().chain(src.iter()).for_each(|m| r.extend_from_slice(&m.to_le_bytes()));
        assert_eq!(r.len(), 64);
        r
    }

    #[test]
    fn a_hand_computed_sample() {
        use AccessKind::*;
        let mut bytes = record(0x400000, [0, 0], [0; 4]);
        bytes.extend(record(0x400004, [0x9000, 0], [0, 0x1000, 0, 0x2000]));
        bytes.extend(record(0x400008, [0; 2], [0; 4]));
        bytes.extend(record(0x40000c, [0; 2], [0x3000, 0, 0, 0]));
        bytes.extend(record(0x400010, [0; 2], [0; 4]));
        let got = collect(&mut ChampsimReader::new(&bytes[..], "t", 64)).unwrap();
        assert_eq!(
            got,
            vec![
                acc(Load, 0x1000, 64, 0x400004, 2),
                acc(Load, 0x2000, 64, 0x400004, 0),
                acc(Store, 0x9000, 64, 0x400004, 0),
                acc(Load, 0x3000, 64, 0x40000c, 2),
            ]
        );
        let sized = collect(&mut ChampsimReader::new(&bytes[..], "t", 8)).unwrap();
        assert!(sized.iter().all(|a| a.size == 8));
    }

    #[test]
    fn a_truncated_record_is_an_error_with_its_offset() {
        let mut bytes = record(0x400000, [0, 0], [0x40, 0, 0, 0]);
        bytes.extend(record(0x400004, [0, 0], [0x80, 0, 0, 0]));
        bytes.truncate(64 + 20);
        let mut r = ChampsimReader::new(&bytes[..], "t.champsim", 64);
        let mut buf = [Access::default(); 8];
        // The complete record's access comes first; the error follows.
        assert_eq!(r.fill(&mut buf).unwrap(), 1);
        assert_eq!(buf[0].addr, VirtAddr(0x40));
        let err = r.fill(&mut buf).unwrap_err().to_string();
        assert_eq!(
            err,
            "t.champsim: byte offset 64: truncated: the last record has 20 of its 64 bytes (the file ends at byte 84)"
        );
        assert_eq!(r.fill(&mut buf).unwrap(), 0);
    }

    #[test]
    fn sniffing() {
        assert!(sniff(&record(0x400000, [0, 0], [0; 4])));
        assert!(!sniff(&record(0x400000, [0, 0], [0; 4])[..63]));
        assert!(!sniff(&[b'0'; 128]));
        assert!(!sniff(&record(0, [0, 0], [0; 4])));
    }
}
