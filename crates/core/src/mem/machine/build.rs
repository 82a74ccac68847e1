//! Building a machine from its parameters: its caches, TLBs, wiring, page
//! tables and probes.

use super::{Bases, Constants, Machine, MachineParams, Memo, MigrationQueue, Path, Ports};
use crate::counters::{Level, NodeStats};
use crate::error::{Issues, Result};
use crate::mem::attribution::{Attributed, Attribution};
use crate::mem::cache::{Cache, CacheParams};
use crate::mem::notes::Notebook;
use crate::mem::page_table::{FrameAllocation, PageTable};
use crate::mem::tlb::Tlb;
use crate::mem::{prefetch, tlb};

impl Machine {
    /// Build from validated params; `loc` is the config path of the machine.
    pub fn new(params: &MachineParams, seed: u64, loc: &str) -> Result<Machine> {
        let mut params = params.clone();
        let mut issues = Issues::default();
        params.validate(loc, &mut issues);
        issues.finish()?;
        let params = &params;
        let line_bits = Self::line_bits(params);
        let page_shift = params.memory.page_bytes.0.trailing_zeros();
        let page_lines_shift = page_shift - params.l1d.line_bytes.trailing_zeros();
        let mut caches = Vec::new();
        let mut cache_level = Vec::new();
        let mut prefetchers = Vec::new();
        let mut add = |p: &CacheParams, level: Level, path: String| -> Result<usize> {
            let loc = format!("{loc}.{}", level.name());
            let mut c = Cache::new(p, line_bits, seed, &path, &loc)?;
            c.receives_stores = level.receives_stores();
            caches.push(c);
            cache_level.push(level);
            let prefetcher =
                p.prefetcher.as_ref().map(|raw| prefetch::build(raw, page_lines_shift, &format!("{loc}.prefetcher")));
            prefetchers.push(prefetcher.transpose()?);
            Ok(caches.len() - 1)
        };
        let mut tlbs = Vec::new();
        let mut add_tlb = |p: &tlb::TlbLevelParams, name: &str, path: String| -> Result<usize> {
            tlbs.push(Tlb::new(p, seed, &path, &format!("{loc}.tlb.{name}"))?);
            Ok(tlbs.len() - 1)
        };
        let nodes = params.nodes();
        let mut cores = Vec::new();
        let per_core = |present: [bool; 3]| present.iter().filter(|&&p| p).count() * params.cores_per_socket as usize;
        let caches_per_socket =
            params.llc.is_some() as usize + per_core([params.l1i.is_some(), true, params.l2.is_some()]);
        let tlbs_per_socket = params.tlb.as_ref().map_or(0, |t| per_core([true, t.l1i.is_some(), t.l2.is_some()]));
        let mut sockets = Vec::new();
        let mut inclusive_uppers: Vec<(usize, Vec<usize>)> = Vec::new();
        for s in 0..params.sockets {
            let bases = Bases { cache: s as usize * caches_per_socket, tlb: s as usize * tlbs_per_socket };
            sockets.push(bases);
            // Indexes from the socket's first cache and TLB.
            let mut add = |p: &CacheParams, level: Level, path: String| add(p, level, path).map(|c| c - bases.cache);
            let mut add_tlb =
                |p: &tlb::TlbLevelParams, name: &str, path: String| add_tlb(p, name, path).map(|t| t - bases.tlb);
            let llc = params.llc.as_ref().map(|p| add(p, Level::Llc, format!("socket{s}/llc"))).transpose()?;
            let mut socket_caches = Vec::new();
            for i in 0..params.cores_per_socket {
                let core = s * params.cores_per_socket + i;
                let base = format!("socket{s}/core{core}");
                let l1i = params.l1i.as_ref().map(|p| add(p, Level::L1i, format!("{base}/l1i"))).transpose()?;
                let l1d = add(&params.l1d, Level::L1d, format!("{base}/l1d"))?;
                let l2 = params.l2.as_ref().map(|p| add(p, Level::L2, format!("{base}/l2"))).transpose()?;
                let l1s: Vec<usize> = l1i.into_iter().chain([l1d]).collect();
                if let Some(l2) = l2 {
                    inclusive_uppers.push((bases.cache + l2, l1s.clone()));
                }
                socket_caches.extend(l1s.into_iter().chain(l2));
                let (dtlb, itlb, stlb) = match &params.tlb {
                    Some(t) => (
                        Some(add_tlb(&t.l1d, "l1d", format!("{base}/dtlb"))?),
                        t.l1i.as_ref().map(|p| add_tlb(p, "l1i", format!("{base}/itlb"))).transpose()?,
                        t.l2.as_ref().map(|p| add_tlb(p, "l2", format!("{base}/stlb"))).transpose()?,
                    ),
                    None => (None, None, None),
                };
                cores.push(Ports {
                    node: s * nodes / params.sockets,
                    data: Path::new(&[Some(l1d), l2, llc]),
                    instr: Path::new(&[Some(l1i.unwrap_or(l1d)), l2, llc]),
                    dtlb,
                    itlb,
                    stlb,
                });
            }
            if let Some(llc) = llc {
                inclusive_uppers.push((bases.cache + llc, socket_caches));
            }
        }
        debug_assert_eq!(caches.len(), params.sockets as usize * caches_per_socket);
        debug_assert_eq!(tlbs.len(), params.sockets as usize * tlbs_per_socket);
        let cache_node = (0..caches.len()).map(|c| (c / caches_per_socket) as u32 * nodes / params.sockets).collect();
        let mut uppers = vec![Vec::new(); caches.len()];
        for (c, above) in inclusive_uppers {
            uppers[c] = above;
        }
        let frames_per_node = params.memory.node_bytes.0 >> page_shift;
        let t = params.tlb.clone().unwrap_or_default();
        let memos = vec![[Memo::default(); 2]; cores.len()];
        let migration_queues = vec![MigrationQueue::default(); cores.len()];
        let notebook = Notebook::new(caches.len(), Self::attribution(params, line_bits, seed)?);
        let mut page_table = PageTable::new(
            page_shift,
            nodes,
            frames_per_node,
            params.memory.placement,
            params.memory.frame_allocation,
            seed,
        );
        page_table.place_pages(&params.memory.page_nodes);
        Ok(Machine {
            caches,
            cache_level,
            cache_node,
            uppers,
            tlbs,
            cores,
            sockets,
            cores_per_socket: params.cores_per_socket as usize,
            page_table,
            k: Constants {
                line_shift: params.l1d.line_bytes.trailing_zeros(),
                page_shift,
                frames_per_node,
                nodes,
                walk: t.walk,
                walk_latency: t.walk_latency_cycles,
                radix_levels: if page_shift >= 21 { 3 } else { 4 },
                l2_victim_fill: t.l2_victim_fill,
                base_cpi: params.base_cpi,
                hint_fault_cycles: 0,
                shortcuts: !params
                    .attribution
                    .iter()
                    .any(|a| matches!(a, Attributed::L1i | Attributed::L1d | Attributed::TlbL1))
                    && params.l1d.prefetcher.is_none()
                    && params.l1i.as_ref().is_none_or(|p| p.prefetcher.is_none()),
            },
            nodes: (0..nodes).map(|node| NodeStats { node, ..NodeStats::default() }).collect(),
            node_latency: params.memory.node_latencies(nodes),
            tasks: Vec::new(),
            memos,
            scratch: Vec::new(),
            prefetchers,
            migration_queues,
            notebook,
            atd: None,
            coherence: None,
            wide: None,
            sampler: params.sampler.clone().map(|s| (s, params.frequency_ghz)),
            split: None,
        })
    }

    /// The shadows of the attributed levels, if any.
    pub(super) fn attribution(params: &MachineParams, line_bits: u32, seed: u64) -> Result<Option<Attribution>> {
        if params.attribution.is_empty() {
            return Ok(None);
        }
        let (caches, tlbs) = params.attributed();
        Ok(Some(Attribution::new(&caches, line_bits, tlbs, seed)?))
    }

    /// Bits of the largest physical line number: frames come from the
    /// nodes' memory, except under identity allocation, where a physical
    /// address is the virtual one and may be any 64-bit value.
    pub(super) fn line_bits(params: &MachineParams) -> u32 {
        if params.memory.frame_allocation == FrameAllocation::Identity {
            return 64;
        }
        let bytes = params.memory.node_bytes.0.saturating_mul(params.nodes() as u64);
        let line_shift = params.l1d.line_bytes.trailing_zeros();
        64 - (bytes.saturating_sub(1) >> line_shift).leading_zeros()
    }
}
