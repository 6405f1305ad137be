//! The `check` document: what `nastune check` measured, the path analysis and
//! the findings, as one typed document.

use serde::{Deserialize, Serialize};

use super::Finding;
use super::bottleneck::{Measurements, PathAnalysis};

/// Version of the `check` document (`check --json`).
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckDoc {
    pub schema_version: u32,
    pub tool_version: String,
    pub host_id: String,
    pub timestamp: String,
    pub elapsed_secs: f64,
    pub measurements: Measurements,
    /// Why a measurement is missing (skipped, failed).
    pub not_measured: Vec<String>,
    pub paths: Vec<PathAnalysis>,
    pub findings: Vec<Finding>,
    /// The worst validity of the measurements (absent before 0.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<crate::bench::validity::Validity>,
}

impl crate::doc::Document for CheckDoc {
    const KIND: crate::doc::DocKind = crate::doc::DocKind::Check;
    const VERSION: u32 = SCHEMA_VERSION;

    fn validity(&self) -> Option<&crate::bench::validity::Validity> {
        self.validity.as_ref()
    }
}
