//! A set-associative cache array: tags, owners, dirty and lock bits, and a
//! replacement policy.
//!
//! The cache knows nothing about the levels around it. It answers lookups,
//! places lines and hands back what it evicted; the [`Machine`](super::machine)
//! decides where a victim goes (write-back, victim fill, back-invalidation).
//! That keeps the array reusable for shadows and hypervisor caches, and keeps
//! the hierarchy rules in one place.

use serde::{Deserialize, Serialize};

use super::replacement::{self, HitUpdate, Policy, Replacement, ReqKind, StampRun, Touch, VictimQuery};
use crate::error::{Issues, Result};
use crate::plugin::PluginConfig;
use crate::types::{LineAddr, TaskId, VirtAddr};
use crate::units::ByteSize;
use crate::util::alloc;
use crate::util::hash::SeenSet;

pub use super::tags::Slot;
use super::tags::{Lookup, SetIndex, TagArray, INVALID};

/// How a level relates to the levels above it (closer to the core).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Inclusion {
    /// Filled on every miss that passes through; evictions leave the levels
    /// above alone.
    #[default]
    NonInclusive,
    /// Holds every line the levels above hold: evicting a line here removes
    /// it above too (back-invalidation).
    Inclusive,
    /// Holds no line the levels above hold: filled only by their victims; a
    /// hit moves the line up.
    Exclusive,
}

/// When written data reaches the next level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WritePolicy {
    /// Stores mark the line dirty; the data goes down when it is evicted.
    #[default]
    WriteBack,
    /// Every store is also sent to the next level; lines stay clean.
    WriteThrough,
}

/// Configuration of one cache level (`machine.l1d`, `machine.l2`, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheParams {
    /// Capacity in bytes.
    pub size_bytes: ByteSize,
    /// Associativity. Ignored when `fully_associative` is set.
    pub ways: u32,
    /// One set holding every line.
    pub fully_associative: bool,
    /// Line (block) size in bytes; a power of two.
    pub line_bytes: u32,
    /// Cycles an access costs when this level serves it (not added to the
    /// latencies of the levels above).
    pub latency_cycles: u32,
    /// Replacement policy, `{ kind = "lru" }`.
    pub replacement: PluginConfig,
    /// Write-back or write-through.
    pub write_policy: WritePolicy,
    /// Whether a store miss fetches the line (`true`) or only writes below.
    pub write_allocate: bool,
    /// Relation to the levels above; must stay `non-inclusive` on an L1.
    pub inclusion: Inclusion,
    /// Whether a store hit updates the replacement state as a load hit does.
    /// `false` reproduces pycachesim, which leaves a line's recency unchanged
    /// on a store hit.
    pub store_hit_updates_replacement: bool,
    /// Hardware prefetcher filling this cache, `{ kind = "stream" }` (see
    /// `mem::prefetch`); none by default.
    #[serde(deserialize_with = "crate::plugin::optional")]
    pub prefetcher: Option<PluginConfig>,
}

impl Default for CacheParams {
    fn default() -> Self {
        CacheParams {
            size_bytes: ByteSize(32 << 10),
            ways: 8,
            fully_associative: false,
            line_bytes: 64,
            latency_cycles: 4,
            replacement: PluginConfig::named("lru"),
            write_policy: WritePolicy::WriteBack,
            write_allocate: true,
            inclusion: Inclusion::NonInclusive,
            store_hit_updates_replacement: true,
            prefetcher: None,
        }
    }
}

impl CacheParams {
    /// Number of lines.
    pub fn lines(&self) -> u64 {
        self.size_bytes.0 / self.line_bytes.max(1) as u64
    }

    /// Host bytes a cache of these params for line numbers below
    /// `2^line_bits` holds from its start, at most: its tags, each line's
    /// owner, flags and lock flag, and the replacement state. The lines it
    /// has seen (for compulsory misses) grow with what a run touches and are
    /// not counted.
    pub fn host_bytes(&self, line_bits: u32) -> u64 {
        let ways = self.effective_ways().max(1);
        let sets = (self.lines() / ways).max(1);
        let per_line = (std::mem::size_of::<Meta>() + std::mem::size_of::<bool>()) as u64;
        TagArray::host_bytes(sets, ways, line_bits)
            .saturating_add(replacement::host_bytes(sets, ways))
            .saturating_add(sets.saturating_mul(ways).saturating_mul(per_line))
    }

    /// Effective associativity.
    pub fn effective_ways(&self) -> u64 {
        if self.fully_associative {
            self.lines()
        } else {
            self.ways as u64
        }
    }

    /// Check the geometry and the replacement policy, recording problems
    /// under `loc`, and fill in the policy's default params.
    pub fn validate(&mut self, loc: &str, issues: &mut Issues) {
        let at = |field: &str| format!("{loc}.{field}");
        issues.check(
            self.line_bytes.is_power_of_two() && self.line_bytes >= 4,
            at("line_bytes"),
            "not_power_of_two",
            format!("expected a power of two of at least 4, got {}", self.line_bytes),
        );
        if !self.fully_associative {
            issues.check(self.ways >= 1, at("ways"), "out_of_range", "expected at least 1 way");
        }
        if issues_blocking(self) {
            return;
        }
        let way_bytes = self.effective_ways() * self.line_bytes as u64;
        if self.size_bytes.0 == 0 || !self.size_bytes.0.is_multiple_of(way_bytes) {
            issues.push(
                at("size_bytes"),
                "invalid_geometry",
                format!(
                    "{} is not a whole number of sets of {} ways x {} B lines",
                    self.size_bytes,
                    self.effective_ways(),
                    self.line_bytes
                ),
            );
        } else if self.effective_ways() > 1 << 16 {
            issues.push(at("ways"), "out_of_range", "at most 65536 ways are supported");
        } else if let Some(policy) =
            super::replacement::check(&self.replacement, self.effective_ways() as usize, &at("replacement"), issues)
        {
            self.replacement = policy;
        }
        if let Some(raw) = &self.prefetcher {
            self.prefetcher = super::prefetch::check(raw, &at("prefetcher"), issues).or(self.prefetcher.take());
        }
    }
}

fn issues_blocking(p: &CacheParams) -> bool {
    !p.line_bytes.is_power_of_two() || p.line_bytes < 4 || (!p.fully_associative && p.ways == 0)
}

/// Counters of one cache instance, by request kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CacheStats {
    /// Lookups that found the line, by [`ReqKind`].
    pub hits: [u64; ReqKind::COUNT],
    /// Lookups that did not, by [`ReqKind`].
    pub misses: [u64; ReqKind::COUNT],
    /// Misses on a line this cache had never seen, by [`ReqKind`].
    pub compulsory: [u64; ReqKind::COUNT],
    /// Lines placed.
    pub fills: u64,
    /// Valid lines evicted to make room.
    pub evictions: u64,
    /// Evicted or flushed lines that were dirty (written to the next level).
    pub dirty_evictions: u64,
    /// Lines removed because a lower inclusive level evicted them.
    pub back_invalidations: u64,
    /// Fills skipped because every way of the set was locked.
    pub bypasses: u64,
    /// Lines removed by flushes and invalidations.
    pub flushed: u64,
    /// Lines removed because another core wrote them (coherence).
    pub coherence_invalidations: u64,
    /// Dirty lines cleaned because another core read them (coherence: the
    /// data went to memory and to the reader).
    pub coherence_cleans: u64,
    /// Prefetched lines a demand reference then used.
    pub prefetch_useful: u64,
    /// Prefetched lines that left before any demand reference used them.
    pub prefetch_unused: u64,
    /// Lines a migration mechanism placed (restored or migration-prefetched).
    pub migrated_in: u64,
    /// Lines a migration mechanism proposed that were already here.
    pub migrated_dropped: u64,
    /// Migrated lines that a demand reference then used.
    pub migrated_useful: u64,
    /// Migrated lines that left before any demand reference used them.
    pub migrated_unused: u64,
}

impl CacheStats {
    /// Add `other`'s counts.
    pub fn add(&mut self, other: &CacheStats) {
        let CacheStats {
            hits,
            misses,
            compulsory,
            fills,
            evictions,
            dirty_evictions,
            back_invalidations,
            bypasses,
            flushed,
            coherence_invalidations,
            coherence_cleans,
            prefetch_useful,
            prefetch_unused,
            migrated_in,
            migrated_dropped,
            migrated_useful,
            migrated_unused,
        } = other;
        for k in 0..hits.len() {
            self.hits[k] += hits[k];
            self.misses[k] += misses[k];
            self.compulsory[k] += compulsory[k];
        }
        self.fills += fills;
        self.evictions += evictions;
        self.dirty_evictions += dirty_evictions;
        self.back_invalidations += back_invalidations;
        self.bypasses += bypasses;
        self.flushed += flushed;
        self.coherence_invalidations += coherence_invalidations;
        self.coherence_cleans += coherence_cleans;
        self.prefetch_useful += prefetch_useful;
        self.prefetch_unused += prefetch_unused;
        self.migrated_in += migrated_in;
        self.migrated_dropped += migrated_dropped;
        self.migrated_useful += migrated_useful;
        self.migrated_unused += migrated_unused;
    }
}

/// A valid line, as [`Cache::resident_lines`] lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resident {
    /// Its set.
    pub set: usize,
    /// Its address.
    pub line: LineAddr,
    /// When it was last used, if the policy keeps recency across sets.
    pub recency: Option<u32>,
    /// Whether it holds data newer than the level below.
    pub dirty: bool,
    /// The task that brought it in.
    pub owner: TaskId,
}

/// A line that left the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Evicted {
    /// Its address.
    pub line: LineAddr,
    /// The task that brought it in.
    pub owner: TaskId,
    /// Whether it held data newer than the level below.
    pub dirty: bool,
}

/// What a fill did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filled {
    /// The line was placed, evicting this line if the set was full.
    Placed(Option<Evicted>),
    /// Every way of the set is locked: the line was not cached.
    Bypassed,
}

/// Which lines a flush or invalidation applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every line.
    All,
    /// The lines a task brought in.
    Task(TaskId),
    /// One line.
    Line(LineAddr),
}

/// Equal way partitioning: the ways each partition fills and each task's
/// partition.
#[derive(Debug, Clone)]
struct Partition {
    ranges: Vec<std::ops::Range<usize>>,
    /// Per partition, per way: whether the way is outside it (the shape of
    /// the policies' lock mask).
    outside: Vec<Vec<bool>>,
    /// Partition of each task (tasks not assigned: 0).
    of: Vec<u16>,
}

impl Partition {
    fn part(&self, task: TaskId) -> usize {
        self.of.get(task.0 as usize).copied().unwrap_or(0) as usize
    }

    fn outside(&self, task: TaskId) -> &[bool] {
        &self.outside[self.part(task)]
    }

    fn first_invalid(&self, tags: &TagArray, set: usize, task: TaskId) -> Option<usize> {
        self.ranges[self.part(task)].clone().find(|&way| tags.get(Slot { set, way }) == INVALID)
    }
}

/// A line's owner task, dirty bit and how it came (brought by a prefetcher,
/// or by a migration mechanism, and not used since) in one word, so that a
/// fill or an eviction touches one host cache line of per-line state, not two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Meta(u32);

impl Meta {
    const DIRTY: u32 = 1 << 31;
    const PREFETCHED: u32 = 1 << 30;
    const MIGRATED: u32 = 1 << 29;
    /// Under coherence: no cache off this core's paths holds the line (a
    /// store needs no snoop).
    const EXCLUSIVE: u32 = 1 << 28;
    /// The owner bits of [`TaskId::NONE`].
    const NO_OWNER: u32 = Meta::EXCLUSIVE - 1;
    /// An empty way.
    const EMPTY: Meta = Meta(Meta::NO_OWNER);

    #[inline]
    fn new(owner: TaskId, dirty: bool) -> Meta {
        debug_assert!(owner == TaskId::NONE || owner.0 < Meta::NO_OWNER, "task ids fit 28 bits");
        Meta((owner.0 & Meta::NO_OWNER) | (dirty as u32) << 31)
    }

    #[inline]
    fn owner(self) -> TaskId {
        match self.0 & Meta::NO_OWNER {
            Meta::NO_OWNER => TaskId::NONE,
            t => TaskId(t),
        }
    }

    #[inline]
    fn dirty(self) -> bool {
        self.0 & Meta::DIRTY != 0
    }

    #[inline]
    fn mark_dirty(&mut self, dirty: bool) {
        self.0 |= (dirty as u32) << 31;
    }

    #[inline]
    fn brought(self, bit: u32) -> bool {
        self.0 & bit != 0
    }
}

/// The accessing side of a lookup: who and why.
#[derive(Debug, Clone, Copy)]
pub struct Req {
    /// Why the cache is accessed.
    pub kind: ReqKind,
    /// Pc of the instruction (0 if unknown).
    pub pc: VirtAddr,
    /// Task on whose behalf.
    pub task: TaskId,
}

/// What a demand hit changes: the dirty bit, the replacement state and the
/// last-hit hint. One body for [`Cache::touch_hit`] and [`HitRun`].
struct HitState<'a, H> {
    meta: &'a mut [Meta],
    policy: H,
    last: &'a mut Slot,
    /// Ways per set (a slot's flat index is `set * ways + way`).
    ways: usize,
    store_dirties: bool,
    store_keeps_order: bool,
}

impl<H: HitUpdate> HitState<'_, H> {
    /// A demand hit on `slot` of a cache of `WAYS` ways (0: any).
    #[inline(always)]
    fn touch_hit<const WAYS: usize>(&mut self, slot: Slot, req: &Req) {
        if self.effects::<WAYS>(slot, req) {
            *self.last = slot;
        }
    }

    /// What [`HitState::touch_hit`] changes apart from the last-hit hint;
    /// returns whether the hit moved the line in the replacement order
    /// (and so becomes the hint).
    #[inline(always)]
    fn effects<const WAYS: usize>(&mut self, slot: Slot, req: &Req) -> bool {
        debug_assert!(req.kind != ReqKind::Writeback, "write-backs go through writeback_hit");
        debug_assert!(WAYS == 0 || WAYS == self.ways);
        let at = slot.set * if WAYS == 0 { self.ways } else { WAYS } + slot.way;
        let store = req.kind == ReqKind::Store;
        // Only a cache that takes stores reads the line's word: below the L1
        // it would be a host cache miss per hit. In the L1, branch-free on
        // the kind: loads and stores come in no predictable order.
        if self.store_dirties {
            self.meta[at].mark_dirty(store);
        }
        if store && self.store_keeps_order {
            return false;
        }
        self.policy.hit(at, &Cache::touch(slot, req));
        true
    }
}

/// A cache's demand-hit path for the machine's run of L1 hits
/// ([`Cache::hit_run`]): lookups and hits as [`Cache::find`] and
/// [`Cache::touch_hit`] make them; the caller counts the hits and ends
/// the run with [`HitRun::settle`].
pub struct HitRun<'a, H = &'a mut Policy> {
    lookup: Lookup<'a>,
    state: HitState<'a, H>,
    /// The last-hit hint, written once when the run ends ([`HitRun::settle`]).
    latest: Option<Slot>,
    /// Whether stores are kept here (a write-through store is not a plain hit).
    pub write_back: bool,
    /// Cycles of a hit.
    pub latency_cycles: u32,
}

impl<H: HitUpdate> HitRun<'_, H> {
    /// The slot holding `line`, if present.
    #[inline(always)]
    pub fn find(&self, line: LineAddr) -> Option<Slot> {
        self.lookup.find(line.0)
    }

    /// [`HitRun::find`] with `STRIDE` fingerprints per set ([`Lookup::find_in`]).
    #[inline(always)]
    pub fn find_in<const STRIDE: usize>(&self, line: LineAddr) -> Option<Slot> {
        self.lookup.find_in::<STRIDE>(line.0)
    }

    /// Fingerprints per set ([`Lookup::stride`]).
    pub fn stride(&self) -> usize {
        self.lookup.stride()
    }

    /// Ways per set.
    pub fn ways(&self) -> usize {
        self.state.ways
    }

    /// Whether the line in `slot` is dirty or known exclusive
    /// ([`Cache::owned_at`]), in a cache of `WAYS` ways (0: any).
    #[inline(always)]
    pub fn owned<const WAYS: usize>(&self, slot: Slot) -> bool {
        let at = slot.set * if WAYS == 0 { self.state.ways } else { WAYS } + slot.way;
        self.state.meta[at].0 & (Meta::DIRTY | Meta::EXCLUSIVE) != 0
    }

    /// A demand hit on `slot`, as [`Cache::touch_hit`], in a cache of
    /// `WAYS` ways known when compiling (0: any).
    #[inline(always)]
    pub fn touch_hit<const WAYS: usize>(&mut self, slot: Slot, req: &Req) {
        if self.state.effects::<WAYS>(slot, req) {
            self.latest = Some(slot);
        }
    }

    /// End the run: the cache's last-hit hint is the run's last hit.
    #[inline(always)]
    pub fn settle(self) {
        if let Some(slot) = self.latest {
            *self.state.last = slot;
        }
    }
}

impl<'a> HitRun<'a> {
    /// Whether [`HitRun::lru`] would succeed.
    pub fn lends_stamps(&self, most: usize) -> bool {
        self.state.policy.lends_stamps(most)
    }

    /// The same run with LRU's clock in a register ([`Policy::lru_run`]),
    /// if the policy is LRU with room for `most` hits.
    pub fn lru(self, most: usize) -> Option<HitRun<'a, StampRun<'a>>> {
        let HitRun { lookup, state, latest, write_back, latency_cycles } = self;
        let HitState { meta, policy, last, ways, store_dirties, store_keeps_order } = state;
        let state = HitState { meta, policy: policy.lru_run(most)?, last, ways, store_dirties, store_keeps_order };
        Some(HitRun { lookup, state, latest, write_back, latency_cycles })
    }
}

/// One set-associative cache.
#[derive(Debug, Clone)]
pub struct Cache {
    /// Component path, e.g. `socket0/core1/l2`.
    pub path: String,
    index: SetIndex,
    tags: TagArray,
    /// Owner and dirty bit of each line.
    meta: Vec<Meta>,
    /// Lines held per owner task.
    owned: Vec<u64>,
    locked: Vec<bool>,
    locked_count: usize,
    /// Equal way partitioning, if set ([`Cache::partition_ways`]).
    partition: Option<Box<Partition>>,
    policy: Policy,
    seen: SeenSet,
    /// Cycles an access served here costs.
    pub latency_cycles: u32,
    /// Line size as a shift.
    pub line_shift: u32,
    /// Whether stores mark lines dirty (write-back) or go through.
    pub write_back: bool,
    /// Whether a store miss allocates.
    pub write_allocate: bool,
    /// Relation to the levels above.
    pub inclusion: Inclusion,
    store_hit_updates: bool,
    /// Whether the core writes into this cache directly (an L1): only then
    /// does a store hit make the line dirty here. Below the L1 a store is a
    /// read for ownership.
    pub receives_stores: bool,
    /// The line hit or filled last (a hint for the machine's
    /// repeat-reference shortcut; always checked against the tag).
    last: Slot,
    rehit_is_noop: bool,
    /// Whether lines may carry a prefetched or migrated mark.
    tracks_use: bool,
    /// Counters.
    pub stats: CacheStats,
}

impl Cache {
    /// Build a cache from validated params for line numbers below
    /// `2^line_bits`; `loc` is the config key path (for the policy's
    /// errors), `component` the stats path.
    pub fn new(params: &CacheParams, line_bits: u32, seed: u64, component: &str, loc: &str) -> Result<Cache> {
        let ways = params.effective_ways() as usize;
        let sets = (params.lines() as usize / ways).max(1);
        let size_key = format!("{loc}.size_bytes");
        let policy = replacement::build(
            &params.replacement,
            sets,
            ways,
            seed,
            component,
            &format!("{loc}.replacement"),
            &size_key,
        )?;
        let rehit_is_noop = policy.rehit_is_noop();
        Ok(Cache {
            path: component.to_string(),
            index: SetIndex::new(sets),
            tags: TagArray::new(sets, ways, line_bits, &size_key)?,
            meta: alloc::filled(sets * ways, Meta::EMPTY, "line owners", &size_key)?,
            owned: Vec::new(),
            locked: alloc::zeroed(sets * ways, "lock flags", &size_key)?,
            locked_count: 0,
            partition: None,
            policy,
            seen: SeenSet::default(),
            latency_cycles: params.latency_cycles,
            line_shift: params.line_bytes.trailing_zeros(),
            write_back: params.write_policy == WritePolicy::WriteBack,
            write_allocate: params.write_allocate,
            inclusion: params.inclusion,
            store_hit_updates: params.store_hit_updates_replacement,
            receives_stores: true,
            last: Slot { set: 0, way: 0 },
            rehit_is_noop,
            tracks_use: false,
            stats: CacheStats::default(),
        })
    }

    /// Number of sets.
    pub fn sets(&self) -> usize {
        self.tags.sets()
    }

    /// Whether the lines of each parity may run on their own: an even
    /// number of sets (a line's lowest bit is its set's), each set deciding
    /// alone (see [`Replacement::sets_apart`]), no partitioned or locked ways.
    pub fn sets_apart(&self) -> bool {
        self.sets().is_multiple_of(2) && self.policy.sets_apart() && self.partition.is_none() && self.locked_count == 0
    }

    /// Ways per set.
    pub fn ways(&self) -> usize {
        self.tags.ways()
    }

    /// Set index of a line (modulo the number of sets).
    #[inline(always)]
    pub fn set_of(&self, line: LineAddr) -> usize {
        self.index.of(line.0)
    }

    /// The slot holding `line`, if present.
    #[inline(always)]
    pub fn find(&self, line: LineAddr) -> Option<Slot> {
        self.tags.find(self.set_of(line), line.0)
    }

    /// Ask the host to bring the state of `line`'s set (fingerprints, owners
    /// and dirty bits, replacement state) into its caches, ahead of a lookup.
    #[inline(always)]
    pub fn prefetch(&self, line: LineAddr) {
        self.prefetch_tags(line);
        self.policy.prefetch(self.set_of(line));
    }

    /// [`Cache::prefetch`] of the fingerprints, owners and dirty bits
    /// (ahead of a snoop, which changes no replacement state).
    #[inline(always)]
    pub fn prefetch_tags(&self, line: LineAddr) {
        let set = self.set_of(line);
        self.tags.prefetch(set);
        crate::util::prefetch_row(self.meta.as_ptr().wrapping_add(set * self.tags.ways()), self.tags.ways());
    }

    /// The dirty line a fill of `line` would write back, where that is known
    /// without changing anything: a full cache under LRU, nothing locked or
    /// partitioned. Lets the machine prefetch where the write-back will go.
    #[inline]
    pub fn dirty_victim(&self, line: LineAddr) -> Option<LineAddr> {
        if !self.tags.is_full() || self.locked_count > 0 || self.partition.is_some() {
            return None;
        }
        let set = self.set_of(line);
        let slot = Slot { set, way: self.policy.peek_victim(set)? };
        let i = self.at(slot);
        self.meta[i].dirty().then(|| LineAddr(self.tags.get(slot)))
    }

    #[inline(always)]
    fn at(&self, slot: Slot) -> usize {
        self.tags.index(slot)
    }

    /// Whether the set of `line` holds a line equal to it under `mask`
    /// (the snoop filter's bucket, whose lines all fall in that set).
    pub fn holds_bucket(&self, line: LineAddr, mask: u64) -> bool {
        let set = self.set_of(line);
        (0..self.ways()).any(|way| {
            let tag = self.tags.get(Slot { set, way });
            tag != INVALID && (tag ^ line.0) & mask == 0
        })
    }

    /// Whether `line` is present.
    pub fn contains(&self, line: LineAddr) -> bool {
        self.find(line).is_some()
    }

    #[inline(always)]
    fn touch(slot: Slot, req: &Req) -> Touch {
        Touch { set: slot.set, way: slot.way, pc: req.pc, req: req.kind, task: req.task }
    }

    /// Record a demand or page-walk hit on `slot` and update the replacement
    /// state. A store hit on a write-back L1 marks the line dirty.
    #[inline(always)]
    pub fn hit(&mut self, slot: Slot, req: &Req) {
        self.stats.hits[req.kind as usize] += 1;
        self.touch_hit(slot, req);
    }

    /// [`Cache::hit`] without the counter, for callers that count hits in
    /// bulk ([`Cache::count_hits`]).
    #[inline(always)]
    pub fn touch_hit(&mut self, slot: Slot, req: &Req) {
        self.split().1.touch_hit::<0>(slot, req);
    }

    /// Whether a store hit leaves the replacement order alone: only where
    /// the core writes directly and store hits are configured not to count.
    pub fn store_keeps_order(&self) -> bool {
        !self.store_hit_updates && self.receives_stores
    }

    /// The tags, and apart from them what a demand hit changes.
    #[inline(always)]
    fn split(&mut self) -> (&TagArray, HitState<'_, &mut Policy>) {
        let store_keeps_order = self.store_keeps_order();
        let state = HitState {
            meta: &mut self.meta,
            policy: &mut self.policy,
            last: &mut self.last,
            ways: self.tags.ways(),
            store_dirties: self.receives_stores & self.write_back,
            store_keeps_order,
        };
        (&self.tags, state)
    }

    /// The demand-hit path for a run of lookups with the geometry in
    /// registers ([`TagArray::lookup`]), if the geometry allows it.
    #[inline]
    pub fn hit_run(&mut self) -> Option<HitRun<'_>> {
        let (write_back, latency_cycles) = (self.write_back, self.latency_cycles);
        let (tags, state) = self.split();
        Some(HitRun { lookup: tags.lookup()?, state, latest: None, write_back, latency_cycles })
    }

    /// Record a write-back from the level above hitting `slot`: the line
    /// becomes dirty (in a write-back cache); the replacement state is not
    /// touched, since a write-back says nothing about future use.
    pub fn writeback_hit(&mut self, slot: Slot) {
        self.stats.hits[ReqKind::Writeback as usize] += 1;
        let i = self.at(slot);
        self.meta[i].mark_dirty(self.write_back);
    }

    /// `line` (present) was just brought by a prefetcher.
    pub fn mark_prefetched(&mut self, line: LineAddr) {
        self.mark(line, Meta::PREFETCHED);
    }

    /// `line` (present) was just placed by a migration mechanism.
    pub fn mark_migrated(&mut self, line: LineAddr) {
        self.stats.migrated_in += self.mark(line, Meta::MIGRATED) as u64;
    }

    /// Mark `line` if present (a fill can bypass a fully locked set).
    fn mark(&mut self, line: LineAddr, bit: u32) -> bool {
        let Some(slot) = self.find(line) else { return false };
        let i = self.at(slot);
        self.meta[i].0 |= bit;
        self.tracks_use = true;
        true
    }

    /// Whether some line may carry a prefetched or migrated mark, so that
    /// demand hits must look for it ([`Cache::use_marked`]).
    #[inline(always)]
    pub fn tracks_use(&self) -> bool {
        self.tracks_use
    }

    /// A demand reference hit `slot`: if a prefetcher or a migration
    /// mechanism brought the line and nothing used it yet, count it useful.
    #[inline]
    pub fn use_marked(&mut self, slot: Slot) {
        let i = self.at(slot);
        let meta = &mut self.meta[i];
        if meta.brought(Meta::PREFETCHED | Meta::MIGRATED) {
            self.stats.prefetch_useful += meta.brought(Meta::PREFETCHED) as u64;
            self.stats.migrated_useful += meta.brought(Meta::MIGRATED) as u64;
            meta.0 &= !(Meta::PREFETCHED | Meta::MIGRATED);
        }
    }

    /// The line in flat slot `i` leaves: count it unused if it was brought
    /// and never used.
    fn count_unused(&mut self, i: usize) {
        let meta = self.meta[i];
        self.stats.prefetch_unused += meta.brought(Meta::PREFETCHED) as u64;
        self.stats.migrated_unused += meta.brought(Meta::MIGRATED) as u64;
    }

    /// Every valid line with its recency, dirty bit and owner (for
    /// mechanisms that select lines to carry to another cache).
    pub fn resident_lines(&self) -> Vec<Resident> {
        self.tags
            .valid()
            .map(|(i, tag)| {
                let slot = self.tags.slot(i);
                let meta = self.meta[i];
                Resident {
                    set: slot.set,
                    line: LineAddr(tag),
                    recency: self.policy.recency(slot.set, slot.way),
                    dirty: meta.dirty(),
                    owner: meta.owner(),
                }
            })
            .collect()
    }

    /// Count `n` hits of `kind` made by [`Cache::touch_hit`] or [`Cache::rehit`].
    #[inline]
    pub fn count_hits(&mut self, kind: ReqKind, n: u64) {
        self.stats.hits[kind as usize] += n;
    }

    /// If `line` is the line hit or filled last and hitting it again changes
    /// no replacement decision, apply the hit (marking a store dirty; the
    /// caller counts it) and return true; else change nothing and return
    /// false. This is the machine's shortcut for consecutive references to
    /// one line.
    #[inline(always)]
    pub fn rehit(&mut self, line: LineAddr, kind: ReqKind) -> bool {
        if !self.rehit_possible(line) {
            return false;
        }
        let i = self.at(self.last);
        self.meta[i].mark_dirty((kind == ReqKind::Store) & self.write_back);
        true
    }

    /// Whether [`Cache::rehit`] would succeed for `line`.
    #[inline(always)]
    pub fn rehit_possible(&self, line: LineAddr) -> bool {
        self.rehit_is_noop && self.last.set == self.set_of(line) && self.tags.holds(self.last, line.0)
    }

    /// Record a miss on `line`; returns whether it was compulsory (the first
    /// reference to the line by this cache). Write-backs are never compulsory.
    #[inline]
    pub fn miss(&mut self, line: LineAddr, req: &Req) -> bool {
        self.count_miss(line, req);
        let compulsory = self.seen.insert(line.0) && req.kind != ReqKind::Writeback;
        self.stats.compulsory[req.kind as usize] += compulsory as u64;
        compulsory
    }

    /// [`Cache::miss`] without the first-touch part, for the machine, which
    /// tells compulsory misses from the others off its path
    /// ([`crate::mem::notes`]) and settles them into these stats.
    #[inline]
    pub fn count_miss(&mut self, line: LineAddr, req: &Req) {
        self.stats.misses[req.kind as usize] += 1;
        self.note_miss(line, req);
    }

    /// Tell the replacement policy of a demand miss on `line` (set dueling
    /// learns from misses), without counting it.
    #[inline]
    pub fn note_miss(&mut self, line: LineAddr, req: &Req) {
        if req.kind.is_demand() {
            let set = self.set_of(line);
            self.policy.on_miss(&Touch { set, way: 0, pc: req.pc, req: req.kind, task: req.task });
        }
    }

    /// The slot hit or filled last.
    pub fn last_slot(&self) -> Slot {
        self.last
    }

    /// Place `line` (not present) for `req.task`. Takes an invalid way if the
    /// set has one, else asks the policy for a victim among the unlocked ways.
    /// Says whether the line was placed (and what it evicted) or bypassed
    /// because every way is locked.
    pub fn fill(&mut self, line: LineAddr, dirty: bool, req: &Req) -> Filled {
        let set = self.set_of(line);
        let ways = self.tags.ways();
        let base = set * ways;
        let free = match &self.partition {
            Some(p) => p.first_invalid(&self.tags, set, req.task),
            None => self.tags.first_invalid(set),
        };
        let (slot, evicted) = match free {
            Some(way) => (Slot { set, way }, None),
            None => {
                let locked = match &self.partition {
                    Some(p) => Some(p.outside(req.task)),
                    None if self.locked_count > 0 => Some(&self.locked[base..base + ways]),
                    None => None,
                };
                if locked.is_some_and(|l| l.iter().all(|&x| x)) {
                    self.stats.bypasses += 1;
                    return Filled::Bypassed;
                }
                let q = VictimQuery { set, pc: req.pc, req: req.kind, task: req.task, locked };
                let slot = Slot { set, way: self.policy.victim(&q) };
                self.policy.on_evict(&Self::touch(slot, req));
                let i = base + slot.way;
                let ev = self.evicted_at(slot, i);
                self.disown(ev.owner);
                self.stats.evictions += 1;
                self.count_unused(i);
                self.stats.dirty_evictions += ev.dirty as u64;
                (slot, Some(ev))
            }
        };
        let i = base + slot.way;
        self.last = slot;
        self.tags.set(slot, line.0);
        self.meta[i] = Meta::new(req.task, dirty && self.write_back);
        self.own(req.task);
        self.stats.fills += 1;
        self.policy.on_fill(&Self::touch(slot, req));
        Filled::Placed(evicted)
    }

    /// The line in `slot` (flat index `i`) as it leaves.
    #[inline]
    fn evicted_at(&self, slot: Slot, i: usize) -> Evicted {
        let meta = self.meta[i];
        Evicted { line: LineAddr(self.tags.get(slot)), owner: meta.owner(), dirty: meta.dirty() }
    }

    /// Count a line brought in for `task`.
    #[inline]
    fn own(&mut self, task: TaskId) {
        if task != TaskId::NONE {
            let t = task.0 as usize;
            if self.owned.len() <= t {
                self.owned.resize(t + 1, 0);
            }
            self.owned[t] += 1;
        }
    }

    /// Count a line of `task` leaving.
    #[inline]
    fn disown(&mut self, task: TaskId) {
        if task != TaskId::NONE {
            self.owned[task.0 as usize] -= 1;
        }
    }

    /// Split the ways equally into `parts` partitions (the last takes what
    /// does not divide); a task fills only the ways of its partition
    /// ([`Cache::assign_partition`], default 0) and its victims come from
    /// them, under the cache's policy. Hits are not restricted. Lock bits
    /// are ignored while partitioned.
    pub fn partition_ways(&mut self, parts: usize) {
        let ways = self.ways();
        let parts = parts.clamp(1, ways);
        let range = |p: usize| p * (ways / parts)..if p + 1 == parts { ways } else { (p + 1) * (ways / parts) };
        let outside = (0..parts).map(|p| (0..ways).map(|w| !range(p).contains(&w)).collect()).collect();
        self.partition = Some(Box::new(Partition { ranges: (0..parts).map(range).collect(), outside, of: Vec::new() }));
    }

    /// `task` fills partition `part` from now on (no effect unpartitioned).
    pub fn assign_partition(&mut self, task: TaskId, part: usize) {
        if let (Some(p), true) = (&mut self.partition, task != TaskId::NONE) {
            let t = task.0 as usize;
            if p.of.len() <= t {
                p.of.resize(t + 1, 0);
            }
            p.of[t] = part.min(p.ranges.len() - 1) as u16;
        }
    }

    /// The task that brought in the line in `slot` ([`TaskId::NONE`] if
    /// the way is empty or the line came without a task, e.g. a flush's
    /// write-back).
    #[inline]
    pub fn owner_at(&self, slot: Slot) -> TaskId {
        self.meta[self.at(slot)].owner()
    }

    /// Lines held that were brought in for `task` (its residual footprint:
    /// what is left of its lines when it comes back).
    pub fn lines_of(&self, task: TaskId) -> u64 {
        self.owned.get(task.0 as usize).copied().unwrap_or(0)
    }

    /// Remove the line in `slot` and return it (no stats beyond the policy
    /// hook; callers count why it left).
    pub fn take(&mut self, slot: Slot) -> Evicted {
        let t = Touch { set: slot.set, way: slot.way, pc: VirtAddr(0), req: ReqKind::Load, task: TaskId::NONE };
        self.policy.on_evict(&t);
        let i = self.at(slot);
        let ev = self.evicted_at(slot, i);
        self.disown(ev.owner);
        self.count_unused(i);
        self.tags.set(slot, INVALID);
        self.meta[i] = Meta::EMPTY;
        // The lock bits are read only when some line is locked: a miss on
        // them would cost every invalidation.
        if self.locked_count > 0 && self.locked[i] {
            self.locked[i] = false;
            self.locked_count -= 1;
        }
        ev
    }

    /// Whether the line in `slot` is dirty or known to be the only copy
    /// outside its core's caches (coherence: a store to it is silent).
    #[inline]
    pub fn owned_at(&self, slot: Slot) -> bool {
        self.meta[self.at(slot)].0 & (Meta::DIRTY | Meta::EXCLUSIVE) != 0
    }

    /// The line just filled ([`Cache::last_slot`]) is the only copy outside
    /// its core's caches.
    pub fn mark_exclusive(&mut self) {
        let i = self.at(self.last);
        self.meta[i].0 |= Meta::EXCLUSIVE;
    }

    /// Remove the line in `slot` because another core wrote it.
    pub fn invalidate(&mut self, slot: Slot) -> Evicted {
        self.stats.coherence_invalidations += 1;
        self.take(slot)
    }

    /// The line in `slot` is read by another core: it is shared from now
    /// on, and if dirty it becomes clean (its data goes to memory); returns
    /// whether it was dirty.
    pub fn share(&mut self, slot: Slot) -> bool {
        let i = self.at(slot);
        let dirty = self.meta[i].dirty();
        self.meta[i].0 &= !(Meta::DIRTY | Meta::EXCLUSIVE);
        self.stats.coherence_cleans += dirty as u64;
        dirty
    }

    /// Remove `line` because a lower inclusive level evicted it.
    pub fn back_invalidate(&mut self, line: LineAddr) -> Option<Evicted> {
        let slot = self.find(line)?;
        self.stats.back_invalidations += 1;
        Some(self.take(slot))
    }

    /// Remove every line in `scope`, appending them to `out` (the caller
    /// writes the dirty ones back or drops them).
    pub fn remove(&mut self, scope: Scope, out: &mut Vec<Evicted>) {
        let before = out.len();
        match scope {
            Scope::Line(line) => {
                if let Some(slot) = self.find(line) {
                    out.push(self.take(slot));
                }
            }
            Scope::All | Scope::Task(_) => {
                for i in 0..self.tags.len() {
                    let hit = match scope {
                        Scope::Task(task) => self.meta[i].owner() == task,
                        _ => true,
                    };
                    let slot = self.tags.slot(i);
                    if hit && self.tags.get(slot) != INVALID {
                        out.push(self.take(slot));
                    }
                }
            }
        }
        self.stats.flushed += (out.len() - before) as u64;
    }

    /// Set or clear the lock bit of `line`; false if the line is not present.
    /// Locked lines are never chosen as victims.
    pub fn set_locked(&mut self, line: LineAddr, locked: bool) -> bool {
        let Some(slot) = self.find(line) else { return false };
        let i = self.at(slot);
        if self.locked[i] != locked {
            self.locked[i] = locked;
            if locked {
                self.locked_count += 1;
            } else {
                self.locked_count -= 1;
            }
        }
        true
    }

    /// Way locking: lock every line held in ways `0..ways` of every set
    /// (what a preload put there); returns the lines locked.
    pub fn lock_ways(&mut self, ways: usize) -> u64 {
        let mut n = 0;
        for set in 0..self.sets() {
            for way in 0..ways.min(self.ways()) {
                if let Some(line) = self.line_at(Slot { set, way }) {
                    n += self.set_locked(line, true) as u64;
                }
            }
        }
        n
    }

    /// Locking by address range: lock every line held whose address is in
    /// `first..=last`; returns the lines locked.
    pub fn lock_range(&mut self, first: LineAddr, last: LineAddr) -> u64 {
        let held: Vec<LineAddr> = self.lines().filter(|l| (first.0..=last.0).contains(&l.0)).collect();
        held.into_iter().map(|l| self.set_locked(l, true) as u64).sum()
    }

    /// Clear every lock bit.
    pub fn unlock_all(&mut self) {
        self.locked.iter_mut().for_each(|l| *l = false);
        self.locked_count = 0;
    }

    /// Whether `line`'s set has an empty way (a fill would evict nothing).
    pub fn has_room(&self, line: LineAddr) -> bool {
        self.tags.first_invalid(self.set_of(line)).is_some()
    }

    /// The line in `slot`, if valid.
    pub fn line_at(&self, slot: Slot) -> Option<LineAddr> {
        let tag = self.tags.get(slot);
        (tag != INVALID).then_some(LineAddr(tag))
    }

    /// Whether the line in `slot` is locked.
    pub fn is_locked(&self, slot: Slot) -> bool {
        self.locked[self.at(slot)]
    }

    /// Whether `line` is present and dirty.
    pub fn is_dirty(&self, line: LineAddr) -> bool {
        self.find(line).is_some_and(|s| self.meta[self.at(s)].dirty())
    }

    /// Every valid line, in slot order (tests and invariant checks).
    pub fn lines(&self) -> impl Iterator<Item = LineAddr> + '_ {
        self.tags.valid().map(|(_, t)| LineAddr(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn req(kind: ReqKind) -> Req {
        Req { kind, pc: VirtAddr(0), task: TaskId(0) }
    }

    fn cache(sets: u64, ways: u32, policy: &str) -> Cache {
        cache_of(sets, ways, policy, 64)
    }

    /// A cache for line numbers below `2^line_bits` (below 32 plus the set
    /// bits: exact fingerprints; 64: hashed ones).
    fn cache_of(sets: u64, ways: u32, policy: &str, line_bits: u32) -> Cache {
        let p = CacheParams {
            size_bytes: ByteSize(sets * ways as u64 * 64),
            ways,
            replacement: PluginConfig::named(policy),
            ..CacheParams::default()
        };
        Cache::new(&p, line_bits, 1, "test", "machine.l1d").unwrap()
    }

    #[test]
    fn a_dirty_victim_hint_names_the_line_the_fill_writes_back() {
        let mut rng = crate::util::rng::Rng::from_seed(5);
        let mut c = cache(4, 4, "lru");
        let (mut hinted, mut clean) = (0, 0);
        for _ in 0..5000 {
            let line = LineAddr(rng.below(64));
            let kind = if rng.chance(0.3) { ReqKind::Store } else { ReqKind::Load };
            if let Some(slot) = c.find(line) {
                c.touch_hit(slot, &req(kind));
                continue;
            }
            let hint = c.dirty_victim(line);
            let Filled::Placed(victim) = c.fill(line, kind == ReqKind::Store, &req(kind)) else { unreachable!() };
            let written_back = victim.filter(|v| v.dirty).map(|v| v.line);
            // Once the cache is full, the hint is exactly the write-back.
            if c.tags.is_full() && victim.is_some() {
                assert_eq!(hint, written_back);
                hinted += hint.is_some() as u32;
                clean += hint.is_none() as u32;
            }
        }
        assert!(hinted > 100 && clean > 100, "{hinted} dirty and {clean} clean victims");
    }

    /// The obviously-correct model: per set, a list ordered most- to
    /// least-recently used (LRU) or newest to oldest fill (FIFO).
    struct ListModel {
        sets: Vec<Vec<u64>>,
        ways: usize,
        lru: bool,
    }

    impl ListModel {
        fn access(&mut self, line: u64) -> bool {
            let n = self.sets.len() as u64;
            let set = &mut self.sets[(line % n) as usize];
            if let Some(pos) = set.iter().position(|&l| l == line) {
                if self.lru {
                    let l = set.remove(pos);
                    set.insert(0, l);
                }
                return true;
            }
            set.insert(0, line);
            set.truncate(self.ways);
            false
        }
    }

    /// Drive the cache the way the machine does: lookup, then fill on a miss.
    fn access(c: &mut Cache, line: u64) -> bool {
        let r = req(ReqKind::Load);
        match c.find(LineAddr(line)) {
            Some(slot) => {
                c.hit(slot, &r);
                true
            }
            None => {
                c.miss(LineAddr(line), &r);
                c.fill(LineAddr(line), false, &r);
                false
            }
        }
    }

    proptest! {
        #[test]
        fn lru_and_fifo_agree_with_the_list_model(
            sets_log in 0u32..4, ways in 1u32..9, lines in proptest::collection::vec(0u64..64, 1..400),
            line_bits in prop_oneof![Just(6u32), Just(64)],
        ) {
            for (policy, lru) in [("lru", true), ("fifo", false)] {
                let sets = 1u64 << sets_log;
                let mut c = cache_of(sets, ways, policy, line_bits);
                let mut m = ListModel { sets: vec![Vec::new(); sets as usize], ways: ways as usize, lru };
                for &l in &lines {
                    prop_assert_eq!(access(&mut c, l), m.access(l), "{} line {}", policy, l);
                }
                let s = &c.stats;
                prop_assert_eq!(s.hits[0] + s.misses[0], lines.len() as u64);
            }
        }

        #[test]
        fn lru_hits_exactly_when_stack_distance_is_below_associativity(
            ways in 1u32..9, lines in proptest::collection::vec(0u64..24, 1..300),
        ) {
            // Fully associative: hit iff fewer than `ways` distinct lines were
            // used since the last use of this line.
            let mut c = cache(1, ways, "lru");
            for (i, &l) in lines.iter().enumerate() {
                let last = lines[..i].iter().rposition(|&x| x == l);
                let expect = last.is_some_and(|p| {
                    let mut distinct: Vec<u64> = lines[p + 1..i].to_vec();
                    distinct.sort();
                    distinct.dedup();
                    distinct.len() < ways as usize
                });
                prop_assert_eq!(access(&mut c, l), expect);
            }
        }

        #[test]
        fn plru_and_random_keep_counts_consistent(lines in proptest::collection::vec(0u64..128, 1..300)) {
            for policy in ["plru", "random"] {
                let mut c = cache(4, 4, policy);
                let hits = lines.iter().filter(|&&l| access(&mut c, l)).count() as u64;
                prop_assert_eq!(c.stats.hits[0], hits);
                prop_assert_eq!(c.stats.hits[0] + c.stats.misses[0], lines.len() as u64);
                prop_assert!(c.lines().count() <= 16);
                // Each line is present at most once.
                let mut present: Vec<u64> = c.lines().map(|l| l.0).collect();
                present.sort();
                let n = present.len();
                present.dedup();
                prop_assert_eq!(present.len(), n);
            }
        }
    }

    #[test]
    fn way_and_range_locking_lock_what_is_held_there() {
        // 2 sets of 4 ways: lines 0..8 fill ways 0-3 of both sets in order.
        let mut c = cache(2, 4, "lru");
        for l in 0..8 {
            access(&mut c, l);
        }
        // Ways 0 and 1 hold 0, 2 (set 0) and 1, 3 (set 1).
        assert_eq!(c.lock_ways(2), 4);
        for l in 100..140 {
            access(&mut c, l);
        }
        for l in 0..4 {
            assert!(c.contains(LineAddr(l)), "line {l} is locked in");
        }
        c.unlock_all();
        for l in 200..240 {
            access(&mut c, l);
        }
        assert!((0..4).all(|l| !c.contains(LineAddr(l))));
        // A range locks only what is held in it.
        assert_eq!(c.lock_range(LineAddr(236), LineAddr(300)), 4);
        assert!(c.is_locked(c.find(LineAddr(239)).unwrap()) && !c.is_locked(c.find(LineAddr(235)).unwrap()));
    }

    #[test]
    fn compulsory_misses_are_first_references_only() {
        let mut c = cache(1, 2, "lru");
        for l in [1, 2, 3, 1, 2, 3] {
            access(&mut c, l);
        }
        assert_eq!(c.stats.misses[0], 6);
        assert_eq!(c.stats.compulsory[0], 3);
    }

    #[test]
    fn locked_lines_are_never_victims_and_full_locks_bypass() {
        let mut c = cache(1, 2, "lru");
        access(&mut c, 10);
        access(&mut c, 11);
        assert!(c.set_locked(LineAddr(10), true));
        for l in 20..30 {
            access(&mut c, l);
            assert!(c.contains(LineAddr(10)));
        }
        assert!(c.set_locked(LineAddr(29), true));
        assert_eq!(c.fill(LineAddr(99), false, &req(ReqKind::Load)), Filled::Bypassed);
        assert_eq!(c.stats.bypasses, 1);
        assert!(!c.set_locked(LineAddr(98), true));
    }

    #[test]
    fn store_hits_mark_dirty_and_evictions_report_it() {
        let mut c = cache(1, 1, "lru");
        let st = req(ReqKind::Store);
        c.miss(LineAddr(5), &st);
        c.fill(LineAddr(5), true, &st);
        assert!(c.is_dirty(LineAddr(5)));
        let ev = c.fill(LineAddr(6), false, &req(ReqKind::Load));
        assert_eq!(ev, Filled::Placed(Some(Evicted { line: LineAddr(5), owner: TaskId(0), dirty: true })));
        assert_eq!(c.stats.dirty_evictions, 1);
    }

    #[test]
    fn a_run_of_hits_leaves_its_last_hit_as_the_rehit_hint() {
        // Lines 0 and 4 share the one set; filling 4 last makes it the hint.
        for stamps in [false, true] {
            let mut c = cache(4, 2, "lru");
            let (x, y) = (LineAddr(0), LineAddr(4));
            for line in [x, y] {
                c.fill(line, false, &req(ReqKind::Load));
            }
            fn hits<H: HitUpdate>(mut run: HitRun<'_, H>, lines: &[LineAddr]) {
                for &line in lines {
                    let slot = run.find(line).unwrap();
                    run.touch_hit::<0>(slot, &req(ReqKind::Load));
                }
                run.settle();
            }
            let run = c.hit_run().unwrap();
            if stamps {
                hits(run.lru(2).unwrap(), &[y, x]);
            } else {
                hits(run, &[y, x]);
            }
            assert!(c.rehit_possible(x), "x is the set's latest (stamps: {stamps})");
            assert!(!c.rehit_possible(y), "y is not (stamps: {stamps})");
        }
    }

    #[test]
    fn store_hit_recency_switch() {
        // With the switch off, a store hit does not protect the line.
        for (updates, victim) in [(true, 2u64), (false, 1u64)] {
            let mut c = cache(1, 2, "lru");
            c.store_hit_updates = updates;
            access(&mut c, 1);
            access(&mut c, 2);
            let slot = c.find(LineAddr(1)).unwrap();
            c.hit(slot, &req(ReqKind::Store));
            access(&mut c, 3);
            assert!(!c.contains(LineAddr(victim)), "updates={updates}");
        }
    }

    #[test]
    fn remove_by_scope() {
        let mut c = cache(4, 2, "lru");
        for (l, t) in [(0, 0), (1, 1), (2, 0), (3, 1)] {
            c.fill(LineAddr(l), false, &Req { kind: ReqKind::Load, pc: VirtAddr(0), task: TaskId(t) });
        }
        let mut out = Vec::new();
        c.remove(Scope::Task(TaskId(1)), &mut out);
        assert_eq!(out.iter().map(|e| e.line.0).collect::<Vec<_>>(), vec![1, 3]);
        c.remove(Scope::Line(LineAddr(2)), &mut out);
        assert_eq!(c.lines().collect::<Vec<_>>(), vec![LineAddr(0)]);
        c.remove(Scope::All, &mut out);
        assert_eq!(c.lines().count(), 0);
        assert_eq!(c.stats.flushed, 4);
    }

    #[test]
    fn geometry_errors_name_the_key() {
        let mut issues = Issues::default();
        CacheParams { line_bytes: 48, ..CacheParams::default() }.validate("machine.l2", &mut issues);
        CacheParams { size_bytes: ByteSize(1000), ..CacheParams::default() }.validate("machine.l1d", &mut issues);
        let text = issues.finish().unwrap_err().to_string();
        assert!(text.contains("machine.l2.line_bytes: expected a power of two"), "{text}");
        assert!(text.contains("machine.l1d.size_bytes: 1000B is not a whole number of sets"), "{text}");
    }

    #[test]
    fn non_power_of_two_set_counts_index_by_modulo() {
        // 12 MiB 16-way (Westmere L3) has 12288 sets.
        let p = CacheParams { size_bytes: ByteSize(12 << 20), ways: 16, ..CacheParams::default() };
        let c = Cache::new(&p, 64, 1, "llc", "machine.llc").unwrap();
        assert_eq!(c.sets(), 12288);
        assert_eq!(c.set_of(LineAddr(12288 + 5)), 5);
    }
}
