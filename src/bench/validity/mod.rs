//! The validity guard: was the box quiet and at full speed while we measured?
//! A disturbed benchmark is worse than none, so every measurement carries a
//! [`Validity`]: each condition checked with its figure, and a verdict.
//!
//! [`Guard::start`] settles (waits for an idle box) and takes the "before"
//! readings, a sampler thread watches temperatures and throttling during the
//! run, and [`Guard::finish`] takes the "after" readings; `observe` reads,
//! `classify` judges.

pub mod classify;
pub mod observe;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::root::Root;

pub use crate::doc::validity::{Condition, Validity, Verdict};

/// What the guard watches, from the bench's plan.
#[derive(Debug, Clone, Default)]
pub struct GuardPlan {
    /// Seconds to wait for an idle box before starting; 0 skips the wait.
    pub settle_s: f64,
    /// Block devices the measurement uses (kernel names: `sda`, `loop3`):
    /// others' I/O on them, md syncs and ext4 lazy init matter.
    pub devices: Vec<String>,
    /// True for measurements that do disk I/O (md syncs and lazy init matter).
    pub io: bool,
    /// Processes that are part of the measurement (a local server): their CPU
    /// is not "other".
    pub peer_pids: Vec<u32>,
    /// ... and by name, for servers that fork a process per client (smbd).
    pub peer_names: Vec<String>,
}

impl GuardPlan {
    /// A CPU-only measurement (ciphers): no devices.
    pub fn cpu(settle_s: f64) -> Self {
        GuardPlan {
            settle_s,
            ..GuardPlan::default()
        }
    }

    /// A measurement against a server at `ip:port`: when the server is on this
    /// box, its processes are part of the measurement, not "other".
    pub fn peer(root: &Root, settle_s: f64, host: &str, port: u16) -> Self {
        use std::net::ToSocketAddrs;
        let ip = (host, port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .map(|a| a.ip());
        GuardPlan {
            settle_s,
            peer_pids: if ip.is_some_and(is_local) {
                observe::port_owners(root, port)
            } else {
                Vec::new()
            },
            ..GuardPlan::default()
        }
    }
}

/// Whether `ip` is this box's: loopback, or an address we can bind to.
pub fn is_local(ip: std::net::IpAddr) -> bool {
    ip.is_loopback() || std::net::UdpSocket::bind((ip, 0)).is_ok()
}

/// Everything observed around one measurement; `classify` judges it.
#[derive(Debug, Clone, Default)]
pub struct Observations {
    pub wall_s: f64,
    pub settle: Option<Settle>,
    pub other_cpu: Option<OtherCpu>,
    /// Storage bytes other processes read and wrote during the run.
    pub other_io: Option<OtherIo>,
    pub vm: Option<VmDelta>,
    /// PSI memory `some` stall time during the run.
    pub memory_stall_us: Option<u64>,
    /// PSI io `some` stall time during the run.
    pub io_stall_us: Option<u64>,
    /// The measurement does I/O itself: its own stalls are the work, not a
    /// disturbance.
    pub io_is_the_work: bool,
    pub clamped: Vec<Clamp>,
    /// Average frequency of the CPUs over the run (cpufreq time_in_state).
    pub average_mhz: Option<f64>,
    pub thermal_trips: Vec<ThermalTrip>,
    /// Raspberry Pi firmware throttled word, OR-ed over the run's samples.
    pub firmware_throttled: Option<u32>,
    /// hwmon `*_alarm` files that read 1 during the run.
    pub hwmon_alarms: Vec<String>,
    /// md arrays not idle: "md0 resync 37.0 %".
    pub md_busy: Vec<String>,
    pub ext4_lazyinit: bool,
    pub devices: Vec<DeviceIo>,
    pub page_cache: Option<PageCache>,
    pub measuring_thread: Option<MeasuringThread>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Settle {
    pub waited_s: f64,
    pub busy_cores: f64,
    pub idle_reached: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OtherCpu {
    pub total_ns: u64,
    /// The busiest other processes, at most three.
    pub top: Vec<ProcCpu>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OtherIo {
    pub total_bytes: u64,
    /// The busiest other processes, at most three.
    pub top: Vec<ProcIo>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProcIo {
    pub pid: u32,
    pub comm: String,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProcCpu {
    pub pid: u32,
    pub comm: String,
    pub cpu_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VmDelta {
    pub swap_in_pages: u64,
    pub swap_out_pages: u64,
    pub major_faults: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Clamp {
    pub cpu: u32,
    pub scaling_max_mhz: u64,
    pub hardware_max_mhz: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ThermalTrip {
    pub sensor: String,
    pub celsius: f64,
    pub trip_type: String,
    pub trip_celsius: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DeviceIo {
    pub device: String,
    /// Bytes others moved on the device while we settled, and over how long.
    pub before_s: f64,
    pub before_bytes: u64,
    /// Bytes the device moved during the run, and the benchmark's own when it
    /// knows them (direct I/O: every byte reaches the device).
    pub during_bytes: u64,
    pub own_bytes: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PageCache {
    pub file_bytes: u64,
    /// MemTotal: a file smaller than RAM can be held by the page cache whole.
    pub ram_bytes: u64,
}

/// What the thread(s) doing CPU-bound measured work got: the direct measure
/// of CPU disturbance, where `other_cpu` (others' CPU over the whole box)
/// only hints at it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeasuringThread {
    /// CPU seconds the threads used in their timed loops.
    pub cpu_secs: f64,
    /// Seconds they wanted a CPU: CPU + run-queue wait, or the wall clock.
    pub wanted_secs: f64,
    /// The smallest share of a core one timed loop got.
    pub worst_share: f64,
    /// Whether the run-queue wait was measured (schedstat) rather than the
    /// wall clock taken as the time wanted.
    pub wait_known: bool,
}

impl MeasuringThread {
    /// Share of a core the threads got over all their loops.
    pub fn share(&self) -> f64 {
        if self.wanted_secs > 0.0 {
            (self.cpu_secs / self.wanted_secs).min(1.0)
        } else {
            1.0
        }
    }
}

/// What the bench tells the guard at the end.
#[derive(Debug, Clone, Copy, Default)]
pub struct Outcome {
    /// Bytes the bench moved to or from the target devices, for direct I/O.
    pub own_device_bytes: Option<u64>,
    /// Size of the file a buffered disk run used.
    pub buffered_file_bytes: Option<u64>,
    /// What the measuring threads of a CPU-bound bench got.
    pub measuring_thread: Option<MeasuringThread>,
}

/// A running guard: the "before" readings and the sampler thread.
pub struct Guard {
    plan: GuardPlan,
    settle: Option<Settle>,
    before: observe::Readings,
    before_devices: Vec<(String, f64, u64)>,
    started: Instant,
    stop: Arc<AtomicBool>,
    sampler: Option<JoinHandle<observe::Samples>>,
}

/// Seconds the guard waits for an idle box unless told otherwise: long enough
/// for a finished job's writeback or a cron tick to pass, short enough to
/// leave on by default.
pub const DEFAULT_SETTLE_S: f64 = 3.0;

/// How often the sampler looks at temperatures and throttle flags.
const SAMPLE_EVERY: Duration = Duration::from_millis(500);

impl Guard {
    /// Settles, then takes the "before" readings. Never fails: what cannot be
    /// read is left out of the verdict.
    pub fn start(root: &Root, plan: GuardPlan) -> Guard {
        let (settle, before_devices) = observe::settle(root, &plan);
        let before = observe::readings(root, &plan);
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = if root.is_live() {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("validity".into())
                .stack_size(64 * 1024)
                .spawn(move || observe::sample_until(&Root::live(), &stop, SAMPLE_EVERY))
                .ok()
        } else {
            None
        };
        Guard {
            plan,
            settle,
            before,
            before_devices,
            started: Instant::now(),
            stop,
            sampler,
        }
    }

    /// Takes the "after" readings and judges the run.
    pub fn finish(mut self, root: &Root, outcome: Outcome) -> Validity {
        let wall_s = self.started.elapsed().as_secs_f64();
        let after = observe::readings(root, &self.plan);
        self.stop.store(true, Ordering::Relaxed);
        let samples = self
            .sampler
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let o = observe::observations(
            root,
            &self.plan,
            wall_s,
            self.settle.take(),
            &self.before,
            &after,
            &self.before_devices,
            &samples,
            outcome,
        );
        classify::classify(&o)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
