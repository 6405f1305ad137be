//! The CPU-placement and interrupt change kinds: IRQ affinity and RPS/XPS
//! masks applied, verified and rolled back on a fixture tree (byte-identical
//! afterwards); for real in a network namespace, an RPS mask on a veth queue
//! and the clear "unsupported" of coalescing on veth; dm-crypt flags refused
//! where there is no device-mapper.

use std::path::Path;
use std::process::Command;

use crate::tune::{
    PrivateEtc, assert_same_tree, json_of, netns_setup, run_ok, tree_state, verify_state,
};
use crate::util::*;

/// A box with four CPUs, a NIC whose two MSI-X vectors are IRQs 29 and 30,
/// one rx and one tx queue, irqbalance running, and the udev and systemd directories.
fn irq_box(dir: &Path) {
    for (p, t) in [
        ("sys/devices/system/cpu/possible", "0-3\n"),
        ("proc/irq/29/smp_affinity_list", "0-3\n"),
        ("proc/irq/30/smp_affinity_list", "0-3\n"),
        ("proc/irq/16/smp_affinity_list", "0-3\n"),
        ("sys/class/net/eth0/device/msi_irqs/29", "msix\n"),
        ("sys/class/net/eth0/device/msi_irqs/30", "msix\n"),
        ("sys/class/net/eth0/queues/rx-0/rps_cpus", "0\n"),
        ("sys/class/net/eth0/queues/tx-0/xps_cpus", "0\n"),
        ("proc/812/comm", "irqbalance\n"),
        ("etc/udev/rules.d/README", "udev rules\n"),
        (
            "etc/systemd/system/multi-user.target.d/README",
            "drop-ins\n",
        ),
    ] {
        std::fs::create_dir_all(dir.join(p).parent().unwrap()).unwrap();
        std::fs::write(dir.join(p), t).unwrap();
    }
}

fn item<'a>(doc: &'a serde_json::Value, setting: &str) -> &'a serde_json::Value {
    doc["plan"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["setting"] == setting)
        .unwrap_or_else(|| panic!("no item '{setting}' in {doc}"))
}

#[test]
fn irq_affinity_and_rps_xps_apply_verify_rollback_byte_identical() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("box");
    irq_box(&dir);
    let before = tree_state(&dir);
    let root = dir.to_str().unwrap();
    let doc = json_of(&run_with_db(
        t.path(),
        &[
            "tune",
            "apply",
            "--root",
            root,
            "--yes",
            "--json",
            "--set",
            "irq:eth0=0,1",
            "--set",
            "irq:16=2",
            "--set",
            "rps:eth0:rx-0=0x3",
            "--set",
            "xps:eth0:tx-0=c",
            "--set",
            "rps:eth0:rx-0=f0",
        ],
    ));
    let irq = item(&doc, "irq:eth0");
    assert_eq!(irq["status"], "apply", "{irq}");
    assert_eq!(
        (irq["old"].as_str(), irq["new"].as_str()),
        (Some("29: 0-3, 30: 0-3"), Some("0-1"))
    );
    let warnings = irq["warnings"].to_string();
    assert!(warnings.contains("irqbalance runs"), "{warnings}");
    assert_eq!(item(&doc, "irq:16")["new"], "2");
    assert_eq!(item(&doc, "rps:eth0:rx-0")["new"], "3");
    assert_eq!(item(&doc, "xps:eth0:tx-0")["new"], "c");
    // The second rps item is refused: CPU 4 and up do not exist here.
    let refused = doc["plan"]["items"].as_array().unwrap()[4].clone();
    assert_eq!(refused["status"], "skip");
    assert_eq!(
        refused["reason"],
        "'f0' names CPU 7, but this box has CPUs 0-3 only"
    );
    let read = |p: &str| std::fs::read_to_string(dir.join(p)).unwrap();
    assert_eq!(read("proc/irq/29/smp_affinity_list"), "0-1\n");
    assert_eq!(read("proc/irq/30/smp_affinity_list"), "0-1\n");
    assert_eq!(read("proc/irq/16/smp_affinity_list"), "2\n");
    assert_eq!(read("sys/class/net/eth0/queues/rx-0/rps_cpus"), "3\n");
    assert_eq!(read("sys/class/net/eth0/queues/tx-0/xps_cpus"), "c\n");
    // Network changes wait for confirmation; then the udev rules persist the masks.
    assert!(!doc["applied"]["confirm_deadline_unix"].is_null(), "{doc}");
    run_ok(t.path(), &["tune", "confirm"]);
    let rules = read("etc/udev/rules.d/99-zz-nastune.rules");
    assert!(
        rules.contains("KERNEL==\"eth0\", ATTR{queues/rx-0/rps_cpus}=\"3\"")
            && rules.contains("ATTR{queues/tx-0/xps_cpus}=\"c\""),
        "{rules}"
    );
    // IRQ 16 is persisted at once (not a network item), eth0's IRQs at confirm.
    let unit = read("etc/systemd/system/nastune-irq-affinity.service");
    assert!(
        unit.contains("# irq:16\nExecStart=-/bin/sh -c 'echo 2 > /proc/irq/16/smp_affinity_list'"),
        "{unit}"
    );
    assert!(unit.contains("# irq:eth0\n"), "{unit}");
    assert!(
        read("etc/systemd/system/multi-user.target.d/nastune-irq-affinity.conf")
            .contains("Wants=nastune-irq-affinity.service")
    );
    let v = json_of(&run_with_db(
        t.path(),
        &["tune", "verify", "--root", root, "--json"],
    ));
    let checks = v["checks"].as_array().unwrap();
    let states: Vec<(&str, &str)> = checks
        .iter()
        .map(|c| (c["path"].as_str().unwrap(), c["state"].as_str().unwrap()))
        .collect();
    for path in [
        "/proc/irq/29/smp_affinity_list",
        "/proc/irq/30/smp_affinity_list",
        "/proc/irq/16/smp_affinity_list",
        "/sys/class/net/eth0/queues/rx-0/rps_cpus",
        "/sys/class/net/eth0/queues/tx-0/xps_cpus",
    ] {
        assert!(states.contains(&(path, "applied")), "{path}: {states:?}");
    }
    run_ok(t.path(), &["tune", "rollback"]);
    assert_same_tree(&before, &dir, "rollback of irq/rps/xps");
}

#[test]
fn dmcrypt_flags_are_refused_without_device_mapper() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("box");
    std::fs::create_dir_all(dir.join("etc")).unwrap();
    std::fs::write(dir.join("etc/crypttab"), "data UUID=1 none luks\n").unwrap();
    let before = tree_state(&dir);
    let o = run_with_db(
        t.path(),
        &[
            "tune",
            "apply",
            "--root",
            dir.to_str().unwrap(),
            "--yes",
            "--set",
            "dmcrypt:data:no_read_workqueue=on",
        ],
    );
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(
        all.contains("'/dev/mapper/control' is absent: this kernel has no device-mapper"),
        "{all}"
    );
    assert_ne!(o.status.code(), Some(0), "{all}");
    assert_same_tree(&before, &dir, "refused dm-crypt flag");
}

/// `ip -n NS …`.
fn ip_ns(ns: &str, args: &[&str]) {
    let o = Command::new("ip")
        .args(["-n", ns])
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "ip {args:?}: {}", stderr(&o));
}

fn ns_cat(ns: &str, path: &str) -> String {
    let o = Command::new("ip")
        .args(["netns", "exec", ns, "cat", path])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o).trim().to_string()
}

#[test]
fn rps_on_a_veth_queue_for_real_and_coalescing_unsupported() {
    let Some(ns) = netns_setup("kinds") else {
        return;
    };
    ip_ns(
        &ns.0,
        &[
            "link", "add", "kva0", "type", "veth", "peer", "name", "kvb0",
        ],
    );
    let rps = "/sys/class/net/kva0/queues/rx-0/rps_cpus";
    let original = ns_cat(&ns.0, rps);
    let etc = PrivateEtc::new();
    let prefix = ["ip", "netns", "exec", ns.0.as_str()];

    // veth has no interrupts to coalesce: the item says so and nothing is written.
    let o = etc.run(
        &prefix,
        &[
            "tune",
            "plan",
            "--json",
            "--set",
            "ethtool:kva0:rx-usecs=50",
        ],
    );
    // Every --set refused: exit 2, with the plan that says why.
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let plan: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let i = &plan["items"][0];
    assert_eq!(i["status"], "skip", "{plan}");
    assert_eq!(
        i["reason"],
        "the driver of 'kva0' does not support interrupt coalescing (EOPNOTSUPP)"
    );

    let new = if original.trim_start_matches('0').is_empty() {
        "1"
    } else {
        "0"
    };
    etc.run_ok(
        &prefix,
        &[
            "tune",
            "apply",
            "--yes",
            "--set",
            &format!("rps:kva0:rx-0={new}"),
        ],
    );
    assert_eq!(ns_cat(&ns.0, rps), new);
    assert_eq!(verify_state(&etc, &prefix, "rps:kva0:rx-0"), "applied");
    etc.run_ok(&prefix, &["tune", "rollback"]);
    assert_eq!(ns_cat(&ns.0, rps), original);
    assert!(!etc.rules_d().join("99-zz-nastune.rules").exists());
}

/// The new kinds are runtime values `tune try` can switch: an RPS mask on a
/// tree is tried with bench net to a `net serve` peer in a namespace, reached
/// through a veth named eth0 like the tree's NIC, and the tree is byte-identical once the
/// trial is over. A disk judge, which sends nothing over the network, is
/// refused first, the tree untouched.
#[test]
fn tune_try_switches_an_rps_mask_and_leaves_the_tree_as_it_was() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("box");
    irq_box(&dir);
    let before = tree_state(&dir);
    let data = t.path().join("data.bin");
    std::fs::write(&data, vec![0x5a_u8; 4 << 20]).unwrap();
    let try_with = |judge: &str| {
        run_with_db(
            t.path(),
            &[
                "tune",
                "try",
                "--root",
                dir.to_str().unwrap(),
                "--yes",
                "--json",
                "--set",
                "rps:eth0:rx-0=3",
                "--bench",
                judge,
                "--runs",
                "2",
                "--runtime",
                "300ms",
            ],
        )
    };
    let refused = try_with(&format!("buffered-seq-read:{}", data.display()));
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("sends nothing over the network"),
        "{}",
        stderr(&refused)
    );
    assert_same_tree(&before, &dir, "after a refused trial");

    // A real peer reached through a veth from a namespace of its own; the
    // tree's routing table names the route's interface eth0.
    let _serial = crate::net::heavy();
    let Some(ns) = crate::net_netns::shaped_pair_or_skip("rps", "1gbit", "1mb") else {
        return;
    };
    // The client's end of the veth is its eth0, the tree's NIC.
    let vc = format!("vcrps{}", std::process::id() % 100_000);
    for args in [
        vec!["link", "set", vc.as_str(), "down"],
        vec!["link", "set", vc.as_str(), "name", "eth0"],
        vec!["link", "set", "eth0", "up"],
    ] {
        let st = Command::new("ip")
            .args(["-n", ns.client.as_str()])
            .args(&args)
            .status()
            .unwrap();
        assert!(st.success(), "ip {args:?}");
    }
    let _server = crate::net_netns::serve(&ns, 50);
    let o = Command::new("ip")
        .args(["netns", "exec", &ns.client, env!("CARGO_BIN_EXE_nastune")])
        .args([
            "tune",
            "try",
            "--root",
            dir.to_str().unwrap(),
            "--yes",
            "--json",
            "--set",
            "rps:eth0:rx-0=3",
            "--bench",
            "net:10.77.0.1",
            "--runs",
            "2",
            "--runtime",
            "300ms",
            "--db",
        ])
        .arg(t.path().join("nastune.db"))
        .output()
        .unwrap();
    let doc = json_of(&o);
    assert_eq!(doc["change"]["setting"], "rps:eth0:rx-0", "{doc}");
    assert_eq!(doc["change"]["new"], "3", "{doc}");
    // A no-op for this workload is almost always reverted; if chance kept it,
    // rollback undoes it like any session.
    if doc["kept"] == true {
        assert_eq!(doc["final_value"], "3", "{doc}");
        run_ok(t.path(), &["tune", "rollback"]);
    } else {
        assert_eq!(doc["final_value"], "0", "{doc}");
    }
    assert_same_tree(&before, &dir, "after trying an rps mask");
}
