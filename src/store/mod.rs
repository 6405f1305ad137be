//! The run store: an embedded SQLite database (WAL) in the XDG data directory.
//! Every run of every command is kept, with its JSON documents.
//!
//! Opening never changes a database it does not understand: a damaged file or
//! one written by a newer nastune is an error that says what to do.

pub mod doc;
mod migrations;
pub mod tune;
mod watch;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

pub use doc::{DecodeError, Doc, DocKind, Document, RunDocs, RunKind};
pub use migrations::LATEST_VERSION;
pub use watch::{MAX_WATCH_POINTS, Pruned};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "'{}' is not a nastune database or is damaged ({detail}); nothing was changed: move it aside or pass --db PATH",
        path.display()
    )]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "'{}' was written by a newer nastune (schema {found}, this one knows up to {known}); upgrade nastune or pass --db PATH",
        path.display()
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("cannot create the database directory '{}'", path.display())]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot find a data directory: set XDG_DATA_HOME or HOME, or pass --db PATH")]
    NoDataDir,
    #[error("database '{}'", path.display())]
    Sql {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("run {0} not found in the store: 'nastune history list' shows the stored ids")]
    NoSuchRun(i64),
    #[error("run {run} in '{}': {source}", path.display())]
    Decode {
        path: PathBuf,
        run: i64,
        source: DecodeError,
    },
}

/// Where the database lives when `--db` is not given:
/// `$XDG_DATA_HOME/nastune/nastune.db`, else `~/.local/share/nastune/nastune.db`.
pub fn default_path() -> Result<PathBuf, StoreError> {
    let base = match std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => {
            let home = std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .ok_or(StoreError::NoDataDir)?;
            PathBuf::from(home).join(".local/share")
        }
    };
    Ok(base.join("nastune").join("nastune.db"))
}

pub type RunId = i64;

/// One stored run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunRecord {
    pub id: RunId,
    pub kind: String,
    pub started_unix: i64,
    pub finished_unix: Option<i64>,
    pub status: String,
    pub host_id: String,
    pub tool_version: String,
    pub command: String,
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let sql = |source| StoreError::Sql {
            path: path.to_path_buf(),
            source,
        };
        let conn = Connection::open(path).map_err(sql)?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(sql)?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.check_readable()?;
        store.configure()?;
        migrations::migrate(&mut store.conn, &store.path)?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql_err(&self, source: rusqlite::Error) -> StoreError {
        classify(&self.path, source)
    }

    /// Reading the schema is the first thing that fails on a file that is not
    /// SQLite; this turns that into a clear error before anything writes.
    fn check_readable(&self) -> Result<(), StoreError> {
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| self.sql_err(e))?;
        if version > LATEST_VERSION {
            return Err(StoreError::TooNew {
                path: self.path.clone(),
                found: version,
                known: LATEST_VERSION,
            });
        }
        let check: String = self
            .conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(|e| self.sql_err(e))?;
        if check != "ok" {
            return Err(StoreError::Corrupt {
                path: self.path.clone(),
                detail: check,
            });
        }
        Ok(())
    }

    fn configure(&self) -> Result<(), StoreError> {
        // WAL lets a watch and a report run at once; a small cache suits 128 MiB boxes.
        // Switching to WAL needs an exclusive lock and SQLite does not call the busy
        // handler for it, so a second process opening a new database retries here.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            match self
                .conn
                .query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
            {
                Ok(_) => break,
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(self.sql_err(e)),
            }
        }
        self.conn
            .execute_batch(
                "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA cache_size = -2000;",
            )
            .map_err(|e| self.sql_err(e))
    }

    /// Starts a run and returns its id; finish it with [`Store::finish_run`].
    pub fn begin_run(
        &self,
        kind: RunKind,
        host_id: &str,
        command: &str,
    ) -> Result<RunId, StoreError> {
        self.conn
            .execute(
                "INSERT INTO runs (kind, started_unix, status, host_id, tool_version, command) \
                 VALUES (?1, ?2, 'running', ?3, ?4, ?5)",
                params![
                    kind.as_str(),
                    crate::time::now_unix() as i64,
                    host_id,
                    env!("CARGO_PKG_VERSION"),
                    command
                ],
            )
            .map_err(|e| self.sql_err(e))?;
        Ok(self.conn.last_insert_rowid())
    }

    pub fn finish_run(&self, id: RunId, status: &str) -> Result<(), StoreError> {
        let n = self
            .conn
            .execute(
                "UPDATE runs SET finished_unix = ?1, status = ?2 WHERE id = ?3",
                params![crate::time::now_unix() as i64, status, id],
            )
            .map_err(|e| self.sql_err(e))?;
        if n == 0 {
            return Err(StoreError::NoSuchRun(id));
        }
        Ok(())
    }

    /// Stores a typed document under a run.
    pub fn save<D: Document>(&self, run: RunId, doc: &D) -> Result<(), StoreError> {
        let body = serde_json::to_string(doc).map_err(|e| StoreError::Sql {
            path: self.path.clone(),
            source: rusqlite::Error::ToSqlConversionFailure(Box::new(e)),
        })?;
        self.insert_document(run, D::KIND, D::VERSION, &body)
    }

    /// Stores an already decoded document (an imported run's).
    pub fn save_doc(&self, run: RunId, doc: &Doc) -> Result<(), StoreError> {
        let (version, body) = doc.encode().map_err(|e| StoreError::Sql {
            path: self.path.clone(),
            source: rusqlite::Error::ToSqlConversionFailure(Box::new(e)),
        })?;
        self.insert_document(run, doc.kind(), version, &body)
    }

    fn insert_document(
        &self,
        run: RunId,
        kind: DocKind,
        version: u32,
        body: &str,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO documents (run_id, kind, schema_version, body) VALUES (?1, ?2, ?3, ?4)",
                params![run, kind.as_str(), version, body],
            )
            .map_err(|e| self.sql_err(e))?;
        Ok(())
    }

    /// Every document of a run, decoded into its type.
    pub fn load(&self, run: RunId) -> Result<RunDocs, StoreError> {
        let mut out = Vec::new();
        for (kind, version, body) in self.documents(run)? {
            out.push(
                Doc::decode(&kind, version, &body).map_err(|source| StoreError::Decode {
                    path: self.path.clone(),
                    run,
                    source,
                })?,
            );
        }
        Ok(RunDocs(out))
    }

    pub fn run(&self, id: RunId) -> Result<RunRecord, StoreError> {
        self.conn
            .query_row(
                "SELECT id, kind, started_unix, finished_unix, status, host_id, tool_version, command \
                 FROM runs WHERE id = ?1",
                [id],
                row_to_run,
            )
            .optional()
            .map_err(|e| self.sql_err(e))?
            .ok_or(StoreError::NoSuchRun(id))
    }

    /// Deletes a run and its documents; `Ok(false)` when there was no such run.
    pub fn delete_run(&self, id: RunId) -> Result<bool, StoreError> {
        let n = self
            .conn
            .execute("DELETE FROM runs WHERE id = ?1", [id])
            .map_err(|e| self.sql_err(e))?;
        Ok(n > 0)
    }

    /// Runs of one kind (or all), newest first.
    pub fn runs_of(&self, kind: Option<RunKind>, limit: u32) -> Result<Vec<RunRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, kind, started_unix, finished_unix, status, host_id, tool_version, command \
                 FROM runs WHERE ?1 IS NULL OR kind = ?1 ORDER BY id DESC LIMIT ?2",
            )
            .map_err(|e| self.sql_err(e))?;
        let rows = stmt
            .query_map(params![kind.map(RunKind::as_str), limit], row_to_run)
            .map_err(|e| self.sql_err(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.sql_err(e))
    }

    /// The JSON documents of a run: `(kind, schema_version, body)`.
    pub fn documents(&self, run: RunId) -> Result<Vec<(String, u32, String)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT kind, schema_version, body FROM documents WHERE run_id = ?1 ORDER BY id",
            )
            .map_err(|e| self.sql_err(e))?;
        let rows = stmt
            .query_map([run], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(|e| self.sql_err(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.sql_err(e))
    }
}

fn row_to_run(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRecord> {
    Ok(RunRecord {
        id: r.get(0)?,
        kind: r.get(1)?,
        started_unix: r.get(2)?,
        finished_unix: r.get(3)?,
        status: r.get(4)?,
        host_id: r.get(5)?,
        tool_version: r.get(6)?,
        command: r.get(7)?,
    })
}

/// SQLite's "not a database" and "malformed" become [`StoreError::Corrupt`].
fn classify(path: &Path, source: rusqlite::Error) -> StoreError {
    use rusqlite::ffi::ErrorCode;
    if let rusqlite::Error::SqliteFailure(e, msg) = &source
        && matches!(e.code, ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt)
    {
        return StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: msg.clone().unwrap_or_else(|| e.to_string()),
        };
    }
    StoreError::Sql {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_and_documents_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sub/n.db");
        let store = Store::open(&db).unwrap();
        let id = store
            .begin_run(RunKind::Probe, "abc", "nastune probe")
            .unwrap();
        let w = crate::watch::RunSummary::new("abc", false);
        store.save(id, &w).unwrap();
        store.finish_run(id, "ok").unwrap();
        drop(store);
        let store = Store::open(&db).unwrap();
        let run = store.run(id).unwrap();
        assert_eq!(run.kind, "probe");
        assert_eq!(run.status, "ok");
        let docs = store.documents(id).unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!((docs[0].0.as_str(), docs[0].1), ("watch", 1));
        assert_eq!(store.load(id).unwrap().watch(), Some(&w));
        assert!(matches!(store.run(999), Err(StoreError::NoSuchRun(999))));
        let other = store.begin_run(RunKind::BenchDisk, "abc", "x").unwrap();
        assert_eq!(store.runs_of(None, 10).unwrap().len(), 2);
        assert_eq!(store.runs_of(Some(RunKind::Probe), 10).unwrap()[0].id, id);
        assert!(store.delete_run(id).unwrap());
        assert!(!store.delete_run(id).unwrap());
        assert!(store.documents(id).unwrap().is_empty(), "documents cascade");
        assert_eq!(store.runs_of(None, 10).unwrap()[0].id, other);
    }

    #[test]
    fn garbage_file_is_reported_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("n.db");
        let garbage = vec![0x5au8; 8192];
        std::fs::write(&db, &garbage).unwrap();
        let err = Store::open(&db).err().unwrap();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains("move it aside"));
        assert_eq!(std::fs::read(&db).unwrap(), garbage);
    }

    #[test]
    fn newer_schema_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("n.db");
        {
            let c = Connection::open(&db).unwrap();
            c.execute_batch("CREATE TABLE future (x); PRAGMA user_version = 999;")
                .unwrap();
        }
        let before = std::fs::read(&db).unwrap();
        let err = Store::open(&db).err().unwrap();
        assert!(
            matches!(err, StoreError::TooNew { found: 999, .. }),
            "{err}"
        );
        assert_eq!(std::fs::read(&db).unwrap(), before);
    }
}
