//! Seeded synthetic access generators.
//!
//! Studies need workloads whose properties are known exactly (a working set
//! of so many bytes, a reuse pattern, a skew) so that a measured effect can
//! be traced to its cause, and so that a run can be reproduced from its
//! config alone. Every generator here is a pure function of its params, the
//! run's seed and its component path: same inputs, same stream, on any
//! machine. Randomness comes only from [`Rng`](crate::util::rng::Rng)
//! streams derived from (seed, component path, purpose).
//!
//! Leaf generators ([`stream`], [`uniform`], [`zipf`], [`chase`]) decide where
//! data accesses go; they share the common parameters and the driver in
//! `common` (load/store/ifetch mix, pcs, instructions per access). A `loop`
//! (in `loop.rs`) lays out a loop body instead: its sites fix each access's
//! pc, kind and instructions, and reuse the leaves' address patterns
//! (strided walks, the Zipf sampler). The combinators ([`phases`], [`mix`])
//! compose other workloads. The user guide is `docs/workloads.md`.
//!
//! Nesting rule: a workload nested in `phases` or `mix` runs as long as its
//! parent asks. Leaf generators, `loop`, `phases` and `mix` are built
//! unbounded there (their own `accesses` and, for `phases`, `repeat` are
//! ignored); other kinds (trace files) keep their natural length and may end
//! early, which the parent handles (see each combinator's docs).

pub mod chase;
pub(crate) mod common;
pub mod r#loop;
pub mod mix;
pub mod phases;
pub mod stream;
pub mod uniform;
pub mod zipf;

use crate::error::Result;
use crate::trace::{Workload, WorkloadConfig, WorkloadCtx};

use common::Length;

/// Build a workload nested in a combinator, following the nesting rule in
/// the module docs.
pub(crate) fn build_nested(config: &WorkloadConfig, ctx: &WorkloadCtx) -> Result<Box<dyn Workload>> {
    let endless = Length::Unbounded;
    match config {
        WorkloadConfig::Stream(p) => p.build_with(ctx, endless),
        WorkloadConfig::Uniform(p) => p.build_with(ctx, endless),
        WorkloadConfig::Zipf(p) => p.build_with(ctx, endless),
        WorkloadConfig::Chase(p) => p.build_with(ctx, endless),
        WorkloadConfig::Phases(p) => p.build_with(ctx, endless),
        WorkloadConfig::Mix(p) => p.build_with(ctx, endless),
        WorkloadConfig::Loop(p) => p.build_with(ctx, endless),
        WorkloadConfig::Cg(p) => p.build_with(ctx, endless),
        WorkloadConfig::Mg(p) => p.build_with(ctx, endless),
        WorkloadConfig::Ft(p) => p.build_with(ctx, endless),
        WorkloadConfig::Is(p) => p.build_with(ctx, endless),
        WorkloadConfig::Ep(p) => p.build_with(ctx, endless),
        WorkloadConfig::Bt(p) => p.build_with(ctx, endless),
        WorkloadConfig::Sp(p) => p.build_with(ctx, endless),
        WorkloadConfig::Lu(p) => p.build_with(ctx, endless),
        WorkloadConfig::Latency(p) => p.build_with(ctx, endless),
        WorkloadConfig::Trace(p) => p.build(ctx),
    }
}

/// Helpers for the tests of this folder.
#[cfg(test)]
pub(crate) mod testutil {
    use crate::error::{Error, Result};
    use crate::plugin::PluginConfig;
    use crate::trace::{Workload, WorkloadConfig, WorkloadCtx};
    use crate::types::Access;

    /// The context of a top-level workload at key `workload`.
    pub fn ctx(seed: u64, component: &str) -> WorkloadCtx {
        WorkloadCtx {
            seed,
            component: component.to_string(),
            loc: "workload".to_string(),
            base_dir: None,
            thread: Default::default(),
        }
    }

    /// Parse and build `{kind, params}` as a user's config would be.
    pub fn try_build_seeded(
        kind: &str,
        params: serde_json::Value,
        seed: u64,
        component: &str,
    ) -> Result<Box<dyn Workload>> {
        let raw = PluginConfig { kind: kind.to_string(), params };
        WorkloadConfig::parse(&raw, "workload")?.build(&ctx(seed, component))
    }

    /// Build with a given seed and component; panics on a config error.
    pub fn build_seeded(kind: &str, params: serde_json::Value, seed: u64, component: &str) -> Box<dyn Workload> {
        match try_build_seeded(kind, params, seed, component) {
            Ok(w) => w,
            Err(e) => panic!("{kind} failed to build: {e}"),
        }
    }

    /// Build with seed 42 as `task0`.
    pub fn build(kind: &str, params: serde_json::Value) -> Box<dyn Workload> {
        build_seeded(kind, params, 42, "task0")
    }

    /// The (location, code) of every issue of a config that must fail.
    pub fn build_err(kind: &str, params: serde_json::Value) -> Vec<(String, &'static str)> {
        match try_build_seeded(kind, params, 42, "task0") {
            Ok(_) => panic!("{kind} built but should have failed"),
            Err(Error::Config(issues)) => issues.into_iter().map(|i| (i.loc, i.code)).collect(),
            Err(other) => panic!("not a config error: {other}"),
        }
    }

    /// Up to `n` accesses, pulled in odd-sized batches.
    pub fn take(w: &mut dyn Workload, n: usize) -> Vec<Access> {
        let mut out = Vec::with_capacity(n);
        let mut buf = vec![Access::default(); 1000];
        while out.len() < n {
            let want = (n - out.len()).min(buf.len());
            let got = w.fill(&mut buf[..want]).expect("fill");
            if got == 0 {
                break;
            }
            out.extend_from_slice(&buf[..got]);
        }
        out
    }

    /// The addresses of `accesses`.
    pub fn addrs(accesses: &[Access]) -> Vec<u64> {
        accesses.iter().map(|a| a.addr.0).collect()
    }
}

/// Checks every leaf generator must pass, run over all four.
#[cfg(test)]
mod tests {
    use super::testutil::*;
    use crate::trace::WorkloadConfig;
    use crate::types::{Access, AccessKind};
    use serde_json::{json, Value};
    use std::collections::BTreeSet;

    const LEAVES: [&str; 4] = ["stream", "uniform", "zipf", "chase"];
    const CODE_BASE: u64 = 0x40_0000;

    /// A small config of each leaf, with `extra` params merged in.
    fn leaf(kind: &str, extra: Value) -> Value {
        let mut p = json!({"working_set_bytes": 32768, "base_addr": 0x1_0000_0000u64});
        if kind == "stream" {
            p["streams"] = json!(2);
        }
        for (k, v) in extra.as_object().unwrap() {
            p[k] = v.clone();
        }
        p
    }

    fn count_kinds(accesses: &[Access]) -> [usize; 3] {
        let mut c = [0; 3];
        for a in accesses {
            c[a.kind.index()] += 1;
        }
        c
    }

    #[test]
    fn every_kind_builds_with_defaults_and_rejects_unknown_keys() {
        for &kind in WorkloadConfig::NAMES {
            let e = build_err(kind, json!({"no_such_key": 1}));
            assert_eq!(e, [("workload.params.no_such_key".into(), "unknown_field")], "{kind}");
            if kind == "trace" {
                continue;
            }
            let mut w = build(kind, Value::Null);
            assert_eq!(w.len_hint(), Some(1_000_000), "{kind}");
            let (mut total, mut buf) = (0u64, vec![Access::default(); 4096]);
            loop {
                let n = w.fill(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                total += n as u64;
            }
            assert_eq!(total, 1_000_000, "{kind}");
        }
    }

    #[test]
    fn defaults_round_trip_through_the_raw_form() {
        for kind in LEAVES.iter().chain(&["phases", "mix", "loop"]) {
            let raw = crate::plugin::PluginConfig::named(kind);
            let typed = WorkloadConfig::parse(&raw, "workload").unwrap();
            let again = WorkloadConfig::parse(&typed.to_raw(), "workload").unwrap();
            assert_eq!(typed, again, "{kind}");
        }
    }

    #[test]
    fn kind_fractions_and_pcs() {
        let n = 100_000;
        for kind in LEAVES {
            let p = leaf(kind, json!({"store_fraction": 0.3, "ifetch_fraction": 0.2, "pcs": 10}));
            let all = take(&mut *build(kind, p), n);
            let c = count_kinds(&all);
            // Each fraction is binomial; 5 standard deviations is about 0.007.
            for (kind_index, expected) in [(1, 0.3), (2, 0.2), (0, 0.5)] {
                let f = c[kind_index] as f64 / n as f64;
                let sigma = (expected * (1.0 - expected) / n as f64).sqrt();
                assert!((f - expected).abs() < 5.0 * sigma, "{kind}: {c:?}");
            }
            let code_end = CODE_BASE + 16384;
            let (mut loads, mut stores) = (BTreeSet::new(), BTreeSet::new());
            for a in &all {
                assert!(a.pc.0 >= CODE_BASE && a.pc.0 < code_end && a.pc.0 % 4 == 0);
                match a.kind {
                    AccessKind::Ifetch => {
                        assert_eq!(a.pc, a.addr);
                        assert_eq!(a.size, 4);
                    }
                    AccessKind::Load => {
                        loads.insert(a.pc.0);
                    }
                    AccessKind::Store => {
                        stores.insert(a.pc.0);
                    }
                }
            }
            // Each of the two arrays of `leaf("stream")` is walked by one load
            // and one store instruction. Elsewhere 10 pcs are split by the
            // store share of data accesses, 0.3 / 0.8: round(3.75) = 4 store
            // pcs and 6 load pcs, all distinct.
            let expected = if kind == "stream" { (2, 2) } else { (6, 4) };
            assert_eq!((loads.len(), stores.len()), expected, "{kind}");
            assert!(loads.is_disjoint(&stores));
        }
    }

    #[test]
    fn each_stream_has_its_own_load_and_store_pc() {
        let p = json!({"streams": 3, "working_set_bytes": 3 * 4096, "store_fraction": 0.5});
        let all = take(&mut *build("stream", p), 6000);
        let mut pcs: Vec<BTreeSet<(u64, bool)>> = vec![BTreeSet::new(); 3];
        for (i, a) in all.iter().enumerate() {
            pcs[i % 3].insert((a.pc.0, a.kind == AccessKind::Store));
        }
        let flat: BTreeSet<u64> = pcs.iter().flatten().map(|&(pc, _)| pc).collect();
        assert!(pcs.iter().all(|p| p.len() == 2), "one load pc and one store pc per array: {pcs:?}");
        assert_eq!(flat.len(), 6, "distinct across arrays");
    }

    #[test]
    fn kind_fractions_are_precise_over_a_long_run() {
        // 1M accesses: one standard deviation of a fraction near 0.5 is
        // 0.0005, so a bias of a quarter of a percent would show.
        let n = 1_000_000;
        let p = json!({"store_fraction": 0.5, "ifetch_fraction": 0.25, "accesses": n});
        let c = count_kinds(&take(&mut *build("stream", p), n));
        for (kind_index, expected) in [(1, 0.5), (2, 0.25), (0, 0.25)] {
            let f = c[kind_index] as f64 / n as f64;
            let sigma = (expected * (1.0 - expected) / n as f64).sqrt();
            assert!((f - expected).abs() < 5.0 * sigma, "{c:?}");
        }
    }

    #[test]
    fn extreme_fractions() {
        for kind in LEAVES {
            let all = take(&mut *build(kind, leaf(kind, json!({"store_fraction": 1.0}))), 2000);
            assert_eq!(count_kinds(&all), [0, 2000, 0], "{kind}");
            let all = take(&mut *build(kind, leaf(kind, json!({"ifetch_fraction": 1.0, "store_fraction": 0.0}))), 2000);
            assert_eq!(count_kinds(&all), [0, 0, 2000], "{kind}");
            let p = leaf(kind, json!({"store_fraction": 0.0, "pcs": 1}));
            let all = take(&mut *build(kind, p), 2000);
            assert_eq!(count_kinds(&all), [2000, 0, 0], "{kind}");
            assert!(all.iter().all(|a| a.pc == all[0].pc));
        }
    }

    #[test]
    fn instructions_average_exactly() {
        for kind in LEAVES {
            for (ipa, n) in [(2.7, 100_000usize), (1.0, 1000), (1.25, 1000)] {
                let p = leaf(kind, json!({"instructions_per_access": ipa, "ifetch_fraction": 0.1}));
                let all = take(&mut *build(kind, p), n);
                let total: u64 = all.iter().map(|a| a.instrs as u64).sum();
                let exact = ipa * n as f64;
                assert!((total as f64 - exact).abs() <= 1.0, "{kind}: {total} vs {exact}");
                assert!(all.iter().all(|a| a.instrs >= 1));
            }
        }
    }

    #[test]
    fn data_addresses_stay_in_the_working_set_and_are_aligned() {
        let base = 0x1_0000_0000u64;
        for kind in LEAVES {
            for access in [8u64, 4, 16] {
                let p = leaf(kind, json!({"access_bytes": access, "ifetch_fraction": 0.1}));
                let all = take(&mut *build(kind, p), 20_000);
                let mut distinct = BTreeSet::new();
                for a in all.iter().filter(|a| a.kind != AccessKind::Ifetch) {
                    let off = a.addr.0.wrapping_sub(base);
                    assert!(off + access <= 32768, "{kind}: {:#x}", a.addr.0);
                    assert_eq!(off % access, 0, "{kind}");
                    assert_eq!(a.size as u64, access);
                    distinct.insert(a.addr.0);
                }
                // Generators reach well into the region (zipf less evenly).
                assert!(distinct.len() > 200, "{kind}: {}", distinct.len());
            }
        }
    }

    #[test]
    fn same_inputs_same_stream_different_seed_or_component_different_stream() {
        for kind in LEAVES.iter().chain(&["phases", "mix", "loop"]) {
            let p = if LEAVES.contains(kind) { leaf(kind, json!({"ifetch_fraction": 0.1})) } else { Value::Null };
            let a = take(&mut *build_seeded(kind, p.clone(), 7, "task0"), 5000);
            let b = take(&mut *build_seeded(kind, p.clone(), 7, "task0"), 5000);
            let c = take(&mut *build_seeded(kind, p.clone(), 8, "task0"), 5000);
            let d = take(&mut *build_seeded(kind, p, 7, "task1"), 5000);
            assert_eq!(a, b, "{kind}");
            assert_ne!(a, c, "{kind}");
            assert_ne!(a, d, "{kind}");
        }
    }

    #[test]
    fn data_addresses_do_not_depend_on_the_kind_mix() {
        // Kinds come from their own random stream: adding stores and
        // ifetches leaves the sequence of data addresses unchanged.
        for kind in LEAVES {
            let plain = take(&mut *build(kind, leaf(kind, json!({"store_fraction": 0.0}))), 3000);
            let p = leaf(kind, json!({"store_fraction": 0.4, "ifetch_fraction": 0.3}));
            let mixed: Vec<u64> = take(&mut *build(kind, p), 10_000)
                .iter()
                .filter(|a| a.kind != AccessKind::Ifetch)
                .map(|a| a.addr.0)
                .take(3000)
                .collect();
            assert_eq!(addrs(&plain), mixed, "{kind}");
        }
    }

    #[test]
    fn leaf_lengths_are_exact() {
        for kind in LEAVES {
            let mut w = build(kind, leaf(kind, json!({"accesses": 12_345})));
            assert_eq!(w.len_hint(), Some(12_345));
            assert_eq!(take(&mut *w, 20_000).len(), 12_345, "{kind}");
            assert_eq!(w.fill(&mut [Access::default(); 8]).unwrap(), 0);
        }
    }

    #[test]
    fn common_errors_name_the_key_and_code() {
        let cases: [(Value, &str, &str); 11] = [
            (json!({"accesses": 0}), "accesses", "out_of_range"),
            (json!({"store_fraction": 1.5}), "store_fraction", "out_of_range"),
            (json!({"ifetch_fraction": -0.1}), "ifetch_fraction", "out_of_range"),
            (json!({"store_fraction": 0.6, "ifetch_fraction": 0.5}), "store_fraction", "out_of_range"),
            (json!({"instructions_per_access": 0.5}), "instructions_per_access", "out_of_range"),
            (json!({"pcs": 0}), "pcs", "out_of_range"),
            (json!({"pcs": 9, "code_bytes": 32}), "pcs", "too_large"),
            (json!({"code_bytes": 3}), "code_bytes", "too_small"),
            (json!({"code_base": 0x40_0002}), "code_base", "not_multiple"),
            (json!({"base_addr": 0x40_0000}), "code_base", "overlap"),
            (json!({"base_addr": u64::MAX - 100}), "base_addr", "overflow"),
        ];
        for kind in LEAVES {
            for (params, field, code) in &cases {
                let e = build_err(kind, params.clone());
                assert_eq!(e, [(format!("workload.params.{field}"), *code)], "{kind} with {params}");
            }
            // access_bytes = 0 is reported (and nothing divides by it).
            let e = build_err(kind, json!({"access_bytes": 0}));
            assert!(e.contains(&("workload.params.access_bytes".into(), "out_of_range")), "{kind}: {e:?}");
            // Serde-level problems carry the path too.
            let e = build_err(kind, json!({"working_set_bytes": "12 parsecs"}));
            assert_eq!(e[0].0, "workload.params.working_set_bytes", "{kind}");
            let e = build_err(kind, json!({"access_bytes": 70000}));
            assert_eq!(e[0].0, "workload.params.access_bytes", "{kind}");
            // Every problem is reported at once.
            let e = build_err(kind, json!({"accesses": 0, "pcs": 0, "store_fraction": 2.0}));
            assert_eq!(e.len(), 3, "{kind}: {e:?}");
        }
    }

    #[test]
    fn sizes_accept_units() {
        let mut w = build(
            "uniform",
            json!({"working_set_bytes": "4KiB", "code_bytes": "1KiB", "base_addr": 0,
                   "ifetch_fraction": 0.5}),
        );
        for a in take(&mut *w, 5000) {
            match a.kind {
                AccessKind::Ifetch => assert!((CODE_BASE..CODE_BASE + 1024).contains(&a.addr.0)),
                _ => assert!(a.addr.0 < 4096),
            }
        }
    }
}
