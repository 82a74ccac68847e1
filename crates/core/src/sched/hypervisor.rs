//! `hypervisor`: two-level scheduling of virtual machines.
//!
//! Each VM (the `vm` of its tasks) has `vcpus` virtual CPUs; its guest tasks
//! are dealt to its VCPUs in id order, and VCPU `k` (numbered VM by VM) lives
//! on physical core `k mod cores`, so more VCPUs than cores over-subscribe
//! the machine. A core runs its VCPUs round-robin, `slice` each; inside a
//! VCPU's slice its guests take turns, each for `guest_quantum` (default:
//! the slice split evenly among them, as the elastic-time-slicing spec splits
//! a VM's 10 ms among its workloads). A VCPU whose guests all finished is
//! skipped.

use std::collections::{BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use super::{default_quantum, SchedBuild, SchedCtx, Scheduler, Slice, MAX_TASKS};
use crate::error::{join_path, Error, Result};
use crate::types::{CoreId, TaskId};
use crate::units::{Budget, Span};

/// VCPUs per VM: one number for every VM, or one per VM in VM id order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Vcpus {
    /// The same for every VM.
    Each(u32),
    /// Per VM.
    PerVm(Vec<u32>),
}

/// Params of `hypervisor`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HypervisorParams {
    /// Time (or instructions) a VCPU runs before the next VCPU of its core.
    pub slice: Span,
    /// VCPUs of each VM.
    pub vcpus: Vcpus,
    /// Slice of a guest task inside its VCPU; default the VCPU slice divided
    /// by the number of guests on that VCPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guest_quantum: Option<Span>,
}

impl Default for HypervisorParams {
    fn default() -> Self {
        HypervisorParams { slice: default_quantum(), vcpus: Vcpus::Each(1), guest_quantum: None }
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
        let counts = match &self.vcpus {
            Vcpus::Each(n) => vec![*n; vms.len()],
            Vcpus::PerVm(list) if list.len() == vms.len() => list.clone(),
            Vcpus::PerVm(list) => {
                let message = format!("{} VCPU counts for {} VMs", list.len(), vms.len());
                return Err(Error::config(ctx.at("vcpus"), "invalid_value", message));
            }
        };
        if counts.contains(&0) {
            return Err(Error::config(ctx.at("vcpus"), "out_of_range", "a VM needs at least 1 VCPU"));
        }
        let total: u64 = counts.iter().map(|&n| n as u64).sum();
        if total > MAX_TASKS as u64 {
            let message = format!("{total} VCPUs in all, more than the {MAX_TASKS} a run may have");
            return Err(Error::config(ctx.at("vcpus"), "out_of_range", message));
        }
        let cores = ctx.topology.cores();
        let mut vcpus: Vec<Vcpu> = Vec::new();
        let mut of_task = vec![0; ctx.tasks.len()];
        for (vm, &count) in vms.iter().zip(&counts) {
            let first = vcpus.len();
            vcpus.extend((0..count).map(|k| Vcpu {
                home: CoreId((first as u32 + k) % cores),
                guests: VecDeque::new(),
                used: 0,
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
        Ok(Box::new(Hypervisor {
            slice: ctx.positive(self.slice, "slice")?,
            guest_quantum: self.guest_quantum.map(|q| ctx.positive(q, "guest_quantum")).transpose()?,
            vcpus,
            of_task,
            queues,
            current: vec![None; cores as usize],
        }))
    }
}

struct Vcpu {
    home: CoreId,
    /// Unfinished guests, the next to run first.
    guests: VecDeque<TaskId>,
    /// Part of the current slice used, in the slice's unit.
    used: u64,
}

struct Hypervisor {
    slice: Budget,
    guest_quantum: Option<Budget>,
    vcpus: Vec<Vcpu>,
    of_task: Vec<usize>,
    /// Per core: its VCPUs waiting for a slice.
    queues: Vec<VecDeque<usize>>,
    /// Per core: the VCPU whose slice is running.
    current: Vec<Option<usize>>,
}

impl Hypervisor {
    /// Charge the last slice of `task` to its VCPU.
    fn charge(&mut self, ctx: &SchedCtx, task: TaskId) {
        let view = &ctx.tasks[task.0 as usize];
        let ran = match self.slice {
            Budget::Cycles(_) => view.slice_cycles,
            Budget::Instructions(_) => view.slice_instructions,
        };
        self.vcpus[self.of_task[task.0 as usize]].used += ran;
    }

    /// The next guest of VCPU `v`, rotating its guests.
    fn next_guest(&mut self, v: usize) -> Option<TaskId> {
        let guests = &mut self.vcpus[v].guests;
        let g = guests.pop_front()?;
        guests.push_back(g);
        Some(g)
    }
}

fn same_unit(like: Budget, n: u64) -> Budget {
    match like {
        Budget::Cycles(_) => Budget::Cycles(n),
        Budget::Instructions(_) => Budget::Instructions(n),
    }
}

impl Scheduler for Hypervisor {
    /// Its decisions charge the deciding task's own slice only.
    fn reads_others_progress(&self) -> bool {
        false
    }

    fn place(&mut self, _: &SchedCtx, task: TaskId) -> Result<CoreId> {
        Ok(self.vcpus[self.of_task[task.0 as usize]].home)
    }

    fn pick(&mut self, _: &SchedCtx, core: CoreId) -> Result<Option<TaskId>> {
        let c = core.0 as usize;
        if let Some(v) = self.current[c] {
            if self.vcpus[v].used < self.slice.amount() && !self.vcpus[v].guests.is_empty() {
                return Ok(self.next_guest(v));
            }
            self.vcpus[v].used = 0;
            self.queues[c].push_back(v);
            self.current[c] = None;
        }
        for _ in 0..self.queues[c].len() {
            let v = self.queues[c].pop_front().expect("counted");
            if self.vcpus[v].guests.is_empty() {
                continue; // every guest finished: the VCPU is gone
            }
            self.current[c] = Some(v);
            return Ok(self.next_guest(v));
        }
        Ok(None)
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

    fn finished(&mut self, ctx: &SchedCtx, task: TaskId) -> Result<()> {
        self.charge(ctx, task);
        self.vcpus[self.of_task[task.0 as usize]].guests.retain(|&g| g != task);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testing::{spec, State};

    fn vm_tasks(vms: &[u32]) -> Vec<crate::sched::TaskInfo> {
        vms.iter().enumerate().map(|(i, &vm)| crate::sched::TaskInfo { vm: Some(vm), ..spec(i) }).collect()
    }

    #[test]
    fn a_vms_slice_is_split_among_its_guests() {
        // 2 VMs x 1 VCPU on one core; VM 0 has 4 guests, VM 1 has 2.
        let mut s = State::new(1, 1, vm_tasks(&[0, 0, 0, 0, 1, 1]));
        let params = HypervisorParams { slice: Span::cycles(10_000), ..Default::default() };
        let mut h = params.build(&s.build()).unwrap();
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
        let mut h = HypervisorParams { vcpus: Vcpus::Each(2), ..Default::default() }.build(&s.build()).unwrap();
        let homes: Vec<u32> = (0..7).map(|t| h.place(&s.ctx(0), TaskId(t)).unwrap().0).collect();
        // VM 0: guests 0,1,2 on VCPUs 0,1,0; VM 1: VCPUs 2,3; VM 2: VCPUs 4,5 on cores 0,1.
        assert_eq!(homes, vec![0, 1, 0, 2, 3, 0, 1]);
    }

    #[test]
    fn every_task_needs_a_vm() {
        let s = State::new(1, 1, vec![spec(0)]);
        let err = HypervisorParams::default().build(&s.build()).err().unwrap().to_string();
        assert!(err.contains("tasks[0].vm: the hypervisor scheduler needs the vm of every task"), "{err}");
        let s = State::new(1, 1, vm_tasks(&[0, 1]));
        let params = HypervisorParams { vcpus: Vcpus::PerVm(vec![1]), ..Default::default() };
        assert!(params.build(&s.build()).err().unwrap().to_string().contains("scheduler.params.vcpus"));
    }
}
