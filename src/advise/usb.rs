//! USB storage rules: a USB 3 disk held to high speed, UAS turned off by a
//! quirk, a bridge known for UAS trouble, and a disk sharing its USB link with
//! other disks or the NIC.

use super::{Change, Finding, Risk, Rule, RuleInfo, Severity};
use crate::probe::usb::{UsbDisk, bus_ceiling, format_mbit};

pub static RULES: &[&Rule] = &[&HIGH_SPEED, &UAS_QUIRK, &KNOWN_BRIDGE, &SHARED_LINK];

fn disks<'a>(ctx: &'a super::Context) -> impl Iterator<Item = &'a UsbDisk> {
    ctx.snapshot
        .usb
        .data()
        .into_iter()
        .flat_map(|u| u.disks.iter())
}

fn has_ignore_uas(d: &UsbDisk) -> bool {
    d.quirks.iter().any(|q| q.name == "IGNORE_UAS")
}

static HIGH_SPEED: Rule = Rule {
    info: RuleInfo {
        id: "usb3-disk-at-high-speed",
        area: "usb",
        title: "USB 3 disk running at USB 2 speed",
        severity: Severity::Warning,
        risk: Risk::AdviceOnly,
        checks: "A disk whose bridge is a USB 3 device (bcdUSB 3.x) negotiated 480 Mbit/s or \
                 less: about 40 MB/s is all the bus carries.",
        references: &[
            "https://github.com/raspberrypi/linux/issues/4498",
            "https://docs.kernel.org/driver-api/usb/usb.html",
        ],
    },
    evaluate: |info, ctx| {
        disks(ctx)
            .filter_map(|d| {
                let now = d.negotiated_mbit_per_sec?;
                let can = d.device_capable_mbit_per_sec?;
                (can >= 5000.0 && now <= 480.0).then_some((d, now))
            })
            .map(|(d, now)| {
                let c = bus_ceiling(now);
                let port_can = d.port_capable_mbit_per_sec.unwrap_or(now);
                let by = d.port_limited_by.as_deref().unwrap_or("the port");
                let (why, action) = if port_can >= 5000.0 {
                    (
                        format!(
                            "The port above it can do {} Mbit/s ({by}), so the link fell back: \
                             a USB 2 cable or extension, a worn connector, a USB 2 hub in \
                             between, or an enclosure short of power.",
                            format_mbit(port_can)
                        ),
                        format!(
                            "replug {}'s enclosure straight into a USB 3 port with its own \
                             cable and check that /sys/bus/usb/devices/{}/speed reads 5000",
                            d.disk, d.device
                        ),
                    )
                } else if d
                    .controller_capable_mbit_per_sec
                    .is_some_and(|c| c >= 5000.0)
                {
                    (
                        format!(
                            "Its path runs through {by} at {} Mbit/s, a USB 2 port of a \
                             controller that has USB 3 ports: a USB 3 device lands there when \
                             plugged into a USB 2 port or when its cable or enclosure fails \
                             SuperSpeed.",
                            format_mbit(port_can)
                        ),
                        format!(
                            "plug {}'s enclosure into a USB 3 port (blue on most boards) with \
                             a USB 3 cable and check that it reappears on the USB 3 root hub",
                            d.disk
                        ),
                    )
                } else {
                    (
                        format!(
                            "The port chain is USB 2 only ({by} at {} Mbit/s): the disk cannot \
                             go faster on this port.",
                            format_mbit(port_can)
                        ),
                        format!(
                            "move {} to a USB 3 port if the board has one; otherwise expect \
                             about {:.0} MB/s",
                            d.disk,
                            c.bytes_per_sec / 1e6
                        ),
                    )
                };
                Finding::of(
                    info,
                    format!(
                        "{} (USB 3 bridge {}) runs at {} Mbit/s",
                        d.disk,
                        d.bridge.as_deref().unwrap_or("?"),
                        format_mbit(now)
                    ),
                    format!(
                        "Storage ceiling on this link: {}; a USB 3 link (5000 Mbit/s) would \
                         carry {}. {why}",
                        c.basis,
                        bus_ceiling(5000.0).basis
                    ),
                )
                .evidence("negotiated speed", format!("{} Mbit/s", format_mbit(now)))
                .evidence("device can", "5000 Mbit/s (USB 3)")
                .evidence("port can", format!("{} Mbit/s", format_mbit(port_can)))
                .setting(format!("sysfs:bus/usb/devices/{}/speed", d.device))
                .change(Change::AdviceOnly { action })
            })
            .collect()
    },
};

static UAS_QUIRK: Rule =
    Rule {
        info: RuleInfo {
            id: "usb-uas-disabled-by-quirk",
            area: "usb",
            title: "UAS turned off for a disk by a usb-storage quirk",
            severity: Severity::Notice,
            risk: Risk::NeedsRestart,
            checks: "usb-storage.quirks sets 'u' (IGNORE_UAS) for a disk's bridge, so it runs on \
                 usb-storage (one command at a time) instead of uas.",
            references: &[
                "https://docs.kernel.org/admin-guide/kernel-parameters.html",
                "https://github.com/raspberrypi/linux/pull/5246",
            ],
        },
        evaluate: |info, ctx| {
            let param = ctx
                .snapshot
                .usb
                .data()
                .and_then(|u| u.quirks_parameter.clone())
                .unwrap_or_default();
            disks(ctx)
            .filter(|d| has_ignore_uas(d))
            .map(|d| {
                let bridge = d.bridge.as_deref().unwrap_or("?");
                let cost = "usb-storage speaks Bulk-Only Transport: one command in flight, \
                            no command queueing, a status round trip per request. Sequential \
                            reads of a hard disk lose little; an SSD's random I/O and \
                            mixed loads lose the most (often half or more).";
                let (when, severity, action) = match &d.known_bridge {
                    Some(k) => (
                        format!(
                            "It is right here: {} is known for {} ({}).",
                            k.chip,
                            k.trouble,
                            k.sources.join(", ")
                        ),
                        Severity::Info,
                        "keep the quirk; a bridge with working UAS (or newer firmware) is the \
                         way to get it back"
                            .to_string(),
                    ),
                    None => (
                        "It is right only if this bridge showed uas resets or aborts \
                         (uas_eh_abort_handler, 'reset SuperSpeed USB device') without it."
                            .to_string(),
                        info.severity,
                        format!(
                            "remove '{bridge}:u' from usb-storage.quirks (kernel command line), \
                             reboot, and watch the kernel log for uas resets under load; put it \
                             back if they appear"
                        ),
                    ),
                };
                Finding::of(
                    info,
                    format!("{} ({bridge}) runs on usb-storage: UAS is off by a quirk", d.disk),
                    format!("{cost} {when}"),
                )
                .severity(severity)
                .evidence("usb-storage.quirks", &param)
                .evidence("driver", d.driver.as_deref().unwrap_or("-"))
                .setting("module:usb_storage:quirks")
                .change(Change::AdviceOnly { action })
            })
            .collect()
        },
    };

static KNOWN_BRIDGE: Rule = Rule {
    info: RuleInfo {
        id: "usb-bridge-uas-trouble",
        area: "usb",
        title: "USB bridge with a record of UAS trouble runs on uas",
        severity: Severity::Notice,
        risk: Risk::NeedsRestart,
        checks: "A disk's bridge is in the table of chips with public reports of UAS resets \
                 and hangs, and it is bound to uas without a quirk.",
        references: &[
            "https://github.com/raspberrypi/linux/issues/3070",
            "https://github.com/home-assistant/operating-system/pull/3220",
        ],
    },
    evaluate: |info, ctx| {
        disks(ctx)
            .filter(|d| d.driver.as_deref() == Some("uas") && !has_ignore_uas(d))
            .filter_map(|d| Some((d, d.known_bridge.as_ref()?)))
            .map(|(d, k)| {
                let bridge = d.bridge.as_deref().unwrap_or("?");
                Finding::of(
                    info,
                    format!("{} is behind a {} on uas", d.disk, k.chip),
                    format!(
                        "Reports: {} ({}). Not every unit is affected; if the kernel log shows \
                         uas aborts or device resets under load, usb-storage.quirks={bridge}:u \
                         trades queueing for stability.",
                        k.trouble,
                        k.sources.join(", ")
                    ),
                )
                .evidence("bridge", bridge)
                .evidence("driver", "uas")
                .change(Change::AdviceOnly {
                    action: format!(
                        "only if uas resets appear: add usb-storage.quirks={bridge}:u to the \
                         kernel command line"
                    ),
                })
            })
            .collect()
    },
};

static SHARED_LINK: Rule = Rule {
    info: RuleInfo {
        id: "usb-disk-shares-link",
        area: "usb",
        title: "USB disk shares its link with other disks or the NIC",
        severity: Severity::Notice,
        risk: Risk::AdviceOnly,
        checks: "Other disks or a network interface sit on the same USB 2 bus or under the \
                 same hub as a disk (a Pi 2/3's Ethernet, smsc95xx or lan78xx, is on the USB 2 \
                 bus with every USB disk).",
        references: &[
            "https://www.raspberrypi.com/documentation/computers/raspberry-pi.html",
            "https://github.com/raspberrypi/linux/issues/4498",
        ],
    },
    evaluate: |info, ctx| {
        disks(ctx)
            .filter(|d| !d.shares_link_with.is_empty())
            .map(|d| {
                let link = d
                    .port_capable_mbit_per_sec
                    .or(d.negotiated_mbit_per_sec)
                    .unwrap_or(480.0);
                let c = bus_ceiling(link);
                let nic = d.shares_link_with.iter().any(|s| s.contains('('));
                let also = if nic {
                    " A file served over the network crosses this link twice (disk in, NIC \
                     out), so disk and network together stay under that figure."
                } else {
                    " Copies between these disks cross it twice and get half."
                };
                Finding::of(
                    info,
                    format!(
                        "{} shares its USB link with {}",
                        d.disk,
                        d.shares_link_with.join(", ")
                    ),
                    format!("Everything on this link shares {}.{also}", c.basis),
                )
                .evidence("shared with", d.shares_link_with.join(", "))
                .evidence("link", format!("{} Mbit/s", format_mbit(link)))
                .change(Change::AdviceOnly {
                    action: "put the disks on separate root ports (or a board whose NIC is not \
                             on USB); on a Pi 2/3 the shared bus is fixed"
                        .into(),
                })
            })
            .collect()
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::test_support::{run_rule, snapshot_of};
    use crate::probe::Outcome;
    use crate::probe::usb::{KnownBridge, QuirkFlag, Usb};

    fn disk(now: f64, version_can: f64, port: f64) -> UsbDisk {
        UsbDisk {
            disk: "sda".into(),
            device: "1-1".into(),
            driver: Some("usb-storage".into()),
            bridge: Some("152d:0578".into()),
            known_bridge: None,
            quirks: Vec::new(),
            negotiated_mbit_per_sec: Some(now),
            device_capable_mbit_per_sec: Some(version_can),
            port_capable_mbit_per_sec: Some(port),
            port_limited_by: Some("the host controller of usb1".into()),
            controller_capable_mbit_per_sec: Some(port),
            shares_link_with: Vec::new(),
        }
    }

    fn with(disks: Vec<UsbDisk>) -> crate::probe::Snapshot {
        let mut s = snapshot_of("buildhost");
        s.usb = Outcome::Ok {
            data: Usb {
                devices: Vec::new(),
                disks,
                quirks_parameter: Some("152d:0578:u".into()),
                problems: Vec::new(),
            },
        };
        s
    }

    #[test]
    fn a_usb3_disk_that_fell_back_on_a_usb3_port_blames_the_cable() {
        let f = run_rule(&HIGH_SPEED, &with(vec![disk(480.0, 5000.0, 5000.0)]));
        assert_eq!(f.len(), 1);
        assert!(
            f[0].rationale.contains("480 Mbit/s / 8 x 0.67"),
            "{}",
            f[0].rationale
        );
        assert!(f[0].rationale.contains("= 40.2 MB/s"));
        assert!(f[0].rationale.contains("fell back"));
        // A USB 2 port: the port is named instead.
        let f = run_rule(&HIGH_SPEED, &with(vec![disk(480.0, 5000.0, 480.0)]));
        assert!(f[0].rationale.contains("USB 2 only"), "{}", f[0].rationale);
        // A USB 2 hub of a controller that also has USB 3 ports (a Pi 4's VL805).
        let mut d = disk(480.0, 5000.0, 480.0);
        d.controller_capable_mbit_per_sec = Some(5000.0);
        let f = run_rule(&HIGH_SPEED, &with(vec![d]));
        assert!(
            f[0].rationale.contains("has USB 3 ports"),
            "{}",
            f[0].rationale
        );
        // A USB 2 device at 480 and a USB 3 one at 5000 are as they should be.
        assert!(run_rule(&HIGH_SPEED, &with(vec![disk(480.0, 480.0, 5000.0)])).is_empty());
        assert!(run_rule(&HIGH_SPEED, &with(vec![disk(5000.0, 5000.0, 5000.0)])).is_empty());
    }

    #[test]
    fn ignore_uas_is_right_for_a_known_bridge_and_questioned_otherwise() {
        let mut d = disk(5000.0, 5000.0, 5000.0);
        d.quirks = vec![QuirkFlag {
            flag: "u".into(),
            name: "IGNORE_UAS".into(),
        }];
        let f = run_rule(&UAS_QUIRK, &with(vec![d.clone()]));
        assert_eq!(f[0].severity, Severity::Notice);
        assert!(f[0].rationale.contains("one command in flight"));
        d.known_bridge = Some(KnownBridge {
            chip: "JMicron".into(),
            trouble: "resets".into(),
            sources: vec!["https://example.org/x".into()],
        });
        let f = run_rule(&UAS_QUIRK, &with(vec![d.clone()]));
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].rationale.contains("It is right here"));
        // Known bridge without the quirk, on uas: the other rule speaks.
        d.quirks.clear();
        assert!(run_rule(&UAS_QUIRK, &with(vec![d.clone()])).is_empty());
        d.driver = Some("uas".into());
        assert_eq!(run_rule(&KNOWN_BRIDGE, &with(vec![d])).len(), 1);
    }

    #[test]
    fn a_shared_link_names_the_others_with_the_arithmetic() {
        let mut d = disk(480.0, 480.0, 480.0);
        d.shares_link_with = vec!["eth0 (smsc95xx)".into()];
        let f = run_rule(&SHARED_LINK, &with(vec![d]));
        assert!(f[0].title.contains("eth0 (smsc95xx)"));
        assert!(f[0].rationale.contains("crosses this link twice"));
        assert!(f[0].rationale.contains("40.2 MB/s"));
    }
}
