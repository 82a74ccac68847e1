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
//! The shadow keeps, per line, the task's [`Epoch`] at its last use of the
//! line. Shadows cost a lookup per request at the level (and, for the L1s and
//! the L1 TLB, turn off the machine's L1 shortcuts), so levels are chosen in
//! `machine.attribution`.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::mem::cache::{Cache, CacheParams, Req};
use crate::mem::tags::Slot;
use crate::mem::tlb::{Tlb, TlbLevelParams};
use crate::stats::Level;
use crate::types::{LineAddr, TaskId};

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

/// Why a miss the shadow would have hit happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The task was switched out since it last used the line.
    Switch,
    /// The task moved to another core since it last used the line.
    Migration,
    /// Another task sharing the cache evicted the line while this one ran.
    Sharing,
}

/// Misses the shadows would have hit, by cause and access kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Induced {
    /// Switch-induced, by kind.
    pub switch: [u64; 3],
    /// Migration-induced, by kind.
    pub migration: [u64; 3],
    /// Sharing-induced, by kind.
    pub sharing: [u64; 3],
}

impl Induced {
    /// Count a miss of access kind `kind` (index) caused by `cause`.
    #[inline]
    pub fn add(&mut self, cause: Cause, kind: usize) {
        match cause {
            Cause::Switch => self.switch[kind] += 1,
            Cause::Migration => self.migration[kind] += 1,
            Cause::Sharing => self.sharing[kind] += 1,
        }
    }

    /// All induced misses.
    pub fn total(&self) -> u64 {
        [self.switch, self.migration, self.sharing].iter().flatten().sum()
    }
}

/// A task's scheduling history, as counts: a line used at one epoch and
/// missed at a later one was lost to whatever changed in between.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Epoch {
    /// Times the task moved to another core.
    moves: u32,
    /// Times the task was switched out.
    switches: u32,
}

impl Epoch {
    fn pack(self) -> u64 {
        (self.moves as u64) << 32 | self.switches as u64
    }

    fn unpack(x: u64) -> Epoch {
        Epoch { moves: (x >> 32) as u32, switches: x as u32 }
    }

    /// Why a line last used at `self` was lost by `now`.
    fn cause(self, now: Epoch) -> Cause {
        if self.moves != now.moves {
            Cause::Migration
        } else if self.switches != now.switches {
            Cause::Switch
        } else {
            Cause::Sharing
        }
    }
}

/// One task's shadow of one cache level: the cache and each line's epoch of last use.
#[derive(Debug, Clone)]
struct Shadow {
    cache: Cache,
    used: Vec<u64>,
}

impl Shadow {
    fn stamp(&mut self, slot: Slot, now: Epoch) {
        let i = slot.set * self.cache.ways() + slot.way;
        self.used[i] = now.pack();
    }
}

/// One task's shadows.
#[derive(Debug, Clone)]
struct Shadows {
    caches: [Option<Shadow>; Level::COUNT],
    /// First- and second-level TLB shadows; an entry's frame holds its epoch.
    tlbs: [Option<Tlb>; 2],
    now: Epoch,
}

/// The shadows of every task, built on a task's first request.
#[derive(Debug, Clone)]
pub struct Attribution {
    /// Empty shadows to copy for a new task.
    blank: Shadows,
    tasks: Vec<Shadows>,
}

impl Attribution {
    /// Shadows for the cache levels given with their params (and physical
    /// line bits) and the TLB levels given with theirs (first, second).
    pub fn new(
        caches: &[(Level, &CacheParams)],
        line_bits: u32,
        tlbs: [Option<&TlbLevelParams>; 2],
        seed: u64,
    ) -> Result<Attribution> {
        let mut blank = Shadows { caches: Default::default(), tlbs: Default::default(), now: Epoch::default() };
        for &(level, params) in caches {
            let name = format!("shadow/{}", level.name());
            let cache = Cache::new(params, line_bits, seed, &name, &format!("machine.{}", level.name()))?;
            let used = vec![0; cache.sets() * cache.ways()];
            blank.caches[level as usize] = Some(Shadow { cache, used });
        }
        for (i, params) in tlbs.iter().enumerate() {
            if let Some(p) = params {
                blank.tlbs[i] = Some(Tlb::new(p, seed, &format!("shadow/tlb{}", i + 1), "machine.tlb")?);
            }
        }
        Ok(Attribution { blank, tasks: Vec::new() })
    }

    fn task(&mut self, task: TaskId) -> &mut Shadows {
        let t = task.0 as usize;
        if self.tasks.len() <= t {
            self.tasks.resize(t + 1, self.blank.clone());
        }
        &mut self.tasks[t]
    }

    /// `task` was switched out.
    pub fn switched_out(&mut self, task: TaskId) {
        self.task(task).now.switches += 1;
    }

    /// `task` moved to another core.
    pub fn moved(&mut self, task: TaskId) {
        self.task(task).now.moves += 1;
    }

    /// A request of `req.task` for `line` at `level`, which hit there or not
    /// (`real_hit`); `stays` says whether a line found stays at the level
    /// (an exclusive level gives it up). A shadow that misses places the line
    /// only when the real level does ([`Attribution::place`]), so that both
    /// see fills and evictions in the same order. Returns the cause of a real
    /// miss the shadow hits; `None` if the level is not attributed.
    #[inline]
    pub fn observe(&mut self, level: Level, req: &Req, line: LineAddr, real_hit: bool, stays: bool) -> Option<Cause> {
        let shadows = self.task(req.task);
        let now = shadows.now;
        let shadow = shadows.caches[level as usize].as_mut()?;
        let Some(slot) = shadow.cache.find(line) else {
            shadow.cache.note_miss(line, req);
            return None;
        };
        let i = slot.set * shadow.cache.ways() + slot.way;
        let was = Epoch::unpack(shadow.used[i]);
        if stays {
            shadow.cache.touch_hit(slot, req);
            shadow.stamp(slot, now);
        } else {
            shadow.cache.take(slot);
        }
        (!real_hit).then(|| was.cause(now))
    }

    /// `line` placed at `level` for `req.task` (on a miss, a write-back that
    /// allocates, a victim moving into an exclusive level): the shadow places
    /// it too if absent.
    pub fn place(&mut self, level: Level, req: &Req, line: LineAddr) {
        let shadows = self.task(req.task);
        let now = shadows.now;
        if let Some(shadow) = shadows.caches[level as usize].as_mut() {
            if shadow.cache.find(line).is_none() {
                shadow.cache.fill(line, false, req);
                shadow.stamp(shadow.cache.last_slot(), now);
            }
        }
    }

    /// `task`'s own request evicted `line` from an inclusive level, removing
    /// it from `level` above: alone, the task would have lost it too.
    pub fn invalidate(&mut self, level: Level, task: TaskId, line: LineAddr) {
        if let Some(shadow) = self.task(task).caches[level as usize].as_mut() {
            shadow.cache.back_invalidate(line);
        }
    }

    /// A lookup of translation `key` by `task` in TLB level `i`, which hit
    /// or not; `stays` and the placing as in [`Attribution::observe`].
    /// Returns the cause of a real miss the shadow hits.
    pub fn observe_tlb(&mut self, i: usize, task: TaskId, key: u64, real_hit: bool, stays: bool) -> Option<Cause> {
        let shadows = self.task(task);
        let now = shadows.now;
        let tlb = shadows.tlbs[i].as_mut()?;
        let slot = tlb.find(key)?;
        let was = Epoch::unpack(tlb.frame_at(slot));
        if stays {
            tlb.touch(slot);
            tlb.set_frame_at(slot, now.pack());
        } else {
            tlb.remove(key);
        }
        (!real_hit).then(|| was.cause(now))
    }

    /// Translation `key` of `task` placed in TLB level `i`: the shadow
    /// places it too if absent.
    pub fn place_tlb(&mut self, i: usize, task: TaskId, key: u64) {
        let shadows = self.task(task);
        let now = shadows.now;
        if let Some(tlb) = shadows.tlbs[i].as_mut() {
            if !tlb.probe(key) {
                tlb.insert(key, now.pack());
            }
        }
    }
}
