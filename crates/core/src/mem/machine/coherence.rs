//! Coherence between the caches of different cores: MESI by snooping, as on
//! a snooping bus (the Sun Fireplane of the NUMA study), and the
//! interconnect transactions it and memory carry, counted by type,
//! requesting core and home node.
//!
//! Only threads of one address space share lines (each address space has
//! frames of its own), so the machine keeps its caches coherent only when
//! some address space has more than one task ([`Machine::enable_coherence`]);
//! a run of single-threaded tasks pays nothing for it.
//!
//! The states follow from where copies are. A dirty copy is Modified, and
//! the protocol keeps it the only copy outside its core's own caches; a
//! clean copy is Shared if a cache off its core's paths holds the line, else
//! Exclusive. An L1 line filled by a read whose snoop found no other copy
//! carries an exclusive mark, cleared when another core reads the line: a
//! store to it needs no snoop (the snoop would find nothing). The rules, for a request of core
//! `c` (its "own" caches are those on its paths: its L1s, its L2, its
//! socket's LLC; every other cache is snooped):
//! - a store that finds the line dirty in its L1 is silent (M);
//! - any other store (a hit on a clean line, or a miss) first invalidates
//!   every copy in the other caches. If one was dirty, the data comes from
//!   that cache (a cache-to-cache transfer); if the store's own caches
//!   served it and some copy was invalidated, it is an upgrade; if no copy
//!   existed and its caches hit, it is silent (E to M);
//! - a read (load, instruction fetch, page walk, prefetch) that misses the
//!   core's private levels snoops the others: a dirty copy is cleaned, its
//!   data written back to memory and given to the reader (a cache-to-cache
//!   transfer); clean copies stay (S). A dirty line that the core's own
//!   exclusive LLC gives up to such a read while other caches hold copies
//!   comes up clean, its data written back: the reader shares it.
//!
//! Deciding Exclusive by where copies are is what a directory with exact
//! sharer lists does: a line whose other copies were all evicted is written
//! without a transaction, where a MESI bus that keeps S after the sharers'
//! silent evictions would still broadcast an upgrade. MESI rather than
//! MOESI because a dirty copy is then always the only one, so a store to a
//! dirty line needs no snoop: the common case costs one bit test.
//!
//! Transactions, what the interconnect carries (the sampler's population):
//! `read_shared` (a read served by memory or by another cache),
//! `read_own` (a store served by memory or by another cache), `upgrade`
//! (a store served by its own caches that invalidated copies elsewhere),
//! `writeback` (a dirty line written to memory: evicted from the last
//! level, flushed, or cleaned for a reader); `cache_to_cache` counts the
//! reads and stores among them that another cache served. A
//! cache-to-cache transfer costs what the read from the line's home node
//! would (on a snooping bus the owner answers in memory's slot), and is
//! not counted as a read of the node.

use serde::{Deserialize, Serialize};

use super::presence::Presence;
use super::sampler::Sampler;
use super::{Cache, Part, Ports};
use crate::mem::replacement::ReqKind;
use crate::types::LineAddr;

/// The protocol that keeps cores' caches coherent when threads of one
/// address space run on several cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// Invalidation-based MESI (see the module documentation).
    #[default]
    Mesi,
    /// No coherence: each core's caches keep their copies whatever other
    /// cores write (an ablation; what the simulator did before).
    None,
}

/// The interconnect transactions one core requested to one home node (a
/// row of the results' `traffic` table).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Traffic {
    /// The requesting core.
    pub core: u32,
    /// The home node of the lines.
    pub node: u32,
    /// Reads served by memory or by another cache.
    pub read_shared: u64,
    /// Stores served by memory or by another cache (read-to-own).
    pub read_own: u64,
    /// Stores served by the core's own caches that invalidated copies elsewhere.
    pub upgrade: u64,
    /// Dirty lines written to memory because of the core's requests.
    pub writeback: u64,
    /// Of `read_shared` and `read_own`, those another cache served.
    pub cache_to_cache: u64,
    /// Of all of these, those the interconnect sampler recorded
    /// (`machine.sampler`; 0 without one).
    pub sampled: u64,
}

/// The kinds of [`Traffic`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Txn {
    ReadShared,
    ReadOwn,
    Upgrade,
    Writeback,
}

/// A transaction waiting for the sampler.
#[derive(Debug, Clone, Copy)]
struct Pending {
    at: u64,
    row: u32,
    node: u32,
    frame: u64,
    writeback: bool,
}

/// What coherence keeps: who snoops whom, and the transactions so far.
#[derive(Debug)]
pub struct Coherence {
    /// Per core: the caches it snoops (every cache off its paths), a mask
    /// of `presence.words()` words.
    others: Vec<u64>,
    /// Per cache: its kin, the caches on a path together with it (of the
    /// cores whose paths it is on), a mask likewise. A dirty or exclusive
    /// copy of a line has every other copy among its kin (the protocol's
    /// invariant), so once a read's snoop finds a copy, only that copy's
    /// kin can hold one that the read must clean or share.
    kin: Vec<u64>,
    /// Which caches may hold a line: the snoop filter.
    pub(super) presence: Presence,
    /// Per cache: whether a miss there leaves its core's private levels
    /// (the next level is shared, or memory).
    boundary: Vec<bool>,
    /// Per cache: the node of its socket.
    cache_node: Vec<u32>,
    nodes: u32,
    /// The core whose references run now, its node, its clock when they
    /// began, and the time of the reference in progress.
    core: usize,
    pub(super) node: u32,
    clock: u64,
    at: u64,
    /// Transactions the sampler has yet to see, held until every core's
    /// clock has passed them, so that it sees them in time order.
    pending: Vec<Pending>,
    ready: Vec<Pending>,
    /// Whether the last snoop found a dirty copy (the data comes from it).
    c2c: bool,
    /// The line of the last read snoop, if it found no copy: its fills are
    /// Exclusive (a prefetch's snoop in between only loses the mark).
    pub(super) alone: Option<LineAddr>,
    /// Per core, per home node.
    traffic: Vec<Traffic>,
    /// The interconnect sampler, if the machine has one.
    pub(super) sampler: Option<Sampler>,
}

impl Coherence {
    /// Coherence over `caches`, of nodes `cache_node`, wired to `cores`
    /// (absolute indexes).
    pub(super) fn new(cores: &[Ports], caches: &[Cache], cache_node: &[u32], nodes: u32) -> Coherence {
        let presence = Presence::new(caches);
        let caches = cache_node.len();
        let mut users = vec![0u32; caches];
        let mut boundary = vec![false; caches];
        let own = |p: &Ports| {
            let mut own: Vec<usize> = (0..p.data.len as usize).map(|i| p.data.at(i)).collect();
            own.extend((0..p.instr.len as usize).map(|i| p.instr.at(i)));
            own.sort_unstable();
            own.dedup();
            own
        };
        for p in cores {
            for c in own(p) {
                users[c] += 1;
            }
        }
        for p in cores {
            for path in [p.data, p.instr] {
                for i in 0..path.len as usize {
                    let private = users[path.at(i)] == 1;
                    let next_shared = i + 1 == path.len as usize || users[path.at(i + 1)] > 1;
                    boundary[path.at(i)] |= private && next_shared;
                }
            }
        }
        // A mask of `words` words with the bits of `of` set.
        fn mask(words: usize, of: impl Iterator<Item = usize>) -> Vec<u64> {
            let mut mask = vec![0u64; words];
            for c in of {
                mask[c / 64] |= 1 << (c % 64);
            }
            mask
        }
        let words = presence.words();
        let owns: Vec<Vec<usize>> = cores.iter().map(own).collect();
        let others = owns.iter().flat_map(|own| mask(words, (0..caches).filter(|c| !own.contains(c)))).collect();
        let kin = (0..caches)
            .flat_map(|c| mask(words, owns.iter().filter(|own| own.contains(&c)).flatten().copied()))
            .collect();
        let traffic = (0..cores.len() as u32)
            .flat_map(|core| (0..nodes).map(move |node| Traffic { core, node, ..Traffic::default() }))
            .collect();
        Coherence {
            others,
            kin,
            presence,
            boundary,
            cache_node: cache_node.to_vec(),
            nodes,
            core: 0,
            node: 0,
            clock: 0,
            at: 0,
            pending: Vec::new(),
            ready: Vec::new(),
            c2c: false,
            alone: None,
            traffic,
            sampler: None,
        }
    }

    /// References of `core` (on `node`) run next.
    #[inline]
    pub(super) fn run_on(&mut self, core: usize, node: u32) {
        self.core = core;
        self.node = node;
    }

    /// The core that runs next has clock `now` (cycles), the lowest of all
    /// cores: no transaction from now on comes earlier, so the sampler sees
    /// those before it.
    pub(super) fn set_clock(&mut self, now: u64) {
        self.clock = now;
        self.sample_until(now);
    }

    /// The running core's clock when its references began.
    pub(super) fn clock(&self) -> u64 {
        self.clock
    }

    /// The reference in progress issues at `now`.
    #[inline]
    pub(super) fn issue_at(&mut self, now: u64) {
        self.at = now;
    }

    /// Show the sampler, in time order (ties in the order made), the
    /// transactions made before `horizon`.
    pub(super) fn sample_until(&mut self, horizon: u64) {
        let Some(sampler) = &mut self.sampler else { return };
        let ready = &mut self.ready;
        self.pending.retain(|p| {
            let due = p.at < horizon;
            if due {
                ready.push(*p);
            }
            !due
        });
        // Stable: ties stay in the order made.
        ready.sort_by_key(|p| p.at);
        for p in ready.drain(..) {
            let sampled = sampler.observe(p.at, p.node, p.frame, p.writeback);
            self.traffic[p.row as usize].sampled += sampled as u64;
        }
    }

    /// Count a transaction of the current core to `frame` on node `home`.
    #[inline]
    pub(super) fn count(&mut self, frame: u64, home: u32, txn: Txn, c2c: bool) {
        let row = self.core * self.nodes as usize + home as usize;
        if self.sampler.is_some() {
            let writeback = txn == Txn::Writeback;
            self.pending.push(Pending { at: self.at, row: row as u32, node: self.node, frame, writeback });
        }
        let t = &mut self.traffic[row];
        match txn {
            Txn::ReadShared => t.read_shared += 1,
            Txn::ReadOwn => t.read_own += 1,
            Txn::Upgrade => t.upgrade += 1,
            Txn::Writeback => t.writeback += 1,
        }
        t.cache_to_cache += c2c as u64;
    }

    /// Whether the data of the request in progress comes from another cache.
    #[inline]
    pub(super) fn supplies(&self) -> bool {
        self.c2c
    }

    /// Whether the last snoop found a dirty copy; clears it.
    #[inline]
    pub(super) fn take_c2c(&mut self) -> bool {
        std::mem::take(&mut self.c2c)
    }

    /// The transactions so far, one row per core and home node.
    pub fn traffic(&self) -> &[Traffic] {
        &self.traffic
    }

    /// Forget the counts (after warm-up); the sampler's table too.
    pub(super) fn reset(&mut self) {
        self.sample_until(u64::MAX);
        if let Some(s) = &mut self.sampler {
            s.reset();
        }
        for t in &mut self.traffic {
            *t = Traffic { core: t.core, node: t.node, ..Traffic::default() };
        }
    }
}

impl Part<'_> {
    /// Whether a read that missed cache `c` must snoop: coherence is on
    /// and the miss leaves the core's private levels.
    #[inline(always)]
    pub(super) fn snoops_at(&self, c: usize, kind: ReqKind) -> bool {
        match self.coherence.as_deref() {
            Some(co) => co.boundary[c] && kind != ReqKind::Store && kind != ReqKind::Writeback,
            None => false,
        }
    }

    /// A read of the current core missed its private levels: clean a
    /// dirty copy elsewhere, writing its data back to memory; the read is
    /// then a cache-to-cache transfer. Returns whether it is.
    #[inline(never)]
    pub(super) fn snoop_read(&mut self, line: LineAddr) -> bool {
        let Some(co) = self.coherence.as_deref_mut() else { return false };
        let (mut holder, mut found) = (None, false);
        let words = co.presence.words();
        let among = &co.others[co.core * words..][..words];
        co.presence.snoop(self.caches, among, Some(&co.kin), line, |o, cache| {
            let Some(slot) = cache.find(line) else { return false };
            found = true;
            if cache.share(slot) {
                holder = Some(co.cache_node[o]);
            }
            true
        });
        co.alone = (!found).then_some(line);
        let Some(holder) = holder else { return false };
        co.c2c = true;
        self.memory_written(line, holder);
        true
    }

    /// A store of the current core to `line`, which its L1 does not hold
    /// dirty: invalidate every copy elsewhere. Returns whether there was
    /// one, and whether one was dirty (the data then comes from it).
    #[inline(never)]
    pub(super) fn snoop_write(&mut self, line: LineAddr) -> (bool, bool) {
        let Some(co) = self.coherence.as_deref_mut() else { return (false, false) };
        let (mut found, mut dirty) = (false, false);
        let words = co.presence.words();
        let among = &co.others[co.core * words..][..words];
        co.presence.snoop(self.caches, among, None, line, |_, cache| {
            if let Some(slot) = cache.find(line) {
                found = true;
                dirty |= cache.invalidate(slot).dirty;
            }
            false
        });
        co.c2c = dirty;
        (found, dirty)
    }

    /// A snooped store or read has been served, by memory (`from_memory`)
    /// or by the core's own caches: count its transaction.
    #[inline(never)]
    pub(super) fn snooped(&mut self, line: LineAddr, store: bool, from_memory: bool, found: bool) {
        let (home, frame) = (self.node_of(line), self.frame_of(line));
        let Some(co) = self.coherence.as_deref_mut() else { return };
        let c2c = co.take_c2c();
        let txn = match (store, from_memory || c2c) {
            (false, true) => Txn::ReadShared,
            (true, true) => Txn::ReadOwn,
            (true, false) if found => Txn::Upgrade,
            (_, false) => return,
        };
        co.count(frame, home, txn, c2c);
    }

    /// Dirty `line` reached memory from a cache of node `from`: count the
    /// write (and its transaction, under coherence).
    #[inline]
    pub(super) fn memory_written(&mut self, line: LineAddr, from: u32) {
        let (home, frame) = (self.node_of(line), self.frame_of(line));
        self.nodes[home as usize].writes += 1;
        self.nodes[home as usize].remote_writes += (home != from) as u64;
        if let Some(co) = self.coherence.as_deref_mut() {
            co.count(frame, home, Txn::Writeback, false);
        }
    }
}
