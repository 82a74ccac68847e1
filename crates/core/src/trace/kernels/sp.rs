//! `kind = "sp"`: NAS SP, the scalar-pentadiagonal ADI solver, on the grid
//! of [`super::adi`]. Its iteration has BT's passes with scalar systems (5
//! coefficients per point of a line, 40 bytes of private `lhs`) and, between
//! them, the pointwise transforms of `rhs`:
//!
//! ```text
//! compute_rhs; txinvr; x_solve; ninvr; y_solve; pinvr; z_solve; tzetar; add
//! ```
//!
//! each a parallel loop with a barrier at its end; the pointwise passes
//! (`txinvr`, `tzetar`: load u and rhs, store rhs; `ninvr`, `pinvr`: load
//! and store rhs) and the x and y solves split the planes `k`, the z solve
//! the rows `j`. With `init = "serial"` (the default-compiled NAS SP touches
//! its data from the master thread) every page starts on thread 0's node and
//! the threads then work mostly on their own planes: the study's
//! serial-init-then-partitioned archetype.

use crate::error::Result;
use crate::trace::synthetic::common::Length;
use crate::trace::{Workload, WorkloadCtx};

use super::adi::{self, Array::*, Axis, Pass, Touch};
use super::{kernel_params, lay_out_sites, NasClass, NasSized, SiteSpec, L, S};

kernel_params! {
    /// Parameters of `kind = "sp"`.
    pub struct SpParams {
        /// Points along each edge of the grid, 4 to 1024 (default 64; NAS
        /// class C is 162).
        pub grid: u64 = 64,
    }
}

/// NAS SP's classes (NPB 3.3 `setparams.c`: `problem_size`, `niter`).
impl NasSized for SpParams {
    const NAS: Option<&'static str> = Some("SP");

    fn take_class(&mut self, class: NasClass) {
        (self.grid, self.iterations) = [(12, 100), (36, 400), (64, 400), (102, 400), (162, 400)][class.index()];
    }
}

const TXINVR: [Touch; 3] = [Touch::at(U, (0, 0, 0), 9), Touch::at(Rhs, (0, 0, 0), 10), Touch::at(Rhs, (0, 0, 0), 11)];
const X_FORWARD: [Touch; 3] =
    [Touch::at(U, (0, 0, 0), 12), Touch::at(Rhs, (0, 0, 0), 13), Touch::at(Lhs, (0, 0, 0), 14)];
const X_BACK: [Touch; 3] =
    [Touch::at(Lhs, (0, 0, 0), 15), Touch::at(Rhs, (0, 0, 1), 16), Touch::at(Rhs, (0, 0, 0), 17)];
const NINVR: [Touch; 2] = [Touch::at(Rhs, (0, 0, 0), 18), Touch::at(Rhs, (0, 0, 0), 19)];
const Y_FORWARD: [Touch; 3] =
    [Touch::at(U, (0, 0, 0), 20), Touch::at(Rhs, (0, 0, 0), 21), Touch::at(Lhs, (0, 0, 0), 22)];
const Y_BACK: [Touch; 3] =
    [Touch::at(Lhs, (0, 0, 0), 23), Touch::at(Rhs, (0, 1, 0), 24), Touch::at(Rhs, (0, 0, 0), 25)];
const PINVR: [Touch; 2] = [Touch::at(Rhs, (0, 0, 0), 26), Touch::at(Rhs, (0, 0, 0), 27)];
const Z_FORWARD: [Touch; 3] =
    [Touch::at(U, (0, 0, 0), 28), Touch::at(Rhs, (0, 0, 0), 29), Touch::at(Lhs, (0, 0, 0), 30)];
const Z_BACK: [Touch; 3] =
    [Touch::at(Lhs, (0, 0, 0), 31), Touch::at(Rhs, (1, 0, 0), 32), Touch::at(Rhs, (0, 0, 0), 33)];
const TZETAR: [Touch; 3] = [Touch::at(U, (0, 0, 0), 34), Touch::at(Rhs, (0, 0, 0), 35), Touch::at(Rhs, (0, 0, 0), 36)];
const ADD: [Touch; 3] = [Touch::at(Rhs, (0, 0, 0), 37), Touch::at(U, (0, 0, 0), 38), Touch::at(U, (0, 0, 0), 39)];

static PASSES: [Pass; 9] = [
    Pass::Points(&adi::COMPUTE_RHS),
    Pass::Points(&TXINVR),
    Pass::Lines { along: Axis::I, forward: &X_FORWARD, back: &X_BACK },
    Pass::Points(&NINVR),
    Pass::Lines { along: Axis::J, forward: &Y_FORWARD, back: &Y_BACK },
    Pass::Points(&PINVR),
    Pass::Lines { along: Axis::K, forward: &Z_FORWARD, back: &Z_BACK },
    Pass::Points(&TZETAR),
    Pass::Points(&ADD),
];

const SITES: [SiteSpec; 40] = {
    let mut s = [(L, 40, 2); 40];
    s[8] = (S, 40, 12);
    let stores = [11, 14, 17, 19, 22, 25, 27, 30, 33, 36, 39];
    let mut i = 0;
    while i < stores.len() {
        s[stores[i]] = (S, 40, 6);
        i += 1;
    }
    s
};

/// Bytes of `lhs` per point of a line: the 5 coefficients of a pentadiagonal row.
const LHS_BYTES: u64 = 40;

impl SpParams {
    /// Validate and build; `length` says whether `accesses` applies.
    pub(crate) fn build_with(&self, ctx: &WorkloadCtx, length: Length) -> Result<Box<dyn Workload>> {
        let (sites, bytes) = lay_out_sites(self.code_base, &SITES);
        adi::build("sp", ctx, length, &self.common(), self.grid, (sites.to_vec(), bytes), &PASSES, LHS_BYTES)
    }
}
