//! Rollback: every journaled entry of a session, newest first, gets its old value
//! back (a file that was absent is removed). Restoring is idempotent, so a session
//! interrupted at any point (state `applying`) rolls back the same way, and a
//! rollback interrupted itself can simply run again.

use crate::json::{Decode, Encode};

use super::action::{
    FileMeta, KIND_FILE, KIND_NETDEV, KIND_RUNTIME, WriteError, read_entry, read_meta, remove_file,
    remove_stale_temp, restore_runtime, selected_value, write_file_as, write_netdev,
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
        "restoring '{setting}' ('/{path}') failed: {source}; fix the cause and run the rollback again"
    )]
    Restore {
        setting: String,
        path: String,
        source: WriteError,
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
}

/// One restored entry.
#[derive(Debug, Clone, Encode, Decode)]
pub struct Restored {
    pub entry: i64,
    pub setting: String,
    pub path: String,
    /// What was restored: the old value, or "absent" for a removed file.
    pub restored: String,
    /// Set when someone else had changed the value after nastune wrote it.
    pub drifted_from: Option<String>,
}

#[derive(Debug, Clone, Encode, Decode)]
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
    let mut dropped = 0;
    for e in entries.iter().filter(|e| !only_network || e.network) {
        match e.state.as_str() {
            "journaled" | "applied" => restored.push(restore(store, &root, e)?),
            "deferred" => {
                store.tune_set_entry_state(e.id, "dropped")?;
                dropped += 1;
            }
            _ => {}
        }
    }
    let files = entries.iter().filter(|e| e.kind == KIND_FILE);
    remove_stale_temps(&root, files.map(|e| e.path.as_str())).map_err(RollbackError::Temp)?;
    if !only_network {
        store.tune_set_session_state(session.id, "rolled_back")?;
        // The dead-man timer, if any, has nothing left to do.
        store.tune_move_network_state(session.id, "pending", "reverted", Some("rolled back"))?;
    }
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
    restore(store, &session_root(&s)?, &e)
}

fn restore(store: &Store, root: &Root, e: &EntryRecord) -> Result<Restored, RollbackError> {
    let err = |source| RollbackError::Restore {
        setting: e.setting.clone(),
        path: e.path.clone(),
        source,
    };
    let current = read_entry(root, &e.kind, &e.path).map_err(err)?;
    let drifted_from = match (&e.new, &current, e.state.as_str()) {
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
    store.tune_set_entry_state(e.id, "reverted")?;
    Ok(Restored {
        entry: e.id,
        setting: e.setting.clone(),
        path: format!("/{}", e.path),
        restored,
        drifted_from,
    })
}
