//! Address translation: the L1 TLB, the L2 TLB, page walks (fixed or radix,
//! with their entry reads through the data caches) and the TLB fills.

use super::Part;
use crate::mem::cache::Req;
use crate::mem::notes::Note;
use crate::mem::replacement::ReqKind;
use crate::mem::tlb;
use crate::mem::tlb::WalkModel;
use crate::types::{Asid, LineAddr, TaskId};

impl Part<'_> {
    /// Translate a virtual address; returns the physical address and the
    /// cycles translation cost. An L1 TLB hit is handled here; the rest in
    /// [`Machine::translate_miss`].
    #[inline(always)]
    pub(super) fn translate(&mut self, c: usize, req: &Req, asid: Asid, vaddr: u64) -> (u64, u32) {
        let vpn = vaddr >> self.k.page_shift;
        let offset = vaddr & ((1 << self.k.page_shift) - 1);
        let Some(l1) = self.cores[c].l1_tlb(req.kind) else {
            let (entry, fault) = self.page_table.translate_hinted(asid, vpn, self.cores[c].node);
            return ((entry.frame << self.k.page_shift) | offset, fault as u32 * self.k.hint_fault_cycles);
        };
        let key = tlb::key(asid, vpn);
        let (frame, latency) = match self.tlbs[l1].lookup(key) {
            Some(frame) => {
                self.tasks[req.task.0 as usize].tlb.l1_hits += 1;
                if self.notebook.covers_tlb(0) {
                    self.notebook.note(Note::Tlb { i: 0, task: req.task, kind: req.kind, key, hit: true, stays: true });
                }
                (frame, self.tlbs[l1].latency_cycles)
            }
            None => self.translate_miss(c, l1, req, asid, vpn),
        };
        ((frame << self.k.page_shift) | offset, latency)
    }

    /// After an L1 TLB miss: the L2 TLB, else a page walk; fills the TLBs.
    /// Returns the frame and the cycles.
    #[inline(never)]
    pub(super) fn translate_miss(&mut self, c: usize, l1: usize, req: &Req, asid: Asid, vpn: u64) -> (u64, u32) {
        let key = tlb::key(asid, vpn);
        let task = req.task.0 as usize;
        let stlb = self.cores[c].stlb;
        // The L2 TLB's set and the page table are read next and may be cold
        // in the host's caches: start all their host misses at once.
        if let Some(s) = stlb {
            self.tlbs[s].prefetch(key);
        }
        self.page_table.prefetch(asid, vpn);
        self.tasks[task].tlb.l1_misses += 1;
        let victim_fill = self.k.l2_victim_fill;
        let mut observe = |i: usize, hit: bool, stays: bool| {
            if self.notebook.covers_tlb(i) {
                self.notebook.note(Note::Tlb { i: i as u8, task: req.task, kind: req.kind, key, hit, stays });
            }
        };
        observe(0, false, true);
        let (frame, latency) = match stlb.map(|s| (s, self.tlbs[s].lookup(key))) {
            Some((s, Some(frame))) => {
                observe(1, true, !victim_fill);
                self.tasks[task].tlb.l2_hits += 1;
                if victim_fill {
                    self.tlbs[s].remove(key);
                }
                (frame, self.tlbs[s].latency_cycles)
            }
            found => {
                if found.is_some() {
                    observe(1, false, !victim_fill);
                    self.tasks[task].tlb.l2_misses += 1;
                }
                let (entry, fault) = self.page_table.translate_hinted(asid, vpn, self.cores[c].node);
                let frame = entry.frame;
                let cycles = self.walk_cost(c, req, asid, vpn);
                let t = &mut self.tasks[task].tlb;
                t.walks += 1;
                t.walk_cycles += cycles as u64;
                if let (Some(s), false) = (stlb, victim_fill) {
                    self.tlbs[s].insert(key, frame);
                    self.place_tlb(1, req.task, key);
                }
                // A NUMA hinting fault runs its handler on the faulting thread.
                (frame, cycles + fault as u32 * self.k.hint_fault_cycles)
            }
        };
        let victim = self.tlbs[l1].insert(key, frame);
        self.place_tlb(0, req.task, key);
        if let (Some((vkey, vframe)), Some(s), true) = (victim, stlb, victim_fill) {
            if !self.tlbs[s].probe(vkey) {
                self.tlbs[s].insert(vkey, vframe);
            }
            // The victim is this task's if its asid is (threads share one).
            if tlb::asid_of(vkey) == asid {
                self.place_tlb(1, req.task, vkey);
            }
        }
        (frame, latency)
    }

    /// Mirror a TLB insert in `task`'s shadow of TLB level `i`.
    #[inline]
    pub(super) fn place_tlb(&mut self, i: usize, task: TaskId, key: u64) {
        if self.notebook.covers_tlb(i) {
            self.notebook.note(Note::PlaceTlb { i: i as u8, task, key });
        }
    }

    /// Cycles of a page walk: fixed, or the page-table entry reads through
    /// the core's data caches plus the fixed overhead.
    pub(super) fn walk_cost(&mut self, c: usize, req: &Req, asid: Asid, vpn: u64) -> u32 {
        match self.k.walk {
            WalkModel::Fixed => self.k.walk_latency,
            WalkModel::Radix => {
                let walk = Req { kind: ReqKind::Walk, pc: req.pc, task: req.task };
                let mut cycles = self.k.walk_latency;
                for level in 0..self.k.radix_levels {
                    let pte = self.page_table.entry_addr(asid, vpn, level, self.k.radix_levels, self.cores[c].node);
                    let line = LineAddr(pte >> self.k.line_shift);
                    match self.walks.as_deref_mut() {
                        // The caches split: the entry's side reads it, and adds its cycles.
                        Some(walks) => walks.push(line),
                        None => cycles += self.access_line(c, line, &walk, false),
                    }
                }
                cycles
            }
        }
    }
}
