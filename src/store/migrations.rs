//! Numbered schema migrations, tracked in `PRAGMA user_version`. Each runs in one
//! transaction, so a crash leaves the database at the previous version.

use std::path::Path;

use rusqlite::Connection;

use super::{StoreError, classify};

/// Migration N (1-based) is `MIGRATIONS[N - 1]`. Append only; never edit a shipped one.
const MIGRATIONS: &[&str] = &[
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
];

pub const LATEST_VERSION: i64 = MIGRATIONS.len() as i64;

pub fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let err = |e| classify(path, e);
    let current: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(err)?;
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(current.max(0) as usize) {
        let version = index as i64 + 1;
        let tx = conn.transaction().map_err(err)?;
        tx.execute_batch(sql).map_err(err)?;
        tx.pragma_update(None, "user_version", version)
            .map_err(err)?;
        tx.commit().map_err(err)?;
    }
    Ok(())
}
