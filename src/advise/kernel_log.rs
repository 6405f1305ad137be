//! Rules on what the kernel log says happened since boot: disk I/O errors, a
//! flapping link, OOM kills, under-voltage, SATA link resets, UAS aborts.

use std::collections::BTreeSet;

use super::{Change, Context, Finding, Risk, Rule, RuleInfo, Severity};
use crate::probe::kernel_log::{Class, ClassCount, KernelLog};

pub static RULES: &[&Rule] = &[
    &IO_ERRORS,
    &LINK_FLAPPING,
    &OOM_KILLS,
    &UNDERVOLTAGE,
    &ATA_LINK_RESETS,
    &UAS_ABORTS,
];

/// Downs of one NIC since boot that make a flapping link: one is a cable
/// plugged in or a switch that booted later; three are not chance.
pub const FLAPPING_DOWNS: u64 = 3;

/// A box with at most this much RAM has no room for a memory-hungry service.
const SMALL_RAM_BYTES: u64 = 1 << 30;

const UMBREL_580: &str = "https://github.com/getumbrel/umbrel/pull/580";

fn log<'a>(ctx: &'a Context) -> Option<&'a KernelLog> {
    ctx.snapshot.kernel_log.data()
}

fn counts<'a>(ctx: &'a Context, class: Class) -> Vec<&'a ClassCount> {
    log(ctx).map_or_else(Vec::new, |l| l.of_class(class).collect())
}

/// The latest line of `class` (on `device`), quoted as evidence.
fn latest<'a>(ctx: &'a Context, class: Class, device: Option<&str>) -> Option<&'a str> {
    log(ctx)?
        .examples
        .iter()
        .rev()
        .find(|e| e.class == class && (device.is_none() || e.device.as_deref() == device))
        .map(|e| e.line.as_str())
}

fn device(c: &ClassCount) -> &str {
    c.device.as_deref().unwrap_or("unknown device")
}

/// One finding per device with events of `class`, each with its count, time
/// span and latest line.
fn per_device(
    info: &RuleInfo,
    ctx: &Context,
    class: Class,
    keep: impl Fn(&ClassCount) -> bool,
    write: impl Fn(&ClassCount) -> (String, String, Change),
) -> Vec<Finding> {
    counts(ctx, class)
        .into_iter()
        .filter(|c| keep(c))
        .map(|c| {
            let (title, rationale, change) = write(c);
            let mut f = Finding::of(info, title, rationale)
                .evidence(format!("{} events on {}", class.name(), device(c)), c.count)
                .evidence(
                    "seconds after boot (first-last)",
                    format!("{:.0}-{:.0}", c.first_s, c.last_s),
                )
                .change(change);
            if let Some(line) = latest(ctx, class, c.device.as_deref()) {
                f = f.evidence("latest line", line);
            }
            f
        })
        .collect()
}

fn advice(action: impl Into<String>) -> Change {
    Change::AdviceOnly {
        action: action.into(),
    }
}

pub(super) static IO_ERRORS: Rule = Rule {
    info: RuleInfo {
        id: "kernel-log-io-errors",
        area: "storage",
        title: "The kernel logged I/O errors on a disk",
        severity: Severity::Warning,
        risk: Risk::AdviceOnly,
        checks: "The block layer logged failed reads or writes ('I/O error, dev sdX', \
                 'Buffer I/O error') for a device since boot. Devices not attached now are \
                 reported together: there is no disk of that name to check.",
        references: &[
            "https://docs.kernel.org/admin-guide/sysfs-rules.html",
            "smartctl(8)",
        ],
    },
    evaluate: |info, ctx| {
        let attached = attached(ctx);
        let detached = |c: &ClassCount| detached(attached.as_ref(), c);
        let mut findings = per_device(
            info,
            ctx,
            Class::IoError,
            |c| !detached(c),
            |c| {
                let d = device(c);
                (
                    format!("{} on {d} since boot", io_errors(c.count)),
                    format!(
                        "The kernel could not read or write {d} {} times. Each failed request was \
                     retried or returned to the filesystem as an error; a benchmark or a copy on \
                     this disk measures the retries, not the disk. Read its SMART data \
                     (reallocated/pending sectors point at the medium, UDMA CRC errors at the \
                     cable or USB bridge) and back up before anything else.",
                        c.count
                    ),
                    advice(format!(
                        "back up {d}, then check 'smartctl -a /dev/{d}' and its cable"
                    )),
                )
            },
        );
        let gone: Vec<&ClassCount> = counts(ctx, Class::IoError)
            .into_iter()
            .filter(|c| detached(c))
            .collect();
        findings.extend(detached_io_errors(info, &gone));
        findings
    },
};

fn io_errors(n: u64) -> String {
    match n {
        1 => "1 I/O error".into(),
        n => format!("{n} I/O errors"),
    }
}

/// Block devices attached now (disks, partitions, empty ones), or `None` when
/// the storage section could not be read: then every device counts as attached.
fn attached<'a>(ctx: &'a Context) -> Option<BTreeSet<&'a str>> {
    let storage = ctx.snapshot.storage.data()?;
    let disks = storage.devices.iter().map(|d| d.name.as_str());
    Some(
        disks
            .chain(storage.empty_devices.iter().map(String::as_str))
            .collect(),
    )
}

/// Whether `c` names a block device that is not attached now. An ATA port
/// (`ata3.00`: libata logs media errors by port), a line without a device, or a
/// snapshot without its storage section never make one.
fn detached(attached: Option<&BTreeSet<&str>>, c: &ClassCount) -> bool {
    let is_ata_port = |d: &str| {
        d.strip_prefix("ata")
            .is_some_and(|n| n.starts_with(|ch: char| ch.is_ascii_digit()))
    };
    match (attached, c.device.as_deref()) {
        (Some(attached), Some(d)) => !is_ata_port(d) && !attached.contains(d),
        _ => false,
    }
}

/// Detached devices named in a grouped finding's title; the rest are counted.
const NAMED_DETACHED: usize = 5;

/// Detached devices listed one by one in the evidence.
const EVIDENCE_DETACHED: usize = 10;

/// One finding for every device with I/O errors that is not attached now: there
/// is no disk of that name to back up or read SMART from, and a USB disk that
/// reset may be attached again under a new name.
fn detached_io_errors(info: &RuleInfo, gone: &[&ClassCount]) -> Option<Finding> {
    let first = gone.first()?;
    let total: u64 = gone.iter().map(|c| c.count).sum();
    let names: Vec<&str> = gone
        .iter()
        .take(NAMED_DETACHED)
        .map(|c| device(c))
        .collect();
    let more = gone.len().saturating_sub(NAMED_DETACHED);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    let title = if gone.len() == 1 {
        format!(
            "{} since boot on {}, which is not attached now",
            io_errors(first.count),
            device(first)
        )
    } else {
        format!(
            "{} since boot on {} devices not attached now: {}{more}",
            io_errors(total),
            gone.len(),
            names.join(", ")
        )
    };
    let mut f = Finding::of(
        info,
        title,
        "The kernel logged failed reads or writes on block devices that are not attached \
         now: unplugged, dropped off the bus, or removed virtual devices. A USB disk that \
         resets is often attached again under a new name, and its old name may since have \
         gone to another disk: the errors belong to the device that had the name then. \
         Before trusting a disk that was one of these, read its SMART data.",
    )
    .evidence("devices not attached now with I/O errors", gone.len());
    for c in gone.iter().take(EVIDENCE_DETACHED) {
        f = f.evidence(format!("I/O errors on {}", device(c)), c.count);
    }
    Some(f.change(advice(
        "before using a disk that was attached under one of these names, check 'smartctl -a' \
         on it and its cable",
    )))
}

pub(super) static LINK_FLAPPING: Rule = Rule {
    info: RuleInfo {
        id: "kernel-log-link-flapping",
        area: "network",
        title: "A NIC's link went down repeatedly",
        severity: Severity::Warning,
        risk: Risk::AdviceOnly,
        checks: "The kernel logged 'Link is Down' (or a PHY's 'Downshift occurred', a link \
                 that came up slower than both ends offered) for one NIC at least 3 times since \
                 boot. One down is a cable plugged in or a switch that booted later; several are \
                 a loose cable, a failing port, energy-efficient Ethernet trouble or a NIC reset.",
        references: &["https://docs.kernel.org/networking/phy.html"],
    },
    evaluate: |info, ctx| {
        per_device(
            info,
            ctx,
            Class::NicLink,
            |c| c.count >= FLAPPING_DOWNS,
            |c| {
                let d = device(c);
                let hours = (c.last_s - c.first_s) / 3600.0;
                (
                    format!("{d} link went down or downshifted {} times", c.count),
                    format!(
                        "{d} lost its link or came up below its speed {} times within {hours:.1} \
                         h. Every down drops connections and restarts autonegotiation (which may \
                         come back at a lower speed: a downshift, a cable with a bad pair). Swap the cable, try another switch port, and if the \
                         NIC supports it turn energy-efficient Ethernet off ('ethtool \
                         --set-eee {d} eee off') to see whether the downs stop.",
                        c.count
                    ),
                    advice(format!(
                        "swap the cable and switch port of {d}; watch its carrier_changes"
                    )),
                )
            },
        )
    },
};

pub(super) static OOM_KILLS: Rule =
    Rule {
        info: RuleInfo {
            id: "kernel-log-oom-kills",
            area: "memory",
            title: "The OOM killer killed processes",
            severity: Severity::Notice,
            risk: Risk::AdviceOnly,
            checks: "The kernel logged 'Out of memory: Killed process' since boot; a warning on a \
                 box with 1 GiB of RAM or less, where one service too many is the usual cause.",
            references: &["https://docs.kernel.org/admin-guide/mm/concepts.html"],
        },
        evaluate: |info, ctx| {
            let kills: u64 = counts(ctx, Class::Oom).iter().map(|c| c.count).sum();
            if kills == 0 {
                return Vec::new();
            }
            let total = ctx.snapshot.memory.data().map(|m| m.total_bytes);
            let small = total.is_some_and(|t| t <= SMALL_RAM_BYTES);
            let mib = total.map_or("unknown".to_string(), |t| format!("{} MiB", t >> 20));
            let mut f = Finding::of(
            info,
            format!("{kills} processes killed for lack of memory"),
            format!(
                "The OOM killer ran {kills} times since boot on a box with {mib} of RAM. A \
                 killed smbd or database loses its work; page cache squeezed out before that \
                 made every read go to disk. {}",
                if small {
                    "On this little RAM, stop a service, give Samba fewer workers or add zram swap."
                } else {
                    "Find the process that grew (the line names it) and limit it."
                }
            ),
        )
        .evidence("OOM kills", kills)
        .evidence("RAM", mib)
        .change(advice("stop or limit the process the OOM killer named; add zram swap"));
            if small {
                f = f.severity(Severity::Warning);
            }
            if let Some(line) = latest(ctx, Class::Oom, None) {
                f = f.evidence("latest line", line);
            }
            vec![f]
        },
    };

pub(super) static UNDERVOLTAGE: Rule = Rule {
    info: RuleInfo {
        id: "kernel-log-undervoltage",
        area: "power",
        title: "Under-voltage, thermal throttling or a thermal shutdown was logged",
        severity: Severity::Warning,
        risk: Risk::AdviceOnly,
        checks: "The Raspberry Pi firmware or hwmon driver logged 'Under-voltage detected', the \
                 CPU logged clock throttling, or a thermal zone reached its critical temperature \
                 (the kernel then powers the box off) since boot.",
        references: &[
            "https://www.raspberrypi.com/documentation/computers/raspberry-pi.html#power-supply",
            "https://github.com/raspberrypi/linux/issues/2512",
        ],
    },
    evaluate: |info, ctx| {
        let all = counts(ctx, Class::UndervoltageThrottle);
        let n: u64 = all.iter().map(|c| c.count).sum();
        if n == 0 {
            return Vec::new();
        }
        let mut f = Finding::of(
            info,
            format!("under-voltage, throttling or overheating logged {n} times"),
            format!(
                "The supply sagged below 4.63 V (or the CPU throttled or overheated) {n} times \
                 since boot; the latest line says which. The \
                 firmware then caps the CPU clock, and USB disks on the same 5 V rail brown out: \
                 resets, UAS aborts and I/O errors follow. Every benchmark taken while it \
                 happened measured the power supply. Use a supply that holds 5.1 V under load \
                 and power the disks separately."
            ),
        )
        .evidence("events", n)
        .change(advice(
            "use a 5.1 V supply rated for the board and power USB disks separately; for a \
             temperature line, clean or add cooling",
        ));
        if let Some(line) = latest(ctx, Class::UndervoltageThrottle, None) {
            f = f.evidence("latest line", line);
        }
        vec![f]
    },
};

pub(super) static ATA_LINK_RESETS: Rule = Rule {
    info: RuleInfo {
        id: "kernel-log-ata-link-resets",
        area: "storage",
        title: "libata reset a SATA link",
        severity: Severity::Warning,
        risk: Risk::AdviceOnly,
        checks: "libata's error handler logged exceptions, link resets or a speed limit on a \
                 SATA port since boot.",
        references: &["https://ata.wiki.kernel.org/index.php/Libata_error_messages"],
    },
    evaluate: |info, ctx| {
        per_device(
            info,
            ctx,
            Class::AtaLinkReset,
            |_| true,
            |c| {
                let d = device(c);
                (
                    format!("{d}: {} link errors and resets since boot", c.count),
                    format!(
                        "libata stopped {d} {} times to recover it (exception, hard reset, maybe \
                     a lower link speed). Commands in flight wait out the timeout and are \
                     retried, so throughput drops and latency spikes for seconds. The usual \
                     causes are a loose or poor SATA cable, a weak power supply for the disks, \
                     or link power management; SMART's UDMA CRC count (199) grows with a bad \
                     cable.",
                        c.count
                    ),
                    advice(format!(
                        "reseat or replace the SATA cable of {d}; check the disk power"
                    )),
                )
            },
        )
    },
};

pub(super) static UAS_ABORTS: Rule = Rule {
    info: RuleInfo {
        id: "kernel-log-uas-aborts",
        area: "storage",
        title: "USB disk commands were aborted or the device reset",
        severity: Severity::Warning,
        risk: Risk::AdviceOnly,
        checks: "The uas driver aborted commands (uas_eh_abort_handler) or usb core reset a \
                 device since boot. Power comes first: umbrel's UAS resets on the Raspberry Pi \
                 turned out to be power, not the protocol.",
        references: &[
            UMBREL_580,
            "https://github.com/raspberrypi/linux/issues/4844",
        ],
    },
    evaluate: |info, ctx| {
        let write = |c: &ClassCount| {
            let d = device(c);
            (
                format!("{d}: {} USB aborts or resets since boot", c.count),
                format!(
                    "{d} stopped answering {} times, so the kernel aborted its commands or \
                     reset the device; each costs tens of seconds of stalled I/O. Check power \
                     first: UAS runs commands in parallel and draws more current, and on the \
                     Raspberry Pi the resets umbrel blamed on UAS were the port's power (umbrel \
                     PR 580). Use a powered hub or a disk with its own supply; only if aborts \
                     continue, move the bridge to usb-storage with a quirk \
                     (usb-storage.quirks=VID:PID:u), which is slower but serial.",
                    c.count
                ),
                advice(
                    "power the disk from a powered hub or its own supply; then consider usb-storage.quirks=VID:PID:u",
                ),
            )
        };
        let mut out = per_device(info, ctx, Class::UasAbort, |_| true, write);
        out.extend(per_device(info, ctx, Class::UsbReset, |_| true, write));
        out
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::test_support::{run_rule, snapshot_of};

    #[test]
    fn rpi2_under_voltage_and_usb_reset_are_reported() {
        let s = snapshot_of("rpi2-luks");
        let f = run_rule(&UNDERVOLTAGE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].title.contains("2 times"), "{}", f[0].title);
        let f = run_rule(&UAS_ABORTS, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].title.starts_with("usb 1-1.3"), "{}", f[0].title);
        assert!(f[0].rationale.contains("power"), "{}", f[0].rationale);
        assert!(f[0].references.iter().any(|r| r == UMBREL_580));
    }

    #[test]
    fn three_downs_are_flapping_fewer_are_not() {
        let mut s = snapshot_of("pogoplug-v4");
        let f = run_rule(&LINK_FLAPPING, &s);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].title
                .contains("eth0 link went down or downshifted 3 times"),
            "{}",
            f[0].title
        );
        if let crate::probe::Outcome::Ok { data } = &mut s.kernel_log {
            data.counts[0].count = FLAPPING_DOWNS - 1;
        }
        assert!(run_rule(&LINK_FLAPPING, &s).is_empty());
    }

    /// sdb is attached in the fixture; sdz0…sdz6 are not (a USB disk that came
    /// back under a new name, test devices since removed).
    #[test]
    fn io_errors_on_detached_devices_are_one_finding() {
        let mut s = snapshot_of("rk3399-raid5");
        let crate::probe::Outcome::Ok { data } = &mut s.kernel_log else {
            panic!("fixture has a kernel log");
        };
        // libata's media errors name the port, and some lines no device: neither
        // is a detached block device.
        for device in [Some("ata3.00"), None] {
            data.counts.push(ClassCount {
                class: Class::IoError,
                device: device.map(str::to_string),
                count: 1,
                first_s: 5.0,
                last_s: 5.0,
            });
        }
        for i in 0..7 {
            data.counts.push(ClassCount {
                class: Class::IoError,
                device: Some(format!("sdz{i}")),
                count: i + 1,
                first_s: 10.0,
                last_s: 20.0,
            });
        }
        let f = run_rule(&IO_ERRORS, &s);
        assert_eq!(f.len(), 4, "{f:#?}");
        for (f, d) in f.iter().zip(["sdb", "ata3.00", "unknown device"]) {
            let own = format!("on {d} since boot");
            assert!(f.title.contains(&own), "{}", f.title);
        }
        assert_eq!(
            f[3].title,
            "28 I/O errors since boot on 7 devices not attached now: \
             sdz0, sdz1, sdz2, sdz3, sdz4 and 2 more"
        );
        assert!(
            f[3].evidence
                .iter()
                .any(|e| e.fact == "I/O errors on sdz6" && e.value == "7")
        );
        assert!(!f.iter().any(|f| f.rationale.contains("/dev/sdz")));
        // One detached device is named alone.
        let crate::probe::Outcome::Ok { data } = &mut s.kernel_log else {
            unreachable!()
        };
        data.counts
            .retain(|c| c.device.as_deref().is_none_or(|d| d <= "sdz0"));
        let f = run_rule(&IO_ERRORS, &s);
        assert_eq!(
            f[3].title,
            "1 I/O error since boot on sdz0, which is not attached now"
        );
        // Without the storage section every device is taken as attached.
        s.storage = crate::probe::Outcome::Failed { error: "x".into() };
        let f = run_rule(&IO_ERRORS, &s);
        assert_eq!(f.len(), 4);
        assert!(f[3].title.contains("on sdz0 since boot"), "{}", f[3].title);
    }

    #[test]
    fn io_errors_and_ata_resets_name_the_device() {
        let s = snapshot_of("rk3399-raid5");
        let f = run_rule(&IO_ERRORS, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].title.contains("on sdb"), "{}", f[0].title);
        let f = run_rule(&ATA_LINK_RESETS, &s);
        assert!(f[0].title.starts_with("ata2: 3 "), "{}", f[0].title);
    }

    #[test]
    fn oom_is_a_warning_only_on_small_ram() {
        let mut s = snapshot_of("rpi2-luks");
        if let crate::probe::Outcome::Ok { data } = &mut s.kernel_log {
            data.counts.push(ClassCount {
                class: Class::Oom,
                device: None,
                count: 2,
                first_s: 10.0,
                last_s: 20.0,
            });
        }
        let f = run_rule(&OOM_KILLS, &s);
        assert_eq!(f[0].severity, Severity::Warning);
        if let crate::probe::Outcome::Ok { data } = &mut s.memory {
            data.total_bytes = 8 << 30;
        }
        assert_eq!(run_rule(&OOM_KILLS, &s)[0].severity, Severity::Notice);
    }

    #[test]
    fn a_clean_log_finds_nothing() {
        let s = snapshot_of("buildhost");
        for r in RULES {
            assert!(run_rule(r, &s).is_empty(), "{}", r.info.id);
        }
    }
}
