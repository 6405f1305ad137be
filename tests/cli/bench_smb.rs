//! `nastune bench smb` against a private smbd: every workload, each security
//! mode with the negotiated flags checked, the errors that say what to
//! change, the clean-up (also on Ctrl-C) and a stored command line without
//! the password.

#![cfg(feature = "smb")]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::smbd::{PASSWORD, Smbd, USER};
use crate::util::{nastune, stderr, stdout};

fn bench(s: &Smbd, db: &Path, share: &str, extra: &[&str]) -> Output {
    nastune()
        .args(["bench", "smb", &s.unc(share), "--user", USER])
        .args(extra)
        .arg("--db")
        .arg(db.join("nastune.db"))
        .env("NASTUNE_SMB_PASSWORD", PASSWORD)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Entries a run left in a share directory (it must leave none).
pub(crate) fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("nastune-bench-"))
        .collect()
}

#[test]
fn every_workload_runs_records_fio_names_and_cleans_up() {
    let Some(s) = Smbd::start("") else { return };
    let db = tempfile::tempdir().unwrap();
    let o = bench(
        &s,
        db.path(),
        "rw",
        &["--size", "8M", "--files", "16", "--json"],
    );
    assert!(o.status.success(), "{}\n{}", stderr(&o), s.log());
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["server_local"], true);
    let run = &v["runs"][0];
    assert_eq!(run["security"], "plain");
    assert_eq!(run["session"]["dialect"], "3.1.1");
    assert_eq!(run["session"]["signing"], serde_json::Value::Null);
    assert!(run["session"]["credits_granted"].as_u64().unwrap() >= 4);
    let labels: Vec<String> = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["workload"].as_str().unwrap(),
                r["phase"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        labels,
        [
            "seq-write ",
            "seq-read ",
            "small-files write",
            "small-files read",
            "small-files delete",
            "metadata list-stat"
        ]
    );
    for r in run["results"].as_array().unwrap() {
        assert!(r["iops"].as_f64().unwrap() > 0.0, "{r}");
        assert!(
            r["clat_ns"]["percentile"]["99.000000"].as_u64().unwrap() > 0,
            "{r}"
        );
        assert!(
            r["server"]["stages"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["stage"] == "smbd"),
            "{r}"
        );
    }
    let seq = &run["results"][0];
    assert_eq!(seq["bytes"], 8 << 20);
    assert!(seq["bw_bytes"].as_f64().unwrap() > 0.0);
    assert_eq!(
        run["results"][2]["files_per_sec"],
        run["results"][2]["iops"]
    );
    // Every phase that moves bytes keeps its rate per interval (1 s by
    // default), adding up to its bytes; deleting and listing move none.
    let with_series: Vec<String> = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .zip(&labels)
        .filter(|(r, _)| r["timeline"].is_object())
        .map(|(r, label)| {
            let points = r["timeline"]["points"].as_array().unwrap();
            let sum: u64 = points.iter().map(|p| p["bytes"].as_u64().unwrap()).sum();
            assert_eq!(sum, r["bytes"].as_u64().unwrap(), "{label}: {r}");
            label.trim().to_string()
        })
        .collect();
    assert_eq!(
        with_series,
        [
            "seq-write",
            "seq-read",
            "small-files write",
            "small-files read"
        ]
    );
    assert!(
        leftovers(&s.share_path("rw")).is_empty(),
        "{:?}",
        leftovers(&s.share_path("rw"))
    );
    // Stored, with the command line but never the password.
    let h = nastune()
        .args(["history", "list", "--kind", "bench-smb", "--json", "--db"])
        .arg(db.path().join("nastune.db"))
        .output()
        .unwrap();
    assert!(h.status.success(), "{}", stderr(&h));
    let text = stdout(&h);
    assert!(text.contains("bench smb"), "{text}");
    assert!(!text.contains(PASSWORD), "{text}");
}

#[test]
fn compare_security_signs_encrypts_and_prints_slowdowns() {
    let Some(s) = Smbd::start("") else { return };
    let db = tempfile::tempdir().unwrap();
    let args = [
        "--size",
        "4M",
        "--files",
        "8",
        "--workload",
        "seq-write,seq-read",
        "--compare-security",
    ];
    let o = bench(&s, db.path(), "rw", &[&args[..], &["--json"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let runs = v["runs"].as_array().unwrap();
    let security: Vec<&str> = runs
        .iter()
        .map(|r| r["security"].as_str().unwrap())
        .collect();
    assert_eq!(security, ["plain", "sign", "encrypt"]);
    assert_eq!(runs[1]["session"]["signing"], "aes-gmac");
    assert_eq!(runs[1]["session"]["cipher"], serde_json::Value::Null);
    assert_eq!(runs[2]["session"]["cipher"], "aes128-gcm");
    let slow = v["slowdowns"].as_array().unwrap();
    assert_eq!(slow.len(), 4, "{slow:?}");
    assert!(slow.iter().all(|s| s["factor"].as_f64().unwrap() > 0.0));
    let text = bench(&s, db.path(), "rw", &args);
    assert!(text.status.success(), "{}", stderr(&text));
    let out = stdout(&text);
    assert!(out.contains("slowdown against plain"), "{out}");
    assert!(out.contains("encryption AES-128-GCM"), "{out}");
    assert!(leftovers(&s.share_path("rw")).is_empty());
}

fn fails_with(o: &Output, want: &str) {
    assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
    assert!(stderr(o).contains(want), "{}", stderr(o));
}

#[test]
fn errors_say_what_to_change_and_leave_nothing_behind() {
    let Some(s) = Smbd::start("") else { return };
    let db = tempfile::tempdir().unwrap();
    let quick = ["--size", "1M", "--files", "2"];
    let o = nastune()
        .args(["bench", "smb", &s.unc("rw"), "--user", USER, "--no-store"])
        .env("NASTUNE_SMB_PASSWORD", "wrong")
        .output()
        .unwrap();
    fails_with(&o, "check --user and the password");
    fails_with(
        &bench(&s, db.path(), "nosuch", &quick),
        "share 'nosuch' does not exist",
    );
    fails_with(&bench(&s, db.path(), "ro", &quick), "read-only");
    let o = bench(
        &s,
        db.path(),
        "small",
        &["--size", "16M", "--workload", "seq-write"],
    );
    fails_with(&o, "free space on it or pass a smaller --size");
    assert!(
        leftovers(&s.share_path("small")).is_empty(),
        "disk full left files"
    );
    // The default size fits what the share has room for.
    let o = bench(
        &s,
        db.path(),
        "small",
        &["--workload", "seq-write", "--block", "64K"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = nastune()
        .args(["bench", "smb", &s.unc("rw"), "--user", USER, "--no-store"])
        .env_remove("NASTUNE_SMB_PASSWORD")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    fails_with(&o, "NASTUNE_SMB_PASSWORD");
}

#[test]
fn ctrl_c_exits_130_and_removes_the_directory() {
    let Some(s) = Smbd::start("") else { return };
    let share = s.share_path("rw");
    let mut child = Command::new(env!("CARGO_BIN_EXE_nastune"))
        .args([
            "--no-store",
            "bench",
            "smb",
            &s.unc("rw"),
            "--user",
            USER,
            "--size",
            "4G",
        ])
        .args(["--workload", "seq-write", "--block", "64K", "--depth", "1"])
        .env("NASTUNE_SMB_PASSWORD", PASSWORD)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while leftovers(&share).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the run never created its directory"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill on the pid of a child we spawned and have not reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(leftovers(&share).is_empty(), "{:?}", leftovers(&share));
}

#[test]
fn a_connection_the_server_drops_is_an_error_and_leaves_nothing_behind() {
    let Some(s) = Smbd::start("") else { return };
    let share = s.share_path("rw");
    let child = Command::new(env!("CARGO_BIN_EXE_nastune"))
        .args([
            "--no-store",
            "bench",
            "smb",
            &s.unc("rw"),
            "--user",
            USER,
            "--size",
            "4G",
        ])
        .args(["--workload", "seq-write", "--block", "64K", "--depth", "1"])
        .env("NASTUNE_SMB_PASSWORD", PASSWORD)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while leftovers(&share).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the run never created its directory"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    let pids = s.connection_pids();
    assert!(!pids.is_empty(), "no smbd serves the run");
    for pid in pids {
        // SAFETY: SIGKILL to a process of the smbd this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("closed the connection"),
        "{}",
        stderr(&o)
    );
    assert!(leftovers(&share).is_empty(), "{:?}", leftovers(&share));
}

#[test]
fn without_the_feature_is_a_clear_error() {
    // The default build has the feature; its help names the command.
    let o = nastune().args(["bench", "smb", "--help"]).output().unwrap();
    assert!(
        stdout(&o).contains("NASTUNE_SMB_PASSWORD"),
        "{}",
        stdout(&o)
    );
    let o = nastune()
        .args(["bench", "smb", "nas/share", "--no-store"])
        .output()
        .unwrap();
    fails_with(&o, "//HOST[:PORT]/SHARE[/DIR]");
}

/// `nastune --no-store check --json --smb` (share `rw` of `s`, no TCP or
/// cipher tests, no settling) run in `cwd` with `args`: its document.
fn check_smb_json(s: &Smbd, cwd: &Path, args: &[&str]) -> serde_json::Value {
    check_smb_json_via(nastune(), s, cwd, args)
}

/// [`check_smb_json`] run by `command` (nastune inside a namespace, say).
fn check_smb_json_via(
    mut command: Command,
    s: &Smbd,
    cwd: &Path,
    args: &[&str],
) -> serde_json::Value {
    let o = command
        .current_dir(cwd)
        .args(["--no-store", "check", "--skip-tcp", "--skip-crypto"])
        .args(["--smb", &s.unc("rw"), "--smb-user", USER])
        .args(args)
        .args(["--settle", "0", "--json"])
        .env("NASTUNE_SMB_PASSWORD", PASSWORD)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}\n{}", stderr(&o), s.log());
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// `check --smb` run by `command` from a directory elsewhere, without --dir,
/// against `s`'s share: the disk test ran in the share's directory and the
/// share's path is the served one. The document.
fn check_in_the_shares_filesystem(command: Command, s: &Smbd) -> serde_json::Value {
    let elsewhere = tempfile::tempdir().unwrap();
    let v = check_smb_json_via(
        command,
        s,
        elsewhere.path(),
        &[
            "--disk-seconds",
            "1",
            "--disk-size",
            "8M",
            "--smb-size",
            "16M",
        ],
    );
    let share_dir = std::fs::canonicalize(s.share_path("rw")).unwrap();
    let disks = v["measurements"]["disk"].as_array().expect("disk figures");
    // The test file the disk bench made and removed, in the share's directory.
    let measured = Path::new(disks[0]["path"].as_str().unwrap());
    assert_eq!(
        measured.parent(),
        Some(share_dir.as_path()),
        "{:#}",
        v["measurements"]
    );
    let service = &v["measurements"]["services"][0];
    assert_eq!(service["share_path"].as_str(), share_dir.to_str());
    v
}

/// `check --smb` against a share this box serves, without --dir: the disk
/// tests run on the share's own filesystem (the storage stage of the path
/// checked), not in the current directory, and the copy's cores are the
/// serving smbd's affinity read from /proc.
#[test]
fn check_with_a_served_share_measures_the_shares_filesystem() {
    let Some(s) = Smbd::start("") else { return };
    let v = check_in_the_shares_filesystem(nastune(), &s);
    let service = &v["measurements"]["services"][0];
    let source = service["cores"]["source"].as_str().unwrap_or_default();
    assert!(source.starts_with("smbd's"), "{service:#}");
}

/// Deletes a network namespace on drop.
struct Namespace(String);

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// The same, on a box whose socket table is larger than a whole-file read
/// (4 MiB): 40,000 connections in TIME_WAIT in a namespace of their own,
/// with smbd there too. Read whole, /proc/net/tcp was refused as too large
/// and the share was not seen as served here (the full test suite's churn
/// reached this size on the test machine, and the test above failed there).
#[test]
fn a_served_share_is_seen_beside_tens_of_thousands_of_closed_connections() {
    use crate::util::{Need, require};
    if !require(&[Need::Root, Need::Tool("ip"), Need::Tool("python3")]) {
        return;
    }
    let ns = Namespace(format!("nastune-tw-{}", std::process::id()));
    let ip = |args: &[&str]| {
        let o = Command::new("ip").args(args).output().unwrap();
        assert!(o.status.success(), "ip {args:?}: {}", stderr(&o));
    };
    ip(&["netns", "add", &ns.0]);
    ip(&["-n", &ns.0, "link", "set", "lo", "up"]);
    let Some(s) = Smbd::start_in(&ns.0, std::net::Ipv4Addr::LOCALHOST, "") else {
        return;
    };
    // The client closes first, so each connection stays 60 s in TIME_WAIT
    // on the client's side; two listeners give 56,000 ephemeral ports.
    let churn = r#"
import socket
ls = []
for _ in range(2):
    l = socket.socket()
    l.bind(("127.0.0.1", 0))
    l.listen(1024)
    ls.append(l)
for i in range(40000):
    l = ls[i % 2]
    c = socket.create_connection(l.getsockname())
    a, _ = l.accept()
    c.close()
    a.close()
print(len(open("/proc/net/tcp").read()))
"#;
    let o = Command::new("ip")
        .args(["netns", "exec", &ns.0, "python3", "-c", churn])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let table: u64 = stdout(&o).trim().parse().unwrap();
    assert!(table > 4 << 20, "/proc/net/tcp is only {table} bytes");
    let mut in_ns = Command::new("ip");
    in_ns.args(["netns", "exec", &ns.0, env!("CARGO_BIN_EXE_nastune")]);
    check_in_the_shares_filesystem(in_ns, &s);
}

/// `check --smb` against a share on this box: the share's path is found from
/// the running smbd's own configuration, the copy's per-byte costs give the
/// path a shared-CPU stage, and the model sets its prediction next to what
/// the copy measured, with what-ifs: the model checked end to end on a real smbd.
#[test]
fn check_with_smb_models_the_share_path_against_the_copy() {
    let Some(s) = Smbd::start("") else { return };
    let v = check_smb_json(&s, Path::new("."), &["--skip-disk", "--smb-size", "512M"]);
    let services = v["measurements"]["services"].as_array().expect("services");
    assert_eq!(services[0]["share"], "rw");
    assert_eq!(services[0]["server_local"], true);
    assert!(services[0]["read_bytes_per_sec"].as_f64().unwrap() > 0.0);
    let smbd = services[0]["read_costs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["stage"] == "smbd")
        .expect("smbd's cost per byte");
    assert_eq!(smbd["single_threaded"], true);
    // The path of the share's filesystem carries the model.
    let share_dir = s.share_path("rw");
    let modelled: Vec<&serde_json::Value> = v["paths"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| !p["model"].is_null())
        .collect();
    assert_eq!(
        modelled.len(),
        2,
        "read and write of {}: {v:#}",
        share_dir.display()
    );
    for p in modelled {
        let m = &p["model"];
        let (pred, meas) = (
            m["predicted_bytes_per_sec"].as_f64().unwrap(),
            m["measured_bytes_per_sec"].as_f64().unwrap(),
        );
        let miss = m["miss_pct"].as_f64().unwrap();
        assert!(((pred - meas) / meas * 100.0 - miss).abs() < 1e-6);
        assert!(m["limit"].is_string(), "{m}");
        let arithmetic = m["cpu"]["arithmetic"].as_str().unwrap();
        assert!(arithmetic.contains("ns/B"), "{arithmetic}");
        let stages: Vec<&str> = p["stages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert!(stages.contains(&"cpu"), "{stages:?}");
        let changes: Vec<&str> = m["what_ifs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["change"].as_str().unwrap())
            .collect();
        assert!(
            changes.contains(&"the client on another machine"),
            "{changes:?}"
        );
        // A miss beyond 25 % is a finding, never hidden.
        if miss.abs() > 25.0 {
            assert!(
                v["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|f| f["rule_id"] == "path-model-miss"),
                "{miss}"
            );
        }
    }
    assert!(leftovers(&share_dir).is_empty());
}
