//! The judge of a `tune try`: the workload whose numbers decide. One variant
//! per bench kind, each in its own file: a disk workload on a path
//! ([`super::workload`]), bench net to a peer ([`super::net`]), bench smb
//! against a share ([`super::smb`]) and bench http against a URL
//! ([`super::http`]). Every run yields a [`Sample`] of whatever the judge
//! measures; `--metric` picks the number the verdict is about.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Better;
use super::http::HttpJudge;
use super::net::NetJudge;
use super::smb::SmbJudge;
use super::workload::{PreparedWorkload, TrialWorkload, WorkloadError};
use crate::bench::validity::GuardPlan;
use crate::root::Root;

/// What `--metric` names.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum, PartialOrd, Ord,
)]
#[serde(rename_all = "snake_case")]
pub enum MetricName {
    /// Throughput: bytes (or bits) per second.
    Bw,
    /// Operations (I/Os, requests, transactions) per second.
    Iops,
    /// 99th percentile latency.
    P99,
    /// CPU-seconds spent per GB moved (this box's, where it can be counted).
    #[value(name = "cpu_per_gb")]
    CpuPerGb,
    /// Disk judges: the longest time with no I/O completed, in seconds (the
    /// freeze a copy shows when writeback holds the writer).
    Stall,
    /// Disk judges: the rate after the first seconds, or after the cliff
    /// when there is one (what a long copy settles at once the cache is full).
    Sustained,
}

impl MetricName {
    pub fn name(self) -> &'static str {
        match self {
            MetricName::Bw => "bw",
            MetricName::Iops => "iops",
            MetricName::P99 => "p99",
            MetricName::CpuPerGb => "cpu_per_gb",
            MetricName::Stall => "stall",
            MetricName::Sustained => "sustained",
        }
    }
}

/// A metric as measured: its name with its unit, the unit, the better direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Metric {
    pub name: &'static str,
    pub unit: &'static str,
    pub better: Better,
}

/// What one run of a judge measured; `None` where the judge cannot say.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sample {
    pub bw: Option<f64>,
    pub iops: Option<f64>,
    pub p99: Option<f64>,
    pub cpu_per_gb: Option<f64>,
    /// From the run's throughput over time (disk judges).
    pub stall: Option<f64>,
    pub sustained: Option<f64>,
}

impl Sample {
    pub fn get(&self, m: MetricName) -> Option<f64> {
        match m {
            MetricName::Bw => self.bw,
            MetricName::Iops => self.iops,
            MetricName::P99 => self.p99,
            MetricName::CpuPerGb => self.cpu_per_gb,
            MetricName::Stall => self.stall,
            MetricName::Sustained => self.sustained,
        }
    }
}

/// CPU-seconds per GB (10^9 bytes) from CPU nanoseconds and bytes moved.
pub fn cpu_seconds_per_gb(cpu_ns: u64, bytes: u64) -> Option<f64> {
    (bytes > 0).then(|| cpu_ns as f64 / 1e9 / (bytes as f64 / 1e9))
}

/// The 99th percentile of a bench's latency stats, in nanoseconds.
pub fn p99_ns(s: Option<&crate::bench::disk::LatencyStats>) -> Option<f64> {
    s?.percentile.get("99.000000").map(|&v| v as f64)
}

pub const CPU_PER_GB: Metric = Metric {
    name: "cpu_seconds_per_gb",
    unit: "CPU-s/GB",
    better: Better::Lower,
};

pub const LONGEST_STALL_S: Metric = Metric {
    name: "longest_stall_s",
    unit: "s",
    better: Better::Lower,
};

pub const P99_US: Metric = Metric {
    name: "latency_p99_us",
    unit: "µs",
    better: Better::Lower,
};

/// The judge of a trial, as written on the command line.
#[derive(Debug, Clone, PartialEq)]
pub enum Judge {
    Disk(TrialWorkload),
    Net(NetJudge),
    Smb(SmbJudge),
    Http(HttpJudge),
}

#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    #[error(
        "'{0}' is not a judge; use a disk workload (e.g. 'seq-read:/dev/sda', \
         'seq-write:/srv/dir'), 'net:HOST[:PORT]', 'smb://HOST[:PORT]/SHARE' or 'http:URL'"
    )]
    Syntax(String),
    #[error("'{target}' is not a valid {kind} judge: {why}")]
    Target {
        kind: &'static str,
        target: String,
        why: String,
    },
    #[error("the {judge} judge does not measure '{metric}'; it measures {have}")]
    NoMetric {
        judge: &'static str,
        metric: &'static str,
        have: String,
    },
    #[error("the {judge} run against '{target}' failed: {reason}")]
    Run {
        judge: &'static str,
        target: String,
        reason: String,
    },
    #[error("the {judge} run against '{target}' gave no {metric}: {why}")]
    Missing {
        judge: &'static str,
        target: String,
        metric: &'static str,
        why: &'static str,
    },
}

impl FromStr for Judge {
    type Err = JudgeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(rest) = s.strip_prefix("net:") {
            return NetJudge::parse(rest).map(Judge::Net);
        }
        if s.starts_with("smb://") {
            return SmbJudge::parse(s).map(Judge::Smb);
        }
        if let Some(rest) = s.strip_prefix("http:")
            && (rest.starts_with("http://") || rest.starts_with("https://"))
        {
            return HttpJudge::parse(rest).map(Judge::Http);
        }
        if s.contains("://") {
            return Err(JudgeError::Syntax(s.to_string()));
        }
        Ok(Judge::Disk(s.parse()?))
    }
}

impl fmt::Display for Judge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Judge::Disk(w) => w.fmt(f),
            Judge::Net(n) => n.fmt(f),
            Judge::Smb(s) => s.fmt(f),
            Judge::Http(h) => h.fmt(f),
        }
    }
}

/// The options a judge takes besides its target (from `tune try`'s flags).
#[derive(Debug, Clone, Default)]
pub struct JudgeOptions {
    pub runtime: Duration,
    /// net: request/response latency instead of throughput.
    pub rr: bool,
    /// smb: the credentials (anonymous without --user).
    pub smb_credentials: Option<crate::smb::Credentials>,
    /// smb: bytes per run.
    pub smb_size: u64,
    pub smb_read: bool,
}

impl Judge {
    pub fn kind(&self) -> &'static str {
        match self {
            Judge::Disk(_) => "disk",
            Judge::Net(_) => "net",
            Judge::Smb(_) => "smb",
            Judge::Http(_) => "http",
        }
    }

    /// The metrics this judge measures, the default first.
    pub fn metrics(&self, opts: &JudgeOptions) -> Vec<MetricName> {
        use MetricName::*;
        match self {
            Judge::Disk(w) => w.kind.metrics().to_vec(),
            Judge::Net(_) if opts.rr => vec![P99, Iops],
            Judge::Net(_) => vec![Bw, CpuPerGb],
            Judge::Smb(_) => vec![Bw, Iops, P99, CpuPerGb],
            Judge::Http(_) => vec![Iops, Bw, P99, CpuPerGb],
        }
    }

    /// The metric `--metric` asks for (or the default), checked against the judge.
    pub fn pick(
        &self,
        opts: &JudgeOptions,
        asked: Option<MetricName>,
    ) -> Result<MetricName, JudgeError> {
        let have = self.metrics(opts);
        let Some(m) = asked else {
            return Ok(have[0]);
        };
        if have.contains(&m) {
            return Ok(m);
        }
        Err(JudgeError::NoMetric {
            judge: self.kind(),
            metric: m.name(),
            have: have
                .iter()
                .map(|m| format!("'{}'", m.name()))
                .collect::<Vec<_>>()
                .join(", "),
        })
    }

    /// How the value of `m` is named, its unit and its better direction.
    pub fn metric(&self, m: MetricName) -> Metric {
        match (self, m) {
            (_, MetricName::CpuPerGb) => CPU_PER_GB,
            (_, MetricName::P99) => P99_US,
            (_, MetricName::Stall) => LONGEST_STALL_S,
            (Judge::Disk(w), _) => w.kind.metric_of(m),
            (Judge::Net(_), MetricName::Bw) => super::net::BW,
            (Judge::Net(_), _) => super::net::TPS,
            (Judge::Smb(_), MetricName::Bw) | (Judge::Http(_), MetricName::Bw) => Metric {
                name: "mb_per_sec",
                unit: "MB/s",
                better: Better::Higher,
            },
            (Judge::Smb(_), _) => Metric {
                name: "iops",
                unit: "IOPS",
                better: Better::Higher,
            },
            (Judge::Http(_), _) => Metric {
                name: "requests_per_sec",
                unit: "req/s",
                better: Better::Higher,
            },
        }
    }

    /// Gets ready to measure again and again (opens files, resolves hosts).
    pub fn prepare(&self, opts: &JudgeOptions) -> Result<PreparedJudge, JudgeError> {
        Ok(match self {
            Judge::Disk(w) => PreparedJudge::Disk(w.prepare(Root::live(), opts.runtime, None)?),
            Judge::Net(n) => PreparedJudge::Net(n.prepare(opts)?),
            Judge::Smb(s) => PreparedJudge::Smb(s.prepare(opts)?),
            Judge::Http(h) => PreparedJudge::Http(h.prepare(opts)?),
        })
    }
}

/// A judge ready to measure.
pub enum PreparedJudge {
    Disk(PreparedWorkload),
    Net(super::net::PreparedNet),
    Smb(super::smb::PreparedSmb),
    Http(super::http::PreparedHttp),
}

impl PreparedJudge {
    /// One run. Units: see [`Judge::metric`].
    pub fn measure(&self) -> Result<Sample, JudgeError> {
        match self {
            PreparedJudge::Disk(w) => Ok(w.measure()?),
            PreparedJudge::Net(n) => n.measure(),
            PreparedJudge::Smb(s) => s.measure(),
            PreparedJudge::Http(h) => h.measure(),
        }
    }

    /// What the validity guard watches: the devices a disk run uses, a local
    /// server's processes as part of the work.
    pub fn guard_plan(&self) -> GuardPlan {
        match self {
            PreparedJudge::Disk(w) => GuardPlan {
                devices: w.device_stack(&Root::live()),
                ..GuardPlan::cpu(0.0)
            },
            PreparedJudge::Net(n) => n.guard_plan(),
            PreparedJudge::Smb(s) => s.guard_plan(),
            PreparedJudge::Http(h) => h.guard_plan(),
        }
    }

    /// The block devices a disk judge's I/O passes through, top first.
    pub fn device_stack(&self) -> Option<Vec<String>> {
        match self {
            PreparedJudge::Disk(w) => Some(w.device_stack(&Root::live())),
            _ => None,
        }
    }

    /// The peer's address for a network judge.
    pub fn peer(&self) -> Option<std::net::SocketAddr> {
        match self {
            PreparedJudge::Disk(_) => None,
            PreparedJudge::Net(n) => Some(n.addr),
            PreparedJudge::Smb(s) => Some(s.addr()),
            PreparedJudge::Http(h) => Some(h.addr),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judges_parse_by_their_prefix() {
        let j: Judge = "seq-write:/srv/x".parse().unwrap();
        assert_eq!(j.kind(), "disk");
        assert_eq!(j.to_string(), "seq-write:/srv/x");
        let j: Judge = "net:10.0.0.2".parse().unwrap();
        assert_eq!(
            (j.kind(), j.to_string()),
            ("net", "net:10.0.0.2:5201".into())
        );
        let j: Judge = "smb://127.0.0.1:4450/rw".parse().unwrap();
        assert_eq!(
            (j.kind(), j.to_string()),
            ("smb", "smb://127.0.0.1:4450/rw".into())
        );
        let j: Judge = "http:http://127.0.0.1:8080/x".parse().unwrap();
        assert_eq!(j.kind(), "http");
        assert_eq!(j.to_string(), "http:http://127.0.0.1:8080/x");
        let e = "ftp://x/y".parse::<Judge>().unwrap_err().to_string();
        assert!(e.starts_with("'ftp://x/y' is not a judge"), "{e}");
        assert!("net:".parse::<Judge>().is_err());
        assert!("smb://host".parse::<Judge>().is_err());
    }

    #[test]
    fn each_judge_has_a_default_metric_and_refuses_others() {
        let o = JudgeOptions::default();
        let disk: Judge = "rand-read:/srv".parse().unwrap();
        assert_eq!(disk.pick(&o, None).unwrap(), MetricName::Iops);
        let e = disk.pick(&o, Some(MetricName::CpuPerGb)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the disk judge does not measure 'cpu_per_gb'; it measures 'iops', 'bw', 'p99', \
             'stall', 'sustained'"
        );
        // The timeline's metrics are the disk judges', the stall lower-better;
        // the buffered read has no series.
        assert_eq!(disk.metric(MetricName::Stall).better, Better::Lower);
        assert_eq!(
            disk.metric(MetricName::Sustained).name,
            "read_sustained_mb_per_sec"
        );
        let write: Judge = "buffered-seq-write:/srv".parse().unwrap();
        assert_eq!(write.pick(&o, None).unwrap(), MetricName::Bw);
        assert_eq!(
            write.metric(MetricName::Sustained).name,
            "write_sustained_mb_per_sec"
        );
        let cached: Judge = "buffered-seq-read:/srv".parse().unwrap();
        assert!(cached.pick(&o, Some(MetricName::Stall)).is_err());
        let smb: Judge = "smb://h/s".parse().unwrap();
        assert!(smb.pick(&o, Some(MetricName::Stall)).is_err());
        assert_eq!(smb.pick(&o, None).unwrap(), MetricName::Bw);
        let cpu = smb.pick(&o, Some(MetricName::CpuPerGb)).unwrap();
        assert_eq!(smb.metric(cpu).better, Better::Lower);
        let net: Judge = "net:h".parse().unwrap();
        let rr = JudgeOptions {
            rr: true,
            ..JudgeOptions::default()
        };
        assert_eq!(net.pick(&rr, None).unwrap(), MetricName::P99);
        assert_eq!(net.pick(&o, None).unwrap(), MetricName::Bw);
        assert_eq!(cpu_seconds_per_gb(2_000_000_000, 4_000_000_000), Some(0.5));
        assert_eq!(cpu_seconds_per_gb(1, 0), None);
    }
}
