//! Rollback: every journaled entry of a session, newest first, gets its old value
//! back (a file that was absent is removed). Restoring is idempotent, so a session
//! interrupted at any point (state `applying`) rolls back the same way, and a
//! rollback interrupted itself can simply run again.
//!
//! The system is restored before the store records it: a store on a full disk
//! can still be read but not written, and the settings must come back all the
//! same. The record follows in one transaction; when it fails, the error says
//! what was restored and that running the rollback again records it.

use serde::{Deserialize, Serialize};

use super::action::{
    FileMeta, KIND_FILE, KIND_NETDEV, KIND_RUNTIME, WriteError, read_entry_to_compare, read_meta,
    remove_file, remove_stale_temp, restore_runtime, selected_value, write_file_as, write_netdev,
};
use super::{sysctl_d, udev_rules};
use crate::root::Root;
use crate::store::tune::{EntryRecord, SessionRecord};
use crate::store::{Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum RollbackError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "restoring '{setting}' ('/{path}') failed: {cause}; fix the cause and run the rollback again"
    )]
    Restore {
        setting: String,
        path: String,
        cause: WriteError,
    },
    #[error("{0}; remove that temporary file or fix the cause, and run the rollback again")]
    Temp(WriteError),
    #[error("session {session} wrote to '{root}', which cannot be opened now: {message}")]
    Root {
        session: i64,
        root: String,
        message: String,
    },
    #[error(
        "no session to roll back: every session is rolled back already (see 'nastune history list --kind tune')"
    )]
    NothingToRollBack,
    #[error(
        "no session to roll back: no tune session has been recorded in this store ('nastune tune apply' records one before its first write)"
    )]
    NoSessionRecorded,
    #[error("session {0} not found in the store; see 'nastune history list --kind tune'")]
    NoSession(i64),
    #[error("journal entry {0} not found in the store")]
    NoEntry(i64),
    #[error(
        "{what} is restored on the system ({restored} value(s)) but not recorded in the store: {cause}; 'nastune tune rollback {again}' then writes the same values again and records them"
    )]
    NotRecorded {
        what: String,
        again: String,
        restored: usize,
        cause: Box<StoreError>,
    },
}

/// One restored entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Restored {
    pub entry: i64,
    pub setting: String,
    pub path: String,
    /// What was restored: the old value, or "absent" for a removed file.
    pub restored: String,
    /// Set when someone else had changed the value after nastune wrote it.
    pub drifted_from: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RolledBack {
    pub session: i64,
    pub restored: Vec<Restored>,
    /// Network persistence that was waiting for `tune confirm` and is dropped.
    pub dropped: usize,
}

/// The root a session wrote to.
pub fn session_root(s: &SessionRecord) -> Result<Root, RollbackError> {
    if s.root == "/" {
        return Ok(Root::live());
    }
    Root::tree(std::path::Path::new(&s.root)).map_err(|e| RollbackError::Root {
        session: s.id,
        root: s.root.clone(),
        message: e.to_string(),
    })
}

/// The newest session not rolled back yet.
pub fn latest(store: &Store) -> Result<SessionRecord, RollbackError> {
    let sessions = store.tune_sessions()?;
    if sessions.is_empty() {
        // A kill before the session row was committed leaves nothing to undo:
        // nothing was written, and nothing was rolled back either.
        return Err(RollbackError::NoSessionRecorded);
    }
    sessions
        .into_iter()
        .find(|s| s.state != "rolled_back")
        .ok_or(RollbackError::NothingToRollBack)
}

/// Files nastune owns outright; their temporary files are removed by every
/// rollback and apply, whichever session left them.
pub const OWNED_FILES: [&str; 2] = [sysctl_d::OWNED_FILE, udev_rules::OWNED_FILE];

/// Removes temporary files that a killed write of `paths` or of an owned file
/// left behind in `root`.
pub fn remove_stale_temps<'a>(
    root: &Root,
    paths: impl IntoIterator<Item = &'a str>,
) -> Result<(), WriteError> {
    for rel in OWNED_FILES.into_iter().chain(paths) {
        remove_stale_temp(root, rel)?;
    }
    Ok(())
}

/// Rolls back a whole session, or only its network entries (the dead-man timer).
pub fn rollback_session(
    store: &Store,
    session: &SessionRecord,
    only_network: bool,
) -> Result<RolledBack, RollbackError> {
    let root = session_root(session)?;
    let mut entries = store.tune_entries(session.id)?;
    entries.reverse();
    let mut restored = Vec::new();
    let mut dropped = Vec::new();
    let mut failed = None;
    for e in entries.iter().filter(|e| !only_network || e.network) {
        match e.state.as_str() {
            "journaled" | "applied" => match restore(&root, e) {
                Ok(r) => restored.push(r),
                Err(err) => {
                    failed = Some(err);
                    break;
                }
            },
            "deferred" => dropped.push(e.id),
            _ => {}
        }
    }
    let files = entries.iter().filter(|e| e.kind == KIND_FILE);
    if failed.is_none() {
        failed = remove_stale_temps(&root, files.map(|e| e.path.as_str()))
            .map_err(RollbackError::Temp)
            .err();
    }
    let whole = failed.is_none() && !only_network;
    let recorded = store.in_transaction(|store| {
        for r in &restored {
            store.tune_set_entry_state(r.entry, "reverted")?;
        }
        for &id in &dropped {
            store.tune_set_entry_state(id, "dropped")?;
        }
        if whole {
            store.tune_set_session_state(session.id, "rolled_back")?;
            // The dead-man timer, if any, has nothing left to do.
            store.tune_move_network_state(
                session.id,
                "pending",
                "reverted",
                Some("rolled back"),
            )?;
        }
        Ok(())
    });
    if let Some(err) = failed {
        return Err(err);
    }
    recorded.map_err(|cause| RollbackError::NotRecorded {
        what: format!("session {}", session.id),
        again: session.id.to_string(),
        restored: restored.len(),
        cause: Box::new(cause),
    })?;
    let dropped = dropped.len();
    Ok(RolledBack {
        session: session.id,
        restored,
        dropped,
    })
}

/// The journaled metadata of a file entry; `None` (the file's present
/// metadata is kept) for an entry from before the journal kept it.
pub fn old_meta(e: &EntryRecord) -> Option<FileMeta> {
    e.old_meta.as_deref().and_then(FileMeta::decode)
}

/// Rolls back one journal entry.
pub fn rollback_entry(store: &Store, entry: i64) -> Result<Restored, RollbackError> {
    let e = store
        .tune_entry(entry)?
        .ok_or(RollbackError::NoEntry(entry))?;
    let s = store
        .tune_session(e.session_id)?
        .ok_or(RollbackError::NoSession(e.session_id))?;
    let r = restore(&session_root(&s)?, &e)?;
    store
        .tune_set_entry_state(e.id, "reverted")
        .map_err(|cause| RollbackError::NotRecorded {
            what: format!("journal entry {entry}"),
            again: format!("--entry {entry}"),
            restored: 1,
            cause: Box::new(cause),
        })?;
    Ok(r)
}

/// Writes an entry's old value back on the system; the caller records it.
fn restore(root: &Root, e: &EntryRecord) -> Result<Restored, RollbackError> {
    let err = |source| RollbackError::Restore {
        setting: e.setting.clone(),
        path: e.path.clone(),
        cause: source,
    };
    let current = read_entry_to_compare(root, &e.kind, &e.path).map_err(err)?;
    let value = |v: &[u8]| selected_value(&String::from_utf8_lossy(v));
    // Restored already (a rollback whose record failed runs again): no drift.
    let already = match (&e.old, &current) {
        (Some(old), Some(cur)) if e.kind != KIND_FILE => value(old) == value(cur),
        (old, cur) => old == cur,
    };
    let drifted_from = match (&e.new, &current, e.state.as_str()) {
        _ if already => None,
        (Some(new), Some(cur), "applied") if e.kind != KIND_FILE => {
            let (n, c) = (
                selected_value(&String::from_utf8_lossy(new)),
                selected_value(&String::from_utf8_lossy(cur)),
            );
            (n != c).then_some(c)
        }
        (Some(new), Some(cur), "applied") if new != cur => {
            Some("(file changed by someone else)".into())
        }
        (Some(_), None, "applied") => Some("absent".into()),
        _ => None,
    };
    let restored = match (&e.old, e.kind.as_str()) {
        (Some(old), KIND_RUNTIME) => {
            restore_runtime(root, &e.path, old).map_err(err)?;
            selected_value(&String::from_utf8_lossy(old))
        }
        (Some(old), KIND_NETDEV) => {
            let old = String::from_utf8_lossy(old).into_owned();
            write_netdev(&e.path, &old).map_err(err)?;
            old
        }
        (Some(old), _) => {
            let meta = old_meta(e);
            // Already as journaled (a write that failed, or a rollback run
            // again): nothing to write, and an immutable file stays possible.
            let same = current.as_ref() == Some(old)
                && (meta.is_none() || read_meta(root, &e.path).ok().flatten() == meta);
            if !same {
                write_file_as(root, &e.path, old, meta.as_ref()).map_err(err)?;
            }
            format!("{} bytes", old.len())
        }
        (None, _) => {
            remove_file(root, &e.path).map_err(err)?;
            "absent".into()
        }
    };
    Ok(Restored {
        entry: e.id,
        setting: e.setting.clone(),
        path: format!("/{}", e.path),
        restored,
        drifted_from,
    })
}
