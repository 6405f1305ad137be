//! The command line: one clap definition that also produces the man page and the
//! shell completions (`nastune generate`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub mod values;

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
    /// The main job: probe, measure quickly, advise, name the bottleneck
    #[command(long_about = crate::cmd::check::LONG_ABOUT)]
    Check(crate::cmd::check::CheckArgs),
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
    /// Run a network test server (iperf3-compatible) on this box
    #[command(
        long_about = "Network services for tests from other machines.\n\nExamples:\n  \
nastune net serve                      # port 5201, 2 sessions, private peers only\n  \
nastune net serve --psk-file /etc/nastune.psk --allow 192.168.1.0/24"
    )]
    Net(NetArgs),
    /// Measure what the box does: disk, crypto, network, HTTP
    Bench(BenchArgs),
    /// Compare two stored runs: benchmark changes with confidence intervals, settings that differ
    #[command(long_about = crate::cmd::compare::LONG_ABOUT)]
    Compare(crate::cmd::compare::CompareArgs),
    /// Write stored runs as one self-contained HTML page or as Markdown
    #[command(long_about = crate::cmd::report::LONG_ABOUT)]
    Report(crate::cmd::report::ReportArgs),
    /// Watch error counters, disks, md, SMART, pressure and temperatures over time
    #[command(long_about = crate::cmd::watch::LONG_ABOUT)]
    Watch(crate::cmd::watch::WatchArgs),
    /// Apply findings as journaled changes: plan, apply, verify, rollback, confirm
    #[command(long_about = crate::cmd::tune::LONG_ABOUT)]
    Tune(crate::cmd::tune::TuneArgs),
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
    /// Write runs with their documents as one JSON file (to stdout), to compare or report them on another box
    Export(HistoryExportArgs),
    /// Read runs written by 'history export' into this store (all or nothing)
    Import(HistoryImportArgs),
}

#[derive(Debug, Args)]
pub struct HistoryExportArgs {
    /// Run ids to export (from `history list`)
    #[arg(required = true, num_args = 1.., value_parser = values::run_id)]
    pub runs: Vec<i64>,
}

#[derive(Debug, Args)]
pub struct HistoryImportArgs {
    /// A file written by 'nastune history export'
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

#[derive(Debug, Args)]
pub struct HistoryListArgs {
    /// Only runs of this kind
    #[arg(long, value_name = "KIND", value_enum)]
    pub kind: Option<crate::store::RunKind>,
    /// At most this many runs
    #[arg(long, default_value_t = 50, value_name = "N", value_parser = values::whole("runs", 1..=1_000_000))]
    pub limit: u32,
    /// JSON instead of a table
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct HistoryShowArgs {
    /// The run id (from `history list`)
    #[arg(value_parser = values::run_id)]
    pub run: i64,
    /// JSON instead of a summary
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct HistoryRmArgs {
    /// Run ids to remove
    #[arg(required = true, num_args = 1.., value_parser = values::run_id)]
    pub runs: Vec<i64>,
}

#[derive(Debug, Args)]
pub struct NetArgs {
    #[command(subcommand)]
    pub command: NetCommand,
}

#[derive(Debug, Subcommand)]
pub enum NetCommand {
    /// Serve iperf3 and nastune clients (several tests at once, busy answered at once)
    Serve(NetServeArgs),
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
    /// Network throughput (TCP/UDP, iperf3-compatible) and request/response latency
    #[command(
        long_about = "Measure the network against 'nastune net serve' or an unmodified 'iperf3 -s'.\n\n\
Throughput is what the receiver counted. CPU is shown both as iperf3 does (this \
process, % of one core) and system-wide including softirq, on both ends when the \
server is nastune.\n\nExamples:\n  nastune bench net nas.local\n  \
nastune bench net nas.local -P 2 -R -t 5\n  nastune bench net nas.local -u -b 100M\n  \
nastune bench net nas.local --rr     # transactions/s and p50/p99 latency\n  \
nastune bench net --loopback         # this box's own TCP ceiling"
    )]
    Net(BenchNetArgs),
    /// HTTP/1.1 and HTTPS load: requests/s, latency by phase, TLS cost per connection mode
    #[command(long_about = crate::cmd::bench_http::LONG_ABOUT)]
    Http(crate::cmd::bench_http::HttpArgs),
}

#[derive(Debug, Args)]
pub struct NetServeArgs {
    /// TCP and UDP port to listen on
    #[arg(short = 'p', long, default_value_t = 5201, value_parser = values::port)]
    pub port: u16,
    /// Address to bind
    #[arg(short = 'B', long, default_value = "0.0.0.0", value_name = "ADDR")]
    pub bind: std::net::IpAddr,
    /// Tests that may run at the same time; one more gets ACCESS_DENIED at once
    #[arg(long, default_value_t = 2, value_parser = values::whole("sessions", 1..=64))]
    pub max_sessions: u32,
    /// Longest test (time plus omit) a client may ask for, in seconds
    #[arg(long, default_value_t = 60, value_name = "SECS", value_parser = values::whole("seconds", 1..=86400))]
    pub max_duration: u32,
    /// Most parallel streams per test
    #[arg(long, default_value_t = 16, value_parser = values::whole("streams", 1..=128))]
    pub max_streams: u32,
    /// Highest per-stream bitrate a client may ask for (e.g. 1G); unlimited if unset
    #[arg(long, value_name = "RATE", value_parser = crate::net::units::parse_rate)]
    pub max_bitrate: Option<u64>,
    /// Peers allowed to test (repeatable) [default: loopback and private ranges]
    #[arg(long, value_name = "CIDR")]
    pub allow: Vec<crate::net::allow::Cidr>,
    /// Require clients to prove this pre-shared key (HMAC-SHA256 challenge)
    #[arg(long, value_name = "FILE")]
    pub psk_file: Option<PathBuf>,
    /// Seconds a connection may take from connect to complete parameters, in all
    #[arg(long, default_value_t = crate::net::handshake::HANDSHAKE_DEADLINE_SECS, value_name = "SECS", value_parser = values::whole("seconds", 1..=300))]
    pub handshake_timeout: u32,
    /// One JSON line per finished session instead of a text line
    #[arg(long)]
    pub json: bool,
    /// Exit after this many sessions (for scripts and tests)
    #[arg(long, value_name = "N", value_parser = values::whole("sessions", 1..=1_000_000))]
    pub sessions: Option<u32>,
}

#[derive(Debug, Args)]
pub struct BenchNetArgs {
    /// Server to test against (omit with --loopback)
    #[arg(required_unless_present = "loopback", conflicts_with = "loopback")]
    pub host: Option<String>,
    /// Run a server in this process and test against it on 127.0.0.1
    #[arg(long)]
    pub loopback: bool,
    /// Server port
    #[arg(short = 'p', long, default_value_t = 5201, value_parser = values::port)]
    pub port: u16,
    /// Seconds to transmit
    #[arg(short = 't', long, default_value_t = 10, value_parser = values::whole("seconds", 1..=86400))]
    pub time: u32,
    /// Parallel streams
    #[arg(short = 'P', long, default_value_t = 1, value_parser = values::whole("streams", 1..=128))]
    pub parallel: u32,
    /// Server sends, client receives
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    pub reverse: bool,
    /// Both directions at once
    #[arg(long)]
    pub bidir: bool,
    /// Seconds of warm-up left out of the totals
    #[arg(short = 'O', long, default_value_t = 0, value_parser = values::whole("seconds", 0..=600))]
    pub omit: u32,
    /// Seconds between interval reports (0 = none)
    #[arg(short = 'i', long, default_value_t = 1.0, value_name = "SECS", value_parser = values::real("seconds", 0.0..=86_400.0))]
    pub interval: f64,
    /// UDP instead of TCP
    #[arg(short = 'u', long)]
    pub udp: bool,
    /// Target bitrate per stream in bits/s (K/M/G = 1000ⁿ) [UDP default: 1M]
    #[arg(short = 'b', long, value_name = "RATE", value_parser = crate::net::units::parse_rate)]
    pub bitrate: Option<u64>,
    /// Socket buffer size (K/M = 1024ⁿ)
    #[arg(short = 'w', long, value_name = "SIZE", value_parser = crate::net::units::parse_size)]
    pub window: Option<u32>,
    /// Block size per write (TCP default 128K, UDP 1448)
    #[arg(short = 'l', long, value_name = "SIZE", value_parser = crate::net::units::parse_block_size)]
    pub length: Option<u32>,
    /// TCP maximum segment size
    #[arg(short = 'M', long = "set-mss", value_name = "BYTES")]
    pub mss: Option<u32>,
    /// TCP_NODELAY on the data connections
    #[arg(short = 'N', long)]
    pub no_delay: bool,
    /// 64-bit UDP packet counters
    #[arg(long)]
    pub udp_counters_64bit: bool,
    /// Plain write()/read() instead of sendfile() and recv(MSG_TRUNC)
    #[arg(long)]
    pub copy: bool,
    /// Request/response latency test on kept-open connections (nastune server only)
    #[arg(long, conflicts_with_all = ["crr", "udp", "reverse", "bidir"])]
    pub rr: bool,
    /// Connect+request+response per transaction (nastune server only)
    #[arg(long, conflicts_with_all = ["udp", "reverse", "bidir"])]
    pub crr: bool,
    /// Request size for --rr/--crr
    #[arg(long, default_value = "64", value_name = "SIZE", value_parser = crate::net::units::parse_size)]
    pub request_size: u32,
    /// Response size for --rr/--crr
    #[arg(long, default_value = "64", value_name = "SIZE", value_parser = crate::net::units::parse_size)]
    pub response_size: u32,
    /// Pre-shared key file for a server started with --psk-file
    #[arg(long, value_name = "FILE")]
    pub psk_file: Option<PathBuf>,
    /// Print the versioned JSON document (iperf3 key names) instead of text
    #[arg(long)]
    pub json: bool,
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
