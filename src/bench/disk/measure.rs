//! Runs a [`Plan`]: picks the engine, opens the target (checked safe to use),
//! runs each test and returns the document. Collection only: printing the
//! result and storing it are the caller's.

use super::engine;
use super::plan::Plan;
use super::run::{Bench, run_test};
use super::suites::Special;
use super::{DiskBench, EngineInfo, SCHEMA_VERSION, TestResult, TestStatus, target, writecache};
use crate::bench::{diskstats, interrupt};
use crate::root::Root;

/// Why a plan could not run; a test that fails is a result, not this.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    #[error("cannot install the Ctrl-C handler: {0}")]
    Signals(std::io::Error),
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
    #[error(transparent)]
    Target(#[from] target::TargetError),
    #[error(transparent)]
    Workload(#[from] super::workload::WorkloadError),
}

/// Plans, checks and runs the tests; `None` when interrupted before any test ran.
/// Collection only: printing and storing are the caller's.
pub fn measure(plan: &Plan) -> Result<Option<DiskBench>, MeasureError> {
    let tests = &plan.tests;
    interrupt::install().map_err(MeasureError::Signals)?;
    let root = Root::live();

    let (engine_kind, note) = engine::choose(plan.engine)?;
    if let Some(n) = &note {
        eprintln!("nastune: {n}");
    }

    let writes = plan.writes();
    if std::fs::metadata(&plan.path).is_ok_and(|m| m.is_dir()) {
        eprintln!(
            "nastune: laying out the test file in '{}'",
            plan.path.display()
        );
    }
    let target = match target::open(
        &root,
        &plan.path,
        plan.size,
        writes,
        plan.destroy_data.as_deref(),
    ) {
        Ok(t) => t,
        Err(target::TargetError::Interrupted) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let network_buffered = target.network_fs.is_some() && !plan.direct_chosen;
    let tests: Vec<_> = tests
        .iter()
        .map(|t| {
            let mut t = t.clone();
            t.workload.direct &= !network_buffered;
            t
        })
        .collect();
    if let Some(n) = target.network_fs.as_ref().filter(|_| network_buffered) {
        eprintln!(
            "nastune: '{}' is on {}: measuring the file service with buffered I/O \
             (--direct bypasses the client's cache where the filesystem supports it)",
            plan.path.display(),
            n.describe()
        );
    }
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
        // Settle once, before the first test; later tests follow our own.
        let settle_s = if results.is_empty() {
            plan.settle_s
        } else {
            0.0
        };
        let r = run_test(
            &bench,
            &t.name,
            &t.workload,
            plan.loops,
            settle_s,
            &mut |name, f| bar.draw(name, f),
        );
        results.push(r);
    }
    bar.clear();
    let interrupted = interrupt::interrupted();

    let now = crate::time::now_unix();
    let doc = DiskBench {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        timestamp: crate::time::rfc3339_utc(now),
        timestamp_unix: now,
        host_id: crate::probe::host::read_host_id(&root),
        target: target.info(),
        layers,
        engine: EngineInfo {
            name: engine_kind.name().to_string(),
            requested: plan.engine.map(|e| e.name().to_string()),
            note,
        },
        suite: plan.suite.map(|s| s.name().to_string()),
        validity: crate::bench::validity::Validity::worst(
            results.iter().filter_map(|t| t.validity.as_ref()),
        ),
        tests: results,
        interrupted,
    };
    Ok(Some(doc))
}
