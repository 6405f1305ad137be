//! Telling a nastune database from another program's SQLite file before
//! anything writes to it. The header is parsed from bytes and the schema facts
//! (application_id, user_version, table names) are judged by pure functions, so
//! every verdict is tested on literal inputs.

use std::path::Path;

use super::StoreError;
use super::migrations::{LATEST_VERSION, tables_at};

/// `PRAGMA application_id` of every nastune database: "NAST" in ASCII.
pub const APPLICATION_ID: i32 = 0x4E41_5354;

/// The fields of the 100-byte SQLite header that decide how to open a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub application_id: i32,
    /// The file is in WAL mode (read and write format versions are 2).
    pub wal: bool,
    /// The text encoding is UTF-16 (2 or 3; nastune writes UTF-8, 1).
    pub utf16: bool,
    /// The size the database had at its last commit to this file (page size
    /// times the in-header page count), when the header's count is valid.
    pub size: Option<u64>,
}

pub const HEADER_LEN: usize = 100;

/// Parses the start of a database file; `None` when it is not SQLite at all.
pub fn parse_header(bytes: &[u8]) -> Option<Header> {
    let head = bytes.get(..HEADER_LEN)?;
    if !head.starts_with(b"SQLite format 3\0") {
        return None;
    }
    let be = |at: usize| i32::from_be_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
    Some(Header {
        application_id: be(68),
        wal: head[18] == 2 && head[19] == 2,
        utf16: matches!(be(56), 2 | 3),
        size: stated_size(head),
    })
}

/// Page size times page count, as the header states them. The count is valid
/// only when the "version-valid-for" number (offset 92) equals the change
/// counter (offset 24): SQLite before 3.7.0 did not keep it up to date.
fn stated_size(head: &[u8]) -> Option<u64> {
    let be = |at: usize| u32::from_be_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
    let page_size = match u16::from_be_bytes([head[16], head[17]]) {
        1 => 65536,
        n if n >= 512 && n.is_power_of_two() => u64::from(n),
        _ => return None,
    };
    let pages = be(28);
    (pages > 0 && be(92) == be(24)).then(|| page_size * u64::from(pages))
}

/// What an existing SQLite file is to nastune.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// No tables and no marks: an empty database nastune may fill.
    New,
    /// Carries nastune's application_id, at this schema version.
    Ours { version: i64 },
    /// Written by a nastune from before the application_id (its exact schema
    /// at this version); it is stamped on the next write.
    Unstamped { version: i64 },
}

/// Judges a database by its application_id, user_version and the names of its
/// tables, views and triggers (SQLite's own `sqlite_*` left out). Anything that
/// is not clearly nastune's is refused, so it is never changed.
pub fn identify(
    path: &Path,
    application_id: i32,
    user_version: i64,
    names: &[&str],
) -> Result<Identity, StoreError> {
    let foreign = |why: String| StoreError::Foreign {
        path: path.to_path_buf(),
        why,
    };
    if application_id == APPLICATION_ID {
        if user_version < 0 {
            return Err(StoreError::BadVersion {
                path: path.to_path_buf(),
                found: user_version,
            });
        }
        if user_version > LATEST_VERSION {
            return Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found: user_version,
                known: LATEST_VERSION,
            });
        }
        return Ok(Identity::Ours {
            version: user_version,
        });
    }
    if application_id != 0 {
        return Err(foreign(format!(
            "its application_id is {application_id:#010x}, nastune's is {APPLICATION_ID:#010x}"
        )));
    }
    if !(0..=LATEST_VERSION).contains(&user_version) {
        return Err(foreign(format!(
            "its user_version '{user_version}' is no nastune schema version"
        )));
    }
    let mut have: Vec<&str> = names.to_vec();
    have.sort();
    let mut want = tables_at(user_version);
    want.sort();
    if have == want {
        return Ok(if user_version == 0 {
            Identity::New
        } else {
            Identity::Unstamped {
                version: user_version,
            }
        });
    }
    let all = tables_at(LATEST_VERSION);
    let strangers: Vec<&str> = have.iter().copied().filter(|n| !all.contains(n)).collect();
    Err(foreign(if strangers.is_empty() {
        format!(
            "its tables {} do not match nastune's schema {user_version}",
            quote_list(&have)
        )
    } else {
        format!(
            "it holds {} that nastune does not create",
            quote_list(&strangers)
        )
    }))
}

/// `'a', 'b', 'c'`, at most five names then how many more.
fn quote_list(names: &[&str]) -> String {
    const SHOWN: usize = 5;
    let mut out: Vec<String> = names.iter().take(SHOWN).map(|n| format!("'{n}'")).collect();
    if names.len() > SHOWN {
        out.push(format!("and {} more", names.len() - SHOWN));
    }
    out.join(", ")
}

/// A `file:` URI for `path` (percent-encoded), for the URI-only
/// `immutable=1` parameter.
pub fn immutable_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(app: i32, version: i64, names: &[&str]) -> Result<Identity, String> {
        identify(Path::new("photos.db"), app, version, names).map_err(|e| e.to_string())
    }

    const ALL: &[&str] = &[
        "runs",
        "documents",
        "watch_series",
        "tune_sessions",
        "tune_entries",
        "watch_points",
    ];

    #[test]
    fn nastune_databases_are_recognised() {
        assert_eq!(id(0, 0, &[]), Ok(Identity::New));
        assert_eq!(
            id(APPLICATION_ID, 2, &["anything"]),
            Ok(Identity::Ours { version: 2 })
        );
        assert_eq!(
            id(0, 1, &["documents", "runs"]),
            Ok(Identity::Unstamped { version: 1 })
        );
        assert_eq!(
            id(0, LATEST_VERSION, ALL),
            Ok(Identity::Unstamped {
                version: LATEST_VERSION
            })
        );
    }

    #[test]
    fn other_programs_databases_are_refused_with_the_reason() {
        let e = id(0, 0, &["albums", "photos"]).unwrap_err();
        assert!(e.contains("'photos.db' is not a nastune database"), "{e}");
        assert!(
            e.contains("'albums', 'photos' that nastune does not create"),
            "{e}"
        );
        assert!(e.contains("nothing was changed"), "{e}");
        // A table that happens to share a name with ours is not enough.
        let e = id(0, 0, &["runs"]).unwrap_err();
        assert!(
            e.contains("tables 'runs' do not match nastune's schema 0"),
            "{e}"
        );
        let e = id(0, 1, &["runs"]).unwrap_err();
        assert!(e.contains("do not match nastune's schema 1"), "{e}");
        let e = id(0, 1, &["documents", "photos", "runs"]).unwrap_err();
        assert!(e.contains("'photos' that nastune"), "{e}");
        let e = id(0, -1, &[]).unwrap_err();
        assert!(e.contains("user_version '-1' is no nastune schema"), "{e}");
        let e = id(0, LATEST_VERSION + 1, ALL).unwrap_err();
        assert!(e.contains("no nastune schema version"), "{e}");
        let e = id(0x1234, 0, &[]).unwrap_err();
        assert!(e.contains("application_id is 0x00001234"), "{e}");
        let many = ["a", "b", "c", "d", "e", "f", "g"];
        let e = id(0, 0, &many).unwrap_err();
        assert!(e.contains("'e', and 2 more"), "{e}");
    }

    #[test]
    fn our_id_with_an_unknown_version_is_a_clear_error() {
        let e = id(APPLICATION_ID, -1, &[]).unwrap_err();
        assert!(e.contains("schema version '-1'"), "{e}");
        let e = id(APPLICATION_ID, 999, &[]).unwrap_err();
        assert!(e.contains("written by a newer nastune (schema 999"), "{e}");
    }

    #[test]
    fn header_fields() {
        let mut h = [0u8; 100];
        h[..16].copy_from_slice(b"SQLite format 3\0");
        h[68..72].copy_from_slice(&APPLICATION_ID.to_be_bytes());
        h[18] = 2;
        h[19] = 2;
        assert_eq!(
            parse_header(&h),
            Some(Header {
                application_id: APPLICATION_ID,
                wal: true,
                utf16: false,
                size: None,
            })
        );
        // 4096-byte pages, 3 of them, counted at change 7 (valid only when
        // "version-valid-for" says 7 too).
        h[16..18].copy_from_slice(&4096u16.to_be_bytes());
        h[24..28].copy_from_slice(&7u32.to_be_bytes());
        h[28..32].copy_from_slice(&3u32.to_be_bytes());
        assert_eq!(parse_header(&h).unwrap().size, None);
        h[92..96].copy_from_slice(&7u32.to_be_bytes());
        assert_eq!(parse_header(&h).unwrap().size, Some(3 * 4096));
        h[16..18].copy_from_slice(&1u16.to_be_bytes());
        assert_eq!(parse_header(&h).unwrap().size, Some(3 * 65536));
        h[16..18].copy_from_slice(&1000u16.to_be_bytes());
        assert_eq!(parse_header(&h).unwrap().size, None, "not a power of two");
        h[18] = 1;
        assert!(!parse_header(&h).unwrap().wal);
        h[59] = 1;
        assert!(!parse_header(&h).unwrap().utf16);
        h[59] = 3;
        assert!(parse_header(&h).unwrap().utf16);
        assert_eq!(parse_header(&h[..99]), None);
        assert_eq!(parse_header(&[0x5a; 100]), None);
    }

    #[test]
    fn uri_escapes_what_sqlite_would_parse() {
        assert_eq!(
            immutable_uri(Path::new("/m/a b?#%.db")),
            "file:/m/a%20b%3F%23%25.db?immutable=1"
        );
    }
}
