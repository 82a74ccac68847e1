//! Trace tools exposed to Python.
use pyo3::prelude::*;

/// Add the trace functions to the module.
pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
