//! The one place where core errors become Python exceptions.
//!
//! The exception classes are defined in Python (`cachesched/errors.py`) so
//! that they can inherit from both `CacheschedError` and the matching builtin
//! (`ConfigError` is a `ValueError`, `TraceError` an `OSError`).

use std::any::Any;

use cachesched_core::error::Error;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

fn class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("cachesched.errors")?.getattr(name)
}

fn build(py: Python<'_>, err: &Error) -> PyResult<PyErr> {
    let message = err.to_string();
    let value = match err {
        Error::Config(issues) => {
            let list = PyList::empty(py);
            for issue in issues {
                let d = PyDict::new(py);
                d.set_item("loc", &issue.loc)?;
                d.set_item("code", issue.code)?;
                d.set_item("msg", &issue.message)?;
                list.append(d)?;
            }
            class(py, "ConfigError")?.call1((message, list))?
        }
        Error::Trace { path, pos, .. } => {
            class(py, "TraceError")?.call1((message, path, pos.offset, pos.block, pos.line))?
        }
        Error::Io { path, .. } => {
            class(py, "TraceError")?.call1((message, path, None::<u64>, None::<u64>, None::<u64>))?
        }
        Error::Simulation(_) => class(py, "SimulationError")?.call1((message,))?,
    };
    Ok(PyErr::from_value(value))
}

/// Convert a core error to the matching `cachesched.errors` exception.
pub fn to_py_err(py: Python<'_>, err: Error) -> PyErr {
    build(py, &err).unwrap_or_else(|e| e)
}

/// Convert a caught panic to `cachesched.errors.InternalError`.
pub fn internal_error(py: Python<'_>, panic: Box<dyn Any + Send>) -> PyErr {
    let detail = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    let message = format!("internal error in cachesched (a bug; please report it): {detail}");
    class(py, "InternalError")
        .and_then(|c| c.call1((message.clone(),)))
        .map(PyErr::from_value)
        .unwrap_or_else(|_| PyRuntimeError::new_err(message))
}
