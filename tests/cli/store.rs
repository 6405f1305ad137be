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

/// SQLite reads a name starting "file:" as a URI when built with
/// SQLITE_USE_URI (libsqlite3-sys's default, undone in .cargo/config.toml):
/// this one would have meant "n.db, read-only".
#[test]
fn a_db_path_that_reads_like_an_sqlite_uri_is_a_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixtures().join("boxes/pogoplug-v4");
    let o = nastune()
        .current_dir(dir.path())
        .args(["probe", "--root", root.to_str().unwrap()])
        .args(["--db", "file:n.db?mode=ro"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir.path().join("file:n.db?mode=ro").is_file());
    assert!(!dir.path().join("n.db").exists());
}

// ---- another program's database is never changed ----

/// SQLite files nastune did not write, each as another program might leave it.
const FOREIGN: &[(&str, &str)] = &[
    (
        "runs-wal.db",
        "PRAGMA journal_mode = WAL; CREATE TABLE runs (id INTEGER PRIMARY KEY, what TEXT); \
         INSERT INTO runs (what) VALUES ('a run of another program');",
    ),
    (
        "photos.db",
        "CREATE TABLE photos (id INTEGER PRIMARY KEY, path TEXT); \
         INSERT INTO photos (path) VALUES ('/srv/a.jpg');",
    ),
    (
        "minus-one.db",
        "CREATE TABLE t (x); PRAGMA user_version = -1;",
    ),
    (
        "version-one.db",
        "CREATE TABLE photos (x); PRAGMA user_version = 1;",
    ),
    (
        "other-app.db",
        "PRAGMA application_id = 1; CREATE TABLE runs (x);",
    ),
    // Schema SQL every program may use: SQLite parses it all on open, so the
    // bundled SQLite must keep this grammar (.cargo/config.toml) or this file
    // would read as corrupt instead of foreign.
    (
        "schema-grammar.db",
        "CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, b BLOB DEFAULT x'00', \
         n INTEGER CHECK (n > 0), twice AS (n * 2), c TEXT DEFAULT (CAST(1 AS TEXT))); \
         CREATE TABLE log (id INTEGER, FOREIGN KEY (id) REFERENCES t (id)); \
         CREATE VIEW v AS WITH w AS (SELECT id FROM t UNION SELECT 1) \
         SELECT id, row_number() OVER (ORDER BY id) FROM w WHERE id IN (SELECT id FROM log); \
         CREATE TRIGGER g AFTER INSERT ON t BEGIN INSERT INTO log VALUES (new.id); END;",
    ),
];

fn files_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_foreign_sqlite_file_stays_byte_identical_after_every_command() {
    let root = fixtures().join("boxes/pogoplug-v4");
    let root = root.to_str().unwrap();
    let commands: &[&[&str]] = &[
        &["history", "list"],
        &["history", "show", "1"],
        &["history", "rm", "1"],
        &["report", "--markdown", "-"],
        &["compare", "1", "2"],
        &["probe", "--root", root],
        &["advise", "--root", root],
    ];
    for (name, sql) in FOREIGN {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join(name);
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute_batch(sql)
            .unwrap();
        let before = std::fs::read(&db).unwrap();
        let listing = files_in(dir.path());
        for args in commands {
            let o = nastune().args(*args).arg("--db").arg(&db).output().unwrap();
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{name} {args:?}: {err}");
            assert!(
                err.contains(&format!("'{}' is not a nastune database", db.display())),
                "{name} {args:?}: {err}"
            );
            assert!(
                err.contains("nothing was changed"),
                "{name} {args:?}: {err}"
            );
            assert!(
                !err.contains("SQL"),
                "{name} {args:?}: raw SQLite text: {err}"
            );
            assert_eq!(std::fs::read(&db).unwrap(), before, "{name} {args:?}");
            assert_eq!(files_in(dir.path()), listing, "{name} {args:?}");
        }
    }
}

// ---- a read-only store still reads ----

/// Makes `dir` read-only for root too, undone on drop: a read-only bind mount
/// (read-only media), else the immutable attribute on the directory and its files.
enum ReadOnly {
    Mount(std::path::PathBuf),
    Immutable(Vec<std::path::PathBuf>),
}

impl ReadOnly {
    fn make(dir: &std::path::Path) -> Option<ReadOnly> {
        let run = |cmd: &str, args: &[&std::ffi::OsStr]| {
            std::process::Command::new(cmd)
                .args(args)
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        let d = dir.as_os_str();
        if run("mount", &["--bind".as_ref(), d, d]) {
            if run("mount", &["-o".as_ref(), "remount,bind,ro".as_ref(), d]) {
                return Some(ReadOnly::Mount(dir.to_path_buf()));
            }
            run("umount", &[d]);
        }
        let mut paths: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        paths.push(dir.to_path_buf());
        let mut done = Vec::new();
        for p in paths {
            if !run("chattr", &["+i".as_ref(), p.as_os_str()]) {
                drop(ReadOnly::Immutable(done));
                return None;
            }
            done.push(p);
        }
        Some(ReadOnly::Immutable(done))
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        match self {
            ReadOnly::Mount(d) => {
                let _ = std::process::Command::new("umount").arg(&*d).status();
            }
            ReadOnly::Immutable(paths) => {
                for p in paths {
                    let _ = std::process::Command::new("chattr")
                        .arg("-i")
                        .arg(&*p)
                        .status();
                }
            }
        }
    }
}

#[test]
fn a_read_only_store_lists_history_and_refuses_to_save_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let db = store.join("nastune.db");
    let root = fixtures().join("boxes/pogoplug-v4");
    let probe = |extra: &[&str]| {
        nastune()
            .args(["probe", "--root", root.to_str().unwrap()])
            .args(extra)
            .arg("--db")
            .arg(&db)
            .output()
            .unwrap()
    };
    let o = probe(&[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let before = std::fs::read(&db).unwrap();
    // The same store as a nastune with schema 1 left it: reading it needs an upgrade.
    let old = store.join("old.db");
    std::fs::copy(&db, &old).unwrap();
    rusqlite::Connection::open(&old)
        .unwrap()
        .execute_batch(
            "DROP TABLE watch_points; DROP TABLE watch_series; DROP TABLE tune_entries; \
             DROP TABLE tune_sessions; PRAGMA user_version = 1; PRAGMA journal_mode = DELETE;",
        )
        .unwrap();

    // Without root, file modes are enough; as root they are bypassed.
    let guard = if crate::util::is_root() {
        match ReadOnly::make(&store) {
            Some(g) => g,
            None => {
                return crate::util::skip(
                    "neither a read-only bind mount nor chattr +i works here",
                );
            }
        }
    } else {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).unwrap();
        std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o555)).unwrap();
        ReadOnly::Immutable(Vec::new())
    };
    let read = |args: &[&str]| nastune().args(args).arg("--db").arg(&db).output().unwrap();
    let o = read(&["history", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("probe"), "{}", stdout(&o));
    let o = read(&["history", "show", "1", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = read(&["report", "1", "--markdown", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));

    let o = nastune()
        .args(["history", "list", "--db"])
        .arg(&old)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("has schema 1 from an older nastune and is read-only"),
        "{}",
        stderr(&o)
    );

    let o = probe(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot be written (the file or its directory is read-only)"),
        "{}",
        stderr(&o)
    );
    drop(guard);
    if !crate::util::is_root() {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    assert_eq!(std::fs::read(&db).unwrap(), before);
}
