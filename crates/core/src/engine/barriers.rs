//! Barriers between the threads of a process (the kernels' parallel
//! phases): a thread that has crossed more barriers than another live
//! thread of its process waits, off every core and queue, until the last
//! one arrives; then all go back to the queues of the cores they left, not
//! to run before the moment the last one arrived. A phase so ends when its
//! slowest thread ends, and a thread that is slowed or descheduled holds
//! the others. A thread whose stream ends leaves its group.

use super::Engine;
use crate::error::Result;
use crate::sched::TaskState;
use crate::types::TaskId;

impl Engine {
    /// `task`, running on core `c`, crossed `k` more barriers. Returns
    /// whether it must wait (its core then decides).
    pub(super) fn arrive(&mut self, c: usize, task: TaskId, k: u64) -> Result<bool> {
        let ti = task.0 as usize;
        let Some(g) = self.tasks[ti].group else { return Ok(false) };
        self.tasks[ti].crossed += k;
        self.tasks[ti].arrived_at = self.cores[c].clock;
        let mine = self.tasks[ti].crossed;
        let behind =
            self.groups[g].iter().any(|&t| t != task && self.live(t) && self.tasks[t.0 as usize].crossed < mine);
        if behind {
            self.tasks[ti].blocked = true;
            self.cores[c].pending = true;
            // It may have passed barriers that others wait at (phases in
            // which it had no work): they go on.
            self.release(g, self.cores[c].clock)?;
            return Ok(true);
        }
        // The last to arrive in the run's order, not always in time: it
        // goes on when the last in time arrived.
        let last = (self.groups[g].iter())
            .filter(|&&t| self.tasks[t.0 as usize].blocked && self.tasks[t.0 as usize].crossed <= mine)
            .map(|t| self.tasks[t.0 as usize].arrived_at)
            .fold(self.cores[c].clock, u64::max);
        if last > self.cores[c].clock {
            self.idle(c, last - self.cores[c].clock);
        }
        self.release(g, last)?;
        Ok(false)
    }

    /// Release every waiting thread of group `g` that no live thread is
    /// behind, not to run before `now` nor before the last of them arrived.
    pub(super) fn release(&mut self, g: usize, now: u64) -> Result<()> {
        let floor = self.groups[g].iter().filter(|&&t| self.live(t)).map(|t| self.tasks[t.0 as usize].crossed).min();
        let free = |e: &Engine, t: TaskId| {
            let run = &e.tasks[t.0 as usize];
            run.blocked && floor.is_none_or(|f| run.crossed <= f)
        };
        let freed: Vec<TaskId> = self.groups[g].iter().copied().filter(|&t| free(self, t)).collect();
        let at = freed.iter().map(|t| self.tasks[t.0 as usize].arrived_at).fold(now, u64::max);
        for t in freed {
            self.unblock(t, at);
        }
        Ok(())
    }

    /// `t`, waiting at a barrier or asleep, goes on, not to run before `at`.
    pub(super) fn unblock(&mut self, t: TaskId, at: u64) {
        let ti = t.0 as usize;
        self.tasks[ti].blocked = false;
        self.tasks[ti].arrived_at = at;
        let view = &mut self.views[ti];
        view.last_ran = view.last_ran.max(at);
        match view.state {
            TaskState::Blocked => {
                let core = view.last_core.expect("a blocked task has run");
                view.state = TaskState::Waiting(core);
                self.queues[core.0 as usize].push_back(t);
                self.generation += 1;
            }
            // Still on its core, which has not decided yet: it goes on
            // there at `at` (its `arrived_at`).
            _ => self.tasks[ti].resume = true,
        }
    }

    /// Whether `t` still runs or will (its stream has not ended).
    fn live(&self, t: TaskId) -> bool {
        !self.tasks[t.0 as usize].ended && self.views[t.0 as usize].state != TaskState::Finished
    }
}
