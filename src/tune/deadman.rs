//! The dead-man timer for network changes on a headless box: `tune apply` starts
//! a detached `nastune tune deadman SESSION` (its own session, so a dropped SSH
//! connection does not kill it) that waits for the deadline and then reverts the
//! session's network entries, unless `tune confirm` came first. Confirm and revert
//! race through one conditional update of the session's `network_state`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::rollback::{self, RollbackError, RolledBack};
use crate::store::Store;

/// How often the timer looks at the store (to leave early once confirmed).
const POLL: Duration = Duration::from_millis(200);

/// Starts the timer process for `session`, detached from this terminal.
pub fn spawn(exe: &Path, db: &Path, session: i64) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(exe);
    cmd.args(["tune", "deadman", &session.to_string(), "--db"])
        .arg(db)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe and touches no memory of this process.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn()
        .map(|_| ())
        .map_err(|e| format!("cannot start '{} tune deadman': {e}", exe.display()))
}

/// What the timer did.
#[derive(Debug)]
pub enum Outcome {
    /// Confirmed, rolled back or never pending: nothing to do.
    StoodDown(String),
    Reverted(RolledBack),
}

/// Waits for the deadline of `session`, then reverts its network entries unless
/// they were confirmed.
pub fn run(store: &Store, session: i64) -> Result<Outcome, RollbackError> {
    loop {
        let s = store
            .tune_session(session)?
            .ok_or(RollbackError::NoSession(session))?;
        if s.network_state != "pending" {
            return Ok(Outcome::StoodDown(s.network_state));
        }
        let deadline = s.confirm_deadline_unix.unwrap_or(0.0);
        let now = now_unix_f64();
        if now >= deadline {
            if !store.tune_move_network_state(session, "pending", "reverting", None)? {
                continue;
            }
            let result = rollback::rollback_session(store, &s, true);
            let note = match &result {
                Ok(r) => format!(
                    "not confirmed in time: {} network value(s) reverted by the dead-man timer",
                    r.restored.len()
                ),
                Err(e) => format!("dead-man timer could not revert: {e}"),
            };
            store.tune_move_network_state(session, "reverting", "reverted", Some(&note))?;
            return result.map(Outcome::Reverted);
        }
        std::thread::sleep(POLL.min(Duration::from_secs_f64(deadline - now)));
    }
}

/// Unix time with sub-second precision (deadlines of a few seconds).
pub fn now_unix_f64() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
