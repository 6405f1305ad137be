use crate::util::*;

#[test]
fn probe_runs_are_saved_and_a_corrupt_db_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixtures().join("boxes/pogoplug-v4");
    let o = run_with_db(dir.path(), &["probe", "--root", root.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run_with_db(dir.path(), &["probe", "--root", root.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let conn = rusqlite_count(&dir.path().join("nastune.db"));
    assert_eq!(conn, 2);

    let bad = dir.path().join("bad.db");
    std::fs::write(&bad, b"this is not sqlite, it is a user's file").unwrap();
    let o = nastune()
        .args(["probe", "--root", root.to_str().unwrap(), "--db"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("move it aside"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(&bad).unwrap(),
        b"this is not sqlite, it is a user's file"
    );
}

fn rusqlite_count(db: &std::path::Path) -> i64 {
    let c = rusqlite::Connection::open(db).unwrap();
    c.query_row(
        "SELECT count(*) FROM runs r JOIN documents d ON d.run_id = r.id WHERE r.kind = 'probe' AND r.status = 'ok'",
        [],
        |r| r.get(0),
    )
    .unwrap()
}
