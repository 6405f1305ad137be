//! Queues: txqueuelen, the root qdisc, and the per-CPU input backlog.

use super::super::sysctl_conf::{set_at, sysctl, value_u64};
use super::super::{Change, Context, Finding, Risk, Rule, RuleInfo, Severity};
use super::{ASSUMED_LINK_MBIT, physical, softnet, softnet_totals};
use crate::probe::kernel_config::{Availability, KernelOption, availability};

/// From here a transmit queue is bufferbloat, not smoothing (old guides: 5000+).
const TXQUEUELEN_WARN: u32 = 5000;
/// Ethernet frame on the wire incl. header, for drain-time arithmetic.
const FRAME_BYTES: u64 = 1514;

pub(super) static TXQUEUELEN_LARGE: Rule = Rule {
    info: RuleInfo {
        id: "txqueuelen-large",
        area: "network",
        title: "Very long transmit queue (bufferbloat)",
        severity: Severity::Warning,
        risk: Risk::RuntimeSafe,
        checks: "An interface's txqueuelen is 5000 packets or more: a full queue delays every \
                 packet behind it; BQL and TSQ already keep the NIC fed.",
        references: &[
            "https://docs.kernel.org/networking/ip-sysctl.html",
            "https://www.bufferbloat.net/projects/codel/wiki/Best_practices_for_benchmarking_Codel_and_FQ_Codel/",
        ],
    },
    evaluate: |info, ctx| {
        physical(ctx)
            .into_iter()
            .filter_map(|i| {
                let q = i.tx_queue_len_packets?;
                if q < TXQUEUELEN_WARN {
                    return None;
                }
                let mbit = i.speed_mbit_per_sec.unwrap_or(ASSUMED_LINK_MBIT);
                let target: u32 = if mbit <= 100 { 500 } else { 1000 };
                let drain_ms = |n: u32| (n as u64 * FRAME_BYTES * 8) as f64 / (mbit as f64 * 1e3);
                Some(
                    Finding::of(
                        info,
                        format!("{} txqueuelen is {q}", i.name),
                        format!(
                            "A full queue of {q} frames × {FRAME_BYTES} B at {mbit} Mbit/s \
                             takes {:.0} ms to drain, and every SMB or SSH packet waits behind \
                             it. Byte queue limits and TCP small queues already keep the NIC \
                             busy, so a long queue adds only latency. {target} packets drains \
                             in {:.0} ms.",
                            drain_ms(q),
                            drain_ms(target)
                        ),
                    )
                    .evidence(format!("{} tx_queue_len", i.name), q)
                    .evidence(format!("{} speed", i.name), format!("{mbit} Mbit/s"))
                    .setting(format!("sysfs:class/net/{}/tx_queue_len", i.name))
                    .change(Change::SysfsAttribute {
                        path: format!("class/net/{}/tx_queue_len", i.name),
                        value: target.to_string(),
                    }),
                )
            })
            .collect()
    },
};

/// The fair-queueing qdiscs, in the order recommended, with the sentence that says
/// why when fq_codel is not in the kernel.
const FAIR_QDISCS: [(KernelOption, &str, &str); 3] = [
    (
        KernelOption::NetSchFqCodel,
        "fq_codel",
        "fq_codel gives each flow its own queue and keeps the standing delay near 5 ms; it \
         is the default systemd and Debian 13 ship.",
    ),
    (
        KernelOption::NetSchFq,
        "fq",
        "This kernel has no fq_codel, but it has fq: each flow gets its own queue and TCP is \
         paced, so a bulk copy no longer delays interactive packets; it lacks codel's 5 ms \
         delay target, which TCP small queues largely stand in for on a server's own flows.",
    ),
    (
        KernelOption::NetSchCake,
        "cake",
        "This kernel has no fq_codel, but it has cake: per-flow queues with the same kind of \
         delay-based AQM, at somewhat more CPU per packet on a small board.",
    ),
];

/// What the rule can recommend on this kernel.
enum Pick {
    /// A fair-queueing qdisc the kernel has (built in or a module).
    Has(usize),
    /// No kernel config could be read: fq_codel, unchecked.
    Unchecked,
    /// None of them is in the kernel.
    Nothing,
}

fn pick(ctx: &Context) -> Pick {
    let has = |o| availability(&ctx.snapshot.kernel_config, o);
    if has(KernelOption::NetSchFqCodel) == Availability::Unknown {
        return Pick::Unchecked;
    }
    FAIR_QDISCS
        .iter()
        .position(|(o, _, _)| has(*o).usable() == Some(true))
        .map_or(Pick::Nothing, Pick::Has)
}

/// Evidence that a kernel option is, or is not, in the kernel, and where that was read.
fn option_evidence(f: Finding, ctx: &Context, o: KernelOption) -> Finding {
    let from = ctx
        .snapshot
        .kernel_config
        .data()
        .and_then(|k| k.path.as_deref())
        .map_or(String::new(), |p| format!(", per {p}"));
    let state = availability(&ctx.snapshot.kernel_config, o).describe();
    f.evidence(o.config_name(), format!("{state}{from}"))
}

pub(super) static QDISC_PFIFO_FAST: Rule = Rule {
    info: RuleInfo {
        id: "qdisc-pfifo-fast",
        area: "network",
        title: "Physical NIC uses pfifo_fast instead of fq_codel (or another fair-queueing qdisc)",
        severity: Severity::Notice,
        risk: Risk::RuntimeSafe,
        checks: "The root qdisc of a physical NIC is pfifo_fast (or mq whose children come \
                 from net.core.default_qdisc = pfifo_fast): one FIFO, no fairness, no AQM. \
                 Recommends fq_codel when the kernel has it (built in or a module), else fq or \
                 cake, else nothing; the kernel config (/boot/config-RELEASE or \
                 /proc/config.gz) says which it has.",
        references: &[
            "https://docs.kernel.org/admin-guide/sysctl/net.html#default-qdisc",
            "https://www.rfc-editor.org/rfc/rfc8290",
        ],
    },
    evaluate: |info, ctx| {
        let default = sysctl(ctx)
            .and_then(|s| s.values.get("net.core.default_qdisc"))
            .map(String::as_str);
        let pick = pick(ctx);
        physical(ctx)
            .into_iter()
            .filter(|i| match i.qdisc.as_deref() {
                Some("pfifo_fast") => true,
                Some("mq") => default == Some("pfifo_fast"),
                _ => false,
            })
            .map(|i| {
                let root = i.qdisc.as_deref().unwrap_or("?");
                let (option, kind, why) = match pick {
                    Pick::Has(n) => FAIR_QDISCS[n],
                    Pick::Unchecked | Pick::Nothing => FAIR_QDISCS[0],
                };
                let fifo = format!(
                    "pfifo_fast is one tail-drop FIFO: a bulk SMB copy fills it and an \
                     interactive packet waits behind up to txqueuelen {} packets.",
                    i.tx_queue_len_packets
                        .map_or("?".to_string(), |q| q.to_string())
                );
                let title = format!(
                    "{} root qdisc {root} (net.core.default_qdisc = {})",
                    i.name,
                    default.unwrap_or("?")
                );
                let f = |rationale: String| {
                    Finding::of(info, title.clone(), rationale)
                        .evidence(format!("{} root qdisc", i.name), root)
                        .evidence("net.core.default_qdisc", default.unwrap_or("?"))
                };
                if let Pick::Nothing = pick {
                    let f = f(format!(
                        "{fifo} This kernel has no fair-queueing qdisc to replace it with: \
                         fq_codel, fq and cake are all left out of its build, so no setting \
                         can change this. A kernel built with CONFIG_NET_SCH_FQ_CODEL (=m is \
                         enough) would allow it; until then the FIFO stays."
                    ))
                    .severity(Severity::Info);
                    let f = FAIR_QDISCS
                        .iter()
                        .fold(f, |f, (o, _, _)| option_evidence(f, ctx, *o));
                    return f.change(Change::AdviceOnly {
                        action: "none possible with this kernel; one built with \
                                 CONFIG_NET_SCH_FQ_CODEL=m or =y would allow fq_codel"
                            .into(),
                    });
                }
                let mut f = f(format!(
                    "{fifo} {why} Changing net.core.default_qdisc only affects qdiscs created \
                     afterwards, so the existing root must be re-created."
                ));
                if let Pick::Unchecked = pick {
                    f = f.evidence(
                        "fq_codel in this kernel",
                        "not checked: no kernel config could be read; 'modprobe -n -v \
                         sch_fq_codel' prints the module (or 'builtin') when the kernel has it \
                         and fails when it does not",
                    );
                } else {
                    f = option_evidence(f, ctx, KernelOption::NetSchFqCodel);
                    if option != KernelOption::NetSchFqCodel {
                        f = option_evidence(f, ctx, option);
                    }
                }
                f.setting("sysctl:net.core.default_qdisc")
                    .change(Change::Sysctl {
                        key: "net.core.default_qdisc".into(),
                        value: kind.into(),
                    })
                    .change(if root == "mq" {
                        Change::AdviceOnly {
                            action: format!(
                                "after setting the default: tc qdisc del dev {} root (the \
                                 kernel re-attaches mq with {kind} children)",
                                i.name
                            ),
                        }
                    } else {
                        // One queue: replacing the root is the whole change.
                        Change::Ethtool {
                            interface: i.name.clone(),
                            setting: "qdisc".into(),
                            value: kind.into(),
                        }
                    })
            })
            .collect()
    },
};

const BACKLOG_DEFAULT: u64 = 1000;

pub(super) static BACKLOG_RAISED_WITHOUT_DROPS: Rule = Rule {
    info: RuleInfo {
        id: "netdev-backlog-raised",
        area: "network",
        title: "netdev_max_backlog raised although the backlog (almost) never overflowed",
        severity: Severity::Notice,
        risk: Risk::RuntimeSafe,
        checks: "net.core.netdev_max_backlog is above the default 1000 while /proc/net/softnet_stat \
                 shows fewer than one backlog drop per million packets.",
        references: &[
            "https://docs.kernel.org/admin-guide/sysctl/net.html#netdev-max-backlog",
            "https://docs.kernel.org/networking/scaling.html",
        ],
    },
    evaluate: |info, ctx| {
        let (Some(v), Some(cpus)) = (value_u64(ctx, "net.core.netdev_max_backlog"), softnet(ctx))
        else {
            return Vec::new();
        };
        let (processed, dropped, _) = softnet_totals(cpus);
        let per_million = dropped as f64 * 1e6 / processed.max(1) as f64;
        if v <= BACKLOG_DEFAULT || per_million >= SOFTNET_DROP_NOTICE_PER_MILLION {
            return Vec::new();
        }
        vec![
            Finding::of(
                info,
                format!("netdev_max_backlog {v} with {dropped} backlog drops"),
                format!(
                    "The per-CPU input backlog overflowed {dropped} times in {processed} \
                     packets since boot ({per_million:.2} per million, softnet_stat column 2), \
                     below the {SOFTNET_DROP_NOTICE_PER_MILLION} per million worth acting on, \
                     so the raise from {BACKLOG_DEFAULT} to {v} buys nothing but worst-case \
                     queueing. It matters at 10 Gbit/s, rarely at 1 Gbit/s or below. Remove \
                     it; raise in steps only while drops grow."
                ),
            )
            .evidence("net.core.netdev_max_backlog", v)
            .evidence("softnet dropped", dropped)
            .setting("sysctl:net.core.netdev_max_backlog")
            .change(Change::Sysctl {
                key: "net.core.netdev_max_backlog".into(),
                value: BACKLOG_DEFAULT.to_string(),
            })
            .change(Change::AdviceOnly {
                action: set_at(ctx, "net.core.netdev_max_backlog")
                    .map_or("nothing to remove from sysctl files".into(), |at| {
                        format!("delete the line at {at}")
                    }),
            }),
        ]
    },
};

/// Below one drop per million packets the backlog is not worth touching.
const SOFTNET_DROP_NOTICE_PER_MILLION: f64 = 1.0;

pub(super) static SOFTNET_DROPS: Rule = Rule {
    info: RuleInfo {
        id: "softnet-backlog-drops",
        area: "network",
        title: "Packets dropped because the per-CPU input backlog was full",
        severity: Severity::Notice,
        risk: Risk::RuntimeSafe,
        checks: "/proc/net/softnet_stat shows backlog drops (column 2). Notice from one drop per \
                 million packets, info below.",
        references: &[
            "https://docs.kernel.org/admin-guide/sysctl/net.html#netdev-max-backlog",
            "https://docs.kernel.org/networking/scaling.html",
            "https://github.com/oracle/bpftune/blob/main/docs/bpftune-net-buffer.rst",
        ],
    },
    evaluate: |info, ctx| {
        let (Some(v), Some(cpus)) = (value_u64(ctx, "net.core.netdev_max_backlog"), softnet(ctx))
        else {
            return Vec::new();
        };
        let (processed, dropped, squeeze) = softnet_totals(cpus);
        if dropped == 0 {
            return Vec::new();
        }
        let per_million = dropped as f64 * 1e6 / processed.max(1) as f64;
        let severity = if per_million >= SOFTNET_DROP_NOTICE_PER_MILLION {
            Severity::Notice
        } else {
            Severity::Info
        };
        let budget = value_u64(ctx, "net.core.netdev_budget").unwrap_or(300);
        let busiest = cpus.iter().max_by_key(|c| c.dropped).map_or(0, |c| c.cpu);
        let advice = if severity == Severity::Info {
            " That is negligible (TCP recovers such losses unnoticed); leave the backlog and \
             re-check if the rate grows."
                .to_string()
        } else {
            format!(
                " Raise netdev_max_backlog in steps ({v} → {}) and re-check the counter; on \
                 single-queue ARM NICs spread receive work with RPS/IRQ affinity first.{}",
                v * 2,
                if squeeze > dropped {
                    format!(
                        " time_squeeze {squeeze} > drops: the softirq ran out of its budget \
                         ({budget} packets) more often than the backlog overflowed, so raise \
                         net.core.netdev_budget ({budget} → {}) as well.",
                        budget * 2
                    )
                } else {
                    String::new()
                }
            )
        };
        let mut f = Finding::of(
            info,
            format!(
                "{dropped} backlog drops in {processed} packets ({per_million:.2} per million)"
            ),
            format!(
                "{dropped} packets were dropped because a CPU's input backlog \
                 (netdev_max_backlog = {v}) was full: {per_million:.2} per million packets \
                 since boot, most on cpu {busiest} (time_squeeze {squeeze}).{advice}"
            ),
        )
        .severity(severity)
        .evidence("softnet dropped", dropped)
        .evidence("softnet processed", processed)
        .evidence("softnet time_squeeze", squeeze)
        .evidence("net.core.netdev_max_backlog", v)
        .setting("sysctl:net.core.netdev_max_backlog");
        if severity == Severity::Notice {
            f = f.change(Change::Sysctl {
                key: "net.core.netdev_max_backlog".into(),
                value: (v * 2).to_string(),
            });
            if squeeze > dropped {
                f = f
                    .setting("sysctl:net.core.netdev_budget")
                    .change(Change::Sysctl {
                        key: "net.core.netdev_budget".into(),
                        value: (budget * 2).to_string(),
                    });
            }
        } else {
            f = f.change(Change::AdviceOnly {
                action: "none needed; watch the counter".into(),
            });
        }
        vec![f]
    },
};

#[cfg(test)]
mod tests {
    use super::super::super::sysctl_conf::test_edit::set;
    use super::super::test_edit::*;
    use super::*;
    use crate::advise::test_support::snapshot_of;
    use crate::probe::kernel_config::{ConfigSource, KernelConfig};
    use crate::probe::{Outcome, Snapshot};

    #[test]
    fn txqueuelen_5000_with_drain_time() {
        let mut snap = snapshot_of("rpi2-luks");
        assert!(run(&TXQUEUELEN_LARGE, &snap).is_empty());
        eth0(&mut snap).tx_queue_len_packets = Some(5000);
        let f = run(&TXQUEUELEN_LARGE, &snap);
        assert_eq!(f.len(), 1);
        // 5000 × 1514 B × 8 / 100 Mbit/s = 606 ms; 500 packets = 61 ms.
        assert!(f[0].rationale.contains("606 ms"), "{}", f[0].rationale);
        assert_eq!(
            f[0].recommendation[0],
            Change::SysfsAttribute {
                path: "class/net/eth0/tx_queue_len".into(),
                value: "500".into()
            }
        );
    }

    #[test]
    fn pfifo_fast_root_or_mq_children_but_not_fq_codel() {
        let f = run(&QDISC_PFIFO_FAST, &snapshot_of("pogoplug-v4"));
        assert_eq!(f.len(), 1);
        assert!(f[0].recommendation.iter().any(|c| matches!(c,
            Change::Ethtool { interface, setting, value }
                if interface == "eth0" && setting == "qdisc" && value == "fq_codel")));
        let mut snap = snapshot_of("rk3399-raid5");
        let mq = run(&QDISC_PFIFO_FAST, &snap);
        assert_eq!(mq.len(), 1, "mq with pfifo_fast children");
        assert!(mq[0].recommendation.iter().any(|c| matches!(c,
            Change::AdviceOnly { action } if action.contains("root (the kernel re-attaches mq"))));
        set(&mut snap, "net.core.default_qdisc", "fq_codel");
        assert!(run(&QDISC_PFIFO_FAST, &snap).is_empty());
        let mut snap = snapshot_of("pogoplug-v4");
        eth0(&mut snap).qdisc = Some("fq_codel".into());
        assert!(run(&QDISC_PFIFO_FAST, &snap).is_empty());
    }

    /// The snapshot's kernel config, as /proc/config.gz would have said it.
    fn kernel(snap: &mut Snapshot, options: [Availability; 3]) {
        let o: [KernelOption; 3] = FAIR_QDISCS.map(|(o, _, _)| o);
        snap.kernel_config = Outcome::Ok {
            data: KernelConfig {
                source: ConfigSource::ProcConfigGz,
                path: Some("/proc/config.gz".into()),
                options: o.into_iter().zip(options).collect(),
                problems: Vec::new(),
            },
        };
    }

    fn qdisc_change(f: &Finding) -> Option<(&str, &str)> {
        let sysctl = f.recommendation.iter().find_map(|c| match c {
            Change::Sysctl { key, value } if key == "net.core.default_qdisc" => Some(value),
            _ => None,
        })?;
        let tc = f.recommendation.iter().find_map(|c| match c {
            Change::Ethtool { setting, value, .. } if setting == "qdisc" => Some(value),
            _ => None,
        })?;
        Some((sysctl, tc))
    }

    fn evidence<'f>(f: &'f Finding, fact: &str) -> Option<&'f str> {
        f.evidence
            .iter()
            .find(|e| e.fact == fact)
            .map(|e| e.value.as_str())
    }

    #[test]
    fn pfifo_fast_recommends_only_a_qdisc_the_kernel_has() {
        use Availability::*;
        let mut snap = snapshot_of("pogoplug-v4");
        // No kernel config in the fixture: fq_codel still, and how to check.
        let f = run(&QDISC_PFIFO_FAST, &snap);
        assert_eq!(qdisc_change(&f[0]), Some(("fq_codel", "fq_codel")));
        let unchecked = evidence(&f[0], "fq_codel in this kernel").unwrap();
        assert!(
            unchecked.contains("'modprobe -n -v sch_fq_codel'"),
            "{unchecked}"
        );
        // A module is enough: setting the default loads it.
        kernel(&mut snap, [Module, Absent, Absent]);
        let f = run(&QDISC_PFIFO_FAST, &snap);
        assert_eq!(qdisc_change(&f[0]), Some(("fq_codel", "fq_codel")));
        assert_eq!(
            evidence(&f[0], "CONFIG_NET_SCH_FQ_CODEL"),
            Some("m (a module, loaded on demand), per /proc/config.gz")
        );
        assert_eq!(evidence(&f[0], "fq_codel in this kernel"), None);
        // No fq_codel: fq, and why; then cake.
        kernel(&mut snap, [Absent, Builtin, Module]);
        let f = run(&QDISC_PFIFO_FAST, &snap);
        assert_eq!(qdisc_change(&f[0]), Some(("fq", "fq")));
        assert!(
            f[0].rationale.contains("has no fq_codel, but it has fq"),
            "{}",
            f[0].rationale
        );
        assert_eq!(
            evidence(&f[0], "CONFIG_NET_SCH_FQ_CODEL"),
            Some("not set (not in this kernel), per /proc/config.gz")
        );
        assert!(evidence(&f[0], "CONFIG_NET_SCH_FQ").is_some());
        kernel(&mut snap, [Absent, Absent, Builtin]);
        let f = run(&QDISC_PFIFO_FAST, &snap);
        assert_eq!(qdisc_change(&f[0]), Some(("cake", "cake")));
        // mq: the re-created children are the qdisc picked.
        let mut rk = snapshot_of("rk3399-raid5");
        kernel(&mut rk, [Absent, Module, Absent]);
        let f = run(&QDISC_PFIFO_FAST, &rk);
        assert!(f[0].recommendation.iter().any(|c| matches!(c,
            Change::AdviceOnly { action } if action.contains("re-attaches mq with fq children"))));
        // None at all: said so, and nothing to apply.
        kernel(&mut snap, [Absent, Absent, Absent]);
        let f = run(&QDISC_PFIFO_FAST, &snap);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Info);
        let advice_only = |c: &Change| matches!(c, Change::AdviceOnly { .. });
        assert!(f[0].recommendation.iter().all(advice_only), "{f:?}");
        // Nothing can be applied, so nothing is "runtime, safe to revert".
        assert_eq!(f[0].risk, Risk::AdviceOnly);
        let why = &f[0].rationale;
        assert!(why.contains("no fair-queueing qdisc"), "{why}");
        for o in [
            "CONFIG_NET_SCH_FQ_CODEL",
            "CONFIG_NET_SCH_FQ",
            "CONFIG_NET_SCH_CAKE",
        ] {
            assert!(
                evidence(&f[0], o).is_some_and(|v| v.starts_with("not set")),
                "{o}"
            );
        }
    }

    #[test]
    fn backlog_raise_and_softnet_drops() {
        let mut snap = snapshot_of("pogoplug-v4");
        assert!(
            run(&BACKLOG_RAISED_WITHOUT_DROPS, &snap).is_empty(),
            "default 1000"
        );
        assert!(run(&SOFTNET_DROPS, &snap).is_empty(), "0 drops");
        set(&mut snap, "net.core.netdev_max_backlog", "5000");
        assert_eq!(run(&BACKLOG_RAISED_WITHOUT_DROPS, &snap).len(), 1);
        // Real drops: 200 in 188689009 packets ≈ 1.06 per million → raise, not remove.
        softnet_mut(&mut snap)[0].dropped = 200;
        assert!(run(&BACKLOG_RAISED_WITHOUT_DROPS, &snap).is_empty());
        let f = run(&SOFTNET_DROPS, &snap);
        assert_eq!(f[0].severity, Severity::Notice);
        assert!(f[0].recommendation.contains(&Change::Sysctl {
            key: "net.core.netdev_max_backlog".into(),
            value: "10000".into()
        }));
        // time_squeeze 452 > 200 drops: the budget is the knob too.
        assert!(f[0].recommendation.contains(&Change::Sysctl {
            key: "net.core.netdev_budget".into(),
            value: "600".into()
        }));
        // rk3399's 59 in 716 M is info.
        let f = run(&SOFTNET_DROPS, &snapshot_of("rk3399-raid5"));
        assert_eq!(f[0].severity, Severity::Info);
    }
}
