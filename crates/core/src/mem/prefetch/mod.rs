//! Hardware prefetchers attached to a cache level (the baselines the
//! migration prefetcher is compared with): next-line, stream and pc-based
//! stride, one file each, registered by one line in [`prefetchers!`].
//!
//! A prefetcher sees the demand references that reach its cache (loads,
//! stores and fetches; not write-backs, page walks or other prefetches),
//! each with its physical line, pc and whether it hit, and proposes lines to
//! fetch. The machine drops a proposal whose line is already present and
//! fills the others into that cache through the levels below, as requests
//! of kind [`ReqKind::Prefetch`](super::replacement::ReqKind::Prefetch): they
//! are counted at every level they reach but charge no cycles to the
//! program, since a prefetch runs beside it. Prefetches are thus timely by
//! construction (the trace-driven model has no in-flight requests); a
//! prefetch that arrives too late is counted as useful all the same.
//!
//! Prefetchers see physical lines, where consecutive virtual pages need not
//! be consecutive frames, so no proposal leaves the page of the reference
//! that triggered it, as in hardware that prefetches on physical addresses.

pub mod next_line;
pub mod stream;
pub mod stride;

use crate::error::Result;
use crate::types::{LineAddr, VirtAddr};

/// A demand reference as a prefetcher sees it.
#[derive(Debug, Clone, Copy)]
pub struct Observed {
    /// Physical line referenced.
    pub line: LineAddr,
    /// Pc of the instruction (0 if unknown).
    pub pc: VirtAddr,
    /// Whether the cache held the line.
    pub hit: bool,
}

/// Most lines a prefetcher may propose per reference.
pub const MAX_DEGREE: usize = 16;

/// Lines proposed for one reference: a fixed buffer, so that prefetching
/// allocates nothing per reference.
#[derive(Debug, Clone, Copy)]
pub struct Proposals {
    lines: [LineAddr; MAX_DEGREE],
    len: usize,
    /// First line past the triggering reference's page.
    page_end: u64,
    /// First line of that page.
    page_start: u64,
}

impl Proposals {
    /// An empty buffer for a reference to `line`, in pages of `2^page_lines_shift` lines.
    pub fn new(line: LineAddr, page_lines_shift: u32) -> Proposals {
        let page_start = line.0 >> page_lines_shift << page_lines_shift;
        Proposals {
            lines: [LineAddr(0); MAX_DEGREE],
            len: 0,
            page_start,
            page_end: page_start + (1 << page_lines_shift),
        }
    }

    /// Propose `line` if it lies in the triggering page and the buffer has
    /// room; returns whether it was taken.
    pub fn push(&mut self, line: i128) -> bool {
        let inside = (self.page_start as i128..self.page_end as i128).contains(&line);
        if !inside || self.len == MAX_DEGREE {
            return false;
        }
        self.lines[self.len] = LineAddr(line as u64);
        self.len += 1;
        true
    }

    /// The proposed lines, in order.
    pub fn lines(&self) -> &[LineAddr] {
        &self.lines[..self.len]
    }
}

/// What a prefetcher is built for.
#[derive(Debug, Clone)]
pub struct PrefetchCtx {
    /// Lines per page, as a shift.
    pub page_lines_shift: u32,
    /// Config key path of the selection, for errors.
    pub loc: String,
}

/// The contract of a prefetcher.
pub trait Prefetch {
    /// Learn from one demand reference and propose lines to fetch.
    fn observe(&mut self, seen: &Observed, out: &mut Proposals);
}

/// A degree (lines per trigger) of 1 to [`MAX_DEGREE`], checked at `loc`.
fn check_degree(degree: u32, loc: &str) -> Result<()> {
    if (1..=MAX_DEGREE as u32).contains(&degree) {
        Ok(())
    } else {
        Err(crate::error::Error::config(
            crate::error::join_path(loc, "params.degree"),
            "out_of_range",
            format!("expected 1 to {MAX_DEGREE}, got {degree}"),
        ))
    }
}

macro_rules! prefetchers {
    ($($name:literal => $variant:ident($prefetcher:ty, $params:ty)),+ $(,)?) => {
        crate::register! {
            /// A prefetcher selection: `{ kind = "stream" }`.
            family "prefetcher", PrefetcherConfig,
            fn build(&self, ctx: &PrefetchCtx) -> Result<Prefetcher>;
            $($name => $variant($params)),+
        }

        /// The prefetchers, as one enum (no dynamic dispatch).
        #[derive(Debug, Clone)]
        pub enum Prefetcher {
            $(
                #[doc = concat!("`", $name, "`")]
                $variant($prefetcher)
            ),+
        }

        impl Prefetch for Prefetcher {
            #[inline]
            fn observe(&mut self, seen: &Observed, out: &mut Proposals) {
                match self { $(Prefetcher::$variant(p) => p.observe(seen, out)),+ }
            }
        }
    };
}

prefetchers! {
    "next_line" => NextLine(next_line::NextLine, next_line::NextLineParams),
    "stream" => Stream(stream::Stream, stream::StreamParams),
    "stride" => Stride(stride::Stride, stride::StrideParams),
}

/// Type a selection found at `loc` and return it with every param filled in,
/// recording any problem.
pub fn check(
    raw: &crate::plugin::PluginConfig,
    loc: &str,
    issues: &mut crate::error::Issues,
) -> Option<crate::plugin::PluginConfig> {
    let config = issues.absorb(PrefetcherConfig::parse(raw, loc))?;
    issues.absorb(config.build(&PrefetchCtx { page_lines_shift: 6, loc: loc.to_string() }))?;
    Some(config.to_raw())
}

/// Build the prefetcher selected by `raw` (found at `loc`).
pub fn build(raw: &crate::plugin::PluginConfig, page_lines_shift: u32, loc: &str) -> Result<Prefetcher> {
    PrefetcherConfig::parse(raw, loc)?.build(&PrefetchCtx { page_lines_shift, loc: loc.to_string() })
}
