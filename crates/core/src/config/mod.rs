//! The configuration schema: one owner, in Rust.
//!
//! Python merges TOML files, dicts and keyword arguments into one JSON
//! document and hands it over; everything is parsed here with
//! `deny_unknown_fields` and `serde_path_to_error`, so errors name the exact
//! key path, and then validated semantically, collecting every problem.
//!
//! The machine starts from a preset (`machine.preset`, default `standard`):
//! the user's `machine` table is merged over the preset's, key by key, so a
//! config only says what differs.

pub mod footprint;
pub mod presets;
pub mod tasks;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Issues, Result};
use crate::mech::{MechBuild, MechanismConfig};
use crate::mem::machine::MachineParams;
use crate::mem::provisioning::ProvisionParams;
use crate::plugin::{parse_at, PluginConfig};
use crate::sched::{SchedBuild, SchedulerConfig, Topology};
use crate::trace::WorkloadConfig;
use crate::units::{Budget, ByteSize, Span, MAX_COST_CYCLES};
use tasks::{TaskParams, TaskSpec};

/// How long to run and what to measure (`run`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunParams {
    /// Stop after this many references (after warm-up); default: the whole workload.
    pub max_accesses: Option<u64>,
    /// References simulated first to warm the caches; their counts are discarded.
    pub warmup_accesses: u64,
    /// References pulled from a workload at a time.
    pub batch: u32,
    /// Produce the workload's accesses on a second thread, overlapping
    /// trace decoding or generation with the simulation (same results).
    pub prefetch: bool,
    /// Classify misses (compulsory or not, and the attributed levels'
    /// causes) on a worker thread, off the simulation's path, when the host
    /// has a second CPU (same results).
    pub classify_thread: bool,
    /// Simulate the sockets on separate threads, between scheduling
    /// decisions, where the run allows it (same results; see
    /// docs/performance.md, "Sockets in parallel").
    pub parallel_sockets: bool,
    /// Simulate a lone task's caches on two threads, split by set, where
    /// the run allows it (same results; see docs/performance.md, "A
    /// single task on two threads").
    pub split_sets: bool,
    /// Cycles a core spends on each context switch (direct cost).
    pub switch_cycles: u64,
    /// Cycles added to a switch that migrates the task to another core.
    pub migration_cycles: u64,
    /// The most host memory the run may take (its caches', TLBs' and
    /// shadows' arrays; see `config::footprint`); default: the host's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_memory: Option<ByteSize>,
}

impl Default for RunParams {
    fn default() -> Self {
        RunParams {
            max_accesses: None,
            warmup_accesses: 0,
            batch: 4096,
            prefetch: true,
            classify_thread: true,
            parallel_sockets: true,
            split_sets: true,
            switch_cycles: 0,
            migration_cycles: 0,
            max_memory: None,
        }
    }
}

/// What to record beyond the totals (`stats`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StatsParams {
    /// Record a row per task every this many of its instructions (`"1M instr"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<Span>,
    /// Record the first this many instructions of a task after each of its
    /// migrations (the post-migration window, `"2M instr"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<Span>,
    /// Keep the event log (switches, migrations, ticks).
    pub events: bool,
    /// Keep the `slices` table: a row per schedule of a task (switch-in to
    /// switch-out), with the switch-miss estimate published at its end.
    pub slices: bool,
    /// Keep the `pages` table: the interconnect sampler's samples per page
    /// and requesting node (those a page-migration pass has not taken).
    pub pages: bool,
}

impl Default for StatsParams {
    fn default() -> Self {
        StatsParams { interval: None, window: None, events: true, slices: true, pages: false }
    }
}

/// The largest `run.batch`: a batch of 2^24 accesses is 512 MiB per task,
/// far past the size beyond which batching gains nothing.
pub const MAX_BATCH: u32 = 1 << 24;

/// A whole simulation (the top of a TOML config).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    /// Free-form name of the experiment.
    pub name: Option<String>,
    /// Seed of every random stream in the run.
    pub seed: u64,
    /// The machine.
    pub machine: MachineParams,
    /// What a single task runs: `{ kind = "zipf", params = { ... } }`
    /// (instead of `tasks`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<PluginConfig>,
    /// The tasks (instead of `workload`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Vec<TaskParams>>,
    /// The scheduling policy; default `round-robin`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<PluginConfig>,
    /// Mechanisms reacting to scheduling events, called in this order:
    /// `[[mechanisms]]` tables `{ kind = "tlb-preserve", params = { ... } }`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mechanisms: Vec<PluginConfig>,
    /// Length and measurement.
    pub run: RunParams,
    /// Time series, windows and the event log.
    pub stats: StatsParams,
    /// The hypervisor's block cache, which the tasks with `io` (the VMs)
    /// share (see docs/cache-locking.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_cache: Option<ProvisionParams>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            name: None,
            seed: 1,
            machine: MachineParams::default(),
            workload: None,
            tasks: None,
            scheduler: None,
            mechanisms: Vec::new(),
            run: RunParams::default(),
            stats: StatsParams::default(),
            block_cache: None,
        }
    }
}

/// A parsed and validated configuration, with its plug-ins typed.
#[derive(Debug, Clone)]
pub struct ValidConfig {
    /// The configuration, presets applied, workload defaults filled in.
    pub config: SimConfig,
    /// Every task, expanded.
    pub tasks: Vec<TaskSpec>,
    /// The scheduling policy, typed.
    pub scheduler: SchedulerConfig,
    /// The mechanisms, typed, in order.
    pub mechanisms: Vec<MechanismConfig>,
    /// `stats.interval` in instructions.
    pub interval: Option<u64>,
    /// `stats.window` in instructions.
    pub window: Option<u64>,
}

impl ValidConfig {
    /// The resolved configuration as JSON, every default filled in.
    pub fn to_json(&self) -> Value {
        let mut config = self.config.clone();
        config.scheduler = Some(self.scheduler.to_raw());
        config.mechanisms = self.mechanisms.iter().map(|m| m.to_raw()).collect();
        serde_json::to_value(&config).expect("config serialises to JSON")
    }

    /// The machine's shape.
    pub fn topology(&self) -> Topology {
        Topology { sockets: self.config.machine.sockets, cores_per_socket: self.config.machine.cores_per_socket }
    }

    /// What the scheduler is built from.
    pub fn sched_build(&self) -> SchedBuild {
        SchedBuild {
            topology: self.topology(),
            frequency_ghz: self.config.machine.frequency_ghz,
            tasks: self.tasks.iter().map(|t| t.info.clone()).collect(),
            loc: "scheduler.params".into(),
        }
    }

    /// What mechanism `i` is built from.
    pub fn mech_build(&self, i: usize) -> MechBuild<'_> {
        let asids: std::collections::BTreeSet<u32> = self.tasks.iter().map(|t| t.info.asid.0).collect();
        MechBuild { machine: &self.config.machine, asids: asids.into_iter().collect(), loc: format!("mechanisms[{i}]") }
    }
}

/// Parse and validate a configuration given as JSON text.
pub fn from_json_str(text: &str) -> Result<ValidConfig> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| Error::config("", "invalid_json", format!("not valid JSON: {e}")))?;
    from_value(value)
}

/// Parse and validate a configuration given as TOML text.
pub fn from_toml_str(text: &str) -> Result<ValidConfig> {
    let value: Value =
        toml::from_str(text).map_err(|e| Error::config("", "invalid_toml", format!("not valid TOML: {e}")))?;
    from_value(value)
}

/// Parse and validate a configuration given as a JSON value.
pub fn from_value(mut value: Value) -> Result<ValidConfig> {
    if !value.is_object() {
        return Err(Error::config("", "invalid_type", "a configuration is a table of keys"));
    }
    resolve_machine_preset(&mut value)?;
    let mut config: SimConfig = parse_at(&value, "")?;
    let mut issues = Issues::default();
    config.machine.validate("machine", &mut issues);
    let tasks = match (&mut config.workload, &mut config.tasks) {
        (Some(_), Some(_)) => {
            issues.push("tasks", "invalid_value", "give either a [workload] (one task) or [[tasks]], not both");
            Vec::new()
        }
        (Some(raw), None) => match issues.absorb(WorkloadConfig::parse(raw, "workload")) {
            Some(w) => {
                *raw = w.to_raw();
                crate::trace::kernels::check_process(&w, 1, None, "workload", &mut issues);
                vec![tasks::single(w)]
            }
            None => Vec::new(),
        },
        (None, Some(entries)) => {
            let shape = (config.machine.sockets, config.machine.cores_per_socket, config.machine.frequency_ghz);
            tasks::expand(entries, "tasks", shape, &mut issues)
        }
        (None, None) => {
            let message = "missing the workload: add a [workload] table with a kind, or [[tasks]]";
            issues.push("workload", "missing_field", message);
            Vec::new()
        }
    };
    issues.check(
        (1..=MAX_BATCH).contains(&config.run.batch),
        "run.batch",
        "out_of_range",
        format!("expected 1 to 2^24 accesses, got {}", config.run.batch),
    );
    // Core clocks are 64-bit cycle counts: a cost beyond minutes of
    // simulated time per switch is a mistake, and could overflow them.
    for (key, cycles) in
        [("run.switch_cycles", config.run.switch_cycles), ("run.migration_cycles", config.run.migration_cycles)]
    {
        issues.check(
            cycles <= MAX_COST_CYCLES,
            key,
            "out_of_range",
            format!("expected at most 2^40 cycles, got {cycles}"),
        );
    }
    // From the entries, so that one whose workload is wrong still counts.
    let vms: usize = (config.tasks.iter().flatten()).filter(|e| e.io.is_some()).map(|e| e.count as usize).sum();
    match &config.block_cache {
        Some(params) if vms > 0 => drop(issues.absorb(params.validate(vms, "block_cache"))),
        Some(_) => issues.push("block_cache", "invalid_value", "no task issues block I/O: give a task `io`"),
        None if vms > 0 => {
            let message = "tasks issue block I/O (`io`) but there is no [block_cache] to serve it";
            issues.push("block_cache", "missing_field", message);
        }
        None => {}
    }
    let frequency = config.machine.frequency_ghz;
    let interval = instructions(config.stats.interval, "stats.interval", frequency, &mut issues);
    let window = instructions(config.stats.window, "stats.window", frequency, &mut issues);
    let raw_scheduler = config.scheduler.clone().unwrap_or_else(|| PluginConfig::named("round-robin"));
    let scheduler = issues.absorb(SchedulerConfig::parse(&raw_scheduler, "scheduler"));
    let mechanisms: Vec<MechanismConfig> = (config.mechanisms.iter().enumerate())
        .filter_map(|(i, raw)| issues.absorb(MechanismConfig::parse(raw, &format!("mechanisms[{i}]"))))
        .collect();
    issues.finish()?;
    let mut issues = Issues::default();
    footprint::check(&config, &tasks, &mut issues);
    issues.finish()?;
    let scheduler = scheduler.expect("validated");
    let mut valid = ValidConfig { config, tasks, scheduler, mechanisms, interval, window };
    // Mechanisms' params are checked the same way, and nested plug-ins get
    // their defaults filled in.
    for i in 0..valid.mechanisms.len() {
        let mut m = valid.mechanisms[i].clone();
        m.resolve(&format!("mechanisms[{i}]"))?;
        m.build(&valid.mech_build(i))?;
        valid.mechanisms[i] = m;
    }
    // The scheduler's params are checked against the machine and the tasks
    // now, by building it once (cheap: no workload is built).
    let checked = match &valid.scheduler {
        SchedulerConfig::Python(p) => p.resolve(&valid.sched_build()).map(drop),
        other => other.build(&valid.sched_build()).map(drop),
    };
    checked?;
    Ok(valid)
}

/// Parse and validate the `machine` table of a configuration given as a
/// JSON value (its preset resolved), without the rest.
pub fn machine_from_value(mut value: Value) -> Result<MachineParams> {
    if !value.is_object() {
        return Err(Error::config("", "invalid_type", "a configuration is a table of keys"));
    }
    resolve_machine_preset(&mut value)?;
    let mut machine: MachineParams = parse_at(&value["machine"], "machine")?;
    let mut issues = Issues::default();
    machine.validate("machine", &mut issues);
    issues.finish()?;
    Ok(machine)
}

/// A span of `key` that must count instructions, above zero.
fn instructions(span: Option<Span>, key: &str, frequency_ghz: f64, issues: &mut Issues) -> Option<u64> {
    let span = span?;
    match span.resolve(frequency_ghz) {
        Budget::Instructions(n) if n > 0 => Some(n),
        _ => {
            issues.push(key, "invalid_value", format!("expected instructions above 0, e.g. \"1M instr\", got {span}"));
            None
        }
    }
}

/// Replace `machine` by the preset it names (default `standard`) with the
/// user's keys merged over it.
fn resolve_machine_preset(config: &mut Value) -> Result<()> {
    let user = config.get("machine").cloned().unwrap_or_else(|| Value::Object(Default::default()));
    let Value::Object(user_map) = &user else {
        return Err(Error::config("machine", "invalid_type", "expected a table"));
    };
    let name = match user_map.get("preset") {
        None | Some(Value::Null) => presets::DEFAULT.to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(Error::config("machine.preset", "invalid_type", format!("expected a preset name, got {other}")))
        }
    };
    let mut base = presets::machine(&name)?;
    merge(&mut base, user);
    base["preset"] = Value::String(name);
    config["machine"] = base;
    Ok(())
}

/// Merge `over` into `base`: tables merge key by key, anything else replaces.
/// A plug-in table whose `kind` changes is replaced whole, so the params of
/// the old kind do not leak into the new one.
pub fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            let kind_changes = matches!((b.get("kind"), o.get("kind")), (Some(x), Some(y)) if x != y);
            if kind_changes {
                *b = o;
                return;
            }
            for (key, value) in o {
                match b.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        b.insert(key, value);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn issues(value: Value) -> Vec<(String, &'static str, String)> {
        match from_value(value) {
            Err(Error::Config(issues)) => issues.into_iter().map(|i| (i.loc, i.code, i.message)).collect(),
            other => panic!("expected config errors, got {other:?}"),
        }
    }

    fn zipf() -> Value {
        json!({"kind": "zipf", "params": {"working_set_bytes": "1MiB"}})
    }

    #[test]
    fn defaults_to_the_standard_machine() {
        let r = from_value(json!({"workload": zipf()})).unwrap();
        let m = &r.config.machine;
        assert_eq!(m.preset.as_deref(), Some("standard"));
        assert_eq!(m.l1d.size_bytes, ByteSize(32 << 10));
        assert_eq!(m.l2.as_ref().unwrap().size_bytes, ByteSize(1 << 20));
        assert_eq!(m.llc.as_ref().unwrap().size_bytes, ByteSize(8 << 20));
        let tlb = m.tlb.as_ref().unwrap();
        assert_eq!((tlb.l1d.entries, tlb.l1d.ways), (64, 4));
        assert_eq!(tlb.l2.as_ref().map(|l| (l.entries, l.ways)), Some((1536, 12)));
    }

    #[test]
    fn user_keys_override_the_preset_and_false_removes_a_level() {
        let r = from_value(json!({
            "machine": {"preset": "teaching", "l2": {"ways": 8}, "llc": false, "tlb": false},
            "workload": zipf(),
        }))
        .unwrap();
        let m = &r.config.machine;
        assert_eq!(m.cores_per_socket, 2);
        assert_eq!(m.l2.as_ref().unwrap().ways, 8);
        assert_eq!(m.l2.as_ref().unwrap().size_bytes, ByteSize(32 << 10), "unchanged keys stay");
        assert!(m.llc.is_none() && m.tlb.is_none());
    }

    #[test]
    fn changing_a_plugin_kind_drops_the_old_params() {
        let mut base = json!({"replacement": {"kind": "random", "params": {"salt": 3}}});
        merge(&mut base, json!({"replacement": {"kind": "lru"}}));
        assert_eq!(base, json!({"replacement": {"kind": "lru"}}));
    }

    #[test]
    fn errors_name_the_key_path() {
        let found = issues(json!({"machine": {"l2": {"wayz": 8}}, "workload": zipf()}));
        assert_eq!(found[0].0, "machine.l2.wayz");
        assert_eq!(found[0].1, "unknown_field");

        let found = issues(json!({"machine": {"l2": {"ways": "many"}}, "workload": zipf()}));
        assert_eq!(found[0].0, "machine.l2.ways");
        assert_eq!(found[0].1, "invalid_type");

        let found = issues(json!({"machine": {"l1d": {"size_bytes": "32 parsecs"}}, "workload": zipf()}));
        assert_eq!(found[0].0, "machine.l1d.size_bytes");
        assert!(found[0].2.contains("unknown size unit"), "{}", found[0].2);

        let found = issues(json!({"machine": {"preset": "cray-1"}, "workload": zipf()}));
        assert_eq!(found[0].0, "machine.preset");
        assert!(found[0].2.contains("standard"), "lists the presets: {}", found[0].2);

        let found = issues(json!({"workload": {"kind": "zipff"}}));
        assert_eq!(found[0].0, "workload.kind");

        let found = issues(json!({"machine": {"l2": {"line_bytes": 48}}}));
        let locs: Vec<&str> = found.iter().map(|f| f.0.as_str()).collect();
        assert!(locs.contains(&"machine.l2.line_bytes"), "{locs:?}");
        assert!(locs.contains(&"workload"), "every problem is reported at once: {locs:?}");

        let found =
            issues(json!({"machine": {"l1d": {"ways": 12}, "memory": {"placement": {"bind": 7}}}, "workload": zipf()}));
        let locs: Vec<&str> = found.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(locs, vec!["machine.l1d.size_bytes", "machine.memory.placement"]);
    }

    #[test]
    fn replacement_policies_are_checked_and_filled_in_when_the_config_is_read() {
        let found = issues(json!({
            "machine": {"l2": {"replacement": {"kind": "plru"}, "ways": 12, "size_bytes": "768KiB"}},
            "workload": zipf(),
        }));
        assert_eq!(found[0].0, "machine.l2.replacement");
        assert_eq!(found[0].1, "unsupported_geometry");
        let r =
            from_value(json!({"machine": {"llc": {"replacement": {"kind": "random"}}}, "workload": zipf()})).unwrap();
        let llc = &r.to_json()["machine"]["llc"]["replacement"];
        assert_eq!(llc, &json!({"kind": "random", "params": {"salt": 0}}));
    }

    #[test]
    fn every_preset_resolves_and_builds() {
        for name in presets::NAMES {
            let r = from_value(json!({"machine": {"preset": name}, "workload": zipf()}))
                .unwrap_or_else(|e| panic!("preset {name}: {e}"));
            crate::mem::machine::Machine::new(&r.config.machine, 1, "machine")
                .unwrap_or_else(|e| panic!("preset {name}: {e}"));
        }
    }

    #[test]
    fn toml_configs_parse() {
        let r = from_toml_str(
            r#"
            seed = 7
            [machine]
            preset = "teaching"
            [workload]
            kind = "zipf"
            params = { working_set_bytes = "1MiB" }
            [run]
            max_accesses = 1000
            "#,
        )
        .unwrap();
        assert_eq!(r.config.seed, 7);
        assert_eq!(r.config.run.max_accesses, Some(1000));
        let err = from_toml_str("seed = ").unwrap_err().to_string();
        assert!(err.contains("not valid TOML"), "{err}");
    }
}
