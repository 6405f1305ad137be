use crate::util::*;

#[test]
fn list_show_and_remove_runs() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixtures().join("boxes/pogoplug-v4");
    for _ in 0..2 {
        let o = run_with_db(dir.path(), &["probe", "--root", root.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let o = run_with_db(dir.path(), &["history", "list", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let newest = runs[0]["id"].as_i64().unwrap();
    assert_eq!(runs[0]["kind"], "probe");

    let o = run_with_db(
        dir.path(),
        &["history", "show", &newest.to_string(), "--json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["documents"][0]["kind"], "snapshot");
    assert_eq!(
        v["documents"][0]["body"]["host"]["data"]["hostname"],
        "pogo"
    );

    let o = run_with_db(dir.path(), &["history", "rm", &newest.to_string()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run_with_db(dir.path(), &["history", "list"]);
    let text = stdout(&o);
    assert_eq!(text.lines().count(), 2, "header and one run: {text}");

    let o = run_with_db(dir.path(), &["history", "show", &newest.to_string()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not found"), "{}", stderr(&o));
    let o = run_with_db(dir.path(), &["history", "rm", "99999"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn two_processes_write_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixtures().join("boxes/rpi2-luks");
    let spawn = || {
        nastune()
            .args(["probe", "--root", root.to_str().unwrap(), "--db"])
            .arg(dir.path().join("nastune.db"))
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut children: Vec<_> = (0..6).map(|_| spawn()).collect();
    for c in &mut children {
        assert!(c.wait().unwrap().success());
    }
    let o = run_with_db(dir.path(), &["history", "list", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 6);
}

/// The run `history list --json` lists first (the newest).
fn newest_run(dir: &std::path::Path) -> serde_json::Value {
    let o = run_with_db(dir, &["history", "list", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    json_of(&o)["runs"][0].clone()
}

#[test]
fn history_show_prints_the_results_the_run_printed() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixtures().join("boxes/rk3399-raid5");
    let root = root.to_str().unwrap();
    let check = run_with_db(dir.path(), &["check", "--root", root]);
    assert!(check.status.success(), "{}", stderr(&check));
    let id = newest_run(dir.path())["id"].as_i64().unwrap().to_string();
    let o = run_with_db(dir.path(), &["history", "show", &id]);
    assert!(o.status.success(), "{}", stderr(&o));
    let shown = stdout(&o);
    // The record, then check's own summary, as check printed it.
    assert!(shown.starts_with(&format!("run        {id}\n")), "{shown}");
    assert!(shown.ends_with(&stdout(&check)), "{shown}");
    assert!(shown.contains("Bottlenecks"), "{shown}");

    let probe = run_with_db(dir.path(), &["probe", "--root", root]);
    assert!(probe.status.success(), "{}", stderr(&probe));
    let id = newest_run(dir.path())["id"].as_i64().unwrap().to_string();
    let shown = stdout(&run_with_db(dir.path(), &["history", "show", &id]));
    assert!(shown.ends_with(&stdout(&probe)), "{shown}");
}

#[test]
fn a_bench_run_is_recorded_as_starting_when_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let o = run_with_db(
        dir.path(),
        &[
            "bench",
            "crypto",
            "--no-kdf",
            "--cipher",
            "xts",
            "--size",
            "4096",
            "--depth",
            "1",
            "--duration",
            "3",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let run = newest_run(dir.path());
    let (started, finished) = (
        run["started_unix"].as_i64().unwrap(),
        run["finished_unix"].as_i64().unwrap(),
    );
    // At least one cipher measured for three seconds (was: both stamped at the end).
    assert!(finished - started >= 2, "{run}");
    let id = run["id"].to_string();
    let shown = stdout(&run_with_db(dir.path(), &["history", "show", &id]));
    assert!(!shown.contains("(0 s)"), "{shown}");
}
