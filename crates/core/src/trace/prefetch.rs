//! Producing a workload's accesses on a second thread.
//!
//! Decoding a trace or running a generator costs time per access of the same
//! order as simulating it. On a machine with a spare core the two can
//! overlap: [`Prefetched`] runs the inner workload on its own thread, a few
//! batches ahead, and hands the batches over through a bounded channel. The
//! stream is the same, access for access, so results do not change; buffers
//! travel back and forth, so nothing is allocated per batch.
//!
//! With more workloads than spare host CPUs (a scheduling run of dozens of
//! tasks), a thread each would only compete; [`Prefetched::pooled`] shares
//! the spare CPUs' threads among them instead, each thread refilling in turn
//! the buffers its workloads have given back.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::Arc;
use std::thread::{JoinHandle, Thread};
use std::time::Duration;

use super::Workload;
use crate::error::{Error, Result};
use crate::types::Access;

/// Batches in flight between the producer and the consumer.
const DEPTH: usize = 4;

/// A workload whose accesses are produced on another thread: its own, or
/// one of a [`Pool`]'s shared by many workloads.
pub struct Prefetched {
    full: Batches,
    empty: SyncSender<Vec<Access>>,
    current: Vec<Access>,
    /// The most instructions of any access in `current`.
    most: u32,
    pos: usize,
    done: bool,
    len_hint: Option<u64>,
    /// The producing thread: joined on drop if it is this workload's own;
    /// woken when a buffer comes back if it is a pool's.
    producer: Producer,
}

enum Producer {
    Own(Option<JoinHandle<()>>),
    Pooled(Arc<PoolThreads>),
}

/// The producing side of one workload: fills the empty buffers it is given.
struct Source {
    inner: Box<dyn Workload>,
    full: SyncSender<Result<(Vec<Access>, u32)>>,
    empty: Receiver<Vec<Access>>,
    batch: usize,
}

/// What [`Source::produce`] did.
#[derive(PartialEq, Eq)]
enum Produced {
    /// Filled and sent a batch.
    Batch,
    /// No empty buffer was waiting.
    Idle,
    /// The stream ended, failed, or the consumer is gone.
    Finished,
}

impl Source {
    /// Fill one buffer: waiting for it if `wait`, else only if one is there.
    fn produce(&mut self, wait: bool) -> Produced {
        let buf = if wait {
            self.empty.recv().ok()
        } else {
            match self.empty.try_recv() {
                Ok(buf) => Some(buf),
                Err(TryRecvError::Empty) => return Produced::Idle,
                Err(TryRecvError::Disconnected) => None,
            }
        };
        let Some(mut buf) = buf else { return Produced::Finished };
        buf.resize(self.batch, Access::default());
        let message = match self.inner.fill(&mut buf) {
            Ok(n) => {
                buf.truncate(n);
                let most = buf.iter().map(|a| a.instrs).max().unwrap_or(0);
                Ok((buf, most))
            }
            Err(e) => Err(e),
        };
        let last = !matches!(&message, Ok((b, _)) if !b.is_empty());
        // Never blocks: of the buffers in circulation the consumer holds
        // one and this thread one, so the channel has room for the rest.
        if self.full.send(message).is_err() || last {
            return Produced::Finished;
        }
        Produced::Batch
    }
}

/// Full batches with the most instructions of any of their accesses (or
/// the error that ended the stream), producer to consumer.
type Batches = Receiver<Result<(Vec<Access>, u32)>>;

/// The two ends of a new workload's channels, with `buffers` empty buffers
/// of `batch` accesses in circulation: the producer's, and the consumer's
/// batches and buffer return.
fn channels(inner: Box<dyn Workload>, batch: usize, buffers: usize) -> (Source, Batches, SyncSender<Vec<Access>>) {
    let batch = batch.max(1);
    let (full_tx, full) = sync_channel::<Result<(Vec<Access>, u32)>>(buffers);
    let (empty, empty_rx) = sync_channel::<Vec<Access>>(buffers + 1);
    for _ in 0..buffers {
        empty.send(vec![Access::default(); batch]).expect("the receiver is alive");
    }
    (Source { inner, full: full_tx, empty: empty_rx, batch }, full, empty)
}

impl Prefetched {
    /// Run `inner` on a new thread, `batch` accesses at a time.
    pub fn new(inner: Box<dyn Workload>, batch: usize) -> Result<Prefetched> {
        let len_hint = inner.len_hint();
        let (mut source, full, empty) = channels(inner, batch, DEPTH + 1);
        let worker = std::thread::Builder::new()
            .name("cachesched-prefetch".into())
            .spawn(move || while source.produce(true) == Produced::Batch {})
            .map_err(|e| Error::Simulation(format!("cannot start the prefetch thread: {e}")))?;
        Ok(Prefetched::consumer(full, empty, len_hint, Producer::Own(Some(worker))))
    }

    fn consumer(
        full: Batches,
        empty: SyncSender<Vec<Access>>,
        len_hint: Option<u64>,
        producer: Producer,
    ) -> Prefetched {
        Prefetched { full, empty, current: Vec::new(), most: 0, pos: 0, done: false, len_hint, producer }
    }

    /// The next batch from the producer; `false` at the end of the stream.
    fn refill(&mut self) -> Result<bool> {
        let used = std::mem::take(&mut self.current);
        self.pos = 0;
        if used.capacity() > 0 {
            // The producer may already have finished; then the buffer is dropped.
            let _ = self.empty.send(used);
            if let Producer::Pooled(pool) = &self.producer {
                pool.wake();
            }
        }
        match self.full.recv() {
            Ok(Ok((buf, _))) if buf.is_empty() => {
                self.done = true;
                Ok(false)
            }
            Ok(Ok((buf, most))) => {
                self.current = buf;
                self.most = most;
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

/// The threads of a pool of producers ([`Prefetched::pooled`]); joined
/// when the last of its workloads is dropped.
struct PoolThreads {
    threads: Vec<Thread>,
    handles: Vec<JoinHandle<()>>,
}

impl PoolThreads {
    fn wake(&self) {
        self.threads.iter().for_each(Thread::unpark);
    }
}

impl Drop for PoolThreads {
    fn drop(&mut self) {
        self.wake();
        for handle in self.handles.drain(..) {
            let _ = handle.join();
        }
    }
}

impl Prefetched {
    /// Produce `workloads` on a pool of `threads` threads shared by all of
    /// them (for more workloads than spare host CPUs): each thread fills,
    /// in turn, the empty buffers its workloads have given back, and sleeps
    /// when there are none. `batch` accesses at a time, three buffers per
    /// workload (fewer in flight than with a thread of its own, as a pool
    /// serves many).
    pub fn pooled(workloads: Vec<Box<dyn Workload>>, threads: usize, batch: usize) -> Result<Vec<Prefetched>> {
        let threads = threads.clamp(1, workloads.len().max(1));
        let mut shares: Vec<Vec<Source>> = (0..threads).map(|_| Vec::new()).collect();
        let mut ends = Vec::with_capacity(workloads.len());
        for (i, inner) in workloads.into_iter().enumerate() {
            let len_hint = inner.len_hint();
            let (source, full, empty) = channels(inner, batch, 3);
            shares[i % threads].push(source);
            ends.push((full, empty, len_hint));
        }
        let mut handles = Vec::with_capacity(threads);
        for mut sources in shares {
            let handle = std::thread::Builder::new()
                .name("cachesched-prefetch".into())
                .spawn(move || {
                    while !sources.is_empty() {
                        let mut busy = false;
                        sources.retain_mut(|s| match s.produce(false) {
                            Produced::Batch => {
                                busy = true;
                                true
                            }
                            Produced::Idle => true,
                            Produced::Finished => false,
                        });
                        if !busy {
                            // Woken when a buffer comes back; the timeout
                            // only guards against a wake-up lost in a race.
                            std::thread::park_timeout(Duration::from_millis(1));
                        }
                    }
                })
                .map_err(|e| Error::Simulation(format!("cannot start a prefetch thread: {e}")))?;
            handles.push(handle);
        }
        let pool = Arc::new(PoolThreads { threads: handles.iter().map(|h| h.thread().clone()).collect(), handles });
        Ok(ends
            .into_iter()
            .map(|(full, empty, len_hint)| Prefetched::consumer(full, empty, len_hint, Producer::Pooled(pool.clone())))
            .collect())
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

    fn fill_vec(&mut self, buf: &mut Vec<Access>) -> Result<usize> {
        if self.pos == self.current.len() && (self.done || !self.refill()?) {
            return Ok(0);
        }
        if self.pos > 0 {
            return self.fill(buf);
        }
        // Hand the whole batch over; the caller's buffer goes back to the
        // producer at the next refill, so as many buffers stay in circulation.
        std::mem::swap(&mut self.current, buf);
        self.pos = self.current.len();
        Ok(buf.len())
    }

    fn len_hint(&self) -> Option<u64> {
        self.len_hint
    }

    fn most_instrs(&self) -> Option<u32> {
        Some(self.most)
    }
}

impl Drop for Prefetched {
    fn drop(&mut self) {
        // Closing our ends of the channels stops the producer at its next
        // send or receive; wait for it so no thread outlives the workload
        // (a pool's threads are joined with its last workload).
        let (_, dummy) = sync_channel(0);
        drop(std::mem::replace(&mut self.full, dummy));
        let (dummy, _) = sync_channel(0);
        drop(std::mem::replace(&mut self.empty, dummy));
        match &mut self.producer {
            Producer::Own(worker) => {
                if let Some(worker) = worker.take() {
                    let _ = worker.join();
                }
            }
            Producer::Pooled(pool) => pool.wake(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{collect, VecWorkload};
    use crate::types::VirtAddr;

    /// A stream whose instruction counts vary, from 0 to 10.
    fn accesses(n: u64) -> Vec<Access> {
        (0..n).map(|i| Access { addr: VirtAddr(i * 8), instrs: (i * 37 % 11) as u32, ..Access::load(0, 8) }).collect()
    }

    #[test]
    fn handing_buffers_over_delivers_the_same_stream_within_its_bound() {
        for (n, batch) in [(0u64, 7usize), (1000, 7), (5000, 64)] {
            let want = accesses(n);
            let mut p = Prefetched::new(Box::new(VecWorkload::new(want.clone())), batch).unwrap();
            let (mut got, mut buf, mut turn) = (Vec::new(), vec![Access::default(); 5], 0);
            // Swaps and copies interleaved, with a buffer shorter than a batch.
            loop {
                turn += 1;
                let k = if turn % 3 == 0 { p.fill(&mut buf[..5]) } else { p.fill_vec(&mut buf) }.unwrap();
                if k == 0 {
                    break;
                }
                let most = p.most_instrs().expect("a producer measures its batches");
                assert!(buf[..k].iter().all(|a| a.instrs <= most), "the bound holds for what was handed over");
                got.extend_from_slice(&buf[..k]);
                if buf.len() < 5 {
                    buf.resize(5, Access::default());
                }
            }
            assert_eq!(got, want, "n {n} batch {batch}");
        }
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
    fn a_pool_delivers_every_workload_its_own_stream() {
        for threads in [1, 2, 3] {
            let streams: Vec<Vec<Access>> = (0..7u64).map(|i| accesses(i * 997)).collect();
            let workloads =
                streams.iter().map(|s| Box::new(VecWorkload::new(s.clone())) as Box<dyn Workload>).collect();
            let mut pooled = Prefetched::pooled(workloads, threads, 64).unwrap();
            // Drain them interleaved, as the engine does.
            let mut got: Vec<Vec<Access>> = vec![Vec::new(); pooled.len()];
            let mut buf = [Access::default(); 50];
            loop {
                let mut any = false;
                for (p, out) in pooled.iter_mut().zip(&mut got) {
                    let n = p.fill(&mut buf).unwrap();
                    out.extend_from_slice(&buf[..n]);
                    any |= n > 0;
                }
                if !any {
                    break;
                }
            }
            assert_eq!(got, streams, "threads={threads}");
        }
    }

    #[test]
    fn a_pool_passes_errors_on_and_stops_when_dropped() {
        let workloads: Vec<Box<dyn Workload>> =
            vec![Box::new(Failing(2)), Box::new(VecWorkload::new(accesses(1_000_000)))];
        let mut pooled = Prefetched::pooled(workloads, 1, 16).unwrap();
        let mut buf = [Access::default(); 16];
        // Failing(2) yields one access per fill, then fails.
        assert_eq!(pooled[0].fill(&mut buf).unwrap(), 1);
        assert_eq!(pooled[0].fill(&mut buf).unwrap(), 1);
        assert_eq!(pooled[0].fill(&mut buf).unwrap_err().to_string(), "boom");
        pooled[1].fill(&mut buf).unwrap();
        drop(pooled); // joins the pool's thread: the test would hang if it did not stop
    }

    #[test]
    fn dropping_early_stops_the_producer() {
        let mut p = Prefetched::new(Box::new(VecWorkload::new(accesses(1_000_000))), 64).unwrap();
        let mut buf = [Access::default(); 8];
        p.fill(&mut buf).unwrap();
        drop(p); // joins the thread: the test would hang if it did not stop
    }
}
