//! `page-migration`: the source's profile-driven online page migration
//! (spec numa-page-migration.md 2.4 to 2.6, and the defaults of its
//! section 7).
//!
//! Every `interval` of simulated time (once every core's clock has passed
//! it, as when the migration thread suspends the process), the pass takes
//! the pages the interconnect sampler (`machine.sampler`) recorded, adds
//! their counts per requesting node into each page's table, and moves every
//! page that is not frozen to the node with the most samples, if that is
//! not where it is. A moved page is frozen for `freeze` intervals (spec 7.1
//! (a): a cool-down that expires). Ties keep the page where it is (7.3);
//! a page needs `min_samples` samples to be considered (the source: none,
//! read as one). Beyond the source, a page that no node dominates (its
//! most-sampling node has less than `interleave_below` of its samples) can
//! be interleaved instead, as Carrefour does with widely shared pages.
//!
//! Moving a page ([`Machine::migrate_page`]) points its entry at a new
//! frame, invalidates its lines in every cache (dirty ones written back
//! first) and shoots down its TLB entries. Costs: under `stop-the-world`
//! every core running a thread of a moved page's process stops until
//! `pause_time + pages x copy_time` after the pass's time; in `background`
//! (Linux's `move_pages(2)`, no suspension) a helper on a CPU of its own
//! copies, and each such core pays one `shootdown_time` interrupt per pass.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::{counters, MechBuild, Mechanism, MechanismParams, PeriodCtx};
use crate::error::{Error, Issues, Result};
use crate::mem::tlb;
use crate::types::{Asid, CoreId};
use crate::units::Span;

/// How long a page's counts last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CountLife {
    /// Added up over the whole run (the source's "continuously monitor").
    #[default]
    Cumulative,
    /// Only the last interval's.
    Reset,
    /// Multiplied by `decay` at every pass, then the interval's added.
    Decay,
}

/// Whether the threads stop while pages move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MigrationMode {
    /// The source's: suspend the process, move, resume.
    #[default]
    StopTheWorld,
    /// `move_pages(2)` from a helper: only TLB shootdowns reach the threads.
    Background,
}

/// Params of `page-migration`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PageMigrationParams {
    /// Simulated time between passes (the source's 5 s).
    pub interval: Span,
    /// Intervals a moved page is not moved again.
    pub freeze: u32,
    /// How long counts last: `"cumulative"`, `"reset"` or `"decay"`.
    pub counts: CountLife,
    /// The factor of `"decay"`, in (0, 1).
    pub decay: f64,
    /// Samples a page needs before it may move.
    pub min_samples: u32,
    /// `"stop-the-world"` or `"background"`.
    pub mode: MigrationMode,
    /// Cost of moving one page (the source's Table 6: 98 us on average).
    pub copy_time: Span,
    /// Cost of suspending and resuming the process, per pass that moves pages.
    pub pause_time: Span,
    /// A TLB shootdown interrupt on a core running the process (background).
    pub shootdown_time: Span,
    /// Carrefour's answer to pages every node shares: a page whose
    /// most-sampling node has less than this share of its samples is
    /// interleaved (placed on node `page mod nodes`) instead of moved to
    /// that node; 0 (default, the source's policy) never.
    pub interleave_below: f64,
}

impl Default for PageMigrationParams {
    fn default() -> Self {
        PageMigrationParams {
            interval: Span::millis(5000.0),
            freeze: 3,
            counts: CountLife::Cumulative,
            decay: 0.5,
            min_samples: 1,
            mode: MigrationMode::StopTheWorld,
            copy_time: Span::micros(98.0),
            pause_time: Span::cycles(0),
            shootdown_time: Span::micros(2.0),
            interleave_below: 0.0,
        }
    }
}

impl MechanismParams for PageMigrationParams {
    fn build(&self, ctx: &MechBuild) -> Result<Box<dyn Mechanism>> {
        if ctx.machine.sampler.is_none() {
            let message = "page-migration reads the interconnect sampler: add a [machine.sampler] table";
            return Err(Error::config(ctx.loc.clone(), "invalid_value", message));
        }
        let mut issues = Issues::default();
        let interval = ctx.cycles(&mut issues, "interval", self.interval, 1);
        let copy = ctx.cycles(&mut issues, "copy_time", self.copy_time, 0);
        let pause = ctx.cycles(&mut issues, "pause_time", self.pause_time, 0);
        let shootdown = ctx.cycles(&mut issues, "shootdown_time", self.shootdown_time, 0);
        issues.check(
            self.decay > 0.0 && self.decay < 1.0,
            ctx.at("decay"),
            "out_of_range",
            format!("expected a factor between 0 and 1, got {}", self.decay),
        );
        issues.check(
            (0.0..=1.0).contains(&self.interleave_below),
            ctx.at("interleave_below"),
            "out_of_range",
            format!("expected a share between 0 and 1, got {}", self.interleave_below),
        );
        issues.finish()?;
        let nodes = ctx.machine.nodes() as usize;
        Ok(Box::new(PageMigration {
            params: self.clone(),
            nodes,
            interval,
            copy,
            pause,
            shootdown,
            pass: 0,
            pages: BTreeMap::new(),
            stats: PageMigrationStats::default(),
        }))
    }
}

counters! {
    /// What `page-migration` did.
    pub struct PageMigrationStats {
        /// Passes run.
        passes,
        /// Samples read from the sampler.
        samples,
        /// Samples of frames no page maps any more (moved since).
        stale_samples,
        /// Pages moved.
        migrations,
        /// Moves back to a node the page had left before.
        ping_pongs,
        /// Of the moves, pages shared evenly that were interleaved.
        interleaved,
        /// Candidate pages skipped because they were frozen.
        frozen,
        /// Pages skipped for having fewer than `min_samples` samples.
        below_threshold,
        /// Cached lines of moved pages invalidated.
        lines_invalidated,
        /// Of the moved pages' lines, those written back dirty.
        dirty_lines,
        /// TLB entries shot down.
        tlb_entries,
        /// Cycles charged to the threads (pauses and shootdowns), over all cores.
        overhead_cycles,
    }
}

/// What the policy keeps per page.
#[derive(Debug, Clone)]
struct PageState {
    counts: Vec<f64>,
    /// The pass that last moved it.
    moved: Option<u64>,
    /// The nodes it has left ([`crate::mem::machine::PageMove::returns`]).
    left: u64,
}

/// The mechanism.
#[derive(Debug)]
pub struct PageMigration {
    params: PageMigrationParams,
    nodes: usize,
    interval: u64,
    copy: u64,
    pause: u64,
    shootdown: u64,
    pass: u64,
    /// Per page (its TLB key: asid and virtual page), in key order.
    pages: BTreeMap<u64, PageState>,
    stats: PageMigrationStats,
}

impl PageMigration {
    /// Add the samples recorded since the last pass to the pages' counts;
    /// `owners` maps each frame to its page (the source's meminfo map,
    /// rebuilt per pass).
    fn gather(&mut self, ctx: &mut PeriodCtx<'_>, owners: &HashMap<u64, u64>) {
        let mut sampled: Vec<(u64, Vec<u32>)> = Vec::new();
        ctx.machine.drain_samples(ctx.time, |frame, counts| sampled.push((frame, counts.to_vec())));
        match self.params.counts {
            CountLife::Cumulative => {}
            CountLife::Reset => self.pages.values_mut().for_each(|p| p.counts.iter_mut().for_each(|c| *c = 0.0)),
            CountLife::Decay => {
                let f = self.params.decay;
                self.pages.values_mut().for_each(|p| p.counts.iter_mut().for_each(|c| *c *= f));
            }
        }
        for (frame, counts) in sampled {
            let n: u64 = counts.iter().map(|&c| c as u64).sum();
            self.stats.samples += n;
            let Some(&key) = owners.get(&frame) else {
                self.stats.stale_samples += n;
                continue;
            };
            let nodes = self.nodes;
            let page =
                self.pages.entry(key).or_insert_with(|| PageState { counts: vec![0.0; nodes], moved: None, left: 0 });
            for (total, &c) in page.counts.iter_mut().zip(&counts) {
                *total += c as f64;
            }
        }
    }
}

impl Mechanism for PageMigration {
    fn name(&self) -> &str {
        "page-migration"
    }

    fn period(&self) -> Option<u64> {
        Some(self.interval)
    }

    fn on_period(&mut self, mut ctx: PeriodCtx<'_>) -> Result<Vec<(CoreId, u64)>> {
        self.pass += 1;
        self.stats.passes += 1;
        let mut owners = HashMap::new();
        let mut homes = HashMap::new();
        for (asid, vpn, frame, node) in ctx.machine.mapped_pages() {
            owners.insert(frame, tlb::key(asid, vpn));
            homes.insert(tlb::key(asid, vpn), node);
        }
        self.gather(&mut ctx, &owners);
        let mut moved_in: Vec<Asid> = Vec::new();
        let mut moved = 0u64;
        for (&key, page) in &mut self.pages {
            let Some(&home) = homes.get(&key) else { continue };
            let total: f64 = page.counts.iter().sum();
            if total < self.params.min_samples.max(1) as f64 {
                self.stats.below_threshold += (total > 0.0) as u64;
                continue;
            }
            // The most-sampled node; ties keep the page where it is. A page
            // no node dominates goes to its interleaved node, if asked.
            let best = page.counts.iter().cloned().fold(f64::MIN, f64::max);
            let (asid, vpn) = (tlb::asid_of(key), tlb::vpn_of(key));
            let shared = best < self.params.interleave_below * total;
            let target = match shared {
                true => (vpn % self.nodes as u64) as u32,
                false => page.counts.iter().position(|&c| c == best).expect("a maximum") as u32,
            };
            if target == home || (!shared && page.counts[home as usize] == best) {
                continue;
            }
            if page.moved.is_some_and(|m| self.pass - m <= self.params.freeze as u64) {
                self.stats.frozen += 1;
                continue;
            }
            let Some(m) = ctx.machine.migrate_page(asid, vpn, target) else { continue };
            moved += 1;
            self.stats.migrations += 1;
            self.stats.interleaved += shared as u64;
            self.stats.ping_pongs += m.returns(&mut page.left) as u64;
            page.moved = Some(self.pass);
            self.stats.lines_invalidated += m.lines;
            self.stats.dirty_lines += m.dirty_lines;
            self.stats.tlb_entries += m.tlb_entries;
            if !moved_in.contains(&asid) {
                moved_in.push(asid);
            }
        }
        if moved == 0 {
            return Ok(Vec::new());
        }
        // The cores running a thread of a process whose pages moved.
        let cores = (ctx.running.iter().enumerate())
            .filter(|(_, r)| r.is_some_and(|(_, asid)| moved_in.contains(&asid)))
            .map(|(c, _)| c);
        let stalls: Vec<(CoreId, u64)> = match self.params.mode {
            MigrationMode::StopTheWorld => {
                let resume = ctx.time + self.pause + moved * self.copy;
                cores.map(|c| (CoreId(c as u32), resume.saturating_sub(ctx.clocks[c]))).collect()
            }
            MigrationMode::Background => cores.map(|c| (CoreId(c as u32), self.shootdown)).collect(),
        };
        self.stats.overhead_cycles += stalls.iter().map(|&(_, s)| s).sum::<u64>();
        Ok(stalls)
    }

    fn reset_stats(&mut self) {
        self.stats = PageMigrationStats::default();
    }

    fn results(&mut self) -> Vec<(&'static str, u64)> {
        self.stats.named()
    }
}
