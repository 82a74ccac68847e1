//! `fifo`: first in, first out.
//!
//! The victim is the line filled longest ago; hits change nothing.

use serde::{Deserialize, Serialize};

use super::{Policy, ReplCtx, Replacement, Stamps, Touch, VictimQuery};
use crate::error::Result;

/// `fifo` has no parameters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FifoParams {}

impl FifoParams {
    /// Build the policy for a cache of the given geometry.
    pub fn build(&self, ctx: &ReplCtx) -> Result<Policy> {
        Ok(Policy::Fifo(Fifo { filled: Stamps::new(ctx)? }))
    }
}

/// FIFO by fill stamps.
#[derive(Debug, Clone)]
pub struct Fifo {
    filled: Stamps,
}

impl Replacement for Fifo {
    fn sets_apart(&self) -> bool {
        true
    }

    #[inline(always)]
    fn on_hit(&mut self, _t: &Touch) {}

    #[inline(always)]
    fn on_fill(&mut self, t: &Touch) {
        self.filled.stamp(t.set, t.way);
    }

    fn rehit_is_noop(&self) -> bool {
        true
    }

    #[inline]
    fn victim(&mut self, q: &VictimQuery) -> usize {
        self.filled.oldest(q.set, q.locked)
    }
}

#[cfg(test)]
mod tests {
    use super::super::conformance::{ctx, touch};
    use super::*;
    use crate::mem::replacement::ReqKind;
    use crate::types::{TaskId, VirtAddr};

    #[test]
    fn hits_do_not_save_the_oldest_line() {
        let mut p = FifoParams::default().build(&ctx(2, 3)).unwrap();
        for way in 0..3 {
            p.on_fill(&touch(1, way));
        }
        p.on_hit(&touch(1, 0));
        let q = VictimQuery { set: 1, pc: VirtAddr(0), req: ReqKind::Load, task: TaskId(0), locked: None };
        assert_eq!(p.victim(&q), 0);
        p.on_fill(&touch(1, 0));
        assert_eq!(p.victim(&q), 1);
    }
}
