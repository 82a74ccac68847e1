//! Trace tools exposed to Python: summaries, scans, generation, and moving
//! access columns between `.cst` files and NumPy (as little-endian bytes).

use std::fs::File;
use std::path::PathBuf;

use cachesched_core::error::Error;
use cachesched_core::plugin::{parse_at, PluginConfig};
use cachesched_core::trace::blockio::{self, BlockFormat};
use cachesched_core::trace::convert::{copy, copy_windows, CopyOptions, PipeReader, Window};
use cachesched_core::trace::file::{self, TraceFormat, TraceParams};
use cachesched_core::trace::lackey::{LackeyOptions, LackeyReader};
use cachesched_core::trace::mrc::{mrc_workload, MrcOptions};
use cachesched_core::trace::native::{scan, NativeReader, NativeWriter, TraceHeader, TraceSummary};
use cachesched_core::trace::{Workload, WorkloadConfig, WorkloadCtx};
use cachesched_core::{Access, AccessKind, VirtAddr};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use serde_json::json;

use crate::errors::to_py_err;
use crate::{guarded, Reporter};

fn summary_json(s: &TraceSummary) -> serde_json::Value {
    json!({
        "accesses": s.accesses,
        "instructions": s.instructions,
        "blocks": s.blocks,
        "file_bytes": s.file_bytes,
        "bytes_per_access": s.bytes_per_access(),
        "threads": s.threads.iter().map(|t| json!({
            "thread": t.thread, "accesses": t.accesses, "instructions": t.instructions, "blocks": t.blocks,
        })).collect::<Vec<_>>(),
    })
}

/// Header and totals of a `.cst` file (from its index; no full read).
#[pyfunction]
fn trace_info(py: Python<'_>, path: PathBuf) -> PyResult<String> {
    guarded(py, || {
        let reader = NativeReader::open_first(&path).map_err(|e| to_py_err(py, e))?;
        let h = reader.header();
        let info = json!({
            "path": path.display().to_string(),
            "source": h.source,
            "threads": h.threads,
            "page_bytes": h.page_bytes,
            "meta": h.meta,
            "indexed": reader.is_indexed(),
            "index_problem": reader.index_problem(),
            "summary": reader.summary().map(summary_json),
        });
        Ok(info.to_string())
    })
}

/// Read one thread's stream completely: counts by kind, instructions,
/// footprint in lines and pages, address range.
#[pyfunction]
#[pyo3(signature = (path, thread=None))]
fn trace_scan(py: Python<'_>, path: PathBuf, thread: Option<u32>) -> PyResult<String> {
    guarded(py, || {
        let s = py.detach(|| scan(&path, thread)).map_err(|e| to_py_err(py, e))?;
        let stats = json!({
            "accesses": s.accesses,
            "loads": s.by_kind[0],
            "stores": s.by_kind[1],
            "ifetches": s.by_kind[2],
            "instructions": s.instructions,
            "lines_64": s.lines_64,
            "pages_4k": s.pages_4k,
            "min_addr": s.min_addr.map(|a| a.0),
            "max_addr": s.max_addr.map(|a| a.0),
            "reuse_cold": s.reuse.cold,
            // Bucket 0: distance 0; bucket b: distances in [2^(b-1), 2^b). Trailing empty buckets dropped.
            "reuse_buckets": &s.reuse.buckets[..s.reuse.buckets.iter().rposition(|&n| n > 0).map_or(0, |b| b + 1)],
        });
        Ok(stats.to_string())
    })
}

/// One pass over one thread's stream of a `.cst` file: the LRU miss ratios
/// of its data references in caches of `sets` sets and each of `ways` ways
/// (default: 1, 2, 3, 4, 6, 8, ... until only first references miss); see
/// `trace::mrc`. Returns JSON: the pass's totals and one row per ways.
#[pyfunction]
#[pyo3(signature = (path, thread=None, sets=1, line_bytes=64, ways=None, sample=None, ifetch=false, progress=None))]
#[allow(clippy::too_many_arguments)]
fn trace_mrc(
    py: Python<'_>,
    path: PathBuf,
    thread: Option<u32>,
    sets: u64,
    line_bytes: u64,
    ways: Option<Vec<u64>>,
    sample: Option<f64>,
    ifetch: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    guarded(py, || {
        let options = MrcOptions { sets, line_bytes, sample_rate: sample, ifetch };
        let mut reporter = Reporter::new(progress.as_ref());
        let outcome = py.detach(|| {
            let reader = match thread {
                Some(t) => NativeReader::open_thread(&path, t)?,
                None => NativeReader::open(&path)?,
            };
            mrc_workload(Box::new(reader), &options, &mut |done, total| reporter.report(done, total))
        });
        let curve = outcome.map_err(|e| reporter.finish(py, e))?;
        let ways = ways.unwrap_or_else(|| curve.default_ways());
        let rows: Vec<_> = ways
            .iter()
            .map(|&w| json!({"ways": w, "hits": curve.hits(w), "miss_ratio": curve.miss_ratio(w)}))
            .collect();
        Ok(json!({
            "sets": curve.sets,
            "line_bytes": curve.line_bytes,
            "rate": curve.rate,
            "references": curve.references,
            "sampled": curve.sampled,
            "cold": curve.cold,
            "lines": curve.lines,
            "rows": rows,
        })
        .to_string())
    })
}

/// Run a workload (`{"kind": ..., "params": ...}` as JSON) and write its
/// stream to a `.cst` file; returns the file's summary as JSON.
#[pyfunction]
#[pyo3(signature = (workload_json, path, seed=1, base_dir=None, progress=None))]
fn trace_generate(
    py: Python<'_>,
    workload_json: &str,
    path: PathBuf,
    seed: u64,
    base_dir: Option<PathBuf>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    guarded(py, || {
        let raw: serde_json::Value = serde_json::from_str(workload_json)
            .map_err(|e| to_py_err(py, Error::config("workload", "invalid_json", e.to_string())))?;
        let plugin: PluginConfig = parse_at(&raw, "workload").map_err(|e| to_py_err(py, e))?;
        let config = WorkloadConfig::parse(&plugin, "workload").map_err(|e| to_py_err(py, e))?;
        let ctx = WorkloadCtx {
            seed,
            component: "task0".into(),
            loc: "workload".into(),
            base_dir,
            thread: Default::default(),
        };
        let mut workload = config.build(&ctx).map_err(|e| to_py_err(py, e))?;
        let mut header =
            TraceHeader::new(format!("cachesched generator: {}", serde_json::to_string(&config.to_raw()).unwrap()));
        header.meta = json!({"generator": config.to_raw(), "seed": seed});
        let mut reporter = Reporter::new(progress.as_ref());
        let outcome = py.detach(|| -> Result<TraceSummary, Error> {
            let inputs = file::inputs(&raw, ctx.base_dir.as_deref());
            let mut writer = NativeWriter::create(&path, &header, &inputs)?;
            let total = workload.len_hint();
            let mut buf = vec![Access::default(); 1 << 16];
            let mut done = 0u64;
            loop {
                let n = workload.fill(&mut buf)?;
                if n == 0 {
                    break;
                }
                writer.write_all_thread(0, &buf[..n])?;
                done += n as u64;
                if done % (1 << 20) < n as u64 {
                    reporter.report(done, total)?;
                }
            }
            writer.finish()
        });
        match outcome {
            Ok(summary) => Ok(summary_json(&summary).to_string()),
            Err(e) => Err(reporter.finish(py, e)),
        }
    })
}

/// Convert a trace in any format (`params`: the JSON of a `kind = "trace"`
/// workload's params, path included) to a `.cst` file; returns its summary
/// and the format read as JSON. `progress(done, None)` gets the accesses
/// read so far.
#[pyfunction]
#[pyo3(signature = (params_json, path, progress=None))]
fn trace_convert(py: Python<'_>, params_json: &str, path: PathBuf, progress: Option<Py<PyAny>>) -> PyResult<String> {
    guarded(py, || {
        let raw: serde_json::Value = serde_json::from_str(params_json)
            .map_err(|e| to_py_err(py, Error::config("params", "invalid_json", e.to_string())))?;
        let params: TraceParams = parse_at(&raw, "params").map_err(|e| to_py_err(py, e))?;
        let ctx = WorkloadCtx {
            seed: 0,
            component: "task0".into(),
            loc: String::new(),
            base_dir: None,
            thread: Default::default(),
        };
        let mut reporter = Reporter::new(progress.as_ref());
        let outcome = py.detach(|| -> Result<(TraceFormat, TraceSummary), Error> {
            let (format, mut workload) = params.open(&ctx)?;
            let mut header = TraceHeader::new(format!("{} trace {}", format.name(), params.path));
            header.meta = json!({"converted_from": {"path": params.path, "format": format.name()}});
            let writer = NativeWriter::create(&path, &header, &[PathBuf::from(&params.path)])?;
            let copied =
                copy(workload.as_mut(), writer, CopyOptions::default(), &mut |done| reporter.report(done, None))?;
            Ok((format, copied.summary))
        });
        match outcome {
            Ok((format, summary)) => {
                Ok(json!({"format": format.name(), "summary": summary_json(&summary)}).to_string())
            }
            Err(e) => Err(reporter.finish(py, e)),
        }
    })
}

/// Convert lackey output arriving on the pipe `pipe` (a path such as
/// `/dev/fd/5`) to a `.cst` file as it comes: drop the accesses of the first
/// `skip_instructions` instructions, stop after `limit` accesses; or, with
/// `windows` (instruction ranges `(from, start, end)`, see
/// `convert::Window`), keep each window's accesses as a thread of its own.
/// `meta_json` goes into the header. Returns JSON: the summary, whether the
/// limit (or the last window's end) was reached, per window the accesses of
/// its warm-up, the instructions lackey reported (`I` lines read), and
/// valgrind's last message lines.
#[pyfunction]
#[pyo3(signature = (pipe, path, source, meta_json, skip_instructions=0, limit=None, ifetch=false, progress=None, windows=None))]
#[allow(clippy::too_many_arguments)]
fn trace_record(
    py: Python<'_>,
    pipe: PathBuf,
    path: PathBuf,
    source: &str,
    meta_json: &str,
    skip_instructions: u64,
    limit: Option<u64>,
    ifetch: bool,
    progress: Option<Py<PyAny>>,
    windows: Option<Vec<(u64, u64, u64)>>,
) -> PyResult<String> {
    guarded(py, || {
        let meta: serde_json::Value = serde_json::from_str(meta_json)
            .map_err(|e| to_py_err(py, Error::config("meta", "invalid_json", e.to_string())))?;
        let mut reporter = Reporter::new(progress.as_ref());
        let outcome = py.detach(|| -> Result<serde_json::Value, Error> {
            let name = "lackey output".to_string();
            let src = File::open(&pipe).map_err(|e| Error::io(pipe.display().to_string(), e))?;
            let mut reader = LackeyReader::new(PipeReader::new(src), name, LackeyOptions { ifetch });
            let mut header = TraceHeader::new(source);
            header.meta = meta;
            let (summary, limit_reached, warmup_accesses) = match windows {
                Some(windows) => {
                    let windows: Vec<Window> =
                        windows.into_iter().map(|(from, start, end)| Window { from, start, end }).collect();
                    let header = header.with_threads((0..windows.len() as u32).collect::<Vec<_>>());
                    let writer = NativeWriter::create(&path, &header, &[])?;
                    let w = copy_windows(&mut reader, writer, &windows, &mut |done, total| {
                        reporter.report(done, Some(total))
                    })?;
                    (w.summary, w.past_the_end, w.warmup_accesses)
                }
                None => {
                    let writer = NativeWriter::create(&path, &header, &[])?;
                    let options = CopyOptions { skip_instructions, limit };
                    let copied = copy(&mut reader, writer, options, &mut |done| reporter.report(done, None))?;
                    (copied.summary, copied.limit_reached, Vec::new())
                }
            };
            Ok(json!({
                "summary": summary_json(&summary),
                "limit_reached": limit_reached,
                "warmup_accesses": warmup_accesses,
                "instructions_read": reader.instructions(),
                "messages": reader.messages().collect::<Vec<_>>(),
            }))
        });
        match outcome {
            Ok(result) => Ok(result.to_string()),
            Err(e) => Err(reporter.finish(py, e)),
        }
    })
}

fn column<T: Copy>(bytes: &[u8], width: usize, n: usize, name: &str, parse: impl Fn(&[u8]) -> T) -> PyResult<Vec<T>> {
    if bytes.len() != n * width {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "column {name} holds {} bytes, expected {} ({n} values of {width} bytes)",
            bytes.len(),
            n * width
        )));
    }
    Ok(bytes.chunks_exact(width).map(parse).collect())
}

/// Write accesses given as columns of little-endian bytes (`addr`, `pc`:
/// u64; `instrs`: u32; `size`: u16; `kind`: u8 with 0 load, 1 store, 2
/// ifetch) to a `.cst` file; returns its summary as JSON.
#[pyfunction]
#[pyo3(signature = (path, addr, kind, size, pc, instrs, source="python"))]
#[allow(clippy::too_many_arguments)]
fn trace_write(
    py: Python<'_>,
    path: PathBuf,
    addr: &[u8],
    kind: &[u8],
    size: &[u8],
    pc: &[u8],
    instrs: &[u8],
    source: &str,
) -> PyResult<String> {
    guarded(py, || {
        let n = addr.len() / 8;
        let addr = column(addr, 8, n, "addr", |b| u64::from_le_bytes(b.try_into().unwrap()))?;
        let kind = column(kind, 1, n, "kind", |b| b[0])?;
        let size = column(size, 2, n, "size", |b| u16::from_le_bytes(b.try_into().unwrap()))?;
        let pc = column(pc, 8, n, "pc", |b| u64::from_le_bytes(b.try_into().unwrap()))?;
        let instrs = column(instrs, 4, n, "instrs", |b| u32::from_le_bytes(b.try_into().unwrap()))?;
        let mut accesses = Vec::with_capacity(n);
        for i in 0..n {
            let kind = AccessKind::from_code(kind[i]).ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(format!("kind {} at row {i} is not 0, 1 or 2", kind[i]))
            })?;
            accesses.push(Access {
                addr: VirtAddr(addr[i]),
                pc: VirtAddr(pc[i]),
                instrs: instrs[i],
                size: size[i],
                kind,
            });
        }
        let header = TraceHeader::new(source);
        let summary = (|| {
            let mut writer = NativeWriter::create(&path, &header, &[])?;
            writer.write_all_thread(0, &accesses)?;
            writer.finish()
        })()
        .map_err(|e| to_py_err(py, e))?;
        Ok(summary_json(&summary).to_string())
    })
}

/// Read a stream (one thread) into columns of little-endian bytes: a dict
/// with `addr`, `pc` (u64), `instrs` (u32), `size` (u16) and `kind` (u8).
#[pyfunction]
#[pyo3(signature = (path, thread=None, skip=0, limit=None))]
fn trace_read<'py>(
    py: Python<'py>,
    path: PathBuf,
    thread: Option<u32>,
    skip: u64,
    limit: Option<u64>,
) -> PyResult<Bound<'py, PyDict>> {
    let accesses = guarded(py, || {
        py.detach(|| -> Result<Vec<Access>, Error> {
            let mut reader = match thread {
                Some(t) => NativeReader::open_thread(&path, t)?,
                None => NativeReader::open(&path)?,
            };
            reader.seek(skip)?;
            let mut out = Vec::new();
            let mut buf = vec![Access::default(); 1 << 16];
            let limit = limit.unwrap_or(u64::MAX);
            while (out.len() as u64) < limit {
                let want = buf.len().min((limit - out.len() as u64) as usize);
                let n = reader.fill(&mut buf[..want])?;
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&buf[..n]);
            }
            Ok(out)
        })
        .map_err(|e| to_py_err(py, e))
    })?;
    let d = PyDict::new(py);
    let bytes = |f: &dyn Fn(&Access, &mut Vec<u8>)| {
        let mut v = Vec::new();
        accesses.iter().for_each(|a| f(a, &mut v));
        v
    };
    d.set_item("addr", PyBytes::new(py, &bytes(&|a, v| v.extend_from_slice(&a.addr.0.to_le_bytes()))))?;
    d.set_item("pc", PyBytes::new(py, &bytes(&|a, v| v.extend_from_slice(&a.pc.0.to_le_bytes()))))?;
    d.set_item("instrs", PyBytes::new(py, &bytes(&|a, v| v.extend_from_slice(&a.instrs.to_le_bytes()))))?;
    d.set_item("size", PyBytes::new(py, &bytes(&|a, v| v.extend_from_slice(&a.size.to_le_bytes()))))?;
    d.set_item("kind", PyBytes::new(py, &bytes(&|a, v| v.push(a.kind as u8))))?;
    Ok(d)
}

/// Read a block I/O trace (`format`: `msr`, `tencent` or `alibaba`); its
/// requests and devices as JSON text.
#[pyfunction]
fn block_read(py: Python<'_>, path: PathBuf, format: &str) -> PyResult<String> {
    guarded(py, || {
        let format: BlockFormat = serde_json::from_value(json!(format)).map_err(|_| {
            let message = format!("unknown block trace format '{format}' (expected msr, tencent or alibaba)");
            to_py_err(py, Error::config("format", "invalid_value", message))
        })?;
        let trace = py.detach(|| blockio::read(&path, format)).map_err(|e| to_py_err(py, e))?;
        Ok(serde_json::to_string(&trace).expect("a block trace serialises to JSON"))
    })
}

/// Add the trace functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(trace_info, m)?)?;
    m.add_function(wrap_pyfunction!(trace_scan, m)?)?;
    m.add_function(wrap_pyfunction!(trace_mrc, m)?)?;
    m.add_function(wrap_pyfunction!(trace_generate, m)?)?;
    m.add_function(wrap_pyfunction!(trace_write, m)?)?;
    m.add_function(wrap_pyfunction!(trace_read, m)?)?;
    m.add_function(wrap_pyfunction!(trace_convert, m)?)?;
    m.add_function(wrap_pyfunction!(trace_record, m)?)?;
    m.add_function(wrap_pyfunction!(block_read, m)?)?;
    Ok(())
}
