//! Thin provisioning of the hypervisor cache (seed 004, part B1; spec
//! cache-locking.md, section 1.2): every interval, the rules that move
//! capacity between the VMs' partitions from their I/O requests, misses
//! and use.
//!
//! The rules, per VM, with its requests `R`, misses `M`, lines used `U`
//! and remaining `rem = alloc - U` in the interval, against its thresholds
//! `R_th`, `M_th` and `C_th`:
//!
//! 1. `R > R_th` and `M > M_th`: a borrower;
//! 2. `R < R_th` and `M < M_th`: a donor;
//! 3. `R >= R_th` and `M <= M_th`: nothing (it has room);
//! 4. `R < R_th` and `M > M_th`: its replacement needs attention, no transfer;
//! 5. `U > 2 C_th` for two intervals in a row and `rem < 2 C_th`: a borrower;
//! 6. `R < R_th` and `rem > 2 C_th`: gives `C_th` back, the VM with the most
//!    remaining first.
//!
//! Spec 1.2 leaves open how much a borrower gets, where released capacity
//! goes and the order of conflicting rules. Decisions: rule 6's releases
//! go to a free pool first; then each borrower, most misses first (ties
//! to the lower VM), takes `C_th` from the pool, else from the first
//! donor (rules 2 and 6, most remaining first, ties to the lower VM) that
//! keeps at least `C_th` remaining after giving; a borrower that finds
//! none waits. Capacity is in lines.

use serde::{Deserialize, Serialize};

use super::partition::IoParams;
use crate::error::{join_path, Issues, Result};
use crate::trace::blockio::BlockFormat;
use crate::types::AccessKind;
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
    pub kinds: Vec<AccessKind>,
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
            kinds: vec![AccessKind::Load, AccessKind::Store],
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
    pub fn of(&self, vm: usize) -> f64 {
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
    /// Check every key (found under `loc`), naming the problems; returns the interval in ns.
    pub fn validate(&self, vms: usize, loc: &str) -> Result<u64> {
        let mut issues = Issues::default();
        let at = |key: &str| join_path(loc, key);
        let line = self.line_bytes as u64;
        issues.check(line.is_power_of_two(), at("line_bytes"), "out_of_range", "expected a power of two");
        issues.check(
            self.hypervisor_bytes.0 <= self.cache_bytes.0,
            at("hypervisor_bytes"),
            "out_of_range",
            format!(
                "the hypervisor's {} B are more than the cache's {} B",
                self.hypervisor_bytes.0, self.cache_bytes.0
            ),
        );
        let interval = match Span::parse(&self.interval).map(|s| s.resolve(1.0)) {
            Ok(Budget::Cycles(ns)) if ns > 0 => ns,
            Ok(_) => {
                issues.push(at("interval"), "out_of_range", "expected a time above zero, such as \"1s\" or \"500ms\"");
                0
            }
            Err(e) => {
                issues.push(at("interval"), "invalid_value", e);
                0
            }
        };
        issues.check(
            self.threshold_share > 0.0 && self.threshold_share < 1.0,
            at("threshold_share"),
            "out_of_range",
            format!("expected a share in (0, 1), got {}", self.threshold_share),
        );
        issues.check(
            self.mrc_sample > 0.0 && self.mrc_sample <= 1.0,
            at("mrc_sample"),
            "out_of_range",
            format!("expected a rate in (0, 1], got {}", self.mrc_sample),
        );
        issues.check(self.mrc_quantum != Some(0), at("mrc_quantum"), "out_of_range", "expected at least 1 block");
        issues.check(self.hit_us >= 0.0, at("hit_us"), "out_of_range", "expected a time of at least 0");
        match &self.time_scale {
            TimeScale::All(f) => issues.check(*f > 0.0, at("time_scale"), "out_of_range", "expected a factor above 0"),
            TimeScale::PerVm(fs) => issues.check(
                fs.len() == vms && fs.iter().all(|&f| f > 0.0),
                at("time_scale"),
                "out_of_range",
                format!("expected a factor above 0, or one per VM ({vms})"),
            ),
        }
        issues.check(
            (0.0..=1.0).contains(&self.io.controller_hit),
            at("io.controller_hit"),
            "out_of_range",
            "expected a ratio in [0, 1]",
        );
        issues.check(!self.kinds.is_empty(), at("kinds"), "out_of_range", "give at least one kind of request");
        issues.check(
            self.thresholds.is_empty() || self.thresholds.len() == vms,
            at("thresholds"),
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
                    issues.push(at("shares"), "out_of_range", message);
                }
            }
            issues.check(
                lines >= vms as u64,
                at("cache_bytes"),
                "out_of_range",
                format!("{lines} blocks of {line} B cannot be shared by {vms} VMs"),
            );
        }
        issues.finish()?;
        Ok(interval)
    }
}

/// One VM's thresholds, measured under a heavy workload (spec 1.2).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    pub requests: u64,
    pub misses: u64,
    /// `C_Threshold`, in lines: also the quantum of a transfer.
    pub lines: u64,
}

/// What one VM did in an interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Interval {
    pub requests: u64,
    pub misses: u64,
    /// Lines of its partition in use.
    pub used: u64,
}

/// A move of capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Rule 6: `vm` gives `lines` to the pool.
    Release { vm: usize, lines: u64 },
    /// Rules 1 and 5: `vm` takes `lines` from the pool (`from: None`) or a donor.
    Borrow { vm: usize, from: Option<usize>, lines: u64 },
    /// Rule 4: `vm` misses without being busy: its replacement, not its size.
    Replacement { vm: usize },
}

/// The allocation of every VM's partition and the free pool.
#[derive(Debug, Clone, PartialEq)]
pub struct Provisioning {
    pub thresholds: Vec<Thresholds>,
    pub alloc: Vec<u64>,
    pub pool: u64,
    /// Whether each VM used more than twice its threshold last interval (rule 5).
    over: Vec<bool>,
}

impl Provisioning {
    /// `lines` for the VMs (the cache less the hypervisor's own share),
    /// split equally (spec eq. 2; the remainder to the pool).
    pub fn new(lines: u64, thresholds: Vec<Thresholds>) -> Provisioning {
        let n = thresholds.len() as u64;
        let each = lines.checked_div(n).unwrap_or(0);
        Provisioning {
            alloc: vec![each; thresholds.len()],
            pool: lines - each * n,
            over: vec![false; thresholds.len()],
            thresholds,
        }
    }

    /// Apply the rules to one interval's measures; returns what moved.
    pub fn step(&mut self, seen: &[Interval]) -> Vec<Action> {
        let n = self.alloc.len();
        let remain = |p: &Provisioning, v: usize| p.alloc[v].saturating_sub(seen[v].used);
        let mut actions = Vec::new();
        let (mut borrowers, mut donors) = (Vec::new(), Vec::new());
        for (v, (s, t)) in seen.iter().zip(&self.thresholds).enumerate() {
            let over = s.used > 2 * t.lines;
            let rule5 = over && self.over[v] && remain(self, v) < 2 * t.lines;
            self.over[v] = over;
            let (busy, quiet) = (s.requests > t.requests, s.requests < t.requests);
            if (busy && s.misses > t.misses) || rule5 {
                borrowers.push(v);
            } else if quiet && (s.misses < t.misses || remain(self, v) > 2 * t.lines) {
                donors.push(v);
            } else if quiet && s.misses > t.misses {
                actions.push(Action::Replacement { vm: v });
            }
        }
        // Rule 6: the quiet VMs with room to spare give back, most remaining first.
        let mut releasing: Vec<usize> = (0..n)
            .filter(|&v| seen[v].requests < self.thresholds[v].requests)
            .filter(|&v| remain(self, v) > 2 * self.thresholds[v].lines)
            .collect();
        releasing.sort_by_key(|&v| (std::cmp::Reverse(remain(self, v)), v));
        for v in releasing {
            let lines = self.thresholds[v].lines;
            self.alloc[v] -= lines;
            self.pool += lines;
            actions.push(Action::Release { vm: v, lines });
        }
        borrowers.sort_by_key(|&v| (std::cmp::Reverse(seen[v].misses), v));
        for b in borrowers {
            let lines = self.thresholds[b].lines;
            let from = if self.pool >= lines {
                self.pool -= lines;
                None
            } else {
                donors.sort_by_key(|&d| (std::cmp::Reverse(remain(self, d)), d));
                let Some(&d) = donors.iter().find(|&&d| remain(self, d) >= lines + self.thresholds[d].lines) else {
                    continue;
                };
                self.alloc[d] -= lines;
                Some(d)
            };
            self.alloc[b] += lines;
            actions.push(Action::Borrow { vm: b, from, lines });
        }
        actions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three VMs of 100 lines each: thresholds 50 requests, 10 misses, 10 lines.
    fn three() -> Provisioning {
        Provisioning::new(300, vec![Thresholds { requests: 50, misses: 10, lines: 10 }; 3])
    }

    fn at(requests: u64, misses: u64, used: u64) -> Interval {
        Interval { requests, misses, used }
    }

    #[test]
    fn rule_1_a_busy_missing_vm_borrows_from_a_quiet_one() {
        let mut p = three();
        // VM 0 busy and missing; VM 1 quiet and hitting (rule 2) with 60 of
        // 100 used; VM 2 has room and requests (rule 3).
        let actions = p.step(&[at(80, 30, 100), at(20, 2, 60), at(60, 5, 40)]);
        // VM 1 has 40 remaining, over 2 x 10: rule 6 releases 10 to the pool,
        // which VM 0 then takes.
        assert_eq!(actions, [Action::Release { vm: 1, lines: 10 }, Action::Borrow { vm: 0, from: None, lines: 10 }]);
        assert_eq!((p.alloc.clone(), p.pool), (vec![110, 90, 100], 0));
    }

    #[test]
    fn rule_2_a_donor_gives_only_what_leaves_it_its_threshold() {
        let mut p = three();
        // VM 1 quiet and hitting, 85 used: 15 remaining, not over 2 x 10 (no
        // release), and giving 10 would leave 5 < 10: VM 0 waits.
        let actions = p.step(&[at(80, 30, 100), at(20, 2, 85), at(60, 5, 40)]);
        assert!(actions.is_empty(), "{actions:?}");
        // With 80 used it has 20 (not over 2 x 10: no release); giving 10
        // leaves it its 10.
        let actions = p.step(&[at(80, 30, 100), at(20, 2, 80), at(60, 5, 40)]);
        assert_eq!(actions, [Action::Borrow { vm: 0, from: Some(1), lines: 10 }]);
        assert_eq!((p.alloc.clone(), p.pool), (vec![110, 90, 100], 0));
    }

    #[test]
    fn rule_3_a_vm_with_requests_but_few_misses_is_left_alone() {
        let mut p = three();
        assert!(p.step(&[at(50, 10, 100), at(90, 0, 95), at(51, 10, 99)]).is_empty());
        assert_eq!(p.alloc, vec![100, 100, 100]);
    }

    #[test]
    fn rule_4_misses_without_requests_flag_the_replacement_and_move_nothing() {
        let mut p = three();
        let actions = p.step(&[at(10, 40, 95), at(60, 5, 95), at(60, 5, 95)]);
        assert_eq!(actions, [Action::Replacement { vm: 0 }]);
        assert_eq!(p.alloc, vec![100, 100, 100]);
    }

    #[test]
    fn rule_5_two_intervals_over_twice_the_threshold_and_little_room_borrow() {
        let mut p = three();
        p.pool = 20;
        // VM 2 uses 85 (> 20) with 15 remaining (< 20), not busy enough for
        // rule 1: the first interval only remembers.
        assert!(p.step(&[at(60, 5, 50), at(60, 5, 50), at(50, 5, 85)]).is_empty());
        let actions = p.step(&[at(60, 5, 50), at(60, 5, 50), at(50, 5, 85)]);
        assert_eq!(actions, [Action::Borrow { vm: 2, from: None, lines: 10 }]);
        // A break in the streak starts it again.
        assert!(p.step(&[at(60, 5, 50), at(60, 5, 50), at(50, 5, 20)]).is_empty());
        assert!(p.step(&[at(60, 5, 50), at(60, 5, 50), at(50, 5, 100)]).is_empty());
    }

    #[test]
    fn rule_6_the_quiet_vm_with_the_most_room_is_released_first() {
        let mut p = three();
        let actions = p.step(&[at(10, 5, 30), at(10, 5, 10), at(60, 5, 90)]);
        assert_eq!(actions, [Action::Release { vm: 1, lines: 10 }, Action::Release { vm: 0, lines: 10 }]);
        assert_eq!((p.alloc.clone(), p.pool), (vec![90, 90, 100], 20));
    }

    #[test]
    fn borrowers_with_more_misses_go_first_and_take_from_the_donor_with_the_most_room() {
        let mut p = three();
        p.alloc = vec![100, 100, 100, 100];
        p.thresholds.push(Thresholds { requests: 50, misses: 10, lines: 10 });
        p.over.push(false);
        // VMs 0 and 1 borrow (1 misses more); VMs 2 and 3 are donors by rule 2
        // with 25 and 35 remaining... both over 20: released to the pool.
        let actions = p.step(&[at(80, 20, 100), at(80, 40, 100), at(20, 2, 75), at(20, 2, 65)]);
        assert_eq!(
            actions,
            [
                Action::Release { vm: 3, lines: 10 },
                Action::Release { vm: 2, lines: 10 },
                Action::Borrow { vm: 1, from: None, lines: 10 },
                Action::Borrow { vm: 0, from: None, lines: 10 },
            ]
        );
        // Next: donors with 15 and 25 remaining (after the releases); no pool.
        let actions = p.step(&[at(80, 20, 110), at(80, 40, 110), at(20, 2, 75), at(20, 2, 65)]);
        assert_eq!(actions, [Action::Release { vm: 3, lines: 10 }, Action::Borrow { vm: 1, from: None, lines: 10 }]);
    }
}
