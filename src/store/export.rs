//! Runs that travel between boxes: `history export` writes runs with their
//! documents as one versioned JSON file, `history import` reads it back into
//! another store. The export reads the store's runs one at a time as it
//! writes them, so it takes the memory of one run whatever their number. The
//! import reads the file's runs one at a time, straight from its text: each
//! document is decoded into its type and dropped before the run is written,
//! and the whole import is one transaction, so a bad or newer file imports
//! nothing.

use std::cell::Cell;
use std::fmt;

use serde::Serialize;
use serde::de::{self, DeserializeSeed, Deserializer as _, IgnoredAny, MapAccess, SeqAccess};
use serde::ser::{self, SerializeSeq as _};
use serde_json::value::RawValue;

use super::{DecodeError, DocKind, RunId, RunKind, RunRecord, Store, StoreError};

/// Decodes one document into its type and returns its kind, or why it does
/// not decode. The store does not know the document types; the catalog
/// (`runs::check_decodes`) does, and is passed in by whoever imports.
pub type DecodeCheck = fn(kind: &str, version: u32, json: &str) -> Result<DocKind, DecodeError>;

/// What the file says it is, so a stray JSON file is refused by name.
pub const FORMAT: &str = "nastune-runs";
/// Version of the export file layout.
pub const FORMAT_VERSION: u32 = 1;
/// The largest file `history import` reads. The file is held whole while its
/// runs are read one at a time: a 4 MiB export of 85 runs peaks at 12 MiB RSS,
/// a hostile one of 90,000 tiny documents in one run at 16 MiB, well inside the
/// 64 MiB a command may take on a 128 MiB box. A run is 1 to 170 KiB exported
/// (probe, check, bench), so a file holds some 25 to 100 runs.
pub const MAX_IMPORT_BYTES: u64 = 4 << 20;

/// An export file as `history export` writes it. Its runs are not held: each
/// is read from the store while the file is serialized, written and dropped
/// before the next, so memory holds one run and one document's value tree
/// whatever the number of runs. Holding them all as value trees took 377 MiB
/// RSS for 1,661 runs (82 MB of JSON); one at a time takes 19 MiB, as for 11.
#[derive(Serialize)]
pub struct ExportFile<'s> {
    pub format: &'static str,
    pub format_version: u32,
    pub tool_version: &'static str,
    pub exported_unix: u64,
    pub runs: ExportedRuns<'s>,
}

impl ExportFile<'_> {
    /// Why serializing the file stopped, when a run could not be read: the
    /// serializer's error then only says that it was stopped.
    pub fn take_failure(&self) -> Option<StoreError> {
        self.runs.failure.take()
    }
}

/// The runs of an [`ExportFile`], in the order asked for, read from the store
/// as they are serialized.
pub struct ExportedRuns<'s> {
    store: &'s Store,
    ids: Vec<RunId>,
    failure: Cell<Option<StoreError>>,
}

impl ExportedRuns<'_> {
    fn stop<E: ser::Error>(&self, e: StoreError) -> E {
        let message = E::custom(&e);
        self.failure.set(Some(e));
        message
    }
}

impl Serialize for ExportedRuns<'_> {
    fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.ids.len()))?;
        for &id in &self.ids {
            let run = self.store.run(id).map_err(|e| self.stop(e))?;
            let documents = self.store.documents(id).map_err(|e| self.stop(e))?;
            seq.serialize_element(&ExportedRun {
                run,
                documents: ExportedDocs {
                    id,
                    docs: documents,
                    runs: self,
                },
            })?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct ExportedRun<'a> {
    /// The run as stored; its `id` is the one in the store it came from (it
    /// gets a new one on import).
    #[serde(flatten)]
    run: RunRecord,
    documents: ExportedDocs<'a>,
}

/// One run's documents as the store keeps them (compact text, 1 to 170 KiB a
/// run), each parsed only while it is written.
struct ExportedDocs<'a> {
    id: RunId,
    docs: Vec<(String, u32, String)>,
    runs: &'a ExportedRuns<'a>,
}

impl Serialize for ExportedDocs<'_> {
    fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.docs.len()))?;
        for (kind, schema_version, body) in &self.docs {
            // A value tree sorts the body's keys, as every export has written
            // them; one document's tree at a time (the largest, a snapshot, is
            // 25 KiB of text), dropped before the next is parsed.
            let body: serde_json::Value = serde_json::from_str(body).map_err(|e| {
                self.runs.stop(StoreError::Corrupt {
                    path: self.runs.store.path().to_path_buf(),
                    detail: format!("run {}'s '{kind}' document is not JSON: {e}", self.id),
                })
            })?;
            seq.serialize_element(&ExportedDoc {
                kind,
                schema_version: *schema_version,
                body: &body,
            })?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct ExportedDoc<'a> {
    kind: &'a str,
    schema_version: u32,
    body: &'a serde_json::Value,
}

/// One run as `history import` reads it: [`RunRecord`]'s fields spelled out
/// rather than flattened, since serde first buffers every key a flattened
/// struct might take as a value tree, and an unknown key holding 4 MiB of
/// `[[],[],…]` would then take some 100 MB.
#[derive(serde::Deserialize)]
struct ImportedRun<'a> {
    id: RunId,
    kind: String,
    started_unix: i64,
    finished_unix: Option<i64>,
    status: String,
    host_id: String,
    tool_version: String,
    command: String,
    #[serde(borrow)]
    documents: Vec<ImportedDoc<'a>>,
}

/// A document's body stays the file's text until it is decoded and stored.
#[derive(serde::Deserialize)]
struct ImportedDoc<'a> {
    kind: String,
    schema_version: u32,
    #[serde(borrow)]
    body: &'a RawValue,
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
    #[error("cannot read '{file}': {cause}")]
    Read { file: String, cause: std::io::Error },
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
            cause: source,
        })?;
    if bytes.len() as u64 > MAX_IMPORT_BYTES {
        return Err(ImportError::TooLarge {
            file: file.to_string(),
        });
    }
    Ok(bytes)
}

impl Store {
    /// The runs `ids` with their documents, in the order given, read as the
    /// file is written. Every run is looked up first, so an id that is not
    /// stored is refused before anything is written.
    pub fn export(&self, ids: &[RunId]) -> Result<ExportFile<'_>, StoreError> {
        for &id in ids {
            self.run(id)?;
        }
        Ok(ExportFile {
            format: FORMAT,
            format_version: FORMAT_VERSION,
            tool_version: env!("CARGO_PKG_VERSION"),
            exported_unix: crate::time::now_unix(),
            runs: ExportedRuns {
                store: self,
                ids: ids.to_vec(),
                failure: Cell::new(None),
            },
        })
    }

    /// Imports every run of `bytes` (the file named `file`), or none: each
    /// document must decode into its type first (`decode`). Returns the new run ids.
    pub fn import(
        &self,
        file: &str,
        bytes: &[u8],
        decode: DecodeCheck,
    ) -> Result<Vec<RunId>, ImportError> {
        let tx = self
            .conn
            .unchecked_transaction()
            .map_err(|e| self.sql_err(e))?;
        let mut failure = None;
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let read = de
            .deserialize_map(FileVisitor(Import {
                store: self,
                file,
                decode,
                failure: &mut failure,
            }))
            .and_then(|ids| de.end().map(|()| ids));
        // Dropping `tx` unstored rolls back every run written so far.
        let ids = match (read, failure) {
            (_, Some(e)) => return Err(e),
            (Err(e), None) => return Err(not_an_export(file, e.to_string())),
            (Ok(ids), None) => ids,
        };
        tx.commit().map_err(|e| self.sql_err(e))?;
        Ok(ids)
    }

    /// Checks one run (its kind, every document decoded into its type) and
    /// writes it; the caller's transaction holds it until the file is done.
    fn import_run(
        &self,
        file: &str,
        run: &ImportedRun,
        decode: DecodeCheck,
    ) -> Result<RunId, ImportError> {
        let bad = |detail: String| ImportError::BadRun {
            file: file.to_string(),
            id: run.id,
            kind: run.kind.clone(),
            detail,
        };
        if RunKind::parse(&run.kind).is_none() {
            return Err(bad("a kind of run this nastune does not know".into()));
        }
        let mut kinds: Vec<DocKind> = Vec::with_capacity(run.documents.len());
        for d in &run.documents {
            // Only the kind of the decoded document is kept, so a run's
            // documents are not held twice.
            let kind =
                decode(&d.kind, d.schema_version, d.body.get()).map_err(|e| bad(e.to_string()))?;
            kinds.push(kind);
        }
        self.conn
            .execute(
                "INSERT INTO runs (kind, started_unix, finished_unix, status, host_id, tool_version, command) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                rusqlite::params![
                    run.kind,
                    run.started_unix,
                    run.finished_unix,
                    run.status,
                    run.host_id,
                    run.tool_version,
                    run.command
                ],
            )
            .map_err(|e| self.sql_err(e))?;
        let id = self.conn.last_insert_rowid();
        for (d, kind) in run.documents.iter().zip(kinds) {
            let body = compact(d.body).map_err(|e| bad(e.to_string()))?;
            self.insert_document(id, kind, d.schema_version, &body)?;
        }
        Ok(id)
    }
}

fn not_an_export(file: &str, detail: String) -> ImportError {
    ImportError::NotAnExport {
        file: file.to_string(),
        detail,
    }
}

/// A document's text as the store keeps it: compact, its keys in the file's
/// order, written straight from the parser into the serializer (no value tree,
/// so no more memory than the text, whatever its shape).
fn compact(body: &RawValue) -> serde_json::Result<String> {
    let mut out = Vec::with_capacity(body.get().len());
    let mut de = serde_json::Deserializer::from_str(body.get());
    serde_transcode::transcode(&mut de, &mut crate::json::serializer(&mut out))?;
    // serde_json writes UTF-8 only.
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Records why the import stopped, for [`Store::import`] to return instead
/// of the parser's error, which only says that it was stopped.
fn stop<E: de::Error>(failure: &mut Option<ImportError>, e: ImportError) -> E {
    let message = E::custom(&e);
    *failure = Some(e);
    message
}

/// What reading a file needs: the store its runs go into, its name for the
/// messages, and where a reason to stop is recorded.
struct Import<'s> {
    store: &'s Store,
    file: &'s str,
    decode: DecodeCheck,
    failure: &'s mut Option<ImportError>,
}

/// The file's object: its header, checked before any run, then its runs.
struct FileVisitor<'s>(Import<'s>);

impl<'de> de::Visitor<'de> for FileVisitor<'_> {
    type Value = Vec<RunId>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object with 'format', 'format_version' and 'runs'")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<RunId>, A::Error> {
        let Import {
            store,
            file,
            decode,
            failure,
        } = self.0;
        let (mut format, mut version, mut tool, mut exported) = (false, false, false, false);
        let mut ids = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "format" => {
                    let found: String = map.next_value()?;
                    if found != FORMAT {
                        let detail = format!("its format is '{found}'");
                        return Err(stop(failure, not_an_export(file, detail)));
                    }
                    format = true;
                }
                "format_version" => {
                    let found: u32 = map.next_value()?;
                    if found > FORMAT_VERSION {
                        let e = ImportError::TooNew {
                            file: file.to_string(),
                            found,
                            known: FORMAT_VERSION,
                        };
                        return Err(stop(failure, e));
                    }
                    version = true;
                }
                "tool_version" => tool = map.next_value::<String>().map(|_| true)?,
                "exported_unix" => exported = map.next_value::<u64>().map(|_| true)?,
                "runs" if ids.is_some() => return Err(de::Error::duplicate_field("runs")),
                // A newer layout may not read as ours: what the file is must be
                // known before its runs are.
                "runs" if !(format && version) => {
                    let detail = "its 'format' and 'format_version' do not come before its 'runs'";
                    return Err(stop(failure, not_an_export(file, detail.into())));
                }
                "runs" => {
                    ids = Some(map.next_value_seed(RunsSeed(Import {
                        store,
                        file,
                        decode,
                        failure: &mut *failure,
                    }))?);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        for (present, field) in [
            (format, "format"),
            (version, "format_version"),
            (tool, "tool_version"),
            (exported, "exported_unix"),
        ] {
            if !present {
                return Err(de::Error::missing_field(field));
            }
        }
        ids.ok_or_else(|| de::Error::missing_field("runs"))
    }
}

/// The runs array, read one run at a time: each is checked and written
/// before the next is read, so memory holds one run, not the file's.
struct RunsSeed<'s>(Import<'s>);

impl<'de> DeserializeSeed<'de> for RunsSeed<'_> {
    type Value = Vec<RunId>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Vec<RunId>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> de::Visitor<'de> for RunsSeed<'_> {
    type Value = Vec<RunId>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of runs")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<RunId>, A::Error> {
        let mut ids = Vec::new();
        while let Some(run) = seq.next_element::<ImportedRun<'de>>()? {
            match self.0.store.import_run(self.0.file, &run, self.0.decode) {
                Ok(id) => ids.push(id),
                Err(e) => return Err(stop(self.0.failure, e)),
            }
        }
        Ok(ids)
    }
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
            let docs = crate::runs::load(&store, r.id).unwrap();
            assert!(!docs.0.is_empty(), "run {} has no documents", r.id);
        }
    }

    /// An id that is not stored is refused before anything is written; a
    /// document that is not JSON stops the file at its run, and the error
    /// names it rather than saying only that the writer was stopped.
    #[test]
    fn export_refuses_unknown_runs_first_and_names_a_damaged_document() {
        let (dir, store) = fixture_store();
        let e = store.export(&[1, 9]).err().unwrap();
        assert!(matches!(e, StoreError::NoSuchRun(9)), "{e}");

        rusqlite::Connection::open(dir.path().join("old.db"))
            .unwrap()
            .execute(
                "UPDATE documents SET body = '{not json' WHERE run_id = 5 AND kind = 'crypto'",
                [],
            )
            .unwrap();
        let file = store.export(&[1, 5, 6]).unwrap();
        let mut out = Vec::new();
        assert!(serde_json::to_writer_pretty(&mut out, &file).is_err());
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("\"id\": 5,") && !text.contains("\"id\": 6,"));
        let e = file.take_failure().unwrap();
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
        assert!(
            e.to_string()
                .contains("run 5's 'crypto' document is not JSON"),
            "{e}"
        );
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
        let text = serde_json::to_string(&file).unwrap();

        let dir = tempfile::tempdir().unwrap();
        let new = Store::open(&dir.path().join("new.db")).unwrap();
        let got = new
            .import("runs.json", text.as_bytes(), crate::runs::check_decodes)
            .unwrap();
        assert_eq!(got.len(), ids.len());
        let bodies = |s: &Store, id: RunId| -> Vec<(String, u32, serde_json::Value)> {
            let docs = s.documents(id).unwrap().into_iter();
            docs.map(|(k, v, b)| (k, v, serde_json::from_str(&b).unwrap()))
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
        let e = new
            .import("n.json", newer.as_bytes(), crate::runs::check_decodes)
            .unwrap_err()
            .to_string();
        assert!(e.contains("format version 2, newer"), "{e}");
        let e = new
            .import("x.json", b"{\"a\": 1}", crate::runs::check_decodes)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a nastune runs file"), "{e}");
        let mut broken: serde_json::Value = serde_json::from_str(&text).unwrap();
        let last = ids.len() - 1;
        broken["runs"][last]["documents"][0]["body"] = serde_json::json!({"nonsense": true});
        let e = new
            .import(
                "b.json",
                serde_json::to_string(&broken).unwrap().as_bytes(),
                crate::runs::check_decodes,
            )
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("does not decode") && e.contains("nothing was imported"),
            "{e}"
        );
        assert_eq!(new.runs_of(None, 1000).unwrap().len(), before);
    }
}
