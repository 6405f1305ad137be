//! The USB storage and link doctors end to end on the fixture boxes: probe shows
//! what each link negotiated against what it could, advise names the fault, and
//! check takes a USB bus as the storage ceiling.

use serde_json::Value;

use crate::util::*;

fn json(args: &[&str], boxname: &str) -> Value {
    let o = nastune()
        .args(args)
        .args(["--json", "--root"])
        .arg(fixtures().join("boxes").join(boxname))
        .output()
        .unwrap();
    assert!(
        o.status.success() || o.status.code() == Some(1),
        "{}",
        stderr(&o)
    );
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn usb_disk<'a>(v: &'a Value, disk: &str) -> &'a Value {
    v["usb"]["data"]["disks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["disk"] == disk)
        .unwrap_or_else(|| panic!("no USB disk {disk}: {}", v["usb"]))
}

fn rule_ids(v: &Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule_id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn check_on_a_usb3_disk_at_480_names_the_bus_as_the_storage_ceiling() {
    let o = nastune()
        .args(["--no-store", "check", "--root"])
        .arg(fixtures().join("boxes/rpi4-usb"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    // Nothing shares the box's /srv: it is a local disk, not a share a client
    // reads from, and its ceiling is said once on the line.
    assert!(
        text.contains(
            "local disk /srv (read)       limited by storage: USB bus of sda: 480 Mbit/s / 8 x \
             0.67 (USB 2 bulk transfers: microframe and protocol overhead) = 40.2 MB/s\n"
        ),
        "{text}"
    );
    assert!(!text.contains("read from /"), "{text}");
    assert_eq!(
        text.lines().next(),
        Some("Verdict: local disk /srv (read) is limited by storage (40.2 MB/s); 2 warnings"),
        "{text}"
    );
    assert!(
        text.contains("not measured: disk: not measured in a tree"),
        "{text}"
    );
    let v = json(&["--no-store", "check"], "rpi4-usb");
    for p in v["paths"].as_array().unwrap() {
        let stage = &p["stages"][p["limiting_stage"].as_u64().unwrap() as usize];
        assert_eq!(stage["name"], "storage");
        assert!((stage["ceiling_bytes_per_sec"].as_f64().unwrap() - 40.2e6).abs() < 1.0);
    }
    assert!(rule_ids(&v).contains(&"usb3-disk-at-high-speed".to_string()));
}

/// The Pogoplug's one 800 MHz ARMv5 core: its SMB paths are no longer
/// "limited by network at 117.7 MB/s" with the CPU unknown, but likely
/// limited by the CPU's estimate (its field report: 27.3 MB/s writes, 44.0
/// MB/s reads, CPU-bound), with the measurement that settles it.
#[test]
fn check_on_the_pogoplug_names_the_cpu_estimate_not_the_network() {
    let o = nastune()
        .args(["--no-store", "check", "--root"])
        .arg(fixtures().join("boxes/pogoplug-v4"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(!text.contains("limited by network"), "{text}");
    assert_eq!(
        text.lines().next(),
        Some(
            "Verdict: read from /srv is likely limited by the CPU (36.4-55.2 MB/s est.); 4 warnings"
        ),
        "{text}"
    );
    assert!(
        text.contains("write to /srv                likely limited by the CPU\n"),
        "{text}"
    );
    // Each figure once in the path's block: the estimate on the cpu line,
    // the wire's on the network line.
    let block = text.split("Would decide the rest").next().unwrap();
    assert_eq!(block.matches("23.5-33.3 MB/s").count(), 1, "{text}");
    assert_eq!(block.matches("117.7 MB/s").count(), 2, "{text}");
    assert!(
        text.contains("the shared CPU of the SMB path: nastune check --smb //localhost/srv"),
        "{text}"
    );
    let v = json(&["--no-store", "check"], "pogoplug-v4");
    for p in v["paths"].as_array().unwrap() {
        // The lowest known ceiling is still the wire's; the verdict says more.
        let stage = &p["stages"][p["limiting_stage"].as_u64().unwrap() as usize];
        assert_eq!(stage["name"], "network");
        assert_eq!(p["verdict"]["kind"], "likely_cpu", "{p}");
        let e = &p["cpu_estimate"];
        let (lo, hi) = (
            e["low_bytes_per_sec"].as_f64().unwrap(),
            e["high_bytes_per_sec"].as_f64().unwrap(),
        );
        let published = if p["name"] == "write to /srv" {
            27.3e6
        } else {
            44.0e6
        };
        assert!(lo < published && published < hi, "{e}");
        assert!(hi < 117.7e6);
        assert!(
            e["settled_by"]
                .as_str()
                .unwrap()
                .starts_with("nastune check --smb")
        );
        assert!(
            e["calibrated_on"][0]["board"]
                .as_str()
                .unwrap()
                .starts_with("Pogoplug v4")
        );
    }
}

/// Every fixture box's paths: a hedged verdict only where an SMB share
/// meets an unmeasured CPU, and the CPU estimate only there.
#[test]
fn check_on_every_fixture_box_says_what_its_figures_allow() {
    let expect: &[(&str, &str)] = &[
        ("pogoplug-v4", "likely_cpu"),
        ("rpi2-luks", "stage"),
        ("rpi4-usb", "stage"),
        ("rk3399-raid5", "stage_or_cpu"),
        ("oldguide", "stage_or_cpu"),
    ];
    for (boxname, kind) in expect {
        let v = json(&["--no-store", "check"], boxname);
        let paths = v["paths"].as_array().unwrap();
        assert!(!paths.is_empty(), "{boxname}");
        for p in paths {
            assert_eq!(p["verdict"]["kind"], *kind, "{boxname}: {p}");
            assert_eq!(
                p["cpu_estimate"].is_object(),
                *boxname != "rpi4-usb",
                "{boxname}: {p}"
            );
        }
    }
    // The lab's emulated CPU has no link and no share: nothing measured.
    let v = json(&["--no-store", "check"], "lab-luks-usb");
    for p in v["paths"].as_array().unwrap() {
        assert_eq!(p["verdict"]["kind"], "unknown", "{p}");
        assert!(p["cpu_estimate"].is_null());
    }
}

#[test]
fn check_root_measures_nothing_and_refuses_a_peer() {
    let o = nastune()
        .args(["--no-store", "check", "--peer", "nas", "--root"])
        .arg(fixtures().join("boxes/rpi4-usb"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--peer"), "{}", stderr(&o));
}

#[test]
fn probe_shows_uas_quirked_and_fallen_back_usb_disks() {
    let v = json(&["probe", "--no-store"], "rpi4-usb");
    let sda = usb_disk(&v, "sda");
    assert_eq!(sda["driver"], "uas");
    assert_eq!(sda["bridge"], "04e8:61f5");
    assert_eq!(sda["negotiated_mbit_per_sec"], 480.0);
    assert_eq!(sda["device_capable_mbit_per_sec"], 5000.0);
    assert_eq!(sda["controller_capable_mbit_per_sec"], 5000.0);
    let sdb = usb_disk(&v, "sdb");
    assert_eq!(sdb["driver"], "usb-storage");
    assert_eq!(sdb["quirks"][0]["name"], "IGNORE_UAS");
    assert!(
        sdb["known_bridge"]["sources"][0]
            .as_str()
            .unwrap()
            .starts_with("https://github.com/")
    );
    let eth1 = &v["links"]["data"]["nics"][0];
    assert_eq!(eth1["interface"], "eth1");
    assert_eq!(eth1["downshifted"], true);
    assert_eq!(eth1["best_common_mode"], "2500baseT/Full");
    assert_eq!(eth1["ethtool"]["data"]["eee"]["data"]["active"], true);

    let pogo = json(&["probe", "--no-store"], "pogoplug-v4");
    let sda = usb_disk(&pogo, "sda");
    assert_eq!(sda["driver"], "uas");
    assert_eq!(sda["negotiated_mbit_per_sec"], 5000.0);
    let rpi2 = json(&["probe", "--no-store"], "rpi2-luks");
    assert_eq!(
        usb_disk(&rpi2, "sda")["shares_link_with"],
        serde_json::json!(["eth0 (smsc95xx)"])
    );
    let rk = json(&["probe", "--no-store"], "rk3399-raid5");
    let pcie = &rk["links"]["data"]["pcie"][0];
    assert_eq!(pcie["kind"], "sata");
    assert_eq!(pcie["current_gt_per_sec"], 2.5);
    assert_eq!(pcie["downgraded"], true);

    let o = nastune()
        .args(["probe", "--no-store", "--root"])
        .arg(fixtures().join("boxes/rpi4-usb"))
        .output()
        .unwrap();
    let text = stdout(&o);
    assert!(text.contains("quirks: u IGNORE_UAS"), "{text}");
    assert!(text.contains("downshifted — check the cable"), "{text}");
}

#[test]
fn advise_names_each_usb_and_link_fault() {
    let ids = rule_ids(&json(&["advise", "--no-store"], "rpi4-usb"));
    for id in [
        "usb3-disk-at-high-speed",
        "usb-uas-disabled-by-quirk",
        "nic-link-downshifted",
        "nic-eee-active",
    ] {
        assert!(ids.contains(&id.to_string()), "{id} not in {ids:?}");
    }
    let ids = rule_ids(&json(&["advise", "--no-store"], "rpi2-luks"));
    assert!(ids.contains(&"usb-disk-shares-link".to_string()), "{ids:?}");
    assert!(
        ids.contains(&"usb3-disk-at-high-speed".to_string()),
        "{ids:?}"
    );
    let ids = rule_ids(&json(&["advise", "--no-store"], "rk3399-raid5"));
    assert!(ids.contains(&"pcie-link-downgraded".to_string()), "{ids:?}");
    // A UAS disk at 5000 on a 5000 port is as it should be.
    let ids = rule_ids(&json(&["advise", "--no-store"], "pogoplug-v4"));
    assert!(!ids.iter().any(|i| i.starts_with("usb")), "{ids:?}");
}
