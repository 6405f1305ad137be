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
    assert_eq!(
        std::fs::read(&db).unwrap(),
        std::fs::read(&fixture).unwrap()
    );
}
