//! The host memory a run will take, checked before anything is built.
//!
//! A cache of `"1TiB"` is a valid geometry, but its tags alone would take
//! terabytes of the host's memory: building it would abort the process (or
//! wake the kernel's OOM killer) with no key to point at. So the parts whose
//! size a configuration decides (the caches' and TLBs' arrays, the NUMA
//! nodes' counters, the attribution shadows of every task, the access
//! buffers) are summed from the validated configuration and compared with
//! `run.max_memory`, or the host's memory when that is not set.

use super::tasks::TaskSpec;
use super::SimConfig;
use crate::counters::TaskStats;
use crate::error::Issues;
use crate::types::Access;

/// Record a problem if the run would take more host memory than it may:
/// at the key of its largest part, with the figures.
pub fn check(config: &SimConfig, tasks: &[TaskSpec], issues: &mut Issues) {
    let parts = parts(config, tasks);
    let total = parts.iter().map(|(_, b)| *b).fold(0u64, u64::saturating_add);
    let (limit, whose) = match config.run.max_memory {
        Some(limit) => (limit.0, format!("run.max_memory = {}", human(limit.0))),
        None => match host_memory() {
            Some(host) => (host, format!("this host's {} (run.max_memory sets another limit)", human(host))),
            None => return,
        },
    };
    if total <= limit {
        return;
    }
    let (key, largest) = parts.iter().max_by_key(|(_, b)| *b).expect("the caches are always counted");
    issues.push(
        key.clone(),
        "too_large",
        format!(
            "the run would take about {} of host memory, {} of it for this, more than {whose}",
            human(total),
            human(*largest)
        ),
    );
}

/// The host memory of each part a configuration sizes, with its key.
pub fn parts(config: &SimConfig, tasks: &[TaskSpec]) -> Vec<(String, u64)> {
    let mut asids: Vec<u32> = tasks.iter().map(|t| t.info.asid.0).collect();
    asids.sort_unstable();
    asids.dedup();
    let n = tasks.len() as u64;
    let mut parts = config.machine.host_bytes(n, asids.len() as u64, "machine");
    // Each task's batch of accesses, and the four a producer thread fills.
    let batch = config.run.batch as u64 * std::mem::size_of::<Access>() as u64 * 5;
    parts.push(("run.batch".into(), batch.saturating_mul(n)));
    // Each task's counters, in the machine and in its row of the results
    // (the counters again, and a few hundred bytes of name and totals).
    let per_task = 2 * std::mem::size_of::<TaskStats>() as u64 + 512;
    parts.push(("tasks".into(), per_task.saturating_mul(n)));
    // Each task's workload, under the key of its entry's workload.
    for task in tasks {
        let bytes = task.workload.host_bytes();
        match parts.iter_mut().find(|(key, _)| *key == task.workload_loc) {
            Some((_, sum)) => *sum = sum.saturating_add(bytes),
            None => parts.push((task.workload_loc.clone(), bytes)),
        }
    }
    parts
}

/// The host's memory: its physical memory, or its control group's limit
/// where that is lower (a container); `None` where neither can be read.
pub fn host_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let total = meminfo.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
    let total = total.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()? * 1024;
    let limit = ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok()?.trim().parse::<u64>().ok())
        .min();
    Some(limit.map_or(total, |l| l.min(total)))
}

/// The host memory this process holds now (its resident set), if the
/// system says.
pub fn resident() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096) // the page size of x86-64 Linux
}

/// The host memory a run may hold: `run.max_memory`, else the host's.
pub fn limit(config: &SimConfig) -> Option<u64> {
    config.run.max_memory.map(|m| m.0).or_else(host_memory)
}

/// An error if the process holds more host memory than `limit`: the parts
/// that grow as a run goes (page tables, the lines each cache has seen)
/// are not in the estimate checked before the run, so a run that touches
/// more than the host can hold is stopped with this instead of being
/// killed by the kernel.
pub fn check_resident(limit: Option<u64>) -> crate::error::Result<()> {
    match (limit, resident()) {
        (Some(limit), Some(held)) if held > limit => Err(crate::error::Error::Simulation(format!(
            "the process running the simulation holds {} of host memory, more than the run's limit of {} \
             (run.max_memory, else the host's memory): its page tables and the lines its caches have seen \
             grow with the footprint it touches",
            human(held),
            human(limit)
        ))),
        _ => Ok(()),
    }
}

/// `bytes` to one decimal in the largest binary unit below it.
fn human(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < units.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", units[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::from_value;
    use crate::engine::Engine;
    use crate::error::Error;
    use serde_json::json;

    fn run(max_memory: &str) -> crate::error::Result<()> {
        let config = from_value(json!({
            "machine": {"preset": "teaching"},
            "workload": {"kind": "stream", "params": {"accesses": 10_000}},
            "run": {"max_memory": max_memory},
        }))?;
        Engine::new(config, None)?.run(&mut |_| Ok(())).map(drop)
    }

    #[test]
    fn a_run_that_outgrows_its_limit_is_stopped_with_an_error() {
        // Memory the process holds besides the run, written so that it is resident.
        let ballast = std::hint::black_box(vec![1u8; 32 << 20]);
        let held = resident().expect("Linux says how much memory a process holds");
        assert!(held > 32 << 20, "this test process holds {held} bytes");
        // The machine and its buffers fit 16 MiB, the process does not.
        match run("16MiB") {
            Err(Error::Simulation(message)) => {
                assert!(message.contains("more than the run's limit of 16.0 MiB"), "{message}")
            }
            other => panic!("{other:?}"),
        }
        run("1GiB").unwrap();
        drop(ballast);
    }

    #[test]
    fn figures_read_as_people_write_them() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(3 << 19), "1.5 MiB");
        assert_eq!(human(233 << 30), "233.0 GiB");
        assert_eq!(human(u64::MAX), "16.0 EiB");
    }
}
