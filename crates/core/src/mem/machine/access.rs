//! A batch of references through a socket's part: the L1 shortcuts first,
//! then the general path, and the counters credited once per batch.

use super::{line_in_frame, Fast, Memo, Part, Stop, Tally};
use crate::counters::TaskStats;
use crate::mem::cache::Req;
use crate::mem::replacement::ReqKind;
use crate::types::{Access, AccessKind, Asid, CoreId, LineAddr, TaskId};

impl Part<'_> {
    /// [`Machine::access_batch`], for a core of this socket.
    pub fn run(&mut self, core: CoreId, task: TaskId, asid: Asid, batch: &[Access]) -> u64 {
        self.access_batch(core.0 as usize - self.first_core, task, asid, batch)
    }

    /// The counters of `task`.
    pub fn task(&self, task: TaskId) -> &TaskStats {
        &self.tasks[task.0 as usize]
    }

    /// [`Machine::access_batch`] on the socket's core `c`.
    pub(super) fn access_batch(&mut self, c: usize, task: TaskId, asid: Asid, batch: &[Access]) -> u64 {
        match self.coherence.is_some() {
            false => self.batch::<false>(c, task, asid, batch),
            true => self.batch::<true>(c, task, asid, batch),
        }
    }

    /// The batch, with coherence (`C`: the shortcuts leave stores that may
    /// need a snoop to the general path, and with a sampler each reference
    /// that may make a transaction is told its time, its core's clock as it
    /// issues) or without.
    #[inline(always)]
    fn batch<const C: bool>(&mut self, c: usize, task: TaskId, asid: Asid, batch: &[Access]) -> u64 {
        let mut tally = Tally::default();
        let mut stall = 0u64;
        let mut next = 0;
        // With a sampler, which reads each transaction's time: the core's
        // clock when the batch began, and the instructions run since.
        let timed = C && self.coherence.as_deref().is_some_and(|co| co.sampler.is_some());
        let start = if timed { self.coherence.as_deref().map_or(0, |co| co.clock()) } else { 0 };
        let mut instructions = 0u64;
        while next < batch.len() {
            // Migration prefetches issue between references, one at a time.
            let draining = !self.migration_queues[c].lines.is_empty();
            // A run pays for its setup over a few references: not worth it
            // for a lone data reference between instruction fetches.
            let fetch = |i: usize| batch.get(i).is_some_and(|a| a.kind == AccessKind::Ifetch);
            if self.k.shortcuts && !draining && !fetch(next) && !fetch(next + 1) {
                let (hits, cycles, stop) = self.l1_run::<C>(c, task, asid, &batch[next..], &mut tally);
                if timed {
                    instructions += batch[next..next + hits].iter().map(|a| a.instrs as u64).sum::<u64>();
                }
                next += hits;
                stall += cycles;
                if next == batch.len() {
                    break;
                }
                if timed {
                    self.issue_at(start, instructions + batch[next].instrs as u64, stall);
                }
                if let Some(latency) = self.resume(c, task, asid, &batch[next], stop, &mut tally) {
                    stall += latency as u64;
                    instructions += batch[next].instrs as u64;
                    next += 1;
                    continue;
                }
            }
            let a = &batch[next];
            if timed {
                instructions += a.instrs as u64;
                self.issue_at(start, instructions, stall);
            }
            let latency = self.general::<C>(c, task, asid, a, &mut tally);
            stall += latency as u64;
            if draining {
                self.drain_migration_queue(c, a.instrs as f64 * self.k.base_cpi + latency as f64);
            }
            next += 1;
        }
        self.close_batch(c, task, batch, &tally, stall)
    }

    /// Under coherence: the reference about to run issues after
    /// `instructions` of the batch and `stall` cycles from `start`.
    #[inline(always)]
    fn issue_at(&mut self, start: u64, instructions: u64, stall: u64) {
        let now = start + (instructions as f64 * self.k.base_cpi) as u64 + stall;
        if let Some(co) = self.coherence.as_deref_mut() {
            co.issue_at(now);
        }
    }

    /// One reference by the general path.
    #[inline(always)]
    fn general<const C: bool>(&mut self, c: usize, task: TaskId, asid: Asid, a: &Access, tally: &mut Tally) -> u32 {
        let req = Req { kind: a.kind.into(), pc: a.pc, task };
        let first = a.addr.0 >> self.k.line_shift;
        let last = a.addr.0.saturating_add(a.size.max(1) as u64 - 1) >> self.k.line_shift;
        if first == last {
            self.access_one::<C>(c, &req, asid, a.addr.0, first, tally)
        } else {
            self.access_split(c, &req, asid, a)
        }
    }

    /// Credit a batch's tallied hits, references, instructions and stalls.
    #[inline(always)]
    pub(super) fn close_batch(&mut self, c: usize, task: TaskId, batch: &[Access], tally: &Tally, stall: u64) -> u64 {
        self.credit(c, task, tally);
        self.notebook.pass();
        let stats = &mut self.tasks[task.0 as usize];
        stats.accesses += batch.len() as u64;
        stats.instructions += batch.iter().map(|a| a.instrs as u64).sum::<u64>();
        stats.stall_cycles += stall;
        stall
    }

    /// Add the hits the shortcuts tallied to the L1 caches, the L1 TLBs and the task.
    pub(super) fn credit(&mut self, c: usize, task: TaskId, tally: &Tally) {
        let ports = self.cores[c];
        let stats = &mut self.tasks[task.0 as usize];
        for kind in [ReqKind::Load, ReqKind::Store, ReqKind::Ifetch] {
            let n = tally.l1[(kind == ReqKind::Ifetch) as usize][kind as usize];
            if n > 0 {
                let l1 = ports.path(kind).at(0);
                self.caches[l1].count_hits(kind, n);
                stats.levels[self.cache_level[l1] as usize].hits[kind as usize] += n;
            }
        }
        for (class, kind) in [(0, ReqKind::Load), (1, ReqKind::Ifetch)] {
            if let (Some(t), n @ 1..) = (ports.l1_tlb(kind), tally.tlb[class]) {
                self.tlbs[t].stats.hits += n;
                stats.tlb.l1_hits += n;
            }
        }
    }

    /// The reference a run of L1 hits stopped at, taken up where the run
    /// left it; `None` if the run knows nothing about it.
    #[inline(always)]
    pub(super) fn resume(
        &mut self,
        c: usize,
        task: TaskId,
        asid: Asid,
        a: &Access,
        stop: Stop,
        tally: &mut Tally,
    ) -> Option<u32> {
        let dtlb = self.cores[c].dtlb?;
        let req = Req { kind: a.kind.into(), pc: a.pc, task };
        let vline = a.addr.0 >> self.k.line_shift;
        let (line, t, missed) = match stop {
            Stop::Unknown => return None,
            Stop::TlbMiss => {
                self.tlbs[dtlb].count_miss();
                let (frame, t) = self.translate_miss(c, dtlb, &req, asid, a.addr.0 >> self.k.page_shift);
                (line_in_frame(frame, vline, self.k.page_shift, self.k.line_shift), t, false)
            }
            Stop::LineMiss(slot, line) => {
                let tlb = &mut self.tlbs[dtlb];
                tlb.touch(slot);
                tally.tlb[0] += 1;
                (line, tlb.latency_cycles, true)
            }
        };
        self.memos[c][0] = Memo { vline: vline + 1, asid: asid.0, pline: line.0 };
        Some(t + self.access_line(c, line, &req, missed))
    }

    /// A reference within one line: the common case, kept short.
    #[inline(always)]
    pub(super) fn access_one<const C: bool>(
        &mut self,
        c: usize,
        req: &Req,
        asid: Asid,
        vaddr: u64,
        vline: u64,
        tally: &mut Tally,
    ) -> u32 {
        let fast = if self.k.shortcuts {
            if let Some(latency) = self.repeat::<C>(c, req, asid, vline, tally) {
                return latency;
            }
            self.l1_hit::<C>(c, req, asid, vaddr, vline, tally)
        } else {
            Fast::Untranslated
        };
        let (line, t) = match fast {
            Fast::Hit(latency) => return latency,
            Fast::Translated(line, t) => (line, t),
            Fast::Untranslated => {
                let (paddr, t) = self.translate(c, req, asid, vaddr);
                (LineAddr(paddr >> self.k.line_shift), t)
            }
        };
        self.memos[c][(req.kind == ReqKind::Ifetch) as usize] = Memo { vline: vline + 1, asid: asid.0, pline: line.0 };
        t + self.access_line(c, line, req, false)
    }

    /// A reference that crosses line (and maybe page) boundaries.
    pub(super) fn access_split(&mut self, c: usize, req: &Req, asid: Asid, a: &Access) -> u32 {
        let first = a.addr.0 >> self.k.line_shift;
        let last = a.addr.0.saturating_add(a.size.max(1) as u64 - 1) >> self.k.line_shift;
        let mut worst = 0;
        let mut page = (u64::MAX, 0, 0);
        for vline in first..=last {
            let vaddr = vline << self.k.line_shift;
            if vaddr >> self.k.page_shift != page.0 {
                let (paddr, t) = self.translate(c, req, asid, vaddr.max(a.addr.0));
                page = (vaddr >> self.k.page_shift, paddr >> self.k.page_shift, t);
            }
            let line = line_in_frame(page.1, vline, self.k.page_shift, self.k.line_shift);
            worst = worst.max(page.2 + self.access_line(c, line, req, false));
        }
        worst
    }
}
