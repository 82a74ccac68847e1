//! The sockets apart: a socket's part of the machine, and the shares of what
//! the sockets share, for a socket simulated on a thread of its own.

use std::ops::Range;

use super::{Coherence, Machine, Part, Sampler, Share};
use crate::counters::NodeStats;
use crate::types::{Asid, CoreId};

impl Machine {
    /// The socket of `core`, and the core's index within it.
    pub(super) fn locate(&self, core: CoreId) -> (usize, usize) {
        let c = core.0 as usize;
        (c / self.cores_per_socket, c % self.cores_per_socket)
    }

    /// The machine's caches, TLBs and cores that belong to `socket`.
    pub(super) fn ranges(&self, socket: usize) -> (Range<usize>, Range<usize>, Range<usize>) {
        let start = self.sockets[socket];
        let end = self.sockets.get(socket + 1).map_or((self.caches.len(), self.tlbs.len()), |b| (b.cache, b.tlb));
        let cores = socket * self.cores_per_socket..(socket + 1) * self.cores_per_socket;
        (start.cache..end.0, start.tlb..end.1, cores)
    }

    /// Socket `socket`'s part of the machine.
    pub(super) fn part(&mut self, socket: usize) -> Part<'_> {
        let (caches, tlbs, cores) = self.ranges(socket);
        self.span(caches, tlbs, cores, false)
    }

    /// The part that runs `core`'s references, and the core's index in
    /// it: its socket's, or under coherence the whole machine's (a store
    /// on one socket invalidates copies on the others).
    pub(super) fn part_of(&mut self, core: CoreId) -> (Part<'_>, usize) {
        if self.wide.is_none() {
            let (socket, c) = self.locate(core);
            return (self.part(socket), c);
        }
        let c = core.0 as usize;
        let node = self.cores[c].node;
        if let Some(co) = self.coherence.as_deref_mut() {
            co.run_on(c, node);
        }
        let (caches, tlbs, cores) = (0..self.caches.len(), 0..self.tlbs.len(), 0..self.cores.len());
        (self.span(caches, tlbs, cores, true), c)
    }

    /// The part over these caches, TLBs and cores: one socket's, wired
    /// from its first cache and TLB, or (`wide`) every socket's, wired
    /// machine-wide, with coherence.
    fn span(&mut self, caches: Range<usize>, tlbs: Range<usize>, cores: Range<usize>, wide: bool) -> Part<'_> {
        let (wiring, uppers) = match self.wide.as_deref() {
            Some(w) if wide => (&w.cores[..], &w.uppers[..]),
            _ => (&self.cores[cores.clone()], &self.uppers[caches.clone()]),
        };
        Part {
            cache_base: caches.start,
            first_core: cores.start,
            caches: &mut self.caches[caches.clone()],
            cache_level: &self.cache_level[caches.clone()],
            uppers,
            prefetchers: &mut self.prefetchers[caches],
            tlbs: &mut self.tlbs[tlbs],
            cores: wiring,
            memos: &mut self.memos[cores.clone()],
            migration_queues: &mut self.migration_queues[cores],
            tasks: &mut self.tasks,
            nodes: &mut self.nodes,
            node_latency: &self.node_latency,
            page_table: &mut self.page_table,
            notebook: &mut self.notebook,
            atd: self.atd.as_deref_mut(),
            coherence: if wide { self.coherence.as_deref_mut() } else { None },
            scratch: &mut self.scratch,
            walks: None,
            k: &self.k,
        }
    }

    /// Keep the cores' caches coherent from now on (see
    /// `machine::coherence`): for a run whose threads share an address
    /// space. References then run through one part spanning the sockets.
    pub fn enable_coherence(&mut self) {
        let shift = |path: &mut super::Path, base: usize| {
            for i in 0..path.len as usize {
                path.ids[i] += base as u16;
            }
        };
        let mut cores = self.cores.clone();
        let mut uppers = self.uppers.clone();
        for s in 0..self.sockets.len() {
            let (caches, _, cores_of) = self.ranges(s);
            let base = self.sockets[s];
            for p in &mut cores[cores_of] {
                shift(&mut p.data, base.cache);
                shift(&mut p.instr, base.cache);
                for t in [&mut p.dtlb, &mut p.itlb, &mut p.stlb].into_iter().flatten() {
                    *t += base.tlb;
                }
            }
            for above in &mut uppers[caches] {
                above.iter_mut().for_each(|u| *u += base.cache);
            }
        }
        let mut coherence = Coherence::new(&cores, &self.caches, &self.cache_node, self.k.nodes);
        coherence.sampler = self.sampler.as_ref().map(|(p, ghz)| Sampler::new(p, *ghz, self.k.nodes));
        self.coherence = Some(Box::new(coherence));
        self.wide = Some(Box::new(super::Wide { cores, uppers }));
    }

    /// Whether the machine has an interconnect sampler (which needs coherence on).
    pub fn has_sampler(&self) -> bool {
        self.sampler.is_some()
    }

    /// The interconnect sampler, once coherence has installed it.
    pub fn sampler(&self) -> Option<&Sampler> {
        self.coherence.as_deref().and_then(|co| co.sampler.as_ref())
    }

    /// The pages the sampler recorded transactions to up to `time` (every
    /// core's clock has reached it), each frame with its counts per
    /// requesting node, handed to `f`; the sampler then forgets them.
    pub fn drain_samples(&mut self, time: u64, f: impl FnMut(u64, &[u32])) {
        let Some(co) = self.coherence.as_deref_mut() else { return };
        co.sample_until(time);
        if let Some(s) = &mut co.sampler {
            s.drain(f);
        }
    }

    /// The clock of the core whose references run next (cycles), for the
    /// sampler's reader; nothing without coherence.
    #[inline]
    pub fn set_clock(&mut self, now: u64) {
        if let Some(co) = &mut self.coherence {
            co.set_clock(now);
        }
    }

    /// The run is over: the sampler sees the transactions it has not seen
    /// yet.
    pub fn finish_sampling(&mut self) {
        if let Some(co) = &mut self.coherence {
            co.sample_until(u64::MAX);
        }
    }

    /// The interconnect transactions so far, if coherence is on (the
    /// sampled ones as of the last [`Machine::finish_sampling`]).
    pub fn traffic(&self) -> Option<&[super::Traffic]> {
        self.coherence.as_deref().map(|co| co.traffic())
    }

    /// The address space (an index into the page tables) of `asid`.
    pub fn space_of(&self, asid: Asid) -> usize {
        self.page_table.space_of(asid)
    }

    /// Whether every reference can run in its socket's part alone, so that
    /// sockets may run on separate threads: no switch-miss tag directory
    /// (it spans the LLCs), no coherence (a store invalidates copies on
    /// every socket) and no attributed level (a write-back carries
    /// its owner's shadow across sockets, and shadows depend on order).
    pub fn sockets_apart(&self) -> bool {
        self.atd.is_none() && self.coherence.is_none() && self.notebook.coverage() == Default::default()
    }

    /// Shares for running the sockets on separate threads, socket `s` using
    /// address spaces `spaces[s]` only (no space in two sockets' lists).
    /// Until [`Machine::take_back`], those spaces are out of the machine.
    pub fn share_out(&mut self, spaces: &[Vec<usize>]) -> Vec<Share> {
        debug_assert!(self.sockets_apart());
        spaces
            .iter()
            .map(|spaces| Share {
                tasks: self.tasks.clone(),
                nodes: self.nodes.iter().map(|n| NodeStats { node: n.node, ..NodeStats::default() }).collect(),
                page_table: self.page_table.lend(spaces),
                notebook: self.notebook.pad(),
                scratch: Vec::new(),
            })
            .collect()
    }

    /// Every socket's part, over its share, to run on a thread of its own.
    pub fn parts<'m>(&'m mut self, shares: &'m mut [Share]) -> Vec<Part<'m>> {
        let ranges: Vec<_> = (0..self.sockets.len()).map(|s| self.ranges(s)).collect();
        let mut caches = carve(&mut self.caches, ranges.iter().map(|r| r.0.len()));
        let mut prefetchers = carve(&mut self.prefetchers, ranges.iter().map(|r| r.0.len()));
        let mut tlbs = carve(&mut self.tlbs, ranges.iter().map(|r| r.1.len()));
        let mut memos = carve(&mut self.memos, ranges.iter().map(|r| r.2.len()));
        let mut queues = carve(&mut self.migration_queues, ranges.iter().map(|r| r.2.len()));
        let (cache_level, uppers, cores, k) = (&self.cache_level, &self.uppers, &self.cores, &self.k);
        let node_latency = &self.node_latency;
        shares
            .iter_mut()
            .zip(ranges)
            .map(|(share, (c, _, cores_of))| Part {
                cache_base: c.start,
                first_core: cores_of.start,
                caches: caches.next().expect("a slice per socket"),
                cache_level: &cache_level[c.clone()],
                uppers: &uppers[c],
                prefetchers: prefetchers.next().expect("a slice per socket"),
                tlbs: tlbs.next().expect("a slice per socket"),
                cores: &cores[cores_of],
                memos: memos.next().expect("a slice per socket"),
                migration_queues: queues.next().expect("a slice per socket"),
                tasks: &mut share.tasks,
                nodes: &mut share.nodes,
                node_latency,
                page_table: &mut share.page_table,
                notebook: &mut share.notebook,
                atd: None,
                coherence: None,
                scratch: &mut share.scratch,
                walks: None,
                k,
            })
            .collect()
    }

    /// Put back what [`Machine::share_out`] handed out, socket `s` having run
    /// tasks `tasks[s]`: their counters, the node counters added up, the
    /// address spaces, and the notes (in socket order).
    pub fn take_back(&mut self, shares: Vec<Share>, tasks: &[Vec<usize>]) {
        for (share, tasks) in shares.into_iter().zip(tasks) {
            for &t in tasks {
                self.tasks[t] = share.tasks[t].clone();
            }
            for (home, n) in self.nodes.iter_mut().zip(&share.nodes) {
                home.add_traffic(n);
            }
            self.page_table.take_back(share.page_table);
            self.notebook.absorb(share.notebook);
        }
    }
}

/// `slice` cut into consecutive pieces of the given lengths.
fn carve<T>(mut slice: &mut [T], lengths: impl Iterator<Item = usize>) -> std::vec::IntoIter<&mut [T]> {
    let mut pieces = Vec::new();
    for n in lengths {
        let (piece, rest) = std::mem::take(&mut slice).split_at_mut(n);
        pieces.push(piece);
        slice = rest;
    }
    pieces.into_iter()
}
