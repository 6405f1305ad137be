//! `nastune bench smb`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::bench::smb::{Plan, Settings, Target, Workload};
use crate::smb::{Credentials, Dialect, Security};

pub const LONG_ABOUT: &str = "Measure a file server through the real SMB2/SMB3 protocol, \
with nastune's own client: no mount and no root needed. Workloads (--workload, comma-separated, \
default all): seq-write and seq-read of one file (--size, default 1 GiB or four fifths of the \
share's free space; on this box's smbd the file leaves the page cache before the read; --block, capped to the server's maximum; --depth requests in flight within \
the credits the server grants), small-files (create, write and close --files files of 64 KiB, \
read them back, delete them: files/s and MB/s, the 'copy a photo folder' case) and metadata \
(list and stat a tree). Results use fio's names (bw_bytes, iops, clat_ns percentiles); the run \
records the negotiated dialect, signing, cipher, maximum read/write size and credits.\n\n\
--security plain|sign|encrypt forces the client side (the server may still require signing or \
encryption, which the client then does); --compare-security runs every workload plain, signed \
and encrypted in turn and prints the slowdown factors: what 'server signing' and 'smb encrypt' \
cost on this box.\n\n\
Credentials: --user NAME (or DOMAIN\\\\NAME) with the password from NASTUNE_SMB_PASSWORD, \
--password-file FILE or a prompt on a terminal; never on the command line and never stored. \
Without --user the session is anonymous (guest, where the share allows it).\n\n\
Everything is written inside a fresh directory nastune-bench-<id> under SHARE[/DIR]; the run \
refuses if it exists and removes it, also on an error or Ctrl-C (exit 130); after a broken \
connection over a fresh session, and one even that cannot remove is removed by the next run \
from this host once its run is gone. When the \
server is this box, the CPU of the smbd processes, softirq, iowait and the kernel threads doing \
crypto, RAID and USB work are sampled per workload, as CPU-seconds per GB.\n\nExamples:\n  \
nastune bench smb //nas.local/public\n  \
NASTUNE_SMB_PASSWORD=… nastune bench smb //nas.local/data/bench --user alice --compare-security\n  \
nastune bench smb //192.168.1.5/share --user alice --password-file ~/.smbpw --workload seq-read,seq-write --size 4G --depth 8\n  \
nastune bench smb //127.0.0.1:4450/rw --workload small-files --files 1000 --json";

#[derive(Debug, Args)]
pub struct SmbArgs {
    /// The share to measure: //HOST[:PORT]/SHARE[/DIR]
    pub target: String,
    /// User to log on as (NAME or DOMAIN\NAME); without it, an anonymous (guest) session
    #[arg(short = 'U', long)]
    pub user: Option<String>,
    /// Read the password from the first line of this file
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
    /// Workloads to run, comma-separated (default: all)
    #[arg(short = 'w', long, value_enum, value_delimiter = ',')]
    pub workload: Vec<Workload>,
    /// Size of the sequential file (e.g. 512M, 4G); default 1G or what the share has room for
    #[arg(long, value_parser = parse_size)]
    pub size: Option<u64>,
    /// Request size of the sequential workloads, capped to the server's maximum
    #[arg(long, default_value = "1M", value_parser = parse_size)]
    pub block: u64,
    /// Requests in flight in the sequential workloads
    #[arg(long, default_value_t = 4, value_parser = crate::cli::values::whole("depth", 1..=256))]
    pub depth: u32,
    /// Seconds per throughput point of the sequential and small-file workloads' timeline (0.1 and up, iperf3's -i)
    #[arg(long, value_name = "SECS", default_value = "1", value_parser = super::bench_disk::interval_arg)]
    pub interval: Duration,
    /// Files in the small-files workload
    #[arg(long, default_value_t = 256, value_parser = crate::cli::values::whole("files", 1..=100_000))]
    pub files: u32,
    /// Client-side security: plain, sign or encrypt
    #[arg(
        long,
        value_enum,
        default_value = "plain",
        conflicts_with = "compare_security"
    )]
    pub security: Security,
    /// Run every workload plain, signed and encrypted and print the slowdown factors
    #[arg(long)]
    pub compare_security: bool,
    /// Dialects to offer, comma-separated (2.0.2, 2.1, 3.0, 3.0.2, 3.1.1; default all)
    #[arg(long, value_delimiter = ',', value_parser = parse_dialect)]
    pub dialect: Vec<Dialect>,
    /// Seconds without an answer from the server before the run fails
    #[arg(long, value_name = "SECS", default_value_t = 30, value_parser = crate::cli::values::whole("timeout", 1..=3600))]
    pub timeout: u32,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub guard: crate::cli::guard::GuardArgs,
}

#[derive(Debug, thiserror::Error)]
pub enum SmbArgsError {
    #[error(transparent)]
    Target(#[from] crate::bench::smb::TargetError),
    #[error(
        "--user '{0}' carries a password after '%': pass it in NASTUNE_SMB_PASSWORD, --password-file or at the prompt instead"
    )]
    PasswordInUser(String),
    #[error("cannot read the password file '{path}': {cause}")]
    PasswordFile {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error(
        "no password for user '{0}': set NASTUNE_SMB_PASSWORD, pass --password-file FILE or run on a terminal to be asked"
    )]
    NoPassword(String),
    #[error("--block {0} is out of range: use 4K to 8M")]
    Block(u64),
}

pub fn parse_size(s: &str) -> Result<u64, String> {
    crate::bench::disk::workload::parse_size(s).map_err(|e| e.to_string())
}

fn parse_dialect(s: &str) -> Result<Dialect, String> {
    Dialect::parse(s)
        .ok_or_else(|| format!("'{s}' is not an SMB dialect: use 2.0.2, 2.1, 3.0, 3.0.2 or 3.1.1"))
}

impl SmbArgs {
    pub fn plan(&self) -> Result<Plan, SmbArgsError> {
        let target = Target::parse(&self.target)?;
        if !(4096..=8 << 20).contains(&self.block) {
            return Err(SmbArgsError::Block(self.block));
        }
        let credentials = credentials(self.user.as_deref(), self.password_file.as_deref())?;
        let workloads = if self.workload.is_empty() {
            Workload::ALL.to_vec()
        } else {
            let mut w = self.workload.clone();
            w.sort();
            w.dedup();
            w
        };
        let securities = if self.compare_security {
            vec![Security::Plain, Security::Sign, Security::Encrypt]
        } else {
            vec![self.security]
        };
        let dialects = if self.dialect.is_empty() {
            Dialect::ALL.to_vec()
        } else {
            self.dialect.clone()
        };
        Ok(Plan {
            settings: Settings {
                target: target.display(),
                user: self.user.clone(),
                workloads,
                securities,
                dialects,
                size_bytes: self.size,
                block_bytes: self.block as u32,
                depth: self.depth,
                small_files: self.files,
                small_file_bytes: 64 << 10,
                metadata_dirs: 8,
                metadata_files_per_dir: 64,
                interval_ms: Some(self.interval.as_millis() as u64),
            },
            target,
            credentials,
            timeout: Duration::from_secs(u64::from(self.timeout)),
        })
    }
}

/// The session's credentials: anonymous without a user, else the user with
/// the password from NASTUNE_SMB_PASSWORD, then `password_file`, then a prompt
/// on a terminal (never from argv).
pub fn credentials(
    user: Option<&str>,
    password_file: Option<&std::path::Path>,
) -> Result<Credentials, SmbArgsError> {
    let Some(u) = user else {
        return Ok(Credentials::Anonymous);
    };
    if let Some((name, _)) = u.split_once('%') {
        return Err(SmbArgsError::PasswordInUser(name.to_string()));
    }
    let (domain, name) = u
        .split_once(['\\', '/'])
        .map_or((String::new(), u.to_string()), |(d, n)| {
            (d.to_string(), n.to_string())
        });
    let password = if let Some(p) = std::env::var_os("NASTUNE_SMB_PASSWORD") {
        p.to_string_lossy().into_owned()
    } else if let Some(path) = password_file {
        let text = std::fs::read_to_string(path).map_err(|source| SmbArgsError::PasswordFile {
            path: path.to_path_buf(),
            cause: source,
        })?;
        text.lines().next().unwrap_or("").to_string()
    } else {
        prompt(u).ok_or_else(|| SmbArgsError::NoPassword(u.to_string()))?
    };
    Ok(Credentials::User {
        user: name,
        domain,
        password,
    })
}

/// What `check --smb` runs: a sequential write then read of `size` bytes,
/// plain (then encrypted with `encrypt_too`), four 1 MiB requests in flight.
pub fn check_plan(
    target: &str,
    user: Option<&str>,
    password_file: Option<&std::path::Path>,
    size: u64,
    encrypt_too: bool,
) -> Result<Plan, SmbArgsError> {
    let parsed = Target::parse(target)?;
    let mut settings = Settings::sequential(
        &parsed,
        user.map(str::to_string),
        vec![Workload::SeqWrite, Workload::SeqRead],
        size,
    );
    if encrypt_too {
        settings.securities.push(Security::Encrypt);
    }
    Ok(Plan {
        settings,
        target: parsed,
        credentials: credentials(user, password_file)?,
        timeout: Duration::from_secs(30),
    })
}

/// Asks on the terminal with echo off; None when stdin is not a terminal.
fn prompt(user: &str) -> Option<String> {
    use std::io::{BufRead, IsTerminal};
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return None;
    }
    crate::output::prompt(format_args!("Password for '{user}': "));
    // SAFETY: tcgetattr/tcsetattr on fd 0, which is a terminal; the struct is
    // zeroed and then filled by tcgetattr before use.
    let saved = unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(0, &mut t) != 0 {
            return None;
        }
        let mut quiet = t;
        quiet.c_lflag &= !libc::ECHO;
        libc::tcsetattr(0, libc::TCSANOW, &quiet);
        t
    };
    let mut line = String::new();
    let read = stdin.lock().read_line(&mut line);
    // SAFETY: restores the settings read above on the same terminal.
    unsafe {
        libc::tcsetattr(0, libc::TCSANOW, &saved);
    }
    crate::note!("");
    read.ok()?;
    Some(line.trim_end_matches(['\n', '\r']).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: SmbArgs,
    }

    fn args(v: &[&str]) -> SmbArgs {
        T::try_parse_from(std::iter::once("x").chain(v.iter().copied()))
            .expect("parse")
            .a
    }

    #[test]
    fn defaults_run_every_workload_plain_as_guest() {
        let p = args(&["//nas/share/sub"]).plan().expect("plan");
        assert_eq!(p.settings.workloads, Workload::ALL.to_vec());
        assert_eq!(p.settings.securities, vec![Security::Plain]);
        assert_eq!((p.settings.block_bytes, p.settings.depth), (1 << 20, 4));
        assert_eq!(p.credentials, Credentials::Anonymous);
        assert_eq!(p.target.dir, "sub");
    }

    #[test]
    fn compare_security_runs_all_three_and_conflicts_with_security() {
        let p = args(&["//nas/s", "--compare-security"])
            .plan()
            .expect("plan");
        assert_eq!(p.settings.securities.len(), 3);
        assert!(
            T::try_parse_from(["x", "//nas/s", "--compare-security", "--security", "sign"])
                .is_err()
        );
    }

    #[test]
    fn a_password_in_the_user_is_refused_without_echoing_it() {
        let e = args(&["//nas/s", "--user", "alice%hunter2"])
            .plan()
            .expect_err("refused");
        assert!(e.to_string().contains("'alice'"), "{e}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }

    #[test]
    fn password_file_first_line_and_domain_split() {
        let dir = tempfile::tempdir().expect("tmp");
        let f = dir.path().join("pw");
        std::fs::write(&f, "s3cret\nignored\n").expect("write");
        // The environment wins when set; this test only runs the file path
        // when the variable is absent, as in CI.
        if std::env::var_os("NASTUNE_SMB_PASSWORD").is_some() {
            return;
        }
        let p = args(&[
            "//nas/s",
            "--user",
            "WG\\bob",
            "--password-file",
            f.to_str().expect("utf8"),
        ])
        .plan()
        .expect("plan");
        assert_eq!(
            p.credentials,
            Credentials::User {
                user: "bob".into(),
                domain: "WG".into(),
                password: "s3cret".into()
            }
        );
    }

    #[test]
    fn bad_block_and_dialect_are_refused() {
        assert!(args(&["//nas/s", "--block", "1K"]).plan().is_err());
        assert!(T::try_parse_from(["x", "//nas/s", "--dialect", "1.0"]).is_err());
        let p = args(&["//nas/s", "--dialect", "3.0,3.1.1"])
            .plan()
            .expect("plan");
        assert_eq!(p.settings.dialects, vec![Dialect::Smb30, Dialect::Smb311]);
    }
}
