//! What an expert lists for each fixture box from the network, vm and sysctl
//! rules, with the reason for each; the oldguide box must get every outdated
//! setting of these areas flagged with its modern replacement, and a fresh
//! Debian install no warning.

use super::{Change, Context, Finding, Severity, evaluate, net, sysctl_conf, vm};
use crate::advise::test_support::snapshot_of;

fn ours(boxname: &str) -> Vec<Finding> {
    let snap = snapshot_of(boxname);
    let ids: Vec<&str> = net::RULES
        .iter()
        .chain(vm::RULES)
        .chain(sysctl_conf::RULES)
        .map(|r| r.info.id)
        .collect();
    evaluate(&Context::unmeasured(&snap))
        .into_iter()
        .filter(|f| ids.contains(&f.rule_id.as_str()))
        .collect()
}

fn ids(findings: &[Finding]) -> Vec<&str> {
    let mut v: Vec<&str> = findings.iter().map(|f| f.rule_id.as_str()).collect();
    v.sort();
    v
}

fn sorted(mut v: Vec<&'static str>) -> Vec<&'static str> {
    v.sort();
    v
}

#[test]
fn pogoplug_expert_list() {
    let f = ours("pogoplug-v4");
    assert_eq!(
        ids(&f),
        sorted(vec![
            // rmem_max raised in 60-nas.conf: explain it does not touch autotuning.
            "core-buffer-max-raised",
            // 32-bit ARMv5: byte counters wrap every 34 s at gigabit.
            "net-counters-32bit",
            // Debian 12 leaves pfifo_fast; fq_codel is the modern default.
            "qdisc-pfifo-fast",
            // 112 rx_dropped with no missed frames and no backlog drops.
            "rx-dropped-unknown-protocol",
        ]),
        "swappiness 10 with swap on a USB partition is right; 20% of 69 MiB dirty flushes in \
         0.5 s; TSO is on (the mv643xx advice is not applied here)"
    );
}

#[test]
fn rpi2_expert_list() {
    let f = ours("rpi2-luks");
    assert_eq!(
        ids(&f),
        sorted(vec![
            // 148 MiB dirty limit = 5.2 s at 30 MB/s to the USB disk behind LUKS.
            "dirty-limit-for-usb-disk",
            // 32-bit kernel: counters wrap every 344 s at 100 Mbit/s.
            "net-counters-32bit",
            "qdisc-pfifo-fast",
            // 2871 rx_dropped, nothing missed: unwanted frames.
            "rx-dropped-unknown-protocol",
            // zram only, swappiness 60: raise to 100.
            "swappiness-for-swap-kind",
        ])
    );
}

#[test]
fn rk3399_expert_list() {
    let f = ours("rk3399-raid5");
    assert_eq!(
        ids(&f),
        // mq with pfifo_fast children; 59 backlog drops in 716 M packets are info only.
        sorted(vec!["qdisc-pfifo-fast", "softnet-backlog-drops"])
    );
    let softnet = f
        .iter()
        .find(|f| f.rule_id == "softnet-backlog-drops")
        .expect("softnet finding");
    assert_eq!(softnet.severity, Severity::Info);
}

#[test]
fn buildhost_gets_no_warnings() {
    let f = ours("buildhost");
    let loud: Vec<&Finding> = f
        .iter()
        .filter(|f| f.severity >= Severity::Warning)
        .collect();
    assert!(loud.is_empty(), "{loud:#?}");
    // pfifo_fast on virtio_net is the one thing worth a notice on stock Debian 12.
    assert_eq!(ids(&f), vec!["qdisc-pfifo-fast"]);
}

/// Each outdated setting in tests/fixtures/boxes/oldguide, the rule that must
/// flag it, and the modern replacement the finding must carry.
#[test]
fn oldguide_gets_every_outdated_setting_flagged_with_its_replacement() {
    let f = ours("oldguide");
    let find = |id: &str, title_part: &str| -> &Finding {
        f.iter()
            .find(|x| x.rule_id == id && x.title.contains(title_part))
            .unwrap_or_else(|| panic!("no {id} finding about '{title_part}' in {:#?}", ids(&f)))
    };
    let sysctl = |key: &str, value: &str| Change::Sysctl {
        key: key.into(),
        value: value.into(),
    };
    let cases: Vec<(&Finding, Severity, Change)> = vec![
        (
            find("tcp-timestamps-off", "tcp_timestamps"),
            Severity::Warning,
            sysctl("net.ipv4.tcp_timestamps", "1"),
        ),
        (
            find("netdev-backlog-raised", "5000"),
            Severity::Notice,
            sysctl("net.core.netdev_max_backlog", "1000"),
        ),
        (
            find("tcp-buffer-max-lowered", "tcp_rmem"),
            Severity::Warning,
            sysctl("net.ipv4.tcp_rmem", "4096 87380 6291456"),
        ),
        (
            find("tcp-buffer-max-lowered", "tcp_wmem"),
            Severity::Warning,
            sysctl("net.ipv4.tcp_wmem", "4096 65536 4194304"),
        ),
        (
            find("core-buffer-max-raised", "rmem_max"),
            Severity::Info,
            Change::AdviceOnly {
                action: "leave it unless an application sets SO_RCVBUF explicitly".into(),
            },
        ),
        (
            find("swappiness-for-swap-kind", "zram"),
            Severity::Notice,
            sysctl("vm.swappiness", "100"),
        ),
        (
            find("vfs-cache-pressure", "1000"),
            Severity::Warning,
            sysctl("vm.vfs_cache_pressure", "100"),
        ),
        (
            find("sysctl-removed-key", "fs.xfs.xfsbufd_centisecs"),
            Severity::Notice,
            Change::AdviceOnly {
                action: "delete line 16 of /etc/sysctl.d/99-nas-tuning.conf".into(),
            },
        ),
        (
            find("sysctl-removed-key", "fs.xfs.age_buffer_centisecs"),
            Severity::Notice,
            Change::AdviceOnly {
                action: "delete line 17 of /etc/sysctl.d/99-nas-tuning.conf".into(),
            },
        ),
        (
            find("sysctl-removed-key", "vm.nr_pdflush_threads"),
            Severity::Notice,
            Change::AdviceOnly {
                action: "delete line 19 of /etc/sysctl.d/99-nas-tuning.conf".into(),
            },
        ),
        (
            find("sysctl-overridden", "netdev_max_backlog"),
            Severity::Notice,
            Change::AdviceOnly {
                action: "keep net.core.netdev_max_backlog in one file only (now \
                         /etc/sysctl.d/99-nas-tuning.conf:5 wins)"
                    .into(),
            },
        ),
        (
            find("txqueuelen-large", "eth0"),
            Severity::Warning,
            Change::SysfsAttribute {
                path: "class/net/eth0/tx_queue_len".into(),
                value: "1000".into(),
            },
        ),
        (
            find("nic-offloads-off", "TSO"),
            Severity::Notice,
            Change::Ethtool {
                interface: "eth0".into(),
                setting: "tx-tcp-segmentation".into(),
                value: "on".into(),
            },
        ),
    ];
    for (finding, severity, change) in cases {
        assert_eq!(finding.severity, severity, "{}", finding.title);
        assert!(
            finding.recommendation.contains(&change),
            "{}: {:?} lacks {change:?}",
            finding.title,
            finding.recommendation
        );
    }
    // The pdflush finding names its modern replacement.
    assert!(
        find("sysctl-removed-key", "nr_pdflush")
            .rationale
            .contains("vm.dirty_background_bytes")
    );
}
