//! `nastune check`, the main job: probe, a quick set of measurements (disk in a
//! directory, crypto, and what else is cheap), advise, and a short ranked summary
//! naming the bottleneck of each data path. Everything is saved as one run.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Parser};

use crate::advise::bottleneck;
use crate::advise::{self, Severity};
use crate::bench::crypto;
use crate::cli::GlobalArgs;
use crate::probe;
use crate::root::Root;
use crate::store::{Doc, RunDocs};

pub use crate::advise::check::{CheckDoc, SCHEMA_VERSION};

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
          value_parser = crate::cli::values::whole("seconds", 1..=60))]
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
/// `progress` gets the share of the test done after each interval.
fn net_test(
    argv: &[&str],
    progress: &mut dyn FnMut(f64),
) -> Result<crate::net::doc::NetReport, String> {
    let args = NetCommand::try_parse_from(argv)
        .map_err(|e| e.to_string().trim().to_string())?
        .args;
    let (_, outcome) = super::bench_net::measure(&args, &mut |i| {
        progress(super::bench_net::done_fraction(i, &args))
    })
    .map_err(|e| format!("{e:#}"))?;
    outcome.map_err(|e| format!("{e:#}"))
}

/// Parses `bench disk` arguments the way the command line would, so `check`
/// gets exactly the defaults and validation of `nastune bench disk`.
#[derive(Parser)]
struct DiskCommand {
    #[command(flatten)]
    args: super::bench_disk::DiskArgs,
}

/// The progress bar of `check`: one share per measuring phase.
struct Phases {
    bar: crate::progress::Progress,
    total: usize,
    started: usize,
    name: String,
}

impl Phases {
    fn new(total: usize) -> Self {
        Phases {
            bar: crate::progress::Progress::stderr(),
            total: total.max(1),
            started: 0,
            name: String::new(),
        }
    }

    fn start(&mut self, name: &str) {
        self.started += 1;
        self.name = name.to_string();
        self.within("", 0.0);
    }

    /// `step` of the current phase, `fraction` of it done.
    fn within(&mut self, step: &str, fraction: f64) {
        let label = format!(
            "check {}/{}: {} {step}",
            self.started, self.total, self.name
        );
        let done = (self.started.saturating_sub(1) as f64 + fraction) / self.total as f64;
        self.bar.draw(&label, done);
    }
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

    let mut docs: Vec<Doc> = Vec::new();
    let mut not_measured = Vec::new();
    let mut phases = Phases::new(
        [
            disk_args.is_some(),
            !args.skip_crypto,
            !args.skip_tcp,
            args.peer.is_some(),
        ]
        .into_iter()
        .filter(|on| *on)
        .count(),
    );
    if let Some(disk_args) = &disk_args {
        phases.start(&format!("disk under '{}'", args.dir.display()));
        // The disk bench draws its own bar, one test at a time.
        phases.bar.clear();
        match super::bench_disk::measure(disk_args) {
            Ok(Some(doc)) if !doc.interrupted => docs.push(Doc::Disk(Box::new(doc))),
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
        phases.start("ciphers");
        let settings = crypto::Settings {
            duration: Duration::from_millis(100),
            sizes: vec![4096],
            depth: 1,
            filters: Vec::new(),
            argon2_max_kib: 64,
            kdf: false,
        };
        let report = crypto::run(&settings, &root, &mut |step, f| phases.within(step, f));
        docs.push(Doc::Crypto(Box::new(report)));
    }

    if args.skip_tcp {
        not_measured.push("tcp: skipped (--skip-tcp)".into());
    } else {
        phases.start("loopback TCP ceiling");
        match net_test(&["net", "--loopback", "-t", "2", "--json"], &mut |f| {
            phases.within("", f)
        }) {
            Ok(doc) => docs.push(Doc::Net(Box::new(doc))),
            Err(e) => not_measured.push(format!("tcp loopback: {e}")),
        }
    }
    if let Some(peer) = &args.peer {
        phases.start(&format!("network to '{peer}'"));
        match net_test(&["net", peer, "-t", "5", "--json"], &mut |f| {
            phases.within("", f)
        }) {
            Ok(doc) => docs.push(Doc::Net(Box::new(doc))),
            Err(e) => not_measured.push(format!("network to '{peer}': {e}")),
        }
    }

    drop(phases);
    let docs = RunDocs(docs);
    let measurements = bottleneck::measurements_from(&docs);
    let paths = bottleneck::analyse(&snapshot, &measurements);
    let findings = advise::evaluate(&advise::Context {
        snapshot: &snapshot,
        measurements: &measurements,
    });
    let doc = CheckDoc {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        host_id: snapshot.host_id.clone(),
        timestamp: snapshot.timestamp.clone(),
        elapsed_secs: started.elapsed().as_secs_f64(),
        measurements,
        not_measured,
        paths,
        findings,
    };
    if let Some(store) = &store {
        let run = store.begin_run(
            crate::store::RunKind::Check,
            &snapshot.host_id,
            &super::command_line(),
        )?;
        store.save(run, &snapshot)?;
        for d in &docs.0 {
            store.save_doc(run, d)?;
        }
        store.save(run, &doc)?;
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
        .is_some_and(|limit| doc.findings.iter().any(|f| f.severity >= limit));
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
