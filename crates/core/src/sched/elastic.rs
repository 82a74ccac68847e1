//! `ets`: Elastic Time Slicing, round-robin in which a task's next slice
//! grows with the context-switch misses it is estimated to suffer
//! (`docs/elastic-time-slicing.md`, spec §3).
//!
//! The estimate is the one a `cs-estimator` mechanism publishes at each
//! switch-out; the engine hands it to the policy in
//! [`TaskView::switch_estimate`](super::TaskView). The policy never sees the
//! machine: that field is the whole coupling, so any other estimator
//! (an oracle, a Python model) can feed it the same way.
//!
//! - **Slice.** Group `g` of the estimate (`N <= thresholds[0]`: group 0,
//!   `N <= thresholds[1]`: group 1, ..., above the last: the last group)
//!   gets `(g + 1) * quantum` (Table 1: 1,500 / 4,500 / 10,500 misses ->
//!   2.5 / 5 / 7.5 / 10 ms). Only the latest estimate counts; when its two
//!   halves diverged (`reliable = false`) the task keeps the slice it had.
//!   A task starts at `initial * quantum`.
//! - **Fairness.** Each task carries a *pass*: the rounds it has been
//!   charged. A slice of `k * quantum` costs `k` rounds, and a core runs
//!   the waiting task with the lowest pass (queue order on ties). So a task
//!   given `k` quanta is skipped in the next `k - 1` rounds (spec §3.2) and
//!   every task gets one quantum per round on average, as under uniform
//!   slicing; with every slice at one quantum this is plain round-robin.
//! - **Who is elastic.** `elastic` names the tasks whose slices follow the
//!   estimate (default: all); the others always get one quantum (the spec's
//!   experiments make only the application of interest elastic).

use serde::{Deserialize, Serialize};

use super::{SchedBuild, SchedCtx, Scheduler, Slice};
use crate::error::{Error, Result};
use crate::types::{CoreId, TaskId};
use crate::units::{Budget, Span};

/// Params of `ets`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EtsParams {
    /// The base quantum `Q` (the uniform slice ETS is fair against).
    pub quantum: Span,
    /// Upper bounds of the estimate's groups but the last, increasing:
    /// group `g` gets `(g + 1) * quantum`.
    pub thresholds: Vec<u64>,
    /// Slice of every task before its first estimate, in quanta.
    pub initial: u32,
    /// Names of the tasks whose slices follow their estimates (none given:
    /// every task).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elastic: Option<Vec<String>>,
}

impl Default for EtsParams {
    fn default() -> Self {
        EtsParams { quantum: Span::millis(2.5), thresholds: vec![1500, 4500, 10500], initial: 1, elastic: None }
    }
}

impl EtsParams {
    /// Build the policy.
    pub fn build(&self, ctx: &SchedBuild) -> Result<Box<dyn Scheduler>> {
        let quantum = ctx.positive(self.quantum, "quantum")?;
        if let Some(i) = (1..self.thresholds.len()).find(|&i| self.thresholds[i] <= self.thresholds[i - 1]) {
            let message = format!("expected increasing thresholds, got {:?}", self.thresholds);
            return Err(Error::config(ctx.at(&format!("thresholds[{i}]")), "invalid_value", message));
        }
        let groups = self.thresholds.len() as u32 + 1;
        if !(1..=groups).contains(&self.initial) {
            let message = format!("expected 1 to {groups} quanta (one per group), got {}", self.initial);
            return Err(Error::config(ctx.at("initial"), "out_of_range", message));
        }
        let mut elastic = vec![self.elastic.is_none(); ctx.tasks.len()];
        for (i, name) in self.elastic.iter().flatten().enumerate() {
            let Some(t) = ctx.tasks.iter().position(|t| &t.name == name) else {
                let names: Vec<&str> = ctx.tasks.iter().map(|t| t.name.as_str()).collect();
                let message = format!("no task is named '{name}'; tasks: {}", names.join(", "));
                return Err(Error::config(ctx.at(&format!("elastic[{i}]")), "invalid_value", message));
            };
            elastic[t] = true;
        }
        let n = ctx.tasks.len();
        Ok(Box::new(Ets {
            quantum,
            thresholds: self.thresholds.clone(),
            elastic,
            quanta: vec![self.initial; n],
            pass: vec![0; n],
        }))
    }
}

/// The group of `estimate` under `thresholds`, as a number of quanta.
pub fn quanta_for(thresholds: &[u64], estimate: u64) -> u32 {
    thresholds.iter().take_while(|&&t| estimate > t).count() as u32 + 1
}

struct Ets {
    quantum: Budget,
    thresholds: Vec<u64>,
    elastic: Vec<bool>,
    /// Per task: its current slice, in quanta.
    quanta: Vec<u32>,
    /// Per task: rounds charged so far.
    pass: Vec<u64>,
}

impl Scheduler for Ets {
    /// Its decisions read estimates and the queues.
    fn reads_others_progress(&self) -> bool {
        false
    }

    fn pick(&mut self, ctx: &SchedCtx, core: CoreId) -> Result<Option<TaskId>> {
        let queue = &ctx.queues[core.0 as usize];
        Ok(queue.iter().copied().min_by_key(|t| self.pass[t.0 as usize]))
    }

    fn quantum(&mut self, ctx: &SchedCtx, task: TaskId, _: CoreId) -> Result<Slice> {
        let t = task.0 as usize;
        if self.elastic[t] {
            if let Some(e) = ctx.tasks[t].switch_estimate.filter(|e| e.reliable) {
                self.quanta[t] = quanta_for(&self.thresholds, e.misses);
            }
        }
        let k = if self.elastic[t] { self.quanta[t] } else { 1 };
        self.pass[t] += k as u64;
        Ok(Slice::of(match self.quantum {
            Budget::Cycles(n) => Budget::Cycles(n * k as u64),
            Budget::Instructions(n) => Budget::Instructions(n * k as u64),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::atd::{Count, Estimate};
    use crate::sched::testing::{spec, State};
    use crate::sched::TaskState;

    #[test]
    fn table_1_maps_estimates_to_slices() {
        let t = EtsParams::default().thresholds;
        for (n, k) in [(0, 1), (1500, 1), (1501, 2), (4500, 2), (4501, 3), (10500, 3), (10501, 4), (1 << 30, 4)] {
            assert_eq!(quanta_for(&t, n), k, "{n} misses");
        }
    }

    fn estimate(misses: u64, reliable: bool) -> Option<Estimate> {
        Some(Estimate { misses, count: Count::default(), reliable, time: 1 })
    }

    /// Run `rounds` decisions of one core by hand: each picked task runs its
    /// slice and goes to the back of the queue. Task 0's estimate is
    /// `misses` throughout. Returns (task, start, end) per schedule, in ms.
    fn run(tasks: u32, misses: u64, decisions: usize) -> Vec<(u32, f64, f64)> {
        let mut s = State::new(1, 1, (0..tasks as usize).map(spec).collect());
        let mut b = s.build();
        b.frequency_ghz = 4.0;
        let params = EtsParams { elastic: Some(vec!["task0".into()]), ..Default::default() };
        let mut ets = params.build(&b).unwrap();
        for t in 0..tasks {
            s.wait(t, 0);
        }
        s.tasks[0].switch_estimate = estimate(misses, true);
        let (mut now, mut log) = (0u64, Vec::new());
        for _ in 0..decisions {
            let t = ets.pick(&s.ctx(now), CoreId(0)).unwrap().unwrap();
            s.queues[0].retain(|&x| x != t);
            let slice = ets.quantum(&s.ctx(now), t, CoreId(0)).unwrap().cycles.unwrap();
            log.push((t.0, now as f64 / 4e6, (now + slice) as f64 / 4e6));
            now += slice;
            s.queues[0].push_back(t);
            s.tasks[t.0 as usize].state = TaskState::Waiting(CoreId(0));
        }
        log
    }

    /// Gaps (end to start, ms) between consecutive schedules of `task`.
    fn gaps(log: &[(u32, f64, f64)], task: u32) -> Vec<f64> {
        let mine: Vec<_> = log.iter().filter(|r| r.0 == task).collect();
        mine.windows(2).map(|w| w[1].1 - w[0].2).collect()
    }

    #[test]
    fn a_co_runner_s_latency_matches_the_spec_s_worked_values() {
        // Spec §3.3: 4 tasks, task 0 elastic at k quanta; a co-runner's
        // gaps per period, in ms (the first gap, before task 0's first
        // long slice, is left out).
        for (misses, k, period) in
            [(3000, 2, vec![10.0, 5.0]), (6000, 3, vec![5.0, 5.0, 12.5]), (20000, 4, vec![5.0, 5.0, 5.0, 15.0])]
        {
            let log = run(4, misses, 200);
            let g = gaps(&log, 1);
            let steady: Vec<f64> = g[k - 1..].iter().copied().take(period.len() * 5).collect();
            let expected: Vec<f64> = period.iter().copied().cycle().take(steady.len()).collect();
            let rotate = (0..period.len())
                .find(|&r| steady.iter().zip(period.iter().cycle().skip(r)).all(|(a, b)| (a - b).abs() < 1e-9));
            assert!(rotate.is_some(), "k={k}: gaps {steady:?}, expected a rotation of {expected:?}");
            let mean = steady.iter().sum::<f64>() / steady.len() as f64;
            assert!((mean - 7.5).abs() < 1e-9, "k={k}: mean {mean}");
        }
    }

    #[test]
    fn every_task_gets_the_uniform_share_within_one_quantum() {
        for misses in [0, 3000, 6000, 20000] {
            let mut log = run(4, misses, 1001);
            // Stop where task 0 starts a schedule: every task has then run
            // the same number of rounds.
            let last = log.iter().rposition(|r| r.0 == 0).unwrap();
            log.truncate(last);
            let end = log.last().unwrap().2;
            for t in 0..4 {
                let cpu: f64 = log.iter().filter(|r| r.0 == t).map(|r| r.2 - r.1).sum();
                // Uniform slicing gives each of 4 tasks a quarter of the time.
                assert!((cpu - end / 4.0).abs() <= 2.5, "task {t}: {cpu} ms of {end}");
            }
        }
    }

    #[test]
    fn an_unreliable_estimate_keeps_the_slice() {
        let mut s = State::new(1, 1, vec![spec(0)]);
        let mut ets = EtsParams { quantum: Span::cycles(100), ..Default::default() }.build(&s.build()).unwrap();
        s.wait(0, 0);
        let q = |ets: &mut Box<dyn Scheduler>, s: &State| ets.quantum(&s.ctx(0), TaskId(0), CoreId(0)).unwrap();
        assert_eq!(q(&mut ets, &s).cycles, Some(100), "initial: one quantum");
        s.tasks[0].switch_estimate = estimate(5000, true);
        assert_eq!(q(&mut ets, &s).cycles, Some(300));
        s.tasks[0].switch_estimate = estimate(50, false);
        assert_eq!(q(&mut ets, &s).cycles, Some(300), "diverged: kept");
        s.tasks[0].switch_estimate = estimate(50, true);
        assert_eq!(q(&mut ets, &s).cycles, Some(100));
    }

    #[test]
    fn bad_params_name_their_key() {
        let s = State::new(1, 1, vec![spec(0)]);
        let err = |p: EtsParams| p.build(&s.build()).err().unwrap().to_string();
        let e = err(EtsParams { thresholds: vec![10, 5], ..Default::default() });
        assert!(e.contains("scheduler.params.thresholds[1]: expected increasing"), "{e}");
        let e = err(EtsParams { initial: 5, ..Default::default() });
        assert!(e.contains("scheduler.params.initial: expected 1 to 4"), "{e}");
        let e = err(EtsParams { elastic: Some(vec!["nope".into()]), ..Default::default() });
        assert!(e.contains("scheduler.params.elastic[0]: no task is named 'nope'"), "{e}");
    }
}
