//! Runs that travel between boxes: `history export` writes runs with their
//! documents as one versioned JSON file, `history import` reads it back into
//! another store. Every document is decoded into its type before anything is
//! written, and the whole import is one transaction: a bad or newer file
//! imports nothing.

use crate::json::{Decode, Encode};

use super::doc::Body;
use super::{Doc, DocKind, RunId, RunKind, RunRecord, Store, StoreError};

/// What the file says it is, so a stray JSON file is refused by name.
pub const FORMAT: &str = "nastune-runs";
/// Version of the export file layout.
pub const FORMAT_VERSION: u32 = 1;
/// The largest file `history import` reads. The whole file is parsed into a
/// value tree several times its size before anything is stored: a 4 MiB file
/// peaks at about 25 MiB (an 8 MiB one reached 64 MiB when the decoded
/// documents were kept too), which a 128 MiB box can give. A run is 100 to 170
/// KiB exported (probe, check, bench), so a file holds some 25 to 40 runs.
pub const MAX_IMPORT_BYTES: u64 = 4 << 20;

#[derive(Debug, Clone, PartialEq, Encode, Decode)]
pub struct ExportFile {
    pub format: String,
    pub format_version: u32,
    pub tool_version: String,
    pub exported_unix: u64,
    pub runs: Vec<ExportedRun>,
}

#[derive(Debug, Clone, PartialEq, Encode, Decode)]
pub struct ExportedRun {
    /// The run as stored; its `id` is the one in the store it came from (it
    /// gets a new one on import).
    #[serde(flatten)]
    pub run: RunRecord,
    pub documents: Vec<ExportedDoc>,
}

#[derive(Debug, Clone, PartialEq, Encode, Decode)]
pub struct ExportedDoc {
    pub kind: String,
    pub schema_version: u32,
    pub body: serde_json::Value,
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(
        "'{file}' is not a nastune runs file ({detail}); make one with 'nastune history export RUN...'"
    )]
    NotAnExport { file: String, detail: String },
    #[error(
        "'{file}' is a runs file of format version {found}, newer than this nastune reads ({known}); upgrade nastune on this box"
    )]
    TooNew {
        file: String,
        found: u32,
        known: u32,
    },
    #[error("'{file}', run {id} (kind '{kind}'): {detail}; nothing was imported")]
    BadRun {
        file: String,
        id: RunId,
        kind: String,
        detail: String,
    },
    #[error(
        "'{file}' is larger than {limit} MiB, the most 'history import' reads at once (it holds the whole file in memory); export fewer runs per file, e.g. 'nastune history export 1 2 3 > part1.json'",
        limit = MAX_IMPORT_BYTES >> 20
    )]
    TooLarge { file: String },
    #[error("cannot read '{file}': {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Reads an export file of at most [`MAX_IMPORT_BYTES`] from `r`.
pub fn read_capped(file: &str, r: impl std::io::Read) -> Result<Vec<u8>, ImportError> {
    use std::io::Read;
    let mut bytes = Vec::new();
    r.take(MAX_IMPORT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| ImportError::Read {
            file: file.to_string(),
            source,
        })?;
    if bytes.len() as u64 > MAX_IMPORT_BYTES {
        return Err(ImportError::TooLarge {
            file: file.to_string(),
        });
    }
    Ok(bytes)
}

impl Store {
    /// The runs `ids` with their documents, in the order given.
    pub fn export(&self, ids: &[RunId]) -> Result<ExportFile, StoreError> {
        let mut runs = Vec::new();
        for &id in ids {
            let run = self.run(id)?;
            let documents = self
                .documents(id)?
                .into_iter()
                .map(|(kind, schema_version, body)| {
                    let body = crate::json::from_str(&body).map_err(|e| StoreError::Corrupt {
                        path: self.path().to_path_buf(),
                        detail: format!("run {id}'s '{kind}' document is not JSON: {e}"),
                    })?;
                    Ok(ExportedDoc {
                        kind,
                        schema_version,
                        body,
                    })
                })
                .collect::<Result<_, StoreError>>()?;
            runs.push(ExportedRun { run, documents });
        }
        Ok(ExportFile {
            format: FORMAT.into(),
            format_version: FORMAT_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").into(),
            exported_unix: crate::time::now_unix(),
            runs,
        })
    }

    /// Imports every run of `text` (the file named `file`), or none: each
    /// document must decode into its type first. Returns the new run ids.
    pub fn import(&self, file: &str, text: &str) -> Result<Vec<RunId>, ImportError> {
        let parsed = parse(file, text)?;
        let tx = self
            .conn
            .unchecked_transaction()
            .map_err(|e| self.sql_err(e))?;
        let mut ids = Vec::new();
        for (run, docs) in &parsed {
            tx.execute(
                "INSERT INTO runs (kind, started_unix, finished_unix, status, host_id, tool_version, command) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                rusqlite::params![
                    run.run.kind,
                    run.run.started_unix,
                    run.run.finished_unix,
                    run.run.status,
                    run.run.host_id,
                    run.run.tool_version,
                    run.run.command
                ],
            )
            .map_err(|e| self.sql_err(e))?;
            let id = tx.last_insert_rowid();
            // The bodies as exported (already decoded once to validate them).
            for (d, kind) in run.documents.iter().zip(docs) {
                self.insert_document(id, *kind, d.schema_version, &d.body.to_string())?;
            }
            ids.push(id);
        }
        tx.commit().map_err(|e| self.sql_err(e))?;
        Ok(ids)
    }
}

/// Validates a whole file: its format and version, every run kind and every
/// document decoded into its type.
pub fn parse(file: &str, text: &str) -> Result<Vec<(ExportedRun, Vec<DocKind>)>, ImportError> {
    let not = |detail: String| ImportError::NotAnExport {
        file: file.to_string(),
        detail,
    };
    // Parsed once; the header is checked first, since a newer layout may not
    // decode as ours.
    let value: crate::json::Value = crate::json::from_str(text).map_err(|e| not(e.to_string()))?;
    let header = |key: &str| value.get(key).cloned().unwrap_or_default();
    let format = String::decode(header("format")).map_err(|e| not(e.at("format").to_string()))?;
    if format != FORMAT {
        return Err(not(format!("its format is '{format}'")));
    }
    let version = u32::decode(header("format_version"))
        .map_err(|e| not(e.at("format_version").to_string()))?;
    if version > FORMAT_VERSION {
        return Err(ImportError::TooNew {
            file: file.to_string(),
            found: version,
            known: FORMAT_VERSION,
        });
    }
    let export: ExportFile = crate::json::from_value(value).map_err(|e| not(e.to_string()))?;
    let mut out = Vec::new();
    for run in export.runs {
        let bad = |detail: String| ImportError::BadRun {
            file: file.to_string(),
            id: run.run.id,
            kind: run.run.kind.clone(),
            detail,
        };
        if RunKind::parse(&run.run.kind).is_none() {
            return Err(bad("a kind of run this nastune does not know".into()));
        }
        let mut docs = Vec::new();
        for d in &run.documents {
            // The body is cloned so the run keeps its documents as they were
            // read; only the kind of the decoded document is kept, so the
            // file's documents are not all held twice.
            let doc = Doc::decode_body(&d.kind, d.schema_version, Body::Value(d.body.clone()))
                .map_err(|e| bad(e.to_string()))?;
            docs.push(doc.kind());
        }
        out.push((run, docs));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file past the cap is refused by name before it is parsed; one at the
    /// cap is read whole.
    #[test]
    fn import_reads_at_most_the_cap() {
        let cap = MAX_IMPORT_BYTES as usize;
        let at_cap = vec![b' '; cap];
        assert_eq!(read_capped("a.json", &at_cap[..]).unwrap().len(), cap);
        let over = vec![b' '; cap + 1];
        let err = read_capped("big.json", &over[..]).unwrap_err();
        assert!(matches!(err, ImportError::TooLarge { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains("'big.json' is larger than 4 MiB") && text.contains("fewer runs"),
            "{text}"
        );
    }

    fn fixture_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("old.db");
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/store/v0.1.db");
        std::fs::copy(src, &db).unwrap();
        let store = Store::open_read_only(&db).unwrap();
        (dir, store)
    }

    #[test]
    fn every_document_of_the_0_1_store_decodes() {
        let (_dir, store) = fixture_store();
        let runs = store.runs_of(None, 100).unwrap();
        assert_eq!(runs.len(), 11);
        for r in &runs {
            assert!(RunKind::parse(&r.kind).is_some(), "{}", r.kind);
            let docs = store.load(r.id).unwrap();
            assert!(!docs.0.is_empty(), "run {} has no documents", r.id);
        }
    }

    #[test]
    fn export_import_round_trips_and_bad_files_import_nothing() {
        let (_dir, old) = fixture_store();
        let ids: Vec<RunId> = old
            .runs_of(None, 100)
            .unwrap()
            .iter()
            .map(|r| r.id)
            .collect();
        let file = old.export(&ids).unwrap();
        let text = crate::json::to_string(&file);
        // Byte for byte both ways, though `run` is decoded in line (ExportedRunFields).
        let back: ExportFile = crate::json::from_str(&text).unwrap();
        assert_eq!(back, file);
        assert_eq!(crate::json::to_string(&back), text);

        let dir = tempfile::tempdir().unwrap();
        let new = Store::open(&dir.path().join("new.db")).unwrap();
        let got = new.import("runs.json", &text).unwrap();
        assert_eq!(got.len(), ids.len());
        let bodies = |s: &Store, id: RunId| -> Vec<(String, u32, serde_json::Value)> {
            let docs = s.documents(id).unwrap().into_iter();
            docs.map(|(k, v, b)| (k, v, crate::json::from_str(&b).unwrap()))
                .collect()
        };
        for (a, b) in ids.iter().zip(&got) {
            assert_eq!(bodies(&old, *a), bodies(&new, *b));
            let (ra, rb) = (old.run(*a).unwrap(), new.run(*b).unwrap());
            assert_eq!(
                (ra.kind, ra.command, ra.host_id),
                (rb.kind, rb.command, rb.host_id)
            );
        }

        // A newer layout, a stray file, a broken document: nothing imported.
        let before = new.runs_of(None, 1000).unwrap().len();
        let newer = text.replacen("\"format_version\":1", "\"format_version\":2", 1);
        let e = new.import("n.json", &newer).unwrap_err().to_string();
        assert!(e.contains("format version 2, newer"), "{e}");
        let e = new.import("x.json", "{\"a\": 1}").unwrap_err().to_string();
        assert!(e.contains("not a nastune runs file"), "{e}");
        let mut broken = file.clone();
        let last = broken.runs.len() - 1;
        broken.runs[last].documents[0].body = serde_json::json!({"nonsense": true});
        let e = new
            .import("b.json", &crate::json::to_string(&broken))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("does not decode") && e.contains("nothing was imported"),
            "{e}"
        );
        assert_eq!(new.runs_of(None, 1000).unwrap().len(), before);
    }
}
