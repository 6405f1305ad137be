//! The `file_services` and `smart` sections on the board fixtures, and the
//! SMART captures in those fixtures, which must be exactly what
//! `Root::captured` writes.

use std::path::Path;

use nastune::root::Root;
use serde_json::Value;

use crate::util::*;

/// Captured smartctl values in the board fixtures: (box, capture name, raw
/// smartctl JSON under tests/fixtures/smartctl, or `None` for the binary path).
const SMART_CAPTURES: &[(&str, &str, Option<&str>)] = &[
    ("pogoplug-v4", "smartctl-binary", None),
    (
        "pogoplug-v4",
        "smartctl/sda",
        Some("ata-hdd-crc-errors.json"),
    ),
    ("rpi2-luks", "smartctl-binary", None),
    (
        "rpi2-luks",
        "smartctl/sda",
        Some("usb-bridge-unsupported.json"),
    ),
    ("rk3399-raid5", "smartctl-binary", None),
    ("rk3399-raid5", "smartctl/sda", Some("rk3399-sda.json")),
    ("rk3399-raid5", "smartctl/sdb", Some("rk3399-sdb.json")),
    ("rk3399-raid5", "smartctl/sdc", Some("rk3399-sdc.json")),
    ("rk3399-raid5", "smartctl/sdd", Some("rk3399-sdd.json")),
];

/// The bytes `probe --capture` writes for a captured value, produced by the
/// real capture path (Root::captured, then capture::write_capture).
fn captured_bytes(name: &str, value: Value) -> Vec<u8> {
    let root = Root::live().with_recorder();
    let back: Result<Value, String> = root.captured(name, || Ok(value));
    assert!(back.is_ok());
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("cap");
    nastune::root::capture::write_capture(Path::new("/"), root.take_recording(), &dest).unwrap();
    std::fs::read(dest.join(".nastune").join(format!("{name}.json"))).unwrap()
}

/// Checks the fixtures' SMART captures; UPDATE_GOLDEN=1 regenerates them.
#[test]
fn smart_fixture_captures_are_in_captured_format() {
    for (board, name, source) in SMART_CAPTURES {
        let value = match source {
            Some(file) => {
                let text = std::fs::read_to_string(fixtures().join("smartctl").join(file)).unwrap();
                serde_json::from_str(&text).unwrap()
            }
            None => Value::String("/usr/sbin/smartctl".into()),
        };
        let expected = captured_bytes(name, value);
        let path = fixtures()
            .join("boxes")
            .join(board)
            .join(".nastune")
            .join(format!("{name}.json"));
        if update_golden() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &expected).unwrap();
            continue;
        }
        let actual = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "'{}': {e}; run UPDATE_GOLDEN=1 cargo test smart_fixture",
                path.display()
            )
        });
        assert!(
            actual == expected,
            "'{}' is not what Root::captured writes; run UPDATE_GOLDEN=1 cargo test smart_fixture",
            path.display()
        );
    }
}

fn probe(board: &str) -> Value {
    let o = nastune()
        .args(["probe", "--json", "--no-store", "--root"])
        .arg(fixtures().join("boxes").join(board))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn device<'a>(snap: &'a Value, name: &str) -> &'a Value {
    snap["smart"]["data"]["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == name)
        .unwrap_or_else(|| panic!("no SMART device '{name}' in {}", snap["smart"]))
}

fn attribute(dev: &Value, id: u64) -> &Value {
    dev["data"]["ata_attributes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == id)
        .unwrap_or_else(|| panic!("no attribute {id} in {dev}"))
}

fn skipped(snap: &Value) -> Vec<String> {
    snap["smart"]["data"]["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn pogoplug_old_guide_samba_and_usb_disk_crc_errors() {
    let s = probe("pogoplug-v4");
    let samba = &s["file_services"]["data"]["samba"];
    let global: Vec<(&str, &str)> = samba["global"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["value"].as_str().unwrap()))
        .collect();
    assert!(global.contains(&(
        "socket options",
        "TCP_NODELAY SO_RCVBUF=8192 SO_SNDBUF=8192"
    )));
    assert!(global.contains(&("read raw", "yes")));
    let share = &samba["shares"][0];
    assert_eq!(share["name"], "srv");
    assert_eq!(share["path"], "/srv");
    let ro = share["params"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "read only")
        .unwrap();
    assert_eq!(ro["value"], "no");
    assert_eq!(ro["written_as"], "writeable");
    assert!(s["file_services"]["data"]["nfs"].is_null());

    let sda = device(&s, "sda");
    assert_eq!(sda["status"], "ok");
    assert_eq!(sda["data"]["device_type"], "sat");
    assert_eq!(attribute(sda, 199)["raw_value"], 12);
    assert_eq!(skipped(&s), vec!["mtdblock0"]);
}

#[test]
fn rpi2_include_exports_and_failing_usb_bridge() {
    let s = probe("rpi2-luks");
    let samba = &s["file_services"]["data"]["samba"];
    assert_eq!(
        samba["files_read"],
        serde_json::json!(["/etc/samba/smb.conf", "/etc/samba/shares.conf"])
    );
    assert_eq!(samba["includes"][0]["status"], "read");
    assert_eq!(samba["shares"][0]["path"], "/srv/nas/vault");
    let nfs = &s["file_services"]["data"]["nfs"];
    assert_eq!(nfs["exports"][0]["path"], "/srv/nas/media");
    assert_eq!(nfs["exports"][0]["clients"][0]["host"], "192.168.1.0/24");

    assert_eq!(s["smart"]["status"], "ok");
    let sda = device(&s, "sda");
    assert_eq!(sda["status"], "unsupported");
    assert!(
        sda["reason"]
            .as_str()
            .unwrap()
            .contains("Unknown USB bridge"),
        "{sda}"
    );
    let sk = skipped(&s);
    assert_eq!(sk, vec!["dm-0", "mmcblk0", "zram0"]);
    let text = nastune()
        .args(["probe", "--no-store", "--root"])
        .arg(fixtures().join("boxes/rpi2-luks"))
        .output()
        .unwrap();
    let text = stdout(&text);
    assert!(text.contains("SD/eMMC cards have no SMART"), "{text}");
    assert!(text.contains("export        /srv/nas/media"), "{text}");
}

#[test]
fn rk3399_four_disks_one_with_reallocated_sectors() {
    let s = probe("rk3399-raid5");
    let realloc: Vec<u64> = ["sda", "sdb", "sdc", "sdd"]
        .iter()
        .map(|d| attribute(device(&s, d), 5)["raw_value"].as_u64().unwrap())
        .collect();
    assert_eq!(realloc, vec![0, 8, 0, 0]);
    assert_eq!(
        skipped(&s),
        vec!["dm-0", "dm-1", "dm-2", "dm-3", "md0", "mmcblk1"]
    );
    let global = &s["file_services"]["data"]["samba"]["global"];
    assert!(
        global
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "smb2 leases" && p["value"] == "yes")
    );
}

/// On this machine: smartctl runs for real. The VM's virtio disk has no SMART,
/// which must come out as a per-device `unsupported` with smartctl's message.
#[test]
fn live_smart_reports_per_device_status() {
    let o = nastune()
        .args(["probe", "--json", "--no-store"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let s: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let smart = &s["smart"];
    let installed = ["/usr/sbin/smartctl", "/sbin/smartctl", "/usr/bin/smartctl"]
        .iter()
        .any(|p| Path::new(p).exists());
    if !installed {
        assert_eq!(smart["status"], "unsupported");
        assert!(
            smart["reason"]
                .as_str()
                .unwrap()
                .contains("apt install smartmontools")
        );
        skip("smartmontools is not installed: the live smartctl run is left out");
        return;
    }
    assert_eq!(smart["status"], "ok", "{smart}");
    for d in smart["data"]["devices"].as_array().unwrap() {
        let status = d["status"].as_str().unwrap();
        assert!(["ok", "unsupported", "failed"].contains(&status), "{d}");
        if status != "ok" {
            assert!(
                d["reason"]
                    .as_str()
                    .or(d["error"].as_str())
                    .is_some_and(|r| !r.is_empty())
            );
        }
    }
}

#[test]
fn probe_names_each_loop_device_once() {
    let (_t, dir) = crate::tune::copy_box("oldguide");
    for i in 0..12 {
        let d = dir.join(format!("sys/block/loop{i}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("size"), "0\n").unwrap();
        std::fs::write(d.join("dev"), format!("7:{i}\n")).unwrap();
    }
    let o = nastune()
        .args(["probe", "--no-store", "--root", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for i in 0..12 {
        let name = format!("loop{i}");
        let n = out
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| *w == name)
            .count();
        assert_eq!(n, 1, "{name} named {n} times:\n{out}");
    }
    // SMART still says why they were skipped, by count.
    assert!(out.contains("12 x loop device"), "{out}");
}
