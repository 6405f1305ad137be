//! Numbered schema migrations, tracked in `PRAGMA user_version`. All pending ones
//! run in one transaction, so a crash leaves the database at the previous version.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use super::identify::APPLICATION_ID;
use super::{StoreError, classify};

/// Migration N (1-based) is `MIGRATIONS[N - 1]`. Append only; never edit a shipped one.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1: runs and their JSON documents.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        started_unix INTEGER NOT NULL,
        finished_unix INTEGER,
        status TEXT NOT NULL,
        host_id TEXT NOT NULL,
        tool_version TEXT NOT NULL,
        command TEXT NOT NULL
    );
    CREATE TABLE documents (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        schema_version INTEGER NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX documents_run ON documents(run_id);",
    // 2: `watch` baselines: the last state of every counter series per host, so
    // growth across restarts and reboots is seen. `state` is JSON (u64 values
    // do not fit SQLite's signed integers).
    "CREATE TABLE watch_series (
        host_id TEXT NOT NULL,
        series TEXT NOT NULL,
        state TEXT NOT NULL,
        updated_unix REAL NOT NULL,
        PRIMARY KEY (host_id, series)
    );",
    // 3: the `tune` journal. A session is one `tune apply` (its id is the run's id);
    // each entry is one write, stored with the old value before the write happens.
    // `old`/`new` NULL means the file was (or is to be) absent; `network_state` is
    // none | pending | confirmed | reverting | reverted (the dead-man timer).
    "CREATE TABLE tune_sessions (
        id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
        root TEXT NOT NULL,
        state TEXT NOT NULL,
        created_unix INTEGER NOT NULL,
        confirm_deadline_unix REAL,
        network_state TEXT NOT NULL DEFAULT 'none',
        note TEXT
    );
    CREATE TABLE tune_entries (
        id INTEGER PRIMARY KEY,
        session_id INTEGER NOT NULL REFERENCES tune_sessions(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        path TEXT NOT NULL,
        setting TEXT NOT NULL,
        rule_id TEXT,
        network INTEGER NOT NULL,
        old BLOB,
        new BLOB,
        state TEXT NOT NULL
    );
    CREATE INDEX tune_entries_session ON tune_entries(session_id, seq);",
    // 4: `watch` runs keep a bounded time series of every counter that moved:
    // one point per series per store write, pruned by age and by count.
    "CREATE TABLE watch_points (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        series TEXT NOT NULL,
        time_unix REAL NOT NULL,
        delta INTEGER NOT NULL,
        max_rate_per_sec REAL,
        events TEXT NOT NULL
    );
    CREATE INDEX watch_points_run ON watch_points(run_id, series, time_unix);
    CREATE INDEX watch_points_time ON watch_points(time_unix);
    CREATE INDEX watch_series_updated ON watch_series(updated_unix);",
    // 5: a file entry's old owner, group, mode and extended attributes
    // (tune::file_meta::FileMeta::encode), so rollback restores them with the
    // bytes; NULL for entries journaled before, and for absent files.
    "ALTER TABLE tune_entries ADD COLUMN old_meta BLOB;",
];

pub const LATEST_VERSION: i64 = MIGRATIONS.len() as i64;

/// The tables a database at `version` has: every `CREATE TABLE` of the
/// migrations up to it, read from their text so the list cannot drift.
pub fn tables_at(version: i64) -> Vec<&'static str> {
    let upto = usize::try_from(version).unwrap_or(0);
    MIGRATIONS
        .iter()
        .take(upto)
        .flat_map(|sql| sql.split("CREATE TABLE ").skip(1))
        .filter_map(|rest| rest.split(|c: char| c.is_whitespace() || c == '(').next())
        .collect()
}

pub fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let err = |e| classify(path, e);
    // IMMEDIATE takes the write lock before reading the version, so two processes
    // opening a new database at once do not both run migration 1.
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(err)?;
    let current: i64 = tx
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(err)?;
    // A new database, or one from before the application_id existed, gets it
    // here, in the same transaction as its tables.
    let app: i32 = tx
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(err)?;
    if app != APPLICATION_ID {
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(err)?;
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(current.max(0) as usize) {
        tx.execute_batch(sql).map_err(err)?;
        tx.pragma_update(None, "user_version", index as i64 + 1)
            .map_err(err)?;
    }
    tx.commit().map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_at_each_version_are_what_sqlite_has() {
        let conn = Connection::open_in_memory().unwrap();
        for version in 1..=LATEST_VERSION {
            conn.execute_batch(MIGRATIONS[version as usize - 1])
                .unwrap();
            let mut have: Vec<String> = conn
                .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            have.sort();
            let mut want = tables_at(version);
            want.sort_unstable();
            assert_eq!(have, want, "version {version}");
        }
        assert!(tables_at(0).is_empty());
        assert!(tables_at(-1).is_empty());
    }

    #[test]
    fn migrating_stamps_the_application_id() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, Path::new(":memory:")).unwrap();
        let app: i32 = conn
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .unwrap();
        assert_eq!(app, APPLICATION_ID);
    }
}
