//! `kind = "stream"`: sequential sweeps with a fixed stride over one or more
//! arrays, wrapping around.
//!
//! The simplest access pattern with perfect spatial locality and no temporal
//! reuse within a sweep: it is what scans, copies and STREAM-like kernels do,
//! the case stride prefetchers are built for, and the pattern that thrashes an
//! LRU cache once the working set exceeds it. `streams = k` interleaves `k`
//! arrays in lockstep, like `c[i] = a[i] + b[i]`.

use crate::error::{Issues, Result};
use crate::trace::{Workload, WorkloadCtx};
use crate::units::ByteSize;
use crate::util::rng::Rng;

use super::common::{build_leaf, field_loc, leaf_params, AddrGen, Length};

leaf_params! {
    /// Parameters of `kind = "stream"`.
    ///
    /// The working set is split into `streams` arrays of
    /// `floor(working_set_bytes / streams)` bytes each, rounded down to a
    /// multiple of `access_bytes`. Access `i` goes to array `i mod streams`;
    /// all arrays share one position, which starts at 0 (at the last element
    /// for a negative stride) and advances by `stride_bytes` after each round
    /// of `streams` accesses, modulo the array size.
    pub struct StreamParams {
        /// Total bytes of all arrays (default 1MiB).
        pub working_set_bytes: ByteSize = ByteSize(super::common::DEFAULT_WORKING_SET_BYTES),
        /// Bytes between consecutive accesses to one array (default
        /// `access_bytes`); negative walks downwards; must be a non-zero
        /// multiple of `access_bytes`.
        pub stride_bytes: Option<i64> = None,
        /// Number of arrays accessed in lockstep (default 1).
        pub streams: u32 = 1,
    }
    default store_fraction = 0.3;
}

/// The address source of a stream: one position shared by all arrays.
#[derive(Debug, Clone)]
struct StreamGen {
    /// Offset within each array of the current round.
    offset: u64,
    /// `stride_bytes` modulo the array size, in `[0, array_bytes)`.
    step: u64,
    array_bytes: u64,
    /// Array of the next access.
    array: u32,
    arrays: u32,
    /// Array of the access returned last.
    last: u32,
}

impl AddrGen for StreamGen {
    #[inline(always)]
    fn next_offset(&mut self, _rng: &mut Rng) -> u64 {
        let out = self.array as u64 * self.array_bytes + self.offset;
        self.last = self.array;
        self.array += 1;
        if self.array == self.arrays {
            self.array = 0;
            self.offset += self.step;
            if self.offset >= self.array_bytes {
                self.offset -= self.array_bytes;
            }
        }
        out
    }

    #[inline(always)]
    fn site(&self) -> Option<usize> {
        Some(self.last as usize)
    }
}

impl StreamParams {
    /// Validate and build the generator with its own length.
    pub fn build(&self, ctx: &WorkloadCtx) -> Result<Box<dyn Workload>> {
        self.build_with(ctx, Length::Own)
    }

    /// Validate and build; `length` says whether `accesses` applies.
    pub(crate) fn build_with(&self, ctx: &WorkloadCtx, length: Length) -> Result<Box<dyn Workload>> {
        let mut issues = Issues::default();
        let at = |field: &str| field_loc(&ctx.loc, field);
        let common = self.common();
        let access = common.access_bytes as u64;
        issues.check(self.streams >= 1, at("streams"), "out_of_range", "streams must be at least 1");
        let stride = self.stride_bytes.unwrap_or(access as i64);
        let mut layout = None;
        if access >= 1 {
            if stride == 0 {
                issues.push(at("stride_bytes"), "out_of_range", "stride_bytes must not be zero");
            } else if stride % access as i64 != 0 {
                issues.push(
                    at("stride_bytes"),
                    "not_multiple",
                    format!("stride_bytes = {stride} is not a multiple of access_bytes = {access}"),
                );
            }
            if self.streams >= 1 {
                let array = self.working_set_bytes.0 / self.streams as u64 / access * access;
                if array == 0 {
                    issues.push(
                        at("working_set_bytes"),
                        "too_small",
                        format!(
                            "working_set_bytes = {} is smaller than streams x access_bytes = {} x {access}",
                            self.working_set_bytes.0, self.streams
                        ),
                    );
                } else {
                    layout = Some(array);
                }
            }
        }
        common.validate(&ctx.loc, length, layout.map(|array| array * self.streams as u64), &mut issues);
        issues.finish()?;
        let array_bytes = layout.unwrap_or(access);
        let gen = StreamGen {
            offset: if stride > 0 { 0 } else { array_bytes - access },
            step: (stride as i128).rem_euclid(array_bytes as i128) as u64,
            array_bytes,
            array: 0,
            last: 0,
            arrays: self.streams,
        };
        Ok(build_leaf(gen, &common, ctx, length))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{addrs, build, build_err, take};
    use serde_json::json;

    const B: u64 = 0x10_0000_0000;

    #[test]
    fn one_array_wraps_around() {
        // 40 bytes of 8-byte elements, stride 16: offsets 0, 16, 32, then
        // 48 - 40 = 8, 24, 40 - 40 = 0, 16.
        let mut w = build("stream", json!({"working_set_bytes": 40, "stride_bytes": 16, "store_fraction": 0.0}));
        let expected: Vec<u64> = [0, 16, 32, 8, 24, 0, 16].iter().map(|o| B + o).collect();
        assert_eq!(addrs(&take(&mut *w, 7)), expected);
    }

    #[test]
    fn negative_stride_walks_down_from_the_last_element() {
        // 40 bytes, stride -24: starts at 32, then 8, -16 + 40 = 24, 0,
        // -24 + 40 = 16, -8 + 40 = 32.
        let mut w = build("stream", json!({"working_set_bytes": 40, "stride_bytes": -24, "store_fraction": 0.0}));
        let expected: Vec<u64> = [32, 8, 24, 0, 16, 32].iter().map(|o| B + o).collect();
        assert_eq!(addrs(&take(&mut *w, 6)), expected);
    }

    #[test]
    fn several_streams_interleave_in_lockstep() {
        // 96 bytes in two arrays of 48 at offsets 0 and 48, stride 16:
        // a[0] b[0] a[16] b[16] a[32] b[32], then wrap to a[0] b[0] a[16].
        let mut w = build(
            "stream",
            json!({"working_set_bytes": 96, "streams": 2, "stride_bytes": 16,
                   "store_fraction": 0.0, "base_addr": 4096}),
        );
        let expected: Vec<u64> = [0, 48, 16, 64, 32, 80, 0, 48, 16].iter().map(|o| 4096 + o).collect();
        assert_eq!(addrs(&take(&mut *w, 9)), expected);
    }

    #[test]
    fn arrays_round_down_to_whole_elements() {
        // 100 bytes over 3 arrays of 8-byte elements: 33 -> 32 bytes each, so
        // the arrays start at 0, 32, 64 and the default stride is 8.
        let mut w = build("stream", json!({"working_set_bytes": 100, "streams": 3, "store_fraction": 0.0}));
        let got = addrs(&take(&mut *w, 15));
        let mut expected = Vec::new();
        for round in 0..5u64 {
            for array in 0..3u64 {
                expected.push(B + array * 32 + (round * 8) % 32);
            }
        }
        assert_eq!(got, expected);
    }

    #[test]
    fn stream_errors_name_the_key() {
        let e = build_err("stream", json!({"stride_bytes": 12}));
        assert_eq!(e, [("workload.params.stride_bytes".into(), "not_multiple")]);
        let e = build_err("stream", json!({"stride_bytes": 0}));
        assert_eq!(e, [("workload.params.stride_bytes".into(), "out_of_range")]);
        let e = build_err("stream", json!({"working_set_bytes": 16, "streams": 3}));
        assert_eq!(e, [("workload.params.working_set_bytes".into(), "too_small")]);
        let e = build_err("stream", json!({"streams": 0}));
        assert_eq!(e, [("workload.params.streams".into(), "out_of_range")]);
    }
}
