//! `next_line`: on a miss (or on every reference), fetch the next `degree`
//! lines. The simplest sequential prefetcher (Smith, "Cache memories", 1982).

use serde::{Deserialize, Serialize};

use super::{check_degree, Observed, Prefetch, PrefetchCtx, Prefetcher, Proposals};
use crate::error::Result;

/// Parameters of `next_line`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NextLineParams {
    /// Lines fetched per trigger.
    pub degree: u32,
    /// Trigger on misses only (`true`) or on every demand reference.
    pub on_miss_only: bool,
}

impl Default for NextLineParams {
    fn default() -> Self {
        NextLineParams { degree: 1, on_miss_only: true }
    }
}

impl NextLineParams {
    /// Build the prefetcher.
    pub fn build(&self, ctx: &PrefetchCtx) -> Result<Prefetcher> {
        check_degree(self.degree, &ctx.loc)?;
        Ok(Prefetcher::NextLine(NextLine { degree: self.degree, on_miss_only: self.on_miss_only }))
    }
}

/// The next-line prefetcher (stateless).
#[derive(Debug, Clone)]
pub struct NextLine {
    degree: u32,
    on_miss_only: bool,
}

impl Prefetch for NextLine {
    fn observe(&mut self, seen: &Observed, out: &mut Proposals) {
        if seen.hit && self.on_miss_only {
            return;
        }
        for d in 1..=self.degree {
            out.push(seen.line.0 as i128 + d as i128);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{LineAddr, VirtAddr};

    fn observe(p: &mut Prefetcher, line: u64, hit: bool) -> Vec<u64> {
        let mut out = Proposals::new(LineAddr(line), 6);
        p.observe(&Observed { line: LineAddr(line), pc: VirtAddr(0), hit }, &mut out);
        out.lines().iter().map(|l| l.0).collect()
    }

    #[test]
    fn fetches_the_next_lines_of_the_page_on_a_miss() {
        let ctx = PrefetchCtx { page_lines_shift: 6, loc: "l2.prefetcher".into() };
        let mut p = NextLineParams { degree: 2, on_miss_only: true }.build(&ctx).unwrap();
        assert_eq!(observe(&mut p, 100, false), [101, 102]);
        assert_eq!(observe(&mut p, 100, true), [] as [u64; 0], "hits do not trigger");
        // Line 127 ends the page of lines 64..128: nothing beyond it.
        assert_eq!(observe(&mut p, 126, false), [127]);
        let mut every = NextLineParams { degree: 1, on_miss_only: false }.build(&ctx).unwrap();
        assert_eq!(observe(&mut every, 5, true), [6]);
        assert!(NextLineParams { degree: 0, on_miss_only: true }.build(&ctx).is_err());
    }
}
