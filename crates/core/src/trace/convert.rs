//! Streaming any workload into a `.cst` file: `cachesched trace convert`
//! and `cachesched record`.
//!
//! Recording must keep up with valgrind, and converting handles traces of
//! billions of accesses, so the copy runs in batches through one buffer,
//! with the warm-up skipped by instruction count (as architects skip
//! warm-up) and the length capped by access count.

use std::io::Read;
use std::time::Duration;

use super::native::{NativeWriter, TraceSummary};
use super::Workload;
use crate::error::Result;
use crate::types::Access;
use crate::util::staged::Output;

/// What to copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CopyOptions {
    /// Drop the accesses of the first this many instructions.
    pub skip_instructions: u64,
    /// Stop after writing this many accesses; all if absent.
    pub limit: Option<u64>,
}

/// What a copy did.
#[derive(Debug, Clone, PartialEq)]
pub struct Copied {
    /// The finished file's totals.
    pub summary: TraceSummary,
    /// Whether the copy stopped at the limit (the source may have had more).
    pub limit_reached: bool,
}

/// Reads a pipe whose writer makes one tiny write per line, as valgrind
/// does (one `write` per lackey line): after a short read it waits a
/// moment, so that the next read finds many lines instead of waking up for
/// every one. Waking the reader for each line made recording four times
/// slower than lackey alone; see docs/performance.md.
pub struct PipeReader<R> {
    inner: R,
}

/// A read shorter than this is followed by a [`PIPE_NAP`].
const SHORT_READ: usize = 16 << 10;
/// How long to let a pipe fill after a short read (lackey writes about
/// 25 MB/s, so a millisecond is some 25 KB).
const PIPE_NAP: Duration = Duration::from_millis(4);

impl<R: Read> PipeReader<R> {
    /// A patient reader of `inner`.
    pub fn new(inner: R) -> PipeReader<R> {
        PipeReader { inner }
    }
}

impl<R: Read> Read for PipeReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n > 0 && n < SHORT_READ.min(buf.len()) {
            std::thread::sleep(PIPE_NAP);
        }
        Ok(n)
    }
}

/// Accesses between two calls of the progress callback.
const PROGRESS_EVERY: u64 = 1 << 20;

/// Copy `src` into `writer` (thread 0) and finish the file. `progress` gets
/// the number of accesses read from `src` so far, about every million; an
/// `Err` from it stops the copy.
pub fn copy<W: Output>(
    src: &mut dyn Workload,
    mut writer: NativeWriter<W>,
    options: CopyOptions,
    progress: &mut dyn FnMut(u64) -> Result<()>,
) -> Result<Copied> {
    let mut buf = vec![Access::default(); 1 << 16];
    let mut left = options.limit.unwrap_or(u64::MAX);
    let skip = options.skip_instructions;
    // Instructions read while skipping, and whether still skipping: an
    // access is dropped when the instruction that made it is among the first
    // `skip` (later references of one instruction carry 0 instructions).
    let (mut consumed, mut skipping) = (0u64, skip > 0);
    let mut read = 0u64;
    while left > 0 {
        let n = src.fill(&mut buf)?;
        if n == 0 {
            break;
        }
        let mut from = 0;
        while skipping && from < n {
            let through = consumed + u64::from(buf[from].instrs);
            if through > skip {
                // The first kept access counts only the instructions after the skip.
                buf[from].instrs = (through - skip) as u32;
                skipping = false;
            } else {
                consumed = through;
                from += 1;
            }
        }
        let keep = ((n - from) as u64).min(left) as usize;
        writer.write_all_thread(0, &buf[from..from + keep])?;
        left -= keep as u64;
        if (read + n as u64) / PROGRESS_EVERY > read / PROGRESS_EVERY {
            progress(read + n as u64)?;
        }
        read += n as u64;
    }
    Ok(Copied { summary: writer.finish()?, limit_reached: left == 0 })
}

/// A stretch of a run to keep as one thread of a trace: the instructions
/// `[from, end)`, of which `[from, start)` warm the caches up before the
/// measured `[start, end)` (a SimPoint window, counted from the run's first
/// instruction).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub from: u64,
    pub start: u64,
    pub end: u64,
}

/// What [`copy_windows`] did: the finished file's totals (a thread per
/// window), per window the accesses of its warm-up, and whether the source
/// went past the last window (it may then be stopped).
#[derive(Debug, Clone, PartialEq)]
pub struct Windowed {
    pub summary: TraceSummary,
    pub warmup_accesses: Vec<u64>,
    pub past_the_end: bool,
}

/// Copy the accesses of `src` that fall in each of `windows` into thread
/// `i` of `writer` for window `i` (an access in two windows goes to both),
/// and finish the file. An access belongs to the instruction that made it;
/// a window's first access counts only the instructions from the window's
/// `from`. `progress(done, total)` is called now and then with the
/// instructions read and the last window's end: most of a run between
/// windows writes nothing, so accesses would not show the way.
pub fn copy_windows<W: Output>(
    src: &mut dyn Workload,
    mut writer: NativeWriter<W>,
    windows: &[Window],
    progress: &mut dyn FnMut(u64, u64) -> Result<()>,
) -> Result<Windowed> {
    let last = windows.iter().map(|w| w.end).max().unwrap_or(0);
    let mut buf = vec![Access::default(); 1 << 16];
    let mut kept: Vec<Vec<Access>> = vec![Vec::new(); windows.len()];
    let mut warmup_accesses = vec![0u64; windows.len()];
    // Instructions up to and including the current access's.
    let (mut through, mut read, mut past_the_end) = (0u64, 0u64, false);
    while !past_the_end {
        let n = src.fill(&mut buf)?;
        if n == 0 {
            break;
        }
        for a in &buf[..n] {
            through += u64::from(a.instrs);
            let at = through.saturating_sub(1);
            if at >= last {
                past_the_end = true;
                break;
            }
            for (i, w) in windows.iter().enumerate().filter(|(_, w)| (w.from..w.end).contains(&at)) {
                let instrs = u64::from(a.instrs).min(at + 1 - w.from) as u32;
                kept[i].push(Access { instrs, ..*a });
                warmup_accesses[i] += (at < w.start) as u64;
            }
        }
        for (i, accesses) in kept.iter_mut().enumerate() {
            writer.write_all_thread(i as u32, accesses)?;
            accesses.clear();
        }
        if (read + n as u64) / PROGRESS_EVERY > read / PROGRESS_EVERY {
            progress(through.min(last), last)?;
        }
        read += n as u64;
    }
    Ok(Windowed { summary: writer.finish()?, warmup_accesses, past_the_end })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::native::{NativeReader, TraceHeader, WriterOptions};
    use crate::trace::{collect, VecWorkload};
    use crate::types::AccessKind;

    fn copied(accesses: &[Access], options: CopyOptions) -> (Vec<Access>, bool) {
        let mut bytes = Vec::new();
        let writer = NativeWriter::new(&mut bytes, "m", &TraceHeader::new("t"), WriterOptions::default()).unwrap();
        let outcome = copy(&mut VecWorkload::new(accesses.to_vec()), writer, options, &mut |_| Ok(())).unwrap();
        let back = collect(&mut NativeReader::new(std::io::Cursor::new(bytes), "m", None).unwrap()).unwrap();
        assert_eq!(outcome.summary.accesses, back.len() as u64);
        (back, outcome.limit_reached)
    }

    /// Per window, (index, instructions) of each access it kept.
    type Kept = Vec<Vec<(u64, u32)>>;

    /// The windows' threads of a copy of accesses of instruction counts
    /// `instrs` (addresses their index), the warm-up counts, and whether the
    /// copy went past the last window.
    fn windowed(instrs: &[u32], windows: &[Window]) -> (Kept, Vec<u64>, bool) {
        let accesses: Vec<Access> = instrs
            .iter()
            .enumerate()
            .map(|(i, &n)| Access { addr: crate::types::VirtAddr(i as u64 * 8), instrs: n, ..Access::default() })
            .collect();
        let threads: Vec<u32> = (0..windows.len() as u32).collect();
        let mut bytes = Vec::new();
        let header = TraceHeader::new("t").with_threads(threads.clone());
        let writer = NativeWriter::new(&mut bytes, "m", &header, WriterOptions::default()).unwrap();
        let out = copy_windows(&mut VecWorkload::new(accesses), writer, windows, &mut |_, _| Ok(())).unwrap();
        let kept = threads
            .iter()
            .map(|&t| {
                let mut r = NativeReader::new(std::io::Cursor::new(bytes.clone()), "m", Some(t)).unwrap();
                collect(&mut r).unwrap().iter().map(|a| (a.addr.0 / 8, a.instrs)).collect()
            })
            .collect();
        (kept, out.warmup_accesses, out.past_the_end)
    }

    #[test]
    fn window_progress_counts_instructions_towards_the_last_windows_end() {
        // Three instructions an access, the last window ending at 9M.
        let n = 4 * PROGRESS_EVERY;
        let accesses = vec![Access { instrs: 3, ..Access::default() }; n as usize];
        let windows =
            [Window { from: 0, start: 1, end: 2 }, Window { from: 8_000_000, start: 8_500_000, end: 9_000_000 }];
        let mut bytes = Vec::new();
        let header = TraceHeader::new("t").with_threads(vec![0, 1]);
        let writer = NativeWriter::new(&mut bytes, "m", &header, WriterOptions::default()).unwrap();
        let mut seen = Vec::new();
        copy_windows(&mut VecWorkload::new(accesses), writer, &windows, &mut |done, total| {
            seen.push((done, total));
            Ok(())
        })
        .unwrap();
        // 3M accesses read before the end: a report after each 2^20, of
        // the instructions read by then.
        assert_eq!(seen, [(3 << 20, 9_000_000), (6 << 20, 9_000_000)]);
    }

    #[test]
    fn windows_keep_the_accesses_of_their_instructions_each_on_its_thread() {
        // Instructions: access 0 is instruction 0, 1 is 1-2 (made by 2), 2
        // also 2, 3 is 3-5 (made by 5), 4 is 6, 5 is 7-9 (made by 9).
        let instrs = [1, 2, 0, 3, 1, 3];
        let w = |from, start, end| Window { from, start, end };
        // One window over instructions 2..7, warm-up 2..4: accesses 1
        // (instruction 2: counts 1 of its 2), 2, 3 (instruction 5, measured),
        // 4 (6).
        let (kept, warm, past) = windowed(&instrs, &[w(2, 4, 7)]);
        assert_eq!(kept, [vec![(1, 1), (2, 0), (3, 3), (4, 1)]]);
        assert_eq!((warm, past), (vec![2], true));
        // Two overlapping windows: each gets its accesses, counted from its own start.
        let (kept, warm, _) = windowed(&instrs, &[w(0, 1, 3), w(2, 6, 10)]);
        assert_eq!(kept, [vec![(0, 1), (1, 2), (2, 0)], vec![(1, 1), (2, 0), (3, 3), (4, 1), (5, 3)]]);
        assert_eq!(warm, [1, 3]);
        // A window past the end of the stream keeps what there is.
        let (kept, _, past) = windowed(&instrs, &[w(8, 8, 100)]);
        assert_eq!((kept, past), (vec![vec![(5, 2)]], false));
    }

    #[test]
    fn skips_whole_instructions_and_keeps_the_count_after_them() {
        let instrs = [3u32, 0, 2, 4, 0, 1];
        let accesses: Vec<Access> = instrs
            .iter()
            .enumerate()
            .map(|(i, &k)| Access { instrs: k, kind: AccessKind::Store, ..Access::load(i as u64 * 8, 8) })
            .collect();
        let (all, limited) = copied(&accesses, CopyOptions::default());
        assert_eq!((all, limited), (accesses.clone(), false));
        // Instructions 1..=3 made accesses 0 and 1; 4 and 5 made access 2.
        let (kept, _) = copied(&accesses, CopyOptions { skip_instructions: 3, limit: None });
        assert_eq!(kept, accesses[2..]);
        // Skipping 6 leaves instruction 7..=9 of access 3's four: it counts 3.
        let (kept, _) = copied(&accesses, CopyOptions { skip_instructions: 6, limit: None });
        assert_eq!(kept[0], Access { instrs: 3, ..accesses[3] });
        assert_eq!(kept[1..], accesses[4..]);
        let (kept, limited) = copied(&accesses, CopyOptions { skip_instructions: 3, limit: Some(2) });
        assert_eq!((kept, limited), (accesses[2..4].to_vec(), true));
        let (kept, _) = copied(&accesses, CopyOptions { skip_instructions: 100, limit: None });
        assert_eq!(kept, vec![]);
    }
}
