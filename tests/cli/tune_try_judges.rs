//! `tune try` with the other judges, for real: an smb.conf change refused when
//! judged elsewhere, a write judge on a loop device's file system, a net judge
//! in a namespace, and an http judge against nginx. (The smb encryption trials
//! are timings: they run in the quiet binary.)

use std::path::Path;
use std::process::Command;

use crate::tune::{PrivateEtc, QUICK_TRIAL, assert_same_tree, json_of, tree_state};
use crate::util::*;

#[test]
fn try_refuses_an_smb_conf_change_judged_elsewhere() {
    let (t, dir) = crate::tune::copy_box("oldguide");
    let before = tree_state(&dir);
    let data = crate::tune_try::data_file(t.path());
    let o = run_with_db(
        t.path(),
        &[
            "tune",
            "try",
            "--root",
            dir.to_str().unwrap(),
            "--yes",
            "--set",
            "smb.conf:global:smb encrypt=off",
            "--bench",
            &format!("buffered-seq-read:{data}"),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("changes this box's Samba, but the judge 'buffered-seq-read:"),
        "{}",
        stderr(&o)
    );
    assert_same_tree(&before, &dir, "a refused try");
}

/// A file system on a loop device, mounted at a temporary directory; undone on drop.
pub(crate) struct Mounted {
    pub(crate) dev: String,
    pub(crate) dir: tempfile::TempDir,
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

pub(crate) fn mounted_loop(img_dir: &Path) -> Option<Mounted> {
    if !require(&[Need::Root, Need::Tool("losetup"), Need::Tool("mkfs.ext4")]) {
        return None;
    }
    let img = img_dir.join("fs.img");
    std::fs::write(&img, vec![0u8; 96 << 20]).unwrap();
    let o = Command::new("losetup")
        .args(["--find", "--show"])
        .arg(&img)
        .output()
        .unwrap();
    assert!(o.status.success(), "losetup: {}", stderr(&o));
    let m = Mounted {
        dev: stdout(&o).trim().to_string(),
        dir: tempfile::tempdir().unwrap(),
    };
    let ok = |c: &mut Command| assert!(c.status().unwrap().success(), "{c:?}");
    ok(Command::new("mkfs.ext4").args(["-q", "-F", &m.dev]));
    ok(Command::new("mount").arg(&m.dev).arg(m.dir.path()));
    Some(m)
}

/// A write judge on a file system over a loop device, and that device's
/// queue cut to 4 requests: the verdict agrees with the numbers, and a revert
/// leaves the attribute as it was.
#[test]
fn try_a_write_path_change_with_a_write_judge() {
    let t = tempfile::tempdir().unwrap();
    let Some(m) = mounted_loop(t.path()) else {
        return;
    };
    let name = m.dev.trim_start_matches("/dev/").to_string();
    let attr = format!("/sys/block/{name}/queue/nr_requests");
    let before = std::fs::read(&attr).unwrap();
    let etc = PrivateEtc::new();
    let bench = format!("rand-write:{}", m.dir.path().display());
    let set = format!("sysfs:block/{name}/queue/nr_requests=4");
    let o = etc.run(
        &["unshare", "-m", "--propagation", "private"],
        &[
            "tune",
            "try",
            "--yes",
            "--json",
            "--set",
            &set,
            "--bench",
            &bench,
            "--runs",
            "3",
            "--runtime",
            "300ms",
        ],
    );
    let doc = json_of(&o);
    assert_eq!(doc["metric"]["name"], "write_iops", "{doc}");
    let keep = doc["verdict"] == "keep";
    assert_eq!(keep, doc["effect"] == "helps", "{doc}");
    assert_eq!(keep, doc["ci_low"].as_f64().unwrap() > 0.0, "{doc}");
    if !keep {
        assert_eq!(std::fs::read(&attr).unwrap(), before, "reverted: {doc}");
    }
    // A write judge never writes to a device.
    let o = run_with_db(
        t.path(),
        &[
            "tune",
            "try",
            "--yes",
            "--set",
            "sysctl:vm.dirty_ratio=10",
            "--bench",
            &format!("seq-write:{}", m.dev),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("never to a device"), "{}", stderr(&o));
}

/// Kills the server on drop.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// TCP timestamps off, judged by bench net to a `net serve` peer, in a
/// network namespace of its own: whatever it measures, the change lowers
/// security, so without --allow-weaker-security it is reverted and the
/// verdict says what it trades.
#[test]
fn try_tcp_timestamps_off_with_a_net_judge_is_never_kept_without_the_flag() {
    let Some(ns) = crate::tune::netns_setup("judge") else {
        return;
    };
    let exec = ["ip", "netns", "exec", ns.0.as_str()];
    let up = Command::new("ip")
        .args(["-n", &ns.0, "link", "set", "lo", "up"])
        .status()
        .unwrap();
    assert!(up.success());
    let _server = Server(
        Command::new("ip")
            .args(["netns", "exec", &ns.0])
            .arg(env!("CARGO_BIN_EXE_nastune"))
            .args(["net", "serve", "-B", "127.0.0.1", "-p", "5201"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    let before = crate::tune::ns_read(&ns.0, "net.ipv4.tcp_timestamps");
    assert_ne!(before, "0");
    let etc = PrivateEtc::new();
    let args = [
        "tune",
        "try",
        "--yes",
        "--json",
        "--set",
        "sysctl:net.ipv4.tcp_timestamps=0",
        "--bench",
        "net:127.0.0.1:5201",
        "--runs",
        "2",
        "--runtime",
        "1s",
    ];
    let doc = json_of(&etc.run(&exec, &args));
    assert_eq!(doc["metric"]["name"], "mb_per_sec", "{doc}");
    assert_eq!(doc["workload"], "net:127.0.0.1:5201");
    assert!(
        doc["security_trade"]
            .as_str()
            .unwrap()
            .starts_with("TCP timestamps (net.ipv4.tcp_timestamps '1' -> '0')"),
        "{doc}"
    );
    assert_eq!(doc["verdict"], "revert", "{doc}");
    let reason = doc["reason"].as_str().unwrap();
    if doc["effect"] == "helps" {
        assert!(
            reason.contains("pass --allow-weaker-security to keep it"),
            "{reason}"
        );
    } else {
        assert!(reason.contains("it would trade TCP timestamps"), "{reason}");
    }
    assert_eq!(
        crate::tune::ns_read(&ns.0, "net.ipv4.tcp_timestamps"),
        before
    );
}

/// An http judge against a real nginx on loopback: keep-alive requests per
/// second on each side of a sysctl written to a tree (the live box does not
/// change, so whatever it measures is noise), a verdict that agrees with its
/// interval, and the tree as it was.
#[test]
fn try_with_an_http_judge_against_nginx() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key, _) = crate::bench_http::certificate();
    let Some(nginx) = crate::bench_http::start_nginx(dir.path(), &cert, &key) else {
        skip("nginx is not installed (apt-get install nginx; it is in .ci/apt-packages)");
        return;
    };
    let tree = dir.path().join("root");
    let key_path = tree.join("proc/sys/net/ipv4/tcp_slow_start_after_idle");
    std::fs::create_dir_all(key_path.parent().unwrap()).unwrap();
    std::fs::write(&key_path, "1\n").unwrap();
    let before = tree_state(&tree);
    let url = format!("http:http://127.0.0.1:{}/", nginx.http);
    let args = [
        "tune",
        "try",
        "--yes",
        "--json",
        "--root",
        tree.to_str().unwrap(),
    ];
    let set = ["--set", "sysctl:net.ipv4.tcp_slow_start_after_idle=0"];
    let judge = ["--bench", &url];
    let o = run_with_db(
        dir.path(),
        &[&args[..], &set, &judge, &QUICK_TRIAL].concat(),
    );
    let doc = json_of(&o);
    assert_eq!(doc["workload"], url, "{doc}");
    assert_eq!(doc["metric"]["name"], "requests_per_sec", "{doc}");
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "{doc}");
    assert!(
        runs.iter().all(|r| r["value"].as_f64().unwrap() > 0.0),
        "{doc}"
    );
    let keep = doc["verdict"] == "keep";
    assert_eq!(keep, doc["ci_low"].as_f64().unwrap() > 0.0, "{doc}");
    if !keep {
        assert_same_tree(&before, &tree, "a reverted http-judged trial");
    }
}
