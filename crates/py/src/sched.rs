//! A scheduling policy written in Python, as a core [`Scheduler`].
//!
//! The object's methods are called once per scheduling decision, with the
//! GIL taken for the call only. Its first exception (or a result of the
//! wrong type) stops the run; the bindings then raise that exception
//! instead of the core's error, so the user sees their own traceback.

use std::sync::{Arc, Mutex};

use cachesched_core::error::{Error, Result};
use cachesched_core::sched::python::PythonParams;
use cachesched_core::sched::{Move, SchedBuild, SchedCtx, Scheduler, Slice, TaskState};
use cachesched_core::types::{CoreId, TaskId};
use cachesched_core::units::Span;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// Where the first Python error of a run is kept for re-raising.
pub(crate) type Failure = Arc<Mutex<Option<PyErr>>>;

pub(crate) struct PyScheduler {
    object: Py<PyAny>,
    fallback: Slice,
    period: Option<u64>,
    frequency_ghz: f64,
    failed: Failure,
}

impl PyScheduler {
    /// Wrap `object`, with the config's params for what it does not say.
    pub(crate) fn new(object: Py<PyAny>, params: &PythonParams, ctx: &SchedBuild, failed: Failure) -> Result<Self> {
        let (fallback, period) = params.resolve(ctx)?;
        Ok(PyScheduler { object, fallback, period, frequency_ghz: ctx.frequency_ghz, failed })
    }

    /// Call `method` if the object has it (`None` if not), converting its result.
    fn call<T>(
        &self,
        method: &str,
        args: impl FnOnce(Python<'_>) -> PyResult<Vec<Py<PyAny>>>,
        convert: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<T>,
    ) -> Result<Option<T>> {
        let outcome = Python::attach(|py| -> PyResult<Option<T>> {
            let object = self.object.bind(py);
            if !object.hasattr(method)? {
                return Ok(None);
            }
            let args = pyo3::types::PyTuple::new(py, args(py)?)?;
            let value = object.call_method1(method, args)?;
            convert(&value).map(Some)
        });
        outcome.map_err(|e| {
            let message = format!("the Python scheduler's {method} failed: {e}");
            self.failed.lock().expect("not poisoned").get_or_insert(e);
            Error::Simulation(message)
        })
    }
}

/// The scheduling state as a dict: `now`, `sockets`, `cores_per_socket`,
/// `queues` (task ids per core, front first), `running` (task or None per
/// core), and `tasks` (a dict per task).
fn state(py: Python<'_>, ctx: &SchedCtx) -> PyResult<Py<PyAny>> {
    let d = PyDict::new(py);
    d.set_item("now", ctx.now)?;
    d.set_item("sockets", ctx.topology.sockets)?;
    d.set_item("cores_per_socket", ctx.topology.cores_per_socket)?;
    let queues: Vec<Vec<u32>> = ctx.queues.iter().map(|q| q.iter().map(|t| t.0).collect()).collect();
    d.set_item("queues", queues)?;
    d.set_item("running", ctx.running.iter().map(|r| r.map(|t| t.0)).collect::<Vec<_>>())?;
    let tasks = PyList::empty(py);
    for (i, t) in ctx.tasks.iter().enumerate() {
        let row = PyDict::new(py);
        let (state, core) = match t.state {
            TaskState::Waiting(c) => ("waiting", Some(c.0)),
            TaskState::Running(c) => ("running", Some(c.0)),
            TaskState::Blocked => ("blocked", None),
            TaskState::Finished => ("finished", None),
        };
        row.set_item("task", i)?;
        row.set_item("name", &t.spec.name)?;
        row.set_item("asid", t.spec.asid.0)?;
        row.set_item("vm", t.spec.vm)?;
        row.set_item("affinity", t.spec.affinity.as_ref().map(|a| a.iter().map(|c| c.0).collect::<Vec<_>>()))?;
        row.set_item("cache", t.cache)?;
        row.set_item("state", state)?;
        row.set_item("core", core)?;
        row.set_item("last_core", t.last_core.map(|c| c.0))?;
        row.set_item("last_ran", t.last_ran)?;
        row.set_item("instructions", t.instructions)?;
        row.set_item("cycles", t.cycles)?;
        tasks.append(row)?;
    }
    d.set_item("tasks", tasks)?;
    Ok(d.into_any().unbind())
}

/// An int (cycles) or a span text (`"2ms"`, `"1M instr"`) as a slice.
fn slice(value: &Bound<'_, PyAny>, frequency_ghz: f64) -> PyResult<Option<Slice>> {
    if value.is_none() {
        return Ok(None);
    }
    let span = match value.extract::<u64>() {
        Ok(cycles) => Span::cycles(cycles),
        Err(_) => {
            let text: String = value.extract()?;
            Span::parse(&text).map_err(PyValueError::new_err)?
        }
    };
    Ok(Some(Slice::of(span.resolve(frequency_ghz))))
}

impl Scheduler for PyScheduler {
    fn place(&mut self, ctx: &SchedCtx, task: TaskId) -> Result<CoreId> {
        let placed = self.call(
            "place",
            |py| Ok(vec![task.0.into_pyobject(py)?.into_any().unbind(), state(py, ctx)?]),
            |v| v.extract::<u32>(),
        )?;
        Ok(placed.map_or_else(|| ctx.least_loaded(task), CoreId))
    }

    fn pick(&mut self, ctx: &SchedCtx, core: CoreId) -> Result<Option<TaskId>> {
        let picked = self.call(
            "pick",
            |py| Ok(vec![core.0.into_pyobject(py)?.into_any().unbind(), state(py, ctx)?]),
            |v| v.extract::<Option<u32>>(),
        )?;
        match picked {
            Some(choice) => Ok(choice.map(TaskId)),
            None => Ok(ctx.queues[core.0 as usize].front().copied()),
        }
    }

    fn quantum(&mut self, ctx: &SchedCtx, task: TaskId, core: CoreId) -> Result<Slice> {
        let freq = self.frequency_ghz;
        let args = |py: Python<'_>| {
            Ok(vec![
                task.0.into_pyobject(py)?.into_any().unbind(),
                core.0.into_pyobject(py)?.into_any().unbind(),
                state(py, ctx)?,
            ])
        };
        let chosen = self.call("quantum", args, |v| slice(v, freq))?;
        Ok(chosen.flatten().unwrap_or(self.fallback))
    }

    fn period(&self) -> Option<u64> {
        self.period
    }

    fn balance(&mut self, ctx: &SchedCtx) -> Result<Vec<Move>> {
        let moves = self.call("balance", |py| Ok(vec![state(py, ctx)?]), |v| v.extract::<Option<Vec<(u32, u32)>>>())?;
        let moves = moves.flatten().unwrap_or_default();
        Ok(moves.into_iter().map(|(task, to)| Move { task: TaskId(task), to: CoreId(to) }).collect())
    }
}
