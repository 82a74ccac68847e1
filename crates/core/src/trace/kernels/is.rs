//! `kind = "is"`: the integer sort of NAS IS, a bucket sort of `keys`
//! integer keys in `[0, max_key)` followed by the ranking of every key.
//!
//! The data (in this order, each at the next 4 KiB, 4-byte integers):
//! `key_array` (`keys`), `key_buff1` (`max_key`, the ranks), `key_buff2`
//! (`keys`, the keys sorted by bucket), all shared, then `bucket_size` and
//! `bucket_ptrs` (`buckets` each), one row per thread. A key's bucket is its
//! top `log2(buckets)` bits. Keys are NAS's: the sum of four uniform draws
//! in `[0, max_key / 4)`, a bell-shaped spread, each a hash of (seed, key
//! index, draw) so that every thread sees the same keys.
//!
//! Threads split the keys in OpenMP static blocks. The first iteration
//! starts with the key generation (each thread stores its block of
//! `key_array`); every iteration is NAS's `rank`:
//!
//! ```text
//! for b:                  bucket_size[t][b] = 0
//! for i in my keys:       bucket_size[t][key_array[i] >> shift]++
//! for b, for every thread k:  bucket_ptrs[t][b] = ... + bucket_size[k][b or b-1]
//! for i in my keys:       key_buff2[bucket_ptrs[t][bucket(key_array[i])]++] = key_array[i]
//! for b in my buckets:    key_buff1[range of b] = 0
//!                         for m in b's part of key_buff2: key_buff1[key_buff2[m]]++
//!                         prefix sums over key_buff1[range of b]
//! ```
//!
//! The pointer computation reads every thread's counts; the scatter writes
//! each thread's keys into its slice of every bucket (thread 0's first), so
//! every position of `key_buff2` is written once per iteration, by one
//! thread. NAS shares the last loop out with `schedule(dynamic)`; here
//! bucket `b` goes to thread `b mod threads`, the deterministic
//! round-robin closest to it. NAS's partial verification is left out.

use crate::error::{Issues, Result};
use crate::trace::synthetic::common::{field_loc, Length};
use crate::trace::{Workload, WorkloadCtx};

use super::{
    check_work, draw, draw_key, drive, kernel_params, lay_out_sites, share, Kernel, Layout, NasClass, NasSized, Out,
    Shared, Site, SiteSpec, L, S,
};

kernel_params! {
    /// Parameters of `kind = "is"`.
    pub struct IsParams {
        /// Keys to sort, in [1, 2^28] (default 2^20, NAS class W).
        pub keys: u64 = 1 << 20,
        /// Keys lie in `[0, max_key)`, a power of two of at least 4 (default 2^16).
        pub max_key: u64 = 1 << 16,
        /// Buckets, a power of two of at most `max_key` (default 1024).
        pub buckets: u64 = 1024,
    }
}

/// NAS IS's classes (NPB 3.3 `is.c`: `TOTAL_KEYS_LOG_2`, `MAX_KEY_LOG_2`,
/// `NUM_BUCKETS_LOG_2`; `MAX_ITERATIONS` 10).
impl NasSized for IsParams {
    const NAS: Option<&'static str> = Some("IS");

    fn take_class(&mut self, class: NasClass) {
        let (keys, max_key, buckets) =
            [(16, 11, 9), (20, 16, 10), (23, 19, 10), (25, 21, 10), (27, 23, 10)][class.index()];
        (self.keys, self.max_key, self.buckets, self.iterations) = (1 << keys, 1 << max_key, 1 << buckets, 10);
    }
}

const GEN: usize = 0;
const ZERO: usize = 1;
const CNT_KEY: usize = 2;
const CNT_SIZE: usize = 3;
const CNT_SIZE_STORE: usize = 4;
const PTR_SIZE: usize = 5;
const PTR_STORE: usize = 6;
const SC_KEY: usize = 7;
const SC_PTR: usize = 8;
const SC_KB2: usize = 9;
const SC_PTR_STORE: usize = 10;
const RK_ZERO: usize = 11;
const RK_FROM: usize = 12;
const RK_TO: usize = 13;
const RK_KB2: usize = 14;
const RK_KB1: usize = 15;
const RK_KB1_STORE: usize = 16;
const RK_SUM: usize = 17;
const RK_SUM_PREV: usize = 18;
const RK_SUM_STORE: usize = 19;
const SITES: [SiteSpec; 20] = [
    (S, 4, 40), // key_array[i] = four randlc draws
    (S, 4, 2),  // bucket_size[t][b] = 0
    (L, 4, 3),  // key_array[i]
    (L, 4, 2),  // bucket_size[t][key >> shift]
    (S, 4, 1),  // ...++
    (L, 4, 3),  // bucket_size[k][b or b-1]
    (S, 4, 2),  // bucket_ptrs[t][b]
    (L, 4, 3),  // key_array[i]
    (L, 4, 2),  // bucket_ptrs[t][key >> shift]
    (S, 4, 1),  // key_buff2[ptr] = key
    (S, 4, 1),  // bucket_ptrs[t][b]++
    (S, 4, 2),  // key_buff1[k] = 0
    (L, 4, 3),  // bucket_ptrs[b-1]
    (L, 4, 1),  // bucket_ptrs[b]
    (L, 4, 3),  // key_buff2[m]
    (L, 4, 1),  // key_buff1[key]
    (S, 4, 1),  // ...++
    (L, 4, 3),  // key_buff1[k]
    (L, 4, 1),  // key_buff1[k-1]
    (S, 4, 1),  // key_buff1[k] += key_buff1[k-1]
];

/// Most keys (NAS class C has 2^27): each thread's generator holds 8 bytes
/// per key.
pub const MAX_KEYS: u64 = 1 << 28;

impl IsParams {
    /// Host bytes one thread holds at most: its copies of the keys and of
    /// `key_buff2` (4 bytes each), the per-bucket counts of every thread
    /// while it computes its pointers, its own three rows, and a MiB for the
    /// rest (sites, layout).
    pub fn host_bytes(&self) -> u64 {
        let per_bucket = 8 * (self.threads as u64 + 3);
        let data = self.keys.saturating_mul(8).saturating_add(self.buckets.saturating_mul(per_bucket));
        data.saturating_add(1 << 20)
    }
}

/// Key `i`: the sum of four draws in `[0, max_key / 4)`.
fn key(draws: u64, i: u64, quarter: u64) -> u64 {
    (0..4).map(|j| ((draw(draws, 4 * i + j) as u128 * quarter as u128) >> 64) as u64).sum()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Generate,
    Zero,
    Count,
    Pointers,
    Scatter,
    RankZero,
    RankRange,
    RankCount,
    RankSum,
}

/// One thread of IS.
struct Is {
    sites: [Site; 20],
    key_array: u64,
    key_buff1: u64,
    key_buff2: u64,
    /// Row 0 of `bucket_size` and `bucket_ptrs`, and the distance between rows.
    size_rows: u64,
    ptr_rows: u64,
    row_stride: u64,
    /// The keys (all of them: every thread reads its own and, through
    /// key_buff2, others').
    keys: Vec<u32>,
    /// `key_buff2` after the scatter.
    sorted: Vec<u32>,
    /// Start of each bucket in `key_buff2`, and one past the end.
    starts: Vec<u64>,
    /// Where this thread's keys of each bucket start.
    first: Vec<u64>,
    /// This thread's scatter pointers.
    ptr: Vec<u64>,
    shift: u32,
    bucket_keys: u64,
    buckets: u64,
    t: u64,
    threads: u64,
    mine: std::ops::Range<u64>,
    phase: Phase,
    /// Loop counters: the key, bucket, or position of the phase, and an
    /// inner one (the thread in `Pointers`).
    i: u64,
    b: u64,
    k: u64,
}

impl Is {
    fn size_at(&self, thread: u64, b: u64) -> u64 {
        self.size_rows + thread * self.row_stride + 4 * b
    }

    fn ptr_at(&self, b: u64) -> u64 {
        self.ptr_rows + self.t * self.row_stride + 4 * b
    }

    /// Start ranking bucket `b` (this thread's next), or end the iteration.
    fn rank_bucket(&mut self, b: u64) -> bool {
        self.b = b;
        if b >= self.buckets {
            (self.phase, self.i) = (Phase::Zero, 0);
            return true;
        }
        (self.phase, self.i) = (Phase::RankZero, b * self.bucket_keys);
        false
    }
}

impl Kernel for Is {
    fn step(&mut self, out: &mut Out) -> bool {
        let s = &self.sites;
        match self.phase {
            Phase::Generate => {
                if self.i < self.mine.end {
                    out.put(&s[GEN], self.key_array + 4 * self.i);
                    self.i += 1;
                } else {
                    out.barrier();
                    (self.phase, self.i) = (Phase::Zero, 0);
                }
                false
            }
            Phase::Zero => {
                out.put(&s[ZERO], self.size_at(self.t, self.i));
                self.i += 1;
                if self.i == self.buckets {
                    (self.phase, self.i) = (Phase::Count, self.mine.start);
                }
                false
            }
            Phase::Count => {
                if self.i < self.mine.end {
                    let b = self.keys[self.i as usize] as u64 >> self.shift;
                    out.put(&s[CNT_KEY], self.key_array + 4 * self.i);
                    out.put(&s[CNT_SIZE], self.size_at(self.t, b));
                    out.put(&s[CNT_SIZE_STORE], self.size_at(self.t, b));
                    self.i += 1;
                } else {
                    // The counting loop's barrier: the pointers read every thread's counts.
                    out.barrier();
                    (self.phase, self.b, self.k) = (Phase::Pointers, 0, 0);
                }
                false
            }
            Phase::Pointers => {
                // Bucket 0 reads the threads before this one; bucket b > 0
                // reads bucket b of those and bucket b - 1 of the others.
                let (b, k) = (self.b, self.k);
                if k < self.threads {
                    if k < self.t {
                        out.put(&s[PTR_SIZE], self.size_at(k, b));
                    } else if b > 0 {
                        out.put(&s[PTR_SIZE], self.size_at(k, b - 1));
                    }
                    self.k += 1;
                    return false;
                }
                out.put(&s[PTR_STORE], self.ptr_at(b));
                (self.b, self.k) = (b + 1, 0);
                if self.b == self.buckets {
                    self.ptr.copy_from_slice(&self.first);
                    (self.phase, self.i) = (Phase::Scatter, self.mine.start);
                }
                false
            }
            Phase::Scatter => {
                if self.i < self.mine.end {
                    let b = (self.keys[self.i as usize] as u64 >> self.shift) as usize;
                    let to = self.ptr[b];
                    self.ptr[b] += 1;
                    out.put(&s[SC_KEY], self.key_array + 4 * self.i);
                    out.put(&s[SC_PTR], self.ptr_at(b as u64));
                    out.put(&s[SC_KB2], self.key_buff2 + 4 * to);
                    out.put(&s[SC_PTR_STORE], self.ptr_at(b as u64));
                    self.i += 1;
                    false
                } else {
                    // The scatter loop's barrier: ranking reads every thread's keys.
                    out.barrier();
                    self.rank_bucket(self.t)
                }
            }
            Phase::RankZero => {
                out.put(&s[RK_ZERO], self.key_buff1 + 4 * self.i);
                self.i += 1;
                if self.i == (self.b + 1) * self.bucket_keys {
                    self.phase = Phase::RankRange;
                }
                false
            }
            Phase::RankRange => {
                if self.b > 0 {
                    out.put(&s[RK_FROM], self.ptr_at(self.b - 1));
                }
                out.put(&s[RK_TO], self.ptr_at(self.b));
                (self.phase, self.i) = (Phase::RankCount, self.starts[self.b as usize]);
                false
            }
            Phase::RankCount => {
                if self.i < self.starts[self.b as usize + 1] {
                    let key = self.sorted[self.i as usize] as u64;
                    out.put(&s[RK_KB2], self.key_buff2 + 4 * self.i);
                    out.put(&s[RK_KB1], self.key_buff1 + 4 * key);
                    out.put(&s[RK_KB1_STORE], self.key_buff1 + 4 * key);
                    self.i += 1;
                } else {
                    (self.phase, self.i) = (Phase::RankSum, self.b * self.bucket_keys);
                }
                false
            }
            Phase::RankSum => {
                let k = self.key_buff1 + 4 * self.i;
                out.put(&s[RK_SUM], k);
                if self.i > self.b * self.bucket_keys {
                    out.put(&s[RK_SUM_PREV], k - 4);
                }
                out.put(&s[RK_SUM_STORE], k);
                self.i += 1;
                if self.i == (self.b + 1) * self.bucket_keys {
                    return self.rank_bucket(self.b + self.threads);
                }
                false
            }
        }
    }
}

impl IsParams {
    /// Validate and build; `length` says whether `accesses` applies.
    pub(crate) fn build_with(&self, ctx: &WorkloadCtx, length: Length) -> Result<Box<dyn Workload>> {
        let mut issues = Issues::default();
        let at = |f: &str| field_loc(&ctx.loc, f);
        let (n, max_key, buckets) = (self.keys, self.max_key, self.buckets);
        // The generator holds every key and the sorted keys, 8 bytes per key.
        issues.check(
            (1..=MAX_KEYS).contains(&n),
            at("keys"),
            "out_of_range",
            format!("keys must be in [1, 2^28], got {n}"),
        );
        let key_ok = max_key >= 4 && max_key.is_power_of_two() && max_key <= 1 << 32;
        issues.check(
            key_ok,
            at("max_key"),
            "out_of_range",
            format!("max_key must be a power of two in [4, 2^32], got {max_key}"),
        );
        let buckets_ok = buckets.is_power_of_two() && (!key_ok || buckets <= max_key);
        issues.check(
            buckets_ok,
            at("buckets"),
            "out_of_range",
            format!("buckets must be a power of two of at most max_key = {max_key}, got {buckets}"),
        );
        let mut layout = Layout::new(self.base_addr);
        let key_array = layout.place(n.saturating_mul(4));
        let key_buff1 = layout.place(max_key.saturating_mul(4));
        let key_buff2 = layout.place(n.saturating_mul(4));
        let common = self.common();
        let copies = common.threads.max(1);
        let (size_rows, row_stride) = layout.place_per_thread(buckets.saturating_mul(4), copies);
        let (ptr_rows, _) = layout.place_per_thread(buckets.saturating_mul(4), copies);
        let (sites, code_bytes) = lay_out_sites(self.code_base, &SITES);
        // The key generation writes key_array; an initialisation writes
        // the two buffers.
        let shared = [
            Shared { addr: key_buff1, elem: 4, stride: 4, n: max_key, owner: None },
            Shared { addr: key_buff2, elem: 4, stride: 4, n, owner: None },
        ];
        let (thread, init) = common.validate("is", ctx, length, &mut layout, code_bytes, &shared, &mut issues);
        check_work(n, thread.count, &at("threads"), "keys", &mut issues);
        issues.finish()?;
        let (t, threads) = (thread.index as u64, thread.count as u64);
        let quarter = max_key / 4;
        let shift = max_key.trailing_zeros() - buckets.trailing_zeros();
        let draws = draw_key(ctx.seed, "is");
        let keys: Vec<u32> = (0..n).map(|i| key(draws, i, quarter) as u32).collect();
        // Counts per thread and bucket, then the bucket starts, this
        // thread's slice of each bucket, and key_buff2 after the scatter.
        let nb = buckets as usize;
        let mut counts = vec![0u64; threads as usize * nb];
        for k in 0..threads {
            for i in share(n, k as u32, threads as u32) {
                counts[k as usize * nb + (keys[i as usize] >> shift) as usize] += 1;
            }
        }
        let mut starts = vec![0u64; nb + 1];
        for b in 0..nb {
            starts[b + 1] = starts[b] + (0..threads as usize).map(|k| counts[k * nb + b]).sum::<u64>();
        }
        let mut sorted = vec![0u32; n as usize];
        let mut fill = starts.clone();
        for &key in &keys {
            let b = (key >> shift) as usize;
            sorted[fill[b] as usize] = key;
            fill[b] += 1;
        }
        let first: Vec<u64> =
            (0..nb).map(|b| starts[b] + (0..t as usize).map(|k| counts[k * nb + b]).sum::<u64>()).collect();
        let mine = share(n, t as u32, threads as u32);
        let kernel = Is {
            sites,
            key_array,
            key_buff1,
            key_buff2,
            size_rows,
            ptr_rows,
            row_stride,
            keys,
            sorted,
            starts,
            ptr: first.clone(),
            first,
            shift,
            bucket_keys: max_key / buckets,
            buckets,
            t,
            threads,
            i: mine.start,
            mine,
            phase: Phase::Generate,
            b: 0,
            k: 0,
        };
        Ok(drive(kernel, init, &common, length))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::types::{Access, AccessKind};
    use serde_json::json;
    use std::collections::BTreeMap;

    const B: u64 = 0x10_0000_0000;

    /// 4096 keys below 1024 in 16 buckets (64 keys each): key_array at B,
    /// key_buff1 at B + 16K, key_buff2 at B + 20K, bucket_size rows from
    /// B + 36K, a page per thread.
    const KB1: u64 = B + 0x4000;
    const KB2: u64 = B + 0x5000;
    const SIZES: u64 = B + 0x9000;

    fn params(threads: u32) -> serde_json::Value {
        json!({"keys": 4096, "max_key": 1024, "buckets": 16, "threads": threads, "iterations": 1})
    }

    /// The pc of the `n`-th site (instruction counts from the site table).
    fn pc(n: usize) -> u64 {
        let instrs = [40, 2, 3, 2, 1, 3, 2, 3, 2, 1, 1, 2, 3, 1, 3, 1, 1, 3, 1, 1];
        0x40_0000 + 4 * (instrs[..=n].iter().sum::<u64>() - 1)
    }

    #[test]
    fn the_scatter_writes_each_position_once_and_ranking_reads_each_key_once() {
        let streams = threads("is", &params(4), 9);
        let mut scattered: BTreeMap<u64, usize> = BTreeMap::new();
        let mut ranked: BTreeMap<u64, (usize, u64)> = BTreeMap::new();
        for (t, s) in streams.iter().enumerate() {
            for (i, a) in s.iter().enumerate() {
                if a.pc.0 == pc(9) {
                    assert!(scattered.insert(a.addr.0 - KB2, t).is_none(), "position written twice");
                }
                if a.pc.0 == pc(14) {
                    // The next access increments key_buff1[key]: the key.
                    let key = (s[i + 1].addr.0 - KB1) / 4;
                    assert!(ranked.insert((a.addr.0 - KB2) / 4, (t, key)).is_none());
                }
            }
        }
        assert_eq!(scattered.len(), 4096);
        assert_eq!(*scattered.keys().last().unwrap(), 4 * 4095);
        assert_eq!(ranked.len(), 4096);
        // Buckets are sorted in key_buff2: keys never decrease by bucket,
        // and bucket b (keys 64 b .. 64 b + 63) is ranked by thread b mod 4.
        let mut last_bucket = 0;
        for (t, key) in ranked.values() {
            let b = key / 64;
            assert!(b >= last_bucket);
            last_bucket = b;
            assert_eq!(*t as u64, b % 4);
        }
        // The keys are NAS's bell shape: the sum of four uniform draws in
        // [0, 256) has mean 510 and standard deviation 147.8; the mean of
        // 4096 keys is within 2.3 of it (one standard error).
        let mean = ranked.values().map(|&(_, k)| k as f64).sum::<f64>() / 4096.0;
        assert!((mean - 510.0).abs() < 5.0 * 2.31, "{mean}");
        let tails = ranked.values().filter(|&&(_, k)| !(100..920).contains(&k)).count();
        assert!(tails < 60, "{tails}"); // about 0.6% beyond 2.77 sigma
    }

    #[test]
    fn counts_are_private_and_pointers_read_every_thread() {
        let streams = threads("is", &params(4), 9);
        for (t, s) in streams.iter().enumerate() {
            let row = |a: &Access| (a.addr.0 - SIZES) / 4096;
            // Stores to bucket_size are to this thread's row only.
            let stores: Vec<&Access> = s.iter().filter(|a| a.pc.0 == pc(1) || a.pc.0 == pc(4)).collect();
            assert_eq!(stores.len(), 16 + 1024);
            assert!(stores.iter().all(|a| row(a) == t as u64 && a.kind == AccessKind::Store));
            // The pointer loop reads the others' rows: 16 buckets x 4
            // threads, less the threads at or after t for bucket 0.
            let reads: Vec<u64> = s.iter().filter(|a| a.pc.0 == pc(5)).map(row).collect();
            assert_eq!(reads.len(), 16 * 4 - (4 - t));
            for k in 0..4 {
                assert!(reads.contains(&k), "thread {t} never reads row {k}");
            }
        }
        // Key generation: each thread stores its block of key_array once.
        let gen: Vec<u64> = streams[2].iter().filter(|a| a.pc.0 == pc(0)).map(|a| (a.addr.0 - B) / 4).collect();
        assert_eq!(gen, (2048..3072).collect::<Vec<_>>());
    }

    #[test]
    fn keys_follow_the_seed_not_the_thread_count() {
        let sorted = |streams: &[Vec<Access>]| -> Vec<u64> {
            let mut keys: Vec<(u64, u64)> = Vec::new();
            for s in streams {
                for (i, a) in s.iter().enumerate().filter(|(_, a)| a.pc.0 == pc(14)) {
                    keys.push((a.addr.0, s[i + 1].addr.0));
                }
            }
            keys.sort();
            keys.into_iter().map(|(_, k)| k).collect()
        };
        let one = sorted(&threads("is", &params(1), 9));
        assert_eq!(one, sorted(&threads("is", &params(3), 9)));
        assert!(one != sorted(&threads("is", &params(1), 10)));
    }

    #[test]
    fn is_errors_name_the_key() {
        let w = |s: &str| format!("workload.params.{s}");
        let e = build_err_as("is", json!({"keys": 0, "max_key": 100, "buckets": 3}), 0, 1);
        assert_eq!(e, [(w("keys"), "out_of_range"), (w("max_key"), "out_of_range"), (w("buckets"), "out_of_range")]);
        let e = build_err_as("is", json!({"keys": super::MAX_KEYS + 1}), 0, 1);
        assert_eq!(e, [(w("keys"), "out_of_range")]);
        let e = build_err_as("is", json!({"max_key": 16, "buckets": 32}), 0, 1);
        assert_eq!(e, [(w("buckets"), "out_of_range")]);
    }
}
