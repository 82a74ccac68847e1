//! Machine-level checks of the memory hierarchy against independent models
//! and invariants: a list-per-set reference hierarchy, inclusion and
//! exclusion, counter identities, TLBs, page walks and flushes.

use cachesched_core::config;
use cachesched_core::counters::Level;
use cachesched_core::mem::attribution::Attributed;
use cachesched_core::mem::cache::{CacheParams, Inclusion, Scope, WritePolicy};
use cachesched_core::mem::machine::{Machine, MachineParams};
use cachesched_core::mem::page_table::{FrameAllocation, Placement};
use cachesched_core::mem::replacement::ReqKind;
use cachesched_core::mem::tlb::{TlbLevelParams, TlbParams, WalkModel};
use cachesched_core::plugin::PluginConfig;
use cachesched_core::units::ByteSize;
use cachesched_core::{Access, AccessKind, Asid, CoreId, LineAddr, TaskId, VirtAddr};
use proptest::prelude::*;

fn level(size: u64, ways: u32, latency: u32) -> CacheParams {
    CacheParams { size_bytes: ByteSize(size), ways, latency_cycles: latency, ..CacheParams::default() }
}

/// One core, identity mapping, no TLB: physical address = virtual address.
fn flat(levels: usize) -> MachineParams {
    let mut m = MachineParams { tlb: None, ..MachineParams::default() };
    m.memory.frame_allocation = FrameAllocation::Identity;
    m.l1d = level(512, 2, 1);
    m.l2 = (levels >= 2).then(|| level(2048, 4, 10));
    m.llc = (levels >= 3).then(|| level(8192, 4, 30));
    m
}

fn access(kind: AccessKind, addr: u64) -> Access {
    Access { addr: VirtAddr(addr), pc: VirtAddr(0x400000), instrs: 1, size: 8, kind }
}

/// The reference: per level, per set, a list of (line, dirty) from most to
/// least recently used; write-back, write-allocate L1; dirty victims are
/// written to the next level, which allocates them without a fetch.
struct Reference {
    levels: Vec<Vec<Vec<(u64, bool)>>>,
    ways: Vec<usize>,
    store_hit_updates: bool,
    hits: Vec<u64>,
    misses: Vec<u64>,
    writeback_hits: Vec<u64>,
    writeback_misses: Vec<u64>,
    memory_writes: u64,
}

impl Reference {
    fn new(geometry: &[(usize, usize)], store_hit_updates: bool) -> Reference {
        let n = geometry.len();
        Reference {
            levels: geometry.iter().map(|&(sets, _)| vec![Vec::new(); sets]).collect(),
            ways: geometry.iter().map(|&(_, w)| w).collect(),
            store_hit_updates,
            hits: vec![0; n],
            misses: vec![0; n],
            writeback_hits: vec![0; n],
            writeback_misses: vec![0; n],
            memory_writes: 0,
        }
    }

    fn set(&mut self, i: usize, line: u64) -> &mut Vec<(u64, bool)> {
        let sets = self.levels[i].len() as u64;
        &mut self.levels[i][(line % sets) as usize]
    }

    fn insert(&mut self, i: usize, line: u64, dirty: bool) {
        let ways = self.ways[i];
        let set = self.set(i, line);
        set.insert(0, (line, dirty));
        if set.len() > ways {
            let (victim, victim_dirty) = set.pop().unwrap();
            if victim_dirty {
                self.write(i + 1, victim);
            }
        }
    }

    fn load(&mut self, i: usize, line: u64) {
        if i == self.levels.len() {
            return;
        }
        let set = self.set(i, line);
        if let Some(pos) = set.iter().position(|e| e.0 == line) {
            let e = set.remove(pos);
            set.insert(0, e);
            self.hits[i] += 1;
            return;
        }
        self.misses[i] += 1;
        self.load(i + 1, line);
        self.insert(i, line, false);
    }

    fn store(&mut self, line: u64) {
        let updates = self.store_hit_updates;
        let set = self.set(0, line);
        if let Some(pos) = set.iter().position(|e| e.0 == line) {
            let mut e = set.remove(pos);
            e.1 = true;
            set.insert(if updates { 0 } else { pos }, e);
            self.hits[0] += 1;
            return;
        }
        self.misses[0] += 1;
        self.load(1, line);
        self.insert(0, line, true);
    }

    fn write(&mut self, i: usize, line: u64) {
        if i == self.levels.len() {
            self.memory_writes += 1;
            return;
        }
        let set = self.set(i, line);
        if let Some(e) = set.iter_mut().find(|e| e.0 == line) {
            e.1 = true;
            self.writeback_hits[i] += 1;
            return;
        }
        self.writeback_misses[i] += 1;
        self.insert(i, line, true);
    }
}

const LEVEL_PATHS: [&str; 3] = ["socket0/core0/l1d", "socket0/core0/l2", "socket0/llc"];

fn stats(m: &Machine, level: usize) -> &cachesched_core::mem::cache::CacheStats {
    &m.caches()[m.cache_index(LEVEL_PATHS[level]).unwrap()].stats
}

fn demand(counts: [u64; ReqKind::COUNT]) -> u64 {
    counts[0] + counts[1] + counts[2]
}

proptest! {
    #[test]
    fn non_inclusive_hierarchy_matches_the_list_reference(
        levels in 1usize..=3,
        store_hit_updates in any::<bool>(),
        ops in proptest::collection::vec((any::<bool>(), prop_oneof![0u64..400, 0u64..6]), 1..600),
    ) {
        let mut params = flat(levels);
        params.l1d.store_hit_updates_replacement = store_hit_updates;
        let mut m = Machine::new(&params, 1, "machine").unwrap();
        m.add_tasks(1);
        let geometry = [(4, 2), (8, 4), (32, 4)];
        let mut r = Reference::new(&geometry[..levels], store_hit_updates);
        for &(store, line) in &ops {
            let kind = if store { AccessKind::Store } else { AccessKind::Load };
            m.access(CoreId(0), TaskId(0), Asid(0), &access(kind, line * 64 + 8));
            if store { r.store(line) } else { r.load(0, line) }
        }
        for i in 0..levels {
            let s = stats(&m, i);
            prop_assert_eq!(demand(s.hits), r.hits[i], "hits at level {}", i);
            prop_assert_eq!(demand(s.misses), r.misses[i], "misses at level {}", i);
            prop_assert_eq!(s.hits[ReqKind::Writeback as usize], r.writeback_hits[i], "write-back hits at {}", i);
            prop_assert_eq!(s.misses[ReqKind::Writeback as usize], r.writeback_misses[i], "write-back misses at {}", i);
        }
        prop_assert_eq!(m.node_stats()[0].writes, r.memory_writes);
        let t = &m.tasks[0];
        prop_assert_eq!(t.levels[Level::L1d as usize].total_accesses(), ops.len() as u64);
    }

    #[test]
    fn inclusive_llc_holds_every_line_of_the_caches_above(
        ops in proptest::collection::vec((0u32..2, any::<bool>(), 0u64..300), 1..500),
    ) {
        let mut params = flat(3);
        params.cores_per_socket = 2;
        params.llc = Some(CacheParams { inclusion: Inclusion::Inclusive, ..level(4096, 4, 30) });
        let mut m = Machine::new(&params, 1, "machine").unwrap();
        m.add_tasks(2);
        for &(core, store, line) in &ops {
            let kind = if store { AccessKind::Store } else { AccessKind::Load };
            m.access(CoreId(core), TaskId(core), Asid(0), &access(kind, line * 64));
            let llc = m.caches().iter().position(|c| c.path == "socket0/llc").unwrap();
            for (i, c) in m.caches().iter().enumerate() {
                if i != llc {
                    for l in c.lines() {
                        prop_assert!(m.caches()[llc].contains(l), "{} holds {:?} but the LLC does not", c.path, l);
                    }
                }
            }
        }
    }

    #[test]
    fn exclusive_l2_never_duplicates_the_l1(
        write_through in any::<bool>(),
        ops in proptest::collection::vec((any::<bool>(), 0u64..200), 1..500),
    ) {
        let mut params = flat(2);
        if write_through {
            params.l1d.write_policy = cachesched_core::mem::cache::WritePolicy::WriteThrough;
        }
        params.l2 = Some(CacheParams { inclusion: Inclusion::Exclusive, ..level(2048, 4, 10) });
        let mut m = Machine::new(&params, 1, "machine").unwrap();
        m.add_tasks(1);
        let mut dirty_lines = std::collections::HashSet::new();
        for &(store, line) in &ops {
            let kind = if store { AccessKind::Store } else { AccessKind::Load };
            m.access(CoreId(0), TaskId(0), Asid(0), &access(kind, line * 64));
            if store { dirty_lines.insert(line); }
            let (l1, l2) = (&m.caches()[0], &m.caches()[1]);
            for l in l1.lines() {
                prop_assert!(!l2.contains(l), "{:?} is in both the L1 and the exclusive L2", l);
            }
        }
        // Data is never lost: a line stored to is dirty in a cache or was written to memory.
        let writes = m.node_stats()[0].writes;
        let dirty_in_caches = dirty_lines.iter().filter(|&&l| {
            m.caches()[0].is_dirty(LineAddr(l)) || m.caches()[1].is_dirty(LineAddr(l))
        }).count() as u64;
        prop_assert!(writes + dirty_in_caches >= dirty_lines.len() as u64);
    }
}

/// A two-level TLB reference: lists per set, LRU, both levels filled on a
/// walk, the L1 refilled from the L2 on an L2 hit.
struct TlbReference {
    l1: Vec<Vec<u64>>,
    l2: Vec<Vec<u64>>,
    l1_ways: usize,
    l2_ways: usize,
    l1_hits: u64,
    l2_hits: u64,
    walks: u64,
}

impl TlbReference {
    fn touch(sets: &mut [Vec<u64>], ways: usize, page: u64) -> bool {
        let n = sets.len() as u64;
        let set = &mut sets[(page % n) as usize];
        let hit = match set.iter().position(|&p| p == page) {
            Some(pos) => {
                set.remove(pos);
                true
            }
            None => false,
        };
        set.insert(0, page);
        set.truncate(ways);
        hit
    }

    fn access(&mut self, page: u64) {
        let n = self.l1.len() as u64;
        if self.l1[(page % n) as usize].contains(&page) {
            self.l1_hits += 1;
            Self::touch(&mut self.l1, self.l1_ways, page);
            return;
        }
        let (w1, w2) = (self.l1_ways, self.l2_ways);
        if Self::touch(&mut self.l2, w2, page) {
            self.l2_hits += 1;
        } else {
            self.walks += 1;
        }
        Self::touch(&mut self.l1, w1, page);
    }
}

proptest! {
    #[test]
    fn two_level_tlb_matches_the_list_reference(
        refs in proptest::collection::vec((prop_oneof![0u64..40, 0u64..3], 0u64..64), 1..800),
    ) {
        let mut m = Machine::new(&with_tlb(WalkModel::Fixed), 1, "machine").unwrap();
        m.add_tasks(1);
        let mut r = TlbReference {
            l1: vec![Vec::new(); 2], l2: vec![Vec::new(); 4], l1_ways: 2, l2_ways: 4, l1_hits: 0, l2_hits: 0, walks: 0,
        };
        for &(page, offset) in &refs {
            m.access(CoreId(0), TaskId(0), Asid(0), &access(AccessKind::Load, (page << 12) + offset * 64));
            r.access(page);
        }
        let t = m.tasks[0].tlb;
        prop_assert_eq!((t.l1_hits, t.l2_hits, t.walks), (r.l1_hits, r.l2_hits, r.walks));
        prop_assert_eq!(t.l1_hits + t.l1_misses, refs.len() as u64);
    }
}

#[test]
fn exclusive_l2_serves_l1_victims_and_gives_them_back() {
    // L1: 4 sets x 2 ways; lines 0, 4, 8 share L1 set 0.
    let mut params = flat(2);
    params.l2 = Some(CacheParams { inclusion: Inclusion::Exclusive, ..level(2048, 4, 10) });
    let mut m = Machine::new(&params, 1, "machine").unwrap();
    m.add_tasks(1);
    let load =
        |m: &mut Machine, line: u64| m.access(CoreId(0), TaskId(0), Asid(0), &access(AccessKind::Load, line * 64));
    assert_eq!(load(&mut m, 0), 200, "cold: memory");
    load(&mut m, 4);
    load(&mut m, 8); // evicts line 0 from the L1 into the L2
    assert!(m.caches()[1].contains(LineAddr(0)));
    assert_eq!(load(&mut m, 0), 10, "served by the exclusive L2");
    assert!(!m.caches()[1].contains(LineAddr(0)), "and moved up");
    assert!(m.caches()[1].contains(LineAddr(4)), "making room for the L1 victim");
}

#[test]
fn latency_is_that_of_the_serving_level_and_cycles_add_up() {
    let mut m = Machine::new(&flat(3), 1, "machine").unwrap();
    m.add_tasks(1);
    let a = access(AccessKind::Load, 0x1000);
    assert_eq!(m.access(CoreId(0), TaskId(0), Asid(0), &a), 200);
    assert_eq!(m.access(CoreId(0), TaskId(0), Asid(0), &a), 1);
    // Compulsory misses are classified off the machine's path.
    m.settle_counts().unwrap();
    let t = &m.tasks[0];
    assert_eq!(t.stall_cycles, 201);
    assert_eq!(m.cycles_of(TaskId(0)), 2.0 + 201.0);
    assert_eq!(t.levels[Level::L1d as usize].compulsory[0], 1);
    assert_eq!(t.memory_local, 1);
}

#[test]
fn a_reference_across_a_line_boundary_touches_both_lines() {
    let mut m = Machine::new(&flat(1), 1, "machine").unwrap();
    m.add_tasks(1);
    let a = Access { size: 8, ..access(AccessKind::Load, 60) };
    m.access(CoreId(0), TaskId(0), Asid(0), &a);
    assert!(m.caches()[0].contains(LineAddr(0)) && m.caches()[0].contains(LineAddr(1)));
    assert_eq!(m.tasks[0].levels[Level::L1d as usize].misses[0], 2);
    assert_eq!(m.tasks[0].accesses, 1);
}

#[test]
fn write_through_no_allocate_sends_stores_down() {
    let mut params = flat(2);
    params.l1d.write_policy = cachesched_core::mem::cache::WritePolicy::WriteThrough;
    params.l1d.write_allocate = false;
    let mut m = Machine::new(&params, 1, "machine").unwrap();
    m.add_tasks(1);
    m.access(CoreId(0), TaskId(0), Asid(0), &access(AccessKind::Store, 0));
    assert!(!m.caches()[0].contains(LineAddr(0)), "no allocation in the L1");
    assert!(m.caches()[1].is_dirty(LineAddr(0)), "the L2 took the write");
    m.access(CoreId(0), TaskId(0), Asid(0), &access(AccessKind::Load, 0));
    m.access(CoreId(0), TaskId(0), Asid(0), &access(AccessKind::Store, 0));
    assert!(!m.caches()[0].is_dirty(LineAddr(0)), "a write-through L1 stays clean");
    assert_eq!(m.caches()[1].stats.hits[ReqKind::Writeback as usize], 1);
}

fn with_tlb(walk: WalkModel) -> MachineParams {
    let mut m = flat(3);
    m.l1d = level(32 << 10, 8, 1);
    m.memory.frame_allocation = FrameAllocation::Sequential;
    m.tlb = Some(TlbParams {
        l1d: TlbLevelParams { entries: 4, ways: 2, latency_cycles: 0, replacement: PluginConfig::named("lru") },
        l1i: None,
        l2: Some(TlbLevelParams { entries: 16, ways: 4, latency_cycles: 5, replacement: PluginConfig::named("lru") }),
        walk,
        walk_latency_cycles: 30,
        l2_victim_fill: false,
    });
    m
}

#[test]
fn tlb_levels_and_fixed_walks() {
    let mut m = Machine::new(&with_tlb(WalkModel::Fixed), 1, "machine").unwrap();
    m.add_tasks(1);
    let page = |m: &mut Machine, p: u64| m.access(CoreId(0), TaskId(0), Asid(0), &access(AccessKind::Load, p << 12));
    assert_eq!(page(&mut m, 0), 30 + 200, "walk + memory");
    assert_eq!(page(&mut m, 0), 1, "L1 TLB hit, L1D hit");
    for p in 1..=8 {
        page(&mut m, p);
    }
    // Pages 0, 2, 4, 6, 8 share L1 TLB set 0 (2 ways): page 0 is gone from
    // the L1 TLB but still in the 16-entry L2 TLB.
    let before = m.tasks[0].tlb;
    page(&mut m, 0);
    let after = m.tasks[0].tlb;
    assert_eq!(after.l2_hits, before.l2_hits + 1);
    assert_eq!(after.walks, before.walks);
    assert_eq!(after.walks, 9, "one walk per distinct page");
    assert_eq!(after.walk_cycles, 9 * 30);
}

#[test]
fn radix_walks_read_page_table_entries_through_the_data_caches() {
    let mut m = Machine::new(&with_tlb(WalkModel::Radix), 1, "machine").unwrap();
    m.add_tasks(1);
    let cost = m.access(CoreId(0), TaskId(0), Asid(0), &access(AccessKind::Load, 0x7000_0000));
    // Four entry reads, all cold: 4 x 200 from memory, + 30 overhead + the data from memory.
    assert_eq!(cost, 4 * 200 + 30 + 200);
    assert_eq!(stats(&m, 0).misses[ReqKind::Walk as usize], 4);
    // The neighbouring page shares the upper three tables and the last table's line.
    let cost = m.access(CoreId(0), TaskId(0), Asid(0), &access(AccessKind::Load, 0x7000_1000));
    assert_eq!(cost, 4 + 30 + 200);
    assert_eq!(m.tasks[0].tlb.walk_cycles, (4 * 200 + 30) + (4 + 30));
    assert_eq!(m.tasks[0].levels[Level::L1d as usize].total_accesses(), 2, "walks are not demand accesses");
}

#[test]
fn flushes_write_dirty_lines_down_and_invalidations_drop_them() {
    let mut m = Machine::new(&flat(2), 1, "machine").unwrap();
    m.add_tasks(2);
    m.access(CoreId(0), TaskId(0), Asid(0), &access(AccessKind::Store, 0));
    m.access(CoreId(0), TaskId(1), Asid(1), &access(AccessKind::Load, 64));
    m.flush_core(CoreId(0), Scope::Task(TaskId(1)), true);
    assert!(m.caches()[0].contains(LineAddr(0)) && !m.caches()[0].contains(LineAddr(1)));
    assert!(!m.caches()[1].contains(LineAddr(1)), "the L2 is flushed too");
    m.flush_core(CoreId(0), Scope::Line(LineAddr(0)), true);
    assert!(m.caches()[0].lines().next().is_none());
    assert_eq!(m.node_stats()[0].writes, 1, "the dirty line reached memory through the L2 flush");

    m.access(CoreId(0), TaskId(0), Asid(0), &access(AccessKind::Store, 128));
    m.flush_core(CoreId(0), Scope::All, false);
    assert_eq!(m.node_stats()[0].writes, 1, "an invalidation drops dirty data");
}

#[test]
fn config_errors_for_impossible_machines() {
    let err = config::from_json_str(
        r#"{"machine": {"l1d": {"line_bytes": 64}, "l2": {"line_bytes": 128}, "memory": {"frame_allocation": "identity", "nodes": 2}},
            "workload": {"kind": "stream"}}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("machine.l2.line_bytes: all cache levels must share one line size"), "{err}");
    assert!(err.contains("machine.memory.frame_allocation: identity mapping needs a single NUMA node"), "{err}");
}

#[test]
fn numa_latency_depends_on_the_home_node() {
    let mut params = flat(1);
    params.sockets = 2;
    params.memory.frame_allocation = FrameAllocation::Sequential;
    params.memory.node_bytes = ByteSize(1 << 30);
    params.memory.remote_latency_cycles = Some(300);
    let mut m = Machine::new(&params, 1, "machine").unwrap();
    m.add_tasks(2);
    let a = access(AccessKind::Load, 0x5000);
    assert_eq!(m.access(CoreId(0), TaskId(0), Asid(0), &a), 200, "first touch on node 0");
    assert_eq!(m.access(CoreId(1), TaskId(1), Asid(0), &a), 300, "read from socket 1: remote");
    assert_eq!(m.tasks[1].memory_remote, 1);
    assert_eq!(m.node_stats().iter().map(|n| n.reads).collect::<Vec<_>>(), vec![2, 0]);
    assert_eq!(m.node_stats().iter().map(|n| n.remote_reads).collect::<Vec<_>>(), vec![1, 0]);
    // Socket 1 dirties a line of node 0 and writes it back: a remote write.
    m.access(CoreId(1), TaskId(1), Asid(0), &access(AccessKind::Store, 0x5000));
    m.flush_core(CoreId(1), Scope::All, true);
    m.flush_core(CoreId(0), Scope::All, true);
    let writes: Vec<_> = m.node_stats().iter().map(|n| (n.writes, n.remote_writes)).collect();
    assert_eq!(writes, vec![(1, 1), (0, 0)], "one write-back, from node 1 to node 0");
}

#[test]
fn a_slit_sets_the_latency_of_every_pair_of_nodes() {
    // Three sockets, one core each, one node each; pages bound to node 2,
    // so core i pays latency x d[i][2] / 10 for every line.
    let mut params = flat(1);
    params.sockets = 3;
    params.memory.frame_allocation = FrameAllocation::Sequential;
    params.memory.node_bytes = ByteSize(1 << 30);
    params.memory.placement = Placement::Bind(2);
    params.memory.distances = Some(vec![vec![10.0, 16.0, 32.0], vec![16.0, 10.0, 21.0], vec![32.0, 21.0, 10.0]]);
    let mut m = Machine::new(&params, 1, "machine").unwrap();
    m.add_tasks(3);
    for (core, cycles) in [(0u32, 640), (1, 420), (2, 200)] {
        let a = access(AccessKind::Load, 0x10_0000 * (core as u64 + 1));
        assert_eq!(m.access(CoreId(core), TaskId(core), Asid(core), &a), cycles, "core {core}");
    }
    assert_eq!(m.node_stats().iter().map(|n| n.reads).collect::<Vec<_>>(), vec![0, 0, 3]);
    // remote_latency_cycles is the shorthand of one remote distance.
    let mut shorthand = flat(1);
    shorthand.memory.remote_latency_cycles = Some(300);
    assert_eq!(shorthand.memory.node_latencies(2), vec![200, 300, 300, 200]);
    assert_eq!(params.memory.node_latencies(3), vec![200, 320, 640, 320, 200, 420, 640, 420, 200]);
}

#[test]
fn a_distance_matrix_that_is_not_a_slit_is_a_config_error() {
    let issues = |memory: &str| {
        let text = format!(r#"{{"machine": {{"sockets": 2, "memory": {memory}}}, "workload": {{"kind": "stream"}}}}"#);
        match config::from_json_str(&text) {
            Err(cachesched_core::Error::Config(issues)) => {
                issues.iter().map(|i| (i.loc.clone(), i.message.clone())).collect::<Vec<_>>()
            }
            other => panic!("{memory}: {other:?}"),
        }
    };
    let found = issues(r#"{"distances": [[10, 20], [20]]}"#);
    assert_eq!(found[0].0, "machine.memory.distances");
    assert!(found[0].1.contains("expected a 2 x 2 matrix"), "{found:?}");
    let found = issues(r#"{"distances": [[10, 20, 20], [20, 10, 20]]}"#);
    assert_eq!(found[0].0, "machine.memory.distances", "one row per node: 2, not 3 columns");
    let found = issues(r#"{"distances": [[10, 20], [20, 0]]}"#);
    assert_eq!(found[0].0, "machine.memory.distances[1][1]");
    assert!(found[0].1.contains("distance to itself is 10"), "{found:?}");
    let found = issues(r#"{"distances": [[10, 5], [300, 10]]}"#);
    assert_eq!(
        found.iter().map(|f| f.0.as_str()).collect::<Vec<_>>(),
        vec!["machine.memory.distances[0][1]", "machine.memory.distances[1][0]"]
    );
    let found = issues(r#"{"distances": [[10, 20], [20, 10]], "remote_latency_cycles": 300}"#);
    assert_eq!(found[0].0, "machine.memory.remote_latency_cycles");
    assert!(found[0].1.contains("not both"), "{found:?}");
}

#[test]
fn two_mebibyte_pages_cut_walks_and_use_three_level_radix_walks() {
    // A sweep of 8 MiB, one access per 4 KiB: one walk per page touched.
    let walks_with = |page_bytes: u64| {
        let mut params = with_tlb(WalkModel::Radix);
        params.memory.page_bytes = ByteSize(page_bytes);
        let mut m = Machine::new(&params, 1, "machine").unwrap();
        m.add_tasks(1);
        for i in 0..2048u64 {
            m.access(CoreId(0), TaskId(0), Asid(0), &access(AccessKind::Load, 0x4000_0000 + i * 4096));
        }
        (m.tasks[0].tlb.walks, stats(&m, 0).misses[ReqKind::Walk as usize] + stats(&m, 0).hits[ReqKind::Walk as usize])
    };
    let (walks_4k, entry_reads_4k) = walks_with(4096);
    let (walks_2m, entry_reads_2m) = walks_with(2 << 20);
    assert_eq!(walks_4k, 2048);
    assert_eq!(entry_reads_4k, 4 * 2048, "four levels per walk");
    assert_eq!(walks_2m, 4, "8 MiB is four 2 MiB pages");
    assert_eq!(entry_reads_2m, 3 * 4, "three levels per walk");
}

#[test]
fn tlb_flushes_by_asid_and_whole() {
    let mut m = Machine::new(&with_tlb(WalkModel::Fixed), 1, "machine").unwrap();
    m.add_tasks(3);
    let touch =
        |m: &mut Machine, asid: u32| m.access(CoreId(0), TaskId(asid), Asid(asid), &access(AccessKind::Load, 0x9000));
    touch(&mut m, 1);
    touch(&mut m, 2);
    assert_eq!(m.tasks[1].tlb.walks + m.tasks[2].tlb.walks, 2, "asids do not share translations");
    m.flush_tlbs(CoreId(0), Some(Asid(1)));
    touch(&mut m, 1);
    touch(&mut m, 2);
    assert_eq!((m.tasks[1].tlb.walks, m.tasks[2].tlb.walks), (2, 1), "only asid 1 was flushed");
    m.flush_tlbs(CoreId(0), None);
    touch(&mut m, 2);
    assert_eq!(m.tasks[2].tlb.walks, 2, "a full flush empties both levels");
}

#[test]
fn flushing_an_inclusive_llc_empties_the_caches_above() {
    let mut params = flat(3);
    params.llc = Some(CacheParams { inclusion: Inclusion::Inclusive, ..level(8192, 4, 30) });
    let mut m = Machine::new(&params, 1, "machine").unwrap();
    m.add_tasks(2);
    m.access(CoreId(0), TaskId(0), Asid(0), &access(AccessKind::Store, 0));
    m.access(CoreId(0), TaskId(1), Asid(0), &access(AccessKind::Load, 64));
    m.flush_llc(0, Scope::Task(TaskId(1)), true);
    let l1 = &m.caches()[m.cache_index(LEVEL_PATHS[0]).unwrap()];
    assert!(l1.contains(LineAddr(0)) && !l1.contains(LineAddr(1)), "task 1's line left the L1 too");
    m.flush_llc(0, Scope::All, true);
    assert!(m.caches().iter().all(|c| c.lines().next().is_none()));
    assert_eq!(m.node_stats()[0].writes, 1, "the dirty L1 copy reached memory");
}

proptest! {
    #[test]
    fn no_reference_stalls_longer_than_the_machine_bound(
        radix in any::<bool>(), sockets in 1u32..3, tiny_tlb in any::<bool>(),
        refs in proptest::collection::vec((0u64..1 << 22, 1u16..130, 0u8..3, 0u32..4), 1..400),
    ) {
        // Misaligned references crossing lines and pages, from cores of both
        // sockets, with fixed or radix walks and a remote memory latency.
        let mut params = with_tlb(if radix { WalkModel::Radix } else { WalkModel::Fixed });
        params.sockets = sockets;
        params.cores_per_socket = 2;
        params.memory.node_bytes = ByteSize(1 << 30);
        params.memory.remote_latency_cycles = Some(350);
        if !tiny_tlb {
            params.tlb.as_mut().unwrap().l2 = None;
        }
        let mut m = Machine::new(&params, 1, "machine").unwrap();
        m.add_tasks(1);
        let bound = m.max_stall();
        for &(addr, size, kind, core) in &refs {
            let kind = [AccessKind::Load, AccessKind::Store, AccessKind::Ifetch][kind as usize];
            let a = Access { addr: VirtAddr(addr), pc: VirtAddr(0), instrs: 1, size, kind };
            let stall = m.access(CoreId(core % (2 * sockets)), TaskId(0), Asid(0), &a) as u64;
            prop_assert!(stall <= bound, "{} > {}", stall, bound);
        }
    }
}

proptest! {
    /// The L1 shortcuts (runs of L1 hits over a batch, repeated references
    /// to one line) count exactly what the general path counts. Attributing
    /// the L1s and the L1 TLB turns the shortcuts off, so a machine that
    /// attributes them, run one reference at a time, is the reference for
    /// one that runs the same references in batches with the shortcuts on.
    #[test]
    fn l1_shortcuts_change_no_count(
        // (task, kind, page, line in page, offset in line / 8, crosses a line)
        refs in proptest::collection::vec(
            (0u32..2, 0u8..3, prop_oneof![0u64..24, 0u64..3], prop_oneof![0u64..64, 0u64..3], 0u64..8, proptest::bool::weighted(0.05)),
            1..600,
        ),
        batch in 1usize..40,
        policy in prop_oneof![Just("lru"), Just("plru"), Just("fifo"), Just("random"), Just("dip"), Just("drrip"), Just("ship")],
        l1i in any::<bool>(),
        itlb in any::<bool>(),
        write_through in any::<bool>(),
        // Geometries with and without padding in the fingerprint vectors
        // (the runs have bodies for 4-way L1 TLBs and 4-, 8-, 12-way L1s).
        tlb_ways in prop_oneof![Just(2u32), Just(4)],
        l1_ways in prop_oneof![Just(2u32), Just(4), Just(8), Just(12)],
    ) {
        let mut params = with_tlb(WalkModel::Fixed);
        // Tree PLRU needs a power-of-two associativity.
        prop_assume!(policy != "plru" || l1_ways.is_power_of_two());
        // One leader set per policy: the 2-set TLB and 4-set L1 still duel.
        let policy = match policy {
            "dip" | "drrip" => PluginConfig { kind: policy.into(), params: serde_json::json!({"leader_sets": 1}) },
            _ => PluginConfig::named(policy),
        };
        params.l1d = CacheParams { replacement: policy.clone(), ..level(4 * 64 * l1_ways as u64, l1_ways, 2) };
        if write_through {
            params.l1d.write_policy = WritePolicy::WriteThrough;
        }
        params.l1i = l1i.then(|| level(1024, 2, 1));
        let tlb = params.tlb.as_mut().unwrap();
        tlb.l1d.replacement = policy;
        tlb.l1d.ways = tlb_ways;
        tlb.l1d.entries = 2 * tlb_ways;
        tlb.l1i = itlb.then(|| TlbLevelParams { entries: 4, ways: 4, latency_cycles: 1, replacement: PluginConfig::named("lru") });
        let mut reference = params.clone();
        reference.attribution = vec![Attributed::L1d, Attributed::L1i, Attributed::TlbL1];
        reference.attribution.retain(|a| l1i || *a != Attributed::L1i);
        let mut fast = Machine::new(&params, 7, "machine").unwrap();
        let mut slow = Machine::new(&reference, 7, "machine").unwrap();
        for m in [&mut fast, &mut slow] {
            m.add_tasks(2);
        }
        let accesses: Vec<(u32, Access)> = refs
            .iter()
            .map(|&(task, kind, page, line, offset, crosses)| {
                let kind = [AccessKind::Load, AccessKind::Store, AccessKind::Ifetch][kind as usize];
                let mut a = access(kind, (page << 12) + line * 64 + offset * 8);
                if crosses {
                    a.size = 64;
                }
                (task, a)
            })
            .collect();
        // Batches of one task's consecutive references, at most `batch` long.
        let mut stall = 0;
        for run in accesses.chunk_by(|a, b| a.0 == b.0) {
            let task = run[0].0;
            let refs: Vec<Access> = run.iter().map(|&(_, a)| a).collect();
            for chunk in refs.chunks(batch) {
                stall += fast.access_batch(CoreId(0), TaskId(task), Asid(task), chunk);
            }
        }
        let slow_stall: u64 = accesses
            .iter()
            .map(|&(task, a)| slow.access(CoreId(0), TaskId(task), Asid(task), &a) as u64)
            .sum();
        prop_assert_eq!(stall, slow_stall, "stall cycles");
        for (f, s) in fast.caches().iter().zip(slow.caches()) {
            prop_assert_eq!(&f.stats, &s.stats, "{}", f.path);
        }
        for (f, s) in fast.tlbs().iter().zip(slow.tlbs()) {
            prop_assert_eq!(&f.stats, &s.stats, "{}", f.path);
        }
        for (f, s) in fast.tasks.iter().zip(&slow.tasks) {
            prop_assert_eq!(f.accesses, s.accesses);
            prop_assert_eq!(f.tlb.l1_hits, s.tlb.l1_hits);
            prop_assert_eq!(f.tlb.walks, s.tlb.walks);
            for (fl, sl) in f.levels.iter().zip(&s.levels) {
                prop_assert_eq!((fl.hits, fl.misses), (sl.hits, sl.misses));
            }
        }
    }
}

/// `flat(3)` with a prefetcher on the L2; one reference per line, each new
/// to the 8-line L1, so the L2 sees every line.
fn prefetching(kind: &str, params: serde_json::Value, lines: &[u64], pc: u64) -> Machine {
    let mut params_ = flat(3);
    params_.l2.as_mut().unwrap().size_bytes = ByteSize(64 << 10);
    params_.llc.as_mut().unwrap().size_bytes = ByteSize(256 << 10);
    params_.l2.as_mut().unwrap().prefetcher = Some(PluginConfig { kind: kind.into(), params });
    let mut m = Machine::new(&params_, 1, "machine").unwrap();
    m.add_tasks(1);
    for &line in lines {
        let a = Access { pc: VirtAddr(pc), ..access(AccessKind::Load, line * 64) };
        m.access(CoreId(0), TaskId(0), Asid(0), &a);
    }
    m
}

#[test]
fn next_line_prefetching_halves_the_misses_of_a_scan() {
    // Misses on even lines fetch the odd ones; one 4 KiB page of 64 lines.
    let m = prefetching("next_line", serde_json::json!({}), &(0..64).collect::<Vec<_>>(), 0x400);
    let l2 = stats(&m, 1);
    assert_eq!((demand(l2.misses), demand(l2.hits)), (32, 32));
    assert_eq!(l2.misses[ReqKind::Prefetch as usize], 32, "prefetches issued");
    assert_eq!((l2.prefetch_useful, l2.prefetch_unused), (32, 0));
    // The prefetches go down as requests of their own, not charged to the task.
    assert_eq!(stats(&m, 2).misses[ReqKind::Prefetch as usize], 32);
    assert_eq!(m.tasks[0].levels[Level::L2 as usize].misses[0], 32);
    assert_eq!(m.tasks[0].levels[Level::Llc as usize].misses[0], 32);
}

#[test]
fn stream_prefetching_leaves_three_training_misses_per_page() {
    // Lines 0, 1, 2 train the stream; it then runs ahead to the page's end,
    // and the next page trains a new stream.
    let m = prefetching("stream", serde_json::json!({}), &(0..256).collect::<Vec<_>>(), 0x400);
    let l2 = stats(&m, 1);
    assert_eq!(demand(l2.misses), 3 * 4);
    assert_eq!((l2.prefetch_useful, l2.prefetch_unused), (61 * 4, 0));
    assert_eq!(l2.hits[ReqKind::Prefetch as usize], 0, "the frontier never proposes a line twice");
}

#[test]
fn stride_prefetching_follows_a_pc_after_two_strides() {
    // Every other line from one pc: steady from the third reference on.
    let lines: Vec<u64> = (0..20).map(|i| 2 * i).collect();
    let m = prefetching("stride", serde_json::json!({"degree": 1}), &lines, 0x400);
    let l2 = stats(&m, 1);
    assert_eq!(demand(l2.misses), 3);
    assert_eq!(l2.prefetch_useful, 17);
    // 18 fetched: 17 used, and line 40 is still there, neither used nor gone.
    assert_eq!(l2.misses[ReqKind::Prefetch as usize], 18);
    assert_eq!(l2.prefetch_unused, 0);
    // Without a pc there is nothing to learn from.
    let m = prefetching("stride", serde_json::json!({}), &lines, 0);
    assert_eq!(demand(stats(&m, 1).misses), 20);
}

#[test]
fn unknown_prefetchers_and_bad_params_name_their_key() {
    let mut params = flat(2);
    params.l2.as_mut().unwrap().prefetcher = Some(PluginConfig::named("markov"));
    let err = Machine::new(&params, 1, "machine").unwrap_err().to_string();
    assert!(err.contains("machine.l2.prefetcher.kind") && err.contains("next_line, stream, stride"), "{err}");
    params.l2.as_mut().unwrap().prefetcher =
        Some(PluginConfig { kind: "stream".into(), params: serde_json::json!({"degree": 0}) });
    let err = Machine::new(&params, 1, "machine").unwrap_err().to_string();
    assert!(err.contains("machine.l2.prefetcher.params.degree"), "{err}");
}

proptest! {
    /// Every prefetched line is used or leaves unused: once the caches are
    /// flushed, used + unused = fetched, whatever the prefetcher and stream.
    #[test]
    fn prefetched_lines_are_used_or_leave_unused(
        kind in prop_oneof![Just("next_line"), Just("stream"), Just("stride")],
        refs in proptest::collection::vec((0u64..4, prop_oneof![0u64..2048, 0u64..64]), 1..800),
    ) {
        let mut params = flat(3);
        params.l2.as_mut().unwrap().prefetcher = Some(PluginConfig::named(kind));
        let mut m = Machine::new(&params, 1, "machine").unwrap();
        m.add_tasks(1);
        for &(pc, line) in &refs {
            let a = Access { pc: VirtAddr(0x400 + pc), ..access(AccessKind::Load, line * 64) };
            m.access(CoreId(0), TaskId(0), Asid(0), &a);
        }
        m.flush_core(CoreId(0), Scope::All, true);
        let l2 = stats(&m, 1);
        prop_assert_eq!(l2.prefetch_useful + l2.prefetch_unused, l2.misses[ReqKind::Prefetch as usize]);
        prop_assert_eq!(demand(l2.hits) + demand(l2.misses), stats(&m, 0).misses[0]);
    }
}
