//! `kind = "ft"`: the time step of NAS FT, an evolution followed by a 3D
//! inverse FFT computed as 1D FFTs along z, y and x.
//!
//! The data (in this order, each at the next 4 KiB): the complex grids
//! `u0`, `u1` and `u2` (16 bytes per point, point `(k, j, i)` at
//! `((k * ny + j) * nx + i) * 16`), the real `twiddle` grid (8 bytes per
//! point), the table of roots of unity (`max(nx, ny, nz)` complex), all
//! shared, then one scratch buffer per thread of `fft_block` lines of
//! `max(nx, ny, nz)` complex.
//!
//! One iteration, as NAS's `evolve` and `fft(-1, u1, u2)`:
//!
//! ```text
//! evolve:  for k in my planes, j, i: u0[k,j,i] *= twiddle[k,j,i]; u1[k,j,i] = u0[k,j,i]
//! fft z:   lines (j, i) along k, j in my share of ny       (in place in u1)
//! fft y:   lines (k, i) along j, k in my planes             (in place in u1)
//! fft x:   lines (k, j) along i, k in my planes             (u1 -> u2)
//! ```
//!
//! Threads own slabs of `k` planes (OpenMP static blocks of `nz`) for the
//! evolution and the y and x passes, but the z pass splits `j` instead, so
//! each thread reads and writes a slice of every other thread's slab: the
//! transpose that moves pages between owners in the page-migration study.
//!
//! Each pass takes its lines `fft_block` at a time (NAS's `fftblock`, lines
//! adjacent in the inner index): it copies the block into the thread's
//! scratch (`y[l][b]`, line `b` fastest), runs `log2(len)` radix-2
//! butterfly passes over the scratch (pass `s` pairs elements `half = 2^s`
//! apart and loads the root `roots[(l mod half) * len / (2 half)]` once per
//! pair for the whole block), and copies the block back. The copies walk
//! memory contiguously: element-inner for x, whose lines are contiguous,
//! line-inner for y and z. NAS uses a Stockham FFT with two scratch arrays
//! and a larger roots table; this one is in place in one scratch buffer.
//! The checksum NAS computes after each step is left out.

use crate::error::{Issues, Result};
use crate::trace::synthetic::common::{field_loc, Length};
use crate::trace::{Workload, WorkloadCtx};

use super::{
    check_work, drive, kernel_params, lay_out_sites, share, Kernel, Layout, NasClass, NasSized, Out, Shared, Site,
    SiteSpec, L, S,
};

kernel_params! {
    /// Parameters of `kind = "ft"`.
    pub struct FtParams {
        /// Points along x, a power of two of at least 2 (default 64).
        pub nx: u64 = 64,
        /// Points along y, a power of two of at least 2 (default 64).
        pub ny: u64 = 64,
        /// Points along z, a power of two of at least 2 (default 64).
        pub nz: u64 = 64,
        /// Lines transformed together, at least 1 (default 16, NAS's `fftblock`).
        pub fft_block: u64 = 16,
    }
}

/// NAS FT's classes (NPB 3.3 `setparams.c`: `nx`, `ny`, `nz`, `niter`).
impl NasSized for FtParams {
    const NAS: Option<&'static str> = Some("FT");

    fn take_class(&mut self, class: NasClass) {
        let sizes = [(64, 64, 64, 6), (128, 128, 32, 6), (256, 256, 128, 6), (512, 256, 256, 20), (512, 512, 512, 20)];
        (self.nx, self.ny, self.nz, self.iterations) = sizes[class.index()];
    }
}

const EV_U0: usize = 0;
const EV_TW: usize = 1;
const EV_U0_STORE: usize = 2;
const EV_U1_STORE: usize = 3;
const BF_ROOT: usize = 4;
const BF_A: usize = 5;
const BF_C: usize = 6;
const BF_A_STORE: usize = 7;
const BF_C_STORE: usize = 8;
/// Copies of pass `d` (0 z, 1 y, 2 x): load, store into scratch, load from
/// scratch, store: sites `COPY + 4 d ..`.
const COPY: usize = 9;
const SITES: [SiteSpec; 21] = [
    (L, 16, 3), // u0
    (L, 8, 1),  // twiddle
    (S, 16, 3), // u0 = u0 * twiddle
    (S, 16, 1), // u1 = u0
    (L, 16, 3), // root (shared by the fft of every dimension)
    (L, 16, 2), // y[a]
    (L, 16, 1), // y[c]
    (S, 16, 5), // y[a] = y[a] + w y[c]
    (S, 16, 1), // y[c] = y[a] - w y[c]
    (L, 16, 2), // z pass: x[.] -> scratch
    (S, 16, 1),
    (L, 16, 2), // scratch -> x[.]
    (S, 16, 1),
    (L, 16, 2), // y pass
    (S, 16, 1),
    (L, 16, 2),
    (S, 16, 1),
    (L, 16, 2), // x pass
    (S, 16, 1),
    (L, 16, 2),
    (S, 16, 1),
];

/// One of the three 1D FFT passes: which lines, where their elements are.
#[derive(Debug, Clone)]
struct Pass {
    /// Elements per line and its log2.
    len: u64,
    log_len: u32,
    /// Bytes between successive elements of a line.
    stride: u64,
    /// Lines per outer index, and bytes between adjacent lines.
    lines: u64,
    line_stride: u64,
    /// Bytes between outer indices, and this thread's outer indices.
    outer_stride: u64,
    outer: std::ops::Range<u64>,
    src: u64,
    dst: u64,
    /// Copies walk the elements of a line in the inner loop (else the lines).
    element_inner: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Evolve,
    CopyIn,
    Butterfly,
    CopyOut,
}

/// One thread of FT.
struct Ft {
    sites: [Site; 21],
    u0: u64,
    u1: u64,
    twiddle: u64,
    roots: u64,
    scratch: u64,
    block: u64,
    /// This thread's planes for the evolution, and the points per plane.
    planes: std::ops::Range<u64>,
    plane_points: u64,
    passes: [Pass; 3],
    stage: Stage,
    /// Current pass (0 z, 1 y, 2 x).
    d: usize,
    /// Outer index, first line of the block, lines in the block.
    o: u64,
    c: u64,
    width: u64,
    /// Loop counters of the stage: evolution point; copy (outer, inner);
    /// butterfly (pass, pair, line).
    i0: u64,
    i1: u64,
    s: u32,
}

impl Ft {
    /// Start the copy-in of the block at `(o, c)` of pass `d`, or the next
    /// pass (or the next iteration) when the pass is over. Returns true
    /// when the iteration ended.
    fn start_block(&mut self, out: &mut Out) -> bool {
        loop {
            let p = &self.passes[self.d];
            if self.c >= p.lines {
                self.c = 0;
                self.o += 1;
            }
            if self.o < p.outer.end {
                self.width = self.block.min(p.lines - self.c);
                (self.stage, self.i0, self.i1) = (Stage::CopyIn, 0, 0);
                return false;
            }
            if self.d == 2 {
                (self.stage, self.i0) = (Stage::Evolve, 0);
                return true;
            }
            // A pass is a parallel loop over lines: a barrier ends it.
            out.barrier();
            self.d += 1;
            self.o = self.passes[self.d].outer.start;
            self.c = 0;
        }
    }

    /// Scratch address of element `l` of block line `b`.
    fn y(&self, l: u64, b: u64) -> u64 {
        self.scratch + (l * self.block + b) * 16
    }

    /// Advance a copy's loop counters; true when the copy is done.
    fn next_copy(&mut self) -> bool {
        let inner = if self.passes[self.d].element_inner { self.passes[self.d].len } else { self.width };
        self.i1 += 1;
        if self.i1 == inner {
            self.i1 = 0;
            self.i0 += 1;
            let outer = if self.passes[self.d].element_inner { self.width } else { self.passes[self.d].len };
            return self.i0 == outer;
        }
        false
    }
}

impl Kernel for Ft {
    fn step(&mut self, out: &mut Out) -> bool {
        match self.stage {
            Stage::Evolve => {
                if self.planes.is_empty() {
                    out.barrier(); // the end of the evolution
                    self.d = 0;
                    self.o = self.passes[0].outer.start;
                    self.c = 0;
                    return self.start_block(out);
                }
                let point = (self.planes.start * self.plane_points + self.i0) * 16;
                let s = &self.sites;
                out.put(&s[EV_U0], self.u0 + point);
                out.put(&s[EV_TW], self.twiddle + point / 2);
                out.put(&s[EV_U0_STORE], self.u0 + point);
                out.put(&s[EV_U1_STORE], self.u1 + point);
                self.i0 += 1;
                if self.i0 == (self.planes.end - self.planes.start) * self.plane_points {
                    out.barrier(); // the end of the evolution
                    self.d = 0;
                    self.o = self.passes[0].outer.start;
                    self.c = 0;
                    return self.start_block(out);
                }
                false
            }
            Stage::CopyIn | Stage::CopyOut => {
                let p = &self.passes[self.d];
                let (l, b) = if p.element_inner { (self.i1, self.i0) } else { (self.i0, self.i1) };
                let line = p.outer_stride * self.o + p.line_stride * (self.c + b) + p.stride * l;
                let y = self.y(l, b);
                let site = COPY + 4 * self.d;
                if self.stage == Stage::CopyIn {
                    out.put(&self.sites[site], p.src + line);
                    out.put(&self.sites[site + 1], y);
                    if self.next_copy() {
                        (self.stage, self.s, self.i0, self.i1) = (Stage::Butterfly, 0, 0, 0);
                    }
                    false
                } else {
                    let dst = p.dst + line;
                    out.put(&self.sites[site + 2], y);
                    out.put(&self.sites[site + 3], dst);
                    if self.next_copy() {
                        self.c += self.block;
                        return self.start_block(out);
                    }
                    false
                }
            }
            Stage::Butterfly => {
                let p = &self.passes[self.d];
                let (len, log_len) = (p.len, p.log_len);
                let half = 1u64 << self.s;
                let (pair, b) = (self.i0, self.i1);
                let a = ((pair >> self.s) << (self.s + 1)) + (pair & (half - 1));
                let c = a + half;
                let s = &self.sites;
                if b == 0 {
                    out.put(&s[BF_ROOT], self.roots + ((pair & (half - 1)) << (log_len - 1 - self.s)) * 16);
                }
                out.put(&s[BF_A], self.y(a, b));
                out.put(&s[BF_C], self.y(c, b));
                out.put(&s[BF_A_STORE], self.y(a, b));
                out.put(&s[BF_C_STORE], self.y(c, b));
                self.i1 += 1;
                if self.i1 == self.width {
                    self.i1 = 0;
                    self.i0 += 1;
                    if self.i0 == len / 2 {
                        self.i0 = 0;
                        self.s += 1;
                        if self.s == log_len {
                            (self.stage, self.i0, self.i1) = (Stage::CopyOut, 0, 0);
                        }
                    }
                }
                false
            }
        }
    }
}

impl FtParams {
    /// Validate and build; `length` says whether `accesses` applies.
    pub(crate) fn build_with(&self, ctx: &WorkloadCtx, length: Length) -> Result<Box<dyn Workload>> {
        let mut issues = Issues::default();
        let at = |f: &str| field_loc(&ctx.loc, f);
        let mut dims = [self.nx, self.ny, self.nz];
        for (name, n) in ["nx", "ny", "nz"].iter().zip(dims.iter_mut()) {
            let ok = *n >= 2 && n.is_power_of_two() && *n <= 1 << 16;
            issues.check(ok, at(name), "out_of_range", format!("{name} must be a power of two in [2, 65536], got {n}"));
            if !ok {
                *n = 2;
            }
        }
        let [nx, ny, nz] = dims;
        issues.check(self.fft_block >= 1, at("fft_block"), "out_of_range", "fft_block must be at least 1");
        let block = self.fft_block.clamp(1, 1 << 16);
        let points = nx * ny * nz;
        let longest = nx.max(ny).max(nz);
        let mut layout = Layout::new(self.base_addr);
        let (u0, u1, u2) = (layout.place(points * 16), layout.place(points * 16), layout.place(points * 16));
        let twiddle = layout.place(points * 8);
        let roots = layout.place(longest * 16);
        let (sites, code_bytes) = lay_out_sites(self.code_base, &SITES);
        let common = self.common();
        let threads = common.threads.max(1);
        let (scratch0, scratch_stride) = layout.place_per_thread(longest * block * 16, threads);
        let shared = [
            Shared { addr: u0, elem: 16, stride: 16, n: points, owner: None },
            Shared { addr: u1, elem: 16, stride: 16, n: points, owner: None },
            Shared { addr: u2, elem: 16, stride: 16, n: points, owner: None },
            Shared { addr: twiddle, elem: 8, stride: 8, n: points, owner: None },
            Shared { addr: roots, elem: 16, stride: 16, n: longest, owner: None },
        ];
        let (thread, init) = common.validate("ft", ctx, length, &mut layout, code_bytes, &shared, &mut issues);
        check_work(nz.min(ny), thread.count, &at("threads"), "planes along z (or y)", &mut issues);
        issues.finish()?;
        let (t, count) = (thread.index, thread.count);
        let planes = share(nz, t, count);
        let plane = nx * ny * 16;
        let pass = |len: u64, stride, lines, line_stride, outer_stride, outer, src, dst, element_inner| Pass {
            len,
            log_len: len.trailing_zeros(),
            stride,
            lines,
            line_stride,
            outer_stride,
            outer,
            src,
            dst,
            element_inner,
        };
        let passes = [
            // z: lines (j, i), j outer (split), i the adjacent lines.
            pass(nz, plane, nx, 16, nx * 16, share(ny, t, count), u1, u1, false),
            // y: lines (k, i), k outer (my planes).
            pass(ny, nx * 16, nx, 16, plane, planes.clone(), u1, u1, false),
            // x: lines (k, j), k outer, j the adjacent lines; out to u2.
            pass(nx, 16, ny, nx * 16, plane, planes.clone(), u1, u2, true),
        ];
        let kernel = Ft {
            sites,
            u0,
            u1,
            twiddle,
            roots,
            scratch: scratch0 + scratch_stride * t as u64,
            block,
            planes,
            plane_points: nx * ny,
            passes,
            stage: Stage::Evolve,
            d: 0,
            o: 0,
            c: 0,
            width: 0,
            i0: 0,
            i1: 0,
            s: 0,
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

    /// 4 x 4 x 4 points: u0, u1, u2 take 1024 bytes each (a page apart),
    /// twiddle 512 bytes, roots 64 bytes, then the scratch buffers.
    const U1: u64 = B + 0x1000;
    const U2: u64 = B + 0x2000;
    const SCRATCH: u64 = B + 0x5000;

    fn small(threads: u32, block: u64) -> serde_json::Value {
        json!({"nx": 4, "ny": 4, "nz": 4, "fft_block": block, "threads": threads, "iterations": 1})
    }

    #[test]
    fn one_iteration_has_the_expected_number_of_accesses() {
        // Evolve: 64 points x 4. Each pass: 16 lines in 8 blocks of 2; per
        // block 2 x 4 x 2 copy-in, 2 passes x 2 pairs x (2 x 4 + 1 root),
        // 2 x 4 x 2 copy-out: 16 + 36 + 16 = 68.
        let all = thread("ft", &small(1, 2), 1, 0, 1);
        assert_eq!(all.len(), 64 * 4 + 3 * 8 * 68);
    }

    #[test]
    fn butterflies_pair_the_elements_of_each_pass() {
        // One line of 8 (block 1) along x: scratch element l is at
        // SCRATCH' + 16 l. Pass 0 pairs (0,1), (2,3), ...; pass 1 (0,2),
        // (1,3), (4,6), (5,7); pass 2 (0,4), (1,5), (2,6), (3,7).
        let p = json!({"nx": 8, "ny": 2, "nz": 2, "fft_block": 1, "iterations": 1});
        let all = thread("ft", &p, 1, 0, 1);
        // Layout: grids of 32 points (512 bytes): u0, u1, u2, twiddle,
        // roots each a page apart, scratch at B + 5 pages.
        let scratch = B + 0x5000;
        let root_pc = all.iter().find(|a| a.addr.0 == B + 0x4000).expect("root 0 loaded").pc;
        // The x pass is the last: its first block is line (0, 0).
        let x_start = all.len() - 4 * (8 * 2 + 3 * 4 * 5 + 8 * 2);
        let bf = &all[x_start + 16..x_start + 16 + 60];
        let mut pairs = Vec::new();
        let mut roots = Vec::new();
        for chunk in bf.chunks(5) {
            assert_eq!(chunk[0].pc, root_pc);
            roots.push((chunk[0].addr.0 - (B + 0x4000)) / 16);
            let (a, c) = ((chunk[1].addr.0 - scratch) / 16, (chunk[2].addr.0 - scratch) / 16);
            assert_eq!((chunk[3].addr.0, chunk[4].addr.0), (chunk[1].addr.0, chunk[2].addr.0));
            assert_eq!((chunk[3].kind, chunk[4].kind), (AccessKind::Store, AccessKind::Store));
            pairs.push((a, c));
        }
        let expected = [(0, 1), (2, 3), (4, 5), (6, 7), (0, 2), (1, 3), (4, 6), (5, 7), (0, 4), (1, 5), (2, 6), (3, 7)];
        assert_eq!(pairs, expected);
        // Roots: w^0 in pass 0; w^0, w^2 in pass 1; w^0..w^3 in pass 2.
        assert_eq!(roots, [0, 0, 0, 0, 0, 2, 0, 2, 0, 1, 2, 3]);
    }

    /// Loads and stores of the grid `[base, base + 1024)` by every thread:
    /// per point, the threads that touched it.
    fn touches(streams: &[Vec<Access>], base: u64, kind: AccessKind, pc: Option<u64>) -> BTreeMap<u64, Vec<usize>> {
        let mut m: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
        for (t, s) in streams.iter().enumerate() {
            for a in s.iter().filter(|a| a.kind == kind && (base..base + 1024).contains(&a.addr.0)) {
                if pc.is_none_or(|pc| a.pc.0 == pc) {
                    m.entry((a.addr.0 - base) / 16).or_default().push(t);
                }
            }
        }
        m
    }

    #[test]
    fn each_pass_covers_every_point_once_and_the_z_pass_crosses_slabs() {
        let streams = threads("ft", &small(2, 2), 1);
        // u2 is written once per point, by the x pass, by the owner of the
        // point's plane k (planes 0-1 thread 0, 2-3 thread 1).
        let u2 = touches(&streams, U2, AccessKind::Store, None);
        assert_eq!(u2.len(), 64);
        for (point, who) in &u2 {
            assert_eq!(who, &vec![(point / 16 / 2) as usize]);
        }
        // u1 is loaded by three passes: each point 3 times.
        let u1 = touches(&streams, U1, AccessKind::Load, None);
        assert_eq!(u1.len(), 64);
        assert!(u1.values().all(|w| w.len() == 3));
        // The z pass (first copy-in site after the evolve's) splits j, not
        // k: thread 0 loads rows j = 0, 1 of every plane, including the
        // planes of thread 1.
        let z_pc =
            streams[0].iter().find(|a| (U1..U1 + 1024).contains(&a.addr.0) && a.kind == AccessKind::Load).unwrap().pc.0;
        let z = touches(&streams, U1, AccessKind::Load, Some(z_pc));
        assert_eq!(z.len(), 64);
        for (point, who) in &z {
            let j = point / 4 % 4;
            assert_eq!(who, &vec![(j / 2) as usize], "point {point}");
        }
        assert!(z.iter().any(|(p, w)| p / 16 >= 2 && w == &vec![0]));
        // Scratch buffers (4 x 2 complex: 128 bytes, a page each) are
        // private: each thread touches only its own.
        for (t, s) in streams.iter().enumerate() {
            for a in s.iter().filter(|a| a.addr.0 >= SCRATCH) {
                assert_eq!((a.addr.0 - SCRATCH) / 4096, t as u64);
            }
        }
    }

    #[test]
    fn ft_errors_name_the_key() {
        let w = |s: &str| format!("workload.params.{s}");
        let e = build_err_as("ft", json!({"nx": 6, "nz": 1, "fft_block": 0}), 0, 1);
        assert_eq!(e, [(w("nx"), "out_of_range"), (w("nz"), "out_of_range"), (w("fft_block"), "out_of_range")]);
        let e = build_err_as("ft", json!({"ny": 2, "threads": 4}), 0, 4);
        assert_eq!(e, [(w("threads"), "too_large")]);
    }
}
