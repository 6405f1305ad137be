use crate::util::*;

#[test]
fn check_measures_advises_and_names_each_paths_limit() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let o = run_with_db(
        dir.path(),
        &[
            "check",
            "--json",
            "--disk-seconds",
            "1",
            "--disk-size",
            "32M",
            "--dir",
            work.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert!(v["elapsed_secs"].as_f64().unwrap() < 90.0);
    let disk = &v["measurements"]["disk"][0];
    assert!(
        disk["seq_read_bytes_per_sec"].as_f64().unwrap() > 0.0,
        "{disk}"
    );
    assert!(
        disk["seq_write_bytes_per_sec"].as_f64().unwrap() > 0.0,
        "{disk}"
    );
    assert!(!v["measurements"]["crypto"].as_array().unwrap().is_empty());
    assert!(
        v["measurements"]["tcp_loopback_bytes_per_sec"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    let paths = v["paths"].as_array().unwrap();
    assert!(paths.len() >= 2, "a read and a write path: {paths:?}");
    for p in paths {
        let i = p["limiting_stage"].as_u64().expect("a limit was measured") as usize;
        assert!(p["stages"][i]["ceiling_bytes_per_sec"].as_f64().unwrap() > 0.0);
    }
    // The temporary file is gone and the run is stored with its documents.
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);
    let o = run_with_db(
        dir.path(),
        &["history", "list", "--kind", "check", "--json"],
    );
    let runs: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let id = runs["runs"][0]["id"].as_i64().unwrap();
    let o = run_with_db(dir.path(), &["history", "show", &id.to_string(), "--json"]);
    let shown: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let kinds: Vec<&str> = shown["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["snapshot", "disk", "crypto", "net", "check"]);

    // The report of the check run shows its findings and its bottleneck.
    let page = dir.path().join("check.html");
    let o = run_with_db(
        dir.path(),
        &["report", &id.to_string(), "--html", page.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<h2 id=\"bottleneck\">Bottleneck</h2>"),
        "{html}"
    );
    for p in paths {
        assert!(html.contains(p["name"].as_str().unwrap()), "{}", p["name"]);
    }
    let findings = v["findings"].as_array().unwrap();
    if findings.is_empty() {
        assert!(html.contains("No findings."));
    }
    for f in findings {
        assert!(html.contains(f["rule_id"].as_str().unwrap()), "{f}");
    }
    assert!(
        !html.contains("No advise"),
        "check's findings were not found"
    );
    crate::report::check_html(&page, 2);

    // Exported, imported into an empty store: the same page.
    let o = run_with_db(dir.path(), &["history", "export", &id.to_string()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let file = dir.path().join("runs.json");
    std::fs::write(&file, &o.stdout).unwrap();
    let other = tempfile::tempdir().unwrap();
    let o = run_with_db(other.path(), &["history", "import", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(&format!("as {id}")), "{}", stdout(&o));
    let page2 = other.path().join("check.html");
    let o = run_with_db(
        other.path(),
        &["report", &id.to_string(), "--html", page2.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&page2).unwrap(), html);
}

#[test]
fn skipped_measurements_are_said_not_hidden() {
    let o = nastune()
        .args([
            "check",
            "--no-store",
            "--skip-disk",
            "--skip-crypto",
            "--skip-tcp",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("not measured: disk: skipped (--skip-disk)"),
        "{text}"
    );
    assert!(
        text.contains("not measured: crypto: skipped (--skip-crypto)"),
        "{text}"
    );
    assert!(
        text.contains("not measured: tcp: skipped (--skip-tcp)"),
        "{text}"
    );
    assert!(text.contains("Findings"), "{text}");
    // Nothing was stored, so no command to show it is offered.
    assert!(!text.contains("history show"), "{text}");
    assert!(text.contains("not stored (--no-store)"), "{text}");
}

#[test]
fn bad_dir_is_a_clear_error() {
    let o = nastune()
        .args(["check", "--no-store", "--dir", "/nonexistent/dir"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("'/nonexistent/dir'"), "{}", stderr(&o));
}
