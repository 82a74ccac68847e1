//! `hypervisor`: two-level scheduling of virtual machines.
//!
//! Each VM (the `vm` of its tasks) has `vcpus` virtual CPUs; its guest tasks
//! are dealt to its VCPUs in id order, and VCPU `k` (numbered VM by VM)
//! starts on physical core `k mod cores`, so more VCPUs than cores
//! over-subscribe the machine. Inside a VCPU's slice its guests take turns,
//! each for `guest_quantum` (default: the slice split evenly among them, as
//! the elastic-time-slicing spec splits a VM's 10 ms among its workloads). A
//! VCPU whose guests all finished is gone. Which VCPU a core runs is the
//! `policy`'s:
//!
//! - `fixed`: a core runs its own VCPUs round-robin, `slice` each; VCPUs
//!   never change core by themselves.
//! - `credit`: Xen's credit scheduler (credit1, `sched_credit.c`). Every
//!   accounting period (3 ticks, 30 ms) the VMs with work share the
//!   machine's time in credits (cycles) by `weight`, each VM's share split
//!   evenly among its VCPUs; a VCPU's credit is clamped to one slice either
//!   way and burnt by the cycles it runs. A VCPU with credit left is UNDER,
//!   else OVER; a core's queue holds UNDER VCPUs before OVER ones, FIFO
//!   within each. A core runs its best VCPU for a slice (30 ms); if that one
//!   is OVER, or there is none, it first steals an UNDER VCPU (or, when it
//!   would idle, any VCPU) from another core's queue, same socket first:
//!   VCPUs migrate to idle cores. BOOST (wake-up priority) is not modelled:
//!   a guest that wakes (a server's request, a VM's block I/O served)
//!   queues behind the UNDER VCPUs like any other.
//!
//! A mechanism that confines a guest to a cache domain (region scheduling's
//! micro-schedule) moves the guest's VCPU there: to the domain's core with
//! the fewest VCPUs. A core only runs guests that may run on it.

use std::collections::{BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use super::{default_quantum, SchedBuild, SchedCtx, Scheduler, Slice, TaskState, MAX_TASKS};
use crate::error::{join_path, Error, Result};
use crate::types::{CoreId, TaskId};
use crate::units::{Budget, Span};

/// A number per VM: one for every VM, or one per VM in VM id order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PerVm {
    /// The same for every VM.
    Each(u32),
    /// Per VM.
    List(Vec<u32>),
}

impl PerVm {
    /// One number per VM of `vms`, each at least 1.
    fn resolve(&self, vms: usize, ctx: &SchedBuild, key: &str) -> Result<Vec<u32>> {
        let list = match self {
            PerVm::Each(n) => vec![*n; vms],
            PerVm::List(list) if list.len() == vms => list.clone(),
            PerVm::List(list) => {
                let message = format!("{} values for {vms} VMs", list.len());
                return Err(Error::config(ctx.at(key), "invalid_value", message));
            }
        };
        if list.contains(&0) {
            return Err(Error::config(ctx.at(key), "out_of_range", "a VM needs at least 1"));
        }
        Ok(list)
    }
}

/// How cores choose among VCPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VcpuPolicy {
    /// Each core runs its own VCPUs round-robin.
    #[default]
    Fixed,
    /// Xen's credit scheduler.
    Credit,
}

/// Xen credit1's accounting period, in ticks (`CSCHED_TICKS_PER_ACCT`).
const TICKS_PER_ACCOUNTING: u64 = 3;

/// Params of `hypervisor`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HypervisorParams {
    /// How cores choose among VCPUs.
    pub policy: VcpuPolicy,
    /// Time a VCPU runs before its core chooses again; default 10 ms
    /// (`fixed`, which also takes instructions) or Xen's 30 ms (`credit`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slice: Option<Span>,
    /// VCPUs of each VM.
    pub vcpus: PerVm,
    /// Slice of a guest task inside its VCPU; default the VCPU slice divided
    /// by the number of guests on that VCPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guest_quantum: Option<Span>,
    /// `credit`: the accounting tick (Xen's 10 ms); credits are shared every
    /// third tick.
    pub tick: Span,
    /// `credit`: each VM's weight (Xen's default 256).
    pub weight: PerVm,
}

impl Default for HypervisorParams {
    fn default() -> Self {
        HypervisorParams {
            policy: VcpuPolicy::Fixed,
            slice: None,
            vcpus: PerVm::Each(1),
            guest_quantum: None,
            tick: Span::millis(10.0),
            weight: PerVm::Each(256),
        }
    }
}

impl HypervisorParams {
    /// Build the policy: every task needs a vm, none an affinity.
    pub fn build(&self, ctx: &SchedBuild) -> Result<Box<dyn Scheduler>> {
        for t in &ctx.tasks {
            if t.vm.is_none() {
                let message = "the hypervisor scheduler needs the vm of every task";
                return Err(Error::config(join_path(&t.loc, "vm"), "missing_field", message));
            }
            if t.affinity.is_some() {
                let message = "the hypervisor scheduler places VCPUs itself; give no affinity";
                return Err(Error::config(join_path(&t.loc, "affinity"), "invalid_value", message));
            }
        }
        let vms: Vec<u32> = ctx.tasks.iter().filter_map(|t| t.vm).collect::<BTreeSet<_>>().into_iter().collect();
        let counts = self.vcpus.resolve(vms.len(), ctx, "vcpus")?;
        let total: u64 = counts.iter().map(|&n| n as u64).sum();
        if total > MAX_TASKS as u64 {
            let message = format!("{total} VCPUs in all, more than the {MAX_TASKS} a run may have");
            return Err(Error::config(ctx.at("vcpus"), "out_of_range", message));
        }
        let weights = self.weight.resolve(vms.len(), ctx, "weight")?;
        let tick = ctx.cycles(self.tick, "tick")?;
        let slice = match (self.policy, self.slice) {
            (VcpuPolicy::Fixed, slice) => ctx.positive(slice.unwrap_or_else(default_quantum), "slice")?,
            (VcpuPolicy::Credit, slice) => Budget::Cycles(ctx.cycles(slice.unwrap_or(Span::millis(30.0)), "slice")?),
        };
        let cores = ctx.topology.cores();
        let mut vcpus: Vec<Vcpu> = Vec::new();
        let mut of_task = vec![0; ctx.tasks.len()];
        for (m, (vm, &count)) in vms.iter().zip(&counts).enumerate() {
            let first = vcpus.len();
            vcpus.extend((0..count).map(|k| Vcpu {
                home: CoreId((first as u32 + k) % cores),
                vm: m,
                guests: VecDeque::new(),
                used: 0,
                credit: 0,
            }));
            let guests = ctx.tasks.iter().enumerate().filter(|(_, t)| t.vm == Some(*vm));
            for (g, (task, _)) in guests.enumerate() {
                let v = first + g % count as usize;
                vcpus[v].guests.push_back(TaskId(task as u32));
                of_task[task] = v;
            }
        }
        let mut queues = vec![VecDeque::new(); cores as usize];
        for (v, vcpu) in vcpus.iter().enumerate() {
            queues[vcpu.home.0 as usize].push_back(v);
        }
        let credit = (self.policy == VcpuPolicy::Credit).then_some(Credit { tick, ticks: 0, weights });
        Ok(Box::new(Hypervisor {
            slice,
            guest_quantum: self.guest_quantum.map(|q| ctx.positive(q, "guest_quantum")).transpose()?,
            vcpus,
            of_task,
            queues,
            current: vec![None; cores as usize],
            credit,
        }))
    }
}

struct Vcpu {
    /// Core whose queue it is in, or that runs it.
    home: CoreId,
    /// Its VM, as an index into the VMs in id order.
    vm: usize,
    /// Unfinished guests, the next to run first.
    guests: VecDeque<TaskId>,
    /// Part of the current slice used, in the slice's unit.
    used: u64,
    /// `credit`: cycles it may still run at UNDER priority.
    credit: i64,
}

/// The credit scheduler's accounting.
struct Credit {
    tick: u64,
    ticks: u64,
    weights: Vec<u32>,
}

struct Hypervisor {
    slice: Budget,
    guest_quantum: Option<Budget>,
    vcpus: Vec<Vcpu>,
    of_task: Vec<usize>,
    /// Per core: its VCPUs waiting for a slice, UNDER ones first.
    queues: Vec<VecDeque<usize>>,
    /// Per core: the VCPU whose slice is running.
    current: Vec<Option<usize>>,
    credit: Option<Credit>,
}

impl Hypervisor {
    /// Charge the last slice of `task` to its VCPU.
    fn charge(&mut self, ctx: &SchedCtx, task: TaskId) {
        let view = &ctx.tasks[task.0 as usize];
        let vcpu = &mut self.vcpus[self.of_task[task.0 as usize]];
        vcpu.used += match self.slice {
            Budget::Cycles(_) => view.slice_cycles,
            Budget::Instructions(_) => view.slice_instructions,
        };
        vcpu.credit = vcpu.credit.saturating_sub(view.slice_cycles as i64);
    }

    /// Whether VCPU `v` has the higher priority (always, without credits).
    fn under(&self, v: usize) -> bool {
        self.credit.is_none() || self.vcpus[v].credit >= 0
    }

    /// Queue `v` on core `c`: behind the VCPUs of its priority or a higher one.
    fn enqueue(&mut self, c: usize, v: usize) {
        let at = match self.under(v) {
            true => self.queues[c].iter().position(|&w| !self.under(w)),
            false => None,
        };
        let at = at.unwrap_or(self.queues[c].len());
        self.queues[c].insert(at, v);
    }

    /// The first guest of `v` waiting and allowed on `core`.
    fn runnable(&self, ctx: &SchedCtx, v: usize, core: CoreId) -> Option<usize> {
        let waiting = |g: TaskId| matches!(ctx.tasks[g.0 as usize].state, TaskState::Waiting(_));
        self.vcpus[v].guests.iter().position(|&g| waiting(g) && ctx.allows(g, core))
    }

    /// The next guest of VCPU `v` to run on `core`, rotating its guests.
    fn next_guest(&mut self, ctx: &SchedCtx, v: usize, core: CoreId) -> Option<TaskId> {
        let i = self.runnable(ctx, v, core)?;
        let guests = &mut self.vcpus[v].guests;
        let g = guests.remove(i).expect("found");
        guests.push_back(g);
        Some(g)
    }

    /// A VCPU of another core's queue that `core` may take: UNDER, or any
    /// when `core` would idle; same socket first, then the next cores in
    /// order. Its core and its place in that queue.
    fn steal(&self, ctx: &SchedCtx, core: CoreId, idle: bool) -> Option<(usize, usize)> {
        let n = ctx.topology.cores();
        let mut others: Vec<CoreId> = ctx.cores().filter(|&d| d != core).collect();
        others.sort_by_key(|&d| (!ctx.topology.same_socket(d, core), (d.0 + n - core.0) % n));
        others.into_iter().find_map(|d| {
            let d = d.0 as usize;
            let found =
                self.queues[d].iter().position(|&w| (idle || self.under(w)) && self.runnable(ctx, w, core).is_some());
            found.map(|i| (d, i))
        })
    }

    /// Share an accounting period's credits among the VCPUs with work.
    fn account(&mut self, cores: u32) {
        let Some(credit) = &self.credit else { return };
        let period = (credit.tick * TICKS_PER_ACCOUNTING * cores as u64) as i64;
        let mut active = vec![0i64; credit.weights.len()];
        self.vcpus.iter().filter(|v| !v.guests.is_empty()).for_each(|v| active[v.vm] += 1);
        let total: i64 =
            credit.weights.iter().zip(&active).filter(|(_, &n)| n > 0).map(|(&w, _)| w as i64).sum::<i64>().max(1);
        let cap = self.slice.amount() as i64;
        for v in self.vcpus.iter_mut().filter(|v| !v.guests.is_empty()) {
            let fair = period * credit.weights[v.vm] as i64 / total / active[v.vm];
            v.credit = (v.credit + fair).clamp(-cap, cap);
        }
    }
}

fn same_unit(like: Budget, n: u64) -> Budget {
    match like {
        Budget::Cycles(_) => Budget::Cycles(n),
        Budget::Instructions(_) => Budget::Instructions(n),
    }
}

impl Scheduler for Hypervisor {
    /// With credits a core steals from other cores' queues, whose order
    /// their decisions set.
    fn reads_others_progress(&self) -> bool {
        self.credit.is_some()
    }

    fn place(&mut self, _: &SchedCtx, task: TaskId) -> Result<CoreId> {
        Ok(self.vcpus[self.of_task[task.0 as usize]].home)
    }

    fn pick(&mut self, ctx: &SchedCtx, core: CoreId) -> Result<Option<TaskId>> {
        let c = core.0 as usize;
        if let Some(v) = self.current[c] {
            if self.vcpus[v].used < self.slice.amount() {
                if let Some(g) = self.next_guest(ctx, v, core) {
                    return Ok(Some(g));
                }
            }
            self.vcpus[v].used = 0;
            self.current[c] = None;
            self.enqueue(c, v);
        }
        let vcpus = &self.vcpus;
        self.queues[c].retain(|&v| !vcpus[v].guests.is_empty()); // every guest finished: the VCPU is gone
        let local = self.queues[c].iter().position(|&v| self.runnable(ctx, v, core).is_some());
        let local_under = local.is_some_and(|i| self.under(self.queues[c][i]));
        let stolen = match self.credit.is_some() && !local_under {
            true => self.steal(ctx, core, local.is_none()),
            false => None,
        };
        let (q, i) = match (stolen, local) {
            (Some(found), _) => found,
            (None, Some(i)) => (c, i),
            (None, None) => return Ok(None),
        };
        let v = self.queues[q].remove(i).expect("found");
        self.vcpus[v].home = core;
        self.current[c] = Some(v);
        Ok(self.next_guest(ctx, v, core))
    }

    fn quantum(&mut self, _: &SchedCtx, task: TaskId, _: CoreId) -> Result<Slice> {
        let vcpu = &self.vcpus[self.of_task[task.0 as usize]];
        let left = Slice::of(same_unit(self.slice, self.slice.amount().saturating_sub(vcpu.used).max(1)));
        let share = self.slice.amount() / vcpu.guests.len().max(1) as u64;
        let guest = self.guest_quantum.unwrap_or(same_unit(self.slice, share.max(1)));
        Ok(left.min(Slice::of(guest)))
    }

    fn expire(&mut self, ctx: &SchedCtx, task: TaskId, _: CoreId) -> Result<super::Expiry> {
        self.charge(ctx, task);
        Ok(super::Expiry::Requeue)
    }

    /// A guest that sleeps has burnt what it ran of its slice.
    fn blocked(&mut self, ctx: &SchedCtx, task: TaskId) -> Result<()> {
        self.charge(ctx, task);
        Ok(())
    }

    fn finished(&mut self, ctx: &SchedCtx, task: TaskId) -> Result<()> {
        self.charge(ctx, task);
        self.vcpus[self.of_task[task.0 as usize]].guests.retain(|&g| g != task);
        Ok(())
    }

    fn period(&self) -> Option<u64> {
        self.credit.as_ref().map(|c| c.tick)
    }

    /// The tick: every third one shares credits; queues are re-sorted by priority.
    fn balance(&mut self, ctx: &SchedCtx) -> Result<Vec<super::Move>> {
        let Some(credit) = &mut self.credit else { return Ok(Vec::new()) };
        credit.ticks += 1;
        if credit.ticks % TICKS_PER_ACCOUNTING == 0 {
            self.account(ctx.topology.cores());
        }
        for c in 0..self.queues.len() {
            let mut queue: Vec<usize> = self.queues[c].drain(..).collect();
            queue.sort_by_key(|&v| !self.under(v)); // stable: FIFO within a priority
            self.queues[c] = queue.into();
        }
        Ok(Vec::new())
    }

    /// The guest's VCPU follows it: off its core or queue, to the queue of
    /// the domain's core with the fewest VCPUs.
    fn relocate(&mut self, ctx: &SchedCtx, task: TaskId) -> Result<CoreId> {
        let v = self.of_task[task.0 as usize];
        for c in 0..self.queues.len() {
            if self.current[c] == Some(v) {
                self.current[c] = None;
                self.vcpus[v].used = 0;
            }
            self.queues[c].retain(|&w| w != v);
        }
        let load = |c: CoreId| self.queues[c.0 as usize].len() + self.current[c.0 as usize].is_some() as usize;
        let to = ctx.cores().filter(|&c| ctx.allows(task, c)).min_by_key(|&c| (load(c), c));
        let to = to.unwrap_or(self.vcpus[v].home);
        self.vcpus[v].home = to;
        self.enqueue(to.0 as usize, v);
        Ok(to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testing::{spec, State};

    fn vm_tasks(vms: &[u32]) -> Vec<crate::sched::TaskInfo> {
        vms.iter().enumerate().map(|(i, &vm)| crate::sched::TaskInfo { vm: Some(vm), ..spec(i) }).collect()
    }

    /// Tasks waiting on the cores `place` names.
    fn placed(s: &mut State, h: &mut Box<dyn Scheduler>) {
        for t in 0..s.tasks.len() as u32 {
            let core = h.place(&s.ctx(0), TaskId(t)).unwrap();
            s.wait(t, core.0);
        }
    }

    /// Core `core` picks, runs its pick for `ran` cycles and expires it;
    /// the task picked.
    fn slice(s: &mut State, h: &mut Box<dyn Scheduler>, core: u32, ran: u64) -> Option<u32> {
        let t = h.pick(&s.ctx(0), CoreId(core)).unwrap()?;
        s.queues.iter_mut().for_each(|q| q.retain(|&x| x != t));
        s.run(t.0, core);
        s.tasks[t.0 as usize].slice_cycles = ran;
        h.expire(&s.ctx(0), t, CoreId(core)).unwrap();
        s.running[core as usize] = None;
        s.wait(t.0, core);
        Some(t.0)
    }

    #[test]
    fn a_vms_slice_is_split_among_its_guests() {
        // 2 VMs x 1 VCPU on one core; VM 0 has 4 guests, VM 1 has 2.
        let mut s = State::new(1, 1, vm_tasks(&[0, 0, 0, 0, 1, 1]));
        let params = HypervisorParams { slice: Some(Span::cycles(10_000)), ..Default::default() };
        let mut h = params.build(&s.build()).unwrap();
        placed(&mut s, &mut h);
        let core = CoreId(0);
        let mut order = Vec::new();
        for _ in 0..7 {
            let t = h.pick(&s.ctx(0), core).unwrap().unwrap();
            let q = h.quantum(&s.ctx(0), t, core).unwrap();
            order.push((t.0, q.cycles.unwrap()));
            s.tasks[t.0 as usize].slice_cycles = q.cycles.unwrap();
            h.expire(&s.ctx(0), t, core).unwrap();
        }
        let expected = [(0, 2500), (1, 2500), (2, 2500), (3, 2500), (4, 5000), (5, 5000), (0, 2500)];
        assert_eq!(order, expected);
    }

    #[test]
    fn vcpus_over_subscribe_the_cores_and_guests_are_dealt_to_vcpus() {
        // 3 VMs x 2 VCPUs on 4 cores: VCPUs 0..6 on cores 0,1,2,3,0,1.
        let s = State::new(1, 4, vm_tasks(&[0, 0, 0, 1, 1, 2, 2]));
        let params = HypervisorParams { vcpus: PerVm::Each(2), ..Default::default() };
        let mut h = params.build(&s.build()).unwrap();
        let homes: Vec<u32> = (0..7).map(|t| h.place(&s.ctx(0), TaskId(t)).unwrap().0).collect();
        // VM 0: guests 0,1,2 on VCPUs 0,1,0; VM 1: VCPUs 2,3; VM 2: VCPUs 4,5 on cores 0,1.
        assert_eq!(homes, vec![0, 1, 0, 2, 3, 0, 1]);
    }

    fn credit(s: &State, weight: PerVm) -> Box<dyn Scheduler> {
        let params = HypervisorParams {
            policy: VcpuPolicy::Credit,
            slice: Some(Span::cycles(300)),
            tick: Span::cycles(100),
            weight,
            ..Default::default()
        };
        params.build(&s.build()).unwrap()
    }

    #[test]
    fn credits_are_shared_by_weight_every_third_tick_and_under_vcpus_run_first() {
        // 3 VMs on one core, weights 1:1:2. A period is 3 ticks of 100
        // cycles: 300 credits, 75/75/150.
        let mut s = State::new(1, 1, vm_tasks(&[0, 1, 2]));
        let mut h = credit(&s, PerVm::List(vec![256, 256, 512]));
        placed(&mut s, &mut h);
        // Every VCPU runs a whole slice (300) from credit 0: all go OVER.
        assert_eq!((0..3).map(|_| slice(&mut s, &mut h, 0, 300).unwrap()).collect::<Vec<_>>(), vec![0, 1, 2]);
        for _ in 0..6 {
            h.balance(&s.ctx(0)).unwrap();
        }
        // Two periods: -150, -150, 0. VM 2 ran last but is UNDER: it goes
        // back ahead of the two OVER ones.
        assert_eq!(slice(&mut s, &mut h, 0, 300), Some(2));
        assert_eq!(slice(&mut s, &mut h, 0, 10), Some(0), "OVER again: behind VM 0 and VM 1");
        assert_eq!(slice(&mut s, &mut h, 0, 10), Some(0), "the rest of its slice");
    }

    #[test]
    fn a_guest_that_sleeps_burns_what_it_ran() {
        // 3 VMs on one core, 100 credits each. VM 0 runs its slice (OVER,
        // to the back); VM 1 runs 300 cycles and sleeps: burnt, it is OVER
        // too and queues behind VM 0 (unburnt, it would be UNDER, ahead).
        let mut s = State::new(1, 1, vm_tasks(&[0, 1, 2]));
        let mut h = credit(&s, PerVm::Each(256));
        placed(&mut s, &mut h);
        for _ in 0..3 {
            h.balance(&s.ctx(0)).unwrap();
        }
        assert_eq!(slice(&mut s, &mut h, 0, 300), Some(0));
        assert_eq!(h.pick(&s.ctx(0), CoreId(0)).unwrap(), Some(TaskId(1)));
        s.queues[0].retain(|&x| x != TaskId(1));
        s.run(1, 0);
        s.tasks[1].slice_cycles = 300;
        h.blocked(&s.ctx(0), TaskId(1)).unwrap();
        s.running[0] = None;
        s.tasks[1].state = TaskState::Blocked;
        assert_eq!(slice(&mut s, &mut h, 0, 300), Some(2), "the only one waiting");
        s.wait(1, 0);
        assert_eq!(h.pick(&s.ctx(0), CoreId(0)).unwrap(), Some(TaskId(0)));
    }

    #[test]
    fn a_core_steals_an_under_vcpu_when_its_own_best_is_over_and_any_when_idle() {
        // 2 sockets x 1 core; VMs 0 and 2 on core 0, VM 1 on core 1.
        let mut s = State::new(2, 1, vm_tasks(&[0, 1, 2]));
        let mut h = credit(&s, PerVm::Each(256));
        placed(&mut s, &mut h);
        assert_eq!(slice(&mut s, &mut h, 1, 300), Some(1), "VM 1 runs its slice and goes OVER");
        // Core 1's own best is OVER: it takes VM 0 (UNDER) from core 0.
        assert_eq!(slice(&mut s, &mut h, 1, 10), Some(0));
        assert_eq!(h.place(&s.ctx(0), TaskId(0)).unwrap(), CoreId(1), "VM 0's VCPU lives on core 1 now");
        // Core 0 has VM 2 (UNDER) of its own.
        assert_eq!(slice(&mut s, &mut h, 0, 300), Some(2));
        // With fixed VCPUs, a core with nothing of its own idles.
        let mut s = State::new(2, 1, vm_tasks(&[0, 1, 2]));
        let mut h = HypervisorParams::default().build(&s.build()).unwrap();
        placed(&mut s, &mut h);
        h.finished(&s.ctx(0), TaskId(1)).unwrap();
        assert_eq!(h.pick(&s.ctx(0), CoreId(1)).unwrap(), None);
        let mut h = credit(&s, PerVm::Each(256));
        h.finished(&s.ctx(0), TaskId(1)).unwrap();
        assert_eq!(h.pick(&s.ctx(0), CoreId(1)).unwrap(), Some(TaskId(0)), "an idle core steals");
    }

    #[test]
    fn a_confined_guest_takes_its_vcpu_to_the_least_loaded_core_of_its_domain() {
        // 2 domains of 2 cores; 4 VMs; VCPU 0 runs on core 0.
        let mut s = State::new(2, 2, vm_tasks(&[0, 1, 2, 3]));
        let mut h = HypervisorParams::default().build(&s.build()).unwrap();
        placed(&mut s, &mut h);
        assert_eq!(h.pick(&s.ctx(0), CoreId(0)).unwrap(), Some(TaskId(0)));
        s.queues[0].clear();
        s.run(0, 0);
        s.tasks[0].cache = Some(1);
        // Core 2 has VCPU 2, core 3 VCPU 3: equal, the lower id.
        assert_eq!(h.relocate(&s.ctx(0), TaskId(0)).unwrap(), CoreId(2));
        s.running[0] = None;
        s.wait(0, 2);
        assert_eq!(h.pick(&s.ctx(0), CoreId(0)).unwrap(), None, "core 0 has nothing left");
        assert_eq!(h.pick(&s.ctx(0), CoreId(2)).unwrap(), Some(TaskId(2)));
        s.wait(2, 2);
        assert_eq!(slice(&mut s, &mut h, 2, 10_000_000), Some(2), "a whole slice");
        assert_eq!(slice(&mut s, &mut h, 2, 10), Some(0), "VM 0 waited its turn there");
    }

    #[test]
    fn every_task_needs_a_vm() {
        let s = State::new(1, 1, vec![spec(0)]);
        let err = HypervisorParams::default().build(&s.build()).err().unwrap().to_string();
        assert!(err.contains("tasks[0].vm: the hypervisor scheduler needs the vm of every task"), "{err}");
        let s = State::new(1, 1, vm_tasks(&[0, 1]));
        let params = HypervisorParams { vcpus: PerVm::List(vec![1]), ..Default::default() };
        assert!(params.build(&s.build()).err().unwrap().to_string().contains("scheduler.params.vcpus"));
        let params = HypervisorParams { weight: PerVm::List(vec![1, 0]), ..Default::default() };
        assert!(params.build(&s.build()).err().unwrap().to_string().contains("scheduler.params.weight"));
        let params =
            HypervisorParams { policy: VcpuPolicy::Credit, slice: Some(Span::instructions(5)), ..Default::default() };
        assert!(params.build(&s.build()).err().unwrap().to_string().contains("scheduler.params.slice"));
    }
}
