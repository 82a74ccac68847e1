//! VMs' block I/O (`[[tasks]] io` and `[block_cache]`): a task issues its
//! block trace's requests to the hypervisor's block cache
//! ([`crate::thinprov::BlockCache`]) one at a time, each once the task has
//! run for the request's think time since the previous one was served, so
//! that a VCPU the scheduler keeps off its core issues nothing. While the
//! cache serves a request the task sleeps, off every core and queue, and
//! wakes into the queue of the core it last ran on, as a server does. The
//! requests of all tasks reach the cache in the order of the cores' clocks.

use super::Engine;
use crate::types::TaskId;

/// A task's block requests: the cache's VM it is, and its next request.
pub(super) struct IoStream {
    pub(super) vm: usize,
    /// Requests issued so far.
    next: usize,
    /// Its run cycles (`TaskView::cycles`) at which it issues the next.
    pub(super) due: u64,
}

impl IoStream {
    pub(super) fn new(vm: usize) -> IoStream {
        // The first request's think time is 0: it is due at once.
        IoStream { vm, next: 0, due: 0 }
    }
}

impl Engine {
    /// `task`, on core `c`, has run until its next request is due: it
    /// issues it and sleeps until it has been served, or, its requests all
    /// served, ends. Either way it leaves the core, which then decides.
    pub(super) fn issue(&mut self, c: usize, task: TaskId) {
        let ti = task.0 as usize;
        let cache = self.block_cache.as_mut().expect("a task with io has a block cache");
        let io = self.tasks[ti].io.as_mut().expect("only a task with io issues requests");
        let now = self.cores[c].clock;
        if io.next == cache.requests(io.vm) {
            self.tasks[ti].ended = true;
            self.cores[c].pending = true;
            return;
        }
        let ghz = self.config.config.machine.frequency_ghz;
        let served = cache.serve(io.vm, io.next, (now as f64 / ghz) as u64);
        io.next += 1;
        let think = cache.think_ns(io.vm, io.next).unwrap_or(0);
        io.due = self.views[ti].cycles + (think as f64 * ghz).round() as u64;
        let wake = ((served as f64 * ghz).ceil() as u64).max(now);
        self.sleep_until(c, task, wake);
    }
}
