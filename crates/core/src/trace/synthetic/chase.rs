//! Stub.
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::trace::{Workload, WorkloadCtx};

/// Stub params.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChaseParams {}

impl ChaseParams {
    /// Stub constructor.
    pub fn build(&self, ctx: &WorkloadCtx) -> Result<Box<dyn Workload>> {
        Err(Error::config(&ctx.loc, "unsupported", "not implemented yet"))
    }
}
