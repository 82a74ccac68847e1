//! `kind = "lu"`: NAS LU, symmetric successive over-relaxation with lower
//! and upper triangular sweeps, on the grid of [`super::adi`] (`rhs` is
//! LU's `rsd`). One iteration:
//!
//! ```text
//! rhs       every point of the thread's planes k: u at the point and its
//!           6 face neighbours, forcing; store rsd
//! blts      planes k = 0, 1, ..., n-1 in order; in each, the thread's rows
//!           j: load u at the point and at k-1, j-1, i-1 (jacld's
//!           Jacobians), rsd at the same four points; store rsd; a barrier
//!           after each plane
//! buts      planes k = n-1 down to 0, neighbours at k+1, j+1, i+1
//! update    every point of the thread's planes: load rsd and u, store u
//! ```
//!
//! NAS's OpenMP LU pipelines the triangular sweeps: thread `t` takes its
//! rows of plane `k` once thread `t-1` is done with its rows of it; here
//! each plane ends with a barrier, which keeps the same order with a
//! little more waiting. The sweeps split the rows `j` and the rest the
//! planes `k`, so every thread reads and writes every page of `u` and
//! `rsd` in an iteration: the study's uniformly shared archetype, where
//! migration only moves the non-locality around.

use crate::error::Result;
use crate::trace::synthetic::common::Length;
use crate::trace::{Workload, WorkloadCtx};

use super::adi::{self, Array::*, Pass, Touch};
use super::{kernel_params, lay_out_sites, NasClass, NasSized, SiteSpec, L, S};

kernel_params! {
    /// Parameters of `kind = "lu"`.
    pub struct LuParams {
        /// Points along each edge of the grid, 4 to 1024 (default 64; NAS
        /// class C is 162).
        pub grid: u64 = 64,
    }
}

/// NAS LU's classes (NPB 3.3 `setparams.c`: `problem_size`, `itmax`).
impl NasSized for LuParams {
    const NAS: Option<&'static str> = Some("LU");

    fn take_class(&mut self, class: NasClass) {
        (self.grid, self.iterations) = [(12, 50), (33, 300), (64, 250), (102, 250), (162, 250)][class.index()];
    }
}

/// jacld's reads of u (the point and its lower neighbours), then blts's
/// reads of rsd and its store.
const LOWER: [Touch; 9] = [
    Touch::at(U, (0, 0, 0), 9),
    Touch::at(U, (-1, 0, 0), 10),
    Touch::at(U, (0, -1, 0), 11),
    Touch::at(U, (0, 0, -1), 12),
    Touch::at(Rhs, (0, 0, 0), 13),
    Touch::at(Rhs, (-1, 0, 0), 14),
    Touch::at(Rhs, (0, -1, 0), 15),
    Touch::at(Rhs, (0, 0, -1), 16),
    Touch::at(Rhs, (0, 0, 0), 17),
];
/// jacu and buts: the same with the upper neighbours.
const UPPER: [Touch; 9] = [
    Touch::at(U, (0, 0, 0), 18),
    Touch::at(U, (1, 0, 0), 19),
    Touch::at(U, (0, 1, 0), 20),
    Touch::at(U, (0, 0, 1), 21),
    Touch::at(Rhs, (0, 0, 0), 22),
    Touch::at(Rhs, (1, 0, 0), 23),
    Touch::at(Rhs, (0, 1, 0), 24),
    Touch::at(Rhs, (0, 0, 1), 25),
    Touch::at(Rhs, (0, 0, 0), 26),
];
const UPDATE: [Touch; 3] = [Touch::at(Rhs, (0, 0, 0), 27), Touch::at(U, (0, 0, 0), 28), Touch::at(U, (0, 0, 0), 29)];

static PASSES: [Pass; 4] = [
    Pass::Points(&adi::COMPUTE_RHS),
    Pass::Wavefront { down: false, touches: &LOWER },
    Pass::Wavefront { down: true, touches: &UPPER },
    Pass::Points(&UPDATE),
];

const SITES: [SiteSpec; 30] = {
    let mut s = [(L, 40, 2); 30];
    s[8] = (S, 40, 12);
    s[12] = (L, 40, 25); // the last read of jacld: the 5x5 Jacobians of the point
    s[21] = (L, 40, 25);
    s[17] = (S, 40, 30); // a 5x5 solve
    s[26] = (S, 40, 30);
    s[29] = (S, 40, 5);
    s
};

impl LuParams {
    /// Validate and build; `length` says whether `accesses` applies.
    pub(crate) fn build_with(&self, ctx: &WorkloadCtx, length: Length) -> Result<Box<dyn Workload>> {
        let (sites, bytes) = lay_out_sites(self.code_base, &SITES);
        adi::build("lu", ctx, length, &self.common(), self.grid, (sites.to_vec(), bytes), &PASSES, 0)
    }
}
