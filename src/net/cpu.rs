//! CPU use during a test, two ways: system-wide from `/proc/stat` including
//! softirq (where network processing hides), and this process's user+system time
//! as iperf3 reports it (`cpu_util_*`, % of one core).

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::probe::proc_stat::{CpuTicks, parse_stat};
use crate::root::Root;

/// System-wide CPU between two samples, in % of all CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemCpu {
    pub busy_percent: f64,
    pub user_percent: f64,
    pub system_percent: f64,
    pub softirq_percent: f64,
    pub irq_percent: f64,
}

pub fn system_delta(a: CpuTicks, b: CpuTicks) -> SystemCpu {
    let total = b.total().saturating_sub(a.total());
    if total == 0 {
        return SystemCpu::default();
    }
    let pct = |x: u64, y: u64| 100.0 * y.saturating_sub(x) as f64 / total as f64;
    let idle = pct(a.idle + a.iowait, b.idle + b.iowait);
    SystemCpu {
        busy_percent: 100.0 - idle,
        user_percent: pct(a.user + a.nice, b.user + b.nice),
        system_percent: pct(a.system, b.system),
        softirq_percent: pct(a.softirq, b.softirq),
        irq_percent: pct(a.irq, b.irq),
    }
}

pub fn read_ticks(root: &Root) -> Option<CpuTicks> {
    parse_stat(&root.read_string("proc/stat").ok()?).ok()?.total
}

/// The online CPUs the aggregate `cpu` line of /proc/stat adds up: what a
/// system-wide percentage is a percentage of.
pub fn online_cpus(root: &Root) -> Option<u32> {
    let n = parse_stat(&root.read_string("proc/stat").ok()?)
        .ok()?
        .per_cpu
        .len();
    u32::try_from(n).ok().filter(|n| *n > 0)
}

/// CPU time per byte moved, system-wide: (user + system + softirq) % of
/// `cpus` cores over `seconds`, divided by `bytes`. CPU-seconds per GB is
/// nanoseconds per byte. `(all three, softirq alone)`; `None` without bytes.
pub fn ns_per_byte(cpu: &SystemCpu, cpus: u32, seconds: f64, bytes: u64) -> Option<(f64, f64)> {
    if bytes == 0 || cpus == 0 || seconds <= 0.0 {
        return None;
    }
    let ns = |pct: f64| pct / 100.0 * f64::from(cpus) * seconds * 1e9 / bytes as f64;
    let all = cpu.user_percent + cpu.system_percent + cpu.softirq_percent;
    Some((ns(all), ns(cpu.softirq_percent)))
}

/// This process's user and system CPU seconds (getrusage).
fn process_times() -> (f64, f64) {
    // SAFETY: an all-zero rusage is valid and getrusage only writes into it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

/// A starting point for both CPU views.
pub struct CpuMeter {
    ticks: Option<CpuTicks>,
    process: (f64, f64),
    wall: Instant,
}

/// iperf3-style process CPU (% of one core) plus the system-wide view.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUse {
    pub process_total_percent: f64,
    pub process_user_percent: f64,
    pub process_system_percent: f64,
    pub system: Option<SystemCpu>,
}

impl CpuMeter {
    pub fn start(root: &Root) -> CpuMeter {
        CpuMeter {
            ticks: read_ticks(root),
            process: process_times(),
            wall: Instant::now(),
        }
    }

    /// Use since `start` (or the last `lap`), then restarts the meter.
    pub fn lap(&mut self, root: &Root) -> CpuUse {
        let now = CpuMeter::start(root);
        let wall = now.wall.duration_since(self.wall).as_secs_f64().max(1e-9);
        let user = 100.0 * (now.process.0 - self.process.0) / wall;
        let sys = 100.0 * (now.process.1 - self.process.1) / wall;
        let system = match (self.ticks, now.ticks) {
            (Some(a), Some(b)) => Some(system_delta(a, b)),
            _ => None,
        };
        *self = now;
        CpuUse {
            process_total_percent: user + sys,
            process_user_percent: user,
            process_system_percent: sys,
            system,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticks(text: &str) -> CpuTicks {
        parse_stat(text).unwrap().total.unwrap()
    }

    #[test]
    fn proc_stat_cpu_line_and_delta() {
        let a = ticks("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4\n");
        let b = ticks("cpu  200 0 100 900 50 10 40 0 0 0\n");
        let d = system_delta(a, b);
        // 300 ticks: 100 idle, so 200 busy; 40 softirq.
        assert!((d.busy_percent - 66.666).abs() < 0.01, "{d:?}");
        assert!((d.softirq_percent - 13.333).abs() < 0.01);
        assert!((d.user_percent - 33.333).abs() < 0.01);
    }

    /// A Pogoplug receiving gigabit: one core 95 % busy (30 user, 40 system,
    /// 25 softirq) for 10 s while 280 MB arrived.
    #[test]
    fn cost_per_byte_from_system_cpu() {
        let cpu = SystemCpu {
            busy_percent: 95.0,
            user_percent: 30.0,
            system_percent: 40.0,
            softirq_percent: 25.0,
            irq_percent: 0.0,
        };
        let (all, softirq) = ns_per_byte(&cpu, 1, 10.0, 280_000_000).unwrap();
        // 0.95 core x 10 s = 9.5 CPU-s over 0.28 GB = 33.9 ns/B.
        assert!((all - 33.93).abs() < 0.01, "{all}");
        assert!((softirq - 8.93).abs() < 0.01, "{softirq}");
        // The same percentages of four cores are four times the CPU time.
        let (four, _) = ns_per_byte(&cpu, 4, 10.0, 280_000_000).unwrap();
        assert!((four - 4.0 * all).abs() < 1e-9);
        assert_eq!(ns_per_byte(&cpu, 1, 10.0, 0), None);
        assert_eq!(ns_per_byte(&cpu, 0, 10.0, 1), None);
    }

    #[test]
    fn online_cpus_counts_the_cpu_lines() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::tree(dir.path()).unwrap();
        assert_eq!(online_cpus(&root), None);
        std::fs::create_dir(dir.path().join("proc")).unwrap();
        std::fs::write(
            dir.path().join("proc/stat"),
            "cpu  4 0 4 8\ncpu0 1 0 1 2\ncpu2 3 0 3 6\n",
        )
        .unwrap();
        assert_eq!(online_cpus(&root), Some(2));
    }

    #[test]
    fn malformed_proc_stat_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::tree(dir.path()).unwrap();
        assert_eq!(read_ticks(&root), None);
        std::fs::create_dir(dir.path().join("proc")).unwrap();
        for text in ["intr 1 2 3\n", "cpu  1 x 3 4\n", "cpu  1 2\n"] {
            std::fs::write(dir.path().join("proc/stat"), text).unwrap();
            assert_eq!(read_ticks(&root), None, "{text:?}");
        }
        std::fs::write(dir.path().join("proc/stat"), "cpu  1 2 3 4\n").unwrap();
        assert_eq!(read_ticks(&root).map(|t| t.idle), Some(4));
    }
}
