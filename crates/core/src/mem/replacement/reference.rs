//! Independent reference models of the insertion-and-promotion policies,
//! checked against the real [`Cache`] with each registered policy on random
//! streams: the same hit or miss for every access.
//!
//! The models are written from the papers and docs/replacement.md, not from
//! the policies' code: a set is a plain list (in recency order for the LRU
//! family, in way order for the RRIP family), the RRIP victim search is the
//! paper's loop, leader sets are found by the documented rule per set. They
//! share only the random stream (the cache's seeded [`Rng`], drawn once per
//! bimodal insertion, as documented) with the code under test.

use proptest::prelude::*;
use serde_json::json;

use crate::mem::cache::{Cache, CacheParams, Req};
use crate::mem::replacement::ReqKind;
use crate::plugin::PluginConfig;
use crate::types::{LineAddr, TaskId, VirtAddr};
use crate::util::rng::Rng;

const SEED: u64 = 42;
const COMPONENT: &str = "test/cache";

/// The policy a model follows, with its params.
#[derive(Debug, Clone)]
enum Kind {
    Lru,
    Lip,
    Bip { epsilon: f64 },
    Dip { epsilon: f64, leaders: usize, psel_bits: u32 },
    Srrip { m: u32 },
    Brrip { m: u32, epsilon: f64 },
    Drrip { m: u32, epsilon: f64, leaders: usize, psel_bits: u32 },
    Ship { m: u32, signature_bits: u32, counter_bits: u32, init: u32 },
}

impl Kind {
    fn config(&self) -> PluginConfig {
        let (kind, params) = match *self {
            Kind::Lru => ("lru", json!({})),
            Kind::Lip => ("lip", json!({})),
            Kind::Bip { epsilon } => ("bip", json!({ "epsilon": epsilon })),
            Kind::Dip { epsilon, leaders, psel_bits } => {
                ("dip", json!({ "epsilon": epsilon, "leader_sets": leaders, "psel_bits": psel_bits }))
            }
            Kind::Srrip { m } => ("srrip", json!({ "rrpv_bits": m })),
            Kind::Brrip { m, epsilon } => ("brrip", json!({ "rrpv_bits": m, "epsilon": epsilon })),
            Kind::Drrip { m, epsilon, leaders, psel_bits } => {
                ("drrip", json!({ "rrpv_bits": m, "epsilon": epsilon, "leader_sets": leaders, "psel_bits": psel_bits }))
            }
            Kind::Ship { m, signature_bits, counter_bits, init } => (
                "ship",
                json!({ "rrpv_bits": m, "signature_bits": signature_bits, "counter_bits": counter_bits,
                        "counter_init": init }),
            ),
        };
        PluginConfig { kind: kind.into(), params }
    }
}

#[derive(Debug, Clone, Copy)]
struct Line {
    addr: u64,
    rrpv: u32,
    signature: usize,
    reused: bool,
}

/// A cache of `sets` lists.
struct Model {
    kind: Kind,
    sets: usize,
    ways: usize,
    /// LRU family: most recent first, at most `ways` long. RRIP family:
    /// exactly `ways` slots, `None` when invalid.
    lists: Vec<Vec<Option<Line>>>,
    rng: Rng,
    psel: u32,
    shct: Vec<u32>,
}

/// Which policy a set leads for in a duel of `leaders` per policy: 'A', 'B'
/// or 'F' (follower). docs/replacement.md: regions of sets/leaders sets; in
/// region r the set at offset r mod R leads for A, the one at R-1-(r mod R)
/// (the next one if that is the same) for B.
fn role(set: usize, sets: usize, leaders: usize) -> char {
    let size = sets / leaders;
    let (region, offset) = (set / size, set % size);
    if region >= leaders {
        return 'F';
    }
    let a = region % size;
    let b = if size - 1 - a == a { (a + 1) % size } else { size - 1 - a };
    if offset == a {
        'A'
    } else if offset == b {
        'B'
    } else {
        'F'
    }
}

/// SplitMix64's finaliser, as the signature hash (docs/replacement.md).
fn finaliser(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}

impl Model {
    fn new(kind: Kind, sets: usize, ways: usize) -> Model {
        let rrip = matches!(kind, Kind::Srrip { .. } | Kind::Brrip { .. } | Kind::Drrip { .. } | Kind::Ship { .. });
        let psel = match kind {
            Kind::Dip { psel_bits, .. } | Kind::Drrip { psel_bits, .. } => (1 << (psel_bits - 1)) - 1,
            _ => 0,
        };
        let shct = match kind {
            Kind::Ship { signature_bits, init, .. } => vec![init; 1 << signature_bits],
            _ => vec![],
        };
        Model {
            kind,
            sets,
            ways,
            lists: vec![if rrip { vec![None; ways] } else { vec![] }; sets],
            rng: Rng::for_component(SEED, COMPONENT),
            psel,
            shct,
        }
    }

    /// Whether set `set` uses the duel's second policy (BIP, BRRIP) now.
    fn second(&self, set: usize, leaders: usize, psel_bits: u32) -> bool {
        match role(set, self.sets, leaders) {
            'A' => false,
            'B' => true,
            _ => self.psel >= 1 << (psel_bits - 1),
        }
    }

    fn duel_miss(&mut self, set: usize, leaders: usize, psel_bits: u32) {
        match role(set, self.sets, leaders) {
            'A' => self.psel = (self.psel + 1).min((1 << psel_bits) - 1),
            'B' => self.psel = self.psel.saturating_sub(1),
            _ => {}
        }
    }

    /// One access; true on a hit.
    fn access(&mut self, addr: u64, pc: u64) -> bool {
        let set = (addr % self.sets as u64) as usize;
        match self.kind.clone() {
            Kind::Lru | Kind::Lip | Kind::Bip { .. } | Kind::Dip { .. } => self.access_lru_family(set, addr),
            _ => self.access_rrip_family(set, addr, pc),
        }
    }

    fn access_lru_family(&mut self, set: usize, addr: u64) -> bool {
        let list = &mut self.lists[set];
        if let Some(i) = list.iter().position(|l| l.unwrap().addr == addr) {
            let line = list.remove(i);
            list.insert(0, line);
            return true;
        }
        let mru = match self.kind {
            Kind::Lru => true,
            Kind::Lip => false,
            Kind::Bip { epsilon } => self.rng.chance(epsilon),
            Kind::Dip { epsilon, leaders, psel_bits } => {
                self.duel_miss(set, leaders, psel_bits);
                !self.second(set, leaders, psel_bits) || self.rng.chance(epsilon)
            }
            _ => unreachable!(),
        };
        let list = &mut self.lists[set];
        if list.len() == self.ways {
            list.pop();
        }
        let line = Some(Line { addr, rrpv: 0, signature: 0, reused: false });
        if mru {
            list.insert(0, line);
        } else {
            list.push(line);
        }
        false
    }

    fn access_rrip_family(&mut self, set: usize, addr: u64, pc: u64) -> bool {
        let m = match self.kind {
            Kind::Srrip { m } | Kind::Brrip { m, .. } | Kind::Drrip { m, .. } | Kind::Ship { m, .. } => m,
            _ => unreachable!(),
        };
        let distant = (1 << m) - 1;
        let counter_max = match self.kind {
            Kind::Ship { counter_bits, .. } => (1 << counter_bits) - 1,
            _ => 0,
        };
        if let Some(way) = self.lists[set].iter().position(|l| l.is_some_and(|l| l.addr == addr)) {
            let line = self.lists[set][way].as_mut().unwrap();
            line.rrpv = 0;
            if let Kind::Ship { .. } = self.kind {
                line.reused = true;
                let c = &mut self.shct[line.signature];
                *c = (*c + 1).min(counter_max);
            }
            return true;
        }
        if let Kind::Drrip { leaders, psel_bits, .. } = self.kind {
            self.duel_miss(set, leaders, psel_bits);
        }
        let way = match self.lists[set].iter().position(|l| l.is_none()) {
            Some(way) => way,
            None => loop {
                if let Some(way) = self.lists[set].iter().position(|l| l.unwrap().rrpv == distant) {
                    break way;
                }
                for line in self.lists[set].iter_mut() {
                    line.as_mut().unwrap().rrpv += 1;
                }
            },
        };
        if let (Kind::Ship { .. }, Some(old)) = (&self.kind, self.lists[set][way]) {
            if !old.reused {
                self.shct[old.signature] = self.shct[old.signature].saturating_sub(1);
            }
        }
        let mut line = Line { addr, rrpv: distant - 1, signature: 0, reused: false };
        match self.kind {
            Kind::Srrip { .. } => {}
            Kind::Brrip { epsilon, .. } => line.rrpv = if self.rng.chance(epsilon) { distant - 1 } else { distant },
            Kind::Drrip { epsilon, leaders, psel_bits, .. } => {
                if self.second(set, leaders, psel_bits) && !self.rng.chance(epsilon) {
                    line.rrpv = distant;
                }
            }
            Kind::Ship { signature_bits, .. } => {
                line.signature = (finaliser(pc) >> (64 - signature_bits)) as usize;
                if self.shct[line.signature] == 0 {
                    line.rrpv = distant;
                }
            }
            _ => unreachable!(),
        }
        self.lists[set][way] = Some(line);
        false
    }
}

/// Hits and misses of the real cache with `kind`, one per access.
fn simulated(kind: &Kind, sets: usize, ways: usize, stream: &[(u64, u64)]) -> Vec<bool> {
    let params = CacheParams {
        size_bytes: crate::units::ByteSize((sets * ways * 64) as u64),
        ways: ways as u32,
        replacement: kind.config(),
        ..CacheParams::default()
    };
    let mut cache = Cache::new(&params, 40, SEED, COMPONENT, "machine.l2").unwrap();
    stream
        .iter()
        .map(|&(addr, pc)| {
            let req = Req { kind: ReqKind::Load, pc: VirtAddr(pc), task: TaskId(0) };
            let line = LineAddr(addr);
            match cache.find(line) {
                Some(slot) => {
                    cache.hit(slot, &req);
                    true
                }
                None => {
                    cache.miss(line, &req);
                    cache.fill(line, false, &req);
                    false
                }
            }
        })
        .collect()
}

fn modelled(kind: &Kind, sets: usize, ways: usize, stream: &[(u64, u64)]) -> Vec<bool> {
    let mut model = Model::new(kind.clone(), sets, ways);
    stream.iter().map(|&(addr, pc)| model.access(addr, pc)).collect()
}

fn kinds(sets: usize) -> impl Strategy<Value = Kind> {
    let epsilon = prop_oneof![Just(0.0), Just(1.0 / 32.0), Just(0.25), Just(1.0)];
    let leaders = 1..=(sets / 2).max(1);
    prop_oneof![
        Just(Kind::Lru),
        Just(Kind::Lip),
        epsilon.clone().prop_map(|epsilon| Kind::Bip { epsilon }),
        (epsilon.clone(), leaders.clone(), 1u32..5).prop_map(|(epsilon, leaders, psel_bits)| Kind::Dip {
            epsilon,
            leaders,
            psel_bits
        }),
        (1u32..4).prop_map(|m| Kind::Srrip { m }),
        (1u32..4, epsilon.clone()).prop_map(|(m, epsilon)| Kind::Brrip { m, epsilon }),
        (1u32..4, epsilon, leaders, 1u32..5).prop_map(|(m, epsilon, leaders, psel_bits)| Kind::Drrip {
            m,
            epsilon,
            leaders,
            psel_bits
        }),
        (1u32..4, 1u32..5, 1u32..4).prop_flat_map(|(m, signature_bits, counter_bits)| (0..=(1u32 << counter_bits) - 1)
            .prop_map(move |init| Kind::Ship { m, signature_bits, counter_bits, init })),
    ]
}

/// A geometry, a policy for it, and a stream over about twice its lines:
/// a hot part and a cold part, with pcs that tell them apart half the time.
fn cases() -> impl Strategy<Value = (usize, usize, Kind, Vec<(u64, u64)>)> {
    (prop_oneof![Just(2usize), Just(4), Just(8), Just(6)], 1usize..9).prop_flat_map(|(sets, ways)| {
        let lines = (2 * sets * ways + 3) as u64;
        let access = (any::<bool>(), 0..lines, 0u64..4).prop_map(move |(hot, line, pc)| {
            if hot {
                (line % (sets * ways / 2 + 1) as u64, pc)
            } else {
                (line, 4 + pc)
            }
        });
        (Just(sets), Just(ways), kinds(sets), proptest::collection::vec(access, 0..1500))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn every_policy_hits_exactly_where_its_reference_model_does((sets, ways, kind, stream) in cases()) {
        let want = modelled(&kind, sets, ways, &stream);
        let got = simulated(&kind, sets, ways, &stream);
        let first = want.iter().zip(&got).position(|(a, b)| a != b);
        prop_assert!(first.is_none(), "{kind:?}, {sets} sets x {ways} ways: first difference at access {first:?}");
    }
}

#[test]
fn the_models_differ_from_one_another() {
    // The comparison proves little if every policy hits the same: on a
    // cyclic scan slightly larger than the cache LRU always misses, LIP and
    // BRRIP keep part of it, SRRIP does as LRU.
    let (sets, ways) = (8, 4);
    let stream: Vec<(u64, u64)> = (0..4000).map(|i| (i % 40, 0)).collect();
    let hits = |kind: Kind| modelled(&kind, sets, ways, &stream).iter().filter(|&&h| h).count();
    assert_eq!(hits(Kind::Lru), 0);
    assert!(hits(Kind::Lip) > 2000);
    assert!(hits(Kind::Brrip { m: 2, epsilon: 1.0 / 32.0 }) > 2000);
    assert!(hits(Kind::Dip { epsilon: 1.0 / 32.0, leaders: 2, psel_bits: 4 }) > 1000);
}

#[test]
fn every_policy_with_its_defaults_agrees_on_a_long_stream() {
    // 64 sets: the default 32 + 32 leaders leave no follower, so also 128.
    let defaults = [
        Kind::Lru,
        Kind::Lip,
        Kind::Bip { epsilon: 1.0 / 32.0 },
        Kind::Dip { epsilon: 1.0 / 32.0, leaders: 32, psel_bits: 10 },
        Kind::Srrip { m: 2 },
        Kind::Brrip { m: 2, epsilon: 1.0 / 32.0 },
        Kind::Drrip { m: 2, epsilon: 1.0 / 32.0, leaders: 32, psel_bits: 10 },
        Kind::Ship { m: 2, signature_bits: 14, counter_bits: 3, init: 1 },
    ];
    let mut rng = Rng::from_seed(3);
    for sets in [64, 128] {
        let ways = 4;
        // Phases of a loop over 1.5x the cache (BIP/BRRIP win) and of a hot
        // half-cache working set (LRU/SRRIP win) steer PSEL both ways.
        let stream: Vec<(u64, u64)> = (0..60_000u64)
            .map(|i| {
                let lines = (sets * ways) as u64;
                if (i / 10_000) % 2 == 0 {
                    (i % (lines * 3 / 2), 1)
                } else {
                    (rng.below(lines / 2) + 10 * lines, 2 + rng.below(3))
                }
            })
            .collect();
        for kind in &defaults {
            let config = kind.config();
            // The defaults are the models' params.
            let parsed = super::ReplacementConfig::parse(&PluginConfig::named(&config.kind), "r").unwrap();
            assert_eq!(parsed.to_raw().params, super::ReplacementConfig::parse(&config, "r").unwrap().to_raw().params);
            let (want, got) = (modelled(kind, sets, ways, &stream), simulated(kind, sets, ways, &stream));
            assert_eq!(want.iter().zip(&got).position(|(a, b)| a != b), None, "{kind:?} with {sets} sets");
        }
    }
}
