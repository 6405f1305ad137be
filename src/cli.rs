//! The command line: one clap definition that also produces the man page and the
//! shell completions (`nastune generate`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("NASTUNE_BUILD_TARGET"),
    ")"
);

/// Probe, measure, advise and tune small Linux servers and NAS boxes.
#[derive(Debug, Parser)]
#[command(
    name = "nastune",
    version = VERSION,
    about,
    long_about = "nastune finds out why a small Linux server or NAS is slow: it probes the box \
(CPU, memory, NICs, the storage stack, sysctls, kernel crypto, Samba/NFS, SMART), and keeps \
every run in an SQLite store.\n\nExit codes: 0 ok, 2 usage or runtime error.",
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]
    #[arg(long, global = true, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Do not save this run in the store
    #[arg(long, global = true, conflicts_with = "db")]
    pub no_store: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inventory the box: host, CPU, memory, network, storage stack, settings
    #[command(
        long_about = "Inventory the box: host, CPU, memory, network interfaces, the \
storage stack, filesystems, sysctls, kernel crypto, file services and SMART.\n\n\
Each section reports ok, unsupported (with the reason) or failed (with the error); one \
unreadable file never fails the probe.\n\nExamples:\n  nastune probe\n  nastune probe --json\n  \
nastune probe --capture /tmp/mybox    # send this tree with a bug report\n  \
nastune probe --root /tmp/mybox       # read a captured tree back"
    )]
    Probe(ProbeArgs),
    /// Find misconfigurations and explain them, with the arithmetic
    #[command(
        long_about = "Turn a probe of this box into findings: what is misconfigured or \
outdated for Linux 6.x and Samba 4.x, why, and the typed change that fixes it.\n\n\
Exit codes: 0 ok, 1 a finding at or above --fail-on, 2 usage or runtime error.\n\nExamples:\n  \
nastune advise\n  nastune advise --list\n  nastune advise --json --fail-on warning"
    )]
    Advise(AdviseArgs),
    /// List, show or remove stored runs
    #[command(subcommand)]
    History(HistoryCommand),
    /// Measure what the box does: disk, crypto
    Bench(BenchArgs),
    /// Watch error counters, disks, md, SMART, pressure and temperatures over time
    #[command(long_about = crate::cmd::watch::LONG_ABOUT)]
    Watch(crate::cmd::watch::WatchArgs),
    /// Generate the man page or shell completions
    #[command(hide = true)]
    Generate(GenerateArgs),
}

#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// Read the system from this tree (with proc/, sys/, etc/) instead of /
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Print the versioned JSON document instead of the summary
    #[arg(long)]
    pub json: bool,
    /// Copy every file the probe reads into DIR (must be new or empty)
    #[arg(long, value_name = "DIR")]
    pub capture: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct AdviseArgs {
    /// Read the system from this tree (with proc/, sys/, etc/) instead of /
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Print the rule registry instead of evaluating it
    #[arg(long)]
    pub list: bool,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
    /// Exit with status 1 when a finding is at or above this severity
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<crate::advise::Severity>,
}

#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// List stored runs, newest first
    List(HistoryListArgs),
    /// Show one run with its stored documents
    Show(HistoryShowArgs),
    /// Remove runs and their documents from the store
    Rm(HistoryRmArgs),
}

#[derive(Debug, Args)]
pub struct HistoryListArgs {
    /// Only runs of this kind (probe, bench-disk, ...)
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,
    /// At most this many runs
    #[arg(long, default_value_t = 50, value_name = "N")]
    pub limit: u32,
    /// JSON instead of a table
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct HistoryShowArgs {
    /// The run id (from `history list`)
    pub run: i64,
    /// JSON instead of a summary
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct HistoryRmArgs {
    /// Run ids to remove
    #[arg(required = true, num_args = 1..)]
    pub runs: Vec<i64>,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Storage throughput, IOPS, latency and the CPU they cost
    #[command(long_about = crate::cmd::bench_disk::LONG_ABOUT)]
    Disk(crate::cmd::bench_disk::DiskArgs),
    /// Cipher and key-derivation speed: kernel (AF_ALG, as dm-crypt) and user space
    #[command(long_about = crate::cmd::bench_crypto::CRYPTO_LONG_ABOUT)]
    Crypto(crate::cmd::bench_crypto::BenchCryptoArgs),
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    #[command(subcommand)]
    pub what: GenerateWhat,
}

#[derive(Debug, Subcommand)]
pub enum GenerateWhat {
    /// The man page (roff) on stdout
    Man,
    /// docs/rules.md (Markdown) on stdout, from the rule registry
    RulesDoc,
    /// Completions for SHELL on stdout
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
