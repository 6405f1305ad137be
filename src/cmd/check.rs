//! `nastune check`, the main job: probe, a quick set of measurements (disk in a
//! directory, crypto, and what else is cheap), advise, and a short ranked summary
//! naming the bottleneck of each data path. Everything is saved as one run.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Parser};
use serde::Serialize;

use crate::advise::bottleneck::{self, Measurements, PathAnalysis};
use crate::advise::{self, Finding, Severity};
use crate::bench::crypto;
use crate::cli::GlobalArgs;
use crate::probe;
use crate::root::Root;

/// Version of the `check --json` document.
pub const SCHEMA_VERSION: u32 = 1;

pub const LONG_ABOUT: &str = "The main job: inventory the box, measure what is cheap to \
measure (sequential and random I/O in a temporary file in --dir, cipher speed at dm-crypt's \
request size, this box's loopback TCP ceiling, and the network to --peer when given), then list the findings and name the slowest stage of each data path with its \
number (network, TCP stack, crypto, storage). Takes about a minute; everything is saved in the \
store.\n\nExit codes: 0 ok, 1 a finding at or above --fail-on, 2 usage or runtime error, 130 \
interrupted.\n\nExamples:\n  nastune check\n  nastune check --dir /srv --json\n  \
nastune check --skip-disk --fail-on warning";

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Directory for the disk tests (a temporary file is created and removed there)
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
    /// Measured seconds per disk test (four tests)
    #[arg(long, value_name = "SECS", default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..=60))]
    pub disk_seconds: u32,
    /// Size of the temporary disk test file
    #[arg(long, value_name = "BYTES", default_value = "256M")]
    pub disk_size: String,
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
    /// Print the versioned JSON document instead of the summary
    #[arg(long)]
    pub json: bool,
    /// Exit with status 1 when a finding is at or above this severity
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<Severity>,
}

/// Parses `bench net` arguments the way the command line would.
#[derive(Parser)]
struct NetCommand {
    #[command(flatten)]
    args: crate::cli::BenchNetArgs,
}

/// Runs one network test for `check`; the document, or why there is none.
fn net_test(argv: &[&str]) -> Result<serde_json::Value, String> {
    let args = NetCommand::try_parse_from(argv)
        .map_err(|e| e.to_string().trim().to_string())?
        .args;
    let (_, outcome) =
        super::bench_net::measure(&args, &mut |_| {}).map_err(|e| format!("{e:#}"))?;
    let report = outcome.map_err(|e| format!("{e:#}"))?;
    serde_json::to_value(&report).map_err(|e| e.to_string())
}

/// Parses `bench disk` arguments the way the command line would, so `check`
/// gets exactly the defaults and validation of `nastune bench disk`.
#[derive(Parser)]
struct DiskCommand {
    #[command(flatten)]
    args: super::bench_disk::DiskArgs,
}

#[derive(Serialize)]
pub struct CheckDoc<'a> {
    pub schema_version: u32,
    pub tool_version: &'static str,
    pub host_id: &'a str,
    pub timestamp: &'a str,
    pub elapsed_secs: f64,
    pub measurements: &'a Measurements,
    /// Why a measurement is missing (skipped, failed).
    pub not_measured: &'a [String],
    pub paths: &'a [PathAnalysis],
    pub findings: &'a [Finding],
}

pub fn run(args: &CheckArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let disk_args = if args.skip_disk {
        None
    } else {
        // Absolute, so the bottleneck analysis finds the filesystem it measured.
        let dir = std::fs::canonicalize(&args.dir)
            .map_err(|e| anyhow::anyhow!("--dir '{}': {e}", args.dir.display()))?
            .to_string_lossy()
            .into_owned();
        let runtime = format!("{}s", args.disk_seconds);
        Some(
            DiskCommand::try_parse_from([
                "disk",
                "--suite",
                "quick",
                "--runtime",
                &runtime,
                "--ramp-time",
                "500ms",
                "--size",
                &args.disk_size,
                &dir,
            ])
            .map_err(|e| anyhow::anyhow!("--dir/--disk-size: {}", e.to_string().trim()))?
            .args,
        )
    };
    let store = super::open_store(global)?;
    let root = Root::live();
    let snapshot = probe::probe(&root);

    let mut docs: Vec<(String, serde_json::Value)> = Vec::new();
    let mut not_measured = Vec::new();
    if let Some(disk_args) = &disk_args {
        eprintln!(
            "nastune: measuring the disk under '{}' ...",
            args.dir.display()
        );
        match super::bench_disk::measure(disk_args) {
            Ok(Some(doc)) if !doc.interrupted => {
                docs.push(("disk".into(), serde_json::to_value(&doc)?))
            }
            Ok(_) => {
                eprintln!("nastune: interrupted; temporary files removed");
                return Ok(ExitCode::from(crate::bench::interrupt::EXIT_CODE));
            }
            Err(e) => not_measured.push(format!("disk: {e:#}")),
        }
    } else {
        not_measured.push("disk: skipped (--skip-disk)".into());
    }
    if args.skip_crypto {
        not_measured.push("crypto: skipped (--skip-crypto)".into());
    } else {
        eprintln!("nastune: measuring ciphers ...");
        let settings = crypto::Settings {
            duration: Duration::from_millis(100),
            sizes: vec![4096],
            depth: 1,
            filters: Vec::new(),
            argon2_max_kib: 64,
            kdf: false,
        };
        let report = crypto::run(&settings, &root, &mut |_| {});
        docs.push(("crypto".into(), serde_json::to_value(&report)?));
    }

    if args.skip_tcp {
        not_measured.push("tcp: skipped (--skip-tcp)".into());
    } else {
        eprintln!("nastune: measuring the loopback TCP ceiling ...");
        match net_test(&["net", "--loopback", "-t", "2", "--json"]) {
            Ok(doc) => docs.push(("net".into(), doc)),
            Err(e) => not_measured.push(format!("tcp loopback: {e}")),
        }
    }
    if let Some(peer) = &args.peer {
        eprintln!("nastune: measuring the network to '{peer}' ...");
        match net_test(&["net", peer, "-t", "5", "--json"]) {
            Ok(doc) => docs.push(("net".into(), doc)),
            Err(e) => not_measured.push(format!("network to '{peer}': {e}")),
        }
    }

    let measurements = bottleneck::measurements_from(&docs);
    let paths = bottleneck::analyse(&snapshot, &measurements);
    let findings = advise::evaluate(&advise::Context {
        snapshot: &snapshot,
    });
    let doc = CheckDoc {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION"),
        host_id: &snapshot.host_id,
        timestamp: &snapshot.timestamp,
        elapsed_secs: started.elapsed().as_secs_f64(),
        measurements: &measurements,
        not_measured: &not_measured,
        paths: &paths,
        findings: &findings,
    };
    if let Some(store) = &store {
        let run = store.begin_run("check", &snapshot.host_id, &super::command_line())?;
        store.save_document(run, "snapshot", probe::SCHEMA_VERSION, &snapshot)?;
        for (kind, body) in &docs {
            store.save_document(run, kind, 1, body)?;
        }
        store.save_document(run, "check", SCHEMA_VERSION, &doc)?;
        store.finish_run(run, "ok")?;
    }
    let out = if args.json {
        serde_json::to_string_pretty(&doc)? + "\n"
    } else {
        crate::report::check_text::render(&doc)
    };
    crate::output::write_stdout(out.as_bytes())?;
    let failed = args
        .fail_on
        .is_some_and(|limit| findings.iter().any(|f| f.severity >= limit));
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
