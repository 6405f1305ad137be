//! `nastune bench disk`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::bench::disk::engine::EngineKind;
use crate::bench::disk::suites::{self, Suite};
use crate::bench::disk::workload::{self, Rw, Workload, WorkloadError};
use crate::bench::disk::{Plan, SuiteOptions};

pub const LONG_ABOUT: &str = "Measure storage: throughput, IOPS, latency percentiles \
(p50 to p99.99 and max), the CPU each I/O costs (nastune's own, the whole system's and the \
kernel threads'), and what every layer of the block stack really moved (/proc/diskstats), so \
page-cache hits, RAID parity and encryption show.\n\n\
PATH is a directory (default: the current one; a temporary file of min(1 GiB, half the free \
space) is created there and removed afterwards, also on Ctrl-C, or by the next run after a \
kill), an existing file (used in place: write tests overwrite it, unless a loop device or swap \
sits on it), a new file (created as fio does, in an existing directory outside /dev, as big as \
the temporary file, and removed afterwards), or a block device (reads always; writes only when it looks blank: no known \
signature and zeros in its first and last MiB and where partitions usually start, from sector \
34 to 64 MiB, and nothing mounted, held, swapped, backed or claimed on it or on a device with \
its bytes, such as another loop device over the same file, another mapping over the partition \
an md array or mapping sits on, or the whole disk a partition is on; --destroy-data naming that \
device overrides what is stored on it, never a live use).\n\n\
Several PATHs run the --rw test on each alone, then on all at once (started together), and \
report each alone and together, the aggregate, and the shared ceiling when the aggregate is \
below 0.9 × the sum of the alone figures (a shared bus, controller or backing store). Block \
devices are read; writes need --destroy-data naming each.\n\n\
--stack runs the --rw read test at every layer under PATH: the file, the dm-crypt device, \
the md array, the partition, each member disk alone and the members together, and what each \
layer costs against the one below. Reads only: safe on a live box.\n\n\
Without --rw a suite runs (--suite quick by default). Options use fio's names. The engine is \
io_uring when the kernel allows it, else psync (said on stderr); --engine null does no I/O and \
measures the benchmark's own overhead.\n\nExamples:\n  nastune bench disk /srv\n  \
nastune bench disk --suite nas --json /srv\n  \
nastune bench disk --rw randread --bs 4k --iodepth 32 --direct --runtime 10 /srv/test.img\n  \
nastune bench disk --rw read /dev/sdb\n  \
nastune bench disk --rw read --bs 1m --direct /dev/sdb /dev/sdc /dev/sdd\n  \
nastune bench disk --stack --rw read --bs 1m --direct /srv/big.file\n\nExit codes: 0 ok, 2 usage or runtime error, 130 interrupted.";

#[derive(Debug, Args)]
pub struct DiskArgs {
    /// Directory, file or block device to measure; several run alone, then together
    #[arg(value_name = "PATH", default_value = ".", num_args = 1..)]
    pub paths: Vec<PathBuf>,
    /// Set of tests to run when --rw is not given
    #[arg(long, value_enum, conflicts_with = "rw")]
    pub suite: Option<Suite>,
    /// One custom test instead of a suite (fio's rw)
    #[arg(long, value_enum)]
    pub rw: Option<Rw>,
    /// Percent of reads in rw and randrw
    #[arg(long, default_value_t = 50, requires = "rw", value_parser = |s: &str| crate::cli::values::whole("percent", 0..=100)(s).map(|v| v as u8))]
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
    // The value only after '=' (fio's --direct=1): a bare --direct followed by a
    // PATH would otherwise take the PATH as its value and refuse it.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "1", value_name = "0|1", value_parser = bool_arg)]
    pub direct: Option<bool>,
    /// Same as --direct=0
    #[arg(long, conflicts_with = "direct")]
    pub buffered: bool,
    /// Bytes of the target to use; for a directory, the temporary file's size
    #[arg(long, value_parser = size_arg)]
    pub size: Option<u64>,
    /// Measured time per test (10, 10s, 500ms, 2m) [default: 5s]
    #[arg(long, value_parser = duration_arg)]
    pub runtime: Option<Duration>,
    /// Warm-up before measuring; its I/O is not counted [default: 1s for suites, 0 for --rw]
    #[arg(long, value_parser = duration_arg)]
    pub ramp_time: Option<Duration>,
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
    /// Allow writes to this block device even though it holds data (must be a PATH; repeat for each; never while mounted, held or swap)
    #[arg(long, value_name = "DEVICE")]
    pub destroy_data: Vec<PathBuf>,
    /// Run the --rw read test at every layer under PATH: the file, dm, md, partition, each disk and the disks together
    #[arg(long, requires = "rw")]
    pub stack: bool,
    /// Seconds per throughput point of each test's timeline (0.1 and up, iperf3's -i)
    #[arg(long, value_name = "SECS", default_value = "1", value_parser = interval_arg)]
    pub interval: Duration,
    /// Write (or read) until the rate settles: the last 10 s within ±15 % after the page cache filled; --runtime is the cap [default with it: 300s]
    #[arg(long, requires = "rw")]
    pub until_steady: bool,
    /// Print the versioned JSON document instead of the table
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub guard: crate::cli::guard::GuardArgs,
}

pub(crate) fn size_arg(s: &str) -> Result<u64, String> {
    workload::parse_size(s).map_err(|e| e.to_string())
}

fn duration_arg(s: &str) -> Result<Duration, String> {
    workload::parse_duration(s).map_err(|e| e.to_string())
}

pub(super) fn interval_arg(s: &str) -> Result<Duration, String> {
    let min = crate::timeline::MIN_INTERVAL;
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= min.as_secs_f64() && v <= 3600.0 => {
            Ok(Duration::from_secs_f64(v))
        }
        _ => Err(format!(
            "'{s}' is not a number of seconds from {} to 3600 (e.g. 1 or 0.25)",
            min.as_secs_f64()
        )),
    }
}

fn bool_arg(s: &str) -> Result<bool, String> {
    match s {
        "1" | "true" => Ok(true),
        "0" | "false" => Ok(false),
        _ => Err(format!("'{s}' is not 0 or 1")),
    }
}

impl DiskArgs {
    /// The plan these arguments ask for: fio's defaults (depth 1, buffered,
    /// no warm-up) for --rw, the suite's (direct, 1 s warm-up) otherwise.
    pub fn plan(&self) -> Result<Plan, WorkloadError> {
        let direct = if self.buffered {
            Some(false)
        } else {
            self.direct
        };
        let runtime = self.runtime.unwrap_or(if self.until_steady {
            crate::timeline::steady::DEFAULT_CAP
        } else {
            suites::DEFAULT_RUNTIME
        });
        let path = self.paths.first().cloned().unwrap_or_else(|| ".".into());
        let mut plan = match self.rw {
            Some(rw) => Plan::custom(
                path,
                Workload {
                    rw,
                    rwmixread: self.rwmixread,
                    bs: u32::try_from(self.bs).map_err(|_| WorkloadError::BsRange(self.bs))?,
                    iodepth: self.iodepth,
                    numjobs: self.numjobs,
                    direct: direct.unwrap_or(false),
                    runtime,
                    ramp_time: self.ramp_time.unwrap_or(Duration::ZERO),
                    fsync: self.fsync,
                    fdatasync: self.fdatasync,
                    end_fsync: self.end_fsync,
                    verify: self.verify,
                },
            )?,
            None => Plan::suite(
                path,
                self.suite.unwrap_or(Suite::Quick),
                SuiteOptions {
                    direct: direct.unwrap_or(true),
                    runtime,
                    ramp_time: self.ramp_time.unwrap_or(suites::DEFAULT_RAMP),
                    verify: self.verify,
                },
            )?,
        };
        plan.size = self.size;
        plan.engine = self.engine;
        plan.others = self.paths.iter().skip(1).cloned().collect();
        plan.destroy_data = self.destroy_data.clone();
        plan.stack = self.stack;
        plan.loops = self.loops;
        plan.settle_s = self.guard.settle;
        plan.direct_chosen = self.buffered || self.direct.is_some();
        plan.interval = Some(self.interval);
        plan.until_steady = self.until_steady;
        plan.check_shape()?;
        Ok(plan)
    }
}
