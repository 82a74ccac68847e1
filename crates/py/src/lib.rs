//! Python bindings: the private module `cachesched._core`.
//!
//! Only conversions live here. Configurations arrive as JSON text and results
//! leave as JSON text, so the schema has one owner (the core). Every core
//! error becomes the matching exception class of `cachesched.errors`, and a
//! panic (a bug) becomes `InternalError` instead of crossing into Python.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use cachesched_core::cl1lock;
use cachesched_core::config::{self, presets as shipped};
use cachesched_core::engine::{Engine, Progress};
use cachesched_core::error::Error;
use cachesched_core::floor;
use cachesched_core::hcache;
use cachesched_core::mem::machine::Machine;
use cachesched_core::plugin::parse_at;
use cachesched_core::sched::{Scheduler, SchedulerConfig};
use cachesched_core::thinprov;
use cachesched_core::types::{Access, AccessKind, CoreId, VirtAddr};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

mod errors;
mod sched;
mod trace;

use errors::{internal_error, to_py_err};

/// Run `body` and turn a panic into `InternalError`.
pub(crate) fn guarded<T>(py: Python<'_>, body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(panic) => Err(internal_error(py, panic)),
    }
}

/// Calls a Python progress callback, checking for Ctrl-C; the first Python
/// error is kept so it can be re-raised once the core has stopped.
pub(crate) struct Reporter<'a> {
    callback: Option<&'a Py<PyAny>>,
    failed: Option<PyErr>,
}

impl<'a> Reporter<'a> {
    pub(crate) fn new(callback: Option<&'a Py<PyAny>>) -> Reporter<'a> {
        Reporter { callback, failed: None }
    }

    /// Report `done` of `total`; an `Err` asks the core to stop.
    pub(crate) fn report(&mut self, done: u64, total: Option<u64>) -> Result<(), Error> {
        let outcome = Python::attach(|py| -> PyResult<()> {
            py.check_signals()?;
            if let Some(cb) = self.callback {
                cb.call1(py, (done, total))?;
            }
            Ok(())
        });
        outcome.map_err(|e| {
            self.failed = Some(e);
            Error::Simulation("stopped by the Python side".into())
        })
    }

    /// The Python error to raise instead of `err`, if the stop came from Python.
    pub(crate) fn finish(self, py: Python<'_>, err: Error) -> PyErr {
        self.failed.unwrap_or_else(|| to_py_err(py, err))
    }
}

/// Simulate a configuration (JSON text); returns the results as JSON text.
/// `progress(done, total)` is called about every million references;
/// `scheduler` is the object of a `kind = "python"` scheduler.
#[pyfunction]
#[pyo3(signature = (config_json, base_dir=None, progress=None, scheduler=None))]
fn simulate(
    py: Python<'_>,
    config_json: &str,
    base_dir: Option<PathBuf>,
    progress: Option<Py<PyAny>>,
    scheduler: Option<Py<PyAny>>,
) -> PyResult<String> {
    guarded(py, || {
        let config = config::from_json_str(config_json).map_err(|e| to_py_err(py, e))?;
        let failed = sched::Failure::default();
        let policy: Option<Box<dyn Scheduler>> = match (scheduler, &config.scheduler) {
            (Some(object), SchedulerConfig::Python(params)) => {
                let wrapped = sched::PyScheduler::new(object, params, &config.sched_build(), failed.clone());
                Some(Box::new(wrapped.map_err(|e| to_py_err(py, e))?))
            }
            (Some(_), other) => {
                let message = format!("a scheduler object needs scheduler.kind = 'python', not '{}'", other.kind());
                return Err(to_py_err(py, Error::config("scheduler.kind", "invalid_value", message)));
            }
            (None, _) => None,
        };
        let mut engine = Engine::with_scheduler(config, base_dir, policy).map_err(|e| to_py_err(py, e))?;
        let mut reporter = Reporter::new(progress.as_ref());
        let outcome = py.detach(|| {
            catch_unwind(AssertUnwindSafe(|| engine.run(&mut |p: Progress| reporter.report(p.done, p.total))))
        });
        let raised = failed.lock().expect("not poisoned").take();
        match outcome {
            Ok(Ok(results)) => Ok(serde_json::to_string(&results).expect("results serialise to JSON")),
            Ok(Err(e)) => Err(raised.unwrap_or_else(|| reporter.finish(py, e))),
            Err(panic) => Err(internal_error(py, panic)),
        }
    })
}

/// Parse and validate a configuration; returns it resolved (preset applied,
/// defaults filled in) as JSON text.
#[pyfunction]
fn resolve_config(py: Python<'_>, config_json: &str) -> PyResult<String> {
    guarded(py, || {
        let config = config::from_json_str(config_json).map_err(|e| to_py_err(py, e))?;
        Ok(config.to_json().to_string())
    })
}

/// Replay references of several cores in the given order on the machine of
/// `config_json` (its `machine` table), as threads of one address space;
/// returns every cache's lines, the interconnect traffic and the memory
/// nodes' counters as JSON text.
#[pyfunction]
#[pyo3(signature = (config_json, cores, kinds, addrs, seed=0))]
fn machine_replay(
    py: Python<'_>,
    config_json: &str,
    cores: Vec<u32>,
    kinds: Vec<u8>,
    addrs: Vec<u64>,
    seed: u64,
) -> PyResult<String> {
    guarded(py, || {
        let value = serde_json::from_str(config_json)
            .map_err(|e| to_py_err(py, Error::config("", "invalid_json", format!("not valid JSON: {e}"))))?;
        let machine = config::machine_from_value(value).map_err(|e| to_py_err(py, e))?;
        if cores.len() != kinds.len() || cores.len() != addrs.len() {
            let message =
                format!("cores, kinds and addrs differ in length: {}, {}, {}", cores.len(), kinds.len(), addrs.len());
            return Err(to_py_err(py, Error::config("accesses", "invalid_value", message)));
        }
        let mut accesses = Vec::with_capacity(cores.len());
        for (i, ((&core, &kind), &addr)) in cores.iter().zip(&kinds).zip(&addrs).enumerate() {
            let kind = match kind {
                0 => AccessKind::Load,
                1 => AccessKind::Store,
                2 => AccessKind::Ifetch,
                k => {
                    let message = format!("expected 0 (load), 1 (store) or 2 (ifetch), got {k}");
                    return Err(to_py_err(py, Error::config(format!("accesses[{i}].kind"), "invalid_value", message)));
                }
            };
            let access = Access { addr: VirtAddr(addr), pc: VirtAddr(0), instrs: 1, size: 1, kind };
            accesses.push((CoreId(core), access));
        }
        let replayed = Machine::replay(&machine, seed, &accesses).map_err(|e| to_py_err(py, e))?;
        Ok(serde_json::to_string(&replayed).expect("a replay serialises to JSON"))
    })
}

/// The shipped machine presets: a list of dicts with name, description,
/// source and the TOML text.
#[pyfunction]
fn presets<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for (name, description, source) in shipped::describe() {
        let d = PyDict::new(py);
        d.set_item("name", name)?;
        d.set_item("description", description)?;
        d.set_item("source", source)?;
        d.set_item("toml", shipped::text(name))?;
        list.append(d)?;
    }
    Ok(list)
}

/// A run over traces, one per VM: `params_json` parsed into `P` (errors
/// at their keys), `run` without the GIL, its result as JSON text.
fn traces_run<P, R>(
    py: Python<'_>,
    params_json: &str,
    traces: &[PathBuf],
    run: fn(&P, &[PathBuf]) -> cachesched_core::error::Result<R>,
) -> PyResult<String>
where
    P: serde::de::DeserializeOwned + Sync,
    R: serde::Serialize + Send,
{
    guarded(py, || {
        let value: serde_json::Value = serde_json::from_str(params_json)
            .map_err(|e| to_py_err(py, Error::config("", "invalid_json", e.to_string())))?;
        let params: P = parse_at(&value, "").map_err(|e| to_py_err(py, e))?;
        let result = py.detach(|| run(&params, traces)).map_err(|e| to_py_err(py, e))?;
        Ok(serde_json::to_string(&result).expect("results serialise to JSON"))
    })
}

/// Run each VM's trace through its partition of the hypervisor cache
/// (`params_json`: the `hcache` params); returns one result per VM as JSON
/// text.
#[pyfunction]
fn hcache_run(py: Python<'_>, params_json: &str, traces: Vec<PathBuf>) -> PyResult<String> {
    traces_run(py, params_json, &traces, hcache::run)
}

/// Thin provisioning over block traces (one per VM): params as JSON, the
/// run (VMs, intervals, thresholds) as JSON.
#[pyfunction]
fn provision_run(py: Python<'_>, params_json: &str, traces: Vec<PathBuf>) -> PyResult<String> {
    traces_run(py, params_json, &traces, thinprov::run)
}

/// Level-1 cache locking in a multicore: one trace per job, params as
/// JSON; the tasks and the mean delay per task as JSON.
#[pyfunction]
fn cl1lock_run(py: Python<'_>, params_json: &str, traces: Vec<PathBuf>) -> PyResult<String> {
    traces_run(py, params_json, &traces, cl1lock::run)
}

/// The floor beside the engine's machine on the data trace at `path`
/// (`cachesched_core::floor`): ns per access as JSON.
#[pyfunction]
fn floor_run(py: Python<'_>, path: PathBuf, repeats: usize) -> PyResult<String> {
    guarded(py, || {
        let figures = py.detach(|| floor::measure(&path, repeats)).map_err(|e| to_py_err(py, e))?;
        Ok(serde_json::to_string(&figures).expect("figures serialise to JSON"))
    })
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("__build__", env!("CACHESCHED_BUILD"))?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_config, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(machine_replay, m)?)?;
    m.add_function(wrap_pyfunction!(hcache_run, m)?)?;
    m.add_function(wrap_pyfunction!(provision_run, m)?)?;
    m.add_function(wrap_pyfunction!(cl1lock_run, m)?)?;
    m.add_function(wrap_pyfunction!(floor_run, m)?)?;
    trace::register(m)?;
    Ok(())
}
