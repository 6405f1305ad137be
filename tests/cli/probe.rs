use std::path::Path;
use std::process::Command;

use crate::util::*;

/// The board boxes and their golden `probe --json` output.
const BOXES: &[&str] = &["pogoplug-v4", "rpi2-luks", "rk3399-raid5", "buildhost"];

/// Removes the values that change from run to run.
fn normalized(json: &str) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(json).expect("probe --json is JSON");
    let obj = v.as_object_mut().expect("top-level object");
    for key in ["timestamp", "timestamp_unix", "tool_version"] {
        obj.insert(key.into(), serde_json::Value::Null);
    }
    v
}

fn probe_json(root: &Path) -> String {
    let o = nastune()
        .args(["probe", "--json", "--no-store", "--root"])
        .arg(root)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}: {}", root.display(), stderr(&o));
    stdout(&o)
}

/// Trees captured inside the VM lab (lab/run capture-fixtures; lab-armhf-*: lab/run
/// --arch armhf capture-fixtures, Debian's armmp kernel on a Cortex-A7).
const LAB_BOXES: &[&str] = &["lab-raid5-crypt", "lab-luks-usb", "lab-armhf-raid5-crypt"];

/// What Debian's 32-bit ARM kernel showed in the armhf lab guest: the core is named
/// from its part number (the kernel's model name says only "ARMv7 Processor rev 5
/// (v7l)"), the NEON AES drivers serve xts(aes), the md and dm-crypt layers of both
/// chains are seen, and interface counters are read as 32-bit ones.
#[test]
fn armhf_lab_box_reads_as_the_arm_kernel_showed_it() {
    let v = normalized(&probe_json(
        &fixtures().join("boxes").join("lab-armhf-raid5-crypt"),
    ));
    assert_eq!(v["host"]["data"]["architecture"], "armv7l");
    let cpu = &v["cpu"]["data"];
    assert_eq!(cpu["model"], "Cortex-A7", "{cpu}");
    assert_eq!(cpu["family"], "arm");
    assert_eq!(cpu["arm_architecture"], "7");
    assert_eq!(cpu["has_aes"], false);
    let algorithms = v["kernel_crypto"]["data"]["algorithms"].as_array().unwrap();
    let xts = algorithms
        .iter()
        .find(|a| a["name"] == "xts(aes)")
        .expect("xts(aes) in /proc/crypto");
    assert_eq!(xts["selected_driver"], "xts-aes-neonbs", "{xts}");
    let devices = v["storage"]["data"]["devices"].as_array().unwrap();
    let device = |name: &str| {
        devices
            .iter()
            .find(|d| d["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {devices:?}"))
    };
    // md0: RAID5 over four dm-crypt members; dm-4: dm-crypt over md1, a RAID5 of disks.
    assert_eq!(
        device("md0")["slaves"],
        serde_json::json!(["dm-0", "dm-1", "dm-2", "dm-3"])
    );
    assert_eq!(device("dm-0")["holders"], serde_json::json!(["md0"]));
    assert_eq!(device("dm-4")["slaves"], serde_json::json!(["md1"]));
    assert_eq!(device("md1")["transport"], "md");
    let lo = &v["network"]["data"]["interfaces"][0];
    assert_eq!(lo["counter_bits"], 32, "{lo}");
}

#[test]
fn fixture_boxes_match_their_golden_output() {
    for name in BOXES.iter().chain(LAB_BOXES) {
        let root = fixtures().join("boxes").join(name);
        let actual = normalized(&probe_json(&root));
        let mut text = serde_json::to_string_pretty(&actual).unwrap();
        text.push('\n');
        assert_golden(
            &fixtures().join("golden").join(format!("{name}.probe.json")),
            &text,
        );
    }
}

#[test]
fn fixture_boxes_probe_every_section_ok() {
    for name in BOXES {
        let v = normalized(&probe_json(&fixtures().join("boxes").join(name)));
        for (key, section) in v.as_object().unwrap() {
            if let Some(status) = section.get("status") {
                assert_eq!(status, "ok", "{name}: section '{key}' is {section}");
            }
        }
    }
}

#[test]
fn capture_of_this_machine_reads_back_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    let o = nastune()
        .args(["probe", "--json", "--no-store", "--capture"])
        .arg(&cap)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("captured"), "{}", stderr(&o));
    let mut live = normalized(&stdout(&o));
    let mut back = normalized(&probe_json(&cap));
    assert_eq!(live["source"], "live");
    assert_eq!(back["source"], "tree");
    live["source"] = serde_json::Value::Null;
    back["source"] = serde_json::Value::Null;
    assert_eq!(live, back, "capture did not read back to the same snapshot");

    // A second capture into the same place must not overwrite anything.
    let o = nastune()
        .args(["probe", "--no-store", "--capture"])
        .arg(&cap)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not empty"), "{}", stderr(&o));
}

#[test]
fn an_empty_tree_reports_every_section_instead_of_failing() {
    let dir = tempfile::tempdir().unwrap();
    let o = nastune()
        .args(["probe", "--no-store", "--root"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("Not probed"), "{text}");
    assert!(text.contains("proc/cpuinfo"), "{text}");
}

#[test]
fn missing_root_is_a_clear_error() {
    let o = nastune()
        .args(["probe", "--no-store", "--root", "/nonexistent/tree"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("'/nonexistent/tree'"), "{}", stderr(&o));
}

#[test]
fn unknown_flag_is_a_usage_error() {
    let o = nastune().args(["probe", "--frobnicate"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--frobnicate"));
}

type Mutation = dyn Fn(&[u8]) -> Vec<u8> + Sync;

/// Every file of every fixture box, replaced in turn by hostile variants: the
/// probe must finish (no panic) and report a problem rather than invent data.
#[test]
fn malformed_files_never_panic() {
    let variants: [&Mutation; 5] = [
        &|_| Vec::new(),
        &|b| b[..b.len() / 2].to_vec(),
        &|b| {
            b.iter()
                .map(|c| if c.is_ascii_digit() { b'x' } else { *c })
                .collect()
        },
        &|b| {
            b.iter()
                .map(|c| if c.is_ascii_digit() { b'9' } else { *c })
                .chain(b"99999999999999999999999".iter().copied())
                .collect()
        },
        &|b| b.iter().rev().copied().collect(),
    ];
    // One thread per box: each mutates its own copy of the tree.
    std::thread::scope(|scope| {
        for name in BOXES {
            let variants = &variants;
            scope.spawn(move || mutate_box(name, variants));
        }
    });
}

fn mutate_box(name: &str, variants: &[&Mutation]) {
    let src = fixtures().join("boxes").join(name);
    let files = list_files(&src);
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("t");
    copy_tree(&src, &tree);
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let target = tree.join(rel);
        let original = std::fs::read(&target).unwrap();
        for v in variants {
            std::fs::write(&target, v(&original)).unwrap();
            if let Ok(root) = nastune::root::Root::tree(&tree) {
                let snap = nastune::probe::probe(&root);
                let _ = nastune::report::probe_text::render(&snap);
                serde_json::to_string(&snap).unwrap();
            }
        }
        std::fs::write(&target, &original).unwrap();
    }
}

fn list_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

fn copy_tree(src: &Path, dst: &Path) {
    let st = std::process::Command::new("cp")
        .arg("-a")
        .arg(src)
        .arg(dst)
        .status()
        .unwrap();
    assert!(st.success());
}

/// One malformed counter (`rx_errors` = `-1`) is reported as a problem of that
/// counter; the interface's other counters and the network section stay.
#[test]
fn a_malformed_nic_counter_costs_only_that_counter() {
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("t");
    copy_tree(&fixtures().join("boxes").join("pogoplug-v4"), &tree);
    let stats = tree.join("sys/class/net/eth0/statistics");
    std::fs::write(stats.join("rx_errors"), "-1\n").unwrap();
    let rx_bytes: u64 = std::fs::read_to_string(stats.join("rx_bytes"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let v = normalized(&probe_json(&tree));
    assert_eq!(v["network"]["status"], "ok", "{}", v["network"]);
    let eth0 = &v["network"]["data"]["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "eth0")
        .unwrap()["counters"];
    assert_eq!(eth0["rx_errors"], serde_json::Value::Null);
    assert_eq!(eth0["rx_bytes"], rx_bytes);
    assert_eq!(eth0["source"], "sysfs");
    let problems = eth0["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    let p = problems[0].as_str().unwrap();
    assert!(
        p.contains("statistics/rx_errors") && p.contains("'-1'"),
        "{p}"
    );
    let o = nastune()
        .args(["probe", "--no-store", "--root"])
        .arg(&tree)
        .output()
        .unwrap();
    let text = stdout(&o);
    assert!(text.contains("counter problem: "), "{text}");
    assert!(text.contains("rx 3.6"), "{text}");
}

/// What a fixture box's own files say, read by the test itself, against what probe
/// reports: the golden files are rewritten from probe's output (UPDATE_GOLDEN=1), so
/// they cannot catch a probe that misreads a file.
struct Facts<'a> {
    root: &'a Path,
    checked: usize,
}

impl Facts<'_> {
    /// The trimmed text of a file in the tree, when the box has it.
    fn file(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.root.join(rel))
            .ok()
            .map(|s| s.trim().to_string())
    }

    fn number(&self, rel: &str) -> Option<u64> {
        self.file(rel).map(|s| {
            s.parse()
                .unwrap_or_else(|_| panic!("{}: '{s}' is no number", self.root.join(rel).display()))
        })
    }

    fn check(&mut self, what: &str, reported: &serde_json::Value, expected: serde_json::Value) {
        assert_eq!(*reported, expected, "{}: {what}", self.root.display());
        self.checked += 1;
    }

    fn names(&self, rel: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.root.join(rel))
            .map(|d| {
                d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

#[test]
fn fixture_boxes_report_what_their_own_files_say() {
    for name in BOXES.iter().chain(LAB_BOXES).chain(&["oldguide"]) {
        let root = fixtures().join("boxes").join(name);
        let v = normalized(&probe_json(&root));
        let mut f = Facts {
            root: &root,
            checked: 0,
        };
        let host = &v["host"]["data"];
        if let Some(h) = f.file("proc/sys/kernel/hostname") {
            f.check("hostname", &host["hostname"], h.into());
        }
        if let Some(r) = f.file("proc/sys/kernel/osrelease") {
            f.check("kernel release", &host["kernel_release"], r.into());
        }
        if let Some(meminfo) = f.file("proc/meminfo") {
            for (key, field) in [
                ("MemTotal:", "total_bytes"),
                ("MemAvailable:", "available_bytes"),
            ] {
                let kib: u64 = meminfo
                    .lines()
                    .find_map(|l| l.strip_prefix(key))
                    .and_then(|rest| rest.split_whitespace().next())
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("{name}: no {key} in meminfo"));
                f.check(key, &v["memory"]["data"][field], (kib * 1024).into());
            }
        }
        let interfaces = v["network"]["data"]["interfaces"].as_array().unwrap();
        for ifname in f.names("sys/class/net") {
            let i = interfaces
                .iter()
                .find(|i| i["name"] == ifname.as_str())
                .unwrap_or_else(|| panic!("{name}: interface {ifname} not reported"));
            let dir = format!("sys/class/net/{ifname}");
            if let Some(mtu) = f.number(&format!("{dir}/mtu")) {
                f.check(&format!("{ifname} mtu"), &i["mtu_bytes"], mtu.into());
            }
            if let Some(q) = f.number(&format!("{dir}/tx_queue_len")) {
                f.check(
                    &format!("{ifname} txqueuelen"),
                    &i["tx_queue_len_packets"],
                    q.into(),
                );
            }
            if let Some(rx) = f.number(&format!("{dir}/statistics/rx_bytes")) {
                f.check(
                    &format!("{ifname} rx_bytes"),
                    &i["counters"]["rx_bytes"],
                    rx.into(),
                );
            }
        }
        let devices = v["storage"]["data"]["devices"].as_array().unwrap();
        for dev in f.names("sys/block") {
            let Some(d) = devices.iter().find(|d| d["name"] == dev.as_str()) else {
                continue; // loop devices with nothing behind them are left out
            };
            let dir = format!("sys/block/{dev}");
            if let Some(sectors) = f.number(&format!("{dir}/size")) {
                f.check(
                    &format!("{dev} size"),
                    &d["size_bytes"],
                    (sectors * 512).into(),
                );
            }
            if let Some(kb) = f.number(&format!("{dir}/queue/read_ahead_kb")) {
                f.check(
                    &format!("{dev} read-ahead"),
                    &d["queue"]["read_ahead_bytes"],
                    (kb * 1024).into(),
                );
            }
            if let Some(r) = f.number(&format!("{dir}/queue/rotational")) {
                f.check(
                    &format!("{dev} rotational"),
                    &d["queue"]["rotational"],
                    (r == 1).into(),
                );
            }
            // "mq-deadline [none]": the bracketed one is in use.
            if let Some(active) = f
                .file(&format!("{dir}/queue/scheduler"))
                .and_then(|s| Some(s.split_once('[')?.1.split_once(']')?.0.to_string()))
            {
                f.check(
                    &format!("{dev} scheduler"),
                    &d["queue"]["scheduler"],
                    active.into(),
                );
            }
        }
        for md in v["storage"]["data"]["md_arrays"].as_array().unwrap() {
            let dir = format!("sys/block/{}/md", md["name"].as_str().unwrap());
            if let Some(n) = f.number(&format!("{dir}/raid_disks")) {
                f.check("md raid_disks", &md["raid_disks"], n.into());
            }
            if let Some(level) = f.file(&format!("{dir}/level")) {
                f.check("md level", &md["level"], level.into());
            }
        }
        if let Some(values) = v["sysctl"]["data"]["values"].as_object() {
            for (key, reported) in values {
                if let Some(text) = f.file(&format!("proc/sys/{}", key.replace('.', "/"))) {
                    let words: Vec<&str> = text.split_whitespace().collect();
                    let reported_words: Vec<&str> = reported
                        .as_str()
                        .unwrap_or_default()
                        .split_whitespace()
                        .collect();
                    assert_eq!(reported_words, words, "{name}: sysctl {key}");
                    f.checked += 1;
                }
            }
        }
        assert!(f.checked >= 8, "{name}: only {} facts checked", f.checked);
    }
}

/// A kmsg record is read back, classified, by the live probe. Not written to
/// the real kernel log (a fake I/O error there would show in every later
/// check of this box): a FIFO stands in for /dev/kmsg, bind-mounted over it
/// in a private mount namespace, and hands out one record per read and EAGAIN
/// after the last, as the kernel does.
#[test]
fn a_kmsg_record_is_found_and_classified() {
    if !require(&[Need::Root, Need::Path("/dev/kmsg"), Need::Tool("unshare")]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let marker = format!("sdz{}", std::process::id() % 100_000);
    let script = r#"set -e
mkfifo "$DIR/kmsg"
mount --bind "$DIR/kmsg" /dev/kmsg
# Read-write: a FIFO that opens without blocking and keeps a writer, so the
# probe's non-blocking reads end in EAGAIN, not end-of-file.
exec 3<>/dev/kmsg
printf '3,1,1000,-;nastune-test: I/O error, dev %s, sector 123\n' "$MARKER" >&3
"$BIN" probe --json --no-store
"#;
    let o = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", script])
        .env("DIR", t.path())
        .env("MARKER", &marker)
        .env("BIN", env!("CARGO_BIN_EXE_nastune"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v = normalized(&stdout(&o));
    let log = &v["kernel_log"]["data"];
    let count = log["counts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["device"] == marker.as_str())
        .unwrap_or_else(|| panic!("no count for {marker}: {log}"));
    assert_eq!(count["class"], "io_error");
    assert_eq!(count["count"], 1);
    assert!(
        log["examples"].as_array().unwrap().iter().any(|e| e["line"]
            .as_str()
            .unwrap()
            .contains(&format!("dev {marker}, sector 123"))),
        "{log}"
    );
    // The real kernel log never saw it.
    if let Ok(d) = Command::new("dmesg").output() {
        assert!(
            !stdout(&d).contains(&marker),
            "the record reached the real log"
        );
    }
}
