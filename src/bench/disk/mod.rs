//! `nastune bench disk`: fio-style workloads with an engine chosen at run time
//! (io_uring, psync, null), latency histograms, CPU (ours, the system's, kernel
//! threads') and what every layer of the block stack really moved.

pub mod buffers;
pub mod engine;
pub mod holders;
pub mod job;
pub mod leftover;
pub mod loops;
pub mod measure;
mod measured;
pub mod network_fs;
pub mod null;
pub mod plan;
pub mod psync;
pub mod run;
pub mod safety;
pub mod shared;
pub mod signatures;
pub mod stack;
pub mod suites;
pub mod target;
#[cfg(feature = "io-uring")]
pub mod uring;
pub mod verify;
pub mod workload;
pub mod writecache;

use serde::{Deserialize, Serialize};

use crate::bench::cpu::CpuUsage;
use crate::bench::diskstats::{Layer, LayerIo};
use crate::bench::validity::Validity;

pub use crate::histogram::LatencyStats;
pub use measure::{MeasureError, measure};
pub use plan::{Plan, SuiteOptions};
pub use workload::{Rw, Workload};

/// Version of the JSON document (`--json` and the store).
pub const SCHEMA_VERSION: u32 = 1;

/// One direction (read or write) of a test, with fio's names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirResult {
    pub io_bytes: u64,
    pub total_ios: u64,
    pub short_ios: u64,
    pub bw_bytes: f64,
    pub iops: f64,
    pub runtime_ms: u64,
    pub clat_ns: Option<LatencyStats>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyncResult {
    pub total_syncs: u64,
    pub lat_ns: Option<LatencyStats>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassSummary {
    pub bw_bytes: f64,
    pub iops: f64,
}

/// How much repeated passes (`--loops`) differed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub passes: Vec<PassSummary>,
    pub bw_min: f64,
    pub bw_max: f64,
    pub bw_mean: f64,
    /// Standard deviation as percent of the mean.
    pub bw_stddev_pct: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestStatus {
    Ok,
    Skipped,
    Failed,
    Interrupted,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    pub name: String,
    pub status: TestStatus,
    pub reason: Option<String>,
    pub workload: Workload,
    pub passes: u32,
    pub read: Option<DirResult>,
    pub write: Option<DirResult>,
    pub sync: Option<SyncResult>,
    /// Measured wall time, all passes.
    pub job_runtime_ms: u64,
    /// This process's CPU as percent of one CPU (fio's usr_cpu / sys_cpu).
    pub usr_cpu: f64,
    pub sys_cpu: f64,
    /// Our CPU time (user + system) per I/O.
    pub cpu_ns_per_io: Option<f64>,
    /// All CPUs' busy time per I/O: includes interrupts and kernel threads.
    pub system_cpu_ns_per_io: Option<f64>,
    pub cpu: Option<CpuUsage>,
    /// What each layer of the block stack moved, all passes.
    pub devices: Vec<LayerIo>,
    pub spread: Option<Spread>,
    pub verify: Option<verify::VerifyResult>,
    pub notes: Vec<String>,
    /// Buffered I/O on a target that fits in RAM: the figure is the page
    /// cache's speed, not the disk's.
    #[serde(default)]
    pub page_cache: bool,
    /// Whether the box was quiet while this test ran (absent in runs before 0.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<Validity>,
    /// Throughput over time (the first pass), with the cliff or stall and its cause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<crate::timeline::Timeline>,
}

impl TestResult {
    pub fn not_run(name: String, workload: Workload, status: TestStatus, reason: String) -> Self {
        TestResult {
            name,
            status,
            reason: Some(reason),
            workload,
            passes: 0,
            read: None,
            write: None,
            sync: None,
            job_runtime_ms: 0,
            usr_cpu: 0.0,
            sys_cpu: 0.0,
            cpu_ns_per_io: None,
            system_cpu_ns_per_io: None,
            cpu: None,
            devices: Vec::new(),
            spread: None,
            verify: None,
            notes: Vec::new(),
            page_cache: false,
            validity: None,
            timeline: None,
        }
    }

    /// The name with what the figure measured when it is not the disk.
    pub fn label(&self) -> String {
        if self.page_cache {
            format!("{} (page cache)", self.name)
        } else {
            self.name.clone()
        }
    }

    pub fn total_ios(&self) -> u64 {
        self.read.as_ref().map_or(0, |d| d.total_ios)
            + self.write.as_ref().map_or(0, |d| d.total_ios)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineInfo {
    pub name: String,
    pub requested: Option<String>,
    /// Why the engine differs from the default, e.g. io_uring fell back to psync.
    pub note: Option<String>,
}

/// The whole `bench disk` document.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DiskBench {
    pub schema_version: u32,
    pub tool_version: String,
    pub timestamp: String,
    pub timestamp_unix: u64,
    pub host_id: String,
    pub target: target::TargetInfo,
    /// The block stack under the target, top first.
    pub layers: Vec<Layer>,
    pub engine: EngineInfo,
    pub suite: Option<String>,
    pub tests: Vec<TestResult>,
    pub interrupted: bool,
    /// The worst of the tests' validity: disturbed if any test was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<Validity>,
    /// Several targets (`bench disk A B C`): each one's workload alone and
    /// while all ran together. Empty for one target; then `target`, `layers`
    /// and `tests` are the first target's (its alone run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<shared::TargetRun>,
    /// The together phase summed, with the shared ceiling when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub together: Option<shared::Together>,
    /// `--stack`: the same read at every layer under the path, top first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<stack::LayerRun>,
}

impl crate::doc::Document for DiskBench {
    const KIND: crate::doc::DocKind = crate::doc::DocKind::Disk;
    const VERSION: u32 = SCHEMA_VERSION;

    fn validity(&self) -> Option<&crate::bench::validity::Validity> {
        self.validity.as_ref()
    }
}
