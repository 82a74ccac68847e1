//! The caches split by set over two threads (`Machine::split_sets`) count
//! exactly what the serial machine counts, on random machines of the kinds
//! it accepts and random references (loads, stores, fetches, references
//! across lines and pages, radix walks reading the page table through the
//! caches), batch by batch.

use cachesched_core::mem::cache::{CacheParams, Inclusion, WritePolicy};
use cachesched_core::mem::machine::{Machine, MachineParams};
use cachesched_core::mem::page_table::{FrameAllocation, Placement};
use cachesched_core::mem::tlb::{TlbLevelParams, TlbParams, WalkModel};
use cachesched_core::plugin::PluginConfig;
use cachesched_core::units::ByteSize;
use cachesched_core::{Access, AccessKind, Asid, CoreId, TaskId, VirtAddr};
use proptest::prelude::*;

const POLICIES: [&str; 5] = ["lru", "fifo", "plru", "lip", "srrip"];

fn level(size: u64, ways: u32, latency: u32, policy: usize) -> CacheParams {
    CacheParams {
        size_bytes: ByteSize(size),
        ways,
        latency_cycles: latency,
        replacement: PluginConfig::named(POLICIES[policy]),
        ..CacheParams::default()
    }
}

/// A machine of the kinds the split accepts, drawn from `shape`.
fn machine(shape: &Shape) -> MachineParams {
    let mut m = MachineParams { l1d: level(2048, 2, 1, shape.policies[0]), ..MachineParams::default() };
    if shape.write_through {
        m.l1d.write_policy = WritePolicy::WriteThrough;
        m.l1d.write_allocate = false;
    }
    m.l1i = shape.l1i.then(|| level(1024, 2, 1, shape.policies[0]));
    m.l2 = Some(level(8192, 4, 10, shape.policies[1]));
    // Set counts that are not powers of two, divisible by 8, by 4 only, by
    // 2 only: the translating side keeps an eighth, a quarter or half.
    let sets = [48, 44, 50][shape.llc_sets];
    let mut llc = level(sets * 4 * 64, 4, 30, shape.policies[2]);
    llc.inclusion = [Inclusion::NonInclusive, Inclusion::Inclusive, Inclusion::Exclusive][shape.inclusion];
    m.llc = shape.llc.then_some(llc);
    m.memory.frame_allocation = [FrameAllocation::Sequential, FrameAllocation::Random][shape.frames];
    if shape.nodes {
        m.memory.nodes = Some(2);
        m.memory.placement = Placement::Interleave;
        m.memory.remote_latency_cycles = Some(300);
    }
    m.tlb = shape.tlb.then(|| TlbParams {
        l1d: TlbLevelParams { entries: 8, ways: 2, latency_cycles: 1, replacement: PluginConfig::named("lru") },
        l1i: None,
        l2: Some(TlbLevelParams { entries: 32, ways: 4, latency_cycles: 6, replacement: PluginConfig::named("lru") }),
        walk: if shape.radix { WalkModel::Radix } else { WalkModel::Fixed },
        walk_latency_cycles: 30,
        l2_victim_fill: shape.victim_fill,
    });
    m
}

#[derive(Debug, Clone)]
struct Shape {
    policies: [usize; 3],
    write_through: bool,
    l1i: bool,
    llc: bool,
    llc_sets: usize,
    inclusion: usize,
    frames: usize,
    nodes: bool,
    tlb: bool,
    victim_fill: bool,
    radix: bool,
}

fn shape() -> impl Strategy<Value = Shape> {
    (
        [0..POLICIES.len(), 0..POLICIES.len(), 0..POLICIES.len()],
        any::<bool>(),
        any::<bool>(),
        (prop::bool::weighted(0.8), 0..3usize),
        0..3usize,
        0..2usize,
        any::<bool>(),
        prop::bool::weighted(0.8),
        (any::<bool>(), any::<bool>()),
    )
        .prop_map(
            |(policies, write_through, l1i, (llc, llc_sets), inclusion, frames, nodes, tlb, (victim_fill, radix))| {
                Shape { policies, write_through, l1i, llc, llc_sets, inclusion, frames, nodes, tlb, victim_fill, radix }
            },
        )
}

/// References over 64 pages: mostly within a line, some across lines (and
/// pages), of every kind.
fn accesses() -> impl Strategy<Value = Vec<Access>> {
    let one = (0u64..64 * 4096, 0..10u8, 1..4u32).prop_map(|(addr, k, instrs)| {
        let kind = match k {
            0..=5 => AccessKind::Load,
            6..=8 => AccessKind::Store,
            _ => AccessKind::Ifetch,
        };
        // One in ten a 16-byte reference at any offset: some cross a line.
        let size = if addr % 10 == 0 { 16 } else { 8 };
        let addr = if size == 8 { addr & !7 } else { addr };
        Access { addr: VirtAddr(addr), pc: VirtAddr(0x400000 + addr % 64), instrs, size, kind }
    });
    prop::collection::vec(one, 1..3000)
}

/// Everything a run reports of the machine.
fn counts(m: &mut Machine) -> String {
    m.settle_counts().unwrap();
    let caches: Vec<_> = m.caches().iter().map(|c| (&c.path, &c.stats)).collect();
    let tlbs: Vec<_> = m.tlbs().iter().map(|t| (&t.path, &t.stats)).collect();
    let resident = m.resident(CoreId(0), TaskId(0));
    format!("{caches:?}\n{tlbs:?}\n{:?}\n{:?}\n{resident:?}", m.tasks, m.node_stats())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn the_caches_split_by_set_count_what_the_serial_machine_counts(
        shape in shape(),
        refs in accesses(),
        batch in 1..700usize,
        warm in 0..4usize,
        threaded in any::<bool>(),
    ) {
        let params = machine(&shape);
        let mut serial = Machine::new(&params, 5, "machine").unwrap();
        let mut split = Machine::new(&params, 5, "machine").unwrap();
        for m in [&mut serial, &mut split] {
            m.add_tasks(1);
            if threaded {
                m.classify_on_thread().unwrap();
            }
        }
        prop_assert_eq!(split.split_refusal(), None);
        split.split_sets(&params, 5).unwrap();
        prop_assert!(split.splits_sets());
        for (i, chunk) in refs.chunks(batch).enumerate() {
            let a = serial.access_batch(CoreId(0), TaskId(0), Asid(0), chunk);
            let b = split.access_batch(CoreId(0), TaskId(0), Asid(0), chunk);
            prop_assert_eq!(a, b, "the stall of batch {}", i);
            if i == warm {
                // The end of a warm-up: counts restart on both.
                serial.reset_stats();
                split.reset_stats();
            }
        }
        prop_assert_eq!(counts(&mut serial), counts(&mut split));
    }
}

#[test]
fn machines_the_split_cannot_take_say_why() {
    let lru = level(4096, 4, 1, 0);
    let refused = |m: MachineParams| Machine::new(&m, 1, "machine").unwrap().split_refusal();
    let dueling = PluginConfig { kind: "dip".into(), params: serde_json::json!({"leader_sets": 1}) };
    let cases: Vec<(MachineParams, &str)> = vec![
        (
            MachineParams { l2: Some(CacheParams { replacement: dueling, ..lru.clone() }), ..Default::default() },
            "decides across sets",
        ),
        (
            MachineParams {
                l2: Some(CacheParams { replacement: PluginConfig::named("random"), ..lru.clone() }),
                ..Default::default()
            },
            "decides across sets",
        ),
        // 3 sets of 4 ways.
        (MachineParams { l2: Some(level(3 * 4 * 64, 4, 10, 0)), ..Default::default() }, "odd number of sets"),
        (
            MachineParams {
                l2: Some(CacheParams { prefetcher: Some(PluginConfig::named("stream")), ..lru.clone() }),
                ..Default::default()
            },
            "has a prefetcher",
        ),
    ];
    for (params, why) in cases {
        let said = refused(params).unwrap_or_default();
        assert!(said.contains(why), "{said:?} should say {why:?}");
    }
    assert_eq!(refused(MachineParams { l2: Some(lru), ..Default::default() }), None);
}

#[test]
fn a_long_run_classifying_on_a_thread_counts_what_the_serial_machine_counts() {
    // Enough misses that the other side's notes go to the classifier in
    // full batches of their own, beside the translating side's.
    let shape = Shape {
        policies: [0, 0, 0],
        write_through: false,
        l1i: false,
        llc: true,
        llc_sets: 0,
        inclusion: 0,
        frames: 0,
        nodes: false,
        tlb: true,
        victim_fill: false,
        radix: true,
    };
    let params = machine(&shape);
    let mut serial = Machine::new(&params, 5, "machine").unwrap();
    let mut split = Machine::new(&params, 5, "machine").unwrap();
    for m in [&mut serial, &mut split] {
        m.add_tasks(1);
        m.classify_on_thread().unwrap();
    }
    split.split_sets(&params, 5).unwrap();
    serial.reset_stats();
    split.reset_stats();
    let mut x = 1u64;
    let refs: Vec<Access> = (0..300_000)
        .map(|i| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let kind = if i % 3 == 0 { AccessKind::Store } else { AccessKind::Load };
            Access { addr: VirtAddr(((x >> 20) % (64 << 20)) & !7), pc: VirtAddr(0), instrs: 1, size: 8, kind }
        })
        .collect();
    for chunk in refs.chunks(4096) {
        assert_eq!(
            serial.access_batch(CoreId(0), TaskId(0), Asid(0), chunk),
            split.access_batch(CoreId(0), TaskId(0), Asid(0), chunk)
        );
    }
    assert_eq!(counts(&mut serial), counts(&mut split));
}
