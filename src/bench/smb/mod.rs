//! `nastune bench smb`: file-service throughput through the real SMB2/3
//! protocol ([`crate::smb`]), per workload and per security mode, with the
//! server's CPU cost per GB when the server is this box.

#[cfg(feature = "smb")]
pub mod engine;
pub mod local;
mod measured;
pub mod server;

use serde::{Deserialize, Serialize};

use crate::bench::disk::LatencyStats;
use crate::smb::{Credentials, Dialect, Security, SessionInfo};

pub const SCHEMA_VERSION: u32 = 1;

/// The workloads, in the order they run.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    SeqWrite,
    SeqRead,
    SmallFiles,
    Metadata,
}

impl Workload {
    pub const ALL: [Workload; 4] = [
        Workload::SeqWrite,
        Workload::SeqRead,
        Workload::SmallFiles,
        Workload::Metadata,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Workload::SeqWrite => "seq-write",
            Workload::SeqRead => "seq-read",
            Workload::SmallFiles => "small-files",
            Workload::Metadata => "metadata",
        }
    }
}

/// `//HOST[:PORT]/SHARE[/DIR]`, validated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub share: String,
    /// Directory inside the share, backslash-separated, "" for the root.
    pub dir: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "'{0}' is not an SMB target: write //HOST[:PORT]/SHARE[/DIR], e.g. //nas.local/public/bench"
)]
pub struct TargetError(pub String);

impl Target {
    pub fn parse(s: &str) -> Result<Target, TargetError> {
        let bad = || TargetError(s.to_string());
        let rest = s
            .strip_prefix("//")
            .or_else(|| s.strip_prefix("\\\\"))
            .ok_or_else(bad)?;
        let mut parts = rest.split(['/', '\\']).filter(|p| !p.is_empty());
        let hostport = parts.next().ok_or_else(bad)?;
        let share = parts.next().ok_or_else(bad)?.to_string();
        let dir: Vec<&str> = parts.collect();
        if dir.contains(&"..") {
            return Err(bad());
        }
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') || h.starts_with('[') => (
                h.trim_matches(['[', ']']).to_string(),
                p.parse().map_err(|_| bad())?,
            ),
            _ => (hostport.trim_matches(['[', ']']).to_string(), 445),
        };
        if host.is_empty() || port == 0 {
            return Err(bad());
        }
        Ok(Target {
            host,
            port,
            share,
            dir: dir.join("\\"),
        })
    }

    pub fn display(&self) -> String {
        let port = if self.port == 445 {
            String::new()
        } else {
            format!(":{}", self.port)
        };
        let dir = if self.dir.is_empty() {
            String::new()
        } else {
            format!("/{}", self.dir.replace('\\', "/"))
        };
        format!("//{}{port}/{}{dir}", self.host, self.share)
    }
}

/// What a run does; built and validated by the CLI.
#[derive(Debug, Clone)]
pub struct Plan {
    pub target: Target,
    pub credentials: Credentials,
    pub settings: Settings,
    pub timeout: std::time::Duration,
}

/// The settings a run records (never the password).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub target: String,
    /// The user name; None for a guest (anonymous) session.
    pub user: Option<String>,
    pub workloads: Vec<Workload>,
    pub securities: Vec<Security>,
    pub dialects: Vec<Dialect>,
    /// The sequential file size asked for; None: 1 GiB or what the share has room for.
    pub size_bytes: Option<u64>,
    pub block_bytes: u32,
    pub depth: u32,
    pub small_files: u32,
    pub small_file_bytes: u32,
    pub metadata_dirs: u32,
    pub metadata_files_per_dir: u32,
    /// The sequential workloads' throughput point, ms (`--interval`); absent:
    /// no timeline (`check --smb`, `tune try`, runs stored before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_ms: Option<u64>,
}

impl Settings {
    /// Sequential workloads only, the client plain, every dialect, four 1 MiB
    /// requests in flight, `size` bytes: what `check --smb` and `tune try` run.
    pub fn sequential(
        target: &Target,
        user: Option<String>,
        workloads: Vec<Workload>,
        size: u64,
    ) -> Settings {
        Settings {
            target: target.display(),
            user,
            workloads,
            securities: vec![Security::Plain],
            dialects: Dialect::ALL.to_vec(),
            size_bytes: Some(size),
            block_bytes: 1 << 20,
            depth: 4,
            small_files: 0,
            small_file_bytes: 64 << 10,
            metadata_dirs: 0,
            metadata_files_per_dir: 0,
            interval_ms: None,
        }
    }
}

/// One workload (or one phase of small-files) under one security mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadResult {
    pub workload: Workload,
    /// small-files: "write", "read" or "delete"; metadata: "list-stat".
    #[serde(default)]
    pub phase: Option<String>,
    pub bytes: u64,
    pub ops: u64,
    pub elapsed_ns: u64,
    /// fio's names: bytes per second and operations per second.
    pub bw_bytes: f64,
    pub iops: f64,
    #[serde(default)]
    pub files_per_sec: Option<f64>,
    /// Completion latency of each request (sequential) or file (small-files).
    pub clat_ns: Option<LatencyStats>,
    /// This process's CPU (user + system) for the workload.
    pub client_cpu_ns: u64,
    /// The server's CPU when the server is this box.
    #[serde(default)]
    pub server: Option<server::ServerCost>,
    /// seq-read only: whether the file was dropped from the server's page
    /// cache first (this box's smbd), or why not; `None` for a remote server,
    /// whose cache nastune cannot empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold_cache: Option<ColdCache>,
    /// Sequential workloads with an interval: bytes per interval by
    /// completion time, and the cliff or stall in them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<crate::timeline::Timeline>,
}

/// How a sequential read started on a server that is this box.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "reason")]
pub enum ColdCache {
    /// The file was written out and dropped from the page cache: the read
    /// came from the storage.
    Evicted,
    /// It could not be: the read may have come from memory.
    NotEvicted(String),
}

impl WorkloadResult {
    pub fn label(&self) -> String {
        match &self.phase {
            Some(p) => format!("{} {p}", self.workload.name()),
            None => self.workload.name().to_string(),
        }
    }
}

/// Everything measured under one security mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecurityRun {
    pub security: Security,
    pub session: SessionInfo,
    /// The sequential file size used, after the share's free space.
    pub size_bytes: u64,
    /// The block used, after the negotiated maximum.
    pub block_bytes: u32,
    pub results: Vec<WorkloadResult>,
}

/// The slowdown of a security mode against plain for one workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slowdown {
    pub workload: String,
    pub security: Security,
    /// plain throughput / this mode's throughput: 2.0 means half as fast.
    pub factor: f64,
}

/// The document `bench smb` produces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmbReport {
    pub schema_version: u32,
    pub tool_version: String,
    pub settings: Settings,
    /// Whether the server is this box (its costs were sampled).
    pub server_local: bool,
    pub runs: Vec<SecurityRun>,
    #[serde(default)]
    pub slowdowns: Vec<Slowdown>,
    /// Whether the box was quiet while we measured; a local smbd is part of
    /// the work, not a disturbance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<crate::bench::validity::Validity>,
}

impl crate::doc::Document for SmbReport {
    const KIND: crate::doc::DocKind = crate::doc::DocKind::Smb;
    const VERSION: u32 = SCHEMA_VERSION;

    fn validity(&self) -> Option<&crate::bench::validity::Validity> {
        self.validity.as_ref()
    }
}

impl SmbReport {
    /// The document of these security runs, with their slowdowns against the
    /// plain one.
    pub fn new(
        settings: Settings,
        server_local: bool,
        runs: Vec<SecurityRun>,
        validity: Option<crate::bench::validity::Validity>,
    ) -> SmbReport {
        SmbReport {
            schema_version: SCHEMA_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            settings,
            server_local,
            slowdowns: slowdowns(&runs),
            runs,
            validity,
        }
    }
}

/// Slowdown factors of every non-plain run against the plain run, per workload label.
pub fn slowdowns(runs: &[SecurityRun]) -> Vec<Slowdown> {
    let Some(plain) = runs.iter().find(|r| r.security == Security::Plain) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for run in runs.iter().filter(|r| r.security != Security::Plain) {
        for r in &run.results {
            let base = plain.results.iter().find(|p| p.label() == r.label());
            if let Some(b) = base.filter(|b| b.iops > 0.0 && r.iops > 0.0) {
                out.push(Slowdown {
                    workload: r.label(),
                    security: run.security,
                    factor: b.iops / r.iops,
                });
            }
        }
    }
    out
}

/// The SMB part of `check --smb`: the plan's security modes in turn, as one
/// document; the error as text for check's "not measured" list.
#[cfg(feature = "smb")]
pub fn measure(
    plan: &crate::bench::smb::Plan,
    root: &crate::root::Root,
    progress: &mut dyn FnMut(&str),
) -> Result<crate::bench::smb::SmbReport, String> {
    use crate::bench::smb::{self, engine};
    let (addr, local) = engine::resolve(plan).map_err(|e| e.to_string())?;
    let mut runs = Vec::new();
    for security in &plan.settings.securities {
        runs.push(
            engine::run_security(plan, addr, local, *security, root, progress)
                .map_err(|e| e.to_string())?,
        );
    }
    Ok(smb::SmbReport::new(
        plan.settings.clone(),
        local,
        runs,
        None,
    ))
}

#[cfg(not(feature = "smb"))]
pub fn measure(
    _plan: &crate::bench::smb::Plan,
    _root: &crate::root::Root,
    _progress: &mut dyn FnMut(&str),
) -> Result<crate::bench::smb::SmbReport, String> {
    Err("this nastune was built without SMB support (cargo feature 'smb')".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_with_port_dir_and_backslashes() {
        let t = Target::parse("//nas.local:4450/public/a/b").expect("ok");
        assert_eq!(
            (t.host.as_str(), t.port, t.share.as_str(), t.dir.as_str()),
            ("nas.local", 4450, "public", "a\\b")
        );
        assert_eq!(t.display(), "//nas.local:4450/public/a/b");
        let t = Target::parse("\\\\10.0.0.2\\data").expect("ok");
        assert_eq!((t.port, t.dir.as_str()), (445, ""));
        assert_eq!(t.display(), "//10.0.0.2/data");
        for bad in [
            "nas/share",
            "//nas",
            "//:445/x",
            "//nas:0/x",
            "//nas:99999/x",
            "//nas/s/../x",
        ] {
            let e = Target::parse(bad).expect_err(bad);
            assert!(e.to_string().contains(&format!("'{bad}'")), "{e}");
        }
    }

    fn result(workload: Workload, iops: f64) -> WorkloadResult {
        WorkloadResult {
            workload,
            phase: None,
            bytes: 0,
            ops: 1,
            elapsed_ns: 1,
            bw_bytes: iops,
            iops,
            files_per_sec: None,
            clat_ns: None,
            client_cpu_ns: 0,
            server: None,
            cold_cache: None,
            timeline: None,
        }
    }

    #[test]
    fn slowdown_is_plain_over_mode() {
        let session = SessionInfo {
            dialect: Dialect::Smb311,
            signing: None,
            cipher: None,
            max_read_bytes: 1,
            max_write_bytes: 1,
            max_transact_bytes: 1,
            credits_granted: 1,
            guest: false,
        };
        let run = |security, iops| SecurityRun {
            security,
            session: session.clone(),
            size_bytes: 1,
            block_bytes: 1,
            results: vec![result(Workload::SeqRead, iops)],
        };
        let s = slowdowns(&[run(Security::Plain, 100.0), run(Security::Encrypt, 25.0)]);
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].security, s[0].factor), (Security::Encrypt, 4.0));
        assert!(slowdowns(&[run(Security::Sign, 1.0)]).is_empty());
    }
}
