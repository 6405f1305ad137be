//! The verdict: from what was observed around a measurement to `clean` or
//! `disturbed`, with a reason for every condition that disturbed it. Pure; the
//! thresholds are named here and tested on literal observations.

use super::{Condition, Observations, Validity, Verdict};
use crate::format::bytes as bytes_iec;
// Rates in decimal MB/s, as bench disk, check and compare give them (amounts stay
// in binary units): a reason said "10.0 MiB/s" beside a bench that said 10.5 MB/s.
use crate::format::rate as mb_per_s;

/// Other processes' CPU, in cores averaged over the run, above which they
/// competed with the measurement (one busy loop is 1.0).
pub const OTHER_CPU_CORES: f64 = 0.25;
/// Share of a core below which the measuring thread was disturbed: a thread
/// alone on an idle core gets 0.98-1.0 (interrupts and kernel threads take
/// the rest), and 0.9 costs a wall-clock figure 10 %.
pub const THREAD_CPU_SHARE: f64 = 0.9;
/// Busy cores (all CPU time but idle and iowait) below which the box counts as
/// idle while settling.
pub const SETTLE_BUSY_CORES: f64 = 0.25;
/// Storage bytes per second other processes moved during the run.
pub const OTHER_IO_BPS: f64 = 4.0 * 1024.0 * 1024.0;
/// Share of the run some task stalled on I/O (PSI `some`), percent, for a
/// measurement that does no I/O itself.
pub const IO_PRESSURE_PCT: f64 = 5.0;
/// Pages swapped in or out during the run (1 MiB at 4 KiB pages): memory was short.
pub const SWAP_PAGES: u64 = 256;
/// Major faults (pages read back from disk) per second during the run.
pub const MAJOR_FAULTS_PER_SEC: f64 = 20.0;
/// Share of the run some task stalled on memory (PSI `some`), percent.
pub const MEMORY_PRESSURE_PCT: f64 = 5.0;
/// I/O by others on the target devices while settling, bytes per second.
pub const TARGET_IO_BEFORE_BPS: f64 = 1024.0 * 1024.0;
/// I/O on the target devices beyond the benchmark's own, as a share of its own
/// bytes, above which someone else used the device during a direct run.
pub const TARGET_IO_EXCESS_SHARE: f64 = 0.05;
/// ... and never less than this many bytes (metadata, journal commits).
pub const TARGET_IO_EXCESS_MIN: u64 = 4 * 1024 * 1024;

/// Judges one measurement's observations.
pub fn classify(o: &Observations) -> Validity {
    let mut c = Vec::new();
    let wall = o.wall_s.max(1e-3);

    if let Some(s) = &o.settle {
        let figure = format!("{:.2} busy cores after {:.1} s", s.busy_cores, s.waited_s);
        c.push(if s.idle_reached {
            Condition::clean("settle", figure)
        } else {
            Condition::disturbed(
                "settle",
                figure,
                format!(
                    "the box never became idle in {:.1} s before the run ({:.2} cores busy)",
                    s.waited_s, s.busy_cores
                ),
            )
        });
    }

    if let Some(t) = &o.measuring_thread {
        let share = t.share();
        let wanted = if t.wait_known {
            "CPU + run-queue wait"
        } else {
            "wall clock"
        };
        let figure = format!(
            "{share:.2} of a core ({:.2} CPU-s of {:.2} s wanted, {wanted}; worst loop {:.2})",
            t.cpu_secs, t.wanted_secs, t.worst_share
        );
        c.push(if share < THREAD_CPU_SHARE {
            Condition::disturbed(
                "thread_cpu",
                figure,
                format!(
                    "the measuring thread got {share:.2} of a core (worst loop {:.2}): speeds \
                     per wall-clock second are low by that share; speeds per CPU-second stand",
                    t.worst_share
                ),
            )
        } else {
            Condition::clean("thread_cpu", figure)
        });
    }

    if let Some(other) = &o.other_cpu {
        let cores = other.total_ns as f64 / 1e9 / wall;
        // Name the processes that used a share worth naming (0.01 cores and up).
        let top: Vec<String> = other
            .top
            .iter()
            .filter(|p| p.cpu_ns as f64 / 1e9 / wall >= 0.005)
            .map(|p| {
                format!(
                    "{} (pid {}) {:.2}",
                    p.comm,
                    p.pid,
                    p.cpu_ns as f64 / 1e9 / wall
                )
            })
            .collect();
        let figure = format!("{cores:.2} cores");
        c.push(if cores > OTHER_CPU_CORES {
            Condition::disturbed(
                "other_cpu",
                figure,
                format!(
                    "other processes used {cores:.2} cores during the run: {}",
                    top.join(", ")
                ),
            )
        } else {
            Condition::clean("other_cpu", figure)
        });
    }

    if let Some(other) = &o.other_io {
        let rate = other.total_bytes as f64 / wall;
        let figure = mb_per_s(rate);
        c.push(if rate > OTHER_IO_BPS {
            let top: Vec<String> = other
                .top
                .iter()
                .map(|p| format!("{} (pid {}) {}", p.comm, p.pid, bytes_iec(p.bytes)))
                .collect();
            Condition::disturbed(
                "other_io",
                figure,
                format!(
                    "other processes moved {} of storage I/O during the run: {}",
                    mb_per_s(rate),
                    top.join(", ")
                ),
            )
        } else {
            Condition::clean("other_io", figure)
        });
    }

    if let Some(stall_us) = o.io_stall_us {
        let pct = stall_us as f64 / 1e6 / wall * 100.0;
        let figure = format!("{pct:.1} % of the run");
        c.push(if pct > IO_PRESSURE_PCT && !o.io_is_the_work {
            Condition::disturbed(
                "io_pressure",
                figure,
                format!("tasks stalled on I/O for {pct:.1} % of the run (PSI)"),
            )
        } else {
            Condition::clean("io_pressure", figure)
        });
    }

    if let Some(vm) = &o.vm {
        let swapped = vm.swap_in_pages + vm.swap_out_pages;
        let figure = format!("{} in, {} out (pages)", vm.swap_in_pages, vm.swap_out_pages);
        c.push(if swapped > SWAP_PAGES {
            Condition::disturbed(
                "swap",
                figure,
                format!(
                    "the box swapped during the run ({} pages in, {} out)",
                    vm.swap_in_pages, vm.swap_out_pages
                ),
            )
        } else {
            Condition::clean("swap", figure)
        });
        let rate = vm.major_faults as f64 / wall;
        let figure = format!("{} ({rate:.1}/s)", vm.major_faults);
        c.push(if rate > MAJOR_FAULTS_PER_SEC {
            Condition::disturbed(
                "major_faults",
                figure,
                format!(
                    "{} major page faults ({rate:.0}/s): programs were paged back in from disk",
                    vm.major_faults
                ),
            )
        } else {
            Condition::clean("major_faults", figure)
        });
    }

    if let Some(stall_us) = o.memory_stall_us {
        let pct = stall_us as f64 / 1e6 / wall * 100.0;
        let figure = format!("{pct:.1} % of the run");
        c.push(if pct > MEMORY_PRESSURE_PCT {
            Condition::disturbed(
                "memory_pressure",
                figure,
                format!("tasks stalled on memory for {pct:.1} % of the run (PSI)"),
            )
        } else {
            Condition::clean("memory_pressure", figure)
        });
    }

    for f in &o.clamped {
        c.push(Condition::disturbed(
            "cpu_frequency",
            format!(
                "cpu{} max {} of {} MHz",
                f.cpu, f.scaling_max_mhz, f.hardware_max_mhz
            ),
            format!(
                "cpu{} is clamped to {} MHz of its {} MHz (scaling_max_freq: thermal or a setting)",
                f.cpu, f.scaling_max_mhz, f.hardware_max_mhz
            ),
        ));
    }
    if let Some(mhz) = o.average_mhz {
        c.push(Condition::clean(
            "cpu_frequency",
            format!("{mhz:.0} MHz average"),
        ));
    }

    for t in &o.thermal_trips {
        c.push(Condition::disturbed(
            "thermal",
            format!("{} {:.1} °C", t.sensor, t.celsius),
            format!(
                "{} reached {:.1} °C, at or above its {} trip point of {:.1} °C: the CPU was likely throttled",
                t.sensor, t.celsius, t.trip_type, t.trip_celsius
            ),
        ));
    }
    if let Some(flags) = o.firmware_throttled {
        let now = throttled_now(flags);
        let figure = format!("0x{flags:x}");
        c.push(if now.is_empty() {
            Condition::clean("throttling", figure)
        } else {
            Condition::disturbed(
                "throttling",
                figure,
                format!("the firmware reported {} during the run", now.join(", ")),
            )
        });
    }
    for alarm in &o.hwmon_alarms {
        c.push(Condition::disturbed(
            "throttling",
            alarm.clone(),
            format!("hardware monitor alarm {alarm} was raised during the run"),
        ));
    }

    for md in &o.md_busy {
        c.push(Condition::disturbed(
            "md_sync",
            md.clone(),
            format!("{md}: the array's background sync competes for the disks"),
        ));
    }
    if o.ext4_lazyinit {
        c.push(Condition::disturbed(
            "ext4_lazyinit",
            "ext4lazyinit running".into(),
            "ext4lazyinit is zeroing the inode tables of a new ext4 filesystem in the background"
                .into(),
        ));
    }

    for d in &o.devices {
        let before = d.before_bytes as f64 / d.before_s.max(1e-3);
        if before > TARGET_IO_BEFORE_BPS {
            c.push(Condition::disturbed(
                "target_io",
                format!("{} {} before", d.device, mb_per_s(before)),
                format!(
                    "{} was already busy before the run ({} of others' I/O)",
                    d.device,
                    mb_per_s(before)
                ),
            ));
        } else if let Some(own) = d.own_bytes {
            let excess = d.during_bytes.saturating_sub(own);
            let limit = TARGET_IO_EXCESS_MIN.max((own as f64 * TARGET_IO_EXCESS_SHARE) as u64);
            let figure = format!("{} beyond ours", bytes_iec(excess));
            c.push(if excess > limit {
                Condition::disturbed(
                    "target_io",
                    format!("{} {figure}", d.device),
                    format!(
                        "{} did {} of I/O beyond the benchmark's own {}: something else used it",
                        d.device,
                        bytes_iec(excess),
                        bytes_iec(own)
                    ),
                )
            } else {
                Condition::clean("target_io", format!("{} {figure}", d.device))
            });
        } else {
            c.push(Condition::clean(
                "target_io",
                format!("{} {} before", d.device, mb_per_s(before)),
            ));
        }
    }

    if let Some(p) = &o.page_cache {
        let figure = format!(
            "file {} of {} RAM",
            bytes_iec(p.file_bytes),
            bytes_iec(p.ram_bytes)
        );
        c.push(if p.file_bytes <= p.ram_bytes {
            Condition::disturbed(
                "page_cache",
                figure,
                format!(
                    "the {} file fits in the {} of RAM: a buffered run measures the page cache, not the disk (use --direct or a file larger than RAM)",
                    bytes_iec(p.file_bytes),
                    bytes_iec(p.ram_bytes)
                ),
            )
        } else {
            Condition::clean("page_cache", figure)
        });
    }

    let reasons: Vec<String> = c.iter().filter_map(|c| c.reason.clone()).collect();
    Validity {
        verdict: if reasons.is_empty() {
            Verdict::Clean
        } else {
            Verdict::Disturbed
        },
        reasons,
        conditions: c,
    }
}

/// The "now" bits of the Raspberry Pi firmware's throttled word (bits 0-3;
/// 16-19 are the sticky "has occurred" copies, which the guard diffs itself).
pub fn throttled_now(flags: u32) -> Vec<&'static str> {
    const BITS: [(u32, &str); 4] = [
        (0, "under-voltage"),
        (1, "ARM frequency capped"),
        (2, "throttling"),
        (3, "soft temperature limit"),
    ];
    BITS.iter()
        .filter(|(bit, _)| flags & (1 << bit) != 0)
        .map(|(_, name)| *name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::{
        Clamp, DeviceIo, OtherCpu, OtherIo, PageCache, ProcCpu, ProcIo, Settle, ThermalTrip,
        VmDelta,
    };
    use super::*;

    fn quiet() -> Observations {
        Observations {
            wall_s: 10.0,
            settle: Some(Settle {
                waited_s: 0.3,
                busy_cores: 0.02,
                idle_reached: true,
            }),
            other_cpu: Some(OtherCpu {
                total_ns: 200_000_000,
                top: vec![],
            }),
            vm: Some(VmDelta {
                swap_in_pages: 0,
                swap_out_pages: 0,
                major_faults: 3,
            }),
            memory_stall_us: Some(0),
            ..Observations::default()
        }
    }

    fn reasons(o: &Observations) -> Vec<String> {
        classify(o).reasons
    }

    #[test]
    fn a_quiet_box_is_clean() {
        let v = classify(&quiet());
        assert_eq!(v.verdict, Verdict::Clean, "{:?}", v.reasons);
        assert!(v.conditions.iter().any(|c| c.name == "other_cpu"));
    }

    #[test]
    fn other_processes_disturb_above_a_quarter_core() {
        let mut o = quiet();
        // 2.4 s of CPU over 10 s = 0.24 cores: clean.
        o.other_cpu = Some(OtherCpu {
            total_ns: 2_400_000_000,
            top: vec![],
        });
        assert!(reasons(&o).is_empty());
        // Two busy loops over 10 s = 2.0 cores, named.
        o.other_cpu = Some(OtherCpu {
            total_ns: 20_000_000_000,
            top: vec![ProcCpu {
                pid: 42,
                comm: "yes".into(),
                cpu_ns: 10_000_000_000,
            }],
        });
        let r = reasons(&o);
        assert_eq!(r.len(), 1);
        assert!(
            r[0].contains("2.00 cores") && r[0].contains("yes (pid 42) 1.00"),
            "{r:?}"
        );
    }

    #[test]
    fn a_measuring_thread_short_of_a_core_is_disturbed_with_its_share() {
        let mut o = quiet();
        o.measuring_thread = Some(super::super::MeasuringThread {
            cpu_secs: 4.8,
            wanted_secs: 5.0,
            worst_share: 0.93,
            wait_known: true,
        });
        assert!(reasons(&o).is_empty());
        o.measuring_thread = Some(super::super::MeasuringThread {
            cpu_secs: 1.0,
            wanted_secs: 5.0,
            worst_share: 0.15,
            wait_known: false,
        });
        let v = classify(&o);
        assert_eq!(v.reasons.len(), 1, "{:?}", v.reasons);
        assert!(
            v.reasons[0].starts_with("the measuring thread got 0.20 of a core (worst loop 0.15)"),
            "{:?}",
            v.reasons
        );
        let c = v
            .conditions
            .iter()
            .find(|c| c.name == "thread_cpu")
            .unwrap();
        assert!(
            c.figure.contains("1.00 CPU-s of 5.00 s wanted, wall clock"),
            "{}",
            c.figure
        );
    }

    #[test]
    fn a_box_that_never_settled_is_disturbed() {
        let mut o = quiet();
        o.settle = Some(Settle {
            waited_s: 3.0,
            busy_cores: 1.9,
            idle_reached: false,
        });
        let r = reasons(&o);
        assert!(r[0].contains("never became idle in 3.0 s") && r[0].contains("1.90"));
    }

    #[test]
    fn swap_and_major_faults_at_their_thresholds() {
        let mut o = quiet();
        o.vm = Some(VmDelta {
            swap_in_pages: 128,
            swap_out_pages: 128,
            major_faults: 200, // 20/s over 10 s: at the threshold, not above
        });
        assert!(reasons(&o).is_empty());
        o.vm = Some(VmDelta {
            swap_in_pages: 0,
            swap_out_pages: 257,
            major_faults: 201,
        });
        let r = reasons(&o);
        assert_eq!(r.len(), 2, "{r:?}");
        assert!(r[0].contains("swapped") && r[1].contains("201 major page faults"));
    }

    #[test]
    fn other_processes_io_and_io_pressure() {
        let mut o = quiet();
        // 40 MiB over 10 s = 4 MiB/s: at the threshold, not above.
        o.other_io = Some(OtherIo {
            total_bytes: 40 << 20,
            top: vec![],
        });
        assert!(reasons(&o).is_empty());
        o.other_io = Some(OtherIo {
            total_bytes: 100 << 20,
            top: vec![ProcIo {
                pid: 7,
                comm: "rsync".into(),
                bytes: 100 << 20,
            }],
        });
        let r = reasons(&o);
        assert!(
            r[0].contains("moved 10.5 MB/s") && r[0].contains("rsync (pid 7) 100.0 MiB"),
            "{r:?}"
        );
        // I/O stalls disturb a cipher or network run, not a disk run's own I/O.
        o = quiet();
        o.io_stall_us = Some(2_000_000); // 20 % of 10 s
        assert!(reasons(&o)[0].contains("stalled on I/O for 20.0 %"));
        o.io_is_the_work = true;
        assert!(reasons(&o).is_empty());
    }

    #[test]
    fn memory_pressure_is_a_share_of_the_run() {
        let mut o = quiet();
        o.memory_stall_us = Some(500_000); // 0.5 s of 10 s = 5 %
        assert!(reasons(&o).is_empty());
        o.memory_stall_us = Some(600_000);
        assert!(reasons(&o)[0].contains("6.0 %"));
    }

    #[test]
    fn clamps_trips_throttling_md_and_lazyinit_each_name_themselves() {
        let mut o = quiet();
        o.clamped = vec![Clamp {
            cpu: 1,
            scaling_max_mhz: 600,
            hardware_max_mhz: 1200,
        }];
        o.thermal_trips = vec![ThermalTrip {
            sensor: "cpu-thermal".into(),
            celsius: 85.2,
            trip_type: "passive".into(),
            trip_celsius: 85.0,
        }];
        o.firmware_throttled = Some(0x5_0005);
        o.md_busy = vec!["md0 resync 37.0 %".into()];
        o.ext4_lazyinit = true;
        let r = reasons(&o);
        assert_eq!(r.len(), 5, "{r:?}");
        assert!(r[0].contains("cpu1 is clamped to 600 MHz of its 1200"));
        assert!(r[1].contains("passive trip point of 85.0"));
        assert!(r[2].contains("under-voltage, throttling"), "{}", r[2]);
        assert!(r[3].starts_with("md0 resync"));
        assert!(r[4].contains("ext4lazyinit"));
        // Sticky bits alone (it happened before the run) are not "now".
        o = quiet();
        o.firmware_throttled = Some(0x5_0000);
        assert!(reasons(&o).is_empty());
    }

    #[test]
    fn target_io_before_and_beyond_our_own() {
        let mut o = quiet();
        o.devices = vec![DeviceIo {
            device: "sda".into(),
            before_s: 1.0,
            before_bytes: 1024 * 1024, // exactly 1 MiB/s: not above
            during_bytes: 110 * 1024 * 1024,
            own_bytes: Some(100 * 1024 * 1024), // 10 MiB beyond 100: above 5 % and 4 MiB
        }];
        let r = reasons(&o);
        assert_eq!(r.len(), 1);
        assert!(r[0].contains("10.0 MiB of I/O beyond"), "{r:?}");
        o.devices[0].during_bytes = 103 * 1024 * 1024; // 3 MiB: under the 5 MiB share
        assert!(reasons(&o).is_empty());
        o.devices[0].before_bytes = 8 * 1024 * 1024;
        let r = reasons(&o);
        assert!(
            r[0].contains("already busy before the run (8.4 MB/s"),
            "{r:?}"
        );
    }

    #[test]
    fn a_buffered_file_that_fits_in_ram_is_the_page_cache() {
        let mut o = quiet();
        o.page_cache = Some(PageCache {
            file_bytes: 256 << 20,
            ram_bytes: 20 << 30,
        });
        assert!(reasons(&o)[0].contains("measures the page cache"));
        o.page_cache = Some(PageCache {
            file_bytes: 32 << 30,
            ram_bytes: 20 << 30,
        });
        assert!(reasons(&o).is_empty());
    }
}
