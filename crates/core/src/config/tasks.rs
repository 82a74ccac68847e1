//! The tasks of a run (`[[tasks]]`), expanded to one spec per task.
//!
//! A `[[tasks]]` entry describes a process (or a thread group, or a VM's
//! workload) with `count` copies; expanding the entries here, once, gives
//! every later step (scheduler building, engine, results) a flat list with
//! final ids, names, address spaces and affinity masks. The old single
//! `[workload]` table is one task with the defaults.

use serde::{Deserialize, Serialize};

use crate::error::{join_path, Issues};
use crate::plugin::PluginConfig;
use crate::sched::{TaskInfo, MAX_TASKS};
use crate::trace::{kernels, ThreadIndex, WorkloadConfig};
use crate::types::{Asid, CoreId};
use crate::units::{Budget, Span};

/// Address spaces the TLB keys can tell apart (the asid is packed in 12 bits).
pub const MAX_ASIDS: u32 = 4096;

/// One `[[tasks]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskParams {
    /// Name of the task; copies get `.0`, `.1`, ... appended. Default `task<id>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the task runs.
    pub workload: PluginConfig,
    /// Copies of this entry; each gets its own id and random stream.
    #[serde(default = "one")]
    pub count: u32,
    /// Address space shared by every copy (threads of one process); default:
    /// each task its own, the lowest ids not given explicitly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asid: Option<u32>,
    /// Virtual machine the task belongs to (hypervisor scheduling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm: Option<u32>,
    /// Cores the task may run on; default all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Vec<u32>>,
    /// Bind each copy to a core of its own (instead of `affinity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind: Option<Bind>,
    /// Stop the task after this many of its references (warm-up included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_accesses: Option<u64>,
    /// A server: requests arrive over simulated time and each runs the
    /// workload once, in arrival order; the task sleeps while none waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<RequestParams>,
    /// A co-runner's load: the workload is replayed from its start
    /// whenever it ends, and the run ends when every other task has.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
    /// A VM's block I/O: a block trace (in `block_cache.block_format`)
    /// whose requests the task issues to the hypervisor's block cache as it
    /// runs, each after its think time, sleeping while each is served; its
    /// workload runs again from its start while requests remain, and it
    /// ends when the last has been served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<String>,
}

fn one() -> u32 {
    1
}

/// Most requests of one task (each leaves a row in the results).
pub const MAX_REQUESTS: u64 = 1 << 22;

/// `requests`: when a server task's requests arrive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestParams {
    /// Requests in all.
    pub count: u64,
    /// The mean time between two arrivals (a time, or cycles).
    pub interval: Span,
    /// How the gaps are drawn.
    #[serde(default)]
    pub arrivals: Arrivals,
}

/// The gaps between a server's arrivals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// Exponential with the mean `interval` (a Poisson process, as
    /// independent callers make), drawn from the task's own random stream;
    /// the first after one gap.
    #[default]
    Poisson,
    /// Exactly `interval` apart, the first at time 0.
    Fixed,
}

/// A server task's requests, resolved against the clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestPlan {
    pub count: u64,
    /// Mean cycles between arrivals.
    pub interval: f64,
    pub arrivals: Arrivals,
}

/// How the copies of an entry are bound, one to a core (`bind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bind {
    /// Copy `i` on socket `i mod sockets`, its `(i / sockets)`-th core: the
    /// threads spread round-robin over the sockets, as the page-migration
    /// study binds its 12 threads, 2 to each of 6 boards.
    Spread,
    /// Copy `i` on core `i`.
    Packed,
}

impl Bind {
    /// The core of copy `i` on `sockets` sockets of `per_socket` cores.
    pub fn core(self, i: u32, sockets: u32, per_socket: u32) -> u32 {
        match self {
            Bind::Spread => (i % sockets) * per_socket + i / sockets,
            Bind::Packed => i,
        }
    }
}

/// One task after expansion: what its scheduler knows of it, and its
/// workload.
#[derive(Debug, Clone)]
pub struct TaskSpec {
    /// Name, address space, VM, affinity, limit and key path.
    pub info: TaskInfo,
    /// Its workload, typed.
    pub workload: WorkloadConfig,
    /// Config path of its workload, e.g. `tasks[2].workload`, or `workload`.
    pub workload_loc: String,
    /// Its copy index among the `count` copies of its entry: the thread of
    /// a multithreaded kernel.
    pub thread: ThreadIndex,
    /// If it serves requests: when they arrive.
    pub requests: Option<RequestPlan>,
    /// It is a co-runner's load, replayed until the other tasks end.
    pub background: bool,
    /// Its block trace, if it issues block I/O (a VM's).
    pub io: Option<String>,
}

/// The single task of a config with a `[workload]` table instead of tasks.
pub fn single(workload: WorkloadConfig) -> TaskSpec {
    TaskSpec {
        info: TaskInfo {
            name: "task0".into(),
            asid: Asid(0),
            vm: None,
            affinity: None,
            max_accesses: None,
            loc: "workload".into(),
        },
        workload,
        workload_loc: "workload".into(),
        thread: ThreadIndex::SINGLE,
        requests: None,
        background: false,
        io: None,
    }
}

/// Expand `[[tasks]]` entries found at `loc` for a machine of `sockets`
/// sockets of `per_socket` cores at `frequency_ghz`, recording every
/// problem; each entry's workload gets its defaults filled in.
pub fn expand(
    entries: &mut [TaskParams],
    loc: &str,
    (sockets, per_socket, frequency_ghz): (u32, u32, f64),
    issues: &mut Issues,
) -> Vec<TaskSpec> {
    let cores = sockets.saturating_mul(per_socket);
    if entries.is_empty() {
        issues.push(loc, "out_of_range", "no tasks: give at least one [[tasks]] entry");
    }
    let explicit: Vec<u32> = entries.iter().filter_map(|e| e.asid).collect();
    let mut free_asids = (0..MAX_ASIDS).filter(|a| !explicit.contains(a));
    let mut out = Vec::new();
    for (i, entry) in entries.iter_mut().enumerate() {
        let at = format!("{loc}[{i}]");
        let field = |f: &str| join_path(&at, f);
        issues.check(entry.count >= 1, field("count"), "out_of_range", "expected at least 1 copy");
        let room = MAX_TASKS - out.len().min(MAX_TASKS);
        if entry.count as usize > room {
            let message = format!("{} copies would make more than {MAX_TASKS} tasks in all", entry.count);
            issues.push(field("count"), "out_of_range", message);
            continue;
        }
        if let Some(asid) = entry.asid {
            issues.check(
                asid < MAX_ASIDS,
                field("asid"),
                "out_of_range",
                format!("asid {asid} does not fit the TLB tags: expected below {MAX_ASIDS}"),
            );
        }
        let affinity = entry.affinity.as_ref().map(|cores_given| {
            issues.check(
                !cores_given.is_empty(),
                field("affinity"),
                "out_of_range",
                "an empty affinity allows no core",
            );
            for (k, &c) in cores_given.iter().enumerate() {
                issues.check(
                    c < cores,
                    format!("{}[{k}]", field("affinity")),
                    "out_of_range",
                    format!("core {c} does not exist: the machine has {cores} core(s)"),
                );
            }
            let mut sorted: Vec<CoreId> = cores_given.iter().map(|&c| CoreId(c)).collect();
            sorted.sort_unstable();
            sorted.dedup();
            sorted
        });
        if entry.bind.is_some() {
            issues.check(entry.affinity.is_none(), field("bind"), "invalid_value", "give bind or affinity, not both");
            issues.check(
                entry.count <= cores,
                field("bind"),
                "out_of_range",
                format!("{} copies bound one to a core, but the machine has {cores} core(s)", entry.count),
            );
        }
        let requests = entry.requests.as_ref().and_then(|r| request_plan(r, &field("requests"), frequency_ghz, issues));
        issues.check(
            !(entry.background && entry.requests.is_some()),
            field("background"),
            "invalid_value",
            "a task serves requests or is a background load, not both",
        );
        issues.check(
            entry.io.is_none() || !(entry.background || entry.requests.is_some()),
            field("io"),
            "invalid_value",
            "a task that issues block I/O is neither a server (requests) nor a background load",
        );
        let Some(workload) = issues.absorb(WorkloadConfig::parse(&entry.workload, &field("workload"))) else {
            continue;
        };
        entry.workload = workload.to_raw();
        kernels::check_process(&workload, entry.count, entry.asid, &at, issues);
        for copy in 0..entry.count {
            let id = out.len();
            let name = match (&entry.name, entry.count) {
                (Some(n), 1) => n.clone(),
                (Some(n), _) => format!("{n}.{copy}"),
                (None, _) => format!("task{id}"),
            };
            let asid = match entry.asid.or_else(|| free_asids.next()) {
                Some(a) => a,
                None => {
                    issues.push(at.clone(), "out_of_range", format!("more than {MAX_ASIDS} address spaces"));
                    return out;
                }
            };
            out.push(TaskSpec {
                info: TaskInfo {
                    name,
                    asid: Asid(asid),
                    vm: entry.vm,
                    affinity: match entry.bind {
                        Some(b) if entry.count <= cores => Some(vec![CoreId(b.core(copy, sockets, per_socket))]),
                        _ => affinity.clone(),
                    },
                    max_accesses: entry.max_accesses,
                    loc: at.clone(),
                },
                workload: workload.clone(),
                workload_loc: field("workload"),
                thread: ThreadIndex { index: copy, count: entry.count },
                requests,
                background: entry.background,
                io: entry.io.clone(),
            });
        }
    }
    if !out.is_empty() && out.iter().all(|t| t.background) {
        issues.push(loc, "invalid_value", "every task is a background load: the run would never end");
    }
    out
}

/// `requests` at `loc`, checked and resolved at `frequency_ghz`.
fn request_plan(r: &RequestParams, loc: &str, frequency_ghz: f64, issues: &mut Issues) -> Option<RequestPlan> {
    let field = |f: &str| join_path(loc, f);
    let counted = (1..=MAX_REQUESTS).contains(&r.count);
    issues.check(counted, field("count"), "out_of_range", format!("expected 1 to 2^22 requests, got {}", r.count));
    let interval = match r.interval.resolve(frequency_ghz) {
        Budget::Cycles(n) if n > 0 => Some(n as f64),
        Budget::Cycles(_) => {
            issues.push(
                field("interval"),
                "out_of_range",
                format!("'{}' is no time at all: give a positive time", r.interval),
            );
            None
        }
        Budget::Instructions(_) => {
            issues.push(field("interval"), "invalid_value", "arrivals are in time: give a time (\"5ms\") or cycles");
            None
        }
    };
    counted.then_some(RequestPlan { count: r.count, interval: interval?, arrivals: r.arrivals })
}
