//! `tlb-preserve`: save a task's L1 TLB entries when it is switched out and
//! restore them where it resumes (spec §3.3-3.7, dissertation chapter 4).
//!
//! At a task's `SwitchOut` the valid entries of the core's L1 data TLB (of
//! the task's address space, unless `asid_only = false`) are read out, and
//! a predictor selects which to keep: `all` (simple save and restore),
//! `aging` or `aging-total`. At its next `SwitchIn`, on the same core or
//! after a migration, the core's TLBs are flushed as `flush` says (the
//! spec's protocol: the task resumes on a core with no history) and the
//! saved entries are written into the L1 data TLB.
//!
//! Then, until the task is switched out again (or for `reuse_window_accesses`
//! of its references), every saved entry is labelled reused or not, and at
//! its first reuse by the level that served it (L1 TLB, L2 TLB, page walk);
//! every rejected entry that is reused is a false negative. Reading and
//! writing entries costs `save_cycles_per_entry` and
//! `restore_cycles_per_entry` each (the spec: one TLB read or write per
//! cycle), charged as the mechanism's cycles to the task and core.
//!
//! How the predictors see references: through [`Mechanism::on_access`], not
//! a bit array kept by the TLB. The hook needs no change on the machine's
//! per-reference path (runs without the mechanism are untouched), and the
//! reuse labels need every reference anyway. Its price is that the engine
//! runs references one by one while the mechanism is present (measured in
//! `docs/mechanisms.md`). Per-entry state lives here, by TLB position, and
//! is aged lazily: an entry records the window its state is current to and
//! catches up (one shift per window ended) only when it is touched or
//! selected, so a window's end costs nothing.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::aging::AgingParams;
use super::aging_total::AgingTotalParams;
use super::tlb_flush::{needs_tlb, TlbFlushParams};
use super::{AccessCtx, EventCtx, MechBuild, Mechanism, MechanismParams};
use crate::counters::TlbCounters;
use crate::error::{join_path, Error, Result};
use crate::events::Event;
use crate::mem::machine::Machine;
use crate::mem::tlb;
use crate::plugin::PluginConfig;
use crate::types::{AccessKind, Asid, CoreId, TaskId};
use crate::units::MAX_COST_CYCLES;
use crate::util::hash::U64Map;

/// Predictor state of one TLB entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Age {
    /// The history bit vector (`aging`) or the access counter (`aging-total`).
    pub value: u64,
    /// Referenced in the window `window` (the open one when last touched).
    pub referenced: bool,
    /// Index of the address space's window this state is current to.
    pub window: u64,
}

impl Age {
    /// A new entry in window `window`.
    pub fn new(window: u64) -> Age {
        Age { value: 0, referenced: false, window }
    }
}

/// `x >> n`, zero when `n` is 64 or more.
pub fn shr(x: u64, n: u64) -> u64 {
    if n >= 64 {
        0
    } else {
        x >> n
    }
}

/// A selection policy: which entries to save. Each works on one [`Age`] per
/// entry, updated on references and at the end of sampling windows.
pub trait Predictor: Send + std::fmt::Debug {
    /// References of an address space per sampling window; `None`: the
    /// predictor keeps no history (and sees no references).
    fn window_accesses(&self) -> Option<u64>;

    /// Whether a switch-out inside a window ends that window before the
    /// selection (the spec's mid-window option (a)).
    fn closes_window_at_switch(&self) -> bool {
        false
    }

    /// Whether an entry refilled by a page walk gets back the state it had
    /// when it left the TLBs, aged since (the spec's timestamp extension);
    /// otherwise it starts from zero.
    fn remembers_evicted(&self) -> bool {
        false
    }

    /// The entry was referenced (in the open window).
    fn touch(&self, age: &mut Age);

    /// `n >= 1` windows ended since `age` was current: the first is the one
    /// its `referenced` flag belongs to. Must clear `referenced`.
    fn close(&self, age: &mut Age, n: u64);

    /// Whether to save the entry.
    fn select(&self, age: &Age) -> bool;
}

/// Check the params a windowed predictor of `bits`-bit state (`what`: its
/// name) shares; returns the largest state, `2^bits - 1`.
pub fn check(loc: &str, what: &str, bits: u32, threshold: u64, window_accesses: u64) -> Result<u64> {
    let at = |key: &str| join_path(&join_path(loc, "params"), key);
    if !(1..=32).contains(&bits) {
        return Err(Error::config(at("bits"), "out_of_range", format!("expected 1 to 32, got {bits}")));
    }
    let most = (1u64 << bits) - 1;
    if threshold >= most {
        let message =
            format!("a {what} of {bits} bits is at most {most}, so a threshold of {threshold} selects nothing");
        return Err(Error::config(at("threshold"), "out_of_range", message));
    }
    if window_accesses == 0 {
        return Err(Error::config(at("window_accesses"), "out_of_range", "expected at least 1"));
    }
    Ok(most)
}

/// Bring `age` up to window `now` (close the windows ended since).
pub fn bring(p: &dyn Predictor, age: &mut Age, now: u64) {
    if age.window < now {
        p.close(age, now - age.window);
        age.referenced = false;
        age.window = now;
    }
}

/// Params of `all`: none.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AllParams {}

impl AllParams {
    /// Build the predictor.
    pub fn build(&self, _loc: &str) -> Result<Box<dyn Predictor>> {
        Ok(Box::new(All))
    }
}

/// Simple save and restore: every valid entry.
#[derive(Debug)]
struct All;

impl Predictor for All {
    fn window_accesses(&self) -> Option<u64> {
        None
    }

    fn touch(&self, _: &mut Age) {}

    fn close(&self, _: &mut Age, _: u64) {}

    fn select(&self, _: &Age) -> bool {
        true
    }
}

crate::register! {
    /// Selection policies of `tlb-preserve` (`select`).
    family "predictor", PredictorConfig,
    fn build(&self, loc: &str) -> Result<Box<dyn Predictor>>;
    "all" => All(AllParams),
    "aging" => Aging(AgingParams),
    "aging-total" => AgingTotal(AgingTotalParams),
}

/// Params of `tlb-preserve`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlbPreserveParams {
    /// Which entries to save: `{ kind = "all" | "aging" | "aging-total", params = {...} }`.
    pub select: PluginConfig,
    /// Save only entries of the task's address space.
    pub asid_only: bool,
    /// When the core's TLBs are flushed before a restore (as `tlb-flush`).
    pub flush: TlbFlushParams,
    /// Cycles to read one selected entry out at a switch-out.
    pub save_cycles_per_entry: u64,
    /// Cycles to write one entry back at a switch-in.
    pub restore_cycles_per_entry: u64,
    /// References of the task after a restore during which reuse is
    /// counted; default: until it is switched out again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reuse_window_accesses: Option<u64>,
}

impl Default for TlbPreserveParams {
    fn default() -> Self {
        TlbPreserveParams {
            select: PluginConfig::named("all"),
            asid_only: true,
            flush: TlbFlushParams::default(),
            save_cycles_per_entry: 1,
            restore_cycles_per_entry: 1,
            reuse_window_accesses: None,
        }
    }
}

impl MechanismParams for TlbPreserveParams {
    /// Type the predictor's params and fill in their defaults (called once,
    /// when the config is read; `loc` is the mechanism's path).
    fn resolve(&mut self, loc: &str) -> Result<()> {
        let select = PredictorConfig::parse(&self.select, &join_path(loc, "params.select"))?;
        self.select = select.to_raw();
        Ok(())
    }

    /// Build the mechanism.
    fn build(&self, ctx: &MechBuild) -> Result<Box<dyn Mechanism>> {
        needs_tlb(ctx)?;
        let at = ctx.at("select");
        let predictor = PredictorConfig::parse(&self.select, &at)?.build(&at)?;
        for (key, cycles) in [
            ("save_cycles_per_entry", self.save_cycles_per_entry),
            ("restore_cycles_per_entry", self.restore_cycles_per_entry),
        ] {
            if cycles > MAX_COST_CYCLES {
                return Err(Error::config(ctx.at(key), "out_of_range", format!("expected at most 2^40, got {cycles}")));
            }
        }
        if self.reuse_window_accesses == Some(0) {
            return Err(Error::config(ctx.at("reuse_window_accesses"), "out_of_range", "expected at least 1"));
        }
        Ok(Box::new(TlbPreserve::new(self.clone(), predictor)))
    }
}

super::counters! {
/// The counters of `Results.mechanisms` for `tlb-preserve`.
pub struct PreserveStats {
    /// Switch-outs at which entries were selected.
    snapshots,
    /// Switch-ins at which a snapshot was restored.
    restores,
    /// Valid L1 TLB entries considered, over restored snapshots.
    candidates,
    /// Entries selected and restored (`reused + unused`).
    saved,
    /// Entries the predictor rejected (`candidates - saved`).
    rejected,
    /// Saved entries referenced after the restore (true positives).
    reused,
    /// Saved entries not referenced.
    unused,
    /// Reused entries whose first reference hit the L1 TLB.
    reused_l1,
    /// ... hit the L2 TLB (evicted from L1 since the restore).
    reused_l2,
    /// ... needed a page walk (evicted from both).
    reused_walk,
    /// Rejected entries referenced after the restore.
    false_negatives,
    /// False negatives whose first reference hit the L1 TLB.
    false_negative_l1,
    /// ... hit the L2 TLB.
    false_negative_l2,
    /// ... needed a page walk.
    false_negative_walk,
    /// Entries of snapshots never restored (the task finished, the run ended).
    unrestored,
    /// Cycles reading entries out.
    save_cycles,
    /// Cycles writing entries back.
    restore_cycles,
    /// Both.
    cycles,
}
}

/// The level that served a translation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Served {
    L1,
    L2,
    Walk,
}

/// Entries saved at a switch-out, waiting for the switch-in.
struct Snapshot {
    saved: Vec<(u64, u64, Age)>,
    rejected: Vec<u64>,
}

/// Marks in [`Reuse::marks`].
const SAVED: u64 = 1;
const REJECTED: u64 = 2;
const SEEN: u64 = 3;

/// The labelling of one restored snapshot's entries.
struct Reuse {
    /// Key -> SAVED, REJECTED, or SEEN once referenced.
    marks: U64Map,
    saved: u64,
    reused: u64,
    /// References left in the window, if bounded.
    left: Option<u64>,
    /// The last key looked up (consecutive references share pages).
    last: u64,
}

#[derive(Default)]
struct TaskTrack {
    snapshot: Option<Snapshot>,
    reuse: Option<Reuse>,
    /// The task's TLB counters after its last reference: (L1 hits, L2 hits, walks).
    seen: (u64, u64, u64),
}

/// An address space's sampling windows.
#[derive(Debug, Clone, Copy, Default)]
struct Space {
    /// References in the open window.
    count: u64,
    /// Index of the open window (the spec's timestamp `TS`).
    index: u64,
}

/// Per-entry state of one core's L1 data TLB, by position.
struct CoreEntries {
    keys: Vec<u64>,
    ages: Vec<Age>,
}

struct TlbPreserve {
    params: TlbPreserveParams,
    predictor: Box<dyn Predictor>,
    window: Option<u64>,
    cores: Vec<Option<CoreEntries>>,
    spaces: Vec<Space>,
    /// State of entries that left an L1 TLB: carried to the L2 TLB, or
    /// (timestamp extension) to the page-table entry.
    away: HashMap<u64, Age>,
    tasks: Vec<TaskTrack>,
    stats: PreserveStats,
}

/// No key (the TLB's keys hold an asid below 4096 above bit 52).
const NO_KEY: u64 = u64::MAX;

impl TlbPreserve {
    fn new(params: TlbPreserveParams, predictor: Box<dyn Predictor>) -> TlbPreserve {
        TlbPreserve {
            window: predictor.window_accesses(),
            params,
            predictor,
            cores: Vec::new(),
            spaces: Vec::new(),
            away: HashMap::new(),
            tasks: Vec::new(),
            stats: PreserveStats::default(),
        }
    }

    fn task(&mut self, task: TaskId) -> &mut TaskTrack {
        let t = task.0 as usize;
        if self.tasks.len() <= t {
            self.tasks.resize_with(t + 1, TaskTrack::default);
        }
        &mut self.tasks[t]
    }

    fn space(&mut self, asid: Asid) -> &mut Space {
        let a = asid.0 as usize;
        if self.spaces.len() <= a {
            self.spaces.resize(a + 1, Space::default());
        }
        &mut self.spaces[a]
    }

    /// The entry state of `core`'s L1 data TLB, sized on first use.
    fn entries(&mut self, machine: &Machine, core: CoreId, dtlb: usize) -> &mut CoreEntries {
        let c = core.0 as usize;
        if self.cores.len() <= c {
            self.cores.resize_with(c + 1, || None);
        }
        self.cores[c].get_or_insert_with(|| {
            let n = machine.tlbs()[dtlb].capacity();
            CoreEntries { keys: vec![NO_KEY; n], ages: vec![Age::new(0); n] }
        })
    }

    /// Record that position `pos` now holds `key` with state `age`; the
    /// state of the entry it replaced goes with that entry.
    fn place(&mut self, machine: &Machine, core: CoreId, dtlb: usize, pos: usize, key: u64, age: Age) {
        let e = self.entries(machine, core, dtlb);
        let old = std::mem::replace(&mut e.keys[pos], key);
        let old_age = std::mem::replace(&mut e.ages[pos], age);
        if old != NO_KEY && old != key {
            self.away.insert(old, old_age);
        }
    }

    /// What served the task's last reference, from its TLB counters.
    fn served(&mut self, task: TaskId, now: &TlbCounters) -> Option<Served> {
        let seen = &mut self.task(task).seen;
        let before = *seen;
        *seen = (now.l1_hits, now.l2_hits, now.walks);
        if now.walks > before.2 {
            Some(Served::Walk)
        } else if now.l2_hits > before.1 {
            Some(Served::L2)
        } else if now.l1_hits > before.0 {
            Some(Served::L1)
        } else {
            None
        }
    }

    /// Label `key`'s reference (served by `served`) in the task's reuse window.
    fn observe(&mut self, task: TaskId, key: u64, served: Option<Served>) {
        let stats = &mut self.stats;
        let t = &mut self.tasks[task.0 as usize];
        let Some(r) = &mut t.reuse else { return };
        if key != r.last {
            r.last = key;
            let mark = r.marks.get(key);
            if mark == Some(SAVED) || mark == Some(REJECTED) {
                *r.marks.entry(key, 0) = SEEN;
                let (count, l1, l2, walk) = if mark == Some(SAVED) {
                    r.reused += 1;
                    (&mut stats.reused, &mut stats.reused_l1, &mut stats.reused_l2, &mut stats.reused_walk)
                } else {
                    let s = &mut *stats;
                    (
                        &mut s.false_negatives,
                        &mut s.false_negative_l1,
                        &mut s.false_negative_l2,
                        &mut s.false_negative_walk,
                    )
                };
                *count += 1;
                match served {
                    Some(Served::L1) => *l1 += 1,
                    Some(Served::L2) => *l2 += 1,
                    Some(Served::Walk) | None => *walk += 1,
                }
            }
        }
        if let Some(left) = &mut r.left {
            *left -= 1;
            if *left == 0 {
                Self::close_reuse(t, stats);
            }
        }
    }

    /// End the task's reuse window: saved entries not referenced are unused.
    fn close_reuse(t: &mut TaskTrack, stats: &mut PreserveStats) {
        if let Some(r) = t.reuse.take() {
            stats.unused += r.saved - r.reused;
        }
    }

    /// Update the predictor state of the entry `key` the task just referenced.
    fn age(&mut self, machine: &Machine, core: CoreId, dtlb: usize, asid: Asid, key: u64, served: Option<Served>) {
        let window = self.window.expect("only predictors with windows age entries");
        let now = self.space(asid).index;
        if let Some(pos) = machine.tlbs()[dtlb].position(key) {
            if self.entries(machine, core, dtlb).keys[pos] != key {
                // Filled now: from the L2 TLB, its state came along; from a
                // walk, it starts from zero unless the page table kept it.
                let kept = self.away.remove(&key);
                let walked = served == Some(Served::Walk) && !self.predictor.remembers_evicted();
                let age = kept.filter(|_| !walked).unwrap_or(Age::new(now));
                self.place(machine, core, dtlb, pos, key, age);
            }
            let e = self.cores[core.0 as usize].as_mut().expect("sized by entries()");
            bring(self.predictor.as_ref(), &mut e.ages[pos], now);
            self.predictor.touch(&mut e.ages[pos]);
        }
        let space = self.space(asid);
        space.count += 1;
        if space.count == window {
            space.count = 0;
            space.index += 1;
        }
    }

    /// Select the task's entries on the core it leaves; returns the cycles.
    fn save(&mut self, machine: &Machine, core: CoreId, task: TaskId, asid: Asid) -> u64 {
        self.task(task);
        Self::close_reuse(&mut self.tasks[task.0 as usize], &mut self.stats);
        let Some(dtlb) = machine.core_tlbs(core)[0] else { return 0 };
        if self.window.is_some() && self.predictor.closes_window_at_switch() {
            let space = self.space(asid);
            if space.count > 0 {
                space.count = 0;
                space.index += 1;
            }
        }
        let now = self.space(asid).index;
        let (mut saved, mut rejected) = (Vec::new(), Vec::new());
        self.entries(machine, core, dtlb);
        let e = self.cores[core.0 as usize].as_mut().expect("sized by entries()");
        let p = self.predictor.as_ref();
        for (pos, key, frame) in machine.tlbs()[dtlb].positioned() {
            if self.params.asid_only && tlb::asid_of(key) != asid {
                continue;
            }
            let age = if e.keys[pos] == key {
                bring(p, &mut e.ages[pos], now);
                e.ages[pos]
            } else {
                Age::new(now)
            };
            if p.select(&age) {
                saved.push((key, frame, age));
            } else {
                rejected.push(key);
            }
        }
        let cycles = saved.len() as u64 * self.params.save_cycles_per_entry;
        self.stats.snapshots += 1;
        self.stats.save_cycles += cycles;
        if let Some(old) = self.task(task).snapshot.replace(Snapshot { saved, rejected }) {
            self.stats.unrestored += old.saved.len() as u64;
        }
        cycles
    }

    /// Write the task's saved entries into the core it resumes on; returns the cycles.
    fn restore(&mut self, machine: &mut Machine, core: CoreId, task: TaskId) -> u64 {
        let Some(snapshot) = self.task(task).snapshot.take() else { return 0 };
        let Some(dtlb) = machine.core_tlbs(core)[0] else { return 0 };
        let mut marks = U64Map::default();
        for &(key, frame, age) in &snapshot.saved {
            machine.restore_tlb_entry(core, key, frame);
            if let Some(pos) = machine.tlbs()[dtlb].position(key) {
                self.place(machine, core, dtlb, pos, key, age);
            }
            marks.insert(key, SAVED);
        }
        for &key in &snapshot.rejected {
            marks.insert(key, REJECTED);
        }
        let (saved, rejected) = (snapshot.saved.len() as u64, snapshot.rejected.len() as u64);
        let s = &mut self.stats;
        s.restores += 1;
        s.saved += saved;
        s.rejected += rejected;
        s.candidates += saved + rejected;
        let cycles = saved * self.params.restore_cycles_per_entry;
        s.restore_cycles += cycles;
        let left = self.params.reuse_window_accesses;
        self.task(task).reuse = Some(Reuse { marks, saved, reused: 0, left, last: NO_KEY });
        cycles
    }
}

impl Mechanism for TlbPreserve {
    fn name(&self) -> &str {
        "tlb-preserve"
    }

    fn on_event(&mut self, mut ctx: EventCtx<'_>) -> Result<u64> {
        let (Some(core), Some(task), Some(asid)) = (ctx.record.core, ctx.record.task, ctx.asid) else { return Ok(0) };
        match ctx.record.event {
            Event::SwitchOut => Ok(self.save(ctx.machine, core, task, asid)),
            Event::Migrate { .. } => {
                self.params.flush.apply(&mut ctx);
                Ok(0)
            }
            Event::SwitchIn => {
                self.params.flush.apply(&mut ctx);
                Ok(self.restore(ctx.machine, core, task))
            }
            Event::Tick | Event::Mark => Ok(0),
        }
    }

    fn wants_accesses(&self) -> bool {
        true
    }

    fn on_access(&mut self, ctx: AccessCtx<'_>) -> u32 {
        let [dtlb, itlb, _] = ctx.machine.core_tlbs(ctx.core);
        let Some(dtlb) = dtlb else { return 0 };
        if ctx.access.kind == AccessKind::Ifetch && itlb.is_some() {
            return 0;
        }
        let key = tlb::key(ctx.asid, ctx.access.addr.0 >> ctx.machine.page_shift());
        let served = self.served(ctx.task, &ctx.machine.tasks[ctx.task.0 as usize].tlb);
        self.observe(ctx.task, key, served);
        if self.window.is_some() {
            self.age(ctx.machine, ctx.core, dtlb, ctx.asid, key, served);
        }
        0
    }

    fn reset_stats(&mut self) {
        self.stats = PreserveStats::default();
        for t in &mut self.tasks {
            // Windows open across the end of warm-up are not counted, so
            // that `reused + unused = saved` holds; the machine's counters
            // start again from zero.
            t.reuse = None;
            t.seen = (0, 0, 0);
        }
    }

    fn results(&mut self) -> Vec<(&'static str, u64)> {
        for t in &mut self.tasks {
            Self::close_reuse(t, &mut self.stats);
            if let Some(s) = t.snapshot.take() {
                self.stats.unrestored += s.saved.len() as u64;
            }
        }
        self.stats.cycles = self.stats.save_cycles + self.stats.restore_cycles;
        self.stats.named()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;
    use crate::events::EventRecord;
    use crate::mech::MechanismConfig;
    use crate::results::Results;
    use crate::types::Access;
    use serde_json::{json, Value};

    /// Two tasks taking turns on one core of the TLB study's machine
    /// (256-entry 4-way L1 TLB, 512-entry L2 TLB filled with L1 victims),
    /// each walking `pages` pages, one reference per page, in slices of
    /// 1000 references; `mechanisms` as given.
    fn turns(pages: u64, mechanisms: Value) -> Results {
        let stream = json!({"kind": "stream", "params": {
            "accesses": 20_000, "working_set_bytes": pages * 4096, "stride_bytes": 4096,
            "instructions_per_access": 3.0, "store_fraction": 0.0,
        }});
        let config = json!({
            "machine": {"preset": "migration-tlb", "cores_per_socket": 1},
            "tasks": [{"workload": stream, "count": 2}],
            "scheduler": {"kind": "round-robin", "params": {"quantum": "3000 instr"}},
            "mechanisms": mechanisms,
        });
        let valid = crate::config::from_value(config).unwrap_or_else(|e| panic!("{e}"));
        Engine::new(valid, None).and_then(|mut e| e.run(&mut |_| Ok(()))).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The counters of mechanism `i` as a JSON table.
    fn stats(r: &Results, i: usize) -> Value {
        r.mechanisms[i].stats.iter().map(|&(k, v)| (k.to_string(), json!(v))).collect()
    }

    fn l1_misses(r: &Results) -> Vec<u64> {
        r.tasks.iter().map(|t| t.stats.tlb.l1_misses).collect()
    }

    #[test]
    fn a_working_set_that_fits_loses_nothing_with_save_and_restore() {
        let pages = 64;
        let kept = turns(pages, json!([]));
        let flushed = turns(pages, json!([{"kind": "tlb-flush"}]));
        let preserved = turns(pages, json!([{"kind": "tlb-preserve"}]));
        let switches = flushed.tasks[0].switches;
        assert!(switches >= 10, "{switches}");
        // Tagged TLBs keep both tasks' pages; flushed, a task misses its
        // whole working set at every switch-in; preserved, only the first time.
        assert_eq!(l1_misses(&kept), [pages, pages]);
        assert_eq!(l1_misses(&flushed), [pages * switches, pages * switches]);
        assert_eq!(l1_misses(&preserved), [pages, pages]);
        let s = stats(&preserved, 0);
        let restores = 2 * (switches - 1);
        assert_eq!(
            (&s["restores"], &s["saved"], &s["candidates"]),
            (&json!(restores), &json!(pages * restores), &s["saved"])
        );
        assert_eq!((&s["reused"], &s["reused_l1"], &s["unused"]), (&s["saved"], &s["saved"], &json!(0)));
        assert_eq!((&s["rejected"], &s["false_negatives"]), (&json!(0), &json!(0)));
        assert_eq!(s["snapshots"], 2 * switches, "the last switch-out of each task is never restored");
        assert_eq!(s["unrestored"], 2 * pages);
        assert_eq!(stats(&flushed, 0)["flushes"], 2 * switches);
    }

    #[test]
    fn the_cost_model_charges_entries_times_cycles() {
        let pages = 40;
        let mech =
            json!([{"kind": "tlb-preserve", "params": {"save_cycles_per_entry": 3, "restore_cycles_per_entry": 5}}]);
        let r = turns(pages, mech);
        let s = stats(&r, 0);
        let n = |k: &str| s[k].as_u64().unwrap();
        assert_eq!(n("save_cycles"), 3 * pages * n("snapshots"));
        assert_eq!(n("restore_cycles"), 5 * n("saved"));
        assert_eq!(n("cycles"), n("save_cycles") + n("restore_cycles"));
        let overhead: u64 = r.tasks.iter().map(|t| t.overhead_cycles).sum();
        assert_eq!(overhead, n("cycles"), "charged to the tasks");
    }

    #[test]
    fn aging_4_0_and_5_1_select_the_same_entries_in_a_run() {
        let run = |bits: u32, threshold: u64, mid: &str| {
            let zipf = json!({"kind": "zipf", "params": {"accesses": 60_000, "working_set_bytes": "4MiB"}});
            let select = json!({"kind": "aging", "params": {
                "bits": bits, "threshold": threshold, "window_accesses": 500, "mid_window": mid}});
            let config = json!({
                "machine": {"preset": "migration-tlb"},
                "tasks": [{"workload": zipf, "count": 3}],
                "scheduler": {"kind": "forced", "params": {"every": "7000 instr", "quantum": "4000 instr", "destination": "local"}},
                "mechanisms": [{"kind": "tlb-preserve", "params": {"select": select}}],
            });
            let valid = crate::config::from_value(config).unwrap();
            Engine::new(valid, None).unwrap().run(&mut |_| Ok(())).unwrap()
        };
        for mid in ["close", "last"] {
            let (a, b) = (run(4, 0, mid), run(5, 1, mid));
            let (sa, sb) = (stats(&a, 0), stats(&b, 0));
            assert_eq!(sa, sb, "mid_window = {mid}");
            let n = |k: &str| sa[k].as_u64().unwrap();
            assert!(n("rejected") > 0 && n("saved") > 0 && n("false_negatives") > 0, "{sa}");
            assert_eq!(l1_misses(&a), l1_misses(&b));
            assert_ne!(stats(&run(4, 1, mid), 0), sa, "a different pair does differ");
        }
    }

    /// A machine and the mechanism, driven by hand.
    struct Bench {
        machine: Machine,
        mech: Box<dyn Mechanism>,
    }

    impl Bench {
        fn new(tlb: Value, params: Value) -> Bench {
            let config = json!({
                "machine": {"preset": "migration-tlb", "tlb": tlb},
                "workload": {"kind": "stream"},
                "mechanisms": [{"kind": "tlb-preserve", "params": params}],
            });
            let valid = crate::config::from_value(config).unwrap_or_else(|e| panic!("{e}"));
            let mut machine = Machine::new(&valid.config.machine, 1, "machine").unwrap();
            machine.add_tasks(2);
            machine.set_address_spaces(&[Asid(0), Asid(1)]);
            let mech = valid.mechanisms[0].build(&valid.mech_build(0)).unwrap();
            Bench { machine, mech }
        }

        fn event(&mut self, event: Event, task: u32) -> u64 {
            let record = EventRecord { time: 0, core: Some(CoreId(0)), task: Some(TaskId(task)), event };
            let ctx =
                EventCtx { machine: &mut self.machine, record: &record, asid: Some(Asid(task)), published: &mut None };
            self.mech.on_event(ctx).unwrap()
        }

        fn touch(&mut self, task: u32, pages: &[u64]) {
            for &page in pages {
                let a = Access::load(0x10_0000_0000 + page * 4096, 8);
                let (core, task, asid) = (CoreId(0), TaskId(task), Asid(task));
                let stall_cycles = self.machine.access(core, task, asid, &a);
                let ctx = AccessCtx { machine: &mut self.machine, core, task, asid, access: &a, stall_cycles };
                self.mech.on_access(ctx);
            }
        }

        fn stats(&mut self) -> Value {
            self.mech.results().into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect()
        }
    }

    #[test]
    fn rejected_entries_that_are_reused_are_false_negatives() {
        // One history bit, windows of 4 references: at the switch-out only
        // page 5, referenced in the last window, is selected.
        let select = json!({"kind": "aging", "params": {"bits": 1, "threshold": 0, "window_accesses": 4}});
        let mut b = Bench::new(json!({}), json!({"select": select, "save_cycles_per_entry": 2}));
        b.touch(0, &[1, 2, 3, 4, 5, 5, 5, 5]);
        assert_eq!(b.event(Event::SwitchOut, 0), 2, "one entry saved at 2 cycles");
        b.touch(1, &[1, 2, 3]);
        assert_eq!(b.event(Event::SwitchIn, 0), 1);
        b.touch(0, &[5, 1, 2, 9, 1]);
        b.event(Event::SwitchOut, 0);
        let s = b.stats();
        assert_eq!((&s["candidates"], &s["saved"], &s["rejected"]), (&json!(5), &json!(1), &json!(4)));
        assert_eq!((&s["reused"], &s["reused_l1"], &s["unused"]), (&json!(1), &json!(1), &json!(0)));
        assert_eq!((&s["false_negatives"], &s["false_negative_walk"]), (&json!(2), &json!(2)));
    }

    #[test]
    fn first_reuse_is_labelled_by_the_level_that_served_it() {
        // A fully associative 4-entry L1 TLB over a 4-entry L2 TLB of its
        // victims: of the four pages restored, page 1 is pushed to the L2
        // TLB by one new page and page 2 out of both by five.
        let tlb = json!({"l1d": {"entries": 4, "ways": 4}, "l2": {"entries": 4, "ways": 4}});
        let mut b = Bench::new(tlb, json!({}));
        b.touch(0, &[1, 2, 3, 4]);
        b.event(Event::SwitchOut, 0);
        b.event(Event::SwitchIn, 0);
        b.touch(0, &[3, 4, 10, 1, 11, 12, 13, 14, 15, 2]);
        b.event(Event::SwitchOut, 0);
        let s = b.stats();
        assert_eq!(s["saved"], 4);
        assert_eq!((&s["reused_l1"], &s["reused_l2"], &s["reused_walk"]), (&json!(2), &json!(1), &json!(1)));
    }

    #[test]
    fn timestamps_give_an_entry_evicted_from_both_levels_its_aged_history() {
        // Page 1 is referenced in window 0 (of 2 references), then pushed out
        // of both 4-entry TLBs by 8 other pages (4 windows), then referenced
        // again. With timestamps its history comes back (0x80 >> 4 = 0x08)
        // and, selecting on the last completed window, it is saved; without,
        // it restarts from zero and is not (page 1 alone is referenced after
        // the restore, so `reused` tells).
        let tlb = json!({"l1d": {"entries": 4, "ways": 4}, "l2": {"entries": 4, "ways": 4}});
        for (timestamps, reused) in [(true, 1), (false, 0)] {
            let select = json!({"kind": "aging", "params": {
                "bits": 8, "threshold": 0, "window_accesses": 2, "mid_window": "last", "timestamps": timestamps}});
            let mut b = Bench::new(tlb.clone(), json!({"select": select}));
            b.touch(0, &[1, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
            b.touch(0, &[1]);
            b.event(Event::SwitchOut, 0);
            b.event(Event::SwitchIn, 0);
            b.touch(0, &[1]);
            let s = b.stats();
            assert_eq!(s["reused"], reused, "timestamps = {timestamps}: {s}");
            assert_eq!(s["false_negatives"], 1 - reused);
        }
    }

    #[test]
    fn bad_params_name_the_key() {
        let check = |mech: Value, loc: &str| {
            let config = json!({"workload": {"kind": "stream"}, "mechanisms": [{"kind": "tlb-flush"}, mech]});
            let err = crate::config::from_value(config).err().unwrap().to_string();
            assert!(err.contains(loc), "{loc} in {err}");
        };
        check(json!({"kind": "tlb-preserv"}), "mechanisms[1].kind: unknown mechanism 'tlb-preserv'");
        check(json!({"kind": "tlb-preserve", "params": {"sav_cycles": 1}}), "mechanisms[1].params.sav_cycles");
        check(json!({"kind": "tlb-preserve", "params": {"flush": {"on": "often"}}}), "mechanisms[1].params.flush.on");
        let select = json!({"kind": "aging", "params": {"bits": 4, "threshold": 20}});
        check(
            json!({"kind": "tlb-preserve", "params": {"select": select}}),
            "mechanisms[1].params.select.params.threshold",
        );
        let select = json!({"kind": "aging", "params": {"windows": 4}});
        check(
            json!({"kind": "tlb-preserve", "params": {"select": select}}),
            "mechanisms[1].params.select.params.windows",
        );
        check(
            json!({"kind": "tlb-preserve", "params": {"select": {"kind": "lru"}}}),
            "mechanisms[1].params.select.kind",
        );
        let config = json!({"machine": {"tlb": false}, "workload": {"kind": "stream"}, "mechanisms": [{"kind": "tlb-preserve"}]});
        let err = crate::config::from_value(config).err().unwrap().to_string();
        assert!(err.contains("mechanisms[0].kind: this mechanism needs TLBs"), "{err}");
    }

    #[test]
    fn the_resolved_config_fills_in_the_predictor_defaults() {
        let config = json!({"workload": {"kind": "stream"}, "mechanisms": [{"kind": "tlb-preserve", "params": {"select": {"kind": "aging"}}}]});
        let valid = crate::config::from_value(config).unwrap();
        let MechanismConfig::TlbPreserve(p) = &valid.mechanisms[0] else { panic!() };
        assert_eq!(p.select.params["bits"], 4);
        assert_eq!(valid.to_json()["mechanisms"][0]["params"]["select"]["params"]["window_accesses"], 1_000_000);
    }
}
