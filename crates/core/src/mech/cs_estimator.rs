//! `cs-estimator`: the elastic-time-slicing spec's hardware estimator of
//! context-switch misses (a sampled auxiliary tag directory, §2).
//!
//! The counting happens in the machine's LLC paths, in the
//! [`Atd`](crate::mem::atd::Atd) this mechanism installs there when it is
//! attached ([`Mechanism::attach`]): an extra
//! branch per fill and demand hit below the L1 when installed, nothing at
//! all in runs without it (no per-access hook, so the engine keeps running
//! accesses in batches). This mechanism owns the protocol around it:
//!
//! - it asks the engine for a *mark* inside each slice ([`Mechanism::mark`])
//!   and emulates a switch of the running task there: at the slice's
//!   midpoint (`timing = "midpoint"`, the spec's option A), a fixed
//!   `window` before its end (`"end-window"`, option B), or every `period`
//!   of the task's running time (`"oracle"`, option C: each window's count
//!   is an estimate; meant for runs without real switches between);
//! - at the task's switch-out (oracle: at each mark) it reads the task's
//!   counts, scales them by the sampling ratio, checks the two halves'
//!   divergence and *publishes* the estimate through the event's context
//!   ([`EventCtx::published`]), from where the engine copies it into the
//!   task's view for schedulers (`TaskView::switch_estimate`, read by the
//!   `ets` policy) and into the `slices` table;
//! - with `partition = true` it splits each LLC's ways equally among its
//!   socket's cores and keeps each task in the partition of the core it
//!   runs on (the spec's shared-LLC experiments).

use serde::{Deserialize, Serialize};

use super::{counters, EventCtx, Mark, MechBuild, Mechanism, MechanismParams};

use crate::error::{Error, Result};
use crate::events::Event;
use crate::mem::machine::Machine;
use crate::units::{Budget, Span};

/// When the emulated switch happens within a slice (spec §2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EmulateAt {
    /// At the middle of each slice (option A); the count covers its second half.
    #[default]
    Midpoint,
    /// `window` before the end of each slice (option B).
    EndWindow,
    /// Every `period` of running time, each window an estimate (option C).
    Oracle,
}

/// Params of `cs-estimator`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CsEstimatorParams {
    /// One LLC set in this many is sampled: a power of two (16: the spec's 1/16).
    pub sample_ratio: u32,
    /// When to emulate the switch: `"midpoint"`, `"end-window"` or `"oracle"`.
    pub timing: EmulateAt,
    /// Length of the counted window before a slice's end (`end-window`).
    pub window: Span,
    /// Length of each window (`oracle`).
    pub period: Span,
    /// Largest `|c1 - c2| / (c1 + c2)` of the two halves' counts for which
    /// an estimate is trusted (spec §2.5 leaves it in (0.15, 0.30)).
    pub divergence: f64,
    /// Split each LLC's ways equally among its socket's cores.
    pub partition: bool,
}

impl Default for CsEstimatorParams {
    fn default() -> Self {
        CsEstimatorParams {
            sample_ratio: 16,
            timing: EmulateAt::Midpoint,
            window: Span::millis(1.25),
            period: Span::millis(2.5),
            divergence: 0.2,
            partition: false,
        }
    }
}

counters! {
    /// What `cs-estimator` counts.
    pub struct CsEstimatorCounters {
        /// Emulated switches.
        emulated_switches,
        /// Estimates published.
        estimates,
        /// Of those, the ones whose halves diverged too much.
        unreliable,
        /// Switch misses counted in the sample sets, summed over estimates.
        sampled_misses,
        /// The estimates summed (sampled counts times the sampling ratio).
        estimated_misses,
        /// Switch misses a full tag directory (every set) counted, summed
        /// over the same windows: the reference of the sampling error.
        full_misses,
    }
}

impl MechanismParams for CsEstimatorParams {
    /// Build the mechanism.
    fn build(&self, ctx: &MechBuild) -> Result<Box<dyn Mechanism>> {
        let Some(llc) = &ctx.machine.llc else {
            return Err(Error::config(&ctx.loc, "invalid_value", "cs-estimator needs machine.llc"));
        };
        let sets = llc.lines() / llc.effective_ways().max(1);
        let ratio = self.sample_ratio;
        if !ratio.is_power_of_two() || ratio as u64 > sets {
            let message = format!("expected a power of two from 1 to the LLC's {sets} sets, got {ratio}");
            return Err(Error::config(ctx.at("sample_ratio"), "out_of_range", message));
        }
        if !(self.divergence.is_finite() && self.divergence >= 0.0) {
            let message = format!("expected a ratio of at least 0, got {}", self.divergence);
            return Err(Error::config(ctx.at("divergence"), "out_of_range", message));
        }
        if self.partition && llc.effective_ways() < ctx.machine.cores_per_socket as u64 {
            let message = format!(
                "{} LLC ways cannot be split among {} cores",
                llc.effective_ways(),
                ctx.machine.cores_per_socket
            );
            return Err(Error::config(ctx.at("partition"), "invalid_value", message));
        }
        let cycles = |span: Span, key: &str| match span.resolve(ctx.machine.frequency_ghz) {
            Budget::Cycles(n) if n > 0 => Ok(n),
            _ => Err(Error::config(ctx.at(key), "out_of_range", format!("expected a time above 0, got {span}"))),
        };
        Ok(Box::new(CsEstimator {
            params: *self,
            shift: ratio.trailing_zeros(),
            window: cycles(self.window, "window")?,
            period: cycles(self.period, "period")?,
            armed: Vec::new(),
            counters: CsEstimatorCounters::default(),
        }))
    }
}

struct CsEstimator {
    params: CsEstimatorParams,
    shift: u32,
    window: u64,
    period: u64,
    /// Per task: an emulated switch happened in its current schedule.
    armed: Vec<bool>,
    counters: CsEstimatorCounters,
}

impl CsEstimator {
    fn armed(&mut self, task: usize) -> &mut bool {
        if self.armed.len() <= task {
            self.armed.resize(task + 1, false);
        }
        &mut self.armed[task]
    }

    /// Read `task`'s counts into an estimate and publish it.
    fn publish(&mut self, ctx: &mut EventCtx<'_>, task: crate::types::TaskId) {
        let Some(atd) = ctx.machine.atd_mut() else { return };
        let mut estimate = atd.estimate(task, self.params.divergence);
        estimate.time = ctx.record.time;
        *ctx.published = Some(estimate);
        let c = &mut self.counters;
        c.estimates += 1;
        c.unreliable += !estimate.reliable as u64;
        c.sampled_misses += estimate.count.sampled();
        c.estimated_misses += estimate.misses;
        c.full_misses += estimate.count.full;
    }
}

impl Mechanism for CsEstimator {
    fn name(&self) -> &str {
        "cs-estimator"
    }

    fn mark(&self, slice_cycles: Option<u64>) -> Option<Mark> {
        match self.params.timing {
            EmulateAt::Midpoint => slice_cycles.map(|n| Mark { after: n / 2, every: None }),
            EmulateAt::EndWindow => slice_cycles.map(|n| Mark { after: n.saturating_sub(self.window), every: None }),
            EmulateAt::Oracle => Some(Mark { after: self.period, every: Some(self.period) }),
        }
    }

    fn attach(&mut self, machine: &mut Machine) -> Result<()> {
        machine.install_atd(self.shift);
        if self.params.partition {
            machine.partition_llc_ways();
        }
        Ok(())
    }

    fn on_event(&mut self, mut ctx: EventCtx<'_>) -> Result<u64> {
        let (Some(task), Some(core)) = (ctx.record.task, ctx.record.core) else { return Ok(0) };
        match ctx.record.event {
            Event::SwitchIn if self.params.partition => ctx.machine.assign_llc_partition(task, core),
            Event::Mark => {
                if self.params.timing == EmulateAt::Oracle && *self.armed(task.0 as usize) {
                    self.publish(&mut ctx, task);
                }
                ctx.machine.emulate_switch(task);
                self.counters.emulated_switches += 1;
                *self.armed(task.0 as usize) = true;
            }
            Event::SwitchOut => {
                let armed = std::mem::take(self.armed(task.0 as usize));
                // Oracle: the window the switch cut short is not an estimate.
                if armed && self.params.timing != EmulateAt::Oracle {
                    self.publish(&mut ctx, task);
                }
            }
            _ => {}
        }
        Ok(0)
    }

    fn reset_stats(&mut self) {
        self.counters = CsEstimatorCounters::default();
    }

    fn results(&mut self) -> Vec<(&'static str, u64)> {
        self.counters.named()
    }
}
