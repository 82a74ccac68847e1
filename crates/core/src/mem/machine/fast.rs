//! The L1 shortcuts: a run of L1 hits, an L1 hit, and a reference to the
//! line touched last (see docs/architecture.md, "The shortcuts on the hot
//! path"). Each gives exactly what the general path would.

use super::{line_in_frame, Fast, Memo, Part, Stop, Tally};
use crate::mem::cache::Req;
use crate::mem::replacement::{HitUpdate, ReqKind};
use crate::mem::{cache, tlb};
use crate::types::{Access, AccessKind, Asid, LineAddr, TaskId};

impl Part<'_> {
    /// The common case as a loop: data references within one line that hit
    /// both the L1 DTLB and the L1 data cache, tallied, with both arrays'
    /// geometry held in registers. Stops before the first reference that
    /// needs more (an instruction fetch, a line-crossing reference, a miss,
    /// a write-through store), having changed nothing for it. Returns the
    /// references it ran, their cycles and where it stopped.
    #[inline(never)]
    pub(super) fn l1_run<const C: bool>(
        &mut self,
        c: usize,
        task: TaskId,
        asid: Asid,
        batch: &[Access],
        tally: &mut Tally,
    ) -> (usize, u64, Stop) {
        const NONE: (usize, u64, Stop) = (0, 0, Stop::Unknown);
        let Part { cores, tlbs, caches, memos, k, .. } = self;
        let (page_shift, line_shift) = (&k.page_shift, &k.line_shift);
        let ports = &cores[c];
        let Some(dtlb) = ports.dtlb else { return NONE };
        if ports.data.len == 0 {
            return NONE;
        }
        let (Some(tlb), Some(l1)) = (tlbs[dtlb].hit_run(), caches[ports.data.at(0)].hit_run()) else {
            return NONE;
        };
        let run = HitRunCtx { task, asid, page_shift: *page_shift, line_shift: *line_shift };
        let n = batch.len();
        // LRU in both (the common machine) gets a body with the clocks in
        // registers; any other policy dispatches on its kind at every hit.
        let (ran, memo, cycles, stop) = if tlb.lends_stamps(n) && l1.lends_stamps(n) {
            // Sets that fill their fingerprint vectors exactly (no padding
            // ways) get a body with the geometry as constants: the presets'
            // 4-way L1 TLBs and 4-, 8- and 12-way L1Ds.
            let strides = match (tlb.stride(), l1.stride()) {
                (t, l) if t == tlb.ways() && l == l1.ways() => (t, l),
                _ => (0, 0),
            };
            let (Some(tlb), Some(l1)) = (tlb.lru(n), l1.lru(n)) else { return NONE };
            match strides {
                (4, 4) => run.hits::<_, _, 4, 4, C>(tlb, l1, batch, tally),
                (4, 8) => run.hits::<_, _, 4, 8, C>(tlb, l1, batch, tally),
                (4, 12) => run.hits::<_, _, 4, 12, C>(tlb, l1, batch, tally),
                _ => run.hits::<_, _, 0, 0, C>(tlb, l1, batch, tally),
            }
        } else {
            run.hits::<_, _, 0, 0, C>(tlb, l1, batch, tally)
        };
        if ran > 0 {
            memos[c][0] = memo;
        }
        (ran, cycles, stop)
    }

    /// The common case in one body: the L1 TLB and the L1 cache both hit
    /// (tallied). On an L1 TLB hit whose line misses the L1 cache, the TLB
    /// hit is tallied and the line handed back, so the general path does not
    /// look the TLB up again; on an L1 TLB miss nothing has changed.
    #[inline(always)]
    pub(super) fn l1_hit<const C: bool>(
        &mut self,
        c: usize,
        req: &Req,
        asid: Asid,
        vaddr: u64,
        vline: u64,
        tally: &mut Tally,
    ) -> Fast {
        // Borrow the fields apart: one body, no re-indexing through `self`.
        let Part { cores, tlbs, caches, memos, k, .. } = self;
        let (page_shift, line_shift) = (&k.page_shift, &k.line_shift);
        let ports = &cores[c];
        let class = (req.kind == ReqKind::Ifetch) as usize;
        let Some(t) = ports.l1_tlb(req.kind) else { return Fast::Untranslated };
        let tlb = &mut tlbs[t];
        let Some(tslot) = tlb.find(tlb::key(asid, vaddr >> *page_shift)) else { return Fast::Untranslated };
        let frame = tlb.touch(tslot);
        tally.tlb[class] += 1;
        let line = line_in_frame(frame, vline, *page_shift, *line_shift);
        let cache = &mut caches[ports.path(req.kind).at(0)];
        let store = req.kind == ReqKind::Store;
        let slot = match cache.find(line) {
            // Under coherence (`C`) a store to a line not owned snoops first.
            Some(slot) if !store || (cache.write_back && (!C || cache.owned_at(slot))) => slot,
            _ => return Fast::Translated(line, tlb.latency_cycles),
        };
        cache.touch_hit(slot, req);
        tally.l1[class][req.kind as usize] += 1;
        memos[c][class] = Memo { vline: vline + 1, asid: asid.0, pline: line.0 };
        Fast::Hit(tlb.latency_cycles + cache.latency_cycles)
    }

    /// The shortcut for a reference to the line the core referenced last
    /// (7 of 8 references of a sequential 8-byte walk): if the translation is
    /// still the L1 TLB's most recent entry and the line the L1 cache's most
    /// recent one, and the policies say a repeated hit changes nothing, tally
    /// the hits without any lookup. Returns `None` to take the full path.
    #[inline(always)]
    pub(super) fn repeat<const C: bool>(
        &mut self,
        c: usize,
        req: &Req,
        asid: Asid,
        vline: u64,
        tally: &mut Tally,
    ) -> Option<u32> {
        if C && req.kind == ReqKind::Store {
            // A store may need a snoop: the general path decides.
            return None;
        }
        let class = (req.kind == ReqKind::Ifetch) as usize;
        let memo = self.memos[c][class];
        if memo.vline != vline + 1 || memo.asid != asid.0 {
            return None;
        }
        let ports = &self.cores[c];
        let l1 = &mut self.caches[ports.path(req.kind).at(0)];
        if !l1.write_back && req.kind == ReqKind::Store {
            return None;
        }
        let mut latency = l1.latency_cycles;
        let tlb = ports.l1_tlb(req.kind).map(|t| &self.tlbs[t]);
        if let Some(tlb) = tlb {
            let key = tlb::key(asid, (vline << self.k.line_shift) >> self.k.page_shift);
            if !tlb.rehit_possible(key) {
                return None;
            }
            latency += tlb.latency_cycles;
        }
        if !l1.rehit(LineAddr(memo.pline), req.kind) {
            return None;
        }
        tally.tlb[class] += tlb.is_some() as u64;
        tally.l1[class][req.kind as usize] += 1;
        Some(latency)
    }
}

/// Who runs a run of L1 hits ([`Machine::l1_run`]), and the machine's page
/// and line sizes.
struct HitRunCtx {
    task: TaskId,
    asid: Asid,
    page_shift: u32,
    line_shift: u32,
}

impl HitRunCtx {
    /// The run itself, with the TLB's and the L1's policies as `T` and `L`
    /// and their ways (and fingerprints) per set as `TS` and `LS` (0: any),
    /// and `C` whether caches are coherent (a store to a line not owned
    /// then ends the run), one body per combination the machine picks. Returns the references it ran,
    /// the memo of the last line, their cycles and where it stopped.
    #[inline(always)]
    fn hits<T: HitUpdate, L: HitUpdate, const TS: usize, const LS: usize, const C: bool>(
        &self,
        mut tlb: tlb::HitRun<'_, T>,
        mut l1: cache::HitRun<'_, L>,
        batch: &[Access],
        tally: &mut Tally,
    ) -> (usize, Memo, u64, Stop) {
        let HitRunCtx { task, asid, page_shift, line_shift } = *self;
        let mut stores = 0u64;
        let mut ran = 0;
        // The last line run, where it sits in the TLB and the L1: a reference
        // to the same line finds the same slots (nothing moved in between),
        // so it skips the searches but not the hits' effects.
        let (mut vline_run, mut line, mut slots) = (u64::MAX, LineAddr(0), None);
        let mut stop = Stop::Unknown;
        for a in batch {
            let vaddr = a.addr.0;
            let vline = vaddr >> line_shift;
            let split = vaddr.saturating_add(a.size.max(1) as u64 - 1) >> line_shift != vline;
            let store = a.kind == AccessKind::Store;
            if split || a.kind == AccessKind::Ifetch || (store && !l1.write_back) {
                break;
            }
            let (tslot, slot) = match slots {
                Some(s) if vline == vline_run => s,
                _ => {
                    let Some(tslot) = tlb.find_in::<TS>(tlb::key(asid, vaddr >> page_shift)) else {
                        stop = Stop::TlbMiss;
                        break;
                    };
                    // Peek at the frame before touching: a line miss leaves the TLB as it was.
                    let frame = tlb.frame_of::<TS>(tslot);
                    let next = line_in_frame(frame, vline, page_shift, line_shift);
                    let Some(slot) = l1.find_in::<LS>(next) else {
                        stop = Stop::LineMiss(tslot, next);
                        break;
                    };
                    (vline_run, line, slots) = (vline, next, Some((tslot, slot)));
                    (tslot, slot)
                }
            };
            if C && store && !l1.owned::<LS>(slot) {
                // Under coherence: the store snoops first, on the general path.
                break;
            }
            tlb.touch::<TS>(tslot);
            l1.touch_hit::<LS>(slot, &Req { kind: a.kind.into(), pc: a.pc, task });
            stores += store as u64;
            ran += 1;
        }
        let cycles = ran as u64 * (tlb.latency_cycles + l1.latency_cycles) as u64;
        tlb.settle();
        l1.settle();
        if ran > 0 {
            tally.tlb[0] += ran as u64;
            tally.l1[0][ReqKind::Load as usize] += ran as u64 - stores;
            tally.l1[0][ReqKind::Store as usize] += stores;
        }
        let memo = Memo { vline: vline_run.wrapping_add(1), asid: asid.0, pline: line.0 };
        (ran, memo, cycles, stop)
    }
}
