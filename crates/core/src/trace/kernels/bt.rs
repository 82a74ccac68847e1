//! `kind = "bt"`: NAS BT, the block-tridiagonal ADI solver, on the grid of
//! [`super::adi`]. One iteration, each loop parallel with a barrier at its end:
//!
//! ```text
//! compute_rhs   every point of the thread's planes k: u at the point and its
//!               6 face neighbours, forcing; store rhs
//! x_solve       lines along i through the thread's planes k: forward, load u
//!               and rhs, store the 5x5 block of lhs; back, load lhs and the
//!               next point's rhs, store rhs
//! y_solve       lines along j through the thread's planes k, the same
//! z_solve       lines along k through the thread's rows j, the same
//! add           every point of the thread's planes: load rhs and u, store u
//! ```
//!
//! NAS's OpenMP BT parallelises `z_solve` over `j` and the rest over `k`, so
//! every thread reads and writes, once an iteration, the lines of `u` and
//! `rhs` that cross the other threads' planes: the study's mixed archetype
//! (moderate non-local traffic after placement). `lhs` is private, one
//! 5x5 block (200 bytes) per point of the current line.

use crate::error::Result;
use crate::trace::synthetic::common::Length;
use crate::trace::{Workload, WorkloadCtx};

use super::adi::{self, Array::*, Axis, Pass, Touch};
use super::{kernel_params, lay_out_sites, NasClass, NasSized, SiteSpec, L, S};

kernel_params! {
    /// Parameters of `kind = "bt"`.
    pub struct BtParams {
        /// Points along each edge of the grid, 4 to 1024 (default 64:
        /// 10 MiB per array; NAS class B is 102).
        pub grid: u64 = 64,
    }
}

/// NAS BT's classes (NPB 3.3 `setparams.c`: `problem_size`, `niter`).
impl NasSized for BtParams {
    const NAS: Option<&'static str> = Some("BT");

    fn take_class(&mut self, class: NasClass) {
        (self.grid, self.iterations) = [(12, 60), (24, 200), (64, 200), (102, 200), (162, 200)][class.index()];
    }
}

const X_FORWARD: [Touch; 3] =
    [Touch::at(U, (0, 0, 0), 9), Touch::at(Rhs, (0, 0, 0), 10), Touch::at(Lhs, (0, 0, 0), 11)];
const X_BACK: [Touch; 3] =
    [Touch::at(Lhs, (0, 0, 0), 12), Touch::at(Rhs, (0, 0, 1), 13), Touch::at(Rhs, (0, 0, 0), 14)];
const Y_FORWARD: [Touch; 3] =
    [Touch::at(U, (0, 0, 0), 15), Touch::at(Rhs, (0, 0, 0), 16), Touch::at(Lhs, (0, 0, 0), 17)];
const Y_BACK: [Touch; 3] =
    [Touch::at(Lhs, (0, 0, 0), 18), Touch::at(Rhs, (0, 1, 0), 19), Touch::at(Rhs, (0, 0, 0), 20)];
const Z_FORWARD: [Touch; 3] =
    [Touch::at(U, (0, 0, 0), 21), Touch::at(Rhs, (0, 0, 0), 22), Touch::at(Lhs, (0, 0, 0), 23)];
const Z_BACK: [Touch; 3] =
    [Touch::at(Lhs, (0, 0, 0), 24), Touch::at(Rhs, (1, 0, 0), 25), Touch::at(Rhs, (0, 0, 0), 26)];
const ADD: [Touch; 3] = [Touch::at(Rhs, (0, 0, 0), 27), Touch::at(U, (0, 0, 0), 28), Touch::at(U, (0, 0, 0), 29)];

static PASSES: [Pass; 5] = [
    Pass::Points(&adi::COMPUTE_RHS),
    Pass::Lines { along: Axis::I, forward: &X_FORWARD, back: &X_BACK },
    Pass::Lines { along: Axis::J, forward: &Y_FORWARD, back: &Y_BACK },
    Pass::Lines { along: Axis::K, forward: &Z_FORWARD, back: &Z_BACK },
    Pass::Points(&ADD),
];

/// Loads of a point (5 doubles), its store, and the solves' block work.
const SITES: [SiteSpec; 30] = {
    let mut s = [(L, 40, 2); 30];
    s[8] = (S, 40, 12); // the rhs of 5 equations
    let mut p = 9;
    while p < 27 {
        s[p] = (L, 40, 2);
        s[p + 2] = (S, 64, 30); // a block of the factorisation
        s[p + 3] = (L, 64, 20);
        s[p + 5] = (S, 40, 10);
        p += 6;
    }
    s[29] = (S, 40, 5);
    s
};

/// Bytes of `lhs` per point of a line: one 5x5 block of doubles.
const LHS_BYTES: u64 = 200;

impl BtParams {
    /// Validate and build; `length` says whether `accesses` applies.
    pub(crate) fn build_with(&self, ctx: &WorkloadCtx, length: Length) -> Result<Box<dyn Workload>> {
        let (sites, bytes) = lay_out_sites(self.code_base, &SITES);
        adi::build("bt", ctx, length, &self.common(), self.grid, (sites.to_vec(), bytes), &PASSES, LHS_BYTES)
    }
}
