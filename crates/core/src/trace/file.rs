//! Trace files as workloads: `kind = "trace"`.
//!
//! One workload kind covers every trace format, so a config names a file and,
//! at most, a format; the format is normally recognised from the file's first
//! bytes. This file owns the parameters shared by all formats (which thread,
//! how many accesses to skip and keep), the gzip and xz decompression that
//! every streamed format gets, and the dispatch to each format's reader; the
//! readers themselves live in their own modules (`native` for `.cst`,
//! `lackey`, `champsim`, `din`).

use std::fs::File;
use std::io::{BufReader, Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::champsim::{self, ChampsimReader};
use super::din::{self, DinReader};
use super::lackey::{self, LackeyOptions, LackeyReader};
use super::native::{self, NativeReader};
use super::{Workload, WorkloadCtx};
use crate::error::{join_path, Error, Result, TracePos};
use crate::types::Access;

/// Which reader decodes a trace file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// Recognise the format from the file's first bytes.
    #[default]
    Auto,
    /// The native `.cst` format (see `docs/trace-formats.md`).
    Cst,
    /// valgrind lackey text (`--tool=lackey --trace-mem=yes`).
    Lackey,
    /// ChampSim `input_instr` records.
    Champsim,
    /// Dinero din text, traditional or extended.
    Din,
}

impl TraceFormat {
    /// Name used in configs and messages.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Auto => "auto",
            TraceFormat::Cst => "cst",
            TraceFormat::Lackey => "lackey",
            TraceFormat::Champsim => "champsim",
            TraceFormat::Din => "din",
        }
    }
}

/// How many leading bytes [`detect`] looks at.
pub const SNIFF_BYTES: usize = 512;

/// Recognisers tried in order by `format = "auto"`: each gets up to
/// [`SNIFF_BYTES`] leading bytes of the file (decompressed). Formats with a
/// magic number come first; then the text formats, whose first line must
/// parse; ChampSim, which has no magic, last.
const SNIFFERS: &[(TraceFormat, Sniffer)] = &[
    (TraceFormat::Cst, |head| head.starts_with(&native::MAGIC)),
    (TraceFormat::Lackey, lackey::sniff),
    (TraceFormat::Din, din::sniff),
    (TraceFormat::Champsim, champsim::sniff),
];

/// Compressions recognised by their magic bytes, for the streamed formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compression {
    Gzip,
    Xz,
}

impl Compression {
    fn detect(head: &[u8]) -> Option<Compression> {
        if head.starts_with(&[0x1f, 0x8b]) {
            Some(Compression::Gzip)
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
            Some(Compression::Xz)
        } else {
            None
        }
    }
}

/// Tells whether a file's leading bytes are in one format.
type Sniffer = fn(&[u8]) -> bool;

/// The format whose signature `head` (the file's first bytes) carries.
pub fn detect(head: &[u8]) -> Option<TraceFormat> {
    SNIFFERS.iter().find(|(_, sniff)| sniff(head)).map(|(format, _)| *format)
}

/// `kind = "trace"`: replay one thread's stream of a trace file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TraceParams {
    /// Path of the trace file (required); relative paths are resolved
    /// against the directory of the config that names them.
    pub path: String,
    /// File format; `auto` recognises it from the first bytes.
    pub format: TraceFormat,
    /// Which thread's stream to replay; may be left out when the trace holds
    /// only one.
    pub thread: Option<u32>,
    /// Accesses to skip at the start of the stream.
    pub skip: u64,
    /// Stop after this many accesses (after the skip); all if absent.
    pub limit: Option<u64>,
    /// lackey only: keep the `I` lines as instruction fetches.
    pub ifetch: bool,
    /// ChampSim only: bytes of each access (the format records none); 64
    /// if absent.
    pub access_bytes: Option<u16>,
}

impl TraceParams {
    /// Open the trace and position it after `skip` accesses.
    pub fn build(&self, ctx: &WorkloadCtx) -> Result<Box<dyn Workload>> {
        self.open(ctx).map(|(_, workload)| workload)
    }

    /// Like [`build`](Self::build), also saying which format was read.
    pub fn open(&self, ctx: &WorkloadCtx) -> Result<(TraceFormat, Box<dyn Workload>)> {
        if self.path.is_empty() {
            let loc = join_path(&ctx.loc, "params.path");
            return Err(Error::config(loc, "missing_field", "the path of the trace file is required"));
        }
        let path = resolve(&self.path, ctx.base_dir.as_deref());
        let name = path.display().to_string();
        let file = File::open(&path).map_err(|e| Error::io(&name, e))?;
        self.open_source(file, name, &ctx.loc)
    }

    /// Like [`open`](Self::open), reading `src` (named `name` in errors)
    /// instead of the file at `path`; `loc` is the workload's key path.
    pub fn open_source<R: Read + Seek + Send + 'static>(
        &self,
        mut src: R,
        name: String,
        loc: &str,
    ) -> Result<(TraceFormat, Box<dyn Workload>)> {
        let loc = |key: &str| join_path(loc, &format!("params.{key}"));
        if self.limit == Some(0) {
            return Err(Error::config(loc("limit"), "out_of_range", "limit must be at least 1 (or left out: all)"));
        }
        // Text traces are read front to back, so a pipe or a FIFO will do:
        // the bytes read to recognise the format are put back in front of
        // the rest, never sought back to.
        let raw = read_head(&mut src, &name)?;
        let native = matches!(self.format, TraceFormat::Cst)
            || self.format == TraceFormat::Auto && raw.starts_with(&native::MAGIC);
        let (format, inner) = if native {
            self.check_options(TraceFormat::Cst, &loc)?;
            if let Err(e) = src.seek(SeekFrom::Start(0)) {
                let message = format!(
                    "a .cst trace cannot be read from a pipe ({e}): its index needs seeking; \
                                       give the file itself, or convert a text trace on the fly"
                );
                return Err(Error::trace(&name, TracePos { offset: Some(0), ..TracePos::default() }, message));
            }
            (TraceFormat::Cst, self.open_cst(src, name.clone(), &loc)?)
        } else {
            let src = Box::new(Cursor::new(raw.clone()).chain(src));
            let (format, src) = stream(src, &raw, &name, self.format)?;
            self.check_options(format, &loc)?;
            (format, self.open_stream(format, src, name.clone(), &loc)?)
        };
        let inner = Primed::open(inner, &name, self.skip)?;
        Ok((
            format,
            match self.limit {
                Some(limit) => Box::new(Limited { inner, left: limit }),
                None => inner,
            },
        ))
    }

    /// Reject the options that do not apply to `format`.
    fn check_options(&self, format: TraceFormat, loc: &dyn Fn(&str) -> String) -> Result<()> {
        if self.ifetch && format != TraceFormat::Lackey {
            let message = format!("ifetch applies to lackey traces only; this trace is {}", format.name());
            return Err(Error::config(loc("ifetch"), "not_applicable", message));
        }
        match self.access_bytes {
            Some(_) if format != TraceFormat::Champsim => {
                let message = format!("access_bytes applies to ChampSim traces only; this trace is {}", format.name());
                Err(Error::config(loc("access_bytes"), "not_applicable", message))
            }
            Some(0) => Err(Error::config(loc("access_bytes"), "out_of_range", "access_bytes must be at least 1")),
            _ => Ok(()),
        }
    }

    /// A reader of a single-thread streamed format, after `skip` accesses.
    fn open_stream(
        &self,
        format: TraceFormat,
        src: Box<dyn Read + Send>,
        name: String,
        loc: &dyn Fn(&str) -> String,
    ) -> Result<Box<dyn Workload>> {
        if let Some(t) = self.thread.filter(|&t| t != 0) {
            let message =
                format!("{name} is a {} trace, which holds one thread, 0; there is no thread {t}", format.name());
            return Err(Error::config(loc("thread"), "unknown_thread", message));
        }
        let mut reader: Box<dyn Workload> = match format {
            TraceFormat::Lackey => {
                Box::new(LackeyReader::new(src, name.clone(), LackeyOptions { ifetch: self.ifetch }))
            }
            TraceFormat::Champsim => Box::new(ChampsimReader::new(
                src,
                name.clone(),
                self.access_bytes.unwrap_or(champsim::DEFAULT_ACCESS_BYTES),
            )),
            TraceFormat::Din => Box::new(DinReader::new(src, name.clone())),
            TraceFormat::Cst | TraceFormat::Auto => unreachable!("{} is not a streamed format", format.name()),
        };
        let skipped = discard(reader.as_mut(), self.skip)?;
        if skipped < self.skip {
            return Err(Error::config(
                loc("skip"),
                "out_of_range",
                format!("skip = {} is past the end of {name}, which has {skipped} accesses", self.skip),
            ));
        }
        Ok(reader)
    }

    fn open_cst<R: Read + Seek + Send + 'static>(
        &self,
        mut file: R,
        name: String,
        loc: &dyn Fn(&str) -> String,
    ) -> Result<Box<dyn Workload>> {
        let (header, _) = native::read_header(&mut file, &name)?;
        let threads = header.threads.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ");
        let thread = match self.thread {
            Some(t) if header.threads.contains(&t) => t,
            Some(t) => {
                return Err(Error::config(
                    loc("thread"),
                    "unknown_thread",
                    format!("{name} has no thread {t}; its threads are {threads}"),
                ))
            }
            None if header.threads.len() == 1 => header.threads[0],
            None => {
                return Err(Error::config(
                    loc("thread"),
                    "thread_required",
                    format!(
                        "{name} holds {} threads ({threads}); set thread to choose one{}",
                        header.threads.len(),
                        header.windows_hint()
                    ),
                ))
            }
        };
        let mut reader = NativeReader::new(file, name.clone(), Some(thread))?;
        if let Some(len) = reader.thread_len() {
            if self.skip > len {
                return Err(Error::config(
                    loc("skip"),
                    "out_of_range",
                    format!(
                        "skip = {} is past the end of thread {thread} of {name}, which has {len} accesses",
                        self.skip
                    ),
                ));
            }
        }
        if self.skip > 0 {
            reader.seek(self.skip)?;
        }
        Ok(Box::new(reader))
    }
}

/// The trace files a workload reads: the `path` of every `kind = "trace"`
/// table in `workload` (its raw form, nested workloads included), resolved
/// against `base` as the workload resolves them.
pub fn inputs(workload: &serde_json::Value, base: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![workload];
    while let Some(v) = stack.pop() {
        match v {
            serde_json::Value::Object(map) => {
                if map.get("kind").and_then(|k| k.as_str()) == Some("trace") {
                    if let Some(path) = map.get("params").and_then(|p| p.get("path")).and_then(|p| p.as_str()) {
                        out.push(resolve(path, base));
                    }
                }
                stack.extend(map.values());
            }
            serde_json::Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    out
}

/// `path` as given if absolute or if there is no base directory, else
/// joined to `base`.
fn resolve(path: &str, base: Option<&Path>) -> PathBuf {
    let p = Path::new(path);
    match base {
        Some(base) if p.is_relative() => base.join(p),
        _ => p.to_path_buf(),
    }
}

/// Up to [`SNIFF_BYTES`] leading bytes of `src`.
fn read_head(src: &mut dyn Read, name: &str) -> Result<Vec<u8>> {
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    src.take(SNIFF_BYTES as u64).read_to_end(&mut head).map_err(|e| {
        let at = TracePos { offset: Some(head.len() as u64), ..TracePos::default() };
        Error::trace(name, at, format!("read failed: {e}"))
    })?;
    Ok(head)
}

/// `src` (whose first bytes are `raw`) as a stream, decompressed if it is
/// gzip or xz, and the format it holds: `format`, or if that is `auto`,
/// the one recognised from the decompressed first bytes.
fn stream(
    src: Box<dyn Read + Send>,
    raw: &[u8],
    name: &str,
    format: TraceFormat,
) -> Result<(TraceFormat, Box<dyn Read + Send>)> {
    let buffered = BufReader::with_capacity(1 << 16, src);
    let compression = Compression::detect(raw);
    let mut src: Box<dyn Read + Send> = match compression {
        Some(Compression::Gzip) => Box::new(flate2::read::MultiGzDecoder::new(buffered)),
        Some(Compression::Xz) => Box::new(xz2::read::XzDecoder::new_multi_decoder(buffered)),
        None => Box::new(buffered),
    };
    let head = read_head(&mut src, name)?;
    let at_start = TracePos { offset: Some(0), ..TracePos::default() };
    let format = match format {
        TraceFormat::Auto => detect(&head).ok_or_else(|| {
            let known = SNIFFERS.iter().map(|(f, _)| f.name()).collect::<Vec<_>>().join(", ");
            Error::trace(
                name,
                at_start.clone(),
                format!("unrecognised trace format (known: {known}); set format to force one"),
            )
        })?,
        other => other,
    };
    if format == TraceFormat::Cst {
        let message = "a compressed .cst file cannot be read (the format needs seeking); decompress it first";
        return Err(Error::trace(name, at_start, message));
    }
    Ok((format, Box::new(Cursor::new(head).chain(src))))
}

/// Read and drop up to `n` accesses of `workload`; returns how many there were.
fn discard(workload: &mut dyn Workload, n: u64) -> Result<u64> {
    let mut buf = vec![Access::default(); 4096];
    let mut done = 0;
    while done < n {
        let want = buf.len().min((n - done).min(usize::MAX as u64) as usize);
        let got = workload.fill(&mut buf[..want])?;
        if got == 0 {
            break;
        }
        done += got as u64;
    }
    Ok(done)
}

/// A stream whose first access was read when it was opened: a trace that
/// holds none is an error then, not a run of nothing.
struct Primed {
    first: Option<Access>,
    inner: Box<dyn Workload>,
}

impl Primed {
    fn open(mut inner: Box<dyn Workload>, name: &str, skip: u64) -> Result<Box<dyn Workload>> {
        let mut one = [Access::default()];
        if inner.fill(&mut one)? == 0 {
            let after = if skip > 0 { format!(" after the {skip} skipped") } else { String::new() };
            let at = TracePos { offset: Some(0), ..TracePos::default() };
            return Err(Error::trace(name, at, format!("the trace holds no accesses{after}")));
        }
        Ok(Box::new(Primed { first: Some(one[0]), inner }))
    }
}

impl Workload for Primed {
    fn fill(&mut self, buf: &mut [Access]) -> Result<usize> {
        match self.first.take() {
            Some(a) if !buf.is_empty() => {
                buf[0] = a;
                Ok(1)
            }
            first => {
                self.first = first;
                self.inner.fill(buf)
            }
        }
    }

    fn len_hint(&self) -> Option<u64> {
        self.inner.len_hint().map(|n| n + u64::from(self.first.is_some()))
    }
}

/// Passes on at most `left` more accesses of `inner`.
struct Limited {
    inner: Box<dyn Workload>,
    left: u64,
}

impl Workload for Limited {
    fn fill(&mut self, buf: &mut [Access]) -> Result<usize> {
        if self.left == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let n = self.inner.fill(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }

    fn len_hint(&self) -> Option<u64> {
        self.inner.len_hint().map(|n| n.min(self.left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::PluginConfig;
    use crate::trace::native::{NativeWriter, TraceHeader, WriterOptions};
    use crate::trace::{collect, WorkloadConfig};
    use crate::types::AccessKind;

    /// A scratch directory removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(tag: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!("cst-file-{tag}-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn stream(thread: u32, n: u64) -> Vec<Access> {
        (0..n)
            .map(|i| Access {
                addr: crate::types::VirtAddr(((thread as u64) << 32) + i * 64),
                pc: crate::types::VirtAddr(0x400 + thread as u64),
                instrs: 1 + (i % 3) as u32,
                size: 8,
                kind: AccessKind::Load,
            })
            .collect()
    }

    /// Write threads `threads` with `n` accesses each to `dir/file`.
    fn write(dir: &Path, file: &str, threads: &[u32], n: u64) {
        let header = TraceHeader::new("test").with_threads(threads.to_vec());
        let options = WriterOptions { block_records: 100, level: 1 };
        let mut w = NativeWriter::create_with(dir.join(file), &header, &[], options).unwrap();
        for &t in threads {
            w.write_all_thread(t, &stream(t, n)).unwrap();
        }
        w.finish().unwrap();
    }

    fn ctx(base: &Path) -> WorkloadCtx {
        WorkloadCtx {
            seed: 1,
            component: "task0".into(),
            loc: "tasks[0].workload".into(),
            base_dir: Some(base.to_path_buf()),
            thread: Default::default(),
        }
    }

    fn build(base: &Path, params: serde_json::Value) -> Result<Box<dyn Workload>> {
        let raw: PluginConfig = serde_json::from_value(serde_json::json!({"kind": "trace", "params": params})).unwrap();
        WorkloadConfig::parse(&raw, "tasks[0].workload")?.build(&ctx(base))
    }

    fn fails(base: &Path, params: serde_json::Value) -> Error {
        match build(base, params) {
            Ok(_) => panic!("the workload was built"),
            Err(e) => e,
        }
    }

    fn config_loc(err: &Error) -> (String, &'static str) {
        match err {
            Error::Config(issues) => (issues[0].loc.clone(), issues[0].code),
            other => panic!("expected a config error, got {other}"),
        }
    }

    #[test]
    fn replays_a_relative_path_with_skip_and_limit() {
        let dir = Scratch::new("skip");
        write(&dir.0, "one.cst", &[0], 1000);
        let all = stream(0, 1000);
        let mut w = build(&dir.0, serde_json::json!({"path": "one.cst"})).unwrap();
        assert_eq!(w.len_hint(), Some(1000));
        assert_eq!(collect(w.as_mut()).unwrap(), all);

        let mut w = build(&dir.0, serde_json::json!({"path": "one.cst", "skip": 250, "limit": 300})).unwrap();
        assert_eq!(w.len_hint(), Some(300));
        assert_eq!(collect(w.as_mut()).unwrap(), all[250..550]);

        // A limit past the end just ends with the stream; nothing to replay
        // (a skip to the end, a limit of 0) is an error, not an empty run.
        let mut w = build(&dir.0, serde_json::json!({"path": "one.cst", "skip": 990, "limit": 50})).unwrap();
        assert_eq!(collect(w.as_mut()).unwrap(), all[990..]);
        let err = fails(&dir.0, serde_json::json!({"path": "one.cst", "skip": 1000}));
        assert!(err.to_string().contains("holds no accesses after the 1000 skipped"), "{err}");
        let err = fails(&dir.0, serde_json::json!({"path": "one.cst", "limit": 0}));
        assert_eq!(config_loc(&err), ("tasks[0].workload.params.limit".into(), "out_of_range"));

        let err = fails(&dir.0, serde_json::json!({"path": "one.cst", "skip": 1001}));
        assert_eq!(config_loc(&err), ("tasks[0].workload.params.skip".into(), "out_of_range"));
    }

    #[test]
    fn absolute_paths_and_explicit_format_work() {
        let dir = Scratch::new("abs");
        write(&dir.0, "abs.cst", &[0], 10);
        let path = dir.0.join("abs.cst").display().to_string();
        let elsewhere = std::env::temp_dir();
        let mut w = build(&elsewhere, serde_json::json!({"path": path, "format": "cst"})).unwrap();
        assert_eq!(collect(w.as_mut()).unwrap(), stream(0, 10));
    }

    #[test]
    fn thread_selection() {
        let dir = Scratch::new("threads");
        write(&dir.0, "multi.cst", &[2, 5, 9], 120);
        let mut w = build(&dir.0, serde_json::json!({"path": "multi.cst", "thread": 5})).unwrap();
        assert_eq!(collect(w.as_mut()).unwrap(), stream(5, 120));

        let err = fails(&dir.0, serde_json::json!({"path": "multi.cst"}));
        assert_eq!(config_loc(&err), ("tasks[0].workload.params.thread".into(), "thread_required"));
        assert!(err.to_string().contains("2, 5, 9"), "{err}");

        let err = fails(&dir.0, serde_json::json!({"path": "multi.cst", "thread": 3}));
        assert_eq!(config_loc(&err), ("tasks[0].workload.params.thread".into(), "unknown_thread"));
        assert!(err.to_string().contains("2, 5, 9"), "{err}");
    }

    #[test]
    fn missing_path_and_missing_file_are_reported() {
        let dir = Scratch::new("missing");
        let err = fails(&dir.0, serde_json::json!({}));
        assert_eq!(config_loc(&err), ("tasks[0].workload.params.path".into(), "missing_field"));
        let err = fails(&dir.0, serde_json::Value::Null);
        assert_eq!(config_loc(&err).0, "tasks[0].workload.params.path");

        let err = fails(&dir.0, serde_json::json!({"path": "nope.cst"}));
        assert!(matches!(err, Error::Io { .. }), "{err}");
        let shown = err.to_string();
        assert!(shown.contains("nope.cst") && shown.contains(&dir.0.display().to_string()), "{shown}");
    }

    #[test]
    fn unknown_keys_and_formats_are_rejected() {
        let dir = Scratch::new("keys");
        let err = fails(&dir.0, serde_json::json!({"path": "a.cst", "skp": 3}));
        assert_eq!(config_loc(&err), ("tasks[0].workload.params.skp".into(), "unknown_field"));
        let err = fails(&dir.0, serde_json::json!({"path": "a.cst", "format": "pin"}));
        assert_eq!(config_loc(&err), ("tasks[0].workload.params.format".into(), "unknown_variant"));
    }

    #[test]
    fn unrecognised_content_is_a_trace_error() {
        let dir = Scratch::new("garbage");
        std::fs::write(dir.0.join("text.txt"), "hello, world\n").unwrap();
        let err = fails(&dir.0, serde_json::json!({"path": "text.txt"}));
        assert!(matches!(err, Error::Trace { .. }), "{err}");
        assert!(err.to_string().contains("unrecognised trace format"), "{err}");
        // Forcing the format gives the reader's own complaint.
        let err = fails(&dir.0, serde_json::json!({"path": "text.txt", "format": "cst"}));
        assert!(err.to_string().contains("not a .cst trace"), "{err}");
    }

    #[test]
    fn params_round_trip_through_raw_config() {
        let raw: PluginConfig = serde_json::from_value(serde_json::json!({
            "kind": "trace",
            "params": {"path": "x.cst", "thread": 3, "skip": 10, "limit": 20, "format": "cst"}
        }))
        .unwrap();
        let parsed = WorkloadConfig::parse(&raw, "w").unwrap();
        assert_eq!(WorkloadConfig::parse(&parsed.to_raw(), "w").unwrap(), parsed);
        let WorkloadConfig::Trace(p) = parsed else { panic!("expected a trace config") };
        assert_eq!(
            p,
            TraceParams {
                path: "x.cst".into(),
                format: TraceFormat::Cst,
                thread: Some(3),
                skip: 10,
                limit: Some(20),
                ..TraceParams::default()
            }
        );
    }

    const LACKEY: &str = "==9== Lackey\nI  0400,3\n L 1000,8\nI  0403,2\n S 1008,8\n M 1010,4\n";

    /// `text` compressed with gzip and with xz.
    fn compressed(text: &[u8]) -> [(&'static str, Vec<u8>); 2] {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(text).unwrap();
        let mut xz = xz2::write::XzEncoder::new(Vec::new(), 1);
        xz.write_all(text).unwrap();
        [("gz", gz.finish().unwrap()), ("xz", xz.finish().unwrap())]
    }

    #[test]
    fn streamed_formats_are_recognised_raw_and_compressed_with_skip_and_limit() {
        let dir = Scratch::new("streamed");
        std::fs::write(dir.0.join("t.lackey"), LACKEY).unwrap();
        let all = collect(build(&dir.0, serde_json::json!({"path": "t.lackey"})).unwrap().as_mut()).unwrap();
        assert_eq!(all.len(), 4);
        for (ext, bytes) in compressed(LACKEY.as_bytes()) {
            let file = format!("t.lackey.{ext}");
            std::fs::write(dir.0.join(&file), bytes).unwrap();
            let mut w = build(&dir.0, serde_json::json!({"path": file})).unwrap();
            assert_eq!(collect(w.as_mut()).unwrap(), all, "{ext}");
            let mut w = build(&dir.0, serde_json::json!({"path": file, "format": "lackey", "thread": 0})).unwrap();
            assert_eq!(collect(w.as_mut()).unwrap(), all, "{ext}");
        }
        let mut w = build(&dir.0, serde_json::json!({"path": "t.lackey", "skip": 1, "limit": 2})).unwrap();
        assert_eq!(collect(w.as_mut()).unwrap(), all[1..3]);
        let err = fails(&dir.0, serde_json::json!({"path": "t.lackey", "skip": 4}));
        assert!(err.to_string().contains("holds no accesses after the 4 skipped"), "{err}");
        let mut w = build(&dir.0, serde_json::json!({"path": "t.lackey", "ifetch": true})).unwrap();
        assert_eq!(collect(w.as_mut()).unwrap().len(), 6);
    }

    #[test]
    fn streamed_formats_reject_what_does_not_apply() {
        let dir = Scratch::new("streamed-errors");
        std::fs::write(dir.0.join("t.lackey"), LACKEY).unwrap();
        std::fs::write(dir.0.join("t.din"), "0 100\n").unwrap();
        let err = fails(&dir.0, serde_json::json!({"path": "t.lackey", "skip": 5}));
        assert_eq!(config_loc(&err), ("tasks[0].workload.params.skip".into(), "out_of_range"));
        assert!(err.to_string().contains("which has 4 accesses"), "{err}");
        let err = fails(&dir.0, serde_json::json!({"path": "t.lackey", "thread": 1}));
        assert_eq!(config_loc(&err), ("tasks[0].workload.params.thread".into(), "unknown_thread"));
        assert!(err.to_string().contains("lackey trace, which holds one thread, 0"), "{err}");
        let err = fails(&dir.0, serde_json::json!({"path": "t.din", "ifetch": true}));
        assert_eq!(config_loc(&err), ("tasks[0].workload.params.ifetch".into(), "not_applicable"));
        let err = fails(&dir.0, serde_json::json!({"path": "t.din", "access_bytes": 8}));
        assert_eq!(config_loc(&err), ("tasks[0].workload.params.access_bytes".into(), "not_applicable"));
        let err = fails(&dir.0, serde_json::json!({"path": "t.din", "format": "champsim", "access_bytes": 0}));
        assert_eq!(config_loc(&err), ("tasks[0].workload.params.access_bytes".into(), "out_of_range"));
        // A forced format reads the file its way and reports where it fails.
        let err = fails(&dir.0, serde_json::json!({"path": "t.lackey", "format": "din"}));
        assert!(err.to_string().contains("t.lackey: line 1: byte offset 0"), "{err}");
        // A compressed .cst is named as such.
        write(&dir.0, "n.cst", &[0], 10);
        let [(_, gz), _] = compressed(&std::fs::read(dir.0.join("n.cst")).unwrap());
        std::fs::write(dir.0.join("n.cst.gz"), gz).unwrap();
        let err = fails(&dir.0, serde_json::json!({"path": "n.cst.gz"}));
        assert!(err.to_string().contains("compressed .cst"), "{err}");
    }

    #[test]
    fn a_truncated_compressed_stream_is_an_error_with_an_offset() {
        let dir = Scratch::new("truncated");
        let text = LACKEY.repeat(2000);
        for (ext, mut bytes) in compressed(text.as_bytes()) {
            bytes.truncate(bytes.len() / 2);
            let file = format!("t.lackey.{ext}");
            std::fs::write(dir.0.join(&file), bytes).unwrap();
            let mut w = build(&dir.0, serde_json::json!({"path": file})).unwrap();
            let err = collect(w.as_mut()).unwrap_err();
            assert!(matches!(&err, Error::Trace { pos, .. } if pos.offset.is_some() && pos.line.is_some()), "{err}");
            assert!(err.to_string().contains("read failed"), "{err}");
        }
    }

    /// The path of a pipe that a thread fills with `bytes`, as a shell's
    /// `producer | cachesched ... /dev/stdin` would give it.
    fn piped(bytes: Vec<u8>) -> (String, std::thread::JoinHandle<()>, std::io::PipeReader) {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let (reader, mut writer) = std::io::pipe().unwrap();
        let path = format!("/proc/self/fd/{}", reader.as_raw_fd());
        let feeder = std::thread::spawn(move || {
            let _ = writer.write_all(&bytes);
        });
        (path, feeder, reader)
    }

    #[test]
    fn text_traces_are_read_from_a_pipe_without_seeking() {
        let dir = Scratch::new("pipe");
        std::fs::write(dir.0.join("t.lackey"), LACKEY).unwrap();
        let want = collect(build(&dir.0, serde_json::json!({"path": "t.lackey"})).unwrap().as_mut()).unwrap();
        let [(_, gz), (_, xz)] = compressed(LACKEY.as_bytes());
        for (bytes, format) in
            [(LACKEY.as_bytes().to_vec(), "auto"), (LACKEY.as_bytes().to_vec(), "lackey"), (gz, "auto"), (xz, "lackey")]
        {
            let (path, feeder, _keep) = piped(bytes);
            let mut w = build(&dir.0, serde_json::json!({"path": path, "format": format, "skip": 1})).unwrap();
            assert_eq!(collect(w.as_mut()).unwrap(), want[1..], "{format}");
            feeder.join().unwrap();
        }
        // A .cst needs its index: the error says why, and where.
        write(&dir.0, "n.cst", &[0], 10);
        let (path, feeder, keep) = piped(std::fs::read(dir.0.join("n.cst")).unwrap());
        let err = fails(&dir.0, serde_json::json!({"path": path}));
        assert!(matches!(&err, Error::Trace { pos, .. } if pos.offset == Some(0)), "{err}");
        assert!(err.to_string().contains("cannot be read from a pipe"), "{err}");
        drop(keep);
        feeder.join().unwrap();
    }

    #[test]
    fn a_trace_without_accesses_is_an_error_at_open() {
        let dir = Scratch::new("empty");
        std::fs::write(dir.0.join("empty"), b"").unwrap();
        std::fs::write(dir.0.join("pids.lackey"), "==9== Lackey\n==9== done\n").unwrap();
        let [(_, gz), _] = compressed(b"");
        std::fs::write(dir.0.join("empty.gz"), gz).unwrap();
        for (file, format) in
            [("empty", "din"), ("empty", "lackey"), ("empty", "champsim"), ("empty.gz", "din"), ("pids.lackey", "auto")]
        {
            let err = fails(&dir.0, serde_json::json!({"path": file, "format": format}));
            assert!(matches!(&err, Error::Trace { pos, .. } if pos.offset == Some(0)), "{err}");
            assert!(err.to_string().contains("the trace holds no accesses"), "{file} as {format}: {err}");
        }
        write(&dir.0, "none.cst", &[0], 0);
        let err = fails(&dir.0, serde_json::json!({"path": "none.cst"}));
        assert!(err.to_string().contains("the trace holds no accesses"), "{err}");
    }

    #[test]
    fn detect_recognises_each_format() {
        assert_eq!(detect(b"CSTRACE\0rest"), Some(TraceFormat::Cst));
        assert_eq!(detect(b"CSTRAC"), None);
        assert_eq!(detect(b""), None);
        assert_eq!(detect(b"==1== Lackey\nI  0400,3\n S 1000,8\n"), Some(TraceFormat::Lackey));
        assert_eq!(detect(b"2 0\n0 1000\n"), Some(TraceFormat::Din));
        assert_eq!(detect(b"r 1000 4\n"), Some(TraceFormat::Din));
        let mut record = [0u8; 64];
        record[0] = 0x40;
        assert_eq!(detect(&record), Some(TraceFormat::Champsim));
        assert_eq!(detect(b"hello, world\n"), None);
    }
}
