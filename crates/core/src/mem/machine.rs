//! The machine: sockets of cores, their caches and TLBs, and memory.
//!
//! Topology is `sockets x cores_per_socket`, cores numbered socket-major.
//! Each core has a private L1D (and optionally L1I) and optionally a private
//! L2; each socket optionally has one LLC shared by its cores; memory is split
//! into NUMA nodes. [`Machine::access`] runs one reference through
//! translation and the cache levels and returns the cycles it costs, updating
//! the per-cache counters and the counters of the task that made it.
//!
//! The hierarchy rules (what fills where, where victims go) live here and
//! nowhere else:
//! - a miss goes down the core's path (L1, L2, LLC, memory); on the way back
//!   the line is placed in every level except exclusive ones;
//! - an exclusive level is filled only by the victims of the level above and
//!   gives a line up (invalidating its copy) when it hits;
//! - an inclusive level's victims are removed from every cache above it
//!   (back-invalidation), their dirty data going down with the victim;
//! - dirty victims are written back to the next level, which allocates them
//!   on a miss without reading the line from below (the whole line is
//!   written), or to memory from the last level.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::cache::{self, Cache, CacheParams, Evicted, Filled, Inclusion, Req, Scope};
use super::page_table::{FrameAllocation, PageTable, Placement};
use super::prefetch::{self, Observed, Prefetch, Prefetcher, Proposals};
use super::replacement::{HitUpdate, ReqKind};
use super::tags::Slot;
use super::tlb::{self, Tlb, TlbParams, WalkModel};
use crate::counters::{Level, NodeStats, TaskStats};
use crate::error::{Issues, Result};
use crate::mem::atd::Atd;
use crate::mem::attribution::{Attributed, Attribution};
use crate::mem::notes::{self, Note, Notebook};
use crate::types::{Access, AccessKind, Asid, CoreId, LineAddr, TaskId, VirtAddr};
use crate::units::ByteSize;

/// The most NUMA nodes a machine may have: Linux's `MAX_NUMNODES` with its
/// largest `NODES_SHIFT` (10).
pub const MAX_NODES: u32 = 1024;

/// Memory and NUMA configuration (`machine.memory`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryParams {
    /// NUMA nodes; default one per socket. Socket `s` is local to node
    /// `s * nodes / sockets`.
    pub nodes: Option<u32>,
    /// Capacity of each node.
    pub node_bytes: ByteSize,
    /// Page size: 4 KiB, 2 MiB, or any power of two from 4 KiB.
    pub page_bytes: ByteSize,
    /// Cycles to read a line from the local node.
    pub latency_cycles: u32,
    /// Cycles to read a line from another node; default `latency_cycles`.
    pub remote_latency_cycles: Option<u32>,
    /// Node of a newly touched page.
    pub placement: Placement,
    /// Order of frames within a node.
    pub frame_allocation: FrameAllocation,
}

impl Default for MemoryParams {
    fn default() -> Self {
        MemoryParams {
            nodes: None,
            node_bytes: ByteSize(64 << 30),
            page_bytes: ByteSize(4096),
            latency_cycles: 200,
            remote_latency_cycles: None,
            placement: Placement::FirstTouch,
            frame_allocation: FrameAllocation::Random,
        }
    }
}

/// The machine (`machine`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MachineParams {
    /// Name of the preset these values started from (informational once resolved).
    pub preset: Option<String>,
    /// Sockets.
    pub sockets: u32,
    /// Cores per socket.
    pub cores_per_socket: u32,
    /// Core clock, used to convert times such as `"2.5ms"` to cycles.
    pub frequency_ghz: f64,
    /// Cycles per instruction before memory stalls.
    pub base_cpi: f64,
    /// Private L1 instruction cache; without it fetches use the L1D.
    #[serde(deserialize_with = "crate::plugin::optional")]
    pub l1i: Option<CacheParams>,
    /// Private L1 data cache.
    pub l1d: CacheParams,
    /// Private L2.
    #[serde(deserialize_with = "crate::plugin::optional")]
    pub l2: Option<CacheParams>,
    /// Last-level cache shared by the cores of a socket.
    #[serde(deserialize_with = "crate::plugin::optional")]
    pub llc: Option<CacheParams>,
    /// TLBs; without them translation is free.
    #[serde(deserialize_with = "crate::plugin::optional")]
    pub tlb: Option<TlbParams>,
    /// Memory.
    pub memory: MemoryParams,
    /// Levels whose misses are attributed to their causes (compulsory,
    /// capacity/conflict, switch-, migration- and sharing-induced) with
    /// per-task isolated shadows, e.g. `["l2", "llc", "tlb.l1"]`. Each costs
    /// time; the L1s and `tlb.l1` also turn off the L1 shortcuts.
    pub attribution: Vec<Attributed>,
}

impl Default for MachineParams {
    fn default() -> Self {
        MachineParams {
            preset: None,
            sockets: 1,
            cores_per_socket: 1,
            frequency_ghz: 3.0,
            base_cpi: 1.0,
            l1i: None,
            l1d: CacheParams::default(),
            l2: None,
            llc: None,
            tlb: Some(TlbParams::default()),
            memory: MemoryParams::default(),
            attribution: Vec::new(),
        }
    }
}

impl MachineParams {
    /// The host memory a machine of these params takes, at most, running
    /// `tasks` tasks in `spaces` address spaces: its parts, each with the
    /// key that decides its size (`loc` is the machine's). What grows with
    /// the pages and lines a run touches (page tables, the lines each cache
    /// has seen) is not counted.
    pub fn host_bytes(&self, tasks: u64, spaces: u64, loc: &str) -> Vec<(String, u64)> {
        let at = |key: &str| format!("{loc}.{key}");
        let sockets = self.sockets as u64;
        let cores = self.cores() as u64;
        let line_bits = Machine::line_bits(self);
        let mut parts = vec![(loc.to_string(), notes::HOST_BYTES)];
        for (name, params) in [("l1i", self.l1i.as_ref()), ("l1d", Some(&self.l1d)), ("l2", self.l2.as_ref())] {
            if let Some(p) = params {
                parts.push((at(&format!("{name}.size_bytes")), p.host_bytes(line_bits).saturating_mul(cores)));
            }
        }
        if let Some(p) = &self.llc {
            parts.push((at("llc.size_bytes"), p.host_bytes(line_bits).saturating_mul(sockets)));
        }
        if let Some(t) = &self.tlb {
            for (name, params) in [("l1d", Some(&t.l1d)), ("l1i", t.l1i.as_ref()), ("l2", t.l2.as_ref())] {
                if let Some(p) = params {
                    parts.push((at(&format!("tlb.{name}.entries")), p.host_bytes().saturating_mul(cores)));
                }
            }
        }
        // Each node's counters, in the machine and in each socket's share,
        // and its frames handed out to each address space.
        let per_node = (std::mem::size_of::<NodeStats>() as u64) * (sockets + 1) + 8 * spaces.max(1);
        parts.push((at("memory.nodes"), per_node.saturating_mul(self.nodes() as u64)));
        if !self.attribution.is_empty() {
            let (caches, tlbs) = self.attributed();
            let shadows = Attribution::host_bytes_per_task(&caches, line_bits, tlbs);
            parts.push((at("attribution"), shadows.saturating_mul(tasks)));
        }
        parts
    }

    /// The cache and TLB levels whose misses are attributed, with their params.
    #[allow(clippy::type_complexity)]
    fn attributed(&self) -> (Vec<(Level, &CacheParams)>, [Option<&tlb::TlbLevelParams>; 2]) {
        let on = |a: Attributed| self.attribution.contains(&a);
        let levels = [
            (Attributed::L1i, Level::L1i, self.l1i.as_ref()),
            (Attributed::L1d, Level::L1d, Some(&self.l1d)),
            (Attributed::L2, Level::L2, self.l2.as_ref()),
            (Attributed::Llc, Level::Llc, self.llc.as_ref()),
        ];
        let caches = levels.into_iter().filter(|(a, ..)| on(*a)).filter_map(|(_, l, p)| Some((l, p?))).collect();
        let tlb = self.tlb.as_ref();
        let tlbs = [
            tlb.filter(|_| on(Attributed::TlbL1)).map(|t| &t.l1d),
            tlb.filter(|_| on(Attributed::TlbL2)).and_then(|t| t.l2.as_ref()),
        ];
        (caches, tlbs)
    }

    /// Total cores.
    pub fn cores(&self) -> u32 {
        self.sockets * self.cores_per_socket
    }

    /// NUMA nodes.
    pub fn nodes(&self) -> u32 {
        self.memory.nodes.unwrap_or(self.sockets)
    }

    fn levels_mut(&mut self) -> impl Iterator<Item = (&'static str, &mut CacheParams)> {
        [("l1i", self.l1i.as_mut()), ("l1d", Some(&mut self.l1d)), ("l2", self.l2.as_mut()), ("llc", self.llc.as_mut())]
            .into_iter()
            .filter_map(|(n, p)| p.map(|p| (n, p)))
    }

    /// Check everything, recording problems under `loc`, and fill in the
    /// default params of the replacement policies.
    pub fn validate(&mut self, loc: &str, issues: &mut Issues) {
        let at = |field: &str| format!("{loc}.{field}");
        issues.check(self.sockets >= 1, at("sockets"), "out_of_range", "expected at least 1 socket");
        issues.check(self.cores_per_socket >= 1, at("cores_per_socket"), "out_of_range", "expected at least 1 core");
        issues.check(self.cores() <= 4096, at("cores_per_socket"), "out_of_range", "at most 4096 cores are supported");
        issues.check(
            self.frequency_ghz.is_finite() && self.frequency_ghz > 0.0,
            at("frequency_ghz"),
            "out_of_range",
            format!("expected a positive frequency, got {}", self.frequency_ghz),
        );
        issues.check(
            self.base_cpi.is_finite() && self.base_cpi > 0.0,
            at("base_cpi"),
            "out_of_range",
            format!("expected a positive CPI, got {}", self.base_cpi),
        );
        let l1d_line = self.l1d.line_bytes;
        for (name, params) in self.levels_mut() {
            params.validate(&at(name), issues);
            if name.starts_with("l1") {
                issues.check(
                    params.inclusion == Inclusion::NonInclusive,
                    format!("{loc}.{name}.inclusion"),
                    "invalid_value",
                    "an L1 has no level above it; leave inclusion at non-inclusive",
                );
            }
            issues.check(
                params.line_bytes == l1d_line,
                format!("{loc}.{name}.line_bytes"),
                "invalid_value",
                format!(
                    "all cache levels must share one line size; l1d has {l1d_line}, {name} has {}",
                    params.line_bytes
                ),
            );
        }
        if let Some(tlb) = &mut self.tlb {
            tlb.validate(&at("tlb"), issues);
        }
        let m = &self.memory;
        let mloc = |field: &str| format!("{loc}.memory.{field}");
        let nodes = self.nodes();
        issues.check(nodes >= 1, mloc("nodes"), "out_of_range", "expected at least 1 node");
        issues.check(
            nodes <= MAX_NODES,
            mloc("nodes"),
            "out_of_range",
            format!("at most {MAX_NODES} nodes are supported (Linux's largest MAX_NUMNODES), got {nodes}"),
        );
        issues.check(
            m.page_bytes.0.is_power_of_two() && m.page_bytes.0 >= 4096,
            mloc("page_bytes"),
            "not_power_of_two",
            format!("expected a power of two of at least 4KiB, got {}", m.page_bytes),
        );
        issues.check(
            m.page_bytes.0 >= self.l1d.line_bytes as u64,
            mloc("page_bytes"),
            "invalid_value",
            "a page must hold at least one cache line",
        );
        issues.check(
            m.node_bytes.0 >= m.page_bytes.0 && m.page_bytes.0 > 0 && m.node_bytes.0.is_multiple_of(m.page_bytes.0),
            mloc("node_bytes"),
            "invalid_value",
            format!("expected a positive multiple of the page size, got {}", m.node_bytes),
        );
        if let Placement::Bind(n) = m.placement {
            issues.check(
                n < nodes,
                mloc("placement"),
                "out_of_range",
                format!("bind to node {n}, but the machine has {nodes} node(s)"),
            );
        }
        issues.check(
            m.frame_allocation != FrameAllocation::Identity || nodes == 1,
            mloc("frame_allocation"),
            "invalid_value",
            "identity mapping needs a single NUMA node (physical addresses would not tell the node)",
        );
        for (i, a) in self.attribution.iter().enumerate() {
            let present = match a {
                Attributed::L1i => self.l1i.is_some(),
                Attributed::L1d => true,
                Attributed::L2 => self.l2.is_some(),
                Attributed::Llc => self.llc.is_some(),
                Attributed::TlbL1 => self.tlb.is_some(),
                Attributed::TlbL2 => self.tlb.as_ref().is_some_and(|t| t.l2.is_some()),
            };
            issues.check(
                present,
                format!("{loc}.attribution[{i}]"),
                "invalid_value",
                format!("the machine has no {} to attribute misses of", a.name()),
            );
        }
    }
}

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
    /// Per socket, then per core socket-major: its LLC, then each core's L1s and L2.
    caches: Vec<Cache>,
    cache_level: Vec<Level>,
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
    local_latency: u32,
    remote_latency: u32,
    walk: WalkModel,
    walk_latency: u32,
    radix_levels: u32,
    l2_victim_fill: bool,
    base_cpi: f64,
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
    page_table: &'m mut PageTable,
    notebook: &'m mut Notebook,
    atd: Option<&'m mut Atd>,
    scratch: &'m mut Vec<Evicted>,
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
    /// Build from validated params; `loc` is the config path of the machine.
    pub fn new(params: &MachineParams, seed: u64, loc: &str) -> Result<Machine> {
        let mut params = params.clone();
        let mut issues = Issues::default();
        params.validate(loc, &mut issues);
        issues.finish()?;
        let params = &params;
        let line_bits = Self::line_bits(params);
        let page_shift = params.memory.page_bytes.0.trailing_zeros();
        let page_lines_shift = page_shift - params.l1d.line_bytes.trailing_zeros();
        let mut caches = Vec::new();
        let mut cache_level = Vec::new();
        let mut prefetchers = Vec::new();
        let mut add = |p: &CacheParams, level: Level, path: String| -> Result<usize> {
            let loc = format!("{loc}.{}", level.name());
            let mut c = Cache::new(p, line_bits, seed, &path, &loc)?;
            c.receives_stores = level.receives_stores();
            caches.push(c);
            cache_level.push(level);
            let prefetcher =
                p.prefetcher.as_ref().map(|raw| prefetch::build(raw, page_lines_shift, &format!("{loc}.prefetcher")));
            prefetchers.push(prefetcher.transpose()?);
            Ok(caches.len() - 1)
        };
        let mut tlbs = Vec::new();
        let mut add_tlb = |p: &tlb::TlbLevelParams, name: &str, path: String| -> Result<usize> {
            tlbs.push(Tlb::new(p, seed, &path, &format!("{loc}.tlb.{name}"))?);
            Ok(tlbs.len() - 1)
        };
        let nodes = params.nodes();
        let mut cores = Vec::new();
        let per_core = |present: [bool; 3]| present.iter().filter(|&&p| p).count() * params.cores_per_socket as usize;
        let caches_per_socket =
            params.llc.is_some() as usize + per_core([params.l1i.is_some(), true, params.l2.is_some()]);
        let tlbs_per_socket = params.tlb.as_ref().map_or(0, |t| per_core([true, t.l1i.is_some(), t.l2.is_some()]));
        let mut sockets = Vec::new();
        let mut inclusive_uppers: Vec<(usize, Vec<usize>)> = Vec::new();
        for s in 0..params.sockets {
            let bases = Bases { cache: s as usize * caches_per_socket, tlb: s as usize * tlbs_per_socket };
            sockets.push(bases);
            // Indexes from the socket's first cache and TLB.
            let mut add = |p: &CacheParams, level: Level, path: String| add(p, level, path).map(|c| c - bases.cache);
            let mut add_tlb =
                |p: &tlb::TlbLevelParams, name: &str, path: String| add_tlb(p, name, path).map(|t| t - bases.tlb);
            let llc = params.llc.as_ref().map(|p| add(p, Level::Llc, format!("socket{s}/llc"))).transpose()?;
            let mut socket_caches = Vec::new();
            for i in 0..params.cores_per_socket {
                let core = s * params.cores_per_socket + i;
                let base = format!("socket{s}/core{core}");
                let l1i = params.l1i.as_ref().map(|p| add(p, Level::L1i, format!("{base}/l1i"))).transpose()?;
                let l1d = add(&params.l1d, Level::L1d, format!("{base}/l1d"))?;
                let l2 = params.l2.as_ref().map(|p| add(p, Level::L2, format!("{base}/l2"))).transpose()?;
                let l1s: Vec<usize> = l1i.into_iter().chain([l1d]).collect();
                if let Some(l2) = l2 {
                    inclusive_uppers.push((bases.cache + l2, l1s.clone()));
                }
                socket_caches.extend(l1s.into_iter().chain(l2));
                let (dtlb, itlb, stlb) = match &params.tlb {
                    Some(t) => (
                        Some(add_tlb(&t.l1d, "l1d", format!("{base}/dtlb"))?),
                        t.l1i.as_ref().map(|p| add_tlb(p, "l1i", format!("{base}/itlb"))).transpose()?,
                        t.l2.as_ref().map(|p| add_tlb(p, "l2", format!("{base}/stlb"))).transpose()?,
                    ),
                    None => (None, None, None),
                };
                cores.push(Ports {
                    node: s * nodes / params.sockets,
                    data: Path::new(&[Some(l1d), l2, llc]),
                    instr: Path::new(&[Some(l1i.unwrap_or(l1d)), l2, llc]),
                    dtlb,
                    itlb,
                    stlb,
                });
            }
            if let Some(llc) = llc {
                inclusive_uppers.push((bases.cache + llc, socket_caches));
            }
        }
        debug_assert_eq!(caches.len(), params.sockets as usize * caches_per_socket);
        debug_assert_eq!(tlbs.len(), params.sockets as usize * tlbs_per_socket);
        let mut uppers = vec![Vec::new(); caches.len()];
        for (c, above) in inclusive_uppers {
            uppers[c] = above;
        }
        let frames_per_node = params.memory.node_bytes.0 >> page_shift;
        let t = params.tlb.clone().unwrap_or_default();
        let memos = vec![[Memo::default(); 2]; cores.len()];
        let migration_queues = vec![MigrationQueue::default(); cores.len()];
        let notebook = Notebook::new(caches.len(), Self::attribution(params, line_bits, seed)?);
        Ok(Machine {
            caches,
            cache_level,
            uppers,
            tlbs,
            cores,
            sockets,
            cores_per_socket: params.cores_per_socket as usize,
            page_table: PageTable::new(
                page_shift,
                nodes,
                frames_per_node,
                params.memory.placement,
                params.memory.frame_allocation,
                seed,
            ),
            k: Constants {
                line_shift: params.l1d.line_bytes.trailing_zeros(),
                page_shift,
                frames_per_node,
                nodes,
                local_latency: params.memory.latency_cycles,
                remote_latency: params.memory.remote_latency_cycles.unwrap_or(params.memory.latency_cycles),
                walk: t.walk,
                walk_latency: t.walk_latency_cycles,
                radix_levels: if page_shift >= 21 { 3 } else { 4 },
                l2_victim_fill: t.l2_victim_fill,
                base_cpi: params.base_cpi,
                shortcuts: !params
                    .attribution
                    .iter()
                    .any(|a| matches!(a, Attributed::L1i | Attributed::L1d | Attributed::TlbL1))
                    && params.l1d.prefetcher.is_none()
                    && params.l1i.as_ref().is_none_or(|p| p.prefetcher.is_none()),
            },
            nodes: (0..nodes).map(|node| NodeStats { node, ..NodeStats::default() }).collect(),
            tasks: Vec::new(),
            memos,
            scratch: Vec::new(),
            prefetchers,
            migration_queues,
            notebook,
            atd: None,
        })
    }

    /// The shadows of the attributed levels, if any.
    fn attribution(params: &MachineParams, line_bits: u32, seed: u64) -> Result<Option<Attribution>> {
        if params.attribution.is_empty() {
            return Ok(None);
        }
        let (caches, tlbs) = params.attributed();
        Ok(Some(Attribution::new(&caches, line_bits, tlbs, seed)?))
    }

    /// The most stall cycles one reference can cost: the slowest translation
    /// (an L1 or L2 TLB hit, or a walk whose entry reads come from the
    /// slowest level) plus the slowest data level. A reference that crosses
    /// lines costs its slowest line, so the bound holds for it too. The
    /// engine bounds how far a chunk of references may run past a deadline.
    pub fn max_stall(&self) -> u64 {
        let k = &self.k;
        let slowest = self.caches.iter().map(|c| c.latency_cycles).chain([k.local_latency, k.remote_latency]);
        let slowest = slowest.max().unwrap_or(0) as u64;
        let walk = match k.walk {
            WalkModel::Fixed => k.walk_latency as u64,
            WalkModel::Radix => k.walk_latency as u64 + k.radix_levels as u64 * slowest,
        };
        let translation = match self.tlbs.is_empty() {
            true => 0,
            false => self.tlbs.iter().map(|t| t.latency_cycles as u64).max().unwrap_or(0).max(walk),
        };
        translation + slowest
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

    /// Bits of the largest physical line number: frames come from the
    /// nodes' memory, except under identity allocation, where a physical
    /// address is the virtual one and may be any 64-bit value.
    fn line_bits(params: &MachineParams) -> u32 {
        if params.memory.frame_allocation == FrameAllocation::Identity {
            return 64;
        }
        let bytes = params.memory.node_bytes.0.saturating_mul(params.nodes() as u64);
        let line_shift = params.l1d.line_bytes.trailing_zeros();
        64 - (bytes.saturating_sub(1) >> line_shift).leading_zeros()
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
        self.notebook.note(Note::Reset);
        for c in &mut self.caches {
            c.stats = Default::default();
        }
        for t in &mut self.tlbs {
            t.stats = Default::default();
        }
        for n in &mut self.nodes {
            *n = NodeStats { node: n.node, ..NodeStats::default() };
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
        let (socket, c) = self.locate(core);
        self.part(socket).access_batch(c, task, asid, batch)
    }

    /// The socket of `core`, and the core's index within it.
    fn locate(&self, core: CoreId) -> (usize, usize) {
        let c = core.0 as usize;
        (c / self.cores_per_socket, c % self.cores_per_socket)
    }

    /// The machine's caches, TLBs and cores that belong to `socket`.
    fn ranges(&self, socket: usize) -> (Range<usize>, Range<usize>, Range<usize>) {
        let start = self.sockets[socket];
        let end = self.sockets.get(socket + 1).map_or((self.caches.len(), self.tlbs.len()), |b| (b.cache, b.tlb));
        let cores = socket * self.cores_per_socket..(socket + 1) * self.cores_per_socket;
        (start.cache..end.0, start.tlb..end.1, cores)
    }

    /// Socket `socket`'s part of the machine.
    fn part(&mut self, socket: usize) -> Part<'_> {
        let (caches, tlbs, cores) = self.ranges(socket);
        Part {
            cache_base: caches.start,
            first_core: cores.start,
            caches: &mut self.caches[caches.clone()],
            cache_level: &self.cache_level[caches.clone()],
            uppers: &self.uppers[caches.clone()],
            prefetchers: &mut self.prefetchers[caches],
            tlbs: &mut self.tlbs[tlbs],
            cores: &self.cores[cores.clone()],
            memos: &mut self.memos[cores.clone()],
            migration_queues: &mut self.migration_queues[cores],
            tasks: &mut self.tasks,
            nodes: &mut self.nodes,
            page_table: &mut self.page_table,
            notebook: &mut self.notebook,
            atd: self.atd.as_deref_mut(),
            scratch: &mut self.scratch,
            k: &self.k,
        }
    }

    /// The address space (an index into the page tables) of `asid`.
    pub fn space_of(&self, asid: Asid) -> usize {
        self.page_table.space_of(asid)
    }

    /// Whether every reference can run in its socket's part alone, so that
    /// sockets may run on separate threads: no switch-miss tag directory
    /// (it spans the LLCs) and no attributed level (a write-back carries
    /// its owner's shadow across sockets, and shadows depend on order).
    pub fn sockets_apart(&self) -> bool {
        self.atd.is_none() && self.notebook.coverage() == Default::default()
    }

    /// Shares for running the sockets on separate threads, socket `s` using
    /// address spaces `spaces[s]` only (no space in two sockets' lists).
    /// Until [`Machine::take_back`], those spaces are out of the machine.
    pub fn share_out(&mut self, spaces: &[Vec<usize>]) -> Vec<Share> {
        debug_assert!(self.sockets_apart());
        spaces
            .iter()
            .map(|spaces| Share {
                tasks: self.tasks.clone(),
                nodes: self.nodes.iter().map(|n| NodeStats { node: n.node, ..NodeStats::default() }).collect(),
                page_table: self.page_table.lend(spaces),
                notebook: self.notebook.pad(),
                scratch: Vec::new(),
            })
            .collect()
    }

    /// Every socket's part, over its share, to run on a thread of its own.
    pub fn parts<'m>(&'m mut self, shares: &'m mut [Share]) -> Vec<Part<'m>> {
        let ranges: Vec<_> = (0..self.sockets.len()).map(|s| self.ranges(s)).collect();
        let mut caches = carve(&mut self.caches, ranges.iter().map(|r| r.0.len()));
        let mut prefetchers = carve(&mut self.prefetchers, ranges.iter().map(|r| r.0.len()));
        let mut tlbs = carve(&mut self.tlbs, ranges.iter().map(|r| r.1.len()));
        let mut memos = carve(&mut self.memos, ranges.iter().map(|r| r.2.len()));
        let mut queues = carve(&mut self.migration_queues, ranges.iter().map(|r| r.2.len()));
        let (cache_level, uppers, cores, k) = (&self.cache_level, &self.uppers, &self.cores, &self.k);
        shares
            .iter_mut()
            .zip(ranges)
            .map(|(share, (c, _, cores_of))| Part {
                cache_base: c.start,
                first_core: cores_of.start,
                caches: caches.next().expect("a slice per socket"),
                cache_level: &cache_level[c.clone()],
                uppers: &uppers[c],
                prefetchers: prefetchers.next().expect("a slice per socket"),
                tlbs: tlbs.next().expect("a slice per socket"),
                cores: &cores[cores_of],
                memos: memos.next().expect("a slice per socket"),
                migration_queues: queues.next().expect("a slice per socket"),
                tasks: &mut share.tasks,
                nodes: &mut share.nodes,
                page_table: &mut share.page_table,
                notebook: &mut share.notebook,
                atd: None,
                scratch: &mut share.scratch,
                k,
            })
            .collect()
    }

    /// Put back what [`Machine::share_out`] handed out, socket `s` having run
    /// tasks `tasks[s]`: their counters, the node counters added up, the
    /// address spaces, and the notes (in socket order).
    pub fn take_back(&mut self, shares: Vec<Share>, tasks: &[Vec<usize>]) {
        for (share, tasks) in shares.into_iter().zip(tasks) {
            for &t in tasks {
                self.tasks[t] = share.tasks[t].clone();
            }
            for (home, n) in self.nodes.iter_mut().zip(&share.nodes) {
                home.reads += n.reads;
                home.writes += n.writes;
            }
            self.page_table.take_back(share.page_table);
            self.notebook.absorb(share.notebook);
        }
    }

    /// Remove the lines in `scope` from the private caches of `core` (L1s,
    /// then L2). With `write_back`, dirty lines go down the hierarchy as
    /// write-backs (a flush); without, they are dropped (an invalidation).
    pub fn flush_core(&mut self, core: CoreId, scope: Scope, write_back: bool) {
        let (socket, c) = self.locate(core);
        self.part(socket).flush_private(c, |level| level != Level::Llc, scope, write_back);
    }

    /// Remove the lines in `scope` from the LLC of `socket` (and, for an
    /// inclusive LLC, from the caches above it).
    pub fn flush_llc(&mut self, socket: usize, scope: Scope, write_back: bool) {
        let mut part = self.part(socket);
        let path = part.cores[0].data;
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
        let (socket, c) = self.locate(core);
        self.part(socket).flush_private(c, |level| levels.contains(&level), Scope::All, write_back);
    }

    /// Place `line` in `core`'s private cache of `level` for `task`, data
    /// and all, without a lookup below: the idealized restore of a
    /// migration study. Counts it as migrated in (or dropped if present);
    /// returns whether it was placed.
    pub fn install(&mut self, core: CoreId, level: Level, line: LineAddr, task: TaskId) -> bool {
        let (socket, c) = self.locate(core);
        self.part(socket).install(c, level, line, task)
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

impl Part<'_> {
    /// [`Machine::access_batch`], for a core of this socket.
    pub fn run(&mut self, core: CoreId, task: TaskId, asid: Asid, batch: &[Access]) -> u64 {
        self.access_batch(core.0 as usize - self.first_core, task, asid, batch)
    }

    /// The counters of `task`.
    pub fn task(&self, task: TaskId) -> &TaskStats {
        &self.tasks[task.0 as usize]
    }

    /// [`Machine::access_batch`] on the socket's core `c`.
    fn access_batch(&mut self, c: usize, task: TaskId, asid: Asid, batch: &[Access]) -> u64 {
        let mut tally = Tally::default();
        let mut stall = 0u64;
        let mut next = 0;
        while next < batch.len() {
            // Migration prefetches issue between references, one at a time.
            let draining = !self.migration_queues[c].lines.is_empty();
            // A run pays for its setup over a few references: not worth it
            // for a lone data reference between instruction fetches.
            let fetch = |i: usize| batch.get(i).is_some_and(|a| a.kind == AccessKind::Ifetch);
            if self.k.shortcuts && !draining && !fetch(next) && !fetch(next + 1) {
                let (hits, cycles, stop) = self.l1_run(c, task, asid, &batch[next..], &mut tally);
                next += hits;
                stall += cycles;
                if next == batch.len() {
                    break;
                }
                if let Some(latency) = self.resume(c, task, asid, &batch[next], stop, &mut tally) {
                    stall += latency as u64;
                    next += 1;
                    continue;
                }
            }
            let a = &batch[next];
            let req = Req { kind: a.kind.into(), pc: a.pc, task };
            let first = a.addr.0 >> self.k.line_shift;
            let last = a.addr.0.saturating_add(a.size.max(1) as u64 - 1) >> self.k.line_shift;
            let latency = if first == last {
                self.access_one(c, &req, asid, a.addr.0, first, &mut tally)
            } else {
                self.access_split(c, &req, asid, a)
            };
            stall += latency as u64;
            if draining {
                self.drain_migration_queue(c, a.instrs as f64 * self.k.base_cpi + latency as f64);
            }
            next += 1;
        }
        self.credit(c, task, &tally);
        self.notebook.pass();
        let stats = &mut self.tasks[task.0 as usize];
        stats.accesses += batch.len() as u64;
        stats.instructions += batch.iter().map(|a| a.instrs as u64).sum::<u64>();
        stats.stall_cycles += stall;
        stall
    }

    /// Add the hits the shortcuts tallied to the L1 caches, the L1 TLBs and the task.
    fn credit(&mut self, c: usize, task: TaskId, tally: &Tally) {
        let ports = self.cores[c];
        let stats = &mut self.tasks[task.0 as usize];
        for kind in [ReqKind::Load, ReqKind::Store, ReqKind::Ifetch] {
            let n = tally.l1[(kind == ReqKind::Ifetch) as usize][kind as usize];
            if n > 0 {
                let l1 = ports.path(kind).at(0);
                self.caches[l1].count_hits(kind, n);
                stats.levels[self.cache_level[l1] as usize].hits[kind as usize] += n;
            }
        }
        for (class, kind) in [(0, ReqKind::Load), (1, ReqKind::Ifetch)] {
            if let (Some(t), n @ 1..) = (ports.l1_tlb(kind), tally.tlb[class]) {
                self.tlbs[t].stats.hits += n;
                stats.tlb.l1_hits += n;
            }
        }
    }

    /// The reference a run of L1 hits stopped at, taken up where the run
    /// left it; `None` if the run knows nothing about it.
    #[inline(always)]
    fn resume(&mut self, c: usize, task: TaskId, asid: Asid, a: &Access, stop: Stop, tally: &mut Tally) -> Option<u32> {
        let dtlb = self.cores[c].dtlb?;
        let req = Req { kind: a.kind.into(), pc: a.pc, task };
        let vline = a.addr.0 >> self.k.line_shift;
        let (line, t, missed) = match stop {
            Stop::Unknown => return None,
            Stop::TlbMiss => {
                self.tlbs[dtlb].count_miss();
                let (frame, t) = self.translate_miss(c, dtlb, &req, asid, a.addr.0 >> self.k.page_shift);
                (line_in_frame(frame, vline, self.k.page_shift, self.k.line_shift), t, false)
            }
            Stop::LineMiss(slot, line) => {
                let tlb = &mut self.tlbs[dtlb];
                tlb.touch(slot);
                tally.tlb[0] += 1;
                (line, tlb.latency_cycles, true)
            }
        };
        self.memos[c][0] = Memo { vline: vline + 1, asid: asid.0, pline: line.0 };
        Some(t + self.access_line(c, line, &req, missed))
    }

    /// A reference within one line: the common case, kept short.
    #[inline(always)]
    fn access_one(&mut self, c: usize, req: &Req, asid: Asid, vaddr: u64, vline: u64, tally: &mut Tally) -> u32 {
        let fast = if self.k.shortcuts {
            if let Some(latency) = self.repeat(c, req, asid, vline, tally) {
                return latency;
            }
            self.l1_hit(c, req, asid, vaddr, vline, tally)
        } else {
            Fast::Untranslated
        };
        let (line, t) = match fast {
            Fast::Hit(latency) => return latency,
            Fast::Translated(line, t) => (line, t),
            Fast::Untranslated => {
                let (paddr, t) = self.translate(c, req, asid, vaddr);
                (LineAddr(paddr >> self.k.line_shift), t)
            }
        };
        self.memos[c][(req.kind == ReqKind::Ifetch) as usize] = Memo { vline: vline + 1, asid: asid.0, pline: line.0 };
        t + self.access_line(c, line, req, false)
    }

    /// A reference that crosses line (and maybe page) boundaries.
    fn access_split(&mut self, c: usize, req: &Req, asid: Asid, a: &Access) -> u32 {
        let first = a.addr.0 >> self.k.line_shift;
        let last = a.addr.0.saturating_add(a.size.max(1) as u64 - 1) >> self.k.line_shift;
        let mut worst = 0;
        let mut page = (u64::MAX, 0, 0);
        for vline in first..=last {
            let vaddr = vline << self.k.line_shift;
            if vaddr >> self.k.page_shift != page.0 {
                let (paddr, t) = self.translate(c, req, asid, vaddr.max(a.addr.0));
                page = (vaddr >> self.k.page_shift, paddr >> self.k.page_shift, t);
            }
            let line = line_in_frame(page.1, vline, self.k.page_shift, self.k.line_shift);
            worst = worst.max(page.2 + self.access_line(c, line, req, false));
        }
        worst
    }

    /// The common case as a loop: data references within one line that hit
    /// both the L1 DTLB and the L1 data cache, tallied, with both arrays'
    /// geometry held in registers. Stops before the first reference that
    /// needs more (an instruction fetch, a line-crossing reference, a miss,
    /// a write-through store), having changed nothing for it. Returns the
    /// references it ran, their cycles and where it stopped.
    #[inline(never)]
    fn l1_run(
        &mut self,
        c: usize,
        task: TaskId,
        asid: Asid,
        batch: &[Access],
        tally: &mut Tally,
    ) -> (usize, u64, Stop) {
        const NONE: (usize, u64, Stop) = (0, 0, Stop::Unknown);
        let Part { cores, tlbs, caches, memos, k, .. } = self;
        let (page_shift, line_shift) = (&k.page_shift, &k.line_shift);
        let ports = &cores[c];
        let Some(dtlb) = ports.dtlb else { return NONE };
        if ports.data.len == 0 {
            return NONE;
        }
        let (Some(tlb), Some(l1)) = (tlbs[dtlb].hit_run(), caches[ports.data.at(0)].hit_run()) else {
            return NONE;
        };
        let run = HitRunCtx { task, asid, page_shift: *page_shift, line_shift: *line_shift };
        let n = batch.len();
        // LRU in both (the common machine) gets a body with the clocks in
        // registers; any other policy dispatches on its kind at every hit.
        let (ran, memo, cycles, stop) = if tlb.lends_stamps(n) && l1.lends_stamps(n) {
            // Sets that fill their fingerprint vectors exactly (no padding
            // ways) get a body with the geometry as constants: the presets'
            // 4-way L1 TLBs and 4-, 8- and 12-way L1Ds.
            let strides = match (tlb.stride(), l1.stride()) {
                (t, l) if t == tlb.ways() && l == l1.ways() => (t, l),
                _ => (0, 0),
            };
            let (Some(tlb), Some(l1)) = (tlb.lru(n), l1.lru(n)) else { return NONE };
            match strides {
                (4, 4) => run.hits::<_, _, 4, 4>(tlb, l1, batch, tally),
                (4, 8) => run.hits::<_, _, 4, 8>(tlb, l1, batch, tally),
                (4, 12) => run.hits::<_, _, 4, 12>(tlb, l1, batch, tally),
                _ => run.hits::<_, _, 0, 0>(tlb, l1, batch, tally),
            }
        } else {
            run.hits::<_, _, 0, 0>(tlb, l1, batch, tally)
        };
        if ran > 0 {
            memos[c][0] = memo;
        }
        (ran, cycles, stop)
    }

    /// The common case in one body: the L1 TLB and the L1 cache both hit
    /// (tallied). On an L1 TLB hit whose line misses the L1 cache, the TLB
    /// hit is tallied and the line handed back, so the general path does not
    /// look the TLB up again; on an L1 TLB miss nothing has changed.
    #[inline(always)]
    fn l1_hit(&mut self, c: usize, req: &Req, asid: Asid, vaddr: u64, vline: u64, tally: &mut Tally) -> Fast {
        // Borrow the fields apart: one body, no re-indexing through `self`.
        let Part { cores, tlbs, caches, memos, k, .. } = self;
        let (page_shift, line_shift) = (&k.page_shift, &k.line_shift);
        let ports = &cores[c];
        let class = (req.kind == ReqKind::Ifetch) as usize;
        let Some(t) = ports.l1_tlb(req.kind) else { return Fast::Untranslated };
        let tlb = &mut tlbs[t];
        let Some(tslot) = tlb.find(tlb::key(asid, vaddr >> *page_shift)) else { return Fast::Untranslated };
        let frame = tlb.touch(tslot);
        tally.tlb[class] += 1;
        let line = line_in_frame(frame, vline, *page_shift, *line_shift);
        let cache = &mut caches[ports.path(req.kind).at(0)];
        let slot = match cache.find(line) {
            Some(slot) if cache.write_back || req.kind != ReqKind::Store => slot,
            _ => return Fast::Translated(line, tlb.latency_cycles),
        };
        cache.touch_hit(slot, req);
        tally.l1[class][req.kind as usize] += 1;
        memos[c][class] = Memo { vline: vline + 1, asid: asid.0, pline: line.0 };
        Fast::Hit(tlb.latency_cycles + cache.latency_cycles)
    }

    /// The shortcut for a reference to the line the core referenced last
    /// (7 of 8 references of a sequential 8-byte walk): if the translation is
    /// still the L1 TLB's most recent entry and the line the L1 cache's most
    /// recent one, and the policies say a repeated hit changes nothing, tally
    /// the hits without any lookup. Returns `None` to take the full path.
    #[inline(always)]
    fn repeat(&mut self, c: usize, req: &Req, asid: Asid, vline: u64, tally: &mut Tally) -> Option<u32> {
        let class = (req.kind == ReqKind::Ifetch) as usize;
        let memo = self.memos[c][class];
        if memo.vline != vline + 1 || memo.asid != asid.0 {
            return None;
        }
        let ports = &self.cores[c];
        let l1 = &mut self.caches[ports.path(req.kind).at(0)];
        if !l1.write_back && req.kind == ReqKind::Store {
            return None;
        }
        let mut latency = l1.latency_cycles;
        let tlb = ports.l1_tlb(req.kind).map(|t| &self.tlbs[t]);
        if let Some(tlb) = tlb {
            let key = tlb::key(asid, (vline << self.k.line_shift) >> self.k.page_shift);
            if !tlb.rehit_possible(key) {
                return None;
            }
            latency += tlb.latency_cycles;
        }
        if !l1.rehit(LineAddr(memo.pline), req.kind) {
            return None;
        }
        tally.tlb[class] += tlb.is_some() as u64;
        tally.l1[class][req.kind as usize] += 1;
        Some(latency)
    }

    /// Translate a virtual address; returns the physical address and the
    /// cycles translation cost. An L1 TLB hit is handled here; the rest in
    /// [`Machine::translate_miss`].
    #[inline(always)]
    fn translate(&mut self, c: usize, req: &Req, asid: Asid, vaddr: u64) -> (u64, u32) {
        let vpn = vaddr >> self.k.page_shift;
        let offset = vaddr & ((1 << self.k.page_shift) - 1);
        let Some(l1) = self.cores[c].l1_tlb(req.kind) else {
            let frame = self.page_table.translate(asid, vpn, self.cores[c].node).frame;
            return ((frame << self.k.page_shift) | offset, 0);
        };
        let key = tlb::key(asid, vpn);
        let (frame, latency) = match self.tlbs[l1].lookup(key) {
            Some(frame) => {
                self.tasks[req.task.0 as usize].tlb.l1_hits += 1;
                if self.notebook.covers_tlb(0) {
                    self.notebook.note(Note::Tlb { i: 0, task: req.task, kind: req.kind, key, hit: true, stays: true });
                }
                (frame, self.tlbs[l1].latency_cycles)
            }
            None => self.translate_miss(c, l1, req, asid, vpn),
        };
        ((frame << self.k.page_shift) | offset, latency)
    }

    /// After an L1 TLB miss: the L2 TLB, else a page walk; fills the TLBs.
    /// Returns the frame and the cycles.
    #[inline(never)]
    fn translate_miss(&mut self, c: usize, l1: usize, req: &Req, asid: Asid, vpn: u64) -> (u64, u32) {
        let key = tlb::key(asid, vpn);
        let task = req.task.0 as usize;
        let stlb = self.cores[c].stlb;
        // The L2 TLB's set and the page table are read next and may be cold
        // in the host's caches: start all their host misses at once.
        if let Some(s) = stlb {
            self.tlbs[s].prefetch(key);
        }
        self.page_table.prefetch(asid, vpn);
        self.tasks[task].tlb.l1_misses += 1;
        let victim_fill = self.k.l2_victim_fill;
        let mut observe = |i: usize, hit: bool, stays: bool| {
            if self.notebook.covers_tlb(i) {
                self.notebook.note(Note::Tlb { i: i as u8, task: req.task, kind: req.kind, key, hit, stays });
            }
        };
        observe(0, false, true);
        let (frame, latency) = match stlb.map(|s| (s, self.tlbs[s].lookup(key))) {
            Some((s, Some(frame))) => {
                observe(1, true, !victim_fill);
                self.tasks[task].tlb.l2_hits += 1;
                if victim_fill {
                    self.tlbs[s].remove(key);
                }
                (frame, self.tlbs[s].latency_cycles)
            }
            found => {
                if found.is_some() {
                    observe(1, false, !victim_fill);
                    self.tasks[task].tlb.l2_misses += 1;
                }
                let frame = self.page_table.translate(asid, vpn, self.cores[c].node).frame;
                let cycles = self.walk_cost(c, req, asid, vpn);
                let t = &mut self.tasks[task].tlb;
                t.walks += 1;
                t.walk_cycles += cycles as u64;
                if let (Some(s), false) = (stlb, victim_fill) {
                    self.tlbs[s].insert(key, frame);
                    self.place_tlb(1, req.task, key);
                }
                (frame, cycles)
            }
        };
        let victim = self.tlbs[l1].insert(key, frame);
        self.place_tlb(0, req.task, key);
        if let (Some((vkey, vframe)), Some(s), true) = (victim, stlb, victim_fill) {
            if !self.tlbs[s].probe(vkey) {
                self.tlbs[s].insert(vkey, vframe);
            }
            // The victim is this task's if its asid is (threads share one).
            if tlb::asid_of(vkey) == asid {
                self.place_tlb(1, req.task, vkey);
            }
        }
        (frame, latency)
    }

    /// Mirror a TLB insert in `task`'s shadow of TLB level `i`.
    #[inline]
    fn place_tlb(&mut self, i: usize, task: TaskId, key: u64) {
        if self.notebook.covers_tlb(i) {
            self.notebook.note(Note::PlaceTlb { i: i as u8, task, key });
        }
    }

    /// Mirror a cache fill in `req.task`'s shadow of cache `c`'s level.
    #[inline]
    fn place(&mut self, c: usize, req: &Req, line: LineAddr) {
        let level = self.cache_level[c];
        if self.notebook.covers(level) {
            self.notebook.note(Note::Place { level, req: *req, line });
        }
        if let Some(atd) = self.atd.as_deref_mut() {
            atd.fill(self.cache_base + c, self.caches[c].last_slot());
        }
    }

    /// Cycles of a page walk: fixed, or the page-table entry reads through
    /// the core's data caches plus the fixed overhead.
    fn walk_cost(&mut self, c: usize, req: &Req, asid: Asid, vpn: u64) -> u32 {
        match self.k.walk {
            WalkModel::Fixed => self.k.walk_latency,
            WalkModel::Radix => {
                let walk = Req { kind: ReqKind::Walk, pc: req.pc, task: req.task };
                let mut cycles = self.k.walk_latency;
                for level in 0..self.k.radix_levels {
                    let pte = self.page_table.entry_addr(asid, vpn, level, self.k.radix_levels, self.cores[c].node);
                    cycles += self.access_line(c, LineAddr(pte >> self.k.line_shift), &walk, false);
                }
                cycles
            }
        }
    }

    /// Home node of a physical line.
    #[inline]
    fn node_of(&self, line: LineAddr) -> u32 {
        let frame = line.0 >> (self.k.page_shift - self.k.line_shift);
        ((frame / self.k.frames_per_node) as u32).min(self.k.nodes - 1)
    }

    /// One line through the hierarchy; returns the latency of the level that served it.
    #[inline(always)]
    fn access_line(&mut self, c: usize, line: LineAddr, req: &Req, missed: bool) -> u32 {
        let path = *self.cores[c].path(req.kind);
        let node = self.cores[c].node;
        let (served, _) =
            if missed { self.miss_at(&path, 0, line, req, node) } else { self.lookup(&path, 0, line, req, node) };
        let top = &self.caches[path.at(0)];
        let writes_through = !top.write_back || !top.write_allocate;
        if writes_through && req.kind == ReqKind::Store && (!top.write_back || !top.contains(line)) {
            // Write-through, or a store that did not allocate: the data goes down.
            self.write_down(&path, 1, line, req.task, true, req.task);
        }
        if served < path.len as usize {
            self.caches[path.at(served)].latency_cycles
        } else if self.node_of(line) == node {
            self.k.local_latency
        } else {
            self.k.remote_latency
        }
    }

    /// Look `line` up at level `i` of `path` and below; returns the index of
    /// the level that served it (`path.len` for memory) and whether the line
    /// arrives dirty (given up by an exclusive level).
    #[inline(always)]
    fn lookup(&mut self, path: &Path, i: usize, line: LineAddr, req: &Req, node: u32) -> (usize, bool) {
        let c = path.at(i);
        let Some(slot) = self.caches[c].find(line) else {
            return self.miss_at(path, i, line, req, node);
        };
        self.caches[c].hit(slot, req);
        if req.kind.is_demand() {
            self.tasks[req.task.0 as usize].levels[self.cache_level[c] as usize].hits[req.kind as usize] += 1;
            if self.caches[c].tracks_use() {
                self.caches[c].use_marked(slot);
            }
            if let Some(atd) = self.atd.as_deref_mut() {
                atd.hit(self.cache_base + c, slot, self.caches[c].owner_at(slot));
            }
            if self.prefetchers[c].is_some() {
                self.prefetch(path, i, line, req, true, node);
            }
        }
        let leaves = i > 0 && self.caches[c].inclusion == Inclusion::Exclusive;
        let level = self.cache_level[c];
        if self.notebook.covers(level) {
            self.notebook.note(Note::Hit { level, req: *req, line, stays: !leaves });
        }
        if leaves {
            return (i, self.caches[c].take(slot).dirty);
        }
        (i, false)
    }

    /// `line` missed at level `i` of `path`: count it, fetch it from below,
    /// and place it here unless this level is exclusive.
    #[inline(never)]
    fn miss_at(&mut self, path: &Path, i: usize, line: LineAddr, req: &Req, node: u32) -> (usize, bool) {
        let c = path.at(i);
        if i == 0 {
            // The levels below are searched next: have the host bring their
            // sets closer now, so that their host cache misses overlap.
            for below in 1..path.len as usize {
                self.caches[path.at(below)].prefetch(line);
            }
        }
        // And the set that this level's dirty victim will be written back to.
        if i + 1 < path.len as usize {
            if let Some(victim) = self.caches[c].dirty_victim(line) {
                self.caches[path.at(i + 1)].prefetch(victim);
            }
        }
        self.caches[c].count_miss(line, req);
        let stays = i == 0 || self.caches[c].inclusion != Inclusion::Exclusive;
        let level = self.cache_level[c];
        self.notebook.note(Note::Miss { cache: (self.cache_base + c) as u32, level, req: *req, line, stays });
        let allocates = !(i == 0 && req.kind == ReqKind::Store && !self.caches[c].write_allocate);
        let (served, carried) = if !allocates {
            (0, false)
        } else if i + 1 < path.len as usize {
            self.lookup(path, i + 1, line, req, node)
        } else {
            self.memory_read(line, req, node);
            (path.len as usize, false)
        };
        if req.kind.is_demand() {
            self.tasks[req.task.0 as usize].levels[level as usize].misses[req.kind as usize] += 1;
        }
        if !allocates {
            return (0, false);
        }
        if i > 0 && self.caches[c].inclusion == Inclusion::Exclusive {
            return (served, carried);
        }
        let dirty = carried || (i == 0 && req.kind == ReqKind::Store);
        let filled = self.caches[c].fill(line, dirty, req);
        if let Filled::Placed(_) = filled {
            self.place(c, req, line);
        }
        match filled {
            Filled::Placed(Some(victim)) => self.evicted(path, i, victim, req.task),
            Filled::Placed(None) => {}
            Filled::Bypassed if dirty => self.write_down(path, i + 1, line, req.task, false, req.task),
            Filled::Bypassed => {}
        }
        if req.kind.is_demand() && self.prefetchers[c].is_some() {
            self.prefetch(path, i, line, req, false, node);
        }
        (served, false)
    }

    /// Show a demand reference to `line` at level `i` of `path` to the
    /// level's prefetcher, and fetch what it proposes that is not already
    /// there, through the levels below, as prefetch requests (no cycles).
    #[inline(never)]
    fn prefetch(&mut self, path: &Path, i: usize, line: LineAddr, req: &Req, hit: bool, node: u32) {
        let c = path.at(i);
        let Some(prefetcher) = self.prefetchers[c].as_mut() else { return };
        let mut proposals = Proposals::new(line, self.k.page_shift - self.k.line_shift);
        prefetcher.observe(&Observed { line, pc: req.pc, hit }, &mut proposals);
        let fetch = Req { kind: ReqKind::Prefetch, pc: req.pc, task: req.task };
        for &proposed in proposals.lines() {
            if self.caches[c].contains(proposed) {
                self.caches[c].count_hits(ReqKind::Prefetch, 1);
            } else {
                self.miss_at(path, i, proposed, &fetch, node);
                self.caches[c].mark_prefetched(proposed);
            }
        }
    }

    fn memory_read(&mut self, line: LineAddr, req: &Req, node: u32) {
        let home = self.node_of(line);
        self.nodes[home as usize].reads += 1;
        if req.kind.is_demand() {
            let t = &mut self.tasks[req.task.0 as usize];
            if home == node {
                t.memory_local += 1;
            } else {
                t.memory_remote += 1;
            }
        }
    }

    /// A line left level `i` of `path` to make room for a request of task
    /// `by`: clean the levels above if this one is inclusive, then pass it down.
    fn evicted(&mut self, path: &Path, i: usize, mut victim: Evicted, by: TaskId) {
        self.clean_above(path.at(i), &mut victim, by);
        let next = i + 1;
        if next < path.len as usize && self.caches[path.at(next)].inclusion == Inclusion::Exclusive {
            self.victim_fill(path, next, victim, by);
        } else if victim.dirty {
            self.write_down(path, next, victim.line, victim.owner, false, by);
        }
    }

    /// A line leaves cache `c` because of task `by` (`TaskId::NONE`: a
    /// flush): if `c` is inclusive, remove it from every cache above
    /// (back-invalidation); dirty data found there goes down with the
    /// victim. A task's shadow loses the line too when the task itself
    /// caused the eviction, as it would have alone.
    fn clean_above(&mut self, c: usize, victim: &mut Evicted, by: TaskId) {
        if self.caches[c].inclusion != Inclusion::Inclusive {
            return;
        }
        for u in 0..self.uppers[c].len() {
            let upper = self.uppers[c][u];
            if let Some(copy) = self.caches[upper].back_invalidate(victim.line) {
                victim.dirty |= copy.dirty;
                let level = self.cache_level[upper];
                if self.notebook.covers(level) && copy.owner == by {
                    self.notebook.note(Note::Invalidate { level, task: by, line: victim.line });
                }
            }
        }
    }

    /// Place the victim of the level above in exclusive level `i`.
    fn victim_fill(&mut self, path: &Path, i: usize, victim: Evicted, by: TaskId) {
        let c = path.at(i);
        let req = Req { kind: ReqKind::Writeback, pc: VirtAddr(0), task: victim.owner };
        if let Some(slot) = self.caches[c].find(victim.line) {
            if victim.dirty {
                self.caches[c].writeback_hit(slot);
            }
            return;
        }
        self.notebook.note(Note::Seen { cache: (self.cache_base + c) as u32, line: victim.line });
        let filled = self.caches[c].fill(victim.line, victim.dirty, &req);
        if let Filled::Placed(_) = filled {
            self.place(c, &req, victim.line);
        }
        match filled {
            Filled::Placed(Some(next)) => self.evicted(path, i, next, by),
            Filled::Placed(None) => {}
            Filled::Bypassed if victim.dirty => self.write_down(path, i + 1, victim.line, victim.owner, false, by),
            Filled::Bypassed => {}
        }
    }

    /// Dirty data of `line` arrives at level `i` from above (`i == path.len`:
    /// memory). A write-back level keeps it (allocating on a miss); a
    /// write-through level passes it on. `through` marks a store written
    /// through while the line may stay above: an exclusive level must not
    /// take a copy of it then, and passes it on too. `by` is the task whose
    /// request (or `TaskId::NONE`: flush) sent it down.
    fn write_down(&mut self, path: &Path, i: usize, line: LineAddr, owner: TaskId, through: bool, by: TaskId) {
        if i >= path.len as usize {
            let home = self.node_of(line);
            self.nodes[home as usize].writes += 1;
            return;
        }
        let c = path.at(i);
        let req = Req { kind: ReqKind::Writeback, pc: VirtAddr(0), task: owner };
        if let Some(slot) = self.caches[c].find(line) {
            self.caches[c].writeback_hit(slot);
            if !self.caches[c].write_back {
                self.write_down(path, i + 1, line, owner, through, by);
            }
            return;
        }
        self.caches[c].count_miss(line, &req);
        self.notebook.note(Note::Seen { cache: (self.cache_base + c) as u32, line });
        let exclusive = self.caches[c].inclusion == Inclusion::Exclusive;
        if !self.caches[c].write_back || (through && exclusive) {
            return self.write_down(path, i + 1, line, owner, through, by);
        }
        let filled = self.caches[c].fill(line, true, &req);
        if let Filled::Placed(_) = filled {
            self.place(c, &req, line);
        }
        match filled {
            Filled::Placed(Some(victim)) => self.evicted(path, i, victim, by),
            Filled::Placed(None) => {}
            Filled::Bypassed => self.write_down(path, i + 1, line, owner, through, by),
        }
    }

    fn flush_at(&mut self, path: &Path, i: usize, scope: Scope, write_back: bool) {
        let c = path.at(i);
        let mut removed = std::mem::take(self.scratch);
        removed.clear();
        self.caches[c].remove(scope, &mut removed);
        for mut victim in removed.drain(..) {
            self.clean_above(c, &mut victim, TaskId::NONE);
            if write_back && victim.dirty {
                self.caches[c].stats.dirty_evictions += 1;
                self.write_down(path, i + 1, victim.line, victim.owner, false, TaskId::NONE);
            }
        }
        *self.scratch = removed;
    }

    /// `cycles` passed on core `c`: issue the migration prefetches they
    /// allow into its L2, through the levels below; a line already present
    /// is dropped.
    #[inline(never)]
    fn drain_migration_queue(&mut self, c: usize, cycles: f64) {
        let Some((path, i)) = self.private_level(c, Level::L2) else {
            self.migration_queues[c].lines.clear();
            return;
        };
        let l2 = path.at(i);
        let node = self.cores[c].node;
        let q = &mut self.migration_queues[c];
        q.credit += cycles * q.per_cycle;
        while self.migration_queues[c].credit >= 1.0 {
            let Some((line, task)) = self.migration_queues[c].lines.pop_front() else { break };
            self.migration_queues[c].credit -= 1.0;
            if self.caches[l2].contains(line) {
                self.caches[l2].stats.migrated_dropped += 1;
                continue;
            }
            let fetch = Req { kind: ReqKind::Prefetch, pc: VirtAddr(0), task };
            self.miss_at(&path, i, line, &fetch, node);
            self.caches[l2].mark_migrated(line);
        }
        if self.migration_queues[c].lines.is_empty() {
            self.migration_queues[c].credit = 0.0;
        }
    }

    /// Path and position of core `c`'s private cache of `level`, if it has one.
    fn private_level(&self, c: usize, level: Level) -> Option<(Path, usize)> {
        let path = self.cores[c].data;
        (0..path.len as usize).find(|&i| self.cache_level[path.at(i)] == level).map(|i| (path, i))
    }

    /// Flush core `c`'s private caches whose level `which` picks.
    fn flush_private(&mut self, c: usize, which: impl Fn(Level) -> bool, scope: Scope, write_back: bool) {
        let ports = self.cores[c];
        for path in [ports.instr, ports.data] {
            for i in 0..path.len as usize {
                if which(self.cache_level[path.at(i)]) {
                    self.flush_at(&path, i, scope, write_back);
                }
            }
        }
    }

    /// [`Machine::install`] on the socket's core `c`.
    fn install(&mut self, c: usize, level: Level, line: LineAddr, task: TaskId) -> bool {
        let Some((path, i)) = self.private_level(c, level) else { return false };
        let c = path.at(i);
        if self.caches[c].contains(line) {
            self.caches[c].stats.migrated_dropped += 1;
            return false;
        }
        let req = Req { kind: ReqKind::Load, pc: VirtAddr(0), task };
        self.notebook.note(Note::Seen { cache: (self.cache_base + c) as u32, line });
        let filled = self.caches[c].fill(line, false, &req);
        if let Filled::Placed(Some(victim)) = filled {
            self.evicted(&path, i, victim, task);
        }
        self.caches[c].mark_migrated(line);
        filled != Filled::Bypassed
    }
}

/// `slice` cut into consecutive pieces of the given lengths.
fn carve<T>(mut slice: &mut [T], lengths: impl Iterator<Item = usize>) -> std::vec::IntoIter<&mut [T]> {
    let mut pieces = Vec::new();
    for n in lengths {
        let (piece, rest) = std::mem::take(&mut slice).split_at_mut(n);
        pieces.push(piece);
        slice = rest;
    }
    pieces.into_iter()
}

/// The physical line of virtual line `vline` in its page's `frame`.
#[inline(always)]
fn line_in_frame(frame: u64, vline: u64, page_shift: u32, line_shift: u32) -> LineAddr {
    let lines_per_page = page_shift - line_shift;
    LineAddr((frame << lines_per_page) | (vline & ((1 << lines_per_page) - 1)))
}

/// Who runs a run of L1 hits ([`Machine::l1_run`]), and the machine's page
/// and line sizes.
struct HitRunCtx {
    task: TaskId,
    asid: Asid,
    page_shift: u32,
    line_shift: u32,
}

impl HitRunCtx {
    /// The run itself, with the TLB's and the L1's policies as `T` and `L`
    /// and their ways (and fingerprints) per set as `TS` and `LS` (0: any), one body
    /// per combination the machine picks. Returns the references it ran,
    /// the memo of the last line, their cycles and where it stopped.
    #[inline(always)]
    fn hits<T: HitUpdate, L: HitUpdate, const TS: usize, const LS: usize>(
        &self,
        mut tlb: tlb::HitRun<'_, T>,
        mut l1: cache::HitRun<'_, L>,
        batch: &[Access],
        tally: &mut Tally,
    ) -> (usize, Memo, u64, Stop) {
        let HitRunCtx { task, asid, page_shift, line_shift } = *self;
        let mut stores = 0u64;
        let mut ran = 0;
        // The last line run, where it sits in the TLB and the L1: a reference
        // to the same line finds the same slots (nothing moved in between),
        // so it skips the searches but not the hits' effects.
        let (mut vline_run, mut line, mut slots) = (u64::MAX, LineAddr(0), None);
        let mut stop = Stop::Unknown;
        for a in batch {
            let vaddr = a.addr.0;
            let vline = vaddr >> line_shift;
            let split = vaddr.saturating_add(a.size.max(1) as u64 - 1) >> line_shift != vline;
            let store = a.kind == AccessKind::Store;
            if split || a.kind == AccessKind::Ifetch || (store && !l1.write_back) {
                break;
            }
            let (tslot, slot) = match slots {
                Some(s) if vline == vline_run => s,
                _ => {
                    let Some(tslot) = tlb.find_in::<TS>(tlb::key(asid, vaddr >> page_shift)) else {
                        stop = Stop::TlbMiss;
                        break;
                    };
                    // Peek at the frame before touching: a line miss leaves the TLB as it was.
                    let frame = tlb.frame_of::<TS>(tslot);
                    let next = line_in_frame(frame, vline, page_shift, line_shift);
                    let Some(slot) = l1.find_in::<LS>(next) else {
                        stop = Stop::LineMiss(tslot, next);
                        break;
                    };
                    (vline_run, line, slots) = (vline, next, Some((tslot, slot)));
                    (tslot, slot)
                }
            };
            tlb.touch::<TS>(tslot);
            l1.touch_hit::<LS>(slot, &Req { kind: a.kind.into(), pc: a.pc, task });
            stores += store as u64;
            ran += 1;
        }
        let cycles = ran as u64 * (tlb.latency_cycles + l1.latency_cycles) as u64;
        tlb.settle();
        l1.settle();
        if ran > 0 {
            tally.tlb[0] += ran as u64;
            tally.l1[0][ReqKind::Load as usize] += ran as u64 - stores;
            tally.l1[0][ReqKind::Store as usize] += stores;
        }
        let memo = Memo { vline: vline_run.wrapping_add(1), asid: asid.0, pline: line.0 };
        (ran, memo, cycles, stop)
    }
}
