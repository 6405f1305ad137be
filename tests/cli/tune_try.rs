//! `nastune tune try` and `tune export`: a read-ahead change tried for real on a
//! loop device (inside a private mount namespace, so /etc is never written),
//! refusals, a crash in the middle of a try undone by `tune rollback`, and the
//! exported files against what `tune apply` persists.

use std::collections::BTreeSet;
use std::path::Path;

use crate::tune::{
    Loop, PrivateEtc, assert_same_tree, attach_loop, copy_box, json_of, run_ok, tree_state,
};
use crate::util::*;

/// A loop device over `mib` MiB of real (not sparse) data in `dir`; `None`
/// (after saying why) when not root.
fn loop_with_data(dir: &Path, name: &str, mib: usize) -> Option<Loop> {
    if !require(&[Need::Root, Need::Tool("losetup")]) {
        return None;
    }
    let img = dir.join(name);
    let mut data = vec![0u8; mib << 20];
    let mut x = 0x9e37_79b9_u32;
    for b in data.iter_mut() {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *b = x as u8;
    }
    std::fs::write(&img, data).unwrap();
    Some(attach_loop(&img))
}

fn read_ahead_path(dev: &Loop) -> String {
    format!(
        "/sys/block/{}/queue/read_ahead_kb",
        dev.0.trim_start_matches("/dev/")
    )
}

fn read_ahead(dev: &Loop) -> String {
    std::fs::read_to_string(read_ahead_path(dev))
        .unwrap()
        .trim()
        .to_string()
}

/// The verdict, the kept flag, the final value and the numbers agree.
fn assert_consistent(doc: &serde_json::Value, runs_per_side: usize) {
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2 * runs_per_side, "{doc}");
    let side = |s: &str| -> Vec<f64> {
        runs.iter()
            .filter(|r| r["side"] == s)
            .map(|r| r["value"].as_f64().unwrap())
            .collect()
    };
    let (a, b) = (side("baseline"), side("changed"));
    assert_eq!((a.len(), b.len()), (runs_per_side, runs_per_side));
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(1.0);
    assert!(close(doc["baseline"]["mean"].as_f64().unwrap(), mean(&a)));
    assert!(close(doc["changed"]["mean"].as_f64().unwrap(), mean(&b)));
    let diff = doc["diff"].as_f64().unwrap();
    assert!(close(diff, mean(&b) - mean(&a)), "{doc}");
    let (lo, hi) = (
        doc["ci_low"].as_f64().unwrap(),
        doc["ci_high"].as_f64().unwrap(),
    );
    assert!(lo <= diff && diff <= hi, "{doc}");
    let keep = doc["verdict"] == "keep";
    // Higher is better for MB/s: keep only with the whole interval above zero.
    assert_eq!(keep, lo > 0.0, "{doc}");
    assert_eq!(doc["kept"], keep, "{doc}");
    let expected = if keep {
        &doc["change"]["new"]
    } else {
        &doc["change"]["old"]
    };
    assert_eq!(&doc["final_value"], expected, "{doc}");
}

/// The stored `tune-try` document holds the same numbers as the output.
fn stored_try(db: &Path, run: i64) -> serde_json::Value {
    let c = rusqlite::Connection::open(db).unwrap();
    let (kind, body): (String, String) = c
        .query_row(
            "SELECT r.kind, d.body FROM runs r JOIN documents d ON d.run_id = r.id \
             WHERE r.id = ?1 AND d.kind = 'tune-try'",
            [run],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(kind, "tune-try");
    serde_json::from_str(&body).unwrap()
}

#[test]
fn try_read_ahead_on_a_loop_device_keeps_or_reverts_by_its_numbers() {
    let t = tempfile::tempdir().unwrap();
    let Some(dev) = loop_with_data(t.path(), "measured.img", 64) else {
        return;
    };
    let other = loop_with_data(t.path(), "other.img", 1).unwrap();
    let name = dev.0.trim_start_matches("/dev/").to_string();
    let other_name = other.0.trim_start_matches("/dev/").to_string();
    std::fs::write(read_ahead_path(&dev), "4").unwrap();
    let other_orig = read_ahead(&other);
    let etc = PrivateEtc::new();
    let db = etc_db(&etc);
    let prefix = ["unshare", "-m", "--propagation", "private"];
    let bench = format!("buffered-seq-read:{}", dev.0);
    let try_args = |set: &str, extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "tune",
            "try",
            "--yes",
            "--json",
            "--set",
            set,
            "--bench",
            &bench,
            "--runs",
            "5",
            "--runtime",
            "500ms",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };

    // 4 -> 1024: read-ahead matters to buffered sequential reads.
    let args = try_args(&format!("sysfs:block/{name}/queue/read_ahead_kb=1024"), &[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let doc = json_of(&etc.run(&prefix, &args));
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["change"]["old"], "4");
    // Decimal MB/s, as bench disk says the same test's result.
    assert_eq!(doc["metric"]["name"], "read_mb_per_sec");
    assert_eq!(doc["metric"]["unit"], "MB/s");
    assert_consistent(&doc, 5);
    assert_eq!(doc["final_value"], read_ahead(&dev));
    let rules = etc.rules_d().join("99-zz-nastune.rules");
    assert_eq!(
        rules.exists(),
        doc["kept"] == true,
        "persistence follows the verdict"
    );
    let session = doc["session"].as_i64().unwrap();
    let stored = stored_try(&db, session);
    assert_eq!(stored["runs"], doc["runs"]);
    assert_eq!(stored["verdict"], doc["verdict"]);
    assert_eq!(stored["ci_low"], doc["ci_low"]);
    assert!(
        doc["diff"].as_f64().unwrap() > 0.0,
        "1024 KiB read-ahead was slower than 4 KiB: {doc}"
    );
    if doc["kept"] == true {
        etc.run_ok(&prefix, &["tune", "rollback", &session.to_string()]);
    } else {
        println!(
            "NOTE: this machine's noise hid the read-ahead gain: {}",
            doc["reason"]
        );
    }
    assert_eq!(read_ahead(&dev), "4");
    assert!(!rules.exists());

    // Another device's read-ahead is refused: the workload does not read it.
    let new = if other_orig == "2048" { "4096" } else { "2048" };
    let args = try_args(
        &format!("sysfs:block/{other_name}/queue/read_ahead_kb={new}"),
        &[],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = etc.run(&prefix, &args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "is on '{name}', but 'sysfs:block/{other_name}/queue/read_ahead_kb' changes '{other_name}'"
        )),
        "{}",
        stderr(&o)
    );
    assert_eq!(read_ahead(&other), other_orig);

    // An irrelevant change (swappiness, with the 64 MiB read far below RAM) is
    // not kept.
    let swappiness = || {
        std::fs::read_to_string("/proc/sys/vm/swappiness")
            .unwrap()
            .trim()
            .to_string()
    };
    let swappiness_orig = swappiness();
    let new = if swappiness_orig == "10" { "20" } else { "10" };
    let args = try_args(
        &format!("sysctl:vm.swappiness={new}"),
        // Bursts of load from other processes can fake a few percent.
        &["--min-gain", "20", "--confidence", "0.99"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // One retry: a burst of load on a shared 2-core machine can fake a gain once
    // (the kept change is rolled back before the retry); twice means a bias.
    let mut kept_by_noise = 0;
    for attempt in 1..=2 {
        let doc = json_of(&etc.run(&prefix, &args));
        assert_consistent(&doc, 5);
        if doc["verdict"] == "revert" {
            break;
        }
        kept_by_noise += 1;
        println!("NOTE: attempt {attempt} kept an irrelevant change: {doc}");
        let session = doc["session"].as_i64().unwrap().to_string();
        etc.run_ok(&prefix, &["tune", "rollback", &session]);
    }
    assert!(kept_by_noise < 2, "an irrelevant change was kept twice");
    assert_eq!(swappiness(), swappiness_orig);
    assert!(!rules.exists());

    // The report shows both trials, before and after, with their verdicts.
    let ids: Vec<String> = {
        let c = rusqlite::Connection::open(&db).unwrap();
        let mut q = c
            .prepare("SELECT id FROM runs WHERE kind = 'tune-try' ORDER BY id")
            .unwrap();
        q.query_map([], |r| r.get::<_, i64>(0))
            .unwrap()
            .map(|i| i.unwrap().to_string())
            .collect()
    };
    assert_eq!(ids.len(), 2 + kept_by_noise, "{ids:?}");
    let last = ids.last().unwrap();
    let md = stdout(&etc.run_ok(&prefix, &["report", &ids[0], last, "--markdown", "-"]));
    assert!(md.contains("### Tuning trials"), "{md}");
    assert!(
        md.contains(&format!("block/{name}/queue/read_ahead_kb '4' -> '1024'")),
        "{md}"
    );
    assert!(md.contains("Rolled back: "), "{md}");
    let html = t.path().join("trials.html");
    etc.run_ok(
        &prefix,
        &["report", &ids[1], "--html", html.to_str().unwrap()],
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<h2>Tuning trials</h2>") && page.contains("<svg"),
        "{page}"
    );

    // A no-op change is refused before anything is measured or written.
    let args = try_args(&format!("sysfs:block/{name}/queue/read_ahead_kb=4"), &[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = etc.run(&prefix, &args);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(&format!(
            "nothing to try: 'sysfs:block/{name}/queue/read_ahead_kb' is skipped (already '4')"
        )),
        "{}",
        stderr(&o)
    );
}

fn etc_db(etc: &PrivateEtc) -> std::path::PathBuf {
    etc.sysctl_d().parent().unwrap().join("nastune.db")
}

/// A data file for the workload when the change goes to a tree.
pub(crate) fn data_file(dir: &Path) -> String {
    let p = dir.join("data.bin");
    std::fs::write(&p, vec![0x5a_u8; 4 << 20]).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn try_refuses_a_workload_on_another_device_than_the_change() {
    let (t, dir) = copy_box("oldguide");
    let before = tree_state(&dir);
    // The tree's mmcblk1 (an SD card) is not what the data file sits on here.
    let o = run_with_db(
        t.path(),
        &[
            "tune",
            "try",
            "--root",
            dir.to_str().unwrap(),
            "--yes",
            "--set",
            "sysfs:block/mmcblk1/queue/read_ahead_kb=1024",
            "--bench",
            &format!("buffered-seq-read:{}", data_file(t.path())),
            "--runs",
            "3",
            "--runtime",
            "50ms",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "changes 'mmcblk1': the trial would measure a device the change does not touch"
        ),
        "{}",
        stderr(&o)
    );
    assert_same_tree(&before, &dir, "a refused try");
}

#[test]
fn try_on_a_tree_refuses_what_it_cannot_switch_and_survives_a_crash() {
    let (t, dir) = copy_box("oldguide");
    let before = tree_state(&dir);
    let root = dir.to_str().unwrap();
    let bench = format!("buffered-seq-read:{}", data_file(t.path()));
    let try_args = |id: &str| {
        vec![
            "tune".to_string(),
            "try".into(),
            "--root".into(),
            root.into(),
            "--yes".into(),
            "--json".into(),
            id.into(),
            "--bench".into(),
            bench.clone(),
            "--runs".into(),
            "3".into(),
            "--runtime".into(),
            "50ms".into(),
        ]
    };
    let refused = |id: &str, why: &str| {
        let args = try_args(id);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run_with_db(t.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{id}");
        assert!(stderr(&o).contains(why), "{id}: {}", stderr(&o));
    };
    refused(
        "smb1-enabled",
        "'smb.conf:[global]:server min protocol' is skipped (advice only",
    );
    refused("tcp-buffer-max-lowered", "selects 2 changes");
    refused("no-such-rule", "'no-such-rule' matches no finding");
    assert_same_tree(&before, &dir, "refused tries");

    // A crash right after the change's first write: the journal already holds
    // the old value, so rollback restores the tree byte for byte.
    let args = try_args("swappiness-for-swap-kind");
    let o = nastune()
        .args(&args)
        .arg("--db")
        .arg(t.path().join("nastune.db"))
        .env("NASTUNE_TUNE_FAULT_AFTER", "2")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(86), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(dir.join("proc/sys/vm/swappiness")).unwrap(),
        "100\n"
    );
    run_ok(t.path(), &["tune", "rollback"]);
    assert_same_tree(&before, &dir, "rollback after a crash mid-try");

    // To the end: the tree holds what the verdict says.
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let doc = json_of(&run_with_db(t.path(), &args));
    assert_eq!(doc["change"]["setting"], "sysctl:vm.swappiness");
    assert_consistent(&doc, 3);
    let text = std::fs::read_to_string(dir.join("proc/sys/vm/swappiness")).unwrap();
    assert_eq!(text.trim(), doc["final_value"].as_str().unwrap());
    if doc["kept"] == false {
        assert_same_tree(&before, &dir, "reverted try");
    } else {
        run_ok(t.path(), &["tune", "rollback"]);
        assert_same_tree(&before, &dir, "rollback of a kept try");
    }
}

/// Non-comment lines of a sysctl.d file as a set of `key = value`.
fn sysctl_lines(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

#[test]
fn export_writes_each_format_and_the_sysctl_file_apply_would_persist() {
    let (t, dir) = copy_box("oldguide");
    let root = dir.to_str().unwrap();
    let export = |format: &str| {
        let o = run_with_db(
            t.path(),
            &["tune", "export", "--root", root, "--format", format],
        );
        assert!(o.status.success(), "{format}: {}", stderr(&o));
        stdout(&o)
    };
    let sysctl = export("sysctl");
    assert!(
        sysctl.starts_with("# ==> etc/sysctl.d/99-zz-nastune.conf <==\n"),
        "{sysctl}"
    );
    assert!(sysctl.contains("vm.swappiness = 100\n"), "{sysctl}");
    let udev = export("udev");
    assert!(udev.starts_with("# ==> etc/udev/rules.d/99-zz-nastune.rules <==\n"));
    assert!(
        udev.contains("KERNEL==\"sda\", ATTR{queue/read_ahead_kb}=\"512\""),
        "{udev}"
    );
    let tuned = export("tuned");
    assert!(
        tuned.starts_with("# ==> nastune/tuned.conf <==\n"),
        "{tuned}"
    );
    assert!(tuned.contains("\n[sysctl]\n") && tuned.contains("vm.swappiness=100\n"));
    let ansible = export("ansible");
    assert!(ansible.contains("ansible.posix.sysctl:"), "{ansible}");
    // Skipped items are named on stderr, not silently dropped.
    let o = run_with_db(
        t.path(),
        &["tune", "export", "--root", root, "--format", "sysctl"],
    );
    assert!(stderr(&o).contains("not exported: ethtool:eth0:tx-tcp-segmentation"));

    // Into a directory, then against what apply persists for the same plan.
    let out = t.path().join("out");
    run_ok(
        t.path(),
        &[
            "tune",
            "export",
            "--root",
            root,
            "--format",
            "sysctl",
            "--output",
            out.to_str().unwrap(),
        ],
    );
    let exported = std::fs::read_to_string(out.join("etc/sysctl.d/99-zz-nastune.conf")).unwrap();
    assert_eq!(
        format!("# ==> etc/sysctl.d/99-zz-nastune.conf <==\n{exported}"),
        sysctl
    );
    let before = tree_state(&dir);
    run_ok(t.path(), &["tune", "apply", "--root", root, "--yes"]);
    run_ok(t.path(), &["tune", "confirm"]);
    let owned = std::fs::read_to_string(dir.join("etc/sysctl.d/99-zz-nastune.conf")).unwrap();
    assert_eq!(sysctl_lines(&exported), sysctl_lines(&owned));
    assert!(sysctl_lines(&owned).len() >= 5, "{owned}");
    run_ok(t.path(), &["tune", "rollback"]);
    assert_same_tree(&before, &dir, "after export and apply");
}

/// Ctrl-C in the middle of a trial, with the change in place: the run in
/// progress ends, the change is reverted, and the exit code is 130.
#[test]
fn ctrl_c_during_a_trial_reverts_the_change() {
    let t = tempfile::tempdir().unwrap();
    let tree = t.path().join("root");
    let key = tree.join("proc/sys/vm/swappiness");
    std::fs::create_dir_all(key.parent().unwrap()).unwrap();
    std::fs::write(&key, "60\n").unwrap();
    std::fs::create_dir_all(tree.join("etc/sysctl.d")).unwrap();
    let before = tree_state(&tree);
    let data = data_file(t.path());
    let child = nastune()
        .args(["tune", "try", "--yes", "--root"])
        .arg(&tree)
        .args(["--set", "sysctl:vm.swappiness=10", "--bench"])
        .arg(format!("rand-read:{data}"))
        .args(["--runs", "4", "--runtime", "1s", "--settle", "0", "--db"])
        .arg(t.path().join("nastune.db"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::fs::read_to_string(&key).unwrap() != "10\n" {
        assert!(
            std::time::Instant::now() < end,
            "the change was never applied"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: kill(2) of our own child, which has not been waited for.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(err.contains("the change was reverted"), "{err}");
    assert_same_tree(&before, &tree, "an interrupted trial");
}
