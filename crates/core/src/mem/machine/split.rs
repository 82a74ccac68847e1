//! A lone task's references over two threads, the caches split by set.
//!
//! Every cache of an eligible machine ([`Machine::split_refusal`]) has a
//! number of sets divisible by 8 (else 4, else 2), so a physical line's
//! lowest three bits (else two, else one) are its set's lowest in every
//! cache: the lines of one residue live in sets no other line reaches.
//! Each cache's policy decides each set alone, so a part of the caches
//! that sees exactly its lines' references, in their order, decides as the
//! whole cache would. The calling thread translates a batch (the TLBs and
//! page tables do not depend on the caches; a radix walk's reads of the
//! page table are dealt as lines too, before the line they translate) and
//! deals its lines: those with the low bits clear to its own machine's
//! caches, the rest to a second machine's on a thread of their own, in
//! pieces that thread starts on while the translation goes on.
//! Translation costing about what a third of the caches' work does, the
//! translating thread keeps an eighth of the sets where it can. The second
//! machine's counters are added into this one's after every batch, its
//! notes handed to this machine's notebook, so every count reads as in a
//! serial run.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{Machine, MachineParams, Part, Tally};
use crate::counters::{NodeStats, TaskStats};
use crate::error::{Error, Result};
use crate::mem::cache::Req;
use crate::mem::replacement::{HitUpdate, ReqKind};
use crate::mem::tlb;
use crate::types::{Access, AccessKind, Asid, CoreId, LineAddr, TaskId, VirtAddr};

/// A line of a batch for a side: the physical line, then a bit saying it
/// belongs to a reference across lines, then its kind in two bits (a
/// load, a store, a fetch, or a page walk's read).
type Item = u64;

const CROSSING: u64 = 1 << 2;

fn item(line: LineAddr, kind: ReqKind, crossing: bool) -> Item {
    let code = match kind {
        ReqKind::Load => 0,
        ReqKind::Store => 1,
        ReqKind::Ifetch => 2,
        _ => 3,
    };
    line.0 << 3 | (crossing as u64) << 2 | code
}

fn kind_of(item: Item) -> ReqKind {
    match item & 3 {
        0 => ReqKind::Load,
        1 => ReqKind::Store,
        2 => ReqKind::Ifetch,
        _ => ReqKind::Walk,
    }
}

/// A line of a reference across lines, as the translating thread dealt
/// it: the reference's index in the batch, which of its pages the line is
/// on, whether it is a page walk's read of that page's translation or one
/// of the reference's own lines, and then the page's translation cycles
/// beyond the walk's reads.
#[derive(Debug, Clone, Copy)]
struct Across {
    at: u32,
    page: u8,
    walk: bool,
    translated: u32,
}

/// Lines of a batch for one side, in order.
#[derive(Default)]
struct Piece {
    items: Vec<Item>,
}

/// What the translating thread tells the other.
enum Order {
    /// A batch of `task` on the core begins: the other machine, and a
    /// buffer for the cycles of lines across lines.
    Begin(Box<Machine>, CoreId, TaskId, Vec<u32>),
    /// The batch's next lines.
    Lines(Piece),
    /// The batch has no more lines.
    End,
}

/// What the other thread found in a batch: its machine back, the cycles of
/// its lines of references within one line, and per line across lines
/// (a walk's read or a reference's own line) its cycles, in order.
type Found = (Box<Machine>, u64, Vec<u32>);

/// The other side: its machine (here between batches, with the thread
/// while one runs), the channels to its thread, and buffers kept between
/// batches.
pub(super) struct Split {
    other: Option<Box<Machine>>,
    orders: Option<SyncSender<Order>>,
    found: Receiver<Found>,
    /// Pieces the other thread has emptied, to fill again.
    spent: Receiver<Piece>,
    thread: Option<JoinHandle<()>>,
    /// This thread's lines, and the cycles of those across lines.
    mine: Piece,
    worst: Vec<u32>,
    /// The other's cycles of lines across lines, its buffer between batches.
    theirs: Vec<u32>,
    /// Per side, what each of its lines across lines is.
    crossings: [Vec<Across>; 2],
    /// Per line across lines: its reference's index, page, role (0: a
    /// walk's read, 1: its own line) and cycles.
    across: Vec<(u32, u8, u8, u32)>,
    /// A page walk's reads while translating, before they are dealt.
    walks: Vec<LineAddr>,
    /// The line bits that choose a side: a line with none of them set is
    /// this thread's, the rest the other's.
    mask: u64,
    failed: bool,
}

/// References translated between two pieces sent to the other thread.
const PIECE: usize = 512;

impl std::fmt::Debug for Split {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Split")
    }
}

impl Drop for Split {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop.
        self.orders.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Machine {
    /// Why the caches cannot be split by set, if they cannot: a policy
    /// that decides across sets (set dueling, a random draw, a learned
    /// table), a cache with an odd number of sets, a prefetcher (it
    /// fetches the neighbouring lines, of the other side), coherence, the
    /// switch-miss tag directory, an attributed level (their shadows see
    /// references in order), ways partitioned or locked.
    pub fn split_refusal(&self) -> Option<String> {
        if let Some(c) = self.caches.iter().find(|c| !c.sets_apart()) {
            let why = match c.sets() % 2 {
                1 => "has an odd number of sets",
                _ => "decides across sets (its policy, or partitioned or locked ways)",
            };
            return Some(format!("{} {why}", c.path));
        }
        if let Some(c) = (0..self.caches.len()).find(|&c| self.prefetchers[c].is_some()) {
            return Some(format!("{} has a prefetcher", self.caches[c].path));
        }
        let reasons = [
            (self.caches.is_empty() || self.cores.iter().any(|p| p.data.len == 0), "a core has no cache"),
            (!self.k.shortcuts, "an L1 or L1 TLB is attributed"),
            (self.coherence.is_some(), "the caches are coherent"),
            (self.atd.is_some(), "a switch-miss tag directory watches the LLCs"),
            (self.notebook.coverage() != Default::default(), "a level is attributed"),
        ];
        reasons.into_iter().find(|r| r.0).map(|r| r.1.to_string())
    }

    /// Run most of the caches' sets on a thread of their own from now on (see
    /// the module documentation); `params` and `seed` are the machine's.
    /// The caller checked [`Machine::split_refusal`].
    pub fn split_sets(&mut self, params: &MachineParams, seed: u64) -> Result<()> {
        debug_assert!(self.split_refusal().is_none());
        let mut other = Box::new(Machine::new(params, seed, "machine")?);
        other.add_tasks(self.tasks.len());
        other.notebook = self.notebook.pad();
        let (orders, orders_in) = sync_channel(64);
        let (found_out, found) = sync_channel(1);
        let (spent_out, spent) = sync_channel(64);
        let thread = std::thread::Builder::new()
            .name("cachesched-sets".into())
            .spawn(move || serve(orders_in, found_out, spent_out))
            .map_err(|e| Error::Simulation(format!("cannot start the thread of the split caches: {e}")))?;
        // The translating thread keeps an eighth of the sets where every
        // cache's set count allows: translation costs it about what the
        // caches' other seven eighths cost the other thread.
        let mask = [7u64, 3, 1]
            .into_iter()
            .find(|m| self.caches.iter().all(|c| (c.sets() as u64).is_multiple_of(m + 1)))
            .unwrap_or(1);
        self.split = Some(Box::new(Split {
            other: Some(other),
            orders: Some(orders),
            found,
            spent,
            thread: Some(thread),
            mine: Piece::default(),
            worst: Vec::new(),
            theirs: Vec::new(),
            crossings: Default::default(),
            across: Vec::new(),
            walks: Vec::new(),
            mask,
            failed: false,
        }));
        Ok(())
    }

    /// Whether the caches run split by set.
    pub fn splits_sets(&self) -> bool {
        self.split.is_some()
    }

    /// [`Machine::access_batch`] with the caches split.
    pub(super) fn split_batch(&mut self, core: CoreId, task: TaskId, asid: Asid, batch: &[Access]) -> u64 {
        let mut split = self.split.take().expect("split");
        let stall = self.run_sides(&mut split, core, task, asid, batch);
        self.split = Some(split);
        stall
    }

    fn run_sides(&mut self, split: &mut Split, core: CoreId, task: TaskId, asid: Asid, batch: &[Access]) -> u64 {
        let (Some(other), Some(orders)) = (split.other.take(), split.orders.as_ref()) else {
            split.failed = true;
            return 0;
        };
        let mut sent = orders.send(Order::Begin(other, core, task, std::mem::take(&mut split.theirs))).is_ok();
        let Split { mine, worst, crossings, mask, spent, walks, .. } = split;
        mine.items.clear();
        worst.clear();
        crossings.iter_mut().for_each(Vec::clear);
        let (mut part, c) = self.part_of(core);
        part.walks = Some(walks);
        let mut translation = 0;
        for (k, piece) in batch.chunks(PIECE).enumerate() {
            let mut theirs = spent.try_recv().unwrap_or_default();
            theirs.items.clear();
            let at = (k * PIECE) as u32;
            translation += part.deal(c, task, asid, piece, at, *mask, [&mut *mine, &mut theirs], crossings);
            sent &= orders.send(Order::Lines(theirs)).is_ok();
        }
        sent &= orders.send(Order::End).is_ok();
        let stall = part.lines(c, task, mine, worst);
        let Some((mut other, their_stall, theirs)) = sent.then(|| receive(&split.found)).flatten() else {
            split.failed = true;
            return 0;
        };
        self.add_other(&mut other, task);
        split.other = Some(other);
        // A reference across lines costs its slowest line, whichever side
        // ran it, with the cycles of its page's translation, walk included.
        let across = &mut split.across;
        across.clear();
        for (dealt, cycles) in split.crossings.iter().zip([&split.worst, &theirs]) {
            let lines = dealt.iter().zip(cycles);
            across.extend(lines.map(|(a, &c)| (a.at, a.page, !a.walk as u8, c + a.translated)));
        }
        split.theirs = theirs;
        across.sort_unstable();
        let mut slowest = 0u64;
        for reference in across.chunk_by(|a, b| a.0 == b.0) {
            let (mut page, mut walk, mut worst) = (u8::MAX, 0, 0);
            for &(_, p, role, cycles) in reference {
                if p != page {
                    (page, walk) = (p, 0);
                }
                match role {
                    0 => walk += cycles as u64,
                    _ => worst = worst.max(walk + cycles as u64),
                }
            }
            slowest += worst;
        }
        let (mut part, c) = self.part_of(core);
        // The sides credited their hits already.
        part.close_batch(c, task, batch, &Tally::default(), translation + stall + their_stall + slowest)
    }

    /// Add what the other side counted since the last batch to this
    /// machine's counters (its notes when it keeps them).
    fn add_other(&mut self, other: &mut Machine, task: TaskId) {
        for (mine, theirs) in self.caches.iter_mut().zip(&mut other.caches) {
            mine.stats.add(&std::mem::take(&mut theirs.stats));
        }
        let t = task.0 as usize;
        add_cache_side(&mut self.tasks[t], &std::mem::take(&mut other.tasks[t]));
        for (mine, theirs) in self.nodes.iter_mut().zip(&mut other.nodes) {
            mine.add_traffic(theirs);
            *theirs = NodeStats { node: theirs.node, ..NodeStats::default() };
        }
        if other.notebook.keeps() {
            self.absorb_notes(other);
        }
    }

    /// Take the other machine's notes into this one's notebook: before a
    /// note that must follow them (a reset) and before counts are read.
    fn absorb_notes(&mut self, other: &mut Machine) {
        let pad = std::mem::replace(&mut other.notebook, self.notebook.pad());
        self.notebook.absorb(pad);
    }

    /// [`Machine::absorb_notes`] of the other side, if the caches are split.
    pub(super) fn absorb_other_notes(&mut self) {
        let Some(mut other) = self.split.as_deref_mut().and_then(|s| s.other.take()) else { return };
        self.absorb_notes(&mut other);
        self.split.as_deref_mut().expect("split").other = Some(other);
    }

    /// An error if the thread of the split caches stopped.
    pub fn check_split(&self) -> Result<()> {
        match self.split.as_deref() {
            Some(s) if s.failed => {
                Err(Error::Simulation("the thread simulating part of the caches stopped unexpectedly".into()))
            }
            _ => Ok(()),
        }
    }

    /// Lines of `task` in the other side's caches of `core` (see [`Machine::resident`]).
    pub(super) fn resident_other(&self, core: CoreId, task: TaskId) -> Option<[u64; crate::counters::Level::COUNT]> {
        let other = self.split.as_deref()?.other.as_deref()?;
        Some(other.resident(core, task))
    }
}

/// Add the counts the other side of the caches makes for a task: its levels' hits
/// and misses, the lines memory served it, and the cycles of the page walks'
/// reads it ran. (The rest of translation, references,
/// instructions and stalls are the translating side's; compulsory and
/// induced misses come from the notes.)
fn add_cache_side(mine: &mut TaskStats, theirs: &TaskStats) {
    let TaskStats { levels, memory_local, memory_remote, tlb, .. } = theirs;
    for (m, t) in mine.levels.iter_mut().zip(levels) {
        for k in 0..m.hits.len() {
            m.hits[k] += t.hits[k];
            m.misses[k] += t.misses[k];
        }
    }
    mine.memory_local += memory_local;
    mine.memory_remote += memory_remote;
    mine.tlb.walk_cycles += tlb.walk_cycles;
}

impl Part<'_> {
    /// Translate references (the first at index `at` of its batch) on
    /// core `c`, dealing each line to a side: `sides[0]` if it has none of
    /// `mask`'s bits, else `sides[1]`, a page walk's reads before the line
    /// they translate (`crossings`: per side, what each line of a reference
    /// across lines is). Returns the translation cycles of the references
    /// within one line, but for their walks' reads.
    #[allow(clippy::too_many_arguments)]
    fn deal(
        &mut self,
        c: usize,
        task: TaskId,
        asid: Asid,
        batch: &[Access],
        at: u32,
        mask: u64,
        mut sides: [&mut Piece; 2],
        crossings: &mut [Vec<Across>; 2],
    ) -> u64 {
        let (line_shift, page_shift) = (self.k.line_shift, self.k.page_shift);
        let side = |line: LineAddr| (line.0 & mask != 0) as usize;
        let mut cycles = 0u64;
        let mut i = 0;
        while i < batch.len() {
            let (ran, run_cycles) = self.tlb_run(c, task, asid, &batch[i..], mask, &mut sides);
            cycles += run_cycles;
            i += ran;
            let Some(a) = batch.get(i) else { break };
            let index = at + i as u32;
            i += 1;
            let req = Req { kind: a.kind.into(), pc: a.pc, task };
            let first = a.addr.0 >> line_shift;
            let last = a.addr.0.saturating_add(a.size.max(1) as u64 - 1) >> line_shift;
            if first == last {
                let (paddr, t) = self.translate(c, &req, asid, a.addr.0);
                for line in self.walks.as_deref_mut().into_iter().flat_map(|w| w.drain(..)) {
                    sides[side(line)].items.push(item(line, ReqKind::Walk, false));
                }
                let line = LineAddr(paddr >> line_shift);
                sides[side(line)].items.push(item(line, req.kind, false));
                cycles += t as u64;
                continue;
            }
            // As `access_split`: one translation per page.
            let mut page = (u64::MAX, 0, 0);
            for vline in first..=last {
                let vaddr = vline << line_shift;
                if vaddr >> page_shift != page.0 {
                    let (paddr, t) = self.translate(c, &req, asid, vaddr.max(a.addr.0));
                    page = (vaddr >> page_shift, paddr >> page_shift, t);
                    let nth = ((vaddr >> page_shift) - (a.addr.0 >> page_shift)) as u8;
                    for line in self.walks.as_deref_mut().into_iter().flat_map(|w| w.drain(..)) {
                        sides[side(line)].items.push(item(line, ReqKind::Walk, true));
                        crossings[side(line)].push(Across { at: index, page: nth, walk: true, translated: 0 });
                    }
                }
                let line = super::line_in_frame(page.1, vline, page_shift, line_shift);
                let nth = (page.0 - (a.addr.0 >> page_shift)) as u8;
                sides[side(line)].items.push(item(line, req.kind, true));
                crossings[side(line)].push(Across { at: index, page: nth, walk: false, translated: page.2 });
            }
        }
        cycles
    }

    /// A run of data references within one line that hit the L1 data TLB,
    /// translated with its geometry in registers and dealt to the sides;
    /// stops before the first reference that needs more, having changed
    /// nothing for it. Returns the references it took and their cycles.
    fn tlb_run(
        &mut self,
        c: usize,
        task: TaskId,
        asid: Asid,
        batch: &[Access],
        mask: u64,
        sides: &mut [&mut Piece; 2],
    ) -> (usize, u64) {
        let Some(dtlb) = self.cores[c].dtlb else { return (0, 0) };
        let (page_shift, line_shift) = (self.k.page_shift, self.k.line_shift);
        let Some(run) = self.tlbs[dtlb].hit_run() else { return (0, 0) };
        let latency = run.latency_cycles as u64;
        let n = batch.len();
        let ran = match (run.lends_stamps(n), run.stride() == run.ways()) {
            (true, true) if run.ways() == 4 => match run.lru(n) {
                Some(run) => translate_run::<_, 4>(run, asid, batch, page_shift, line_shift, mask, sides),
                None => 0,
            },
            _ => translate_run::<_, 0>(run, asid, batch, page_shift, line_shift, mask, sides),
        };
        self.tlbs[dtlb].stats.hits += ran as u64;
        self.tasks[task.0 as usize].tlb.l1_hits += ran as u64;
        (ran, ran as u64 * latency)
    }

    /// Run a side's lines on core `c`'s caches for `task`; returns the
    /// cycles of its lines of references within one line, and pushes to
    /// `worst` those of each line across lines.
    fn lines(&mut self, c: usize, task: TaskId, piece: &Piece, worst: &mut Vec<u32>) -> u64 {
        let mut tally = Tally::default();
        let mut stall = 0u64;
        let mut i = 0;
        while i < piece.items.len() {
            let (ran, cycles) = self.l1_hits(c, task, &piece.items[i..], &mut tally);
            stall += cycles;
            i += ran;
            let Some(&x) = piece.items.get(i) else { break };
            i += 1;
            let kind = kind_of(x);
            let line = LineAddr(x >> 3);
            let req = Req { kind, pc: VirtAddr(0), task };
            let l1 = &mut self.caches[self.cores[c].path(kind).at(0)];
            // As the L1 shortcut: a demand hit that needs nothing below is tallied.
            let cycles = match l1.find(line) {
                Some(slot) if kind != ReqKind::Walk && (kind != ReqKind::Store || l1.write_back) => {
                    l1.touch_hit(slot, &req);
                    tally.l1[(kind == ReqKind::Ifetch) as usize][kind as usize] += 1;
                    l1.latency_cycles
                }
                found => self.access_line(c, line, &req, found.is_none()),
            };
            if kind == ReqKind::Walk {
                self.tasks[task.0 as usize].tlb.walk_cycles += cycles as u64;
            }
            match x & CROSSING {
                0 => stall += cycles as u64,
                _ => worst.push(cycles),
            }
        }
        self.credit(c, task, &tally);
        self.notebook.pass();
        stall
    }

    /// A run of loads and stores of references within one line that hit
    /// the L1 data cache (and need nothing below it), with its geometry in
    /// registers, tallied; stops before the first line that needs more,
    /// having changed nothing for it. Returns the lines it ran and their cycles.
    fn l1_hits(&mut self, c: usize, task: TaskId, items: &[Item], tally: &mut Tally) -> (usize, u64) {
        let l1 = self.cores[c].data.at(0);
        let Some(run) = self.caches[l1].hit_run() else { return (0, 0) };
        let latency = run.latency_cycles as u64;
        let n = items.len();
        let (loads, stores) = match (run.lends_stamps(n), run.stride() == run.ways()) {
            (true, true) if run.ways() == 8 => match run.lru(n) {
                Some(run) => hit_run::<_, 8>(run, task, items),
                None => (0, 0),
            },
            _ => hit_run::<_, 0>(run, task, items),
        };
        tally.l1[0][ReqKind::Load as usize] += loads;
        tally.l1[0][ReqKind::Store as usize] += stores;
        let ran = (loads + stores) as usize;
        (ran, ran as u64 * latency)
    }
}

/// The body of [`Part::l1_hits`], with the L1's policy as `H` and its ways
/// as `WAYS` (0: any); returns the loads and the stores it ran.
#[inline(always)]
fn hit_run<H: HitUpdate, const WAYS: usize>(
    mut l1: crate::mem::cache::HitRun<'_, H>,
    task: TaskId,
    items: &[Item],
) -> (u64, u64) {
    let (mut loads, mut stores) = (0, 0);
    for &x in items {
        // A fetch, a walk's read or a line across lines takes the general path.
        if x & 7 > 1 {
            break;
        }
        let store = x & 1 == 1;
        if store && !l1.write_back {
            break;
        }
        let Some(slot) = l1.find_in::<WAYS>(LineAddr(x >> 3)) else { break };
        let kind = if store { ReqKind::Store } else { ReqKind::Load };
        l1.touch_hit::<WAYS>(slot, &Req { kind, pc: VirtAddr(0), task });
        stores += store as u64;
        loads += !store as u64;
    }
    l1.settle();
    (loads, stores)
}

/// The other thread: a batch's pieces through its machine's caches as
/// they come, its findings sent back at the batch's end, until the
/// translating thread hangs up.
fn serve(orders: Receiver<Order>, found: SyncSender<Found>, spent: SyncSender<Piece>) {
    let mut batch: Option<(Box<Machine>, CoreId, TaskId, Vec<u32>)> = None;
    let mut stall = 0;
    while let Some(order) = receive(&orders) {
        match (order, batch.as_mut()) {
            (Order::Begin(machine, core, task, mut worst), _) => {
                worst.clear();
                (batch, stall) = (Some((machine, core, task, worst)), 0);
            }
            (Order::Lines(piece), Some((machine, core, task, worst))) => {
                let (mut part, c) = machine.part_of(*core);
                stall += part.lines(c, *task, &piece, worst);
                // Full: the translating thread allocates another.
                let _ = spent.try_send(piece);
            }
            (Order::End, Some(_)) => {
                let (machine, _, _, worst) = batch.take().expect("a batch");
                if found.send((machine, stall, worst)).is_err() {
                    return;
                }
            }
            // Out of order: the translating thread broke off; it reports it.
            _ => return,
        }
    }
}

/// The body of [`Part::tlb_run`], with the TLB's policy as `H` and its
/// ways as `WAYS` (0: any).
#[inline(always)]
fn translate_run<H: HitUpdate, const WAYS: usize>(
    mut tlb: tlb::HitRun<'_, H>,
    asid: Asid,
    batch: &[Access],
    page_shift: u32,
    line_shift: u32,
    mask: u64,
    sides: &mut [&mut Piece; 2],
) -> usize {
    let mut ran = 0;
    // The page run last and its slot: nothing moves in the TLB during a run.
    let (mut page, mut at) = (u64::MAX, None);
    for a in batch {
        let vline = a.addr.0 >> line_shift;
        let across = a.addr.0.saturating_add(a.size.max(1) as u64 - 1) >> line_shift != vline;
        if across || a.kind == AccessKind::Ifetch {
            break;
        }
        let vpn = a.addr.0 >> page_shift;
        let slot = match at {
            Some(slot) if vpn == page => slot,
            _ => {
                let Some(slot) = tlb.find_in::<WAYS>(tlb::key(asid, vpn)) else { break };
                (page, at) = (vpn, Some(slot));
                slot
            }
        };
        tlb.touch::<WAYS>(slot);
        let line = super::line_in_frame(tlb.frame_of::<WAYS>(slot), vline, page_shift, line_shift);
        sides[(line.0 & mask != 0) as usize].items.push(item(line, a.kind.into(), false));
        ran += 1;
    }
    tlb.settle();
    ran
}

/// Wait for what `from` sends: spinning a little first, since the other
/// side is usually about to send (a blocked thread takes tens of
/// microseconds to wake); `None` once the sender is gone.
fn receive<T>(from: &Receiver<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        for _ in 0..64 {
            match from.try_recv() {
                Ok(x) => return Some(x),
                Err(TryRecvError::Disconnected) => return None,
                Err(TryRecvError::Empty) => std::hint::spin_loop(),
            }
        }
        if start.elapsed() > SPIN {
            return from.recv().ok();
        }
        // The host may have more threads to run than CPUs (a sweep's
        // workers): let them run rather than spin through their turn.
        std::thread::yield_now();
    }
}

/// How long [`receive`] spins before it blocks.
const SPIN: Duration = Duration::from_micros(200);
