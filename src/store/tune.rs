//! The `tune` journal: sessions and their entries. Every statement outside an
//! explicit transaction commits on its own, and the store runs with
//! `synchronous = FULL`, so an entry is on disk before the write it describes.

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::{Store, StoreError};

/// One `tune apply`: its id is the id of its run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub id: i64,
    /// The tree the session wrote to ("/" on the live system).
    pub root: String,
    /// applying | applied | rolled_back
    pub state: String,
    pub created_unix: i64,
    pub confirm_deadline_unix: Option<f64>,
    /// none | pending | confirmed | reverting | reverted
    pub network_state: String,
    pub note: Option<String>,
}

/// One journaled write.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryRecord {
    pub id: i64,
    pub session_id: i64,
    pub seq: i64,
    /// runtime | file
    pub kind: String,
    /// Relative to the session's root.
    pub path: String,
    pub setting: String,
    pub rule_id: Option<String>,
    pub network: bool,
    /// `None`: the file was absent (for runtime entries: not read yet).
    pub old: Option<Vec<u8>>,
    /// A file's old metadata (`FileMeta::encode`); `None` when absent or
    /// journaled by a version that did not keep it.
    pub old_meta: Option<Vec<u8>>,
    /// `None`: journal only (a companion value that rollback restores).
    pub new: Option<Vec<u8>>,
    /// journaled | applied | deferred | reverted | dropped
    pub state: String,
}

/// What the journal gets before a write.
#[derive(Debug, Clone)]
pub struct NewEntry<'a> {
    pub seq: i64,
    pub kind: &'a str,
    pub path: &'a str,
    pub setting: &'a str,
    pub rule_id: Option<&'a str>,
    pub network: bool,
    pub old: Option<&'a [u8]>,
    pub old_meta: Option<&'a [u8]>,
    pub new: Option<&'a [u8]>,
    pub state: &'a str,
}

const SESSION_COLUMNS: &str =
    "id, root, state, created_unix, confirm_deadline_unix, network_state, note";
const ENTRY_COLUMNS: &str =
    "id, session_id, seq, kind, path, setting, rule_id, network, old, new, state, old_meta";

impl Store {
    /// Opens a session for `run` in state `applying`.
    pub fn tune_begin_session(
        &self,
        run: i64,
        root: &str,
        confirm_deadline_unix: Option<f64>,
    ) -> Result<(), StoreError> {
        let network_state = if confirm_deadline_unix.is_some() {
            "pending"
        } else {
            "none"
        };
        self.conn
            .execute(
                "INSERT INTO tune_sessions (id, root, state, created_unix, confirm_deadline_unix, network_state) \
                 VALUES (?1, ?2, 'applying', ?3, ?4, ?5)",
                params![
                    run,
                    root,
                    crate::time::now_unix() as i64,
                    confirm_deadline_unix,
                    network_state
                ],
            )
            .map_err(|e| self.sql_err(e))?;
        Ok(())
    }

    /// Journals one entry (committed when this returns) and gives its id.
    pub fn tune_journal(&self, session: i64, e: &NewEntry) -> Result<i64, StoreError> {
        self.conn
            .execute(
                "INSERT INTO tune_entries (session_id, seq, kind, path, setting, rule_id, network, old, new, state, old_meta) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    session, e.seq, e.kind, e.path, e.setting, e.rule_id, e.network, e.old, e.new,
                    e.state, e.old_meta
                ],
            )
            .map_err(|e| self.sql_err(e))?;
        Ok(self.conn.last_insert_rowid())
    }

    pub fn tune_set_entry_state(&self, entry: i64, state: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE tune_entries SET state = ?1 WHERE id = ?2",
                params![state, entry],
            )
            .map_err(|e| self.sql_err(e))?;
        Ok(())
    }

    /// Records the old value of a deferred entry just before it is written.
    pub fn tune_set_entry_old(
        &self,
        entry: i64,
        old: Option<&[u8]>,
        old_meta: Option<&[u8]>,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE tune_entries SET old = ?1, old_meta = ?2, state = 'journaled' WHERE id = ?3",
                params![old, old_meta, entry],
            )
            .map_err(|e| self.sql_err(e))?;
        Ok(())
    }

    pub fn tune_set_session_state(&self, session: i64, state: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE tune_sessions SET state = ?1 WHERE id = ?2",
                params![state, session],
            )
            .map_err(|e| self.sql_err(e))?;
        Ok(())
    }

    /// Moves `network_state` from `from` to `to` only if it is still `from`, so the
    /// dead-man timer and `tune confirm` cannot both win. True when it moved.
    pub fn tune_move_network_state(
        &self,
        session: i64,
        from: &str,
        to: &str,
        note: Option<&str>,
    ) -> Result<bool, StoreError> {
        let n = self
            .conn
            .execute(
                "UPDATE tune_sessions SET network_state = ?1, note = COALESCE(?2, note) \
                 WHERE id = ?3 AND network_state = ?4",
                params![to, note, session, from],
            )
            .map_err(|e| self.sql_err(e))?;
        Ok(n == 1)
    }

    pub fn tune_session(&self, id: i64) -> Result<Option<SessionRecord>, StoreError> {
        self.conn
            .query_row(
                &format!("SELECT {SESSION_COLUMNS} FROM tune_sessions WHERE id = ?1"),
                [id],
                row_to_session,
            )
            .optional()
            .map_err(|e| self.sql_err(e))
    }

    /// Every session, newest first.
    pub fn tune_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {SESSION_COLUMNS} FROM tune_sessions ORDER BY id DESC"
            ))
            .map_err(|e| self.sql_err(e))?;
        let rows = stmt
            .query_map([], row_to_session)
            .map_err(|e| self.sql_err(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.sql_err(e))
    }

    /// The entries of a session in the order they were written.
    pub fn tune_entries(&self, session: i64) -> Result<Vec<EntryRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {ENTRY_COLUMNS} FROM tune_entries WHERE session_id = ?1 ORDER BY seq, id"
            ))
            .map_err(|e| self.sql_err(e))?;
        let rows = stmt
            .query_map([session], row_to_entry)
            .map_err(|e| self.sql_err(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.sql_err(e))
    }

    pub fn tune_entry(&self, id: i64) -> Result<Option<EntryRecord>, StoreError> {
        self.conn
            .query_row(
                &format!("SELECT {ENTRY_COLUMNS} FROM tune_entries WHERE id = ?1"),
                [id],
                row_to_entry,
            )
            .optional()
            .map_err(|e| self.sql_err(e))
    }
}

fn row_to_session(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRecord> {
    Ok(SessionRecord {
        id: r.get(0)?,
        root: r.get(1)?,
        state: r.get(2)?,
        created_unix: r.get(3)?,
        confirm_deadline_unix: r.get(4)?,
        network_state: r.get(5)?,
        note: r.get(6)?,
    })
}

fn row_to_entry(r: &rusqlite::Row<'_>) -> rusqlite::Result<EntryRecord> {
    Ok(EntryRecord {
        id: r.get(0)?,
        session_id: r.get(1)?,
        seq: r.get(2)?,
        kind: r.get(3)?,
        path: r.get(4)?,
        setting: r.get(5)?,
        rule_id: r.get(6)?,
        network: r.get(7)?,
        old: r.get(8)?,
        new: r.get(9)?,
        state: r.get(10)?,
        old_meta: r.get(11)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::RunKind;

    #[test]
    fn sessions_and_entries_round_trip() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(&d.path().join("db")).unwrap();
        let run = s.begin_run(RunKind::Tune, "h", "x").unwrap();
        s.tune_begin_session(run, "/tmp/t", Some(12.5)).unwrap();
        let e = NewEntry {
            seq: 1,
            kind: "file",
            path: "etc/x",
            setting: "file:/etc/x",
            rule_id: None,
            network: true,
            old: None,
            old_meta: Some(b"meta"),
            new: Some(b"a\n"),
            state: "journaled",
        };
        let id = s.tune_journal(run, &e).unwrap();
        s.tune_set_entry_state(id, "applied").unwrap();
        let got = s.tune_entries(run).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].old, None);
        assert_eq!(got[0].old_meta.as_deref(), Some(&b"meta"[..]));
        assert_eq!(got[0].new.as_deref(), Some(&b"a\n"[..]));
        assert_eq!(got[0].state, "applied");
        assert!(got[0].network);
        let sess = s.tune_session(run).unwrap().unwrap();
        assert_eq!(sess.network_state, "pending");
        assert_eq!(sess.state, "applying");
        // Only one of confirm and the dead-man timer can move the state.
        assert!(
            s.tune_move_network_state(run, "pending", "confirmed", None)
                .unwrap()
        );
        assert!(
            !s.tune_move_network_state(run, "pending", "reverting", None)
                .unwrap()
        );
        assert!(s.tune_session(999).unwrap().is_none());
    }
}
