//! The floor: the leanest simulator of the standard machine we could
//! write, timed beside the engine's machine on the same accesses, whose
//! counts it must equal (`cachesched bench`, docs/performance.md).
//!
//! It keeps only what the counts need: LRU stamps, a 32-bit tag and a
//! dirty flag per line, a tag and a frame per TLB entry (searched and
//! replaced with the engine's SSE2 primitives, `tags::matches` and
//! `util::argmin`), frames handed out in first-touch order (so the engine
//! runs with `frame_allocation = "sequential"`). No owners, no first-touch
//! sets, no per-task or per-kind counters, no hooks, one geometry known at
//! compile time. Both run the trace decoded beforehand, in memory;
//! decoding is timed on its own. The floor runs once on one thread and
//! once split over three: the translation, then each half of the caches
//! (see `split`). The engine must keep more than the floor (owners and
//! lock bits per line, compulsory misses, counts per kind and task,
//! policies behind a trait), so the floor bounds what the engine's machine
//! can reach on this host.

use std::time::Instant;

use std::path::Path;

use serde::Serialize;

use crate::config;
use crate::counters::Level;
use crate::error::{Error, Result};
use crate::mem::machine::Machine;
use crate::mem::page_table::FrameAllocation;
use crate::mem::tags;
use crate::trace::native::NativeReader;
use crate::trace::Workload;
use crate::types::{Access, AccessKind, Asid, CoreId, TaskId};
use crate::util::argmin;

const EMPTY: u32 = u32::MAX;

/// `SETS` x `WAYS` 32-bit tags under LRU: what a cache and a TLB share.
struct Sets<const SETS: usize, const WAYS: usize> {
    tags: Vec<u32>,
    stamps: Vec<u32>,
    clock: u32,
}

impl<const SETS: usize, const WAYS: usize> Sets<SETS, WAYS> {
    fn new() -> Self {
        Sets { tags: vec![EMPTY; SETS * WAYS], stamps: vec![0; SETS * WAYS], clock: 0 }
    }

    /// The slot holding `key`, changing nothing.
    #[inline(always)]
    fn find(&self, key: u64) -> Option<usize> {
        let base = (key as usize % SETS) * WAYS;
        let found = tags::matches(&self.tags[base..base + WAYS], key as u32);
        (found != 0).then(|| base + found.trailing_zeros() as usize)
    }

    /// The slot holding `key`, now the most recently used, if any.
    #[inline(always)]
    fn hit(&mut self, key: u64) -> Option<usize> {
        let slot = self.find(key)?;
        self.clock += 1;
        self.stamps[slot] = self.clock;
        Some(slot)
    }

    /// Put `key` in its set's least recently used slot; returns the slot
    /// and the tag it held.
    #[inline(always)]
    fn place(&mut self, key: u64) -> (usize, u32) {
        let base = (key as usize % SETS) * WAYS;
        let slot = base + argmin(&self.stamps[base..base + WAYS]);
        self.clock += 1;
        self.stamps[slot] = self.clock;
        (slot, std::mem::replace(&mut self.tags[slot], key as u32))
    }
}

/// A set-associative LRU write-back cache of `SETS` x `WAYS` lines.
struct Cache<const SETS: usize, const WAYS: usize> {
    sets: Sets<SETS, WAYS>,
    dirty: Vec<bool>,
    hits: u64,
    misses: u64,
}

impl<const SETS: usize, const WAYS: usize> Cache<SETS, WAYS> {
    fn new() -> Self {
        Cache { sets: Sets::new(), dirty: vec![false; SETS * WAYS], hits: 0, misses: 0 }
    }

    /// Place `line` over the set's LRU line; returns that line if it was dirty.
    #[inline(always)]
    fn fill(&mut self, line: u64, dirty: bool) -> Option<u64> {
        let (slot, old) = self.sets.place(line);
        let victim = (old != EMPTY && self.dirty[slot]).then_some(old as u64);
        self.dirty[slot] = dirty;
        victim
    }

    /// Dirty data of `line` arrives from above: mark it (its recency stays),
    /// or allocate it (write-allocate); returns a dirty victim to pass down.
    #[inline(always)]
    fn write_back(&mut self, line: u64) -> Option<u64> {
        match self.sets.find(line) {
            Some(slot) => {
                self.dirty[slot] = true;
                None
            }
            None => self.fill(line, true),
        }
    }
}

/// A set-associative LRU TLB of `SETS` x `WAYS` entries, keyed by page.
struct Tlb<const SETS: usize, const WAYS: usize> {
    sets: Sets<SETS, WAYS>,
    frames: Vec<u64>,
}

impl<const SETS: usize, const WAYS: usize> Tlb<SETS, WAYS> {
    fn new() -> Self {
        Tlb { sets: Sets::new(), frames: vec![0; SETS * WAYS] }
    }

    #[inline(always)]
    fn lookup(&mut self, page: u64) -> Option<u64> {
        self.sets.hit(page).map(|slot| self.frames[slot])
    }

    fn insert(&mut self, page: u64, frame: u64) {
        let (slot, _) = self.sets.place(page);
        self.frames[slot] = frame;
    }
}

/// The standard machine's TLBs: a 64-entry 4-way L1 DTLB, a 1536-entry
/// 12-way L2 TLB, 4 KiB pages, frames handed out in first-touch order.
struct Translation {
    dtlb: Tlb<16, 4>,
    stlb: Tlb<128, 12>,
    /// Frame of each page + 1 (0: not touched yet), indexed by page number.
    frames: Vec<u64>,
    next_frame: u64,
    misses: u64,
    stall: u64,
}

impl Translation {
    fn new(pages: usize) -> Translation {
        let (dtlb, stlb) = (Tlb::new(), Tlb::new());
        Translation { dtlb, stlb, frames: vec![0; pages], next_frame: 0, misses: 0, stall: 0 }
    }

    /// The physical line of `a`.
    #[inline(always)]
    fn line(&mut self, a: &Access) -> u64 {
        let frame = self.frame(a.addr.0 >> 12);
        (frame << 6) | ((a.addr.0 >> 6) & 63)
    }

    #[inline(always)]
    fn frame(&mut self, page: u64) -> u64 {
        if let Some(frame) = self.dtlb.lookup(page) {
            return frame;
        }
        self.misses += 1;
        let frame = match self.stlb.lookup(page) {
            Some(frame) => {
                self.stall += 7;
                frame
            }
            None => {
                let entry = &mut self.frames[page as usize];
                if *entry == 0 {
                    self.next_frame += 1;
                    *entry = self.next_frame;
                }
                self.stall += 30;
                self.stlb.insert(page, *entry - 1);
                *entry - 1
            }
        };
        self.dtlb.insert(page, frame);
        frame
    }
}

/// The standard machine's caches (8-way L1D, 16-way L2 and LLC), with
/// `L1`, `L2` and `LLC` sets: 64, 1024 and 8192 for the whole machine.
struct Caches<const L1: usize, const L2: usize, const LLC: usize> {
    l1: Cache<L1, 8>,
    l2: Cache<L2, 16>,
    llc: Cache<LLC, 16>,
    memory_writes: u64,
    stall: u64,
}

impl<const L1: usize, const L2: usize, const LLC: usize> Caches<L1, L2, LLC> {
    fn new() -> Self {
        Caches { l1: Cache::new(), l2: Cache::new(), llc: Cache::new(), memory_writes: 0, stall: 0 }
    }

    #[inline(always)]
    fn access(&mut self, line: u64, store: bool) {
        if let Some(slot) = self.l1.sets.hit(line) {
            self.l1.hits += 1;
            self.l1.dirty[slot] |= store;
            self.stall += 4;
            return;
        }
        self.l1.misses += 1;
        self.stall += self.miss(line);
        if let Some(victim) = self.l1.fill(line, store) {
            self.down_to_l2(victim);
        }
    }

    /// An L1 miss through the L2, the LLC and memory; returns its latency.
    #[inline(never)]
    fn miss(&mut self, line: u64) -> u64 {
        if self.l2.sets.hit(line).is_some() {
            self.l2.hits += 1;
            return 14;
        }
        self.l2.misses += 1;
        let latency = if self.llc.sets.hit(line).is_some() {
            self.llc.hits += 1;
            40
        } else {
            self.llc.misses += 1;
            if self.llc.fill(line, false).is_some() {
                self.memory_writes += 1;
            }
            200
        };
        if let Some(victim) = self.l2.fill(line, false) {
            self.down_to_llc(victim);
        }
        latency
    }

    fn down_to_l2(&mut self, line: u64) {
        if let Some(victim) = self.l2.write_back(line) {
            self.down_to_llc(victim);
        }
    }

    fn down_to_llc(&mut self, line: u64) {
        if self.llc.write_back(line).is_some() {
            self.memory_writes += 1;
        }
    }

    /// Hits and misses of the L1D, the L2 and the LLC; memory reads and
    /// writes; stall cycles.
    fn counts(&self) -> [u64; 9] {
        let (l1, l2, llc) = (&self.l1, &self.l2, &self.llc);
        [l1.hits, l1.misses, l2.hits, l2.misses, llc.hits, llc.misses, llc.misses, self.memory_writes, self.stall]
    }
}

/// The counts in the engine's order ([`engine_counts`]): the caches',
/// with the translation's misses and cycles added in.
fn floor_counts(caches: [u64; 9], t: &Translation) -> Vec<u64> {
    let [l1_hits, l1_misses, l2_hits, l2_misses, llc_hits, llc_misses, reads, writes, stall] = caches;
    vec![l1_hits, l1_misses, l2_hits, l2_misses, llc_hits, llc_misses, t.misses, reads, writes, stall + t.stall]
}

/// The whole floor on one thread, in passes over chunks of the accesses:
/// their lines (a store in bit 0), then the caches on those.
fn serial(all: &[Access], pages: usize) -> Vec<u64> {
    let (mut t, mut caches) = (Translation::new(pages), Caches::<64, 1024, 8192>::new());
    let mut lines = Vec::with_capacity(1 << 14);
    for chunk in all.chunks(1 << 14) {
        lines.clear();
        lines.extend(chunk.iter().map(|a| t.line(a) << 1 | (a.kind == AccessKind::Store) as u64));
        for &x in &lines {
            caches.access(x >> 1, x & 1 == 1);
        }
    }
    floor_counts(caches.counts(), &t)
}

/// The floor on three threads: translation, then the caches split in two
/// by the line's lowest bit. Every level's set index holds that bit, so
/// the halves never meet (LRU decides within a set) and each runs alone,
/// on the lines shifted right by one, with half the sets.
fn split(all: &[Access], pages: usize) -> Vec<u64> {
    const CHUNK: usize = 1 << 16;
    std::thread::scope(|scope| {
        let halves: Vec<_> = (0..2)
            .map(|_| {
                let (send, receive) = std::sync::mpsc::sync_channel::<Vec<u64>>(4);
                let half = scope.spawn(move || {
                    let mut caches = Caches::<32, 512, 4096>::new();
                    for chunk in receive {
                        for &x in &chunk {
                            caches.access(x >> 1, x & 1 == 1);
                        }
                    }
                    caches.counts()
                });
                (send, half)
            })
            .collect();
        let mut t = Translation::new(pages);
        for accesses in all.chunks(CHUNK) {
            let mut out = [Vec::with_capacity(CHUNK), Vec::with_capacity(CHUNK)];
            for a in accesses {
                let line = t.line(a);
                // The half's line in the high bits, the store in bit 0.
                out[(line & 1) as usize].push((line >> 1) << 1 | (a.kind == AccessKind::Store) as u64);
            }
            for (half, chunk) in halves.iter().zip(out) {
                half.0.send(chunk).unwrap();
            }
        }
        // Closing each channel ends its half's loop.
        let counts: Vec<[u64; 9]> = halves
            .into_iter()
            .map(|(send, half)| {
                drop(send);
                half.join().unwrap()
            })
            .collect();
        floor_counts(std::array::from_fn(|i| counts[0][i] + counts[1][i]), &t)
    })
}

/// The engine's counts in the floor's order.
fn engine_counts(m: &Machine) -> Vec<u64> {
    let t = &m.tasks[0];
    let mut v: Vec<u64> = [Level::L1d, Level::L2, Level::Llc]
        .iter()
        .flat_map(|&l| {
            let c = &t.levels[l as usize];
            [c.hits.iter().sum::<u64>(), c.misses.iter().sum::<u64>()]
        })
        .collect();
    let memory = &m.node_stats()[0];
    v.extend([t.tlb.l1_misses, memory.reads, memory.writes, t.stall_cycles]);
    v
}

/// Decode the trace at `path` in batches, handing each to `each`.
fn decode(path: &Path, mut each: impl FnMut(&[Access])) -> Result<()> {
    let mut reader = NativeReader::open(path)?;
    let mut buf = vec![Access::default(); 4096];
    loop {
        let n = reader.fill(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        each(&buf[..n]);
    }
}

/// What [`measure`] found: ns per access, the best of its repeats.
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    pub accesses: u64,
    /// Decoding the trace alone, one thread.
    pub decoding_ns: f64,
    /// The engine's machine (`Machine::access_batch`), one thread.
    pub engine_ns: f64,
    /// The engine's machine with its caches split by set over two threads
    /// ([`Machine::split_sets`]).
    pub engine_split_ns: f64,
    /// The floor, one thread.
    pub floor_ns: f64,
    /// The floor on three threads: the translation and two halves of the caches.
    pub halves_ns: f64,
    /// The floor's L1D alone, on virtual lines.
    pub l1_ns: f64,
}

/// Time decoding, the engine's machine and the floor on the data trace
/// `path` (`.cst`, no instruction fetches, no reference across a line),
/// each the best of `repeats`; an error if the floor's counts differ from
/// the engine's.
pub fn measure(path: &Path, repeats: usize) -> Result<Figures> {
    let mut all = Vec::new();
    decode(path, |batch| all.extend_from_slice(batch))?;
    if let Some(a) = all.iter().find(|a| a.kind == AccessKind::Ifetch || a.addr.0 % 64 + a.size.max(1) as u64 > 64) {
        return Err(Error::Simulation(format!(
            "the floor takes data references within one 64 B line; {} has {a:?}",
            path.display()
        )));
    }
    let pages = all.iter().map(|a| a.addr.0 >> 12).max().unwrap_or(0) as usize + 1;
    if pages >= 1 << 28 {
        return Err(Error::Simulation("the floor's flat table of frames wants addresses below 1 TiB".into()));
    }
    let mut cfg = config::from_json_str(r#"{"workload": {"kind": "stream"}}"#)?.config;
    cfg.machine.memory.frame_allocation = FrameAllocation::Sequential;
    let ns = |start: Instant| start.elapsed().as_secs_f64() * 1e9 / all.len().max(1) as f64;
    let mut f = Figures {
        accesses: all.len() as u64,
        decoding_ns: f64::MAX,
        engine_ns: f64::MAX,
        engine_split_ns: f64::MAX,
        floor_ns: f64::MAX,
        halves_ns: f64::MAX,
        l1_ns: f64::MAX,
    };
    let differ = |what: &str| Error::Simulation(format!("the {what} counts differently from the engine"));
    for _ in 0..repeats.max(1) {
        let start = Instant::now();
        let mut kinds = 0;
        decode(path, |batch| kinds += batch.iter().map(|a| a.kind as u64).sum::<u64>())?;
        f.decoding_ns = f.decoding_ns.min(ns(start));
        std::hint::black_box(kinds);

        let mut m = Machine::new(&cfg.machine, 1, "machine")?;
        m.add_tasks(1);
        let start = Instant::now();
        for batch in all.chunks(4096) {
            m.access_batch(CoreId(0), TaskId(0), Asid(0), batch);
        }
        m.settle_counts()?;
        f.engine_ns = f.engine_ns.min(ns(start));

        let mut halves = Machine::new(&cfg.machine, 1, "machine")?;
        halves.add_tasks(1);
        halves.split_sets(&cfg.machine, 1)?;
        let start = Instant::now();
        for batch in all.chunks(4096) {
            halves.access_batch(CoreId(0), TaskId(0), Asid(0), batch);
        }
        halves.settle_counts()?;
        f.engine_split_ns = f.engine_split_ns.min(ns(start));
        if engine_counts(&halves) != engine_counts(&m) {
            return Err(differ("machine split by set"));
        }

        let start = Instant::now();
        let counts = serial(&all, pages);
        f.floor_ns = f.floor_ns.min(ns(start));
        if counts != engine_counts(&m) {
            return Err(differ("floor"));
        }

        let start = Instant::now();
        let counts = split(&all, pages);
        f.halves_ns = f.halves_ns.min(ns(start));
        if counts != engine_counts(&m) {
            return Err(differ("split floor"));
        }

        // The L1D alone, on virtual lines: no TLB, nothing below.
        let mut c = Cache::<64, 8>::new();
        let start = Instant::now();
        for a in &all {
            let line = a.addr.0 >> 6;
            match c.sets.hit(line) {
                Some(slot) => c.dirty[slot] |= a.kind == AccessKind::Store,
                None => _ = c.fill(line, a.kind == AccessKind::Store),
            }
        }
        f.l1_ns = f.l1_ns.min(ns(start));
        std::hint::black_box(&c.dirty);
    }
    Ok(f)
}
