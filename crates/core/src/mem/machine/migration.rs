//! Moving a page to another node (page migration): the page table points
//! at a new frame, every cached line of the old frame is invalidated (dirty
//! ones written back first), and every TLB entry of the page is shot down.

use super::Machine;
use crate::mem::cache::Scope;
use crate::mem::tlb;
use crate::types::{Asid, LineAddr};

/// What moving one page did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageMove {
    /// The node it left.
    pub from: u32,
    /// The node it is on now.
    pub to: u32,
    /// Cached copies of its lines removed, in every cache.
    pub lines: u64,
    /// Of its lines, those some cache held dirty: written to the old frame
    /// before the copy.
    pub dirty_lines: u64,
    /// TLB entries of the page removed (the shootdown).
    pub tlb_entries: u64,
}

impl PageMove {
    /// Whether the page came back to a node it had left before (a
    /// ping-pong), given `left`, the nodes it has left (bit `n`: node `n`,
    /// nodes 0 to 63), to which this move's is added.
    pub fn returns(&self, left: &mut u64) -> bool {
        let back = self.to < 64 && *left & (1 << self.to) != 0;
        if self.from < 64 {
            *left |= 1 << self.from;
        }
        back
    }
}

impl Machine {
    /// Move page `vpn` of `asid` to a frame on `node`. `None` (nothing
    /// changed) if the page is not mapped, is on `node` already, or `node`
    /// has no frame left for it.
    pub fn migrate_page(&mut self, asid: Asid, vpn: u64, node: u32) -> Option<PageMove> {
        let (old, new) = self.page_table.move_page(asid, vpn, node)?;
        let lines_per_page = 1u64 << (self.k.page_shift - self.k.line_shift);
        let first = old.frame << (self.k.page_shift - self.k.line_shift);
        let mut removed = std::mem::take(&mut self.scratch);
        let (mut lines, mut dirty_lines) = (0, 0);
        for line in (first..first + lines_per_page).map(LineAddr) {
            let mut dirty_from = None;
            for (c, cache) in self.caches.iter_mut().enumerate() {
                removed.clear();
                cache.remove(Scope::Line(line), &mut removed);
                for ev in &removed {
                    lines += 1;
                    if ev.dirty {
                        dirty_from = Some(self.cache_node[c]);
                    }
                }
            }
            if let Some(from) = dirty_from {
                dirty_lines += 1;
                let home = &mut self.nodes[old.node as usize];
                home.writes += 1;
                home.remote_writes += (from != old.node) as u64;
            }
        }
        self.scratch = removed;
        let key = tlb::key(asid, vpn);
        let tlb_entries = self.tlbs.iter_mut().map(|t| t.remove(key) as u64).sum();
        // The shortcuts remember physical lines.
        self.memos.iter_mut().for_each(|m| *m = Default::default());
        Some(PageMove { from: old.node, to: new.node, lines, dirty_lines, tlb_entries })
    }

    /// NUMA hinting faults cost `cycles` each from now on (Linux's
    /// automatic NUMA balancing, `mech::numa_balancing`).
    pub fn enable_numa_hinting(&mut self, cycles: u32) {
        self.k.hint_fault_cycles = cycles;
    }

    /// Protect the mapped pages `vpns` of `asid` so that their next touch
    /// takes a NUMA hinting fault, and flush the address space's TLB entries
    /// (a range flush); returns the entries updated.
    pub fn protect_pages(&mut self, asid: Asid, vpns: &[u64]) -> u64 {
        let updated = self.page_table.protect(asid, vpns);
        for core in 0..self.cores.len() {
            self.flush_tlbs(crate::types::CoreId(core as u32), Some(asid));
        }
        self.memos.iter_mut().for_each(|m| *m = Default::default());
        updated
    }

    /// The NUMA hinting faults since the last call: each page's address
    /// space, virtual page, the touching core's node and the page's node.
    pub fn take_hinting_faults(&mut self) -> Vec<(Asid, u64, u32, u32)> {
        let faults = self.page_table.take_faults();
        faults.into_iter().map(|(key, by, home)| (tlb::asid_of(key), tlb::vpn_of(key), by, home)).collect()
    }

    /// The node of `core`'s socket.
    pub fn node_of_core(&self, core: crate::types::CoreId) -> u32 {
        self.cores[core.0 as usize].node
    }

    /// Every mapped page: its address space, virtual page number, frame and
    /// node.
    pub fn mapped_pages(&self) -> impl Iterator<Item = (Asid, u64, u64, u32)> + '_ {
        self.page_table.pages().map(|(key, e)| (tlb::asid_of(key), tlb::vpn_of(key), e.frame, e.node))
    }

    /// The pages the interconnect sampler has recorded (and no migration
    /// pass has taken) as of [`Machine::finish_sampling`], in page order:
    /// one row per page and requesting node with samples.
    pub fn sampled_pages(&self) -> Vec<SampledPage> {
        let Some(sampler) = self.sampler() else { return Vec::new() };
        let owners: std::collections::HashMap<u64, (Asid, u64, u32)> =
            self.mapped_pages().map(|(asid, vpn, frame, node)| (frame, (asid, vpn, node))).collect();
        let mut rows: Vec<SampledPage> = sampler
            .rows()
            .filter_map(|(frame, counts)| owners.get(&frame).map(|&owner| (owner, counts)))
            .flat_map(|((asid, vpn, home), counts)| {
                (counts.iter().enumerate().filter(|(_, &n)| n > 0)).map(move |(by, &n)| SampledPage {
                    asid: asid.0,
                    vpn,
                    home,
                    node: by as u32,
                    samples: n as u64,
                })
            })
            .collect();
        rows.sort_by_key(|r| (r.asid, r.vpn, r.node));
        rows
    }
}

/// Samples of one page by the cores of one node (a row of the results'
/// `pages` table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SampledPage {
    /// The page's address space.
    pub asid: u32,
    /// Its virtual page number.
    pub vpn: u64,
    /// The node holding it at the end of the run.
    pub home: u32,
    /// The requesting cores' node.
    pub node: u32,
    /// Samples.
    pub samples: u64,
}
