//! Applying a plan: for each step, the old value is journaled (committed, fsynced)
//! before the write; a failed write rolls the session back. Network persistence
//! waits for `tune confirm` (see [`confirm`]).
//!
//! `NASTUNE_TUNE_FAULT_AFTER=N` (hidden, for tests) ends the process abruptly
//! after fault point N: each step has two, after its journal entry and after its
//! write, so a crash at every point of an apply can be rolled back.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::action::{
    Action, KIND_FILE, WriteError, read_current, read_entry, read_meta, write_file, write_netdev,
    write_runtime,
};
use super::plan::Plan;
use super::rollback::{self, RollbackError, session_root};
use crate::root::Root;
use crate::store::tune::NewEntry;
use crate::store::{Store, StoreError};

pub const FAULT_ENV: &str = "NASTUNE_TUNE_FAULT_AFTER";
/// Exit status of a process stopped by [`FAULT_ENV`].
pub const FAULT_EXIT: i32 = 86;

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("step {seq} ({setting}) failed, so session {session} was rolled back: {cause}")]
    Write {
        session: i64,
        seq: usize,
        setting: String,
        cause: WriteError,
    },
    #[error(
        "step {seq} failed ({first}) and rolling session {session} back failed too: {cause}; run 'nastune tune rollback {session}'"
    )]
    RollbackFailed {
        session: i64,
        seq: usize,
        first: WriteError,
        cause: Box<RollbackError>,
    },
    #[error("{cause}; remove that temporary file or fix the cause; nothing was written")]
    Temp { cause: WriteError },
    #[error("cannot start the dead-man timer: {0}; nothing was written")]
    Deadman(String),
    #[error("session {0} not found in the store")]
    NoSession(i64),
    #[error("session {session} has no network changes waiting for confirmation (they are {state})")]
    NotPending { session: i64, state: String },
    #[error(transparent)]
    Rollback(#[from] RollbackError),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Applied {
    pub session: i64,
    pub written: usize,
    /// Writes that wait for `tune confirm`.
    pub deferred: usize,
    pub confirm_deadline_unix: Option<f64>,
}

/// Stops the process at fault point `n` when the test switch asks for it.
struct Faults {
    after: Option<u32>,
    count: u32,
}

impl Faults {
    fn from_env() -> Self {
        Faults {
            after: std::env::var(FAULT_ENV).ok().and_then(|v| v.parse().ok()),
            count: 0,
        }
    }

    fn point(&mut self) {
        self.count += 1;
        if self.after == Some(self.count) {
            std::process::exit(FAULT_EXIT);
        }
    }
}

/// Applies `plan` as session `run` (the run's id). `spawn_deadman` starts the
/// timer before any network write.
pub fn apply(
    store: &Store,
    root: &Root,
    run: i64,
    plan: &Plan,
    confirm_within: Duration,
    spawn_deadman: &dyn Fn(i64) -> Result<(), String>,
) -> Result<Applied, ApplyError> {
    let deadline = plan
        .has_network()
        .then(|| super::deadman::now_unix_f64() + confirm_within.as_secs_f64());
    // A write killed before its rename in an earlier run left a temporary file.
    let files = plan.steps.iter().filter(|s| s.action.kind() == KIND_FILE);
    rollback::remove_stale_temps(root, files.map(|s| s.action.path()))
        .map_err(|source| ApplyError::Temp { cause: source })?;
    let root_name = root_name(root);
    store.tune_begin_session(run, &root_name, deadline)?;
    if deadline.is_some()
        && let Err(e) = spawn_deadman(run)
    {
        store.tune_set_session_state(run, "rolled_back")?;
        store.tune_move_network_state(run, "pending", "reverted", Some(&e))?;
        return Err(ApplyError::Deadman(e));
    }
    let mut faults = Faults::from_env();
    let mut written = 0;
    let mut deferred = 0;
    for (i, step) in plan.steps.iter().enumerate() {
        let seq = i + 1;
        let path = step.action.path();
        let new = step.action.new_bytes();
        let fail = |source: WriteError| -> ApplyError {
            let session = match store.tune_session(run) {
                Ok(Some(s)) => s,
                _ => return ApplyError::NoSession(run),
            };
            match rollback::rollback_session(store, &session, false) {
                Ok(_) => ApplyError::Write {
                    session: run,
                    seq,
                    setting: step.setting.clone(),
                    cause: source,
                },
                Err(e) => ApplyError::RollbackFailed {
                    session: run,
                    seq,
                    first: source,
                    cause: Box::new(e),
                },
            }
        };
        let mut entry = NewEntry {
            seq: seq as i64,
            kind: step.action.kind(),
            path,
            setting: &step.setting,
            rule_id: step.rule_id.as_deref(),
            network: step.network,
            old: None,
            old_meta: None,
            new: new.as_deref(),
            state: "deferred",
        };
        if step.deferred {
            store.tune_journal(run, &entry)?;
            faults.point();
            deferred += 1;
            continue;
        }
        let old = match read_entry(root, step.action.kind(), path) {
            Ok(o) => o,
            Err(e) => return Err(fail(e)),
        };
        entry.old = old.as_deref();
        let meta = match file_meta(root, &step.action) {
            Ok(m) => m,
            Err(e) => return Err(fail(e)),
        };
        entry.old_meta = meta.as_deref();
        entry.state = "journaled";
        let id = store.tune_journal(run, &entry)?;
        faults.point();
        if let Err(e) = perform(root, &step.action) {
            return Err(fail(e));
        }
        faults.point();
        store.tune_set_entry_state(id, "applied")?;
        written += 1;
    }
    store.tune_set_session_state(run, "applied")?;
    Ok(Applied {
        session: run,
        written,
        deferred,
        confirm_deadline_unix: deadline,
    })
}

/// The encoded metadata of the file a file action replaces, for the journal.
fn file_meta(root: &Root, action: &Action) -> Result<Option<Vec<u8>>, WriteError> {
    if action.kind() != KIND_FILE {
        return Ok(None);
    }
    Ok(read_meta(root, action.path())?.map(|m| m.encode()))
}

fn perform(root: &Root, action: &Action) -> Result<(), WriteError> {
    match action {
        Action::Runtime {
            path,
            value: Some(v),
        } => write_runtime(root, path, v),
        Action::Runtime { value: None, .. } => Ok(()),
        Action::Netdev { path, value } => write_netdev(path, value),
        Action::File { path, content } => write_file(root, path, content),
    }
}

/// How a session names its root: "/" live, the tree's absolute path otherwise.
pub fn root_name(root: &Root) -> String {
    if root.is_live() {
        return "/".into();
    }
    std::fs::canonicalize(root.base())
        .unwrap_or_else(|_| root.base().to_path_buf())
        .display()
        .to_string()
}

/// `tune confirm`: keeps the network changes (the dead-man timer stands down)
/// and writes their persistence, journaled like any other write.
pub fn confirm(store: &Store, session: i64) -> Result<usize, ApplyError> {
    let s = store
        .tune_session(session)?
        .ok_or(ApplyError::NoSession(session))?;
    if !store.tune_move_network_state(session, "pending", "confirmed", None)? {
        let now = store
            .tune_session(session)?
            .map(|s| s.network_state)
            .unwrap_or_default();
        return Err(ApplyError::NotPending {
            session,
            state: now,
        });
    }
    let root = session_root(&s)?;
    let mut written = 0;
    for e in store
        .tune_entries(session)?
        .into_iter()
        .filter(|e| e.state == "deferred")
    {
        let action = match e.kind.as_str() {
            "file" => Action::File {
                path: e.path.clone(),
                content: e.new.clone().unwrap_or_default(),
            },
            _ => Action::Runtime {
                path: e.path.clone(),
                value: e
                    .new
                    .as_ref()
                    .map(|b| String::from_utf8_lossy(b).into_owned()),
            },
        };
        let io = |source| ApplyError::Write {
            session,
            seq: e.seq as usize,
            setting: e.setting.clone(),
            cause: source,
        };
        let old = read_current(&root, &e.path).map_err(io)?;
        let meta = file_meta(&root, &action).map_err(io)?;
        store.tune_set_entry_old(e.id, old.as_deref(), meta.as_deref())?;
        perform(&root, &action).map_err(io)?;
        store.tune_set_entry_state(e.id, "applied")?;
        written += 1;
    }
    Ok(written)
}
