//! Server tasks (`[[tasks]] requests`): requests arrive over simulated
//! time, each runs the task's workload once ([`crate::trace::replay`]), in
//! arrival order. A server whose next request has not arrived sleeps, off
//! every core and queue, and wakes at the arrival into the queue of the
//! core it last ran on, as a woken thread or VCPU does (idle cores then
//! steal it as the scheduler allows). Each request leaves a row: when it
//! arrived, began to run and ended.

use std::cmp::Reverse;

use super::Engine;
use crate::config::tasks::{Arrivals, RequestPlan};
use crate::error::Result;
use crate::results::RequestRow;
use crate::types::TaskId;
use crate::util::rng::Rng;

/// A server task's arrivals and its request in progress.
pub(super) struct Server {
    plan: RequestPlan,
    rng: Rng,
    /// When the next request arrives (fractional cycles, so that rounding
    /// does not drift).
    next: f64,
    /// Requests begun so far.
    begun: u64,
    /// The request in progress, its start once it has run.
    open: Option<(RequestRow, bool)>,
}

impl Server {
    pub(super) fn new(plan: RequestPlan, seed: u64, component: &str) -> Server {
        let mut server = Server {
            plan,
            rng: Rng::for_component(seed, &format!("{component}/arrivals")),
            next: 0.0,
            begun: 0,
            open: None,
        };
        server.next = server.gap();
        server
    }

    /// The gap before the first arrival, or between two.
    fn gap(&mut self) -> f64 {
        match self.plan.arrivals {
            Arrivals::Fixed if self.begun == 0 => 0.0,
            Arrivals::Fixed => self.plan.interval,
            // An exponential draw; 1 - u is in (0, 1].
            Arrivals::Poisson => -(1.0 - self.rng.next_f64()).ln() * self.plan.interval,
        }
    }

    /// The request in progress ended at `end`: its row.
    fn close(&mut self, end: u64) -> Option<RequestRow> {
        self.open.take().map(|(row, _)| RequestRow { end, ..row })
    }
}

impl Engine {
    /// Server `task`, on core `c`, begins its next request (its previous
    /// one ended when its stream said so). Returns whether it must sleep
    /// until the request arrives (its core then decides).
    pub(super) fn begin_request(&mut self, c: usize, task: TaskId) -> Result<bool> {
        let ti = task.0 as usize;
        let ended = self.tasks[ti].filled_at;
        let server = self.tasks[ti].server.as_mut().expect("only a server's stream begins requests");
        self.requests.extend(server.close(ended));
        let arrival = server.next.round() as u64;
        server.begun += 1;
        server.next += server.gap();
        let row = RequestRow { task: task.0, request: server.begun - 1, arrival, start: 0, end: 0 };
        server.open = Some((row, false));
        let now = self.cores[c].clock;
        if arrival <= now {
            self.start_request(task, now); // it goes on at once
            return Ok(false);
        }
        self.sleep_until(c, task, arrival);
        Ok(true)
    }

    /// `task`, on core `c`, sleeps until `at`: off the core, which decides
    /// next, and off every queue until [`Engine::wake`].
    pub(super) fn sleep_until(&mut self, c: usize, task: TaskId, at: u64) {
        let ti = task.0 as usize;
        self.tasks[ti].blocked = true;
        self.tasks[ti].arrived_at = at;
        self.cores[c].pending = true;
        self.timers.push(Reverse((at, task.0)));
    }

    /// `task` runs, from `now`, on a core: if it is a server whose request
    /// has not run yet (it slept until the arrival), the request starts.
    pub(super) fn start_request(&mut self, task: TaskId, now: u64) {
        if let Some((row, started)) = self.tasks[task.0 as usize].server.as_mut().and_then(|s| s.open.as_mut()) {
            if !*started {
                (row.start, *started) = (now, true);
            }
        }
    }

    /// Server `task`'s stream ended: its last request ended with it.
    pub(super) fn end_requests(&mut self, task: TaskId) {
        let ti = task.0 as usize;
        let (ended, cut) = (self.tasks[ti].filled_at, self.tasks[ti].cut);
        // A request its task's limit cut short did not end.
        if let Some(row) = self.tasks[ti].server.as_mut().and_then(|s| s.close(ended)).filter(|_| !cut) {
            self.requests.push(row);
        }
    }

    /// The next sleeping task whose time has come (a server's request
    /// arrived, a VM's block request served): it wakes.
    pub(super) fn wake(&mut self) {
        let Reverse((at, t)) = self.timers.pop().expect("a wake-up is due");
        self.unblock(TaskId(t), at);
    }

    /// When the next sleeping task wakes.
    pub(super) fn next_wake(&self) -> Option<u64> {
        self.timers.peek().map(|Reverse((at, _))| *at)
    }
}
