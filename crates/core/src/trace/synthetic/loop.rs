//! `kind = "loop"`: the memory instructions of a loop body, run in program
//! order every iteration.
//!
//! Programs spend their time in loops, and a loop body is a fixed sequence of
//! static memory instructions, each with its own pc and its own address
//! pattern: one walks an array with a stride, another looks up a popular
//! entry of a table, and a fixed number of other instructions separate them.
//! The other generators draw each access on its own (`stream`, `uniform`,
//! `zipf`, `chase`) or interleave generators at random (`mix`), so they lack
//! that structure, which is what pc-indexed predictors (SHiP, stride
//! prefetchers keyed by pc) learn from and what makes real traces compress:
//! the default loop takes about 1.8 bytes per access in a `.cst` file, the
//! same data structures interleaved at random by a `mix` about twice that.
//!
//! The model: a list of *sites*, each one static load or store instruction.
//! An iteration visits the sites in order; a site is either a strided walk
//! over an array (`stream`) or a Zipf-popular element of a heap (`zipf`).
//! Arrays and heaps are declared once and placed without overlap in the data
//! region; several sites may name the same array (`a[i] += ...` is a load
//! and a store of one array) or the same heap (they then share its
//! popularity ranking). A site may be skipped by a branch in some
//! iterations (`skip_probability`) and may take a longer path before its
//! access (`long_path`), so that a trace is not perfectly periodic.
//!
//! Randomness comes only from seeded streams (`stream_rng`): per heap, the
//! permutation from popularity rank to element; per site, its own draws of
//! heap elements (`site<i>/addr`), of word offsets in them (`site<i>/word`)
//! and of its branches (`site<i>/branch`). The structure (pcs, instruction
//! counts, array walks) depends on the params alone.

use std::fmt;

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Issues, Result};
use crate::trace::{Workload, WorkloadCtx};
use crate::types::{Access, AccessKind, VirtAddr};
use crate::units::ByteSize;
use crate::util::perm::Permutation;
use crate::util::rng::Rng;

use super::common::{
    check_regions, field_loc, stream_rng, Length, DEFAULT_ACCESSES, DEFAULT_ACCESS_BYTES, DEFAULT_BASE_ADDR,
    DEFAULT_CODE_BASE, DEFAULT_WORKING_SET_BYTES, INSTRUCTION_BYTES,
};
use super::zipf::{ZipfSampler, HEAD_RANKS};

/// Arrays and heaps start at multiples of this from `base_addr` (a page, as
/// an allocator's `mmap` would place large blocks).
pub const REGION_ALIGN_BYTES: u64 = 4096;
/// Default instructions per site.
pub const DEFAULT_SITE_INSTRUCTIONS: u32 = 3;

/// Branch draws are 53-bit integers compared with fixed thresholds.
const FRACTION_ONE: u64 = 1 << 53;
/// Heaps hold fewer elements than this (the Zipf sampler's limit).
const MAX_HEAP_ELEMENTS: u64 = 1 << 63;

/// Parameters of `kind = "loop"`.
///
/// Each iteration runs `sites` in order; a site that is not skipped makes one
/// access. Site `i`'s pc is the address of the last of its `instructions`:
/// the loop body is laid out from `code_base` in 4-byte instructions, site 0's
/// first, so site `i`'s pc is
/// `code_base + 4 * (instructions_0 + ... + instructions_i - 1)`. Arrays, then
/// heaps, are placed from `base_addr` in list order, each starting at the next
/// multiple of [`REGION_ALIGN_BYTES`] (4 KiB) from `base_addr` after the
/// previous one.
///
/// Without `sites`, the default loop runs (see [`Default`](#impl-Default-for-LoopParams)),
/// over the default arrays and heaps unless those are given. With `sites`,
/// `arrays` and `heaps` default to none: only what the sites use is laid out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "RawLoopParams")]
pub struct LoopParams {
    /// Number of accesses in the stream (default 1,000,000); the stream may
    /// stop in the middle of an iteration. Ignored when nested in `phases` or
    /// `mix`, which set the length themselves.
    pub accesses: u64,
    /// First byte of the data region, where the first array (or heap) starts
    /// (default 0x10_0000_0000).
    pub base_addr: u64,
    /// First byte of the loop body's code (default 0x40_0000; a multiple of 4).
    pub code_base: u64,
    /// Arrays walked by `stream` sites (default: none if `sites` is given,
    /// else the default loop's 256MiB, 256MiB, 128MiB and 512MiB).
    pub arrays: Vec<Array>,
    /// Heaps of Zipf-popular elements used by `zipf` sites (default: none if
    /// `sites` is given, else the default loop's one of 64MiB in 64-byte
    /// elements, exponent 0.99).
    pub heaps: Vec<Heap>,
    /// The memory instructions of the loop body, in program order (default:
    /// eight sites alternating between the four arrays and the heap; see
    /// `docs/workloads.md`).
    pub sites: Vec<Site>,
}

/// [`LoopParams`] as written: `arrays` and `heaps` default differently
/// depending on whether `sites` is given.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct RawLoopParams {
    accesses: Option<u64>,
    base_addr: Option<u64>,
    code_base: Option<u64>,
    arrays: Option<Vec<Array>>,
    heaps: Option<Vec<Heap>>,
    sites: Option<Vec<Site>>,
}

impl From<RawLoopParams> for LoopParams {
    fn from(raw: RawLoopParams) -> LoopParams {
        let default = LoopParams::default();
        fn regions<T>(given: Option<Vec<T>>, own_sites: bool, default_program: Vec<T>) -> Vec<T> {
            given.unwrap_or(if own_sites { Vec::new() } else { default_program })
        }
        let own = raw.sites.is_some();
        LoopParams {
            accesses: raw.accesses.unwrap_or(default.accesses),
            base_addr: raw.base_addr.unwrap_or(default.base_addr),
            code_base: raw.code_base.unwrap_or(default.code_base),
            arrays: regions(raw.arrays, own, default.arrays),
            heaps: regions(raw.heaps, own, default.heaps),
            sites: raw.sites.unwrap_or(default.sites),
        }
    }
}

/// An array walked by `stream` sites.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Array {
    /// Bytes in the array (default 1MiB).
    pub size_bytes: ByteSize,
}

impl Default for Array {
    fn default() -> Self {
        Array { size_bytes: ByteSize(DEFAULT_WORKING_SET_BYTES) }
    }
}

/// A region of elements with Zipf popularity, used by `zipf` sites.
///
/// It holds `n = floor(working_set_bytes / element_bytes)` elements; a draw
/// picks rank `r` in `[1, n]` with probability proportional to
/// `1 / r^exponent` and maps it to an element through a seeded permutation
/// of the heap (the same for every site of the heap).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Heap {
    /// Bytes of the heap (default 1MiB).
    pub working_set_bytes: ByteSize,
    /// Skew `s > 0` (default 0.99); 1 is classic Zipf.
    pub exponent: f64,
    /// Bytes per element, the unit of popularity (default 64).
    pub element_bytes: ByteSize,
}

impl Default for Heap {
    fn default() -> Self {
        Heap { working_set_bytes: ByteSize(DEFAULT_WORKING_SET_BYTES), exponent: 0.99, element_bytes: ByteSize(64) }
    }
}

/// One static memory instruction of the loop body. Exactly one of `stream`
/// and `zipf` says where it accesses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Site {
    /// A strided walk over an array.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<StreamSite>,
    /// An access to a Zipf-popular element of a heap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zipf: Option<ZipfSite>,
    /// A store instruction rather than a load (default false).
    pub store: bool,
    /// Instructions retired from the previous site's access to this one,
    /// counting this one (default 3; at least 1).
    pub instructions: u32,
    /// Bytes per access (default 8).
    pub access_bytes: u16,
    /// Probability that a branch skips this site in an iteration, in [0, 1)
    /// (default 0). A skipped site makes no access and retires none of its
    /// instructions; a stream site's position still advances.
    pub skip_probability: f64,
    /// An occasional longer path to this site (default none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub long_path: Option<LongPath>,
}

impl Default for Site {
    fn default() -> Self {
        Site {
            stream: None,
            zipf: None,
            store: false,
            instructions: DEFAULT_SITE_INSTRUCTIONS,
            access_bytes: DEFAULT_ACCESS_BYTES,
            skip_probability: 0.0,
            long_path: None,
        }
    }
}

/// Where a `stream` site accesses: position `p` of its array, which starts at
/// `start_bytes` and advances by `stride_bytes` every iteration (skipped or
/// not), modulo the array size rounded down to a multiple of the site's
/// `access_bytes`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamSite {
    /// Index into `arrays` (default 0).
    pub array: usize,
    /// Bytes the position advances per iteration (default the site's
    /// `access_bytes`); a non-zero multiple of `access_bytes`, negative walks
    /// downwards.
    pub stride_bytes: Option<i64>,
    /// Position in the first iteration (default 0, or the last element for a
    /// negative stride); a multiple of `access_bytes` inside the array.
    pub start_bytes: Option<u64>,
}

/// Where a `zipf` site accesses: an element of a heap, drawn afresh each
/// time the site runs, at a byte offset within the element.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ZipfSite {
    /// Index into `heaps` (default 0).
    pub heap: usize,
    /// Offset of the access in the element (default 0).
    pub offset: ElementOffset,
}

impl Default for ZipfSite {
    fn default() -> Self {
        ZipfSite { heap: 0, offset: ElementOffset::Bytes(0) }
    }
}

/// The offset of a heap access within its element: a fixed number of bytes
/// (`offset = 8`, a field of a struct) or `"random"`, a uniformly drawn
/// multiple of `access_bytes` that fits in the element (an array element).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElementOffset {
    /// This many bytes from the element's start.
    Bytes(u64),
    /// A random multiple of `access_bytes`, drawn each access.
    Random,
}

impl Serialize for ElementOffset {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            ElementOffset::Bytes(b) => s.serialize_u64(*b),
            ElementOffset::Random => s.serialize_str("random"),
        }
    }
}

impl<'de> Deserialize<'de> for ElementOffset {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = ElementOffset;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a byte offset or \"random\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<ElementOffset, E> {
                Ok(ElementOffset::Bytes(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<ElementOffset, E> {
                u64::try_from(v)
                    .map(ElementOffset::Bytes)
                    .map_err(|_| E::custom(format!("an offset cannot be negative, got {v}")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<ElementOffset, E> {
                if v >= 0.0 && v.fract() == 0.0 && v < u64::MAX as f64 {
                    Ok(ElementOffset::Bytes(v as u64))
                } else {
                    Err(E::custom(format!("an offset must be a whole number of bytes, got {v}")))
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<ElementOffset, E> {
                match v {
                    "random" => Ok(ElementOffset::Random),
                    other => Err(E::custom(format!("expected a byte offset or \"random\", got \"{other}\""))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// With `probability` per iteration, the site is reached by a longer path:
/// its access carries `instructions` more.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LongPath {
    /// Probability per iteration in which the site runs, in [0, 1].
    pub probability: f64,
    /// Extra instructions on the long path.
    pub instructions: u32,
}

impl Default for LoopParams {
    /// A data-intensive loop: four strided walks over large arrays (two
    /// 8-byte loads with stride 8, an 8-byte load with stride 64 touching one
    /// word per cache line, a 4-byte store with stride 4) alternating with
    /// four accesses to one 64MiB heap of 64-byte elements (a load of a random
    /// word, a store and a load of word 1, and a load of a random word that a
    /// branch skips one iteration in sixteen). One iteration in eight takes a
    /// path six instructions longer to the last access. 19 instructions per
    /// iteration, 2.375 per access.
    fn default() -> Self {
        let array = |mib: u64| Array { size_bytes: ByteSize(mib << 20) };
        let stream = |array: usize, stride: i64, instructions: u32, access_bytes: u16, store: bool| Site {
            stream: Some(StreamSite { array, stride_bytes: Some(stride), start_bytes: None }),
            instructions,
            access_bytes,
            store,
            ..Site::default()
        };
        let heap = |offset: ElementOffset, instructions: u32, store: bool| Site {
            zipf: Some(ZipfSite { heap: 0, offset }),
            instructions,
            store,
            ..Site::default()
        };
        let random = ElementOffset::Random;
        let word1 = ElementOffset::Bytes(8);
        LoopParams {
            accesses: DEFAULT_ACCESSES,
            base_addr: DEFAULT_BASE_ADDR,
            code_base: DEFAULT_CODE_BASE,
            arrays: vec![array(256), array(256), array(128), array(512)],
            heaps: vec![Heap { working_set_bytes: ByteSize(64 << 20), ..Heap::default() }],
            sites: vec![
                stream(0, 8, 3, 8, false),
                heap(random, 1, false),
                stream(1, 8, 2, 8, false),
                heap(word1, 4, true),
                stream(2, 64, 1, 8, false),
                Site { skip_probability: 1.0 / 16.0, ..heap(random, 2, false) },
                stream(3, 4, 5, 4, true),
                Site { long_path: Some(LongPath { probability: 1.0 / 8.0, instructions: 6 }), ..heap(word1, 1, false) },
            ],
        }
    }
}

/// Where a built site's accesses go.
#[derive(Debug, Clone)]
enum Target {
    /// `base + pos`; `pos` advances by `step` modulo `len`, written as
    /// "subtract `back = len - step` if `pos >= back`" so it cannot overflow.
    Stream { base: u64, pos: u64, step: u64, back: u64 },
    /// An element of a heap.
    Heap(HeapTarget),
}

/// Addresses of a heap site, drawn [`AHEAD`] at a time.
///
/// Drawing in batches ([`ZipfSampler::sample_many`]) keeps the sampler's
/// unpredictable branches and table lookups in one tight loop, where the
/// lookups of successive draws overlap, instead of stalling the walk through
/// the loop body (measured on the default loop, best windows: 58-80 M
/// accesses/s drawing one by one, 100-110 in batches). Elements and word
/// offsets come from separate random streams, so the addresses do not depend
/// on the batch size.
#[derive(Debug, Clone)]
struct HeapTarget {
    /// Index into the loop's samplers.
    heap: usize,
    /// An address is `base + element * element_bytes + offset`, plus a
    /// random multiple of `size` below `slots * size` if `slots > 0`.
    base: u64,
    element_bytes: u64,
    offset: u64,
    slots: u64,
    size: u64,
    /// Draws elements.
    element_rng: Rng,
    /// Draws word offsets.
    word_rng: Rng,
    /// The next addresses, used from `next` on.
    ahead: Box<[u64; AHEAD]>,
    next: usize,
}

/// Heap addresses drawn per batch.
const AHEAD: usize = 64;

impl HeapTarget {
    /// A target with placeholder random streams (set when the site is built)
    /// whose first access draws a batch.
    fn new(heap: usize, base: u64, element_bytes: u64, offset: u64, slots: u64, size: u64) -> HeapTarget {
        let placeholder = Rng::from_seed(0);
        HeapTarget {
            heap,
            base,
            element_bytes,
            offset,
            slots,
            size,
            element_rng: placeholder.clone(),
            word_rng: placeholder,
            ahead: Box::new([0; AHEAD]),
            next: AHEAD,
        }
    }

    /// The next address.
    #[inline(always)]
    fn next(&mut self, heaps: &[ZipfSampler]) -> u64 {
        if self.next == AHEAD {
            self.refill(&heaps[self.heap]);
        }
        let addr = self.ahead[self.next];
        self.next += 1;
        addr
    }

    /// Draw the next [`AHEAD`] addresses.
    #[inline(never)]
    fn refill(&mut self, sampler: &ZipfSampler) {
        sampler.sample_many(&mut self.element_rng, &mut self.ahead[..]);
        let start = self.base + self.offset;
        for addr in self.ahead.iter_mut() {
            *addr = start + *addr * self.element_bytes;
        }
        if self.slots > 0 {
            for addr in self.ahead.iter_mut() {
                *addr += self.word_rng.below(self.slots) * self.size;
            }
        }
        self.next = 0;
    }
}

/// A built site.
#[derive(Debug, Clone)]
struct RunSite {
    target: Target,
    pc: u64,
    instrs: u32,
    /// `instrs` plus the long path's instructions.
    long_instrs: u32,
    size: u16,
    kind: AccessKind,
    /// A 53-bit branch draw below this skips the site (0: never, no draw).
    skip_below: u64,
    /// A 53-bit branch draw below this takes the long path (0: never, no draw).
    long_below: u64,
    /// Skips and long paths.
    branch_rng: Rng,
}

impl RunSite {
    /// Run the site once: its access, or `None` if a branch skipped it. A
    /// skipped stream site still advances (the loop's induction variable
    /// does); a skipped heap site draws nothing.
    #[inline(always)]
    fn step(&mut self, heaps: &[ZipfSampler]) -> Option<Access> {
        let skip = self.skip_below != 0 && self.branch_rng.next_u64() >> 11 < self.skip_below;
        let addr = match &mut self.target {
            Target::Stream { base, pos, step, back } => {
                let addr = *base + *pos;
                *pos = if *pos >= *back { *pos - *back } else { *pos + *step };
                addr
            }
            Target::Heap(heap) => {
                if skip {
                    return None;
                }
                heap.next(heaps)
            }
        };
        if skip {
            return None;
        }
        let long = self.long_below != 0 && self.branch_rng.next_u64() >> 11 < self.long_below;
        let instrs = if long { self.long_instrs } else { self.instrs };
        Some(Access { addr: VirtAddr(addr), pc: VirtAddr(self.pc), instrs, size: self.size, kind: self.kind })
    }
}

/// The built loop.
struct Loop {
    sites: Box<[RunSite]>,
    /// One sampler of elements per heap, shared by its sites.
    heaps: Box<[ZipfSampler]>,
    /// Site to run next.
    at: usize,
    remaining: u64,
    /// Total length when bounded.
    total: Option<u64>,
}

impl Workload for Loop {
    fn fill(&mut self, buf: &mut [Access]) -> Result<usize> {
        let n = (buf.len() as u64).min(self.remaining) as usize;
        let (sites, heaps) = (&mut self.sites[..], &self.heaps[..]);
        let count = sites.len();
        let mut at = self.at;
        let mut done = 0;
        while done < n {
            let site = &mut sites[at];
            at = if at + 1 == count { 0 } else { at + 1 };
            if let Some(access) = site.step(heaps) {
                buf[done] = access;
                done += 1;
            }
        }
        self.at = at;
        if self.total.is_some() {
            self.remaining -= n as u64;
        }
        Ok(n)
    }

    fn len_hint(&self) -> Option<u64> {
        self.total
    }
}

/// A probability as a 53-bit threshold.
fn threshold(p: f64) -> u64 {
    ((p * FRACTION_ONE as f64).round() as u64).min(FRACTION_ONE)
}

/// `x` rounded up to a multiple of [`REGION_ALIGN_BYTES`], if it fits.
fn align_up(x: u64) -> Option<u64> {
    Some(x.checked_add(REGION_ALIGN_BYTES - 1)? / REGION_ALIGN_BYTES * REGION_ALIGN_BYTES)
}

impl LoopParams {
    /// Validate and build the loop with its own length.
    pub fn build(&self, ctx: &WorkloadCtx) -> Result<Box<dyn Workload>> {
        self.build_with(ctx, Length::Own)
    }

    /// Validate and build; `length` says whether `accesses` applies.
    pub(crate) fn build_with(&self, ctx: &WorkloadCtx, length: Length) -> Result<Box<dyn Workload>> {
        let mut issues = Issues::default();
        let at = |field: &str| field_loc(&ctx.loc, field);
        if length == Length::Own {
            issues.check(self.accesses >= 1, at("accesses"), "out_of_range", "accesses must be at least 1");
        }

        // Regions, then the sites that use them.
        let layout = Layout::new(self, &ctx.loc, &mut issues);
        issues.check(!self.sites.is_empty(), at("sites"), "empty", "sites must list at least one memory instruction");
        let mut code_instructions = 0u64;
        let mut built = Vec::with_capacity(self.sites.len());
        for (i, site) in self.sites.iter().enumerate() {
            code_instructions += site.instructions as u64;
            let target = site.validate(&ctx.loc, i, &layout, &mut issues);
            built.push(target.map(|mut target| {
                if let Target::Heap(heap) = &mut target {
                    heap.element_rng = stream_rng(ctx, &format!("site{i}/addr"));
                    heap.word_rng = stream_rng(ctx, &format!("site{i}/word"));
                }
                let long = site.long_path.as_ref();
                RunSite {
                    target,
                    pc: 0, // set below, once every site's instructions are known
                    instrs: site.instructions,
                    size: site.access_bytes,
                    kind: if site.store { AccessKind::Store } else { AccessKind::Load },
                    long_instrs: site.instructions.saturating_add(long.map_or(0, |l| l.instructions)),
                    skip_below: threshold(site.skip_probability),
                    long_below: long.map_or(0, |l| threshold(l.probability)),
                    branch_rng: stream_rng(ctx, &format!("site{i}/branch")),
                }
            }));
        }

        // The code of the loop body, and its overlap with the data.
        let code_bytes = code_instructions.checked_mul(INSTRUCTION_BYTES);
        check_regions(&ctx.loc, self.code_base, code_bytes, self.base_addr, layout.end, &mut issues);
        issues.finish()?;

        let mut sites: Vec<RunSite> = built.into_iter().map(|s| s.expect("validated")).collect();
        let mut pc = self.code_base;
        for site in &mut sites {
            pc += site.instrs as u64 * INSTRUCTION_BYTES;
            site.pc = pc - INSTRUCTION_BYTES;
        }
        let heaps = self
            .heaps
            .iter()
            .zip(&layout.heap_elements)
            .enumerate()
            .map(|(h, (heap, n))| {
                let n = n.expect("validated");
                let perm = Permutation::new(n, &mut stream_rng(ctx, &format!("heap{h}/layout")));
                ZipfSampler::scattered(n, heap.exponent, HEAD_RANKS, perm)
            })
            .collect();
        Ok(Box::new(Loop {
            sites: sites.into(),
            heaps,
            at: 0,
            remaining: match length {
                Length::Own => self.accesses,
                Length::Unbounded => u64::MAX,
            },
            total: (length == Length::Own).then_some(self.accesses),
        }))
    }
}

/// Where the arrays and heaps go, as far as their params are valid.
struct Layout<'a> {
    /// Bytes of each array, if valid.
    array_bytes: Vec<Option<u64>>,
    /// Elements of each heap, if its size and element size are valid.
    heap_elements: Vec<Option<u64>>,
    heaps: &'a [Heap],
    /// Address of each array, then of each heap, if every region is valid
    /// and the last ends inside the address space.
    starts: Option<Vec<u64>>,
    /// Bytes from `base_addr` to the end of the last region, with `starts`.
    end: Option<u64>,
}

impl<'a> Layout<'a> {
    /// Check the arrays and heaps of `params` and place them.
    fn new(params: &'a LoopParams, loc: &str, issues: &mut Issues) -> Layout<'a> {
        let array_bytes: Vec<Option<u64>> = params
            .arrays
            .iter()
            .enumerate()
            .map(|(k, a)| {
                let ok = a.size_bytes.0 >= 1;
                let at = field_loc(loc, &format!("arrays[{k}].size_bytes"));
                issues.check(ok, at, "too_small", "an array needs at least 1 byte");
                ok.then_some(a.size_bytes.0)
            })
            .collect();
        let heap_elements: Vec<Option<u64>> =
            params.heaps.iter().enumerate().map(|(h, heap)| heap.validate(loc, h, issues)).collect();
        let heap_bytes = heap_elements.iter().zip(&params.heaps).map(|(n, heap)| n.map(|n| n * heap.element_bytes.0));
        let sizes: Option<Vec<u64>> = array_bytes.iter().copied().chain(heap_bytes).collect();
        let mut layout = Layout { array_bytes, heap_elements, heaps: &params.heaps, starts: None, end: None };
        let Some(sizes) = sizes else { return layout };
        // Offsets from base_addr; `None` once they leave the address space.
        let mut offsets = Vec::with_capacity(sizes.len());
        let mut next = Some(0u64);
        let mut end = Some(0u64);
        for size in sizes {
            offsets.push(next.unwrap_or(0));
            end = next.and_then(|start| start.checked_add(size));
            next = end.and_then(align_up);
        }
        let base = params.base_addr;
        if end.and_then(|end| base.checked_add(end)).is_none() {
            issues.push(
                field_loc(loc, "base_addr"),
                "overflow",
                format!("the arrays and heaps from base_addr = {base:#x} run past the end of the address space"),
            );
            return layout;
        }
        layout.starts = Some(offsets.iter().map(|o| base + o).collect());
        layout.end = end;
        layout
    }

    /// Address of `arrays[k]`, if placed.
    fn array_at(&self, k: usize) -> Option<u64> {
        Some(self.starts.as_ref()?[k])
    }

    /// Address of `heaps[h]`, if placed.
    fn heap_at(&self, h: usize) -> Option<u64> {
        Some(self.starts.as_ref()?[self.array_bytes.len() + h])
    }
}

impl Heap {
    /// Record the problems of `heaps[h]`; its number of elements if its
    /// sizes are valid (whatever its exponent).
    fn validate(&self, loc: &str, h: usize, issues: &mut Issues) -> Option<u64> {
        let at = |field: &str| field_loc(loc, &format!("heaps[{h}].{field}"));
        issues.check(
            self.exponent > 0.0 && self.exponent.is_finite(),
            at("exponent"),
            "out_of_range",
            format!("exponent must be a number above 0, got {}", self.exponent),
        );
        let (bytes, element) = (self.working_set_bytes.0, self.element_bytes.0);
        let Some(n) = bytes.checked_div(element) else {
            issues.push(at("element_bytes"), "out_of_range", "element_bytes must be at least 1");
            return None;
        };
        if n == 0 {
            issues.push(
                at("working_set_bytes"),
                "too_small",
                format!("working_set_bytes = {bytes} is smaller than one element of element_bytes = {element}"),
            );
            return None;
        }
        if n >= MAX_HEAP_ELEMENTS {
            issues.push(at("working_set_bytes"), "too_large", "working_set_bytes / element_bytes must be below 2^63");
            return None;
        }
        Some(n)
    }
}

impl Site {
    /// Record the problems of `sites[i]`; its target if it and the regions
    /// it uses are valid.
    fn validate(&self, loc: &str, i: usize, layout: &Layout, issues: &mut Issues) -> Option<Target> {
        let at = |field: &str| field_loc(loc, &format!("sites[{i}]{field}"));
        let mut ok = true;
        let mut check = |good: bool, field: &str, code: &'static str, message: String| {
            issues.check(good, at(field), code, message);
            ok &= good;
        };
        check(self.instructions >= 1, ".instructions", "out_of_range", "instructions must be at least 1".into());
        let access = self.access_bytes as u64;
        check(access >= 1, ".access_bytes", "out_of_range", "access_bytes must be at least 1".into());
        let p = self.skip_probability;
        check(
            (0.0..1.0).contains(&p),
            ".skip_probability",
            "out_of_range",
            format!("skip_probability must be in [0, 1), got {p}"),
        );
        if let Some(long) = &self.long_path {
            let p = long.probability;
            check(
                (0.0..=1.0).contains(&p),
                ".long_path.probability",
                "out_of_range",
                format!("long_path.probability must be in [0, 1], got {p}"),
            );
            check(
                self.instructions.checked_add(long.instructions).is_some(),
                ".long_path.instructions",
                "out_of_range",
                format!("instructions + long_path.instructions must be below 2^32, got {}", long.instructions),
            );
        }
        let target = match (&self.stream, &self.zipf) {
            (Some(stream), None) => {
                let at = |field: &str| field_loc(loc, &format!("sites[{i}].stream.{field}"));
                let k = stream.array;
                let Some(size) = layout.array_bytes.get(k) else {
                    issues.push(
                        at("array"),
                        "out_of_range",
                        format!("array {k} does not exist; arrays has {} entries", layout.array_bytes.len()),
                    );
                    return None;
                };
                if access == 0 {
                    return None;
                }
                let stride = stream.stride_bytes.unwrap_or(access as i64);
                if stride == 0 {
                    issues.push(at("stride_bytes"), "out_of_range", "stride_bytes must not be zero");
                    ok = false;
                } else if stride % access as i64 != 0 {
                    issues.push(
                        at("stride_bytes"),
                        "not_multiple",
                        format!("stride_bytes = {stride} is not a multiple of access_bytes = {access}"),
                    );
                    ok = false;
                }
                let size = (*size)?;
                let len = size / access * access;
                if len == 0 {
                    issues.push(
                        field_loc(loc, &format!("sites[{i}].access_bytes")),
                        "too_large",
                        format!("access_bytes = {access} exceeds the {size} bytes of arrays[{k}]"),
                    );
                    return None;
                }
                let start = stream.start_bytes.unwrap_or(if stride > 0 { 0 } else { len - access });
                if start % access != 0 {
                    issues.push(
                        at("start_bytes"),
                        "not_multiple",
                        format!("start_bytes = {start} is not a multiple of access_bytes = {access}"),
                    );
                    ok = false;
                } else if start >= len {
                    issues.push(
                        at("start_bytes"),
                        "out_of_range",
                        format!("start_bytes = {start} leaves no room for an access in the {len} bytes walked"),
                    );
                    ok = false;
                }
                let step = (stride as i128).rem_euclid(len as i128) as u64;
                Some(Target::Stream { base: layout.array_at(k)?, pos: start, step, back: len - step })
            }
            (None, Some(zipf)) => {
                let at = |field: &str| field_loc(loc, &format!("sites[{i}].zipf.{field}"));
                let h = zipf.heap;
                let Some(heap) = layout.heaps.get(h) else {
                    issues.push(
                        at("heap"),
                        "out_of_range",
                        format!("heap {h} does not exist; heaps has {} entries", layout.heaps.len()),
                    );
                    return None;
                };
                let element = heap.element_bytes.0;
                layout.heap_elements[h]?;
                if access == 0 {
                    return None;
                }
                let (offset, slots) = match zipf.offset {
                    ElementOffset::Bytes(offset) => {
                        if offset.checked_add(access).is_none_or(|end| end > element) {
                            issues.push(
                                at("offset"),
                                "out_of_range",
                                format!(
                                    "offset = {offset} with access_bytes = {access} runs past the element_bytes = {element} of heaps[{h}]"
                                ),
                            );
                            return None;
                        }
                        (offset, 0)
                    }
                    ElementOffset::Random => {
                        if access > element {
                            issues.push(
                                field_loc(loc, &format!("sites[{i}].access_bytes")),
                                "too_large",
                                format!("access_bytes = {access} exceeds the element_bytes = {element} of heaps[{h}]"),
                            );
                            return None;
                        }
                        (0, element / access)
                    }
                };
                Some(Target::Heap(HeapTarget::new(h, layout.heap_at(h)?, element, offset, slots, access)))
            }
            (Some(_), Some(_)) => {
                issues.push(at(""), "invalid_value", "a site has either `stream` or `zipf`, not both");
                return None;
            }
            (None, None) => {
                issues.push(at(""), "invalid_value", "a site needs `stream = { ... }` or `zipf = { ... }`");
                return None;
            }
        };
        target.filter(|_| ok)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{addrs, build, build_err, build_seeded, take};
    use super::*;
    use serde_json::{json, Value};
    use std::collections::BTreeMap;

    const B: u64 = 0x10_0000_0000;
    const C: u64 = 0x40_0000;

    #[test]
    fn a_small_loop_runs_in_program_order_with_hand_computed_addresses() {
        // arrays[0]: 40 bytes at B. heaps[0]: 4 elements of 64 bytes at the
        // next page, B + 4096. Site 0 loads 8 bytes of arrays[0] with stride
        // 16 (offsets 0, 16, 32, 48 - 40 = 8, ...); site 1 stores word 1 of a
        // heap element (the heap has a single element, so always B + 4096 +
        // 8); site 2 loads 4 bytes of arrays[0] walking down by 8 from the
        // last element (36, 28, 20, ...). Pcs: instructions 3, 2, 1, so the
        // sites' instructions end at 3, 5, 6: pcs C + 8, C + 16, C + 20.
        let p = json!({
            "arrays": [{"size_bytes": 40}],
            "heaps": [{"working_set_bytes": 64, "element_bytes": 64}],
            "sites": [
                {"stream": {"array": 0, "stride_bytes": 16}},
                {"zipf": {"heap": 0, "offset": 8}, "store": true, "instructions": 2},
                {"stream": {"stride_bytes": -8}, "instructions": 1, "access_bytes": 4},
            ],
        });
        let got = take(&mut *build("loop", p), 10);
        let (l, s) = (AccessKind::Load, AccessKind::Store);
        let expected: Vec<(u64, u64, u32, u16, AccessKind)> = vec![
            (B, C + 8, 3, 8, l),
            (B + 4096 + 8, C + 16, 2, 8, s),
            (B + 36, C + 20, 1, 4, l),
            (B + 16, C + 8, 3, 8, l),
            (B + 4096 + 8, C + 16, 2, 8, s),
            (B + 28, C + 20, 1, 4, l),
            (B + 32, C + 8, 3, 8, l),
            (B + 4096 + 8, C + 16, 2, 8, s),
            (B + 20, C + 20, 1, 4, l),
            (B + 8, C + 8, 3, 8, l),
        ];
        let got: Vec<_> = got.iter().map(|a| (a.addr.0, a.pc.0, a.instrs, a.size, a.kind)).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn regions_are_laid_out_in_order_on_page_boundaries() {
        // arrays of 5000 and 8192 bytes, heap of 4 x 1024: offsets 0, 8192,
        // 16384. Each site touches the first byte of its region once.
        let p = json!({
            "base_addr": 1u64 << 32,
            "arrays": [{"size_bytes": 5000}, {"size_bytes": 8192}],
            "heaps": [{"working_set_bytes": 4096, "element_bytes": 1024, "exponent": 60.0}],
            "sites": [{"stream": {"array": 1}}, {"stream": {"array": 0}}, {"zipf": {}}],
        });
        let got = addrs(&take(&mut *build("loop", p), 3));
        let base = 1u64 << 32;
        assert_eq!(got[..2], [base + 8192, base]);
        // With exponent 60 rank 1 has probability 1 - 2^-60: the hottest
        // element, one of the four.
        let in_heap = got[2] - base - 16384;
        assert!(in_heap.is_multiple_of(1024) && in_heap < 4096, "{:#x}", got[2]);
    }

    #[test]
    fn the_default_loop_has_demo_mix_structure() {
        // Pcs from the instruction counts 3, 1, 2, 4, 1, 2, 5, 1: the sites'
        // instructions end at 3, 4, 6, 10, 11, 13, 18, 19.
        let pcs: Vec<u64> = [3u64, 4, 6, 10, 11, 13, 18, 19].iter().map(|e| C + 4 * (e - 1)).collect();
        let stores = [false, false, false, true, false, false, true, false];
        let sizes = [8u16, 8, 8, 8, 8, 8, 4, 8];
        let instrs = [3u32, 1, 2, 4, 1, 2, 5, 1];
        let site_of: BTreeMap<u64, usize> = pcs.iter().enumerate().map(|(i, &pc)| (pc, i)).collect();
        // Regions: 256, 256, 128 and 512 MiB arrays, then the 64 MiB heap.
        let starts = [0u64, 256, 512, 640].map(|m| B + (m << 20));
        let heap = (B + (1152 << 20), B + (1216 << 20));
        let all = take(&mut *build("loop", Value::Null), 200_000);
        let mut per_site = vec![Vec::new(); 8];
        for a in &all {
            let i = site_of[&a.pc.0];
            assert_eq!(a.kind == AccessKind::Store, stores[i], "site {i}");
            assert_eq!(a.size, sizes[i], "site {i}");
            let extra = if i == 7 { 6 } else { 0 };
            assert!(a.instrs == instrs[i] || a.instrs == instrs[i] + extra, "site {i}: {}", a.instrs);
            per_site[i].push(a.addr.0);
        }
        // Program order: each site follows the one before it, except that
        // site 5 may be skipped.
        for w in all.windows(2) {
            let (i, j) = (site_of[&w[0].pc.0], site_of[&w[1].pc.0]);
            assert!(j == (i + 1) % 8 || (i == 4 && j == 6), "{i} -> {j}");
        }
        // Stream sites walk their arrays from the start with strides 8, 8,
        // 64, 4, once every iteration (200000 accesses are over 25000
        // iterations, as one in sixteen has 7 accesses).
        for (site, array, stride) in [(0, 0, 8), (2, 1, 8), (4, 2, 64), (6, 3, 4)] {
            let walk = &per_site[site];
            assert!(walk.len() >= 25_000, "site {site}: {}", walk.len());
            assert!(walk.iter().enumerate().all(|(t, &a)| a == starts[array] + t as u64 * stride), "site {site}");
        }
        // Heap sites stay in the heap: a random word, or word 1.
        for (site, word1) in [(1, false), (3, true), (5, false), (7, true)] {
            for &a in &per_site[site] {
                assert!((heap.0..heap.1).contains(&a) && a % 8 == 0, "{a:#x}");
                assert!(!word1 || (a - heap.0) % 64 == 8, "site {site}: {a:#x}");
            }
        }
    }

    #[test]
    fn skipped_sites_keep_their_position_and_occur_at_their_rate() {
        // Site 1 is skipped with probability 0.25 but its stream advances
        // every iteration, so when it runs in iteration t (known from site
        // 0, which always runs) it is at 16 t.
        let p = json!({
            "arrays": [{"size_bytes": "1GiB"}, {"size_bytes": "1GiB"}],
            "sites": [
                {"stream": {"array": 0}},
                {"stream": {"array": 1, "stride_bytes": 16}, "skip_probability": 0.25},
            ],
        });
        let n = 200_000;
        let all = take(&mut *build("loop", p), n);
        let (mut iterations, mut ran, mut t) = (0u64, 0u64, 0u64);
        for a in &all {
            if a.addr.0 < B + (1 << 30) {
                t = (a.addr.0 - B) / 8;
                assert_eq!(t, iterations);
                iterations += 1;
            } else {
                assert_eq!(a.addr.0, B + (1 << 30) + 16 * t);
                ran += 1;
            }
        }
        // The share of iterations running site 1 is binomial with p = 0.75;
        // over about 114k iterations one standard deviation is 0.0013.
        let share = ran as f64 / iterations as f64;
        let sigma = (0.75 * 0.25 / iterations as f64).sqrt();
        assert!((share - 0.75).abs() < 5.0 * sigma, "{share}");
    }

    #[test]
    fn long_paths_add_their_instructions_at_their_rate() {
        let p = json!({
            "arrays": [{}],
            "sites": [{"stream": {}, "instructions": 2, "long_path": {"probability": 0.1, "instructions": 7}}],
        });
        let n = 100_000;
        let all = take(&mut *build("loop", p), n);
        let long = all.iter().filter(|a| a.instrs == 9).count();
        assert!(all.iter().all(|a| a.instrs == 2 || a.instrs == 9));
        let sigma = (0.1 * 0.9 / n as f64).sqrt();
        assert!((long as f64 / n as f64 - 0.1).abs() < 5.0 * sigma, "{long}");
    }

    /// Counts of each address of the accesses from pc `pc`.
    fn counts(all: &[Access], pc: u64) -> BTreeMap<u64, u64> {
        let mut c = BTreeMap::new();
        for a in all.iter().filter(|a| a.pc.0 == pc) {
            *c.entry(a.addr.0).or_insert(0) += 1;
        }
        c
    }

    /// The `k` most frequent addresses with their frequencies, hottest first.
    fn top(c: &BTreeMap<u64, u64>, k: usize) -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = c.iter().map(|(&a, &n)| (a, n)).collect();
        v.sort_by_key(|&(a, n)| (std::cmp::Reverse(n), a));
        v.truncate(k);
        v
    }

    #[test]
    fn sites_on_one_heap_share_its_ranking_and_draw_independently() {
        // Sites 0 and 1 draw from heaps[0], site 2 from heaps[1] (the same
        // params, its own permutation). Exponent 2 over 4096 elements: rank r
        // has probability r^-2 / H(4096, 2), about 0.608, 0.152, 0.068 for
        // ranks 1-3 (H = pi^2 / 6 - 1/4096 approximately).
        let heap = json!({"working_set_bytes": 4096 * 64, "element_bytes": 64, "exponent": 2.0});
        let p = json!({
            "heaps": [heap, heap],
            "sites": [{"zipf": {"heap": 0}}, {"zipf": {"heap": 0}}, {"zipf": {"heap": 1}}],
        });
        let n = 300_000;
        let all = take(&mut *build("loop", p), n);
        let h: f64 = (1..=4096).map(|r| 1.0 / (r as f64 * r as f64)).sum();
        let per_site = n as f64 / 3.0;
        let tops: Vec<Vec<(u64, u64)>> = [C + 8, C + 20, C + 32].iter().map(|&pc| top(&counts(&all, pc), 3)).collect();
        for (site, t) in tops.iter().enumerate() {
            for (r, &(_, count)) in t.iter().enumerate() {
                let p = 1.0 / ((r + 1) as f64).powi(2) / h;
                let sigma = (per_site * p * (1.0 - p)).sqrt();
                assert!((count as f64 - per_site * p).abs() < 5.0 * sigma, "site {site} rank {}: {count}", r + 1);
            }
        }
        let ranking = |t: &[(u64, u64)], base: u64| t.iter().map(|&(a, _)| a - base).collect::<Vec<_>>();
        let heap1 = B + 4096 * 64;
        // Same heap: the same three hottest elements.
        assert_eq!(ranking(&tops[0], B), ranking(&tops[1], B));
        // Another heap: its own permutation (4096 choices for the hottest).
        assert_ne!(ranking(&tops[0], B)[0], ranking(&tops[2], heap1)[0]);
        // Independent draws: the two sites of a heap do not repeat each
        // other's element within an iteration more than chance does (the
        // probability that two draws coincide is sum p_r^2, about 0.41).
        let same = all.chunks(3).filter(|c| c.len() == 3 && c[0].addr == c[1].addr).count() as f64;
        let iterations = (n / 3) as f64;
        let q: f64 = (1..=4096).map(|r| (1.0 / (r as f64 * r as f64) / h).powi(2)).sum();
        let sigma = (iterations * q * (1.0 - q)).sqrt();
        assert!((same - iterations * q).abs() < 5.0 * sigma, "{same} vs {}", iterations * q);
    }

    #[test]
    fn random_offsets_cover_the_element_and_fixed_ones_do_not_move() {
        let p = json!({
            "heaps": [{"working_set_bytes": 64 * 16, "element_bytes": 64}],
            "sites": [{"zipf": {"offset": "random"}, "access_bytes": 16}, {"zipf": {"offset": 40}, "access_bytes": 8}],
        });
        let all = take(&mut *build("loop", p), 20_000);
        let mut words = [0u32; 4];
        for a in &all {
            let within = (a.addr.0 - B) % 64;
            if a.pc.0 == C + 8 {
                assert_eq!(within % 16, 0);
                words[(within / 16) as usize] += 1;
            } else {
                assert_eq!(within, 40);
            }
        }
        // 10000 draws uniform over 4 words: 2500 each, sigma about 43.
        assert!(words.iter().all(|&w| (2280..2720).contains(&w)), "{words:?}");
    }

    #[test]
    fn same_seed_same_stream_and_a_new_seed_changes_only_the_draws() {
        let p = Value::Null;
        let a = take(&mut *build_seeded("loop", p.clone(), 7, "task0"), 20_000);
        let b = take(&mut *build_seeded("loop", p.clone(), 7, "task0"), 20_000);
        assert_eq!(a, b);
        // Without the skip of site 5, access i is made by site i mod 8, so
        // two streams can be compared access by access. Stream sites (even
        // i) are identical across seeds and components; heap sites draw
        // other elements.
        let mut p = serde_json::to_value(LoopParams::default()).unwrap();
        p["sites"][5]["skip_probability"] = json!(0.0);
        for (seed, component) in [(8, "task0"), (7, "task1")] {
            let x = take(&mut *build_seeded("loop", p.clone(), 7, "task0"), 8000);
            let y = take(&mut *build_seeded("loop", p.clone(), seed, component), 8000);
            let (mut same_heap, mut heap) = (0, 0);
            for (i, (u, v)) in x.iter().zip(&y).enumerate() {
                assert_eq!((u.pc, u.kind, u.size), (v.pc, v.kind, v.size));
                if i % 2 == 0 {
                    assert_eq!(u.addr, v.addr, "stream site, access {i}");
                } else {
                    heap += 1;
                    same_heap += (u.addr == v.addr) as u32;
                }
            }
            // Two independent draws over 2^20 elements with exponent 0.99
            // coincide with probability about 0.01 (sum of p_r^2).
            assert!(same_heap < heap / 20, "{seed} {component}: {same_heap} of {heap}");
        }
    }

    #[test]
    fn lengths_are_exact_and_nesting_ignores_them() {
        let mut w = build("loop", json!({"accesses": 12_345}));
        assert_eq!(w.len_hint(), Some(12_345));
        assert_eq!(take(&mut *w, 20_000).len(), 12_345);
        assert_eq!(w.fill(&mut [Access::default(); 8]).unwrap(), 0);
        // A loop of 5 accesses nested in a phase of 1000 runs for 1000.
        let p = json!({"phases": [{"accesses": 1000, "workload": {"kind": "loop", "params": {"accesses": 5}}}]});
        assert_eq!(take(&mut *build("phases", p), 2000).len(), 1000);
    }

    #[test]
    fn the_example_in_the_user_guide_runs_as_described() {
        // The TOML block of docs/workloads.md that starts with the hash-join
        // comment: a key load, a bucket load, a store skipped a quarter of
        // the time.
        let guide = include_str!("../../../../../docs/workloads.md");
        let start = guide.find("# A hash-join probe").expect("example in the guide");
        let end = start + guide[start..].find("```").unwrap();
        let doc: toml::Table = toml::from_str(&guide[start..end]).unwrap();
        let workload = serde_json::to_value(&doc["workload"]).unwrap();
        let params = workload["params"].clone();
        assert_eq!(workload["kind"], "loop");
        let n = 30_000;
        let all = take(&mut *build("loop", params), n);
        // pcs C + 4 (instructions 2), C + 28 (+6), C + 40 (+3).
        let count = |pc: u64| all.iter().filter(|a| a.pc.0 == pc).count() as f64;
        let (keys, buckets, stores) = (count(C + 4), count(C + 28), count(C + 40));
        assert!(keys == buckets || keys == buckets + 1.0, "{keys} {buckets}"); // may stop mid-iteration
        assert_eq!(keys + buckets + stores, n as f64);
        let sigma = (keys * 0.75 * 0.25).sqrt();
        assert!((stores - 0.75 * keys).abs() < 5.0 * sigma, "{stores} of {keys}");
        assert!(all.iter().all(|a| (a.pc.0 == C + 40) == (a.kind == AccessKind::Store)));
    }

    #[test]
    fn regions_default_to_the_default_loop_only_without_sites() {
        let parse = |p: Value| match crate::trace::WorkloadConfig::parse(
            &crate::plugin::PluginConfig { kind: "loop".into(), params: p },
            "workload",
        ) {
            Ok(crate::trace::WorkloadConfig::Loop(p)) => p,
            other => panic!("{other:?}"),
        };
        let default = LoopParams::default();
        assert_eq!(parse(Value::Null), default);
        // A bigger heap under the default sites.
        let heaps = vec![Heap { working_set_bytes: ByteSize(1 << 30), ..Heap::default() }];
        let p = parse(json!({"heaps": [{"working_set_bytes": "1GiB"}]}));
        assert_eq!(p, LoopParams { heaps: heaps.clone(), ..default.clone() });
        // Own sites: no default arrays in front of the heap.
        let p = parse(json!({"heaps": [{"working_set_bytes": "1GiB"}], "sites": [{"zipf": {}}]}));
        assert_eq!((p.arrays.len(), p.heaps), (0, heaps));
    }

    #[test]
    fn stop_and_resume_mid_iteration() {
        // Pulling one access at a time gives the same stream as big batches.
        let big = take(&mut *build("loop", Value::Null), 1000);
        let mut w = build("loop", Value::Null);
        let mut one = [Access::default(); 1];
        let small: Vec<Access> = (0..1000)
            .map(|_| {
                assert_eq!(w.fill(&mut one).unwrap(), 1);
                one[0]
            })
            .collect();
        assert_eq!(big, small);
    }

    #[test]
    fn errors_carry_the_full_key_path_all_at_once() {
        let w = |s: &str| format!("workload.params.{s}");
        let mut p = json!({
            "accesses": 0,
            "code_base": 0x40_0002,
            "arrays": [{"size_bytes": 0}, {"size_bytes": 64}],
            "heaps": [{"exponent": -1.0}, {"working_set_bytes": 32, "element_bytes": 64}, {"element_bytes": 0}],
            "sites": [
                {"stream": {"array": 2}},
                {"stream": {"array": 1, "stride_bytes": 12}},
                {"stream": {"array": 1, "start_bytes": 64}},
                {"stream": {"array": 1, "start_bytes": 4}},
                {"zipf": {"heap": 5}},
                {"zipf": {"heap": 3}, "instructions": 0, "skip_probability": 1.0},
                {"stream": {"array": 1}, "zipf": {}},
                {},
                {"stream": {"array": 1}, "access_bytes": 128},
                {"stream": {"array": 1, "stride_bytes": 0},
                 "long_path": {"probability": 1.5, "instructions": u32::MAX}},
            ],
        });
        let expected: Vec<(String, &str)> = vec![
            (w("accesses"), "out_of_range"),
            (w("arrays[0].size_bytes"), "too_small"),
            (w("heaps[0].exponent"), "out_of_range"),
            (w("heaps[1].working_set_bytes"), "too_small"),
            (w("heaps[2].element_bytes"), "out_of_range"),
            (w("sites[0].stream.array"), "out_of_range"),
            (w("sites[1].stream.stride_bytes"), "not_multiple"),
            (w("sites[2].stream.start_bytes"), "out_of_range"),
            (w("sites[3].stream.start_bytes"), "not_multiple"),
            (w("sites[4].zipf.heap"), "out_of_range"),
            (w("sites[5].instructions"), "out_of_range"),
            (w("sites[5].skip_probability"), "out_of_range"),
            (w("sites[5].zipf.heap"), "out_of_range"),
            (w("sites[6]"), "invalid_value"),
            (w("sites[7]"), "invalid_value"),
            (w("sites[8].access_bytes"), "too_large"),
            (w("sites[9].long_path.probability"), "out_of_range"),
            (w("sites[9].long_path.instructions"), "out_of_range"),
            (w("sites[9].stream.stride_bytes"), "out_of_range"),
            (w("code_base"), "not_multiple"),
        ];
        assert_eq!(build_err("loop", p.clone()), expected);
        // Problems the parser finds carry the path too (and stop there).
        p["sites"][1]["stream"]["stride_bytes"] = json!("wide");
        assert_eq!(build_err("loop", p.clone()), [(w("sites[1].stream.stride_bytes"), "invalid_type")]);
        p["sites"][1]["stream"]["stride_bytes"] = json!(8);
        p["sites"][9]["heap"] = json!(0);
        assert_eq!(build_err("loop", p)[0], (w("sites[9].heap"), "unknown_field"));
        let e = build_err("loop", json!({"heaps": [{}], "sites": [{"zipf": {"offset": "last"}}]}));
        assert_eq!(e, [(w("sites[0].zipf.offset"), "invalid_value")]);
        let e = build_err("loop", json!({"sites": [{"stream": {}, "long_path": {"probability": 0.5}}]}));
        assert_eq!(e, [(w("sites[0].long_path.instructions"), "missing_field")]);
    }

    #[test]
    fn layout_errors() {
        let w = |s: &str| format!("workload.params.{s}");
        let e = build_err("loop", json!({"sites": []}));
        assert_eq!(e, [(w("sites"), "empty")]);
        let e = build_err("loop", json!({"heaps": [{"element_bytes": 64}], "sites": [{"zipf": {"offset": 60}}]}));
        assert_eq!(e, [(w("sites[0].zipf.offset"), "out_of_range")]);
        let e = build_err("loop", json!({"heaps": [{"element_bytes": 4}], "sites": [{"zipf": {"offset": "random"}}]}));
        assert_eq!(e, [(w("sites[0].access_bytes"), "too_large")]);
        // The default loop's 1216 MiB of data would cover its code.
        let e = build_err("loop", json!({"base_addr": 0x10_0000}));
        assert_eq!(e, [(w("code_base"), "overlap")]);
        let e = build_err("loop", json!({"base_addr": u64::MAX - 4096}));
        assert_eq!(e, [(w("base_addr"), "overflow")]);
        let e = build_err("loop", json!({"code_base": u64::MAX - 3}));
        assert_eq!(e, [(w("code_base"), "overflow")]);
        // One site of 3 instructions: code [C, C + 12). Data may end at C or
        // start at C + 12, not one byte closer.
        let one = |base: u64| json!({"base_addr": base, "arrays": [{"size_bytes": 4096}], "sites": [{"stream": {}}]});
        build("loop", one(C - 4096));
        build("loop", one(C + 12));
        assert_eq!(build_err("loop", one(C - 4095)), [(w("code_base"), "overlap")]);
        assert_eq!(build_err("loop", one(C + 8)), [(w("code_base"), "overlap")]);
    }
}
