//! One disk test, described with fio's vocabulary (`rw`, `bs`, `iodepth`,
//! `numjobs`, `direct`, `fsync` …), and the checks that reject impossible ones
//! before any I/O.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Upper bound of the buffer pool (iodepth × bs × numjobs): a 128 MiB box must
/// keep room for the page cache the benchmark is measuring.
pub const MAX_POOL_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    Read,
    Write,
    Randread,
    Randwrite,
    /// Sequential mixed reads and writes (`--rwmixread` percent reads)
    Rw,
    /// Random mixed reads and writes (`--rwmixread` percent reads)
    Randrw,
}

impl Rw {
    pub fn random(self) -> bool {
        matches!(self, Rw::Randread | Rw::Randwrite | Rw::Randrw)
    }
    pub fn reads(self) -> bool {
        !matches!(self, Rw::Write | Rw::Randwrite)
    }
    pub fn writes(self) -> bool {
        !matches!(self, Rw::Read | Rw::Randread)
    }
    /// Percent of I/Os that are reads.
    pub fn read_share(self, rwmixread: u8) -> u8 {
        match self {
            Rw::Read | Rw::Randread => 100,
            Rw::Write | Rw::Randwrite => 0,
            Rw::Rw | Rw::Randrw => rwmixread,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Rw::Read => "read",
            Rw::Write => "write",
            Rw::Randread => "randread",
            Rw::Randwrite => "randwrite",
            Rw::Rw => "rw",
            Rw::Randrw => "randrw",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    pub rw: Rw,
    pub rwmixread: u8,
    pub bs: u32,
    pub iodepth: u32,
    pub numjobs: u32,
    pub direct: bool,
    #[serde(serialize_with = "as_millis", deserialize_with = "from_millis")]
    pub runtime: Duration,
    #[serde(serialize_with = "as_millis", deserialize_with = "from_millis")]
    pub ramp_time: Duration,
    /// fsync after every N writes (0: never).
    pub fsync: u32,
    /// fdatasync after every N writes (0: never).
    pub fdatasync: u32,
    pub end_fsync: bool,
    pub verify: bool,
}

impl Workload {
    /// The fields that define "the same test", e.g. `disk rw=read bs=65536
    /// iodepth=1 ...`; runtime and ramp time only change how long it was measured.
    pub fn identity(&self) -> String {
        let rw = self.rw.name();
        format!(
            "disk rw={rw} bs={} iodepth={} numjobs={} direct={} rwmixread={} fsync={} fdatasync={} end_fsync={} verify={}",
            self.bs,
            self.iodepth,
            self.numjobs,
            self.direct,
            self.rwmixread,
            self.fsync,
            self.fdatasync,
            self.end_fsync,
            self.verify
        )
    }
}

fn as_millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}

fn from_millis<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    u64::deserialize(d).map(Duration::from_millis)
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum WorkloadError {
    #[error(
        "{0} targets run one test each, alone and then together: give it with --rw (e.g. --rw read --direct), not a suite"
    )]
    SeveralNeedRw(usize),
    #[error(
        "--loops '{0}' with several targets or --stack: each target runs one pass per phase; leave --loops out"
    )]
    SeveralLoops(u32),
    #[error(
        "--stack reads every layer under PATH (safe on a live box): give --rw read or --rw randread, not '{0}'"
    )]
    StackReadsOnly(String),
    #[error("--stack walks the layers under one PATH; give one, not {0}")]
    StackOneTarget(usize),
    #[error(
        "invalid size '{0}': use a number with an optional k, m, g or t suffix (powers of 1024), e.g. '4k' or '1g'"
    )]
    BadSize(String),
    #[error("invalid duration '{0}': use seconds ('10'), or a suffix: '500ms', '10s', '2m'")]
    BadDuration(String),
    #[error(
        "--bs '{bs}' must be a non-zero multiple of the device's logical block size ({block}) for direct I/O; try --bs {suggest}"
    )]
    Unaligned { bs: u32, block: u32, suggest: u32 },
    #[error("--bs must be between 512 and 64m, got '{0}'")]
    BsRange(u64),
    #[error("--iodepth must be 1 to 1024, got '{0}'")]
    Depth(u32),
    #[error("--numjobs must be 1 to 64, got '{0}'")]
    Jobs(u32),
    #[error("--rwmixread must be 0 to 100, got '{0}'")]
    Mix(u32),
    #[error(
        "buffers for --iodepth {iodepth} × --bs {bs} × --numjobs {numjobs} need {need} bytes, more than the {cap}-byte cap; lower one of them"
    )]
    PoolTooBig {
        iodepth: u32,
        bs: u32,
        numjobs: u32,
        need: u64,
        cap: u64,
    },
    #[error(
        "--verify checks what a write test wrote: use it with --rw write or --rw randwrite, not '{0}'"
    )]
    VerifyNeedsWrites(&'static str),
    #[error(
        "the target holds {size} bytes, less than one block of --bs {bs}; give a bigger --size or target"
    )]
    TooSmall { size: u64, bs: u32 },
    #[error("--runtime must be more than zero")]
    ZeroRuntime,
}

/// Parses fio-style sizes: `4k`, `1M`, `1g`, `512` (bytes). Powers of 1024.
pub fn parse_size(s: &str) -> Result<u64, WorkloadError> {
    let t = s.trim().to_ascii_lowercase();
    let t = t
        .strip_suffix("ib")
        .or_else(|| t.strip_suffix('b'))
        .unwrap_or(&t);
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'k')) => (&t[..i], 1u64 << 10),
        Some((i, 'm')) => (&t[..i], 1 << 20),
        Some((i, 'g')) => (&t[..i], 1 << 30),
        Some((i, 't')) => (&t[..i], 1 << 40),
        _ => (t, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| WorkloadError::BadSize(s.to_string()))
}

/// Parses `10`, `10s`, `500ms`, `2m`.
pub fn parse_duration(s: &str) -> Result<Duration, WorkloadError> {
    let t = s.trim().to_ascii_lowercase();
    let bad = || WorkloadError::BadDuration(s.to_string());
    let (num, ms_per) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1u64)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1000)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60_000)
    } else {
        (t.as_str(), 1000)
    };
    let n: u64 = num.parse().map_err(|_| bad())?;
    Ok(Duration::from_millis(
        n.checked_mul(ms_per).ok_or_else(bad)?,
    ))
}

impl Workload {
    /// Checks that do not depend on the target.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if !(512..=64 << 20).contains(&self.bs) {
            return Err(WorkloadError::BsRange(u64::from(self.bs)));
        }
        if !(1..=1024).contains(&self.iodepth) {
            return Err(WorkloadError::Depth(self.iodepth));
        }
        if !(1..=64).contains(&self.numjobs) {
            return Err(WorkloadError::Jobs(self.numjobs));
        }
        if self.rwmixread > 100 {
            return Err(WorkloadError::Mix(u32::from(self.rwmixread)));
        }
        if self.runtime.is_zero() {
            return Err(WorkloadError::ZeroRuntime);
        }
        let need = self.pool_bytes();
        if need > MAX_POOL_BYTES {
            return Err(WorkloadError::PoolTooBig {
                iodepth: self.iodepth,
                bs: self.bs,
                numjobs: self.numjobs,
                need,
                cap: MAX_POOL_BYTES,
            });
        }
        if self.verify && self.rw.reads() {
            return Err(WorkloadError::VerifyNeedsWrites(self.rw.name()));
        }
        Ok(())
    }

    /// Checks against the target: its size and, for direct I/O, its block size.
    pub fn validate_for(&self, size: u64, logical_block: u32) -> Result<(), WorkloadError> {
        if size < u64::from(self.bs) {
            return Err(WorkloadError::TooSmall { size, bs: self.bs });
        }
        let block = logical_block.max(1);
        if self.direct && !self.bs.is_multiple_of(block) {
            return Err(WorkloadError::Unaligned {
                bs: self.bs,
                block,
                suggest: self.bs.div_ceil(block) * block,
            });
        }
        Ok(())
    }

    pub fn pool_bytes(&self) -> u64 {
        u64::from(self.iodepth) * u64::from(self.bs) * u64::from(self.numjobs)
    }

    /// A short label in the CrystalDiskMark style: `SEQ1M Q8T1 read`.
    pub fn label(&self) -> String {
        let kind = if self.rw.random() { "RND" } else { "SEQ" };
        let bs = if self.bs.is_multiple_of(1 << 20) {
            format!("{}M", self.bs >> 20)
        } else if self.bs.is_multiple_of(1024) {
            format!("{}K", self.bs >> 10)
        } else {
            format!("{}B", self.bs)
        };
        let what = match self.rw {
            Rw::Read | Rw::Randread => "read".to_string(),
            Rw::Write | Rw::Randwrite => "write".to_string(),
            Rw::Rw | Rw::Randrw => format!("mix{}", self.rwmixread),
        };
        format!("{kind}{bs} Q{}T{} {what}", self.iodepth, self.numjobs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn sample() -> Workload {
        Workload {
            rw: Rw::Randread,
            rwmixread: 50,
            bs: 4096,
            iodepth: 32,
            numjobs: 1,
            direct: true,
            runtime: Duration::from_secs(5),
            ramp_time: Duration::ZERO,
            fsync: 0,
            fdatasync: 0,
            end_fsync: false,
            verify: false,
        }
    }

    #[test]
    fn sizes_and_durations() {
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("512"), Ok(512));
        assert!(parse_size("4x").unwrap_err().to_string().contains("'4x'"));
        assert!(parse_size("99999999999t").is_err());
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn rejects_impossible_workloads_with_the_value() {
        let mut w = sample();
        assert_eq!(w.validate(), Ok(()));
        w.iodepth = 0;
        assert_eq!(w.validate(), Err(WorkloadError::Depth(0)));
        w = sample();
        w.bs = 64 << 20;
        w.iodepth = 2;
        assert!(matches!(
            w.validate(),
            Err(WorkloadError::PoolTooBig { .. })
        ));
        w = sample();
        w.verify = true;
        assert!(w.validate().unwrap_err().to_string().contains("randread"));
        w = sample();
        w.bs = 6000;
        let e = w.validate_for(1 << 30, 4096).unwrap_err();
        assert!(e.to_string().contains("--bs 8192"), "{e}");
        w.direct = false;
        assert_eq!(w.validate_for(1 << 30, 4096), Ok(()));
        assert!(matches!(
            w.validate_for(100, 512),
            Err(WorkloadError::TooSmall { .. })
        ));
    }

    #[test]
    fn labels_follow_crystaldiskmark() {
        let mut w = sample();
        assert_eq!(w.label(), "RND4K Q32T1 read");
        w.rw = Rw::Write;
        w.bs = 1 << 20;
        w.iodepth = 8;
        assert_eq!(w.label(), "SEQ1M Q8T1 write");
    }
}
