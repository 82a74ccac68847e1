//! `kind = "uniform"`: independent, uniformly random accesses over a working
//! set.
//!
//! No spatial or temporal locality beyond what the working-set size implies:
//! the hit rate of a fully-associative LRU cache of `c` bytes is just
//! `c / working_set_bytes`. That makes it the reference point for capacity
//! effects, and the background noise against which scheduling effects are
//! measured (hash tables, random graph probes).

use crate::error::{Issues, Result};
use crate::trace::{Workload, WorkloadCtx};
use crate::units::ByteSize;
use crate::util::rng::Rng;

use super::common::{build_leaf, field_loc, leaf_params, AddrGen, Length, DEFAULT_WORKING_SET_BYTES};

leaf_params! {
    /// Parameters of `kind = "uniform"`.
    ///
    /// The working set is `floor(working_set_bytes / access_bytes)` slots of
    /// `access_bytes` each (a trailing partial slot is never touched); every
    /// data access picks one slot uniformly at random, independently.
    pub struct UniformParams {
        /// Bytes of the region accessed (default 1MiB).
        pub working_set_bytes: ByteSize = ByteSize(DEFAULT_WORKING_SET_BYTES),
    }
    default store_fraction = 0.3;
}

/// The address source of a uniform generator.
#[derive(Debug, Clone)]
struct UniformGen {
    slots: u64,
    slot_bytes: u64,
}

impl AddrGen for UniformGen {
    #[inline(always)]
    fn next_offset(&mut self, rng: &mut Rng) -> u64 {
        rng.below(self.slots) * self.slot_bytes
    }
}

impl UniformParams {
    /// Validate and build the generator with its own length.
    pub fn build(&self, ctx: &WorkloadCtx) -> Result<Box<dyn Workload>> {
        self.build_with(ctx, Length::Own)
    }

    /// Validate and build; `length` says whether `accesses` applies.
    pub(crate) fn build_with(&self, ctx: &WorkloadCtx, length: Length) -> Result<Box<dyn Workload>> {
        let mut issues = Issues::default();
        let common = self.common();
        let access = common.access_bytes as u64;
        let mut slots = None;
        if access >= 1 {
            let n = self.working_set_bytes.0 / access;
            issues.check(
                n >= 1,
                field_loc(&ctx.loc, "working_set_bytes"),
                "too_small",
                format!(
                    "working_set_bytes = {} is smaller than one access of access_bytes = {access}",
                    self.working_set_bytes.0
                ),
            );
            slots = (n >= 1).then_some(n);
        }
        common.validate(&ctx.loc, length, slots.map(|n| n * access), &mut issues);
        issues.finish()?;
        let gen = UniformGen { slots: slots.unwrap_or(1), slot_bytes: access };
        Ok(build_leaf(gen, &common, ctx, length))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{build, build_err, take};
    use serde_json::json;

    #[test]
    fn addresses_are_aligned_in_range_and_evenly_spread() {
        // 4000 bytes of 16-byte slots = 250 slots, grouped into 25 buckets of
        // 10 slots; 100,000 draws give 4000 per bucket.
        let base = 1 << 30;
        let mut w = build(
            "uniform",
            json!({"working_set_bytes": 4000, "access_bytes": 16, "base_addr": base,
                   "store_fraction": 0.0}),
        );
        let n = 100_000;
        let mut buckets = [0u64; 25];
        for a in take(&mut *w, n) {
            let off = a.addr.0 - base;
            assert!(a.addr.0 >= base && off < 4000, "{:#x}", a.addr.0);
            assert_eq!(off % 16, 0);
            assert_eq!(a.size, 16);
            buckets[(off / 16 / 10) as usize] += 1;
        }
        // Pearson's chi-square with 24 degrees of freedom: mean 24, standard
        // deviation 6.9; 60 is beyond the 99.99th percentile (about 57).
        let expected = n as f64 / 25.0;
        let chi2: f64 = buckets.iter().map(|&c| (c as f64 - expected).powi(2) / expected).sum();
        assert!(chi2 < 60.0, "chi2 = {chi2}, {buckets:?}");
        // Every slot is reachable: the last one too.
        let mut w = build("uniform", json!({"working_set_bytes": 64, "access_bytes": 16, "base_addr": 0}));
        let mut seen = [false; 4];
        for a in take(&mut *w, 1000) {
            seen[(a.addr.0 / 16) as usize] = true;
        }
        assert_eq!(seen, [true; 4]);
    }

    #[test]
    fn working_set_must_hold_one_access() {
        let e = build_err("uniform", json!({"working_set_bytes": 4}));
        assert_eq!(e, [("workload.params.working_set_bytes".into(), "too_small")]);
    }
}
