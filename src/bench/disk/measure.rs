//! Runs a [`Plan`]: picks the engine, opens the target (checked safe to use),
//! runs each test and returns the document. Collection only: printing the
//! result and storing it are the caller's.

use std::path::{Path, PathBuf};

use super::engine;
use super::plan::Plan;
use super::run::{Bench, StartGate, run_test};
use super::shared::{self, TargetRun};
use super::suites::{Planned, Special};
use super::{DiskBench, EngineInfo, SCHEMA_VERSION, TestResult, TestStatus, target, writecache};
use crate::bench::diskstats::Layer;
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

/// A target opened, checked and ready: its tests (adjusted to it) and its block stack.
pub(super) struct Prepared {
    pub target: target::Target,
    pub tests: Vec<Planned>,
    pub layers: Vec<Layer>,
}

/// Opens `path` for the plan's tests; `None` when interrupted while laying out.
pub(super) fn prepare(
    root: &Root,
    plan: &Plan,
    path: &Path,
    destroy_data: Option<&Path>,
) -> Result<Option<Prepared>, MeasureError> {
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        crate::note!("nastune: laying out the test file in '{}'", path.display());
    }
    let target = match target::open(root, path, plan.size, plan.writes(), destroy_data) {
        Ok(t) => t,
        Err(target::TargetError::Interrupted) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    for r in &target.removed {
        crate::note!(
            "nastune: removed '{}' ({} MiB), left by an earlier run (pid {}) that no longer runs",
            r.path.display(),
            r.bytes >> 20,
            r.pid
        );
    }
    let network_buffered = target.network_fs.is_some() && !plan.direct_chosen;
    let tests: Vec<_> = plan
        .tests
        .iter()
        .map(|t| {
            let mut t = t.clone();
            t.workload.direct &= !network_buffered;
            t
        })
        .collect();
    if let Some(n) = target.network_fs.as_ref().filter(|_| network_buffered) {
        crate::note!(
            "nastune: '{}' is on {}: measuring the file service with buffered I/O \
             (--direct bypasses the client's cache where the filesystem supports it)",
            path.display(),
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
        .map(|d| diskstats::stack(root, d))
        .unwrap_or_default();
    Ok(Some(Prepared {
        target,
        tests,
        layers,
    }))
}

/// The device numbers of a block device at `path`; `None` for anything else.
fn block_rdev(path: &Path) -> Option<u64> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    std::fs::metadata(path)
        .ok()
        .filter(|m| m.file_type().is_block_device())
        .map(|m| m.rdev())
}

/// Which `--destroy-data` applies to a target (`target`: its device numbers):
/// the one naming its device; else one naming no target at all, so the
/// target's check refuses it as naming another device.
fn destroy_for<'a>(
    target: Option<u64>,
    targets: &[Option<u64>],
    named: &'a [(PathBuf, Option<u64>)],
) -> Option<&'a Path> {
    named
        .iter()
        .find(|(_, r)| r.is_some() && *r == target)
        .or_else(|| {
            named
                .iter()
                .find(|(_, r)| r.is_none() || !targets.contains(r))
        })
        .map(|(p, _)| p.as_path())
}

/// Opens every target of the plan (`path`, then `others`).
fn prepare_all(root: &Root, plan: &Plan) -> Result<Option<Vec<Prepared>>, MeasureError> {
    let paths: Vec<&Path> = std::iter::once(plan.path.as_path())
        .chain(plan.others.iter().map(PathBuf::as_path))
        .collect();
    let rdevs: Vec<Option<u64>> = paths.iter().map(|p| block_rdev(p)).collect();
    let named: Vec<(PathBuf, Option<u64>)> = plan
        .destroy_data
        .iter()
        .map(|p| (p.clone(), block_rdev(p)))
        .collect();
    let mut out = Vec::new();
    for (path, rdev) in paths.iter().zip(&rdevs) {
        match prepare(root, plan, path, destroy_for(*rdev, &rdevs, &named))? {
            Some(p) => out.push(p),
            None => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// The engine `measure` runs with, chosen once.
pub(super) struct Chosen {
    pub kind: engine::EngineKind,
    pub info: EngineInfo,
}

/// Plans, checks and runs the tests; `None` when interrupted before any test ran.
/// Collection only: printing and storing are the caller's.
pub fn measure(plan: &Plan) -> Result<Option<DiskBench>, MeasureError> {
    interrupt::install().map_err(MeasureError::Signals)?;
    let root = Root::live();

    let (engine_kind, note) = engine::choose(plan.engine)?;
    if let Some(n) = &note {
        crate::note!("nastune: {n}");
    }
    let chosen = Chosen {
        kind: engine_kind,
        info: EngineInfo {
            name: engine_kind.name().to_string(),
            requested: plan.engine.map(|e| e.name().to_string()),
            note,
        },
    };
    if plan.stack {
        return super::stack::measure(&root, plan, chosen);
    }
    let Some(mut prepared) = prepare_all(&root, plan)? else {
        return Ok(None);
    };
    if prepared.len() > 1 {
        return Ok(Some(several(&root, plan, chosen, prepared)));
    }
    let Prepared {
        target,
        tests,
        layers,
    } = prepared.remove(0);

    let bench = Bench {
        root: &root,
        target: &target,
        engine: engine_kind,
        layers: &layers,
        settle: SETTLE,
        start: None,
        interval: plan.interval,
        until_steady: plan.until_steady,
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
    Ok(Some(document(
        &root, plan, chosen, &target, layers, results,
    )))
}

/// Pause after `sync` before each pass.
pub(super) const SETTLE: std::time::Duration = std::time::Duration::from_millis(300);

/// The run's document with one target's results; the caller adds the rest.
pub(super) fn document(
    root: &Root,
    plan: &Plan,
    chosen: Chosen,
    target: &target::Target,
    layers: Vec<Layer>,
    results: Vec<TestResult>,
) -> DiskBench {
    let now = crate::time::now_unix();
    DiskBench {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        timestamp: crate::time::rfc3339_utc(now),
        timestamp_unix: now,
        host_id: crate::probe::host::read_host_id(root),
        target: target.info(),
        layers,
        engine: chosen.info,
        suite: plan.suite.map(|s| s.name().to_string()),
        validity: crate::bench::validity::Validity::worst(
            results.iter().filter_map(|t| t.validity.as_ref()),
        ),
        tests: results,
        interrupted: interrupt::interrupted(),
        targets: Vec::new(),
        together: None,
        stack: Vec::new(),
    }
}

/// Runs `test` on every target at once (started together); one result per target.
pub(super) fn run_together(
    root: &Root,
    engine: engine::EngineKind,
    targets: &[(&target::Target, &[Layer])],
    test: &Planned,
) -> Vec<TestResult> {
    let gate = StartGate::new(targets.len());
    std::thread::scope(|s| {
        let handles: Vec<_> = targets
            .iter()
            .map(|(target, layers)| {
                let gate = &gate;
                s.spawn(move || {
                    let bench = Bench {
                        root,
                        target,
                        engine,
                        layers,
                        settle: SETTLE,
                        start: Some(gate),
                        interval: None,
                        until_steady: false,
                    };
                    run_test(&bench, &test.name, &test.workload, 1, 0.0, &mut |_, _| {})
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    TestResult::not_run(
                        test.name.clone(),
                        test.workload.clone(),
                        TestStatus::Failed,
                        "the target's job thread panicked".into(),
                    )
                })
            })
            .collect()
    })
}

/// Runs the plan's (first) test on `p` alone, the guard settling only for the
/// first; `label` names it on the progress bar (empty: the target's path).
pub(super) fn alone(
    root: &Root,
    plan: &Plan,
    chosen: &Chosen,
    p: &Prepared,
    first: bool,
    label: String,
) -> TestResult {
    let bench = Bench {
        root,
        target: &p.target,
        engine: chosen.kind,
        layers: &p.layers,
        settle: SETTLE,
        start: None,
        interval: plan.interval,
        until_steady: plan.until_steady,
    };
    let t = &p.tests[0];
    let mut bar = crate::progress::Progress::stderr();
    let label = if label.is_empty() {
        p.target.path.display().to_string()
    } else {
        label
    };
    let settle_s = if first { plan.settle_s } else { 0.0 };
    let r = run_test(
        &bench,
        &t.name,
        &t.workload,
        plan.loops,
        settle_s,
        &mut |_, f| bar.draw(&label, f),
    );
    bar.clear();
    r
}

/// Several targets: each alone, then all together; the document's `tests`
/// are the first target's alone run.
fn several(root: &Root, plan: &Plan, chosen: Chosen, prepared: Vec<Prepared>) -> DiskBench {
    // --loops above 1 is refused with several targets: one pass each.
    let alone: Vec<TestResult> = prepared
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let label = format!("{} alone", p.target.path.display());
            self::alone(root, plan, &chosen, p, i == 0, label)
        })
        .collect();
    crate::note!("nastune: all {} targets together", prepared.len());
    let pairs: Vec<(&target::Target, &[Layer])> = prepared
        .iter()
        .map(|p| (&p.target, p.layers.as_slice()))
        .collect();
    let together = if interrupt::interrupted() {
        Vec::new()
    } else {
        run_together(root, chosen.kind, &pairs, &prepared[0].tests[0])
    };
    let runs: Vec<TargetRun> = prepared
        .iter()
        .zip(alone.iter().cloned())
        .zip(together)
        .map(|((p, alone), together)| TargetRun {
            target: p.target.info(),
            layers: p.layers.clone(),
            alone,
            together,
        })
        .collect();
    let first = &prepared[0];
    let mut doc = document(
        root,
        plan,
        chosen,
        &first.target,
        first.layers.clone(),
        alone.into_iter().take(1).collect(),
    );
    doc.validity = crate::bench::validity::Validity::worst(
        runs.iter()
            .flat_map(|r| [&r.alone, &r.together])
            .filter_map(|t| t.validity.as_ref()),
    );
    doc.together = (runs.len() == prepared.len()).then(|| shared::summarize(&runs));
    doc.targets = runs;
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_target_takes_the_destroy_data_that_names_it() {
        let named = vec![
            (PathBuf::from("/dev/b"), Some(2)),
            (PathBuf::from("/dev/a"), Some(1)),
        ];
        let targets = [Some(1), Some(2), None];
        assert_eq!(
            destroy_for(Some(1), &targets, &named),
            Some(Path::new("/dev/a"))
        );
        assert_eq!(
            destroy_for(Some(2), &targets, &named),
            Some(Path::new("/dev/b"))
        );
        // A file target among devices is not touched by their names.
        assert_eq!(destroy_for(None, &targets, &named), None);
        assert_eq!(destroy_for(Some(1), &targets, &[]), None);
    }

    #[test]
    fn a_destroy_data_naming_no_target_reaches_every_unnamed_target() {
        // It goes to the target's own check, which refuses it (Mismatch or NotADevice).
        let named = vec![(PathBuf::from("/dev/c"), Some(3))];
        assert_eq!(
            destroy_for(Some(1), &[Some(1)], &named),
            Some(Path::new("/dev/c"))
        );
        let not_a_device = vec![(PathBuf::from("/srv/x"), None)];
        assert_eq!(
            destroy_for(None, &[None], &not_a_device),
            Some(Path::new("/srv/x"))
        );
    }
}
