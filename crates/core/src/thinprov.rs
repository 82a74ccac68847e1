//! Thin provisioning of the hypervisor cache over time (seed 004, part
//! B1; spec cache-locking.md, sections 1.2 and 3.2): the VMs' block
//! request streams, interleaved by their timestamps, each through its own
//! LRU share of one cache; the shares fixed at an equal split (`static`,
//! the baseline), moved every interval by the provisioning rules
//! (`dynamic`, `mem::provisioning`), or fixed at sizes chosen from each
//! VM's miss-ratio curve over its whole stream (`mrc`, a further baseline:
//! the split that an oracle of the curves would pick, by UCP's lookahead).
//!
//! Time: each VM serves its requests one at a time, in arrival order (a
//! request starts at its arrival, or when the one before it ends), each
//! block costing a hit's or a miss's time; a request's response time is
//! its end less its arrival. The VMs share nothing but the cache's
//! capacity, so the simulation runs the requests in order of their start
//! and closes an interval, measuring each VM and applying the rules,
//! before the first request that starts after it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Issues, Result};
use crate::hcache::{request_blocks, IoParams, KindName};
use crate::mem::blocklru::BlockLru;
use crate::mem::provisioning::{Action, Interval, Provisioning, Thresholds};
use crate::trace::blockio::BlockFormat;
use crate::trace::mrc::{MrcOptions, MrcPass};
use crate::units::{Budget, ByteSize, Span};

/// Params of a thin-provisioning run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProvisionParams {
    /// The whole cache, `C` (default 64 MiB).
    pub cache_bytes: ByteSize,
    /// The hypervisor's own share, `C_h` (default none).
    pub hypervisor_bytes: ByteSize,
    /// Block size (default 4 KiB, a page of the host's cache).
    pub line_bytes: u32,
    /// `static` (the equal split throughout), `dynamic` (the rules,
    /// default) or `mrc` (fixed shares from the VMs' miss-ratio curves).
    pub policy: Policy,
    /// Each VM's share at the start, in blocks (default: the equal split);
    /// the rest is the free pool. Not with `mrc`, which chooses them.
    pub shares: Vec<u64>,
    /// `mrc`: the curves' SHARDS sampling rate in (0, 1] (default 1: exact).
    pub mrc_sample: f64,
    /// `mrc`: shares are whole multiples of this many blocks (default: 1/64 of the cache).
    pub mrc_quantum: Option<u64>,
    /// `Δt`, between two applications of the rules (default 1 s).
    pub interval: String,
    /// Each VM's thresholds; none: measured (see [`calibrate`]).
    pub thresholds: Vec<Thresholds>,
    /// Measured thresholds: `C_Threshold` as a share of the equal split (default 1/16).
    pub threshold_share: f64,
    /// What a block found in the cache costs, in microseconds (default 10:
    /// a copy out of the host's memory and the hypervisor's path).
    pub hit_us: f64,
    /// What a miss costs (spec 1.7, eq. 4).
    pub io: IoParams,
    /// The traces' times are stretched by this (default 1): one factor,
    /// or one per VM.
    pub time_scale: TimeScale,
    /// Which requests go through the cache (default reads and writes:
    /// a written block is cached).
    pub kinds: Vec<KindName>,
    /// The traces' layout.
    pub block_format: BlockFormat,
}

impl Default for ProvisionParams {
    fn default() -> Self {
        ProvisionParams {
            cache_bytes: ByteSize(64 << 20),
            hypervisor_bytes: ByteSize(0),
            line_bytes: 4096,
            policy: Policy::Dynamic,
            shares: Vec::new(),
            mrc_sample: 1.0,
            mrc_quantum: None,
            interval: "1s".into(),
            thresholds: Vec::new(),
            threshold_share: 1.0 / 16.0,
            hit_us: 10.0,
            io: IoParams::default(),
            time_scale: TimeScale::All(1.0),
            kinds: vec![KindName::Load, KindName::Store],
            block_format: BlockFormat::Msr,
        }
    }
}

/// One factor for every VM's times, or one per VM.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TimeScale {
    All(f64),
    PerVm(Vec<f64>),
}

impl TimeScale {
    fn of(&self, vm: usize) -> f64 {
        match self {
            TimeScale::All(f) => *f,
            TimeScale::PerVm(fs) => fs[vm],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Static,
    Dynamic,
    Mrc,
}

impl ProvisionParams {
    /// Check every key, naming the problems; returns the interval in ns.
    pub fn validate(&self, vms: usize) -> Result<u64> {
        let mut issues = Issues::default();
        let line = self.line_bytes as u64;
        issues.check(line.is_power_of_two(), "line_bytes", "out_of_range", "expected a power of two");
        issues.check(
            self.hypervisor_bytes.0 <= self.cache_bytes.0,
            "hypervisor_bytes",
            "out_of_range",
            format!(
                "the hypervisor's {} B are more than the cache's {} B",
                self.hypervisor_bytes.0, self.cache_bytes.0
            ),
        );
        let interval = match Span::parse(&self.interval).map(|s| s.resolve(1.0)) {
            Ok(Budget::Cycles(ns)) if ns > 0 => ns,
            Ok(_) => {
                issues.push("interval", "out_of_range", "expected a time above zero, such as \"1s\" or \"500ms\"");
                0
            }
            Err(e) => {
                issues.push("interval", "invalid_value", e);
                0
            }
        };
        issues.check(
            self.threshold_share > 0.0 && self.threshold_share < 1.0,
            "threshold_share",
            "out_of_range",
            format!("expected a share in (0, 1), got {}", self.threshold_share),
        );
        issues.check(
            self.mrc_sample > 0.0 && self.mrc_sample <= 1.0,
            "mrc_sample",
            "out_of_range",
            format!("expected a rate in (0, 1], got {}", self.mrc_sample),
        );
        issues.check(self.mrc_quantum != Some(0), "mrc_quantum", "out_of_range", "expected at least 1 block");
        issues.check(self.hit_us >= 0.0, "hit_us", "out_of_range", "expected a time of at least 0");
        match &self.time_scale {
            TimeScale::All(f) => issues.check(*f > 0.0, "time_scale", "out_of_range", "expected a factor above 0"),
            TimeScale::PerVm(fs) => issues.check(
                fs.len() == vms && fs.iter().all(|&f| f > 0.0),
                "time_scale",
                "out_of_range",
                format!("expected a factor above 0, or one per VM ({vms})"),
            ),
        }
        issues.check(
            (0.0..=1.0).contains(&self.io.controller_hit),
            "io.controller_hit",
            "out_of_range",
            "expected a ratio in [0, 1]",
        );
        issues.check(!self.kinds.is_empty(), "kinds", "out_of_range", "give at least one kind of request");
        issues.check(
            self.thresholds.is_empty() || self.thresholds.len() == vms,
            "thresholds",
            "out_of_range",
            format!("give one row per VM ({vms}), or none to measure them"),
        );
        if line.is_power_of_two() && self.hypervisor_bytes.0 <= self.cache_bytes.0 {
            let lines = (self.cache_bytes.0 - self.hypervisor_bytes.0) / line;
            if !self.shares.is_empty() {
                let total: u64 = self.shares.iter().sum();
                let problem = if self.policy == Policy::Mrc {
                    Some("policy mrc chooses the shares: give none".to_string())
                } else if self.shares.len() != vms {
                    Some(format!("give one share per VM ({vms}), not {}", self.shares.len()))
                } else if total > lines {
                    Some(format!("the shares sum to {total} blocks, over the cache's {lines} (less the hypervisor's)"))
                } else {
                    None
                };
                if let Some(message) = problem {
                    issues.push("shares", "out_of_range", message);
                }
            }
            issues.check(
                lines >= vms as u64,
                "cache_bytes",
                "out_of_range",
                format!("{lines} blocks of {line} B cannot be shared by {vms} VMs"),
            );
        }
        issues.finish()?;
        Ok(interval)
    }
}

/// One VM's run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VmRun {
    pub vm: u32,
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

/// A VM's requests: arrival (ns, stretched) and its blocks.
struct Stream {
    arrivals: Vec<u64>,
    /// Request `i`'s blocks are `blocks[starts[i]..starts[i + 1]]`.
    starts: Vec<usize>,
    blocks: Vec<u64>,
}

fn stream(path: &Path, params: &ProvisionParams, scale: f64) -> Result<Stream> {
    let kinds: Vec<_> = params.kinds.iter().map(|k| k.kind()).collect();
    let mut requests = request_blocks(path, params.block_format, &kinds, params.line_bytes)?;
    requests.sort_by_key(|(time, _)| *time);
    let mut s = Stream { arrivals: Vec::new(), starts: vec![0], blocks: Vec::new() };
    for (time, blocks) in requests {
        s.arrivals.push((time as f64 * scale).round() as u64);
        s.blocks.extend(blocks);
        s.starts.push(s.blocks.len());
    }
    Ok(s)
}

/// Run the VMs' block traces (`traces[i]` is VM `i`'s) through the cache.
pub fn run(params: &ProvisionParams, traces: &[PathBuf]) -> Result<ProvisionRun> {
    if traces.is_empty() {
        return Err(Error::config("traces", "out_of_range", "give at least one block trace, one per VM"));
    }
    let interval = params.validate(traces.len())?;
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
    let mut run = simulate(params, &streams, lines, interval, thresholds, shares);
    for (vm, path) in run.vms.iter_mut().zip(traces) {
        vm.trace = path.display().to_string();
    }
    Ok(run)
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
    let base = simulate(&fixed, streams, lines, interval, placeholder, None);
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
    next: usize,
    free_at: u64,
    cache: BlockLru,
    requests: u64,
    hits: u64,
    misses: u64,
    responses: Vec<u64>,
    last_end: u64,
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

fn simulate(
    params: &ProvisionParams,
    streams: &[Stream],
    lines: u64,
    interval: u64,
    thresholds: Vec<Thresholds>,
    shares: Option<Vec<u64>>,
) -> ProvisionRun {
    let mut prov = Provisioning::new(lines, thresholds.clone());
    if let Some(shares) = shares {
        prov.pool = lines - shares.iter().sum::<u64>();
        prov.alloc = shares;
    }
    let (hit_ns, miss_ns) = ((params.hit_us * 1e3).round() as u64, (params.io.miss_us() * 1e3).round() as u64);
    let mut vms: Vec<Vm> = prov
        .alloc
        .iter()
        .map(|&a| Vm {
            next: 0,
            free_at: 0,
            cache: BlockLru::new(a),
            requests: 0,
            hits: 0,
            misses: 0,
            responses: Vec::new(),
            last_end: 0,
            now: Interval::default(),
            full_at: None,
            peak: a,
            flags: 0,
        })
        .collect();
    let first_alloc = prov.alloc.clone();
    let mut series = Vec::new();
    let mut boundary = interval;
    let start_of = |vm: &Vm, s: &Stream| s.arrivals.get(vm.next).map(|&a| a.max(vm.free_at));
    loop {
        let next = (0..vms.len()).filter_map(|v| start_of(&vms[v], &streams[v]).map(|t| (t, v))).min();
        let Some((start, v)) = next else { break };
        while start >= boundary {
            close(params, &mut prov, &mut vms, &mut series, boundary);
            boundary += interval;
        }
        let (vm, s) = (&mut vms[v], &streams[v]);
        let mut end = start;
        for &b in &s.blocks[s.starts[vm.next]..s.starts[vm.next + 1]] {
            if vm.cache.access(b) {
                vm.hits += 1;
                end += hit_ns;
            } else {
                vm.misses += 1;
                vm.now.misses += 1;
                end += miss_ns;
            }
        }
        vm.responses.push(end - s.arrivals[vm.next]);
        (vm.free_at, vm.last_end) = (end, end);
        vm.requests += 1;
        vm.now.requests += 1;
        vm.next += 1;
    }
    close(params, &mut prov, &mut vms, &mut series, boundary);
    let vms = vms
        .into_iter()
        .zip(streams)
        .enumerate()
        .map(|(i, (mut vm, s))| {
            let first = s.arrivals.first().copied().unwrap_or(0);
            vm.responses.sort_unstable();
            let n = vm.responses.len();
            let mean = if n > 0 { vm.responses.iter().sum::<u64>() as f64 / n as f64 } else { 0.0 };
            let p95 = if n > 0 { vm.responses[(95 * n).div_ceil(100) - 1] as f64 } else { 0.0 };
            VmRun {
                vm: i as u32,
                trace: String::new(),
                requests: vm.requests,
                blocks: vm.hits + vm.misses,
                hits: vm.hits,
                misses: vm.misses,
                completion_s: vm.last_end.saturating_sub(first) as f64 * 1e-9,
                mean_response_ms: mean * 1e-6,
                p95_response_ms: p95 * 1e-6,
                full_at_s: vm.full_at.map(|t| t as f64 * 1e-9),
                first_alloc: first_alloc[i],
                peak_alloc: vm.peak,
                final_alloc: vm.cache.capacity(),
                replacement_flags: vm.flags,
            }
        })
        .collect();
    ProvisionRun { vms, series, thresholds, lines, pool: prov.pool }
}

/// The end of the interval at `time`: every VM measured, the rules
/// applied (dynamic), the shares resized, a series row per VM.
fn close(params: &ProvisionParams, prov: &mut Provisioning, vms: &mut [Vm], series: &mut Vec<SeriesRow>, time: u64) {
    let seen: Vec<Interval> = vms.iter().map(|vm| Interval { used: vm.cache.len(), ..vm.now }).collect();
    let actions = match params.policy {
        Policy::Static | Policy::Mrc => Vec::new(),
        Policy::Dynamic => prov.step(&seen),
    };
    let (mut borrowed, mut released) = (vec![0u64; vms.len()], vec![0u64; vms.len()]);
    for a in actions {
        match a {
            Action::Borrow { vm, from, lines } => {
                borrowed[vm] += lines;
                if let Some(d) = from {
                    released[d] += lines;
                }
            }
            Action::Release { vm, lines } => released[vm] += lines,
            Action::Replacement { vm } => vms[vm].flags += 1,
        }
    }
    for (v, vm) in vms.iter_mut().enumerate() {
        if vm.full_at.is_none() && seen[v].used >= vm.cache.capacity() && vm.cache.capacity() > 0 {
            vm.full_at = Some(time);
        }
        series.push(SeriesRow {
            time_s: time as f64 * 1e-9,
            vm: v as u32,
            alloc: prov.alloc[v],
            used: seen[v].used,
            requests: seen[v].requests,
            misses: seen[v].misses,
            borrowed: borrowed[v],
            released: released[v],
        });
        vm.cache.resize(prov.alloc[v]);
        vm.peak = vm.peak.max(prov.alloc[v]);
        vm.now = Interval::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream_of(requests: &[(u64, &[u64])]) -> Stream {
        let mut s = Stream { arrivals: Vec::new(), starts: vec![0], blocks: Vec::new() };
        for (t, blocks) in requests {
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
        let run = simulate(&params, &[a, b], 4, 1_000_000_000, t, None);
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
        let run = simulate(&params, &[a, b], 16, 1_000_000, t, None);
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
