//! The server's side of a workload when the server is this box: CPU of the
//! smbd processes (from /proc/PID/stat), softirq and iowait (from /proc/stat)
//! and the kernel threads that do crypto, RAID and USB work, as CPU-seconds
//! per GB moved. The path model reads these per-stage costs.

use std::net::{IpAddr, SocketAddr};

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::bench::cpu;
use crate::bench::validity::observe;
use crate::root::Root;

/// CPU one stage spent on a workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageCpu {
    /// smbd, softirq, iowait, kcryptd, md-raid, usb-storage, kworker.
    pub stage: String,
    pub cpu_ns: u64,
    /// None when the workload moved no data (metadata).
    pub cpu_seconds_per_gb: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerCost {
    pub stages: Vec<StageCpu>,
    /// Each online CPU's busy time (not idle, not iowait) during the
    /// workload, whoever used it: with the path's own costs it tells what
    /// other processes took from the path's cores (absent before 0.2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub busy_by_cpu: Vec<CpuBusy>,
    /// The sampled window the busy times cover, ns (a little longer than
    /// the transfer: it includes the open and close).
    #[serde(default)]
    pub window_ns: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuBusy {
    pub cpu: u32,
    pub busy_ns: u64,
}

/// The `cpuN` lines of /proc/stat.
fn per_cpu(root: &Root) -> Vec<(u32, crate::probe::proc_stat::CpuTicks)> {
    root.read_string("proc/stat")
        .ok()
        .and_then(|t| crate::probe::proc_stat::parse_stat(&t).ok())
        .map(|s| s.per_cpu)
        .unwrap_or_default()
}

/// Busy nanoseconds of each CPU present in both samples.
pub fn busy_between(
    before: &[(u32, crate::probe::proc_stat::CpuTicks)],
    after: &[(u32, crate::probe::proc_stat::CpuTicks)],
    ns_per_tick: u64,
) -> Vec<CpuBusy> {
    let busy = |t: &crate::probe::proc_stat::CpuTicks| t.total().saturating_sub(t.idle + t.iowait);
    after
        .iter()
        .filter_map(|(cpu, a)| {
            let (_, b) = before.iter().find(|(c, _)| c == cpu)?;
            Some(CpuBusy {
                cpu: *cpu,
                busy_ns: busy(a).saturating_sub(busy(b)) * ns_per_tick,
            })
        })
        .collect()
}

/// Whether `addr` is this box's own smbd: a loopback or bindable address (the
/// validity guard's test) whose port is not forwarded elsewhere. QEMU's hostfwd,
/// ssh -L or socat listen on a local port for another box's smbd; sampling this
/// box's processes then would record a server cost of zero.
pub fn is_local(root: &Root, addr: &SocketAddr) -> bool {
    if !crate::bench::validity::is_local(addr.ip()) {
        return false;
    }
    let owners: Vec<String> = observe::port_owners(root, addr.port())
        .iter()
        .filter_map(|pid| root.read_string(&format!("proc/{pid}/comm")).ok())
        .collect();
    !forwarded_elsewhere(&owners)
}

/// Whether the processes listening on the port (their comm names) are not smbd. None
/// seen is no evidence either way: without root, root's smbd hides its sockets.
pub fn forwarded_elsewhere(owner_comms: &[String]) -> bool {
    !owner_comms.is_empty() && !owner_comms.iter().any(|c| c.trim().starts_with("smbd"))
}

/// CPU ticks of every process whose name starts with "smbd".
fn smbd_ticks(root: &Root) -> u64 {
    let Ok(names) = root.read_dir("proc") else {
        return 0;
    };
    names
        .iter()
        .filter(|n| n.parse::<u32>().is_ok())
        .filter_map(|pid| root.read_string(&format!("proc/{pid}/stat")).ok())
        .filter_map(|t| cpu::parse_task_stat(&t))
        .filter(|t| !t.kernel_thread && t.comm.starts_with("smbd"))
        .map(|t| t.ticks)
        .sum()
}

/// The stage a kernel thread's work belongs to, by its name.
pub fn stage_of(comm: &str) -> Option<&'static str> {
    if comm.starts_with("kcryptd") || comm.starts_with("dmcrypt") {
        Some("kcryptd")
    } else if comm.starts_with("md") && comm.contains("_raid") {
        Some("md-raid")
    } else if comm.starts_with("usb-storage") || comm.starts_with("uas") {
        Some("usb-storage")
    } else if comm.starts_with("kworker") {
        Some("kworker")
    } else {
        None
    }
}

pub struct Sampler {
    start: Instant,
    smbd: u64,
    cpu: cpu::CpuSample,
    per_cpu: Vec<(u32, crate::probe::proc_stat::CpuTicks)>,
}

impl Sampler {
    pub fn start(root: &Root) -> Sampler {
        Sampler {
            smbd: smbd_ticks(root),
            cpu: cpu::sample_start(root),
            per_cpu: per_cpu(root),
            start: Instant::now(),
        }
    }

    /// The costs since `start`, per GB of `bytes` moved.
    pub fn finish(self, root: &Root, bytes: u64) -> ServerCost {
        let window_ns = self.start.elapsed().as_nanos() as u64;
        let after = cpu::sample_end(root);
        let busy_by_cpu = busy_between(
            &self.per_cpu,
            &per_cpu(root),
            1_000_000_000 / cpu::ticks_per_sec().max(1),
        );
        let smbd = smbd_ticks(root).saturating_sub(self.smbd);
        let ns_per_tick = 1_000_000_000 / cpu::ticks_per_sec().max(1);
        let mut stages = vec![("smbd".to_string(), smbd * ns_per_tick)];
        if let (Some(b), Some(a)) = (&self.cpu.system, &after.system) {
            // /proc/stat's ticks are summed over every online CPU. (A share of
            // the elapsed time times our own CPU count undercounted under
            // taskset: one allowed CPU of two halved the softirq cost.)
            let ns = |after: u64, before: u64| after.saturating_sub(before) * ns_per_tick;
            stages.push(("softirq".into(), ns(a.softirq, b.softirq)));
            stages.push(("iowait".into(), ns(a.iowait, b.iowait)));
        }
        if let (Some(b), Some(a)) = (&self.cpu.kthreads, &after.kthreads) {
            for t in cpu::kernel_thread_delta(b, a, cpu::ticks_per_sec(), usize::MAX) {
                let Some(stage) = stage_of(&t.comm) else {
                    continue;
                };
                match stages.iter_mut().find(|(s, _)| s == stage) {
                    Some((_, ns)) => *ns += t.cpu_ns,
                    None => stages.push((stage.to_string(), t.cpu_ns)),
                }
            }
        }
        let gb = bytes as f64 / 1e9;
        ServerCost {
            stages: stages
                .into_iter()
                .map(|(stage, cpu_ns)| StageCpu {
                    stage,
                    cpu_ns,
                    cpu_seconds_per_gb: (bytes > 0).then(|| cpu_ns as f64 / 1e9 / gb),
                })
                .collect(),
            busy_by_cpu,
            window_ns,
        }
    }
}

/// Whether an address string names this box (for tests and messages).
pub fn ip_is_local(ip: IpAddr) -> bool {
    crate::bench::validity::is_local(ip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_another_program_listens_on_is_forwarded_elsewhere() {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(forwarded_elsewhere(&names(&["qemu-system-x86\n"])));
        assert!(forwarded_elsewhere(&names(&["ssh", "socat"])));
        assert!(!forwarded_elsewhere(&names(&["smbd\n"])));
        assert!(!forwarded_elsewhere(&names(&[
            "smbd[127.0.0.1]",
            "qemu-system-x86"
        ])));
        // Nothing seen (smbd is root's, we are not): trust the address.
        assert!(!forwarded_elsewhere(&[]));
    }

    #[test]
    fn kernel_threads_map_to_stages() {
        assert_eq!(stage_of("kcryptd/253:0"), Some("kcryptd"));
        assert_eq!(stage_of("md0_raid5"), Some("md-raid"));
        assert_eq!(stage_of("usb-storage"), Some("usb-storage"));
        assert_eq!(stage_of("kworker/u8:2-events_unbound"), Some("kworker"));
        assert_eq!(stage_of("ksoftirqd/0"), None);
        assert_eq!(stage_of("mdadm"), None);
    }

    #[test]
    fn loopback_is_local_and_a_documentation_address_is_not() {
        assert!(ip_is_local("127.0.0.1".parse().expect("ip")));
        assert!(!ip_is_local("192.0.2.1".parse().expect("ip")));
    }

    #[test]
    fn costs_are_per_gb_of_what_moved() {
        let s = Sampler::start(&Root::live());
        let c = s.finish(&Root::live(), 2_000_000_000);
        let smbd = c
            .stages
            .iter()
            .find(|s| s.stage == "smbd")
            .expect("smbd stage");
        assert_eq!(
            smbd.cpu_seconds_per_gb,
            Some(smbd.cpu_ns as f64 / 1e9 / 2.0)
        );
        let none = Sampler::start(&Root::live()).finish(&Root::live(), 0);
        assert!(none.stages.iter().all(|s| s.cpu_seconds_per_gb.is_none()));
    }
}
