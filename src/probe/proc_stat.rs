//! /proc/stat: CPU time in clock ticks (all CPUs and each one), context
//! switches, interrupts, boot time and process counts. The one parser of the
//! file; bench, net and watch read it through [`read_stat`] or their own
//! `Root` read and call [`parse_stat`].

use super::text::parse_u64;
use super::{ParseError, ProbeError};
use crate::root::Root;

/// One `cpu` line, in clock ticks (USER_HZ).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTicks {
    /// Every tick counted. `guest` and `guest_nice` are left out: the kernel
    /// already counts them in `user` and `nice`.
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }
}

/// What /proc/stat says. Lines the kernel may leave out (or that a hand-made
/// tree lacks) are `None`; a watch tree may hold only `btime`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// The aggregate `cpu` line.
    pub total: Option<CpuTicks>,
    /// `cpuN` lines as (N, ticks), in file order; offline CPUs are absent.
    pub per_cpu: Vec<(u32, CpuTicks)>,
    /// Context switches since boot.
    pub ctxt: Option<u64>,
    /// Interrupts serviced since boot (the first number of `intr`).
    pub intr: Option<u64>,
    /// Boot time, seconds since the epoch.
    pub btime: Option<u64>,
    /// Forks since boot.
    pub processes: Option<u64>,
    pub procs_running: Option<u64>,
    pub procs_blocked: Option<u64>,
}

const WHAT: &str = "/proc/stat";

/// Parses a `cpu` line's numbers. Linux 2.4 wrote four (user nice system
/// idle); later kernels append iowait, irq, softirq, steal, guest, guest_nice.
fn parse_ticks(line: &str, numbers: &[&str]) -> Result<CpuTicks, ParseError> {
    if numbers.len() < 4 {
        return Err(ParseError::value(WHAT, line));
    }
    let mut v = [0u64; 8];
    for (slot, n) in v.iter_mut().zip(numbers) {
        *slot = n.parse().map_err(|_| ParseError::value(WHAT, line))?;
    }
    // guest and guest_nice are not stored, but a malformed one is still malformed.
    for n in numbers.iter().skip(8) {
        n.parse::<u64>()
            .map_err(|_| ParseError::value(WHAT, line))?;
    }
    let [user, nice, system, idle, iowait, irq, softirq, steal] = v;
    Ok(CpuTicks {
        user,
        nice,
        system,
        idle,
        iowait,
        irq,
        softirq,
        steal,
    })
}

/// Parses /proc/stat. Unknown lines (`page`, `swap`, `softirq` …) are skipped;
/// a known line that does not parse is an error naming it.
pub fn parse_stat(text: &str) -> Result<ProcStat, ParseError> {
    let mut out = ProcStat::default();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(key) = words.next() else {
            continue;
        };
        let first = |w: Option<&str>| match w {
            Some(v) => parse_u64(WHAT, v),
            None => Err(ParseError::value(WHAT, line)),
        };
        match key {
            "cpu" => {
                let numbers: Vec<&str> = words.collect();
                out.total = Some(parse_ticks(line, &numbers)?);
            }
            "ctxt" => out.ctxt = Some(first(words.next())?),
            // The per-source counts that follow can run to thousands; only the sum is kept.
            "intr" => out.intr = Some(first(words.next())?),
            "btime" => out.btime = Some(first(words.next())?),
            "processes" => out.processes = Some(first(words.next())?),
            "procs_running" => out.procs_running = Some(first(words.next())?),
            "procs_blocked" => out.procs_blocked = Some(first(words.next())?),
            _ => {
                if let Some(n) = key.strip_prefix("cpu") {
                    let cpu: u32 = n.parse().map_err(|_| ParseError::value(WHAT, line))?;
                    let numbers: Vec<&str> = words.collect();
                    out.per_cpu.push((cpu, parse_ticks(line, &numbers)?));
                }
            }
        }
    }
    Ok(out)
}

pub fn read_stat(root: &Root) -> Result<ProcStat, ProbeError> {
    Ok(parse_stat(&root.read_string("proc/stat")?)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2-CPU Debian 12 box (6.1), `softirq` and `intr` cut short.
    const STAT: &str = "\
cpu  10132153 290696 3084719 46828483 16683 0 25195 0 175628 0
cpu0 1393280 32966 572056 13343292 6130 0 17875 0 23933 0
cpu1 1335741 35155 518963 13431938 5463 0 3418 0 22103 0
intr 199292 0 9 0 0 0 0 3 0 1 0 0 0 147 0
ctxt 41210223
btime 1700000000
processes 412874
procs_running 2
procs_blocked 1
softirq 5703441 0 1598340 2 81392 45133 0 13 1879045 0 2099516
";

    #[test]
    fn parses_a_kernel_proc_stat() {
        let s = parse_stat(STAT).unwrap();
        let total = s.total.unwrap();
        assert_eq!(
            total,
            CpuTicks {
                user: 10132153,
                nice: 290696,
                system: 3084719,
                idle: 46828483,
                iowait: 16683,
                irq: 0,
                softirq: 25195,
                steal: 0,
            }
        );
        // guest (175628) is inside user already: not added again.
        assert_eq!(
            total.total(),
            10132153 + 290696 + 3084719 + 46828483 + 16683 + 25195
        );
        assert_eq!(s.per_cpu.len(), 2);
        assert_eq!(s.per_cpu[1].0, 1);
        assert_eq!(s.per_cpu[1].1.softirq, 3418);
        assert_eq!(s.ctxt, Some(41210223));
        assert_eq!(s.intr, Some(199292));
        assert_eq!(s.btime, Some(1700000000));
        assert_eq!(s.processes, Some(412874));
        assert_eq!(s.procs_running, Some(2));
        assert_eq!(s.procs_blocked, Some(1));
    }

    #[test]
    fn old_kernels_and_partial_trees() {
        // Linux 2.4: four numbers; the rest count as zero.
        let s = parse_stat("cpu  1 2 3 4\ncpu0 1 2 3 4\n").unwrap();
        assert_eq!(s.total.unwrap().total(), 10);
        assert_eq!(s.total.unwrap().iowait, 0);
        // A watch tree may carry only the boot time.
        let s = parse_stat("btime 1700000000\n").unwrap();
        assert_eq!(s.total, None);
        assert_eq!(s.btime, Some(1700000000));
        assert_eq!(parse_stat("").unwrap(), ProcStat::default());
    }

    #[test]
    fn malformed_known_lines_are_errors_naming_the_line() {
        for bad in [
            "cpu  1 x 3 4 5 6 7\n",
            "cpu  1 2\n",
            "cpu0 1 2 3 4 5 6 7 8 9 x\n",
            "cpuX 1 2 3 4\n",
            "btime soon\n",
            "ctxt\n",
        ] {
            let e = parse_stat(bad).unwrap_err().to_string();
            assert!(e.starts_with("/proc/stat: cannot parse '"), "{bad:?}: {e}");
        }
        let e = parse_stat("cpu  1 x 3 4\n").unwrap_err().to_string();
        assert_eq!(e, "/proc/stat: cannot parse 'cpu  1 x 3 4'");
    }

    #[test]
    fn reads_through_a_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("proc")).unwrap();
        std::fs::write(dir.path().join("proc/stat"), STAT).unwrap();
        let s = read_stat(&Root::tree(dir.path()).unwrap()).unwrap();
        assert_eq!(s.ctxt, Some(41210223));
    }
}
