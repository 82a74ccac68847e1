//! `kind = "cg"`: the conjugate-gradient iteration of NAS CG, a sparse
//! matrix-vector product over a CSR matrix followed by the vector updates.
//!
//! The data (in this order, each array at the next 4 KiB): `rowptr`
//! (`rows + 1` 4-byte ints), `colidx` (`nnz` 4-byte ints), `values` (`nnz`
//! doubles), and the vectors `p`, `q`, `z`, `r` (`rows` doubles each), all
//! shared. Rows are split among the threads in OpenMP static blocks; in
//! every phase a thread works on its own rows, in the loop order of NAS's
//! `conj_grad`:
//!
//! ```text
//! for j in my rows: q[j] = sum(values[k] * p[colidx[k]] for k in rowptr[j]..rowptr[j+1])
//! for j in my rows: d += p[j] * q[j]
//! for j in my rows: z[j] += alpha * p[j]; r[j] -= alpha * q[j]
//! for j in my rows: rho += r[j] * r[j]
//! for j in my rows: p[j] = r[j] + beta * p[j]
//! ```
//!
//! The gathers `p[colidx[k]]` reach every thread's part of `p`: that is the
//! irregular, shared access of CG. One iteration of the kernel is one pass
//! of these five loops (NAS runs 25 of them per outer iteration, plus a
//! residual norm this kernel leaves out).
//!
//! Row `j` has `row_nonzeros + d_j` entries, `d_j` drawn uniformly in
//! `[-s, s]` with `s = floor(row_spread * row_nonzeros)` from a hash of
//! (seed, row), so that rows vary around a mean as NAS's do and a thread's
//! block of rows may hold more entries than another's; with `row_spread =
//! 0` (the default) every row has exactly `row_nonzeros` entries and
//! `rowptr[j] = j * row_nonzeros`. A row's columns are distinct
//! and sorted; with `structure = "random"` they are the diagonal plus
//! columns drawn uniformly from a hash of (seed, row, draw), the same in
//! every thread; with `structure = "banded"` they are the `row_nonzeros`
//! consecutive columns centred on the diagonal, wrapping around the ends,
//! a matrix whose addresses can be worked out by hand.

use serde::{Deserialize, Serialize};

use crate::error::{Issues, Result};
use crate::trace::synthetic::common::{field_loc, Length};
use crate::trace::{Workload, WorkloadCtx};

use super::{
    check_work, draw, draw_key, drive, kernel_params, lay_out_sites, share, Kernel, Layout, NasClass, NasSized, Out,
    Shared, Site, SiteSpec, L, S,
};

/// Largest `row_nonzeros` (a row's columns are held in a fixed array).
pub const MAX_ROW_NONZEROS: u32 = 256;

/// How the columns of a row are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Structure {
    /// The diagonal and distinct columns drawn at random (NAS-like).
    Random,
    /// Consecutive columns centred on the diagonal, wrapping around.
    Banded,
}

kernel_params! {
    /// Parameters of `kind = "cg"`.
    pub struct CgParams {
        /// Rows (and columns) of the matrix (default 7000, NAS class W).
        pub rows: u64 = 7000,
        /// Entries per row, at most `rows` and 256 (default 64).
        pub row_nonzeros: u32 = 64,
        /// `"random"` (default) or `"banded"`.
        pub structure: Structure = Structure::Random,
        /// Spread of the row lengths around `row_nonzeros`, in [0, 1)
        /// (default 0: every row the same length).
        pub row_spread: f64 = 0.0,
    }
}

/// NAS CG's classes (NPB 3.3 `setparams.c`: `na`, `nonzer`, `niter`): the
/// matrix order; `nonzer * (nonzer + 1) + 1` entries per row, the mean of
/// NAS's `makea`, whose row `j` holds `j` and the other `nonzer` entries of
/// each of the about `nonzer + 1` sparse vectors that hold `j` (so class C
/// has 36.2M entries); `niter` outer iterations of 25 inner ones
/// (`cgitmax`). NAS's row lengths vary around the mean; `row_spread` is
/// left as given.
impl NasSized for CgParams {
    const NAS: Option<&'static str> = Some("CG");

    fn take_class(&mut self, class: NasClass) {
        let (na, nonzer, niter) =
            [(1400, 7, 15), (7000, 8, 15), (14000, 11, 15), (75000, 13, 75), (150000, 15, 75)][class.index()];
        (self.rows, self.row_nonzeros, self.iterations) = (na, nonzer * (nonzer + 1) + 1, niter * 25);
    }
}

// The loop bodies' memory instructions, in program order.
const ROW_LO: usize = 0;
const ROW_HI: usize = 1;
const COL: usize = 2;
const VAL: usize = 3;
const GATHER: usize = 4;
const Q_STORE: usize = 5;
const DOT_P: usize = 6;
const DOT_Q: usize = 7;
const UPD_Z: usize = 8;
const UPD_P: usize = 9;
const UPD_Z_STORE: usize = 10;
const UPD_R: usize = 11;
const UPD_Q: usize = 12;
const UPD_R_STORE: usize = 13;
const RHO_R: usize = 14;
const DIR_R: usize = 15;
const DIR_P: usize = 16;
const DIR_P_STORE: usize = 17;
const SITES: [SiteSpec; 18] = [
    (L, 4, 3), // rowptr[j]
    (L, 4, 1), // rowptr[j + 1]
    (L, 4, 3), // colidx[k] (after the loop test)
    (L, 8, 1), // values[k]
    (L, 8, 2), // p[colidx[k]]
    (S, 8, 3), // q[j] = sum (after the last fma)
    (L, 8, 3), // p[j]
    (L, 8, 1), // q[j]
    (L, 8, 3), // z[j]
    (L, 8, 1), // p[j]
    (S, 8, 2), // z[j] = z[j] + alpha * p[j]
    (L, 8, 1), // r[j]
    (L, 8, 1), // q[j]
    (S, 8, 2), // r[j] = r[j] - alpha * q[j]
    (L, 8, 4), // r[j] (rho)
    (L, 8, 3), // r[j]
    (L, 8, 1), // p[j]
    (S, 8, 2), // p[j] = r[j] + beta * p[j]
];

/// The addresses of the arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CgLayout {
    pub rowptr: u64,
    pub colidx: u64,
    pub values: u64,
    pub p: u64,
    pub q: u64,
    pub z: u64,
    pub r: u64,
}

impl CgLayout {
    fn new(base: u64, rows: u64, nnz: u64) -> (CgLayout, Layout) {
        let mut l = Layout::new(base);
        let v = rows.saturating_mul(8);
        let layout = CgLayout {
            rowptr: l.place(rows.saturating_add(1).saturating_mul(4)),
            colidx: l.place(nnz.saturating_mul(4)),
            values: l.place(nnz.saturating_mul(8)),
            p: l.place(v),
            q: l.place(v),
            z: l.place(v),
            r: l.place(v),
        };
        (layout, l)
    }
}

/// The five loops of one iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Spmv,
    Dot,
    Update,
    Rho,
    Direction,
}

/// One thread of CG.
struct Cg {
    sites: [Site; 18],
    a: CgLayout,
    rows: u64,
    lengths: RowLengths,
    structure: Structure,
    key: u64,
    mine: std::ops::Range<u64>,
    phase: Phase,
    j: u64,
    k: u64,
    /// Entries of the current row, and where it starts in colidx.
    len: u64,
    k0: u64,
    /// Where this thread's first row starts in colidx.
    first: u64,
    cols: [u32; MAX_ROW_NONZEROS as usize],
}

/// The length of each row: `mean + d`, `d` uniform in `[-spread, spread]`.
#[derive(Debug, Clone, Copy)]
struct RowLengths {
    mean: u64,
    spread: u64,
    key: u64,
}

impl RowLengths {
    fn of(&self, j: u64) -> u64 {
        if self.spread == 0 {
            return self.mean;
        }
        let d = ((draw(self.key, j) as u128 * (2 * self.spread + 1) as u128) >> 64) as u64;
        self.mean - self.spread + d
    }

    /// Entries in rows `0..j`.
    fn before(&self, j: u64) -> u64 {
        if self.spread == 0 {
            return j.saturating_mul(self.mean);
        }
        (0..j).map(|r| self.of(r)).sum()
    }
}

impl Cg {
    /// Fill `cols[..len]` with row `j`'s sorted columns.
    fn columns(&mut self, j: u64) {
        let n = self.rows;
        let nz = self.len as usize;
        let cols = &mut self.cols[..nz];
        match self.structure {
            Structure::Banded => {
                for (d, c) in cols.iter_mut().enumerate() {
                    *c = ((j + n - self.len / 2 + d as u64) % n) as u32;
                }
            }
            Structure::Random => {
                cols[0] = j as u32;
                let (mut have, mut attempt) = (1, 0u64);
                let row_key = draw(self.key, j);
                while have < nz {
                    let c = ((draw(row_key, attempt) as u128 * n as u128) >> 64) as u32;
                    attempt += 1;
                    if !cols[..have].contains(&c) {
                        cols[have] = c;
                        have += 1;
                    }
                }
            }
        }
        cols.sort_unstable();
    }

    /// Move to the next row of the phase, or, past this thread's last row,
    /// to the next phase after a barrier.
    fn next_row(&mut self, next: Phase, out: &mut Out) -> bool {
        self.j += 1;
        if self.j == self.mine.end {
            out.barrier();
            self.j = self.mine.start;
            let ended = self.phase == Phase::Direction;
            self.phase = next;
            if ended {
                self.k0 = self.first;
            }
            return ended;
        }
        false
    }
}

impl Kernel for Cg {
    fn step(&mut self, out: &mut Out) -> bool {
        if self.mine.is_empty() {
            return true;
        }
        let (s, a, j) = (&self.sites, self.a, self.j);
        let v = 8 * j;
        match self.phase {
            Phase::Spmv => {
                if self.k == 0 {
                    out.put(&s[ROW_LO], a.rowptr + 4 * j);
                    out.put(&s[ROW_HI], a.rowptr + 4 * (j + 1));
                    self.len = self.lengths.of(j);
                    self.columns(j);
                }
                let k = self.k0 + self.k;
                let s = &self.sites;
                out.put(&s[COL], a.colidx + 4 * k);
                out.put(&s[VAL], a.values + 8 * k);
                out.put(&s[GATHER], a.p + 8 * self.cols[self.k as usize] as u64);
                self.k += 1;
                if self.k == self.len {
                    self.k0 += self.len;
                    self.k = 0;
                    out.put(&s[Q_STORE], a.q + v);
                    return self.next_row(Phase::Dot, out);
                }
                false
            }
            Phase::Dot => {
                out.put(&s[DOT_P], a.p + v);
                out.put(&s[DOT_Q], a.q + v);
                self.next_row(Phase::Update, out)
            }
            Phase::Update => {
                out.put(&s[UPD_Z], a.z + v);
                out.put(&s[UPD_P], a.p + v);
                out.put(&s[UPD_Z_STORE], a.z + v);
                out.put(&s[UPD_R], a.r + v);
                out.put(&s[UPD_Q], a.q + v);
                out.put(&s[UPD_R_STORE], a.r + v);
                self.next_row(Phase::Rho, out)
            }
            Phase::Rho => {
                out.put(&s[RHO_R], a.r + v);
                self.next_row(Phase::Direction, out)
            }
            Phase::Direction => {
                out.put(&s[DIR_R], a.r + v);
                out.put(&s[DIR_P], a.p + v);
                out.put(&s[DIR_P_STORE], a.p + v);
                self.next_row(Phase::Spmv, out)
            }
        }
    }
}

impl CgParams {
    /// Validate and build; `length` says whether `accesses` applies.
    pub(crate) fn build_with(&self, ctx: &WorkloadCtx, length: Length) -> Result<Box<dyn Workload>> {
        let mut issues = Issues::default();
        let at = |f: &str| field_loc(&ctx.loc, f);
        let (rows, nz) = (self.rows, self.row_nonzeros as u64);
        issues.check(rows >= 1, at("rows"), "out_of_range", "rows must be at least 1");
        issues.check(
            rows <= u32::MAX as u64,
            at("rows"),
            "too_large",
            format!("rows must fit 32-bit column indices, got {rows}"),
        );
        issues.check(
            (1..=MAX_ROW_NONZEROS as u64).contains(&nz),
            at("row_nonzeros"),
            "out_of_range",
            format!("row_nonzeros must be in [1, {MAX_ROW_NONZEROS}], got {nz}"),
        );
        issues.check(
            nz <= rows,
            at("row_nonzeros"),
            "too_large",
            format!("row_nonzeros = {nz} exceeds the {rows} columns"),
        );
        let spread_ok = (0.0..1.0).contains(&self.row_spread);
        issues.check(
            spread_ok,
            at("row_spread"),
            "out_of_range",
            format!("row_spread must be in [0, 1), got {}", self.row_spread),
        );
        let spread = if spread_ok { (self.row_spread * nz as f64).floor() as u64 } else { 0 };
        issues.check(
            spread == 0 || (nz + spread <= MAX_ROW_NONZEROS as u64 && nz + spread <= rows),
            at("row_spread"),
            "too_large",
            format!(
                "rows of up to row_nonzeros + {spread} = {} entries exceed {MAX_ROW_NONZEROS} or the {rows} columns",
                nz + spread
            ),
        );
        let lengths = RowLengths { mean: nz, spread, key: draw_key(ctx.seed, "cg/rows") };
        let rows_ok = rows <= u32::MAX as u64;
        let nnz = if rows_ok { lengths.before(rows) } else { 0 };
        let (a, mut layout) = CgLayout::new(self.base_addr, rows, nnz);
        let (sites, code_bytes) = lay_out_sites(self.code_base, &SITES);
        let common = self.common();
        let shared = [
            Shared { addr: a.rowptr, elem: 4, stride: 4, n: rows.saturating_add(1), owner: None },
            Shared { addr: a.colidx, elem: 4, stride: 4, n: nnz, owner: None },
            Shared { addr: a.values, elem: 8, stride: 8, n: nnz, owner: None },
            Shared { addr: a.p, elem: 8, stride: 8, n: rows, owner: None },
            Shared { addr: a.q, elem: 8, stride: 8, n: rows, owner: None },
            Shared { addr: a.z, elem: 8, stride: 8, n: rows, owner: None },
            Shared { addr: a.r, elem: 8, stride: 8, n: rows, owner: None },
        ];
        let (thread, init) = common.validate("cg", ctx, length, &mut layout, code_bytes, &shared, &mut issues);
        check_work(rows, thread.count, &at("threads"), "rows", &mut issues);
        issues.finish()?;
        let mine = share(rows, thread.index, thread.count);
        let first = lengths.before(mine.start);
        let kernel = Cg {
            sites,
            a,
            rows,
            lengths,
            len: 0,
            k0: first,
            first,
            structure: self.structure,
            key: draw_key(ctx.seed, "cg"),
            j: mine.start,
            mine,
            phase: Phase::Spmv,
            k: 0,
            cols: [0; MAX_ROW_NONZEROS as usize],
        };
        Ok(drive(kernel, init, &common, length))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::types::AccessKind;
    use serde_json::json;
    use std::collections::BTreeMap;

    const B: u64 = 0x10_0000_0000;
    const C: u64 = 0x40_0000;

    #[test]
    fn a_banded_row_gives_exactly_the_expected_addresses() {
        // 10 rows of 3 entries: columns j-1, j, j+1 (mod 10). Layout by
        // hand: rowptr 44 bytes at B, colidx 120 bytes at B + 4K, values 240
        // bytes at B + 8K, then p, q, z, r (80 bytes each) a page apart.
        let p = json!({"rows": 10, "row_nonzeros": 3, "structure": "banded", "iterations": 1});
        let all = thread("cg", &p, 1, 0, 1);
        let (colidx, values, pv, q) = (B + 0x1000, B + 0x2000, B + 0x3000, B + 0x4000);
        // Row 0 is first: columns 0, 1, 9 sorted.
        let row0: Vec<u64> = all[..12].iter().map(|a| a.addr.0).collect();
        let expected =
            vec![B, B + 4, colidx, values, pv, colidx + 4, values + 8, pv + 8, colidx + 8, values + 16, pv + 72, q];
        assert_eq!(row0, expected);
        // Row 4 (accesses 48..60): columns 3, 4, 5, entries 12, 13, 14.
        let row4: Vec<u64> = all[48..60].iter().map(|a| a.addr.0).collect();
        let k = |i: u64| [colidx + 4 * i, values + 8 * i];
        let mut expected = vec![B + 16, B + 20];
        for (e, c) in [(12, 3u64), (13, 4), (14, 5)] {
            expected.extend(k(e));
            expected.push(pv + 8 * c);
        }
        expected.push(q + 32);
        assert_eq!(row4, expected);
        // Kinds and pcs: the gather is the fifth site's load.
        assert_eq!(all[4].pc.0, C + 4 * (3 + 1 + 3 + 1 + 2 - 1));
        assert_eq!(all[11].kind, AccessKind::Store);
        // One iteration: 10 rows x 12 accesses, then 2 + 6 + 1 + 3 per row.
        assert_eq!(all.len(), 10 * 12 + 10 * 12);
    }

    #[test]
    fn random_rows_hold_the_diagonal_and_distinct_sorted_columns() {
        let p = json!({"rows": 1000, "row_nonzeros": 20, "iterations": 1});
        let all = thread("cg", &p, 3, 0, 1);
        // rowptr takes 1 page, colidx 80000 bytes (20 pages), values
        // 160000 bytes (40 pages): p starts 61 pages in.
        let pv = B + 61 * 4096;
        let mut rows = 0;
        for (j, row) in all[..1000 * 63].chunks(63).enumerate() {
            let cols: Vec<u64> = row[2..62].chunks(3).map(|t| (t[2].addr.0 - pv) / 8).collect();
            assert!(cols.windows(2).all(|w| w[0] < w[1]), "row {j}: {cols:?}");
            assert!(cols.contains(&(j as u64)) && cols.iter().all(|&c| c < 1000));
            rows += 1;
        }
        assert_eq!(rows, 1000);
        // Spread: the gathers of all rows touch most of p.
        let touched: std::collections::BTreeSet<u64> =
            all[..63_000].chunks(63).flat_map(|r| r[2..62].chunks(3).map(|t| t[2].addr.0)).collect();
        assert!(touched.len() > 900, "{}", touched.len());
    }

    #[test]
    fn threads_partition_the_rows_and_share_the_matrix() {
        let p = json!({"rows": 103, "row_nonzeros": 8, "threads": 4, "iterations": 1});
        let streams = threads("cg", &p, 5);
        // Every entry of colidx is read exactly once by one thread, and every
        // q[j] is stored exactly once.
        let colidx = B + 0x1000;
        let mut reads: BTreeMap<u64, u32> = BTreeMap::new();
        let mut q_stores: BTreeMap<u64, u32> = BTreeMap::new();
        let gather_pc = C + 4 * 9;
        let store_pc = C + 4 * 12;
        for s in &streams {
            for a in s {
                if a.pc.0 == C + 4 * 6 {
                    *reads.entry(a.addr.0).or_default() += 1;
                }
                if a.pc.0 == store_pc {
                    *q_stores.entry(a.addr.0).or_default() += 1;
                }
            }
        }
        assert_eq!(reads.len(), 103 * 8);
        assert!(reads.values().all(|&n| n == 1));
        assert_eq!(*reads.keys().next().unwrap(), colidx);
        assert_eq!(q_stores.len(), 103);
        assert!(q_stores.values().all(|&n| n == 1));
        // The matrix does not depend on the thread count: the gathers of
        // row 60 are the same in a 1-thread run and in thread 2 of 4 (rows
        // 52..78).
        let one = thread("cg", &json!({"rows": 103, "row_nonzeros": 8, "iterations": 1}), 5, 0, 1);
        let gathers = |s: &[crate::types::Access], first_row: usize| -> Vec<u64> {
            s[(60 - first_row) * 27..(61 - first_row) * 27]
                .iter()
                .filter(|a| a.pc.0 == gather_pc)
                .map(|a| a.addr.0)
                .collect()
        };
        assert_eq!(gathers(&one, 0), gathers(&streams[2], 52));
        assert_eq!(gathers(&one, 0).len(), 8);
    }

    #[test]
    fn row_lengths_spread_around_the_mean_and_threads_still_cover_each_entry_once() {
        // Rows of 20 +- 10 entries over 3 threads: count each row's gathers
        // (the loads between its rowptr loads and its q store).
        let p = json!({"rows": 900, "row_nonzeros": 20, "row_spread": 0.5, "threads": 3, "iterations": 1});
        let streams = threads("cg", &p, 8);
        let colidx_pc = C + 4 * 6;
        let mut lengths = Vec::new();
        let mut entries: BTreeMap<u64, u32> = BTreeMap::new();
        for s in &streams {
            let mut n = 0;
            for a in s {
                if a.pc.0 == colidx_pc {
                    n += 1;
                    *entries.entry(a.addr.0).or_default() += 1;
                } else if a.pc.0 == C + 4 * 12 {
                    lengths.push(n);
                    n = 0;
                }
            }
        }
        assert_eq!(lengths.len(), 900);
        assert!(lengths.iter().all(|n| (10..=30).contains(n)));
        // Uniform over 21 values: mean 20, standard error 6.06 / 30.
        let mean = lengths.iter().sum::<u64>() as f64 / 900.0;
        assert!((mean - 20.0).abs() < 5.0 * 6.06 / 30.0, "{mean}");
        assert!(lengths.iter().filter(|&&n| n == 10).count() > 10);
        // colidx entries 0..nnz, each read once, thread blocks adjacent.
        let nnz: u64 = lengths.iter().sum();
        assert_eq!(entries.len() as u64, nnz);
        assert!(entries.values().all(|&c| c == 1));
        assert_eq!(*entries.keys().last().unwrap(), B + 0x1000 + 4 * (nnz - 1));
        // Another seed, other lengths; the same seed, the same whatever
        // the thread count.
        let one = json!({"rows": 900, "row_nonzeros": 20, "row_spread": 0.5, "iterations": 1});
        assert!(thread("cg", &one, 8, 0, 1).iter().filter(|a| a.pc.0 == colidx_pc).count() as u64 == nnz);
        assert!(thread("cg", &one, 9, 0, 1).iter().filter(|a| a.pc.0 == colidx_pc).count() as u64 != nnz);
    }

    #[test]
    fn the_matrix_follows_the_seed() {
        let p = json!({"rows": 500, "row_nonzeros": 16, "accesses": 2000});
        assert_ne!(thread("cg", &p, 1, 0, 1), thread("cg", &p, 2, 0, 1));
        let banded = json!({"rows": 500, "row_nonzeros": 16, "accesses": 2000, "structure": "banded"});
        assert_eq!(thread("cg", &banded, 1, 0, 1), thread("cg", &banded, 2, 0, 1));
    }

    #[test]
    fn cg_errors_name_the_key() {
        let w = |s: &str| format!("workload.params.{s}");
        let e = build_err_as("cg", json!({"rows": 4, "row_nonzeros": 5}), 0, 1);
        assert_eq!(e, [(w("row_nonzeros"), "too_large")]);
        let e = build_err_as("cg", json!({"row_nonzeros": 300}), 0, 1);
        assert_eq!(e, [(w("row_nonzeros"), "out_of_range")]);
        let e = build_err_as("cg", json!({"rows": 2, "row_nonzeros": 1, "threads": 3}), 0, 3);
        assert_eq!(e, [(w("threads"), "too_large")]);
        let e = build_err_as("cg", json!({"row_spread": 1.0}), 0, 1);
        assert_eq!(e, [(w("row_spread"), "out_of_range")]);
        let e = build_err_as("cg", json!({"row_nonzeros": 200, "row_spread": 0.5}), 0, 1);
        assert_eq!(e, [(w("row_spread"), "too_large")]);
        let e = build_err_as("cg", json!({"structure": "dense"}), 0, 1);
        assert_eq!(e, [(w("structure"), "unknown_variant")]);
    }
}
