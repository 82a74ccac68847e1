//! Miss classification off the simulation's path.
//!
//! Whether a miss was compulsory (the first reference to the line by that
//! cache) and, on the attributed levels, what caused it (see
//! [`Attribution`]) only goes into counters: never back into the caches,
//! the timing or the schedule. So the machine does not work it out as it
//! goes; it writes down what the first-touch sets and the shadows must see,
//! in order ([`Note`]), and the notes are applied in batches, on a worker
//! thread when the host has a CPU to spare. Applied in the same order, they
//! give the same counts wherever they run.
//!
//! A batch of notes also lets the host cache misses of those tables
//! overlap: the first-touch group (and shadow block) of the note a few
//! places ahead is prefetched while one is applied.

use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

use crate::counters::Induced;
use crate::counters::Level;
use crate::error::{Error, Result};
use crate::mem::attribution::Attribution;
use crate::mem::cache::Req;
use crate::mem::replacement::ReqKind;
use crate::types::{LineAddr, TaskId};
use crate::util::hash::SeenSet;

/// Notes gathered before a batch is handed over: large enough that the
/// hand-over is rare, small enough to stay in the host's caches.
const BATCH: usize = 8192;

/// Host bytes of the note batches a machine keeps at most: the one being
/// filled, the one being applied, and two spares.
pub const HOST_BYTES: u64 = (4 * BATCH * std::mem::size_of::<Note>()) as u64;

/// How far ahead of the note being applied its tables are prefetched.
const AHEAD: usize = 8;

/// Something the first-touch sets or the shadows must see, in the order
/// the machine saw it.
#[derive(Debug, Clone, Copy)]
pub enum Note {
    /// A miss in cache `cache` (of level `level`), to be classified;
    /// `stays` as in [`Attribution::observe`].
    Miss { cache: u32, level: Level, req: Req, line: LineAddr, stays: bool },
    /// Cache `cache` got `line` without a miss (a write-back, a victim
    /// moving into an exclusive level, an installed line): a later miss on
    /// it is not compulsory.
    Seen { cache: u32, line: LineAddr },
    /// A hit at an attributed level (the shadow learns the use).
    Hit { level: Level, req: Req, line: LineAddr, stays: bool },
    /// A line placed at an attributed level.
    Place { level: Level, req: Req, line: LineAddr },
    /// A task's own request evicted a line from an inclusive attributed level above.
    Invalidate { level: Level, task: TaskId, line: LineAddr },
    /// A lookup in attributed TLB level `i`, which hit or not.
    Tlb { i: u8, task: TaskId, kind: ReqKind, key: u64, hit: bool, stays: bool },
    /// A translation placed in attributed TLB level `i`.
    PlaceTlb { i: u8, task: TaskId, key: u64 },
    /// A task was switched out.
    SwitchedOut(TaskId),
    /// A task moved to another core.
    Moved(TaskId),
    /// The counts start again (the end of the warm-up); what the caches
    /// have seen stays.
    Reset,
    /// Take down `task`'s switch-induced misses at `level` so far (the
    /// engine's `slices` rows subtract two of these).
    Mark { task: TaskId, level: Level },
}

/// One task's misses as classified: compulsory at every level; induced at
/// the attributed ones (the others' stay at zero).
#[derive(Debug, Clone, Copy, Default)]
pub struct Classified {
    /// Compulsory misses per cache level, by access kind. At an attributed
    /// level, only those the shadow missed too.
    pub compulsory: [[u64; 3]; Level::COUNT],
    /// Induced misses per cache level.
    pub induced: [Induced; Level::COUNT],
    /// Induced misses of the first- and second-level TLBs.
    pub tlb_induced: [Induced; 2],
}

/// The counts as of a [`Notebook::settle`].
#[derive(Debug, Clone, Default)]
pub struct Settled {
    /// Per task, indexed by task id.
    pub tasks: Vec<Classified>,
    /// Per cache: compulsory misses by [`ReqKind`].
    pub caches: Vec<[u64; ReqKind::COUNT]>,
    /// The counts taken down by [`Note::Mark`], in order.
    pub marks: Vec<u64>,
}

/// The first-touch sets and the shadows, with the counts they produced.
struct Classifier {
    /// Per cache, the lines it has seen.
    seen: Vec<SeenSet>,
    shadows: Option<Box<Attribution>>,
    counts: Settled,
}

impl Classifier {
    fn task(&mut self, task: TaskId) -> &mut Classified {
        let t = task.0 as usize;
        if self.counts.tasks.len() <= t {
            self.counts.tasks.resize(t + 1, Classified::default());
        }
        &mut self.counts.tasks[t]
    }

    fn apply_all(&mut self, notes: &[Note]) {
        for (i, note) in notes.iter().enumerate() {
            match notes.get(i + AHEAD) {
                Some(&Note::Miss { cache, level, req, line, .. }) => {
                    self.seen[cache as usize].prefetch(line.0);
                    if let Some(s) = &self.shadows {
                        s.prefetch(level, req.task, line);
                    }
                }
                Some(&Note::Seen { cache, line }) => self.seen[cache as usize].prefetch(line.0),
                Some(&Note::Hit { level, req, line, .. }) => {
                    if let Some(s) = &self.shadows {
                        s.prefetch(level, req.task, line);
                    }
                }
                _ => {}
            }
            self.apply(note);
        }
    }

    fn apply(&mut self, note: &Note) {
        match *note {
            Note::Miss { cache, level, req, line, stays } => {
                let compulsory = self.seen[cache as usize].insert(line.0) && req.kind != ReqKind::Writeback;
                self.counts.caches[cache as usize][req.kind as usize] += compulsory as u64;
                let cause = self.shadows.as_mut().and_then(|s| s.observe(level, &req, line, false, stays));
                if req.kind.is_demand() {
                    let k = req.kind as usize;
                    let counts = self.task(req.task);
                    // Causes are disjoint: a miss the shadow would have hit is
                    // induced even where this cache never held the line (a
                    // task that moved).
                    match cause {
                        Some(cause) => counts.induced[level as usize].add(cause, k),
                        None => counts.compulsory[level as usize][k] += compulsory as u64,
                    }
                }
            }
            Note::Seen { cache, line } => {
                self.seen[cache as usize].insert(line.0);
            }
            Note::Reset => {
                // The marks taken so far stay: their numbers index them.
                self.counts.tasks.clear();
                self.counts.caches.iter_mut().for_each(|c| *c = [0; ReqKind::COUNT]);
            }
            Note::Mark { task, level } => {
                let switch = self.task(task).induced[level as usize].switch.iter().sum();
                self.counts.marks.push(switch);
            }
            _ => self.apply_to_shadows(note),
        }
    }

    /// The notes only the shadows see (the machine writes them only when
    /// their level is attributed).
    fn apply_to_shadows(&mut self, note: &Note) {
        let Some(s) = self.shadows.as_mut() else { return };
        match *note {
            Note::Hit { level, req, line, stays } => {
                s.observe(level, &req, line, true, stays);
            }
            Note::Place { level, req, line } => s.place(level, &req, line),
            Note::Invalidate { level, task, line } => s.invalidate(level, task, line),
            Note::Tlb { i, task, kind, key, hit, stays } => {
                if let Some(cause) = s.observe_tlb(i as usize, task, key, hit, stays) {
                    self.task(task).tlb_induced[i as usize].add(cause, kind as usize);
                }
            }
            Note::PlaceTlb { i, task, key } => s.place_tlb(i as usize, task, key),
            Note::SwitchedOut(task) => s.switched_out(task),
            Note::Moved(task) => s.moved(task),
            Note::Miss { .. } | Note::Seen { .. } | Note::Reset | Note::Mark { .. } => {}
        }
    }
}

/// What the worker is asked.
enum Job {
    Apply(Vec<Note>),
    /// Apply, and drop the buffer (a pad's: see [`Notebook::pad`]).
    Take(Vec<Note>),
    Report,
}

/// What the worker answers.
enum Answer {
    /// A batch applied: its buffer, emptied, to fill again.
    Applied(Vec<Note>),
    Report(Settled),
}

/// The worker thread and its two channels.
struct Worker {
    jobs: Option<Sender<Job>>,
    answers: Receiver<Answer>,
    handle: Option<JoinHandle<()>>,
    /// Emptied buffers back from the worker.
    spare: Vec<Vec<Note>>,
}

impl Worker {
    fn start(mut classifier: Classifier) -> Result<Worker> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let (reply, answers) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("cachesched-class".into())
            .spawn(move || {
                for job in inbox {
                    let answer = match job {
                        Job::Apply(mut notes) => {
                            classifier.apply_all(&notes);
                            notes.clear();
                            Answer::Applied(notes)
                        }
                        Job::Take(notes) => {
                            classifier.apply_all(&notes);
                            continue;
                        }
                        Job::Report => Answer::Report(classifier.counts.clone()),
                    };
                    if reply.send(answer).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| Error::Simulation(format!("cannot start the classifying thread: {e}")))?;
        // Two more buffers: one being applied while another fills.
        let spare = vec![Vec::with_capacity(BATCH), Vec::with_capacity(BATCH)];
        Ok(Worker { jobs: Some(jobs), answers, handle: Some(handle), spare })
    }

    fn lost() -> Error {
        Error::Simulation("the classifying thread stopped".into())
    }

    /// The next answer, keeping returned buffers.
    fn receive(&mut self) -> Result<Option<Settled>> {
        match self.answers.recv().map_err(|_| Self::lost())? {
            Answer::Applied(buffer) => {
                self.spare.push(buffer);
                Ok(None)
            }
            Answer::Report(counts) => Ok(Some(counts)),
        }
    }

    fn send(&mut self, job: Job) -> Result<()> {
        self.jobs.as_ref().and_then(|j| j.send(job).ok()).ok_or_else(Self::lost)
    }

    /// Hand `notes` over and give back an empty buffer, waiting for one
    /// if both others are out.
    fn hand_over(&mut self, notes: &mut Vec<Note>) -> Result<()> {
        if self.spare.is_empty() {
            self.receive()?;
        }
        let full = std::mem::replace(notes, self.spare.pop().unwrap_or_default());
        self.send(Job::Apply(full))
    }

    /// The counts once every note handed over is applied.
    fn report(&mut self) -> Result<Settled> {
        self.send(Job::Report)?;
        loop {
            if let Some(counts) = self.receive()? {
                return Ok(counts);
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Closing the channel ends the worker's loop.
        self.jobs = None;
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

enum Mode {
    /// Applied on the simulation's thread.
    Here(Classifier),
    /// Applied on a worker thread.
    Thread(Worker),
    /// Kept, in batches, for the notebook it was made from
    /// ([`Notebook::pad`]), or sent straight to its worker.
    Pad(Vec<Vec<Note>>, Option<Sender<Job>>),
}

/// The machine's side: which levels are attributed, the notes not yet
/// handed over, and where they are applied.
pub struct Notebook {
    cache_on: [bool; Level::COUNT],
    tlb_on: [bool; 2],
    notes: Vec<Note>,
    mode: Mode,
    /// Marks noted so far.
    marks: usize,
    /// The counts as of the last [`Notebook::settle`].
    settled: Settled,
    /// Why the worker could not take a batch, reported at the next settle.
    failed: Option<Error>,
}

impl std::fmt::Debug for Notebook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let threaded = matches!(self.mode, Mode::Thread(_));
        f.debug_struct("Notebook").field("pending", &self.notes.len()).field("threaded", &threaded).finish()
    }
}

impl Notebook {
    /// Notes for `caches` first-touch sets and the `shadows` of the
    /// attributed levels, if any, applied on this thread.
    pub fn new(caches: usize, shadows: Option<Attribution>) -> Notebook {
        let (cache_on, tlb_on) = shadows.as_ref().map_or(Default::default(), |s| (s.cache_on, s.tlb_on));
        let counts = Settled { caches: vec![[0; ReqKind::COUNT]; caches], ..Settled::default() };
        let classifier = Classifier { seen: vec![SeenSet::default(); caches], shadows: shadows.map(Box::new), counts };
        Notebook {
            cache_on,
            tlb_on,
            notes: Vec::with_capacity(BATCH),
            mode: Mode::Here(classifier),
            marks: 0,
            settled: Settled::default(),
            failed: None,
        }
    }

    /// The same notes applied on a worker thread from now on.
    pub fn threaded(mut self) -> Result<Notebook> {
        if let Mode::Here(mut classifier) = self.mode {
            classifier.apply_all(&self.notes);
            self.notes.clear();
            self.mode = Mode::Thread(Worker::start(classifier)?);
        }
        Ok(self)
    }

    /// Whether cache `level` is attributed.
    #[inline(always)]
    pub fn covers(&self, level: Level) -> bool {
        self.cache_on[level as usize]
    }

    /// Whether TLB level `i` is attributed.
    #[inline(always)]
    pub fn covers_tlb(&self, i: usize) -> bool {
        self.tlb_on[i]
    }

    /// Which cache levels and TLB levels are attributed.
    pub fn coverage(&self) -> ([bool; Level::COUNT], [bool; 2]) {
        (self.cache_on, self.tlb_on)
    }

    /// Write `note` down. Notes stay here until [`Notebook::pass`], which
    /// the machine calls between batches of accesses.
    #[inline(always)]
    pub fn note(&mut self, note: Note) {
        self.notes.push(note);
    }

    /// Note a [`Note::Mark`] of `task`'s switch-induced misses at `level`,
    /// if `level` is attributed; returns its number, an index into the
    /// marks of [`Notebook::settle`].
    pub fn mark(&mut self, task: TaskId, level: Level) -> Option<usize> {
        self.covers(level).then(|| {
            self.note(Note::Mark { task, level });
            self.marks += 1;
            self.marks - 1
        })
    }

    /// Between batches: hand a full batch over (or apply it here). A
    /// failure is kept for [`Notebook::settle`] to report.
    #[inline]
    pub fn pass(&mut self) {
        if self.notes.len() >= BATCH {
            if let Err(e) = self.hand_over() {
                self.notes.clear();
                self.failed.get_or_insert(e);
            }
        }
    }

    fn hand_over(&mut self) -> Result<()> {
        match &mut self.mode {
            Mode::Here(classifier) => {
                classifier.apply_all(&self.notes);
                self.notes.clear();
                Ok(())
            }
            Mode::Thread(worker) => worker.hand_over(&mut self.notes),
            Mode::Pad(kept, forward) => {
                let batch = std::mem::replace(&mut self.notes, Vec::with_capacity(BATCH));
                match forward {
                    Some(jobs) => jobs.send(Job::Take(batch)).map_err(|_| Worker::lost()),
                    None => {
                        kept.push(batch);
                        Ok(())
                    }
                }
            }
        }
    }

    /// An empty notebook for the same levels, for a socket simulated on
    /// another thread: it sends its full batches to this one's worker, or
    /// keeps them until this one [`absorbs`](Notebook::absorb) them. The
    /// notes written here so far are handed over first.
    pub fn pad(&mut self) -> Notebook {
        if let Err(e) = self.hand_over() {
            self.failed.get_or_insert(e);
        }
        let forward = match &self.mode {
            Mode::Thread(worker) => worker.jobs.clone(),
            _ => None,
        };
        Notebook {
            cache_on: self.cache_on,
            tlb_on: self.tlb_on,
            notes: Vec::with_capacity(BATCH),
            mode: Mode::Pad(Vec::new(), forward),
            marks: 0,
            settled: Settled::default(),
            failed: None,
        }
    }

    /// Take the notes of a [`Notebook::pad`] it has not sent yet. Notes of
    /// pads whose sockets ran at the same time may be applied in any order
    /// as long as they only feed counters that add up: the first-touch sets
    /// of each pad's own caches and the tasks' compulsory misses. (A
    /// shadow, or a mark, would depend on the order: the engine uses pads
    /// only without attribution.)
    pub fn absorb(&mut self, pad: Notebook) {
        debug_assert_eq!(pad.marks, 0, "marks are numbered in one notebook");
        let Mode::Pad(kept, _) = pad.mode else { return };
        if let Some(e) = pad.failed {
            self.failed.get_or_insert(e);
        }
        for batch in kept.into_iter().chain([pad.notes]) {
            if let Err(e) = self.hand_over() {
                self.failed.get_or_insert(e);
            }
            self.notes = batch;
        }
        self.pass();
    }

    /// Hand the notes over now, not when the batch is full: a note that
    /// must be applied before the notes of a pad sending its batches
    /// straight to the worker.
    pub fn flush(&mut self) {
        if let Err(e) = self.hand_over() {
            self.failed.get_or_insert(e);
        }
    }

    /// Whether a [`Notebook::pad`] keeps full batches for its notebook
    /// (one with no worker to send them to): then it should be absorbed.
    pub fn keeps(&self) -> bool {
        matches!(&self.mode, Mode::Pad(kept, _) if !kept.is_empty())
    }

    /// The counts as of the last [`Notebook::settle`].
    pub fn settled(&self) -> &Settled {
        &self.settled
    }

    /// Every note applied: the counts.
    pub fn settle(&mut self) -> Result<&Settled> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        self.hand_over()?;
        self.settled = match &mut self.mode {
            Mode::Here(classifier) => classifier.counts.clone(),
            Mode::Thread(worker) => worker.report()?,
            Mode::Pad(..) => unreachable!("a pad is absorbed, not settled"),
        };
        Ok(&self.settled)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::types::VirtAddr;

    fn miss(cache: u32, task: u32, line: u64) -> Note {
        let req = Req { kind: ReqKind::Load, pc: VirtAddr(0), task: TaskId(task) };
        Note::Miss { cache, level: Level::L2, req, line: LineAddr(line), stays: true }
    }

    proptest! {
        /// Two pads, each noting the misses of its own caches (two sockets
        /// running at once), made after some notes and absorbed: the same
        /// compulsory misses per cache and per task as one notebook noting
        /// everything in order, on this thread or a worker.
        #[test]
        fn pads_absorbed_count_what_one_notebook_counts(
            notes in proptest::collection::vec((0u32..4, 0u32..3, 0u64..40, any::<bool>()), 1..3 * BATCH),
            split in 0usize..100,
            threaded in any::<bool>(),
        ) {
            let note = |&(cache, task, line, seen): &(u32, u32, u64, bool)| {
                if seen { Note::Seen { cache, line: LineAddr(line) } } else { miss(cache, task, line) }
            };
            let new = || {
                let book = Notebook::new(4, None);
                if threaded { book.threaded().unwrap() } else { book }
            };
            let mut reference = new();
            let mut book = new();
            let (before, during) = notes.split_at(split * notes.len() / 100);
            for n in notes.iter() {
                reference.note(note(n));
                reference.pass();
            }
            for n in before {
                book.note(note(n));
                book.pass();
            }
            let mut pads = [book.pad(), book.pad()];
            for n in during {
                let pad = &mut pads[n.0 as usize / 2];
                pad.note(note(n));
                pad.pass();
            }
            for pad in pads {
                book.absorb(pad);
            }
            let (expected, got) = (reference.settle().unwrap().clone(), book.settle().unwrap().clone());
            prop_assert_eq!(&got.caches, &expected.caches);
            let compulsory = |s: &Settled| s.tasks.iter().map(|t| t.compulsory).collect::<Vec<_>>();
            prop_assert_eq!(compulsory(&got), compulsory(&expected));
        }
    }
}
