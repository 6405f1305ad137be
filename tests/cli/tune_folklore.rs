//! `nastune tune try --folklore` on a fixture tree with outdated settings,
//! judged by a real buffered read of a file: one measured row per recipe that
//! applies, the rest skipped with reasons, the tree byte-identical afterwards.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::tune::{QUICK_TRIAL, assert_same_tree, copy_box, json_of, tree_state};
use crate::tune_try::data_file;
use crate::util::*;

/// The whole disk a file lives on (`vda` for a file on `vda1`), from its
/// st_dev and /sys/dev/block; `None` on a filesystem without one (tmpfs, overlay).
fn disk_of(path: &Path) -> Option<String> {
    let dev = std::fs::metadata(path).ok()?.dev();
    let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff);
    let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0xff);
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let real = std::fs::canonicalize(&sys).ok()?;
    let disk = match sys.join("partition").exists() {
        true => real.parent()?.to_path_buf(),
        false => real,
    };
    Some(disk.file_name()?.to_str()?.to_string())
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn folklore(db_dir: &Path, root: &Path, bench: &str, json: bool) -> std::process::Output {
    let mut args = vec![
        "tune",
        "try",
        "--folklore",
        "--root",
        root.to_str().unwrap(),
        "--yes",
        "--bench",
        bench,
        "--runs",
        "2",
        "--runtime",
        "50ms",
        "--settle",
        "0",
    ];
    if json {
        args.push("--json");
    }
    run_with_db(db_dir, &args)
}

#[test]
fn folklore_measures_each_recipe_that_applies_and_leaves_the_tree_as_it_was() {
    let (t, dir) = copy_box("oldguide");
    let data = data_file(t.path());
    // The disk the data file is on, in the tree with a small read-ahead and a
    // scheduler to swap: the judge's reads pass through it, so those recipes
    // are exercised; the tree's own disks (sda…) are not, and are skipped.
    let disk = disk_of(Path::new(&data));
    match &disk {
        Some(d) => {
            write(&dir, &format!("sys/block/{d}/queue/read_ahead_kb"), "128\n");
            write(
                &dir,
                &format!("sys/block/{d}/queue/scheduler"),
                "[mq-deadline] kyber bfq none\n",
            );
        }
        None => eprintln!("the data file is on no block device: only sysctl recipes are measured"),
    }
    write(&dir, "proc/sys/vm/swappiness", "60\n");
    let before = tree_state(&dir);
    let doc = json_of(&folklore(
        t.path(),
        &dir,
        &format!("buffered-seq-read:{data}"),
        true,
    ));
    let rows = doc["rows"].as_array().unwrap();
    let measured: Vec<(&str, &serde_json::Value)> = rows
        .iter()
        .filter(|r| r["status"] == "measured")
        .map(|r| (r["recipe"].as_str().unwrap(), r))
        .collect();
    let mut want = vec!["swappiness-10"];
    if disk.is_some() {
        want = vec![
            "read-ahead-512k",
            "read-ahead-4m",
            "scheduler-none",
            "scheduler-bfq",
            "swappiness-10",
        ];
    }
    assert_eq!(
        measured.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        want,
        "{doc:#}"
    );
    let mut sessions = Vec::new();
    for (name, r) in &measured {
        let trial = &r["trial"];
        assert_eq!(trial["runs"].as_array().unwrap().len(), 4, "{name}");
        let (lo, hi) = (
            trial["ci_low"].as_f64().unwrap(),
            trial["ci_high"].as_f64().unwrap(),
        );
        assert!(
            lo.is_finite() && hi.is_finite() && lo <= hi,
            "{name}: {lo} {hi}"
        );
        assert!(
            ["helps", "no_effect", "hurts"].contains(&trial["effect"].as_str().unwrap()),
            "{name}"
        );
        // Never kept without --keep-helpful, whatever it measured.
        assert_eq!(trial["kept"], false, "{name}");
        assert_eq!(trial["workload"], format!("buffered-seq-read:{data}"));
        sessions.push(trial["session"].as_i64().unwrap());
        if let Some(d) = &disk
            && name.starts_with("read-ahead")
        {
            assert_eq!(r["old"], "128");
            assert_eq!(r["on"], d.as_str());
        }
    }
    sessions.dedup();
    assert_eq!(sessions.len(), measured.len(), "one stored run per trial");
    let skipped = |recipe: &str, on: Option<&str>| -> String {
        rows.iter()
            .find(|r| {
                r["recipe"] == recipe && r["status"] == "skipped" && on.is_none_or(|o| r["on"] == o)
            })
            .unwrap_or_else(|| panic!("{recipe} {on:?} not skipped: {doc:#}"))["reason"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        skipped("dirty-ratio-40", None).starts_with("dirty limits act on buffered writes only"),
        "{doc:#}"
    );
    assert_eq!(skipped("dirty-background-ratio-10", None), "already '10'");
    assert!(skipped("read-ahead-4m", Some("md0")).contains("it only raises it"));
    if disk.as_deref() != Some("sda") {
        assert!(
            skipped("scheduler-bfq", Some("sda"))
                .contains("the trial would measure a device the change does not touch"),
            "{doc:#}"
        );
    }
    assert!(skipped("txqueuelen-10000", Some("eth0")).contains("judge it with net:HOST"));
    assert!(skipped("smb-socket-options", None).contains("smb://127.0.0.1/SHARE"));
    assert_same_tree(&before, &dir, "after --folklore");
    // Each trial is an ordinary stored tune-try run, its session the run.
    let list = json_of(&run_with_db(t.path(), &["history", "list", "--json"]));
    let mut stored: Vec<i64> = list["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "tune-try" && r["status"] == "ok")
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    stored.sort();
    assert_eq!(stored, sessions);
}

#[test]
fn folklore_prints_a_table_of_measured_and_skipped_recipes() {
    let (t, dir) = copy_box("oldguide");
    write(&dir, "proc/sys/vm/swappiness", "60\n");
    let before = tree_state(&dir);
    let data = data_file(t.path());
    let o = folklore(t.path(), &dir, &format!("buffered-seq-read:{data}"), false);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let row = out
        .lines()
        .find(|l| l.starts_with("swappiness-10 "))
        .unwrap_or_else(|| panic!("{out}"));
    // recipe, setting, old -> new, change, interval, effect, state, session.
    assert!(row.contains("sysctl:vm.swappiness  60 -> 10"), "{row}");
    assert_eq!(row.matches(" %").count(), 3, "{row}");
    assert!(row.contains(" to "), "{row}");
    assert!(row.contains("reverted"), "{row}");
    assert!(out.contains("95 % interval"), "{out}");
    assert!(
        out.contains("  dirty-background-ratio-10: already '10'\n"),
        "{out}"
    );
    assert!(
        out.lines().any(
            |l| l.starts_with("  swappiness-10: TuneD throughput-performance")
                && l.ends_with("(advise rule 'swappiness-for-swap-kind')")
        ),
        "{out}"
    );
    assert_same_tree(&before, &dir, "after --folklore");
    // Several judges only with --folklore, --keep-helpful only with it.
    let bench = format!("buffered-seq-read:{data}");
    let refused = |extra: &[&str], why: &str| {
        let mut args = vec!["tune", "try", "--root", dir.to_str().unwrap(), "--yes"];
        args.extend(["--set", "sysctl:vm.swappiness=10", "--bench", &bench]);
        args.extend(extra);
        let o = run_with_db(t.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        assert!(stderr(&o).contains(why), "{}", stderr(&o));
    };
    refused(
        &["--bench", &bench],
        "2 judges given; tune try measures a change with one --bench (several only with \
         --folklore)",
    );
    refused(
        &["--keep-helpful"],
        "'--set <SETTING=VALUE>' cannot be used with '--keep-helpful'",
    );
    assert_same_tree(&before, &dir, "refused tries");
}

/// The network recipes for real: `--folklore` in the client namespace of a
/// tbf-shaped veth pair, judged by bench net to a `net serve` peer. The TCP
/// buffer recipes (per-namespace sysctls) and txqueuelen on the veth are
/// measured, the Samba recipes are skipped for want of an smb judge, and
/// afterwards every value is as it was, with nothing persisted.
#[test]
fn folklore_measures_the_network_recipes_over_a_shaped_veth() {
    use crate::netns_pair::{serve, shaped_pair_or_skip};
    let Some(ns) = shaped_pair_or_skip("folk", "100mbit", "32kb") else {
        return;
    };
    let _server = serve(&ns, 200);
    let dev = format!("vcfolk{}", std::process::id() % 100_000);
    let exec = ["ip", "netns", "exec", ns.client.as_str()];
    let state = || {
        let o = Command::new("ip")
            .args(["netns", "exec", &ns.client, "sh", "-c"])
            .arg(format!(
                "cat /proc/sys/net/ipv4/tcp_rmem /proc/sys/net/ipv4/tcp_wmem \
                 /sys/class/net/{dev}/tx_queue_len /sys/class/net/lo/tx_queue_len"
            ))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let before = state();
    let etc = crate::tune::PrivateEtc::new();
    let args = ["tune", "try", "--folklore", "--yes", "--json"];
    let judge = ["--bench", "net:10.77.0.1"];
    let doc = json_of(&etc.run(&exec, &[&args[..], &judge, &QUICK_TRIAL].concat()));
    let rows = doc["rows"].as_array().unwrap();
    let row = |recipe: &str, on: &str| {
        rows.iter()
            .find(|r| r["recipe"] == recipe && (on.is_empty() || r["on"] == on))
            .unwrap_or_else(|| panic!("no row {recipe} {on}: {doc:#}"))
    };
    for (recipe, on) in [
        ("tcp-rmem-2m", ""),
        ("tcp-wmem-2m", ""),
        ("txqueuelen-10000", dev.as_str()),
    ] {
        let r = row(recipe, on);
        assert_eq!(r["status"], "measured", "{recipe}: {r:#}");
        let trial = &r["trial"];
        assert_eq!(trial["workload"], "net:10.77.0.1:5201", "{recipe}");
        assert_eq!(trial["metric"]["name"], "mb_per_sec", "{recipe}");
        assert_eq!(trial["runs"].as_array().unwrap().len(), 4, "{recipe}");
        assert_eq!(trial["kept"], false, "{recipe}");
        let (lo, hi) = (
            trial["ci_low"].as_f64().unwrap(),
            trial["ci_high"].as_f64().unwrap(),
        );
        let effect = trial["effect"].as_str().unwrap();
        let want = if lo > 0.0 {
            "helps"
        } else if hi < 0.0 {
            "hurts"
        } else {
            "no_effect"
        };
        assert_eq!(effect, want, "{recipe}: {lo} {hi}");
    }
    // No recipe here edits smb.conf or touches a disk: all skipped for their judge.
    assert_eq!(row("smb-use-sendfile", "")["status"], "skipped");
    assert_eq!(state(), before);
    assert_eq!(std::fs::read_dir(etc.sysctl_d()).unwrap().count(), 0);
}

/// The Samba recipes for real: `--folklore` on a private smbd's tree, judged
/// by bench smb writing to its share. Each smb.conf recipe that differs is
/// measured with Samba reloaded between runs, and smb.conf is byte-identical
/// afterwards.
#[test]
fn folklore_measures_the_samba_recipes_against_a_real_smbd() {
    use crate::smbd::{PASSWORD, Smbd, USER};
    let Some(smbd) = Smbd::start("") else {
        return;
    };
    let before = std::fs::read(smbd.conf()).unwrap();
    let t = tempfile::tempdir().unwrap();
    let o = nastune()
        .args(["tune", "try", "--folklore", "--yes", "--json", "--root"])
        .arg(smbd.dir.path())
        .arg("--bench")
        .arg(format!("smb:{}", smbd.unc("rw")))
        .args([
            "--user",
            USER,
            "--smb-size",
            "8M",
            "--runs",
            "2",
            "--settle",
            "0",
        ])
        .arg("--db")
        .arg(t.path().join("nastune.db"))
        .env("NASTUNE_SMB_PASSWORD", PASSWORD)
        .output()
        .unwrap();
    let doc = json_of(&o);
    let rows = doc["rows"].as_array().unwrap();
    let smb_rows: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| r["recipe"].as_str().unwrap().starts_with("smb-"))
        .collect();
    assert_eq!(smb_rows.len(), 5, "{doc:#}");
    for r in smb_rows {
        let name = r["recipe"].as_str().unwrap();
        if r["status"] == "skipped" {
            // Only a value the smb.conf already has is skipped.
            assert!(
                r["reason"].as_str().unwrap().starts_with("already "),
                "{name}: {r:#}"
            );
            continue;
        }
        assert_eq!(r["status"], "measured", "{name}: {r:#}");
        let trial = &r["trial"];
        assert_eq!(trial["runs"].as_array().unwrap().len(), 4, "{name}");
        assert_eq!(trial["metric"]["name"], "mb_per_sec", "{name}");
        assert_eq!(trial["kept"], false, "{name}");
        assert!(
            r["setting"].as_str().unwrap().starts_with("smb.conf:"),
            "{name}"
        );
    }
    assert!(
        rows.iter()
            .any(|r| r["recipe"] == "smb-use-sendfile" && r["status"] == "measured"),
        "{doc:#}"
    );
    assert_eq!(std::fs::read(smbd.conf()).unwrap(), before, "smb.conf");
}
