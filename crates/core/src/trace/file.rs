//! Trace files as workloads (stub; the `.cst` reader lands next).
use serde::{Deserialize, Serialize};

use super::{Workload, WorkloadCtx};
use crate::error::{Error, Result};

/// `kind = "trace"`: replay a trace file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TraceParams {
    /// Path of the trace file.
    pub path: String,
}

impl TraceParams {
    /// Open the trace.
    pub fn build(&self, ctx: &WorkloadCtx) -> Result<Box<dyn Workload>> {
        Err(Error::config(&ctx.loc, "unsupported", "trace files are not supported yet"))
    }
}
