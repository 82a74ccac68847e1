//! The machine's parameters (`machine` in a configuration): their schema,
//! defaults, validation and the host memory they take.

use serde::{Deserialize, Serialize};

use super::sampler::SamplerParams;
use super::{Machine, Protocol};
use crate::counters::{Level, NodeStats};
use crate::error::Issues;
use crate::mem::attribution::{Attributed, Attribution};
use crate::mem::cache::{CacheParams, Inclusion};
use crate::mem::page_table::{FrameAllocation, PageNode, Placement};
use crate::mem::tlb::TlbParams;
use crate::mem::{notes, tlb};
use crate::units::ByteSize;

/// The most NUMA nodes a machine may have: Linux's `MAX_NUMNODES` with its
/// largest `NODES_SHIFT` (10).
pub const MAX_NODES: u32 = 1024;
/// A node's distance to itself in a SLIT (ACPI's and Linux's `LOCAL_DISTANCE`).
pub const LOCAL_DISTANCE: f64 = 10.0;
/// The largest SLIT distance; 255 means unreachable.
pub const MAX_DISTANCE: f64 = 254.0;

/// Memory and NUMA configuration (`machine.memory`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryParams {
    /// NUMA nodes; default one per socket. Socket `s` is local to node
    /// `s * nodes / sockets`.
    pub nodes: Option<u32>,
    /// Capacity of each node.
    pub node_bytes: ByteSize,
    /// Page size: 4 KiB, 2 MiB, or any power of two from 4 KiB.
    pub page_bytes: ByteSize,
    /// Cycles to read a line from the local node.
    pub latency_cycles: u32,
    /// Cycles to read a line from another node; default `latency_cycles`.
    /// Shorthand for `distances` with one remote distance.
    pub remote_latency_cycles: Option<u32>,
    /// Node distances as a SLIT gives them (Linux's
    /// `/sys/devices/system/node/nodeN/distance`): row `i` is the reading
    /// node, column `j` the page's node, 10 on the diagonal. A line read
    /// from node `j` by a core of node `i` costs `latency_cycles * d[i][j] /
    /// 10`.
    pub distances: Option<Vec<Vec<f64>>>,
    /// Node of a newly touched page.
    pub placement: Placement,
    /// Pages placed on a given node when first touched, whatever
    /// `placement` says (an oracle's placement): `{asid, vpn, node}`.
    pub page_nodes: Vec<PageNode>,
    /// Order of frames within a node.
    pub frame_allocation: FrameAllocation,
}

impl MemoryParams {
    /// Cycles of a line read by a core of node `i` from node `j`, at
    /// `[i * nodes + j]`, from `distances` (or `remote_latency_cycles`).
    pub fn node_latencies(&self, nodes: u32) -> Vec<u32> {
        let n = nodes as usize;
        let remote = self.remote_latency_cycles.unwrap_or(self.latency_cycles);
        (0..n * n)
            .map(|k| {
                let (i, j) = (k / n, k % n);
                match &self.distances {
                    Some(d) => (self.latency_cycles as f64 * d[i][j] / LOCAL_DISTANCE).round() as u32,
                    None if i == j => self.latency_cycles,
                    None => remote,
                }
            })
            .collect()
    }

    /// Check `distances` against the machine's `nodes` (the checks Linux
    /// applies to a SLIT, and the latencies they give).
    fn validate_distances(&self, nodes: u32, mloc: &dyn Fn(&str) -> String, issues: &mut Issues) {
        let Some(d) = &self.distances else { return };
        if self.remote_latency_cycles.is_some() {
            issues.push(
                mloc("remote_latency_cycles"),
                "invalid_value",
                "give remote_latency_cycles or distances, not both",
            );
        }
        let n = nodes as usize;
        if d.len() != n || d.iter().any(|row| row.len() != n) {
            let shape = d.iter().map(|r| r.len().to_string()).collect::<Vec<_>>().join(", ");
            issues.push(
                mloc("distances"),
                "invalid_value",
                format!(
                    "expected a {n} x {n} matrix, a row and a column per node; got {} row(s) of [{shape}]",
                    d.len()
                ),
            );
            return;
        }
        for (i, row) in d.iter().enumerate() {
            for (j, &v) in row.iter().enumerate() {
                let at = mloc(&format!("distances[{i}][{j}]"));
                if i == j {
                    issues.check(
                        v == LOCAL_DISTANCE,
                        at,
                        "invalid_value",
                        format!("a node's distance to itself is 10 (a SLIT's local distance), got {v}"),
                    );
                } else {
                    issues.check(
                        v.is_finite() && (LOCAL_DISTANCE..=MAX_DISTANCE).contains(&v),
                        at,
                        "out_of_range",
                        format!("expected a distance from 10 (as near as local) to 254, got {v}"),
                    );
                }
            }
        }
        let worst = self.latency_cycles as f64 * MAX_DISTANCE / LOCAL_DISTANCE;
        issues.check(
            worst <= u32::MAX as f64,
            mloc("latency_cycles"),
            "out_of_range",
            format!("{} cycles x distance / 10 does not fit 32 bits", self.latency_cycles),
        );
    }
}

impl Default for MemoryParams {
    fn default() -> Self {
        MemoryParams {
            nodes: None,
            node_bytes: ByteSize(64 << 30),
            page_bytes: ByteSize(4096),
            latency_cycles: 200,
            remote_latency_cycles: None,
            distances: None,
            placement: Placement::FirstTouch,
            page_nodes: Vec::new(),
            frame_allocation: FrameAllocation::Random,
        }
    }
}

/// The machine (`machine`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MachineParams {
    /// Name of the preset these values started from (informational once resolved).
    pub preset: Option<String>,
    /// Sockets.
    pub sockets: u32,
    /// Cores per socket.
    pub cores_per_socket: u32,
    /// Core clock, used to convert times such as `"2.5ms"` to cycles.
    pub frequency_ghz: f64,
    /// Cycles per instruction before memory stalls.
    pub base_cpi: f64,
    /// Private L1 instruction cache; without it fetches use the L1D.
    #[serde(deserialize_with = "crate::plugin::optional")]
    pub l1i: Option<CacheParams>,
    /// Private L1 data cache.
    pub l1d: CacheParams,
    /// Private L2.
    #[serde(deserialize_with = "crate::plugin::optional")]
    pub l2: Option<CacheParams>,
    /// Last-level cache shared by the cores of a socket.
    #[serde(deserialize_with = "crate::plugin::optional")]
    pub llc: Option<CacheParams>,
    /// TLBs; without them translation is free.
    #[serde(deserialize_with = "crate::plugin::optional")]
    pub tlb: Option<TlbParams>,
    /// Memory.
    pub memory: MemoryParams,
    /// How the cores' caches are kept coherent when threads of one address
    /// space run on several cores: `"mesi"` (default) or `"none"`.
    pub coherence: Protocol,
    /// An interconnect sampler recording transactions (the source's bus
    /// analyzer); none by default.
    #[serde(deserialize_with = "crate::plugin::optional")]
    pub sampler: Option<SamplerParams>,
    /// Levels whose misses are attributed to their causes (compulsory,
    /// capacity/conflict, switch-, migration- and sharing-induced) with
    /// per-task isolated shadows, e.g. `["l2", "llc", "tlb.l1"]`. Each costs
    /// time; the L1s and `tlb.l1` also turn off the L1 shortcuts.
    pub attribution: Vec<Attributed>,
}

impl Default for MachineParams {
    fn default() -> Self {
        MachineParams {
            preset: None,
            sockets: 1,
            cores_per_socket: 1,
            frequency_ghz: 3.0,
            base_cpi: 1.0,
            l1i: None,
            l1d: CacheParams::default(),
            l2: None,
            llc: None,
            tlb: Some(TlbParams::default()),
            memory: MemoryParams::default(),
            coherence: Protocol::Mesi,
            sampler: None,
            attribution: Vec::new(),
        }
    }
}

impl MachineParams {
    /// The host memory a machine of these params takes, at most, running
    /// `tasks` tasks in `spaces` address spaces: its parts, each with the
    /// key that decides its size (`loc` is the machine's). What grows with
    /// the pages and lines a run touches (page tables, the lines each cache
    /// has seen) is not counted.
    pub fn host_bytes(&self, tasks: u64, spaces: u64, loc: &str) -> Vec<(String, u64)> {
        let at = |key: &str| format!("{loc}.{key}");
        let sockets = self.sockets as u64;
        let cores = self.cores() as u64;
        let line_bits = Machine::line_bits(self);
        let mut parts = vec![(loc.to_string(), notes::HOST_BYTES)];
        for (name, params) in [("l1i", self.l1i.as_ref()), ("l1d", Some(&self.l1d)), ("l2", self.l2.as_ref())] {
            if let Some(p) = params {
                parts.push((at(&format!("{name}.size_bytes")), p.host_bytes(line_bits).saturating_mul(cores)));
            }
        }
        if let Some(p) = &self.llc {
            parts.push((at("llc.size_bytes"), p.host_bytes(line_bits).saturating_mul(sockets)));
        }
        if let Some(t) = &self.tlb {
            for (name, params) in [("l1d", Some(&t.l1d)), ("l1i", t.l1i.as_ref()), ("l2", t.l2.as_ref())] {
                if let Some(p) = params {
                    parts.push((at(&format!("tlb.{name}.entries")), p.host_bytes().saturating_mul(cores)));
                }
            }
        }
        // Each node's counters, in the machine and in each socket's share,
        // and its frames handed out to each address space.
        let per_node = (std::mem::size_of::<NodeStats>() as u64) * (sockets + 1) + 8 * spaces.max(1);
        parts.push((at("memory.nodes"), per_node.saturating_mul(self.nodes() as u64)));
        // The node-to-node latency table, and the distances it comes from.
        parts.push((at("memory.distances"), 12u64.saturating_mul((self.nodes() as u64).pow(2))));
        if self.coherence == Protocol::Mesi {
            // Per core, the caches it snoops and its traffic to each node.
            let caches = cores.saturating_mul(3).saturating_add(sockets);
            let snoop = cores.saturating_mul(caches).saturating_mul(2);
            let traffic = cores.saturating_mul(self.nodes() as u64).saturating_mul(56);
            parts.push((at("coherence"), snoop.saturating_add(traffic)));
        }
        if !self.attribution.is_empty() {
            let (caches, tlbs) = self.attributed();
            let shadows = Attribution::host_bytes_per_task(&caches, line_bits, tlbs);
            parts.push((at("attribution"), shadows.saturating_mul(tasks)));
        }
        parts
    }

    /// The cache and TLB levels whose misses are attributed, with their params.
    #[allow(clippy::type_complexity)]
    pub(super) fn attributed(&self) -> (Vec<(Level, &CacheParams)>, [Option<&tlb::TlbLevelParams>; 2]) {
        let on = |a: Attributed| self.attribution.contains(&a);
        let levels = [
            (Attributed::L1i, Level::L1i, self.l1i.as_ref()),
            (Attributed::L1d, Level::L1d, Some(&self.l1d)),
            (Attributed::L2, Level::L2, self.l2.as_ref()),
            (Attributed::Llc, Level::Llc, self.llc.as_ref()),
        ];
        let caches = levels.into_iter().filter(|(a, ..)| on(*a)).filter_map(|(_, l, p)| Some((l, p?))).collect();
        let tlb = self.tlb.as_ref();
        let tlbs = [
            tlb.filter(|_| on(Attributed::TlbL1)).map(|t| &t.l1d),
            tlb.filter(|_| on(Attributed::TlbL2)).and_then(|t| t.l2.as_ref()),
        ];
        (caches, tlbs)
    }

    /// Total cores.
    pub fn cores(&self) -> u32 {
        self.sockets.saturating_mul(self.cores_per_socket)
    }

    /// NUMA nodes.
    pub fn nodes(&self) -> u32 {
        self.memory.nodes.unwrap_or(self.sockets)
    }

    fn levels_mut(&mut self) -> impl Iterator<Item = (&'static str, &mut CacheParams)> {
        [("l1i", self.l1i.as_mut()), ("l1d", Some(&mut self.l1d)), ("l2", self.l2.as_mut()), ("llc", self.llc.as_mut())]
            .into_iter()
            .filter_map(|(n, p)| p.map(|p| (n, p)))
    }

    /// Check everything, recording problems under `loc`, and fill in the
    /// default params of the replacement policies.
    pub fn validate(&mut self, loc: &str, issues: &mut Issues) {
        let at = |field: &str| format!("{loc}.{field}");
        issues.check(self.sockets >= 1, at("sockets"), "out_of_range", "expected at least 1 socket");
        issues.check(self.cores_per_socket >= 1, at("cores_per_socket"), "out_of_range", "expected at least 1 core");
        issues.check(self.cores() <= 4096, at("cores_per_socket"), "out_of_range", "at most 4096 cores are supported");
        issues.check(
            self.frequency_ghz.is_finite() && self.frequency_ghz > 0.0,
            at("frequency_ghz"),
            "out_of_range",
            format!("expected a positive frequency, got {}", self.frequency_ghz),
        );
        issues.check(
            self.base_cpi.is_finite() && self.base_cpi > 0.0,
            at("base_cpi"),
            "out_of_range",
            format!("expected a positive CPI, got {}", self.base_cpi),
        );
        if let Some(sampler) = &self.sampler {
            sampler.validate(&at("sampler"), self.frequency_ghz, issues);
            issues.check(
                self.coherence == Protocol::Mesi,
                at("sampler"),
                "invalid_value",
                "the sampler records the transactions coherence carries: set coherence = \"mesi\"",
            );
        }
        let l1d_line = self.l1d.line_bytes;
        for (name, params) in self.levels_mut() {
            params.validate(&at(name), issues);
            if name.starts_with("l1") {
                issues.check(
                    params.inclusion == Inclusion::NonInclusive,
                    format!("{loc}.{name}.inclusion"),
                    "invalid_value",
                    "an L1 has no level above it; leave inclusion at non-inclusive",
                );
            }
            issues.check(
                params.line_bytes == l1d_line,
                format!("{loc}.{name}.line_bytes"),
                "invalid_value",
                format!(
                    "all cache levels must share one line size; l1d has {l1d_line}, {name} has {}",
                    params.line_bytes
                ),
            );
        }
        if let Some(tlb) = &mut self.tlb {
            tlb.validate(&at("tlb"), issues);
        }
        let m = &self.memory;
        let mloc = |field: &str| format!("{loc}.memory.{field}");
        let nodes = self.nodes();
        issues.check(nodes >= 1, mloc("nodes"), "out_of_range", "expected at least 1 node");
        issues.check(
            nodes <= MAX_NODES,
            mloc("nodes"),
            "out_of_range",
            format!("at most {MAX_NODES} nodes are supported (Linux's largest MAX_NUMNODES), got {nodes}"),
        );
        issues.check(
            m.page_bytes.0.is_power_of_two() && m.page_bytes.0 >= 4096,
            mloc("page_bytes"),
            "not_power_of_two",
            format!("expected a power of two of at least 4KiB, got {}", m.page_bytes),
        );
        issues.check(
            m.page_bytes.0 >= self.l1d.line_bytes as u64,
            mloc("page_bytes"),
            "invalid_value",
            "a page must hold at least one cache line",
        );
        issues.check(
            m.node_bytes.0 >= m.page_bytes.0 && m.page_bytes.0 > 0 && m.node_bytes.0.is_multiple_of(m.page_bytes.0),
            mloc("node_bytes"),
            "invalid_value",
            format!("expected a positive multiple of the page size, got {}", m.node_bytes),
        );
        m.validate_distances(nodes, &mloc, issues);
        if let Some(i) = m.page_nodes.iter().position(|p| p.node >= nodes) {
            let message = format!("node {} does not exist: the machine has {nodes}", m.page_nodes[i].node);
            issues.push(mloc(&format!("page_nodes[{i}].node")), "out_of_range", message);
        }
        if let Placement::Bind(n) = m.placement {
            issues.check(
                n < nodes,
                mloc("placement"),
                "out_of_range",
                format!("bind to node {n}, but the machine has {nodes} node(s)"),
            );
        }
        issues.check(
            m.frame_allocation != FrameAllocation::Identity || nodes == 1,
            mloc("frame_allocation"),
            "invalid_value",
            "identity mapping needs a single NUMA node (physical addresses would not tell the node)",
        );
        for (i, a) in self.attribution.iter().enumerate() {
            let present = match a {
                Attributed::L1i => self.l1i.is_some(),
                Attributed::L1d => true,
                Attributed::L2 => self.l2.is_some(),
                Attributed::Llc => self.llc.is_some(),
                Attributed::TlbL1 => self.tlb.is_some(),
                Attributed::TlbL2 => self.tlb.as_ref().is_some_and(|t| t.l2.is_some()),
            };
            issues.check(
                present,
                format!("{loc}.attribution[{i}]"),
                "invalid_value",
                format!("the machine has no {} to attribute misses of", a.name()),
            );
        }
    }
}
