//! Multithreaded shared-memory kernels: the NAS-parallel-style kernels of
//! the page-migration study (CG, MG, FT, IS, EP) and the memory-latency
//! micro-benchmark of the region-scheduling study.
//!
//! The synthetic generators draw addresses from distributions; these walk
//! the data structures of a real program in its loop order instead, so that
//! what a study measures (which thread touches which page first, how a
//! transpose moves ownership, how much of a slab stays in the cache between
//! phases) comes from the algorithm, not from a statistical imitation.
//!
//! **Threads.** A kernel is one process of `threads` threads; each thread is
//! one task, and its stream is its share of every phase, in program order.
//! A `[[tasks]]` entry with `count = T`, one `asid` and a kernel with
//! `threads = T` is such a process: copy `i` of the entry is thread `i`
//! ([`ThreadIndex`] in the [`WorkloadCtx`]). All threads lay the data out
//! at the same virtual addresses (they share the address space), and a
//! thread's private data (scratch buffers, per-thread counters) sits in its
//! own block of that address space. [`check_process`] rejects entries whose
//! `count` or `asid` does not describe such a process.
//!
//! **Barriers.** A kernel calls [`Out::barrier`] where a parallel loop of
//! the program ends, and the end of an iteration is one; the [`Driver`]
//! stops a fill at a barrier and reports it with the next
//! ([`Workload::barriers`]), and the engine holds a thread there until the
//! other threads of its process arrive (`engine/barriers.rs`). Every
//! thread meets the same barriers, its share of a phase empty or not.
//!
//! **Initialisation.** With `init = "parallel"` or `"serial"`, a thread
//! first writes its share (or, for thread 0, all) of the kernel's shared
//! arrays ([`Init`]), so that first-touch placement starts from the state
//! the program would leave; in the serial case the other threads spin on a
//! flag for a number of loads, then wait at the barrier that ends it.
//!
//! **Determinism.** Everything random (a matrix's columns, keys, random
//! numbers) is a hash of the run's seed, the kernel's kind and the index of
//! the element, never of the thread: every thread sees the same matrix, and
//! the same seed gives the same streams whatever the thread count.
//!
//! **Shape of a kernel.** A kernel implements [`Kernel`]: each call of
//! `step` appends the accesses of one iteration of its innermost loop to an
//! [`Out`] (at most [`STEP_MAX`]); the [`Driver`] copies them into the
//! engine's buffer and applies the length. Each static load or store of the
//! loop body is a [`Site`] with its own pc, size and instruction count, laid
//! out from `code_base` as the `loop` generator lays out its sites.

pub(crate) mod adi;
pub mod bt;
pub mod cg;
pub mod ep;
pub mod ft;
pub mod is;
pub mod latency;
pub mod lu;
pub mod mg;
pub mod sp;

use std::ops::Range;

use crate::error::{join_path, Issues, Result};
use crate::trace::synthetic::common::{check_regions, field_loc, Length, INSTRUCTION_BYTES};
use crate::trace::{ThreadIndex, Workload, WorkloadConfig, WorkloadCtx};
use crate::types::{Access, AccessKind, VirtAddr};
use crate::util::rng::{hash_str, mix64};

/// Most accesses one step of a kernel may emit.
pub(crate) const STEP_MAX: usize = 16;
/// Arrays are placed at multiples of this from `base_addr`, as an allocator
/// places large blocks.
pub(crate) const ALIGN_BYTES: u64 = 4096;

/// Declares a kernel's params struct: its own fields with their defaults,
/// then the fields every kernel has, and `class` (see [`NasClass`]). A
/// macro instead of `#[serde(flatten)]`, which would stop
/// `deny_unknown_fields` from rejecting unknown keys. The struct reads
/// through a twin (`raw`) whose fields are all optional, so that a class's
/// sizes apply exactly to the keys a config leaves out. Its kernel
/// implements [`NasSized`].
macro_rules! kernel_params {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                pub $field:ident : $ty:ty = $default:expr,
            )*
        }
    ) => {
        $crate::trace::kernels::kernel_params! {
            @with_common $(#[$meta])* $name {
                $($(#[$fmeta])* $field: $ty = $default,)*
                /// Threads of the process (default 1). Above 1, the kernel runs
                /// as the `count = threads` copies of one `[[tasks]]` entry with
                /// one `asid`; copy `i` is thread `i`.
                threads: u32 = 1,
                /// Accesses of each thread's stream (default 1,000,000). Ignored
                /// when nested in `phases` or `mix`.
                accesses: u64 = $crate::trace::synthetic::common::DEFAULT_ACCESSES,
                /// Iterations of the kernel's main loop after which the stream
                /// ends, if it has not reached `accesses` before (default 0:
                /// repeat until `accesses`).
                iterations: u64 = 0,
                /// First byte of the data (default 0x10_0000_0000).
                base_addr: u64 = $crate::trace::synthetic::common::DEFAULT_BASE_ADDR,
                /// First byte of the loop bodies' code, which gives the pcs
                /// (default 0x40_0000; a multiple of 4).
                code_base: u64 = $crate::trace::synthetic::common::DEFAULT_CODE_BASE,
                /// How the shared data is written before the first iteration:
                /// `"none"` (default: first touched by the first phase that
                /// uses it), `"parallel"` (each thread its share of every
                /// array) or `"serial"` (thread 0 writes everything while the
                /// others wait).
                init: $crate::trace::kernels::InitMode = $crate::trace::kernels::InitMode::None,
                /// With `init = "serial"`, spin loads each waiting thread makes
                /// per store of thread 0's initialisation (default 0: they wait
                /// at the barrier that ends it), as a runtime spins before it
                /// blocks.
                init_spin: u32 = 0,
            }
        }
    };
    (
        @with_common $(#[$meta:meta])* $name:ident {
            $($(#[$fmeta:meta])* $field:ident : $ty:ty = $default:expr,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, ::serde::Serialize)]
        pub struct $name {
            $(
                $(#[$fmeta])*
                pub $field: $ty,
            )*
            /// The NAS class whose sizes and iterations the kernel takes
            /// for the keys the config leaves out (default none).
            #[serde(skip_serializing_if = "Option::is_none")]
            pub class: Option<$crate::trace::kernels::NasClass>,
        }

        impl Default for $name {
            fn default() -> Self {
                $name { $($field: $default,)* class: None }
            }
        }

        /// The params as a config gives them: every key optional.
        mod raw {
            #[allow(unused_imports)]
            use super::*;

            #[derive(::serde::Deserialize)]
            #[serde(deny_unknown_fields)]
            pub(super) struct $name {
                $(#[serde(default)] pub(super) $field: Option<$ty>,)*
                #[serde(default)] pub(super) class: Option<$crate::trace::kernels::ClassOf<super::$name>>,
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {
                let raw = <raw::$name as ::serde::Deserialize>::deserialize(d)?;
                let mut p = $name::default();
                if let Some(class) = raw.class {
                    p.class = Some(class.0);
                    $crate::trace::kernels::NasSized::take_class(&mut p, class.0);
                }
                $(if let Some(v) = raw.$field { p.$field = v; })*
                Ok(p)
            }
        }

        impl $name {
            /// The fields every kernel has.
            pub(crate) fn common(&self) -> $crate::trace::kernels::Common {
                $crate::trace::kernels::Common {
                    threads: self.threads,
                    accesses: self.accesses,
                    iterations: self.iterations,
                    base_addr: self.base_addr,
                    code_base: self.code_base,
                    init: self.init,
                    init_spin: self.init_spin,
                }
            }

            /// Validate and build the kernel with its own length.
            pub fn build(&self, ctx: &$crate::trace::WorkloadCtx) -> $crate::error::Result<Box<dyn $crate::trace::Workload>> {
                self.build_with(ctx, $crate::trace::synthetic::common::Length::Own)
            }
        }
    };
}
pub(crate) use kernel_params;

/// A problem class of the NAS Parallel Benchmarks: the sizes and
/// iterations NPB 3.3's `sys/setparams.c` (and IS's `is.c`) give each
/// benchmark, as `class = "S" | "W" | "A" | "B" | "C"` sets them on the
/// kernel of the same name ([`NasSized`]). Classes D and E need hundreds of
/// GiB and are left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum NasClass {
    S,
    W,
    A,
    B,
    C,
}

impl NasClass {
    /// Its position in S, W, A, B, C (for the kernels' tables).
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A kernel that NAS defines problem classes for.
pub trait NasSized {
    /// The NPB benchmark it is, `None` if it is not one of NAS's.
    const NAS: Option<&'static str>;

    /// Set the sizes and iterations of `class` (a kernel without classes
    /// never gets one: [`ClassOf`] refuses it).
    fn take_class(&mut self, class: NasClass);
}

/// A `class` key, refused with a clear message for a kernel NAS does not define.
pub struct ClassOf<K>(pub NasClass, std::marker::PhantomData<K>);

impl<'de, K: NasSized> serde::Deserialize<'de> for ClassOf<K> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let class = <NasClass as serde::Deserialize>::deserialize(d)?;
        match K::NAS {
            Some(_) => Ok(ClassOf(class, std::marker::PhantomData)),
            None => {
                Err(serde::de::Error::custom("this kernel is not one of the NAS Parallel Benchmarks: it has no class"))
            }
        }
    }
}

/// The fields every kernel has (see `kernel_params!`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Common {
    pub threads: u32,
    pub accesses: u64,
    pub iterations: u64,
    pub base_addr: u64,
    pub code_base: u64,
    pub init: InitMode,
    pub init_spin: u32,
}

/// How a kernel's shared data is first written (see `kernel_params!`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InitMode {
    /// No initialisation: the first phase that uses the data touches it first.
    #[default]
    None,
    /// Each thread writes its static share of every shared array.
    Parallel,
    /// Thread 0 writes every shared array; the others spin on a flag.
    Serial,
}

/// An array a kernel's initialisation writes: its address, the bytes
/// written per element and the distance between elements, the number of
/// elements, and the thread that owns it if it is private (a parallel
/// initialisation has its owner write all of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shared {
    pub addr: u64,
    pub elem: u16,
    pub stride: u64,
    pub n: u64,
    pub owner: Option<u32>,
}

/// Instructions per store of the initialisation loops, and per spin load.
const INIT_STORE_INSTRS: u32 = 2;
const SPIN_INSTRS: u32 = 4;

impl Common {
    /// Record every problem with the common fields; return the thread
    /// this kernel is in its process and its initialisation. `layout` holds
    /// the kernel's data (the flag of a serial initialisation is placed
    /// after it), `code_bytes` is the size of its loop bodies (the
    /// initialisation's code follows them) and `shared` the arrays the
    /// initialisation writes, in order.
    #[allow(clippy::too_many_arguments)]
    pub fn validate(
        &self,
        kind: &str,
        ctx: &WorkloadCtx,
        length: Length,
        layout: &mut Layout,
        code_bytes: u64,
        shared: &[Shared],
        issues: &mut Issues,
    ) -> (ThreadIndex, Init) {
        let at = |field: &str| field_loc(&ctx.loc, field);
        if length == Length::Own {
            issues.check(self.accesses >= 1, at("accesses"), "out_of_range", "accesses must be at least 1");
        }
        let thread = match thread_of(kind, self.threads, ctx.thread) {
            Ok(t) => t,
            Err((code, message)) => {
                issues.push(at("threads"), code, message);
                ThreadIndex::SINGLE
            }
        };
        let flag = if self.init == InitMode::Serial { layout.place(64) } else { 0 };
        let init_code = match self.init {
            InitMode::None => 0,
            _ => INSTRUCTION_BYTES * (INIT_STORE_INSTRS as u64 * shared.len() as u64 + SPIN_INSTRS as u64),
        };
        check_regions(&ctx.loc, self.code_base, Some(code_bytes + init_code), self.base_addr, layout.bytes(), issues);
        let init = Init::new(self, thread, shared, self.code_base.wrapping_add(code_bytes), flag);
        (thread, init)
    }
}

/// The thread a kernel of `threads` threads is when built as `ctx`: with
/// `threads = 1` always thread 0 of 1 (copies of the entry are independent
/// processes); otherwise the copy index, which requires as many copies as
/// threads. On a mismatch, the error code and message.
fn thread_of(kind: &str, threads: u32, ctx: ThreadIndex) -> std::result::Result<ThreadIndex, (&'static str, String)> {
    if threads == 0 {
        return Err(("out_of_range", "threads must be at least 1".into()));
    }
    if threads == 1 {
        return Ok(ThreadIndex::SINGLE);
    }
    if ctx.count != threads {
        return Err((
            "mismatch",
            format!(
                "{kind} has threads = {threads} but runs as one of {} task(s): give its [[tasks]] entry count = {threads} and one asid (one task per thread)",
                ctx.count
            ),
        ));
    }
    Ok(ctx)
}

/// The `threads` of a kernel config; `None` for other workloads.
pub fn threads_of(config: &WorkloadConfig) -> Option<u32> {
    Some(match config {
        WorkloadConfig::Cg(p) => p.threads,
        WorkloadConfig::Mg(p) => p.threads,
        WorkloadConfig::Ft(p) => p.threads,
        WorkloadConfig::Is(p) => p.threads,
        WorkloadConfig::Ep(p) => p.threads,
        WorkloadConfig::Bt(p) => p.threads,
        WorkloadConfig::Sp(p) => p.threads,
        WorkloadConfig::Lu(p) => p.threads,
        WorkloadConfig::Latency(p) => p.threads,
        _ => return None,
    })
}

/// Check that a task entry at `at` (`workload` for a single `[workload]`
/// table, else `tasks[i]`) running `config` describes a process of the
/// kernel's threads: `count = threads` copies sharing one `asid`. A kernel of
/// one thread may run as any number of independent copies, each with its own
/// address space. Does nothing for other workloads.
pub fn check_process(config: &WorkloadConfig, count: u32, asid: Option<u32>, at: &str, issues: &mut Issues) {
    let Some(threads) = threads_of(config) else {
        return;
    };
    let kind = config.kind();
    let single = at == "workload";
    let key = if single { join_path(at, "params.threads") } else { join_path(at, "workload.params.threads") };
    if threads == 0 {
        issues.push(key, "out_of_range", "threads must be at least 1");
        return;
    }
    if single {
        issues.check(
            threads == 1,
            key,
            "mismatch",
            format!(
                "a [workload] table runs one task: run the {threads} threads of {kind} as a [[tasks]] entry with count = {threads} and one asid"
            ),
        );
        return;
    }
    match (threads, asid) {
        (1, None) => {}
        (1, Some(a)) if count > 1 => issues.push(
            key,
            "mismatch",
            format!(
                "the {count} copies of this entry share asid {a}, so they are threads of one process, but {kind} has threads = 1: set threads = {count}, or drop asid to run {count} independent single-threaded processes"
            ),
        ),
        (t, _) if t != count => issues.push(
            key,
            "mismatch",
            format!(
                "{kind} has threads = {t} but its entry has count = {count}: give the entry count = {t} (one task per thread) and one asid"
            ),
        ),
        (t, None) if t > 1 => issues.push(
            join_path(at, "asid"),
            "missing_field",
            format!("the {t} threads of {kind} share one address space: give this entry an asid"),
        ),
        _ => {}
    }
}

/// One static memory instruction of a loop body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Site {
    /// Its address: that of the last of its `instrs` instructions.
    pub pc: u64,
    /// Instructions retired from the previous site's access to this one,
    /// counting this one.
    pub instrs: u32,
    /// Bytes it references.
    pub size: u16,
    /// Load or store.
    pub kind: AccessKind,
}

/// A site of a kernel's table: kind, access bytes, instructions.
pub(crate) type SiteSpec = (AccessKind, u16, u32);
/// Shorthands for site tables.
pub(crate) const L: AccessKind = AccessKind::Load;
/// See [`L`].
pub(crate) const S: AccessKind = AccessKind::Store;

/// Lay the sites of `table` out in order from `code_base`, 4 bytes per
/// instruction: site `i`'s pc is `code_base + 4 * (instrs_0 + ... + instrs_i - 1)`.
/// Returns the sites and the bytes of code.
pub(crate) fn lay_out_sites<const N: usize>(code_base: u64, table: &[SiteSpec; N]) -> ([Site; N], u64) {
    let mut at = 0u64;
    let sites = table.map(|(kind, size, instrs)| {
        at += instrs as u64;
        Site { pc: code_base.wrapping_add(INSTRUCTION_BYTES * (at - 1)), instrs, size, kind }
    });
    (sites, at * INSTRUCTION_BYTES)
}

/// The accesses of one step, and the barriers that follow them.
pub(crate) struct Out {
    buf: [Access; STEP_MAX],
    len: usize,
    barriers: u64,
}

impl Out {
    fn new() -> Out {
        Out { buf: [Access::default(); STEP_MAX], len: 0, barriers: 0 }
    }

    /// This step ends a parallel phase: every thread waits for the others
    /// after its accesses (the implicit barrier of an OpenMP work-sharing
    /// loop). A step that ends several phases calls it once for each.
    #[inline]
    pub fn barrier(&mut self) {
        self.barriers += 1;
    }

    /// Append an access of `site` at `addr`.
    #[inline(always)]
    pub fn put(&mut self, site: &Site, addr: u64) {
        self.buf[self.len] = Access {
            addr: VirtAddr(addr),
            pc: VirtAddr(site.pc),
            instrs: site.instrs,
            size: site.size,
            kind: site.kind,
        };
        self.len += 1;
    }
}

/// One thread of a kernel, advanced one innermost-loop iteration at a time.
pub(crate) trait Kernel: Send + 'static {
    /// Append the accesses of the next step (at most [`STEP_MAX`], possibly
    /// none) to `out`, and call [`Out::barrier`] when the step ends a
    /// parallel phase. Returns true when this step ended an iteration of
    /// the kernel's main loop (which is a barrier too); the next call
    /// starts the next iteration. Every thread must meet the same
    /// barriers, its share of a phase empty or not.
    fn step(&mut self, out: &mut Out) -> bool;

    /// Whether the threads meet at barriers (false: they run on their own).
    const BARRIERS: bool = true;
}

/// The initialisation a thread runs before the first iteration: stores
/// over its part of each shared array, or spin loads on the flag.
pub(crate) struct Init {
    /// (store site, first address, bytes between elements, elements to write).
    arrays: Vec<(Site, u64, u64, std::ops::Range<u64>)>,
    array: usize,
    spin: Site,
    flag: u64,
    spins: u64,
    /// Whether a barrier ends it (any `init` but `"none"`).
    barrier: bool,
}

impl Init {
    /// The initialisation of `thread` under `common.init`; its code starts
    /// at `code` (after the kernel's).
    fn new(common: &Common, thread: ThreadIndex, shared: &[Shared], code: u64, flag: u64) -> Init {
        let mut pc = code;
        let mut site = |kind: AccessKind, size: u16, instrs: u32| {
            pc = pc.wrapping_add(INSTRUCTION_BYTES * instrs as u64);
            Site { pc: pc.wrapping_sub(INSTRUCTION_BYTES), instrs, size, kind }
        };
        let stores: Vec<Site> = shared.iter().map(|a| site(AccessKind::Store, a.elem, INIT_STORE_INSTRS)).collect();
        let spin = site(AccessKind::Load, 8, SPIN_INSTRS);
        let barrier = common.init != InitMode::None;
        let mut init = Init { arrays: Vec::new(), array: 0, spin, flag, spins: 0, barrier };
        let (t, count) = (thread.index, thread.count);
        for (a, store) in shared.iter().zip(stores) {
            let part = match common.init {
                InitMode::None => continue,
                InitMode::Parallel => match a.owner {
                    None => share(a.n, t, count),
                    Some(o) if o == t => 0..a.n,
                    Some(_) => continue,
                },
                InitMode::Serial if t == 0 => 0..a.n,
                InitMode::Serial => {
                    init.spins = init.spins.saturating_add(a.n.saturating_mul(common.init_spin as u64));
                    continue;
                }
            };
            init.arrays.push((store, a.addr, a.stride, part));
        }
        init
    }

    /// Append the next initialisation accesses; false once it is over.
    fn step(&mut self, out: &mut Out) -> bool {
        while let Some((site, base, stride, part)) = self.arrays.get_mut(self.array) {
            if part.is_empty() {
                self.array += 1;
                continue;
            }
            let end = part.end.min(part.start + STEP_MAX as u64);
            for i in part.start..end {
                out.put(site, *base + *stride * i);
            }
            part.start = end;
            return true;
        }
        if self.spins > 0 {
            let n = self.spins.min(STEP_MAX as u64);
            for _ in 0..n {
                out.put(&self.spin, self.flag);
            }
            self.spins -= n;
            return true;
        }
        false
    }
}

/// Drives a [`Kernel`]: copies its steps into the caller's buffers and
/// stops after `accesses` (or `iterations`). A thread whose iteration makes
/// no access at all (it has no share of any phase) ends at once.
pub(crate) struct Driver<K: Kernel> {
    kernel: K,
    init: Option<Init>,
    out: Out,
    pos: usize,
    remaining: u64,
    total: Option<u64>,
    iterations_left: u64,
    active: bool,
    done: bool,
    /// Threads that meet at barriers: barriers only above 1.
    threads: u32,
    /// Barriers met after the last access handed out, reported with the next fill.
    pending: u64,
    /// Barriers before the first access of the last fill.
    crossed: u64,
}

impl<K: Kernel> Workload for Driver<K> {
    fn fill(&mut self, buf: &mut [Access]) -> Result<usize> {
        let want = (buf.len() as u64).min(self.remaining) as usize;
        let sync = self.threads > 1;
        self.crossed = std::mem::take(&mut self.pending);
        let mut n = 0;
        while n < want {
            if self.pos == self.out.len {
                let met = std::mem::take(&mut self.out.barriers);
                if sync && met > 0 {
                    // The accesses after a barrier go in the next fill.
                    if n > 0 {
                        self.pending += met;
                        break;
                    }
                    self.crossed += met;
                }
                if self.done {
                    break;
                }
                self.out.len = 0;
                self.pos = 0;
                if let Some(init) = &mut self.init {
                    if init.step(&mut self.out) {
                        continue;
                    }
                    // An initialisation ends with a barrier (the spin loads
                    // before it are the runtime spinning before it blocks).
                    self.out.barriers = init.barrier as u64;
                    self.init = None;
                    continue;
                }
                let ended = self.kernel.step(&mut self.out);
                self.active |= self.out.len > 0;
                if ended {
                    // The end of an iteration is a barrier, if the step did not already end a phase.
                    self.out.barriers = self.out.barriers.max(1);
                    self.iterations_left -= 1;
                    self.done = !self.active || self.iterations_left == 0;
                    self.active = false;
                }
                continue;
            }
            let k = (want - n).min(self.out.len - self.pos);
            buf[n..n + k].copy_from_slice(&self.out.buf[self.pos..self.pos + k]);
            n += k;
            self.pos += k;
        }
        if self.total.is_some() {
            self.remaining -= n as u64;
        }
        Ok(n)
    }

    fn len_hint(&self) -> Option<u64> {
        self.total
    }

    fn synchronizes(&self) -> bool {
        self.threads > 1
    }

    fn barriers(&self) -> u64 {
        self.crossed
    }
}

/// Box a validated kernel with its driver.
pub(crate) fn drive<K: Kernel>(kernel: K, init: Init, common: &Common, length: Length) -> Box<dyn Workload> {
    let (remaining, total) = match length {
        Length::Own => (common.accesses, Some(common.accesses)),
        Length::Unbounded => (u64::MAX, None),
    };
    let iterations_left = if common.iterations == 0 { u64::MAX } else { common.iterations };
    Box::new(Driver {
        kernel,
        init: Some(init),
        out: Out::new(),
        pos: 0,
        remaining,
        total,
        iterations_left,
        active: false,
        done: false,
        threads: if K::BARRIERS { common.threads } else { 1 },
        pending: 0,
        crossed: 0,
    })
}

/// Places arrays one after another from a base address, each at the next
/// multiple of [`ALIGN_BYTES`] from the base. Sizes are checked: a layout
/// that does not fit in 64 bits reports `None` from [`Layout::bytes`].
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    base: u64,
    end: Option<u64>,
}

impl Layout {
    /// An empty layout from `base`.
    pub fn new(base: u64) -> Layout {
        Layout { base, end: Some(0) }
    }

    /// Place an array of `bytes` and return its address.
    pub fn place(&mut self, bytes: u64) -> u64 {
        let at = self.end.and_then(|e| e.checked_next_multiple_of(ALIGN_BYTES));
        self.end = at.and_then(|a| a.checked_add(bytes));
        self.base.wrapping_add(at.unwrap_or(0))
    }

    /// Place `copies` arrays of `bytes` each, one per thread, and return
    /// the address of the first and the distance between copies.
    pub fn place_per_thread(&mut self, bytes: u64, copies: u32) -> (u64, u64) {
        let stride = bytes.checked_next_multiple_of(ALIGN_BYTES).unwrap_or(u64::MAX);
        let first = self.place(stride.saturating_mul(copies as u64));
        (first, stride)
    }

    /// Bytes from the base to the end of the last array.
    pub fn bytes(&self) -> Option<u64> {
        self.end
    }
}

/// Thread `t`'s share of `n` iterations split among `threads` as OpenMP's
/// static schedule does (libgomp): contiguous blocks, the first `n mod
/// threads` threads one iteration more.
pub(crate) fn share(n: u64, t: u32, threads: u32) -> Range<u64> {
    let (t, threads) = (t as u64, threads as u64);
    let (q, r) = (n / threads, n % threads);
    let start = t * q + t.min(r);
    start..start + q + (t < r) as u64
}

/// Record a problem unless each of `threads` threads gets at least one of
/// the `n` units of work (`what`, e.g. rows) the kernel splits among them
/// (`n = 0` is the kernel's own error).
pub(crate) fn check_work(n: u64, threads: u32, loc: &str, what: &str, issues: &mut Issues) {
    issues.check(
        n == 0 || threads as u64 <= n,
        loc,
        "too_large",
        format!("threads = {threads} exceeds the {n} {what} split among them: a thread would have no work"),
    );
}

/// The key of a kernel's random draws: a function of the seed and the
/// kernel's kind only, so that all its threads draw the same values.
pub(crate) fn draw_key(seed: u64, kind: &str) -> u64 {
    mix64(seed ^ hash_str(&format!("kernels/{kind}")).rotate_left(17))
}

/// The `i`-th random 64-bit value under `key`.
#[inline(always)]
pub(crate) fn draw(key: u64, i: u64) -> u64 {
    mix64(key ^ mix64(i.wrapping_add(0x9E37_79B9_7F4A_7C15)))
}

/// Helpers for the kernels' tests.
#[cfg(test)]
pub(crate) mod testutil {
    use crate::error::{Error, Result};
    use crate::plugin::PluginConfig;
    use crate::trace::{ThreadIndex, Workload, WorkloadConfig, WorkloadCtx};
    use crate::types::Access;

    /// Build `kind` with `params` as thread `index` of `count`.
    pub fn try_thread(
        kind: &str,
        params: serde_json::Value,
        seed: u64,
        index: u32,
        count: u32,
    ) -> Result<Box<dyn Workload>> {
        let raw = PluginConfig { kind: kind.to_string(), params };
        let ctx = WorkloadCtx {
            seed,
            component: format!("task{index}"),
            loc: "workload".into(),
            base_dir: None,
            thread: ThreadIndex { index, count },
        };
        WorkloadConfig::parse(&raw, "workload")?.build(&ctx)
    }

    /// Every access of thread `index` of `count` (the params must bound
    /// the stream, with `accesses` or `iterations`).
    pub fn thread(kind: &str, params: &serde_json::Value, seed: u64, index: u32, count: u32) -> Vec<Access> {
        let mut w = try_thread(kind, params.clone(), seed, index, count).unwrap_or_else(|e| panic!("{kind}: {e}"));
        crate::trace::collect(&mut *w).expect("fill")
    }

    /// The streams of every thread of a `threads`-thread process.
    pub fn threads(kind: &str, params: &serde_json::Value, seed: u64) -> Vec<Vec<Access>> {
        let count = params["threads"].as_u64().unwrap_or(1) as u32;
        (0..count).map(|t| thread(kind, params, seed, t, count)).collect()
    }

    /// The (location, code) of every issue of a build that must fail.
    pub fn build_err_as(kind: &str, params: serde_json::Value, index: u32, count: u32) -> Vec<(String, &'static str)> {
        match try_thread(kind, params, 42, index, count) {
            Ok(_) => panic!("{kind} built but should have failed"),
            Err(Error::Config(issues)) => issues.into_iter().map(|i| (i.loc, i.code)).collect(),
            Err(other) => panic!("not a config error: {other}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;
    use crate::config::tasks::{expand, TaskParams};
    use crate::plugin::PluginConfig;
    use serde_json::json;

    const KERNELS: [&str; 9] = ["cg", "mg", "ft", "is", "ep", "bt", "sp", "lu", "latency"];

    #[test]
    fn shares_are_openmp_static_blocks_covering_each_iteration_once() {
        // 10 over 4: 3, 3, 2, 2 (libgomp gives the remainder to the first).
        let blocks: Vec<Range<u64>> = (0..4).map(|t| share(10, t, 4)).collect();
        assert_eq!(blocks, [0..3, 3..6, 6..8, 8..10]);
        assert_eq!((0..3).map(|t| share(2, t, 3)).collect::<Vec<_>>(), [0..1, 1..2, 2..2]);
        for (n, threads) in [(0u64, 1u32), (1, 1), (7, 7), (1000, 3), (5, 8)] {
            let mut next = 0;
            for t in 0..threads {
                let r = share(n, t, threads);
                assert_eq!(r.start, next);
                next = r.end;
            }
            assert_eq!(next, n);
        }
    }

    #[test]
    fn layout_aligns_each_array_to_a_page_and_detects_overflow() {
        let mut l = Layout::new(0x1000_0010);
        assert_eq!(l.place(100), 0x1000_0010);
        assert_eq!(l.place(4096), 0x1000_1010);
        assert_eq!(l.place_per_thread(10, 3), (0x1000_2010, 4096));
        assert_eq!(l.bytes(), Some(0x2000 + 3 * 4096));
        l.place(u64::MAX - 10);
        assert_eq!(l.bytes(), None);
    }

    #[test]
    fn sites_are_laid_out_like_a_loop_body() {
        let (sites, bytes) = lay_out_sites(0x1000, &[(L, 8, 3), (S, 4, 2), (L, 8, 1)]);
        assert_eq!(sites.map(|s| s.pc), [0x1008, 0x1010, 0x1014]);
        assert_eq!(sites.map(|s| (s.kind, s.size, s.instrs)), [(L, 8, 3), (S, 4, 2), (L, 8, 1)]);
        assert_eq!(bytes, 24);
    }

    /// A kernel's params as `params` in a config give them.
    fn parsed(kind: &str, params: serde_json::Value) -> Result<serde_json::Value> {
        let raw = PluginConfig { kind: kind.into(), params };
        Ok(WorkloadConfig::parse(&raw, "workload")?.to_raw().params)
    }

    #[test]
    fn a_nas_class_sets_the_sizes_npb_gives_it_unless_a_key_says_otherwise() {
        // NPB 3.3's sys/setparams.c and IS's is.c, each key over classes S,
        // W, A, B, C; CG's entries per row are nonzer * (nonzer + 1) + 1 (see
        // the model of makea below) and its iterations 25 per outer one.
        type Column = (&'static str, [u64; 5]);
        let expected: [(&str, &[Column]); 8] = [
            (
                "cg",
                &[
                    ("rows", [1400, 7000, 14000, 75000, 150000]),
                    ("row_nonzeros", [57, 73, 133, 183, 241]),
                    ("iterations", [375, 375, 375, 1875, 1875]),
                ],
            ),
            ("mg", &[("grid", [32, 128, 256, 256, 512]), ("iterations", [4, 4, 4, 20, 20])]),
            (
                "ft",
                &[
                    ("nx", [64, 128, 256, 512, 512]),
                    ("ny", [64, 128, 256, 256, 512]),
                    ("nz", [64, 32, 128, 256, 512]),
                    ("iterations", [6, 6, 6, 20, 20]),
                ],
            ),
            (
                "is",
                &[
                    ("keys", [1 << 16, 1 << 20, 1 << 23, 1 << 25, 1 << 27]),
                    ("max_key", [1 << 11, 1 << 16, 1 << 19, 1 << 21, 1 << 23]),
                    ("buckets", [1 << 9, 1 << 10, 1 << 10, 1 << 10, 1 << 10]),
                    ("iterations", [10; 5]),
                ],
            ),
            (
                "ep",
                &[
                    ("pairs", [1 << 24, 1 << 25, 1 << 28, 1 << 30, 1 << 32]),
                    ("batch", [1 << 16; 5]),
                    ("iterations", [1; 5]),
                ],
            ),
            ("bt", &[("grid", [12, 24, 64, 102, 162]), ("iterations", [60, 200, 200, 200, 200])]),
            ("sp", &[("grid", [12, 36, 64, 102, 162]), ("iterations", [100, 400, 400, 400, 400])]),
            ("lu", &[("grid", [12, 33, 64, 102, 162]), ("iterations", [50, 300, 250, 250, 250])]),
        ];
        for (c, class) in ["S", "W", "A", "B", "C"].into_iter().enumerate() {
            for (kind, columns) in expected {
                let p = parsed(kind, json!({"class": class})).unwrap();
                for (key, values) in columns {
                    assert_eq!(p[key], json!(values[c]), "{kind} class {class}: {key}");
                }
                assert_eq!(p["class"], json!(class));
                // What the class does not size keeps its default.
                assert_eq!(p["threads"], json!(1));
            }
        }
        assert_eq!(parsed("ft", json!({"class": "C"})).unwrap()["fft_block"], json!(16));
        // An explicit key overrides its class, whatever the order of the keys.
        let p = parsed("cg", json!({"rows": 5000, "class": "B", "iterations": 3})).unwrap();
        assert_eq!(
            (p["rows"].clone(), p["row_nonzeros"].clone(), p["iterations"].clone()),
            (json!(5000), json!(183), json!(3))
        );
        // Without a class nothing changes, and none is written back.
        let p = parsed("cg", json!({})).unwrap();
        assert_eq!((p["rows"].clone(), p.get("class")), (json!(7000), None));
        // The written-back params read back to the same kernel.
        for kind in ["cg", "mg", "ft", "is", "ep", "bt", "sp", "lu"] {
            let p = parsed(kind, json!({"class": "A", "threads": 2})).unwrap();
            assert_eq!(parsed(kind, p.clone()).unwrap(), p, "{kind}");
        }
    }

    #[test]
    fn a_class_nas_does_not_define_is_refused_at_its_key() {
        let at = |kind: &str, params| match parsed(kind, params) {
            Err(crate::error::Error::Config(issues)) => (issues[0].loc.clone(), issues[0].message.clone()),
            other => panic!("{other:?}"),
        };
        let (loc, message) = at("latency", json!({"class": "A"}));
        assert_eq!(loc, "workload.params.class");
        assert!(message.contains("not one of the NAS Parallel Benchmarks"), "{message}");
        let (loc, message) = at("cg", json!({"class": "D"}));
        assert_eq!(loc, "workload.params.class");
        assert!(message.contains("`S`, `W`, `A`, `B`, `C`"), "{message}");
        let (loc, _) = at("mg", json!({"class": "S", "gird": 8}));
        assert_eq!(loc, "workload.params.gird");
    }

    /// The entries per row of NAS CG's `makea`, written plainly: for each
    /// row `i` a vector of `nonzer` random distinct positions and `i` itself,
    /// and the matrix the sum of their outer products, so that row `r` holds
    /// the union of the vectors that hold `r`. Returns the mean row length.
    fn makea_mean_row(n: usize, nonzer: usize, seed: u64) -> f64 {
        let mut rng = crate::util::rng::Rng::from_seed(seed);
        let mut holding: Vec<Vec<usize>> = vec![Vec::new(); n];
        let vectors: Vec<Vec<usize>> = (0..n)
            .map(|i| {
                let mut v = vec![i];
                while v.len() < nonzer + 1 {
                    let x = rng.below(n as u64) as usize;
                    if !v.contains(&x) {
                        v.push(x);
                    }
                }
                v
            })
            .collect();
        for (k, v) in vectors.iter().enumerate() {
            for &r in v {
                holding[r].push(k);
            }
        }
        let rows = holding.iter().map(|ks| {
            let mut cols: Vec<usize> = ks.iter().flat_map(|&k| vectors[k].iter().copied()).collect();
            cols.sort_unstable();
            cols.dedup();
            cols.len()
        });
        rows.sum::<usize>() as f64 / n as f64
    }

    #[test]
    fn cg_classes_give_the_mean_row_length_of_nas_makea() {
        // Classes S and W in full; within 3% (a row's vectors meet in a
        // few columns more than the formula counts).
        for (class, n, nonzer) in [("S", 1400, 7), ("W", 7000, 8)] {
            let ours = parsed("cg", json!({"class": class})).unwrap()["row_nonzeros"].as_f64().unwrap();
            let nas = makea_mean_row(n, nonzer, 7);
            assert!((ours - nas).abs() / nas < 0.03, "class {class}: {ours} against makea's {nas:.1}");
        }
    }

    /// Small params of each kernel (one iteration takes a few thousand
    /// accesses per thread), for `threads` threads.
    fn small(kind: &str, threads: u32) -> serde_json::Value {
        let mut p = match kind {
            "cg" => json!({"rows": 200, "row_nonzeros": 8}),
            "mg" => json!({"grid": 8}),
            "ft" => json!({"nx": 8, "ny": 8, "nz": 8, "fft_block": 4}),
            "is" => json!({"keys": 4096, "max_key": 1024, "buckets": 16}),
            "ep" => json!({"pairs": 4096, "batch": 256}),
            "bt" | "sp" | "lu" => json!({"grid": 6}),
            "latency" => json!({"region_bytes": "16KiB", "visit_accesses": 512, "shared": true}),
            _ => unreachable!(),
        };
        p["threads"] = json!(threads);
        p["iterations"] = json!(1);
        p
    }

    #[test]
    fn every_kernel_is_registered_and_its_threads_share_the_data() {
        for kind in KERNELS {
            assert!(WorkloadConfig::NAMES.contains(&kind), "{kind}");
            // Two threads of one process: their data addresses overlap (they
            // share arrays), and each makes some accesses.
            let all = threads(kind, &small(kind, 2), 1);
            let pages = |a: &[Access]| a.iter().map(|x| x.addr.0 >> 12).collect::<std::collections::BTreeSet<_>>();
            assert!(all.iter().all(|s| !s.is_empty()), "{kind}");
            assert!(!pages(&all[0]).is_disjoint(&pages(&all[1])), "{kind}: threads share no page");
            assert!(all[0].iter().all(|a| a.kind != AccessKind::Ifetch && a.instrs >= 1), "{kind}");
            // Lengths are exact with the default sizes.
            let p = json!({"threads": 2, "accesses": 30_000});
            assert!(threads(kind, &p, 1).iter().all(|s| s.len() == 30_000), "{kind}");
        }
    }

    #[test]
    fn every_kernel_is_deterministic() {
        for kind in KERNELS {
            let p = small(kind, 3);
            let a = thread(kind, &p, 7, 1, 3);
            assert!(a == thread(kind, &p, 7, 1, 3), "{kind}");
            // Other threads do other work.
            assert!(a != thread(kind, &p, 7, 2, 3), "{kind}");
        }
    }

    #[test]
    fn defaults_round_trip_through_the_raw_form() {
        for kind in KERNELS {
            let typed = WorkloadConfig::parse(&PluginConfig::named(kind), "workload").unwrap();
            assert_eq!(typed, WorkloadConfig::parse(&typed.to_raw(), "workload").unwrap(), "{kind}");
            let p = json!({"init": "serial", "threads": 2});
            let raw = PluginConfig { kind: kind.into(), params: p };
            let typed = WorkloadConfig::parse(&raw, "workload").unwrap();
            assert_eq!(typed.to_raw().params["init"], "serial");
            assert_eq!(threads_of(&typed), Some(2));
        }
    }

    #[test]
    fn thread_count_mismatches_name_the_key() {
        for kind in KERNELS {
            let e = build_err_as(kind, json!({"threads": 4}), 0, 2);
            assert_eq!(e, [("workload.params.threads".into(), "mismatch")], "{kind}");
            let e = build_err_as(kind, json!({"threads": 0}), 0, 1);
            assert_eq!(e, [("workload.params.threads".into(), "out_of_range")], "{kind}");
            let e = build_err_as(kind, json!({"code_base": 2}), 0, 1);
            assert_eq!(e, [("workload.params.code_base".into(), "not_multiple")], "{kind}");
            let e = build_err_as(kind, json!({"base_addr": u64::MAX - 4096}), 0, 1);
            assert_eq!(e, [("workload.params.base_addr".into(), "overflow")], "{kind}");
            let e = build_err_as(kind, json!({"base_addr": 0x40_0000 - 64}), 0, 1);
            assert_eq!(e, [("workload.params.code_base".into(), "overlap")], "{kind}");
            // One thread: any copy of an entry is its own process.
            assert!(try_thread(kind, json!({}), 1, 3, 4).is_ok(), "{kind}");
        }
    }

    /// CG with 200 rows of 8 entries: its arrays' (address, element bytes,
    /// elements) by hand. rowptr 804 bytes, colidx 6400 (2 pages), values
    /// 12800 (4 pages), p, q, z, r 1600 each; the flag follows r.
    const CG_ARRAYS: [(u64, u64, u64); 7] = [
        (B, 4, 201),
        (B + 0x1000, 4, 1600),
        (B + 0x3000, 8, 1600),
        (B + 0x7000, 8, 200),
        (B + 0x8000, 8, 200),
        (B + 0x9000, 8, 200),
        (B + 0xA000, 8, 200),
    ];
    const B: u64 = 0x10_0000_0000;
    /// The CG loop bodies take 37 instructions; the initialisation's code
    /// follows them.
    const INIT_CODE: u64 = 0x40_0000 + 4 * 37;

    fn cg_init(init: &str) -> serde_json::Value {
        json!({"rows": 200, "row_nonzeros": 8, "threads": 3, "iterations": 1, "init": init})
    }

    #[test]
    fn a_parallel_initialisation_writes_each_element_once_by_its_owner() {
        let plain = threads("cg", &cg_init("none"), 1);
        let init = threads("cg", &cg_init("parallel"), 1);
        let mut written: std::collections::BTreeMap<u64, usize> = std::collections::BTreeMap::new();
        for (t, s) in init.iter().enumerate() {
            let n = s.iter().take_while(|a| a.pc.0 >= INIT_CODE).count();
            assert!(s[..n].iter().all(|a| a.kind == AccessKind::Store));
            for a in &s[..n] {
                assert!(written.insert(a.addr.0, t).is_none(), "{:#x} written twice", a.addr.0);
            }
            // Then the kernel, exactly as without the initialisation.
            assert!(s[n..] == plain[t][..], "thread {t}");
        }
        let mut expected = std::collections::BTreeMap::new();
        for (i, (base, elem, n)) in CG_ARRAYS.iter().enumerate() {
            for e in 0..*n {
                // Rows 0-66, 67-133, 134-199 (and rowptr 201, colidx and
                // values 1600 entries split the same way).
                let t = share_owner(*n, e, 3);
                expected.insert(base + elem * e, t);
                assert_eq!(written.get(&(base + elem * e)), Some(&t), "array {i} element {e}");
            }
        }
        assert_eq!(written, expected);
    }

    /// The thread whose static share of `n` holds `e`.
    fn share_owner(n: u64, e: u64, threads: u32) -> usize {
        (0..threads).position(|t| share(n, t, threads).contains(&e)).unwrap()
    }

    #[test]
    fn a_serial_initialisation_is_thread_0s_while_the_others_spin() {
        let plain = threads("cg", &cg_init("none"), 1);
        let mut spinning = cg_init("serial");
        spinning["init_spin"] = json!(8);
        let init = threads("cg", &spinning, 1);
        let total: u64 = CG_ARRAYS.iter().map(|a| a.2).sum();
        let flag = B + 0xB000;
        // Thread 0 stores every element, in array order.
        let n = init[0].len() - plain[0].len();
        let stores: Vec<u64> = init[0][..n].iter().map(|a| a.addr.0).collect();
        let expected: Vec<u64> = CG_ARRAYS.iter().flat_map(|&(b, e, n)| (0..n).map(move |i| b + e * i)).collect();
        assert_eq!(stores, expected);
        assert_eq!(init[0][n..], plain[0][..]);
        // The others load the flag 8 times per store of thread 0, then run.
        for t in 1..3 {
            let spins = init[t].len() - plain[t].len();
            assert_eq!(spins as u64, 8 * total);
            assert!(init[t][..spins].iter().all(|a| a.addr.0 == flag && a.kind == AccessKind::Load));
            assert_eq!(init[t][spins..], plain[t][..]);
        }
        // init_spin sets the spinning; by default the others only wait at the barrier.
        let mut p = cg_init("serial");
        p["init_spin"] = json!(2);
        assert_eq!(thread("cg", &p, 1, 1, 3).len() - plain[1].len(), 2 * total as usize);
        assert_eq!(thread("cg", &cg_init("serial"), 1, 1, 3), plain[1]);
    }

    #[test]
    fn private_arrays_are_initialised_by_their_owner() {
        // Private memlat regions: in parallel, each thread links its own
        // two regions (4 KiB of 64-byte nodes: 64 pointers each).
        let p = json!({"region_bytes": 4096, "threads": 2, "iterations": 1, "visit_accesses": 64, "init": "parallel"});
        for (t, s) in threads("latency", &p, 1).iter().enumerate() {
            let init: Vec<u64> = s.iter().filter(|a| a.kind == AccessKind::Store).map(|a| a.addr.0).collect();
            let mine = B + 2 * 4096 * t as u64;
            let expected: Vec<u64> = (0..128).map(|i| mine + 64 * i).collect();
            assert_eq!(init, expected);
        }
        let e = build_err_as("cg", json!({"init": "eager"}), 0, 1);
        assert_eq!(e, [("workload.params.init".into(), "unknown_variant")]);
    }

    #[test]
    fn a_kernel_nested_in_phases_is_the_same_thread() {
        // Thread 1 of 2 of MG inside a phase: the phase inherits the
        // thread, so its stream is the kernel's own.
        let direct = thread("mg", &json!({"grid": 8, "threads": 2, "accesses": 3000}), 4, 1, 2);
        let mg = json!({"kind": "mg", "params": {"grid": 8, "threads": 2}});
        let p = json!({"phases": [{"accesses": 3000, "workload": mg}]});
        let nested = thread("phases", &p, 4, 1, 2);
        assert!(nested == direct);
        assert!(nested != thread("mg", &json!({"grid": 8, "threads": 2, "accesses": 3000}), 4, 0, 2));
    }

    /// The issues of expanding one `[[tasks]]` entry.
    fn entry_issues(params: serde_json::Value, count: u32, asid: Option<u32>) -> Vec<(String, &'static str, String)> {
        let mut entries = vec![TaskParams {
            name: None,
            workload: PluginConfig { kind: "cg".into(), params },
            count,
            asid,
            vm: None,
            affinity: None,
            bind: None,
            max_accesses: None,
            requests: None,
            background: false,
            io: None,
        }];
        let mut issues = Issues::default();
        let specs = expand(&mut entries, "tasks", (1, 8, 3.0), &mut issues);
        match issues.finish() {
            Ok(()) => {
                // Copies are the threads, in order.
                let t: Vec<(u32, u32)> = specs.iter().map(|s| (s.thread.index, s.thread.count)).collect();
                assert_eq!(t, (0..count).map(|i| (i, count)).collect::<Vec<_>>());
                Vec::new()
            }
            Err(crate::error::Error::Config(v)) => v.into_iter().map(|i| (i.loc, i.code, i.message)).collect(),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn task_entries_must_describe_one_process_of_the_kernels_threads() {
        assert!(entry_issues(json!({"threads": 4}), 4, Some(3)).is_empty());
        assert!(entry_issues(json!({}), 4, None).is_empty()); // 4 independent processes
        let e = entry_issues(json!({"threads": 4}), 2, Some(3));
        assert_eq!((e[0].0.as_str(), e[0].1), ("tasks[0].workload.params.threads", "mismatch"));
        assert!(e[0].2.contains("count = 2"), "{}", e[0].2);
        let e = entry_issues(json!({"threads": 4}), 4, None);
        assert_eq!((e[0].0.as_str(), e[0].1), ("tasks[0].asid", "missing_field"));
        let e = entry_issues(json!({"threads": 0}), 1, None);
        assert_eq!((e[0].0.as_str(), e[0].1), ("tasks[0].workload.params.threads", "out_of_range"));
        let e = entry_issues(json!({}), 4, Some(3));
        assert_eq!((e[0].0.as_str(), e[0].1), ("tasks[0].workload.params.threads", "mismatch"));
        assert!(e[0].2.contains("share asid 3"), "{}", e[0].2);
        // A [workload] table is one task.
        let e = crate::config::from_value(json!({"workload": {"kind": "cg", "params": {"threads": 2}}}));
        let Err(crate::error::Error::Config(v)) = e else { panic!("accepted") };
        assert_eq!((v[0].loc.as_str(), v[0].code), ("workload.params.threads", "mismatch"));
    }
}
