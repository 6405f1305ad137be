//! The kernel's CPU lists (`0-3,6`: /proc/irq/N/smp_affinity_list,
//! /sys/devices/system/cpu/online, `Cpus_allowed_list:` in /proc/PID/status),
//! parsed once here for probe, bench, advise and tune.

use std::collections::BTreeSet;

use super::ParseError;
use crate::root::Root;

/// A CPU list as the kernel writes it: `0-3,6`, `2`, or empty.
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>, ParseError> {
    let what = "CPU list";
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let bad = || ParseError::value(what, text.trim());
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (
                    a.trim().parse().map_err(|_| bad())?,
                    b.trim().parse().map_err(|_| bad())?,
                );
                if b < a || b - a > 4096 {
                    return Err(bad());
                }
                out.extend(a..=b);
            }
            None => out.push(part.trim().parse().map_err(|_| bad())?),
        }
    }
    Ok(out)
}

/// The CPUs of a non-empty CPU list as a set; `None` when the text is not one
/// or names no CPU.
pub fn parse_cpu_set(text: &str) -> Option<BTreeSet<u32>> {
    let cpus = parse_cpu_list(text).ok()?;
    (!cpus.is_empty()).then(|| cpus.into_iter().collect())
}

/// The CPUs a process may run on (its affinity within its cpuset), from the
/// `Cpus_allowed_list:` line of /proc/PID/status.
pub fn parse_cpus_allowed(status: &str) -> Option<BTreeSet<u32>> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(parse_cpu_set)
}

/// The CPUs process `pid` (`self`: this one) may run on; `None` when its
/// status cannot be read or names none.
pub fn read_cpus_allowed(root: &Root, pid: impl std::fmt::Display) -> Option<BTreeSet<u32>> {
    root.read_string(&format!("proc/{pid}/status"))
        .ok()
        .and_then(|t| parse_cpus_allowed(&t))
}
