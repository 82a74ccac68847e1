//! Translation lookaside buffers: set-associative, asid-tagged.
//!
//! Each core has an L1 data TLB, optionally an L1 instruction TLB, and
//! optionally a second-level TLB shared by both. Entries are tagged with the
//! address-space id so that a context switch need not flush them; flushes of
//! everything or of one asid are explicit operations that schedulers and
//! mechanisms call.

use serde::{Deserialize, Serialize};

use super::replacement::{self, HitUpdate, Policy, Replacement, ReqKind, StampRun, Touch, VictimQuery};
use super::tags::{Lookup, SetIndex, Slot, TagArray, INVALID};
use crate::error::{Issues, Result};
use crate::plugin::PluginConfig;
use crate::types::{Asid, TaskId, VirtAddr};
use crate::util::alloc;

/// Bits of a TLB key below the asid: virtual page numbers of 64-bit
/// addresses with pages of at least 4 KiB fit in 52 bits.
const VPN_BITS: u32 = 52;

/// One TLB level's geometry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlbLevelParams {
    /// Number of entries.
    pub entries: u32,
    /// Associativity (`entries` for a fully associative TLB).
    pub ways: u32,
    /// Cycles a translation served by this level costs.
    pub latency_cycles: u32,
    /// Replacement policy.
    pub replacement: PluginConfig,
}

impl Default for TlbLevelParams {
    fn default() -> Self {
        TlbLevelParams { entries: 64, ways: 4, latency_cycles: 0, replacement: PluginConfig::named("lru") }
    }
}

impl TlbLevelParams {
    /// Host bytes a TLB of these params holds, at most: tags, frames and
    /// replacement state.
    pub fn host_bytes(&self) -> u64 {
        let ways = self.ways.max(1) as u64;
        let sets = (self.entries as u64 / ways).max(1);
        TagArray::host_bytes(sets, ways, 64) + replacement::host_bytes(sets, ways) + sets * ways * 8
    }

    /// Check the geometry and the replacement policy, recording problems
    /// under `loc`, and fill in the policy's default params.
    pub fn validate(&mut self, loc: &str, issues: &mut Issues) {
        if self.ways == 0 || self.entries == 0 || !self.entries.is_multiple_of(self.ways) {
            issues.push(
                format!("{loc}.entries"),
                "invalid_geometry",
                format!("{} entries cannot be split into sets of {} ways", self.entries, self.ways),
            );
        } else if let Some(policy) =
            super::replacement::check(&self.replacement, self.ways as usize, &format!("{loc}.replacement"), issues)
        {
            self.replacement = policy;
        }
    }
}

/// How a TLB miss in the last level is resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WalkModel {
    /// A fixed penalty of `walk_latency_cycles`.
    #[default]
    Fixed,
    /// A radix walk (4 levels for 4 KiB pages, 3 for 2 MiB) whose page-table
    /// entry reads go through the core's data caches; `walk_latency_cycles`
    /// is added on top.
    Radix,
}

/// The TLBs of every core (`machine.tlb`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlbParams {
    /// L1 data TLB.
    pub l1d: TlbLevelParams,
    /// L1 instruction TLB; without it instruction fetches use the data TLB.
    #[serde(deserialize_with = "crate::plugin::optional")]
    pub l1i: Option<TlbLevelParams>,
    /// Second-level TLB shared by instruction and data translations.
    #[serde(deserialize_with = "crate::plugin::optional")]
    pub l2: Option<TlbLevelParams>,
    /// Fixed or radix page walks.
    pub walk: WalkModel,
    /// Fixed walk penalty (whole walk for `fixed`, overhead for `radix`).
    pub walk_latency_cycles: u32,
    /// Put L1 victims into the L2 TLB (which is then filled by walks and by
    /// victims), as in the TLB-preservation study's simulator.
    pub l2_victim_fill: bool,
}

impl Default for TlbParams {
    fn default() -> Self {
        TlbParams {
            l1d: TlbLevelParams::default(),
            l1i: None,
            l2: Some(TlbLevelParams { entries: 1536, ways: 12, latency_cycles: 7, ..TlbLevelParams::default() }),
            walk: WalkModel::Fixed,
            walk_latency_cycles: 30,
            l2_victim_fill: false,
        }
    }
}

impl TlbParams {
    /// Check every level, recording problems under `loc`.
    pub fn validate(&mut self, loc: &str, issues: &mut Issues) {
        self.l1d.validate(&format!("{loc}.l1d"), issues);
        if let Some(l1i) = &mut self.l1i {
            l1i.validate(&format!("{loc}.l1i"), issues);
        }
        if let Some(l2) = &mut self.l2 {
            l2.validate(&format!("{loc}.l2"), issues);
        }
        issues.check(
            !self.l2_victim_fill || self.l2.is_some(),
            format!("{loc}.l2_victim_fill"),
            "invalid_value",
            "needs an l2 TLB",
        );
    }
}

/// Counters of one TLB.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TlbStats {
    /// Lookups that found the translation.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Entries evicted to make room.
    pub evictions: u64,
    /// Entries removed by flushes.
    pub flushed: u64,
}

/// The key of a translation: asid above the virtual page number.
#[inline(always)]
pub fn key(asid: Asid, vpn: u64) -> u64 {
    ((asid.0 as u64) << VPN_BITS) | vpn
}

/// The virtual page number of a key.
#[inline]
pub fn vpn_of(key: u64) -> u64 {
    key & ((1 << VPN_BITS) - 1)
}

/// The asid of a key.
#[inline]
pub fn asid_of(key: u64) -> Asid {
    Asid((key >> VPN_BITS) as u32)
}

/// What a TLB hit reads and changes. One body for [`Tlb::touch`] and [`HitRun`].
struct HitState<'a, H> {
    frames: &'a [u64],
    policy: H,
    last: &'a mut Slot,
    ways: usize,
}

impl<H: HitUpdate> HitState<'_, H> {
    /// The flat index of `slot` in a TLB of `WAYS` ways (0: any).
    #[inline(always)]
    fn at<const WAYS: usize>(&self, slot: Slot) -> usize {
        debug_assert!(WAYS == 0 || WAYS == self.ways);
        slot.set * if WAYS == 0 { self.ways } else { WAYS } + slot.way
    }

    /// A hit on `slot`, except the last-hit hint, which the caller sets.
    #[inline(always)]
    fn touch<const WAYS: usize>(&mut self, slot: Slot) -> u64 {
        let at = self.at::<WAYS>(slot);
        self.policy.hit(at, &Tlb::touched(slot));
        self.frames[at]
    }
}

/// A TLB's hit path for the machine's run of L1 hits ([`Tlb::hit_run`]):
/// lookups and hits as [`Tlb::find`] and [`Tlb::touch`] make them; the
/// caller counts the hits and ends the run with [`HitRun::settle`].
pub struct HitRun<'a, H = &'a mut Policy> {
    lookup: Lookup<'a>,
    state: HitState<'a, H>,
    /// The last-hit hint, written once when the run ends ([`HitRun::settle`]).
    latest: Option<Slot>,
    /// Cycles of a hit.
    pub latency_cycles: u32,
}

impl<H: HitUpdate> HitRun<'_, H> {
    /// The slot holding `key`, if present.
    #[inline(always)]
    pub fn find(&self, key: u64) -> Option<Slot> {
        // Indexed by the page number, as `Tlb::set_of`: the asid bits lie above the set mask.
        self.lookup.find(key)
    }

    /// [`HitRun::find`] with `STRIDE` fingerprints per set ([`Lookup::find_in`]).
    #[inline(always)]
    pub fn find_in<const STRIDE: usize>(&self, key: u64) -> Option<Slot> {
        self.lookup.find_in::<STRIDE>(key)
    }

    /// Fingerprints per set ([`Lookup::stride`]).
    pub fn stride(&self) -> usize {
        self.lookup.stride()
    }

    /// Ways per set.
    pub fn ways(&self) -> usize {
        self.state.ways
    }

    /// The frame in `slot`, changing nothing, in a TLB of `WAYS` ways
    /// known when compiling (0: any).
    #[inline(always)]
    pub fn frame_of<const WAYS: usize>(&self, slot: Slot) -> u64 {
        self.state.frames[self.state.at::<WAYS>(slot)]
    }

    /// A hit on `slot`, as [`Tlb::touch`], in a TLB of `WAYS` ways (0: any).
    #[inline(always)]
    pub fn touch<const WAYS: usize>(&mut self, slot: Slot) {
        self.state.touch::<WAYS>(slot);
        self.latest = Some(slot);
    }

    /// End the run: the TLB's last-hit hint is the run's last hit.
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

    /// The same run with LRU's clock in a register, as `cache::HitRun::lru`.
    pub fn lru(self, most: usize) -> Option<HitRun<'a, StampRun<'a>>> {
        let HitRun { lookup, state: HitState { frames, policy, last, ways }, latest, latency_cycles } = self;
        let state = HitState { frames, policy: policy.lru_run(most)?, last, ways };
        Some(HitRun { lookup, state, latest, latency_cycles })
    }
}

/// One TLB array. Entries map a key (asid, virtual page) to a physical frame.
#[derive(Debug, Clone)]
pub struct Tlb {
    /// Component path, e.g. `socket0/core0/dtlb`.
    pub path: String,
    index: SetIndex,
    tags: TagArray,
    frames: Vec<u64>,
    policy: Policy,
    /// Cycles a translation served here costs.
    pub latency_cycles: u32,
    /// The entry hit or filled last (see [`Tlb::rehit`]).
    last: Slot,
    rehit_is_noop: bool,
    /// Counters.
    pub stats: TlbStats,
}

impl Tlb {
    /// Build from validated params.
    pub fn new(params: &TlbLevelParams, seed: u64, component: &str, loc: &str) -> Result<Tlb> {
        let ways = params.ways as usize;
        let sets = params.entries as usize / ways;
        let size_key = format!("{loc}.entries");
        let policy = replacement::build(
            &params.replacement,
            sets,
            ways,
            seed,
            component,
            &format!("{loc}.replacement"),
            &size_key,
        )?;
        Ok(Tlb {
            path: component.to_string(),
            index: SetIndex::new(sets),
            tags: TagArray::new(sets, ways, 64, &size_key)?,
            frames: alloc::zeroed(sets * ways, "frames", &size_key)?,
            rehit_is_noop: policy.rehit_is_noop(),
            policy,
            latency_cycles: params.latency_cycles,
            last: Slot { set: 0, way: 0 },
            stats: TlbStats::default(),
        })
    }

    #[inline(always)]
    fn set_of(&self, key: u64) -> usize {
        // The asid sits above bit 52; index by the page number alone (VPN mod sets).
        self.index.of(key & ((1 << VPN_BITS) - 1))
    }

    #[inline(always)]
    fn touched(slot: Slot) -> Touch {
        Touch { set: slot.set, way: slot.way, pc: VirtAddr(0), req: ReqKind::Load, task: TaskId::NONE }
    }

    /// Look up a key; on a hit update the replacement state and return the frame.
    #[inline(always)]
    pub fn lookup(&mut self, key: u64) -> Option<u64> {
        match self.find(key) {
            Some(slot) => Some(self.hit(slot)),
            None => {
                self.count_miss();
                None
            }
        }
    }

    /// Count a lookup that missed (for callers that searched with [`Tlb::find`]).
    #[inline]
    pub fn count_miss(&mut self) {
        self.stats.misses += 1;
    }

    /// The slot holding `key`, if present; changes nothing.
    #[inline(always)]
    pub fn find(&self, key: u64) -> Option<Slot> {
        self.tags.find(self.set_of(key), key)
    }

    /// The frame held in `slot`.
    #[inline(always)]
    pub fn frame_at(&self, slot: Slot) -> u64 {
        self.frames[self.tags.index(slot)]
    }

    /// Replace the frame held in `slot`.
    pub fn set_frame_at(&mut self, slot: Slot, frame: u64) {
        let i = self.tags.index(slot);
        self.frames[i] = frame;
    }

    /// Count a hit on `slot` (found by [`Tlb::find`]), update the
    /// replacement state, and return the frame.
    #[inline(always)]
    pub fn hit(&mut self, slot: Slot) -> u64 {
        self.stats.hits += 1;
        self.touch(slot)
    }

    /// [`Tlb::hit`] without the counter, for callers that count hits in bulk.
    #[inline(always)]
    pub fn touch(&mut self, slot: Slot) -> u64 {
        self.last = slot;
        self.split().1.touch::<0>(slot)
    }

    /// The tags, and apart from them what a hit reads and changes.
    #[inline(always)]
    fn split(&mut self) -> (&TagArray, HitState<'_, &mut Policy>) {
        let state =
            HitState { frames: &self.frames, policy: &mut self.policy, last: &mut self.last, ways: self.tags.ways() };
        (&self.tags, state)
    }

    /// The hit path for a run of lookups with the geometry in registers
    /// ([`TagArray::lookup`]), if the geometry allows it.
    #[inline]
    pub fn hit_run(&mut self) -> Option<HitRun<'_>> {
        let latency_cycles = self.latency_cycles;
        let (tags, state) = self.split();
        Some(HitRun { lookup: tags.lookup()?, state, latest: None, latency_cycles })
    }

    /// Whether `key` is the entry hit or filled last and hitting it again
    /// changes no replacement decision (the machine's repeat shortcut).
    #[inline(always)]
    pub fn rehit_possible(&self, key: u64) -> bool {
        self.rehit_is_noop && self.last.set == self.set_of(key) && self.tags.holds(self.last, key)
    }

    /// Ask the host to bring the set of `key` (its fingerprints, tags,
    /// frames and replacement state) closer.
    #[inline]
    pub fn prefetch(&self, key: u64) {
        let set = self.set_of(key);
        self.tags.prefetch(set);
        crate::util::prefetch_row(self.frames.as_ptr().wrapping_add(set * self.tags.ways()), self.tags.ways());
        self.policy.prefetch(set);
    }

    /// Whether a key is present, without touching any state.
    pub fn probe(&self, key: u64) -> bool {
        self.find(key).is_some()
    }

    /// Insert a translation (which must not be present); returns the evicted
    /// entry as (key, frame).
    pub fn insert(&mut self, key: u64, frame: u64) -> Option<(u64, u64)> {
        let set = self.set_of(key);
        let (slot, evicted) = match self.tags.first_invalid(set) {
            Some(way) => (Slot { set, way }, None),
            None => {
                let q = VictimQuery { set, pc: VirtAddr(0), req: ReqKind::Load, task: TaskId::NONE, locked: None };
                let slot = Slot { set, way: self.policy.victim(&q) };
                self.policy.on_evict(&Self::touched(slot));
                self.stats.evictions += 1;
                (slot, Some((self.tags.get(slot), self.frames[self.tags.index(slot)])))
            }
        };
        let i = self.tags.index(slot);
        self.last = slot;
        self.tags.set(slot, key);
        self.frames[i] = frame;
        self.policy.on_fill(&Self::touched(slot));
        evicted
    }

    /// Remove one translation; true if it was present.
    pub fn remove(&mut self, key: u64) -> bool {
        match self.find(key) {
            Some(slot) => {
                self.policy.on_evict(&Self::touched(slot));
                self.tags.set(slot, INVALID);
                true
            }
            None => false,
        }
    }

    /// Remove the entries whose asid matches (`None`: all entries); returns
    /// how many were removed.
    pub fn flush(&mut self, asid: Option<Asid>) -> u64 {
        let doomed: Vec<usize> =
            self.tags.valid().filter(|&(_, tag)| asid.is_none_or(|a| asid_of(tag) == a)).map(|(i, _)| i).collect();
        for &i in &doomed {
            let slot = self.tags.slot(i);
            self.policy.on_evict(&Self::touched(slot));
            self.tags.set(slot, INVALID);
        }
        self.stats.flushed += doomed.len() as u64;
        doomed.len() as u64
    }

    /// Valid entries as (key, frame), in slot order.
    pub fn entries(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.tags.valid().map(|(i, t)| (t, self.frames[i]))
    }

    /// Number of entries (valid or not): positions run from 0 to this.
    pub fn capacity(&self) -> usize {
        self.frames.len()
    }

    /// The position (`0..capacity`) of the entry holding `key`, if present;
    /// changes nothing. Mechanisms keep per-entry state by position.
    pub fn position(&self, key: u64) -> Option<usize> {
        self.find(key).map(|slot| self.tags.index(slot))
    }

    /// Valid entries as (position, key, frame), in slot order.
    pub fn positioned(&self) -> impl Iterator<Item = (usize, u64, u64)> + '_ {
        self.tags.valid().map(|(i, t)| (i, t, self.frames[i]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tlb(entries: u32, ways: u32) -> Tlb {
        let p = TlbLevelParams { entries, ways, ..TlbLevelParams::default() };
        Tlb::new(&p, 1, "test/dtlb", "machine.tlb.l1d").unwrap()
    }

    #[test]
    fn asids_keep_translations_apart() {
        let mut t = tlb(8, 2);
        t.insert(key(Asid(1), 0x42), 7);
        assert_eq!(t.lookup(key(Asid(1), 0x42)), Some(7));
        assert_eq!(t.lookup(key(Asid(2), 0x42)), None);
        t.insert(key(Asid(2), 0x42), 9);
        assert_eq!(t.flush(Some(Asid(1))), 1);
        assert_eq!(t.lookup(key(Asid(1), 0x42)), None);
        assert_eq!(t.lookup(key(Asid(2), 0x42)), Some(9));
        assert_eq!(t.flush(None), 1);
        assert_eq!(t.entries().count(), 0);
    }

    #[test]
    fn lru_within_a_set_of_a_twelve_way_tlb() {
        // 1536 entries, 12 ways: 128 sets; pages 0, 128, 256, ... share set 0.
        let mut t = tlb(1536, 12);
        for i in 0..12 {
            assert!(t.insert(key(Asid(0), i * 128), i).is_none());
        }
        t.lookup(key(Asid(0), 0));
        assert_eq!(t.insert(key(Asid(0), 12 * 128), 12), Some((key(Asid(0), 128), 1)));
        assert!(t.probe(key(Asid(0), 0)));
    }

    #[test]
    fn a_run_of_hits_leaves_its_last_hit_as_the_rehit_hint() {
        // Pages 0 and 4 share set 0; inserting 4 last makes it the hint.
        let (x, y) = (key(Asid(0), 0), key(Asid(0), 4));
        let mut t = tlb(8, 2);
        t.insert(x, 1);
        t.insert(y, 2);
        let mut run = t.hit_run().unwrap();
        for k in [y, x] {
            let slot = run.find(k).unwrap();
            run.touch::<0>(slot);
        }
        run.settle();
        assert!(t.rehit_possible(x), "x is the set's latest");
        assert!(!t.rehit_possible(y), "y is not");
    }

    #[test]
    fn geometry_errors_name_the_key() {
        let mut issues = Issues::default();
        TlbLevelParams { entries: 100, ways: 12, ..TlbLevelParams::default() }.validate("machine.tlb.l2", &mut issues);
        let text = issues.finish().unwrap_err().to_string();
        assert!(text.contains("machine.tlb.l2.entries: 100 entries cannot be split into sets of 12 ways"), "{text}");
    }
}
