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
