//! The disk judge of `tune try`: a workload run in-process by the `bench disk`
//! engine on a path.
//!
//! Written as `KIND:PATH`. Reads (`seq-read`: 1 MiB sequential, `rand-read`:
//! 4 KiB random at queue depth 32, both direct I/O, or `buffered-seq-read`
//! ([`super::buffered`]: through the page cache, emptied before each run, so
//! read-ahead counts) take a block device, a file or a directory. Writes
//! (`seq-write`, `rand-write`, direct I/O, `rand-write-fsync`: buffered 4 KiB
//! writes each followed by fsync, and `buffered-seq-write`: 1 MiB buffered
//! writes, a copy's, the two write-back paths a `vm.dirty_*` change touches)
//! take a directory only: they write a temporary file there, never a device or
//! an existing file.
//!
//! The `bench disk` runs keep their throughput over time in
//! [`JUDGE_INTERVAL`] points, for the `stall` and `sustained` metrics: the
//! mean of a buffered write hides what a dirty limit changes (a large one
//! lets the first seconds run at memory speed and then holds the writer).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Better;
use super::buffered::BufferedRead;
use super::judge::{Metric, MetricName, Sample, p99_ns};
use crate::bench::disk::engine::{self, EngineKind};
use crate::bench::disk::run::{Bench, run_test};
use crate::bench::disk::target::{self, Target};
use crate::bench::disk::{Rw, TestStatus, Workload};
use crate::bench::diskstats::{self, Layer};
use crate::root::Root;

/// The temporary file a write judge writes, at most (half the free space if less).
const WRITE_FILE_BYTES: u64 = 256 << 20;

/// The judge's points: a quarter second, so a trial run of a few seconds
/// (5 s by default) has 20 of them, and a one-second stall, the shortest a
/// user sees as a freeze, spans four.
pub const JUDGE_INTERVAL: Duration = Duration::from_millis(250);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// 1 MiB sequential reads at queue depth 8: MB/s.
    SeqRead,
    /// 4 KiB random reads at queue depth 32: IOPS.
    RandRead,
    /// 64 KiB buffered sequential reads from a cold page cache: MB/s.
    BufferedSeqRead,
    /// 1 MiB sequential direct writes at queue depth 8: MB/s.
    SeqWrite,
    /// 4 KiB random direct writes at queue depth 32: IOPS.
    RandWrite,
    /// 4 KiB random buffered writes, each followed by fsync: IOPS.
    RandWriteFsync,
    /// 1 MiB sequential buffered writes, no fsync (a copy's): MB/s.
    BufferedSeqWrite,
}

impl WorkloadKind {
    pub const ALL: [WorkloadKind; 7] = [
        WorkloadKind::SeqRead,
        WorkloadKind::RandRead,
        WorkloadKind::BufferedSeqRead,
        WorkloadKind::SeqWrite,
        WorkloadKind::RandWrite,
        WorkloadKind::RandWriteFsync,
        WorkloadKind::BufferedSeqWrite,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::SeqRead => "seq-read",
            WorkloadKind::RandRead => "rand-read",
            WorkloadKind::BufferedSeqRead => "buffered-seq-read",
            WorkloadKind::SeqWrite => "seq-write",
            WorkloadKind::RandWrite => "rand-write",
            WorkloadKind::RandWriteFsync => "rand-write-fsync",
            WorkloadKind::BufferedSeqWrite => "buffered-seq-write",
        }
    }

    pub fn writes(self) -> bool {
        matches!(
            self,
            WorkloadKind::SeqWrite
                | WorkloadKind::RandWrite
                | WorkloadKind::RandWriteFsync
                | WorkloadKind::BufferedSeqWrite
        )
    }

    /// The metrics it measures, the default first (the buffered read has
    /// no latency histogram nor a series: it is not a `bench disk` run).
    pub fn metrics(self) -> &'static [MetricName] {
        use MetricName::*;
        match self {
            WorkloadKind::SeqRead | WorkloadKind::SeqWrite | WorkloadKind::BufferedSeqWrite => {
                &[Bw, Iops, P99, Stall, Sustained]
            }
            WorkloadKind::RandRead | WorkloadKind::RandWrite | WorkloadKind::RandWriteFsync => {
                &[Iops, Bw, P99, Stall, Sustained]
            }
            WorkloadKind::BufferedSeqRead => &[Bw],
        }
    }

    /// The default metric's name with its unit, its unit alone, and its better direction.
    pub fn metric(self) -> Metric {
        self.metric_of(self.metrics()[0])
    }

    /// Names of `bw` and `iops` for this kind (p99 and CPU are the judge's).
    pub fn metric_of(self, m: MetricName) -> Metric {
        let (name, unit) = match (m, self.writes()) {
            (MetricName::Iops, false) => ("read_iops", "IOPS"),
            (MetricName::Iops, true) => ("write_iops", "IOPS"),
            // Decimal MB/s, the unit bench disk prints the same test's result in;
            // trials stored before 0.2 say "read_mib_per_sec" in MiB/s.
            (MetricName::Bw, false) => ("read_mb_per_sec", "MB/s"),
            (MetricName::Bw, true) => ("write_mb_per_sec", "MB/s"),
            (MetricName::Sustained, false) => ("read_sustained_mb_per_sec", "MB/s"),
            (MetricName::Sustained, true) => ("write_sustained_mb_per_sec", "MB/s"),
            (MetricName::P99, _) => return super::judge::P99_US,
            (MetricName::Stall, _) => return super::judge::LONGEST_STALL_S,
            (MetricName::CpuPerGb, _) => return super::judge::CPU_PER_GB,
        };
        Metric {
            name,
            unit,
            better: Better::Higher,
        }
    }

    /// The `bench disk` workload of a direct-I/O kind; `None` for the buffered one.
    fn disk_workload(self, runtime: Duration) -> Option<Workload> {
        let (rw, bs, iodepth) = match self {
            WorkloadKind::SeqRead => (Rw::Read, 1 << 20, 8),
            WorkloadKind::RandRead => (Rw::Randread, 4096, 32),
            WorkloadKind::SeqWrite => (Rw::Write, 1 << 20, 8),
            WorkloadKind::RandWrite => (Rw::Randwrite, 4096, 32),
            WorkloadKind::RandWriteFsync => (Rw::Randwrite, 4096, 1),
            WorkloadKind::BufferedSeqWrite => (Rw::Write, 1 << 20, 1),
            WorkloadKind::BufferedSeqRead => return None,
        };
        let fsync = u32::from(self == WorkloadKind::RandWriteFsync);
        let buffered = fsync == 1 || self == WorkloadKind::BufferedSeqWrite;
        Some(Workload {
            rw,
            rwmixread: if self.writes() { 0 } else { 100 },
            bs,
            iodepth,
            numjobs: 1,
            // Direct I/O: the page cache would measure memory, not the change;
            // the fsync'd writes and the copy go through it, as a file server's do.
            direct: !buffered,
            runtime,
            ramp_time: Duration::ZERO,
            fsync,
            fdatasync: 0,
            end_fsync: false,
            verify: false,
        })
    }
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
    #[error(
        "unknown workload kind '{0}'; use 'seq-read', 'rand-read', 'buffered-seq-read', \
         'seq-write', 'rand-write', 'rand-write-fsync' or 'buffered-seq-write'"
    )]
    Kind(String),
    #[error(
        "'{path}' is not a directory: a {kind} judge writes a temporary file in a directory \
         on the device, never to a device or an existing file"
    )]
    WriteNeedsDirectory { kind: &'static str, path: String },
    #[error(transparent)]
    Target(#[from] target::TargetError),
    #[error(transparent)]
    Invalid(#[from] crate::bench::disk::workload::WorkloadError),
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
    #[error("cannot read '{path}' for {kind}: {cause}")]
    Buffered {
        kind: &'static str,
        path: String,
        cause: std::io::Error,
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
        let writes = self.kind.writes();
        if writes && !self.path.is_dir() {
            return Err(WorkloadError::WriteNeedsDirectory {
                kind: self.kind.name(),
                path: self.path.display().to_string(),
            });
        }
        let size = match size {
            None if writes => {
                let free = crate::bench::disk::target::free_bytes(&self.path).map_err(|e| {
                    WorkloadError::Buffered {
                        kind: self.kind.name(),
                        path: self.path.display().to_string(),
                        cause: e,
                    }
                })?;
                Some(WRITE_FILE_BYTES.min(free / 2) & !((1 << 20) - 1))
            }
            s => s,
        };
        let target = target::open(&root, &self.path, size, writes, None)?;
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
            cause: source,
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

    /// One run: MB/s, IOPS and the p99 latency in µs. The page cache is
    /// dropped for the target first, as `bench disk` does.
    pub fn measure(&self) -> Result<Sample, WorkloadError> {
        let (root, layers, engine, workload) = match &self.how {
            How::Buffered(b) => {
                return b
                    .run()
                    .map(|r| Sample {
                        bw: Some(r.mb_per_sec()),
                        ..Sample::default()
                    })
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
            interval: Some(JUDGE_INTERVAL),
            until_steady: false,
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
        let side = if self.spec.kind.writes() {
            r.write
        } else {
            r.read
        };
        let d = side.ok_or_else(|| failed("no I/O completed".into()))?;
        let timeline = r.timeline.as_ref();
        Ok(Sample {
            bw: Some(d.bw_bytes / 1e6),
            iops: Some(d.iops),
            p99: p99_ns(d.clat_ns.as_ref()).map(|ns| ns / 1e3),
            cpu_per_gb: None,
            stall: timeline.map(|t| t.longest_stall_ms() as f64 / 1e3),
            sustained: timeline.and_then(|t| t.sustained_rate()).map(|r| r / 1e6),
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
            "seq-writes:/dev/sda"
                .parse::<TrialWorkload>()
                .unwrap_err()
                .to_string(),
            "unknown workload kind 'seq-writes'; use 'seq-read', 'rand-read', 'buffered-seq-read', \
             'seq-write', 'rand-write', 'rand-write-fsync' or 'buffered-seq-write'"
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
            if kind.writes() {
                let e = spec
                    .prepare(Root::live(), Duration::from_millis(300), None)
                    .err()
                    .unwrap();
                assert!(e.to_string().contains("never to a device"), "{e}");
                continue;
            }
            let prepared = spec
                .prepare(Root::live(), Duration::from_millis(300), None)
                .unwrap();
            let v = prepared.measure().unwrap().bw.unwrap();
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
            || prepared.measure().map(|s| s.bw.unwrap_or(0.0)),
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
