//! Thin provisioning of the hypervisor cache over time (seed 004, part
//! B1; spec cache-locking.md, sections 1.2 and 3.2): the VMs' block
//! request streams, each through its own LRU share of one cache (the
//! `Pool`), issued at their recorded times ([`run`]) or by VMs that the
//! engine schedules ([`BlockCache`]); the shares fixed at an equal split (`static`,
//! the baseline), moved every interval by the provisioning rules
//! (`dynamic`, `mem::provisioning`), or fixed at sizes chosen from each
//! VM's miss-ratio curve over its whole stream (`mrc`, a further baseline:
//! the split that an oracle of the curves would pick, by UCP's lookahead).
//!
//! Time: each VM serves its requests one at a time, in arrival order (a
//! request starts at its arrival, or when the one before it ends), each
//! block costing a hit's or a miss's time; a request's response time is
//! its end less its arrival. The VMs share nothing but the cache's
//! capacity, so requests are served in order of their start, and an
//! interval closes, measuring each VM and applying the rules, before the
//! first request that starts after it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::hcache::request_blocks;
use crate::mem::blocklru::BlockLru;
use crate::mem::provisioning::{Action, Interval, Policy, ProvisionParams, Provisioning, Thresholds};
use crate::trace::mrc::{MrcOptions, MrcPass};

/// One VM's run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VmRun {
    pub vm: u32,
    /// In a run of the engine, the task that issued its requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<u32>,
    pub trace: String,
    pub requests: u64,
    /// Blocks requested, hit and missed.
    pub blocks: u64,
    pub hits: u64,
    pub misses: u64,
    /// From its first arrival to its last request's end, in seconds.
    pub completion_s: f64,
    pub mean_response_ms: f64,
    pub p95_response_ms: f64,
    /// When its share first filled (the end of the first interval at which
    /// it held as many blocks as it was given), in seconds; none if never.
    pub full_at_s: Option<f64>,
    /// Its share at the start, at most and at the end, in blocks.
    pub first_alloc: u64,
    pub peak_alloc: u64,
    pub final_alloc: u64,
    /// Intervals at which rule 4 reported its replacement.
    pub replacement_flags: u64,
}

/// One VM at the end of one interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesRow {
    pub time_s: f64,
    pub vm: u32,
    /// Its share and the blocks it held, in blocks.
    pub alloc: u64,
    pub used: u64,
    /// Requests started and blocks missed in the interval.
    pub requests: u64,
    pub misses: u64,
    /// Blocks it took and gave at the interval's end.
    pub borrowed: u64,
    pub released: u64,
}

/// A run: per VM, the intervals, and the thresholds the rules used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProvisionRun {
    pub vms: Vec<VmRun>,
    pub series: Vec<SeriesRow>,
    pub thresholds: Vec<Thresholds>,
    /// The blocks the VMs share, and the free pool at the end.
    pub lines: u64,
    pub pool: u64,
}

/// A VM's requests: arrival (ns, stretched), its think time and its blocks.
struct Stream {
    arrivals: Vec<u64>,
    /// The time between the end of request `i - 1` (its arrival plus the
    /// response time the trace recorded, if any) and the arrival of `i`
    /// (stretched; 0 for the first): the VM's work between two requests.
    think: Vec<u64>,
    /// Request `i`'s blocks are `blocks[starts[i]..starts[i + 1]]`.
    starts: Vec<usize>,
    blocks: Vec<u64>,
}

impl Stream {
    fn request(&self, i: usize) -> &[u64] {
        &self.blocks[self.starts[i]..self.starts[i + 1]]
    }
}

fn stream(path: &Path, params: &ProvisionParams, scale: f64) -> Result<Stream> {
    let mut requests = request_blocks(path, params.block_format, &params.kinds, params.line_bytes)?;
    requests.sort_by_key(|r| r.time_ns);
    let mut s = Stream { arrivals: Vec::new(), think: Vec::new(), starts: vec![0], blocks: Vec::new() };
    let mut ended = 0u64;
    for r in requests {
        s.think.push(if s.arrivals.is_empty() { 0 } else { r.time_ns.saturating_sub(ended) });
        ended = ended.max(r.time_ns + r.response_ns.unwrap_or(0));
        s.arrivals.push(r.time_ns);
        s.blocks.extend(r.blocks);
        s.starts.push(s.blocks.len());
    }
    let stretch = |t: &mut u64| *t = (*t as f64 * scale).round() as u64;
    s.arrivals.iter_mut().chain(s.think.iter_mut()).for_each(stretch);
    Ok(s)
}

/// Everything a run needs before its first request: the VMs' streams, the
/// blocks they share, the interval, the thresholds and the starting shares.
struct Setup {
    streams: Vec<Stream>,
    lines: u64,
    interval: u64,
    thresholds: Vec<Thresholds>,
    shares: Option<Vec<u64>>,
}

fn setup(params: &ProvisionParams, traces: &[PathBuf], key: &str, loc: &str) -> Result<Setup> {
    if traces.is_empty() {
        return Err(Error::config(key, "out_of_range", "give at least one block trace, one per VM"));
    }
    let interval = params.validate(traces.len(), loc)?;
    let streams = traces
        .iter()
        .enumerate()
        .map(|(v, p)| stream(p, params, params.time_scale.of(v)))
        .collect::<Result<Vec<_>>>()?;
    let lines = (params.cache_bytes.0 - params.hypervisor_bytes.0) / params.line_bytes as u64;
    let thresholds = match params.thresholds.is_empty() {
        false => params.thresholds.clone(),
        true => calibrate(params, &streams, lines, interval),
    };
    let shares = match params.policy {
        Policy::Mrc => Some(mrc_shares(params, &streams, lines)),
        _ => (!params.shares.is_empty()).then(|| params.shares.clone()),
    };
    Ok(Setup { streams, lines, interval, thresholds, shares })
}

/// Run the VMs' block traces (`traces[i]` is VM `i`'s) through the cache,
/// each request arriving at its (stretched) time in the trace.
pub fn run(params: &ProvisionParams, traces: &[PathBuf]) -> Result<ProvisionRun> {
    let Setup { streams, lines, interval, thresholds, shares } = setup(params, traces, "traces", "")?;
    let mut run = replay(params, &streams, lines, interval, thresholds, shares);
    name_traces(&mut run, traces);
    Ok(run)
}

fn name_traces(run: &mut ProvisionRun, traces: &[PathBuf]) {
    for (vm, path) in run.vms.iter_mut().zip(traces) {
        vm.trace = path.display().to_string();
    }
}

/// The cache in a run of the engine: each VM's requests issued by its task
/// (see `engine::io`), request `i` once the task has run for the request's
/// think time since request `i - 1` was served; the cache serves it when
/// it is issued.
pub struct BlockCache {
    pool: Pool,
    streams: Vec<Stream>,
    traces: Vec<PathBuf>,
}

impl BlockCache {
    /// The cache of `params` (found at `loc`) for the VMs whose traces are
    /// `traces`. The thresholds, if measured, and `mrc`'s shares come from
    /// the traces' recorded times (as in [`run`]).
    pub fn new(params: &ProvisionParams, traces: Vec<PathBuf>, loc: &str) -> Result<BlockCache> {
        let Setup { streams, lines, interval, thresholds, shares } = setup(params, &traces, "tasks", loc)?;
        let pool = Pool::new(params, lines, interval, thresholds, shares);
        Ok(BlockCache { pool, streams, traces })
    }

    /// VM `vm`'s requests.
    pub fn requests(&self, vm: usize) -> usize {
        self.streams[vm].arrivals.len()
    }

    /// The time, in ns, VM `vm` works before it issues request `i`, if it has one.
    pub fn think_ns(&self, vm: usize, i: usize) -> Option<u64> {
        self.streams[vm].think.get(i).copied()
    }

    /// VM `vm` issues its request `i` at `now` (ns): when it has been served.
    pub fn serve(&mut self, vm: usize, i: usize, now: u64) -> u64 {
        self.pool.serve(vm, now, now, self.streams[vm].request(i))
    }

    /// The run's figures, the intervals closed up to the last request;
    /// `tasks[v]` issued VM `v`'s requests.
    pub fn finish(self, tasks: &[u32]) -> ProvisionRun {
        let mut run = self.pool.finish();
        name_traces(&mut run, &self.traces);
        for (vm, &task) in run.vms.iter_mut().zip(tasks) {
            vm.task = Some(task);
        }
        run
    }
}

/// The thresholds spec 1.2 measures under a heavy workload: each VM's
/// median requests and misses per interval over the intervals in which it
/// started a request, in a run of the equal split; `C_Threshold`,
/// `threshold_share` of its equal share (at least one block).
fn calibrate(params: &ProvisionParams, streams: &[Stream], lines: u64, interval: u64) -> Vec<Thresholds> {
    let n = streams.len() as u64;
    let quantum = ((params.threshold_share * (lines / n) as f64).round() as u64).max(1);
    let placeholder = vec![Thresholds { requests: 0, misses: 0, lines: quantum }; streams.len()];
    let mut fixed = params.clone();
    fixed.policy = Policy::Static;
    let base = replay(&fixed, streams, lines, interval, placeholder, None);
    let median = |mut v: Vec<u64>| -> u64 {
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(0)
    };
    (0..streams.len() as u32)
        .map(|vm| {
            let busy: Vec<&SeriesRow> = base.series.iter().filter(|r| r.vm == vm && r.requests > 0).collect();
            Thresholds {
                requests: median(busy.iter().map(|r| r.requests).collect()),
                misses: median(busy.iter().map(|r| r.misses).collect()),
                lines: quantum,
            }
        })
        .collect()
}

/// One VM as it runs.
struct Vm {
    cache: BlockLru,
    /// When its previous request ended (the next cannot start before).
    free_at: u64,
    first_arrival: Option<u64>,
    requests: u64,
    hits: u64,
    misses: u64,
    responses: Vec<u64>,
    now: Interval,
    full_at: Option<u64>,
    peak: u64,
    flags: u64,
}

/// Shares from the VMs' LRU miss-ratio curves (SHARDS at `mrc_sample`):
/// quanta handed out by UCP's lookahead (Qureshi and Patt, MICRO 2006):
/// each round, the VM whose misses fall most per quantum over any number
/// of further quanta gets that many, until none are left; each VM starts
/// with one quantum.
fn mrc_shares(params: &ProvisionParams, streams: &[Stream], lines: u64) -> Vec<u64> {
    let n = streams.len() as u64;
    let quantum = params.mrc_quantum.unwrap_or((lines / 64).max(1)).min(lines / n).max(1);
    let options =
        MrcOptions { sample_rate: (params.mrc_sample < 1.0).then_some(params.mrc_sample), ..MrcOptions::default() };
    let curves: Vec<_> = streams
        .iter()
        .map(|s| {
            let mut pass = MrcPass::new(&options).expect("the options are valid");
            s.blocks.iter().for_each(|&b| pass.record_line(b));
            pass.finish()
        })
        .collect();
    let misses = |v: usize, quanta: u64| -> f64 {
        let c = &curves[v];
        c.references as f64 - c.hits(quanta * quantum)
    };
    let mut given = vec![1u64; streams.len()];
    let mut left = lines / quantum - n;
    while left > 0 {
        let mut best = (0.0f64, 0usize, 1u64);
        for (v, &have) in given.iter().enumerate() {
            for k in 1..=left {
                let gain = (misses(v, have) - misses(v, have + k)) / k as f64;
                if gain > best.0 {
                    best = (gain, v, k);
                }
            }
        }
        if best.0 <= 0.0 {
            break;
        }
        given[best.1] += best.2;
        left -= best.2;
    }
    given.iter().map(|&q| q * quantum).collect()
}

/// The VMs' requests, each at its arrival, in order of their start.
fn replay(
    params: &ProvisionParams,
    streams: &[Stream],
    lines: u64,
    interval: u64,
    thresholds: Vec<Thresholds>,
    shares: Option<Vec<u64>>,
) -> ProvisionRun {
    let mut pool = Pool::new(params, lines, interval, thresholds, shares);
    let mut next = vec![0usize; streams.len()];
    loop {
        let start_of = |v: usize| streams[v].arrivals.get(next[v]).map(|&a| (a.max(pool.vms[v].free_at), v));
        let Some((start, v)) = (0..streams.len()).filter_map(start_of).min() else { break };
        let i = next[v];
        pool.serve(v, streams[v].arrivals[i], start, streams[v].request(i));
        next[v] += 1;
    }
    pool.finish()
}

/// The cache's shares and the VMs' figures as requests are served.
struct Pool {
    policy: Policy,
    lines: u64,
    hit_ns: u64,
    miss_ns: u64,
    interval: u64,
    /// The end of the interval in progress.
    boundary: u64,
    prov: Provisioning,
    first_alloc: Vec<u64>,
    vms: Vec<Vm>,
    series: Vec<SeriesRow>,
}

impl Pool {
    fn new(
        params: &ProvisionParams,
        lines: u64,
        interval: u64,
        thresholds: Vec<Thresholds>,
        shares: Option<Vec<u64>>,
    ) -> Pool {
        let mut prov = Provisioning::new(lines, thresholds);
        if let Some(shares) = shares {
            prov.pool = lines - shares.iter().sum::<u64>();
            prov.alloc = shares;
        }
        let vms = (prov.alloc.iter())
            .map(|&a| Vm {
                cache: BlockLru::new(a),
                free_at: 0,
                first_arrival: None,
                requests: 0,
                hits: 0,
                misses: 0,
                responses: Vec::new(),
                now: Interval::default(),
                full_at: None,
                peak: a,
                flags: 0,
            })
            .collect();
        Pool {
            policy: params.policy,
            lines,
            hit_ns: (params.hit_us * 1e3).round() as u64,
            miss_ns: (params.io.miss_us() * 1e3).round() as u64,
            interval,
            boundary: interval,
            first_alloc: prov.alloc.clone(),
            prov,
            vms,
            series: Vec::new(),
        }
    }

    /// VM `v`'s request, arrived at `arrival` and begun at `start` (not
    /// before its previous one ended), over `blocks`: when it ends. The
    /// intervals that ended before `start` close first.
    fn serve(&mut self, v: usize, arrival: u64, start: u64, blocks: &[u64]) -> u64 {
        while start >= self.boundary {
            self.close(self.boundary);
            self.boundary += self.interval;
        }
        let vm = &mut self.vms[v];
        let mut end = start.max(vm.free_at);
        for &b in blocks {
            if vm.cache.access(b) {
                vm.hits += 1;
                end += self.hit_ns;
            } else {
                vm.misses += 1;
                vm.now.misses += 1;
                end += self.miss_ns;
            }
        }
        vm.first_arrival.get_or_insert(arrival);
        vm.responses.push(end - arrival);
        vm.free_at = end;
        vm.requests += 1;
        vm.now.requests += 1;
        end
    }

    /// The last interval closed; every VM's figures.
    fn finish(mut self) -> ProvisionRun {
        self.close(self.boundary);
        let vms = (self.vms.into_iter().enumerate())
            .map(|(i, mut vm)| {
                let first = vm.first_arrival.unwrap_or(0);
                vm.responses.sort_unstable();
                let n = vm.responses.len();
                let mean = if n > 0 { vm.responses.iter().sum::<u64>() as f64 / n as f64 } else { 0.0 };
                let p95 = if n > 0 { vm.responses[(95 * n).div_ceil(100) - 1] as f64 } else { 0.0 };
                VmRun {
                    vm: i as u32,
                    task: None,
                    trace: String::new(),
                    requests: vm.requests,
                    blocks: vm.hits + vm.misses,
                    hits: vm.hits,
                    misses: vm.misses,
                    completion_s: vm.free_at.saturating_sub(first) as f64 * 1e-9,
                    mean_response_ms: mean * 1e-6,
                    p95_response_ms: p95 * 1e-6,
                    full_at_s: vm.full_at.map(|t| t as f64 * 1e-9),
                    first_alloc: self.first_alloc[i],
                    peak_alloc: vm.peak,
                    final_alloc: vm.cache.capacity(),
                    replacement_flags: vm.flags,
                }
            })
            .collect();
        let thresholds = self.prov.thresholds.clone();
        ProvisionRun { vms, series: self.series, thresholds, lines: self.lines, pool: self.prov.pool }
    }

    /// The end of the interval at `time`: every VM measured, the rules
    /// applied (dynamic), the shares resized, a series row per VM.
    fn close(&mut self, time: u64) {
        let seen: Vec<Interval> = self.vms.iter().map(|vm| Interval { used: vm.cache.len(), ..vm.now }).collect();
        let actions = match self.policy {
            Policy::Static | Policy::Mrc => Vec::new(),
            Policy::Dynamic => self.prov.step(&seen),
        };
        let n = self.vms.len();
        let (mut borrowed, mut released) = (vec![0u64; n], vec![0u64; n]);
        for a in actions {
            match a {
                Action::Borrow { vm, from, lines } => {
                    borrowed[vm] += lines;
                    if let Some(d) = from {
                        released[d] += lines;
                    }
                }
                Action::Release { vm, lines } => released[vm] += lines,
                Action::Replacement { vm } => self.vms[vm].flags += 1,
            }
        }
        for (v, vm) in self.vms.iter_mut().enumerate() {
            if vm.full_at.is_none() && seen[v].used >= vm.cache.capacity() && vm.cache.capacity() > 0 {
                vm.full_at = Some(time);
            }
            let alloc = self.prov.alloc[v];
            self.series.push(SeriesRow {
                time_s: time as f64 * 1e-9,
                vm: v as u32,
                alloc,
                used: seen[v].used,
                requests: seen[v].requests,
                misses: seen[v].misses,
                borrowed: borrowed[v],
                released: released[v],
            });
            vm.cache.resize(alloc);
            vm.peak = vm.peak.max(alloc);
            vm.now = Interval::default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::partition::IoParams;

    fn stream_of(requests: &[(u64, &[u64])]) -> Stream {
        let mut s = Stream { arrivals: Vec::new(), think: Vec::new(), starts: vec![0], blocks: Vec::new() };
        for (t, blocks) in requests {
            s.think.push(0);
            s.arrivals.push(*t);
            s.blocks.extend_from_slice(blocks);
            s.starts.push(s.blocks.len());
        }
        s
    }

    #[test]
    fn a_vm_serves_its_requests_one_at_a_time() {
        // Hits cost 1 us, misses 10 us; two VMs of 2 blocks each, static.
        let params = ProvisionParams {
            policy: Policy::Static,
            hit_us: 1.0,
            io: IoParams { fc_us: 0.0, controller_us: 10.0, seek_us: 0.0, rotation_us: 0.0, controller_hit: 0.0 },
            ..ProvisionParams::default()
        };
        let a = stream_of(&[(0, &[1, 2]), (5_000, &[1]), (100_000, &[3, 1])]);
        let b = stream_of(&[(0, &[7])]);
        let t = vec![Thresholds { requests: 1, misses: 1, lines: 1 }; 2];
        let run = replay(&params, &[a, b], 4, 1_000_000_000, t, None);
        let vm = &run.vms[0];
        // 1 and 2 miss: 0-20 us; 1 arrives at 5 us, waits, hits: 20-21 us;
        // at 100 us 3 misses (evicting 2) and 1 hits: 100-111 us.
        assert_eq!((vm.hits, vm.misses, vm.requests), (2, 3, 3));
        assert_eq!(vm.completion_s, 111e-6);
        assert!((vm.mean_response_ms - (20.0 + 16.0 + 11.0) / 3.0 * 1e-3).abs() < 1e-12);
        assert_eq!(vm.p95_response_ms, 20e-3);
        assert_eq!((run.vms[1].misses, run.vms[1].completion_s), (1, 10e-6));
        // One interval, closed at 1 s: VM 0 holds 2 of its 2 blocks.
        assert_eq!(run.series.len(), 2);
        assert_eq!((run.series[0].alloc, run.series[0].used, run.series[0].requests), (2, 2, 3));
        assert_eq!(vm.full_at_s, Some(1.0));
    }

    #[test]
    fn the_rules_move_blocks_at_each_intervals_end() {
        // VM 0 misses on every request (rule 1), VM 1 is idle with room
        // (rules 2 and 6): at 1 ms VM 1 gives 2 blocks to the pool and VM 0
        // takes them.
        let params = ProvisionParams { hit_us: 0.0, ..ProvisionParams::default() };
        let busy: Vec<(u64, Vec<u64>)> = (0..20).map(|i| (i * 100_000, vec![i])).collect();
        let busy: Vec<(u64, &[u64])> = busy.iter().map(|(t, b)| (*t, b.as_slice())).collect();
        let a = stream_of(&busy);
        let b = stream_of(&[(0, &[100])]);
        let t = vec![Thresholds { requests: 0, misses: 0, lines: 2 }, Thresholds { requests: 5, misses: 5, lines: 2 }];
        let run = replay(&params, &[a, b], 16, 1_000_000, t, None);
        let at_1ms: Vec<&SeriesRow> = run.series.iter().filter(|r| r.time_s == 1e-3).collect();
        assert_eq!((at_1ms[0].borrowed, at_1ms[1].released), (2, 2));
        assert_eq!((at_1ms[0].alloc, at_1ms[1].alloc), (10, 6));
        assert!(run.vms[0].final_alloc > 8 && run.vms[1].final_alloc < 8);
        // Every interval, the shares and the pool add up to the cache.
        for pair in run.series.chunks(2) {
            assert!(pair[0].alloc + pair[1].alloc <= 16);
        }
        assert_eq!(run.vms[0].final_alloc + run.vms[1].final_alloc + run.pool, 16);
    }

    #[test]
    fn mrc_shares_go_where_the_curves_say_misses_fall() {
        // VM 0 loops over 12 blocks (a share of 12 holds it: every miss but
        // the first 12 goes), VM 1 streams (no share helps): of 16 blocks in
        // quanta of 4, VM 0 gets 12 and VM 1 keeps its one quantum.
        let looped: Vec<(u64, Vec<u64>)> = (0..600).map(|i| (i, vec![i % 12])).collect();
        let looped: Vec<(u64, &[u64])> = looped.iter().map(|(t, b)| (*t, b.as_slice())).collect();
        let streamed: Vec<(u64, Vec<u64>)> = (0..600).map(|i| (i, vec![1000 + i])).collect();
        let streamed: Vec<(u64, &[u64])> = streamed.iter().map(|(t, b)| (*t, b.as_slice())).collect();
        let params = ProvisionParams { policy: Policy::Mrc, mrc_quantum: Some(4), ..ProvisionParams::default() };
        let shares = mrc_shares(&params, &[stream_of(&looped), stream_of(&streamed)], 16);
        assert_eq!(shares, [12, 4]);
    }
}
