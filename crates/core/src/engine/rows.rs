//! What a run records besides its totals: the end of the warm-up, the
//! per-task intervals and post-migration windows, and the results document
//! built when the run ends.

use super::{Engine, Mark, Window};
use crate::counters::Counts;
use crate::events::{Locality, Timing};
use crate::mech::SeriesRow;
use crate::results::{
    CacheResult, CoreResult, CoreTotals, Host, IntervalRow, MechanismResult, Results, Summary, TaskResult,
    TaskSchedCounts, TlbResult, WindowRow,
};
use crate::types::{CoreId, TaskId};

impl Engine {
    /// The end of warm-up, at time `now`: forget every counter; intervals start now.
    pub(super) fn start_measuring(&mut self, now: u64) {
        self.measuring = true;
        self.warm_time = now;
        self.machine.reset_stats();
        self.mechanisms.iter_mut().for_each(|m| m.reset_stats());
        for (t, run) in self.tasks.iter_mut().enumerate() {
            let spec = &self.views[t].spec;
            run.counts = TaskSchedCounts { asid: spec.asid.0, vm: spec.vm, ..Default::default() };
            run.window = None;
            run.interval = self.config.interval.map(|every| Mark {
                index: 0,
                start: self.views[t].last_ran,
                counts: Counts::default(),
                end: self.views[t].instructions + every,
            });
        }
        for (c, core) in self.cores.iter_mut().enumerate() {
            core.totals = CoreTotals::default();
            core.stint = Counts::default();
            if let Some(t) = self.running[c] {
                if let Some(m) = &mut self.tasks[t.0 as usize].interval {
                    m.start = core.clock;
                }
            }
        }
    }

    pub(super) fn open_window(
        &mut self,
        task: TaskId,
        now: u64,
        (from, to): (CoreId, CoreId),
        locality: Locality,
        timing: Timing,
    ) {
        let Some(size) = self.config.window else { return };
        self.close_window(task, false);
        let ti = task.0 as usize;
        let row = WindowRow {
            task: task.0,
            start: now,
            from: from.0,
            to: to.0,
            locality,
            timing,
            complete: false,
            cycles: 0.0,
            cpi: 0.0,
            counts: Counts::default(),
        };
        let counts = Counts::of(&self.machine.tasks[ti], self.tasks[ti].counts.overhead_cycles);
        self.tasks[ti].window = Some(Window { row, counts, end: self.views[ti].instructions + size });
    }

    pub(super) fn close_window(&mut self, task: TaskId, complete: bool) {
        let ti = task.0 as usize;
        let Some(w) = self.tasks[ti].window.take() else { return };
        let counts = Counts::of(&self.machine.tasks[ti], self.tasks[ti].counts.overhead_cycles).since(&w.counts);
        let cycles = counts.cycles(self.base_cpi);
        let cpi = if counts.instructions > 0 { cycles / counts.instructions as f64 } else { 0.0 };
        self.windows.push(WindowRow { complete, cycles, cpi, counts, ..w.row });
    }

    /// Record `task`'s current interval (it ran on core `c`); open the next if `more`.
    pub(super) fn close_interval(&mut self, task: TaskId, c: usize, more: bool) {
        let ti = task.0 as usize;
        let Some(mark) = self.tasks[ti].interval.take() else { return };
        let now = self.cores[c].clock;
        let counts = Counts::of(&self.machine.tasks[ti], self.tasks[ti].counts.overhead_cycles);
        let stretch = counts.since(&mark.counts);
        if stretch.accesses > 0 {
            self.intervals.push(IntervalRow::new(
                task.0,
                mark.index,
                (mark.start, now),
                c as u32,
                stretch,
                self.base_cpi,
            ));
        }
        if more {
            let end = mark.end + self.config.interval.expect("an interval was open");
            self.tasks[ti].interval = Some(Mark { index: mark.index + 1, start: now, counts, end });
        }
    }

    /// A task finished on core `c`: its last interval and window end.
    pub(super) fn close_rows(&mut self, task: TaskId, c: usize) {
        self.close_interval(task, c, false);
        self.close_window(task, false);
    }

    /// The run ends: close the stints of running tasks and every open row.
    pub(super) fn close(&mut self) {
        for c in 0..self.cores.len() {
            if let Some(t) = self.running[c] {
                let stint = Counts::of(&self.machine.tasks[t.0 as usize], 0).since(&self.cores[c].stint);
                self.cores[c].totals.counts.add(&stint);
                self.close_rows(t, c);
            }
        }
        for t in 0..self.tasks.len() {
            let task = TaskId(t as u32);
            let core = self.views[t].last_core.map_or(0, |c| c.0 as usize);
            self.close_rows(task, core);
        }
    }

    pub(super) fn results(&mut self, warmup_accesses: u64, wall_seconds: f64) -> Results {
        let m = &self.machine;
        let tasks: Vec<TaskResult> = (0..self.tasks.len())
            .map(|i| {
                let name = self.views[i].spec.name.clone();
                TaskResult::new(i as u32, name, &m.tasks[i], self.tasks[i].counts, self.base_cpi)
            })
            .collect();
        let cores: Vec<CoreResult> = (0..self.cores.len())
            .map(|c| {
                let core = CoreId(c as u32);
                CoreResult::new(c as u32, self.topology.socket_of(core), self.cores[c].totals, self.base_cpi)
            })
            .collect();
        let accesses: u64 = tasks.iter().map(|t| t.stats.accesses).sum();
        let instructions: u64 = tasks.iter().map(|t| t.stats.instructions).sum();
        let cycles = cores.iter().map(|c| c.cycles).max().unwrap_or(0);
        // Rows are recorded as the cores' chunks come, which depends on
        // the batch size; their order in the results must not.
        self.intervals.sort_by_key(|r| (r.task, r.index));
        self.windows.sort_by_key(|r| (r.task, r.start));
        self.requests.sort_by_key(|r| (r.task, r.request));
        Results {
            version: env!("CARGO_PKG_VERSION"),
            config: self.config.to_json(),
            summary: Summary {
                tasks: tasks.len() as u64,
                accesses,
                instructions,
                cycles,
                cpi: if instructions > 0 { cycles as f64 / instructions as f64 } else { 0.0 },
                switches: tasks.iter().map(|t| t.switches).sum(),
                migrations: tasks.iter().map(|t| t.migrations_local + t.migrations_remote).sum(),
                warmup_accesses,
            },
            host: Host {
                wall_seconds,
                accesses_per_second: if wall_seconds > 0.0 {
                    (accesses + warmup_accesses) as f64 / wall_seconds
                } else {
                    0.0
                },
                threads: self.threads.clone(),
            },
            tasks,
            cores,
            intervals: std::mem::take(&mut self.intervals),
            windows: std::mem::take(&mut self.windows),
            slices: std::mem::take(&mut self.slices),
            events: std::mem::take(&mut self.events),
            caches: m
                .caches()
                .iter()
                .zip(m.cache_levels())
                .map(|(c, &level)| CacheResult { path: c.path.clone(), level, stats: c.stats.clone() })
                .collect(),
            tlbs: m.tlbs().iter().map(|t| TlbResult { path: t.path.clone(), stats: t.stats.clone() }).collect(),
            memory: m.node_stats(),
            traffic: m.traffic().map_or_else(Vec::new, <[_]>::to_vec),
            pages: if self.config.config.stats.pages { m.sampled_pages() } else { Vec::new() },
            regions: self.mechanisms.iter().flat_map(|mech| mech.regions()).collect(),
            requests: std::mem::take(&mut self.requests),
            block_cache: self.block_cache.take().map(|cache| {
                let io = self.tasks.iter().filter(|t| t.io.is_some());
                cache.finish(&io.map(|t| t.id.0).collect::<Vec<_>>())
            }),
            series: (self.mechanisms.iter_mut().enumerate())
                .flat_map(|(i, mech)| {
                    mech.series().into_iter().map(move |row| SeriesRow { mechanism: i as u32, ..row })
                })
                .collect(),
            mechanisms: (self.mechanisms.iter_mut().enumerate())
                .map(|(i, mech)| MechanismResult {
                    index: i as u32,
                    kind: mech.name().to_string(),
                    stats: mech.results(),
                })
                .collect(),
        }
    }
}
