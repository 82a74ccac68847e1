//! `numa-balancing`: Linux's automatic NUMA balancing as users run it
//! (kernel/sched/fair.c `task_numa_work`, mm `change_prot_numa`,
//! `task_numa_fault`, `should_numa_migrate_memory`), the baseline the
//! page-migration study compares against.
//!
//! Every scan period (from `scan_delay` after the start, then adapting
//! between `scan_period_min` and `scan_period_max`) each running process
//! has the next `scan_size` of its mapped pages, in address order and
//! wrapping, protected: their TLB entries are flushed and the next touch of
//! each takes a NUMA hinting fault, whose handler costs the faulting thread
//! `fault_time` (charged at the touch, inside the walk). A fault from
//! another node than the page's moves the page there if the page's previous
//! fault came from that same node (the two-stage filter against
//! ping-ponging); the move costs `copy_time`, charged to a core of that node
//! running the process. The scan period halves after a period in which
//! faults moved pages and doubles after one in which none did (Linux
//! adapts it from the share of local and shared faults; this keeps its
//! direction, not its formula).
//!
//! The mechanism acts at points every `tick` of simulated time: faults are
//! read and pages moved then, up to a tick after the fault (Linux moves the
//! page inside the fault handler).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{counters, MechBuild, Mechanism, MechanismParams, PeriodCtx};
use crate::error::{Issues, Result};
use crate::types::{Asid, CoreId};
use crate::units::{ByteSize, Span};

/// Params of `numa-balancing` (Linux's sysctl defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NumaBalancingParams {
    /// `numa_balancing_scan_delay_ms`: the first scan, after the start.
    pub scan_delay: Span,
    /// `numa_balancing_scan_period_min_ms`.
    pub scan_period_min: Span,
    /// `numa_balancing_scan_period_max_ms`.
    pub scan_period_max: Span,
    /// `numa_balancing_scan_size_mb`: address space protected per scan.
    pub scan_size: ByteSize,
    /// A hinting fault's handler, on the faulting thread.
    pub fault_time: Span,
    /// Moving one page.
    pub copy_time: Span,
    /// How often the mechanism reads the faults (at most this late after a
    /// fault, a page moves).
    pub tick: Span,
}

impl Default for NumaBalancingParams {
    fn default() -> Self {
        NumaBalancingParams {
            scan_delay: Span::millis(1000.0),
            scan_period_min: Span::millis(1000.0),
            scan_period_max: Span::millis(60000.0),
            scan_size: ByteSize(256 << 20),
            fault_time: Span::micros(1.0),
            copy_time: Span::micros(10.0),
            tick: Span::millis(10.0),
        }
    }
}

impl MechanismParams for NumaBalancingParams {
    fn build(&self, ctx: &MechBuild) -> Result<Box<dyn Mechanism>> {
        let mut issues = Issues::default();
        let delay = ctx.cycles(&mut issues, "scan_delay", self.scan_delay, 0);
        let min = ctx.cycles(&mut issues, "scan_period_min", self.scan_period_min, 1);
        let max = ctx.cycles(&mut issues, "scan_period_max", self.scan_period_max, 1);
        let fault = ctx.cycles(&mut issues, "fault_time", self.fault_time, 0);
        let copy = ctx.cycles(&mut issues, "copy_time", self.copy_time, 0);
        let tick = ctx.cycles(&mut issues, "tick", self.tick, 1);
        issues.check(min <= max, ctx.at("scan_period_max"), "out_of_range", "expected at least scan_period_min");
        issues.check(fault <= u32::MAX as u64, ctx.at("fault_time"), "out_of_range", "expected under 2^32 cycles");
        let pages = self.scan_size.0 / ctx.machine.memory.page_bytes.0.max(1);
        issues.check(pages >= 1, ctx.at("scan_size"), "out_of_range", "expected at least one page");
        issues.finish()?;
        Ok(Box::new(NumaBalancing {
            min,
            max,
            fault: fault as u32,
            copy,
            tick,
            pages,
            period: min,
            next_scan: delay,
            cursor: HashMap::new(),
            last_fault: HashMap::new(),
            moved_since_scan: false,
            stats: NumaBalancingStats::default(),
        }))
    }
}

counters! {
    /// What `numa-balancing` did (named as Linux's /proc/vmstat counters).
    pub struct NumaBalancingStats {
        /// Scans (one per process and scan period).
        scans,
        /// Entries protected (`numa_pte_updates`).
        numa_pte_updates,
        /// Hinting faults (`numa_hint_faults`).
        numa_hint_faults,
        /// Of them, from the page's own node (`numa_hint_faults_local`).
        numa_hint_faults_local,
        /// Pages moved (`numa_pages_migrated`).
        numa_pages_migrated,
        /// Moves back to a node the page had left before.
        ping_pongs,
        /// Remote faults the two-stage filter held back.
        filtered,
        /// Cycles of the moves charged to the threads.
        copy_cycles,
        /// The scan period at the end (cycles).
        scan_period,
    }
}

/// The mechanism.
#[derive(Debug)]
pub struct NumaBalancing {
    min: u64,
    max: u64,
    fault: u32,
    copy: u64,
    tick: u64,
    /// Pages protected per scan.
    pages: u64,
    period: u64,
    next_scan: u64,
    /// Per address space: the virtual page after the last one scanned.
    cursor: HashMap<u32, u64>,
    /// Per page (asid, vpn): the node of its last fault, and the nodes it
    /// left ([`crate::mem::machine::PageMove::returns`]).
    last_fault: HashMap<(u32, u64), (u32, u64)>,
    moved_since_scan: bool,
    stats: NumaBalancingStats,
}

impl NumaBalancing {
    /// Protect the next window of every running process's mapped pages.
    fn scan(&mut self, ctx: &mut PeriodCtx<'_>) {
        let mut asids: Vec<Asid> = ctx.running.iter().flatten().map(|&(_, a)| a).collect();
        asids.sort_unstable_by_key(|a| a.0);
        asids.dedup();
        for asid in asids {
            let mut vpns: Vec<u64> = ctx.machine.mapped_pages().filter(|p| p.0 == asid).map(|p| p.1).collect();
            if vpns.is_empty() {
                continue;
            }
            vpns.sort_unstable();
            let cursor = self.cursor.get(&asid.0).copied().unwrap_or(0);
            let start = vpns.partition_point(|&v| v < cursor) % vpns.len();
            let take = (self.pages as usize).min(vpns.len());
            let window: Vec<u64> = (0..take).map(|i| vpns[(start + i) % vpns.len()]).collect();
            self.stats.numa_pte_updates += ctx.machine.protect_pages(asid, &window);
            self.cursor.insert(asid.0, window.last().map_or(0, |v| v + 1));
            self.stats.scans += 1;
        }
    }
}

impl Mechanism for NumaBalancing {
    fn name(&self) -> &str {
        "numa-balancing"
    }

    fn attach(&mut self, machine: &mut crate::mem::machine::Machine) -> Result<()> {
        machine.enable_numa_hinting(self.fault);
        Ok(())
    }

    fn period(&self) -> Option<u64> {
        Some(self.tick)
    }

    fn on_period(&mut self, mut ctx: PeriodCtx<'_>) -> Result<Vec<(CoreId, u64)>> {
        let mut stalls: Vec<(CoreId, u64)> = Vec::new();
        for (asid, vpn, by, home) in ctx.machine.take_hinting_faults() {
            self.stats.numa_hint_faults += 1;
            let entry = self.last_fault.entry((asid.0, vpn)).or_insert((by, 0));
            let previous = std::mem::replace(&mut entry.0, by);
            if by == home {
                self.stats.numa_hint_faults_local += 1;
                continue;
            }
            if previous != by {
                self.stats.filtered += 1;
                continue;
            }
            let Some(m) = ctx.machine.migrate_page(asid, vpn, by) else { continue };
            self.stats.numa_pages_migrated += 1;
            self.stats.ping_pongs += m.returns(&mut entry.1) as u64;
            self.moved_since_scan = true;
            // The faulting thread moves the page: a core of that node running the process.
            let core = (0..ctx.running.len()).find(|&c| {
                ctx.running[c].is_some_and(|(_, a)| a == asid) && ctx.machine.node_of_core(CoreId(c as u32)) == by
            });
            if let Some(c) = core {
                stalls.push((CoreId(c as u32), self.copy));
                self.stats.copy_cycles += self.copy;
            }
        }
        if ctx.time >= self.next_scan {
            if self.stats.scans > 0 {
                self.period = match self.moved_since_scan {
                    true => (self.period / 2).max(self.min),
                    false => (self.period * 2).min(self.max),
                };
            }
            self.moved_since_scan = false;
            self.scan(&mut ctx);
            self.next_scan = ctx.time + self.period;
        }
        Ok(stalls)
    }

    fn reset_stats(&mut self) {
        self.stats = NumaBalancingStats::default();
    }

    fn results(&mut self) -> Vec<(&'static str, u64)> {
        self.stats.scan_period = self.period;
        self.stats.named()
    }
}
