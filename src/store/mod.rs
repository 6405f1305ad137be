//! The run store: an embedded SQLite database (WAL) in the XDG data directory.
//! Every run of every command is kept, with its JSON documents.
//!
//! Opening never changes a database it does not understand: a damaged file or
//! one written by a newer nastune is an error that says what to do.

pub mod export;
pub mod identify;
mod migrations;
pub mod tune;
mod watch;

use std::path::{Path, PathBuf};
use std::time::Duration;

use std::io::Read;

use rusqlite::ffi::ErrorCode;
use rusqlite::{Connection, MAIN_DB, OpenFlags, OptionalExtension, params};
use serde::{Deserialize, Serialize};

pub use crate::doc::{DecodeError, DocKind, Document, RunKind};
use identify::Identity;
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
    #[error(
        "'{}' is not a nastune database ({why}); nothing was changed: pass --db with a nastune database or a new file",
        path.display()
    )]
    Foreign { path: PathBuf, why: String },
    #[error(
        "'{}' carries nastune's application_id but schema version '{found}', which no nastune writes; nothing was changed: move it aside or pass --db PATH",
        path.display()
    )]
    BadVersion { path: PathBuf, found: i64 },
    #[error(
        "'{}' cannot be written (the file or its directory is read-only) and this command saves to the store: make it writable, pass --db PATH or --no-store",
        path.display()
    )]
    ReadOnly { path: PathBuf },
    #[error(
        "'{}' has schema {found} from an older nastune and is read-only; this one reads schema {known}: open it once with write access (e.g. 'nastune history list') to upgrade it",
        path.display()
    )]
    NeedsUpgrade {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error(
        "'{}' is a {kind}, not a database file; pass --db with a regular file, or the name of one to create",
        path.display()
    )]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error(
        "the filesystem holding the store '{}' is full ({} free in '{}'); free at least {} there and run the command again",
        path.display(),
        crate::format::bytes(*free),
        dir.display(),
        crate::format::bytes(FULL_BELOW)
    )]
    Full {
        path: PathBuf,
        dir: PathBuf,
        free: u64,
    },
    #[error(
        "'{}' stayed locked by another process for {} s; wait until it is done (a 'tune apply', 'history import' or another writer) and run the command again",
        path.display(),
        BUSY_TIMEOUT.as_secs()
    )]
    Busy { path: PathBuf },
    #[error(transparent)]
    Open(crate::root::ReadError),
    #[error("cannot read '{}': {cause}", path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot create the database directory '{}': {cause}", path.display())]
    CreateDir {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot find a data directory: set XDG_DATA_HOME or HOME, or pass --db PATH")]
    NoDataDir,
    #[error("database '{}': {cause}", path.display())]
    Sql {
        path: PathBuf,
        cause: rusqlite::Error,
    },
    #[error("run {0} not found in the store: 'nastune history list' shows the stored ids")]
    NoSuchRun(i64),
    /// Only a path that is not UTF-8 fails to encode: JSON strings are UTF-8.
    #[error(
        "run {run}: its '{kind}' document cannot be written as JSON ({cause}); nothing of it was stored"
    )]
    Encode {
        run: i64,
        kind: DocKind,
        cause: serde_json::Error,
    },
    #[error("run {run} in '{}': {cause}", path.display())]
    Decode {
        path: PathBuf,
        run: i64,
        cause: DecodeError,
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

/// Below this much free space an SQLite I/O error on the store's filesystem
/// is taken as "full": opening a WAL store makes a 32 KiB -shm file, and a
/// commit appends its pages to the -wal (a `tune apply` wrote 330 KiB of them).
pub const FULL_BELOW: u64 = 1 << 20;

/// How long a command waits for another process's lock on the store. Each of
/// nastune's writes is one short transaction, so a lock held this long is
/// another program (or a stopped process) holding it, and waiting on helps not.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

pub type RunId = i64;

/// The status of a finished run one of whose measurements the validity guard
/// judged disturbed (other processes' CPU, swapping, a governor change).
pub const DISTURBED: &str = "disturbed";

/// One stored run (decoded only within an export file's runs).
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
    /// Opens the store for a command that saves: the file is identified
    /// read-only first, and only a nastune database (or a new, empty one) is then
    /// opened for writing, switched to WAL and migrated.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        tidy_on_error(path, || Store::open_untidy(path))
    }

    fn open_untidy(path: &Path) -> Result<Store, StoreError> {
        if inspect(path)?.is_none()
            && let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                path: dir.to_path_buf(),
                cause: source,
            })?;
        }
        Store::open_read_write(path)
    }

    /// Opens the store for a command that only reads: no WAL switch and no
    /// write, so a read-only file or medium works. A database from an older
    /// nastune is migrated first, which needs write access; nothing stored yet
    /// reads as an empty store without creating a file.
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        tidy_on_error(path, || Store::open_read_only_untidy(path))
    }

    fn open_read_only_untidy(path: &Path) -> Result<Store, StoreError> {
        let conn = match inspect(path)? {
            Some((conn, Identity::Ours { version } | Identity::Unstamped { version }))
                if version == LATEST_VERSION =>
            {
                conn
            }
            Some((_, Identity::Ours { version } | Identity::Unstamped { version })) => {
                return Store::open_read_write(path).map_err(|e| match e {
                    StoreError::ReadOnly { path } => StoreError::NeedsUpgrade {
                        path,
                        found: version,
                        known: LATEST_VERSION,
                    },
                    e => e,
                });
            }
            None | Some((_, Identity::New)) => {
                let sql = |source| StoreError::Sql {
                    path: path.to_path_buf(),
                    cause: source,
                };
                let mut conn = Connection::open_in_memory().map_err(sql)?;
                migrations::migrate(&mut conn, path)?;
                conn
            }
        };
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// Opens for writing. On a full filesystem SQLite cannot make the 32 KiB
    /// -shm file that WAL readers share, so the store could not even be read
    /// (SQLITE_IOERR_SHMSIZE): then it is opened again in exclusive locking
    /// mode, whose WAL index lives in this process's memory. Reading then
    /// works (a rollback finds its journal), and a write says the disk is full.
    fn open_read_write(path: &Path) -> Result<Store, StoreError> {
        match tidy_on_error(path, || Store::open_read_write_in(path, false)) {
            Err(StoreError::Full { .. }) => Store::open_read_write_in(path, true),
            other => other,
        }
    }

    fn open_read_write_in(path: &Path, exclusive: bool) -> Result<Store, StoreError> {
        // Not SQLITE_OPEN_URI: a --db path that starts with "file:" is a file name.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let read_only = |source: rusqlite::Error| match &source {
            rusqlite::Error::SqliteFailure(e, _)
                if matches!(e.code, ErrorCode::ReadOnly | ErrorCode::CannotOpen) =>
            {
                StoreError::ReadOnly {
                    path: path.to_path_buf(),
                }
            }
            _ => classify(path, source),
        };
        let conn = Connection::open_with_flags(path, flags).map_err(read_only)?;
        if exclusive {
            // Before the first read, or SQLite maps the -shm file all the same.
            conn.execute_batch("PRAGMA locking_mode = EXCLUSIVE")
                .map_err(read_only)?;
        }
        // SQLite opens a write-protected file read-only without a word.
        if conn.is_readonly(MAIN_DB).map_err(read_only)? {
            return Err(StoreError::ReadOnly {
                path: path.to_path_buf(),
            });
        }
        conn.busy_timeout(BUSY_TIMEOUT).map_err(read_only)?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.configure().map_err(|e| match e {
            StoreError::Sql { cause: source, .. } => read_only(source),
            e => e,
        })?;
        migrations::migrate(&mut store.conn, &store.path).map_err(|e| match e {
            StoreError::Sql { cause: source, .. } => read_only(source),
            e => e,
        })?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql_err(&self, source: rusqlite::Error) -> StoreError {
        classify(&self.path, source)
    }

    fn configure(&self) -> Result<(), StoreError> {
        // WAL lets a watch and a report run at once; a small cache suits 128 MiB boxes.
        // Switching to WAL needs an exclusive lock and SQLite does not call the busy
        // handler for it, so a second process opening a new database retries here.
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
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

    /// Runs `f` as one transaction: all of its writes are stored, or none.
    pub fn in_transaction<T>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let tx = self
            .conn
            .unchecked_transaction()
            .map_err(|e| self.sql_err(e))?;
        let value = f(self)?;
        tx.commit().map_err(|e| self.sql_err(e))?;
        Ok(value)
    }

    /// Starts a run and returns its id; finish it with [`Store::finish_run`].
    /// Its start is when the command started, which may be well before this
    /// call: benches record their run once their figures exist.
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
                    crate::time::command_started_unix() as i64,
                    host_id,
                    env!("CARGO_PKG_VERSION"),
                    command
                ],
            )
            .map_err(|e| self.sql_err(e))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Ends a run with `status`; "ok" stays "disturbed" when a document saved
    /// under the run says its measurement was disturbed (see [`Store::save`]).
    pub fn finish_run(&self, id: RunId, status: &str) -> Result<(), StoreError> {
        let n = self
            .conn
            .execute(
                "UPDATE runs SET finished_unix = ?1, \
                 status = CASE WHEN ?2 = 'ok' AND status = 'disturbed' THEN status ELSE ?2 END \
                 WHERE id = ?3",
                params![crate::time::now_unix() as i64, status, id],
            )
            .map_err(|e| self.sql_err(e))?;
        if n == 0 {
            return Err(StoreError::NoSuchRun(id));
        }
        Ok(())
    }

    /// Stores a typed document under a run. A measurement the validity guard
    /// judged disturbed marks the run "disturbed", so `history list` says so
    /// without decoding every run's documents.
    pub fn save<D: Document>(&self, run: RunId, doc: &D) -> Result<(), StoreError> {
        let body = crate::json::to_string(doc).map_err(|source| StoreError::Encode {
            run,
            kind: D::KIND,
            cause: source,
        })?;
        self.insert_document(run, D::KIND, D::VERSION, &body)?;
        if doc.validity().is_some_and(|v| !v.is_clean()) {
            self.conn
                .execute(
                    "UPDATE runs SET status = ?1 WHERE id = ?2 AND status = 'running'",
                    params![DISTURBED, run],
                )
                .map_err(|e| self.sql_err(e))?;
        }
        Ok(())
    }

    /// Writes one document's stored text (encoded by the caller, which knows
    /// its type: `runs::save`, or `history import` after it decoded it).
    pub fn insert_document(
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

/// Identifies an existing database without writing to it: `None` when there
/// is nothing there yet (no file, or an empty one), else a read-only
/// connection and what the file is. Anything not nastune's is an error.
fn inspect(path: &Path) -> Result<Option<(Connection, Identity)>, StoreError> {
    let mut head = Vec::with_capacity(identify::HEADER_LEN);
    let read = |source| StoreError::Read {
        path: path.to_path_buf(),
        cause: source,
    };
    // Opened without blocking and judged by fstat of what was opened: a FIFO
    // would hang SQLite's open, and /dev/null reads as an empty new store
    // whose writes vanish ("disk I/O error" at the first commit).
    let file = match crate::root::open_regular(path) {
        Ok(f) => f,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(crate::root::ReadError::NotRegular { kind, .. }) => {
            return Err(StoreError::NotAFile {
                path: path.to_path_buf(),
                kind,
            });
        }
        Err(e) => return Err(StoreError::Open(e)),
    };
    let len = file.metadata().map_err(read)?.len();
    file.take(identify::HEADER_LEN as u64)
        .read_to_end(&mut head)
        .map_err(read)?;
    if head.is_empty() {
        return Ok(None);
    }
    let header = identify::parse_header(&head).ok_or_else(|| StoreError::Corrupt {
        path: path.to_path_buf(),
        detail: "it is not an SQLite file".into(),
    })?;
    // The bundled SQLite omits UTF-16 (.cargo/config.toml) and would read such
    // a schema as corrupt; nastune writes only UTF-8, so the file is not ours.
    if header.utf16 {
        return Err(StoreError::Foreign {
            path: path.to_path_buf(),
            why: "its text is UTF-16 and nastune writes UTF-8".into(),
        });
    }
    // A read-only connection to a WAL file leaves -wal and -shm files behind;
    // another program's file is read as immutable instead, which is exact as
    // long as it has no -wal file. Read-only media need the same for our files.
    let before = side_files_present(path);
    let wal_len = std::fs::metadata(sibling(path, "-wal"))
        .map(|m| m.len())
        .ok();
    let wal_file = wal_len.is_some();
    // Without a -wal holding commits the file alone is the database, and one
    // shorter than its header says was cut off: refused before SQLite opens it
    // (and, for a WAL file, makes -shm and -wal files beside it).
    if let Some(size) = header
        .size
        .filter(|&size| len < size && wal_len.unwrap_or(0) == 0)
    {
        return Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("it is truncated: {len} bytes, its header says {size}"),
        });
    }
    let immutable = header.application_id != identify::APPLICATION_ID && header.wal && !wal_file;
    let (conn, facts) = match read_facts(path, immutable).map_err(|e| classify(path, e)) {
        Err(StoreError::Sql {
            cause: rusqlite::Error::SqliteFailure(e, _),
            ..
        }) if e.code == ErrorCode::CannotOpen && !immutable && !wal_file => {
            read_facts(path, true).map_err(|e| classify(path, e))
        }
        // A full filesystem has no room for the -shm file; without commits
        // in a -wal the file alone is exact.
        Err(StoreError::Full { .. }) if !immutable && wal_len.unwrap_or(0) == 0 => {
            remove_created(path, before);
            read_facts(path, true).map_err(|e| classify(path, e))
        }
        other => other,
    }?;
    let names: Vec<&str> = facts.names.iter().map(String::as_str).collect();
    let identity = identify::identify(path, facts.application_id, facts.user_version, &names)?;
    // The check reads every page once: through the usual 2 MiB page cache it
    // left a 15 MiB store's pages resident (probe: 6.0 MiB peak RSS against
    // 5.1 on a new store). A small cache while it runs bounds that.
    let check: String = conn
        .execute_batch("PRAGMA cache_size = -128")
        .and_then(|()| conn.query_row("PRAGMA quick_check", [], |r| r.get(0)))
        .and_then(|check| {
            conn.execute_batch("PRAGMA cache_size = -2000")
                .map(|()| check)
        })
        .map_err(|e| classify(path, e))?;
    if check != "ok" {
        return Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: check,
        });
    }
    Ok(Some((conn, identity)))
}

struct Facts {
    application_id: i32,
    user_version: i64,
    names: Vec<String>,
}

fn read_facts(path: &Path, immutable: bool) -> rusqlite::Result<(Connection, Facts)> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = if immutable {
        Connection::open_with_flags(
            identify::immutable_uri(path),
            flags | OpenFlags::SQLITE_OPEN_URI,
        )?
    } else {
        Connection::open_with_flags(path, flags)?
    };
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // One read transaction: another process creating the database at this
    // moment must not show us its tables with the marks of before (found as
    // "tables do not match schema 0" with six probes started at once).
    let read = |conn: &Connection| -> rusqlite::Result<(i32, i64, Vec<String>)> {
        // The schema read first starts the snapshot the PRAGMAs then share.
        let names = conn
            .prepare(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view', 'trigger') \
                 AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
            )?
            .query_map([], |r| r.get(0))?
            .collect::<Result<Vec<String>, _>>()?;
        let application_id = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
        let user_version = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        Ok((application_id, user_version, names))
    };
    conn.execute_batch("BEGIN")?;
    let facts = read(&conn);
    conn.execute_batch("COMMIT")?;
    let (application_id, user_version, names) = facts?;
    Ok((
        conn,
        Facts {
            application_id,
            user_version,
            names,
        },
    ))
}

/// `path` with `suffix` appended to its file name, as SQLite names its -wal file.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Runs `open` and, when it fails, removes the -wal and -shm files that it
/// made beside `path`: SQLite makes them before it finds a damaged page, and
/// they must not be taken for the remains of a crash.
fn tidy_on_error<T>(
    path: &Path,
    open: impl FnOnce() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let before = side_files_present(path);
    let result = open();
    if result.is_err() {
        remove_created(path, before);
    }
    result
}

/// The files SQLite keeps beside a WAL database.
const SIDE_FILES: [&str; 2] = ["-wal", "-shm"];

/// Which of [`SIDE_FILES`] are there now.
fn side_files_present(path: &Path) -> [bool; 2] {
    SIDE_FILES.map(|suffix| sibling(path, suffix).symlink_metadata().is_ok())
}

/// Removes the side files that were not there `before` (in [`SIDE_FILES`]
/// order), unless another process has the database open: it may have made
/// them meanwhile, and taking a -shm from under it breaks its locking.
fn remove_created(path: &Path, before: [bool; 2]) {
    if in_use(path) {
        return;
    }
    for (suffix, existed) in SIDE_FILES.into_iter().zip(before) {
        if !existed {
            let _ = std::fs::remove_file(sibling(path, suffix));
        }
    }
}

/// Whether another process holds an SQLite lock on the database: every
/// connection to a WAL database keeps a read lock on its SHARED byte range
/// (bytes 0x40000002 to 0x40000200 of the lock space) while it is open.
fn in_use(path: &Path) -> bool {
    use std::os::fd::AsRawFd;
    const PENDING_BYTE: i64 = 0x4000_0000;
    use std::os::unix::fs::OpenOptionsExt;
    // Non-blocking: the path may be a FIFO (refused, but still there).
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path);
    let Ok(file) = file else {
        return false;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return true;
    }
    // SAFETY: flock is plain data; F_GETLK only fills it in.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_WRLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = PENDING_BYTE as libc::off_t;
    lock.l_len = 512;
    // SAFETY: F_GETLK on a descriptor we own, with a valid flock.
    let ok = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut lock) } == 0;
    // A lock we cannot test is taken as held: leaving a file is the safe side.
    !ok || lock.l_type != libc::F_UNLCK as libc::c_short
}

/// Free space for the unprivileged on the filesystem holding `path` (the
/// directory it is in), or `None` when statvfs fails.
fn free_space(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain data that the call fills in.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a valid out pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// SQLite's "not a database" and "malformed" become [`StoreError::Corrupt`];
/// "full", and any I/O error on a filesystem with less than [`FULL_BELOW`]
/// free, become [`StoreError::Full`]: SQLite reports no room for the -shm
/// file as SQLITE_IOERR_SHMSIZE (4874) and a failed write as SQLITE_IOERR_WRITE.
fn classify(path: &Path, source: rusqlite::Error) -> StoreError {
    if let rusqlite::Error::SqliteFailure(e, msg) = &source {
        if matches!(e.code, ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) {
            return StoreError::Corrupt {
                path: path.to_path_buf(),
                detail: msg.clone().unwrap_or_else(|| e.to_string()),
            };
        }
        if matches!(e.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) {
            return StoreError::Busy {
                path: path.to_path_buf(),
            };
        }
        if matches!(e.code, ErrorCode::DiskFull | ErrorCode::SystemIoFailure) {
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => PathBuf::from("."),
            };
            if let Some(free) = free_space(&dir)
                && (free < FULL_BELOW || e.code == ErrorCode::DiskFull)
            {
                return StoreError::Full {
                    path: path.to_path_buf(),
                    dir,
                    free,
                };
            }
        }
    }
    StoreError::Sql {
        path: path.to_path_buf(),
        cause: source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A crypto document that measured nothing (no cipher matches), with `verdict`.
    fn crypto_doc(verdict: crate::bench::validity::Verdict) -> crate::bench::crypto::CryptoReport {
        let settings = crate::bench::crypto::Settings {
            duration: std::time::Duration::from_millis(1),
            sizes: vec![512],
            depth: 1,
            filters: vec!["no such cipher".into()],
            argon2_max_kib: 64,
            kdf: false,
        };
        let mut doc =
            crate::bench::crypto::run(&settings, &crate::root::Root::live(), &mut |_, _| {});
        doc.validity = Some(crate::bench::validity::Validity {
            verdict,
            reasons: vec!["other processes used 40 % of the CPU".into()],
            conditions: Vec::new(),
        });
        doc
    }

    #[test]
    fn a_disturbed_measurement_marks_its_run_disturbed() {
        use crate::bench::validity::Verdict;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("n.db")).unwrap();
        let mut ids = Vec::new();
        for (verdict, end) in [
            (Verdict::Disturbed, "ok"),
            (Verdict::Clean, "ok"),
            (Verdict::Disturbed, "interrupted"),
        ] {
            let id = store
                .begin_run(RunKind::BenchCrypto, "abc", "nastune bench crypto")
                .unwrap();
            store.save(id, &crypto_doc(verdict)).unwrap();
            store.finish_run(id, end).unwrap();
            ids.push(id);
        }
        let status: Vec<String> = ids
            .iter()
            .map(|id| store.run(*id).unwrap().status)
            .collect();
        assert_eq!(status, [DISTURBED, "ok", "interrupted"]);
        let list = crate::report::history_text::render_list(&store.runs_of(None, 10).unwrap());
        let disturbed = list
            .lines()
            .find(|l| l.trim_start().starts_with(&ids[0].to_string()));
        assert!(
            disturbed.is_some_and(|l| l.contains(" DISTURBED ")),
            "{list}"
        );
    }

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
        assert_eq!(crate::runs::load(&store, id).unwrap().watch(), Some(&w));
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
            c.pragma_update(None, "application_id", identify::APPLICATION_ID)
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

    #[test]
    fn a_utf16_database_is_foreign_and_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("utf16.db");
        Connection::open(&db)
            .unwrap()
            .execute_batch("CREATE TABLE runs (x);")
            .unwrap();
        // Another program's UTF-16le file: the header's text encoding says 2.
        let mut bytes = std::fs::read(&db).unwrap();
        bytes[56..60].copy_from_slice(&2u32.to_be_bytes());
        std::fs::write(&db, &bytes).unwrap();
        for err in [
            Store::open(&db).err().unwrap(),
            Store::open_read_only(&db).err().unwrap(),
        ] {
            let e = err.to_string();
            assert!(
                e.contains("is not a nastune database (its text is UTF-16"),
                "{e}"
            );
        }
        assert_eq!(std::fs::read(&db).unwrap(), bytes);
    }

    #[test]
    fn another_programs_wal_database_is_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("photos.db");
        {
            let c = Connection::open(&db).unwrap();
            c.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
                .unwrap();
            c.execute_batch("CREATE TABLE runs (x); INSERT INTO runs VALUES (1);")
                .unwrap();
        }
        let before = std::fs::read(&db).unwrap();
        for err in [
            Store::open(&db).err().unwrap(),
            Store::open_read_only(&db).err().unwrap(),
        ] {
            assert!(matches!(err, StoreError::Foreign { .. }), "{err}");
        }
        assert_eq!(std::fs::read(&db).unwrap(), before);
        for left in ["photos.db-wal", "photos.db-shm"] {
            assert!(!dir.path().join(left).exists(), "{left} left behind");
        }
    }

    #[test]
    fn a_database_from_before_the_application_id_is_stamped_on_write_only() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("n.db");
        let id = Store::open(&db)
            .unwrap()
            .begin_run(RunKind::Probe, "h", "c")
            .unwrap();
        let app = |db: &Path| -> i32 {
            Connection::open(db)
                .unwrap()
                .query_row("PRAGMA application_id", [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(app(&db), identify::APPLICATION_ID);
        Connection::open(&db)
            .unwrap()
            .pragma_update(None, "application_id", 0)
            .unwrap();
        let read = Store::open_read_only(&db).unwrap();
        assert_eq!(read.run(id).unwrap().kind, "probe");
        drop(read);
        assert_eq!(app(&db), 0, "reading does not stamp");
        drop(Store::open(&db).unwrap());
        assert_eq!(app(&db), identify::APPLICATION_ID);
    }

    #[test]
    fn reading_a_store_that_does_not_exist_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sub/n.db");
        let store = Store::open_read_only(&db).unwrap();
        assert!(store.runs_of(None, 10).unwrap().is_empty());
        assert!(!dir.path().join("sub").exists());
    }

    #[test]
    fn an_older_schema_is_migrated_by_a_reader() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("n.db");
        {
            let mut c = Connection::open(&db).unwrap();
            let tx = c.transaction().unwrap();
            tx.execute_batch(migrations::MIGRATIONS[0]).unwrap();
            tx.pragma_update(None, "user_version", 1).unwrap();
            tx.commit().unwrap();
        }
        let store = Store::open_read_only(&db).unwrap();
        assert!(store.runs_of(None, 1).unwrap().is_empty());
        let version: i64 = Connection::open(&db)
            .unwrap()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, LATEST_VERSION);
    }
}
