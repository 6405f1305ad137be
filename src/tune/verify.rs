//! `tune verify`: each setting nastune still owns (applied, not rolled back) is
//! applied, drifted (someone else changed it; reported, never re-asserted), or
//! unsupported (the kernel or device no longer has it).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::action::{KIND_FILE, read_entry_to_compare, selected_value};
use super::rollback::{RollbackError, session_root};
use crate::store::Store;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Applied,
    Drifted,
    Unsupported,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Check {
    pub session: i64,
    pub entry: i64,
    pub setting: String,
    pub path: String,
    pub expected: String,
    pub current: Option<String>,
    pub state: State,
}

/// Checks the owned settings of every session that wrote to `root_name`.
pub fn verify(store: &Store, root_name: &str) -> Result<Vec<Check>, RollbackError> {
    // The newest applied entry per path is what nastune owns there.
    let mut owned: BTreeMap<String, (i64, crate::store::tune::EntryRecord)> = BTreeMap::new();
    let mut sessions = store.tune_sessions()?;
    sessions.retain(|s| s.root == root_name && s.state != "rolled_back");
    sessions.reverse();
    let mut roots = BTreeMap::new();
    for s in &sessions {
        for e in store.tune_entries(s.id)? {
            if e.state == "applied" && e.new.is_some() {
                owned.insert(e.path.clone(), (s.id, e));
            } else if e.state == "reverted" {
                owned.remove(&e.path);
            }
        }
        roots.insert(s.id, session_root(s)?);
    }
    let mut out = Vec::new();
    for (path, (session, e)) in owned {
        let root = &roots[&session];
        let new = e.new.clone().unwrap_or_default();
        let current = read_entry_to_compare(root, &e.kind, &path).ok().flatten();
        let (expected, current_text, state) = if e.kind != KIND_FILE {
            let expected = selected_value(&String::from_utf8_lossy(&new));
            match &current {
                None => (expected, None, State::Unsupported),
                Some(c) => {
                    let c = selected_value(&String::from_utf8_lossy(c));
                    let state = if c == expected {
                        State::Applied
                    } else {
                        State::Drifted
                    };
                    (expected, Some(c), state)
                }
            }
        } else {
            let expected = format!("{} bytes written by nastune", new.len());
            match &current {
                None => (expected, Some("absent".into()), State::Drifted),
                Some(c) if *c == new => (expected.clone(), Some(expected), State::Applied),
                Some(c) => (
                    expected,
                    Some(format!("{} bytes, edited", c.len())),
                    State::Drifted,
                ),
            }
        };
        out.push(Check {
            session,
            entry: e.id,
            setting: e.setting,
            path: format!("/{path}"),
            expected,
            current: current_text,
            state,
        });
    }
    Ok(out)
}
