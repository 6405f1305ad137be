//! `nastune check`.

use std::path::PathBuf;

use std::time::Duration;

use clap::Args;

use crate::advise::Severity;
use crate::bench::{crypto, disk};
use crate::net;

pub const LONG_ABOUT: &str = "The main job: inventory the box, measure what is cheap to \
measure (sequential and random I/O in a temporary file in --dir, cipher speed at dm-crypt's \
request size, this box's loopback TCP ceiling, and the network to --peer when given), then list the findings and name the slowest stage of each data path with its \
number (network, TCP stack, crypto, storage, and with --smb the shared CPU from the copy's \
per-byte costs on the cores the serving smbd may use; without it, an SMB share's CPU is \
estimated from the CPU's kind, clock and cores, labelled as an estimate with its range, and \
a path whose CPU may lie below the slowest measured stage is not called limited by that \
stage). Takes about a minute; everything is saved in the store.\n\nExit codes: 0 ok, 1 a finding at or above --fail-on, 2 usage or runtime error, 130 \
interrupted.\n\nExamples:\n  nastune check\n  nastune check --dir /srv --json\n  \
nastune check --skip-disk --fail-on warning";

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Directory for the disk tests (a temporary file is created and removed there);
    /// default: the --smb share's directory when this box serves it, else the current one
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Measured seconds per disk test (four tests)
    #[arg(long, value_name = "SECS", default_value_t = 3,
          value_parser = crate::cli::values::whole("seconds", 1..=60))]
    pub disk_seconds: u32,
    /// Size of the temporary disk test file
    #[arg(long, value_name = "BYTES", default_value = "256M", value_parser = super::bench_disk::size_arg)]
    pub disk_size: u64,
    /// Do not run the disk tests
    #[arg(long)]
    pub skip_disk: bool,
    /// Do not run the cipher tests
    #[arg(long)]
    pub skip_crypto: bool,
    /// Also measure the network against this host running 'nastune net serve' or 'iperf3 -s'
    #[arg(long, value_name = "HOST")]
    pub peer: Option<String>,
    /// Do not measure the loopback TCP ceiling
    #[arg(long)]
    pub skip_tcp: bool,
    /// Also copy a file to and from this SMB share (//HOST[:PORT]/SHARE[/DIR]): the
    /// end-to-end figure the bottleneck model is checked against
    #[arg(long, value_name = "//HOST/SHARE", conflicts_with = "root")]
    pub smb: Option<String>,
    /// User for --smb (password from NASTUNE_SMB_PASSWORD, --smb-password-file or a prompt)
    #[arg(long, value_name = "USER", requires = "smb")]
    pub smb_user: Option<String>,
    /// Read the --smb password from the first line of this file
    #[arg(long, value_name = "FILE", requires = "smb")]
    pub smb_password_file: Option<PathBuf>,
    /// Bytes written then read over --smb
    #[arg(long, value_name = "BYTES", default_value = "256M", requires = "smb",
          value_parser = super::bench_disk::size_arg)]
    pub smb_size: u64,
    /// Copy over --smb a second time with SMB encryption on: the encrypted copy's
    /// per-byte costs give the what-if "SMB encryption on"
    #[arg(long, requires = "smb")]
    pub smb_encrypt_too: bool,
    /// Read the system from this tree (with proc/, sys/, etc/) instead of / and measure
    /// nothing: the bottleneck uses the ceilings the tree shows (links, USB buses)
    #[arg(long, value_name = "DIR", conflicts_with = "peer")]
    pub root: Option<PathBuf>,
    /// Print the versioned JSON document instead of the summary
    #[arg(long)]
    pub json: bool,
    /// Exit with status 1 when a finding is at or above this severity
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<Severity>,
    #[command(flatten)]
    pub guard: crate::cli::guard::GuardArgs,
}

/// What `check` measures, each part `None` when skipped.
#[derive(Debug, Clone)]
pub struct CheckPlan {
    pub disk: Option<disk::Plan>,
    pub crypto: Option<crypto::Settings>,
    pub loopback: Option<net::plan::Plan>,
    /// The peer's name as given, and the test against it.
    pub peer: Option<(String, net::plan::Plan)>,
    /// The share to copy a file to and from.
    pub smb: Option<crate::bench::smb::Plan>,
}

impl CheckArgs {
    /// The quick measurements: the `quick` disk suite with a short warm-up in a
    /// temporary file in --dir, dm-crypt's request size one at a time, two
    /// seconds of loopback TCP, five to the peer.
    pub fn plan(&self) -> anyhow::Result<CheckPlan> {
        // A tree is another box: nothing here can be measured for it.
        let live = self.root.is_none();
        let disk = if self.skip_disk || !live {
            None
        } else {
            let dir = self.dir.clone().unwrap_or_else(|| PathBuf::from("."));
            Some(self.disk_plan(&dir)?)
        };
        let crypto = (!self.skip_crypto && live).then(|| crypto::Settings {
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
            loopback: (!self.skip_tcp && live).then(|| net::plan::Plan::loopback(2)),
            peer: self.peer.as_ref().map(|p| {
                (
                    p.clone(),
                    net::plan::Plan::tcp(p, net::plan::DEFAULT_PORT, 5),
                )
            }),
            smb: match &self.smb {
                Some(t) => Some(super::bench_smb::check_plan(
                    t,
                    self.smb_user.as_deref(),
                    self.smb_password_file.as_deref(),
                    self.smb_size,
                    self.smb_encrypt_too,
                )?),
                None => None,
            },
        })
    }

    /// The quick disk suite in `dir` (--dir, or the served share's directory).
    pub fn disk_plan(&self, dir: &std::path::Path) -> anyhow::Result<disk::Plan> {
        // Absolute, so the bottleneck analysis finds the filesystem it measured.
        let dir = std::fs::canonicalize(dir)
            .map_err(|e| anyhow::anyhow!("--dir '{}': {e}", dir.display()))?;
        check_dir(&dir)?;
        let opts = disk::SuiteOptions {
            runtime: Duration::from_secs(u64::from(self.disk_seconds)),
            ramp_time: Duration::from_millis(500),
            ..disk::SuiteOptions::default()
        };
        let mut plan = disk::Plan::suite(dir, disk::suites::Suite::Quick, opts)?;
        plan.size = Some(self.disk_size);
        plan.settle_s = self.guard.settle;
        Ok(plan)
    }
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
    use clap::Parser;

    use crate::cli::{BenchCommand, Cli, Command};

    fn parse(argv: &[&str]) -> Command {
        let mut full = vec!["nastune"];
        full.extend_from_slice(argv);
        Cli::try_parse_from(full).unwrap().command
    }

    #[test]
    fn the_disk_plan_is_what_bench_disk_plans_for_the_same_request() {
        let Command::Check(check) = parse(&["check", "--disk-seconds", "2", "--dir", "/"]) else {
            panic!("not check");
        };
        let Command::Bench(bench) = parse(&[
            "bench",
            "disk",
            "--suite",
            "quick",
            "--runtime",
            "2s",
            "--ramp-time",
            "500ms",
            "--size",
            "256M",
            "/",
        ]) else {
            panic!("not bench");
        };
        let BenchCommand::Disk(disk) = bench.command else {
            panic!("not bench disk");
        };
        let plan = check.plan().unwrap();
        assert_eq!(plan.disk, Some(disk.plan().unwrap()));
        assert_eq!(plan.disk.unwrap().size, Some(256 << 20));
    }

    #[test]
    fn a_device_or_file_as_dir_is_refused_by_name() {
        let file = tempfile::NamedTempFile::new().unwrap();
        for (path, want) in [
            ("/dev/null", "is not a directory"),
            (file.path().to_str().unwrap(), "is not a directory"),
        ] {
            let Command::Check(check) = parse(&["check", "--dir", path]) else {
                panic!("not check");
            };
            let e = check.plan().unwrap_err().to_string();
            assert!(e.contains(want) && e.contains(&format!("'{path}'")), "{e}");
        }
    }

    #[test]
    fn smb_encrypt_too_copies_plain_then_encrypted() {
        use crate::smb::Security;
        let securities = |argv: &[&str]| {
            let Command::Check(check) = parse(argv) else {
                panic!("not check");
            };
            check.plan().unwrap().smb.unwrap().settings.securities
        };
        assert_eq!(
            securities(&["check", "--smb", "//nas/s"]),
            vec![Security::Plain]
        );
        assert_eq!(
            securities(&["check", "--smb", "//nas/s", "--smb-encrypt-too"]),
            vec![Security::Plain, Security::Encrypt]
        );
        // Without a share there is nothing to encrypt.
        assert!(Cli::try_parse_from(["nastune", "check", "--smb-encrypt-too"]).is_err());
    }

    #[test]
    fn the_net_plans_are_what_bench_net_plans_for_the_same_request() {
        let Command::Check(check) = parse(&["check", "--skip-disk", "--peer", "nas"]) else {
            panic!("not check");
        };
        let net = |argv: &[&str]| {
            let Command::Bench(b) = parse(argv) else {
                panic!("not bench");
            };
            let BenchCommand::Net(n) = b.command else {
                panic!("not bench net");
            };
            n.plan().unwrap()
        };
        let plan = check.plan().unwrap();
        assert!(plan.disk.is_none());
        let want = net(&["bench", "net", "--loopback", "-t", "2"]);
        let got = plan.loopback.unwrap();
        assert_eq!(format!("{got:?}"), format!("{want:?}"));
        let (peer, got) = plan.peer.unwrap();
        let want = net(&["bench", "net", "nas", "-t", "5"]);
        assert_eq!(peer, "nas");
        assert_eq!(format!("{got:?}"), format!("{want:?}"));
    }
}
