//! CPU spent during a measurement, three ways: this process (getrusage: what fio
//! reports as usr_cpu/sys_cpu), the whole system (/proc/stat: catches work done
//! for us in interrupts and other threads), and the kernel threads that did work
//! (kcryptd, md raid threads, io-wq, kworkers), which getrusage never sees.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::probe::proc_stat::{CpuTicks, parse_stat};
use crate::root::{ReadError, Root};

/// PF_KTHREAD in /proc/<pid>/stat `flags`.
const PF_KTHREAD: u64 = 0x0020_0000;

/// getrusage(RUSAGE_SELF) user and system time, in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcessCpu {
    pub user_ns: u64,
    pub sys_ns: u64,
}

pub fn process_cpu() -> ProcessCpu {
    // SAFETY: getrusage fills the zeroed struct; RUSAGE_SELF always exists.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000;
    ProcessCpu {
        user_ns: ns(ru.ru_utime),
        sys_ns: ns(ru.ru_stime),
    }
}

/// System-wide CPU over an interval, as percent of all CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemCpuPct {
    pub user_pct: f64,
    pub sys_pct: f64,
    pub iowait_pct: f64,
    pub irq_pct: f64,
    pub softirq_pct: f64,
    pub idle_pct: f64,
    /// CPU time all CPUs spent not idle and not waiting, in ns.
    pub busy_ns: u64,
}

pub fn system_delta(before: &CpuTicks, after: &CpuTicks, ticks_per_sec: u64) -> SystemCpuPct {
    let total = after.total().saturating_sub(before.total());
    if total == 0 {
        return SystemCpuPct::default();
    }
    let pct = |a: u64, b: u64| a.saturating_sub(b) as f64 * 100.0 / total as f64;
    SystemCpuPct {
        user_pct: pct(after.user + after.nice, before.user + before.nice),
        sys_pct: pct(after.system, before.system),
        iowait_pct: pct(after.iowait, before.iowait),
        irq_pct: pct(after.irq, before.irq),
        softirq_pct: pct(after.softirq, before.softirq),
        idle_pct: pct(after.idle, before.idle),
        busy_ns: (after.total() - after.idle - after.iowait)
            .saturating_sub(before.total() - before.idle - before.iowait)
            * (1_000_000_000 / ticks_per_sec.max(1)),
    }
}

/// One line of /proc/<pid>/stat: the name, the flags and utime+stime in ticks.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskStat {
    pub comm: String,
    pub kernel_thread: bool,
    pub ticks: u64,
}

/// Parses /proc/<pid>/stat. The name sits in parentheses and may itself contain
/// spaces and parentheses, so fields are counted from the last ')'.
pub fn parse_task_stat(text: &str) -> Option<TaskStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3 (state); flags is field 9, utime 14, stime 15.
    let field = |n: usize| rest.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    let flags = field(9)?;
    Some(TaskStat {
        comm,
        kernel_thread: flags & PF_KTHREAD != 0,
        ticks: field(14)? + field(15)?,
    })
}

/// Kernel-thread CPU ticks by pid at one instant.
#[derive(Debug, Clone, Default)]
pub struct KernelThreads {
    by_pid: HashMap<u32, TaskStat>,
}

/// Reads every kernel thread's CPU time. Threads that vanish while we read are
/// skipped: they are racing us, not an error.
pub fn read_kernel_threads(root: &Root) -> Result<KernelThreads, ReadError> {
    let mut by_pid = HashMap::new();
    for name in root.read_dir("proc")? {
        let Ok(pid) = name.parse::<u32>() else {
            continue;
        };
        let Ok(text) = root.read_string(&format!("proc/{pid}/stat")) else {
            continue;
        };
        if let Some(task) = parse_task_stat(&text).filter(|t| t.kernel_thread) {
            by_pid.insert(pid, task);
        }
    }
    Ok(KernelThreads { by_pid })
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadCpu {
    pub pid: u32,
    pub comm: String,
    pub cpu_ns: u64,
}

/// The kernel threads that used CPU between two readings, busiest first, at most `top`.
pub fn kernel_thread_delta(
    before: &KernelThreads,
    after: &KernelThreads,
    ticks_per_sec: u64,
    top: usize,
) -> Vec<ThreadCpu> {
    let ns_per_tick = 1_000_000_000 / ticks_per_sec.max(1);
    let mut out: Vec<ThreadCpu> = after
        .by_pid
        .iter()
        .filter_map(|(pid, a)| {
            // A thread born during the run counts from zero.
            let b = before
                .by_pid
                .get(pid)
                .filter(|b| same_thread(&b.comm, &a.comm))
                .map_or(0, |b| b.ticks);
            let d = a.ticks.saturating_sub(b);
            (d > 0).then(|| ThreadCpu {
                pid: *pid,
                comm: a.comm.clone(),
                cpu_ns: d * ns_per_tick,
            })
        })
        .collect();
    out.sort_by(|x, y| y.cpu_ns.cmp(&x.cpu_ns).then(x.pid.cmp(&y.pid)));
    out.truncate(top);
    out
}

/// Whether two names of one pid are the same thread: a kworker's name
/// carries the workqueue it last ran ("kworker/u8:2-events_unbound"), or
/// '+' and the one it is running ("kworker/u2:1+kcryptd/253:0"), which
/// changes while it lives, so only the part before the '-' or '+' counts.
/// (Missing the '+' counted a busy kcryptd worker's whole life as new.)
fn same_thread(a: &str, b: &str) -> bool {
    let base = |c: &str| -> String {
        if c.starts_with("kworker/") {
            c.split(['-', '+']).next().unwrap_or(c).to_string()
        } else {
            c.to_string()
        }
    };
    base(a) == base(b)
}

pub fn ticks_per_sec() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as u64 } else { 100 }
}

/// Everything CPU at one instant; two of them make a [`CpuUsage`].
#[derive(Debug, Clone)]
pub struct CpuSample {
    pub process: ProcessCpu,
    pub system: Option<CpuTicks>,
    pub kthreads: Option<KernelThreads>,
}

/// Samples at the start of a window: our own CPU last, so the /proc scan is
/// not charged to the I/O that follows.
pub fn sample_start(root: &Root) -> CpuSample {
    let kthreads = read_kernel_threads(root).ok();
    let system = read_system(root);
    CpuSample {
        process: process_cpu(),
        system,
        kthreads,
    }
}

/// Samples at the end of a window: our own CPU first, for the same reason.
pub fn sample_end(root: &Root) -> CpuSample {
    let process = process_cpu();
    let system = read_system(root);
    CpuSample {
        process,
        system,
        kthreads: read_kernel_threads(root).ok(),
    }
}

fn read_system(root: &Root) -> Option<CpuTicks> {
    root.read_string("proc/stat")
        .ok()
        .and_then(|t| parse_stat(&t).ok())
        .and_then(|s| s.total)
}

/// CPU used over an interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuUsage {
    pub process_user_ns: u64,
    pub process_sys_ns: u64,
    /// None when /proc/stat was unreadable.
    pub system: Option<SystemCpuPct>,
    pub kernel_threads: Vec<ThreadCpu>,
}

pub fn usage(before: &CpuSample, after: &CpuSample) -> CpuUsage {
    let system = match (&before.system, &after.system) {
        (Some(b), Some(a)) => Some(system_delta(b, a, ticks_per_sec())),
        _ => None,
    };
    let kernel_threads = match (&before.kthreads, &after.kthreads) {
        (Some(b), Some(a)) => kernel_thread_delta(b, a, ticks_per_sec(), 5),
        _ => Vec::new(),
    };
    CpuUsage {
        process_user_ns: after.process.user_ns.saturating_sub(before.process.user_ns),
        process_sys_ns: after.process.sys_ns.saturating_sub(before.process.sys_ns),
        system,
        kernel_threads,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticks(text: &str) -> CpuTicks {
        parse_stat(text).unwrap().total.unwrap()
    }

    #[test]
    fn a_kworker_that_changed_workqueue_is_still_the_same_thread() {
        assert!(same_thread(
            "kworker/u8:2-events_unbound",
            "kworker/u8:2-flush-8:0"
        ));
        assert!(same_thread(
            "kworker/0:1H-kblockd",
            "kworker/0:1H-events_highpri"
        ));
        // Running a work item at the reading: '+' instead of '-'.
        assert!(same_thread(
            "kworker/u2:1-kcryptd/253:0",
            "kworker/u2:1+kcryptd/253:0"
        ));
        assert!(same_thread("kworker/u2:1+flush-253:0", "kworker/u2:1"));
        assert!(!same_thread(
            "kworker/u2:1+kcryptd/253:0",
            "kworker/u2:2+kcryptd/253:0"
        ));
        assert!(!same_thread("kworker/0:1", "kworker/0:1H-kblockd"));
        assert!(!same_thread("kworker/0:1", "kworker/0:2"));
        assert!(!same_thread("kcryptd/253:0", "kcryptd/253:1"));
    }

    #[test]
    fn system_shares_between_two_proc_stats() {
        let a = ticks("cpu  100 0 50 800 10 5 5 0 0 0\ncpu0 1 2 3 4 5 6 7\n");
        let b = ticks("cpu  150 0 100 1000 60 15 25 0 0 0\n");
        let d = system_delta(&a, &b, 100);
        assert_eq!(d.busy_ns, 130 * 10_000_000);
        // total delta = 50+50+200+50+10+20 = 380
        assert!((d.user_pct - 50.0 * 100.0 / 380.0).abs() < 1e-9);
        assert!((d.iowait_pct - 50.0 * 100.0 / 380.0).abs() < 1e-9);
        assert!((d.softirq_pct - 20.0 * 100.0 / 380.0).abs() < 1e-9);
    }

    #[test]
    fn unreadable_or_cpu_less_proc_stat_is_no_system_view() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::tree(dir.path()).unwrap();
        assert_eq!(read_system(&root), None);
        std::fs::create_dir(dir.path().join("proc")).unwrap();
        for text in ["intr 1 2\n", "cpu  1 x 3 4 5 6 7\n"] {
            std::fs::write(dir.path().join("proc/stat"), text).unwrap();
            assert_eq!(read_system(&root), None, "{text:?}");
        }
        std::fs::write(dir.path().join("proc/stat"), "cpu  1 2 3 4 5 6 7 8\n").unwrap();
        assert_eq!(read_system(&root).map(|t| t.total()), Some(36));
    }

    #[test]
    fn parses_task_stat_with_awkward_names() {
        let kworker = "42 (kworker/u8:2-kcryptd/253:0) I 2 0 0 0 -1 69238880 0 0 0 0 17 23 0 0 20 0 1 0 9 0 0";
        let t = parse_task_stat(kworker).unwrap();
        assert_eq!(t.comm, "kworker/u8:2-kcryptd/253:0");
        assert!(t.kernel_thread);
        assert_eq!(t.ticks, 40);
        let user = "7 (a) b) (c) S 1 7 7 0 -1 4194560 0 0 0 0 3 4 0 0 20 0 1 0 9 0 0";
        let t = parse_task_stat(user).unwrap();
        assert_eq!(t.comm, "a) b) (c");
        assert!(!t.kernel_thread);
        assert_eq!(parse_task_stat("1 (x) S 1"), None);
    }

    #[test]
    fn kernel_thread_delta_keeps_the_busiest() {
        let mk = |v: &[(u32, &str, u64)]| KernelThreads {
            by_pid: v
                .iter()
                .map(|(p, c, t)| {
                    (
                        *p,
                        TaskStat {
                            comm: c.to_string(),
                            kernel_thread: true,
                            ticks: *t,
                        },
                    )
                })
                .collect(),
        };
        let before = mk(&[
            (1, "kcryptd", 10),
            (2, "md0_raid5", 5),
            (3, "kworker/0:1", 7),
        ]);
        let after = mk(&[
            (1, "kcryptd", 60),
            (2, "md0_raid5", 25),
            (3, "kworker/0:1", 7),
            (9, "iou-wrk-5", 3),
        ]);
        let d = kernel_thread_delta(&before, &after, 100, 2);
        assert_eq!(d.len(), 2);
        assert_eq!(
            d[0],
            ThreadCpu {
                pid: 1,
                comm: "kcryptd".into(),
                cpu_ns: 500_000_000
            }
        );
        assert_eq!(d[1].comm, "md0_raid5");
    }

    #[test]
    fn reads_kernel_threads_from_a_tree() {
        let dir = tempfile::tempdir().unwrap();
        for (pid, stat) in [
            (
                "12",
                "12 (kcryptd/253:0) I 2 0 0 0 -1 2129984 0 0 0 0 4 6 0 0",
            ),
            ("300", "300 (bash) S 1 0 0 0 -1 4194304 0 0 0 0 9 9 0 0"),
        ] {
            std::fs::create_dir_all(dir.path().join("proc").join(pid)).unwrap();
            std::fs::write(dir.path().join("proc").join(pid).join("stat"), stat).unwrap();
        }
        let root = Root::tree(dir.path()).unwrap();
        let k = read_kernel_threads(&root).unwrap();
        assert_eq!(k.by_pid.len(), 1);
        assert_eq!(k.by_pid[&12].ticks, 10);
    }
}
