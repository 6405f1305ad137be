//! What the box is: one [`Snapshot`] built from sections that each read through a
//! [`Root`]. A section that cannot do its part says so as data
//! ([`Outcome::Unsupported`] or [`Outcome::Failed`]); one bad file never sinks the
//! probe.
//!
//! Each area has `read_*(&Root)` functions that do I/O and `parse_*(&str)`
//! functions that are pure and tested on literal kernel text.

pub mod block;
pub mod config_files;
pub mod cpu;
pub mod crypto;
pub mod diskstats;
pub mod dm;
pub mod ethtool;
pub mod exports;
pub mod file_services;
pub mod filesystems;
pub mod host;
pub mod kernel_log;
pub mod md;
pub mod memory;
pub mod net;
pub mod nic_stats;
pub mod proc_stat;
pub mod qdisc;
pub mod smart;
pub mod smb;
pub mod storage;
pub mod sysctl;
pub mod text;

use serde::{Deserialize, Serialize};

use crate::root::Root;

/// Version of the `probe --json` document. Bump on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// The result of one probe section.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome<T> {
    Ok { data: T },
    Unsupported { reason: String },
    Failed { error: String },
}

impl<T> Outcome<T> {
    pub fn data(&self) -> Option<&T> {
        match self {
            Outcome::Ok { data } => Some(data),
            _ => None,
        }
    }

    pub fn status(&self) -> &'static str {
        match self {
            Outcome::Ok { .. } => "ok",
            Outcome::Unsupported { .. } => "unsupported",
            Outcome::Failed { .. } => "failed",
        }
    }

    /// The reason or error for a section that is not ok.
    pub fn problem(&self) -> Option<&str> {
        match self {
            Outcome::Ok { .. } => None,
            Outcome::Unsupported { reason } => Some(reason),
            Outcome::Failed { error } => Some(error),
        }
    }
}

impl<T, E: std::fmt::Display> From<Result<T, E>> for Outcome<T> {
    fn from(r: Result<T, E>) -> Self {
        match r {
            Ok(data) => Outcome::Ok { data },
            Err(e) => Outcome::Failed {
                error: e.to_string(),
            },
        }
    }
}

/// Where the snapshot was read from.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Live,
    Tree,
}

/// Everything `nastune probe` found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Snapshot {
    pub schema_version: u32,
    pub tool_version: String,
    /// Stable, non-reversible id of the box (from /etc/machine-id or the boot id).
    pub host_id: String,
    pub timestamp_unix: u64,
    pub timestamp: String,
    pub source: Source,
    pub host: Outcome<host::Host>,
    pub cpu: Outcome<cpu::Cpu>,
    pub memory: Outcome<memory::Memory>,
    pub network: Outcome<net::Network>,
    pub sysctl: Outcome<sysctl::Sysctl>,
    pub kernel_crypto: Outcome<crypto::KernelCrypto>,
    pub storage: Outcome<storage::Storage>,
    pub filesystems: Outcome<filesystems::Filesystems>,
    pub file_services: Outcome<file_services::FileServices>,
    pub smart: Outcome<smart::Smart>,
    #[serde(default = "config_files::not_probed")]
    pub config_files: Outcome<config_files::ConfigFiles>,
    #[serde(default = "config_files::not_probed")]
    pub kernel_log: Outcome<kernel_log::KernelLog>,
}

impl Snapshot {
    /// `(section name, status, problem)` for every section, for summaries.
    pub fn section_statuses(&self) -> Vec<(&'static str, &'static str, Option<&str>)> {
        vec![
            ("host", self.host.status(), self.host.problem()),
            ("cpu", self.cpu.status(), self.cpu.problem()),
            ("memory", self.memory.status(), self.memory.problem()),
            ("network", self.network.status(), self.network.problem()),
            ("sysctl", self.sysctl.status(), self.sysctl.problem()),
            (
                "kernel_crypto",
                self.kernel_crypto.status(),
                self.kernel_crypto.problem(),
            ),
            ("storage", self.storage.status(), self.storage.problem()),
            (
                "filesystems",
                self.filesystems.status(),
                self.filesystems.problem(),
            ),
            (
                "file_services",
                self.file_services.status(),
                self.file_services.problem(),
            ),
            ("smart", self.smart.status(), self.smart.problem()),
            (
                "config_files",
                self.config_files.status(),
                self.config_files.problem(),
            ),
            (
                "kernel_log",
                self.kernel_log.status(),
                self.kernel_log.problem(),
            ),
        ]
    }
}

/// Runs every section against `root`. Never fails: problems are in the outcomes.
pub fn probe(root: &Root) -> Snapshot {
    let now = crate::time::now_unix();
    let host = Outcome::from(host::read_host(root));
    let host_id = host::read_host_id(root);
    let architecture = host.data().and_then(|h| h.architecture.clone());
    let memory: Outcome<memory::Memory> = memory::read_memory(root).into();
    let filesystems: Outcome<filesystems::Filesystems> = filesystems::read_filesystems(root).into();
    // Storage reuses what those sections read, so a capture sees each file once.
    let swaps: Vec<String> = memory
        .data()
        .map(|m| m.swaps.iter().map(|s| s.device.clone()).collect())
        .unwrap_or_default();
    let storage = storage::read_storage(
        root,
        filesystems.data().map(|f| f.mounts.as_slice()),
        &swaps,
    );
    Snapshot {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        host_id,
        timestamp_unix: now,
        timestamp: crate::time::rfc3339_utc(now),
        source: if root.is_live() {
            Source::Live
        } else {
            Source::Tree
        },
        host,
        cpu: cpu::read_cpu(root).into(),
        network: net::read_network(root, architecture.as_deref()).into(),
        sysctl: sysctl::read_sysctl(root).into(),
        kernel_crypto: crypto::read_crypto(root).into(),
        memory,
        storage,
        filesystems,
        file_services: file_services::read_file_services(root).into(),
        smart: smart::read_smart(root).unwrap_or_else(|e| Outcome::Failed {
            error: e.to_string(),
        }),
        config_files: config_files::read_config_files(root).into(),
        kernel_log: kernel_log::read_kernel_log(root),
    }
}

/// Errors of the probe's parsers: the value and where it came from.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("{what}: cannot parse '{value}'")]
    Value { what: String, value: String },
    #[error("{what}: missing '{field}'")]
    Missing { what: String, field: String },
}

impl ParseError {
    pub fn value(what: impl Into<String>, value: impl Into<String>) -> Self {
        let mut value: String = value.into();
        if value.len() > 80 {
            let mut cut = 80;
            while !value.is_char_boundary(cut) {
                cut -= 1;
            }
            value.truncate(cut);
            value.push('…');
        }
        ParseError::Value {
            what: what.into(),
            value,
        }
    }

    pub fn missing(what: impl Into<String>, field: impl Into<String>) -> Self {
        ParseError::Missing {
            what: what.into(),
            field: field.into(),
        }
    }
}

/// A section's error: reading or parsing.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(transparent)]
    Read(#[from] crate::root::ReadError),
    #[error(transparent)]
    Parse(#[from] ParseError),
}

impl crate::store::Document for Snapshot {
    const KIND: crate::store::DocKind = crate::store::DocKind::Snapshot;
    const VERSION: u32 = SCHEMA_VERSION;
}
