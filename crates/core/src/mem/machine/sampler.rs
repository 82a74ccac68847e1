//! The interconnect sampler (`machine.sampler`): the source's bus analyzer,
//! a FIFO that records a few consecutive transactions (physical address,
//! requester, type), read by software that takes time to drain it, and the
//! per-page, per-node table of sampled accesses the page-migration policy
//! reads (spec numa-page-migration.md 2.1, 2.2, 2.4 and 6.3).
//!
//! Modes:
//! - `interval`: every `period`-th transaction (counted over all of them),
//!   if the reader is idle, the FIFO captures that transaction and the next
//!   `depth - 1`; the reader is then busy for `read_time` after the last,
//!   and a trigger that comes while it is busy is dropped. `8 / period` of
//!   the transactions are sampled while the reader keeps up.
//! - `max-rate`: the reader drains the FIFO as fast as it can: whenever it
//!   is idle the FIFO captures the next `depth` transactions. Sampling by
//!   time, it over-represents cores that make few transactions per unit of
//!   time (the source's Table 1 bias).
//! - `exhaustive`: every transaction.
//!
//! A transaction's time is its core's clock when the chunk of references
//! that made it began (the engine's chunks are short beside a read time).

use serde::{Deserialize, Serialize};

use crate::error::Issues;
use crate::units::{Budget, Span};
use crate::util::hash::U64Map;

/// How the sampler picks transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SamplingMode {
    /// Every `period`-th transaction and the next `depth - 1`.
    #[default]
    Interval,
    /// As fast as the reader drains the FIFO.
    MaxRate,
    /// Every transaction.
    Exhaustive,
}

/// The sampler's configuration (`machine.sampler`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SamplerParams {
    /// How transactions are picked.
    pub mode: SamplingMode,
    /// Transactions between two captures (interval mode): the source's N.
    pub period: u64,
    /// Transactions one capture records: the FIFO's depth.
    pub depth: u32,
    /// How long the reader takes to drain a capture (a time such as
    /// `"2us"`, or cycles).
    pub read_time: Span,
    /// Whether write-backs count in the per-page table (the source's
    /// default, spec section 7.4: demand reads and ownership requests only).
    pub count_writebacks: bool,
}

impl Default for SamplerParams {
    fn default() -> Self {
        SamplerParams {
            mode: SamplingMode::Interval,
            period: 1024,
            depth: 8,
            read_time: Span::cycles(0),
            count_writebacks: false,
        }
    }
}

impl SamplerParams {
    /// Check the values; `loc` is the table's config path.
    pub fn validate(&self, loc: &str, frequency_ghz: f64, issues: &mut Issues) {
        issues.check(
            self.period >= 1,
            format!("{loc}.period"),
            "out_of_range",
            "expected a period of at least 1 transaction",
        );
        issues.check(
            (1..=1 << 20).contains(&self.depth),
            format!("{loc}.depth"),
            "out_of_range",
            format!("expected a FIFO of 1 to 2^20 transactions, got {}", self.depth),
        );
        if !matches!(self.read_time.resolve(frequency_ghz), Budget::Cycles(_)) {
            issues.push(format!("{loc}.read_time"), "invalid_value", "expected a time or cycles, not instructions");
        }
    }

    /// The read time in cycles.
    fn read_cycles(&self, frequency_ghz: f64) -> u64 {
        match self.read_time.resolve(frequency_ghz) {
            Budget::Cycles(c) => c,
            Budget::Instructions(_) => 0,
        }
    }
}

/// The sampler's state and what it has recorded.
#[derive(Debug)]
pub struct Sampler {
    mode: SamplingMode,
    period: u64,
    depth: u32,
    read_cycles: u64,
    count_writebacks: bool,
    nodes: usize,
    /// Transactions since the last trigger (interval mode).
    seen: u64,
    /// Transactions the current capture still records.
    capture: u32,
    /// When the reader is free for the next capture.
    busy_until: u64,
    /// Per frame: its row in `counts`.
    rows: U64Map,
    /// Per row: its frame.
    frames: Vec<u64>,
    /// Sampled transactions per row and requesting node.
    counts: Vec<u32>,
}

impl Sampler {
    pub(super) fn new(p: &SamplerParams, frequency_ghz: f64, nodes: u32) -> Sampler {
        Sampler {
            mode: p.mode,
            period: p.period.max(1),
            depth: p.depth.max(1),
            read_cycles: p.read_cycles(frequency_ghz),
            count_writebacks: p.count_writebacks,
            nodes: nodes as usize,
            seen: 0,
            capture: 0,
            busy_until: 0,
            rows: U64Map::default(),
            frames: Vec::new(),
            counts: Vec::new(),
        }
    }

    /// One transaction at time `now` of a core of `node` to `frame`
    /// (`writeback`: a write-back); returns whether it was sampled.
    #[inline]
    pub(super) fn observe(&mut self, now: u64, node: u32, frame: u64, writeback: bool) -> bool {
        match self.mode {
            SamplingMode::Exhaustive => {}
            SamplingMode::Interval => {
                self.seen += 1;
                if self.seen == self.period {
                    self.seen = 0;
                    // A trigger while the reader is busy is dropped.
                    if self.capture == 0 && now >= self.busy_until {
                        self.capture = self.depth;
                    }
                }
                if !self.take(now) {
                    return false;
                }
            }
            SamplingMode::MaxRate => {
                if self.capture == 0 && now >= self.busy_until {
                    self.capture = self.depth;
                }
                if !self.take(now) {
                    return false;
                }
            }
        }
        if !writeback || self.count_writebacks {
            let row = match self.rows.get(frame) {
                Some(row) => row as usize,
                None => {
                    let row = self.frames.len();
                    self.rows.insert(frame, row as u64);
                    self.frames.push(frame);
                    self.counts.resize(self.counts.len() + self.nodes, 0);
                    row
                }
            };
            self.counts[row * self.nodes + node as usize] += 1;
        }
        true
    }

    /// Whether the capture in progress records this transaction.
    #[inline]
    fn take(&mut self, now: u64) -> bool {
        if self.capture == 0 {
            return false;
        }
        self.capture -= 1;
        if self.capture == 0 {
            self.busy_until = now + self.read_cycles;
        }
        true
    }

    /// Forget what was sampled (after warm-up); the capture in progress goes on.
    pub(super) fn reset(&mut self) {
        self.drain(|_, _| {});
    }

    /// Hand every sampled page, its frame and counts per requesting node,
    /// to `f`, and forget them.
    pub fn drain(&mut self, mut f: impl FnMut(u64, &[u32])) {
        for (row, &frame) in self.frames.iter().enumerate() {
            f(frame, &self.counts[row * self.nodes..(row + 1) * self.nodes]);
        }
        self.rows = U64Map::default();
        self.frames.clear();
        self.counts.clear();
    }

    /// The sampled pages: each frame with its counts per requesting node.
    pub fn rows(&self) -> impl Iterator<Item = (u64, &[u32])> + '_ {
        self.frames.iter().copied().zip(self.counts.chunks_exact(self.nodes.max(1)))
    }
}
