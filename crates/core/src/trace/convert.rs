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
