//! What every leaf generator (stream, uniform, zipf, chase) shares: the
//! common parameters, their validation, and the driver that turns a stream of
//! data offsets into [`Access`]es.
//!
//! The leaf generators differ only in *where* the next data access goes. The
//! rest (load/store/ifetch mix, pcs, instructions per access, the code walk,
//! the length) is the same, and keeping it in one place means one definition
//! of each parameter, one set of checks, and one tight fill loop that the
//! compiler specialises per generator ([`Leaf`] is generic over
//! [`AddrGen`], so there is no virtual call per access).

use crate::error::{join_path, Issues, Result};
use crate::trace::{Workload, WorkloadCtx};
use crate::types::{Access, AccessKind, VirtAddr};
use crate::util::rng::Rng;

use crate::util::perm::Permutation;

/// Default stream length of a leaf generator.
pub const DEFAULT_ACCESSES: u64 = 1_000_000;
/// Default start of the data region: 64 GiB, clear of the code region and of
/// anything a small test would pick by hand.
pub const DEFAULT_BASE_ADDR: u64 = 0x10_0000_0000;
/// Default start of the code region (the traditional x86-64 text address).
pub const DEFAULT_CODE_BASE: u64 = 0x40_0000;
/// Default instruction footprint.
pub const DEFAULT_CODE_BYTES: u64 = 16 << 10;
/// Default number of distinct data-access pcs.
pub const DEFAULT_PCS: u32 = 16;
/// Default bytes per data access.
pub const DEFAULT_ACCESS_BYTES: u16 = 8;
/// Default instructions per access: about one instruction in three references
/// memory in typical integer code.
pub const DEFAULT_INSTRUCTIONS_PER_ACCESS: f64 = 3.0;
/// Default ifetch fraction: data accesses only.
pub const DEFAULT_IFETCH_FRACTION: f64 = 0.0;
/// Default working set of every leaf generator.
pub const DEFAULT_WORKING_SET_BYTES: u64 = 1 << 20;
/// Size of one instruction, and of every ifetch access.
pub const INSTRUCTION_BYTES: u64 = 4;
/// Largest accepted `instructions_per_access` (keeps `instrs` in a `u32`).
pub const MAX_INSTRUCTIONS_PER_ACCESS: f64 = 1e6;

/// Probability that an instruction fetch is followed by a taken branch
/// rather than the next sequential instruction: one in eight.
const TAKEN_BRANCH_SHIFT: u32 = 61;
/// A backward (loop) branch jumps back by 1..=this many instructions.
const MAX_LOOP_BACK: u64 = 64;

/// Fractions are drawn as 53-bit integers compared with fixed thresholds.
const FRACTION_ONE: u64 = 1 << 53;
/// Fixed-point scale of the instructions-per-access accumulator.
const INSTR_FRAC_BITS: u32 = 32;

/// How long a leaf generator runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    /// Its own `accesses` parameter (a top-level workload).
    Own,
    /// Forever: the parent (a phase or a mix) decides how many accesses to
    /// take. The generator's own `accesses` is ignored.
    Unbounded,
}

/// Declares a leaf generator's params struct: its own fields, with their
/// defaults, followed by the common fields every leaf generator has. A macro
/// instead of `#[serde(flatten)]`, which would silently stop
/// `deny_unknown_fields` from rejecting unknown keys.
macro_rules! leaf_params {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                pub $field:ident : $ty:ty = $default:expr,
            )*
        }
        default store_fraction = $store:expr;
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, ::serde::Serialize, ::serde::Deserialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct $name {
            $(
                $(#[$fmeta])*
                pub $field: $ty,
            )*
            /// Number of accesses in the stream (default 1,000,000). Ignored
            /// when the generator is nested in `phases` or `mix`, which set
            /// the length themselves.
            pub accesses: u64,
            #[doc = concat!(
                "Fraction of accesses that are stores, in [0, 1] (default ",
                stringify!($store),
                ")."
            )]
            pub store_fraction: f64,
            /// Fraction of accesses that are instruction fetches from the code
            /// region, in [0, 1] (default 0); `store_fraction + ifetch_fraction`
            /// must not exceed 1, the rest are loads.
            pub ifetch_fraction: f64,
            /// Average instructions retired per access, at least 1 (default
            /// 3). Spread with a fixed-point accumulator: each access carries
            /// the floor or the ceiling, and the total over `k` accesses is
            /// within one instruction of `k * instructions_per_access`.
            pub instructions_per_access: f64,
            /// Bytes per data access (default 8). Data addresses are multiples
            /// of this from `base_addr`.
            pub access_bytes: u16,
            /// First byte of the data region (default 0x10_0000_0000).
            pub base_addr: u64,
            /// Number of distinct data-access pcs (default 16), placed in the
            /// code region and split between load and store instructions.
            pub pcs: u32,
            /// Size of the code region that ifetches walk and data pcs lie in
            /// (default 16KiB).
            pub code_bytes: $crate::units::ByteSize,
            /// First byte of the code region (default 0x40_0000; a multiple of 4).
            pub code_base: u64,
        }

        impl Default for $name {
            fn default() -> Self {
                $name {
                    $($field: $default,)*
                    accesses: $crate::trace::synthetic::common::DEFAULT_ACCESSES,
                    store_fraction: $store,
                    ifetch_fraction: $crate::trace::synthetic::common::DEFAULT_IFETCH_FRACTION,
                    instructions_per_access:
                        $crate::trace::synthetic::common::DEFAULT_INSTRUCTIONS_PER_ACCESS,
                    access_bytes: $crate::trace::synthetic::common::DEFAULT_ACCESS_BYTES,
                    base_addr: $crate::trace::synthetic::common::DEFAULT_BASE_ADDR,
                    pcs: $crate::trace::synthetic::common::DEFAULT_PCS,
                    code_bytes: $crate::units::ByteSize(
                        $crate::trace::synthetic::common::DEFAULT_CODE_BYTES,
                    ),
                    code_base: $crate::trace::synthetic::common::DEFAULT_CODE_BASE,
                }
            }
        }

        impl $name {
            /// The common fields, for validation and for the driver.
            pub(crate) fn common(&self) -> $crate::trace::synthetic::common::Common {
                $crate::trace::synthetic::common::Common {
                    accesses: self.accesses,
                    store_fraction: self.store_fraction,
                    ifetch_fraction: self.ifetch_fraction,
                    instructions_per_access: self.instructions_per_access,
                    access_bytes: self.access_bytes,
                    base_addr: self.base_addr,
                    pcs: self.pcs,
                    code_bytes: self.code_bytes.0,
                    code_base: self.code_base,
                }
            }
        }
    };
}
pub(crate) use leaf_params;

/// The common parameters of a leaf generator, copied out of its params.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Common {
    /// See the params' field of the same name.
    pub accesses: u64,
    /// See the params' field of the same name.
    pub store_fraction: f64,
    /// See the params' field of the same name.
    pub ifetch_fraction: f64,
    /// See the params' field of the same name.
    pub instructions_per_access: f64,
    /// See the params' field of the same name.
    pub access_bytes: u16,
    /// See the params' field of the same name.
    pub base_addr: u64,
    /// See the params' field of the same name.
    pub pcs: u32,
    /// See the params' field of the same name.
    pub code_bytes: u64,
    /// See the params' field of the same name.
    pub code_base: u64,
}

/// Key path of a field of the workload at `loc`: `<loc>.params.<field>`.
pub(crate) fn field_loc(loc: &str, field: &str) -> String {
    join_path(loc, &format!("params.{field}"))
}

/// Check a working set divided into elements (zipf, chase): the element
/// size is at least 1 and at least `access_bytes`, and the working set holds
/// at least one element. Returns the number of elements if it is valid.
pub(crate) fn element_count(
    loc: &str,
    working_set_bytes: u64,
    element_bytes: u64,
    access_bytes: u16,
    issues: &mut Issues,
) -> Option<u64> {
    let at = |field: &str| field_loc(loc, field);
    let Some(n) = working_set_bytes.checked_div(element_bytes) else {
        issues.push(at("element_bytes"), "out_of_range", "element_bytes must be at least 1");
        return None;
    };
    issues.check(
        access_bytes as u64 <= element_bytes,
        at("access_bytes"),
        "too_large",
        format!("access_bytes = {access_bytes} exceeds element_bytes = {element_bytes}"),
    );
    issues.check(
        n >= 1,
        at("working_set_bytes"),
        "too_small",
        format!(
            "working_set_bytes = {working_set_bytes} is smaller than one element of element_bytes = {element_bytes}"
        ),
    );
    (n >= 1).then_some(n)
}

/// True if `x` is a number in `[0, 1]` (false for NaN).
fn is_fraction(x: f64) -> bool {
    (0.0..=1.0).contains(&x)
}

impl Common {
    /// Record every problem with the common fields. `data_bytes` is the size
    /// of the data region the generator will touch, when its own fields were
    /// valid enough to know it (used for the overflow and overlap checks).
    pub fn validate(&self, loc: &str, length: Length, data_bytes: Option<u64>, issues: &mut Issues) {
        let at = |field: &str| field_loc(loc, field);
        if length == Length::Own {
            issues.check(self.accesses >= 1, at("accesses"), "out_of_range", "accesses must be at least 1");
        }
        issues.check(
            is_fraction(self.store_fraction),
            at("store_fraction"),
            "out_of_range",
            format!("store_fraction must be in [0, 1], got {}", self.store_fraction),
        );
        issues.check(
            is_fraction(self.ifetch_fraction),
            at("ifetch_fraction"),
            "out_of_range",
            format!("ifetch_fraction must be in [0, 1], got {}", self.ifetch_fraction),
        );
        if is_fraction(self.store_fraction) && is_fraction(self.ifetch_fraction) {
            let sum = self.store_fraction + self.ifetch_fraction;
            issues.check(
                sum <= 1.0 + 1e-9,
                at("store_fraction"),
                "out_of_range",
                format!(
                    "store_fraction + ifetch_fraction must not exceed 1, got {} + {} = {sum}",
                    self.store_fraction, self.ifetch_fraction
                ),
            );
        }
        let ipa = self.instructions_per_access;
        issues.check(
            (1.0..=MAX_INSTRUCTIONS_PER_ACCESS).contains(&ipa),
            at("instructions_per_access"),
            "out_of_range",
            format!("instructions_per_access must be in [1, 1e6], got {ipa}"),
        );
        issues.check(self.access_bytes >= 1, at("access_bytes"), "out_of_range", "access_bytes must be at least 1");
        issues.check(self.pcs >= 1, at("pcs"), "out_of_range", "pcs must be at least 1");
        let slots = self.code_bytes / INSTRUCTION_BYTES;
        if slots == 0 {
            issues.push(
                at("code_bytes"),
                "too_small",
                format!(
                    "code_bytes must hold at least one {INSTRUCTION_BYTES}-byte instruction, got {}",
                    self.code_bytes
                ),
            );
        } else if slots < self.pcs as u64 {
            issues.push(
                at("pcs"),
                "too_large",
                format!("{} pcs do not fit in code_bytes = {} ({slots} instructions)", self.pcs, self.code_bytes),
            );
        }
        check_regions(loc, self.code_base, Some(slots * INSTRUCTION_BYTES), self.base_addr, data_bytes, issues);
    }
}

/// Record the problems of a code region of `code_bytes` bytes from
/// `code_base` (`None` when its size does not fit in 64 bits) beside a data
/// region of `data_bytes` from `base_addr` (when known): a code base that is
/// not a multiple of 4 (`not_multiple`), a region running past the end of
/// the address space (`overflow`), and the two overlapping (`overlap`,
/// reported at `code_base`). An empty code region overlaps nothing.
pub(crate) fn check_regions(
    loc: &str,
    code_base: u64,
    code_bytes: Option<u64>,
    base_addr: u64,
    data_bytes: Option<u64>,
    issues: &mut Issues,
) {
    let at = |field: &str| field_loc(loc, field);
    let code_end = code_bytes.and_then(|b| code_base.checked_add(b));
    if !code_base.is_multiple_of(INSTRUCTION_BYTES) {
        issues.push(
            at("code_base"),
            "not_multiple",
            format!("code_base must be a multiple of {INSTRUCTION_BYTES}, got {code_base:#x}"),
        );
    } else if code_end.is_none() {
        issues.push(at("code_base"), "overflow", "the code region runs past the end of the address space");
    }
    let Some(bytes) = data_bytes else { return };
    match (base_addr.checked_add(bytes), code_end) {
        (None, _) => issues.push(
            at("base_addr"),
            "overflow",
            format!("the data region ({bytes} bytes from {base_addr:#x}) runs past the end of the address space"),
        ),
        (Some(data_end), Some(code_end)) if code_end > code_base => issues.check(
            data_end <= code_base || code_end <= base_addr,
            at("code_base"),
            "overlap",
            format!(
                "the code region [{code_base:#x}, {code_end:#x}) overlaps the data region [{base_addr:#x}, {data_end:#x}); move code_base or base_addr"
            ),
        ),
        _ => {}
    }
}

/// Where a leaf generator's next data access goes: the part that differs
/// between stream, uniform, zipf and chase.
pub(crate) trait AddrGen: Send + 'static {
    /// Byte offset of the next data access from the start of the data
    /// region. `rng` is the generator's own address stream.
    fn next_offset(&mut self, rng: &mut Rng) -> u64;

    /// The program site (a static load/store instruction pair) that made the
    /// offset just returned, for generators that model one per data
    /// structure: a stream's array. Each site's loads and stores then come
    /// from one pc each, as in real code, where an instruction walks one
    /// array. `None` (the default) rotates through the pcs instead.
    fn site(&self) -> Option<usize> {
        None
    }
}

/// Spreads a fractional number of instructions over accesses exactly: a
/// 32.32 fixed-point accumulator adds the average each access and emits the
/// integer part. With average `q`, the first `k` accesses carry
/// `floor(k * q)` instructions in total (`q` rounded to 2^-32).
#[derive(Debug, Clone)]
pub(crate) struct InstrSpread {
    step: u64,
    acc: u64,
}

impl InstrSpread {
    /// A spreader for an average of `per_access` (validated to be in [1, 1e6]).
    pub fn new(per_access: f64) -> InstrSpread {
        InstrSpread { step: (per_access * (1u64 << INSTR_FRAC_BITS) as f64).round() as u64, acc: 0 }
    }

    /// Instructions for the next access.
    #[inline(always)]
    pub fn next(&mut self) -> u32 {
        let t = self.acc + self.step;
        self.acc = t & ((1 << INSTR_FRAC_BITS) - 1);
        (t >> INSTR_FRAC_BITS) as u32
    }
}

/// The instruction-fetch stream: a walk over the code region in 4-byte
/// steps. After each instruction, with probability 1/8 a branch is taken;
/// half of the taken branches are loop back-edges (back by 1 to 64
/// instructions, stopping at the region's start), the other half jump to a
/// uniformly random instruction of the region. Otherwise the walk goes to the
/// next instruction, wrapping from the region's end to its start.
#[derive(Debug, Clone)]
pub(crate) struct CodeWalker {
    base: u64,
    slots: u64,
    pos: u64,
    rng: Rng,
}

impl CodeWalker {
    /// A walk over `slots` instructions from `base`, starting at `base`.
    pub fn new(base: u64, slots: u64, rng: Rng) -> CodeWalker {
        CodeWalker { base, slots, pos: 0, rng }
    }

    /// Address of the next instruction fetched.
    #[inline]
    pub fn next(&mut self) -> u64 {
        let addr = self.base + self.pos * INSTRUCTION_BYTES;
        let r = self.rng.next_u64();
        if r >> TAKEN_BRANCH_SHIFT == 0 {
            if r & 1 == 0 {
                let back = ((r >> 1) % MAX_LOOP_BACK) + 1;
                self.pos = self.pos.saturating_sub(back);
            } else {
                self.pos = self.rng.below(self.slots);
            }
        } else {
            self.pos += 1;
            if self.pos == self.slots {
                self.pos = 0;
            }
        }
        addr
    }
}

/// Random streams of one leaf generator, each derived from the seed and the
/// generator's component path plus a suffix, so that e.g. changing the store
/// fraction does not change the sequence of data addresses.
pub(crate) fn stream_rng(ctx: &WorkloadCtx, purpose: &str) -> Rng {
    Rng::for_component(ctx.seed, &format!("{}#{purpose}", ctx.component))
}

/// The driver of a leaf generator: a generic address source plus everything
/// common. See the module docs of `synthetic` for the rules it implements.
pub(crate) struct Leaf<G: AddrGen> {
    gen: G,
    addr_rng: Rng,
    kind_rng: Rng,
    code: CodeWalker,
    instrs: InstrSpread,
    base: u64,
    size: u16,
    /// False when every data access is a load and there are no ifetches:
    /// then no kind is drawn.
    draw_kind: bool,
    /// A 53-bit draw below this is an ifetch...
    ifetch_below: u64,
    /// ...else below this a store, else a load.
    store_below: u64,
    /// Data pcs of loads (index 0) and stores (index 1), used round-robin;
    /// both non-empty. Indexed by kind so the choice has no branch.
    pcs: [Box<[u64]>; 2],
    next_pc: [usize; 2],
    /// Every data pc; site `s` loads with `all_pcs[2s]` and stores with
    /// `all_pcs[2s + 1]` (modulo their number).
    all_pcs: Box<[u64]>,
    remaining: u64,
    /// Total length when bounded.
    total: Option<u64>,
}

/// Split `pcs` between store and load instructions in proportion to the
/// store share of data accesses, keeping at least one of each kind that can
/// occur. Returns the number of store pcs.
fn store_pc_count(pcs: usize, store_fraction: f64, ifetch_fraction: f64) -> usize {
    let data = 1.0 - ifetch_fraction;
    if pcs <= 1 || store_fraction <= 0.0 || data <= 0.0 {
        return 0;
    }
    let share = (store_fraction / data).min(1.0);
    if share >= 1.0 {
        return pcs;
    }
    ((pcs as f64 * share).round() as usize).clamp(1, pcs - 1)
}

impl<G: AddrGen> Leaf<G> {
    /// A driver for `gen` with the (validated) common parameters.
    pub fn new(gen: G, common: &Common, ctx: &WorkloadCtx, length: Length) -> Leaf<G> {
        let slots = common.code_bytes / INSTRUCTION_BYTES;
        // Data pcs: distinct, seeded positions in the code region.
        let pcs = common.pcs as usize;
        let layout = Permutation::new(slots, &mut stream_rng(ctx, "pcs"));
        let all: Vec<u64> = (0..pcs as u64).map(|i| common.code_base + layout.apply(i) * INSTRUCTION_BYTES).collect();
        let all_pcs: Box<[u64]> = all.clone().into();
        let stores = store_pc_count(pcs, common.store_fraction, common.ifetch_fraction);
        let (store_pcs, load_pcs) = all.split_at(stores);
        let store_pcs: Box<[u64]> = if store_pcs.is_empty() { load_pcs.into() } else { store_pcs.into() };
        let load_pcs: Box<[u64]> = if load_pcs.is_empty() { store_pcs.clone() } else { load_pcs.into() };
        let scale = |f: f64| ((f * FRACTION_ONE as f64).round() as u64).min(FRACTION_ONE);
        let ifetch_below = scale(common.ifetch_fraction);
        let store_below = (ifetch_below + scale(common.store_fraction)).min(FRACTION_ONE);
        Leaf {
            gen,
            addr_rng: stream_rng(ctx, "addr"),
            kind_rng: stream_rng(ctx, "kind"),
            code: CodeWalker::new(common.code_base, slots, stream_rng(ctx, "code")),
            instrs: InstrSpread::new(common.instructions_per_access),
            base: common.base_addr,
            size: common.access_bytes,
            draw_kind: store_below > 0,
            ifetch_below,
            store_below,
            pcs: [load_pcs, store_pcs],
            next_pc: [0, 0],
            all_pcs,
            remaining: match length {
                Length::Own => common.accesses,
                Length::Unbounded => u64::MAX,
            },
            total: (length == Length::Own).then_some(common.accesses),
        }
    }

    #[inline(always)]
    fn next(&mut self) -> Access {
        let instrs = self.instrs.next();
        let r = if self.draw_kind { self.kind_rng.next_u64() >> 11 } else { u64::MAX };
        if r < self.ifetch_below {
            let addr = VirtAddr(self.code.next());
            return Access { addr, pc: addr, instrs, size: INSTRUCTION_BYTES as u16, kind: AccessKind::Ifetch };
        }
        let addr = VirtAddr(self.base + self.gen.next_offset(&mut self.addr_rng));
        // Loads and stores are mixed at random, so a branch on the kind would
        // be mispredicted often; index by it instead.
        let store = (r < self.store_below) as usize;
        let pc = match self.gen.site() {
            Some(site) => self.all_pcs[(2 * site + store) % self.all_pcs.len()],
            None => {
                let group = &self.pcs[store];
                let i = self.next_pc[store];
                self.next_pc[store] = if i + 1 == group.len() { 0 } else { i + 1 };
                group[i]
            }
        };
        Access { addr, pc: VirtAddr(pc), instrs, size: self.size, kind: [AccessKind::Load, AccessKind::Store][store] }
    }
}

impl<G: AddrGen> Workload for Leaf<G> {
    fn fill(&mut self, buf: &mut [Access]) -> Result<usize> {
        let n = (buf.len() as u64).min(self.remaining) as usize;
        for slot in &mut buf[..n] {
            *slot = self.next();
        }
        if self.total.is_some() {
            self.remaining -= n as u64;
        }
        Ok(n)
    }

    fn len_hint(&self) -> Option<u64> {
        self.total
    }
}

/// Box a validated leaf generator.
pub(crate) fn build_leaf<G: AddrGen>(gen: G, common: &Common, ctx: &WorkloadCtx, length: Length) -> Box<dyn Workload> {
    Box::new(Leaf::new(gen, common, ctx, length))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_spread_exactly() {
        for q in [1.0, 1.5, 2.25, 3.0, 7.3, 1.0 + 1.0 / 3.0] {
            let mut s = InstrSpread::new(q);
            let mut total = 0u64;
            for k in 1..=100_000u64 {
                let i = s.next();
                assert!(i == q.floor() as u32 || i == q.ceil() as u32, "{q}: {i}");
                total += i as u64;
                let exact = k as f64 * q;
                assert!((total as f64 - exact).abs() <= 1.0, "q = {q}, k = {k}: {total} vs {exact}");
            }
        }
        // 2.5 alternates 2, 3 (hand computed: acc 0.5, 0, 0.5, ...).
        let mut s = InstrSpread::new(2.5);
        assert_eq!((0..4).map(|_| s.next()).collect::<Vec<_>>(), [2, 3, 2, 3]);
    }

    #[test]
    fn store_pcs_follow_the_store_share() {
        assert_eq!(store_pc_count(16, 0.3, 0.0), 5); // 4.8 rounds to 5
        assert_eq!(store_pc_count(16, 0.0, 0.0), 0);
        assert_eq!(store_pc_count(16, 1.0, 0.0), 16);
        assert_eq!(store_pc_count(16, 0.001, 0.0), 1); // at least one
        assert_eq!(store_pc_count(16, 0.999, 0.0), 15); // at least one load pc
        assert_eq!(store_pc_count(10, 0.25, 0.5), 5); // half the data accesses
        assert_eq!(store_pc_count(1, 0.5, 0.0), 0); // one shared pc
    }

    #[test]
    fn code_walk_stays_in_the_region_and_is_mostly_sequential() {
        let (base, slots) = (0x40_0000u64, 256u64);
        let mut w = CodeWalker::new(base, slots, Rng::from_seed(4));
        let mut prev = w.next();
        let (mut sequential, n) = (0u32, 100_000u32);
        for _ in 0..n {
            let a = w.next();
            assert!(a >= base && a < base + slots * 4 && a & 3 == 0, "{a:#x}");
            if a == prev + 4 || (a == base && prev == base + (slots - 1) * 4) {
                sequential += 1;
            }
            prev = a;
        }
        // 7/8 of steps are sequential (a random jump lands on the next
        // instruction with probability 1/256, adding 0.0002); one standard
        // deviation of the fraction is 0.001, the band is about +-5.
        let f = sequential as f64 / n as f64;
        assert!((0.870..0.881).contains(&f), "{f}");
    }
}
