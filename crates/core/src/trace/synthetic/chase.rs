//! `kind = "chase"`: pointer chasing around one random cycle through every
//! element of a working set.
//!
//! Linked-list and graph traversals defeat both spatial locality and stride
//! prefetchers, and every element is reused exactly once per lap, so the
//! reuse distance of every access equals the working set: an LRU cache of
//! that size or more hits on every access after the first lap, a smaller one
//! on none. That sharp threshold makes it the cleanest probe of how much
//! cache a task really kept across a context switch or migration.
//!
//! The cycle is `e_t = P(t mod n)` for a seeded permutation `P` of the `n`
//! elements ([`Permutation`]): element `P(t)` "points to" `P(t + 1)`, which is
//! a single cycle of length `n` in a random-looking order, built in O(1)
//! memory (a shuffled table would take `8 n` bytes). Every lap follows the
//! same cycle, as a real static list would.

use crate::error::{Issues, Result};
use crate::trace::{Workload, WorkloadCtx};
use crate::units::ByteSize;
use crate::util::rng::Rng;

use super::common::{build_leaf, element_count, leaf_params, stream_rng, AddrGen, Length, DEFAULT_WORKING_SET_BYTES};
use crate::util::perm::Permutation;

leaf_params! {
    /// Parameters of `kind = "chase"`.
    ///
    /// The working set holds `n = floor(working_set_bytes / element_bytes)`
    /// elements (list nodes); each data access touches the first
    /// `access_bytes` of the next node on the cycle.
    pub struct ChaseParams {
        /// Bytes of the region holding the nodes (default 1MiB).
        pub working_set_bytes: ByteSize = ByteSize(DEFAULT_WORKING_SET_BYTES),
        /// Bytes per node (default 64, one cache line).
        pub element_bytes: ByteSize = ByteSize(64),
    }
    default store_fraction = 0.0;
}

/// The address source of a pointer chase.
#[derive(Debug, Clone)]
struct ChaseGen {
    perm: Permutation,
    /// Position on the cycle.
    step: u64,
    element_bytes: u64,
}

impl AddrGen for ChaseGen {
    #[inline(always)]
    fn next_offset(&mut self, _rng: &mut Rng) -> u64 {
        let element = self.perm.apply(self.step);
        self.step += 1;
        if self.step == self.perm.len() {
            self.step = 0;
        }
        element * self.element_bytes
    }
}

impl ChaseParams {
    /// Validate and build the generator with its own length.
    pub fn build(&self, ctx: &WorkloadCtx) -> Result<Box<dyn Workload>> {
        self.build_with(ctx, Length::Own)
    }

    /// Validate and build; `length` says whether `accesses` applies.
    pub(crate) fn build_with(&self, ctx: &WorkloadCtx, length: Length) -> Result<Box<dyn Workload>> {
        let mut issues = Issues::default();
        let common = self.common();
        let element = self.element_bytes.0;
        let elements = element_count(&ctx.loc, self.working_set_bytes.0, element, common.access_bytes, &mut issues);
        common.validate(&ctx.loc, length, elements.map(|n| n * element), &mut issues);
        issues.finish()?;
        let n = elements.unwrap_or(1);
        let gen =
            ChaseGen { perm: Permutation::new(n, &mut stream_rng(ctx, "layout")), step: 0, element_bytes: element };
        Ok(build_leaf(gen, &common, ctx, length))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{addrs, build, build_err, build_seeded, take};
    use serde_json::json;

    #[test]
    fn every_lap_visits_every_element_once_in_the_same_order() {
        for (n, element) in [(1u64, 64u64), (2, 64), (7, 64), (1000, 128), (4096, 64)] {
            let mut w = build(
                "chase",
                json!({"working_set_bytes": n * element, "element_bytes": element,
                       "base_addr": 0}),
            );
            let got = addrs(&take(&mut *w, 3 * n as usize));
            let (lap, rest) = got.split_at(n as usize);
            let mut sorted = lap.to_vec();
            sorted.sort();
            let all: Vec<u64> = (0..n).map(|e| e * element).collect();
            assert_eq!(sorted, all, "n = {n}");
            assert_eq!(&rest[..n as usize], lap);
            assert_eq!(&rest[n as usize..], lap);
        }
    }

    #[test]
    fn order_depends_on_the_seed_and_is_not_sequential() {
        let params = json!({"working_set_bytes": 64 * 1000, "base_addr": 0});
        let a = addrs(&take(&mut *build_seeded("chase", params.clone(), 1, "task0"), 1000));
        let b = addrs(&take(&mut *build_seeded("chase", params.clone(), 2, "task0"), 1000));
        let c = addrs(&take(&mut *build_seeded("chase", params, 1, "task1"), 1000));
        let agree = |x: &[u64], y: &[u64]| x.iter().zip(y).filter(|(p, q)| p == q).count();
        // Independent random orders agree in about one position.
        assert!(agree(&a, &b) < 10 && agree(&a, &c) < 10);
        // Few steps go to the neighbouring node.
        let neighbours = a.windows(2).filter(|w| w[0].abs_diff(w[1]) == 64).count();
        assert!(neighbours < 20, "{neighbours}");
    }

    #[test]
    fn chase_is_all_loads_by_default() {
        let mut w = build("chase", json!({}));
        assert!(take(&mut *w, 1000).iter().all(|a| a.kind == crate::types::AccessKind::Load));
    }

    #[test]
    fn chase_errors_name_the_key() {
        let e = build_err("chase", json!({"working_set_bytes": 63}));
        assert_eq!(e, [("workload.params.working_set_bytes".into(), "too_small")]);
        let e = build_err("chase", json!({"element_bytes": 4}));
        assert_eq!(e, [("workload.params.access_bytes".into(), "too_large")]);
    }
}
