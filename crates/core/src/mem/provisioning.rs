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

/// One VM's thresholds, measured under a heavy workload (spec 1.2).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
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
