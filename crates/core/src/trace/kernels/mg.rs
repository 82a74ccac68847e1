//! `kind = "mg"`: the multigrid V-cycle of NAS MG over a hierarchy of
//! periodic 3D grids.
//!
//! Level `k` (0 the coarsest) is a cube of edge `2^(k+1)` doubles; the
//! finest has edge `grid`. The data: `u` (every level, finest first,
//! contiguous, as NAS allocates it), then `r` (the same), then `v` (the
//! finest level only), each block at the next 4 KiB. Point `(i3, i2, i1)` of
//! a level of edge `m` is the double at `((i3 * m + i2) * m + i1) * 8` from
//! the level's start. Neighbours wrap around (periodic boundaries, which NAS
//! keeps in ghost planes exchanged by `comm3`; here there are no ghosts).
//!
//! One iteration is NAS's `mg3P` followed by `resid`, with `top` the finest
//! level:
//!
//! ```text
//! for k = top down to 1:        rprj3(r[k] -> r[k-1])
//! zero3(u[0]); psinv(r[0] -> u[0])
//! for k = 1 to top - 1:         zero3(u[k]); interp(u[k-1] -> u[k]);
//!                               resid(u[k], r[k] -> r[k]); psinv(r[k] -> u[k])
//! interp(u[top-1] -> u[top]); resid(u[top], v -> r[top]); psinv(r[top] -> u[top])
//! resid(u[top], v -> r[top])
//! ```
//!
//! Every operator loops over the points of its output grid with `i3`
//! outermost and `i1` innermost, and the threads split `i3` in OpenMP
//! static blocks: each thread owns a slab of planes of every level, and a
//! stencil reads one plane of each neighbouring slab. Coarse levels with
//! fewer planes than threads leave some threads idle, as in NAS.
//!
//! Per output point: `resid` loads `u` at the point and its 6 face
//! neighbours, loads the right-hand side and stores `r`; `psinv` loads `r`
//! at the 7 points, loads and stores `u`; `rprj3` loads the 7 points of the
//! fine `r` around `2 * (i3, i2, i1)` and stores the coarse `r`; `interp`
//! loads the coarse `u` at `(i3, i2, i1) / 2`, loads and stores the fine `u`;
//! `zero3` stores `u`. NAS's operators are 27-point stencils computed
//! through line sums; these 7-point ones read the same planes of the same
//! grids in the same order, with fewer loads per point.

use crate::error::{Issues, Result};
use crate::trace::synthetic::common::{field_loc, Length};
use crate::trace::{Workload, WorkloadCtx};

use super::{
    check_work, drive, kernel_params, lay_out_sites, share, Kernel, Layout, NasClass, NasSized, Out, Shared, Site,
    SiteSpec, L, S,
};

kernel_params! {
    /// Parameters of `kind = "mg"`.
    pub struct MgParams {
        /// Edge of the finest grid in points, a power of two of at least 4
        /// (default 64: 2 MiB per grid).
        pub grid: u64 = 64,
    }
}

/// NAS MG's classes (NPB 3.3 `setparams.c`: the finest grid's edge and `nit`).
impl NasSized for MgParams {
    const NAS: Option<&'static str> = Some("MG");

    fn take_class(&mut self, class: NasClass) {
        (self.grid, self.iterations) = [(32, 4), (128, 4), (256, 4), (256, 20), (512, 20)][class.index()];
    }
}

const RESID_U: usize = 0; // 7 loads of u, then the rhs and the store
const RESID_RHS: usize = 7;
const RESID_STORE: usize = 8;
const PSINV_R: usize = 9; // 7 loads of r
const PSINV_U: usize = 16;
const PSINV_STORE: usize = 17;
const RPRJ_R: usize = 18; // 7 loads of the fine r
const RPRJ_STORE: usize = 25;
const INTERP_COARSE: usize = 26;
const INTERP_FINE: usize = 27;
const INTERP_STORE: usize = 28;
const ZERO_STORE: usize = 29;
/// A 7-point stencil's loads: the centre, then -1 and +1 along i1, i2, i3.
const STENCIL: [SiteSpec; 7] = [(L, 8, 3), (L, 8, 1), (L, 8, 1), (L, 8, 2), (L, 8, 1), (L, 8, 2), (L, 8, 1)];
const SITES: [SiteSpec; 30] = {
    let mut t = [(L, 8, 1); 30];
    let mut i = 0;
    while i < 7 {
        t[RESID_U + i] = STENCIL[i];
        t[PSINV_R + i] = STENCIL[i];
        t[RPRJ_R + i] = STENCIL[i];
        i += 1;
    }
    t[RESID_RHS] = (L, 8, 1);
    t[RESID_STORE] = (S, 8, 4);
    t[PSINV_U] = (L, 8, 1);
    t[PSINV_STORE] = (S, 8, 4);
    t[RPRJ_STORE] = (S, 8, 4);
    t[INTERP_COARSE] = (L, 8, 4);
    t[INTERP_FINE] = (L, 8, 1);
    t[INTERP_STORE] = (S, 8, 2);
    t[ZERO_STORE] = (S, 8, 2);
    t
};

/// An operator of the V-cycle on level `level` (its output grid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `r[level] = rhs - A u[level]`; `rhs` is `v` at the top, else `r[level]`.
    Resid { rhs: u64 },
    /// `u[level] += S r[level]`.
    Psinv,
    /// `r[level] = P r[level + 1]` (restriction).
    Rprj,
    /// `u[level] += Q u[level - 1]` (prolongation).
    Interp,
    /// `u[level] = 0`.
    Zero,
}

/// The addresses of level `k` of `u` and `r`.
#[derive(Debug, Clone, Copy)]
struct Level {
    edge: u64,
    u: u64,
    r: u64,
}

/// One thread of MG.
struct Mg {
    sites: [Site; 30],
    levels: Vec<Level>,
    /// The iteration: operators and their output level.
    ops: Vec<(Op, usize)>,
    thread: (u32, u32),
    op: usize,
    /// This thread's planes of the current operator's output.
    planes: std::ops::Range<u64>,
    i3: u64,
    i2: u64,
    i1: u64,
}

/// The byte offset of point `(i3, i2, i1)` of a grid of edge `m`.
#[inline(always)]
fn at(m: u64, i3: u64, i2: u64, i1: u64) -> u64 {
    ((i3 * m + i2) * m + i1) * 8
}

/// The 7-point stencil around `(i3, i2, i1)` of grid `base` of edge `m`,
/// periodic, in the order of [`STENCIL`].
fn stencil(out: &mut Out, sites: &[Site], base: u64, m: u64, (i3, i2, i1): (u64, u64, u64)) {
    let down = |i: u64| if i == 0 { m - 1 } else { i - 1 };
    let up = |i: u64| if i + 1 == m { 0 } else { i + 1 };
    let points = [
        (i3, i2, i1),
        (i3, i2, down(i1)),
        (i3, i2, up(i1)),
        (i3, down(i2), i1),
        (i3, up(i2), i1),
        (down(i3), i2, i1),
        (up(i3), i2, i1),
    ];
    for (site, (a, b, c)) in sites.iter().zip(points) {
        out.put(site, base + at(m, a, b, c));
    }
}

impl Mg {
    /// Start operator `op`: this thread's planes of its output grid.
    fn start(&mut self, op: usize) {
        self.op = op;
        let edge = self.levels[self.ops[op].1].edge;
        self.planes = share(edge, self.thread.0, self.thread.1);
        (self.i3, self.i2, self.i1) = (self.planes.start, 0, 0);
    }
}

impl Kernel for Mg {
    fn step(&mut self, out: &mut Out) -> bool {
        let (op, k) = self.ops[self.op];
        let lv = self.levels[k];
        let m = lv.edge;
        if !self.planes.is_empty() {
            let p = (self.i3, self.i2, self.i1);
            let here = at(m, p.0, p.1, p.2);
            let s = &self.sites;
            match op {
                Op::Resid { rhs } => {
                    stencil(out, &s[RESID_U..RESID_U + 7], lv.u, m, p);
                    out.put(&s[RESID_RHS], rhs + here);
                    out.put(&s[RESID_STORE], lv.r + here);
                }
                Op::Psinv => {
                    stencil(out, &s[PSINV_R..PSINV_R + 7], lv.r, m, p);
                    out.put(&s[PSINV_U], lv.u + here);
                    out.put(&s[PSINV_STORE], lv.u + here);
                }
                Op::Rprj => {
                    let fine = self.levels[k + 1];
                    stencil(out, &s[RPRJ_R..RPRJ_R + 7], fine.r, fine.edge, (2 * p.0, 2 * p.1, 2 * p.2));
                    out.put(&s[RPRJ_STORE], lv.r + here);
                }
                Op::Interp => {
                    let coarse = self.levels[k - 1];
                    out.put(&s[INTERP_COARSE], coarse.u + at(coarse.edge, p.0 / 2, p.1 / 2, p.2 / 2));
                    out.put(&s[INTERP_FINE], lv.u + here);
                    out.put(&s[INTERP_STORE], lv.u + here);
                }
                Op::Zero => out.put(&s[ZERO_STORE], lv.u + here),
            }
            self.i1 += 1;
            if self.i1 < m {
                return false;
            }
            self.i1 = 0;
            self.i2 += 1;
            if self.i2 < m {
                return false;
            }
            self.i2 = 0;
            self.i3 += 1;
            if self.i3 < self.planes.end {
                return false;
            }
        }
        // Each operator is a parallel loop over planes: a barrier ends it.
        out.barrier();
        let next = (self.op + 1) % self.ops.len();
        self.start(next);
        next == 0
    }
}

/// The operators of one iteration for `levels` levels (see the module docs).
fn v_cycle(levels: &[Level], v: u64) -> Vec<(Op, usize)> {
    let top = levels.len() - 1;
    let mut ops = Vec::new();
    for k in (1..=top).rev() {
        ops.push((Op::Rprj, k - 1));
    }
    ops.extend([(Op::Zero, 0), (Op::Psinv, 0)]);
    for (k, level) in levels.iter().enumerate().take(top).skip(1) {
        let rhs = level.r;
        ops.extend([(Op::Zero, k), (Op::Interp, k), (Op::Resid { rhs }, k), (Op::Psinv, k)]);
    }
    ops.extend([(Op::Interp, top), (Op::Resid { rhs: v }, top), (Op::Psinv, top), (Op::Resid { rhs: v }, top)]);
    ops
}

impl MgParams {
    /// Validate and build; `length` says whether `accesses` applies.
    pub(crate) fn build_with(&self, ctx: &WorkloadCtx, length: Length) -> Result<Box<dyn Workload>> {
        let mut issues = Issues::default();
        let n = self.grid;
        let ok = n >= 4 && n.is_power_of_two() && n <= 1 << 20;
        issues.check(
            ok,
            field_loc(&ctx.loc, "grid"),
            "out_of_range",
            format!("grid must be a power of two in [4, 2^20], got {n}"),
        );
        let n = if ok { n } else { 4 };
        // Edges 2, 4, ..., n; sizes of u and r (every level).
        let edges: Vec<u64> = (1..=n.trailing_zeros()).map(|b| 1u64 << b).collect();
        let bytes = |e: u64| e.saturating_pow(3).saturating_mul(8);
        let hierarchy: u64 = edges.iter().fold(0u64, |t, &e| t.saturating_add(bytes(e)));
        let mut layout = Layout::new(self.base_addr);
        let (u, r, v) = (layout.place(hierarchy), layout.place(hierarchy), layout.place(bytes(n)));
        // Finest first: level k starts after every finer level.
        let mut levels = Vec::with_capacity(edges.len());
        for (k, &edge) in edges.iter().enumerate() {
            let finer: u64 = edges[k + 1..].iter().map(|&e| bytes(e)).sum();
            levels.push(Level { edge, u: u.wrapping_add(finer), r: r.wrapping_add(finer) });
        }
        let (sites, code_bytes) = lay_out_sites(self.code_base, &SITES);
        let common = self.common();
        let shared = [
            Shared { addr: u, elem: 8, stride: 8, n: hierarchy / 8, owner: None },
            Shared { addr: r, elem: 8, stride: 8, n: hierarchy / 8, owner: None },
            Shared { addr: v, elem: 8, stride: 8, n: bytes(n) / 8, owner: None },
        ];
        let (thread, init) = common.validate("mg", ctx, length, &mut layout, code_bytes, &shared, &mut issues);
        check_work(n, thread.count, &field_loc(&ctx.loc, "threads"), "planes of the finest grid", &mut issues);
        issues.finish()?;
        let ops = v_cycle(&levels, v);
        let mut kernel =
            Mg { sites, levels, ops, thread: (thread.index, thread.count), op: 0, planes: 0..0, i3: 0, i2: 0, i1: 0 };
        kernel.start(0);
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
    const C: u64 = 0x40_0000;

    /// Grid 8: levels of edge 2, 4, 8 take 8, 64 and 512 doubles; u holds
    /// 584 doubles (4672 bytes, 2 pages), so r starts at B + 8192 and v at
    /// B + 16384. Finest first: u[8] at B, u[4] at B + 4096, u[2] at B + 4608.
    const U8: u64 = B;
    const U4: u64 = B + 4096;
    const U2: u64 = B + 4608;
    const R8: u64 = B + 8192;
    const R4: u64 = R8 + 4096;
    const R2: u64 = R8 + 4608;
    const V: u64 = B + 16384;

    /// The distinct pcs of the loads or stores to `[grid_start, grid_end)`.
    fn pc_of(all: &[Access], store: bool, grid_start: u64, grid_end: u64) -> Vec<u64> {
        let mut pcs: Vec<u64> = all
            .iter()
            .filter(|a| (a.kind == AccessKind::Store) == store && (grid_start..grid_end).contains(&a.addr.0))
            .map(|a| a.pc.0)
            .collect();
        pcs.sort();
        pcs.dedup();
        pcs
    }

    #[test]
    fn one_iteration_runs_the_v_cycle_in_order() {
        let all = thread("mg", &json!({"grid": 8, "iterations": 1}), 1, 0, 1);
        // Points per operator: rprj3 to 4 (64), to 2 (8); zero3 + psinv on 2
        // (8 + 8); on 4: zero3, interp, resid, psinv (64 each); on 8: interp,
        // resid, psinv, resid (512 each).
        let per_point = [8, 8, 1, 9, 1, 3, 9, 9, 3, 9, 9, 9];
        let points = [64, 8, 8, 8, 64, 64, 64, 64, 512, 512, 512, 512];
        let total: u64 = per_point.iter().zip(points).map(|(a, b)| a * b).sum();
        assert_eq!(all.len() as u64, total);
        // The first access reads the fine r at point (0, 0, 0): the centre
        // of the restriction's stencil; then i1 - 1 wraps to 7.
        assert_eq!(all[0].addr.0, R8);
        assert_eq!(all[1].addr.0, R8 + 7 * 8);
        assert_eq!(all[2].addr.0, R8 + 8);
        assert_eq!(all[3].addr.0, R8 + 7 * 64);
        assert_eq!(all[5].addr.0, R8 + 7 * 512);
        // Then stores the coarse r[4] at (0, 0, 0); the next point's centre
        // is fine point (0, 0, 2).
        assert_eq!((all[7].addr.0, all[7].kind), (R4, AccessKind::Store));
        assert_eq!(all[8].addr.0, R8 + 16);
        // The last operator is the top resid: its last store is r[8] at
        // (7, 7, 7), after loading v there.
        let n = all.len();
        assert_eq!(all[n - 2].addr.0, V + 511 * 8);
        assert_eq!((all[n - 1].addr.0, all[n - 1].kind), (R8 + 511 * 8, AccessKind::Store));
        // Every level is touched, and nothing outside u, r and v.
        for a in &all {
            assert!((B..V + 4096).contains(&a.addr.0), "{:#x}", a.addr.0);
        }
        for level in [U8, U4, U2, R8, R4, R2] {
            assert!(all.iter().any(|a| a.addr.0 == level), "{level:#x}");
        }
        // Stores to u come from psinv, interp and zero3: three pcs.
        assert_eq!(pc_of(&all, true, U8, R8).len(), 3);
        assert!(all.iter().all(|a| a.pc.0 >= C && a.pc.0 < C + 4 * 64));
    }

    #[test]
    fn threads_own_slabs_and_every_output_point_is_written_once() {
        let p = json!({"grid": 16, "threads": 4, "iterations": 1});
        let streams = threads("mg", &p, 1);
        // Stores of the finest r (by the top resids): each point twice in
        // total (two resids), each by the thread owning its plane (4 planes
        // each).
        // u holds (4096 + 512 + 64 + 8) doubles, 37440 bytes: r starts 10
        // pages in, with its finest level first.
        let r16 = B + 10 * 4096;
        let mut owner: BTreeMap<u64, (usize, u32)> = BTreeMap::new();
        for (t, s) in streams.iter().enumerate() {
            for a in s.iter().filter(|a| a.kind == AccessKind::Store && (r16..r16 + 32768).contains(&a.addr.0)) {
                let e = owner.entry(a.addr.0).or_insert((t, 0));
                assert_eq!(e.0, t, "point {:#x} stored by two threads", a.addr.0);
                e.1 += 1;
            }
        }
        assert_eq!(owner.len(), 4096);
        for (addr, (t, count)) in owner {
            let plane = (addr - r16) / 8 / 256;
            assert_eq!(plane / 4, t as u64);
            assert_eq!(count, 2);
        }
        // The stencil reads a plane of the neighbouring slab: thread 1
        // (planes 4..8) loads u in plane 3 and plane 8.
        let plane_loads = |t: usize, plane: u64| {
            streams[t].iter().any(|a| {
                a.kind == AccessKind::Load && a.addr.0 >= B + plane * 2048 && a.addr.0 < B + (plane + 1) * 2048
            })
        };
        assert!(plane_loads(1, 3) && plane_loads(1, 8) && !plane_loads(1, 10));
    }

    #[test]
    fn mg_errors_name_the_key() {
        for grid in [0, 2, 12, 1 << 21] {
            let e = build_err_as("mg", json!({"grid": grid}), 0, 1);
            assert_eq!(e, [("workload.params.grid".into(), "out_of_range")], "{grid}");
        }
        let e = build_err_as("mg", json!({"grid": 4, "threads": 8}), 0, 8);
        assert_eq!(e, [("workload.params.threads".into(), "too_large")]);
    }
}
