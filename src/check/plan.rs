//! What `check` runs, decided once before anything is measured: the command
//! line's [`Request`] and a look at the box (is the --smb share served here,
//! and from which directory) make the [`CheckPlan`] the engine runs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::bench::smb::local::{self, LocalServer};
use crate::bench::{crypto, disk};
use crate::net;
use crate::root::Root;

/// The quick disk suite the command line asks for, before its directory is
/// chosen.
#[derive(Debug, Clone)]
pub struct DiskRequest {
    /// --dir; `None`: the served share's directory, else the current one.
    pub dir: Option<PathBuf>,
    /// Measured seconds per test (four tests).
    pub seconds: u32,
    /// Size of the temporary test file.
    pub size: u64,
}

/// What the command line asks of `check`, each part `None` or `false` when
/// skipped.
#[derive(Debug, Clone)]
pub struct Request {
    /// The tree read instead of this box (--root): nothing is measured.
    pub tree: Option<PathBuf>,
    pub disk: Option<DiskRequest>,
    pub crypto: bool,
    /// The loopback TCP ceiling.
    pub tcp: bool,
    /// The peer to measure the network against, as given.
    pub peer: Option<String>,
    /// The share to copy a file to and from.
    pub smb: Option<crate::bench::smb::Plan>,
    /// Seconds to wait for an idle box before the first measurement.
    pub settle_s: f64,
}

/// What `check` measures, each part `None` when skipped: plain data, decided
/// once by [`CheckPlan::new`].
#[derive(Debug)]
pub struct CheckPlan {
    /// The tree read instead of this box (--root): nothing is measured.
    pub tree: Option<PathBuf>,
    pub disk: Option<disk::Plan>,
    pub crypto: Option<crypto::Settings>,
    pub loopback: Option<net::plan::Plan>,
    /// The peer's name as given, and the test against it.
    pub peer: Option<(String, net::plan::Plan)>,
    /// The share to copy a file to and from.
    pub smb: Option<crate::bench::smb::Plan>,
    /// The smbd serving that share when it is this box's: the share's own
    /// filesystem is the storage stage of the path checked.
    pub server: Option<LocalServer>,
    /// Seconds the first measurement waits for an idle box.
    pub settle_s: f64,
}

impl CheckPlan {
    /// The quick measurements: the `quick` disk suite with a short warm-up in a
    /// temporary file in --dir (or the share's directory when this box serves
    /// --smb), dm-crypt's request size one at a time, two seconds of loopback
    /// TCP, five to the peer.
    pub fn new(request: Request, root: &Root) -> Result<CheckPlan, PlanError> {
        // A tree is another box: nothing here can be measured for it.
        let live = request.tree.is_none();
        let server = request
            .smb
            .as_ref()
            .and_then(|p| local::served_here(root, p));
        let disk = match &request.disk {
            Some(d) if live => {
                let share_dir = server.as_ref().and_then(|s| s.share_path.as_deref());
                let dir = match (&d.dir, share_dir) {
                    (Some(dir), _) => dir.clone(),
                    (None, Some(share)) => PathBuf::from(share),
                    (None, None) => PathBuf::from("."),
                };
                Some(disk_plan(&dir, d, request.settle_s)?)
            }
            _ => None,
        };
        let crypto = (request.crypto && live).then(|| crypto::Settings {
            duration: Duration::from_millis(100),
            sizes: vec![4096],
            depth: 1,
            filters: Vec::new(),
            argon2_max_kib: 64,
            kdf: false,
        });
        Ok(CheckPlan {
            disk,
            crypto,
            loopback: (request.tcp && live).then(|| net::plan::Plan::loopback(2)),
            peer: request.peer.as_ref().map(|p| {
                (
                    p.clone(),
                    net::plan::Plan::tcp(p, net::plan::DEFAULT_PORT, 5),
                )
            }),
            smb: request.smb,
            server,
            tree: request.tree,
            settle_s: request.settle_s,
        })
    }

    /// How many measuring phases run, for the progress bar.
    pub fn phases(&self) -> usize {
        [
            self.disk.is_some(),
            self.crypto.is_some(),
            self.loopback.is_some(),
            self.peer.is_some(),
            self.smb.is_some(),
        ]
        .into_iter()
        .filter(|on| *on)
        .count()
    }

    /// Why `what` was not measured: read from a tree, or skipped by `flag`.
    pub fn skipped(&self, what: &str, flag: &str) -> String {
        match &self.tree {
            Some(dir) => format!("{what}: not measured in a tree ('{}')", dir.display()),
            None => format!("{what}: skipped ({flag})"),
        }
    }
}

/// The quick disk suite in `dir` (--dir, or the served share's directory).
pub fn disk_plan(
    dir: &Path,
    request: &DiskRequest,
    settle_s: f64,
) -> Result<disk::Plan, PlanError> {
    // Absolute, so the bottleneck analysis finds the filesystem it measured.
    let dir = std::fs::canonicalize(dir).map_err(|error| PlanError::Dir {
        path: dir.to_path_buf(),
        error,
    })?;
    check_dir(&dir)?;
    let opts = disk::SuiteOptions {
        runtime: Duration::from_secs(u64::from(request.seconds)),
        ramp_time: Duration::from_millis(500),
        ..disk::SuiteOptions::default()
    };
    let mut plan = disk::Plan::suite(dir, disk::suites::Suite::Quick, opts)?;
    plan.size = Some(request.size);
    plan.settle_s = settle_s;
    Ok(plan)
}

/// Why `check` cannot plan its disk tests.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    // The I/O error is part of the message, not a source: one line says it.
    #[error("--dir '{}': {error}", path.display())]
    Dir {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error(transparent)]
    NotMeasurable(#[from] DirError),
    #[error(transparent)]
    Workload(#[from] disk::workload::WorkloadError),
}

/// Why a --dir is not one `check` can measure in.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DirError {
    #[error(
        "--dir '{}' is a block device: check measures a filesystem through a temporary file in a directory, and would write to the device itself. Give a directory on the filesystem to measure, or measure the device with 'nastune bench disk --rw read {}'",
        path.display(),
        path.display()
    )]
    BlockDevice { path: PathBuf },
    #[error(
        "--dir '{}' is not a directory: check creates and removes a temporary file in a directory, and would overwrite this one in place. Give the directory it is in",
        path.display()
    )]
    NotADirectory { path: PathBuf },
}

/// `check` measures the filesystem under a directory (its bottleneck names the
/// mount); a device or file given as --dir would be written in place.
fn check_dir(path: &std::path::Path) -> Result<(), DirError> {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::metadata(path) {
        Ok(m) if m.file_type().is_block_device() => Err(DirError::BlockDevice {
            path: path.to_path_buf(),
        }),
        Ok(m) if !m.is_dir() => Err(DirError::NotADirectory {
            path: path.to_path_buf(),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(tree: Option<&Path>) -> Request {
        Request {
            tree: tree.map(Path::to_path_buf),
            disk: Some(DiskRequest {
                dir: None,
                seconds: 1,
                size: 1 << 20,
            }),
            crypto: true,
            tcp: true,
            peer: None,
            smb: None,
            settle_s: 3.0,
        }
    }

    #[test]
    fn a_tree_is_another_box_so_nothing_is_planned_and_the_tree_is_named() {
        let tree = tempfile::tempdir().unwrap();
        let plan = CheckPlan::new(
            request(Some(tree.path())),
            &Root::tree(tree.path()).unwrap(),
        )
        .unwrap();
        assert_eq!(plan.phases(), 0);
        assert_eq!(
            plan.skipped("disk", "--skip-disk"),
            format!("disk: not measured in a tree ('{}')", tree.path().display())
        );
    }

    #[test]
    fn without_dir_or_served_share_the_disk_tests_run_in_the_current_directory() {
        let plan = CheckPlan::new(request(None), &Root::live()).unwrap();
        assert_eq!(plan.phases(), 3);
        let cwd = std::fs::canonicalize(".").unwrap();
        assert_eq!(plan.disk.as_ref().unwrap().path, cwd);
        assert_eq!(
            plan.skipped("crypto", "--skip-crypto"),
            "crypto: skipped (--skip-crypto)"
        );
    }
}
