//! Replacement policies: which line of a full set to evict.
//!
//! A policy is a [`Replacement`] implementation in its own file, registered by
//! one line in [`policies!`] below. The cache owns tags, owners and dirty/lock
//! bits; the policy owns whatever per-line or per-set state it needs (LRU
//! stamps, tree bits, RRPVs, signatures, a PSEL counter) and is told about
//! every event that could change that state. The hooks receive the access's
//! pc and kind so that pc-based policies (SHiP) and set-dueling policies (DIP,
//! DRRIP) fit the same contract.
//!
//! Dispatch is a `match` over an enum of the registered policies, not a trait
//! object: the hooks sit on the hot path and the compiler inlines them.
//!
//! Pieces several policies share live beside them: [`Stamps`] (recency
//! order, for LRU and FIFO) and [`Bimodal`] (the seeded rare-event coin of
//! BIP and BRRIP) here, the LRU-stack insertion policies in [`recency`],
//! RRPVs and the RRIP policies in [`rrip`], set dueling in [`dueling`].
//! docs/replacement.md describes every policy.

pub mod bip;
pub mod brrip;
pub mod dip;
pub mod drrip;
pub mod dueling;
pub mod fifo;
pub mod lip;
pub mod lru;
pub mod plru;
pub mod random;
pub mod recency;
#[cfg(test)]
mod reference;
pub mod rrip;
pub mod ship;
pub mod srrip;

use crate::error::{Error, Result};
use crate::types::{TaskId, VirtAddr};
use crate::util::alloc;
use crate::util::rng::Rng;

/// Why a cache was accessed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ReqKind {
    /// Demand data read.
    Load = 0,
    /// Demand data write.
    Store = 1,
    /// Demand instruction fetch.
    Ifetch = 2,
    /// A dirty line written back (or written through) from the level above.
    Writeback = 3,
    /// A page-table entry read by the page walker.
    Walk = 4,
    /// A line fetched by a hardware prefetcher (see `mem::prefetch`): at
    /// the prefetching cache a hit is a dropped proposal and a miss a fetch.
    Prefetch = 5,
}

impl ReqKind {
    /// Number of request kinds (size of per-kind counter arrays).
    pub const COUNT: usize = 6;

    /// Lower-case name used in stats keys.
    pub fn name(self) -> &'static str {
        match self {
            ReqKind::Load => "load",
            ReqKind::Store => "store",
            ReqKind::Ifetch => "ifetch",
            ReqKind::Writeback => "writeback",
            ReqKind::Walk => "walk",
            ReqKind::Prefetch => "prefetch",
        }
    }

    /// Whether the request comes from the program's own loads, stores and fetches.
    #[inline]
    pub fn is_demand(self) -> bool {
        (self as u8) < 3
    }
}

impl From<crate::types::AccessKind> for ReqKind {
    #[inline]
    fn from(kind: crate::types::AccessKind) -> ReqKind {
        match kind {
            crate::types::AccessKind::Load => ReqKind::Load,
            crate::types::AccessKind::Store => ReqKind::Store,
            crate::types::AccessKind::Ifetch => ReqKind::Ifetch,
        }
    }
}

/// An event on one way of one set, as seen by a policy.
#[derive(Debug, Clone, Copy)]
pub struct Touch {
    /// Set index.
    pub set: usize,
    /// Way within the set.
    pub way: usize,
    /// Pc of the access that caused the event (0 if unknown).
    pub pc: VirtAddr,
    /// Why the cache was accessed.
    pub req: ReqKind,
    /// Task on whose behalf the access was made.
    pub task: TaskId,
}

/// A request for a victim in a full set.
#[derive(Debug, Clone, Copy)]
pub struct VictimQuery<'a> {
    /// Set index.
    pub set: usize,
    /// Pc of the access that needs the space.
    pub pc: VirtAddr,
    /// Why the cache was accessed.
    pub req: ReqKind,
    /// Task on whose behalf the line is filled.
    pub task: TaskId,
    /// Per-way lock flags of the set (`None` when nothing in the cache is locked).
    pub locked: Option<&'a [bool]>,
}

impl VictimQuery<'_> {
    /// Whether `way` may be evicted (locked lines never are).
    #[inline]
    pub fn evictable(&self, way: usize) -> bool {
        self.locked.is_none_or(|l| !l[way])
    }
}

/// Geometry and identity handed to a policy's constructor.
#[derive(Debug, Clone)]
pub struct ReplCtx {
    /// Number of sets; 0 when only the params are being checked (config
    /// validation, before the geometry's sets are known to the policy), in
    /// which case checks against the number of sets are left to the real
    /// construction and nothing per set is allocated.
    pub sets: usize,
    /// Ways per set.
    pub ways: usize,
    /// The run's seed.
    pub seed: u64,
    /// Component path of the cache, e.g. `socket0/core1/l2` (seeds random streams).
    pub component: String,
    /// Config key path of the policy selection, for errors.
    pub loc: String,
    /// The key whose value sizes the policy's state (`machine.l2.size_bytes`,
    /// `machine.tlb.l2.entries`): named if the host cannot give the memory.
    pub size_key: String,
}

impl ReplCtx {
    /// `value` for each of the `sets x ways` lines.
    pub fn per_line<T: Clone>(&self, value: T) -> Result<Vec<T>> {
        alloc::filled(self.sets * self.ways, value, "replacement state", &self.size_key)
    }

    /// `value` for each of the `sets` sets.
    pub fn per_set<T: Clone>(&self, value: T) -> Result<Vec<T>> {
        alloc::filled(self.sets, value, "replacement state", &self.size_key)
    }

    /// A config error about the param `field` of this policy selection.
    pub fn param_error(&self, field: &str, code: &'static str, message: impl Into<String>) -> Error {
        Error::config(format!("{}.params.{field}", self.loc), code, message)
    }

    /// Require `lo <= value <= hi` of the integer param `field`.
    pub fn check_range(&self, field: &str, value: u32, lo: u32, hi: u32) -> Result<()> {
        if (lo..=hi).contains(&value) {
            Ok(())
        } else {
            Err(self.param_error(field, "out_of_range", format!("expected {lo} to {hi}, got {value}")))
        }
    }
}

/// The contract between a cache and its replacement policy.
///
/// The cache guarantees:
/// - invalid ways are filled before a victim is asked for, so `victim` is
///   only called on a set whose ways are all valid, and at least one of them
///   is evictable (if none is, the cache does not fill and never asks);
/// - `on_fill` follows every fill, `on_evict` precedes every removal of a
///   valid line (eviction, invalidation, flush);
/// - `on_hit` is called for hits that use the line (demand accesses and page
///   walks; store hits only when `store_hit_updates_replacement` is on), but
///   not for write-backs from the level above, which only set the dirty bit
///   (as ChampSim does: a write-back says nothing about future reuse).
pub trait Replacement {
    /// A lookup hit `t.way` of `t.set`.
    fn on_hit(&mut self, t: &Touch);

    /// A line was just placed in `t.way` of `t.set`.
    fn on_fill(&mut self, t: &Touch);

    /// Choose the way to evict from a full set. Must return an evictable way.
    fn victim(&mut self, q: &VictimQuery) -> usize;

    /// A demand lookup missed in `t.set` (`t.way` is meaningless). Set-dueling
    /// policies update their selector here. Optional.
    fn on_miss(&mut self, _t: &Touch) {}

    /// The valid line in `t.way` of `t.set` is about to leave the cache.
    /// Optional.
    fn on_evict(&mut self, _t: &Touch) {}

    /// Whether a hit on the line that was touched last in its set leaves the
    /// policy's future decisions unchanged (true for LRU, FIFO, random and
    /// PLRU; false for policies that count hits, such as SHiP). When it is,
    /// the machine may skip the lookup for a reference to the line it just
    /// used. Optional; the safe default is `false`.
    fn rehit_is_noop(&self) -> bool {
        false
    }

    /// When the line in `way` of `set` was last used, comparable across
    /// the sets of one cache (larger is more recent), for mechanisms that
    /// pick a cache's most recently used lines. Optional: `None` for
    /// policies that keep no such order.
    fn recency(&self, set: usize, way: usize) -> Option<u32> {
        let _ = (set, way);
        None
    }

    /// Whether each set decides alone: its victims depend only on the
    /// hits, fills and evictions of that set, in their order (no state
    /// shared by sets, no draw from a generator, no pc), so that two
    /// threads may run disjoint sets of the cache and decide as one would.
    /// Optional; the safe default is `false`.
    fn sets_apart(&self) -> bool {
        false
    }
}

/// How a run of hits reaches a policy (the machine's L1 hit run, chosen
/// once per run): a [`Policy`] dispatches on its kind at every hit; LRU's
/// [`StampRun`] holds the clock in a register instead.
pub trait HitUpdate {
    /// A lookup hit `t.way` of `t.set`, as [`Replacement::on_hit`]; `at`
    /// is the line's flat index, `t.set * ways + t.way`.
    fn hit(&mut self, at: usize, t: &Touch);
}

impl HitUpdate for &mut Policy {
    #[inline(always)]
    fn hit(&mut self, _at: usize, t: &Touch) {
        self.on_hit(t);
    }
}

impl Policy {
    /// LRU's stamps lent to a run of at most `most` hits, if this is LRU and
    /// its clock has room for them.
    pub fn lru_run(&mut self, most: usize) -> Option<StampRun<'_>> {
        match self {
            Policy::Lru(lru) if lru.stamps.has_room(most) => Some(lru.stamps.run()),
            _ => None,
        }
    }

    /// Ask the host to bring `set`'s replacement state into its caches.
    #[inline(always)]
    pub fn prefetch(&self, set: usize) {
        if let Policy::Lru(lru) = self {
            lru.stamps.prefetch(set);
        }
    }

    /// The way LRU would evict from `set` if nothing is locked, changing
    /// nothing; `None` for other policies (whose choice may draw or learn).
    #[inline]
    pub fn peek_victim(&self, set: usize) -> Option<usize> {
        match self {
            Policy::Lru(lru) => Some(lru.stamps.oldest(set, None)),
            _ => None,
        }
    }

    /// Whether [`Policy::lru_run`] would lend the stamps.
    pub fn lends_stamps(&self, most: usize) -> bool {
        matches!(self, Policy::Lru(lru) if lru.stamps.has_room(most))
    }
}

/// Declares the registered policies: the config enum (via
/// [`register!`](crate::register)), the enum of instances, and the
/// dispatching [`Replacement`] impl. One line per policy.
macro_rules! policies {
    ($($name:literal => $variant:ident($policy:ty, $params:ty)),+ $(,)?) => {
        crate::register! {
            /// A replacement policy selection: `{ kind = "lru" }`.
            family "replacement policy", ReplacementConfig,
            fn build(&self, ctx: &ReplCtx) -> Result<Policy>;
            $($name => $variant($params)),+
        }

        /// A constructed policy.
        #[derive(Debug, Clone)]
        pub enum Policy {
            $(
                #[doc = concat!("`", $name, "`")]
                $variant($policy)
            ),+
        }

        impl Replacement for Policy {
            #[inline(always)]
            fn on_hit(&mut self, t: &Touch) {
                match self { $(Policy::$variant(p) => p.on_hit(t)),+ }
            }
            #[inline(always)]
            fn on_fill(&mut self, t: &Touch) {
                match self { $(Policy::$variant(p) => p.on_fill(t)),+ }
            }
            #[inline(always)]
            fn victim(&mut self, q: &VictimQuery) -> usize {
                match self { $(Policy::$variant(p) => p.victim(q)),+ }
            }
            #[inline(always)]
            fn on_miss(&mut self, t: &Touch) {
                match self { $(Policy::$variant(p) => p.on_miss(t)),+ }
            }
            #[inline(always)]
            fn on_evict(&mut self, t: &Touch) {
                match self { $(Policy::$variant(p) => p.on_evict(t)),+ }
            }
            fn rehit_is_noop(&self) -> bool {
                match self { $(Policy::$variant(p) => p.rehit_is_noop()),+ }
            }
            fn recency(&self, set: usize, way: usize) -> Option<u32> {
                match self { $(Policy::$variant(p) => p.recency(set, way)),+ }
            }
            fn sets_apart(&self) -> bool {
                match self { $(Policy::$variant(p) => p.sets_apart()),+ }
            }
        }
    };
}

policies! {
    "lru" => Lru(lru::Lru, lru::LruParams),
    "fifo" => Fifo(fifo::Fifo, fifo::FifoParams),
    "random" => Random(random::Random, random::RandomParams),
    "plru" => Plru(plru::Plru, plru::PlruParams),
    "lip" => Lip(lip::Lip, lip::LipParams),
    "bip" => Bip(bip::Bip, bip::BipParams),
    "dip" => Dip(dip::Dip, dip::DipParams),
    "srrip" => Srrip(srrip::Srrip, srrip::SrripParams),
    "brrip" => Brrip(brrip::Brrip, brrip::BrripParams),
    "drrip" => Drrip(drrip::Drrip, drrip::DrripParams),
    "ship" => Ship(ship::Ship, ship::ShipParams),
}

/// Check a policy selection at `loc` against the geometry it will run on
/// (some policies need e.g. a power-of-two associativity), recording any
/// problem, and return it with every param filled in.
pub fn check(
    raw: &crate::plugin::PluginConfig,
    ways: usize,
    loc: &str,
    issues: &mut crate::error::Issues,
) -> Option<crate::plugin::PluginConfig> {
    let config = issues.absorb(ReplacementConfig::parse(raw, loc))?;
    // No sets: run the policy's own checks of its params and the
    // associativity without allocating the state of a large cache. Checks
    // against the number of sets (leader sets) run when the cache is built.
    let ctx =
        ReplCtx { sets: 0, ways, seed: 0, component: String::new(), loc: loc.to_string(), size_key: String::new() };
    issues.absorb(config.build(&ctx))?;
    Some(config.to_raw())
}

/// Host bytes any registered policy keeps for an array of `sets x ways`,
/// at most: five per line (SHiP's RRPV and line record; LRU's stamp is
/// four), nine per set (PLRU's bits and a set-dueling role), and SHiP's
/// table of up to 2^16 counters.
pub fn host_bytes(sets: u64, ways: u64) -> u64 {
    sets.saturating_mul(ways).saturating_mul(5).saturating_add(sets.saturating_mul(9)).saturating_add(1 << 16)
}

/// Type and build the policy selected by `raw` (found at `loc`) for an array
/// of `sets x ways` at component path `component` in a run seeded `seed`;
/// `size_key` is the key that sized the array.
pub fn build(
    raw: &crate::plugin::PluginConfig,
    sets: usize,
    ways: usize,
    seed: u64,
    component: &str,
    loc: &str,
    size_key: &str,
) -> Result<Policy> {
    let ctx = ReplCtx {
        sets,
        ways,
        seed,
        component: component.to_string(),
        loc: loc.to_string(),
        size_key: size_key.to_string(),
    };
    ReplacementConfig::parse(raw, loc)?.build(&ctx)
}

/// Per-line 32-bit stamps from a per-cache clock, for policies that order a
/// set's lines by time (last use, fill). 32 bits keep a 16-way set's stamps
/// in one host cache line. Stamps count up from the middle of the range for
/// lines placed at the most recent end of their set ([`Stamps::stamp`]) and
/// down from it for lines placed at the oldest end ([`Stamps::stamp_oldest`],
/// LIP's insertion at the LRU position). When either clock runs out (after
/// 2G stamps) every set's stamps are renumbered by rank around the middle,
/// which keeps each set's order, the only thing victims depend on.
#[derive(Debug, Clone)]
pub(crate) struct Stamps {
    stamps: Vec<u32>,
    ways: usize,
    /// The next newest stamp.
    clock: u32,
    /// The next oldest stamp.
    low: u32,
}

impl Stamps {
    const MID: u32 = 1 << 31;

    /// Zeroed stamps for the lines of `ctx`'s cache.
    pub(crate) fn new(ctx: &ReplCtx) -> Result<Stamps> {
        Ok(Stamps { stamps: ctx.per_line(0)?, ways: ctx.ways, clock: Stamps::MID, low: Stamps::MID - 1 })
    }

    /// The stamp of the line in `set`, `way`. Comparable across sets until
    /// the first renumbering (after 2G stamps), which ranks each set alone.
    pub(crate) fn get(&self, set: usize, way: usize) -> u32 {
        self.stamps[set * self.ways + way]
    }

    /// Stamp the line in `set`, `way` newer than every other line.
    #[inline(always)]
    pub(crate) fn stamp(&mut self, set: usize, way: usize) {
        if self.clock == u32::MAX {
            self.renumber();
        }
        self.stamps[set * self.ways + way] = self.clock;
        self.clock += 1;
    }

    /// Stamp the line in `set`, `way` older than every other line.
    #[inline(always)]
    pub(crate) fn stamp_oldest(&mut self, set: usize, way: usize) {
        if self.low == 0 {
            self.renumber();
        }
        self.stamps[set * self.ways + way] = self.low;
        self.low -= 1;
    }

    /// The evictable way of `set` (`locked`: its ways' lock flags) with the
    /// oldest stamp (ties to the lowest way).
    #[inline]
    pub(crate) fn oldest(&self, set: usize, locked: Option<&[bool]>) -> usize {
        let base = set * self.ways;
        let keys = &self.stamps[base..base + self.ways];
        let Some(locked) = locked else {
            // Nothing locked (the common case): a plain, branch-free argmin.
            return crate::util::argmin(keys);
        };
        let mut best = usize::MAX;
        let mut best_key = u32::MAX;
        for (way, &key) in keys.iter().enumerate() {
            if key < best_key && !locked[way] {
                best = way;
                best_key = key;
            }
        }
        debug_assert!(best != usize::MAX, "victim asked for a set with no evictable way");
        best
    }

    /// Replace every set's stamps by their ranks (ties by way), just below
    /// the middle, and restart both clocks from there.
    #[cold]
    fn renumber(&mut self) {
        let base = Stamps::MID - self.ways as u32 - 1;
        let mut order: Vec<usize> = (0..self.ways).collect();
        for set in self.stamps.chunks_mut(self.ways) {
            order.sort_by_key(|&w| (set[w], w));
            for (rank, &w) in order.iter().enumerate() {
                set[w] = base + rank as u32 + 1;
            }
        }
        self.clock = Stamps::MID;
        self.low = base;
    }

    /// Ask the host to bring `set`'s stamps into its caches.
    #[inline(always)]
    fn prefetch(&self, set: usize) {
        crate::util::prefetch_row(self.stamps.as_ptr().wrapping_add(set * self.ways), self.ways);
    }

    /// Whether `most` more stamps fit before the clock must renumber.
    fn has_room(&self, most: usize) -> bool {
        ((u32::MAX - self.clock) as usize) > most
    }

    /// Lend the stamps to a run of hits ([`Stamps::has_room`] checked).
    fn run(&mut self) -> StampRun<'_> {
        StampRun { clock: self.clock, stamps: &mut self.stamps, home: &mut self.clock }
    }

    #[cfg(test)]
    pub(crate) fn set_clocks(&mut self, clock: u32, low: u32) {
        self.clock = clock;
        self.low = low;
    }
}

/// [`Stamps`] lent to a run of hits ([`Policy::lru_run`]): each hit is one
/// store, with the clock in a local that goes back when the run ends.
pub struct StampRun<'a> {
    stamps: &'a mut [u32],
    clock: u32,
    home: &'a mut u32,
}

impl HitUpdate for StampRun<'_> {
    #[inline(always)]
    fn hit(&mut self, at: usize, _t: &Touch) {
        self.stamps[at] = self.clock;
        self.clock += 1;
    }
}

impl Drop for StampRun<'_> {
    fn drop(&mut self) {
        *self.home = self.clock;
    }
}

/// The bimodal throttle of BIP and BRRIP: a seeded coin that comes up with
/// probability `epsilon`, drawn only when a policy asks (once per bimodal
/// insertion). The stream is the cache's own (run seed xor `salt`, component
/// path), as for `random`, so a run is reproducible.
#[derive(Debug, Clone)]
pub(crate) struct Bimodal {
    rng: Rng,
    epsilon: f64,
}

impl Bimodal {
    /// The default throttle of both papers: 1/32.
    pub(crate) const EPSILON: f64 = 1.0 / 32.0;

    /// A coin for the cache in `ctx`; `epsilon` must lie in [0, 1].
    pub(crate) fn new(epsilon: f64, salt: u64, ctx: &ReplCtx) -> Result<Bimodal> {
        if !(0.0..=1.0).contains(&epsilon) {
            return Err(ctx.param_error("epsilon", "out_of_range", format!("expected 0 to 1, got {epsilon}")));
        }
        Ok(Bimodal { rng: Rng::for_component(ctx.seed ^ salt, &ctx.component), epsilon })
    }

    /// True with probability `epsilon` (one draw: uniform `[0, 1)` below `epsilon`).
    #[inline]
    pub(crate) fn rare(&mut self) -> bool {
        self.rng.chance(self.epsilon)
    }
}

#[cfg(test)]
pub(crate) mod conformance {
    //! Checks every registered policy must pass.
    use super::*;
    use crate::plugin::PluginConfig;

    pub fn ctx(sets: usize, ways: usize) -> ReplCtx {
        ReplCtx {
            sets,
            ways,
            seed: 1,
            component: "test/cache".into(),
            loc: "machine.l1d.replacement".into(),
            size_key: "machine.l1d.size_bytes".into(),
        }
    }

    pub fn touch(set: usize, way: usize) -> Touch {
        Touch { set, way, pc: VirtAddr(0), req: ReqKind::Load, task: TaskId(0) }
    }

    pub fn query(set: usize) -> VictimQuery<'static> {
        VictimQuery { set, pc: VirtAddr(0), req: ReqKind::Load, task: TaskId(0), locked: None }
    }

    #[test]
    fn every_policy_builds_with_defaults_and_rejects_unknown_params() {
        for name in ReplacementConfig::NAMES {
            let cfg = ReplacementConfig::parse(&PluginConfig::named(name), "machine.l1d.replacement").unwrap();
            assert_eq!(cfg.kind(), *name);
            // 64 sets: enough for the set-dueling policies' default 2 x 32 leaders.
            cfg.build(&ctx(64, 8)).unwrap();
            cfg.build(&ctx(0, 8)).unwrap();
            let raw = PluginConfig { kind: name.to_string(), params: serde_json::json!({"bogus": 1}) };
            match ReplacementConfig::parse(&raw, "machine.l1d.replacement") {
                Err(crate::Error::Config(issues)) => {
                    assert_eq!(issues[0].loc, "machine.l1d.replacement.params.bogus");
                    assert_eq!(issues[0].code, "unknown_field");
                }
                other => panic!("{name}: expected an unknown-field error, got {other:?}"),
            }
        }
    }

    #[test]
    fn unknown_policy_lists_the_registered_names() {
        let err = ReplacementConfig::parse(&PluginConfig::named("belady"), "machine.l2.replacement").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("machine.l2.replacement.kind"), "{text}");
        assert!(text.contains(&ReplacementConfig::NAMES.join(", ")), "{text}");
    }

    #[test]
    fn a_policy_that_calls_rehits_noops_decides_the_same_without_them() {
        // `exact` sees every hit; `short` misses the hits the machine's
        // shortcut skips: those on the line touched last (by a hit or a
        // fill). If the policy claims such hits change nothing, both must
        // choose the same victims.
        for name in ReplacementConfig::NAMES {
            let build =
                || ReplacementConfig::parse(&PluginConfig::named(name), "r").unwrap().build(&ctx(64, 8)).unwrap();
            let (mut exact, mut short) = (build(), build());
            if !exact.rehit_is_noop() {
                continue;
            }
            let mut rng = crate::util::rng::Rng::from_seed(5);
            for set in 0..4 {
                for way in 0..8 {
                    exact.on_fill(&touch(set, way));
                    short.on_fill(&touch(set, way));
                }
            }
            let mut last = (3, 7);
            for _ in 0..5000 {
                let set = rng.below(4) as usize;
                if rng.chance(0.3) {
                    // A repeat of the last touch, which the shortcut skips.
                    exact.on_hit(&touch(last.0, last.1));
                } else if rng.chance(0.6) {
                    let way = rng.below(8) as usize;
                    exact.on_hit(&touch(set, way));
                    short.on_hit(&touch(set, way));
                    last = (set, way);
                } else {
                    let q = VictimQuery { set, pc: VirtAddr(0), req: ReqKind::Load, task: TaskId(0), locked: None };
                    let (a, b) = (exact.victim(&q), short.victim(&q));
                    assert_eq!(a, b, "{name}");
                    for p in [&mut exact, &mut short] {
                        p.on_evict(&touch(set, a));
                        p.on_fill(&touch(set, a));
                    }
                    last = (set, a);
                }
            }
        }
    }

    #[test]
    fn every_policy_returns_only_evictable_ways() {
        for name in ReplacementConfig::NAMES {
            let mut p = ReplacementConfig::parse(&PluginConfig::named(name), "r").unwrap().build(&ctx(64, 8)).unwrap();
            for way in 0..8 {
                p.on_fill(&touch(1, way));
            }
            let mut locked = [true; 8];
            for free in 0..8 {
                locked[free] = false;
                for _ in 0..20 {
                    let q = VictimQuery {
                        set: 1,
                        pc: VirtAddr(0),
                        req: ReqKind::Load,
                        task: TaskId(0),
                        locked: Some(&locked),
                    };
                    let v = p.victim(&q);
                    assert!(v <= free, "{name} chose locked way {v} with ways 0..={free} free");
                    p.on_evict(&touch(1, v));
                    p.on_fill(&touch(1, v));
                }
            }
        }
    }
}
