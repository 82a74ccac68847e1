//! `stream`: the stream prefetcher of Srinath et al., "Feedback Directed
//! Prefetching" (HPCA 2007), after the IBM POWER4 design, with a static
//! setting (no feedback throttling).
//!
//! A table of `streams` entries, replaced least recently used. A demand miss
//! outside every tracked stream allocates an entry at its line. The entry
//! trains on the next `train_misses` misses within `train_window` lines of
//! that line: all on one side of it fix the direction (a miss on the other
//! side restarts training with the new direction). A trained stream
//! monitors the lines from the last reference `a` to the prefetch frontier
//! `p`; a demand reference inside that region moves `a` to it and fetches
//! up to `degree` lines past `p`, never more than `distance` lines ahead of
//! `a`. The paper's settings run from (distance 4, degree 1) to (64, 4);
//! the default is its middle one, (16, 2).

use serde::{Deserialize, Serialize};

use super::{check_degree, Observed, Prefetch, PrefetchCtx, Prefetcher, Proposals};
use crate::error::{join_path, Error, Result};

/// Parameters of `stream`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamParams {
    /// Streams tracked at once.
    pub streams: u32,
    /// How far ahead of the last reference the frontier may run, in lines.
    pub distance: u32,
    /// Lines fetched per triggering reference.
    pub degree: u32,
    /// Misses after the allocating one that train a stream.
    pub train_misses: u32,
    /// How far from the allocating line a training miss may be, in lines.
    pub train_window: u32,
}

impl Default for StreamParams {
    fn default() -> Self {
        StreamParams { streams: 64, distance: 16, degree: 2, train_misses: 2, train_window: 16 }
    }
}

/// The most streams a table may follow.
pub const MAX_STREAMS: u32 = 4096;

impl StreamParams {
    /// Build the prefetcher.
    pub fn build(&self, ctx: &PrefetchCtx) -> Result<Prefetcher> {
        check_degree(self.degree, &ctx.loc)?;
        for (key, value) in
            [("streams", self.streams), ("distance", self.distance), ("train_window", self.train_window)]
        {
            if value == 0 {
                return Err(Error::config(
                    join_path(&ctx.loc, &format!("params.{key}")),
                    "out_of_range",
                    "expected at least 1",
                ));
            }
        }
        // Every miss looks through the whole table; hardware keeps 16 to 64.
        if self.streams > MAX_STREAMS {
            return Err(Error::config(
                join_path(&ctx.loc, "params.streams"),
                "out_of_range",
                format!("expected at most {MAX_STREAMS} streams, got {}", self.streams),
            ));
        }
        Ok(Prefetcher::Stream(Stream {
            entries: vec![Entry::default(); self.streams as usize],
            clock: 0,
            distance: self.distance as i64,
            degree: self.degree,
            train_misses: self.train_misses,
            train_window: self.train_window as i64,
        }))
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum State {
    #[default]
    Invalid,
    /// Allocated at `start`; `trained` misses seen in direction `dir` (0: none yet).
    Training,
    /// Trained: monitoring `a` to the frontier `p` in direction `dir`.
    Monitor,
}

#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    state: State,
    start: i64,
    dir: i64,
    trained: u32,
    a: i64,
    p: i64,
    used: u64,
}

impl Entry {
    /// Whether `line` lies between the last reference and the frontier.
    fn monitors(&self, line: i64) -> bool {
        self.state == State::Monitor && (line - self.a) * self.dir >= 0 && (self.p - line) * self.dir >= 0
    }
}

/// The stream prefetcher's table.
#[derive(Debug, Clone)]
pub struct Stream {
    entries: Vec<Entry>,
    clock: u64,
    distance: i64,
    degree: u32,
    train_misses: u32,
    train_window: i64,
}

impl Stream {
    /// Move a monitoring stream to `line` and push its frontier.
    fn advance(&mut self, i: usize, line: i64, out: &mut Proposals) {
        let (distance, degree) = (self.distance, self.degree);
        let e = &mut self.entries[i];
        e.a = line;
        for _ in 0..degree {
            if (e.p - e.a) * e.dir >= distance || !out.push((e.p + e.dir) as i128) {
                break;
            }
            e.p += e.dir;
        }
    }

    /// A miss near a training stream's start: count it, and start
    /// monitoring once trained.
    fn train(&mut self, i: usize, line: i64, out: &mut Proposals) {
        let train_misses = self.train_misses;
        let e = &mut self.entries[i];
        let dir = (line - e.start).signum();
        if dir == 0 {
            return;
        }
        if dir != e.dir {
            (e.dir, e.trained) = (dir, 0);
        }
        e.trained += 1;
        if e.trained >= train_misses {
            (e.state, e.p) = (State::Monitor, line);
            self.advance(i, line, out);
        }
    }
}

impl Prefetch for Stream {
    fn observe(&mut self, seen: &Observed, out: &mut Proposals) {
        let line = seen.line.0 as i64;
        self.clock += 1;
        if let Some(i) = self.entries.iter().position(|e| e.monitors(line)) {
            self.entries[i].used = self.clock;
            return self.advance(i, line, out);
        }
        if seen.hit {
            return;
        }
        let window = self.train_window;
        let training = self
            .entries
            .iter()
            .position(|e| e.state == State::Training && (line - e.start).abs() <= window && line != e.start);
        if let Some(i) = training {
            self.entries[i].used = self.clock;
            return self.train(i, line, out);
        }
        // Allocate: an invalid entry, else the least recently used.
        let i = (0..self.entries.len())
            .min_by_key(|&i| (self.entries[i].state != State::Invalid, self.entries[i].used))
            .unwrap_or(0);
        self.entries[i] = Entry { state: State::Training, start: line, used: self.clock, ..Entry::default() };
        if self.train_misses == 0 {
            // Untrained streams go both ways: assume ascending.
            let e = &mut self.entries[i];
            (e.state, e.dir, e.p) = (State::Monitor, 1, line);
            self.advance(i, line, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{LineAddr, VirtAddr};

    fn observe(p: &mut Prefetcher, line: u64, hit: bool) -> Vec<u64> {
        let mut out = Proposals::new(LineAddr(line), 12);
        p.observe(&Observed { line: LineAddr(line), pc: VirtAddr(0), hit }, &mut out);
        out.lines().iter().map(|l| l.0).collect()
    }

    fn stream(distance: u32, degree: u32) -> Prefetcher {
        let ctx = PrefetchCtx { page_lines_shift: 12, loc: "l2.prefetcher".into() };
        StreamParams { distance, degree, ..StreamParams::default() }.build(&ctx).unwrap()
    }

    #[test]
    fn trains_on_two_misses_then_runs_ahead_by_degree_up_to_the_distance() {
        let mut p = stream(4, 2);
        assert!(observe(&mut p, 1000, false).is_empty(), "allocates");
        assert!(observe(&mut p, 1001, false).is_empty(), "first training miss");
        // Second training miss: trained at 1002, frontier moves 2 ahead.
        assert_eq!(observe(&mut p, 1002, false), [1003, 1004]);
        assert_eq!(observe(&mut p, 1003, true), [1005, 1006]);
        // The frontier (1006) is 3 ahead of 1003... now 1004 -> at most 4 ahead: 1007, 1008.
        assert_eq!(observe(&mut p, 1004, true), [1007, 1008]);
        // 1005: frontier 1008 is 3 ahead, one more allowed.
        assert_eq!(observe(&mut p, 1005, true), [1009]);
        assert!(observe(&mut p, 2000, true).is_empty(), "a hit elsewhere neither trains nor allocates");
    }

    #[test]
    fn descending_streams_and_direction_changes() {
        let mut p = stream(16, 1);
        observe(&mut p, 500, false);
        observe(&mut p, 505, false); // up
        assert!(observe(&mut p, 498, false).is_empty(), "other side: restart training downwards");
        assert_eq!(observe(&mut p, 497, false), [496], "trained downwards");
        assert!(observe(&mut p, 600, false).is_empty(), "far away: a new stream");
    }

    #[test]
    fn least_recently_used_streams_are_replaced() {
        let ctx = PrefetchCtx { page_lines_shift: 12, loc: "l2.prefetcher".into() };
        let mut p = StreamParams { streams: 2, ..StreamParams::default() }.build(&ctx).unwrap();
        observe(&mut p, 100, false);
        observe(&mut p, 200, false);
        observe(&mut p, 300, false); // replaces the stream at 100
        observe(&mut p, 101, false); // so this allocates again rather than trains
        assert!(observe(&mut p, 102, false).is_empty(), "only one training miss so far");
        assert_eq!(observe(&mut p, 103, false).len(), 2);
    }
}
