//! Miss attribution: why a task missed.
//!
//! For every attributed level each task gets an isolated shadow: a cache (or
//! TLB) of the level's geometry and policy, fed only that task's requests at
//! that level, and never flushed, invalidated or moved by scheduling. A real
//! miss the shadow would have hit was caused by someone else: by scheduling
//! or by sharing. What happened to the task since it last used the line
//! tells which:
//!
//! - it moved to another core since: *migration-induced*;
//! - it was switched out since (and resumed where it was): *switch-induced*;
//! - neither: a task sharing the cache evicted it while this one ran:
//!   *sharing-induced* (a shared LLC's co-runners).
//!
//! A miss the shadow also takes is compulsory (the cache had never held the
//! line) or capacity/conflict (the rest). Alone on a machine a task's shadows
//! see exactly what its caches see, so it has no induced misses.
//!
//! The shadow keeps, per line, the task's epoch (its count of scheduling
//! events, see [`History`]) at its last use of the line. Shadows cost a
//! lookup per request at the level (and, for the L1s and the L1 TLB, turn
//! off the machine's L1 shortcuts), so levels are chosen in
//! `machine.attribution`. The machine does not call them directly: it
//! writes down notes that are applied later, possibly on another thread
//! ([`crate::mem::notes`]).

use serde::{Deserialize, Serialize};

use crate::counters::{Cause, Level};
use crate::error::Result;
use crate::mem::cache::{Cache, CacheParams, Req};
use crate::mem::replacement::ReqKind;
use crate::mem::tags::Slot;
use crate::mem::tlb::{Tlb, TlbLevelParams};
use crate::types::{LineAddr, TaskId};
use crate::util::alloc;

/// A level whose misses are attributed (`machine.attribution`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Attributed {
    /// The L1 instruction cache.
    #[serde(rename = "l1i")]
    L1i,
    /// The L1 data cache.
    #[serde(rename = "l1d")]
    L1d,
    /// The private L2.
    #[serde(rename = "l2")]
    L2,
    /// The socket's LLC.
    #[serde(rename = "llc")]
    Llc,
    /// The first-level TLB that served the request (data or instruction).
    #[serde(rename = "tlb.l1")]
    TlbL1,
    /// The second-level TLB.
    #[serde(rename = "tlb.l2")]
    TlbL2,
}

impl Attributed {
    /// The name used in `machine.attribution`.
    pub fn name(self) -> &'static str {
        match self {
            Attributed::L1i => "l1i",
            Attributed::L1d => "l1d",
            Attributed::L2 => "l2",
            Attributed::Llc => "llc",
            Attributed::TlbL1 => "tlb.l1",
            Attributed::TlbL2 => "tlb.l2",
        }
    }
}

/// A task's scheduling history: the number of events (switches out and
/// moves to another core) so far, and how many of the first `k` were moves.
/// A line used at one epoch and missed at a later one was lost to whatever
/// happened in between. An epoch is the event count, 32 bits, so that a
/// shadow line keeps its tag and epoch in 8 bytes.
#[derive(Debug, Clone)]
struct History {
    /// Moves among the first `k` events, for every `k` up to now.
    moves: Vec<u32>,
}

impl Default for History {
    fn default() -> Self {
        History { moves: vec![0] }
    }
}

impl History {
    /// The current epoch.
    fn now(&self) -> u32 {
        (self.moves.len() - 1) as u32
    }

    fn record(&mut self, moved: bool) {
        let moves = self.moves[self.moves.len() - 1] + moved as u32;
        self.moves.push(moves);
    }

    /// Why a line last used at epoch `was` was lost by now.
    fn cause(&self, was: u32) -> Cause {
        let now = self.now();
        if self.moves[was as usize] != self.moves[now as usize] {
            Cause::Migration
        } else if was != now {
            Cause::Switch
        } else {
            Cause::Sharing
        }
    }
}

/// One task's shadow of an LRU cache level, without the cache machinery:
/// the hits and misses of a true-LRU set depend only on the order of its
/// lines, so each set is kept as its tags, most recent first, followed by
/// their epochs. One request reads one block of `2 x ways` 32-bit words
/// (two adjacent host cache lines for 16 ways), where a [`Cache`] reads its
/// tags, replacement stamps and line metadata from separate arrays; and a
/// new task's shadow is zeroed memory the host maps on first touch instead
/// of a copy.
#[derive(Debug, Clone)]
struct LruShadow {
    set_mask: u64,
    set_bits: u32,
    ways: usize,
    /// Whether a store hit leaves the order alone (`store_hit_updates_replacement = false`).
    store_keeps_order: bool,
    /// Per set: `ways` tags (the line above the set bits, plus one; 0 for
    /// none), valid ones first, then their epochs. Set 0 starts at `origin`,
    /// aligned to 64 bytes.
    words: Vec<u32>,
    origin: usize,
}

impl LruShadow {
    /// A shadow of `params`' geometry for lines below `2^line_bits`, if it
    /// can be one: LRU, power-of-two sets, at most 64 ways, tags of at most
    /// 31 bits.
    fn fits(params: &CacheParams, line_bits: u32, store_keeps_order: bool) -> Option<LruShadow> {
        let ways = params.effective_ways() as usize;
        let sets = (params.lines() as usize / ways).max(1);
        let set_bits = sets.trailing_zeros();
        let fits = params.replacement.kind == "lru"
            && sets.is_power_of_two()
            && ways <= 64
            && line_bits.saturating_sub(set_bits) <= 31;
        fits.then(|| LruShadow {
            set_mask: sets as u64 - 1,
            set_bits,
            ways,
            store_keeps_order,
            words: Vec::new(),
            origin: 0,
        })
    }

    /// The same geometry with every set empty. `vec!` of zeros asks the
    /// allocator for zeroed memory: pages are only mapped when touched.
    fn empty(&self) -> LruShadow {
        let words = vec![0; (self.set_mask as usize + 1) * 2 * self.ways + 15];
        let origin = (64 - (words.as_ptr() as usize & 63)) / 4 % 16;
        LruShadow { words, origin, ..*self }
    }

    /// The block of `line`'s set, and the line's tag.
    #[inline(always)]
    fn block(&mut self, line: LineAddr) -> (&mut [u32], u32) {
        let set = (line.0 & self.set_mask) as usize;
        let start = self.origin + set * 2 * self.ways;
        let tag = (line.0 >> self.set_bits) as u32 + 1;
        (&mut self.words[start..start + 2 * self.ways], tag)
    }

    /// Ask the host to bring `line`'s block (two host lines for 16 ways)
    /// into its caches.
    #[inline(always)]
    fn prefetch(&self, line: LineAddr) {
        let start = self.origin + (line.0 & self.set_mask) as usize * 2 * self.ways;
        crate::util::prefetch_row(self.words.as_ptr().wrapping_add(start), 2 * self.ways);
    }

    /// Position of `tag` among a block's tags.
    #[inline(always)]
    fn position(tags: &[u32], tag: u32) -> Option<usize> {
        // A mask, not an early exit: the compiler compares the set at once.
        let found = tags.iter().enumerate().fold(0u64, |m, (i, &t)| m | ((t == tag) as u64) << i);
        (found != 0).then(|| found.trailing_zeros() as usize)
    }

    /// A request for `line` at `now`: `None` on a miss (nothing changes),
    /// else the epoch of the line's last use. The line then becomes the
    /// most recent (unless a store hit keeps the order) at epoch `now`, or
    /// leaves if it does not `stay`.
    #[inline]
    fn observe(&mut self, line: LineAddr, kind: ReqKind, now: u32, stays: bool) -> Option<u32> {
        let ways = self.ways;
        let keeps = kind == ReqKind::Store && self.store_keeps_order;
        let (block, tag) = self.block(line);
        let (tags, epochs) = block.split_at_mut(ways);
        let p = Self::position(tags, tag)?;
        let was = epochs[p];
        if !stays {
            Self::remove(tags, epochs, p);
        } else if keeps {
            epochs[p] = now;
        } else {
            tags.copy_within(0..p, 1);
            epochs.copy_within(0..p, 1);
            tags[0] = tag;
            epochs[0] = now;
        }
        Some(was)
    }

    /// Place `line` at epoch `now` as the most recent line, if absent,
    /// evicting the least recent of a full set.
    #[inline]
    fn place(&mut self, line: LineAddr, now: u32) {
        let ways = self.ways;
        let (block, tag) = self.block(line);
        let (tags, epochs) = block.split_at_mut(ways);
        if Self::position(tags, tag).is_none() {
            tags.copy_within(0..ways - 1, 1);
            epochs.copy_within(0..ways - 1, 1);
            tags[0] = tag;
            epochs[0] = now;
        }
    }

    /// Remove `line` if present.
    fn invalidate(&mut self, line: LineAddr) {
        let ways = self.ways;
        let (block, tag) = self.block(line);
        let (tags, epochs) = block.split_at_mut(ways);
        if let Some(p) = Self::position(tags, tag) {
            Self::remove(tags, epochs, p);
        }
    }

    /// Close the gap at `p`, keeping the valid lines first.
    fn remove(tags: &mut [u32], epochs: &mut [u32], p: usize) {
        tags.copy_within(p + 1.., p);
        epochs.copy_within(p + 1.., p);
        tags[tags.len() - 1] = 0;
    }
}

/// One task's shadow of a cache level of another policy: a cache of the
/// level's kind and each line's epoch of last use.
#[derive(Debug, Clone)]
struct CacheShadow {
    cache: Cache,
    used: Vec<u32>,
}

impl CacheShadow {
    fn stamp(&mut self, slot: Slot, now: u32) {
        let i = slot.set * self.cache.ways() + slot.way;
        self.used[i] = now;
    }
}

/// One task's shadow of one cache level.
#[derive(Debug, Clone)]
enum Shadow {
    Lru(LruShadow),
    Cache(Box<CacheShadow>),
}

impl Shadow {
    /// An empty shadow like `self`.
    fn empty(&self) -> Shadow {
        match self {
            Shadow::Lru(s) => Shadow::Lru(s.empty()),
            Shadow::Cache(s) => Shadow::Cache(s.clone()),
        }
    }
}

/// One task's shadows.
#[derive(Debug, Clone, Default)]
struct Shadows {
    caches: [Option<Shadow>; Level::COUNT],
    /// First- and second-level TLB shadows; an entry's frame holds its epoch.
    tlbs: [Option<Tlb>; 2],
    history: History,
}

/// The shadows of every task, built on a task's first request.
#[derive(Debug, Clone)]
pub struct Attribution {
    /// Empty shadows to copy for a new task.
    blank: Shadows,
    /// Which cache levels and TLB levels have shadows: requests at the
    /// others return before looking the task up.
    pub(crate) cache_on: [bool; Level::COUNT],
    pub(crate) tlb_on: [bool; 2],
    tasks: Vec<Shadows>,
}

impl Attribution {
    /// Host bytes of one task's shadows of the levels [`Attribution::new`]
    /// would shadow, at most.
    pub fn host_bytes_per_task(
        caches: &[(Level, &CacheParams)],
        line_bits: u32,
        tlbs: [Option<&TlbLevelParams>; 2],
    ) -> u64 {
        let cache = |p: &CacheParams| match LruShadow::fits(p, line_bits, true) {
            Some(lru) => ((lru.set_mask + 1) * 2 * lru.ways as u64 + 15) * 4,
            None => p.host_bytes(line_bits).saturating_add(p.lines().saturating_mul(4)),
        };
        let caches = caches.iter().map(|(_, p)| cache(p)).fold(0, u64::saturating_add);
        tlbs.iter().flatten().map(|p| p.host_bytes()).fold(caches, u64::saturating_add)
    }

    /// Shadows for the cache levels given with their params (and physical
    /// line bits) and the TLB levels given with theirs (first, second).
    pub fn new(
        caches: &[(Level, &CacheParams)],
        line_bits: u32,
        tlbs: [Option<&TlbLevelParams>; 2],
        seed: u64,
    ) -> Result<Attribution> {
        let mut blank = Shadows::default();
        for &(level, params) in caches {
            let name = format!("shadow/{}", level.name());
            let mut cache = Cache::new(params, line_bits, seed, &name, &format!("machine.{}", level.name()))?;
            // As in the machine: below the L1 a store is a read for
            // ownership, whose hit updates the order like a load's.
            cache.receives_stores = level.receives_stores();
            blank.caches[level as usize] = Some(match LruShadow::fits(params, line_bits, cache.store_keeps_order()) {
                Some(lru) => Shadow::Lru(lru),
                None => {
                    let key = format!("machine.{}.size_bytes", level.name());
                    let used = alloc::zeroed(cache.sets() * cache.ways(), "shadow stamps", &key)?;
                    Shadow::Cache(Box::new(CacheShadow { cache, used }))
                }
            });
        }
        for (i, params) in tlbs.iter().enumerate() {
            if let Some(p) = params {
                blank.tlbs[i] = Some(Tlb::new(p, seed, &format!("shadow/tlb{}", i + 1), "machine.tlb")?);
            }
        }
        let cache_on = std::array::from_fn(|l| blank.caches[l].is_some());
        let tlb_on = std::array::from_fn(|i| blank.tlbs[i].is_some());
        Ok(Attribution { blank, cache_on, tlb_on, tasks: Vec::new() })
    }

    #[inline]
    fn task(&mut self, task: TaskId) -> &mut Shadows {
        let t = task.0 as usize;
        if self.tasks.len() <= t {
            self.grow(t + 1);
        }
        &mut self.tasks[t]
    }

    #[cold]
    fn grow(&mut self, tasks: usize) {
        while self.tasks.len() < tasks {
            let b = &self.blank;
            self.tasks.push(Shadows {
                caches: std::array::from_fn(|l| b.caches[l].as_ref().map(Shadow::empty)),
                tlbs: b.tlbs.clone(),
                history: History::default(),
            });
        }
    }

    /// `task` was switched out.
    pub fn switched_out(&mut self, task: TaskId) {
        self.task(task).history.record(false);
    }

    /// `task` moved to another core.
    pub fn moved(&mut self, task: TaskId) {
        self.task(task).history.record(true);
    }

    /// A request of `req.task` for `line` at `level`, which hit there or not
    /// (`real_hit`); `stays` says whether a line found stays at the level
    /// (an exclusive level gives it up). A shadow that misses places the line
    /// only when the real level does ([`Attribution::place`]), so that both
    /// see fills and evictions in the same order. Returns the cause of a real
    /// miss the shadow hits; `None` if the level is not attributed.
    #[inline]
    pub fn observe(&mut self, level: Level, req: &Req, line: LineAddr, real_hit: bool, stays: bool) -> Option<Cause> {
        if !self.cache_on[level as usize] {
            return None;
        }
        let shadows = self.task(req.task);
        let now = shadows.history.now();
        let was = match shadows.caches[level as usize].as_mut()? {
            Shadow::Lru(shadow) => shadow.observe(line, req.kind, now, stays)?,
            Shadow::Cache(shadow) => {
                let Some(slot) = shadow.cache.find(line) else {
                    shadow.cache.note_miss(line, req);
                    return None;
                };
                let was = shadow.used[slot.set * shadow.cache.ways() + slot.way];
                if stays {
                    shadow.cache.touch_hit(slot, req);
                    shadow.stamp(slot, now);
                } else {
                    shadow.cache.take(slot);
                }
                was
            }
        };
        (!real_hit).then(|| shadows.history.cause(was))
    }

    /// Ask the host to bring `task`'s shadow block of `line` at `level`
    /// closer: a batch of notes says which blocks the next ones will ask
    /// for, and their host cache misses then overlap.
    #[inline]
    pub fn prefetch(&self, level: Level, task: TaskId, line: LineAddr) {
        let Some(shadows) = self.tasks.get(task.0 as usize) else { return };
        if let (true, Some(Shadow::Lru(shadow))) = (self.cache_on[level as usize], &shadows.caches[level as usize]) {
            shadow.prefetch(line);
        }
    }

    /// `line` placed at `level` for `req.task` (on a miss, a write-back that
    /// allocates, a victim moving into an exclusive level): the shadow places
    /// it too if absent.
    pub fn place(&mut self, level: Level, req: &Req, line: LineAddr) {
        if !self.cache_on[level as usize] {
            return;
        }
        let shadows = self.task(req.task);
        let now = shadows.history.now();
        match shadows.caches[level as usize].as_mut() {
            Some(Shadow::Lru(shadow)) => shadow.place(line, now),
            Some(Shadow::Cache(shadow)) if shadow.cache.find(line).is_none() => {
                shadow.cache.fill(line, false, req);
                shadow.stamp(shadow.cache.last_slot(), now);
            }
            _ => {}
        }
    }

    /// `task`'s own request evicted `line` from an inclusive level, removing
    /// it from `level` above: alone, the task would have lost it too.
    pub fn invalidate(&mut self, level: Level, task: TaskId, line: LineAddr) {
        if !self.cache_on[level as usize] {
            return;
        }
        match self.task(task).caches[level as usize].as_mut() {
            Some(Shadow::Lru(shadow)) => shadow.invalidate(line),
            Some(Shadow::Cache(shadow)) => {
                shadow.cache.back_invalidate(line);
            }
            None => {}
        }
    }

    /// A lookup of translation `key` by `task` in TLB level `i`, which hit
    /// or not; `stays` and the placing as in [`Attribution::observe`].
    /// Returns the cause of a real miss the shadow hits.
    pub fn observe_tlb(&mut self, i: usize, task: TaskId, key: u64, real_hit: bool, stays: bool) -> Option<Cause> {
        if !self.tlb_on[i] {
            return None;
        }
        let shadows = self.task(task);
        let now = shadows.history.now();
        let tlb = shadows.tlbs[i].as_mut()?;
        let slot = tlb.find(key)?;
        let was = tlb.frame_at(slot) as u32;
        if stays {
            tlb.touch(slot);
            tlb.set_frame_at(slot, now as u64);
        } else {
            tlb.remove(key);
        }
        (!real_hit).then(|| shadows.history.cause(was))
    }

    /// Translation `key` of `task` placed in TLB level `i`: the shadow
    /// places it too if absent.
    pub fn place_tlb(&mut self, i: usize, task: TaskId, key: u64) {
        if !self.tlb_on[i] {
            return;
        }
        let shadows = self.task(task);
        let now = shadows.history.now();
        if let Some(tlb) = shadows.tlbs[i].as_mut() {
            if !tlb.probe(key) {
                tlb.insert(key, now as u64);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::VirtAddr;
    use crate::units::ByteSize;
    use crate::util::rng::Rng;

    /// The same shadows as `Attribution::new` builds, but every cache level
    /// kept in a [`Cache`]: the reference for [`LruShadow`].
    fn with_caches(caches: &[(Level, &CacheParams)], line_bits: u32) -> Attribution {
        let mut a = Attribution::new(caches, line_bits, [None, None], 1).unwrap();
        for &(level, params) in caches {
            let mut cache = Cache::new(params, line_bits, 1, "shadow", "machine").unwrap();
            cache.receives_stores = level.receives_stores();
            let used = vec![0; cache.sets() * cache.ways()];
            a.blank.caches[level as usize] = Some(Shadow::Cache(Box::new(CacheShadow { cache, used })));
        }
        a
    }

    #[test]
    fn lru_shadows_agree_with_cache_shadows() {
        let geometries = [(2048, 4, true), (1024, 16, true), (2048, 4, false), (512, 1, true)];
        for ((size, ways, store_updates), level) in
            geometries.into_iter().flat_map(|g| [(g, Level::L1d), (g, Level::L2)])
        {
            let params = CacheParams {
                size_bytes: ByteSize(size),
                ways,
                store_hit_updates_replacement: store_updates,
                ..CacheParams::default()
            };
            let caches = [(level, &params)];
            let mut ours = Attribution::new(&caches, 20, [None, None], 1).unwrap();
            assert!(matches!(ours.blank.caches[level as usize], Some(Shadow::Lru(_))));
            let mut reference = with_caches(&caches, 20);
            let mut rng = Rng::from_seed(size + ways as u64);
            for step in 0..40_000 {
                let task = TaskId(rng.below(3) as u32);
                // Lines from a range a few times the cache, and some far apart
                // (high tag bits).
                let line = LineAddr(rng.below(3 * size / 64) + if rng.chance(0.1) { 1 << 19 } else { 0 });
                let kind = [ReqKind::Load, ReqKind::Store, ReqKind::Prefetch][rng.below(3) as usize];
                let req = Req { kind, pc: VirtAddr(0), task };
                match rng.below(20) {
                    0 => {
                        ours.switched_out(task);
                        reference.switched_out(task);
                    }
                    1 => {
                        ours.moved(task);
                        reference.moved(task);
                    }
                    2 | 3 => {
                        ours.invalidate(level, task, line);
                        reference.invalidate(level, task, line);
                    }
                    4..=8 => {
                        ours.place(level, &req, line);
                        reference.place(level, &req, line);
                    }
                    _ => {
                        let stays = rng.chance(0.9);
                        let a = ours.observe(level, &req, line, false, stays);
                        let b = reference.observe(level, &req, line, false, stays);
                        assert_eq!(a, b, "step {step}: {level:?} of {size} B, {ways} ways, {kind:?} of {line:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn causes_follow_the_events_since_the_last_use() {
        let mut h = History::default();
        let first = h.now();
        assert_eq!(h.cause(first), Cause::Sharing);
        h.record(false);
        let switched = h.now();
        assert_eq!(h.cause(first), Cause::Switch);
        h.record(true);
        h.record(false);
        assert_eq!(h.cause(first), Cause::Migration);
        assert_eq!(h.cause(switched), Cause::Migration);
        assert_eq!(h.cause(h.now()), Cause::Sharing);
    }
}
