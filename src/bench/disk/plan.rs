//! What `bench disk` runs: the target and the tests, validated before anything
//! touches the target. Built from the command line (src/cli/bench_disk.rs) or by
//! `check`, which asks for a suite directly.

use std::path::PathBuf;
use std::time::Duration;

use super::engine::EngineKind;
use super::suites::{self, Planned, Suite};
use super::workload::{Rw, Workload, WorkloadError};

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Directory (a temporary file goes there), file or block device.
    pub path: PathBuf,
    /// The suite the tests come from; `None` for one custom test.
    pub suite: Option<Suite>,
    pub tests: Vec<Planned>,
    /// Bytes of the target to use; for a directory, the temporary file's size.
    pub size: Option<u64>,
    /// The engine asked for; `None` picks the default (with its fallback).
    pub engine: Option<EngineKind>,
    /// Further targets: with any, each target runs the test alone, then all
    /// run it together (one custom read test, one pass).
    pub others: Vec<PathBuf>,
    /// The block devices whose data may be overwritten (each must be a target).
    pub destroy_data: Vec<PathBuf>,
    /// `--stack`: run the read test at every layer under `path`.
    pub stack: bool,
    /// Passes per test.
    pub loops: u32,
    /// Seconds the validity guard waits for an idle box before the first test.
    pub settle_s: f64,
    /// The user chose --direct or --buffered. Otherwise a target on a network
    /// filesystem runs buffered, as programs there do (the client's cache is
    /// part of the service).
    pub direct_chosen: bool,
    /// One throughput point per this long in each test (`--interval`);
    /// `None`: one figure per test.
    pub interval: Option<Duration>,
    /// `--until-steady`: each pass stops once its rate has settled (the
    /// runtime is then a cap).
    pub until_steady: bool,
}

/// What a suite takes from the caller; the suite sets the rest of each workload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SuiteOptions {
    pub direct: bool,
    pub runtime: Duration,
    pub ramp_time: Duration,
    pub verify: bool,
}

impl Default for SuiteOptions {
    fn default() -> Self {
        SuiteOptions {
            direct: true,
            runtime: suites::DEFAULT_RUNTIME,
            ramp_time: suites::DEFAULT_RAMP,
            verify: false,
        }
    }
}

impl Plan {
    /// The tests of `suite` on `path`, one pass each, default engine and size.
    pub fn suite(path: PathBuf, suite: Suite, opts: SuiteOptions) -> Result<Plan, WorkloadError> {
        let base = Workload {
            rw: Rw::Read,
            rwmixread: 50,
            bs: 4096,
            iodepth: 1,
            numjobs: 1,
            direct: opts.direct,
            runtime: opts.runtime,
            ramp_time: opts.ramp_time,
            fsync: 0,
            fdatasync: 0,
            end_fsync: false,
            verify: opts.verify,
        };
        Plan::with_tests(path, Some(suite), suites::plan(suite, &base))
    }

    /// One custom test on `path`, named by its workload.
    pub fn custom(path: PathBuf, workload: Workload) -> Result<Plan, WorkloadError> {
        let test = Planned {
            name: workload.label(),
            workload,
            special: None,
        };
        Plan::with_tests(path, None, vec![test])
    }

    fn with_tests(
        path: PathBuf,
        suite: Option<Suite>,
        tests: Vec<Planned>,
    ) -> Result<Plan, WorkloadError> {
        for t in &tests {
            t.workload.validate()?;
        }
        Ok(Plan {
            path,
            suite,
            tests,
            size: None,
            engine: None,
            others: Vec::new(),
            destroy_data: Vec::new(),
            stack: false,
            loops: 1,
            settle_s: crate::bench::validity::DEFAULT_SETTLE_S,
            direct_chosen: false,
            interval: Some(crate::timeline::DEFAULT_INTERVAL),
            until_steady: false,
        })
    }

    /// Checks what several targets and `--stack` need: one custom test, one
    /// pass; `--stack` one target and reads only.
    pub fn check_shape(&self) -> Result<(), WorkloadError> {
        let targets = 1 + self.others.len();
        if targets > 1 || self.stack {
            if self.stack && targets > 1 {
                return Err(WorkloadError::StackOneTarget(targets));
            }
            let custom = self.suite.is_none() && self.tests.len() == 1;
            if !custom {
                return Err(if self.stack {
                    WorkloadError::StackReadsOnly("a suite".into())
                } else {
                    WorkloadError::SeveralNeedRw(targets)
                });
            }
            if self.stack && self.writes() {
                return Err(WorkloadError::StackReadsOnly(
                    self.tests[0].workload.rw.name().to_string(),
                ));
            }
            if self.loops > 1 && targets > 1 {
                return Err(WorkloadError::SeveralLoops(self.loops));
            }
        }
        Ok(())
    }

    /// Whether any test writes to the target.
    pub fn writes(&self) -> bool {
        self.tests.iter().any(|t| t.workload.rw.writes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suite_plan_takes_runtime_ramp_and_direct_from_the_options() {
        let opts = SuiteOptions {
            runtime: Duration::from_secs(3),
            ramp_time: Duration::from_millis(500),
            ..SuiteOptions::default()
        };
        let p = Plan::suite("/srv".into(), Suite::Quick, opts).unwrap();
        assert_eq!(p.suite, Some(Suite::Quick));
        assert_eq!(p.tests.len(), 4);
        assert!(p.writes());
        for t in &p.tests {
            assert_eq!(t.workload.runtime, Duration::from_secs(3));
            assert_eq!(t.workload.ramp_time, Duration::from_millis(500));
            assert!(t.workload.direct);
        }
        assert_eq!((p.loops, p.engine, p.size), (1, None, None));
    }

    #[test]
    fn several_targets_and_stack_take_one_custom_test() {
        let quick = Plan::suite("/a".into(), Suite::Quick, SuiteOptions::default()).unwrap();
        let mut several = quick.clone();
        several.others = vec!["/b".into()];
        assert!(matches!(
            several.check_shape(),
            Err(WorkloadError::SeveralNeedRw(2))
        ));
        let read = quick
            .tests
            .iter()
            .find(|t| !t.workload.rw.writes())
            .unwrap()
            .workload
            .clone();
        let mut p = Plan::custom("/a".into(), read).unwrap();
        p.others = vec!["/b".into(), "/c".into()];
        assert!(p.check_shape().is_ok());
        p.loops = 3;
        assert!(matches!(
            p.check_shape(),
            Err(WorkloadError::SeveralLoops(3))
        ));
        p.stack = true;
        assert!(matches!(
            p.check_shape(),
            Err(WorkloadError::StackOneTarget(3))
        ));
        p.others.clear();
        assert!(p.check_shape().is_ok(), "--loops is fine for a walk");
        let write = quick.tests.iter().find(|t| t.workload.rw.writes()).unwrap();
        let mut w = Plan::custom("/a".into(), write.workload.clone()).unwrap();
        w.stack = true;
        let msg = w.check_shape().unwrap_err().to_string();
        assert!(msg.contains("--rw read"), "{msg}");
    }

    #[test]
    fn a_custom_plan_is_validated() {
        let quick = Plan::suite("/srv".into(), Suite::Quick, SuiteOptions::default()).unwrap();
        let good = quick.tests[0].workload.clone();
        let mut w = good.clone();
        w.runtime = Duration::ZERO;
        assert!(matches!(
            Plan::custom("/srv".into(), w),
            Err(WorkloadError::ZeroRuntime)
        ));
        let p = Plan::custom("/srv".into(), good.clone()).unwrap();
        assert_eq!(p.tests[0].name, good.label());
        assert_eq!(p.suite, None);
    }
}
