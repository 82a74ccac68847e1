//! The engine: pulls accesses from the workload and drives the machine.
//!
//! [`Engine::new`] builds everything from a validated config (the builder
//! step, where every config error surfaces); [`Engine::run`] simulates and
//! returns [`Results`]. Accesses are pulled in batches into a reused buffer,
//! so the hot loop is a tight loop over a slice with no allocation.

use std::path::PathBuf;
use std::time::Instant;

use crate::config::ValidConfig;
use crate::error::{Error, Result};
use crate::mem::machine::Machine;
use crate::stats::{CacheResult, Results, Summary, TaskResult, TlbResult};
use crate::trace::prefetch::Prefetched;
use crate::trace::{Workload, WorkloadCtx};
use crate::types::{Access, Asid, CoreId, TaskId};

/// How far a run has come, handed to the progress callback.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// References simulated so far (warm-up included).
    pub done: u64,
    /// References the run will simulate, if known.
    pub total: Option<u64>,
}

/// References between two progress callbacks (also how often the engine
/// checks for conditions that end a run, such as exhausted memory).
const PROGRESS_EVERY: u64 = 1 << 20;

/// A simulation ready to run.
pub struct Engine {
    config: ValidConfig,
    machine: Machine,
    workload: Box<dyn Workload>,
}

impl Engine {
    /// Build the machine and the workload; `base_dir` resolves relative trace paths.
    pub fn new(config: ValidConfig, base_dir: Option<PathBuf>) -> Result<Engine> {
        let seed = config.config.seed;
        let mut machine = Machine::new(&config.config.machine, seed, "machine")?;
        machine.add_tasks(1);
        let ctx = WorkloadCtx { seed, component: "task0".into(), loc: "workload".into(), base_dir };
        let mut workload = config.workload.build(&ctx)?;
        if config.config.run.prefetch {
            workload = Box::new(Prefetched::new(workload, 4 * config.config.run.batch as usize)?);
        }
        Ok(Engine { config, machine, workload })
    }

    /// The machine, for inspection.
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// Simulate to the end of the workload or `run.max_accesses`, calling
    /// `progress` about every million references; an error from the callback
    /// (e.g. an interrupt) stops the run.
    pub fn run(&mut self, progress: &mut dyn FnMut(Progress) -> Result<()>) -> Result<Results> {
        let started = Instant::now();
        let run = self.config.config.run.clone();
        let warmup = run.warmup_accesses;
        let limit = run.max_accesses.map(|m| m.saturating_add(warmup));
        let total = match (limit, self.workload.len_hint()) {
            (Some(l), Some(h)) => Some(l.min(h)),
            (l, h) => l.or(h),
        };
        let mut buf = vec![Access::default(); run.batch as usize];
        let (core, task, asid) = (CoreId(0), TaskId(0), Asid(0));
        let mut done = 0u64;
        let mut next_report = PROGRESS_EVERY;
        let mut warm = warmup == 0;
        loop {
            let want = limit.map_or(buf.len() as u64, |l| (l - done).min(buf.len() as u64)) as usize;
            if want == 0 {
                break;
            }
            let n = self.workload.fill(&mut buf[..want])?;
            if n == 0 {
                break;
            }
            let mut batch = &buf[..n];
            if !warm && done + n as u64 >= warmup {
                // Split the batch at the end of warm-up.
                let (before, after) = batch.split_at((warmup - done) as usize);
                self.machine.access_batch(core, task, asid, before);
                self.machine.reset_stats();
                done += before.len() as u64;
                batch = after;
                warm = true;
            }
            self.machine.access_batch(core, task, asid, batch);
            done += batch.len() as u64;
            if done >= next_report {
                next_report = done + PROGRESS_EVERY;
                self.check_machine()?;
                progress(Progress { done, total })?;
            }
        }
        self.check_machine()?;
        progress(Progress { done, total: Some(done) })?;
        if !warm {
            // The workload ended inside the warm-up: nothing was measured.
            self.machine.reset_stats();
        }
        Ok(self.results(done.min(warmup), started.elapsed().as_secs_f64()))
    }

    fn check_machine(&self) -> Result<()> {
        if self.machine.memory_exhausted() {
            return Err(Error::Simulation(
                "physical memory exhausted on every NUMA node: raise machine.memory.node_bytes".into(),
            ));
        }
        Ok(())
    }

    fn results(&self, warmup_accesses: u64, wall_seconds: f64) -> Results {
        let m = &self.machine;
        let tasks: Vec<TaskResult> = m
            .tasks
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let cycles = m.cycles_of(TaskId(i as u32));
                TaskResult {
                    task: i as u32,
                    name: format!("task{i}"),
                    cycles,
                    cpi: if s.instructions > 0 { cycles / s.instructions as f64 } else { 0.0 },
                    stats: s.clone(),
                }
            })
            .collect();
        let accesses: u64 = tasks.iter().map(|t| t.stats.accesses).sum();
        let instructions: u64 = tasks.iter().map(|t| t.stats.instructions).sum();
        let cycles = tasks.iter().map(|t| t.cycles).fold(0.0, f64::max).round() as u64;
        Results {
            version: env!("CARGO_PKG_VERSION"),
            config: self.config.to_json(),
            summary: Summary {
                accesses,
                instructions,
                cycles,
                cpi: if instructions > 0 { cycles as f64 / instructions as f64 } else { 0.0 },
                warmup_accesses,
                wall_seconds,
                accesses_per_second: if wall_seconds > 0.0 {
                    (accesses + warmup_accesses) as f64 / wall_seconds
                } else {
                    0.0
                },
            },
            tasks,
            caches: m
                .caches()
                .iter()
                .zip(m.cache_levels())
                .map(|(c, &level)| CacheResult { path: c.path.clone(), level, stats: c.stats.clone() })
                .collect(),
            tlbs: m.tlbs().iter().map(|t| TlbResult { path: t.path.clone(), stats: t.stats.clone() }).collect(),
            memory: m.node_stats(),
        }
    }
}

/// Parse, build and run a configuration given as JSON text, without progress.
pub fn simulate_json(text: &str, base_dir: Option<PathBuf>) -> Result<Results> {
    let config = crate::config::from_json_str(text)?;
    Engine::new(config, base_dir)?.run(&mut |_| Ok(()))
}
