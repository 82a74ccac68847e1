//! Building an engine from a validated configuration: the machine, the
//! workloads (on producer threads when the host has CPUs for them), the
//! scheduler and the mechanisms. Every building error surfaces here.

use std::collections::VecDeque;
use std::path::PathBuf;

use super::io::IoStream;
use super::requests::Server;
use super::{CoreRun, Engine, TaskRun, POOLED_TASKS};
use crate::config::{footprint, ValidConfig};
use crate::error::Result;
use crate::mech::Mechanism;
use crate::mem::machine::{Machine, Protocol};
use crate::results::TaskSchedCounts;
use crate::sched::{Scheduler, TaskView};
use crate::thinprov::BlockCache;
use crate::trace::prefetch::Prefetched;
use crate::trace::replay::Replay;
use crate::trace::WorkloadCtx;
use crate::types::{Access, TaskId};
use crate::util::alloc;

impl Engine {
    /// Build the machine, the workloads and the scheduler; `base_dir`
    /// resolves relative trace paths.
    pub fn new(config: ValidConfig, base_dir: Option<PathBuf>) -> Result<Engine> {
        Engine::with_scheduler(config, base_dir, None)
    }

    /// As [`Engine::new`], with a scheduler built elsewhere (a Python
    /// policy) instead of the configured one.
    pub fn with_scheduler(
        config: ValidConfig,
        base_dir: Option<PathBuf>,
        scheduler: Option<Box<dyn Scheduler>>,
    ) -> Result<Engine> {
        let seed = config.config.seed;
        let mut machine = Machine::new(&config.config.machine, seed, "machine")?;
        machine.add_tasks(config.tasks.len());
        let asids: Vec<_> = config.tasks.iter().map(|t| t.info.asid).collect();
        machine.set_address_spaces(&asids);
        let shared = asids.iter().enumerate().any(|(i, a)| asids[..i].contains(a));
        if (shared || machine.has_sampler()) && config.config.machine.coherence == Protocol::Mesi {
            machine.enable_coherence();
        }
        let scheduler = match scheduler {
            Some(s) => s,
            None => config.scheduler.build(&config.sched_build())?,
        };
        let run = &config.config.run;
        let host_cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if run.classify_thread && host_cpus > 1 {
            machine.classify_on_thread()?;
        }
        // A producer thread per task while each can have a host CPU beside
        // the simulation's; beyond that, the spare CPUs' threads shared by
        // all tasks, up to POOLED_TASKS (their buffers add up).
        let n = config.tasks.len();
        let serves = config.tasks.iter().any(|t| t.requests.is_some() || t.io.is_some());
        // A lone task's caches split by set (see `mem::machine::split`),
        // unless a reason below says otherwise.
        let refusal = [
            (!run.split_sets, "run.split_sets is off".to_string()),
            (n != 1, format!("{n} tasks (only a lone task's caches split)")),
            (host_cpus < 2, "the host has one CPU".into()),
            (!config.mechanisms.is_empty(), "a mechanism is configured".into()),
            (serves, "the task serves requests or issues block I/O".into()),
        ];
        let refusal = refusal.into_iter().find(|r| r.0).map(|r| r.1).or_else(|| machine.split_refusal());
        // On two CPUs the second simulates part of the caches, and the task's
        // references are decoded on the simulating thread: a producer beside
        // both made the run slower (docs/performance.md).
        let decodes_here = refusal.is_none() && host_cpus < 3;
        let own_threads = run.prefetch && n < host_cpus && !decodes_here;
        let pooled = run.prefetch && !own_threads && !decodes_here && host_cpus > 1 && n <= POOLED_TASKS;
        // A thread that meets barriers, or a server, stays on the simulation's
        // thread: the barriers and the starts of requests do not travel
        // through a producer's batches.
        let stays = |i: usize, w: &dyn crate::trace::Workload| w.synchronizes() || config.tasks[i].requests.is_some();
        let mut workloads = Vec::with_capacity(n);
        for (i, spec) in config.tasks.iter().enumerate() {
            let ctx = WorkloadCtx {
                seed,
                component: format!("task{i}"),
                loc: spec.workload_loc.clone(),
                base_dir: base_dir.clone(),
                thread: spec.thread,
            };
            let mut workload = spec.workload.build(&ctx)?;
            if spec.requests.is_some() || spec.background || spec.io.is_some() {
                let passes = spec.requests.map(|r| r.count);
                workload = Box::new(Replay::new(spec.workload.clone(), ctx, workload, passes));
            }
            if own_threads && !stays(i, workload.as_ref()) {
                workload = Box::new(Prefetched::new(workload, 4 * run.batch as usize)?);
            }
            workloads.push(workload);
        }
        if pooled {
            let batch = 2 * run.batch as usize;
            let (synced, free): (Vec<_>, Vec<_>) =
                workloads.into_iter().enumerate().partition(|(i, w)| stays(*i, w.as_ref()));
            let (at, free): (Vec<usize>, Vec<_>) = free.into_iter().unzip();
            let pooled = Prefetched::pooled(free, host_cpus - 1, batch)?;
            let mut all: Vec<(usize, Box<dyn crate::trace::Workload>)> = synced;
            all.extend(at.into_iter().zip(pooled.into_iter().map(|p| Box::new(p) as Box<dyn crate::trace::Workload>)));
            all.sort_by_key(|(i, _)| *i);
            workloads = all.into_iter().map(|(_, w)| w).collect();
        }
        // The threads of one process (one asid) that meet at barriers.
        let mut groups: Vec<Vec<TaskId>> = Vec::new();
        let mut group_of = vec![None; n];
        for (i, _) in workloads.iter().enumerate().filter(|(_, w)| w.synchronizes()) {
            let asid = config.tasks[i].info.asid;
            let found = groups.iter().position(|g| config.tasks[g[0].0 as usize].info.asid == asid);
            let g = found.unwrap_or_else(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[g].push(TaskId(i as u32));
            group_of[i] = Some(g);
        }
        // The VMs of the block cache: the tasks with io, in id order.
        let traces: Vec<PathBuf> = (config.tasks.iter().filter_map(|t| t.io.as_ref()))
            .map(|p| base_dir.as_ref().map_or_else(|| PathBuf::from(p), |d| d.join(p)))
            .collect();
        let block_cache = match &config.config.block_cache {
            Some(params) => Some(BlockCache::new(params, traces, "block_cache")?),
            None => None,
        };
        let mut vms = 0;
        let mut tasks = Vec::with_capacity(n);
        for (i, (spec, workload)) in config.tasks.iter().zip(workloads).enumerate() {
            let counts = TaskSchedCounts { asid: spec.info.asid.0, vm: spec.info.vm, ..Default::default() };
            tasks.push(TaskRun {
                id: TaskId(i as u32),
                workload,
                buf: alloc::filled(run.batch as usize, Access::default(), "access buffers", "run.batch")?,
                pos: 0,
                most_instrs: None,
                len: 0,
                accesses: 0,
                ended: false,
                moved_live: false,
                left: None,
                counts,
                interval: None,
                window: None,
                schedule: None,
                published: None,
                group: group_of[i],
                crossed: 0,
                arrived: 0,
                arrived_at: 0,
                blocked: false,
                resume: false,
                begun: 0,
                filled_at: 0,
                cut: false,
                server: spec.requests.map(|plan| Server::new(plan, seed, &format!("task{i}"))),
                background: spec.background,
                io: spec.io.as_ref().map(|_| {
                    vms += 1;
                    IoStream::new(vms - 1)
                }),
            });
        }
        let views = config.tasks.iter().map(|spec| TaskView::new(spec.info.clone())).collect();
        let topology = config.topology();
        let cores = topology.cores() as usize;
        let mut mechanisms: Vec<Box<dyn Mechanism>> = (config.mechanisms.iter().enumerate())
            .map(|(i, m)| m.build(&config.mech_build(i)))
            .collect::<Result<_>>()?;
        for m in &mut mechanisms {
            m.attach(&mut machine)?;
        }
        let gates: Vec<usize> = (0..mechanisms.len()).filter(|&i| mechanisms[i].gates_accesses()).collect();
        let per_access = !gates.is_empty() || mechanisms.iter().any(|m| m.wants_accesses());
        // Sockets apart: nothing that crosses sockets at every reference (a
        // mechanism, a shadow, the tag directory) or counts references
        // across them (warm-up ends only in serial steps; `max_accesses`,
        // the interval and window rows are not split yet), and decisions
        // that do not look at other cores' progress (see `horizon`).
        let apart = run.parallel_sockets
            && !scheduler.reads_others_progress()
            && host_cpus > 1
            && topology.sockets > 1
            && machine.sockets_apart()
            && mechanisms.is_empty()
            && run.max_accesses.is_none()
            && config.config.stats.interval.is_none()
            && config.config.stats.window.is_none()
            && groups.is_empty()
            && !serves;
        let refusal = refusal.or_else(|| (!groups.is_empty()).then(|| "threads meet at barriers".to_string()));
        let threads = match refusal {
            Some(why) => format!("one thread for the caches: {why}"),
            None => {
                machine.split_sets(&config.config.machine, seed)?;
                let mut threads = "the caches split by set over two threads".to_string();
                if decodes_here && run.prefetch {
                    threads +=
                        format!(", the references decoded on the first (the host has {host_cpus} CPUs)").as_str();
                }
                threads
            }
        };
        Ok(Engine {
            threads,
            memory_limit: footprint::limit(&config.config),
            base_cpi: config.config.machine.base_cpi,
            max_stall: machine.max_stall(),
            apart,
            accesses_apart: 0,
            next_tick: scheduler.period(),
            periods: (mechanisms.iter().enumerate())
                .filter_map(|(i, m)| m.period().map(|p| (i, p.max(1), p.max(1))))
                .collect(),
            unfinished: config.tasks.iter().filter(|t| !t.background).count(),
            measuring: config.config.run.warmup_accesses == 0,
            config,
            machine,
            scheduler,
            mechanisms,
            per_access,
            gates,
            topology,
            tasks,
            views,
            queues: vec![VecDeque::new(); cores],
            running: vec![None; cores],
            cores: (0..cores).map(|_| CoreRun::default()).collect(),
            generation: 0,
            done: 0,
            warm_time: 0,
            events: Vec::new(),
            intervals: Vec::new(),
            windows: Vec::new(),
            slices: Vec::new(),
            slice_marks: Vec::new(),
            groups,
            timers: Default::default(),
            requests: Vec::new(),
            block_cache,
        })
    }
}
