//! The LRU-stack insertion policies (Qureshi et al., ISCA 2007), shared by
//! `lip`, `bip` and `dip`.
//!
//! Each is LRU (hits move a line to MRU, the victim is the LRU line) except
//! for where a filled line enters the recency stack: at MRU, as in LRU, or
//! at LRU. A policy is a [`Recency`] with its own [`Insert`] rule; the stack
//! is kept as [`Stamps`].

use super::{ReplCtx, Replacement, Stamps, Touch, VictimQuery};
use crate::error::Result;

/// Where a filled line enters the recency stack.
pub trait Insert: Clone + std::fmt::Debug {
    /// Whether a line filled in `set` goes to MRU (else to LRU).
    fn at_mru(&mut self, set: usize) -> bool;

    /// A demand miss in `set` (set dueling learns here). Optional.
    fn on_miss(&mut self, _set: usize) {}

    /// Whether the rule looks at nothing beyond the set
    /// ([`Replacement::sets_apart`]). Optional; the default is `false`.
    fn sets_apart(&self) -> bool {
        false
    }
}

/// An LRU-stack policy with the insertion rule `I`.
#[derive(Debug, Clone)]
pub struct Recency<I> {
    pub(crate) stamps: Stamps,
    pub(crate) insert: I,
}

impl<I: Insert> Recency<I> {
    /// The policy for the lines of `ctx`'s cache.
    pub(crate) fn new(ctx: &ReplCtx, insert: I) -> Result<Recency<I>> {
        Ok(Recency { stamps: Stamps::new(ctx)?, insert })
    }
}

impl<I: Insert> Replacement for Recency<I> {
    fn sets_apart(&self) -> bool {
        self.insert.sets_apart()
    }

    #[inline(always)]
    fn on_hit(&mut self, t: &Touch) {
        self.stamps.stamp(t.set, t.way);
    }

    #[inline(always)]
    fn on_fill(&mut self, t: &Touch) {
        if self.insert.at_mru(t.set) {
            self.stamps.stamp(t.set, t.way);
        } else {
            self.stamps.stamp_oldest(t.set, t.way);
        }
    }

    #[inline(always)]
    fn on_miss(&mut self, t: &Touch) {
        self.insert.on_miss(t.set);
    }

    #[inline]
    fn victim(&mut self, q: &VictimQuery) -> usize {
        self.stamps.oldest(q.set, q.locked)
    }
}
