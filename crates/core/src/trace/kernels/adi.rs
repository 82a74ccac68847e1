//! What NAS BT, SP and LU share: a cube of `grid`^3 points of 5 doubles
//! (40 bytes) each, in arrays `u` (the solution), `rhs` (the right-hand
//! side, LU's `rsd`) and `forcing`, point `(k, j, i)` at
//! `((k * n + j) * n + i) * 40` from an array's start; and the passes of an
//! iteration, each a parallel loop that ends with a barrier:
//!
//! - [`Pass::Points`]: every point of the thread's planes `k` (OpenMP static
//!   blocks of `k`), `j` then `i` inner;
//! - [`Pass::Lines`]: the lines along `i`, `j` or `k` through the thread's
//!   share of `k` (or of `j`, for lines along `k`), each swept forward (the
//!   elimination, which fills the thread's line of `lhs`) and back (the
//!   substitution);
//! - [`Pass::Wavefront`]: planes `k` in order (up or down), the thread's
//!   rows `j` of each, a barrier after each plane (the pipeline of LU's
//!   triangular solves, synchronised plane by plane).
//!
//! A point's accesses are [`Touch`]es: an array, an offset from the point
//! (neighbours clamp at the faces: NAS reads the boundary points again), and
//! a site. `lhs` is private: one line of `lhs_bytes` per point of the line,
//! in the thread's own block.

use crate::error::{Issues, Result};
use crate::trace::synthetic::common::{field_loc, Length};
use crate::trace::{Workload, WorkloadCtx};

use super::{check_work, drive, share, Common, Kernel, Layout, Out, Shared, Site};

/// Bytes of one point: 5 doubles.
pub(crate) const POINT: u64 = 40;

/// The arrays a touch reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Array {
    U,
    Rhs,
    Forcing,
    /// The thread's line of the factored system, at the point's place in its line.
    Lhs,
}

/// One access of a point's work: `site` on `array` at the point moved by
/// `(dk, dj, di)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Touch {
    pub array: Array,
    pub at: (i8, i8, i8),
    pub site: usize,
}

/// compute_rhs (sites 0 to 8 of every kernel): the 7-point stencil of `u`,
/// the forcing term, the store of `rhs`.
pub(crate) const COMPUTE_RHS: [Touch; 9] = [
    Touch::at(Array::U, (0, 0, 0), 0),
    Touch::at(Array::U, (0, 0, -1), 1),
    Touch::at(Array::U, (0, 0, 1), 2),
    Touch::at(Array::U, (0, -1, 0), 3),
    Touch::at(Array::U, (0, 1, 0), 4),
    Touch::at(Array::U, (-1, 0, 0), 5),
    Touch::at(Array::U, (1, 0, 0), 6),
    Touch::at(Array::Forcing, (0, 0, 0), 7),
    Touch::at(Array::Rhs, (0, 0, 0), 8),
];
impl Touch {
    /// `site` on `array` at the point moved by `at`.
    pub(crate) const fn at(array: Array, at: (i8, i8, i8), site: usize) -> Touch {
        Touch { array, at, site }
    }
}

/// An axis of the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Axis {
    K,
    J,
    I,
}

/// A parallel loop of an iteration (see the module docs).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Pass {
    Points(&'static [Touch]),
    Lines { along: Axis, forward: &'static [Touch], back: &'static [Touch] },
    Wavefront { down: bool, touches: &'static [Touch] },
}

/// A kernel of passes over the grid.
pub(crate) struct Adi {
    sites: Vec<Site>,
    passes: &'static [Pass],
    n: u64,
    u: u64,
    rhs: u64,
    forcing: u64,
    lhs: u64,
    lhs_bytes: u64,
    /// The thread's static block of the split axis: planes `k`, or rows `j`
    /// in the passes that split the rows (the same indices either way).
    mine: std::ops::Range<u64>,
    pass: usize,
    /// Loop counters, outer to inner, and the line's direction (back: true).
    a: u64,
    b: u64,
    c: u64,
    back: bool,
}

impl Adi {
    /// Thread `t` of `count` on grid `n`, its arrays placed by `layout`
    /// (`lhs` a block per thread). Returns the kernel and the arrays an
    /// initialisation writes.
    fn new(
        sites: Vec<Site>,
        passes: &'static [Pass],
        (n, lhs_bytes): (u64, u64),
        (t, count): (u32, u32),
        layout: &mut Layout,
    ) -> (Adi, [Shared; 3]) {
        let bytes = n.saturating_pow(3).saturating_mul(POINT);
        let (u, rhs, forcing) = (layout.place(bytes), layout.place(bytes), layout.place(bytes));
        let (lhs0, stride) = layout.place_per_thread(n.saturating_mul(lhs_bytes), count);
        let lhs = lhs0.wrapping_add(stride.wrapping_mul(t as u64));
        let shared =
            [u, rhs, forcing].map(|addr| Shared { addr, elem: 8, stride: POINT, n: n.saturating_pow(3), owner: None });
        let mut adi = Adi {
            sites,
            passes,
            n,
            u,
            rhs,
            forcing,
            lhs,
            lhs_bytes,
            mine: share(n, t, count),
            pass: 0,
            a: 0,
            b: 0,
            c: 0,
            back: false,
        };
        adi.start(0);
        (adi, shared)
    }

    /// Start pass `p` at its first point.
    fn start(&mut self, p: usize) {
        self.pass = p;
        self.back = false;
        (self.a, self.b, self.c) = match self.passes[p] {
            Pass::Points(_) | Pass::Lines { .. } => (self.mine.start, 0, 0),
            Pass::Wavefront { down: false, .. } => (0, self.mine.start, 0),
            Pass::Wavefront { down: true, .. } => (self.n - 1, self.mine.start, 0),
        };
    }

    /// The point `(k, j, i)` the counters are at, and its place in its line.
    fn point(&self) -> ((u64, u64, u64), u64) {
        let (a, b, c) = (self.a, self.b, self.c);
        let c_line = if self.back { self.n - 1 - c } else { c };
        match self.passes[self.pass] {
            Pass::Points(_) | Pass::Wavefront { .. } => ((a, b, c), 0),
            // Outer: k (or j), then the other cross axis, then the line.
            Pass::Lines { along: Axis::I, .. } => ((a, b, c_line), c_line),
            Pass::Lines { along: Axis::J, .. } => ((a, c_line, b), c_line),
            Pass::Lines { along: Axis::K, .. } => ((c_line, a, b), c_line),
        }
    }

    fn emit(&self, out: &mut Out, touches: &[Touch]) {
        let ((k, j, i), pos) = self.point();
        let n = self.n as i64;
        let clamp = |x: u64, d: i8| (x as i64 + d as i64).clamp(0, n - 1) as u64;
        for t in touches {
            let (k, j, i) = (clamp(k, t.at.0), clamp(j, t.at.1), clamp(i, t.at.2));
            let offset = ((k * self.n + j) * self.n + i) * POINT;
            let addr = match t.array {
                Array::U => self.u + offset,
                Array::Rhs => self.rhs + offset,
                Array::Forcing => self.forcing + offset,
                Array::Lhs => self.lhs + pos * self.lhs_bytes,
            };
            out.put(&self.sites[t.site], addr);
        }
    }

    /// Advance the innermost counters over `n` x `n` (b, c); true when the
    /// outer counter passed `end`.
    fn advance(&mut self, end: u64) -> bool {
        self.c += 1;
        if self.c < self.n {
            return false;
        }
        self.c = 0;
        self.b += 1;
        if self.b < self.n {
            return false;
        }
        self.b = 0;
        self.a += 1;
        self.a >= end
    }
}

impl Kernel for Adi {
    fn step(&mut self, out: &mut Out) -> bool {
        let n = self.n;
        let done = match self.passes[self.pass] {
            Pass::Points(touches) => {
                if self.mine.is_empty() {
                    true
                } else {
                    self.emit(out, touches);
                    self.advance(self.mine.end)
                }
            }
            Pass::Lines { forward, back, .. } => {
                if self.mine.is_empty() {
                    true
                } else {
                    self.emit(out, if self.back { back } else { forward });
                    // The line: forward, then back; then the next line.
                    self.c += 1;
                    if self.c < n {
                        false
                    } else {
                        self.c = 0;
                        self.back = !self.back;
                        if self.back {
                            false
                        } else {
                            self.b += 1;
                            if self.b < n {
                                false
                            } else {
                                self.b = 0;
                                self.a += 1;
                                self.a >= self.mine.end
                            }
                        }
                    }
                }
            }
            Pass::Wavefront { down, touches } => {
                if !self.mine.is_empty() {
                    self.emit(out, touches);
                    self.c += 1;
                    if self.c == n {
                        self.c = 0;
                        self.b += 1;
                    }
                }
                if self.mine.is_empty() || self.b == self.mine.end {
                    // This plane is done: wait for the others, then the next.
                    out.barrier();
                    self.b = self.mine.start;
                    let last = if down { self.a == 0 } else { self.a + 1 == n };
                    if !last {
                        self.a = if down { self.a - 1 } else { self.a + 1 };
                        return false;
                    }
                    true
                } else {
                    false
                }
            }
        };
        if !done {
            return false;
        }
        // A wavefront's last plane already ended with its barrier.
        if !matches!(self.passes[self.pass], Pass::Wavefront { .. }) {
            out.barrier();
        }
        let next = (self.pass + 1) % self.passes.len();
        self.start(next);
        next == 0
    }
}

/// Check the grid and the threads' share of it, and build the kernel:
/// `kind` for messages, `sites` laid out, `passes`, `lhs_bytes` per point
/// of a line.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build(
    kind: &str,
    ctx: &WorkloadCtx,
    length: Length,
    common: &Common,
    grid: u64,
    sites: (Vec<Site>, u64),
    passes: &'static [Pass],
    lhs_bytes: u64,
) -> Result<Box<dyn Workload>> {
    let mut issues = Issues::default();
    let ok = (4..=1024).contains(&grid);
    issues.check(
        ok,
        field_loc(&ctx.loc, "grid"),
        "out_of_range",
        format!("grid must be from 4 to 1024 points, got {grid}"),
    );
    let n = if ok { grid } else { 4 };
    let mut layout = Layout::new(common.base_addr);
    let threads = common.threads.max(1);
    let thread = ctx.thread.index.min(threads - 1);
    let (adi, shared) = Adi::new(sites.0, passes, (n, lhs_bytes), (thread, threads), &mut layout);
    let (thread, init) = common.validate(kind, ctx, length, &mut layout, sites.1, &shared, &mut issues);
    check_work(n, thread.count, &field_loc(&ctx.loc, "threads"), "planes of the grid", &mut issues);
    issues.finish()?;
    Ok(drive(adi, init, common, length))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::types::{Access, AccessKind};
    use serde_json::json;
    use std::collections::BTreeMap;

    const B: u64 = 0x10_0000_0000;

    #[test]
    fn one_iteration_has_the_accesses_of_its_passes() {
        // Grid 4, one thread: 64 points, 16 lines of 4 along each axis.
        // compute_rhs 9 per point; a solve 3 forward + 3 back per point of
        // its lines; a pointwise pass 2 or 3; LU's sweeps 9 per point.
        let count = |kind: &str| thread(kind, &json!({"grid": 4, "iterations": 1}), 1, 0, 1).len();
        assert_eq!(count("bt"), 64 * 9 + 3 * 64 * 6 + 64 * 3);
        assert_eq!(count("sp"), 64 * 9 + 64 * 3 + 3 * 64 * 6 + 2 * 64 * 2 + 64 * 3 + 64 * 3);
        assert_eq!(count("lu"), 64 * 9 + 2 * 64 * 9 + 64 * 3);
    }

    #[test]
    fn compute_rhs_reads_the_stencil_in_order_and_clamps_at_the_faces() {
        let all = thread("bt", &json!({"grid": 4, "iterations": 1}), 1, 0, 1);
        let point = |k: u64, j: u64, i: u64| ((k * 4 + j) * 4 + i) * 40;
        // The first point, (0, 0, 0): u at the centre, i-1 (clamped to 0), i+1,
        // j-1, j+1, k-1, k+1, then forcing and the store of rhs.
        let bytes: u64 = 64 * 40;
        let (u, rhs, forcing) = (B, B + bytes.next_multiple_of(4096), B + 2 * bytes.next_multiple_of(4096));
        let want = [u, u, u + point(0, 0, 1), u, u + point(0, 1, 0), u, u + point(1, 0, 0), forcing, rhs];
        assert_eq!(all[..9].iter().map(|a| a.addr.0).collect::<Vec<_>>(), want);
        assert_eq!(all[8].kind, AccessKind::Store);
        assert!(all[..9].iter().all(|a| a.size == 40));
    }

    #[test]
    fn a_line_is_eliminated_forward_then_substituted_back() {
        // The x solve of plane 0, row 0: i = 0..4 forward, then 3..0 back,
        // its lhs at the thread's private block.
        let all = thread("bt", &json!({"grid": 4, "iterations": 1}), 1, 0, 1);
        let x = &all[64 * 9..64 * 9 + 24];
        let rhs_of = |a: &Access| (a.addr.0 - x[1].addr.0) / 40;
        let forward: Vec<u64> = x[..12].chunks(3).map(|c| rhs_of(&c[1])).collect();
        let back: Vec<u64> = x[12..].chunks(3).map(|c| rhs_of(&c[2])).collect();
        assert_eq!(forward, [0, 1, 2, 3]);
        assert_eq!(back, [3, 2, 1, 0]);
        assert!(x[2].kind == AccessKind::Store && x[2].addr.0 > x[1].addr.0, "lhs after the shared arrays");
        assert_eq!(x[5].addr.0 - x[2].addr.0, 200, "one 5x5 block per point of the line");
    }

    /// Of the accesses to `u` and `rhs`, the share by threads other than
    /// the one that makes the most to the page: what stays non-local when
    /// every page sits with its heaviest user, the best page placement can do.
    fn residual(kind: &str) -> f64 {
        let streams = threads(kind, &json!({"grid": 32, "threads": 4, "iterations": 1}), 1);
        let arrays = B..B + 2 * (32u64.pow(3) * 40).next_multiple_of(4096);
        let mut pages: BTreeMap<u64, [u64; 4]> = BTreeMap::new();
        for (t, s) in streams.iter().enumerate() {
            for a in s.iter().filter(|a| arrays.contains(&a.addr.0)) {
                pages.entry(a.addr.0 >> 12).or_default()[t] += 1;
            }
        }
        let (others, all) = pages.values().fold((0, 0), |(o, a), c| {
            let sum: u64 = c.iter().sum();
            (o + sum - c.iter().max().unwrap(), a + sum)
        });
        others as f64 / all as f64
    }

    #[test]
    fn lu_leaves_the_most_non_local_traffic_whatever_the_placement() {
        // BT and SP split the planes in every pass but the z solve, so a
        // page is mostly its plane owner's. LU's sweeps split the rows and
        // read u around each point as its rhs pass does: u's pages are as
        // much the row owner's as the plane owner's.
        let (bt, sp, lu) = (residual("bt"), residual("sp"), residual("lu"));
        eprintln!("non-local after the best placement: bt {bt:.3}, sp {sp:.3}, lu {lu:.3}");
        // 0.139, 0.097 and 0.297 here: the order of the study's reductions
        // (SP 58.8 %, BT 38.0 %, LU 19.7 %).
        assert!(sp < bt && bt < 0.2, "bt {bt:.3}, sp {sp:.3}");
        assert!(lu > bt + 0.05 && lu > sp + 0.05, "lu {lu:.3} against bt {bt:.3}, sp {sp:.3}");
    }

    #[test]
    fn a_grid_out_of_range_or_too_small_for_the_threads_is_refused() {
        let e = build_err_as("bt", json!({"grid": 2}), 0, 1);
        assert_eq!(e, vec![("workload.params.grid".to_string(), "out_of_range")]);
        let e = build_err_as("lu", json!({"grid": 4, "threads": 8}), 0, 8);
        assert_eq!(e[0].0, "workload.params.threads");
    }
}
