//! Attribution off the simulation's path.
//!
//! The shadows of [`Attribution`] only classify misses: what they answer
//! goes into counters, never back into the caches, the timing or the
//! schedule. So the machine does not ask them; it writes down what they
//! must see, in order ([`Note`]), and the notes are applied in batches,
//! on a worker thread when the host has a CPU to spare. Applied in the same
//! order, they give the same counts wherever they run.
//!
//! A batch of notes also lets the shadows' host cache misses overlap: the
//! block of the note a few places ahead is prefetched while one is applied,
//! where the machine, asking at each miss, waited for each in turn.

use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

use crate::error::{Error, Result};
use crate::mem::cache::Req;
use crate::mem::replacement::ReqKind;
use crate::stats::attribution::{Attribution, Induced};
use crate::stats::Level;
use crate::types::{LineAddr, TaskId};

/// Notes gathered before a batch is handed over: large enough that the
/// hand-over is rare, small enough to stay in the host's caches.
const BATCH: usize = 8192;

/// How far ahead of the note being applied its shadow block is prefetched.
const AHEAD: usize = 8;

/// Something the shadows must see, in the order the machine saw it.
#[derive(Debug, Clone, Copy)]
pub enum Note {
    /// A real hit at a cache level (the shadow learns the use).
    Hit { level: Level, req: Req, line: LineAddr, stays: bool },
    /// A real miss at a cache level, to be classified; `compulsory` says
    /// whether the cache had never seen the line.
    Miss { level: Level, req: Req, line: LineAddr, stays: bool, compulsory: bool },
    /// A line placed at a cache level.
    Place { level: Level, req: Req, line: LineAddr },
    /// A task's own request evicted a line from an inclusive level above.
    Invalidate { level: Level, task: TaskId, line: LineAddr },
    /// A lookup in TLB level `i`, which hit or not.
    Tlb { i: u8, task: TaskId, kind: ReqKind, key: u64, hit: bool, stays: bool },
    /// A translation placed in TLB level `i`.
    PlaceTlb { i: u8, task: TaskId, key: u64 },
    /// A task was switched out.
    SwitchedOut(TaskId),
    /// A task moved to another core.
    Moved(TaskId),
    /// The counts start again (the end of the warm-up).
    Reset,
    /// Take down `task`'s switch-induced misses at `level` so far (the
    /// engine's `slices` rows subtract two of these).
    Mark { task: TaskId, level: Level },
}

/// One task's misses as attribution classified them, at the levels it
/// covers (the others' stay at zero).
#[derive(Debug, Clone, Copy, Default)]
pub struct Classified {
    /// Compulsory misses per cache level, by access kind.
    pub compulsory: [[u64; 3]; Level::COUNT],
    /// Induced misses per cache level.
    pub induced: [Induced; Level::COUNT],
    /// Induced misses of the first- and second-level TLBs.
    pub tlb_induced: [Induced; 2],
}

/// The shadows with the counts they produced.
struct Classifier {
    shadows: Box<Attribution>,
    counts: Vec<Classified>,
    /// The counts taken down by [`Note::Mark`], in order.
    marks: Vec<u64>,
}

impl Classifier {
    fn counts_of(&mut self, task: TaskId) -> &mut Classified {
        let t = task.0 as usize;
        if self.counts.len() <= t {
            self.counts.resize(t + 1, Classified::default());
        }
        &mut self.counts[t]
    }

    fn apply_all(&mut self, notes: &[Note]) {
        for (i, note) in notes.iter().enumerate() {
            if let Some(Note::Hit { level, req, line, .. } | Note::Miss { level, req, line, .. }) = notes.get(i + AHEAD)
            {
                self.shadows.prefetch(*level, req.task, *line);
            }
            self.apply(note);
        }
    }

    fn apply(&mut self, note: &Note) {
        let s = &mut self.shadows;
        match *note {
            Note::Hit { level, req, line, stays } => {
                s.observe(level, &req, line, true, stays);
            }
            Note::Miss { level, req, line, stays, compulsory } => {
                let cause = s.observe(level, &req, line, false, stays);
                if req.kind.is_demand() {
                    let k = req.kind as usize;
                    let counts = self.counts_of(req.task);
                    // Causes are disjoint: a miss the shadow would have hit is
                    // induced even where this cache never held the line (a
                    // task that moved).
                    match cause {
                        Some(cause) => counts.induced[level as usize].add(cause, k),
                        None => counts.compulsory[level as usize][k] += compulsory as u64,
                    }
                }
            }
            Note::Place { level, req, line } => s.place(level, &req, line),
            Note::Invalidate { level, task, line } => s.invalidate(level, task, line),
            Note::Tlb { i, task, kind, key, hit, stays } => {
                if let Some(cause) = s.observe_tlb(i as usize, task, key, hit, stays) {
                    self.counts_of(task).tlb_induced[i as usize].add(cause, kind as usize);
                }
            }
            Note::PlaceTlb { i, task, key } => s.place_tlb(i as usize, task, key),
            Note::SwitchedOut(task) => s.switched_out(task),
            Note::Moved(task) => s.moved(task),
            Note::Reset => self.counts.iter_mut().for_each(|c| *c = Classified::default()),
            Note::Mark { task, level } => {
                let switch = self.counts_of(task).induced[level as usize].switch.iter().sum();
                self.marks.push(switch);
            }
        }
    }
}

/// What the worker is asked.
enum Job {
    Apply(Vec<Note>),
    Report,
}

/// What the worker answers.
enum Answer {
    /// A batch applied: its buffer, emptied, to fill again.
    Applied(Vec<Note>),
    Report(Vec<Classified>, Vec<u64>),
}

/// The worker thread and its two channels.
struct Worker {
    jobs: Option<Sender<Job>>,
    answers: Receiver<Answer>,
    handle: Option<JoinHandle<()>>,
    /// Emptied buffers back from the worker.
    spare: Vec<Vec<Note>>,
    /// Buffers handed over and not yet back.
    out: usize,
}

impl Worker {
    fn start(mut classifier: Classifier) -> Result<Worker> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let (reply, answers) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("cachesched-attr".into())
            .spawn(move || {
                for job in inbox {
                    let answer = match job {
                        Job::Apply(mut notes) => {
                            classifier.apply_all(&notes);
                            notes.clear();
                            Answer::Applied(notes)
                        }
                        Job::Report => Answer::Report(classifier.counts.clone(), classifier.marks.clone()),
                    };
                    if reply.send(answer).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| Error::Simulation(format!("cannot start the attribution thread: {e}")))?;
        // Two more buffers: one being applied while another fills.
        let spare = vec![Vec::with_capacity(BATCH), Vec::with_capacity(BATCH)];
        Ok(Worker { jobs: Some(jobs), answers, handle: Some(handle), spare, out: 0 })
    }

    fn lost() -> Error {
        Error::Simulation("the attribution thread stopped".into())
    }

    /// The next answer, keeping returned buffers.
    fn receive(&mut self) -> Result<Option<(Vec<Classified>, Vec<u64>)>> {
        match self.answers.recv().map_err(|_| Self::lost())? {
            Answer::Applied(buffer) => {
                self.out -= 1;
                self.spare.push(buffer);
                Ok(None)
            }
            Answer::Report(counts, marks) => Ok(Some((counts, marks))),
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
        self.out += 1;
        self.send(Job::Apply(full))
    }

    /// The counts and marks once every note handed over is applied.
    fn report(&mut self) -> Result<(Vec<Classified>, Vec<u64>)> {
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
}

/// The machine's side of attribution: which levels are covered, the notes
/// not yet handed over, and where they are applied.
pub struct Attributor {
    cache_on: [bool; Level::COUNT],
    tlb_on: [bool; 2],
    notes: Vec<Note>,
    mode: Mode,
    /// Marks noted so far.
    marks: usize,
    /// Counts and marks as of the last [`Attributor::settle`].
    settled: (Vec<Classified>, Vec<u64>),
    /// Why the worker could not take a batch, reported at the next settle.
    failed: Option<Error>,
}

impl std::fmt::Debug for Attributor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let threaded = matches!(self.mode, Mode::Thread(_));
        f.debug_struct("Attributor").field("pending", &self.notes.len()).field("threaded", &threaded).finish()
    }
}

impl Attributor {
    /// Notes for `shadows`, applied on this thread.
    pub fn new(shadows: Attribution) -> Attributor {
        Attributor {
            cache_on: shadows.cache_on,
            tlb_on: shadows.tlb_on,
            notes: Vec::with_capacity(BATCH),
            mode: Mode::Here(Classifier { shadows: Box::new(shadows), counts: Vec::new(), marks: Vec::new() }),
            marks: 0,
            settled: Default::default(),
            failed: None,
        }
    }

    /// The same notes applied on a worker thread from now on.
    pub fn threaded(mut self) -> Result<Attributor> {
        if let Mode::Here(mut classifier) = self.mode {
            classifier.apply_all(&self.notes);
            self.notes.clear();
            self.mode = Mode::Thread(Worker::start(classifier)?);
        }
        Ok(self)
    }

    /// Whether cache `level` has shadows.
    #[inline(always)]
    pub fn covers(&self, level: Level) -> bool {
        self.cache_on[level as usize]
    }

    /// Which cache levels and TLB levels have shadows.
    pub fn coverage(&self) -> ([bool; Level::COUNT], [bool; 2]) {
        (self.cache_on, self.tlb_on)
    }

    /// Whether TLB level `i` has shadows.
    #[inline(always)]
    pub fn covers_tlb(&self, i: usize) -> bool {
        self.tlb_on[i]
    }

    /// Write `note` down; returns where, for [`Attributor::set_compulsory`].
    #[inline(always)]
    pub fn note(&mut self, note: Note) -> usize {
        self.notes.push(note);
        self.notes.len() - 1
    }

    /// Complete the miss noted at `at` with whether it was compulsory,
    /// known only after the levels below answered. Notes stay where they
    /// are until [`Attributor::pass`], which the machine calls between
    /// accesses.
    #[inline(always)]
    pub fn set_compulsory(&mut self, at: usize, compulsory: bool) {
        if let Some(Note::Miss { compulsory: c, .. }) = self.notes.get_mut(at) {
            *c = compulsory;
        }
    }

    /// Note a [`Note::Mark`] of `task`'s switch-induced misses at `level`,
    /// if `level` has shadows; returns its number, an index into the marks
    /// of [`Attributor::settle`].
    pub fn mark(&mut self, task: TaskId, level: Level) -> Option<usize> {
        self.covers(level).then(|| {
            self.note(Note::Mark { task, level });
            self.marks += 1;
            self.marks - 1
        })
    }

    /// Between accesses: hand a full batch over (or apply it here). A
    /// failure is kept for [`Attributor::settle`] to report.
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
        }
    }

    /// Every note applied: the counts per task, indexed by task id, and
    /// the marks.
    pub fn settle(&mut self) -> Result<&(Vec<Classified>, Vec<u64>)> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        self.hand_over()?;
        self.settled = match &mut self.mode {
            Mode::Here(classifier) => (classifier.counts.clone(), classifier.marks.clone()),
            Mode::Thread(worker) => worker.report()?,
        };
        Ok(&self.settled)
    }
}
