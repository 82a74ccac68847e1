//! Producing a workload's accesses on a second thread.
//!
//! Decoding a trace or running a generator costs time per access of the same
//! order as simulating it. On a machine with a spare core the two can
//! overlap: [`Prefetched`] runs the inner workload on its own thread, a few
//! batches ahead, and hands the batches over through a bounded channel. The
//! stream is the same, access for access, so results do not change; buffers
//! travel back and forth, so nothing is allocated per batch.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use super::Workload;
use crate::error::{Error, Result};
use crate::types::Access;

/// Batches in flight between the producer and the consumer.
const DEPTH: usize = 4;

/// A workload whose accesses are produced on another thread.
pub struct Prefetched {
    full: Receiver<Result<Vec<Access>>>,
    empty: SyncSender<Vec<Access>>,
    current: Vec<Access>,
    pos: usize,
    done: bool,
    len_hint: Option<u64>,
    worker: Option<JoinHandle<()>>,
}

impl Prefetched {
    /// Run `inner` on a new thread, `batch` accesses at a time.
    pub fn new(mut inner: Box<dyn Workload>, batch: usize) -> Result<Prefetched> {
        let batch = batch.max(1);
        let (full_tx, full) = sync_channel::<Result<Vec<Access>>>(DEPTH);
        let (empty, empty_rx) = sync_channel::<Vec<Access>>(DEPTH + 2);
        for _ in 0..DEPTH + 1 {
            empty.send(vec![Access::default(); batch]).expect("the receiver is alive");
        }
        let len_hint = inner.len_hint();
        let worker = std::thread::Builder::new()
            .name("cachesched-prefetch".into())
            .spawn(move || {
                // Ends when the stream ends, fails, or the consumer is gone.
                while let Ok(mut buf) = empty_rx.recv() {
                    buf.resize(batch, Access::default());
                    let message = match inner.fill(&mut buf) {
                        Ok(n) => {
                            buf.truncate(n);
                            Ok(buf)
                        }
                        Err(e) => Err(e),
                    };
                    let last = !matches!(&message, Ok(b) if !b.is_empty());
                    if full_tx.send(message).is_err() || last {
                        return;
                    }
                }
            })
            .map_err(|e| Error::Simulation(format!("cannot start the prefetch thread: {e}")))?;
        Ok(Prefetched { full, empty, current: Vec::new(), pos: 0, done: false, len_hint, worker: Some(worker) })
    }

    /// The next batch from the producer; `false` at the end of the stream.
    fn refill(&mut self) -> Result<bool> {
        let used = std::mem::take(&mut self.current);
        self.pos = 0;
        if used.capacity() > 0 {
            // The producer may already have finished; then the buffer is dropped.
            let _ = self.empty.send(used);
        }
        match self.full.recv() {
            Ok(Ok(buf)) if buf.is_empty() => {
                self.done = true;
                Ok(false)
            }
            Ok(Ok(buf)) => {
                self.current = buf;
                Ok(true)
            }
            Ok(Err(e)) => {
                self.done = true;
                Err(e)
            }
            Err(_) => {
                self.done = true;
                Err(Error::Simulation("the thread producing the workload's accesses stopped unexpectedly".into()))
            }
        }
    }
}

impl Workload for Prefetched {
    fn fill(&mut self, out: &mut [Access]) -> Result<usize> {
        if self.pos == self.current.len() && (self.done || !self.refill()?) {
            return Ok(0);
        }
        let n = out.len().min(self.current.len() - self.pos);
        out[..n].copy_from_slice(&self.current[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }

    fn len_hint(&self) -> Option<u64> {
        self.len_hint
    }
}

impl Drop for Prefetched {
    fn drop(&mut self) {
        // Closing our ends of the channels stops the producer at its next
        // send or receive; wait for it so no thread outlives the workload.
        let (_, dummy) = sync_channel(0);
        drop(std::mem::replace(&mut self.full, dummy));
        let (dummy, _) = sync_channel(0);
        drop(std::mem::replace(&mut self.empty, dummy));
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{collect, VecWorkload};
    use crate::types::VirtAddr;

    fn accesses(n: u64) -> Vec<Access> {
        (0..n).map(|i| Access { addr: VirtAddr(i * 8), ..Access::load(0, 8) }).collect()
    }

    #[test]
    fn delivers_the_same_stream() {
        for (n, batch) in [(0u64, 7usize), (1, 7), (1000, 7), (1000, 1000), (5000, 64)] {
            let want = accesses(n);
            let mut p = Prefetched::new(Box::new(VecWorkload::new(want.clone())), batch).unwrap();
            assert_eq!(p.len_hint(), Some(n));
            assert_eq!(collect(&mut p).unwrap(), want, "n={n} batch={batch}");
            assert_eq!(p.fill(&mut [Access::default(); 4]).unwrap(), 0, "stays ended");
        }
    }

    struct Failing(u32);

    impl Workload for Failing {
        fn fill(&mut self, buf: &mut [Access]) -> Result<usize> {
            if self.0 == 0 {
                return Err(Error::Simulation("boom".into()));
            }
            self.0 -= 1;
            buf[0] = Access::load(1, 1);
            Ok(1)
        }
    }

    #[test]
    fn errors_arrive_after_the_accesses_before_them() {
        let mut p = Prefetched::new(Box::new(Failing(3)), 16).unwrap();
        let mut buf = [Access::default(); 16];
        let mut got = 0;
        let err = loop {
            match p.fill(&mut buf) {
                Ok(n) => got += n,
                Err(e) => break e,
            }
        };
        assert_eq!(got, 3);
        assert_eq!(err.to_string(), "boom");
    }

    #[test]
    fn dropping_early_stops_the_producer() {
        let mut p = Prefetched::new(Box::new(VecWorkload::new(accesses(1_000_000))), 64).unwrap();
        let mut buf = [Access::default(); 8];
        p.fill(&mut buf).unwrap();
        drop(p); // joins the thread: the test would hang if it did not stop
    }
}
