//! The command line: one clap definition that also produces the man pages and the
//! shell completions (the `nastune-gen` binary, src/bin/nastune-gen.rs).
//!
//! One file per command (or group): its Args, its long help and, for the
//! commands that run an engine, `plan()`, where the flags' defaults and checks
//! turn into the plan the engine takes (`bench::disk::Plan`, `net::plan::Plan`,
//! `crypto::Settings`, `http::Plan`, …). Nothing here runs anything; the
//! commands in src/cmd/ do, and only this module and cmd/ know about clap Args.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

pub mod advise;
pub mod bench_crypto;
pub mod bench_disk;
pub mod bench_http;
pub mod bench_net;
pub mod bench_smb;
pub mod check;
pub mod compare;
pub mod guard;
pub mod history;
pub mod net;
pub mod probe;
pub mod report;
pub mod tune;
pub mod values;
pub mod watch;

pub use advise::AdviseArgs;
pub use bench_net::BenchNetArgs;
pub use history::{HistoryCommand, HistoryListArgs, HistoryRmArgs, HistoryShowArgs};
pub use net::{NetArgs, NetCommand, NetServeArgs};
pub use probe::ProbeArgs;

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
    long_about = "nastune finds out why a small Linux server or NAS is slow and what to change: \
it probes the box (CPU, memory, NICs, the storage stack, sysctls, kernel crypto, Samba/NFS, \
SMART), measures disk, ciphers and the network, turns both into findings with the arithmetic, \
watches error counters over time, and keeps every run in an SQLite store. Start with \
'nastune check'.\n\nExit codes: 0 ok, 1 a finding at or above --fail-on (check, advise), \
2 usage or runtime error, 130 interrupted.",
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Accepted by every command. clap numbers each command's options from 0 in field
/// order, so these two (0 and 1 at the top) would sort in among the first options of
/// every subcommand's help; a display order past any command's own (fewer than 100)
/// and before clap's default for -h and -V (999) lists them between the two.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]
    #[arg(long, global = true, value_name = "PATH", display_order = 900)]
    pub db: Option<PathBuf>,
    /// Do not save this run in the store
    #[arg(long, global = true, conflicts_with = "db", display_order = 901)]
    pub no_store: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inventory the box: host, CPU, memory, network, storage stack, settings
    #[command(long_about = probe::LONG_ABOUT)]
    Probe(ProbeArgs),
    /// The main job: probe, measure quickly, advise, name the bottleneck
    #[command(long_about = check::LONG_ABOUT)]
    Check(check::CheckArgs),
    /// Find misconfigurations and explain them, with the arithmetic
    #[command(long_about = advise::LONG_ABOUT)]
    Advise(AdviseArgs),
    /// List, show or remove stored runs
    #[command(subcommand)]
    History(HistoryCommand),
    /// Run a network test server (iperf3-compatible) on this box
    #[command(long_about = net::LONG_ABOUT)]
    Net(NetArgs),
    /// Measure what the box does: disk, crypto, network, HTTP, SMB
    Bench(BenchArgs),
    /// Compare two stored runs: benchmark changes with confidence intervals, settings that differ
    #[command(long_about = compare::LONG_ABOUT)]
    Compare(compare::CompareArgs),
    /// Write stored runs as one self-contained HTML page or as Markdown
    #[command(long_about = report::LONG_ABOUT)]
    Report(report::ReportArgs),
    /// Watch error counters, disks, md, SMART, pressure and temperatures over time
    #[command(long_about = watch::LONG_ABOUT)]
    Watch(watch::WatchArgs),
    /// Apply findings as journaled changes: plan, apply, verify, rollback, confirm
    #[command(long_about = tune::LONG_ABOUT)]
    Tune(tune::TuneArgs),
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

/// Runs one `bench` subcommand. Each bench kind's command implements it for its
/// Args (src/cmd/bench_<kind>.rs), so the list below is both the subcommand
/// list and its dispatch: a new kind is one line here.
pub trait RunBench {
    fn run(&self, global: &GlobalArgs) -> anyhow::Result<ExitCode>;
}

macro_rules! bench_commands {
    ($($(#[$m:meta])* $variant:ident($args:ty),)+) => {
        #[derive(Debug, Subcommand)]
        pub enum BenchCommand {
            $($(#[$m])* $variant($args),)+
        }

        impl BenchCommand {
            /// The chosen kind's command.
            pub fn command(&self) -> &dyn RunBench {
                match self {
                    $(BenchCommand::$variant(a) => a,)+
                }
            }
        }
    };
}

bench_commands! {
    /// Storage throughput, IOPS, latency and the CPU they cost
    #[command(long_about = bench_disk::LONG_ABOUT)]
    Disk(bench_disk::DiskArgs),
    /// Cipher and key-derivation speed: kernel (AF_ALG, as dm-crypt) and user space
    #[command(long_about = bench_crypto::LONG_ABOUT)]
    Crypto(bench_crypto::BenchCryptoArgs),
    /// Network throughput (TCP/UDP, iperf3-compatible) and request/response latency
    #[command(long_about = bench_net::LONG_ABOUT)]
    Net(BenchNetArgs),
    /// HTTP/1.1 and HTTPS load: requests/s, latency by phase, TLS cost per connection mode
    #[command(long_about = bench_http::LONG_ABOUT)]
    Http(bench_http::HttpArgs),
    /// File-service throughput through the real SMB2/3 protocol, and what signing and encryption cost
    #[command(long_about = bench_smb::LONG_ABOUT)]
    Smb(bench_smb::SmbArgs),
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// clap's own checks of a definition (every id that `requires`,
    /// `conflicts_with` and groups name exists, no long or short twice, …).
    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// `nastune --help` said "disk, crypto, network, HTTP" after `bench smb` came.
    #[test]
    fn the_bench_line_names_every_bench_command() {
        let cmd = Cli::command();
        let bench = cmd.find_subcommand("bench").expect("bench");
        let about = bench.get_about().expect("about").to_string().to_lowercase();
        let kinds: Vec<&str> = bench.get_subcommands().map(|s| s.get_name()).collect();
        assert!(kinds.len() >= 5, "{kinds:?}");
        for kind in kinds {
            assert!(about.contains(kind), "'{about}' does not name {kind}");
        }
    }

    /// `--db` and `--no-store` come after each command's own options in its help, not
    /// sorted in among its first ones.
    #[test]
    fn global_options_are_listed_last() {
        fn paths(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<Vec<String>>) {
            for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
                let mut p = path.clone();
                p.push(sub.get_name().to_string());
                paths(sub, p.clone(), out);
                out.push(p);
            }
        }
        let mut all = vec![Vec::new()];
        paths(&Cli::command(), Vec::new(), &mut all);
        for path in all {
            let args = ["nastune"]
                .into_iter()
                .chain(path.iter().map(String::as_str));
            let help = Cli::try_parse_from(args.chain(["-h"]))
                .unwrap_err()
                .to_string();
            let options: Vec<&str> = help
                .lines()
                .filter_map(|l| l.trim_start().strip_prefix("-"))
                .map(|l| l.split_whitespace().next().unwrap_or_default())
                .collect();
            let last: Vec<&str> = options.iter().rev().take(4).rev().copied().collect();
            assert_eq!(last, ["-db", "-no-store", "h,", "V,"], "{path:?}: {help}");
        }
    }
}
