//! Link rules: an Ethernet link below the best mode both ends advertise,
//! energy-efficient Ethernet in use, and a PCIe link trained below what the
//! device and its port can do.

use super::{Change, Finding, Risk, Rule, RuleInfo, Severity};
use crate::probe::links::{NicLink, PcieLink, lane_bytes_per_sec};

pub static RULES: &[&Rule] = &[&DOWNSHIFT, &EEE, &PCIE];

fn nics<'a>(ctx: &'a super::Context) -> impl Iterator<Item = &'a NicLink> {
    ctx.snapshot
        .links
        .data()
        .into_iter()
        .flat_map(|l| l.nics.iter())
}

/// The speed the link runs at, from the link settings.
fn speed(n: &NicLink) -> Option<u64> {
    n.ethtool.data()?.modes.data()?.speed_mbit_per_sec
}

static DOWNSHIFT: Rule = Rule {
    info: RuleInfo {
        id: "nic-link-downshifted",
        area: "links",
        title: "Ethernet link below what both ends can do",
        severity: Severity::Warning,
        risk: Risk::AdviceOnly,
        checks: "The NIC and its link partner both advertise a faster mode than the link \
                 negotiated (ETHTOOL_GLINKSETTINGS): downshifted — check the cable.",
        references: &[
            "https://docs.kernel.org/networking/ethtool-netlink.html",
            "https://www.kernel.org/doc/html/latest/networking/phy.html",
        ],
    },
    evaluate: |info, ctx| {
        nics(ctx)
            .filter(|n| n.downshifted)
            .filter_map(|n| Some((n, speed(n)?, n.best_common_mbit_per_sec?)))
            .map(|(n, now, best)| {
                let mode = n.best_common_mode.as_deref().unwrap_or("?");
                Finding::of(
                    info,
                    format!(
                        "{} runs at {now} Mbit/s; both ends advertise {mode}",
                        n.interface
                    ),
                    format!(
                        "Downshifted — check the cable. Both the NIC and the link partner \
                         offer {mode}, yet the link came up at {now} Mbit/s: PHYs step down \
                         when a pair is broken or missing (gigabit needs all four pairs; \
                         100 Mbit/s runs on two), on a damaged cable or a bad port. That is \
                         {:.1} MB/s of TCP payload instead of {:.1} MB/s.",
                        now as f64 * 1e6 / 8.0 * 1448.0 / 1538.0 / 1e6,
                        best as f64 * 1e6 / 8.0 * 1448.0 / 1538.0 / 1e6,
                    ),
                )
                .evidence("speed", format!("{now} Mbit/s"))
                .evidence("best common mode", mode)
                .setting(format!("ethtool:{}:speed", n.interface))
                .change(Change::AdviceOnly {
                    action: format!(
                        "replace {}'s cable with a known-good Cat 5e or better, try another \
                         switch port, and check 'ethtool {}' shows {best}Mb/s",
                        n.interface, n.interface
                    ),
                })
            })
            .collect()
    },
};

static EEE: Rule = Rule {
    info: RuleInfo {
        id: "nic-eee-active",
        area: "links",
        title: "Energy-efficient Ethernet is active",
        severity: Severity::Info,
        risk: Risk::RuntimeSafe,
        checks: "EEE (802.3az) is negotiated and active on a link (ETHTOOL_GEEE); on a link \
                 that also downshifted it is a suspect.",
        references: &[
            "https://docs.kernel.org/networking/ethtool-netlink.html",
            "https://man7.org/linux/man-pages/man8/ethtool.8.html",
        ],
    },
    evaluate: |info, ctx| {
        nics(ctx)
            .filter_map(|n| Some((n, n.ethtool.data()?.eee.data()?)))
            .filter(|(_, e)| e.enabled && e.active)
            .map(|(n, e)| {
                let severity = if n.downshifted {
                    Severity::Notice
                } else {
                    info.severity
                };
                Finding::of(
                    info,
                    format!("{} has energy-efficient Ethernet active", n.interface),
                    format!(
                        "The link sleeps between bursts (low-power idle, tx LPI timer {} µs) \
                         and pays a wake-up of tens of microseconds on the next frame. That \
                         saves a few hundred milliwatts; some PHY and switch pairs drop \
                         frames or the link with it{}. Turning it off is safe and instant to \
                         test.",
                        e.tx_lpi_timer_us,
                        if n.downshifted {
                            ", and this link also downshifted"
                        } else {
                            ""
                        }
                    ),
                )
                .severity(severity)
                .evidence("eee", "enabled, active")
                .evidence("advertised", e.advertised.join(" "))
                .change(Change::AdviceOnly {
                    action: format!(
                        "if the link drops or stalls: ethtool --set-eee {} eee off",
                        n.interface
                    ),
                })
            })
            .collect()
    },
};

fn bandwidth(gt: f64, width: u32) -> String {
    format!(
        "{gt} GT/s x{width} = {:.0} MB/s",
        lane_bytes_per_sec(gt) * f64::from(width) / 1e6
    )
}

static PCIE: Rule = Rule {
    info: RuleInfo {
        id: "pcie-link-downgraded",
        area: "links",
        title: "PCIe link trained below what device and slot can do",
        severity: Severity::Warning,
        risk: Risk::AdviceOnly,
        checks: "A NIC, SATA or NVMe controller's current_link_speed or current_link_width \
                 is below the lower of its own and its port's maximum: downgraded.",
        references: &[
            "https://docs.kernel.org/PCI/sysfs-pci.html",
            "https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-bus-pci",
        ],
    },
    evaluate: |info, ctx| {
        ctx.snapshot
            .links
            .data()
            .into_iter()
            .flat_map(|l| l.pcie.iter())
            .filter(|p| p.downgraded)
            .filter_map(|p| {
                let now = (p.current_gt_per_sec?, p.current_width?);
                let can = (
                    p.max_gt_per_sec?
                        .min(p.port_max_gt_per_sec.unwrap_or(f64::MAX)),
                    p.max_width?.min(p.port_max_width.unwrap_or(u32::MAX)),
                );
                Some(finding(info, p, now, can))
            })
            .collect()
    },
};

fn finding(info: &RuleInfo, p: &PcieLink, now: (f64, u32), can: (f64, u32)) -> Finding {
    Finding::of(
        info,
        format!(
            "{} controller {} trained at {} GT/s x{} of {} GT/s x{}",
            p.kind, p.address, now.0, now.1, can.0, can.1
        ),
        format!(
            "Downgraded: the link carries {} where device and port allow {} (per lane: 8b/10b \
             up to 5 GT/s, 128b/130b from 8 GT/s). Links train down on a poor slot contact, \
             a riser or adapter, or power-saving (ASPM) trouble; a reseat or another slot is \
             the usual fix.",
            bandwidth(now.0, now.1),
            bandwidth(can.0, can.1)
        ),
    )
    .evidence("current", format!("{} GT/s x{}", now.0, now.1))
    .evidence(
        "device max",
        format!("{:?} GT/s x{:?}", p.max_gt_per_sec, p.max_width),
    )
    .evidence(
        "port max",
        format!("{:?} GT/s x{:?}", p.port_max_gt_per_sec, p.port_max_width),
    )
    .setting(format!(
        "sysfs:bus/pci/devices/{}/current_link_speed",
        p.address
    ))
    .change(Change::AdviceOnly {
        action: format!(
            "reseat the card at {} (or try another slot or cable) and compare \
             /sys/bus/pci/devices/{}/current_link_speed after a cold boot",
            p.address, p.address
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::test_support::{run_rule, snapshot_of};
    use crate::probe::Outcome;
    use crate::probe::links::{Eee, LinkEthtool, LinkModes, Links, judge_nic, mode_names};

    fn snap(nics: Vec<NicLink>, pcie: Vec<PcieLink>) -> crate::probe::Snapshot {
        let mut s = snapshot_of("buildhost");
        s.links = Outcome::Ok {
            data: Links {
                nics,
                pcie,
                problems: Vec::new(),
            },
        };
        s
    }

    fn nic(speed: u64, partner: u32, eee_on: bool) -> NicLink {
        judge_nic(
            "eth0",
            Outcome::Ok {
                data: LinkEthtool {
                    modes: Outcome::Ok {
                        data: LinkModes {
                            speed_mbit_per_sec: Some(speed),
                            duplex: Some("full".into()),
                            autoneg: true,
                            supported: mode_names(&[0x2f]),
                            advertised: mode_names(&[0x2f]),
                            partner_advertised: mode_names(&[partner]),
                        },
                    },
                    eee: Outcome::Ok {
                        data: Eee {
                            enabled: eee_on,
                            active: eee_on,
                            tx_lpi_enabled: eee_on,
                            tx_lpi_timer_us: 0,
                            advertised: mode_names(&[0x28]),
                            partner_advertised: mode_names(&[0x28]),
                        },
                    },
                    pause: Outcome::Unsupported { reason: "-".into() },
                },
            },
        )
    }

    #[test]
    fn downshift_is_named_with_the_cable_and_the_arithmetic() {
        let f = run_rule(&DOWNSHIFT, &snap(vec![nic(100, 0x2f, true)], Vec::new()));
        assert_eq!(f.len(), 1);
        assert!(f[0].rationale.starts_with("Downshifted — check the cable"));
        assert!(f[0].rationale.contains("11.8 MB/s"), "{}", f[0].rationale);
        assert!(f[0].rationale.contains("117.7 MB/s"));
        // A 100 Mbit/s partner: no downshift.
        assert!(run_rule(&DOWNSHIFT, &snap(vec![nic(100, 0x0f, true)], Vec::new())).is_empty());
    }

    #[test]
    fn eee_is_a_notice_on_a_downshifted_link_and_info_otherwise() {
        let f = run_rule(&EEE, &snap(vec![nic(100, 0x2f, true)], Vec::new()));
        assert_eq!(f[0].severity, Severity::Notice);
        let f = run_rule(&EEE, &snap(vec![nic(1000, 0x2f, true)], Vec::new()));
        assert_eq!(f[0].severity, Severity::Info);
        assert!(run_rule(&EEE, &snap(vec![nic(1000, 0x2f, false)], Vec::new())).is_empty());
    }

    #[test]
    fn a_downgraded_pcie_link_shows_both_bandwidths() {
        let p = PcieLink {
            address: "0000:01:00.0".into(),
            kind: "sata".into(),
            driver: Some("ahci".into()),
            current_gt_per_sec: Some(2.5),
            max_gt_per_sec: Some(8.0),
            current_width: Some(1),
            max_width: Some(2),
            port_max_gt_per_sec: Some(5.0),
            port_max_width: Some(4),
            downgraded: true,
        };
        let f = run_rule(&PCIE, &snap(Vec::new(), vec![p.clone()]));
        assert!(
            f[0].title.contains("2.5 GT/s x1 of 5 GT/s x2"),
            "{}",
            f[0].title
        );
        assert!(f[0].rationale.contains("2.5 GT/s x1 = 250 MB/s"));
        assert!(f[0].rationale.contains("5 GT/s x2 = 1000 MB/s"));
        let ok = PcieLink {
            downgraded: false,
            ..p
        };
        assert!(run_rule(&PCIE, &snap(Vec::new(), vec![ok])).is_empty());
    }
}
