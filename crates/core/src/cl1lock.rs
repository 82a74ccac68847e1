//! Level-1 cache locking in a multicore (seed 004, part A; spec
//! cache-locking.md, sections 2 and 3.1): jobs run in batches of one per
//! core on private I1 and D1 caches and a shared L2, each core's I1 with
//! some of its ways locked by one of the dissertation's strategies; the
//! result is the mean delay per task.
//!
//! **Time.** A core charges one unit per instruction fetched, one more for
//! a level-1 miss that the L2 serves, and 1 + 15 for one that memory
//! serves (spec 2.1: the L2's bus is 15 times slower). Cores run side by
//! side: the next reference is always the one of the core whose clock is
//! earliest, so the shared L2 sees their references in time order. A
//! task's delay is its clock when its job ends; a batch lasts as long as
//! its slowest task, and the mean delay per task is the batches' lengths
//! summed over the tasks (spec 2.4).
//!
//! **BAMI** (spec 2.2): each job's I1 misses per block, from a profile of
//! the job alone on an unlocked LRU I1 of the same geometry (the software
//! stand-in for Heptane's analysis).
//!
//! **Strategies** (spec 2.3; the decisions where it is silent):
//! - `none`: nothing preloaded or locked, LRU victims;
//! - `random`: at each batch every I1 is preloaded with random blocks of
//!   its job's code and the L2 with random blocks of the batch's jobs; a
//!   core whose job's code is larger than its I1 locks a random number of
//!   ways (1 to half), or `lock_ways` when given, whatever the job; random
//!   victims;
//! - `static`: once, before the first batch, every I1 is preloaded from the
//!   BAMIs of all the queued jobs together (most misses first) and core 0
//!   picks one number of ways for every core (the one that a profile of
//!   every job on one core misses least with); the L2 is preloaded from
//!   the batch's BAMIs at each batch; victims are the blocks with the
//!   fewest BAMI misses (ties to the least recently used);
//! - `dynamic`: at each batch every I1 is preloaded from its own job's BAMI
//!   and the L2 from the batch's; each core picks its own number of ways
//!   (the one its job alone misses least with); fewest-misses victims.
//!
//! Locking is way locking (ways 0 to k - 1 of every set, which the preload
//! filled first), built on the caches' lock bits ([`Cache::lock_ways`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Issues, Result};
use crate::hcache::for_each_reference;
use crate::mem::cache::{Cache, CacheParams, Filled};
use crate::mem::replacement::ReqKind;
use crate::mem::tags::Slot;
use crate::plugin::PluginConfig;
use crate::types::{AccessKind, LineAddr, TaskId, VirtAddr};
use crate::units::ByteSize;
use crate::util::hash::U64Map;
use crate::util::rng::Rng;

/// Params of a run (spec 2.1's system by default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LockingParams {
    pub cores: u32,
    /// Each of a core's I1 and D1.
    pub l1_bytes: ByteSize,
    pub l1_ways: u32,
    pub line_bytes: u32,
    pub l2_bytes: ByteSize,
    pub l2_ways: u32,
    /// Units a level-1 miss costs when the L2 serves it, and what memory adds.
    pub l2_units: u64,
    pub memory_units: u64,
    pub strategy: Strategy,
    /// Ways every core locks (random: whatever its job); none: the strategy decides.
    pub lock_ways: Option<u32>,
    pub seed: u64,
}

impl Default for LockingParams {
    fn default() -> Self {
        LockingParams {
            cores: 4,
            l1_bytes: ByteSize(4 << 10),
            l1_ways: 8,
            line_bytes: 128,
            l2_bytes: ByteSize(1 << 20),
            l2_ways: 8,
            l2_units: 1,
            memory_units: 15,
            strategy: Strategy::None,
            lock_ways: None,
            seed: 1,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    None,
    Random,
    Static,
    Dynamic,
}

/// One task's run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskRun {
    pub job: u32,
    pub trace: String,
    pub batch: u32,
    pub core: u32,
    pub delay: u64,
    pub instructions: u64,
    pub i1_misses: u64,
    pub d1_misses: u64,
    pub l2_misses: u64,
    pub locked_ways: u32,
    /// The job's code: distinct blocks fetched, in bytes.
    pub code_bytes: u64,
}

/// A run: its tasks and the mean delay per task.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LockingRun {
    pub tasks: Vec<TaskRun>,
    pub mean_delay: f64,
}

impl LockingParams {
    pub fn validate(&self) -> Result<()> {
        let mut issues = Issues::default();
        let line = self.line_bytes as u64;
        issues.check(line.is_power_of_two(), "line_bytes", "out_of_range", "expected a power of two");
        issues.check(self.cores >= 1, "cores", "out_of_range", "expected at least 1 core");
        for (key, bytes, ways) in
            [("l1_bytes", self.l1_bytes.0, self.l1_ways), ("l2_bytes", self.l2_bytes.0, self.l2_ways)]
        {
            let whole = line.is_power_of_two() && ways > 0 && bytes % (line * ways as u64) == 0;
            let sets = if whole { bytes / line / ways as u64 } else { 0 };
            issues.check(
                sets >= 1 && sets.is_power_of_two(),
                key,
                "out_of_range",
                format!("{bytes} B of {ways}-way sets of {line} B lines: expected a power-of-two number of sets"),
            );
        }
        if let Some(k) = self.lock_ways {
            issues.check(
                k < self.l1_ways,
                "lock_ways",
                "out_of_range",
                format!("{k} of {} ways: one must stay unlocked", self.l1_ways),
            );
        }
        issues.finish()
    }
}

/// A job: its references (kind, block) and its BAMI (shared by the jobs
/// of one trace).
#[derive(Clone)]
struct Job {
    refs: std::rc::Rc<Vec<(AccessKind, u64)>>,
    /// Code blocks, most BAMI misses first (ties to the lower block), and the misses.
    bami: Vec<(u64, u64)>,
    misses: U64Map,
    code: Vec<u64>,
}

fn cache(bytes: u64, ways: u32, line: u32, seed: u64) -> Cache {
    let params = CacheParams {
        size_bytes: ByteSize(bytes),
        ways,
        line_bytes: line,
        replacement: PluginConfig::named("lru"),
        ..CacheParams::default()
    };
    Cache::new(&params, 64, seed, "cl1lock", "cl1lock").expect("validated geometry")
}

fn req(kind: ReqKind) -> crate::mem::cache::Req {
    crate::mem::cache::Req { kind, pc: VirtAddr(0), task: TaskId(0) }
}

/// An I1 whose victims the model picks (LRU, random or fewest BAMI misses).
struct Icache {
    cache: Cache,
    /// Last use of each slot.
    used: Vec<u64>,
    clock: u64,
    victims: Victims,
}

#[derive(Clone, Copy, PartialEq)]
enum Victims {
    Lru,
    Random,
    FewestMisses,
}

impl Icache {
    fn new(p: &LockingParams, victims: Victims) -> Icache {
        let cache = cache(p.l1_bytes.0, p.l1_ways, p.line_bytes, p.seed);
        let used = vec![0; cache.sets() * cache.ways()];
        Icache { cache, used, clock: 0, victims }
    }

    /// Mark `slot` the most recently used.
    fn stamp(&mut self, slot: Slot) {
        self.clock += 1;
        self.used[slot.set * self.cache.ways() + slot.way] = self.clock;
    }

    /// Mark `line` (just filled, if it was) the most recently used.
    fn stamp_line(&mut self, line: u64) {
        if let Some(slot) = self.cache.find(LineAddr(line)) {
            self.stamp(slot);
        }
    }

    /// A fetch of `line`: whether it hit.
    fn access(&mut self, line: u64, misses: &U64Map, rng: &mut Rng) -> bool {
        let r = req(ReqKind::Ifetch);
        if let Some(slot) = self.cache.find(LineAddr(line)) {
            self.cache.hit(slot, &r);
            self.stamp(slot);
            return true;
        }
        self.cache.miss(LineAddr(line), &r);
        self.install(line, misses, rng);
        false
    }

    /// Put `line` in, choosing the victim of a full set (none if every way is locked).
    fn install(&mut self, line: u64, misses: &U64Map, rng: &mut Rng) {
        let (set, ways) = (self.cache.set_of(LineAddr(line)), self.cache.ways());
        let slots = (0..ways).map(|way| Slot { set, way });
        if slots.clone().all(|s| self.cache.line_at(s).is_some()) {
            let open: Vec<Slot> = slots.filter(|&s| !self.cache.is_locked(s)).collect();
            if open.is_empty() {
                return;
            }
            let at = |s: &Slot| self.used[s.set * ways + s.way];
            let victim = match self.victims {
                Victims::Lru => *open.iter().min_by_key(|s| at(s)).expect("open"),
                Victims::Random => open[rng.below(open.len() as u64) as usize],
                Victims::FewestMisses => *open
                    .iter()
                    .min_by_key(|s| (misses.get(self.cache.line_at(**s).expect("full").0).unwrap_or(0), at(s)))
                    .expect("open"),
            };
            self.cache.take(victim);
        }
        if let Filled::Placed(_) = self.cache.fill(LineAddr(line), false, &req(ReqKind::Ifetch)) {
            self.stamp_line(line);
        }
    }

    /// Empty the I1, preload `lines` in order (each into the first free way
    /// of its set; a line whose set is full is left out, so nothing preloaded
    /// is evicted by what comes after it) and lock ways `0..k`.
    fn preload_and_lock(&mut self, lines: impl Iterator<Item = u64>, k: u32) {
        self.cache.unlock_all();
        let mut out = Vec::new();
        self.cache.remove(crate::mem::cache::Scope::All, &mut out);
        for line in lines {
            if self.cache.has_room(LineAddr(line)) && self.cache.find(LineAddr(line)).is_none() {
                self.cache.fill(LineAddr(line), false, &req(ReqKind::Ifetch));
                self.stamp_line(line);
            }
        }
        self.cache.lock_ways(k as usize);
    }
}

/// A job of references (kind, block), its BAMI profiled.
fn job(p: &LockingParams, refs: Vec<(AccessKind, u64)>) -> Job {
    let mut profile = Icache::new(p, Victims::Lru);
    let (mut misses, mut code) = (U64Map::default(), Vec::new());
    let mut seen = crate::util::hash::SeenSet::default();
    let mut rng = Rng::from_seed(0);
    for &(kind, line) in &refs {
        if kind == AccessKind::Ifetch {
            if seen.insert(line) {
                code.push(line);
            }
            if !profile.access(line, &U64Map::default(), &mut rng) {
                *misses.entry(line, 0) += 1;
            }
        }
    }
    let mut bami: Vec<(u64, u64)> = code.iter().map(|&l| (l, misses.get(l).unwrap_or(0))).collect();
    bami.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Job { refs: refs.into(), bami, misses, code }
}

fn read(path: &Path, line_bytes: u32) -> Result<Vec<(AccessKind, u64)>> {
    let shift = line_bytes.trailing_zeros();
    let mut out = Vec::new();
    for_each_reference(path, |a| out.push((a.kind, a.addr.0 >> shift)))?;
    Ok(out)
}

/// I1 misses of `job` alone on an I1 preloaded with `order` and `k` ways
/// locked, fewest-misses victims: what a core or core 0 weighs.
fn alone(p: &LockingParams, job: &Job, order: &[u64], misses: &U64Map, k: u32) -> u64 {
    let mut i1 = Icache::new(p, Victims::FewestMisses);
    i1.preload_and_lock(order.iter().copied(), k);
    let mut rng = Rng::from_seed(0);
    job.refs.iter().filter(|r| r.0 == AccessKind::Ifetch).filter(|r| !i1.access(r.1, misses, &mut rng)).count() as u64
}

/// Run the jobs `traces` in batches of `cores`, in order.
pub fn run(p: &LockingParams, traces: &[PathBuf]) -> Result<LockingRun> {
    p.validate()?;
    if traces.is_empty() {
        return Err(Error::config("traces", "out_of_range", "give at least one job's trace"));
    }
    // A trace queued several times is read and profiled once.
    let mut read_once: std::collections::HashMap<&PathBuf, Job> = Default::default();
    let mut jobs = Vec::with_capacity(traces.len());
    for t in traces {
        if !read_once.contains_key(t) {
            read_once.insert(t, job(p, read(t, p.line_bytes)?));
        }
        jobs.push(read_once[t].clone());
    }
    let mut run = simulate(p, &jobs);
    for t in run.tasks.iter_mut() {
        t.trace = traces[t.job as usize].display().to_string();
    }
    Ok(run)
}

fn simulate(p: &LockingParams, jobs: &[Job]) -> LockingRun {
    let cores = p.cores as usize;
    let mut rng = Rng::for_component(p.seed, "cl1lock");
    let victims = match p.strategy {
        Strategy::None => Victims::Lru,
        Strategy::Random => Victims::Random,
        Strategy::Static | Strategy::Dynamic => Victims::FewestMisses,
    };
    let mut i1: Vec<Icache> = (0..cores).map(|_| Icache::new(p, victims)).collect();
    let mut d1: Vec<Cache> = (0..cores).map(|c| cache(p.l1_bytes.0, p.l1_ways, p.line_bytes, c as u64)).collect();
    let mut l2 = cache(p.l2_bytes.0, p.l2_ways, p.line_bytes, p.seed);
    let l1_lines = p.l1_bytes.0 / p.line_bytes as u64;
    let half = p.l1_ways / 2;
    // Static: every queued job's BAMI together, and one k for all.
    let mut merged = U64Map::default();
    let mut order: Vec<u64> = Vec::new();
    let mut static_k = 0;
    if p.strategy == Strategy::Static {
        for job in jobs {
            for &(line, n) in &job.bami {
                if merged.get(line).is_none() {
                    order.push(line);
                }
                *merged.entry(line, 0) += n;
            }
        }
        order.sort_by(|a, b| merged.get(*b).cmp(&merged.get(*a)).then(a.cmp(b)));
        let code: u64 = jobs.iter().map(|j| j.code.len() as u64).sum();
        let k = p.lock_ways.unwrap_or_else(|| match code > l1_lines {
            false => 0,
            true => (0..=half)
                .min_by_key(|&k| distinct(jobs).iter().map(|&(j, n)| n * alone(p, j, &order, &merged, k)).sum::<u64>())
                .expect("k"),
        });
        for c in i1.iter_mut() {
            c.preload_and_lock(order.iter().copied(), k);
        }
        static_k = k;
    }
    // Dynamic: the ways each distinct job locks best with, found once.
    let mut chosen: std::collections::HashMap<*const Vec<(AccessKind, u64)>, u32> = Default::default();
    let mut tasks = Vec::new();
    let mut total = 0u64;
    for (b, batch) in jobs.chunks(cores).enumerate() {
        // Preloads and locks of this batch.
        let mut locked = vec![0u32; batch.len()];
        match p.strategy {
            Strategy::None => {}
            Strategy::Static => locked.fill(static_k),
            Strategy::Random => {
                for (c, job) in batch.iter().enumerate() {
                    let mut code = job.code.clone();
                    shuffle(&mut code, &mut rng);
                    let k = p.lock_ways.unwrap_or_else(|| {
                        if job.code.len() as u64 > l1_lines && half > 0 {
                            1 + rng.below(half as u64) as u32
                        } else {
                            0
                        }
                    });
                    i1[c].preload_and_lock(code.into_iter(), k);
                    locked[c] = k;
                }
                let mut blocks: Vec<u64> = batch.iter().flat_map(|j| j.refs.iter().map(|r| r.1)).collect();
                blocks.sort_unstable();
                blocks.dedup();
                shuffle(&mut blocks, &mut rng);
                preload(&mut l2, blocks.into_iter());
            }
            Strategy::Dynamic => {
                for (c, job) in batch.iter().enumerate() {
                    let own: Vec<u64> = job.bami.iter().map(|b| b.0).collect();
                    let k = p.lock_ways.unwrap_or_else(|| match job.code.len() as u64 > l1_lines {
                        false => 0,
                        true => *chosen.entry(std::rc::Rc::as_ptr(&job.refs)).or_insert_with(|| {
                            (0..=half).min_by_key(|&k| alone(p, job, &own, &job.misses, k)).expect("k")
                        }),
                    });
                    i1[c].preload_and_lock(own.into_iter(), k);
                    locked[c] = k;
                }
            }
        }
        if matches!(p.strategy, Strategy::Static | Strategy::Dynamic) {
            let mut ranked: Vec<(u64, u64)> = batch.iter().flat_map(|j| j.bami.iter().copied()).collect();
            ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            preload(&mut l2, ranked.into_iter().map(|r| r.0));
        }
        // The batch, in time order.
        let mut at = vec![0usize; batch.len()];
        let mut clock = vec![0u64; batch.len()];
        let mut counts = vec![[0u64; 4]; batch.len()]; // instructions, i1, d1, l2 misses
        while let Some(c) = (0..batch.len()).filter(|&c| at[c] < batch[c].refs.len()).min_by_key(|&c| (clock[c], c)) {
            let (kind, line) = batch[c].refs[at[c]];
            at[c] += 1;
            let misses = if p.strategy == Strategy::Static { &merged } else { &batch[c].misses };
            let hit = match kind {
                AccessKind::Ifetch => {
                    counts[c][0] += 1;
                    clock[c] += 1;
                    i1[c].access(line, misses, &mut rng)
                }
                _ => {
                    let r = req(kind.into());
                    match d1[c].find(LineAddr(line)) {
                        Some(slot) => {
                            d1[c].hit(slot, &r);
                            true
                        }
                        None => {
                            d1[c].miss(LineAddr(line), &r);
                            if let Filled::Placed(Some(ev)) = d1[c].fill(LineAddr(line), kind == AccessKind::Store, &r)
                            {
                                if ev.dirty {
                                    writeback(&mut l2, ev.line);
                                }
                            }
                            false
                        }
                    }
                }
            };
            if hit {
                continue;
            }
            counts[c][if kind == AccessKind::Ifetch { 1 } else { 2 }] += 1;
            clock[c] += p.l2_units;
            let r = req(kind.into());
            match l2.find(LineAddr(line)) {
                Some(slot) => l2.hit(slot, &r),
                None => {
                    l2.miss(LineAddr(line), &r);
                    l2.fill(LineAddr(line), false, &r);
                    counts[c][3] += 1;
                    clock[c] += p.memory_units;
                }
            }
        }
        total += clock.iter().copied().max().unwrap_or(0);
        for (c, job) in batch.iter().enumerate() {
            tasks.push(TaskRun {
                job: (b * cores + c) as u32,
                trace: String::new(),
                batch: b as u32,
                core: c as u32,
                delay: clock[c],
                instructions: counts[c][0],
                i1_misses: counts[c][1],
                d1_misses: counts[c][2],
                l2_misses: counts[c][3],
                locked_ways: locked[c],
                code_bytes: job.code.len() as u64 * p.line_bytes as u64,
            });
        }
    }
    let mean_delay = total as f64 / jobs.len() as f64;
    LockingRun { tasks, mean_delay }
}

/// The distinct jobs of a queue (one trace queued several times is one
/// job) and how often each is queued.
fn distinct(jobs: &[Job]) -> Vec<(&Job, u64)> {
    let mut out: Vec<(&Job, u64)> = Vec::new();
    for j in jobs {
        match out.iter_mut().find(|(d, _)| std::rc::Rc::ptr_eq(&d.refs, &j.refs)) {
            Some((_, n)) => *n += 1,
            None => out.push((j, 1)),
        }
    }
    out
}

/// A dirty line written back into the L2 (write-back caches: no delay).
fn writeback(l2: &mut Cache, line: LineAddr) {
    match l2.find(line) {
        Some(slot) => l2.writeback_hit(slot),
        None => {
            l2.fill(line, true, &req(ReqKind::Writeback));
        }
    }
}

/// Fill `cache`'s empty ways with `lines` in order (a line whose set is
/// full is left out: a preload evicts nothing).
fn preload(cache: &mut Cache, lines: impl Iterator<Item = u64>) {
    for line in lines {
        if cache.has_room(LineAddr(line)) && cache.find(LineAddr(line)).is_none() {
            cache.fill(LineAddr(line), false, &req(ReqKind::Prefetch));
        }
    }
}

fn shuffle(v: &mut [u64], rng: &mut Rng) {
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i as u64 + 1) as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use AccessKind::{Ifetch, Load, Store};

    /// Caches of 1 set: an I1 and D1 of 2 lines, an L2 of 8.
    fn tiny(strategy: Strategy, cores: u32) -> LockingParams {
        LockingParams {
            cores,
            l1_bytes: ByteSize(256),
            l1_ways: 2,
            l2_bytes: ByteSize(1024),
            l2_ways: 8,
            strategy,
            ..LockingParams::default()
        }
    }

    #[test]
    fn a_task_pays_one_per_fetch_one_per_l2_hit_and_fifteen_more_from_memory() {
        let p = tiny(Strategy::None, 1);
        // Fetch 1: 1 + 1 + 15; again: 1; load 2: 16; again: 0; store 3: 16;
        // fetch 4 and 5 (the I1 holds 1 and 4, then 4 and 5): 17 each;
        // fetch 1 again: evicted from the I1, in the L2: 1 + 1.
        let refs =
            vec![(Ifetch, 1), (Ifetch, 1), (Load, 2), (Load, 2), (Store, 3), (Ifetch, 4), (Ifetch, 5), (Ifetch, 1)];
        let run = simulate(&p, &[job(&p, refs)]);
        let t = &run.tasks[0];
        assert_eq!(t.delay, 17 + 1 + 16 + 16 + 17 + 17 + 2);
        assert_eq!((t.instructions, t.i1_misses, t.d1_misses, t.l2_misses), (5, 4, 2, 5));
        assert_eq!(run.mean_delay, t.delay as f64);
    }

    #[test]
    fn the_mean_delay_sums_each_batchs_slowest_task_over_the_tasks() {
        let p = tiny(Strategy::None, 2);
        let long = job(&p, (0..10).map(|i| (Ifetch, 100 + i)).collect());
        let short = job(&p, vec![(Ifetch, 1)]);
        let again = job(&p, vec![(Ifetch, 1), (Ifetch, 1)]);
        let run = simulate(&p, &[long, short, again]);
        // Batch 0: 10 x 17 and 17; batch 1 (core 0 again): core 0's ten
        // blocks have pushed 1 out of the 8-line L2: 17 + 1.
        assert_eq!(run.tasks.iter().map(|t| t.delay).collect::<Vec<_>>(), [170, 17, 18]);
        assert_eq!(run.mean_delay, (170.0 + 18.0) / 3.0);
        assert_eq!((run.tasks[2].batch, run.tasks[2].core), (1, 0));
    }

    #[test]
    fn the_shared_l2_sees_the_cores_in_time_order() {
        // Core 1 fetches 7 at time 0 (a miss, 17); core 0 reaches 7 at 17:
        // it is in the L2 by then (1 + 1).
        let p = tiny(Strategy::None, 2);
        let a = job(&p, vec![(Ifetch, 50), (Ifetch, 7)]);
        let b = job(&p, vec![(Ifetch, 7)]);
        let run = simulate(&p, &[a, b]);
        assert_eq!((run.tasks[0].delay, run.tasks[1].delay), (17 + 2, 17));
    }

    #[test]
    fn dynamic_locking_keeps_the_most_missed_blocks_and_counts_their_hits() {
        // One set of 2 ways: the loop 1, 2, 3 misses on every fetch under LRU
        // (BAMI: 1, 2 and 3 miss alike, ties to the lower block). Locking one
        // way keeps block 1: every later fetch of 1 hits.
        let p = LockingParams { lock_ways: Some(1), ..tiny(Strategy::Dynamic, 1) };
        let refs: Vec<(AccessKind, u64)> = (0..30).map(|i| (Ifetch, 1 + i % 3)).collect();
        let j = job(&p, refs.clone());
        assert_eq!(j.bami[0], (1, 10));
        let locked = simulate(&p, &[job(&p, refs.clone())]);
        let plain = simulate(&tiny(Strategy::None, 1), &[job(&p, refs)]);
        assert_eq!(plain.tasks[0].i1_misses, 30);
        // Blocks 1 and 2 preloaded (3 finds the set full), 1 locked: its 10
        // fetches hit; 2 hits once where it was preloaded, then 2 and 3
        // share one way and miss: 1 + 9 x 2.
        assert_eq!(locked.tasks[0].i1_misses, 19);
        assert_eq!(locked.tasks[0].locked_ways, 1);
    }

    #[test]
    fn a_core_whose_job_fits_its_i1_locks_nothing() {
        let p = tiny(Strategy::Dynamic, 1);
        let run = simulate(&p, &[job(&p, vec![(Ifetch, 1), (Ifetch, 2), (Ifetch, 1)])]);
        assert_eq!(run.tasks[0].locked_ways, 0);
    }
}
