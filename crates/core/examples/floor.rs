//! How fast can the benchmark's machine be simulated at all? The leanest
//! simulator of the standard machine we could write, timed beside the
//! engine on the same accesses, whose counts it must equal.
//!
//! The floor keeps only what the counts need: LRU stamps, a 32-bit tag and
//! a dirty flag per line, a tag and a frame per TLB entry (searched and
//! replaced with the engine's SSE2 primitives, `tags::matches` and
//! `util::argmin`), frames handed out in first-touch order (so the engine
//! runs with `frame_allocation = "sequential"`). No owners, no first-touch sets, no per-task or per-kind
//! counters, no hooks, one geometry known at compile time. Both run the
//! trace decoded beforehand, in memory; decoding is timed on its own.
//! The floor runs once on one thread and once split over three: the
//! translation, then each half of the caches (see [`split`]). The engine
//! must keep more than the floor (owners and lock bits per line,
//! compulsory misses, counts per kind and task, policies behind a trait),
//! so the floor bounds what the engine can reach on this host.
//!
//! `cargo run --release --example floor -- TRACE.cst [repeats]`
use std::time::Instant;

use cachesched_core::config;
use cachesched_core::counters::Level;
use cachesched_core::mem::machine::Machine;
use cachesched_core::mem::page_table::FrameAllocation;
use cachesched_core::mem::tags;
use cachesched_core::trace::native::NativeReader;
use cachesched_core::trace::Workload;
use cachesched_core::util::argmin;
use cachesched_core::{Access, AccessKind, Asid, CoreId, TaskId};

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
fn decode(path: &str, mut each: impl FnMut(&[Access])) {
    let mut reader = NativeReader::open(path).unwrap();
    let mut buf = vec![Access::default(); 4096];
    loop {
        let n = reader.fill(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        each(&buf[..n]);
    }
}

fn main() {
    let path = std::env::args().nth(1).expect("a .cst trace");
    let repeats: usize = std::env::args().nth(2).map_or(3, |r| r.parse().expect("a number of repeats"));
    let mut all = Vec::new();
    decode(&path, |batch| all.extend_from_slice(batch));
    assert!(all.iter().all(|a| a.kind != AccessKind::Ifetch && a.addr.0 % 64 + a.size.max(1) as u64 <= 64));
    let pages = all.iter().map(|a| a.addr.0 >> 12).max().unwrap_or(0) as usize + 1;
    assert!(pages < 1 << 28, "the floor's flat table of frames wants addresses below 1 TiB");
    let mut cfg = config::from_json_str(r#"{"workload": {"kind": "stream"}}"#).unwrap().config;
    cfg.machine.memory.frame_allocation = FrameAllocation::Sequential;
    let ns = |secs: f64| secs * 1e9 / all.len() as f64;
    let (mut decoding, mut engine, mut floor, mut halves, mut l1) = (f64::MAX, f64::MAX, f64::MAX, f64::MAX, f64::MAX);
    for _ in 0..repeats {
        let start = Instant::now();
        let mut kinds = 0;
        decode(&path, |batch| kinds += batch.iter().map(|a| a.kind as u64).sum::<u64>());
        decoding = decoding.min(ns(start.elapsed().as_secs_f64()));
        std::hint::black_box(kinds);

        let mut m = Machine::new(&cfg.machine, 1, "machine").unwrap();
        m.add_tasks(1);
        let start = Instant::now();
        for batch in all.chunks(4096) {
            m.access_batch(CoreId(0), TaskId(0), Asid(0), batch);
        }
        m.settle_counts().unwrap();
        engine = engine.min(ns(start.elapsed().as_secs_f64()));

        let start = Instant::now();
        let counts = serial(&all, pages);
        floor = floor.min(ns(start.elapsed().as_secs_f64()));
        assert_eq!(counts, engine_counts(&m), "the floor must count what the engine counts");

        let start = Instant::now();
        let counts = split(&all, pages);
        halves = halves.min(ns(start.elapsed().as_secs_f64()));
        assert_eq!(counts, engine_counts(&m), "the split floor must count what the engine counts");

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
        l1 = l1.min(ns(start.elapsed().as_secs_f64()));
        std::hint::black_box(&c.dirty);
    }
    println!("{} accesses, best of {repeats}; counts equal: yes", all.len());
    println!("decoding (one thread):      {decoding:6.2} ns/access");
    println!("engine, standard machine:   {engine:6.2} ns/access  {:6.1} M/s", 1e3 / engine);
    println!(
        "floor, standard machine:    {floor:6.2} ns/access  {:6.1} M/s  (engine / floor: {:.2})",
        1e3 / floor,
        engine / floor
    );
    println!(
        "floor, translation and two halves of the caches on 3 threads: {halves:6.2} ns/access  {:6.1} M/s",
        1e3 / halves
    );
    println!("floor, the L1D alone:       {l1:6.2} ns/access  {:6.1} M/s", 1e3 / l1);
}
