//! `python`: a policy written in Python.
//!
//! The object lives on the Python side (`cachesched.simulate(config,
//! scheduler=obj)`); the bindings wrap it in a [`Scheduler`] and hand it to
//! the engine. These params are what the config records of it, and what the
//! wrapper falls back to when the object lacks a method.

use serde::{Deserialize, Serialize};

use super::{default_quantum, SchedBuild, Scheduler, Slice};
use crate::error::{Error, Result};
use crate::units::Span;

/// Params of `python`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PythonParams {
    /// Class of the object, for the record.
    pub class: String,
    /// Slice when the object has no `quantum` method.
    pub quantum: Span,
    /// Time between calls of the object's `balance`; none never calls it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<Span>,
}

impl Default for PythonParams {
    fn default() -> Self {
        PythonParams { class: String::new(), quantum: default_quantum(), period: None }
    }
}

impl PythonParams {
    /// The fallback slice and the balancing period in cycles, checked.
    pub fn resolve(&self, ctx: &SchedBuild) -> Result<(Slice, Option<u64>)> {
        Ok((ctx.slice(self.quantum, "quantum")?, self.period.map(|p| ctx.cycles(p, "period")).transpose()?))
    }

    /// Always an error: the policy itself can only come from Python.
    pub fn build(&self, ctx: &SchedBuild) -> Result<Box<dyn Scheduler>> {
        self.resolve(ctx)?;
        let message = "kind 'python' needs the scheduler object: cachesched.simulate(config, scheduler=obj)";
        Err(Error::config(ctx.loc.replace(".params", ".kind"), "python_only", message))
    }
}
