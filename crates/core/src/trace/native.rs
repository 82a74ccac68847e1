//! The native `.cst` trace format: writer, streaming reader, and scanner.
//!
//! Real programs' traces run to billions of accesses, and the simulator
//! consumes them at around 10^8 accesses per second, so the format is built
//! for two things: small files (well under 2 bytes per access on typical
//! streams) and decoding far faster than the simulator can use the accesses.
//! It gets both from columnar blocks of prediction-coded records compressed
//! with zstd: strided streams cost almost nothing because a per-instruction
//! stride predictor guesses their addresses, and each block decodes on its
//! own so that an index can seek straight to any access.
//!
//! The byte layout is specified in `docs/trace-formats.md`; the constants and
//! the `encode`/`decode` functions here are the reference. In short:
//!
//! ```text
//! header   magic "CSTRACE\0", version, flags, page size, JSON metadata, CRC-32
//! blocks   48-byte header (thread, ordinal, first access, counts, CRC-32)
//!          + one zstd frame (content checksum on) holding one thread's records
//! index    "CSTI", one 32-byte entry per block sorted by (thread, first
//!          access), one 40-byte row per thread
//! footer   56 bytes: index offset, totals, CRC-32s, magic "CSTFOOT\0"
//! ```
//!
//! Every byte of a file is covered by a CRC-32 or by zstd's checksum, so a
//! damaged file is reported (with its byte offset), never silently misread.
//! A file whose writer never finished has no footer; it can still be read
//! block by block up to the damage, where reading stops with an error saying
//! which block is incomplete.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use zstd::zstd_safe;

use super::reuse::{ReuseDistances, ReuseHistogram};
use super::Workload;
use crate::error::{Error, Result, TracePos};
use crate::types::{Access, AccessKind, VirtAddr};
use crate::util::hash::SeenSet;
use crate::util::staged::{Output, StagedFile};
use crate::util::varint;

/// First 8 bytes of every `.cst` file.
pub const MAGIC: [u8; 8] = *b"CSTRACE\0";
/// The format version this build writes and reads.
pub const VERSION: u16 = 1;
/// Most records one block may hold (the writer's default block size).
pub const MAX_BLOCK_RECORDS: u32 = 65_536;
/// Largest JSON metadata accepted in a header.
pub const MAX_META_BYTES: u32 = 16 << 20;
/// Most threads one trace may declare.
pub const MAX_THREADS: usize = 65_536;

const BLOCK_MAGIC: [u8; 4] = *b"CSTB";
const INDEX_MAGIC: [u8; 4] = *b"CSTI";
const FOOTER_MAGIC: [u8; 8] = *b"CSTFOOT\0";
/// Fixed part of the file header, before the metadata.
const FILE_HEADER_FIXED: u64 = 20;
const BLOCK_HEADER_LEN: u64 = 48;
const INDEX_ENTRY_LEN: u64 = 32;
const THREAD_ROW_LEN: u64 = 40;
const FOOTER_LEN: u64 = 56;
/// Fixed part of a decompressed block payload, before the streams.
const PAYLOAD_HEADER_LEN: usize = 20;
/// Most payload bytes one record can take: control byte, address and pc
/// prefix varints (9 each), instruction count (5) and size (3).
const MAX_RECORD_BYTES: usize = 27;
/// log2 of the number of entries of the prediction tables.
const TABLE_BITS: u32 = 10;
const TABLE_SIZE: usize = 1 << TABLE_BITS;
/// Fibonacci hashing multiplier (2^64 / golden ratio).
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// Control byte: size code field (bits 2..=4), `7` = size in the size stream.
const SIZE_ESCAPE: u8 = 7;
/// Control byte bit: the pc equals the predicted pc.
const PC_HIT: u8 = 1 << 5;
/// Control byte bit: the instruction count equals the predicted count.
const INSTR_HIT: u8 = 1 << 6;
/// Control byte bit: the address equals the predicted address.
const ADDR_HIT: u8 = 1 << 7;

// ---------------------------------------------------------------------------
// Small helpers: CRC-32, little-endian fields.

const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// Continue a CRC-32 (IEEE 802.3, as zlib's `crc32`) over `bytes`; start
/// with `crc = 0`.
fn crc32_update(crc: u32, bytes: &[u8]) -> u32 {
    let mut c = !crc;
    for &b in bytes {
        c = CRC_TABLE[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

fn crc32(bytes: &[u8]) -> u32 {
    crc32_update(0, bytes)
}

fn get_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn get_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn get_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Bytes shown in error messages about a wrong magic number.
fn show_bytes(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ")
}

fn list_threads(threads: &[u32]) -> String {
    threads.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ")
}

fn pos_at(offset: u64, block: Option<u64>) -> TracePos {
    TracePos { offset: Some(offset), block, line: None }
}

// ---------------------------------------------------------------------------
// Header and summaries.

/// The self-description stored at the start of a `.cst` file (as JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceHeader {
    /// Ids of the threads whose streams the file holds, in the order the
    /// producer listed them. Every record belongs to one of them.
    pub threads: Vec<u32>,
    /// Where the trace came from (tool, program, command line), for people.
    #[serde(default)]
    pub source: String,
    /// Page size of the traced machine in bytes (a power of two).
    pub page_bytes: u32,
    /// Free-form metadata of the producer; `null` if none.
    #[serde(default)]
    pub meta: serde_json::Value,
}

impl TraceHeader {
    /// A single-thread (thread 0) header with 4 KiB pages.
    pub fn new(source: impl Into<String>) -> TraceHeader {
        TraceHeader { threads: vec![0], source: source.into(), page_bytes: 4096, meta: serde_json::Value::Null }
    }

    /// What to say of a trace whose threads are the windows of a SimPoint
    /// recording (`meta.simpoint`) when no thread was chosen; nothing else.
    pub fn windows_hint(&self) -> &'static str {
        match self.meta.get("simpoint") {
            Some(_) => ": a SimPoint trace, each thread a window of one run (`cachesched trace estimate` simulates and weighs them)",
            None => "",
        }
    }

    /// The same header declaring `threads` instead.
    pub fn with_threads(mut self, threads: impl Into<Vec<u32>>) -> TraceHeader {
        self.threads = threads.into();
        self
    }

    /// Why this header cannot be written or was read corrupt, if it can't.
    fn problem(&self) -> Option<String> {
        if self.threads.is_empty() {
            return Some("the header declares no threads".into());
        }
        if self.threads.len() > MAX_THREADS {
            return Some(format!(
                "the header declares {} threads, more than the limit of {MAX_THREADS}",
                self.threads.len()
            ));
        }
        let mut sorted = self.threads.clone();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Some(format!("thread {} is declared twice", w[0]));
        }
        if !self.page_bytes.is_power_of_two() {
            return Some(format!("page_bytes must be a power of two, got {}", self.page_bytes));
        }
        None
    }
}

/// Counts of one thread's stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ThreadSummary {
    /// Thread id.
    pub thread: u32,
    /// Accesses in the stream.
    pub accesses: u64,
    /// Instructions in the stream (sum of `Access::instrs`).
    pub instructions: u64,
    /// Blocks holding the stream.
    pub blocks: u64,
}

/// Totals of a finished trace, from its footer and index.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TraceSummary {
    /// Accesses of all threads.
    pub accesses: u64,
    /// Instructions of all threads.
    pub instructions: u64,
    /// Blocks of all threads.
    pub blocks: u64,
    /// Per thread, sorted by thread id.
    pub threads: Vec<ThreadSummary>,
    /// Size of the whole file in bytes.
    pub file_bytes: u64,
}

impl TraceSummary {
    /// File bytes per access (0 for an empty trace).
    pub fn bytes_per_access(&self) -> f64 {
        if self.accesses == 0 {
            0.0
        } else {
            self.file_bytes as f64 / self.accesses as f64
        }
    }

    /// The counts of `thread`, if the trace declares it.
    pub fn thread(&self, thread: u32) -> Option<&ThreadSummary> {
        self.threads.iter().find(|t| t.thread == thread)
    }
}

// ---------------------------------------------------------------------------
// Record coding shared by the encoder and the decoder.

/// One slot of the address/instruction predictor, keyed by (pc, kind).
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// Last address seen by this slot.
    last: u64,
    /// Difference between the last two addresses seen by this slot.
    stride: u64,
    /// Instruction count of the last record seen by this slot.
    instrs: u32,
}

/// One entry of the next-pc table: a pc and its hash [`pc_hash`].
#[derive(Debug, Clone, Copy, Default)]
struct PcEntry {
    pc: u64,
    hash: u64,
}

/// Prediction state; reset at the start of every block.
struct Predictor {
    slots: Box<[Slot; TABLE_SIZE]>,
    /// `next_pc[pc_index(hash of pc)]` = the pc that followed `pc` last time.
    next_pc: Box<[PcEntry; TABLE_SIZE]>,
}

impl Predictor {
    fn new() -> Predictor {
        Predictor {
            slots: Box::new([Slot::default(); TABLE_SIZE]),
            next_pc: Box::new([PcEntry::default(); TABLE_SIZE]),
        }
    }

    fn reset(&mut self) {
        self.slots.fill(Slot::default());
        self.next_pc.fill(PcEntry::default());
    }
}

/// Fibonacci hash of a pc; its top [`TABLE_BITS`] bits index both tables.
/// Kept next to the pc in [`PcEntry`] so that a predicted pc costs no
/// multiplication on the decoder's critical path.
#[inline(always)]
fn pc_hash(pc: u64) -> u64 {
    pc.wrapping_mul(GOLDEN)
}

/// Index of the next-pc entry of a pc with hash `hash`.
#[inline(always)]
fn pc_index(hash: u64) -> usize {
    (hash >> (64 - TABLE_BITS)) as usize
}

/// Per-kind salt XORed into the slot index, so that the loads, stores and
/// fetches of one pc get different slots.
const KIND_SALT: [usize; 4] = [0, 0x155, 0x2AA, 0x3FF];

/// Index of the predictor slot of a record whose pc has hash `hash`.
#[inline(always)]
fn slot_index(hash: u64, kind: u8) -> usize {
    (pc_index(hash) ^ KIND_SALT[(kind & 3) as usize]) & (TABLE_SIZE - 1)
}

/// Turns blocks of records into compressed payloads.
struct Encoder {
    pred: Predictor,
    ctrl: Vec<u8>,
    addrs: Vec<u8>,
    pcs: Vec<u8>,
    instrs: Vec<u8>,
    sizes: Vec<u8>,
    residuals: Vec<u64>,
    payload: Vec<u8>,
    comp: Vec<u8>,
    cctx: zstd_safe::CCtx<'static>,
}

impl Encoder {
    fn new(level: i32) -> io::Result<Encoder> {
        let mut cctx = zstd_safe::CCtx::create();
        let zerr = |code| io::Error::other(zstd_safe::get_error_name(code));
        cctx.set_parameter(zstd_safe::CParameter::CompressionLevel(level)).map_err(zerr)?;
        cctx.set_parameter(zstd_safe::CParameter::ChecksumFlag(true)).map_err(zerr)?;
        cctx.set_parameter(zstd_safe::CParameter::ContentSizeFlag(true)).map_err(zerr)?;
        Ok(Encoder {
            pred: Predictor::new(),
            ctrl: Vec::new(),
            addrs: Vec::new(),
            pcs: Vec::new(),
            instrs: Vec::new(),
            sizes: Vec::new(),
            residuals: Vec::new(),
            payload: Vec::new(),
            comp: Vec::new(),
            cctx,
        })
    }

    /// Encode and compress `recs` into `self.comp`; returns the payload's
    /// uncompressed length and the block's instruction total.
    fn encode(&mut self, recs: &[Access]) -> io::Result<(usize, u64)> {
        self.pred.reset();
        self.ctrl.clear();
        self.addrs.clear();
        self.pcs.clear();
        self.instrs.clear();
        self.sizes.clear();
        self.residuals.clear();
        let slots = &mut *self.pred.slots;
        let next_pc = &mut *self.pred.next_pc;
        let (mut prev_pc, mut prev_hash) = (0u64, 0u64);
        let mut instr_total = 0u64;
        let mut residual_bits = 0u64;
        for a in recs {
            let kind = a.kind as u8;
            let mut c = kind;
            if a.size.is_power_of_two() && a.size <= 64 {
                c |= (a.size.trailing_zeros() as u8) << 2;
            } else {
                c |= SIZE_ESCAPE << 2;
                varint::write_prefix(&mut self.sizes, a.size as u64);
            }
            let pc = a.pc.0;
            let entry = &mut next_pc[pc_index(prev_hash)];
            let hash = if entry.pc == pc {
                c |= PC_HIT;
                entry.hash
            } else {
                varint::write_prefix(&mut self.pcs, varint::zigzag(pc.wrapping_sub(prev_pc) as i64));
                let hash = pc_hash(pc);
                *entry = PcEntry { pc, hash };
                hash
            };
            (prev_pc, prev_hash) = (pc, hash);
            let slot = &mut slots[slot_index(hash, kind)];
            if slot.instrs == a.instrs {
                c |= INSTR_HIT;
            } else {
                varint::write_prefix(&mut self.instrs, a.instrs as u64);
                slot.instrs = a.instrs;
            }
            let stride = a.addr.0.wrapping_sub(slot.last);
            if stride == slot.stride {
                c |= ADDR_HIT;
            } else {
                self.residuals.push(stride);
                residual_bits |= stride;
                slot.stride = stride;
            }
            slot.last = a.addr.0;
            self.ctrl.push(c);
            instr_total += a.instrs as u64;
        }
        // Drop the low bits that every address residual has clear (e.g. the
        // 3 bits of 8-byte aligned accesses): cheaper varints.
        let shift = if residual_bits == 0 { 0 } else { residual_bits.trailing_zeros() };
        for &r in &self.residuals {
            varint::write_prefix(&mut self.addrs, varint::zigzag((r as i64) >> shift));
        }

        let p = &mut self.payload;
        p.clear();
        p.extend_from_slice(&[shift as u8, 0, 0, 0]);
        for stream in [&self.addrs, &self.pcs, &self.instrs, &self.sizes] {
            p.extend_from_slice(&(stream.len() as u32).to_le_bytes());
        }
        p.extend_from_slice(&self.ctrl);
        p.extend_from_slice(&self.addrs);
        p.extend_from_slice(&self.pcs);
        p.extend_from_slice(&self.instrs);
        p.extend_from_slice(&self.sizes);

        self.comp.clear();
        self.comp.reserve(zstd_safe::compress_bound(p.len()));
        self.cctx.compress2(&mut self.comp, p).map_err(|code| io::Error::other(zstd_safe::get_error_name(code)))?;
        Ok((p.len(), instr_total))
    }
}

/// Read one varint of the stream `raw[cur.0..cur.1]`, advancing `cur.0`.
/// Out of line on purpose: the streams read this way (pc, instruction
/// count, size) are rarely needed in program-like traces, and keeping their
/// cursors out of the decoding loop's registers speeds up the common case.
#[cold]
#[inline(never)]
fn read_rare(raw: &[u8], cur: &mut (usize, usize)) -> Option<u64> {
    varint::read_prefix(raw.get(..cur.1)?, &mut cur.0)
}

/// Decodes the records of one block, incrementally, into callers' buffers.
struct BlockDecoder {
    pred: Predictor,
    /// The decompressed payload.
    raw: Vec<u8>,
    records: u32,
    done: u32,
    shift: u32,
    ctrl_pos: usize,
    /// (position, end) of the address, pc, instruction and size streams.
    addr: (usize, usize),
    pc: (usize, usize),
    instr: (usize, usize),
    size: (usize, usize),
    prev_pc: u64,
    prev_hash: u64,
    instr_total: u64,
    expect_instrs: u64,
}

impl BlockDecoder {
    fn new() -> BlockDecoder {
        BlockDecoder {
            pred: Predictor::new(),
            raw: Vec::new(),
            records: 0,
            done: 0,
            shift: 0,
            ctrl_pos: 0,
            addr: (0, 0),
            pc: (0, 0),
            instr: (0, 0),
            size: (0, 0),
            prev_pc: 0,
            prev_hash: 0,
            instr_total: 0,
            expect_instrs: 0,
        }
    }

    fn remaining(&self) -> u32 {
        self.records - self.done
    }

    /// Forget the current block (nothing left to decode).
    fn clear(&mut self) {
        self.records = 0;
        self.done = 0;
    }

    /// Prepare to decode `self.raw` as a payload of `records` records whose
    /// instruction counts add up to `instrs`.
    fn start(&mut self, records: u32, instrs: u64) -> std::result::Result<(), String> {
        self.clear();
        let raw = &self.raw;
        if raw.len() < PAYLOAD_HEADER_LEN {
            return Err(format!(
                "corrupt block payload: {} bytes, shorter than its {PAYLOAD_HEADER_LEN}-byte header",
                raw.len()
            ));
        }
        let shift = raw[0] as u32;
        if shift > 63 || raw[1..4] != [0, 0, 0] {
            return Err(format!("corrupt block payload: bad stream header {}", show_bytes(&raw[..4])));
        }
        let lens = [get_u32(raw, 4) as u64, get_u32(raw, 8) as u64, get_u32(raw, 12) as u64, get_u32(raw, 16) as u64];
        let expected = PAYLOAD_HEADER_LEN as u64 + records as u64 + lens.iter().sum::<u64>();
        if expected != raw.len() as u64 {
            return Err(format!(
                "corrupt block payload: stream lengths add up to {expected} bytes, payload has {}",
                raw.len()
            ));
        }
        let mut at = PAYLOAD_HEADER_LEN + records as usize;
        let mut span = |len: u64| {
            let s = (at, at + len as usize);
            at = s.1;
            s
        };
        let ctrl = &raw[PAYLOAD_HEADER_LEN..PAYLOAD_HEADER_LEN + records as usize];
        if let Some(i) = ctrl.iter().position(|&c| c & 3 == 3) {
            return Err(format!("corrupt block payload: record {i}: access kind 3 is not defined"));
        }
        self.ctrl_pos = PAYLOAD_HEADER_LEN;
        self.addr = span(lens[0]);
        self.pc = span(lens[1]);
        self.instr = span(lens[2]);
        self.size = span(lens[3]);
        self.shift = shift;
        self.records = records;
        self.done = 0;
        self.prev_pc = 0;
        self.prev_hash = 0;
        self.instr_total = 0;
        self.expect_instrs = instrs;
        self.pred.reset();
        Ok(())
    }

    /// Decode up to `out.len()` records of the block into `out`; returns how
    /// many. On an error the block is left unusable.
    fn decode(&mut self, out: &mut [Access]) -> std::result::Result<usize, String> {
        let n = out.len().min(self.remaining() as usize);
        let BlockDecoder { raw, pred, ctrl_pos, addr, pc: pc_cur, instr: instr_cur, size: size_cur, .. } = self;
        let raw = &raw[..];
        let ctrl = &raw[*ctrl_pos..*ctrl_pos + n];
        // The address stream is read for about every other record of a
        // typical trace and stays in registers; the pc, instruction and size
        // streams are read rarely, out of line (`read_rare`).
        let addr_s = &raw[..addr.1];
        let mut ap = addr.0;
        let slots = &mut *pred.slots;
        let next_pc = &mut *pred.next_pc;
        let (mut prev_pc, mut prev_hash) = (self.prev_pc, self.prev_hash);
        let shift = self.shift;
        let first = self.done;
        let fail = |i: usize, what: &str| Err(format!("corrupt block payload: record {}: {what}", first as usize + i));
        // Kind 3 was rejected by `start`; its entry here is never used.
        const KINDS: [AccessKind; 4] = [AccessKind::Load, AccessKind::Store, AccessKind::Ifetch, AccessKind::Load];

        for (i, (out, &c)) in out[..n].iter_mut().zip(ctrl).enumerate() {
            let kind = KINDS[(c & 3) as usize];
            let code = (c >> 2) & 7;
            let size = if code != SIZE_ESCAPE {
                1u16 << code
            } else {
                match read_rare(raw, size_cur) {
                    Some(s) if s <= u16::MAX as u64 => s as u16,
                    Some(s) => return fail(i, &format!("size {s} does not fit 16 bits")),
                    None => return fail(i, "size stream ends early or is malformed"),
                }
            };
            let entry = &mut next_pc[pc_index(prev_hash)];
            if c & PC_HIT == 0 {
                match read_rare(raw, pc_cur) {
                    Some(d) => {
                        let pc = prev_pc.wrapping_add(varint::unzigzag(d) as u64);
                        *entry = PcEntry { pc, hash: pc_hash(pc) };
                    }
                    None => return fail(i, "pc stream ends early or is malformed"),
                }
            }
            let PcEntry { pc, hash } = *entry;
            (prev_pc, prev_hash) = (pc, hash);
            let slot = &mut slots[slot_index(hash, c)];
            if c & INSTR_HIT == 0 {
                match read_rare(raw, instr_cur) {
                    Some(v) if v <= u32::MAX as u64 => slot.instrs = v as u32,
                    Some(v) => return fail(i, &format!("instruction count {v} does not fit 32 bits")),
                    None => return fail(i, "instruction stream ends early or is malformed"),
                }
            }
            if c & ADDR_HIT == 0 {
                match varint::read_prefix(addr_s, &mut ap) {
                    Some(d) => slot.stride = (varint::unzigzag(d) as u64) << shift,
                    None => return fail(i, "address stream ends early or is malformed"),
                }
            }
            let addr = slot.last.wrapping_add(slot.stride);
            slot.last = addr;
            *out = Access { addr: VirtAddr(addr), pc: VirtAddr(pc), instrs: slot.instrs, size, kind };
        }
        addr.0 = ap;
        // Summed apart from the loop above, which is short of registers;
        // this pass vectorises.
        let instr_total = self.instr_total + out[..n].iter().map(|a| a.instrs as u64).sum::<u64>();

        self.ctrl_pos += n;
        (self.prev_pc, self.prev_hash) = (prev_pc, prev_hash);
        self.instr_total = instr_total;
        self.done += n as u32;
        if self.done == self.records {
            let leftover = [("address", self.addr), ("pc", self.pc), ("instruction", self.instr), ("size", self.size)]
                .into_iter()
                .find(|(_, (pos, end))| pos != end);
            if let Some((name, (pos, end))) = leftover {
                return Err(format!("corrupt block payload: {} unread bytes left in the {name} stream", end - pos));
            }
            if instr_total != self.expect_instrs {
                return Err(format!(
                    "corrupt block: records hold {instr_total} instructions, block header says {}",
                    self.expect_instrs
                ));
            }
        }
        Ok(n)
    }
}

// ---------------------------------------------------------------------------
// Block headers, index entries, footer.

/// The fixed header in front of every block's compressed payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BlockHeader {
    thread: u32,
    /// Ordinal of the block in the file (0-based, all threads).
    seq: u64,
    /// Index of the block's first record within its thread's stream.
    first: u64,
    records: u32,
    raw_len: u32,
    comp_len: u32,
    instrs: u64,
}

impl BlockHeader {
    fn to_bytes(self) -> [u8; BLOCK_HEADER_LEN as usize] {
        let mut b = [0u8; BLOCK_HEADER_LEN as usize];
        b[0..4].copy_from_slice(&BLOCK_MAGIC);
        b[4..8].copy_from_slice(&self.thread.to_le_bytes());
        b[8..16].copy_from_slice(&self.seq.to_le_bytes());
        b[16..24].copy_from_slice(&self.first.to_le_bytes());
        b[24..28].copy_from_slice(&self.records.to_le_bytes());
        b[28..32].copy_from_slice(&self.raw_len.to_le_bytes());
        b[32..36].copy_from_slice(&self.comp_len.to_le_bytes());
        b[36..44].copy_from_slice(&self.instrs.to_le_bytes());
        let crc = crc32(&b[..44]);
        b[44..48].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Parse and sanity-check a block header (magic already checked).
    fn parse(b: &[u8; BLOCK_HEADER_LEN as usize]) -> std::result::Result<BlockHeader, String> {
        if b[0..4] != BLOCK_MAGIC {
            return Err(format!("expected a block (magic \"CSTB\"), found bytes {}", show_bytes(&b[0..4])));
        }
        let stored = get_u32(b, 44);
        let actual = crc32(&b[..44]);
        if stored != actual {
            return Err(format!("block header checksum mismatch (stored {stored:08x}, computed {actual:08x})"));
        }
        let h = BlockHeader {
            thread: get_u32(b, 4),
            seq: get_u64(b, 8),
            first: get_u64(b, 16),
            records: get_u32(b, 24),
            raw_len: get_u32(b, 28),
            comp_len: get_u32(b, 32),
            instrs: get_u64(b, 36),
        };
        if h.records == 0 || h.records > MAX_BLOCK_RECORDS {
            return Err(format!("block claims {} records (must be 1..={MAX_BLOCK_RECORDS})", h.records));
        }
        let min_raw = PAYLOAD_HEADER_LEN + h.records as usize;
        let max_raw = PAYLOAD_HEADER_LEN + h.records as usize * MAX_RECORD_BYTES;
        if (h.raw_len as usize) < min_raw || h.raw_len as usize > max_raw {
            return Err(format!(
                "block claims {} uncompressed bytes for {} records (must be {min_raw}..={max_raw})",
                h.raw_len, h.records
            ));
        }
        let max_comp = zstd_safe::compress_bound(h.raw_len as usize);
        if h.comp_len as usize > max_comp {
            return Err(format!(
                "block claims {} compressed bytes, more than zstd can produce from {} bytes ({max_comp})",
                h.comp_len, h.raw_len
            ));
        }
        if h.first.checked_add(h.records as u64).is_none() {
            return Err(format!("block's first access index {} overflows", h.first));
        }
        Ok(h)
    }
}

/// One index entry: where a block is and which accesses it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct IndexEntry {
    offset: u64,
    first: u64,
    instrs_before: u64,
    thread: u32,
    records: u32,
}

impl IndexEntry {
    fn to_bytes(self) -> [u8; INDEX_ENTRY_LEN as usize] {
        let mut b = [0u8; INDEX_ENTRY_LEN as usize];
        b[0..8].copy_from_slice(&self.offset.to_le_bytes());
        b[8..16].copy_from_slice(&self.first.to_le_bytes());
        b[16..24].copy_from_slice(&self.instrs_before.to_le_bytes());
        b[24..28].copy_from_slice(&self.thread.to_le_bytes());
        b[28..32].copy_from_slice(&self.records.to_le_bytes());
        b
    }

    fn parse(b: &[u8]) -> IndexEntry {
        IndexEntry {
            offset: get_u64(b, 0),
            first: get_u64(b, 8),
            instrs_before: get_u64(b, 16),
            thread: get_u32(b, 24),
            records: get_u32(b, 28),
        }
    }
}

/// One row of the per-thread table that follows the index entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ThreadRow {
    thread: u32,
    /// Position of the thread's first entry in the index.
    first_entry: u64,
    blocks: u64,
    accesses: u64,
    instrs: u64,
}

impl ThreadRow {
    fn to_bytes(self) -> [u8; THREAD_ROW_LEN as usize] {
        let mut b = [0u8; THREAD_ROW_LEN as usize];
        b[0..4].copy_from_slice(&self.thread.to_le_bytes());
        // 4..8 reserved, zero.
        b[8..16].copy_from_slice(&self.first_entry.to_le_bytes());
        b[16..24].copy_from_slice(&self.blocks.to_le_bytes());
        b[24..32].copy_from_slice(&self.accesses.to_le_bytes());
        b[32..40].copy_from_slice(&self.instrs.to_le_bytes());
        b
    }

    fn parse(b: &[u8]) -> std::result::Result<ThreadRow, String> {
        if get_u32(b, 4) != 0 {
            return Err("reserved field of a thread row is not zero".into());
        }
        Ok(ThreadRow {
            thread: get_u32(b, 0),
            first_entry: get_u64(b, 8),
            blocks: get_u64(b, 16),
            accesses: get_u64(b, 24),
            instrs: get_u64(b, 32),
        })
    }
}

/// The fixed footer at the very end of a finished file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Footer {
    index_offset: u64,
    blocks: u64,
    accesses: u64,
    instrs: u64,
    threads: u32,
    index_crc: u32,
}

impl Footer {
    fn to_bytes(self) -> [u8; FOOTER_LEN as usize] {
        let mut b = [0u8; FOOTER_LEN as usize];
        b[0..8].copy_from_slice(&self.index_offset.to_le_bytes());
        b[8..16].copy_from_slice(&self.blocks.to_le_bytes());
        b[16..24].copy_from_slice(&self.accesses.to_le_bytes());
        b[24..32].copy_from_slice(&self.instrs.to_le_bytes());
        b[32..36].copy_from_slice(&self.threads.to_le_bytes());
        b[36..40].copy_from_slice(&self.index_crc.to_le_bytes());
        // 40..44 reserved, zero.
        let crc = crc32(&b[..44]);
        b[44..48].copy_from_slice(&crc.to_le_bytes());
        b[48..56].copy_from_slice(&FOOTER_MAGIC);
        b
    }

    fn parse(b: &[u8]) -> std::result::Result<Footer, String> {
        if b[48..56] != FOOTER_MAGIC {
            return Err(format!("no footer: the last 8 bytes are {}, not \"CSTFOOT\\0\"", show_bytes(&b[48..56])));
        }
        let stored = get_u32(b, 44);
        let actual = crc32(&b[..44]);
        if stored != actual {
            return Err(format!("footer checksum mismatch (stored {stored:08x}, computed {actual:08x})"));
        }
        if get_u32(b, 40) != 0 {
            return Err("reserved footer field is not zero".into());
        }
        Ok(Footer {
            index_offset: get_u64(b, 0),
            blocks: get_u64(b, 8),
            accesses: get_u64(b, 16),
            instrs: get_u64(b, 24),
            threads: get_u32(b, 32),
            index_crc: get_u32(b, 36),
        })
    }
}

/// Recompute every checksum of a `.cst` image in place (the header's, each
/// block header's, the index's and the footer's) wherever its frame can be
/// found, so that a fuzzer's mutations reach the checks behind the
/// checksums. For fuzzing only.
#[cfg(feature = "fuzzing")]
pub fn reseal(b: &mut [u8]) {
    let len = b.len();
    let fixed = FILE_HEADER_FIXED as usize;
    if len >= fixed + 4 && b[0..8] == MAGIC {
        let meta_end = fixed + get_u32(b, 16) as usize;
        if meta_end + 4 <= len {
            let crc = crc32_update(crc32(&b[..fixed]), &b[fixed..meta_end]);
            b[meta_end..meta_end + 4].copy_from_slice(&crc.to_le_bytes());
        }
    }
    let mut p = 0;
    while p + BLOCK_HEADER_LEN as usize <= len {
        if b[p..p + 4] == BLOCK_MAGIC {
            let crc = crc32(&b[p..p + 44]);
            b[p + 44..p + 48].copy_from_slice(&crc.to_le_bytes());
        }
        p += 1;
    }
    if len >= FOOTER_LEN as usize && b[len - 8..] == FOOTER_MAGIC {
        let f = len - FOOTER_LEN as usize;
        let index = get_u64(b, f);
        if index.checked_add(4).is_some_and(|end| end <= f as u64) {
            let index = index as usize;
            let crc = crc32(&b[index..f]);
            b[f + 36..f + 40].copy_from_slice(&crc.to_le_bytes());
        }
        let crc = crc32(&b[f..f + 44]);
        b[f + 44..f + 48].copy_from_slice(&crc.to_le_bytes());
    }
}

// ---------------------------------------------------------------------------
// Writer.

/// Tuning of a [`NativeWriter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterOptions {
    /// Records per block (1..=[`MAX_BLOCK_RECORDS`]). Larger blocks compress
    /// a little better; smaller ones make seeking finer. Tests use tiny ones
    /// to cross block boundaries.
    pub block_records: u32,
    /// zstd compression level (1..=22). The default, 1, compresses about
    /// four times faster than zstd's usual 3 and makes files about 1% larger
    /// on address traces, whose random parts no level compresses much.
    pub level: i32,
}

impl Default for WriterOptions {
    fn default() -> WriterOptions {
        WriterOptions { block_records: MAX_BLOCK_RECORDS, level: 1 }
    }
}

/// Records of one thread waiting to fill a block.
struct ThreadBuf {
    thread: u32,
    pending: Vec<Access>,
    accesses: u64,
    instrs: u64,
    blocks: u64,
}

/// Writes a `.cst` trace to any [`Output`] (no seeking needed).
///
/// Records are buffered per thread until a block is full, so memory is
/// bounded by one block per thread plus one 32-byte index entry per block
/// written. The trace is only complete after [`finish`](Self::finish),
/// which commits the output: a file made by [`create`](Self::create) and
/// dropped before that is not there at all.
pub struct NativeWriter<W: Output> {
    out: W,
    name: String,
    options: WriterOptions,
    offset: u64,
    seq: u64,
    threads: Vec<ThreadBuf>,
    last: usize,
    entries: Vec<IndexEntry>,
    enc: Encoder,
}

impl NativeWriter<StagedFile> {
    /// Write `header` to a new content of the file at `path`, which replaces
    /// the file's old one on [`finish`](Self::finish). `inputs` are the files
    /// the trace is made from: `path` may not be one of them.
    pub fn create(path: impl AsRef<Path>, header: &TraceHeader, inputs: &[PathBuf]) -> Result<Self> {
        Self::create_with(path, header, inputs, WriterOptions::default())
    }

    /// [`create`](Self::create) with explicit options.
    pub fn create_with(
        path: impl AsRef<Path>,
        header: &TraceHeader,
        inputs: &[PathBuf],
        options: WriterOptions,
    ) -> Result<Self> {
        let name = path.as_ref().display().to_string();
        NativeWriter::new(StagedFile::create(path, inputs)?, name, header, options)
    }
}

impl<W: Output> NativeWriter<W> {
    /// A writer to `out`, named `name` in error messages; writes `header`.
    pub fn new(mut out: W, name: impl Into<String>, header: &TraceHeader, options: WriterOptions) -> Result<Self> {
        let name = name.into();
        let bad = |msg: String| Error::trace(&name, TracePos::default(), msg);
        if let Some(problem) = header.problem() {
            return Err(bad(problem));
        }
        if options.block_records == 0 || options.block_records > MAX_BLOCK_RECORDS {
            return Err(bad(format!("block_records must be 1..={MAX_BLOCK_RECORDS}, got {}", options.block_records)));
        }
        let meta = serde_json::to_vec(header).map_err(|e| bad(format!("cannot encode the header as JSON: {e}")))?;
        if meta.len() > MAX_META_BYTES as usize {
            return Err(bad(format!(
                "header metadata is {} bytes, more than the limit of {MAX_META_BYTES}",
                meta.len()
            )));
        }
        let mut head = Vec::with_capacity(meta.len() + 24);
        head.extend_from_slice(&MAGIC);
        head.extend_from_slice(&VERSION.to_le_bytes());
        head.extend_from_slice(&0u16.to_le_bytes());
        head.extend_from_slice(&header.page_bytes.to_le_bytes());
        head.extend_from_slice(&(meta.len() as u32).to_le_bytes());
        head.extend_from_slice(&meta);
        let crc = crc32(&head);
        head.extend_from_slice(&crc.to_le_bytes());
        out.write_all(&head).map_err(|e| Error::io(&name, e))?;
        let enc =
            Encoder::new(options.level).map_err(|e| bad(format!("cannot set up zstd level {}: {e}", options.level)))?;
        let mut sorted = header.threads.clone();
        sorted.sort_unstable();
        Ok(NativeWriter {
            out,
            offset: head.len() as u64,
            name,
            options,
            seq: 0,
            threads: sorted
                .into_iter()
                .map(|thread| ThreadBuf { thread, pending: Vec::new(), accesses: 0, instrs: 0, blocks: 0 })
                .collect(),
            last: 0,
            entries: Vec::new(),
            enc,
        })
    }

    /// Append an access to the stream of the header's only thread (an
    /// error if the header declares several).
    pub fn write(&mut self, access: &Access) -> Result<()> {
        if self.threads.len() != 1 {
            return Err(Error::trace(
                &self.name,
                TracePos::default(),
                format!(
                    "write() needs a single-thread trace; this one declares threads {}: use write_thread",
                    list_threads(&self.threads.iter().map(|t| t.thread).collect::<Vec<_>>())
                ),
            ));
        }
        self.push(0, access)
    }

    /// Append an access to the stream of `thread`, which the header must
    /// declare.
    pub fn write_thread(&mut self, thread: u32, access: &Access) -> Result<()> {
        let i = self.thread_slot(thread)?;
        self.push(i, access)
    }

    /// Append several accesses of `thread`.
    pub fn write_all_thread(&mut self, thread: u32, accesses: &[Access]) -> Result<()> {
        let i = self.thread_slot(thread)?;
        for a in accesses {
            self.push(i, a)?;
        }
        Ok(())
    }

    fn thread_slot(&mut self, thread: u32) -> Result<usize> {
        if self.threads[self.last].thread == thread {
            return Ok(self.last);
        }
        match self.threads.binary_search_by_key(&thread, |t| t.thread) {
            Ok(i) => {
                self.last = i;
                Ok(i)
            }
            Err(_) => Err(Error::trace(
                &self.name,
                TracePos::default(),
                format!(
                    "thread {thread} is not declared in the header (threads: {})",
                    list_threads(&self.threads.iter().map(|t| t.thread).collect::<Vec<_>>())
                ),
            )),
        }
    }

    #[inline]
    fn push(&mut self, i: usize, access: &Access) -> Result<()> {
        let t = &mut self.threads[i];
        if t.pending.capacity() == 0 {
            t.pending.reserve_exact(self.options.block_records as usize);
        }
        t.pending.push(*access);
        if t.pending.len() >= self.options.block_records as usize {
            self.flush_thread(i)?;
        }
        Ok(())
    }

    /// Encode and write the pending records of thread slot `i` as one block.
    fn flush_thread(&mut self, i: usize) -> Result<()> {
        let t = &mut self.threads[i];
        if t.pending.is_empty() {
            return Ok(());
        }
        let name = &self.name;
        let (raw_len, instrs) = self
            .enc
            .encode(&t.pending)
            .map_err(|e| Error::trace(name, pos_at(self.offset, Some(self.seq)), format!("zstd failed: {e}")))?;
        let header = BlockHeader {
            thread: t.thread,
            seq: self.seq,
            first: t.accesses,
            records: t.pending.len() as u32,
            raw_len: raw_len as u32,
            comp_len: self.enc.comp.len() as u32,
            instrs,
        };
        self.entries.push(IndexEntry {
            offset: self.offset,
            first: t.accesses,
            instrs_before: t.instrs,
            thread: t.thread,
            records: header.records,
        });
        self.out
            .write_all(&header.to_bytes())
            .and_then(|_| self.out.write_all(&self.enc.comp))
            .map_err(|e| Error::io(name, e))?;
        self.offset += BLOCK_HEADER_LEN + self.enc.comp.len() as u64;
        self.seq += 1;
        t.accesses += t.pending.len() as u64;
        t.instrs += instrs;
        t.blocks += 1;
        t.pending.clear();
        Ok(())
    }

    /// Write the remaining blocks, the index and the footer; flush.
    pub fn finish(mut self) -> Result<TraceSummary> {
        for i in 0..self.threads.len() {
            self.flush_thread(i)?;
        }
        let index_offset = self.offset;
        // Entries of one thread were pushed in stream order: a stable sort by
        // thread keeps them so.
        self.entries.sort_by_key(|e| e.thread);
        let mut index = Vec::with_capacity(
            4 + self.entries.len() * INDEX_ENTRY_LEN as usize + self.threads.len() * THREAD_ROW_LEN as usize,
        );
        index.extend_from_slice(&INDEX_MAGIC);
        for e in &self.entries {
            index.extend_from_slice(&e.to_bytes());
        }
        let mut first_entry = 0;
        let mut threads = Vec::with_capacity(self.threads.len());
        for t in &self.threads {
            let row =
                ThreadRow { thread: t.thread, first_entry, blocks: t.blocks, accesses: t.accesses, instrs: t.instrs };
            index.extend_from_slice(&row.to_bytes());
            first_entry += t.blocks;
            threads.push(ThreadSummary {
                thread: t.thread,
                accesses: t.accesses,
                instructions: t.instrs,
                blocks: t.blocks,
            });
        }
        let footer = Footer {
            index_offset,
            blocks: self.seq,
            accesses: threads.iter().map(|t| t.accesses).sum(),
            instrs: threads.iter().map(|t| t.instructions).sum(),
            threads: threads.len() as u32,
            index_crc: crc32(&index),
        };
        let name = &self.name;
        self.out
            .write_all(&index)
            .and_then(|_| self.out.write_all(&footer.to_bytes()))
            .map_err(|e| Error::io(name, e))?;
        self.out.commit().map_err(|e| Error::io(&self.name, e))?;
        Ok(TraceSummary {
            accesses: footer.accesses,
            instructions: footer.instrs,
            blocks: footer.blocks,
            threads,
            file_bytes: index_offset + index.len() as u64 + FOOTER_LEN,
        })
    }
}

// ---------------------------------------------------------------------------
// Reader.

/// Read exactly `buf.len()` bytes at `offset`; an early end of file is a
/// trace error (the caller checked the file length first, so it means the
/// file shrank), anything else an I/O error.
fn read_at<R: Read + Seek>(src: &mut R, name: &str, offset: u64, buf: &mut [u8]) -> Result<()> {
    src.seek(SeekFrom::Start(offset)).and_then(|_| src.read_exact(buf)).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            Error::trace(name, pos_at(offset, None), format!("unexpected end of file reading {} bytes", buf.len()))
        } else {
            Error::io(name, e)
        }
    })
}

/// Read and check the header of the `.cst` file in `src` (named `name` in
/// errors). Returns the header and the byte offset where the blocks start.
pub fn read_header<R: Read + Seek>(src: &mut R, name: &str) -> Result<(TraceHeader, u64)> {
    let file_len = src.seek(SeekFrom::End(0)).map_err(|e| Error::io(name, e))?;
    let err = |offset: u64, msg: String| Error::trace(name, pos_at(offset, None), msg);
    let min = FILE_HEADER_FIXED + 4;
    if file_len < min {
        let mut head = vec![0u8; file_len as usize];
        read_at(src, name, 0, &mut head)?;
        if !MAGIC.starts_with(&head) {
            return Err(err(0, "not a .cst trace: wrong magic number".into()));
        }
        return Err(err(
            0,
            format!("truncated: the file is {file_len} bytes, shorter than the smallest header ({min} bytes)"),
        ));
    }
    let mut fixed = [0u8; FILE_HEADER_FIXED as usize];
    read_at(src, name, 0, &mut fixed)?;
    if fixed[0..8] != MAGIC {
        return Err(err(
            0,
            format!("not a .cst trace: the file starts with {}, not \"CSTRACE\\0\"", show_bytes(&fixed[0..8])),
        ));
    }
    let version = get_u16(&fixed, 8);
    if version != VERSION {
        return Err(err(8, format!("unsupported .cst version {version} (this build reads version {VERSION})")));
    }
    let flags = get_u16(&fixed, 10);
    if flags != 0 {
        return Err(err(10, format!("unsupported header flags {flags:#06x} (this build knows none)")));
    }
    let page_bytes = get_u32(&fixed, 12);
    let meta_len = get_u32(&fixed, 16);
    if meta_len > MAX_META_BYTES {
        return Err(err(
            16,
            format!("header claims {meta_len} bytes of metadata, more than the limit of {MAX_META_BYTES}"),
        ));
    }
    let data_start = FILE_HEADER_FIXED + meta_len as u64 + 4;
    if data_start > file_len {
        return Err(err(
            16,
            format!(
                "truncated: the header claims {meta_len} bytes of metadata, so it ends at byte {data_start}, but the file ends at {file_len}"
            ),
        ));
    }
    let mut rest = vec![0u8; meta_len as usize + 4];
    read_at(src, name, FILE_HEADER_FIXED, &mut rest)?;
    let (meta, crc_bytes) = rest.split_at(meta_len as usize);
    let stored = get_u32(crc_bytes, 0);
    let actual = crc32_update(crc32(&fixed), meta);
    if stored != actual {
        return Err(err(
            data_start - 4,
            format!("header checksum mismatch (stored {stored:08x}, computed {actual:08x})"),
        ));
    }
    let header: TraceHeader = serde_json::from_slice(meta)
        .map_err(|e| err(FILE_HEADER_FIXED, format!("header metadata is not valid: {e}")))?;
    if header.page_bytes != page_bytes {
        return Err(err(
            12,
            format!("page size {page_bytes} in the fixed header differs from {} in the metadata", header.page_bytes),
        ));
    }
    if let Some(problem) = header.problem() {
        return Err(err(FILE_HEADER_FIXED, problem));
    }
    Ok((header, data_start))
}

/// The validated index of a finished file.
#[derive(Debug, Clone)]
struct Index {
    offset: u64,
    rows: Vec<ThreadRow>,
}

/// Read the footer and check the whole index against it, streaming (memory
/// does not grow with the number of blocks). `Err` says why there is no
/// usable index.
fn load_index<R: Read + Seek>(
    src: &mut R,
    name: &str,
    header: &TraceHeader,
    data_start: u64,
    file_len: u64,
) -> std::result::Result<(Index, TraceSummary), String> {
    let io_problem = |e: Error| e.to_string();
    if file_len < data_start + FOOTER_LEN {
        return Err("the file is too short to hold a footer".into());
    }
    let footer_start = file_len - FOOTER_LEN;
    let mut fb = [0u8; FOOTER_LEN as usize];
    read_at(src, name, footer_start, &mut fb).map_err(io_problem)?;
    let footer = Footer::parse(&fb)?;
    if footer.threads as usize != header.threads.len() {
        return Err(format!("footer lists {} threads, header declares {}", footer.threads, header.threads.len()));
    }
    let index_len = footer
        .blocks
        .checked_mul(INDEX_ENTRY_LEN)
        .and_then(|n| n.checked_add(4 + footer.threads as u64 * THREAD_ROW_LEN));
    if footer.index_offset < data_start
        || index_len.and_then(|n| n.checked_add(footer.index_offset)) != Some(footer_start)
    {
        return Err(format!(
            "footer places an index of {} blocks at byte offset {}, which does not end where the footer starts ({footer_start})",
            footer.blocks, footer.index_offset
        ));
    }
    let rows_at = footer_start - footer.threads as u64 * THREAD_ROW_LEN;
    let mut row_bytes = vec![0u8; (footer_start - rows_at) as usize];
    read_at(src, name, rows_at, &mut row_bytes).map_err(io_problem)?;
    let rows = row_bytes
        .chunks_exact(THREAD_ROW_LEN as usize)
        .map(ThreadRow::parse)
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let mut declared = header.threads.clone();
    declared.sort_unstable();
    let mut expect_entry = 0u64;
    let (mut accesses, mut instrs) = (0u64, 0u64);
    for (row, &thread) in rows.iter().zip(&declared) {
        if row.thread != thread || row.first_entry != expect_entry {
            return Err(format!(
                "thread table row for thread {} (first entry {}) does not match the header's threads or the entry count",
                row.thread, row.first_entry
            ));
        }
        expect_entry = expect_entry.saturating_add(row.blocks);
        accesses = accesses.saturating_add(row.accesses);
        instrs = instrs.saturating_add(row.instrs);
    }
    if expect_entry != footer.blocks || accesses != footer.accesses || instrs != footer.instrs {
        return Err("thread table totals do not match the footer".into());
    }

    // Stream the entries: check the CRC and that each thread's entries tile
    // its stream in order.
    let mut crc = crc32(&INDEX_MAGIC);
    let mut magic = [0u8; 4];
    read_at(src, name, footer.index_offset, &mut magic).map_err(io_problem)?;
    if magic != INDEX_MAGIC {
        return Err(format!(
            "expected the index (magic \"CSTI\") at byte offset {}, found {}",
            footer.index_offset,
            show_bytes(&magic)
        ));
    }
    let mut chunk = vec![0u8; 2048 * INDEX_ENTRY_LEN as usize];
    let mut entry = 0u64;
    let mut row_i = 0usize;
    let (mut next_first, mut last_instrs) = (0u64, 0u64);
    while entry < footer.blocks {
        let n = (footer.blocks - entry).min(2048);
        let bytes = &mut chunk[..(n * INDEX_ENTRY_LEN) as usize];
        read_at(src, name, footer.index_offset + 4 + entry * INDEX_ENTRY_LEN, bytes).map_err(io_problem)?;
        crc = crc32_update(crc, bytes);
        for b in bytes.chunks_exact(INDEX_ENTRY_LEN as usize) {
            while row_i < rows.len() && entry >= rows[row_i].first_entry + rows[row_i].blocks {
                if next_first != rows[row_i].accesses {
                    return Err(format!(
                        "index entries of thread {} cover {next_first} accesses, the thread table says {}",
                        rows[row_i].thread, rows[row_i].accesses
                    ));
                }
                row_i += 1;
                (next_first, last_instrs) = (0, 0);
            }
            let row = rows.get(row_i).ok_or("index has more entries than threads own")?;
            let e = IndexEntry::parse(b);
            let fits = e.offset >= data_start && e.offset.saturating_add(BLOCK_HEADER_LEN) <= footer.index_offset;
            if e.thread != row.thread
                || e.first != next_first
                || e.records == 0
                || e.records > MAX_BLOCK_RECORDS
                || e.instrs_before < last_instrs
                || e.instrs_before > row.instrs
                || !fits
            {
                return Err(format!("index entry {entry} is inconsistent: {e:?}"));
            }
            next_first += e.records as u64;
            last_instrs = e.instrs_before;
            entry += 1;
        }
    }
    while row_i < rows.len() {
        if next_first != rows[row_i].accesses {
            return Err(format!(
                "index entries of thread {} cover {next_first} accesses, the thread table says {}",
                rows[row_i].thread, rows[row_i].accesses
            ));
        }
        row_i += 1;
        next_first = 0;
    }
    crc = crc32_update(crc, &row_bytes);
    if crc != footer.index_crc {
        return Err(format!("index checksum mismatch (stored {:08x}, computed {crc:08x})", footer.index_crc));
    }
    let summary = TraceSummary {
        accesses: footer.accesses,
        instructions: footer.instrs,
        blocks: footer.blocks,
        threads: rows
            .iter()
            .map(|r| ThreadSummary { thread: r.thread, accesses: r.accesses, instructions: r.instrs, blocks: r.blocks })
            .collect(),
        file_bytes: file_len,
    };
    Ok((Index { offset: footer.index_offset, rows }, summary))
}

/// Where the next block of the reader's thread comes from.
#[derive(Debug, Clone, Copy)]
enum Cursor {
    /// Through the index: entries `next..end` are the thread's blocks to go.
    Indexed { next: u64, end: u64 },
    /// Walking the blocks in file order (no usable index): the next block
    /// header is at `offset` and is the file's block number `seq`.
    Sequential { offset: u64, seq: u64 },
}

/// Streams the accesses of one thread of a `.cst` file.
///
/// Memory does not depend on the trace's length: one compressed and one
/// decompressed block, the prediction tables, and the per-thread table of the
/// index. With a footer the reader jumps from block to block of its thread
/// through the on-disk index; without one (a writer that did not finish) it
/// walks the blocks in file order and stops with an error at the first
/// incomplete one, after delivering every complete block before it.
pub struct NativeReader<R = File> {
    src: R,
    name: String,
    file_len: u64,
    header: TraceHeader,
    data_start: u64,
    thread: u32,
    index: Option<Index>,
    index_problem: Option<String>,
    summary: Option<TraceSummary>,
    cursor: Cursor,
    /// Access index (within the thread) of the next record `fill` returns.
    position: u64,
    block: BlockDecoder,
    /// (file offset, ordinal) of the block being decoded, for errors.
    block_at: (u64, u64),
    comp: Vec<u8>,
    dctx: zstd_safe::DCtx<'static>,
    /// An error met after some records were already returned by `fill`.
    deferred: Option<Error>,
    failed: bool,
    /// The access a [`NativeReader::seek`] asked for, while the accesses
    /// before it in the current block are not yet decoded and dropped.
    seeking: Option<u64>,
}

impl<R> std::fmt::Debug for NativeReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeReader")
            .field("name", &self.name)
            .field("thread", &self.thread)
            .field("position", &self.position)
            .finish_non_exhaustive()
    }
}

impl NativeReader<File> {
    /// Open the trace at `path` and read its only thread (an error listing
    /// the threads if it has several).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_impl(path.as_ref(), None)
    }

    /// Open the trace at `path` and read the stream of `thread`.
    pub fn open_thread(path: impl AsRef<Path>, thread: u32) -> Result<Self> {
        Self::open_impl(path.as_ref(), Some(thread))
    }

    /// Open the trace at `path` at its first thread, whatever it declares:
    /// for what the file says of itself (header, index, summary).
    pub fn open_first(path: impl AsRef<Path>) -> Result<Self> {
        let name = path.as_ref().display().to_string();
        let mut file = File::open(path.as_ref()).map_err(|e| Error::io(&name, e))?;
        let (header, _) = read_header(&mut file, &name)?;
        NativeReader::new(file, name, header.threads.first().copied())
    }

    fn open_impl(path: &Path, thread: Option<u32>) -> Result<Self> {
        let name = path.display().to_string();
        let file = File::open(path).map_err(|e| Error::io(&name, e))?;
        NativeReader::new(file, name, thread)
    }
}

impl<R: Read + Seek> NativeReader<R> {
    /// A reader of `src`, named `name` in errors, for `thread` (or the only
    /// thread if `None`). Reads the header and, if present, checks the index.
    pub fn new(mut src: R, name: impl Into<String>, thread: Option<u32>) -> Result<Self> {
        let name = name.into();
        let (header, data_start) = read_header(&mut src, &name)?;
        let file_len = src.seek(SeekFrom::End(0)).map_err(|e| Error::io(&name, e))?;
        let thread = match thread {
            Some(t) if header.threads.contains(&t) => t,
            Some(t) => {
                return Err(Error::trace(
                    &name,
                    pos_at(FILE_HEADER_FIXED, None),
                    format!("the trace has no thread {t}; its threads are {}", list_threads(&header.threads)),
                ))
            }
            None if header.threads.len() == 1 => header.threads[0],
            None => {
                return Err(Error::trace(
                    &name,
                    pos_at(FILE_HEADER_FIXED, None),
                    format!(
                        "the trace has {} threads ({}); choose one{}",
                        header.threads.len(),
                        list_threads(&header.threads),
                        header.windows_hint()
                    ),
                ));
            }
        };
        let (index, index_problem, summary) = match load_index(&mut src, &name, &header, data_start, file_len) {
            Ok((index, summary)) => (Some(index), None, Some(summary)),
            Err(problem) => (None, Some(problem), None),
        };
        let mut reader = NativeReader {
            src,
            name,
            file_len,
            header,
            data_start,
            thread,
            index,
            index_problem,
            summary,
            cursor: Cursor::Sequential { offset: data_start, seq: 0 },
            position: 0,
            block: BlockDecoder::new(),
            block_at: (data_start, 0),
            comp: Vec::new(),
            dctx: zstd_safe::DCtx::create(),
            deferred: None,
            failed: false,
            seeking: None,
        };
        reader.rewind();
        Ok(reader)
    }

    /// The file's header.
    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// Totals from the footer; `None` if the file has no usable index.
    pub fn summary(&self) -> Option<&TraceSummary> {
        self.summary.as_ref()
    }

    /// Whether the file has a valid footer and index.
    pub fn is_indexed(&self) -> bool {
        self.index.is_some()
    }

    /// Why the file has no usable index (e.g. the writer did not finish).
    pub fn index_problem(&self) -> Option<&str> {
        self.index_problem.as_deref()
    }

    /// The thread this reader streams.
    pub fn thread(&self) -> u32 {
        self.thread
    }

    /// Index (within the thread) of the next access [`fill`](Workload::fill)
    /// returns.
    pub fn position(&self) -> u64 {
        self.seeking.unwrap_or(self.position)
    }

    /// Accesses of this reader's thread, if the file has an index.
    pub fn thread_len(&self) -> Option<u64> {
        self.row().map(|r| r.accesses)
    }

    fn row(&self) -> Option<&ThreadRow> {
        self.index.as_ref().and_then(|ix| ix.rows.iter().find(|r| r.thread == self.thread))
    }

    /// Go back to the thread's first access.
    fn rewind(&mut self) {
        self.cursor = match self.row() {
            Some(r) => Cursor::Indexed { next: r.first_entry, end: r.first_entry + r.blocks },
            None => Cursor::Sequential { offset: self.data_start, seq: 0 },
        };
        self.position = 0;
        self.seeking = None;
        self.block.clear();
        self.deferred = None;
        self.failed = false;
    }

    fn err(&self, offset: u64, block: Option<u64>, msg: impl Into<String>) -> Error {
        Error::trace(&self.name, pos_at(offset, block), msg)
    }

    /// Position the reader so that the next access returned is number
    /// `access` of the thread (0-based). With an index this reads only the
    /// block holding it; without one it walks the block headers (not their
    /// payloads). Seeking to the thread's length gives an empty stream.
    pub fn seek(&mut self, access: u64) -> Result<()> {
        self.rewind();
        match (self.row().copied(), self.index.as_ref().map(|ix| ix.offset)) {
            (Some(row), Some(index_offset)) => {
                if access > row.accesses {
                    return Err(self.err(
                        self.data_start,
                        None,
                        format!("cannot seek to access {access}: thread {} has {} accesses", self.thread, row.accesses),
                    ));
                }
                if access == row.accesses {
                    self.cursor =
                        Cursor::Indexed { next: row.first_entry + row.blocks, end: row.first_entry + row.blocks };
                    self.position = access;
                    return Ok(());
                }
                // Last entry of the thread whose first access is <= access.
                let (mut lo, mut hi) = (row.first_entry, row.first_entry + row.blocks);
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2;
                    if self.entry(index_offset, mid)?.first <= access {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                let e = self.entry(index_offset, lo)?;
                self.cursor = Cursor::Indexed { next: lo, end: row.first_entry + row.blocks };
                self.position = e.first;
            }
            _ => {
                let (mut offset, mut seq) = (self.data_start, 0);
                loop {
                    let h = self.sequential_header(offset, seq)?;
                    if h.thread == self.thread {
                        if h.first + h.records as u64 > access {
                            break;
                        }
                        self.position = h.first + h.records as u64;
                    }
                    offset += BLOCK_HEADER_LEN + h.comp_len as u64;
                    seq += 1;
                }
                self.cursor = Cursor::Sequential { offset, seq };
            }
        }
        // The accesses of the block before `access` are decoded and dropped
        // by the first fill: on a producer thread, not the opener's.
        self.seeking = (self.position < access).then_some(access);
        Ok(())
    }

    /// Decode and drop the accesses before `access` in the current block.
    fn discard_to(&mut self, access: u64) -> Result<()> {
        let mut scratch = [Access::default(); 256];
        while self.position < access {
            let want = ((access - self.position) as usize).min(scratch.len());
            let n = self.fill_impl(&mut scratch[..want])?;
            if let Some(e) = self.deferred.take() {
                return Err(e);
            }
            if n == 0 {
                return Err(self.err(
                    self.block_at.0,
                    Some(self.block_at.1),
                    format!("stream ended at access {} while seeking to {access}", self.position),
                ));
            }
        }
        Ok(())
    }

    /// Entry `i` of the on-disk index.
    fn entry(&mut self, index_offset: u64, i: u64) -> Result<IndexEntry> {
        let mut b = [0u8; INDEX_ENTRY_LEN as usize];
        read_at(&mut self.src, &self.name, index_offset + 4 + i * INDEX_ENTRY_LEN, &mut b)?;
        Ok(IndexEntry::parse(&b))
    }

    /// Read the block header at `offset` during a sequential walk, turning
    /// the end of the blocks into the right error: a walk without an index
    /// never ends cleanly.
    fn sequential_header(&mut self, offset: u64, seq: u64) -> Result<BlockHeader> {
        let problem = self.index_problem.clone().unwrap_or_else(|| "no index".into());
        let avail = self.file_len.saturating_sub(offset);
        if avail == 0 {
            return Err(self.err(
                offset,
                Some(seq),
                format!(
                    "truncated: the file ends after {seq} blocks at byte offset {offset}, with no index or footer (was the writer finished?)"
                ),
            ));
        }
        let mut b = [0u8; BLOCK_HEADER_LEN as usize];
        let n = avail.min(BLOCK_HEADER_LEN) as usize;
        read_at(&mut self.src, &self.name, offset, &mut b[..n])?;
        if b[..n.min(4)] == INDEX_MAGIC[..n.min(4)] && n >= 4 {
            return Err(self.err(
                offset,
                Some(seq),
                format!("the blocks end here, but the index that follows is unusable: {problem}"),
            ));
        }
        if n < BLOCK_HEADER_LEN as usize {
            return Err(self.err(
                offset,
                Some(seq),
                format!(
                    "truncated: block {seq} at byte offset {offset} is incomplete (expected a {BLOCK_HEADER_LEN}-byte block header, file ends at {})",
                    self.file_len
                ),
            ));
        }
        let h = BlockHeader::parse(&b).map_err(|m| self.err(offset, Some(seq), m))?;
        let end = offset + BLOCK_HEADER_LEN + h.comp_len as u64;
        if end > self.file_len {
            return Err(self.err(
                offset,
                Some(seq),
                format!(
                    "truncated: block {seq} at byte offset {offset} is incomplete (expected {} bytes, file ends at {})",
                    BLOCK_HEADER_LEN + h.comp_len as u64,
                    self.file_len
                ),
            ));
        }
        if h.seq != seq {
            return Err(self.err(
                offset,
                Some(seq),
                format!("block header says it is block {}, expected block {seq} (blocks missing or repeated)", h.seq),
            ));
        }
        if !self.header.threads.contains(&h.thread) {
            return Err(self.err(
                offset,
                Some(seq),
                format!("block of thread {}, which the header does not declare", h.thread),
            ));
        }
        if h.thread == self.thread && h.first != self.position {
            return Err(self.err(
                offset,
                Some(seq),
                format!(
                    "block starts at access {} of thread {}, expected {} (blocks missing or repeated)",
                    h.first, h.thread, self.position
                ),
            ));
        }
        Ok(h)
    }

    /// Load the next block of the thread into the decoder. `Ok(false)` at
    /// the end of an indexed stream.
    fn next_block(&mut self) -> Result<bool> {
        let (offset, h) = match self.cursor {
            Cursor::Indexed { next, end } => {
                if next >= end {
                    return Ok(false);
                }
                let index_offset = self.index.as_ref().map_or(0, |ix| ix.offset);
                let e = self.entry(index_offset, next)?;
                let mut b = [0u8; BLOCK_HEADER_LEN as usize];
                read_at(&mut self.src, &self.name, e.offset, &mut b)?;
                let h = BlockHeader::parse(&b).map_err(|m| self.err(e.offset, None, m))?;
                if h.thread != e.thread || h.first != e.first || h.records != e.records {
                    return Err(self.err(
                        e.offset,
                        Some(h.seq),
                        format!(
                            "block header (thread {}, first access {}, {} records) disagrees with its index entry (thread {}, first access {}, {} records)",
                            h.thread, h.first, h.records, e.thread, e.first, e.records
                        ),
                    ));
                }
                if e.offset + BLOCK_HEADER_LEN + h.comp_len as u64 > self.index.as_ref().map_or(0, |ix| ix.offset) {
                    return Err(self.err(e.offset, Some(h.seq), "block runs into the index"));
                }
                self.cursor = Cursor::Indexed { next: next + 1, end };
                (e.offset, h)
            }
            Cursor::Sequential { mut offset, mut seq } => loop {
                let h = self.sequential_header(offset, seq)?;
                let at = offset;
                offset += BLOCK_HEADER_LEN + h.comp_len as u64;
                seq += 1;
                self.cursor = Cursor::Sequential { offset, seq };
                if h.thread == self.thread {
                    break (at, h);
                }
            },
        };
        self.load_payload(offset, h)?;
        Ok(true)
    }

    /// Read, check and decompress the payload of the block `h` at `offset`.
    fn load_payload(&mut self, offset: u64, h: BlockHeader) -> Result<()> {
        self.block_at = (offset, h.seq);
        let at = offset + BLOCK_HEADER_LEN;
        let n = h.comp_len as usize;
        if self.comp.len() < n {
            self.comp.resize(n, 0);
        }
        read_at(&mut self.src, &self.name, at, &mut self.comp[..n])?;
        let comp = &self.comp[..n];
        let fail = |m: String| Error::trace(&self.name, pos_at(at, Some(h.seq)), m);
        // Insist on a single zstd frame that records its size and carries a
        // checksum, so that every damaged payload byte is detected.
        if n < 6 || comp[0..4] != [0x28, 0xB5, 0x2F, 0xFD] || comp[4] & 0x04 == 0 {
            return Err(fail("corrupt block: payload is not a zstd frame with a content checksum".into()));
        }
        match zstd_safe::get_frame_content_size(comp) {
            Ok(Some(size)) if size == h.raw_len as u64 => {}
            _ => {
                return Err(fail(format!(
                    "corrupt block: zstd frame does not declare the {} bytes the block header announces",
                    h.raw_len
                )))
            }
        }
        if zstd_safe::find_frame_compressed_size(comp) != Ok(n) {
            return Err(fail(format!("corrupt block: the zstd frame is not exactly the block's {n} payload bytes")));
        }
        let raw = &mut self.block.raw;
        raw.clear();
        raw.reserve(h.raw_len as usize);
        match self.dctx.decompress(raw, comp) {
            Ok(got) if got == h.raw_len as usize => {}
            Ok(got) => return Err(fail(format!("corrupt block: decompressed to {got} bytes, expected {}", h.raw_len))),
            Err(code) => return Err(fail(format!("corrupt block: zstd: {}", zstd_safe::get_error_name(code)))),
        }
        self.block.start(h.records, h.instrs).map_err(|m| Error::trace(&self.name, pos_at(offset, Some(h.seq)), m))
    }

    fn fill_impl(&mut self, buf: &mut [Access]) -> Result<usize> {
        let mut filled = 0;
        while filled < buf.len() {
            if self.block.remaining() == 0 {
                match self.next_block() {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(e) if filled > 0 => {
                        self.deferred = Some(e);
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
            let n = self
                .block
                .decode(&mut buf[filled..])
                .map_err(|m| Error::trace(&self.name, pos_at(self.block_at.0, Some(self.block_at.1)), m))?;
            filled += n;
            self.position += n as u64;
        }
        Ok(filled)
    }
}

impl<R: Read + Seek + Send> Workload for NativeReader<R> {
    fn fill(&mut self, buf: &mut [Access]) -> Result<usize> {
        if let Some(e) = self.deferred.take() {
            self.failed = true;
            return Err(e);
        }
        if self.failed {
            return Err(self.err(self.block_at.0, Some(self.block_at.1), "the reader stopped at an earlier error"));
        }
        let result = match self.seeking.take() {
            Some(access) => self.discard_to(access).and_then(|()| self.fill_impl(buf)),
            None => self.fill_impl(buf),
        };
        if result.is_err() {
            self.failed = true;
        }
        result
    }

    fn len_hint(&self) -> Option<u64> {
        self.thread_len().map(|n| n.saturating_sub(self.position()))
    }
}

// ---------------------------------------------------------------------------
// Scanning.

/// What a full pass over one thread's stream found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TraceStats {
    /// Accesses read.
    pub accesses: u64,
    /// Accesses per kind, indexed by [`AccessKind::index`].
    pub by_kind: [u64; 3],
    /// Sum of the accesses' instruction counts.
    pub instructions: u64,
    /// Distinct 64-byte lines touched (every line of each access's bytes).
    pub lines_64: u64,
    /// Distinct 4 KiB pages touched (every page of each access's bytes).
    pub pages_4k: u64,
    /// Lowest address accessed.
    pub min_addr: Option<VirtAddr>,
    /// Highest first address of an access.
    pub max_addr: Option<VirtAddr>,
    /// Reuse distances of the data references, in 64-byte lines (each
    /// reference counted at its first line).
    pub reuse: ReuseHistogram,
}

/// Read a whole stream and compute its [`TraceStats`] (memory grows with
/// the footprint, one set entry per distinct line).
pub fn scan_workload(workload: &mut dyn Workload) -> Result<TraceStats> {
    let mut stats = TraceStats::default();
    let mut lines = SeenSet::default();
    let mut pages = SeenSet::default();
    let mut reuse = ReuseDistances::default();
    let mut buf = vec![Access::default(); 4096];
    loop {
        let n = workload.fill(&mut buf)?;
        if n == 0 {
            break;
        }
        for a in &buf[..n] {
            stats.accesses += 1;
            stats.by_kind[a.kind.index()] += 1;
            stats.instructions += a.instrs as u64;
            let first = a.addr.0;
            let last = first.saturating_add((a.size as u64).max(1) - 1);
            for line in (first >> 6)..=(last >> 6) {
                lines.insert(line);
            }
            for page in (first >> 12)..=(last >> 12) {
                pages.insert(page);
            }
            stats.min_addr = Some(stats.min_addr.map_or(a.addr, |m| m.min(a.addr)));
            stats.max_addr = Some(stats.max_addr.map_or(a.addr, |m| m.max(a.addr)));
            if a.kind != AccessKind::Ifetch {
                reuse.record(first >> 6);
            }
        }
    }
    stats.reuse = reuse.histogram;
    stats.lines_64 = lines.len();
    stats.pages_4k = pages.len();
    Ok(stats)
}

/// Read the stream of `thread` (or the only thread) of the `.cst` file at
/// `path` and compute its [`TraceStats`].
pub fn scan(path: impl AsRef<Path>, thread: Option<u32>) -> Result<TraceStats> {
    let mut reader = match thread {
        Some(t) => NativeReader::open_thread(path, t)?,
        None => NativeReader::open(path)?,
    };
    scan_workload(&mut reader)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::collect;
    use proptest::prelude::*;
    use std::io::Cursor as IoCursor;

    const NAME: &str = "mem.cst";

    fn opts(block_records: u32) -> WriterOptions {
        WriterOptions { block_records, level: 1 }
    }

    /// Write `streams` (thread, accesses interleaved in this order) to bytes.
    fn write_trace(threads: &[u32], records: &[(u32, Access)], options: WriterOptions) -> (Vec<u8>, TraceSummary) {
        let mut bytes = Vec::new();
        let header = TraceHeader::new("test").with_threads(threads.to_vec());
        let mut w = NativeWriter::new(&mut bytes, NAME, &header, options).unwrap();
        for (t, a) in records {
            w.write_thread(*t, a).unwrap();
        }
        let summary = w.finish().unwrap();
        (bytes, summary)
    }

    fn reader(bytes: &[u8], thread: Option<u32>) -> Result<NativeReader<IoCursor<Vec<u8>>>> {
        NativeReader::new(IoCursor::new(bytes.to_vec()), NAME, thread)
    }

    fn read_thread(bytes: &[u8], thread: u32) -> Result<Vec<Access>> {
        collect(&mut reader(bytes, Some(thread))?)
    }

    fn per_thread(records: &[(u32, Access)], thread: u32) -> Vec<Access> {
        records.iter().filter(|(t, _)| *t == thread).map(|(_, a)| *a).collect()
    }

    fn access(addr: u64, pc: u64, instrs: u32, size: u16, kind: AccessKind) -> Access {
        Access { addr: VirtAddr(addr), pc: VirtAddr(pc), instrs, size, kind }
    }

    /// `n` accesses of the default `loop` workload (a loop body of strided
    /// walks and Zipf-popular heap accesses) run with seed `seed`, built as
    /// a config would build it.
    fn loop_accesses(n: usize, seed: u64) -> Vec<Access> {
        let raw = crate::plugin::PluginConfig { kind: "loop".into(), params: serde_json::json!({"accesses": n}) };
        let ctx = crate::trace::WorkloadCtx {
            seed,
            component: "task0".into(),
            loc: "workload".into(),
            base_dir: None,
            thread: Default::default(),
        };
        let mut workload = crate::trace::WorkloadConfig::parse(&raw, "workload").unwrap().build(&ctx).unwrap();
        let accesses = collect(&mut *workload).unwrap();
        assert_eq!(accesses.len(), n);
        accesses
    }

    /// A mixed multi-thread sequence with strides, jumps and edge values:
    /// the default loop with some records changed.
    fn sample(n: usize, threads: &[u32], seed: u64) -> Vec<(u32, Access)> {
        let mut rng = crate::util::rng::Rng::from_seed(seed);
        loop_accesses(n, seed)
            .into_iter()
            .enumerate()
            .map(|(i, mut a)| {
                let t = threads[rng.below(threads.len() as u64) as usize];
                match rng.below(10) {
                    0 => a.addr = VirtAddr(u64::MAX - rng.below(3)),
                    1 => a.addr = VirtAddr(rng.below(2)),
                    2 => a.size = 1 + rng.below(65535) as u16,
                    3 => a.instrs = u32::MAX - rng.below(2) as u32,
                    4 => a.kind = AccessKind::Ifetch,
                    5 => a.pc = VirtAddr(rng.next_u64()),
                    _ => {}
                }
                if i % 17 == 0 {
                    a.instrs = 0;
                }
                (t, a)
            })
            .collect()
    }

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32_update(crc32(b"1234"), b"56789"), 0xCBF4_3926);
    }

    #[test]
    fn round_trips_a_multi_thread_trace_with_small_blocks() {
        let threads = [3, 0, 7];
        let records = sample(5000, &threads, 1);
        let (bytes, summary) = write_trace(&threads, &records, opts(97));
        assert_eq!(summary.accesses, 5000);
        assert_eq!(summary.file_bytes, bytes.len() as u64);
        for t in threads {
            let expected = per_thread(&records, t);
            let ts = summary.thread(t).unwrap();
            assert_eq!(ts.accesses, expected.len() as u64);
            assert_eq!(ts.instructions, expected.iter().map(|a| a.instrs as u64).sum::<u64>());
            assert_eq!(ts.blocks, (expected.len() as u64).div_ceil(97));
            let r = reader(&bytes, Some(t)).unwrap();
            assert!(r.is_indexed(), "{:?}", r.index_problem());
            assert_eq!(r.summary(), Some(&summary));
            assert_eq!(r.len_hint(), Some(expected.len() as u64));
            assert_eq!(read_thread(&bytes, t).unwrap(), expected, "thread {t}");
        }
    }

    #[test]
    fn header_round_trips_with_metadata() {
        let mut header = TraceHeader::new("lackey --trace-mem=yes ls").with_threads(vec![5, 9]);
        header.page_bytes = 2 << 20;
        header.meta = serde_json::json!({"pid": 42, "cmd": ["ls", "-l"]});
        let mut bytes = Vec::new();
        NativeWriter::new(&mut bytes, NAME, &header, opts(10)).unwrap().finish().unwrap();
        let r = reader(&bytes, Some(9)).unwrap();
        assert_eq!(r.header(), &header);
        assert_eq!(r.summary().unwrap().accesses, 0);
        assert_eq!(collect(&mut reader(&bytes, Some(5)).unwrap()).unwrap(), vec![]);
    }

    #[test]
    fn thread_choice_is_checked() {
        let (bytes, _) = write_trace(&[1, 2], &[(1, Access::load(64, 8))], opts(10));
        let err = reader(&bytes, None).unwrap_err().to_string();
        assert!(err.contains("2 threads (1, 2)"), "{err}");
        let err = reader(&bytes, Some(3)).unwrap_err().to_string();
        assert!(err.contains("no thread 3") && err.contains("1, 2"), "{err}");
        let (bytes, _) = write_trace(&[4], &[(4, Access::load(64, 8))], opts(10));
        assert_eq!(reader(&bytes, None).unwrap().thread(), 4);
    }

    #[test]
    fn writer_rejects_bad_headers_and_undeclared_threads() {
        let mut sink = Vec::new();
        let dup = TraceHeader::new("x").with_threads(vec![1, 1]);
        assert!(NativeWriter::new(&mut sink, NAME, &dup, opts(8)).is_err());
        let none = TraceHeader::new("x").with_threads(vec![]);
        assert!(NativeWriter::new(&mut sink, NAME, &none, opts(8)).is_err());
        let mut odd = TraceHeader::new("x");
        odd.page_bytes = 3000;
        assert!(NativeWriter::new(&mut sink, NAME, &odd, opts(8)).is_err());
        assert!(NativeWriter::new(&mut sink, NAME, &TraceHeader::new("x"), opts(0)).is_err());

        let two = TraceHeader::new("x").with_threads(vec![1, 2]);
        let mut w = NativeWriter::new(&mut sink, NAME, &two, opts(8)).unwrap();
        let err = w.write(&Access::load(0, 1)).unwrap_err().to_string();
        assert!(err.contains("write_thread"), "{err}");
        let err = w.write_thread(5, &Access::load(0, 1)).unwrap_err().to_string();
        assert!(err.contains("thread 5") && err.contains("1, 2"), "{err}");
    }

    #[test]
    fn seek_gives_the_suffix_at_every_boundary() {
        let threads = [0, 1];
        let records = sample(700, &threads, 2);
        let (bytes, _) = write_trace(&threads, &records, opts(50));
        for t in threads {
            let expected = per_thread(&records, t);
            let mut r = reader(&bytes, Some(t)).unwrap();
            let len = expected.len() as u64;
            let points = (0..=len).filter(|n| n % 50 <= 1 || n % 50 == 49 || n % 13 == 0);
            for n in points {
                r.seek(n).unwrap();
                assert_eq!(r.position(), n);
                assert_eq!(r.len_hint(), Some(len - n));
                assert_eq!(collect(&mut r).unwrap(), expected[n as usize..], "seek {n}");
            }
            assert!(r.seek(len + 1).is_err());
        }
    }

    #[test]
    fn seek_without_an_index_walks_block_headers() {
        let records: Vec<_> = (0..300u64).map(|i| (0, Access::load(i * 8, 8))).collect();
        let (bytes, _) = write_trace(&[0], &records, opts(40));
        // Drop the footer: the reader must fall back to the sequential walk.
        let cut = &bytes[..bytes.len() - 1];
        let mut r = reader(cut, None).unwrap();
        assert!(!r.is_indexed());
        assert!(r.summary().is_none());
        for n in [0u64, 1, 39, 40, 41, 150, 299] {
            r.seek(n).unwrap();
            let mut buf = vec![Access::default(); 1000];
            let got = r.fill(&mut buf).unwrap();
            assert_eq!(buf[0], records[n as usize].1);
            assert_eq!(got as u64, 300 - n);
            // The walk ends at the index whose footer is gone: an error.
            let err = r.fill(&mut buf).unwrap_err().to_string();
            assert!(err.contains("index that follows is unusable"), "{err}");
        }
    }

    #[test]
    fn truncated_files_read_up_to_the_cut_then_report_it() {
        let records: Vec<_> = (0..1000u64).map(|i| (0, Access::load(0x1000 + i * 64, 8))).collect();
        let (bytes, summary) = write_trace(&[0], &records, opts(100));
        assert_eq!(summary.blocks, 10);
        // Cut the file in the middle of the payload of block 4.
        let mut r = reader(&bytes, None).unwrap();
        let index_offset = r.index.as_ref().unwrap().offset;
        let block4 = r.entry(index_offset, 4).unwrap().offset;
        let cut_at = block4 + 60;
        let mut r = reader(&bytes[..cut_at as usize], None).unwrap();
        assert!(!r.is_indexed());
        let mut out = Vec::new();
        let mut buf = vec![Access::default(); 64];
        let err = loop {
            match r.fill(&mut buf) {
                Ok(0) => panic!("a truncated file must not end cleanly"),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => break e,
            }
        };
        assert_eq!(out, per_thread(&records[..400], 0));
        let Error::Trace { pos, message, .. } = &err else { panic!("{err}") };
        assert_eq!(pos.block, Some(4));
        assert_eq!(pos.offset, Some(block4));
        assert!(
            message.contains(&format!("block 4 at byte offset {block4}"))
                && message.contains(&format!("file ends at {cut_at}")),
            "{message}"
        );
        // Later calls keep failing instead of pretending the stream ended.
        assert!(r.fill(&mut buf).is_err());
    }

    /// Read every thread to its end; `Err` if anything is wrong.
    fn read_everything(bytes: &[u8]) -> Result<Vec<Vec<Access>>> {
        let (header, _) = read_header(&mut IoCursor::new(bytes), NAME)?;
        let mut all = Vec::new();
        for &t in &header.threads {
            let mut r = reader(bytes, Some(t))?;
            all.push(collect(&mut r)?);
        }
        Ok(all)
    }

    fn has_offset(e: &Error) -> bool {
        matches!(e, Error::Trace { pos, .. } if pos.offset.is_some())
    }

    #[test]
    fn every_truncation_and_every_flipped_byte_is_an_error_with_an_offset() {
        let threads = [0, 2];
        let records = sample(120, &threads, 3);
        let (bytes, _) = write_trace(&threads, &records, opts(25));
        let original = read_everything(&bytes).unwrap();
        for cut in 0..bytes.len() {
            let err = read_everything(&bytes[..cut]).expect_err("truncated file read cleanly");
            assert!(has_offset(&err), "cut {cut}: {err}");
        }
        // A flip is either reported, or (rarely: a bit zstd's decoder does
        // not depend on) yields exactly the original content, which zstd's
        // checksum of the decoded bytes vouches for.
        let mut harmless = 0;
        let mut tried = 0;
        for at in 0..bytes.len() {
            for flip in [0x01u8, 0x10, 0x80, 0xff] {
                let mut bad = bytes.clone();
                bad[at] ^= flip;
                tried += 1;
                match read_everything(&bad) {
                    Err(err) => assert!(has_offset(&err), "flip {flip:#x} at {at}: {err}"),
                    Ok(content) => {
                        assert_eq!(content, original, "flip {flip:#x} at {at} misread");
                        harmless += 1;
                    }
                }
            }
        }
        assert!(harmless * 100 < tried, "{harmless} of {tried} flips unnoticed");
    }

    #[test]
    fn header_fields_cannot_force_huge_allocations() {
        let (bytes, _) = write_trace(&[0], &[(0, Access::load(1, 1))], opts(8));
        // Metadata length far beyond the limit.
        let mut bad = bytes.clone();
        bad[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
        let err = reader(&bad, None).unwrap_err().to_string();
        assert!(err.contains("byte offset 16") && err.contains("limit"), "{err}");
        // Metadata length within the limit but past the end of the file.
        let mut bad = bytes.clone();
        bad[16..20].copy_from_slice(&(MAX_META_BYTES).to_le_bytes());
        let err = reader(&bad, None).unwrap_err().to_string();
        assert!(err.contains("truncated"), "{err}");
        // A block claiming 2^32-1 records, with a valid checksum.
        let (_, data_start) = read_header(&mut IoCursor::new(&bytes), NAME).unwrap();
        let at = data_start as usize;
        let mut bad = bytes.clone();
        let mut h = [0u8; 48];
        h.copy_from_slice(&bad[at..at + 48]);
        let mut parsed = BlockHeader::parse(&h).unwrap();
        parsed.records = u32::MAX;
        bad[at..at + 48].copy_from_slice(&parsed.to_bytes());
        let err = read_everything(&bad).unwrap_err().to_string();
        assert!(err.contains("records"), "{err}");
    }

    #[test]
    fn version_and_magic_errors_are_clear() {
        let (bytes, _) = write_trace(&[0], &[], opts(8));
        let mut bad = bytes.clone();
        bad[8] = 2;
        let err = reader(&bad, None).unwrap_err().to_string();
        assert!(err.contains("unsupported .cst version 2"), "{err}");
        let err = reader(b"hello world, this is text", None).unwrap_err().to_string();
        assert!(err.contains("not a .cst trace"), "{err}");
        let err = reader(b"CST", None).unwrap_err().to_string();
        assert!(err.contains("truncated"), "{err}");
    }

    #[test]
    fn crafted_payloads_with_valid_checksums_are_rejected() {
        // Payloads that zstd accepts but whose streams are inconsistent: the
        // decoder must notice without panicking.
        let cases: Vec<(Vec<u8>, u32, u64)> = vec![
            // Control byte with kind 3.
            (payload(0, &[3], &[], &[], &[], &[]), 1, 0),
            // Address miss but empty address stream.
            (payload(0, &[PC_HIT | INSTR_HIT], &[], &[], &[], &[]), 1, 0),
            // Size escape with a size over 16 bits.
            (payload(0, &[ADDR_HIT | PC_HIT | INSTR_HIT | (7 << 2)], &[], &[], &[], &[0x04, 0x00, 0x08]), 1, 0),
            // Instruction count over 32 bits.
            (payload(0, &[ADDR_HIT | PC_HIT], &[], &[], &[0x10, 0, 0, 0, 0x40], &[]), 1, 0),
            // Unread bytes left in a stream.
            (payload(0, &[ADDR_HIT | PC_HIT | INSTR_HIT], &[], &[0x03], &[], &[]), 1, 0),
            // Instruction total disagreeing with the header.
            (payload(0, &[ADDR_HIT | PC_HIT | INSTR_HIT], &[], &[], &[], &[]), 1, 9),
            // Shift above 63.
            (payload(64, &[ADDR_HIT | PC_HIT | INSTR_HIT], &[], &[], &[], &[]), 1, 0),
        ];
        for (i, (raw, records, instrs)) in cases.into_iter().enumerate() {
            let bytes = file_with_payload(&raw, records, instrs);
            let err = read_everything(&bytes).expect_err("crafted payload accepted");
            assert!(has_offset(&err), "case {i}: {err}");
        }
        // And the well-formed version of the same construction reads back.
        let ok = payload(0, &[ADDR_HIT | PC_HIT | INSTR_HIT], &[], &[], &[], &[]);
        let bytes = file_with_payload(&ok, 1, 0);
        assert_eq!(read_thread(&bytes, 0).unwrap(), vec![access(0, 0, 0, 1, AccessKind::Load)]);
    }

    fn payload(shift: u8, ctrl: &[u8], addr: &[u8], pc: &[u8], instr: &[u8], size: &[u8]) -> Vec<u8> {
        let mut p = vec![shift, 0, 0, 0];
        for s in [addr, pc, instr, size] {
            p.extend_from_slice(&(s.len() as u32).to_le_bytes());
        }
        for s in [ctrl, addr, pc, instr, size] {
            p.extend_from_slice(s);
        }
        p
    }

    /// A one-thread file with one block holding `raw` as its payload.
    fn file_with_payload(raw: &[u8], records: u32, instrs: u64) -> Vec<u8> {
        let mut enc = Encoder::new(1).unwrap();
        enc.comp.clear();
        enc.comp.reserve(zstd_safe::compress_bound(raw.len()));
        enc.cctx.compress2(&mut enc.comp, raw).unwrap();
        let header = TraceHeader::new("crafted");
        let mut bytes = Vec::new();
        NativeWriter::new(&mut bytes, NAME, &header, opts(8)).unwrap();
        let offset = bytes.len() as u64;
        let bh = BlockHeader {
            thread: 0,
            seq: 0,
            first: 0,
            records,
            raw_len: raw.len() as u32,
            comp_len: enc.comp.len() as u32,
            instrs,
        };
        bytes.extend_from_slice(&bh.to_bytes());
        bytes.extend_from_slice(&enc.comp);
        let index_offset = bytes.len() as u64;
        let mut index = INDEX_MAGIC.to_vec();
        index.extend_from_slice(&IndexEntry { offset, first: 0, instrs_before: 0, thread: 0, records }.to_bytes());
        index.extend_from_slice(
            &ThreadRow { thread: 0, first_entry: 0, blocks: 1, accesses: records as u64, instrs }.to_bytes(),
        );
        let footer =
            Footer { index_offset, blocks: 1, accesses: records as u64, instrs, threads: 1, index_crc: crc32(&index) };
        bytes.extend_from_slice(&index);
        bytes.extend_from_slice(&footer.to_bytes());
        bytes
    }

    #[test]
    fn the_default_loop_takes_under_two_bytes_per_access() {
        // Half the accesses are Zipf draws over 2^20 heap elements (about 13
        // bits each, plus 3 for the random word at two of the four sites),
        // the other half strided walks that the format predicts: about 1.8
        // bytes per access.
        let expected = loop_accesses(1 << 20, 7);
        let mut bytes = Vec::new();
        let mut w = NativeWriter::new(&mut bytes, NAME, &TraceHeader::new("loop"), WriterOptions::default()).unwrap();
        for a in &expected {
            w.write(a).unwrap();
        }
        let summary = w.finish().unwrap();
        let bpa = summary.bytes_per_access();
        assert!(bpa < 2.0, "{bpa:.3} bytes per access");
        assert_eq!(read_thread(&bytes, 0).unwrap(), expected);
    }

    #[test]
    fn strided_streams_cost_almost_nothing() {
        // Four interleaved strided streams with distinct pcs: nearly every
        // record is fully predicted.
        let mut bytes = Vec::new();
        let mut w =
            NativeWriter::new(&mut bytes, NAME, &TraceHeader::new("strides"), WriterOptions::default()).unwrap();
        let n = 200_000u64;
        for i in 0..n {
            let s = i % 4;
            w.write(&access(0x1000_0000 * (s + 1) + (i / 4) * 8 * (s + 1), 0x400 + s * 4, 1, 8, AccessKind::Load))
                .unwrap();
        }
        let summary = w.finish().unwrap();
        assert!(summary.bytes_per_access() < 0.05, "{}", summary.bytes_per_access());
    }

    #[test]
    fn scan_counts_kinds_footprint_and_range() {
        let records = vec![
            (0, access(0x1000, 1, 1, 8, AccessKind::Load)),
            (0, access(0x1008, 1, 2, 8, AccessKind::Store)),
            (0, access(0x103c, 1, 0, 8, AccessKind::Load)), // spans two lines
            (0, access(0x5000, 1, 3, 4, AccessKind::Ifetch)),
        ];
        let (bytes, _) = write_trace(&[0], &records, opts(2));
        let stats = scan_workload(&mut reader(&bytes, None).unwrap()).unwrap();
        // The three data references are to line 0x40 (counted at its first line): one cold, two at distance 0.
        let mut reuse = ReuseHistogram { cold: 1, ..ReuseHistogram::default() };
        reuse.buckets[0] = 2;
        assert_eq!(
            stats,
            TraceStats {
                accesses: 4,
                by_kind: [2, 1, 1],
                instructions: 6,
                lines_64: 3,
                pages_4k: 2,
                min_addr: Some(VirtAddr(0x1000)),
                max_addr: Some(VirtAddr(0x5000)),
                reuse,
            }
        );
    }

    #[test]
    fn files_on_disk_round_trip_and_scan() {
        let dir = std::env::temp_dir().join(format!("cst-native-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("disk.cst");
        let mut w = NativeWriter::create(&path, &TraceHeader::new("disk"), &[]).unwrap();
        let accesses: Vec<_> = (0..10_000u64).map(|i| Access::load(i * 64, 8)).collect();
        for a in &accesses {
            w.write(a).unwrap();
        }
        let summary = w.finish().unwrap();
        assert_eq!(summary.file_bytes, std::fs::metadata(&path).unwrap().len());
        let mut r = NativeReader::open(&path).unwrap();
        assert_eq!(collect(&mut r).unwrap(), accesses);
        let stats = scan(&path, None).unwrap();
        assert_eq!(stats.lines_64, 10_000);
        let missing = dir.join("missing.cst");
        let err = NativeReader::open(&missing).unwrap_err();
        assert!(matches!(err, Error::Io { .. }));
        assert!(err.to_string().contains("missing.cst"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn arb_access() -> impl Strategy<Value = Access> {
        let addr = prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>(), 0u64..1 << 20,];
        let pc = prop_oneof![Just(0u64), 0x400u64..0x440, any::<u64>()];
        let instrs = prop_oneof![Just(0u32), 1u32..4, Just(u32::MAX), any::<u32>()];
        let size = prop_oneof![(0u32..7).prop_map(|c| 1u16 << c), 1u16..=65535, Just(65535u16)];
        let kind = prop_oneof![Just(AccessKind::Load), Just(AccessKind::Store), Just(AccessKind::Ifetch)];
        (addr, pc, instrs, size, kind).prop_map(|(addr, pc, instrs, size, kind)| access(addr, pc, instrs, size, kind))
    }

    /// Random records plus strided runs, spread over up to four threads.
    fn arb_records() -> impl Strategy<Value = Vec<(u32, Access)>> {
        let run = (arb_access(), any::<i64>(), 1usize..40, 0u32..4).prop_map(|(start, stride, len, thread)| {
            let stride = if stride % 3 == 0 { stride } else { stride % 4096 };
            (0..len)
                .map(|i| {
                    let mut a = start;
                    a.addr = VirtAddr(start.addr.0.wrapping_add((stride as u64).wrapping_mul(i as u64)));
                    (thread, a)
                })
                .collect::<Vec<_>>()
        });
        let single = (0u32..4, arb_access()).prop_map(|r| vec![r]);
        proptest::collection::vec(prop_oneof![single, run], 0..30)
            .prop_map(|chunks| chunks.into_iter().flatten().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn round_trips_random_sequences(records in arb_records(), block in 1u32..40) {
            let threads = [0u32, 1, 2, 3];
            let (bytes, summary) = write_trace(&threads, &records, opts(block));
            prop_assert_eq!(summary.accesses, records.len() as u64);
            for t in threads {
                prop_assert_eq!(read_thread(&bytes, t).unwrap(), per_thread(&records, t));
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = read_everything(&bytes).map(drop);
            let mut with_magic = MAGIC.to_vec();
            with_magic.extend_from_slice(&bytes);
            if let Err(e) = read_everything(&with_magic) {
                prop_assert!(has_offset(&e), "{}", e);
            }
        }

        #[test]
        fn mutated_files_never_panic(records in arb_records(),
                                     edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6)) {
            let threads = [0u32, 1, 2, 3];
            let (mut bytes, _) = write_trace(&threads, &records, opts(7));
            for (at, v) in edits {
                let i = at.index(bytes.len());
                bytes[i] = v;
            }
            // Either reads (an edit that changed nothing) or fails with a position.
            if let Err(e) = read_everything(&bytes) {
                prop_assert!(has_offset(&e), "{}", e);
            }
        }
    }
}
