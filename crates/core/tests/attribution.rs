//! Miss attribution against hand-computed scenarios and invariants: switch-,
//! migration- and sharing-induced misses from per-task isolated shadows, and
//! the residual lines a task finds when it comes back.

use cachesched_core::counters::{Level, LevelCounters};
use cachesched_core::mem::attribution::Attributed;
use cachesched_core::mem::cache::{CacheParams, Inclusion, WritePolicy};
use cachesched_core::mem::machine::{Machine, MachineParams};
use cachesched_core::mem::page_table::FrameAllocation;
use cachesched_core::units::ByteSize;
use cachesched_core::util::rng::Rng;
use cachesched_core::{Access, AccessKind, Asid, CoreId, TaskId, VirtAddr};
use proptest::prelude::*;

fn level(size: u64, ways: u32) -> CacheParams {
    CacheParams { size_bytes: ByteSize(size), ways, latency_cycles: 10, ..CacheParams::default() }
}

/// `sockets x cores` cores with a 16-line 2-way L1D, a 128-line 4-way L2
/// (32 sets) and a 512-line 8-way LLC per socket; no TLB; frames handed out
/// in order of first touch, so a task's lines are contiguous in memory.
fn small(sockets: u32, cores: u32) -> MachineParams {
    let mut m = MachineParams { sockets, cores_per_socket: cores, tlb: None, ..MachineParams::default() };
    m.memory.frame_allocation = FrameAllocation::Sequential;
    m.l1d = level(1 << 10, 2);
    m.l2 = Some(level(8 << 10, 4));
    m.llc = Some(level(32 << 10, 8));
    m.attribution = vec![Attributed::L1d, Attributed::L2, Attributed::Llc];
    m
}

/// One load of each of `lines` consecutive lines from `base`.
fn pass(base: u64, lines: u64) -> Vec<Access> {
    (0..lines)
        .map(|i| Access { addr: VirtAddr(base + i * 64), pc: VirtAddr(0), instrs: 1, size: 8, kind: AccessKind::Load })
        .collect()
}

/// Run a batch, then bring the classified counts up to date.
fn run(m: &mut Machine, core: u32, task: u32, accesses: &[Access]) {
    m.access_batch(CoreId(core), TaskId(task), Asid(task), accesses);
    m.settle_counts().unwrap();
}

fn counters(m: &Machine, task: u32, level: Level) -> LevelCounters {
    m.tasks[task as usize].levels[level as usize]
}

/// Working set of each task: 96 lines, 3 per L2 set. Alone a task fits the
/// 4-way L2; two tasks need 6 ways per set.
const W: u64 = 96;

#[test]
fn round_robin_on_one_core_misses_the_whole_working_set_per_switch() {
    let mut m = Machine::new(&small(1, 1), 1, "machine").unwrap();
    m.add_tasks(2);
    let rounds = 5;
    for _ in 0..rounds {
        for task in 0..2 {
            run(&mut m, 0, task, &pass(0x1000_0000, W));
            m.switched_out(TaskId(task));
        }
    }
    // Per L2 set, after the other task's pass: its 3 lines (most recent)
    // and 1 of ours (our last). Our first miss evicts that survivor (LRU),
    // the next two evict the other task's lines: all 3 of ours miss. Alone,
    // 3 lines per 4-way set always hit: every miss after the first round is
    // switch-induced.
    for task in 0..2 {
        let l2 = counters(&m, task, Level::L2);
        assert_eq!(l2.misses[0], rounds * W, "task {task}");
        assert_eq!(l2.compulsory[0], W);
        assert_eq!(l2.induced.switch[0], (rounds - 1) * W);
        assert_eq!(l2.induced.migration[0] + l2.induced.sharing[0], 0);
        // The L1 (12 lines per 2-way set) misses on every pass, alone too:
        // capacity, not scheduling.
        let l1 = counters(&m, task, Level::L1d);
        assert_eq!(l1.misses[0], rounds * W);
        assert_eq!(l1.induced.total(), 0);
        // Both working sets fit the LLC.
        assert_eq!(counters(&m, task, Level::Llc).misses[0], W);
    }
}

#[test]
fn pinned_to_separate_cores_nothing_is_induced() {
    let mut m = Machine::new(&small(1, 2), 1, "machine").unwrap();
    m.add_tasks(2);
    for _ in 0..5 {
        for task in 0..2 {
            run(&mut m, task, task, &pass(0x1000_0000, W));
        }
    }
    for task in 0..2 {
        for level in [Level::L1d, Level::L2, Level::Llc] {
            assert_eq!(counters(&m, task, level).induced.total(), 0, "task {task} {level:?}");
        }
        assert_eq!(counters(&m, task, Level::L2).misses[0], W, "only the compulsory misses");
    }
}

#[test]
fn co_runners_thrashing_a_shared_llc_cause_sharing_induced_misses() {
    // No L2: the L1s miss into a shared 128-line 4-way LLC that one working
    // set fits and two do not (the same per-set count as above).
    let mut p = small(1, 2);
    p.l2 = None;
    p.llc = Some(level(8 << 10, 4));
    p.attribution = vec![Attributed::Llc];
    let mut m = Machine::new(&p, 1, "machine").unwrap();
    m.add_tasks(2);
    let rounds = 4;
    for _ in 0..rounds {
        for task in 0..2 {
            run(&mut m, task, task, &pass(0x1000_0000, W));
        }
    }
    for task in 0..2 {
        let llc = counters(&m, task, Level::Llc);
        assert_eq!(llc.misses[0], rounds * W);
        assert_eq!(llc.induced.sharing[0], (rounds - 1) * W, "nobody switched or moved");
        assert_eq!(llc.induced.switch[0] + llc.induced.migration[0], 0);
    }
}

#[test]
fn migrations_cost_the_working_set_minus_what_the_shared_llc_keeps() {
    // 2 sockets x 2 cores: core 1 shares core 0's LLC, core 2 does not.
    let mut m = Machine::new(&small(2, 2), 1, "machine").unwrap();
    m.add_tasks(1);
    let ws = pass(0x1000_0000, W);
    run(&mut m, 0, 0, &ws);
    let before = counters(&m, 0, Level::L2);
    assert_eq!((before.misses[0], before.compulsory[0]), (W, W));

    // A local migration: the L2 is cold, the shared LLC still has it all.
    m.moved(TaskId(0));
    run(&mut m, 1, 0, &ws);
    let l2 = counters(&m, 0, Level::L2);
    assert_eq!(l2.induced.migration[0], W);
    assert_eq!(l2.compulsory[0], W, "no new compulsory misses");
    assert_eq!(counters(&m, 0, Level::Llc).misses[0], W, "the LLC kept every line");

    // A remote migration: the other socket's L2 and LLC miss it all, which
    // the migration caused (even though that LLC never held the lines).
    m.moved(TaskId(0));
    run(&mut m, 2, 0, &ws);
    assert_eq!(counters(&m, 0, Level::L2).induced.migration[0], 2 * W);
    let llc = counters(&m, 0, Level::Llc);
    assert_eq!(llc.induced.migration[0], W);
    assert_eq!(llc.compulsory[0], W);

    // Back on core 0: its L2 kept the lines (the residual footprint), so
    // coming back costs nothing.
    assert_eq!(m.resident(CoreId(0), TaskId(0))[Level::L2 as usize], W);
    assert_eq!(m.resident(CoreId(1), TaskId(0))[Level::L2 as usize], W);
    assert_eq!(m.resident(CoreId(3), TaskId(0)), [0, 0, 0, W], "core 3 shares only core 2's LLC");
    m.moved(TaskId(0));
    let misses = counters(&m, 0, Level::L2).misses[0];
    run(&mut m, 0, 0, &ws);
    assert_eq!(counters(&m, 0, Level::L2).misses[0], misses);
}

#[test]
fn residual_lines_shrink_as_another_task_runs() {
    let mut m = Machine::new(&small(1, 1), 1, "machine").unwrap();
    m.add_tasks(2);
    run(&mut m, 0, 0, &pass(0x1000_0000, W));
    let l2 = Level::L2 as usize;
    assert_eq!(m.resident(CoreId(0), TaskId(0))[l2], W);
    assert_eq!(m.resident(CoreId(0), TaskId(0))[Level::L1d as usize], 16, "a full L1");
    run(&mut m, 0, 1, &pass(0x1000_0000, W));
    // Per 4-way set: task 1's 3 lines and task 0's most recent one.
    assert_eq!(m.resident(CoreId(0), TaskId(0))[l2], W / 3);
    assert_eq!(m.resident(CoreId(0), TaskId(1))[l2], W);
    assert_eq!(m.resident(CoreId(0), TaskId(0))[Level::L1d as usize], 0);
}

#[test]
fn flushing_the_tlb_on_a_switch_causes_switch_induced_tlb_misses() {
    let mut p = small(1, 1);
    p.tlb = Some(Default::default());
    p.attribution = vec![Attributed::TlbL1, Attributed::TlbL2];
    let mut m = Machine::new(&p, 1, "machine").unwrap();
    m.add_tasks(1);
    // One reference to each of 32 pages: all fit the 64-entry L1 TLB.
    let pages: Vec<Access> = (0..32)
        .map(|i| Access { addr: VirtAddr(i << 12), pc: VirtAddr(0), instrs: 1, size: 8, kind: AccessKind::Load })
        .collect();
    run(&mut m, 0, 0, &pages);
    run(&mut m, 0, 0, &pages);
    let t = m.tasks[0].tlb;
    assert_eq!((t.l1_misses, t.walks), (32, 32), "warm after the first pass");
    m.switched_out(TaskId(0));
    m.flush_tlbs(CoreId(0), None);
    run(&mut m, 0, 0, &pages);
    let t = m.tasks[0].tlb;
    assert_eq!(t.l1_misses, 64);
    assert_eq!(t.l1_induced.switch[0], 32);
    assert_eq!(t.l2_induced.switch[0], 32);
    assert_eq!(t.walks, 64);
}

/// A random reference of a task over `lines` lines of its own.
fn random_access(rng: &mut Rng, lines: u64) -> Access {
    let kind = match rng.below(10) {
        0..=5 => AccessKind::Load,
        6..=8 => AccessKind::Store,
        _ => AccessKind::Ifetch,
    };
    Access { addr: VirtAddr(0x4000_0000 + rng.below(lines) * 64), pc: VirtAddr(0), instrs: 2, size: 8, kind }
}

/// A machine variant: LLC inclusion, L1 write policy, L1I and TLB present.
fn variant(inclusion: u8, write_through: bool, tlb: bool) -> MachineParams {
    let mut p = small(1, 2);
    p.l1i = Some(level(1 << 10, 2));
    p.llc.as_mut().unwrap().inclusion =
        [Inclusion::NonInclusive, Inclusion::Inclusive, Inclusion::Exclusive][inclusion as usize];
    if write_through {
        p.l1d.write_policy = WritePolicy::WriteThrough;
        p.l1d.write_allocate = false;
    }
    p.memory.frame_allocation = FrameAllocation::Random;
    p.attribution = vec![Attributed::L1i, Attributed::L1d, Attributed::L2, Attributed::Llc];
    if tlb {
        let mut t = cachesched_core::mem::tlb::TlbParams::default();
        t.l1d.entries = 8;
        t.l1d.ways = 2;
        p.tlb = Some(t);
        p.attribution.extend([Attributed::TlbL1, Attributed::TlbL2]);
    }
    p
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn a_task_alone_has_no_induced_misses(
        seed in any::<u64>(), lines in 8u64..2000, inclusion in 0u8..3, write_through in any::<bool>(), tlb in any::<bool>(),
        store_updates in any::<bool>(),
    ) {
        let mut p = variant(inclusion, write_through, tlb);
        for level in [&mut p.l1d, p.l2.as_mut().unwrap(), p.llc.as_mut().unwrap()] {
            level.store_hit_updates_replacement = store_updates;
        }
        let mut m = Machine::new(&p, seed, "machine").unwrap();
        m.add_tasks(1);
        let mut rng = Rng::from_seed(seed);
        let refs: Vec<Access> = (0..3000).map(|_| random_access(&mut rng, lines)).collect();
        for batch in refs.chunks(97) {
            run(&mut m, 0, 0, batch);
        }
        for level in [Level::L1i, Level::L1d, Level::L2, Level::Llc] {
            prop_assert_eq!(counters(&m, 0, level).induced.total(), 0, "{:?}", level);
        }
        let t = m.tasks[0].tlb;
        prop_assert_eq!(t.l1_induced.total() + t.l2_induced.total(), 0);
    }

    #[test]
    fn attribution_observes_without_changing_anything(
        seed in any::<u64>(), inclusion in 0u8..3, write_through in any::<bool>(), tlb in any::<bool>(),
        schedule in proptest::collection::vec((0u32..3, 0u32..2, 0u8..4), 1..40),
    ) {
        // Three tasks on two cores in a random schedule with switches,
        // moves and TLB flushes; the same run without attribution.
        let with = variant(inclusion, write_through, tlb);
        let without = MachineParams { attribution: Vec::new(), ..with.clone() };
        let mut a = Machine::new(&with, seed, "machine").unwrap();
        let mut b = Machine::new(&without, seed, "machine").unwrap();
        let mut rng = Rng::from_seed(seed);
        for m in [&mut a, &mut b] {
            m.add_tasks(3);
        }
        let mut on = [0u32; 3];
        for &(task, core, event) in &schedule {
            let refs: Vec<Access> = (0..200).map(|_| random_access(&mut rng, 300)).collect();
            for m in [&mut a, &mut b] {
                if on[task as usize] != core {
                    m.moved(TaskId(task));
                }
                run(m, core, task, &refs);
                match event {
                    0 => m.switched_out(TaskId(task)),
                    1 => m.flush_tlbs(CoreId(core), None),
                    _ => {}
                }
            }
            on[task as usize] = core;
        }
        for task in 0..3usize {
            let (x, y) = (&a.tasks[task], &b.tasks[task]);
            prop_assert_eq!(x.stall_cycles, y.stall_cycles);
            prop_assert_eq!((x.tlb.l1_misses, x.tlb.l2_misses, x.tlb.walks), (y.tlb.l1_misses, y.tlb.l2_misses, y.tlb.walks));
            for level in 0..Level::COUNT {
                let (p, q) = (x.levels[level], y.levels[level]);
                prop_assert_eq!(p.hits, q.hits);
                prop_assert_eq!(p.misses, q.misses);
                // Causes are disjoint: induced misses leave compulsory.
                for k in 0..3 {
                    let induced = p.induced.switch[k] + p.induced.migration[k] + p.induced.sharing[k];
                    prop_assert!(p.compulsory[k] + induced <= p.misses[k]);
                    prop_assert!(p.compulsory[k] <= q.compulsory[k]);
                    prop_assert!(p.compulsory[k] + induced >= q.compulsory[k]);
                }
            }
        }
        for (x, y) in a.caches().iter().zip(b.caches()) {
            prop_assert_eq!(&x.stats, &y.stats, "{}", x.path);
        }
    }
}

#[test]
fn marks_keep_their_numbers_across_the_end_of_the_warm_up() {
    // Two rounds of switches, a reset (the end of warm-up) between the
    // marks: each mark's number still finds its count, which restarts.
    let mut m = Machine::new(&small(1, 1), 1, "machine").unwrap();
    m.add_tasks(2);
    let mut marks = Vec::new();
    for round in 0..2 {
        for task in 0..2 {
            run(&mut m, 0, task, &pass(0x1000_0000, W));
            m.switched_out(TaskId(task));
        }
        marks.push(m.mark_switch_misses(TaskId(0), Level::L2).unwrap());
        if round == 0 {
            m.reset_stats();
        }
    }
    m.settle_counts().unwrap();
    assert_eq!(marks, [0, 1]);
    // Task 0's second pass (round 0) missed W lines by the switch; after the
    // reset, round 1's pass W more.
    assert_eq!(m.marks(), [0, W]);
    assert_eq!(counters(&m, 0, Level::L2).induced.switch[0], W);
}
