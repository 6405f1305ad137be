//! What an expert lists for the storage, Samba, SMART and crypto areas on each
//! fixture box, with the reason; and the old-guide box flagged item by item.

use super::test_support::{run_rule, snapshot_of};
use super::{Change, Finding, Rule, Severity};

fn my_rules() -> Vec<&'static Rule> {
    [
        super::storage::RULES,
        super::geometry::RULES,
        super::samba::RULES,
        super::smart::RULES,
        super::crypto::RULES,
    ]
    .concat()
}

fn findings(boxname: &str) -> Vec<Finding> {
    let snap = snapshot_of(boxname);
    my_rules()
        .into_iter()
        .flat_map(|r| run_rule(r, &snap))
        .collect()
}

fn ids(f: &[Finding]) -> Vec<&str> {
    let mut v: Vec<_> = f.iter().map(|f| f.rule_id.as_str()).collect();
    v.sort();
    v
}

fn sorted(mut v: Vec<&str>) -> Vec<&str> {
    v.sort();
    v
}

#[test]
fn pogoplug_expert_list() {
    let expected = sorted(vec![
        // SMART 199 = 12 on the USB disk: the bridge/cable, not the platters.
        "smart-crc-errors",
        // SMART answers WDC WD20EFRX 2.0 TB for the Seagate Expansion Desk 3.0 TB.
        "smart-identity-mismatch",
        // SO_RCVBUF/SO_SNDBUF=8192 pins a window far below a LAN's 125 KB BDP.
        "smb-socket-buffer-sizes",
        // read raw, write raw, max xmit: SMB1-only folklore, three lines to delete.
        "smb-obsolete-parameter",
        "smb-obsolete-parameter",
        "smb-obsolete-parameter",
        // 120 MiB RAM with the default week-long deadtime.
        "smb-deadtime-low-ram",
        // use sendfile = yes: keep only after an A/B test.
        "smb-use-sendfile",
    ]);
    assert_eq!(ids(&findings("pogoplug-v4")), expected);
}

#[test]
fn rpi2_expert_list() {
    // The LUKS volume on the 4K-sector USB disk encrypts 512-byte sectors; the
    // missing AES instructions are cpu.rs's cpu-without-aes.
    assert_eq!(ids(&findings("rpi2-luks")), ["crypt-sector-512-on-4k"]);
}

#[test]
fn rk3399_expert_list() {
    // sdb has 8 reallocated sectors; geometry (128/384 blocks), stripe cache
    // (256), schedulers, Samba (SMB2_10+, deadtime 15, aio 1) are all right.
    // SMART's serials (ST4000VN008, ZDH…) are not the sysfs disks' (WD40EFZX,
    // WD-WX32…): each of the four is flagged.
    assert_eq!(
        ids(&findings("rk3399-raid5")),
        [
            "smart-identity-mismatch",
            "smart-identity-mismatch",
            "smart-identity-mismatch",
            "smart-identity-mismatch",
            "smart-sector-problems"
        ]
    );
}

#[test]
fn buildhost_gets_no_warnings() {
    let f = findings("buildhost");
    assert!(
        f.iter().all(|f| f.severity < Severity::Warning),
        "{:?}",
        ids(&f)
    );
    assert!(
        f.is_empty(),
        "a fresh Debian has nothing of ours to flag: {:?}",
        ids(&f)
    );
}

/// Each old-guide setting (what the guide wrote) → the finding and its modern fix.
#[test]
fn oldguide_each_item_flagged_with_modern_replacement() {
    let f = findings("oldguide");
    let find = |id: &str, needle: &str| -> &Finding {
        f.iter()
            .find(|x| {
                x.rule_id == id
                    && (x.title.contains(needle) || x.settings.iter().any(|s| s.contains(needle)))
            })
            .unwrap_or_else(|| panic!("no {id} about '{needle}' in {:?}", ids(&f)))
    };
    // udev: noop and cfq are rejected by the kernel; deadline is an alias.
    assert!(
        find("scheduler-legacy-name", "'noop'")
            .rationale
            .contains("'none'")
    );
    assert!(
        find("scheduler-legacy-name", "'cfq'")
            .rationale
            .contains("'bfq'")
    );
    assert_eq!(
        find("scheduler-legacy-name", "'deadline' on sd").severity,
        Severity::Info
    );
    assert!(
        find("scheduler-on-md-dm", "md[0-9]*")
            .rationale
            .contains("member disks")
    );
    // rc.local: hdparm -M 254, hdparm -a 1024, blockdev --setra, stripe cache 8192.
    assert!(matches!(
        find("hdparm-aam-obsolete", "-M 254").recommendation[0],
        Change::AdviceOnly { .. }
    ));
    assert!(matches!(
        find("readahead-in-rc-local", "sda").recommendation[0],
        Change::UdevRule { .. }
    ));
    assert!(
        find("readahead-oversized", "md0")
            .rationale
            .contains("110 MB/s")
    );
    let sc = find("md-stripe-cache-ram", "md0");
    assert_eq!(sc.severity, Severity::Warning);
    assert!(sc.rationale.contains("= 128 MiB"));
    // fstab: nobh removed, nodiratime redundant.
    assert!(
        matches!(&find("fstab-removed-option", "nobh").recommendation[0],
        Change::MountOption { remove, .. } if remove == &["nobh"])
    );
    assert!(
        matches!(&find("fstab-nodiratime-redundant", "/srv").recommendation[0],
        Change::MountOption { remove, .. } if remove == &["nodiratime"])
    );
    // smb.conf: every parameter of the 2011 guide.
    assert_eq!(
        find("smb1-enabled", "server min protocol").severity,
        Severity::Critical
    );
    for p in ["read raw", "write raw", "max xmit"] {
        find("smb-obsolete-parameter", p);
    }
    find("smb-socket-buffer-sizes", "socket options");
    find("smb-aio-size-threshold", "aio read size");
    find("smb-aio-size-threshold", "aio write size");
    find("smb-strict-locking-no", "strict locking");
    find("smb-min-receivefile-size", "min receivefile size");
    find("smb-use-sendfile", "use sendfile");
    find("smb-max-connections", "max connections");
    for x in &f {
        assert!(
            !x.recommendation.is_empty(),
            "{} has no replacement",
            x.rule_id
        );
    }
}
