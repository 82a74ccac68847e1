//! Trace files as workloads: `kind = "trace"`.
//!
//! One workload kind covers every trace format, so a config names a file and,
//! at most, a format; the format is normally recognised from the file's first
//! bytes. This file owns the parameters shared by all formats (which thread,
//! how many accesses to skip and keep) and the dispatch to each format's
//! reader; the readers themselves live in their own modules (`native` for
//! `.cst`; lackey, ChampSim and din readers register here when they land).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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
}

impl TraceFormat {
    /// Name used in configs and messages.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Auto => "auto",
            TraceFormat::Cst => "cst",
        }
    }
}

/// How many leading bytes [`detect`] looks at.
pub const SNIFF_BYTES: usize = 512;

/// Recognisers tried in order by `format = "auto"`: each gets up to
/// [`SNIFF_BYTES`] leading bytes of the file. Formats with a magic number
/// come first; text formats, when added, go after them with a content check.
const SNIFFERS: &[(TraceFormat, Sniffer)] = &[(TraceFormat::Cst, |head| head.starts_with(&native::MAGIC))];

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
}

impl TraceParams {
    /// Open the trace and position it after `skip` accesses.
    pub fn build(&self, ctx: &WorkloadCtx) -> Result<Box<dyn Workload>> {
        let loc = |key: &str| join_path(&ctx.loc, &format!("params.{key}"));
        if self.path.is_empty() {
            return Err(Error::config(loc("path"), "missing_field", "the path of the trace file is required"));
        }
        let path = resolve(&self.path, ctx.base_dir.as_deref());
        let name = path.display().to_string();
        let mut file = File::open(&path).map_err(|e| Error::io(&name, e))?;
        let format = match self.format {
            TraceFormat::Auto => sniff(&mut file, &name)?,
            other => other,
        };
        let inner: Box<dyn Workload> = match format {
            TraceFormat::Cst | TraceFormat::Auto => self.open_cst(file, name, &loc)?,
        };
        Ok(match self.limit {
            Some(limit) => Box::new(Limited { inner, left: limit }),
            None => inner,
        })
    }

    fn open_cst(&self, mut file: File, name: String, loc: &dyn Fn(&str) -> String) -> Result<Box<dyn Workload>> {
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
                    format!("{name} holds {} threads ({threads}); set thread to choose one", header.threads.len()),
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

/// `path` as given if absolute or if there is no base directory, else
/// joined to `base`.
fn resolve(path: &str, base: Option<&Path>) -> PathBuf {
    let p = Path::new(path);
    match base {
        Some(base) if p.is_relative() => base.join(p),
        _ => p.to_path_buf(),
    }
}

/// Recognise the format of `file` from its first bytes and rewind it.
fn sniff(file: &mut File, name: &str) -> Result<TraceFormat> {
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    file.by_ref()
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .and_then(|_| file.seek(SeekFrom::Start(0)))
        .map_err(|e| Error::io(name, e))?;
    detect(&head).ok_or_else(|| {
        let known = SNIFFERS.iter().map(|(f, _)| f.name()).collect::<Vec<_>>().join(", ");
        Error::trace(
            name,
            TracePos { offset: Some(0), ..TracePos::default() },
            format!("unrecognised trace format (known: {known}); set format to force one"),
        )
    })
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
    use crate::config::PluginConfig;
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
        let mut w = NativeWriter::create_with(dir.join(file), &header, options).unwrap();
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

        // A limit past the end just ends with the stream; skip to the end is empty.
        let mut w = build(&dir.0, serde_json::json!({"path": "one.cst", "skip": 990, "limit": 50})).unwrap();
        assert_eq!(collect(w.as_mut()).unwrap(), all[990..]);
        let mut w = build(&dir.0, serde_json::json!({"path": "one.cst", "skip": 1000})).unwrap();
        assert_eq!(collect(w.as_mut()).unwrap(), vec![]);
        let mut w = build(&dir.0, serde_json::json!({"path": "one.cst", "limit": 0})).unwrap();
        assert_eq!(collect(w.as_mut()).unwrap(), vec![]);

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
        std::fs::write(dir.0.join("text.txt"), "I 0400d7d4,8\n").unwrap();
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
            TraceParams { path: "x.cst".into(), format: TraceFormat::Cst, thread: Some(3), skip: 10, limit: Some(20) }
        );
    }

    #[test]
    fn detect_recognises_the_native_magic_only() {
        assert_eq!(detect(b"CSTRACE\0rest"), Some(TraceFormat::Cst));
        assert_eq!(detect(b"CSTRAC"), None);
        assert_eq!(detect(b""), None);
    }
}
