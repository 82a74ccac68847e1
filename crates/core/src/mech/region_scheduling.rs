//! `region-scheduling`: memory regions mapped to cache domains, and tasks
//! micro-scheduled to the domain of the region they touch (seed 003, spec
//! `region-scheduling.md` sections 2.3 to 2.8).
//!
//! A region is a set of pages of one address space: a range given in
//! `regions` (the map an oracle, or the study's E1, sets), or, with
//! `regioning`, regions found at run time (`mech/regions.rs`). A region
//! mapped to cache domain `c` (a socket of the machine: the cores sharing
//! one LLC) is open in `c`'s view of the page tables and closed in every
//! other; a global page (in no given region, without `regioning`; code
//! pages, and the `stack` ranges, with it) is open everywhere. Before every
//! access the mechanism looks at the page (exact: a closed page is never in
//! the TLBs of the domain it is closed to, so every access to it faults):
//! - a page of a region mapped to the task's current domain, or a global
//!   one, runs;
//! - a page of a region not yet mapped opens it on the current domain (the
//!   spec's "OPEN"), after `open_time`;
//! - a page of a region mapped to another domain is a micro-schedule: the
//!   task stops before the access, pays `usched_time` (the fault, the
//!   handler, the run-queue change, the interrupt, the TLB flush: the
//!   source measured them together, 47,600 cycles on Clovertown and 17,800
//!   on Westmere) and moves to a core of that domain (an idle one if there
//!   is one, else the least loaded), where the access runs first. It stays
//!   confined to that domain, as the source's VCPU to its cache's PCPUs,
//!   until the next micro-schedule.
//!
//! With `regioning`, every page a task touches outside the given ranges
//! starts as a one-page seed region. Every `period` of a task's CPU time it
//! spends `phase` regioning (spec 2.6): every region but the one it is in
//! is closed, each move to another region faults (`touch_time`) and is
//! seen, and a region re-entered within `merge_distance` references of
//! its address space after it was left merges with every region entered
//! since. When the phase ends, the balancer maps the address
//! space's unmapped regions, largest first, each to the domain whose load
//! (the working sets of the regions mapped to it, spec 2.7) is lowest, and
//! the largest region found before the phase that the phase grew is torn
//! back into seeds (never the same one twice in a row). Seeds (pages in no
//! region yet) never move a task: they open where they are touched. Every `scan_period` of an address space's
//! virtual time, the accessed bits of its pages in the regions open where
//! the task runs shift into their 32-bit histories, from which the
//! working-set estimates come.

use serde::{Deserialize, Serialize};

use super::regions::{Kind, Phase, Regions};
use super::{AccessCtx, Gate, GateCtx, MechBuild, Mechanism, MechanismParams, PeriodCtx, RegionRow, SeriesRow};
use crate::error::{Issues, Result};
use crate::types::{AccessKind, Asid, CoreId, TaskId};
use crate::units::{ByteSize, Span};

/// One region of `regions`, or one range of `regioning.stack`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionSpec {
    /// Address space of its pages.
    pub asid: u32,
    /// First virtual address (rounded down to its page).
    pub start: u64,
    /// Bytes from `start` (the last page is the one holding `start + bytes - 1`).
    pub bytes: ByteSize,
    /// Cache domain (socket) it is mapped to; none: opened where it is first touched.
    #[serde(default)]
    pub cache: Option<u32>,
}

/// Params of `regioning`: regions found at run time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RegioningParams {
    /// A regioning phase starts every this much CPU time of a task (default 1 s).
    pub period: Span,
    /// And lasts this much of its CPU time (default 10 ms: the source's 1%).
    pub phase: Span,
    /// A region re-entered within this many references of its address
    /// space after it was left merges (spec 2.6's q, in references as the
    /// source counts memlat's idle time; default `min_access`: moving
    /// between the two more often is what C1 rules out, spec 7.1).
    pub merge_distance: Option<u64>,
    /// Accessed bits are scanned every this much virtual time of an address
    /// space (default 100 ms).
    pub scan_period: Span,
    /// Cost of a fault in a regioning phase (default 0: the source gives no figure).
    pub touch_time: Span,
    /// Address ranges of stacks, global (no cache); `cache` is not allowed.
    pub stack: Vec<RegionSpec>,
    /// Go back to ordinary scheduling when regioning does not pay (spec
    /// 2.8's conditions C1-C3, checked at the end of each phase).
    pub fallback: bool,
    /// C1: fewest references per micro-schedule (default 4096, the
    /// source's 2^12 on Clovertown).
    pub min_access: u64,
    /// C1: most references per micro-schedule, beyond which the gain is
    /// marginal (default none; the source's 2^16 on Clovertown).
    pub max_access: Option<u64>,
    /// The domains each listed address space's regions may be mapped to
    /// (the source's partition and unfair policies; others: every domain).
    pub partition: Vec<Partition>,
    /// Spec 2.5's idle-CPU rule: a task that waits for a busy domain while
    /// a core it could otherwise run on idles through two consecutive
    /// `idle_tick` points is released from its domain (its regions open
    /// everywhere for it) until the next balancing pass.
    pub idle_release: bool,
    /// The points at which the rule looks (default 10 ms, Xen's tick).
    pub idle_tick: Span,
    /// Scans a page's accessed-bit history keeps (default 32, the
    /// source's; 1 to 64); the working-set formula counts its ones as a
    /// share of 32.
    pub history_bits: u32,
    /// Record the regioning's time series (`Results.series`): each phase's
    /// end and each scan's accessed pages and domain loads.
    pub series: bool,
}

/// One entry of `regioning.partition`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Partition {
    /// The address space.
    pub asid: u32,
    /// The cache domains its regions may be mapped to, at least one.
    pub caches: Vec<u32>,
}

impl Default for RegioningParams {
    fn default() -> Self {
        RegioningParams {
            period: Span::millis(1000.0),
            phase: Span::millis(10.0),
            merge_distance: None,
            scan_period: Span::millis(100.0),
            touch_time: Span::cycles(0),
            stack: Vec::new(),
            fallback: true,
            min_access: 4096,
            max_access: None,
            partition: Vec::new(),
            idle_release: true,
            idle_tick: Span::millis(10.0),
            history_bits: 32,
            series: false,
        }
    }
}

/// Params of `region-scheduling`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RegionSchedulingParams {
    /// Regions given, disjoint.
    pub regions: Vec<RegionSpec>,
    /// Find regions at run time (off by default).
    pub regioning: Option<RegioningParams>,
    /// Cost of one micro-schedule (default 47,600 cycles, Clovertown's).
    pub usched_time: Span,
    /// Cost of opening an unmapped region where it is touched (default 0:
    /// the source measured no such figure).
    pub open_time: Span,
    /// Page tables: one copy per cache domain (`per-cache`, the source's
    /// design: a move costs `usched_time` alone) or one copy whose
    /// protection bits every move rewrites (`shared`, the source's
    /// ablation).
    pub page_tables: PageTables,
    /// With `shared` page tables: the cost of rewriting one page's entry
    /// (default 230 cycles, derived from the source's E2: docs).
    pub pte_time: Span,
}

/// How an address space's page tables give each domain its view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PageTables {
    /// One copy per domain: a cache switch loads the target's copy.
    #[default]
    PerCache,
    /// One copy: a cache switch closes the regions of the domain left and
    /// opens those of the target, page by page.
    Shared,
}

impl Default for RegionSchedulingParams {
    fn default() -> Self {
        RegionSchedulingParams {
            regions: Vec::new(),
            regioning: None,
            usched_time: Span::cycles(47_600),
            open_time: Span::cycles(0),
            page_tables: PageTables::PerCache,
            pte_time: Span::cycles(230),
        }
    }
}

/// A given range: pages `[first, last]` of `asid`.
#[derive(Debug, Clone, Copy)]
struct Range {
    asid: u32,
    first: u64,
    last: u64,
    cache: Option<u32>,
}

/// Check `specs` (at `key`) and turn them into sorted page ranges.
fn ranges(
    ctx: &MechBuild,
    issues: &mut Issues,
    key: &str,
    specs: &[RegionSpec],
    shift: u32,
    caches: bool,
) -> Vec<Range> {
    let sockets = ctx.machine.sockets;
    let mut out: Vec<Range> = Vec::with_capacity(specs.len());
    for (i, r) in specs.iter().enumerate() {
        let at = |field: &str| ctx.at(&format!("{key}[{i}].{field}"));
        issues.check(r.bytes.0 > 0, at("bytes"), "out_of_range", "a range has at least one byte");
        match r.cache {
            Some(_) if !caches => issues.push(at("cache"), "unknown_field", "a stack is global: it has no cache"),
            Some(c) => issues.check(
                c < sockets,
                at("cache"),
                "out_of_range",
                format!("cache domain {c} does not exist: the machine has {sockets} (its sockets)"),
            ),
            None => {}
        }
        let Some(end) = r.start.checked_add(r.bytes.0.max(1) - 1) else {
            issues.push(at("bytes"), "overflow", "the range ends past the address space");
            continue;
        };
        let range = Range { asid: r.asid, first: r.start >> shift, last: end >> shift, cache: r.cache };
        let overlaps = |o: &Range| o.asid == range.asid && o.first <= range.last && range.first <= o.last;
        if let Some(j) = out.iter().position(overlaps) {
            issues.push(at("start"), "overlap", format!("{key}[{i}] shares pages with {key}[{j}]"));
        }
        out.push(range);
    }
    out.sort_by_key(|r| (r.asid, r.first));
    out
}

/// The index of the range of `ranges` holding page `vpn` of `asid`.
fn range_of(ranges: &[Range], asid: u32, vpn: u64) -> Option<usize> {
    let i = ranges.partition_point(|r| (r.asid, r.first) <= (asid, vpn));
    i.checked_sub(1).filter(|&j| ranges[j].asid == asid && ranges[j].last >= vpn)
}

impl MechanismParams for RegionSchedulingParams {
    fn build(&self, ctx: &MechBuild) -> Result<Box<dyn Mechanism>> {
        let mut issues = Issues::default();
        let usched = ctx.cycles(&mut issues, "usched_time", self.usched_time, 0);
        let open = ctx.cycles(&mut issues, "open_time", self.open_time, 0);
        let pte = match self.page_tables {
            PageTables::PerCache => None,
            PageTables::Shared => Some(ctx.cycles(&mut issues, "pte_time", self.pte_time, 0)),
        };
        let m = ctx.machine;
        let shift = m.memory.page_bytes.0.trailing_zeros();
        let given = ranges(ctx, &mut issues, "regions", &self.regions, shift, true);
        let regioning = self.regioning.as_ref().map(|r| {
            let at = |key: &str| format!("regioning.{key}");
            let stack = ranges(ctx, &mut issues, &at("stack"), &r.stack, shift, false);
            let merge = r.merge_distance.unwrap_or(r.min_access);
            issues.check(
                merge >= 1,
                ctx.at(&at("merge_distance")),
                "out_of_range",
                "merge_distance must be at least 1",
            );
            issues.check(r.min_access >= 1, ctx.at(&at("min_access")), "out_of_range", "min_access must be at least 1");
            issues.check(
                (1..=64).contains(&r.history_bits),
                ctx.at(&at("history_bits")),
                "out_of_range",
                format!("a history keeps 1 to 64 scans, got {}", r.history_bits),
            );
            if let Some(most) = r.max_access {
                issues.check(
                    most > r.min_access,
                    ctx.at(&at("max_access")),
                    "out_of_range",
                    format!("max_access must be above min_access ({}), got {most}", r.min_access),
                );
            }
            for (i, p) in r.partition.iter().enumerate() {
                let at = |key: &str| ctx.at(&format!("regioning.partition[{i}].{key}"));
                issues.check(!p.caches.is_empty(), at("caches"), "out_of_range", "give at least one cache domain");
                for (j, &c) in p.caches.iter().enumerate() {
                    issues.check(
                        c < m.sockets,
                        ctx.at(&format!("regioning.partition[{i}].caches[{j}]")),
                        "out_of_range",
                        format!("cache domain {c} does not exist: the machine has {} (its sockets)", m.sockets),
                    );
                }
                if ctx.asids.binary_search(&p.asid).is_err() {
                    let message = format!("no task has address space {} (the tasks' are {:?})", p.asid, ctx.asids);
                    issues.push(at("asid"), "out_of_range", message);
                }
                if r.partition[..i].iter().any(|o| o.asid == p.asid) {
                    issues.push(at("asid"), "duplicate", format!("address space {} is partitioned twice", p.asid));
                }
            }
            let cache = m.llc.as_ref().or(m.l2.as_ref()).map_or(0, |c| c.size_bytes.0);
            Regioning {
                passes: 0,
                partition: r.partition.iter().map(|p| (p.asid, p.caches.clone())).collect(),
                fallback: r.fallback.then_some((r.min_access, r.max_access.unwrap_or(u64::MAX))),
                capacity: (cache >> shift) as f64,
                sockets: m.sockets,
                period: ctx.cycles(&mut issues, &at("period"), r.period, 1),
                phase: ctx.cycles(&mut issues, &at("phase"), r.phase, 1),
                merge,
                scan: ctx.cycles(&mut issues, &at("scan_period"), r.scan_period, 1),
                touch: ctx.cycles(&mut issues, &at("touch_time"), r.touch_time, 0),
                stack,
                regions: Regions::with_width(r.history_bits.clamp(1, 64) as u8),
                tasks: Vec::new(),
                spaces: Vec::new(),
                idle_tick: r.idle_release.then(|| ctx.cycles(&mut issues, &at("idle_tick"), r.idle_tick, 1)),
                blocked: Vec::new(),
                series: r.series.then(Vec::new),
            }
        });
        issues.finish()?;
        Ok(Box::new(RegionScheduling {
            given,
            regioning,
            shift,
            cores_per_socket: m.cores_per_socket,
            base_cpi: m.base_cpi,
            usched,
            open,
            pte,
            last: None,
            stats: Stats::default(),
        }))
    }
}

super::counters! {
    /// The counters of `region-scheduling`.
    pub struct Stats {
        /// Micro-schedules: tasks moved to the domain of the region they touched.
        usched,
        /// Regions opened where they were touched: an unmapped region at its
        /// first touch, a seed at each touch from another domain than its last.
        opened,
        /// Regioning phases ended.
        phases,
        /// Faults in regioning phases (moves between regions seen).
        touches,
        /// Regions merged into others.
        merges,
        /// Regions torn back into seeds.
        teardowns,
        /// Pages taken out of their region for moving its tasks too often.
        shrinks,
        /// Regions the balancer mapped to a domain.
        mapped,
        /// Mapped regions the balancer moved to another domain.
        rebalanced,
        /// Accessed-bit scans.
        scans,
        /// Address spaces that went back to ordinary scheduling because C1
        /// failed: references per micro-schedule outside the window.
        fallback_c1,
        /// ... because C2 failed: the working sets of every address space's
        /// regions together fit one domain's cache.
        fallback_c2,
        /// ... because C3 failed: it overflows all the domains' caches.
        fallback_c3,
        /// Tasks released from their domain by the idle-CPU rule.
        idle_releases,
        /// Of those, the cycles of cache switches with shared page tables.
        switch_cycles,
        /// Cycles charged for micro-schedules, openings and regioning faults.
        cycles,
    }
}

/// A task's regioning clock.
#[derive(Debug, Default)]
struct TaskClock {
    /// CPU time (cycles of its accesses).
    cpu: u64,
    /// CPU time at which its next phase starts, and the phase, while in one.
    next_phase: u64,
    phase: Option<(u64, Phase)>,
    /// Released from its domain after its address space fell back.
    released: bool,
    /// Released by the idle-CPU rule until the next balancing pass: its
    /// touches of regions mapped elsewhere do not move it.
    idle_free: bool,
}

/// An address space's regioning clock.
#[derive(Debug, Default)]
struct SpaceClock {
    /// Virtual time: cycles of its tasks' accesses.
    time: u64,
    /// Its tasks' references.
    references: u64,
    next_scan: u64,
    /// The region torn down last.
    torn: Option<u32>,
    /// Its references when its last phase ended, and its micro-schedules
    /// since (C1).
    judged_at: u64,
    usched: u64,
    /// The condition (1 to 3) that made it go back to ordinary scheduling.
    fell_back: Option<u8>,
}

/// The balancer evens domains' loads to within this share of one domain's cache.
const BALANCED: f64 = 0.1;
/// A region the balancer moved stays where it is for this many passes.
const SETTLE_PASSES: u64 = 2;
/// A region that moved its tasks at least this often since its address
/// space's last phase ended ...
const SHRINK_LEAST: u32 = 16;
/// ... loses the page that caused more than this share of those moves.
const SHRINK_SHARE: f64 = 0.5;

/// Regions found at run time and their clocks.
struct Regioning {
    /// Balancing passes so far.
    passes: u64,
    /// Per partitioned address space, the domains its regions may use.
    partition: Vec<(u32, Vec<u32>)>,
    /// C1's window of references per micro-schedule, if falling back is on.
    fallback: Option<(u64, u64)>,
    /// Pages one domain's cache holds, and the domains (C2, C3).
    capacity: f64,
    sockets: u32,
    period: u64,
    phase: u64,
    /// References (spec 2.6's q).
    merge: u64,
    scan: u64,
    touch: u64,
    stack: Vec<Range>,
    regions: Regions,
    tasks: Vec<TaskClock>,
    spaces: Vec<SpaceClock>,
    /// The idle-CPU rule's points, if it is on, and the tasks blocked at the last one.
    idle_tick: Option<u64>,
    blocked: Vec<TaskId>,
    /// The time series, if recorded (`series`).
    series: Option<Vec<SeriesRow>>,
}

impl Regioning {
    fn task(&mut self, t: TaskId) -> &mut TaskClock {
        let i = t.0 as usize;
        if self.tasks.len() <= i {
            self.tasks.resize_with(i + 1, || TaskClock { next_phase: self.period, ..TaskClock::default() });
        }
        &mut self.tasks[i]
    }

    fn space(&mut self, a: Asid) -> &mut SpaceClock {
        let i = a.0 as usize;
        if self.spaces.len() <= i {
            self.spaces.resize_with(i + 1, || SpaceClock { next_scan: self.scan, ..SpaceClock::default() });
        }
        &mut self.spaces[i]
    }

    /// Record `value` of `name` (of `key`) for `asid` at its virtual time.
    fn record(&mut self, asid: Asid, name: &'static str, key: u64, value: f64) {
        let time = self.space(asid).time;
        if let Some(h) = &mut self.series {
            h.push(SeriesRow { mechanism: 0, asid: asid.0, time, name, key, value });
        }
    }

    /// The series at the end of `asid`'s phase, which merged `merges`
    /// regions, shrank `shrinks` and ended with the balancer's `ended`
    /// (regions mapped, moved, torn down); and its regions then.
    fn record_phase(&mut self, asid: Asid, merges: u64, shrinks: u64, (mapped, moved, torn): (u64, u64, u64)) {
        if self.series.is_none() {
            return;
        }
        let (mut regular, mut seeds, mut regular_pages, mut global_pages) = (0, 0, 0, 0);
        for (_, r) in self.regions.alive().filter(|(_, r)| r.asid == asid) {
            let pages = r.pages.len() as u64;
            match r.kind {
                Kind::Regular => (regular, regular_pages) = (regular + 1, regular_pages + pages),
                Kind::Seed => seeds += 1,
                Kind::Global => global_pages += pages,
            }
        }
        let points = [
            ("merges", merges),
            ("shrinks", shrinks),
            ("mapped", mapped),
            ("rebalanced", moved),
            ("teardowns", torn),
            ("regions", regular),
            ("seeds", seeds),
            ("regular_pages", regular_pages),
            ("global_pages", global_pages),
        ];
        for (name, value) in points {
            self.record(asid, name, 0, value as f64);
        }
    }

    /// The series at a scan of `asid`: each domain's load (the working
    /// sets of the regular regions mapped to it, every address space's).
    fn record_loads(&mut self, asid: Asid) {
        if self.series.is_none() {
            return;
        }
        let mut load = vec![0.0; self.sockets as usize];
        for (i, r) in self.regions.alive().filter(|(_, r)| r.kind == Kind::Regular) {
            if let Some(c) = r.cache {
                load[c as usize] += self.regions.working_set(i);
            }
        }
        for (d, w) in load.into_iter().enumerate() {
            self.record(asid, "load", d as u64, w);
        }
    }

    /// The domains `asid`'s regions may be mapped to (`None`: all).
    fn domains(&self, asid: Asid) -> Option<&[u32]> {
        self.partition.iter().find(|(a, _)| *a == asid.0).map(|(_, c)| c.as_slice())
    }

    /// Spec 2.8's conditions for `asid` at the end of a phase: the one
    /// that fails (1: its references per micro-schedule outside the window;
    /// 2: the working sets of every address space together fit one domain's
    /// cache, so nothing is to be unified or balanced; 3: its own overflow
    /// all the domains' caches), if any.
    fn failed_condition(&mut self, asid: Asid) -> Option<u8> {
        let (least, most) = self.fallback?;
        let (mut total, mut own) = (0.0, 0.0);
        for (i, r) in self.regions.alive().filter(|(_, r)| r.kind != Kind::Global) {
            let w = self.regions.working_set(i);
            total += w;
            if r.asid == asid {
                own += w;
            }
        }
        let space = self.space(asid);
        let accesses = space.references - std::mem::replace(&mut space.judged_at, space.references);
        let usched = std::mem::take(&mut space.usched);
        let per = accesses.checked_div(usched);
        if per.is_some_and(|a| a < least || a >= most) {
            Some(1)
        } else if total <= self.capacity {
            Some(2)
        } else if own > self.capacity * self.sockets as f64 {
            Some(3)
        } else {
            None
        }
    }

    /// `asid` goes back to ordinary scheduling: every region of it global.
    fn fall_back(&mut self, asid: Asid, condition: u8) {
        for r in self.regions.regions.iter_mut().filter(|r| r.alive && r.asid == asid) {
            r.kind = Kind::Global;
            r.cache = None;
        }
        self.space(asid).fell_back = Some(condition);
    }

    /// Spec 2.6's shrink: a region of `asid` whose tasks moved at least
    /// [`SHRINK_LEAST`] times since the last phase, more than
    /// [`SHRINK_SHARE`] of them on touches of one page, loses that page to a
    /// seed region of its own (unmapped: opened where next touched); every
    /// page's count starts again. Returns the pages taken out.
    fn shrink(&mut self, asid: Asid) -> u64 {
        let mut out = Vec::new();
        for (_, r) in self.regions.alive().filter(|(_, r)| r.asid == asid && r.kind != Kind::Global) {
            let moves = |p: &u32| self.regions.pages[*p as usize].moves;
            let total: u32 = r.pages.iter().map(moves).sum();
            let top = r.pages.iter().copied().max_by_key(|p| (moves(p), std::cmp::Reverse(*p)));
            if let Some(p) = top.filter(|p| total >= SHRINK_LEAST && moves(p) as f64 > SHRINK_SHARE * total as f64) {
                out.push(p);
            }
        }
        for &p in &out {
            self.regions.detach(p);
        }
        for r in self.regions.regions.iter().filter(|r| r.alive && r.asid == asid) {
            for &p in &r.pages {
                self.regions.pages[p as usize].moves = 0;
            }
        }
        out.len() as u64
    }

    /// The end of a regioning phase of a task of `asid`, which grew the
    /// older regions `grown`: map the address space's unmapped regions, largest first,
    /// each to the least loaded domain it may use; then even the domains'
    /// loads (spec 2.8's greedy step: while the most and least loaded
    /// differ by more than [`BALANCED`] of a cache, move from the most
    /// loaded to the least the region that best halves the gap, not one
    /// moved in the last [`SETTLE_PASSES`] passes); tear down the largest
    /// of `grown`. Returns (regions mapped, regions moved,
    /// regions torn down).
    fn end_phase(&mut self, asid: Asid, grown: Vec<u32>) -> (u64, u64, u64) {
        self.passes += 1;
        self.tasks.iter_mut().for_each(|t| t.idle_free = false);
        let mut load = vec![0.0f64; self.sockets as usize];
        let mut unmapped = Vec::new();
        for (i, r) in self.regions.alive().filter(|(_, r)| r.kind == Kind::Regular) {
            match r.cache {
                Some(c) => load[c as usize] += self.regions.working_set(i),
                None if r.asid == asid => unmapped.push((self.regions.working_set(i), i)),
                None => {}
            }
        }
        // Largest first; ties to the oldest slot, for determinism.
        unmapped.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let all: Vec<u32> = (0..self.sockets).collect();
        let domains = self.domains(asid).unwrap_or(&all).to_vec();
        for &(w, r) in &unmapped {
            let least = |&a: &u32, &b: &u32| load[a as usize].total_cmp(&load[b as usize]).then(a.cmp(&b));
            let c = domains.iter().copied().min_by(least).unwrap_or(0);
            load[c as usize] += w;
            self.regions.regions[r as usize].cache = Some(c);
        }
        let moved = self.rebalance(&mut load);
        let last = self.space(asid).torn;
        let size = |r: u32| self.regions.regions[r as usize].pages.len();
        // The largest; ties to the oldest slot, for determinism.
        let largest =
            grown.into_iter().filter(|&r| last != Some(r)).max_by(|&a, &b| size(a).cmp(&size(b)).then(b.cmp(&a)));
        let torn = largest.filter(|&r| self.regions.regions[r as usize].pages.len() > 1);
        if let Some(r) = torn {
            self.regions.tear_down(r);
            self.space(asid).torn = Some(r);
        }
        (unmapped.len() as u64, moved, torn.is_some() as u64)
    }

    /// Even the domains' `load`s by moving regions (see [`Regioning::end_phase`]);
    /// returns how many moved.
    fn rebalance(&mut self, load: &mut [f64]) -> u64 {
        let mut moved = 0;
        loop {
            // The most loaded (ties: the lowest) and the least loaded (ties: the lowest).
            let hi = (0..load.len()).max_by(|a, b| load[*a].total_cmp(&load[*b]).then(b.cmp(a))).unwrap_or(0);
            let lo = (0..load.len()).min_by(|a, b| load[*a].total_cmp(&load[*b]).then(a.cmp(b))).unwrap_or(0);
            let gap = load[hi] - load[lo];
            if gap <= BALANCED * self.capacity {
                return moved;
            }
            // The region of the most loaded domain that may go to the least
            // and best halves the gap (any that weighs less than the gap
            // narrows it); ties to the oldest slot.
            let candidates = self.regions.alive().filter(|(_, r)| {
                r.kind == Kind::Regular
                    && r.cache == Some(hi as u32)
                    && (r.moved == 0 || self.passes - r.moved >= SETTLE_PASSES)
                    && self.domains(r.asid).is_none_or(|d| d.contains(&(lo as u32)))
            });
            let best = candidates
                .map(|(i, _)| (i, self.regions.working_set(i)))
                .filter(|&(_, w)| w > 0.0 && w < gap)
                .min_by(|a, b| (a.1 - gap / 2.0).abs().total_cmp(&(b.1 - gap / 2.0).abs()).then(a.0.cmp(&b.0)));
            let Some((r, w)) = best else { return moved };
            let region = &mut self.regions.regions[r as usize];
            region.cache = Some(lo as u32);
            region.moved = self.passes;
            load[hi] -= w;
            load[lo] += w;
            moved += 1;
        }
    }
}

struct RegionScheduling {
    /// Given ranges, sorted by address space and first page.
    given: Vec<Range>,
    regioning: Option<Regioning>,
    shift: u32,
    cores_per_socket: u32,
    base_cpi: f64,
    usched: u64,
    open: u64,
    /// With shared page tables, the cost of one page's entry.
    pte: Option<u64>,
    /// The given range of the last page looked up (`usize::MAX`: none).
    last: Option<(u32, u64, usize)>,
    stats: Stats,
}

impl RegionScheduling {
    /// The given range holding page `vpn` of `asid`, if any.
    fn given_of(&mut self, asid: u32, vpn: u64) -> Option<usize> {
        if let Some((a, v, r)) = self.last {
            if a == asid && v == vpn {
                return (r != usize::MAX).then_some(r);
            }
        }
        let found = range_of(&self.given, asid, vpn);
        self.last = Some((asid, vpn, found.unwrap_or(usize::MAX)));
        found
    }

    /// What a touch of a region of `asid` mapped to `cache` does from
    /// domain `here` (an unmapped one opens here: the caller maps it).
    fn enforce(&mut self, asid: u32, cache: Option<u32>, here: u32) -> Gate {
        match cache {
            Some(c) if c == here => Gate::Run { cycles: 0 },
            Some(socket) => {
                let switch = self.pte.map_or(0, |pte| pte * (self.pages_on(asid, here) + self.pages_on(asid, socket)));
                self.stats.usched += 1;
                self.stats.switch_cycles += switch;
                self.stats.cycles += self.usched + switch;
                Gate::Move { socket, cycles: self.usched + switch }
            }
            None => {
                self.stats.opened += 1;
                self.stats.cycles += self.open;
                Gate::Run { cycles: self.open }
            }
        }
    }

    /// Pages of `asid` mapped to domain `cache`: the entries a cache switch
    /// with shared page tables rewrites there (given ranges whole, regions
    /// found at run time by their touched pages).
    fn pages_on(&self, asid: u32, cache: u32) -> u64 {
        let given: u64 = (self.given.iter())
            .filter(|g| g.asid == asid && g.cache == Some(cache))
            .map(|g| g.last - g.first + 1)
            .sum();
        let found: u64 = self
            .regioning
            .iter()
            .flat_map(|reg| reg.regions.alive())
            .filter(|(_, r)| r.asid.0 == asid && r.cache == Some(cache) && r.kind == Kind::Regular)
            .map(|(_, r)| r.pages.len() as u64)
            .sum();
        given + found
    }
}

impl Mechanism for RegionScheduling {
    fn name(&self) -> &str {
        "region-scheduling"
    }

    fn gates_accesses(&self) -> bool {
        true
    }

    fn wants_accesses(&self) -> bool {
        self.regioning.is_some()
    }

    fn gate(&mut self, ctx: GateCtx<'_>) -> Gate {
        let vpn = ctx.access.addr.0 >> self.shift;
        let here = ctx.core.0 / self.cores_per_socket;
        if let Some(r) = self.given_of(ctx.asid.0, vpn) {
            let gate = self.enforce(ctx.asid.0, self.given[r].cache, here);
            self.given[r].cache.get_or_insert(here);
            return gate;
        }
        let Some(reg) = self.regioning.as_mut() else { return Gate::Run { cycles: 0 } };
        if reg.space(ctx.asid).fell_back.is_some() {
            let task = reg.task(ctx.task);
            return match std::mem::replace(&mut task.released, true) {
                false => Gate::Release,
                true => Gate::Run { cycles: 0 },
            };
        }
        let global = ctx.access.kind == AccessKind::Ifetch || range_of(&reg.stack, ctx.asid.0, vpn).is_some();
        let kind = if global { Kind::Global } else { Kind::Seed };
        let p = reg.regions.page(ctx.asid, vpn, kind, None);
        reg.regions.pages[p as usize].accessed = true;
        let r = reg.regions.pages[p as usize].region;
        if reg.regions.regions[r as usize].kind == Kind::Global {
            return Gate::Run { cycles: 0 };
        }
        let now = reg.space(ctx.asid).references;
        let (merge, touch) = (reg.merge, reg.touch);
        let Regioning { tasks, regions, .. } = reg;
        if let Some((_, phase)) = tasks.get_mut(ctx.task.0 as usize).and_then(|t| t.phase.as_mut()) {
            let merges = phase.merges;
            if !phase.touch(regions, r, now, merge) {
                return Gate::Run { cycles: 0 };
            }
            self.stats.merges += phase.merges - merges;
            self.stats.touches += 1;
            self.stats.cycles += touch;
            return Gate::Run { cycles: touch };
        }
        // A region of a partitioned address space touched outside its
        // domains, unmapped or a seed, is mapped to the first of them (and
        // the task moves).
        let outside = reg.domains(ctx.asid).filter(|d| !d.contains(&here)).map(|d| d[0]);
        let region = &mut reg.regions.regions[r as usize];
        if let Some(first) = outside.filter(|_| region.cache.is_none() || region.kind == Kind::Seed) {
            region.cache = Some(first);
        } else if region.kind == Kind::Seed {
            // A seed is no cache's (spec 2.4: only local regions schedule):
            // it opens where it is touched, and remembers it (its lines are
            // there when a phase merges it).
            let before = region.cache.replace(here).filter(|&c| c == here);
            return self.enforce(ctx.asid.0, before, here);
        }
        let cache = region.cache;
        if cache.is_some_and(|c| c != here) && reg.task(ctx.task).idle_free {
            return Gate::Run { cycles: 0 };
        }
        let gate = self.enforce(ctx.asid.0, cache, here);
        if let Some(reg) = self.regioning.as_mut() {
            reg.regions.regions[r as usize].cache.get_or_insert(here);
            let moved = matches!(gate, Gate::Move { .. });
            reg.space(ctx.asid).usched += moved as u64;
            reg.regions.pages[p as usize].moves += moved as u32;
        }
        gate
    }

    fn period(&self) -> Option<u64> {
        self.regioning.as_ref().and_then(|r| r.idle_tick)
    }

    /// Spec 2.5's idle-CPU rule: release the tasks blocked by their domain
    /// at this point and the last.
    fn on_period(&mut self, ctx: PeriodCtx<'_>) -> Result<Vec<(CoreId, u64)>> {
        let Some(reg) = self.regioning.as_mut() else { return Ok(Vec::new()) };
        let mut blocked = Vec::new();
        for &(t, asid) in ctx.blocked {
            if reg.space(asid).fell_back.is_some() {
                continue; // released at its next touch anyway
            }
            if reg.blocked.contains(&t) {
                reg.task(t).idle_free = true;
                ctx.release.push(t);
                self.stats.idle_releases += 1;
            } else {
                blocked.push(t);
            }
        }
        reg.blocked = blocked;
        Ok(Vec::new())
    }

    fn on_access(&mut self, ctx: AccessCtx<'_>) -> u32 {
        let Some(reg) = self.regioning.as_mut() else { return 0 };
        let spent = (ctx.access.instrs as f64 * self.base_cpi).round() as u64 + ctx.stall_cycles as u64;
        let here = ctx.core.0 / self.cores_per_socket;
        let every = reg.scan;
        let space = reg.space(ctx.asid);
        space.time += spent;
        space.references += 1;
        let fell_back = space.fell_back.is_some();
        if space.time >= space.next_scan {
            space.next_scan = space.time - space.time % every + every;
            let recording = reg.series.is_some();
            let mut seen = Vec::new();
            reg.regions.scan(
                ctx.asid,
                |r| r.cache == Some(here),
                |vpn| {
                    if recording {
                        seen.push(vpn);
                    }
                },
            );
            for vpn in seen {
                reg.record(ctx.asid, "accessed", vpn, 1.0);
            }
            reg.record_loads(ctx.asid);
            self.stats.scans += 1;
        }
        let (period, length) = (reg.period, reg.phase);
        let task = reg.task(ctx.task);
        task.cpu += spent;
        match task.phase.take() {
            Some(_) if fell_back => {}
            Some((end, phase)) if task.cpu >= end => {
                self.stats.phases += 1;
                if let Some(condition) = reg.failed_condition(ctx.asid) {
                    reg.fall_back(ctx.asid, condition);
                    reg.record(ctx.asid, "fallback", condition as u64, 1.0);
                    match condition {
                        1 => self.stats.fallback_c1 += 1,
                        2 => self.stats.fallback_c2 += 1,
                        _ => self.stats.fallback_c3 += 1,
                    }
                } else {
                    let shrinks = reg.shrink(ctx.asid);
                    self.stats.shrinks += shrinks;
                    let grown: Vec<u32> = phase.grown(&reg.regions).collect();
                    let (mapped, moved, torn) = reg.end_phase(ctx.asid, grown);
                    self.stats.mapped += mapped;
                    self.stats.rebalanced += moved;
                    self.stats.teardowns += torn;
                    reg.record_phase(ctx.asid, phase.merges, shrinks, (mapped, moved, torn));
                }
            }
            Some(open) => task.phase = Some(open),
            None if !fell_back && task.cpu >= task.next_phase => {
                task.next_phase = task.cpu - task.cpu % period + period;
                task.phase = Some((task.cpu + length, Phase::default()));
            }
            None => {}
        }
        0
    }

    fn regions(&self) -> Vec<RegionRow> {
        let given = self.given.iter().map(|g| RegionRow {
            asid: g.asid,
            region: g.first,
            kind: "given",
            cache: g.cache,
            pages: g.last - g.first + 1,
            working_set: None,
        });
        let found = self.regioning.iter().flat_map(|reg| {
            reg.regions.alive().map(|(i, r)| RegionRow {
                asid: r.asid.0,
                region: r.founder,
                kind: match r.kind {
                    Kind::Seed => "seed",
                    Kind::Regular => "regular",
                    Kind::Global => "global",
                },
                cache: r.cache,
                pages: r.pages.len() as u64,
                working_set: Some(reg.regions.working_set(i)),
            })
        });
        let mut rows: Vec<RegionRow> = given.chain(found).collect();
        rows.sort_by_key(|r| (r.asid, r.region));
        rows
    }

    fn series(&mut self) -> Vec<SeriesRow> {
        self.regioning.as_mut().and_then(|r| r.series.take()).unwrap_or_default()
    }

    fn reset_stats(&mut self) {
        self.stats = Stats::default();
    }

    fn results(&mut self) -> Vec<(&'static str, u64)> {
        self.stats.named()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regioning(sockets: u32, capacity: f64) -> Regioning {
        Regioning {
            passes: 0,
            partition: Vec::new(),
            fallback: None,
            capacity,
            sockets,
            period: 1,
            phase: 1,
            merge: 1,
            scan: 1,
            touch: 0,
            stack: Vec::new(),
            regions: Regions::default(),
            tasks: Vec::new(),
            spaces: Vec::new(),
            idle_tick: None,
            blocked: Vec::new(),
            series: None,
        }
    }

    /// A region of `pages` pages of address space 0 from page `first`, mapped to `cache`.
    fn region(reg: &mut Regioning, first: u64, pages: u64, cache: u32) -> u32 {
        let mut r = None;
        for vpn in first..first + pages {
            let p = reg.regions.page(Asid(0), vpn, Kind::Seed, None);
            let seed = reg.regions.pages[p as usize].region;
            r = Some(r.map_or(seed, |r| reg.regions.merge(r, seed)));
        }
        let r = r.expect("a page");
        reg.regions.regions[r as usize].cache = Some(cache);
        r
    }

    #[test]
    fn the_balancer_halves_the_gap_until_the_loads_are_within_a_tenth_of_a_cache() {
        // Domain 0 holds 100 + 60 + 30 pages, domain 1 10; caches of 100 pages.
        let mut reg = regioning(2, 100.0);
        let big = region(&mut reg, 0, 100, 0);
        let mid = region(&mut reg, 1000, 60, 0);
        let small = region(&mut reg, 2000, 30, 0);
        let tiny = region(&mut reg, 3000, 10, 1);
        let (mapped, moved, _) = reg.end_phase(Asid(0), Vec::new());
        // Gap 180: 100 best halves it (loads 90 and 110); gap 20 > 10: the
        // 100 just moved stays, the 10 goes (100 and 100); done.
        assert_eq!((mapped, moved), (0, 2));
        let cache = |r: u32| reg.regions.regions[r as usize].cache;
        assert_eq!([cache(big), cache(mid), cache(small), cache(tiny)], [Some(1), Some(0), Some(0), Some(0)]);
    }

    #[test]
    fn the_balancer_maps_the_largest_unmapped_region_first_to_the_least_loaded_allowed_domain() {
        let mut reg = regioning(3, 1000.0);
        region(&mut reg, 0, 50, 0);
        region(&mut reg, 1000, 20, 1);
        let a = region(&mut reg, 2000, 40, 0);
        let b = region(&mut reg, 3000, 30, 0);
        for r in [a, b] {
            reg.regions.regions[r as usize].cache = None;
        }
        // Loads 50, 20, 0: the 40 goes to domain 2, then the 30 to domain 1 (20 < 40).
        let (mapped, moved, _) = reg.end_phase(Asid(0), Vec::new());
        assert_eq!((mapped, moved), (2, 0));
        assert_eq!(reg.regions.regions[a as usize].cache, Some(2));
        assert_eq!(reg.regions.regions[b as usize].cache, Some(1));
        // Partitioned to domains 0 and 1: both go to the less loaded of those.
        let mut reg = regioning(3, 1000.0);
        reg.partition = vec![(0, vec![0, 1])];
        region(&mut reg, 0, 50, 0);
        let c = region(&mut reg, 2000, 40, 0);
        reg.regions.regions[c as usize].cache = None;
        reg.end_phase(Asid(0), Vec::new());
        assert_eq!(reg.regions.regions[c as usize].cache, Some(1));
    }

    #[test]
    fn a_page_that_causes_most_of_its_regions_moves_leaves_the_region() {
        let mut reg = regioning(2, 1000.0);
        let hot = region(&mut reg, 0, 10, 1);
        let spread = region(&mut reg, 100, 10, 1);
        let few = region(&mut reg, 200, 10, 1);
        let pages = |reg: &Regioning, r: u32| reg.regions.regions[r as usize].pages.clone();
        // 12 of 21 moves on page 3 (over half, and at least 16 moves): out.
        for (i, &p) in pages(&reg, hot).iter().enumerate() {
            reg.regions.pages[p as usize].moves = if i == 3 { 12 } else { 1 };
        }
        // 20 moves, 2 a page: none dominates.
        for &p in &pages(&reg, spread) {
            reg.regions.pages[p as usize].moves = 2;
        }
        // 15 moves, all on one page: too few to judge.
        let first = pages(&reg, few)[0];
        reg.regions.pages[first as usize].moves = 15;
        assert_eq!(reg.shrink(Asid(0)), 1);
        let vpn3 = 3;
        let p3 = (0..reg.regions.pages.len()).find(|&p| reg.regions.pages[p].vpn == vpn3).unwrap();
        let seed = &reg.regions.regions[reg.regions.pages[p3].region as usize];
        assert_eq!((seed.pages.len(), seed.kind, seed.cache), (1, Kind::Seed, None));
        assert_eq!(pages(&reg, hot).len(), 9);
        assert_eq!(pages(&reg, spread).len(), 10);
        assert_eq!(pages(&reg, few).len(), 10);
        // Every count starts again.
        assert!(reg.regions.pages.iter().all(|p| p.moves == 0));
    }
}
