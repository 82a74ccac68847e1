//! The machine: sockets of cores, their caches and TLBs, and memory.
//!
//! Topology is `sockets x cores_per_socket`, cores numbered socket-major.
//! Each core has a private L1D (and optionally L1I) and optionally a private
//! L2; each socket optionally has one LLC shared by its cores; memory is split
//! into NUMA nodes. [`Machine::access`] runs one reference through
//! translation and the cache levels and returns the cycles it costs, updating
//! the per-cache counters and the counters of the task that made it.
//!
//! The files of this folder, by concern: `params` (the `machine` table:
//! schema, validation, host memory), `build` (construction and wiring),
//! `access` (a batch of references through a socket's part), `fast` (the L1
//! shortcuts), `translation` (TLBs and page walks), `hierarchy` (the rules
//! below), `sockets` (a socket's part and the shares that let sockets run
//! on separate threads); this file holds the types and what the engine and
//! the mechanisms call.
//!
//! The hierarchy rules (what fills where, where victims go) live in
//! `hierarchy` and nowhere else:
//! - a miss goes down the core's path (L1, L2, LLC, memory); on the way back
//!   the line is placed in every level except exclusive ones;
//! - an exclusive level is filled only by the victims of the level above and
//!   gives a line up (invalidating its copy) when it hits;
//! - an inclusive level's victims are removed from every cache above it
//!   (back-invalidation), their dirty data going down with the victim;
//! - dirty victims are written back to the next level, which allocates them
//!   on a miss without reading the line from below (the whole line is
//!   written), or to memory from the last level.

mod access;
mod build;
mod coherence;
mod fast;
mod hierarchy;
mod migration;
mod params;
mod presence;
mod replay;
mod sampler;
mod sockets;
mod split;
mod translation;

pub use coherence::{Coherence, Protocol, Traffic};
pub use migration::{PageMove, SampledPage};
pub use params::{MachineParams, MemoryParams, MAX_NODES};
pub use replay::{Replayed, ReplayedCache};
pub use sampler::{Sampler, SamplerParams, SamplingMode};

use super::cache::{Cache, Evicted, Scope};
use super::page_table::PageTable;
use super::prefetch::Prefetcher;
use super::replacement::ReqKind;
use super::tags::Slot;
use super::tlb::{Tlb, WalkModel};
use crate::counters::{Level, NodeStats, TaskStats};
use crate::error::Result;
use crate::mem::atd::Atd;
use crate::mem::notes::{Note, Notebook};
use crate::types::{Access, Asid, CoreId, LineAddr, TaskId};

/// A core's way down the hierarchy: cache indices, top first.
#[derive(Debug, Clone, Copy, Default)]
struct Path {
    ids: [u16; 3],
    len: u8,
}

impl Path {
    fn new(caches: &[Option<usize>]) -> Path {
        let mut p = Path::default();
        for c in caches.iter().flatten() {
            p.ids[p.len as usize] = *c as u16;
            p.len += 1;
        }
        p
    }

    #[inline(always)]
    fn at(&self, i: usize) -> usize {
        self.ids[i] as usize
    }
}

/// The last translation of a core, per kind of reference (data, instruction),
/// for the shortcut taken when the next reference is to the same line.
#[derive(Debug, Clone, Copy, Default)]
struct Memo {
    /// Virtual line number plus one (0: nothing remembered).
    vline: u64,
    asid: u32,
    /// Physical address of the start of the line.
    pline: u64,
}

/// How far [`Machine::l1_hit`] got with a reference.
enum Fast {
    /// Both the L1 TLB and the L1 cache hit: the latency.
    Hit(u32),
    /// The L1 TLB hit (counted); the line, with the translation's latency.
    Translated(LineAddr, u32),
    /// No L1 TLB, or it missed: nothing counted yet.
    Untranslated,
}

/// Where a run of L1 hits ([`Machine::l1_run`]) stopped, so that the
/// general path does not search again what the run already searched.
#[derive(Debug, Clone, Copy)]
enum Stop {
    /// At a reference the run does not take: nothing is known.
    Unknown,
    /// The L1 TLB misses the page; nothing changed.
    TlbMiss,
    /// The L1 TLB holds the page at this slot (not touched yet), and the
    /// L1 cache misses this line.
    LineMiss(Slot, LineAddr),
}

/// Hits the L1 shortcuts made during one batch, credited to the caches, the
/// TLBs and the task once per batch rather than once per reference.
#[derive(Debug, Default)]
struct Tally {
    /// L1 cache hits by class (data, instruction) and [`ReqKind`].
    l1: [[u64; 3]; 2],
    /// L1 TLB hits by class.
    tlb: [u64; 2],
}

/// What a core is wired to.
#[derive(Debug, Clone, Copy)]
struct Ports {
    node: u32,
    data: Path,
    instr: Path,
    dtlb: Option<usize>,
    itlb: Option<usize>,
    stlb: Option<usize>,
}

impl Ports {
    /// The cache path a request of `kind` takes.
    #[inline(always)]
    fn path(&self, kind: ReqKind) -> &Path {
        if kind == ReqKind::Ifetch {
            &self.instr
        } else {
            &self.data
        }
    }

    /// The L1 TLB a request of `kind` looks up first (none without TLBs).
    #[inline(always)]
    fn l1_tlb(&self, kind: ReqKind) -> Option<usize> {
        if kind == ReqKind::Ifetch {
            self.itlb.or(self.dtlb)
        } else {
            self.dtlb
        }
    }
}

/// Sockets, cores, caches, TLBs and memory, with the per-task counters.
///
/// The caches and TLBs of a socket sit together in `caches` and `tlbs`, and
/// its cores' wiring ([`Ports`]) indexes them from the socket's first: a
/// reference runs through a [`Part`], the socket's slices of the machine,
/// so that sockets, which share no cache, can later be given to separate
/// threads.
#[derive(Debug)]
pub struct Machine {
    /// The caches split by set over a second thread ([`Machine::split_sets`]).
    /// Declared first to be dropped first: the other side's notes hold
    /// the channel of `notebook`'s worker, which waits for it to close.
    split: Option<Box<split::Split>>,
    /// Per socket, then per core socket-major: its LLC, then each core's L1s and L2.
    caches: Vec<Cache>,
    cache_level: Vec<Level>,
    /// Per cache, the node of its socket.
    cache_node: Vec<u32>,
    /// Per cache: the caches above it that an inclusive eviction must
    /// clean, indexed from its socket's first cache.
    uppers: Vec<Vec<usize>>,
    tlbs: Vec<Tlb>,
    /// Per core, what it is wired to, indexed from its socket's first cache and TLB.
    cores: Vec<Ports>,
    /// Per socket, where its caches and TLBs start.
    sockets: Vec<Bases>,
    cores_per_socket: usize,
    page_table: PageTable,
    k: Constants,
    nodes: Vec<NodeStats>,
    /// Cycles of a line read by a core of node `i` from node `j`, at `[i * nodes + j]`.
    node_latency: Vec<u32>,
    /// Counters of every task, indexed by task id (their compulsory and
    /// induced misses as of the last [`Machine::settle_counts`]).
    pub tasks: Vec<TaskStats>,
    memos: Vec<[Memo; 2]>,
    scratch: Vec<Evicted>,
    /// What the first-touch sets and the attributed levels' shadows must
    /// see, classified off the simulation's path.
    notebook: Notebook,
    /// Per cache, its hardware prefetcher.
    prefetchers: Vec<Option<Prefetcher>>,
    /// Per core, the migration prefetches waiting for its L2.
    migration_queues: Vec<MigrationQueue>,
    /// The switch-miss estimator's tag directory over the LLCs, when a
    /// `cs-estimator` mechanism installed one (see [`Machine::install_atd`]).
    atd: Option<Box<Atd>>,
    /// Coherence between the cores' caches, when enabled
    /// ([`Machine::enable_coherence`]); references then run through the
    /// whole machine's part, wired by `wide`.
    coherence: Option<Box<Coherence>>,
    wide: Option<Box<Wide>>,
    /// The interconnect sampler's configuration, and the clock it reads
    /// its time in: installed with coherence.
    sampler: Option<(SamplerParams, f64)>,
}

/// The wiring of [`Ports`] and inclusive uppers with indexes from the
/// machine's first cache and TLB, for a part spanning every socket.
#[derive(Debug)]
struct Wide {
    cores: Vec<Ports>,
    uppers: Vec<Vec<usize>>,
}

/// Where a socket's caches and TLBs start in the machine's.
#[derive(Debug, Clone, Copy)]
struct Bases {
    cache: usize,
    tlb: usize,
}

/// What the machine's parameters fix for the whole run.
#[derive(Debug, Clone, Copy)]
struct Constants {
    line_shift: u32,
    page_shift: u32,
    frames_per_node: u64,
    nodes: u32,
    walk: WalkModel,
    walk_latency: u32,
    radix_levels: u32,
    l2_victim_fill: bool,
    base_cpi: f64,
    /// Cycles of a NUMA hinting fault's handler ([`Machine::enable_numa_hinting`]).
    hint_fault_cycles: u32,
    /// Whether the L1 shortcuts (repeat, L1 hit) may run: not when an L1 or
    /// the L1 TLB is attributed, nor when an L1 has a prefetcher, since
    /// they bypass the shadows and the prefetchers.
    shortcuts: bool,
}

/// One socket of the machine, with what its references update: its caches,
/// TLBs and cores (indexed from the socket's first), and the counters,
/// page tables and notes they share with the other sockets (the machine's
/// own, or a [`Share`] of them while the sockets run on separate threads).
pub struct Part<'m> {
    caches: &'m mut [Cache],
    cache_level: &'m [Level],
    uppers: &'m [Vec<usize>],
    prefetchers: &'m mut [Option<Prefetcher>],
    tlbs: &'m mut [Tlb],
    cores: &'m [Ports],
    memos: &'m mut [[Memo; 2]],
    migration_queues: &'m mut [MigrationQueue],
    /// The machine's index of `caches[0]`: notes and the tag directory
    /// name caches by it.
    cache_base: usize,
    /// The machine's number of `cores[0]`.
    first_core: usize,
    tasks: &'m mut [TaskStats],
    nodes: &'m mut [NodeStats],
    node_latency: &'m [u32],
    page_table: &'m mut PageTable,
    notebook: &'m mut Notebook,
    atd: Option<&'m mut Atd>,
    coherence: Option<&'m mut Coherence>,
    scratch: &'m mut Vec<Evicted>,
    /// Where a radix walk's page-table reads go instead of the caches, if
    /// anywhere: the translation of caches split by set, which deals them
    /// to the side owning each line.
    walks: Option<&'m mut Vec<LineAddr>>,
    k: &'m Constants,
}

/// Lines a migration prefetcher sent to a core's L2, issued as the core's
/// time passes at a fixed rate (the spec's one prefetch per cycle).
#[derive(Debug, Clone, Default)]
struct MigrationQueue {
    lines: std::collections::VecDeque<(LineAddr, TaskId)>,
    per_cycle: f64,
    /// Prefetches the elapsed cycles allow but not yet issued (below 1).
    credit: f64,
}

/// What a socket simulated on a thread of its own updates that sockets
/// otherwise share ([`Machine::share_out`]): copies of the task and node
/// counters, the address spaces of its tasks, and a pad for its notes.
pub struct Share {
    tasks: Vec<TaskStats>,
    nodes: Vec<NodeStats>,
    page_table: PageTable,
    notebook: Notebook,
    scratch: Vec<Evicted>,
}

impl Machine {
    /// The most stall cycles one reference can cost: the slowest translation
    /// (an L1 or L2 TLB hit, or a walk whose entry reads come from the
    /// slowest level) plus the slowest data level. A reference that crosses
    /// lines costs its slowest line, so the bound holds for it too. The
    /// engine bounds how far a chunk of references may run past a deadline.
    pub fn max_stall(&self) -> u64 {
        let k = &self.k;
        let slowest = self.caches.iter().map(|c| c.latency_cycles).chain(self.node_latency.iter().copied());
        let slowest = slowest.max().unwrap_or(0) as u64;
        let walk = match k.walk {
            WalkModel::Fixed => k.walk_latency as u64,
            WalkModel::Radix => k.walk_latency as u64 + k.radix_levels as u64 * slowest,
        };
        let translation = match self.tlbs.is_empty() {
            true => 0,
            false => self.tlbs.iter().map(|t| t.latency_cycles as u64).max().unwrap_or(0).max(walk),
        };
        translation + k.hint_fault_cycles as u64 + slowest
    }

    /// Lines of `task` (brought in on its behalf) held in each level of the
    /// caches `core` uses: the residual footprint it finds when it runs there.
    pub fn resident(&self, core: CoreId, task: TaskId) -> [u64; Level::COUNT] {
        let ports = &self.cores[core.0 as usize];
        let base = self.sockets[self.locate(core).0].cache;
        let mut lines = [0; Level::COUNT];
        for path in [ports.instr, ports.data] {
            for i in 0..path.len as usize {
                let c = base + path.at(i);
                lines[self.cache_level[c] as usize] = self.caches[c].lines_of(task);
            }
        }
        if let Some(odd) = self.resident_other(core, task) {
            lines.iter_mut().zip(odd).for_each(|(l, o)| *l += o);
        }
        lines
    }

    /// `task` was switched out: its later misses on lines it used before
    /// count as switch-induced.
    pub fn switched_out(&mut self, task: TaskId) {
        self.notebook.note(Note::SwitchedOut(task));
    }

    /// `task` moved to another core: its later misses on lines it used
    /// before count as migration-induced.
    pub fn moved(&mut self, task: TaskId) {
        self.notebook.note(Note::Moved(task));
    }

    /// Classify misses on a worker thread from now on (the same counts,
    /// off the simulation's path).
    pub fn classify_on_thread(&mut self) -> Result<()> {
        let notebook = std::mem::replace(&mut self.notebook, Notebook::new(0, None));
        self.notebook = notebook.threaded()?;
        Ok(())
    }

    /// Bring the compulsory misses (of the caches and the tasks) and the
    /// attributed levels' induced misses up to date: they are classified in
    /// batches, and are current only after this.
    pub fn settle_counts(&mut self) -> Result<()> {
        self.check_split()?;
        self.absorb_other_notes();
        let (cache_on, tlb_on) = self.notebook.coverage();
        let settled = self.notebook.settle()?;
        for (cache, compulsory) in self.caches.iter_mut().zip(&settled.caches) {
            cache.stats.compulsory = *compulsory;
        }
        if self.tasks.len() < settled.tasks.len() {
            self.tasks.resize(settled.tasks.len(), TaskStats::default());
        }
        let none = Default::default();
        for (stats, counts) in self.tasks.iter_mut().zip(settled.tasks.iter().chain(std::iter::repeat(&none))) {
            for (l, level) in stats.levels.iter_mut().enumerate() {
                level.compulsory = counts.compulsory[l];
                if cache_on[l] {
                    level.induced = counts.induced[l];
                }
            }
            if tlb_on[0] {
                stats.tlb.l1_induced = counts.tlb_induced[0];
            }
            if tlb_on[1] {
                stats.tlb.l2_induced = counts.tlb_induced[1];
            }
        }
        Ok(())
    }

    /// Note where `task`'s switch-induced misses at `level` stand now, if
    /// `level` is attributed; returns an index into [`Machine::marks`],
    /// which has the count after [`Machine::settle_counts`].
    pub fn mark_switch_misses(&mut self, task: TaskId, level: Level) -> Option<usize> {
        self.notebook.mark(task, level)
    }

    /// The counts of [`Machine::mark_switch_misses`], as of the last settle.
    pub fn marks(&self) -> &[u64] {
        &self.notebook.settled().marks
    }

    /// The address spaces the run will use: each gets its own share of
    /// every node's frames, so its pages do not depend on when the others
    /// touch theirs (see [`PageTable`]). Call before the first access.
    pub fn set_address_spaces(&mut self, asids: &[Asid]) {
        self.page_table.set_address_spaces(asids);
    }

    /// Make room for the counters of tasks `0..n`.
    pub fn add_tasks(&mut self, n: usize) {
        if self.tasks.len() < n {
            self.tasks.resize(n, TaskStats::default());
        }
    }

    /// Forget every counter (after warm-up): tasks, caches, TLBs, memory
    /// nodes; cache and TLB contents and page tables stay.
    pub fn reset_stats(&mut self) {
        self.tasks.iter_mut().for_each(|t| *t = TaskStats::default());
        // With the caches split, the other side's notes before the reset
        // go first, and its later ones, sent to the worker on their own, after.
        self.absorb_other_notes();
        self.notebook.note(Note::Reset);
        if self.split.is_some() {
            self.notebook.flush();
        }
        for c in &mut self.caches {
            c.stats = Default::default();
        }
        for t in &mut self.tlbs {
            t.stats = Default::default();
        }
        for n in &mut self.nodes {
            *n = NodeStats { node: n.node, ..NodeStats::default() };
        }
        if let Some(co) = &mut self.coherence {
            co.reset();
        }
    }

    /// Number of cores.
    pub fn cores(&self) -> usize {
        self.cores.len()
    }

    /// Cycles per instruction before stalls.
    pub fn base_cpi(&self) -> f64 {
        self.k.base_cpi
    }

    /// Whether an allocation ever found every node full.
    pub fn memory_exhausted(&self) -> bool {
        self.page_table.exhausted
    }

    /// Run one reference of `task` (address space `asid`) on `core`; returns
    /// the cycles it adds beyond the base CPI and updates the counters. A
    /// reference that crosses a line boundary touches each line; its cost is
    /// that of the slowest line.
    #[inline]
    pub fn access(&mut self, core: CoreId, task: TaskId, asid: Asid, a: &Access) -> u32 {
        self.access_batch(core, task, asid, std::slice::from_ref(a)) as u32
    }

    /// Cycles `task` has spent: its instructions at the base CPI plus its stalls.
    pub fn cycles_of(&self, task: TaskId) -> f64 {
        let t = &self.tasks[task.0 as usize];
        t.instructions as f64 * self.k.base_cpi + t.stall_cycles as f64
    }

    /// Run a batch of references of one task on one core; returns the cycles
    /// they add beyond the base CPI. The same as calling [`Machine::access`]
    /// for each, with the per-task totals updated once per batch.
    pub fn access_batch(&mut self, core: CoreId, task: TaskId, asid: Asid, batch: &[Access]) -> u64 {
        if self.split.is_some() {
            return self.split_batch(core, task, asid, batch);
        }
        let (mut part, c) = self.part_of(core);
        part.access_batch(c, task, asid, batch)
    }

    /// Remove the lines in `scope` from the private caches of `core` (L1s,
    /// then L2). With `write_back`, dirty lines go down the hierarchy as
    /// write-backs (a flush); without, they are dropped (an invalidation).
    pub fn flush_core(&mut self, core: CoreId, scope: Scope, write_back: bool) {
        let (mut part, c) = self.part_of(core);
        part.flush_private(c, |level| level != Level::Llc, scope, write_back);
    }

    /// Remove the lines in `scope` from the LLC of `socket` (and, for an
    /// inclusive LLC, from the caches above it).
    pub fn flush_llc(&mut self, socket: usize, scope: Scope, write_back: bool) {
        let (mut part, c) = self.part_of(CoreId((socket * self.cores_per_socket) as u32));
        let path = part.cores[c].data;
        let i = path.len as usize - 1;
        if part.cache_level[path.at(i)] == Level::Llc {
            part.flush_at(&path, i, scope, write_back);
        }
    }

    /// Index (into [`Machine::caches`]) of `core`'s private cache of `level`.
    pub fn private_cache(&self, core: CoreId, level: Level) -> Option<usize> {
        let (socket, _) = self.locate(core);
        let base = self.sockets[socket].cache;
        let path = self.cores[core.0 as usize].data;
        (0..path.len as usize).map(|i| base + path.at(i)).find(|&c| self.cache_level[c] == level)
    }

    /// Remove every line from `core`'s private caches of the given levels,
    /// writing dirty lines down (a flush) or dropping them.
    pub fn flush_levels(&mut self, core: CoreId, levels: &[Level], write_back: bool) {
        let (mut part, c) = self.part_of(core);
        part.flush_private(c, |level| levels.contains(&level), Scope::All, write_back);
    }

    /// Place `line` in `core`'s private cache of `level` for `task`, data
    /// and all, without a lookup below: the idealized restore of a
    /// migration study. Counts it as migrated in (or dropped if present);
    /// returns whether it was placed.
    pub fn install(&mut self, core: CoreId, level: Level, line: LineAddr, task: TaskId) -> bool {
        let (mut part, c) = self.part_of(core);
        part.install(c, level, line, task)
    }

    /// Queue migration prefetches of `lines` for `core`'s L2, on behalf of
    /// `task`; they issue as the core runs, `per_cycle` per cycle.
    pub fn queue_migration_prefetches(&mut self, core: CoreId, lines: &[LineAddr], task: TaskId, per_cycle: f64) {
        let q = &mut self.migration_queues[core.0 as usize];
        q.per_cycle = per_cycle;
        q.lines.extend(lines.iter().map(|&l| (l, task)));
    }

    /// Migration prefetches still waiting at `core`.
    pub fn pending_migration_prefetches(&self, core: CoreId) -> usize {
        self.migration_queues[core.0 as usize].lines.len()
    }

    /// Flush the TLBs of `core`: every entry, or those of one asid.
    pub fn flush_tlbs(&mut self, core: CoreId, asid: Option<Asid>) {
        for t in self.core_tlbs(core).into_iter().flatten() {
            self.tlbs[t].flush(asid);
        }
    }

    /// The TLBs of `core` as indexes into [`Machine::tlbs`]: its L1 data
    /// TLB, L1 instruction TLB and second-level TLB (each if configured).
    pub fn core_tlbs(&self, core: CoreId) -> [Option<usize>; 3] {
        let ports = &self.cores[core.0 as usize];
        let base = self.sockets[self.locate(core).0].tlb;
        [ports.dtlb, ports.itlb, ports.stlb].map(|t| t.map(|t| base + t))
    }

    /// Log2 of the page size.
    pub fn page_shift(&self) -> u32 {
        self.k.page_shift
    }

    /// Put a translation back into the L1 data TLB of `core` (a mechanism
    /// restoring saved entries), as a miss would fill it: its victim goes to
    /// the second-level TLB under `l2_victim_fill`. Not counted as a hit,
    /// miss or walk, nor seen by the attribution shadows. Returns false if
    /// the entry was already there or the core has no TLB.
    pub fn restore_tlb_entry(&mut self, core: CoreId, key: u64, frame: u64) -> bool {
        let [dtlb, _, stlb] = self.core_tlbs(core);
        let Some(l1) = dtlb else { return false };
        if self.tlbs[l1].probe(key) {
            return false;
        }
        if let (Some(s), true) = (stlb, self.k.l2_victim_fill) {
            // The levels are exclusive then, as after an L2 TLB hit.
            self.tlbs[s].remove(key);
        }
        let victim = self.tlbs[l1].insert(key, frame);
        if let (Some((vkey, vframe)), Some(s), true) = (victim, stlb, self.k.l2_victim_fill) {
            if !self.tlbs[s].probe(vkey) {
                self.tlbs[s].insert(vkey, vframe);
            }
        }
        true
    }

    /// The caches, for inspection (tests, attribution, results).
    pub fn caches(&self) -> &[Cache] {
        &self.caches
    }

    /// The level of each cache in [`Machine::caches`].
    pub fn cache_levels(&self) -> &[Level] {
        &self.cache_level
    }

    /// The TLBs, for inspection.
    pub fn tlbs(&self) -> &[Tlb] {
        &self.tlbs
    }

    /// Per-node memory counters, with the frames allocated on each node.
    pub fn node_stats(&self) -> Vec<NodeStats> {
        let mut nodes = self.nodes.clone();
        for n in &mut nodes {
            n.pages = self.page_table.frames_used(n.node);
        }
        nodes
    }

    // --- The elastic-time-slicing estimator (`mech::cs_estimator`). ---

    /// The indexes of the LLCs in [`Machine::caches`], one per socket.
    fn llcs(&self) -> Vec<usize> {
        (0..self.caches.len()).filter(|&c| self.cache_level[c] == Level::Llc).collect()
    }

    /// Watch every LLC with a switch-miss tag directory sampling one set in
    /// `2^shift` (replacing any installed before). Its bits start clear.
    pub fn install_atd(&mut self, shift: u32) {
        self.atd = Some(Box::new(Atd::new(&self.caches, &self.llcs(), shift)));
    }

    /// The switch-miss tag directory, if installed.
    pub fn atd(&self) -> Option<&Atd> {
        self.atd.as_deref()
    }

    /// The switch-miss tag directory, if installed.
    pub fn atd_mut(&mut self) -> Option<&mut Atd> {
        self.atd.as_deref_mut()
    }

    /// Emulate a context switch of `task` in the tag directory (clear the
    /// bits of its lines, zero its counts); nothing without one.
    pub fn emulate_switch(&mut self, task: TaskId) {
        if let Some(atd) = &mut self.atd {
            atd.emulate_switch(&self.caches, task);
        }
    }

    /// Split the ways of every LLC equally among the cores of its socket.
    pub fn partition_llc_ways(&mut self) {
        for c in self.llcs() {
            self.caches[c].partition_ways(self.cores_per_socket);
        }
    }

    /// `task` now runs on `core`: in a way-partitioned LLC it fills the
    /// ways of that core's partition.
    pub fn assign_llc_partition(&mut self, task: TaskId, core: CoreId) {
        let part = core.0 as usize % self.cores_per_socket;
        for c in self.llcs() {
            self.caches[c].assign_partition(task, part);
        }
    }

    /// Index of the cache with component path `path`.
    pub fn cache_index(&self, path: &str) -> Option<usize> {
        self.caches.iter().position(|c| c.path == path)
    }
}

/// The physical line of virtual line `vline` in its page's `frame`.
#[inline(always)]
fn line_in_frame(frame: u64, vline: u64, page_shift: u32, line_shift: u32) -> LineAddr {
    let lines_per_page = page_shift - line_shift;
    LineAddr((frame << lines_per_page) | (vline & ((1 << lines_per_page) - 1)))
}
