//! The NIC and its link: receive drops and rings, counter width, offloads,
//! negotiated speed and carrier flaps.

use super::super::{Change, Finding, Risk, Rule, RuleInfo, Severity};
use super::{ASSUMED_LINK_MBIT, physical, softnet, softnet_totals};
use crate::probe::kernel_log::Class;
use crate::probe::nic_stats;

pub(super) static RX_RING_OVERFLOW: Rule = Rule {
    info: RuleInfo {
        id: "nic-rx-ring-overflow",
        area: "network",
        title: "NIC dropped frames because its receive ring was full",
        severity: Severity::Notice,
        risk: Risk::RuntimeSafe,
        checks: "rx_missed_errors or rx_fifo_errors are non-zero on a physical NIC: frames \
                 arrived while the RX ring had no free descriptor. Recommends the maximum ring \
                 size ethtool reports when the current one is smaller.",
        references: &[
            "https://docs.kernel.org/networking/statistics.html",
            "https://man7.org/linux/man-pages/man8/ethtool.8.html",
        ],
    },
    evaluate: |info, ctx| {
        physical(ctx)
            .into_iter()
            .filter_map(|i| {
                let missed = i.counters.rx_missed_errors.unwrap_or(0);
                let fifo = i.counters.rx_fifo_errors.unwrap_or(0);
                if missed == 0 && fifo == 0 {
                    return None;
                }
                let rings = i.ethtool.data().and_then(|e| e.rings.data());
                let packets = i.counters.rx_packets.unwrap_or(0);
                let mut f = Finding::of(
                    info,
                    format!(
                        "{} missed {} frames for lack of RX descriptors",
                        i.name,
                        missed + fifo
                    ),
                    format!(
                        "rx_missed_errors = {missed} and rx_fifo_errors = {fifo} (of {packets} \
                         frames): the NIC had nowhere to put them, usually because the CPU \
                         serviced the interrupt late. {}",
                        match rings {
                            Some(r) if r.rx_pending < r.rx_max => format!(
                                "The RX ring holds {} of a possible {} descriptors; at \
                                 {} frames it absorbs {:.1} ms of a 1 Gbit/s burst instead of \
                                 {:.1} ms. Raise it (costs {} KiB of RAM at 2 KiB per buffer).",
                                r.rx_pending,
                                r.rx_max,
                                r.rx_max,
                                r.rx_max as f64 * 12.3 / 1000.0,
                                r.rx_pending as f64 * 12.3 / 1000.0,
                                (r.rx_max - r.rx_pending) as u64 * 2
                            ),
                            Some(r) => format!(
                                "The RX ring is already at its maximum {}: spread interrupt \
                                 load (IRQ affinity, RPS) or find what keeps the CPU busy.",
                                r.rx_max
                            ),
                            None => "The driver does not report ring sizes.".into(),
                        }
                    ),
                )
                .evidence(format!("{} rx_missed_errors", i.name), missed)
                .evidence(format!("{} rx_fifo_errors", i.name), fifo)
                .setting(format!("ethtool:{}:rx-ring", i.name));
                f = match rings {
                    Some(r) if r.rx_pending < r.rx_max => f
                        .evidence(
                            format!("{} rx ring", i.name),
                            format!("{} of max {}", r.rx_pending, r.rx_max),
                        )
                        .change(Change::Ethtool {
                            interface: i.name.clone(),
                            setting: "rx".into(),
                            value: r.rx_max.to_string(),
                        }),
                    _ => f.change(Change::AdviceOnly {
                        action: "check IRQ affinity and RPS for this NIC".into(),
                    }),
                };
                Some(f)
            })
            .collect()
    },
};

pub(super) static RX_DROPPED_UNEXPLAINED: Rule = Rule {
    info: RuleInfo {
        id: "rx-dropped-unknown-protocol",
        area: "network",
        title: "rx_dropped not explained by a full ring or backlog",
        severity: Severity::Info,
        risk: Risk::AdviceOnly,
        checks: "A physical NIC's rx_dropped is non-zero while it reports no missed/FIFO \
                 errors and no CPU dropped from its backlog. The driver's own counters \
                 ('ethtool -S'), rx_nohandler and the kernel log's driver errors then say \
                 which cause it is; drops are called harmless only when rx_nohandler accounts \
                 for them or, with the driver's counters read, nothing else moved (unknown \
                 protocols are counted in rx_dropped alone). The watch alert words the same cause.",
        references: &["https://docs.kernel.org/networking/statistics.html"],
    },
    evaluate: |info, ctx| {
        let backlog_drops = softnet(ctx).map_or(0, |c| softnet_totals(c).1);
        physical(ctx)
            .into_iter()
            .filter_map(|i| {
                let dropped = i.counters.rx_dropped.filter(|d| *d > 0)?;
                if i.counters.rx_missed_errors.unwrap_or(0) > 0
                    || i.counters.rx_fifo_errors.unwrap_or(0) > 0
                    || backlog_drops > 0
                {
                    return None;
                }
                let name = &i.name;
                // Since boot: everything counted so far against nothing.
                let now = nic_stats::DropCounters {
                    rx_dropped: dropped,
                    rx_errors: i.counters.rx_errors.unwrap_or(0),
                    rx_nohandler: i.counters.rx_nohandler.unwrap_or(0),
                    ring_full: 0,
                    softnet_dropped: backlog_drops,
                    driver: i.driver_stats.data().cloned(),
                    kernel_log_events: nic_driver_errors(ctx, name),
                };
                let before = nic_stats::DropCounters {
                    driver: now.driver.as_ref().map(|_| Vec::new()),
                    ..Default::default()
                };
                let why = nic_stats::explain_drops(&before, &now);
                let packets = i.counters.rx_packets.unwrap_or(0);
                let mut f = Finding::of(
                    info,
                    format!("{name} rx_dropped {dropped}: not a full ring or backlog"),
                    format!(
                        "{dropped} of {packets} received frames were dropped since boot. The NIC \
                         missed none (rx_missed_errors/rx_fifo_errors 0) and no CPU backlog \
                         overflowed. Beside them: {}. (Frames of unknown protocols raise \
                         rx_dropped only; rx_nohandler counts frames for inactive bond ports; \
                         drops inside the driver show in 'ethtool -S {name}'.)",
                        why.text
                    ),
                )
                .evidence(format!("{name} rx_dropped"), dropped)
                .evidence("softnet dropped", backlog_drops)
                .evidence("cause", format!("{:?}", why.cause))
                .setting(format!("ethtool:{name}:statistics"))
                .change(Change::AdviceOnly {
                    action: if why.harmless {
                        "nothing to tune".to_string()
                    } else {
                        format!(
                            "compare 'ethtool -S {name}' and rx_nohandler before and after \
                             rx_dropped grows ('nastune watch' does)"
                        )
                    },
                });
                for (counter, grew) in &why.moved {
                    f = f.evidence(counter.clone(), grew);
                }
                if !why.harmless && why.cause != nic_stats::Cause::Unknown {
                    f = f.severity(Severity::Notice);
                }
                Some(f)
            })
            .collect()
    },
};

/// Driver errors the kernel logged for `name` since boot (tx timeouts,
/// resets): they come with drops of their own.
fn nic_driver_errors(ctx: &super::super::Context, name: &str) -> u64 {
    ctx.snapshot.kernel_log.data().map_or(0, |l| {
        l.of_class(Class::NicDriverError)
            .filter(|c| c.device.as_deref() == Some(name))
            .map(|c| c.count)
            .sum()
    })
}

pub(super) static COUNTERS_32BIT: Rule = Rule {
    info: RuleInfo {
        id: "net-counters-32bit",
        area: "network",
        title: "Interface counters wrap at 4 GiB on this 32-bit kernel",
        severity: Severity::Info,
        risk: Risk::AdviceOnly,
        checks: "The kernel is 32-bit, so byte counters of a physical NIC wrap at 2^32; totals \
                 and rates from samples further apart than the wrap time are wrong.",
        references: &["https://docs.kernel.org/networking/statistics.html"],
    },
    evaluate: |info, ctx| {
        physical(ctx)
            .into_iter()
            .filter(|i| i.counter_bits == Some(32))
            .map(|i| {
                let mbit = i.speed_mbit_per_sec.unwrap_or(ASSUMED_LINK_MBIT);
                let wrap_s = (1u64 << 32) as f64 * 8.0 / (mbit as f64 * 1e6);
                Finding::of(
                    info,
                    format!(
                        "{} byte counters wrap every {wrap_s:.0} s at {mbit} Mbit/s",
                        i.name
                    ),
                    format!(
                        "{}. rx_bytes/tx_bytes wrap after 2^32 B = 4 GiB, which at line \
                         rate {mbit} Mbit/s is 2^32 × 8 / {mbit}e6 = {wrap_s:.0} s. Totals \
                         since boot are meaningless and rates need samples less than \
                         {wrap_s:.0} s apart (nastune bench measures over seconds).",
                        i.counter_bits_reason
                    ),
                )
                .evidence(format!("{} counter bits", i.name), 32)
                .evidence(
                    format!("{} rx_bytes", i.name),
                    i.counters.rx_bytes.unwrap_or(0),
                )
                .setting(format!("sysfs:class/net/{}/statistics", i.name))
                .change(Change::AdviceOnly {
                    action: format!("sample counters at intervals under {wrap_s:.0} s"),
                })
            })
            .collect()
    },
};

/// Offloads worth having on; (kernel feature name, what ethtool -k calls it).
const OFFLOADS: &[(&str, &str)] = &[
    ("tx-tcp-segmentation", "TSO"),
    ("tx-generic-segmentation", "GSO"),
    ("rx-gro", "GRO"),
    ("rx-checksum", "RX checksumming"),
    ("tx-checksum-ipv4", "TX checksumming (IPv4)"),
    ("tx-checksum-ip-generic", "TX checksumming"),
    ("tx-scatter-gather", "scatter-gather"),
];

pub(super) static OFFLOADS_OFF: Rule = Rule {
    info: RuleInfo {
        id: "nic-offloads-off",
        area: "network",
        title: "Segmentation/checksum offloads turned off on a physical NIC",
        severity: Severity::Notice,
        risk: Risk::RuntimeSafe,
        checks: "TSO, GSO, GRO, checksum or scatter-gather offload is off on a physical NIC \
                 although the driver can turn it on (not 'fixed'): the CPU does per-packet \
                 work the NIC or the batched software path would do.",
        references: &[
            "https://docs.kernel.org/networking/segmentation-offloads.html",
            "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git/commit/?id=3ae8f4e0b98b",
        ],
    },
    evaluate: |info, ctx| {
        physical(ctx)
            .into_iter()
            .filter_map(|i| {
                let features = i.ethtool.data()?.features.data()?;
                let off: Vec<(&str, &str)> = OFFLOADS
                    .iter()
                    .copied()
                    .filter(|(name, _)| {
                        features
                            .iter()
                            .any(|f| f.name == *name && !f.active && !f.fixed)
                    })
                    .collect();
                if off.is_empty() {
                    return None;
                }
                let driver = i.driver.as_deref().unwrap_or("?");
                let names: Vec<&str> = off.iter().map(|(_, label)| *label).collect();
                let mv643xx_tso = driver.starts_with("mv643xx")
                    && off.iter().any(|(n, _)| *n == "tx-tcp-segmentation");
                let mv643xx = if mv643xx_tso {
                    " The Kirkwood/Pogoplug advice 'GSO on, TSO off for mv643xx_eth' came after \
                     the driver's software TSO (2014, commit 3ae8f4e0b98b), not before it: TSO \
                     was turned off because the new software TSO corrupted or stalled transfers \
                     on some kernels, and fixes to it followed for years (its error path as \
                     late as 2025). Turning TSO on risks silent data corruption on an older \
                     kernel: before trusting it, copy a large file to and from the box with TSO \
                     on and compare checksums (sha256sum on both ends); if they differ, turn \
                     TSO off again."
                } else {
                    ""
                };
                let mut f = Finding::of(
                    info,
                    format!("{} ({driver}) has {} off", i.name, names.join(", ")),
                    format!(
                        "With segmentation offload the stack hands the driver 64 KiB at once \
                         instead of 45 × 1448-byte segments, and GRO merges received segments \
                         the same way, so per-packet CPU cost falls by an order of magnitude — \
                         the scarce resource on a small ARM board.{mv643xx} Turn them back on \
                         and compare with iperf3 in both directions plus CPU%; on a headless \
                         box apply behind a revert timer, and persist in a systemd .link file \
                         or an ethtool post-up hook."
                    ),
                )
                .evidence(format!("{} driver", i.name), driver)
                .evidence(format!("{} offloads off", i.name), names.join(", "));
                for (name, _) in &off {
                    f = f
                        .setting(format!("ethtool:{}:{name}", i.name))
                        .change(Change::Ethtool {
                            interface: i.name.clone(),
                            setting: (*name).to_string(),
                            value: "on".into(),
                        });
                }
                if mv643xx_tso {
                    f = f.change(Change::AdviceOnly {
                        action: format!(
                            "verify TSO on {}: copy a file of a few GiB to and from the box and \
                             compare sha256sum on both ends",
                            i.name
                        ),
                    });
                }
                Some(f)
            })
            .collect()
    },
};

/// Drivers of gigabit MACs on the boards we target (and common PCIe ones).
const GIGABIT_DRIVERS: &[&str] = &[
    "mv643xx_eth",
    "mv643xx_eth_port",
    "mvneta",
    "st_gmac",
    "stmmaceth",
    "rk_gmac-dwmac",
    "r8169",
    "e1000e",
    "igb",
    "bcmgenet",
    "lan78xx",
];

pub(super) static LINK_DEGRADED: Rule = Rule {
    info: RuleInfo {
        id: "link-degraded",
        area: "network",
        title: "Link negotiated below the NIC's speed or at half duplex",
        severity: Severity::Warning,
        risk: Risk::AdviceOnly,
        checks: "A physical NIC runs at half duplex, or a known gigabit NIC negotiated 100 or \
                 10 Mbit/s: usually a bad cable (a broken pair), a 100 Mbit switch port, or \
                 forced settings on one side.",
        references: &["https://man7.org/linux/man-pages/man8/ethtool.8.html"],
    },
    evaluate: |info, ctx| {
        physical(ctx)
            .into_iter()
            .filter(|i| i.carrier == Some(true))
            .filter_map(|i| {
                let speed = i.speed_mbit_per_sec;
                let half = i.duplex.as_deref() == Some("half");
                let gigabit = i.driver.as_deref().is_some_and(|d| GIGABIT_DRIVERS.contains(&d));
                // When both ends' modes are known and the link downshifted,
                // nic-link-downshifted says it with the evidence.
                let downshifted = ctx
                    .snapshot
                    .links
                    .data()
                    .is_some_and(|l| l.nics.iter().any(|n| n.interface == i.name && n.downshifted));
                let slow = gigabit && speed.is_some_and(|s| s < 1000) && !downshifted;
                if !half && !slow {
                    return None;
                }
                let speed = speed.map_or("?".to_string(), |s| s.to_string());
                let mut why = Vec::new();
                if slow {
                    why.push(format!(
                        "{} is a gigabit NIC but negotiated {speed} Mbit/s: at most {:.1} MB/s \
                         instead of ~110 MB/s for file copies. Gigabit needs all four pairs; a \
                         cable with one bad pair or a 100 Mbit switch port falls back to 100.",
                        i.driver.as_deref().unwrap_or("?"),
                        speed.parse::<f64>().map_or(0.0, |s| s / 8.0 * 0.94)
                    ));
                }
                if half {
                    why.push(
                        "Half duplex means collisions and a fraction of the throughput; it \
                         happens when one side is forced to a fixed speed and the other \
                         autonegotiates."
                            .to_string(),
                    );
                }
                Some(
                    Finding::of(
                        info,
                        format!(
                            "{} link at {speed} Mbit/s {} duplex",
                            i.name,
                            i.duplex.as_deref().unwrap_or("?")
                        ),
                        format!("{} Swap the cable, try another switch port, and leave both sides on autonegotiation.", why.join(" ")),
                    )
                    .evidence(format!("{} speed", i.name), format!("{speed} Mbit/s"))
                    .evidence(format!("{} duplex", i.name), i.duplex.as_deref().unwrap_or("?"))
                    .setting(format!("ethtool:{}:speed", i.name))
                    .change(Change::AdviceOnly {
                        action: "replace the cable / switch port; keep autonegotiation on".into(),
                    }),
                )
            })
            .collect()
    },
};

/// Boot and a cable replug give a handful; more than this is a flapping link.
const CARRIER_CHANGES_NOTICE: u64 = 10;

pub(super) static CARRIER_FLAPPING: Rule = Rule {
    info: RuleInfo {
        id: "carrier-flapping",
        area: "network",
        title: "Link went down and up repeatedly",
        severity: Severity::Notice,
        risk: Risk::AdviceOnly,
        checks: "A physical NIC's carrier_changes exceeds 10 since boot (each drop counts down \
                 and up): a marginal cable, connector or switch port, or power saving (EEE) \
                 misbehaving.",
        references: &["https://docs.kernel.org/networking/statistics.html"],
    },
    evaluate: |info, ctx| {
        let uptime = ctx
            .snapshot
            .host
            .data()
            .and_then(|h| h.uptime_seconds)
            .filter(|u| *u > 0.0);
        physical(ctx)
            .into_iter()
            .filter_map(|i| {
                let changes = i.counters.carrier_changes?;
                if changes <= CARRIER_CHANGES_NOTICE {
                    return None;
                }
                let drops = changes / 2;
                let rate = uptime.map_or(String::new(), |u| {
                    format!(
                        " over {:.1} days of uptime ({:.1} per day)",
                        u / 86400.0,
                        drops as f64 / (u / 86400.0)
                    )
                });
                Some(
                    Finding::of(
                        info,
                        format!("{} carrier changed {changes} times", i.name),
                        format!(
                            "carrier_changes {changes} means the link dropped about {drops} \
                             times{rate}. Each drop stalls SMB/NFS clients for the \
                             renegotiation (1-3 s) and may reset connections. Check the cable \
                             and port; if the switch supports EEE, try disabling it \
                             (ethtool --set-eee {} eee off).",
                            i.name
                        ),
                    )
                    .evidence(format!("{} carrier_changes", i.name), changes)
                    .setting(format!("sysfs:class/net/{}/carrier_changes", i.name))
                    .change(Change::AdviceOnly {
                        action: "check cable, connector and switch port".into(),
                    }),
                )
            })
            .collect()
    },
};

#[cfg(test)]
mod tests {
    use super::super::test_edit::*;
    use super::*;
    use crate::advise::test_support::snapshot_of;
    use crate::probe::Outcome;

    #[test]
    fn rx_drops_named_by_the_driver_counters_or_harmless_only_with_evidence() {
        use crate::probe::{Outcome, nic_stats::NicStat};
        let mut snap = snapshot_of("pogoplug-v4");
        let stats = |v: u64| Outcome::Ok {
            data: vec![NicStat {
                name: "rx_queue_0_drops".into(),
                value: v,
            }],
        };
        eth0(&mut snap).driver_stats = stats(100);
        let f = run(&RX_DROPPED_UNEXPLAINED, &snap);
        assert_eq!(f[0].severity, Severity::Notice);
        assert!(
            f[0].rationale.contains("'rx_queue_0_drops' grew +100"),
            "{}",
            f[0].rationale
        );
        assert!(!f[0].rationale.contains("; harmless"), "{}", f[0].rationale);
        // Read and still: by elimination, unknown protocols.
        eth0(&mut snap).driver_stats = stats(0);
        let f = run(&RX_DROPPED_UNEXPLAINED, &snap);
        assert_eq!(f[0].severity, Severity::Info);
        assert!(
            f[0].rationale.contains("by elimination"),
            "{}",
            f[0].rationale
        );
        assert!(f[0].rationale.contains("harmless"), "{}", f[0].rationale);
        // Inactive bond port frames account for every drop.
        eth0(&mut snap).counters.rx_nohandler = Some(112);
        let f = run(&RX_DROPPED_UNEXPLAINED, &snap);
        assert!(
            f[0].rationale.contains("rx_nohandler grew +112"),
            "{}",
            f[0].rationale
        );
    }

    #[test]
    fn rx_drops_explained_by_ring_or_left_open() {
        let mut snap = snapshot_of("pogoplug-v4");
        assert!(run(&RX_RING_OVERFLOW, &snap).is_empty());
        let f = run(&RX_DROPPED_UNEXPLAINED, &snap);
        assert_eq!(f.len(), 1);
        assert!(f[0].title.contains("112"), "{}", f[0].title);
        // Ruling the ring and backlog out proves nothing about the rest: the
        // finding says what would tell, as the watch alert lists driver drops.
        let text = format!("{} {}", f[0].title, f[0].rationale);
        for claim in [
            "on purpose:",
            "harmless",
            "Nothing to tune",
            "are unwanted frames",
        ] {
            assert!(!text.contains(claim), "asserts '{claim}': {text}");
        }
        assert!(text.contains("drops inside the driver"), "{text}");
        assert!(text.contains("'ethtool -S eth0'"), "{text}");
        assert!(text.contains("rx_nohandler"), "{text}");
        eth0(&mut snap).counters.rx_missed_errors = Some(5000);
        assert!(run(&RX_DROPPED_UNEXPLAINED, &snap).is_empty());
        let f = run(&RX_RING_OVERFLOW, &snap);
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].recommendation[0],
            Change::Ethtool {
                interface: "eth0".into(),
                setting: "rx".into(),
                value: "4096".into()
            }
        );
        // Softnet drops present: rx_dropped is not "harmless" without a look.
        assert!(run(&RX_DROPPED_UNEXPLAINED, &snapshot_of("rk3399-raid5")).is_empty());
    }

    #[test]
    fn counters_32bit_only_on_32bit_kernels() {
        let f = run(&COUNTERS_32BIT, &snapshot_of("rpi2-luks"));
        assert_eq!(f.len(), 1);
        // 2^32 × 8 / 100e6 = 344 s.
        assert!(f[0].title.contains("344 s"), "{}", f[0].title);
        assert!(run(&COUNTERS_32BIT, &snapshot_of("rk3399-raid5")).is_empty());
    }

    #[test]
    fn offloads_off_but_not_fixed_off() {
        let mut snap = snapshot_of("pogoplug-v4");
        assert!(run(&OFFLOADS_OFF, &snap).is_empty());
        // rk3399 has TSO fixed off (hardware cannot): not a finding.
        assert!(run(&OFFLOADS_OFF, &snapshot_of("rk3399-raid5")).is_empty());
        if let Outcome::Ok { data } = &mut eth0(&mut snap).ethtool
            && let Outcome::Ok { data } = &mut data.features
        {
            for f in data.iter_mut().filter(|f| f.name == "tx-tcp-segmentation") {
                f.active = false;
            }
        }
        let f = run(&OFFLOADS_OFF, &snap);
        assert_eq!(f.len(), 1);
        let why = &f[0].rationale;
        assert!(why.contains("3ae8f4e0b98b"), "{why}");
        // TSO off came after the software TSO, because it corrupted data.
        assert!(!why.contains("predates"), "{why}");
        assert!(why.contains("came after"), "{why}");
        assert!(why.contains("silent data corruption"), "{why}");
        let verify = f[0].recommendation.iter().find_map(|c| match c {
            Change::AdviceOnly { action } => Some(action.as_str()),
            _ => None,
        });
        assert_eq!(
            verify,
            Some(
                "verify TSO on eth0: copy a file of a few GiB to and from the box and compare \
                 sha256sum on both ends"
            )
        );
    }

    #[test]
    fn degraded_link_and_flapping() {
        let mut snap = snapshot_of("pogoplug-v4");
        assert!(run(&LINK_DEGRADED, &snap).is_empty());
        assert!(run(&CARRIER_FLAPPING, &snap).is_empty());
        // The Pi's smsc95xx is a 100 Mbit NIC: 100 is its best.
        assert!(run(&LINK_DEGRADED, &snapshot_of("rpi2-luks")).is_empty());
        eth0(&mut snap).speed_mbit_per_sec = Some(100);
        let f = run(&LINK_DEGRADED, &snap);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].rationale.contains("at most 11.8 MB/s"),
            "{}",
            f[0].rationale
        );
        // With both ends' modes known, nic-link-downshifted speaks instead.
        let mut known = snap.clone();
        if let Some(l) = match &mut known.links {
            crate::probe::Outcome::Ok { data } => Some(data),
            _ => None,
        } {
            l.nics[0].downshifted = true;
        }
        assert!(run(&LINK_DEGRADED, &known).is_empty());
        eth0(&mut snap).counters.carrier_changes = Some(40);
        let f = run(&CARRIER_FLAPPING, &snap);
        assert_eq!(f.len(), 1);
        assert!(f[0].rationale.contains("about 20"), "{}", f[0].rationale);
    }
}
