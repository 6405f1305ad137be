//! What `tune try` measures: a disk workload run in-process by the `bench disk`
//! engine on a path (block device, file, or directory for a temporary file),
//! reads only, so a trial never writes to the device it measures.
//!
//! Written as `KIND:PATH`: `seq-read:/dev/sda` (1 MiB sequential reads, MiB/s)
//! or `rand-read:/srv/data` (4 KiB random reads at queue depth 32, IOPS), both
//! direct I/O, or `buffered-seq-read:/dev/sda` ([`super::buffered`]: through the
//! page cache, emptied before each run, so read-ahead counts; MiB/s).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Better;
use super::buffered::BufferedRead;
use crate::bench::disk::engine::{self, EngineKind};
use crate::bench::disk::run::{Bench, run_test};
use crate::bench::disk::target::{self, Target};
use crate::bench::disk::{Rw, TestStatus, Workload};
use crate::bench::diskstats::{self, Layer};
use crate::root::Root;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// 1 MiB sequential reads at queue depth 8: MiB/s.
    SeqRead,
    /// 4 KiB random reads at queue depth 32: IOPS.
    RandRead,
    /// 64 KiB buffered sequential reads from a cold page cache: MiB/s.
    BufferedSeqRead,
}

impl WorkloadKind {
    pub const ALL: [WorkloadKind; 3] = [
        WorkloadKind::SeqRead,
        WorkloadKind::RandRead,
        WorkloadKind::BufferedSeqRead,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::SeqRead => "seq-read",
            WorkloadKind::RandRead => "rand-read",
            WorkloadKind::BufferedSeqRead => "buffered-seq-read",
        }
    }

    /// The metric's name with its unit, its unit alone, and its better direction.
    pub fn metric(self) -> Metric {
        match self {
            WorkloadKind::SeqRead | WorkloadKind::BufferedSeqRead => Metric {
                name: "read_mib_per_sec",
                unit: "MiB/s",
                better: Better::Higher,
            },
            WorkloadKind::RandRead => Metric {
                name: "read_iops",
                unit: "IOPS",
                better: Better::Higher,
            },
        }
    }

    /// The `bench disk` workload of a direct-I/O kind; `None` for the buffered one.
    fn disk_workload(self, runtime: Duration) -> Option<Workload> {
        let (rw, bs, iodepth) = match self {
            WorkloadKind::SeqRead => (Rw::Read, 1 << 20, 8),
            WorkloadKind::RandRead => (Rw::Randread, 4096, 32),
            WorkloadKind::BufferedSeqRead => return None,
        };
        Some(Workload {
            rw,
            rwmixread: 100,
            bs,
            iodepth,
            numjobs: 1,
            // Direct I/O: the page cache would measure memory, not the change.
            direct: true,
            runtime,
            ramp_time: Duration::ZERO,
            fsync: 0,
            fdatasync: 0,
            end_fsync: false,
            verify: false,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Metric {
    pub name: &'static str,
    pub unit: &'static str,
    pub better: Better,
}

/// A [`Metric`] as stored in a `tune-try` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredMetric {
    pub name: String,
    pub unit: String,
    pub better: Better,
}

impl From<Metric> for StoredMetric {
    fn from(m: Metric) -> Self {
        StoredMetric {
            name: m.name.to_string(),
            unit: m.unit.to_string(),
            better: m.better,
        }
    }
}

/// A workload on a path, as written on the command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrialWorkload {
    pub kind: WorkloadKind,
    pub path: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error(
        "workload '{0}' is not KIND:PATH; use e.g. 'seq-read:/dev/sda', 'rand-read:/srv/data' or 'buffered-seq-read:/dev/sda'"
    )]
    Syntax(String),
    #[error("unknown workload kind '{0}'; use 'seq-read', 'rand-read' or 'buffered-seq-read'")]
    Kind(String),
    #[error(transparent)]
    Target(#[from] target::TargetError),
    #[error(transparent)]
    Invalid(#[from] crate::bench::disk::workload::WorkloadError),
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
    #[error("cannot read '{path}' for {kind}: {source}")]
    Buffered {
        kind: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error("the {kind} run on '{path}' did not finish: {reason}")]
    Run {
        kind: &'static str,
        path: String,
        reason: String,
    },
}

impl FromStr for TrialWorkload {
    type Err = WorkloadError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (kind, path) = s
            .split_once(':')
            .filter(|(k, p)| !k.is_empty() && !p.is_empty())
            .ok_or_else(|| WorkloadError::Syntax(s.to_string()))?;
        let kind = WorkloadKind::ALL
            .into_iter()
            .find(|k| k.name() == kind)
            .ok_or_else(|| WorkloadError::Kind(kind.to_string()))?;
        Ok(TrialWorkload {
            kind,
            path: PathBuf::from(path),
        })
    }
}

impl fmt::Display for TrialWorkload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind.name(), self.path.display())
    }
}

impl TrialWorkload {
    /// Opens the target once (a directory gets a temporary file of `size` bytes,
    /// laid out now and removed when the result is dropped) and picks the engine.
    pub fn prepare(
        &self,
        root: Root,
        runtime: Duration,
        size: Option<u64>,
    ) -> Result<PreparedWorkload, WorkloadError> {
        let workload = self.kind.disk_workload(runtime);
        if let Some(w) = &workload {
            w.validate()?;
        }
        let target = target::open(&root, &self.path, size, false, None)?;
        let how = match workload {
            None => How::Buffered(
                BufferedRead::new(&target.path, target.size_bytes, runtime)
                    .map_err(|e| self.buffered_error(e))?,
            ),
            Some(workload) => {
                let (engine, _) = engine::decide(None, engine::probe_uring())?;
                workload.validate_for(target.size_bytes, target.logical_block_bytes)?;
                let layers = target
                    .device
                    .as_deref()
                    .map(|d| diskstats::stack(&root, d))
                    .unwrap_or_default();
                How::Engine {
                    root,
                    layers,
                    engine,
                    workload,
                }
            }
        };
        Ok(PreparedWorkload {
            spec: self.clone(),
            target,
            how,
        })
    }

    fn buffered_error(&self, source: std::io::Error) -> WorkloadError {
        WorkloadError::Buffered {
            kind: self.kind.name(),
            path: self.path.display().to_string(),
            source,
        }
    }
}

/// A workload ready to be measured again and again.
pub struct PreparedWorkload {
    spec: TrialWorkload,
    target: Target,
    how: How,
}

enum How {
    /// Direct I/O through the `bench disk` engine.
    Engine {
        root: Root,
        layers: Vec<Layer>,
        engine: EngineKind,
        workload: Workload,
    },
    Buffered(BufferedRead),
}

impl PreparedWorkload {
    /// The block devices the workload's I/O passes through on `root` (the one it
    /// was prepared on), top first: the file's device, then what it sits on.
    pub fn device_stack(&self, root: &Root) -> Vec<String> {
        self.target
            .device
            .as_deref()
            .map(|top| {
                diskstats::stack(root, top)
                    .into_iter()
                    .map(|l| l.name)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The `bench disk` engine, `None` for the buffered workload (plain `read()`).
    pub fn engine(&self) -> Option<EngineKind> {
        match &self.how {
            How::Engine { engine, .. } => Some(*engine),
            How::Buffered(_) => None,
        }
    }

    /// One run: the metric's value (MiB/s or IOPS). The page cache is dropped
    /// for the target first, as `bench disk` does.
    pub fn measure(&self) -> Result<f64, WorkloadError> {
        let (root, layers, engine, workload) = match &self.how {
            How::Buffered(b) => {
                return b
                    .run()
                    .map(|r| r.mib_per_sec())
                    .map_err(|e| self.spec.buffered_error(e));
            }
            How::Engine {
                root,
                layers,
                engine,
                workload,
            } => (root, layers, *engine, workload),
        };
        let bench = Bench {
            root,
            target: &self.target,
            engine,
            layers,
            settle: Duration::from_millis(200),
            start: None,
        };
        let name = self.spec.kind.name();
        let r = run_test(&bench, name, workload, 1, 0.0, &mut |_, _| {});
        let failed = |reason: String| WorkloadError::Run {
            kind: name,
            path: self.spec.path.display().to_string(),
            reason,
        };
        if r.status != TestStatus::Ok {
            return Err(failed(r.reason.unwrap_or_else(|| "interrupted".into())));
        }
        let read = r.read.ok_or_else(|| failed("no reads completed".into()))?;
        Ok(match self.spec.kind {
            WorkloadKind::RandRead => read.iops,
            WorkloadKind::SeqRead | WorkloadKind::BufferedSeqRead => {
                read.bw_bytes / f64::from(1 << 20)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;
    use crate::tune::trial::{TrialPlan, Verdict, run_trial};

    #[test]
    fn workloads_parse_from_kind_and_path() {
        let w: TrialWorkload = "seq-read:/dev/loop3".parse().unwrap();
        assert_eq!(w.kind, WorkloadKind::SeqRead);
        assert_eq!(w.path, PathBuf::from("/dev/loop3"));
        assert_eq!(w.to_string(), "seq-read:/dev/loop3");
        let w: TrialWorkload = "rand-read:/srv/a:b".parse().unwrap();
        assert_eq!(
            (w.kind, w.path),
            (WorkloadKind::RandRead, "/srv/a:b".into())
        );
        assert_eq!(
            "/dev/sda".parse::<TrialWorkload>().unwrap_err().to_string(),
            "workload '/dev/sda' is not KIND:PATH; use e.g. 'seq-read:/dev/sda', 'rand-read:/srv/data' or 'buffered-seq-read:/dev/sda'"
        );
        assert_eq!(
            "seq-write:/dev/sda"
                .parse::<TrialWorkload>()
                .unwrap_err()
                .to_string(),
            "unknown workload kind 'seq-write'; use 'seq-read', 'rand-read' or 'buffered-seq-read'"
        );
        assert!("seq-read:".parse::<TrialWorkload>().is_err());
        assert_eq!(WorkloadKind::RandRead.metric().unit, "IOPS");
    }

    /// Detaches the loop device even when the test fails.
    struct Loop(String);

    impl Drop for Loop {
        fn drop(&mut self) {
            let _ = Command::new("losetup").args(["-d", &self.0]).output();
        }
    }

    /// Both workloads measure a real loop device in-process, and a trial built
    /// on them runs to a verdict with the change reverted or kept as decided.
    #[test]
    fn workloads_measure_a_loop_device() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            println!("SKIP: loop devices need root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("disk.img");
        // Written, not sparse: reads of holes would measure nothing real.
        std::fs::write(&img, vec![0x5au8; 32 << 20]).unwrap();
        let o = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&img)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "losetup: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let dev = Loop(String::from_utf8_lossy(&o.stdout).trim().to_string());

        for kind in WorkloadKind::ALL {
            let spec: TrialWorkload = format!("{}:{}", kind.name(), dev.0).parse().unwrap();
            let prepared = spec
                .prepare(Root::live(), Duration::from_millis(300), None)
                .unwrap();
            let v = prepared.measure().unwrap();
            assert!(v.is_finite() && v > 1.0, "{spec}: {v}");
        }

        // A trial whose "change" only flips a flag: the flag must end as the verdict says.
        let spec: TrialWorkload = format!("seq-read:{}", dev.0).parse().unwrap();
        let prepared = spec
            .prepare(Root::live(), Duration::from_millis(200), None)
            .unwrap();
        let applied = std::cell::Cell::new(false);
        let outcome = run_trial(
            &TrialPlan::new(2, true, spec.kind.metric().better),
            || prepared.measure(),
            || {
                applied.set(true);
                Ok(())
            },
            || {
                applied.set(false);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(outcome.runs.len(), 4);
        assert!(outcome.runs.iter().all(|(_, v)| *v > 1.0), "{outcome:?}");
        assert_eq!(
            applied.get(),
            outcome.verdict == Verdict::Keep,
            "{}",
            outcome.reason
        );
    }
}
