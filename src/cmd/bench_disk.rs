//! `nastune bench disk [PATH]`: plan the tests, check the target is safe to
//! use, run, report, store.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::bench::disk::engine::{self, EngineKind};
use crate::bench::disk::run::{Bench, run_test};
use crate::bench::disk::suites::{self, Special, Suite};
use crate::bench::disk::workload::{self, Rw, Workload};
use crate::bench::disk::{
    self as disk, DiskBench, EngineInfo, TestResult, TestStatus, target, writecache,
};
use crate::bench::{diskstats, interrupt};
use crate::cli::GlobalArgs;
use crate::root::Root;

pub const LONG_ABOUT: &str = "Measure storage: throughput, IOPS, latency percentiles \
(p50 to p99.99 and max), the CPU each I/O costs (nastune's own, the whole system's and the \
kernel threads'), and what every layer of the block stack really moved (/proc/diskstats), so \
page-cache hits, RAID parity and encryption show.\n\n\
PATH is a directory (default: the current one; a temporary file of min(1 GiB, half the free \
space) is created there and removed afterwards, also on Ctrl-C), an existing file (used in \
place: write tests overwrite it), or a block device (reads always; writes only when it looks \
blank: no known signature and zeros in its first and last MiB, and nothing mounted, held, \
swapped, backed or claimed on it; --destroy-data naming that device overrides what is stored \
on it, never a live use).\n\n\
Without --rw a suite runs (--suite quick by default). Options use fio's names. The engine is \
io_uring when the kernel allows it, else psync (said on stderr); --engine null does no I/O and \
measures the benchmark's own overhead.\n\nExamples:\n  nastune bench disk /srv\n  \
nastune bench disk --suite nas --json /srv\n  \
nastune bench disk --rw randread --bs 4k --iodepth 32 --direct --runtime 10 /srv/test.img\n  \
nastune bench disk --rw read /dev/sdb\n\nExit codes: 0 ok, 2 usage or runtime error, 130 interrupted.";

#[derive(Debug, Args)]
pub struct DiskArgs {
    /// Directory, file or block device to measure
    #[arg(value_name = "PATH", default_value = ".")]
    pub path: PathBuf,
    /// Set of tests to run when --rw is not given
    #[arg(long, value_enum, conflicts_with = "rw")]
    pub suite: Option<Suite>,
    /// One custom test instead of a suite (fio's rw)
    #[arg(long, value_enum)]
    pub rw: Option<Rw>,
    /// Percent of reads in rw and randrw
    #[arg(long, default_value_t = 50, requires = "rw", value_parser = clap::builder::TypedValueParser::map(crate::cli::values::whole("percent", 0..=100), |v| v as u8))]
    pub rwmixread: u8,
    /// Block size per I/O (4k, 1m …)
    #[arg(long, default_value = "4k", requires = "rw", value_parser = size_arg)]
    pub bs: u64,
    /// I/Os kept in flight per job (psync always runs at depth 1)
    #[arg(long, default_value_t = 1, requires = "rw")]
    pub iodepth: u32,
    /// Parallel jobs (threads), each with its own file descriptor
    #[arg(long, default_value_t = 1, requires = "rw")]
    pub numjobs: u32,
    /// O_DIRECT: bypass the page cache (suites default to 1, --rw to 0)
    #[arg(long, num_args = 0..=1, default_missing_value = "1", value_name = "0|1", value_parser = bool_arg)]
    pub direct: Option<bool>,
    /// Same as --direct=0
    #[arg(long, conflicts_with = "direct")]
    pub buffered: bool,
    /// Bytes of the target to use; for a directory, the temporary file's size
    #[arg(long, value_parser = size_arg)]
    pub size: Option<u64>,
    /// Measured time per test (10, 10s, 500ms, 2m) [default: 5s]
    #[arg(long, value_parser = duration_arg)]
    pub runtime: Option<std::time::Duration>,
    /// Warm-up before measuring; its I/O is not counted [default: 1s for suites, 0 for --rw]
    #[arg(long, value_parser = duration_arg)]
    pub ramp_time: Option<std::time::Duration>,
    /// fsync after every N writes
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        requires = "rw",
        conflicts_with = "fdatasync"
    )]
    pub fsync: u32,
    /// fdatasync after every N writes
    #[arg(long, value_name = "N", default_value_t = 0, requires = "rw")]
    pub fdatasync: u32,
    /// One fsync at the end of each write test, timed inside the measured window
    #[arg(long, requires = "rw")]
    pub end_fsync: bool,
    /// Repeat each test N times and report the spread
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = crate::cli::values::whole("runs", 1..=100))]
    pub loops: u32,
    /// I/O engine [default: io_uring when available, else psync]
    #[arg(long, value_enum)]
    pub engine: Option<EngineKind>,
    /// Read back and check every block a write test wrote
    #[arg(long)]
    pub verify: bool,
    /// Allow writes to this block device even though it holds data (must be PATH itself; never while mounted, held or swap)
    #[arg(long, value_name = "DEVICE")]
    pub destroy_data: Option<PathBuf>,
    /// Print the versioned JSON document instead of the table
    #[arg(long)]
    pub json: bool,
}

fn size_arg(s: &str) -> Result<u64, String> {
    workload::parse_size(s).map_err(|e| e.to_string())
}

fn duration_arg(s: &str) -> Result<std::time::Duration, String> {
    workload::parse_duration(s).map_err(|e| e.to_string())
}

fn bool_arg(s: &str) -> Result<bool, String> {
    match s {
        "1" | "true" => Ok(true),
        "0" | "false" => Ok(false),
        _ => Err(format!("'{s}' is not 0 or 1")),
    }
}

/// The tests to run, validated, before anything touches the target.
fn plan(args: &DiskArgs) -> anyhow::Result<(Option<Suite>, Vec<suites::Planned>)> {
    let direct = if args.buffered {
        Some(false)
    } else {
        args.direct
    };
    let bs = u32::try_from(args.bs).map_err(|_| workload::WorkloadError::BsRange(args.bs))?;
    let base = Workload {
        rw: args.rw.unwrap_or(Rw::Read),
        rwmixread: args.rwmixread,
        bs,
        iodepth: args.iodepth,
        numjobs: args.numjobs,
        direct: direct.unwrap_or(args.rw.is_none()),
        runtime: args.runtime.unwrap_or(suites::DEFAULT_RUNTIME),
        ramp_time: args.ramp_time.unwrap_or(if args.rw.is_some() {
            std::time::Duration::ZERO
        } else {
            suites::DEFAULT_RAMP
        }),
        fsync: args.fsync,
        fdatasync: args.fdatasync,
        end_fsync: args.end_fsync,
        verify: args.verify,
    };
    let (suite, tests) = match args.rw {
        Some(_) => (
            None,
            vec![suites::Planned {
                name: base.label(),
                workload: base,
                special: None,
            }],
        ),
        None => {
            let suite = args.suite.unwrap_or(Suite::Quick);
            (Some(suite), suites::plan(suite, &base))
        }
    };
    for t in &tests {
        t.workload.validate()?;
    }
    Ok((suite, tests))
}

/// Plans, checks and runs the tests; `None` when interrupted before any test ran.
/// Collection only: printing and storing are the caller's.
pub fn measure(args: &DiskArgs) -> anyhow::Result<Option<DiskBench>> {
    let (suite, tests) = plan(args)?;
    interrupt::install()?;
    let root = Root::live();

    let (engine_kind, note) = match args.engine {
        Some(EngineKind::IoUring) | None => engine::decide(args.engine, engine::probe_uring())?,
        Some(other) => (other, None),
    };
    if let Some(n) = &note {
        eprintln!("nastune: {n}");
    }

    let writes = tests.iter().any(|t| t.workload.rw.writes());
    if std::fs::metadata(&args.path).is_ok_and(|m| m.is_dir()) {
        eprintln!(
            "nastune: laying out the test file in '{}'",
            args.path.display()
        );
    }
    let target = match target::open(
        &root,
        &args.path,
        args.size,
        writes,
        args.destroy_data.as_deref(),
    ) {
        Ok(t) => t,
        Err(target::TargetError::Interrupted) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    for t in &tests {
        t.workload
            .validate_for(target.size_bytes, target.logical_block_bytes)?;
    }
    let layers = target
        .device
        .as_deref()
        .map(|d| diskstats::stack(&root, d))
        .unwrap_or_default();

    let bench = Bench {
        root: &root,
        target: &target,
        engine: engine_kind,
        layers: &layers,
        settle: std::time::Duration::from_millis(300),
    };
    let mut bar = crate::progress::Progress::stderr();
    let mut results: Vec<TestResult> = Vec::new();
    for t in &tests {
        if interrupt::interrupted() {
            break;
        }
        let _cache_guard = match t.special {
            Some(Special::WriteCacheOff) => match writecache::turn_off(&root, &layers) {
                Ok(g) => Some(g),
                Err(reason) => {
                    results.push(TestResult::not_run(
                        t.name.clone(),
                        t.workload.clone(),
                        TestStatus::Skipped,
                        reason,
                    ));
                    continue;
                }
            },
            None => None,
        };
        let r = run_test(&bench, &t.name, &t.workload, args.loops, &mut |name, f| {
            bar.draw(name, f)
        });
        results.push(r);
    }
    bar.clear();
    let interrupted = interrupt::interrupted();

    let now = crate::time::now_unix();
    let doc = DiskBench {
        schema_version: disk::SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        timestamp: crate::time::rfc3339_utc(now),
        timestamp_unix: now,
        host_id: crate::probe::host::read_host_id(&root),
        target: target.info(),
        layers,
        engine: EngineInfo {
            name: engine_kind.name().to_string(),
            requested: args.engine.map(|e| e.name().to_string()),
            note,
        },
        suite: suite.map(|s| s.name().to_string()),
        tests: results,
        interrupted,
    };
    Ok(Some(doc))
}

pub fn run(args: &DiskArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let store = super::open_store(global)?;
    let Some(doc) = measure(args)? else {
        return Ok(ExitCode::from(interrupt::EXIT_CODE));
    };
    let interrupted = doc.interrupted;
    if let Some(store) = &store {
        let run = store.begin_run(
            crate::store::RunKind::BenchDisk,
            &doc.host_id,
            &super::command_line(),
        )?;
        store.save(run, &doc)?;
        super::save_snapshot(store, run, &crate::root::Root::live())?;
        store.finish_run(run, if interrupted { "interrupted" } else { "ok" })?;
    }
    let out = if args.json {
        let mut s = serde_json::to_string_pretty(&doc)?;
        s.push('\n');
        s
    } else {
        crate::report::bench_disk_text::render(&doc)
    };
    let failed = doc
        .tests
        .iter()
        .find(|t| t.status == TestStatus::Failed)
        .map(|t| {
            format!(
                "test '{}' failed: {}",
                t.name,
                t.reason.as_deref().unwrap_or("unknown")
            )
        });
    drop(doc);
    crate::output::write_stdout(out.as_bytes())?;
    if interrupted {
        eprintln!("nastune: interrupted; temporary files removed");
        return Ok(ExitCode::from(interrupt::EXIT_CODE));
    }
    if let Some(f) = failed {
        anyhow::bail!(f);
    }
    Ok(ExitCode::SUCCESS)
}
