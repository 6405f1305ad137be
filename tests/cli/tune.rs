//! `nastune tune`: apply and rollback on copied fixture trees (byte-identical
//! afterwards, also after a crash at every step), and for real: net sysctls in a
//! network namespace, queue attributes of a loop device, the dead-man timer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

pub(crate) use crate::private_etc::{PrivateEtc, json_of, succeeded};
use crate::util::*;

/// What a tree holds, without following symlinks: path → file bytes or link target.
/// A trial as short as still measures: 2 runs a side of 300 ms, no settling.
pub(crate) const QUICK_TRIAL: [&str; 6] = ["--runs", "2", "--runtime", "300ms", "--settle", "0"];

pub(crate) fn tree_state(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = path.strip_prefix(dir).unwrap().to_path_buf();
            let ft = entry.file_type().unwrap();
            if ft.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(rel, format!("-> {}", target.display()).into_bytes());
            } else if ft.is_dir() {
                out.insert(rel, b"<dir>".to_vec());
                stack.push(path);
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

pub(crate) fn assert_same_tree(before: &BTreeMap<PathBuf, Vec<u8>>, dir: &Path, what: &str) {
    let after = tree_state(dir);
    for (p, b) in before {
        match after.get(p) {
            None => panic!("{what}: '{}' is gone", p.display()),
            Some(a) if a != b => panic!(
                "{what}: '{}' differs: {:?} != {:?}",
                p.display(),
                String::from_utf8_lossy(a),
                String::from_utf8_lossy(b)
            ),
            _ => {}
        }
    }
    for p in after.keys() {
        assert!(before.contains_key(p), "{what}: '{}' is new", p.display());
    }
}

/// A copy of a fixture box in a fresh tempdir: (tempdir, box path).
pub(crate) fn copy_box(name: &str) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let dst = t.path().join("box");
    let o = Command::new("cp")
        .arg("-a")
        .arg(fixtures().join("boxes").join(name))
        .arg(&dst)
        .output()
        .unwrap();
    assert!(o.status.success(), "cp: {}", stderr(&o));
    (t, dst)
}

pub(crate) fn run_ok(dir: &Path, args: &[&str]) -> Output {
    succeeded(args, run_with_db(dir, args))
}

#[test]
fn apply_confirm_rollback_leaves_every_fixture_box_byte_identical() {
    let mut kinds_applied = std::collections::BTreeSet::new();
    let boxes = std::fs::read_dir(fixtures().join("boxes")).unwrap();
    for b in boxes {
        let name = b.unwrap().file_name().to_string_lossy().into_owned();
        let (t, dir) = copy_box(&name);
        let before = tree_state(&dir);
        let root = dir.to_str().unwrap();
        let o = run_with_db(
            t.path(),
            &["tune", "apply", "--root", root, "--yes", "--json"],
        );
        let doc = json_of(&o);
        assert_eq!(doc["schema_version"], 1);
        let applied = &doc["applied"];
        if applied.is_null() {
            assert_same_tree(&before, &dir, &name);
            continue;
        }
        for item in doc["plan"]["items"].as_array().unwrap() {
            if item["status"] == "apply" {
                kinds_applied.insert(item["change"]["kind"].as_str().unwrap().to_string());
            }
        }
        assert!(
            tree_state(&dir) != before,
            "{name}: apply reported writes but the tree is unchanged"
        );
        if !applied["confirm_deadline_unix"].is_null() {
            run_ok(t.path(), &["tune", "confirm"]);
            assert!(
                dir.join("etc/sysctl.d/99-zz-nastune.conf").exists()
                    || dir.join("etc/udev/rules.d/99-zz-nastune.rules").exists(),
                "{name}: confirm wrote no persistence"
            );
        }
        let v = json_of(&run_with_db(
            t.path(),
            &["tune", "verify", "--root", root, "--json"],
        ));
        let checks = v["checks"].as_array().unwrap();
        assert!(!checks.is_empty(), "{name}");
        assert!(
            checks.iter().all(|c| c["state"] == "applied"),
            "{name}: {checks:?}"
        );
        run_ok(t.path(), &["tune", "rollback"]);
        assert_same_tree(&before, &dir, &name);
        // Nothing is owned any more, and a second rollback has nothing to do.
        let v = json_of(&run_with_db(
            t.path(),
            &["tune", "verify", "--root", root, "--json"],
        ));
        assert!(v["checks"].as_array().unwrap().is_empty(), "{name}: {v}");
        let again = run_with_db(t.path(), &["tune", "rollback"]);
        assert_eq!(again.status.code(), Some(2));
        assert!(stderr(&again).contains("every session is rolled back"));
    }
    for kind in [
        "sysctl",
        "sysfs_attribute",
        "udev_rule",
        "mount_option",
        "smb_conf",
    ] {
        assert!(
            kinds_applied.contains(kind),
            "no fixture applied a '{kind}' change: {kinds_applied:?}"
        );
    }
}

#[test]
fn a_crash_after_any_step_of_apply_rolls_back_byte_identical() {
    let (pristine_t, pristine) = copy_box("oldguide");
    let before = tree_state(&pristine);
    drop(pristine_t);
    let mut crashed = 0;
    for n in 1.. {
        let (t, dir) = copy_box("oldguide");
        let root = dir.to_str().unwrap();
        let o = nastune()
            .args(["tune", "apply", "--root", root, "--yes", "--db"])
            .arg(t.path().join("nastune.db"))
            .env("NASTUNE_TUNE_FAULT_AFTER", n.to_string())
            .output()
            .unwrap();
        if o.status.success() {
            // Past the last fault point: the whole apply ran; undo it too.
            run_ok(t.path(), &["tune", "rollback"]);
            assert_same_tree(&before, &dir, "complete apply");
            break;
        }
        assert_eq!(o.status.code(), Some(86), "fault {n}: {}", stderr(&o));
        crashed += 1;
        let v = run_ok(t.path(), &["tune", "verify", "--root", root]);
        assert!(
            stdout(&v).contains("session 1 was interrupted while applying"),
            "fault {n}: {}",
            stdout(&v)
        );
        run_ok(t.path(), &["tune", "rollback", "1"]);
        assert_same_tree(&before, &dir, &format!("fault after point {n}"));
        // Restoring is idempotent: the same session again changes nothing.
        run_ok(t.path(), &["tune", "rollback", "1"]);
        assert_same_tree(&before, &dir, &format!("second rollback after point {n}"));
    }
    assert!(crashed >= 20, "only {crashed} fault points");
}

/// The temporary files a `kill -9` between a temp write and its rename leaves,
/// one per file the oldguide plan writes.
const OLDGUIDE_TEMPS: [&str; 4] = [
    "etc/sysctl.d/.99-zz-nastune.conf.nastune-tmp",
    "etc/udev/rules.d/.99-zz-nastune.rules.nastune-tmp",
    "etc/samba/.smb.conf.nastune-tmp",
    "etc/.fstab.nastune-tmp",
];

fn plant_temps(dir: &Path, temps: &[&str]) {
    for t in temps {
        let p = dir.join(t);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "half-written\n").unwrap();
    }
}

#[test]
fn rollback_and_the_next_apply_remove_temporary_files_a_kill_left() {
    let (pristine_t, pristine) = copy_box("oldguide");
    let before = tree_state(&pristine);
    drop(pristine_t);
    // Killed after the first journal entry, with the owned files' temps
    // half-written (rollback removes those whichever session left them).
    let (t, dir) = copy_box("oldguide");
    let root = dir.to_str().unwrap();
    let o = nastune()
        .args(["tune", "apply", "--root", root, "--yes", "--db"])
        .arg(t.path().join("nastune.db"))
        .env("NASTUNE_TUNE_FAULT_AFTER", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(86), "{}", stderr(&o));
    plant_temps(&dir, &OLDGUIDE_TEMPS[..2]);
    run_ok(t.path(), &["tune", "rollback"]);
    assert_same_tree(&before, &dir, "rollback after a kill");

    // Temp files left by an earlier crash are gone once the next apply runs.
    plant_temps(&dir, &OLDGUIDE_TEMPS);
    run_ok(t.path(), &["tune", "apply", "--root", root, "--yes"]);
    for temp in OLDGUIDE_TEMPS {
        assert!(!dir.join(temp).exists(), "'{temp}' survived the apply");
    }
    run_ok(t.path(), &["tune", "rollback"]);
    assert_same_tree(&before, &dir, "rollback after a clean apply");
}

#[test]
fn rollback_with_an_empty_journal_says_no_session_was_recorded() {
    let t = tempfile::tempdir().unwrap();
    let o = run_with_db(t.path(), &["tune", "rollback"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("no tune session has been recorded"), "{err}");
    assert!(!err.contains("rolled back already"), "{err}");
}

#[test]
fn apply_without_yes_refuses_when_stdin_is_not_a_terminal() {
    let (t, dir) = copy_box("oldguide");
    let before = tree_state(&dir);
    let o = nastune()
        .args(["tune", "apply", "--root", dir.to_str().unwrap(), "--db"])
        .arg(t.path().join("nastune.db"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("pass --yes"), "{}", stderr(&o));
    assert_same_tree(&before, &dir, "refused apply");
}

#[test]
fn plan_shows_old_new_why_risk_and_skip_reasons() {
    let (t, dir) = copy_box("oldguide");
    let root = dir.to_str().unwrap();
    let doc = json_of(&run_with_db(
        t.path(),
        &["tune", "plan", "--root", root, "--json"],
    ));
    let items = doc["items"].as_array().unwrap();
    let find = |setting: &str| {
        items
            .iter()
            .find(|i| i["setting"] == setting)
            .unwrap_or_else(|| panic!("no '{setting}' in the plan"))
    };
    let vfs = find("sysctl:vm.vfs_cache_pressure");
    assert_eq!(vfs["old"], "1000");
    assert_eq!(vfs["new"], "100");
    assert_eq!(vfs["status"], "apply");
    assert_eq!(vfs["risk"], "runtime_safe");
    assert_eq!(vfs["rule_id"], "vfs-cache-pressure");
    assert_eq!(vfs["persisted_in"], "/etc/sysctl.d/99-zz-nastune.conf");
    let eth = find("ethtool:eth0:tx-tcp-segmentation");
    assert_eq!(eth["status"], "skip");
    assert_eq!(
        eth["reason"],
        "ethtool settings are set on the live system only, not in a --root tree"
    );
    assert!(find("sysctl:net.ipv4.tcp_timestamps")["network"] == true);
    // Selecting by rule id and finding number narrows the plan.
    let one = json_of(&run_with_db(
        t.path(),
        &[
            "tune",
            "plan",
            "--root",
            root,
            "--json",
            "vfs-cache-pressure",
        ],
    ));
    let n = one["items"].as_array().unwrap();
    assert!(
        n.iter().all(|i| i["rule_id"] == "vfs-cache-pressure"),
        "{n:?}"
    );
    let bad = run_with_db(t.path(), &["tune", "plan", "--root", root, "no-such-rule"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("'no-such-rule' matches no finding"));
    // A value the kernel would reject is refused before anything is written;
    // with every --set refused the command fails, so a script sees exit 2
    // rather than an empty plan.
    let v = run_with_db(
        t.path(),
        &[
            "tune",
            "plan",
            "--root",
            root,
            "--set",
            "sysfs:block/sda/queue/scheduler=deadline",
            "--set",
            "sysfs:block/md0/queue/scheduler=none",
        ],
    );
    assert_eq!(v.status.code(), Some(2), "{}", stderr(&v));
    let text = stdout(&v);
    assert!(
        text.contains(
            "'deadline' is not valid for 'sysfs:block/sda/queue/scheduler': this kernel offers only mq-deadline, kyber, bfq, none"
        ),
        "{text}"
    );
    assert!(text.contains("has no I/O scheduler to choose"), "{text}");
    assert!(text.contains("0 of 2 change(s) to apply"), "{text}");
}

#[test]
fn verify_reports_drift_and_unsupported_and_rollback_still_restores() {
    let (t, dir) = copy_box("oldguide");
    let before = tree_state(&dir);
    let root = dir.to_str().unwrap();
    run_ok(
        t.path(),
        &[
            "tune",
            "apply",
            "--root",
            root,
            "--yes",
            "--set",
            "sysctl:vm.swappiness=30",
            "--set",
            "sysctl:vm.vfs_cache_pressure=100",
        ],
    );
    std::fs::write(dir.join("proc/sys/vm/swappiness"), "77\n").unwrap();
    let vfs = dir.join("proc/sys/vm/vfs_cache_pressure");
    let vfs_bytes = std::fs::read(&vfs).unwrap();
    std::fs::remove_file(&vfs).unwrap();
    let v = json_of(&run_with_db(
        t.path(),
        &["tune", "verify", "--root", root, "--json"],
    ));
    let state = |s: &str| {
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["setting"] == s)
            .unwrap_or_else(|| panic!("{s} not checked: {v}"))
            .clone()
    };
    let sw = state("sysctl:vm.swappiness");
    assert_eq!(sw["state"], "drifted");
    assert_eq!(sw["current"], "77");
    assert_eq!(sw["expected"], "30");
    assert_eq!(
        state("sysctl:vm.vfs_cache_pressure")["state"],
        "unsupported"
    );
    assert_eq!(
        state("file:/etc/sysctl.d/99-zz-nastune.conf")["state"],
        "applied"
    );
    // Drift is reported, not fought: verify wrote nothing.
    assert_eq!(
        std::fs::read_to_string(dir.join("proc/sys/vm/swappiness")).unwrap(),
        "77\n"
    );
    std::fs::write(&vfs, vfs_bytes).unwrap();
    let r = run_ok(t.path(), &["tune", "rollback"]);
    assert!(stdout(&r).contains("drifted to '77'"), "{}", stdout(&r));
    assert_same_tree(&before, &dir, "rollback after drift");
}

// ---- for real: a network namespace, a loop device, the dead-man timer ----

pub(crate) struct Netns(pub(crate) String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

pub(crate) fn netns_setup(tag: &str) -> Option<Netns> {
    if !require(&[Need::Root, Need::Tool("ip")]) {
        return None;
    }
    let ns = format!("nastune-tune-{tag}-{}", std::process::id());
    let o = Command::new("ip")
        .args(["netns", "add", &ns])
        .output()
        .unwrap();
    assert!(o.status.success(), "ip netns add: {}", stderr(&o));
    Some(Netns(ns))
}

pub(crate) fn ns_read(ns: &str, key: &str) -> String {
    let o = Command::new("ip")
        .args(["netns", "exec", ns, "cat"])
        .arg(format!("/proc/sys/{}", key.replace('.', "/")))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o).trim().to_string()
}

fn ns_write(ns: &str, key: &str, value: &str) {
    let o = Command::new("ip")
        .args(["netns", "exec", ns, "sh", "-c"])
        .arg(format!(
            "echo {value} > /proc/sys/{}",
            key.replace('.', "/")
        ))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

pub(crate) fn verify_state(etc: &PrivateEtc, prefix: &[&str], setting: &str) -> String {
    let v = json_of(&etc.run(prefix, &["tune", "verify", "--json"]));
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["setting"] == setting)
        .map(|c| c["state"].as_str().unwrap().to_string())
        .unwrap_or_else(|| "not owned".into())
}

#[test]
fn net_sysctl_in_a_netns_applied_verified_drifted_rolled_back() {
    let Some(ns) = netns_setup("apply") else {
        return;
    };
    let key = "net.core.somaxconn";
    let host_before = std::fs::read_to_string("/proc/sys/net/core/somaxconn").unwrap();
    let original = ns_read(&ns.0, key);
    let new = if original == "1024" { "2000" } else { "1024" };
    let etc = PrivateEtc::new();
    let prefix = ["ip", "netns", "exec", ns.0.as_str()];
    let set = format!("sysctl:{key}={new}");
    let o = etc.run_ok(&prefix, &["tune", "apply", "--yes", "--set", &set]);
    assert!(stdout(&o).contains("tune confirm 1"), "{}", stdout(&o));
    assert_eq!(ns_read(&ns.0, key), new);
    // Per namespace: the host's value is untouched.
    assert_eq!(
        std::fs::read_to_string("/proc/sys/net/core/somaxconn").unwrap(),
        host_before
    );
    etc.run_ok(&prefix, &["tune", "confirm"]);
    let persisted = std::fs::read_to_string(etc.sysctl_d().join("99-zz-nastune.conf")).unwrap();
    assert!(
        persisted.contains(&format!("{key} = {new}\n")),
        "{persisted}"
    );
    assert_eq!(
        verify_state(&etc, &prefix, &format!("sysctl:{key}")),
        "applied"
    );
    ns_write(&ns.0, key, "3000");
    assert_eq!(
        verify_state(&etc, &prefix, &format!("sysctl:{key}")),
        "drifted"
    );
    assert_eq!(ns_read(&ns.0, key), "3000", "verify must not fight drift");
    etc.run_ok(&prefix, &["tune", "rollback"]);
    assert_eq!(ns_read(&ns.0, key), original);
    assert!(!etc.sysctl_d().join("99-zz-nastune.conf").exists());
}

#[test]
fn deadman_reverts_an_unconfirmed_net_sysctl_and_keeps_a_confirmed_one() {
    let Some(ns) = netns_setup("deadman") else {
        return;
    };
    let etc = PrivateEtc::new();
    let prefix = ["ip", "netns", "exec", ns.0.as_str()];
    let a = "net.core.somaxconn";
    let b = "net.ipv4.tcp_timestamps";
    let (a_orig, b_orig) = (ns_read(&ns.0, a), ns_read(&ns.0, b));
    let a_new = if a_orig == "1024" { "2000" } else { "1024" };
    let b_new = if b_orig == "2" { "1" } else { "2" };
    // Session 1: not confirmed.
    let set_a = format!("sysctl:{a}={a_new}");
    let apply_2s = |set: &str| {
        etc.run_ok(
            &prefix,
            &[
                "tune",
                "apply",
                "--yes",
                "--confirm-within",
                "2s",
                "--set",
                set,
            ],
        )
    };
    apply_2s(&set_a);
    assert_eq!(ns_read(&ns.0, a), a_new);
    // Session 2: confirmed at once.
    let set_b = format!("sysctl:{b}={b_new}");
    apply_2s(&set_b);
    etc.run_ok(&prefix, &["tune", "confirm", "2"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while ns_read(&ns.0, a) != a_orig && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(ns_read(&ns.0, a), a_orig, "unconfirmed change not reverted");
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(ns_read(&ns.0, b), b_new, "confirmed change was reverted");
    assert_eq!(
        verify_state(&etc, &prefix, &format!("sysctl:{b}")),
        "applied"
    );
    assert_eq!(
        verify_state(&etc, &prefix, &format!("sysctl:{a}")),
        "not owned"
    );
    let late = etc.run(&prefix, &["tune", "confirm", "1"]);
    assert_eq!(late.status.code(), Some(2));
    assert!(
        stderr(&late).contains("they are reverted"),
        "{}",
        stderr(&late)
    );
    // Only the confirmed key was persisted.
    let persisted = std::fs::read_to_string(etc.sysctl_d().join("99-zz-nastune.conf")).unwrap();
    assert!(
        persisted.contains(b) && !persisted.contains(a),
        "{persisted}"
    );
    etc.run_ok(&prefix, &["tune", "rollback", "2"]);
    assert_eq!(ns_read(&ns.0, b), b_orig);
}

pub(crate) struct Loop(pub(crate) String);

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

/// Attaches `img` to a free loop device, detached again on drop.
pub(crate) fn attach_loop(img: &Path) -> Loop {
    let o = Command::new("losetup")
        .args(["-f", "--show"])
        .arg(img)
        .output()
        .unwrap();
    assert!(o.status.success(), "losetup: {}", stderr(&o));
    Loop(stdout(&o).trim().to_string())
}

/// A sparse file of `bytes` in `dir`, for a loop device.
fn sparse_image(dir: &Path, name: &str, bytes: u64) -> PathBuf {
    let img = dir.join(name);
    std::fs::File::create(&img).unwrap().set_len(bytes).unwrap();
    img
}

#[test]
fn loop_device_queue_attributes_applied_verified_drifted_rolled_back() {
    if !require(&[Need::Root, Need::Tool("losetup")]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let img = sparse_image(t.path(), "disk.img", 16 << 20);
    let dev = attach_loop(&img);
    let name = dev.0.trim_start_matches("/dev/").to_string();
    let q = format!("/sys/block/{name}/queue");
    let read = |attr: &str| std::fs::read_to_string(format!("{q}/{attr}")).unwrap();
    let (ra_orig, sched_orig) = (read("read_ahead_kb"), read("scheduler"));
    let ra_new = if ra_orig.trim() == "256" {
        "512"
    } else {
        "256"
    };
    let sched_new = sched_orig
        .split_whitespace()
        .find(|s| !s.starts_with('['))
        .expect("a second scheduler")
        .to_string();
    let etc = PrivateEtc::new();
    let prefix = ["unshare", "-m", "--propagation", "private"];
    let ra_set = format!("sysfs:block/{name}/queue/read_ahead_kb={ra_new}");
    let sched_set = format!("sysfs:block/{name}/queue/scheduler={sched_new}");
    etc.run_ok(
        &prefix,
        &[
            "tune", "apply", "--yes", "--set", &ra_set, "--set", &sched_set,
        ],
    );
    assert_eq!(read("read_ahead_kb").trim(), ra_new);
    assert!(read("scheduler").contains(&format!("[{sched_new}]")));
    let rules = std::fs::read_to_string(etc.rules_d().join("99-zz-nastune.rules")).unwrap();
    assert!(
        rules.contains(&format!(
            "SUBSYSTEM==\"block\", KERNEL==\"{name}\", ATTR{{queue/read_ahead_kb}}=\"{ra_new}\""
        )),
        "{rules}"
    );
    let ra_setting = format!("sysfs:block/{name}/queue/read_ahead_kb");
    let sched_setting = format!("sysfs:block/{name}/queue/scheduler");
    assert_eq!(verify_state(&etc, &prefix, &ra_setting), "applied");
    assert_eq!(verify_state(&etc, &prefix, &sched_setting), "applied");
    std::fs::write(format!("{q}/read_ahead_kb"), "1024").unwrap();
    assert_eq!(verify_state(&etc, &prefix, &ra_setting), "drifted");
    assert_eq!(verify_state(&etc, &prefix, &sched_setting), "applied");
    etc.run_ok(&prefix, &["tune", "rollback"]);
    assert_eq!(read("read_ahead_kb"), ra_orig);
    assert_eq!(read("scheduler"), sched_orig);
    assert!(!etc.rules_d().join("99-zz-nastune.rules").exists());
}

/// `ip -n NS link show IF` as one line, and the `ethtool -k` value of a feature.
fn ns_link(ns: &str, interface: &str) -> String {
    let o = Command::new("ip")
        .args(["-n", ns, "-o", "link", "show", interface])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
}

/// The root qdisc's kind as `ip link` shows it.
fn ns_qdisc(ns: &str, interface: &str) -> String {
    let link = ns_link(ns, interface);
    link.split_whitespace()
        .skip_while(|w| *w != "qdisc")
        .nth(1)
        .unwrap_or_else(|| panic!("no qdisc in {link}"))
        .to_string()
}

fn ns_feature(ns: &str, interface: &str, long_name: &str) -> String {
    let o = Command::new("ip")
        .args(["netns", "exec", ns, "ethtool", "-k", interface])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .find_map(|l| l.trim().strip_prefix(&format!("{long_name}: ")))
        .map(|v| v.split_whitespace().next().unwrap_or("").to_string())
        .unwrap_or_else(|| panic!("no '{long_name}' in ethtool -k {interface}"))
}

#[test]
fn ethtool_settings_on_a_veth_revert_unless_confirmed_and_roll_back() {
    let Some(ns) = netns_setup("ethtool") else {
        return;
    };
    let o = Command::new("ip")
        .args([
            "-n", &ns.0, "link", "add", "v0", "type", "veth", "peer", "name", "v1",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    for dev in ["v0", "v1"] {
        let o = Command::new("ip")
            .args(["-n", &ns.0, "link", "set", dev, "up"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let etc = PrivateEtc::new();
    let prefix = ["ip", "netns", "exec", ns.0.as_str()];
    let link0 = ns_link(&ns.0, "v0");
    assert_eq!(ns_qdisc(&ns.0, "v0"), "noqueue", "{link0}");
    assert!(
        link0.contains("mtu 1500") && link0.contains("qlen 1000"),
        "{link0}"
    );
    assert_eq!(ns_feature(&ns.0, "v0", "generic-receive-offload"), "off");
    let sets = [
        "--set",
        "ethtool:v0:mtu=1400",
        "--set",
        "ethtool:v0:txqueuelen=500",
        "--set",
        "ethtool:v0:rx-gro=on",
        "--set",
        "ethtool:v0:qdisc=pfifo",
    ];
    let apply = |within: &str| {
        let mut args = vec!["tune", "apply", "--yes", "--confirm-within", within];
        args.extend(sets);
        etc.run_ok(&prefix, &args)
    };
    // Not confirmed: the dead-man timer puts every setting back.
    apply("2s");
    let link = ns_link(&ns.0, "v0");
    assert!(
        link.contains("mtu 1400") && link.contains("qlen 500"),
        "{link}"
    );
    assert_eq!(ns_feature(&ns.0, "v0", "generic-receive-offload"), "on");
    assert_eq!(ns_qdisc(&ns.0, "v0"), "pfifo");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !ns_link(&ns.0, "v0").contains("mtu 1500") && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_millis(300));
    let link = ns_link(&ns.0, "v0");
    assert!(
        link.contains("mtu 1500") && link.contains("qlen 1000"),
        "{link}"
    );
    assert_eq!(ns_feature(&ns.0, "v0", "generic-receive-offload"), "off");
    assert_eq!(ns_qdisc(&ns.0, "v0"), "noqueue");
    // Confirmed: kept, verified, drift reported and left alone, rolled back.
    let o = apply("60s");
    assert!(stdout(&o).contains("tune confirm 2"), "{}", stdout(&o));
    etc.run_ok(&prefix, &["tune", "confirm", "2"]);
    assert_eq!(verify_state(&etc, &prefix, "ethtool:v0:mtu"), "applied");
    assert_eq!(verify_state(&etc, &prefix, "ethtool:v0:rx-gro"), "applied");
    assert_eq!(verify_state(&etc, &prefix, "ethtool:v0:qdisc"), "applied");
    let o = Command::new("ip")
        .args(["-n", &ns.0, "link", "set", "v0", "mtu", "1300"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(verify_state(&etc, &prefix, "ethtool:v0:mtu"), "drifted");
    assert!(
        ns_link(&ns.0, "v0").contains("mtu 1300"),
        "verify must not fight drift"
    );
    let r = etc.run_ok(&prefix, &["tune", "rollback", "2"]);
    assert!(stdout(&r).contains("drifted to '1300'"), "{}", stdout(&r));
    let link = ns_link(&ns.0, "v0");
    assert!(
        link.contains("mtu 1500") && link.contains("qlen 1000"),
        "{link}"
    );
    assert_eq!(ns_qdisc(&ns.0, "v0"), "noqueue");
    assert_eq!(ns_feature(&ns.0, "v0", "generic-receive-offload"), "off");
    // A qdisc this kernel lacks is refused with the reason, and nothing stays changed.
    let bad = etc.run(
        &prefix,
        &[
            "tune",
            "apply",
            "--yes",
            "--set",
            "ethtool:v0:qdisc=no_such_qdisc",
        ],
    );
    assert_ne!(bad.status.code(), Some(0));
    assert!(
        stderr(&bad).contains("this kernel has no such qdisc"),
        "{}",
        stderr(&bad)
    );
    assert_eq!(ns_qdisc(&ns.0, "v0"), "noqueue");
    // Runtime only: nothing was persisted for them.
    assert!(!etc.sysctl_d().join("99-zz-nastune.conf").exists());
    assert!(!etc.rules_d().join("99-zz-nastune.rules").exists());
}

/// Issue 23 item 3: a RUN+= hook that sets the same txqueuelen overrides
/// nastune's udev rule at boot; the plan says so, naming the hook.
#[test]
fn plan_warns_when_a_udev_run_hook_overrides_our_rule() {
    let (t, dir) = copy_box("pogoplug-v4");
    let root = dir.to_str().unwrap();
    let plan = |set: &str| {
        let doc = json_of(&run_with_db(
            t.path(),
            &["tune", "plan", "--root", root, "--json", "--set", set],
        ));
        doc["items"][0]["warnings"].to_string()
    };
    let set = "sysfs:class/net/eth0/tx_queue_len=500";
    assert!(!plan(set).contains("RUN+="), "{}", plan(set));
    let rules = dir.join("etc/udev/rules.d");
    std::fs::create_dir_all(&rules).unwrap();
    std::fs::write(
        rules.join("50-net.rules"),
        "ACTION==\"add\", KERNEL==\"sd?\", RUN+=\"/sbin/hdparm -M 128 /dev/%k\"\n\
         ACTION==\"add\", SUBSYSTEM==\"net\", KERNEL==\"eth0\", \
         RUN+=\"/sbin/ifconfig eth0 txqueuelen 5000\"\n",
    )
    .unwrap();
    let warnings = plan(set);
    assert!(
        warnings.contains(
            "'/etc/udev/rules.d/50-net.rules' line 2 runs '/sbin/ifconfig eth0 txqueuelen 5000', \
             which sets tx_queue_len = 5000 on eth0"
        ),
        "{warnings}"
    );
    assert!(!warnings.contains("hdparm"), "{warnings}");
    // Another interface's rule is not overridden by eth0's hook.
    assert!(!plan("sysfs:class/net/lo/tx_queue_len=500").contains("RUN+="));
}

/// Issue 23 item 12: a qdisc is shown as the tc command and persisted through
/// net.core.default_qdisc or tc, never as an ethtool line (ethtool cannot set one).
#[test]
fn qdisc_plan_gives_tc_and_default_qdisc_not_an_ethtool_line() {
    let Some(ns) = netns_setup("qdisc") else {
        return;
    };
    // pfifo, which every kernel has: plan refuses a qdisc the kernel's config
    // leaves out (fq_codel on some), and this is about how one is shown.
    let etc = PrivateEtc::new();
    let prefix = ["ip", "netns", "exec", ns.0.as_str()];
    let o = etc.run_ok(
        &prefix,
        &["tune", "plan", "--json", "--set", "ethtool:lo:qdisc=pfifo"],
    );
    let doc = json_of(&o);
    let item = &doc["items"][0];
    assert_eq!(item["setting"], "ethtool:lo:qdisc", "{item}");
    let warnings = item["warnings"].to_string();
    assert!(
        warnings.contains("net.core.default_qdisc = pfifo")
            && warnings.contains("tc qdisc replace dev lo root pfifo"),
        "{warnings}"
    );
    assert!(!warnings.contains("'ethtool' line"), "{warnings}");
    let text = stdout(&etc.run_ok(
        &prefix,
        &["tune", "plan", "--set", "ethtool:lo:qdisc=pfifo"],
    ));
    assert!(
        text.contains("tc qdisc replace dev lo root pfifo"),
        "{text}"
    );
    assert!(!text.contains("ethtool lo: qdisc"), "{text}");
}

/// A mount option applied with `--reload` on the live system: inside a private
/// mount namespace, with a private /etc/fstab bind-mounted over the real one,
/// a loop-mounted ext4 is remounted with the new option, and rollback puts the
/// old fstab back byte for byte.
#[test]
fn fstab_edit_with_reload_remounts_and_rolls_back() {
    if !require(&[
        Need::Root,
        Need::Tool("losetup"),
        Need::Tool("mkfs.ext4"),
        Need::Tool("unshare"),
        Need::Tool("findmnt"),
    ]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let img = sparse_image(t.path(), "data.img", 32 << 20);
    let o = Command::new("mkfs.ext4")
        .args(["-qF"])
        .arg(&img)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let dev = attach_loop(&img);
    let mnt = t.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mnt = mnt.to_str().unwrap().to_string();
    let fstab = t.path().join("fstab");
    let original = format!(
        "# private test fstab\n{} {mnt} ext4 defaults,noatime 0 2\n",
        dev.0
    );
    std::fs::write(&fstab, &original).unwrap();
    let db = t.path().join("nastune.db");
    // Taking noatime out: a plain remount would keep it (the kernel keeps the
    // atime mode when the options name none), so --reload must name relatime.
    let set = format!("fstab:{mnt}=-noatime");
    // One namespace for the whole story: mount, apply --reload, look, roll back.
    let script = r#"set -e
mount --bind "$FSTAB" /etc/fstab
mount -o noatime "$DEV" "$MNT"
echo "before: $(findmnt -no OPTIONS "$MNT")"
"$BIN" tune apply --yes --reload --set "$SET" --db "$DB"
echo "after: $(findmnt -no OPTIONS "$MNT")"
"$BIN" tune rollback --db "$DB"
mount -o remount "$MNT"
echo "rolled back: $(findmnt -no OPTIONS "$MNT")"
"#;
    let o = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", script])
        .env("FSTAB", &fstab)
        .env("DEV", &dev.0)
        .env("MNT", &mnt)
        .env("BIN", env!("CARGO_BIN_EXE_nastune"))
        .env("SET", &set)
        .env("DB", &db)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let out = stdout(&o);
    assert!(o.status.success(), "{out}\n{}", stderr(&o));
    let line = |tag: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(tag))
            .unwrap_or_else(|| panic!("no '{tag}' in {out}"))
            .split(',')
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert!(line("before: ").contains(&"noatime".to_string()), "{out}");
    assert!(line("after: ").contains(&"relatime".to_string()), "{out}");
    assert!(
        line("rolled back: ").contains(&"noatime".to_string()),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "reloaded: 'mount -o remount,defaults,relatime {mnt}'"
        )),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&fstab).unwrap(), original);
    // --reload never touches the machine for a tree.
    let (t2, dir) = copy_box("oldguide");
    let r = run_with_db(
        t2.path(),
        &[
            "tune",
            "apply",
            "--yes",
            "--reload",
            "--root",
            dir.to_str().unwrap(),
        ],
    );
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
    assert!(
        stderr(&r).contains("drop --reload with --root"),
        "{}",
        stderr(&r)
    );
}
