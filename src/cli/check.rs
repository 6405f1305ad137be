//! `nastune check`.

use std::path::PathBuf;

use clap::Args;

use crate::advise::Severity;
use crate::check::plan::{DiskRequest, Request};

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

impl CheckArgs {
    /// What the command line asks of `check`; [`crate::check::CheckPlan::new`] decides the
    /// rest (the disk tests' directory) once it has looked at the box.
    pub fn request(&self) -> anyhow::Result<Request> {
        Ok(Request {
            tree: self.root.clone(),
            disk: (!self.skip_disk).then(|| DiskRequest {
                dir: self.dir.clone(),
                seconds: self.disk_seconds,
                size: self.disk_size,
            }),
            crypto: !self.skip_crypto,
            tcp: !self.skip_tcp,
            peer: self.peer.clone(),
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
            settle_s: self.guard.settle,
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::check::CheckPlan;
    use crate::cli::{BenchCommand, Cli, Command};
    use crate::root::Root;

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
        let plan = CheckPlan::new(check.request().unwrap(), &Root::live()).unwrap();
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
            let e = CheckPlan::new(check.request().unwrap(), &Root::live())
                .unwrap_err()
                .to_string();
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
            check.request().unwrap().smb.unwrap().settings.securities
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
        let plan = CheckPlan::new(check.request().unwrap(), &Root::live()).unwrap();
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
