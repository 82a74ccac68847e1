//! The hierarchy rules: lookups down a core's path, fills on the way back,
//! victims, write-backs, exclusive and inclusive levels, prefetches, flushes
//! and installs (see the module documentation of `machine`).

use super::{Part, Path};
use crate::counters::Level;
use crate::mem::cache::{Evicted, Filled, Inclusion, Req, Scope};
use crate::mem::notes::Note;
use crate::mem::prefetch::{Observed, Prefetch, Proposals};
use crate::mem::replacement::ReqKind;
use crate::types::{LineAddr, TaskId, VirtAddr};

impl Part<'_> {
    /// Mirror a cache fill in `req.task`'s shadow of cache `c`'s level.
    #[inline]
    pub(super) fn place(&mut self, c: usize, req: &Req, line: LineAddr) {
        let level = self.cache_level[c];
        if self.notebook.covers(level) {
            self.notebook.note(Note::Place { level, req: *req, line });
        }
        if let Some(atd) = self.atd.as_deref_mut() {
            atd.fill(self.cache_base + c, self.caches[c].last_slot());
        }
        self.present(c, line);
    }

    /// Cache `c` now holds `line`: tell the snoop filter.
    #[inline]
    fn present(&mut self, c: usize, line: LineAddr) {
        if let Some(co) = self.coherence.as_deref_mut() {
            co.presence.fill(self.cache_base + c, line);
        }
    }

    /// Frame of a physical line.
    #[inline]
    pub(super) fn frame_of(&self, line: LineAddr) -> u64 {
        line.0 >> (self.k.page_shift - self.k.line_shift)
    }

    /// Home node of a physical line.
    #[inline]
    pub(super) fn node_of(&self, line: LineAddr) -> u32 {
        ((self.frame_of(line) / self.k.frames_per_node) as u32).min(self.k.nodes - 1)
    }

    /// One line through the hierarchy; returns the latency of the level that served it.
    #[inline(always)]
    pub(super) fn access_line(&mut self, c: usize, line: LineAddr, req: &Req, missed: bool) -> u32 {
        let path = *self.cores[c].path(req.kind);
        let node = self.cores[c].node;
        let (served, _) =
            if missed { self.miss_at(&path, 0, line, req, node) } else { self.lookup(&path, 0, line, req, node) };
        let top = &self.caches[path.at(0)];
        let writes_through = !top.write_back || !top.write_allocate;
        if writes_through && req.kind == ReqKind::Store && (!top.write_back || !top.contains(line)) {
            // Write-through, or a store that did not allocate: the data goes down.
            self.write_down(&path, 1, line, req.task, true, req.task);
        }
        if served < path.len as usize {
            self.caches[path.at(served)].latency_cycles
        } else {
            self.node_latency[(node * self.k.nodes + self.node_of(line)) as usize]
        }
    }

    /// Look `line` up at level `i` of `path` and below; returns the index of
    /// the level that served it (`path.len` for memory) and whether the line
    /// arrives dirty (given up by an exclusive level).
    #[inline(always)]
    pub(super) fn lookup(&mut self, path: &Path, i: usize, line: LineAddr, req: &Req, node: u32) -> (usize, bool) {
        let c = path.at(i);
        let Some(slot) = self.caches[c].find(line) else {
            return self.miss_at(path, i, line, req, node);
        };
        if i == 0 && req.kind == ReqKind::Store && self.coherence.is_some() && !self.caches[c].owned_at(slot) {
            // Neither Modified nor known Exclusive: copies elsewhere must go first.
            let (found, _) = self.snoop_write(line);
            self.snooped(line, true, false, found);
        }
        self.caches[c].hit(slot, req);
        if req.kind.is_demand() {
            self.tasks[req.task.0 as usize].levels[self.cache_level[c] as usize].hits[req.kind as usize] += 1;
            if self.caches[c].tracks_use() {
                self.caches[c].use_marked(slot);
            }
            if let Some(atd) = self.atd.as_deref_mut() {
                atd.hit(self.cache_base + c, slot, self.caches[c].owner_at(slot));
            }
            if self.prefetchers[c].is_some() {
                self.prefetch(path, i, line, req, true, node);
            }
        }
        let leaves = i > 0 && self.caches[c].inclusion == Inclusion::Exclusive;
        let level = self.cache_level[c];
        if self.notebook.covers(level) {
            self.notebook.note(Note::Hit { level, req: *req, line, stays: !leaves });
        }
        if leaves {
            return (i, self.caches[c].take(slot).dirty);
        }
        (i, false)
    }

    /// `line` missed at level `i` of `path`: count it, fetch it from below,
    /// and place it here unless this level is exclusive.
    #[inline(never)]
    pub(super) fn miss_at(&mut self, path: &Path, i: usize, line: LineAddr, req: &Req, node: u32) -> (usize, bool) {
        let c = path.at(i);
        if i == 0 {
            // The levels below (and the snoop filter's bucket) are searched
            // next: have the host bring them closer now, so that their host
            // cache misses overlap.
            for below in 1..path.len as usize {
                self.caches[path.at(below)].prefetch(line);
            }
            if let Some(co) = self.coherence.as_deref() {
                co.presence.prefetch(line);
            }
        }
        // Under coherence: a store snoops before it writes, a read once it
        // leaves the core's private levels.
        let snoop = match self.coherence.is_some() {
            true if i == 0 && req.kind == ReqKind::Store => Some((true, self.snoop_write(line).0)),
            true if self.snoops_at(c, req.kind) => Some((false, self.snoop_read(line))),
            true => {
                // A hit in the private levels below says nothing of other copies.
                self.coherence.as_deref_mut().expect("coherent").alone = None;
                None
            }
            false => None,
        };
        // Whether a read's snoop found copies elsewhere (taken now: a
        // prefetch further down snoops on its own).
        let shared =
            matches!(snoop, Some((false, _))) && self.coherence.as_deref().is_some_and(|co| co.alone != Some(line));
        // And the set that this level's dirty victim will be written back to.
        if i + 1 < path.len as usize {
            if let Some(victim) = self.caches[c].dirty_victim(line) {
                self.caches[path.at(i + 1)].prefetch(victim);
            }
        }
        self.caches[c].count_miss(line, req);
        let stays = i == 0 || self.caches[c].inclusion != Inclusion::Exclusive;
        let level = self.cache_level[c];
        self.notebook.note(Note::Miss { cache: (self.cache_base + c) as u32, level, req: *req, line, stays });
        let allocates = !(i == 0 && req.kind == ReqKind::Store && !self.caches[c].write_allocate);
        let (served, carried) = if !allocates {
            (0, false)
        } else if i + 1 < path.len as usize {
            self.lookup(path, i + 1, line, req, node)
        } else {
            self.memory_read(line, req, node);
            (path.len as usize, false)
        };
        if let Some((store, found)) = snoop {
            self.snooped(line, store, served == path.len as usize, found);
        }
        // A dirty line given up by a shared exclusive level, read while other
        // caches hold copies: it comes up clean, its data written to memory
        // (a dirty copy is the only one outside its core's caches).
        let carried = if carried && shared {
            self.memory_written(line, node);
            false
        } else {
            carried
        };
        if req.kind.is_demand() {
            self.tasks[req.task.0 as usize].levels[level as usize].misses[req.kind as usize] += 1;
        }
        if !allocates {
            return (0, false);
        }
        if i > 0 && self.caches[c].inclusion == Inclusion::Exclusive {
            return (served, carried);
        }
        let dirty = carried || (i == 0 && req.kind == ReqKind::Store);
        let filled = self.caches[c].fill(line, dirty, req);
        if let Filled::Placed(_) = filled {
            self.place(c, req, line);
            if i == 0 && !dirty && self.coherence.as_deref().is_some_and(|co| co.alone == Some(line)) {
                self.caches[c].mark_exclusive();
            }
        }
        match filled {
            Filled::Placed(Some(victim)) => self.evicted(path, i, victim, req.task),
            Filled::Placed(None) => {}
            Filled::Bypassed if dirty => self.write_down(path, i + 1, line, req.task, false, req.task),
            Filled::Bypassed => {}
        }
        if req.kind.is_demand() && self.prefetchers[c].is_some() {
            self.prefetch(path, i, line, req, false, node);
        }
        (served, false)
    }

    /// Show a demand reference to `line` at level `i` of `path` to the
    /// level's prefetcher, and fetch what it proposes that is not already
    /// there, through the levels below, as prefetch requests (no cycles).
    #[inline(never)]
    pub(super) fn prefetch(&mut self, path: &Path, i: usize, line: LineAddr, req: &Req, hit: bool, node: u32) {
        let c = path.at(i);
        let Some(prefetcher) = self.prefetchers[c].as_mut() else { return };
        let mut proposals = Proposals::new(line, self.k.page_shift - self.k.line_shift);
        prefetcher.observe(&Observed { line, pc: req.pc, hit }, &mut proposals);
        let fetch = Req { kind: ReqKind::Prefetch, pc: req.pc, task: req.task };
        for &proposed in proposals.lines() {
            if self.caches[c].contains(proposed) {
                self.caches[c].count_hits(ReqKind::Prefetch, 1);
            } else {
                self.miss_at(path, i, proposed, &fetch, node);
                self.caches[c].mark_prefetched(proposed);
            }
        }
    }

    pub(super) fn memory_read(&mut self, line: LineAddr, req: &Req, node: u32) {
        let home = self.node_of(line);
        // A line another cache supplies (coherence) is not read from the node.
        if !self.coherence.as_deref().is_some_and(|co| co.supplies()) {
            self.nodes[home as usize].reads += 1;
            self.nodes[home as usize].remote_reads += (home != node) as u64;
        }
        if req.kind.is_demand() {
            let t = &mut self.tasks[req.task.0 as usize];
            if home == node {
                t.memory_local += 1;
            } else {
                t.memory_remote += 1;
            }
        }
    }

    /// A line left level `i` of `path` to make room for a request of task
    /// `by`: clean the levels above if this one is inclusive, then pass it down.
    pub(super) fn evicted(&mut self, path: &Path, i: usize, mut victim: Evicted, by: TaskId) {
        self.clean_above(path.at(i), &mut victim, by);
        let next = i + 1;
        if next < path.len as usize && self.caches[path.at(next)].inclusion == Inclusion::Exclusive {
            self.victim_fill(path, next, victim, by);
        } else if victim.dirty {
            self.write_down(path, next, victim.line, victim.owner, false, by);
        }
    }

    /// A line leaves cache `c` because of task `by` (`TaskId::NONE`: a
    /// flush): if `c` is inclusive, remove it from every cache above
    /// (back-invalidation); dirty data found there goes down with the
    /// victim. A task's shadow loses the line too when the task itself
    /// caused the eviction, as it would have alone.
    pub(super) fn clean_above(&mut self, c: usize, victim: &mut Evicted, by: TaskId) {
        if self.caches[c].inclusion != Inclusion::Inclusive {
            return;
        }
        for u in 0..self.uppers[c].len() {
            let upper = self.uppers[c][u];
            if let Some(copy) = self.caches[upper].back_invalidate(victim.line) {
                victim.dirty |= copy.dirty;
                let level = self.cache_level[upper];
                if self.notebook.covers(level) && copy.owner == by {
                    self.notebook.note(Note::Invalidate { level, task: by, line: victim.line });
                }
            }
        }
    }

    /// Place the victim of the level above in exclusive level `i`.
    pub(super) fn victim_fill(&mut self, path: &Path, i: usize, victim: Evicted, by: TaskId) {
        let c = path.at(i);
        let req = Req { kind: ReqKind::Writeback, pc: VirtAddr(0), task: victim.owner };
        if let Some(slot) = self.caches[c].find(victim.line) {
            if victim.dirty {
                self.caches[c].writeback_hit(slot);
            }
            return;
        }
        self.notebook.note(Note::Seen { cache: (self.cache_base + c) as u32, line: victim.line });
        let filled = self.caches[c].fill(victim.line, victim.dirty, &req);
        if let Filled::Placed(_) = filled {
            self.place(c, &req, victim.line);
        }
        match filled {
            Filled::Placed(Some(next)) => self.evicted(path, i, next, by),
            Filled::Placed(None) => {}
            Filled::Bypassed if victim.dirty => self.write_down(path, i + 1, victim.line, victim.owner, false, by),
            Filled::Bypassed => {}
        }
    }

    /// Dirty data of `line` arrives at level `i` from above (`i == path.len`:
    /// memory). A write-back level keeps it (allocating on a miss); a
    /// write-through level passes it on. `through` marks a store written
    /// through while the line may stay above: an exclusive level must not
    /// take a copy of it then, and passes it on too. `by` is the task whose
    /// request (or `TaskId::NONE`: flush) sent it down.
    pub(super) fn write_down(
        &mut self,
        path: &Path,
        i: usize,
        line: LineAddr,
        owner: TaskId,
        through: bool,
        by: TaskId,
    ) {
        if i >= path.len as usize {
            // A socket's part: its cores, and the caches writing back, share
            // one node; the whole machine's (coherence): the requester's.
            let from = self.coherence.as_deref().map_or(self.cores[0].node, |co| co.node);
            self.memory_written(line, from);
            return;
        }
        let c = path.at(i);
        let req = Req { kind: ReqKind::Writeback, pc: VirtAddr(0), task: owner };
        if let Some(slot) = self.caches[c].find(line) {
            self.caches[c].writeback_hit(slot);
            if !self.caches[c].write_back {
                self.write_down(path, i + 1, line, owner, through, by);
            }
            return;
        }
        self.caches[c].count_miss(line, &req);
        self.notebook.note(Note::Seen { cache: (self.cache_base + c) as u32, line });
        let exclusive = self.caches[c].inclusion == Inclusion::Exclusive;
        if !self.caches[c].write_back || (through && exclusive) {
            return self.write_down(path, i + 1, line, owner, through, by);
        }
        let filled = self.caches[c].fill(line, true, &req);
        if let Filled::Placed(_) = filled {
            self.place(c, &req, line);
        }
        match filled {
            Filled::Placed(Some(victim)) => self.evicted(path, i, victim, by),
            Filled::Placed(None) => {}
            Filled::Bypassed => self.write_down(path, i + 1, line, owner, through, by),
        }
    }

    pub(super) fn flush_at(&mut self, path: &Path, i: usize, scope: Scope, write_back: bool) {
        let c = path.at(i);
        let mut removed = std::mem::take(self.scratch);
        removed.clear();
        self.caches[c].remove(scope, &mut removed);
        for mut victim in removed.drain(..) {
            self.clean_above(c, &mut victim, TaskId::NONE);
            if write_back && victim.dirty {
                self.caches[c].stats.dirty_evictions += 1;
                self.write_down(path, i + 1, victim.line, victim.owner, false, TaskId::NONE);
            }
        }
        *self.scratch = removed;
    }

    /// `cycles` passed on core `c`: issue the migration prefetches they
    /// allow into its L2, through the levels below; a line already present
    /// is dropped.
    #[inline(never)]
    pub(super) fn drain_migration_queue(&mut self, c: usize, cycles: f64) {
        let Some((path, i)) = self.private_level(c, Level::L2) else {
            self.migration_queues[c].lines.clear();
            return;
        };
        let l2 = path.at(i);
        let node = self.cores[c].node;
        let q = &mut self.migration_queues[c];
        q.credit += cycles * q.per_cycle;
        while self.migration_queues[c].credit >= 1.0 {
            let Some((line, task)) = self.migration_queues[c].lines.pop_front() else { break };
            self.migration_queues[c].credit -= 1.0;
            if self.caches[l2].contains(line) {
                self.caches[l2].stats.migrated_dropped += 1;
                continue;
            }
            let fetch = Req { kind: ReqKind::Prefetch, pc: VirtAddr(0), task };
            self.miss_at(&path, i, line, &fetch, node);
            self.caches[l2].mark_migrated(line);
        }
        if self.migration_queues[c].lines.is_empty() {
            self.migration_queues[c].credit = 0.0;
        }
    }

    /// Path and position of core `c`'s private cache of `level`, if it has one.
    pub(super) fn private_level(&self, c: usize, level: Level) -> Option<(Path, usize)> {
        let path = self.cores[c].data;
        (0..path.len as usize).find(|&i| self.cache_level[path.at(i)] == level).map(|i| (path, i))
    }

    /// Flush core `c`'s private caches whose level `which` picks.
    pub(super) fn flush_private(&mut self, c: usize, which: impl Fn(Level) -> bool, scope: Scope, write_back: bool) {
        let ports = self.cores[c];
        for path in [ports.instr, ports.data] {
            for i in 0..path.len as usize {
                if which(self.cache_level[path.at(i)]) {
                    self.flush_at(&path, i, scope, write_back);
                }
            }
        }
    }

    /// [`Machine::install`] on the socket's core `c`.
    pub(super) fn install(&mut self, c: usize, level: Level, line: LineAddr, task: TaskId) -> bool {
        let Some((path, i)) = self.private_level(c, level) else { return false };
        let c = path.at(i);
        if self.caches[c].contains(line) {
            self.caches[c].stats.migrated_dropped += 1;
            return false;
        }
        let req = Req { kind: ReqKind::Load, pc: VirtAddr(0), task };
        self.notebook.note(Note::Seen { cache: (self.cache_base + c) as u32, line });
        let filled = self.caches[c].fill(line, false, &req);
        if let Filled::Placed(victim) = filled {
            self.present(c, line);
            if let Some(victim) = victim {
                self.evicted(&path, i, victim, task);
            }
        }
        self.caches[c].mark_migrated(line);
        filled != Filled::Bypassed
    }
}
