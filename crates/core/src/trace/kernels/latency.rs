//! `kind = "latency"`: the memory-latency micro-benchmark (memlat) of the
//! region-scheduling study: pointer chasing through `regions` equal regions,
//! `visit_accesses` dependent loads in one region before moving to the next.
//!
//! Each region of `region_bytes` holds `n = region_bytes / element_bytes`
//! nodes linked in one random cycle (a seeded permutation, as the `chase`
//! generator builds it); each access loads the pointer at the start of the
//! next node. A thread visits region 0 for `visit_accesses` loads, then
//! region 1, ..., then region 0 again, where it continues from the node it
//! left: a region's idle time is `(regions - 1) * visit_accesses` loads, the
//! study's "access time" A is `visit_accesses`. One iteration is one visit
//! of every region.
//!
//! With `shared = false` (the default) each thread chases its own regions
//! (thread `t`'s are regions `t * regions ..` of the layout); with `shared =
//! true` all threads chase the same regions, each starting `t * n / threads`
//! nodes along the cycle. The regions are laid out one after another from
//! `base_addr`, each at the next 4 KiB.

use crate::error::{Issues, Result};
use crate::trace::synthetic::common::{field_loc, Length};
use crate::trace::{Workload, WorkloadCtx};
use crate::units::ByteSize;
use crate::util::perm::Permutation;
use crate::util::rng::Rng;

use super::{
    draw, draw_key, drive, kernel_params, lay_out_sites, Kernel, Layout, NasClass, NasSized, Out, Shared, Site, L,
    STEP_MAX,
};

kernel_params! {
    /// Parameters of `kind = "latency"`.
    pub struct LatencyParams {
        /// Regions chased in turn, at least 1 (default 2).
        pub regions: u32 = 2,
        /// Bytes of each region (default 1MiB).
        pub region_bytes: ByteSize = ByteSize(1 << 20),
        /// Bytes per node, at least 8 (default 64: one cache line).
        pub element_bytes: ByteSize = ByteSize(64),
        /// Loads in a region before moving to the next, at least 1 (default 4096).
        pub visit_accesses: u64 = 4096,
        /// All threads chase the same regions (default false: each its own).
        pub shared: bool = false,
        /// Instructions per load, at least 1 (default 2: the load and the
        /// loop's count and branch).
        pub instructions: u32 = 2,
    }
}

/// memlat is not one of NAS's kernels: a `class` key is refused.
impl NasSized for LatencyParams {
    const NAS: Option<&'static str> = None;

    fn take_class(&mut self, _: NasClass) {}
}

/// One region as a thread sees it.
struct Region {
    base: u64,
    cycle: Permutation,
    pos: u64,
}

/// One thread of the benchmark.
struct Latency {
    site: Site,
    element: u64,
    regions: Vec<Region>,
    visit: u64,
    current: usize,
    left: u64,
}

impl Kernel for Latency {
    /// memlat's threads chase their regions on their own.
    const BARRIERS: bool = false;

    fn step(&mut self, out: &mut Out) -> bool {
        let r = &mut self.regions[self.current];
        let n = (self.left as usize).min(STEP_MAX) as u64;
        for _ in 0..n {
            out.put(&self.site, r.base + self.element * r.cycle.apply(r.pos));
            r.pos += 1;
            if r.pos == r.cycle.len() {
                r.pos = 0;
            }
        }
        self.left -= n;
        if self.left > 0 {
            return false;
        }
        self.left = self.visit;
        self.current = (self.current + 1) % self.regions.len();
        self.current == 0
    }
}

impl LatencyParams {
    /// Validate and build; `length` says whether `accesses` applies.
    pub(crate) fn build_with(&self, ctx: &WorkloadCtx, length: Length) -> Result<Box<dyn Workload>> {
        let mut issues = Issues::default();
        let at = |f: &str| field_loc(&ctx.loc, f);
        let (element, bytes) = (self.element_bytes.0, self.region_bytes.0);
        issues.check(self.regions >= 1, at("regions"), "out_of_range", "regions must be at least 1");
        issues.check(
            element >= 8,
            at("element_bytes"),
            "out_of_range",
            format!("element_bytes must hold a pointer (at least 8), got {element}"),
        );
        issues.check(
            element < 8 || bytes >= element,
            at("region_bytes"),
            "too_small",
            format!("region_bytes = {bytes} is smaller than one node of element_bytes = {element}"),
        );
        issues.check(
            self.visit_accesses >= 1,
            at("visit_accesses"),
            "out_of_range",
            "visit_accesses must be at least 1",
        );
        issues.check(self.instructions >= 1, at("instructions"), "out_of_range", "instructions must be at least 1");
        let common = self.common();
        let copies = if self.shared { 1 } else { common.threads.max(1) };
        let mut layout = Layout::new(self.base_addr);
        let bases: Vec<u64> = (0..(self.regions as u64).saturating_mul(copies as u64).min(1 << 20))
            .map(|_| layout.place(bytes))
            .collect();
        let ([site], code_bytes) = lay_out_sites(self.code_base, &[(L, 8, self.instructions.max(1))]);
        // The initialisation links the lists: one pointer per node.
        let nodes = if element >= 8 { bytes / element } else { 0 };
        // Without `shared`, thread t's regions are its own.
        let per = self.regions.max(1) as usize;
        let owner = |i: usize| if self.shared { None } else { Some((i / per) as u32) };
        let shared: Vec<Shared> = bases
            .iter()
            .enumerate()
            .map(|(i, &addr)| Shared { addr, elem: 8, stride: element, n: nodes, owner: owner(i) })
            .collect();
        let (thread, init) = common.validate("latency", ctx, length, &mut layout, code_bytes, &shared, &mut issues);
        issues.finish()?;
        let n = bytes / element;
        let key = draw_key(ctx.seed, "latency");
        let first = if self.shared { 0 } else { thread.index as usize * self.regions as usize };
        let start = if self.shared { (thread.index as u64 * n) / thread.count as u64 } else { 0 };
        let regions = (first..first + self.regions as usize)
            .map(|i| Region {
                base: bases[i],
                cycle: Permutation::new(n, &mut Rng::from_seed(draw(key, i as u64))),
                pos: start,
            })
            .collect();
        let kernel =
            Latency { site, element, regions, visit: self.visit_accesses, current: 0, left: self.visit_accesses };
        Ok(drive(kernel, init, &common, length))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use serde_json::json;
    use std::collections::BTreeSet;

    const B: u64 = 0x10_0000_0000;

    #[test]
    fn visits_alternate_and_resume_each_cycle_where_they_left_it() {
        // 2 regions of 100 nodes, 30 loads per visit: region 0 loads 0-29
        // of its cycle, region 1 its 0-29, region 0 its 30-59, ...; after
        // 10 visits of each, every node was loaded 3 times.
        let p = json!({"region_bytes": 6400, "visit_accesses": 30, "iterations": 10});
        let all = thread("latency", &p, 4, 0, 1);
        assert_eq!(all.len(), 600);
        let region = |a: u64| (a - B) / 8192;
        for (v, visit) in all.chunks(30).enumerate() {
            assert!(visit.iter().all(|a| region(a.addr.0) == (v % 2) as u64), "visit {v}");
        }
        let r0: Vec<u64> = all.iter().map(|a| a.addr.0).filter(|&a| region(a) == 0).collect();
        // One lap is a permutation of the 100 nodes, and laps repeat.
        let lap: BTreeSet<u64> = r0[..100].iter().copied().collect();
        assert_eq!(lap, (0..100).map(|i| B + 64 * i).collect());
        assert_eq!(r0[..100], r0[100..200]);
        // Not sequential, and the two regions have different cycles.
        let r1: Vec<u64> = all.iter().map(|a| a.addr.0).filter(|&a| region(a) == 1).map(|a| a - 8192).collect();
        assert!(r0[..100] != r1[..100]);
        assert!(r0.windows(2).filter(|w| w[1] == w[0] + 64).count() < 10);
        assert!(all.iter().all(|a| a.instrs == 2 && a.size == 8 && a.kind == crate::types::AccessKind::Load));
    }

    #[test]
    fn threads_chase_their_own_regions_or_share_them_from_spread_starts() {
        let private = json!({"region_bytes": 4096, "threads": 2, "iterations": 1, "visit_accesses": 64});
        let s = threads("latency", &private, 1);
        let pages = |v: &[crate::types::Access]| v.iter().map(|a| (a.addr.0 - B) / 4096).collect::<BTreeSet<_>>();
        assert_eq!(pages(&s[0]), BTreeSet::from([0, 1]));
        assert_eq!(pages(&s[1]), BTreeSet::from([2, 3]));
        let mut shared = private.clone();
        shared["shared"] = json!(true);
        let s = threads("latency", &shared, 1);
        assert_eq!(pages(&s[0]), BTreeSet::from([0, 1]));
        assert_eq!(pages(&s[1]), BTreeSet::from([0, 1]));
        // Thread 1 starts half a lap (32 nodes) along thread 0's cycle.
        assert_eq!(s[1][..32], s[0][32..64]);
    }

    #[test]
    fn latency_errors_name_the_key() {
        let w = |s: &str| format!("workload.params.{s}");
        let e = build_err_as("latency", json!({"element_bytes": 4, "regions": 0, "visit_accesses": 0}), 0, 1);
        assert_eq!(
            e,
            [
                (w("regions"), "out_of_range"),
                (w("element_bytes"), "out_of_range"),
                (w("visit_accesses"), "out_of_range")
            ]
        );
        let e = build_err_as("latency", json!({"region_bytes": 32}), 0, 1);
        assert_eq!(e, [(w("region_bytes"), "too_small")]);
    }
}
