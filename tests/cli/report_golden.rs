//! Golden HTML and Markdown of every kind of run, from the store nastune 0.1
//! wrote (tests/fixtures/store/v0.1.db): a change to a report shows up here as
//! a diff to review, and runs stored by the last release keep reporting.

use crate::util::*;

/// Run ids in the fixture store and their kinds.
const RUNS: &[(&str, &str)] = &[
    ("1", "probe"),
    ("2", "advise"),
    ("3", "bench-disk-null"),
    ("4", "bench-disk"),
    ("5", "bench-crypto"),
    ("6", "bench-net"),
    ("7", "bench-net-rr"),
    ("8", "bench-http"),
    ("10", "check"),
    ("11", "watch"),
    ("12", "tune"),
];

fn report(db: &std::path::Path, ids: &[&str], format: &str) -> String {
    let o = nastune()
        .arg("report")
        .args(ids)
        .args([format, "-", "--db"])
        .arg(db)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "report {ids:?} {format}: {}",
        stderr(&o)
    );
    stdout(&o)
}

#[test]
fn every_kind_of_stored_run_reports_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v0.1.db");
    let fixture = fixtures().join("store/v0.1.db");
    std::fs::copy(&fixture, &db).unwrap();
    // A store from an older nastune is migrated by the first command that opens it
    // (a read too: migrations only add); after that, reporting must not write.
    let list = nastune()
        .args(["history", "list", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(list.status.success(), "{}", stderr(&list));
    let migrated = std::fs::read(&db).unwrap();
    let golden = fixtures().join("golden/report");
    for (id, kind) in RUNS {
        let md = report(&db, &[id], "--markdown");
        assert!(md.contains(&format!("run {id} (")), "{kind}: {md}");
        assert_golden(&golden.join(format!("{kind}.md")), &md);
        let html = report(&db, &[id], "--html");
        assert_golden(&golden.join(format!("{kind}.html")), &html);
    }
    // Before and after side by side; null-engine runs are labelled as such.
    let md = report(&db, &["3", "4"], "--markdown");
    assert!(md.contains("null engine: no I/O"), "{md}");
    assert_golden(&golden.join("disk-null-and-real.md"), &md);
    // Reporting reads only: the store file is untouched.
    assert!(
        std::fs::read(&db).unwrap() == migrated,
        "reporting wrote to the store"
    );
}

/// The one run kind the 0.1 store lacks: a `tune try` run (read-ahead 4 -> 1024 KiB
/// on a loop device, kept), built from its stored document
/// (tests/fixtures/docs/tune-try.json) and brought in with `history import`.
#[test]
fn a_tune_try_run_reports_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("docs/tune-try.json")).unwrap(),
    )
    .unwrap();
    let export = serde_json::json!({
        "format": "nastune-runs",
        "format_version": 1,
        "tool_version": "0.1.0",
        "exported_unix": 1795494886,
        "runs": [{
            "id": 1,
            "kind": "tune-try",
            "started_unix": 1795494872,
            "finished_unix": 1795494878,
            "status": "ok",
            "host_id": "a0d4a0b50b8a6bbb",
            "tool_version": "0.1.0",
            "command": "nastune tune try --set sysfs:block/loop0/queue/read_ahead_kb=1024 \
                        --bench buffered-seq-read:/dev/loop0 --runs 5 --runtime 500ms",
            "documents": [{"kind": "tune-try", "schema_version": 1, "body": doc}],
        }],
    });
    let file = dir.path().join("runs.json");
    std::fs::write(&file, export.to_string()).unwrap();
    let o = run_with_db(dir.path(), &["history", "import", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let db = dir.path().join("nastune.db");
    let golden = fixtures().join("golden/report");
    let md = report(&db, &["1"], "--markdown");
    assert!(
        md.contains("| 209.45 MiB/s | 1032.30 MiB/s | Kept: "),
        "{md}"
    );
    assert_golden(&golden.join("tune-try.md"), &md);
    let html = report(&db, &["1"], "--html");
    assert!(
        html.contains("<h2>Tuning trials</h2>")
            && html.contains("without (&apos;4&apos;)")
            && html.contains("5 runs per side, p = 0.023"),
        "{html}"
    );
    assert_golden(&golden.join("tune-try.html"), &html);
}
