//! `kind = "phases"`: a program that moves through phases, each running a
//! different workload for a set number of accesses, optionally repeated.
//!
//! Real programs change behaviour over time (initialise, compute, reduce),
//! and the cost of a context switch or migration depends on which phase it
//! lands in. Phases let a task change its working set mid-run, which is what
//! working-set estimators and migration prefetchers have to track.
//!
//! Rules: phase `i` takes exactly its entry's `accesses` from its workload;
//! the nested workload's own `accesses` is ignored (leaf generators, `loop`,
//! `phases` and `mix` nested here run unbounded). Each phase's workload is
//! built once and keeps its state across passes: on the second pass a stream
//! continues where it stopped, it does not restart. A nested workload that
//! ends before its phase does (a trace file) ends the phase early. `phases`
//! nested inside another `phases` or a `mix` repeats forever and ignores
//! `repeat`.

use serde::{Deserialize, Serialize};

use crate::error::{Issues, Result};
use crate::plugin::PluginConfig;
use crate::trace::{Workload, WorkloadConfig, WorkloadCtx};
use crate::types::Access;

use super::common::{field_loc, Length};

/// One phase: a workload and how many accesses it runs for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    /// Accesses in this phase (at least 1).
    pub accesses: u64,
    /// The workload this phase runs (`{ kind = "...", params = {...} }`).
    pub workload: PluginConfig,
}

/// Parameters of `kind = "phases"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PhasesParams {
    /// The phases, run in order (default: 500,000 accesses of `stream`, then
    /// 500,000 of `zipf`, both with default params).
    pub phases: Vec<Phase>,
    /// Passes over the whole list (default 1).
    pub repeat: u64,
}

impl Default for PhasesParams {
    fn default() -> Self {
        PhasesParams {
            phases: vec![
                Phase { accesses: 500_000, workload: PluginConfig::named("stream") },
                Phase { accesses: 500_000, workload: PluginConfig::named("zipf") },
            ],
            repeat: 1,
        }
    }
}

/// A built phase.
struct Running {
    workload: Box<dyn Workload>,
    accesses: u64,
}

/// The phase sequencer.
struct Phases {
    phases: Vec<Running>,
    /// Passes to run; `None` repeats forever.
    passes: Option<u64>,
    pass: u64,
    index: usize,
    /// Accesses left in the current phase.
    left: u64,
    /// Accesses produced in the current pass (a pass producing none ends an
    /// endless sequence whose nested workloads have all ended).
    produced_this_pass: u64,
    finished: bool,
    total: Option<u64>,
}

impl Phases {
    /// Move to the next phase; false when the sequence is over.
    fn advance(&mut self) -> bool {
        self.index += 1;
        if self.index == self.phases.len() {
            self.pass += 1;
            let last_pass = self.passes.is_some_and(|p| self.pass >= p);
            if last_pass || self.produced_this_pass == 0 {
                self.finished = true;
                return false;
            }
            self.index = 0;
            self.produced_this_pass = 0;
        }
        self.left = self.phases[self.index].accesses;
        true
    }
}

impl Workload for Phases {
    fn fill(&mut self, buf: &mut [Access]) -> Result<usize> {
        let mut done = 0;
        while done < buf.len() && !self.finished {
            if self.left == 0 {
                self.advance();
                continue;
            }
            let want = ((buf.len() - done) as u64).min(self.left) as usize;
            let n = self.phases[self.index].workload.fill(&mut buf[done..done + want])?;
            if n == 0 {
                // The nested workload ended: so does this phase.
                self.left = 0;
                continue;
            }
            done += n;
            self.left -= n as u64;
            self.produced_this_pass += n as u64;
        }
        Ok(done)
    }

    fn len_hint(&self) -> Option<u64> {
        self.total
    }
}

impl PhasesParams {
    /// Validate, build every phase's workload, and build the sequence.
    pub fn build(&self, ctx: &WorkloadCtx) -> Result<Box<dyn Workload>> {
        self.build_with(ctx, Length::Own)
    }

    /// As [`build`](Self::build); `Length::Unbounded` repeats forever.
    pub(crate) fn build_with(&self, ctx: &WorkloadCtx, length: Length) -> Result<Box<dyn Workload>> {
        let mut issues = Issues::default();
        issues.check(
            !self.phases.is_empty(),
            field_loc(&ctx.loc, "phases"),
            "empty",
            "phases must list at least one phase",
        );
        if length == Length::Own {
            issues.check(self.repeat >= 1, field_loc(&ctx.loc, "repeat"), "out_of_range", "repeat must be at least 1");
        }
        let mut phases = Vec::with_capacity(self.phases.len());
        for (i, phase) in self.phases.iter().enumerate() {
            issues.check(
                phase.accesses >= 1,
                field_loc(&ctx.loc, &format!("phases[{i}].accesses")),
                "out_of_range",
                "a phase must run at least 1 access",
            );
            let child = ctx.child(&format!("phase{i}"), &format!("params.phases[{i}].workload"));
            let built = WorkloadConfig::parse(&phase.workload, &child.loc)
                .and_then(|config| super::build_nested(&config, &child));
            if let Some(workload) = issues.absorb(built) {
                phases.push(Running { workload, accesses: phase.accesses });
            }
        }
        issues.finish()?;
        let passes = match length {
            Length::Own => Some(self.repeat),
            Length::Unbounded => None,
        };
        let per_pass = phases.iter().try_fold(0u64, |sum, p| sum.checked_add(p.accesses));
        let total = passes.zip(per_pass).and_then(|(passes, per_pass)| passes.checked_mul(per_pass));
        let left = phases[0].accesses;
        Ok(Box::new(Phases { phases, passes, pass: 0, index: 0, left, produced_this_pass: 0, finished: false, total }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{addrs, build, build_err, take};
    use crate::trace::collect;
    use serde_json::json;

    fn stream_at(base: u64) -> serde_json::Value {
        json!({"kind": "stream", "params": {"working_set_bytes": 64, "base_addr": base,
               "store_fraction": 0.0, "accesses": 1}})
    }

    #[test]
    fn phases_run_in_order_for_their_lengths_and_resume_on_repeat() {
        // Phase 0: 3 accesses of an 8-element stream at 0x1000; phase 1: 2 at
        // 0x2000; two passes. The nested `accesses = 1` is ignored, and the
        // second pass continues each stream where it stopped.
        let mut w = build(
            "phases",
            json!({"phases": [
                {"accesses": 3, "workload": stream_at(0x1000)},
                {"accesses": 2, "workload": stream_at(0x2000)},
            ], "repeat": 2}),
        );
        assert_eq!(w.len_hint(), Some(10));
        let got = addrs(&collect(&mut *w).unwrap());
        let expected = [
            0x1000, 0x1008, 0x1010, 0x2000, 0x2008, // pass 1
            0x1018, 0x1020, 0x1028, 0x2010, 0x2018, // pass 2
        ];
        assert_eq!(got, expected);
    }

    #[test]
    fn phases_fill_across_boundaries_in_small_and_large_buffers() {
        let config = json!({"phases": [
            {"accesses": 1000, "workload": {"kind": "uniform"}},
            {"accesses": 777, "workload": {"kind": "zipf"}},
        ], "repeat": 3});
        let all = collect(&mut *build("phases", config.clone())).unwrap();
        assert_eq!(all.len(), 3 * 1777);
        // The same stream pulled 7 at a time.
        let mut w = build("phases", config);
        let mut small = Vec::new();
        let mut buf = [crate::types::Access::default(); 7];
        loop {
            let n = w.fill(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            small.extend_from_slice(&buf[..n]);
        }
        assert_eq!(small, all);
    }

    #[test]
    fn nested_phases_repeat_forever_inside_a_phase() {
        // An inner two-phase sequence (2 + 1 accesses) run for 7 accesses.
        let inner = json!({"kind": "phases", "params": {"phases": [
            {"accesses": 2, "workload": stream_at(0x1000)},
            {"accesses": 1, "workload": stream_at(0x2000)},
        ]}});
        let mut w = build("phases", json!({"phases": [{"accesses": 7, "workload": inner}]}));
        let got = addrs(&take(&mut *w, 100));
        assert_eq!(got, [0x1000, 0x1008, 0x2000, 0x1010, 0x1018, 0x2008, 0x1020]);
    }

    #[test]
    fn nested_errors_carry_the_full_path() {
        let e = build_err(
            "phases",
            json!({"phases": [
                {"accesses": 10, "workload": {"kind": "stream"}},
                {"accesses": 10, "workload": {"kind": "zipf", "params": {"exponent": -1.0}}},
            ]}),
        );
        assert_eq!(e, [("workload.params.phases[1].workload.params.exponent".into(), "out_of_range")]);
        let e = build_err(
            "phases",
            json!({"phases": [
                {"accesses": 0, "workload": {"kind": "zipff"}},
                {"accesses": 5, "workload": {"kind": "uniform", "params": {"sise": 3}}},
            ], "repeat": 0}),
        );
        assert_eq!(
            e,
            [
                ("workload.params.repeat".into(), "out_of_range"),
                ("workload.params.phases[0].accesses".into(), "out_of_range"),
                ("workload.params.phases[0].workload.kind".into(), "unknown_kind"),
                ("workload.params.phases[1].workload.params.sise".into(), "unknown_field"),
            ]
        );
        let e = build_err("phases", json!({"phases": []}));
        assert_eq!(e, [("workload.params.phases".into(), "empty")]);
        // A missing field is reported at the field itself.
        let e = build_err("phases", json!({"phases": [{"workload": {"kind": "stream"}}]}));
        assert_eq!(e, [("workload.params.phases[0].accesses".into(), "missing_field")]);
    }
}
