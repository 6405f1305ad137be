//! The catalog, above every engine: the one table of document kinds and their
//! types, a run's documents decoded ([`RunDocs`]), and loading and saving a
//! whole run through the store. store keeps documents without naming their
//! types; the engines declare theirs against the vocabulary in [`crate::doc`];
//! only this module knows them all.

pub mod measured;

use crate::doc::metrics::{Chart, Measured, Metric};
use crate::doc::validity::Validity;
use crate::doc::{DecodeError, DocKind, Document, body};
use crate::store::{RunId, Store, StoreError};

/// The documents of one run, decoded, with typed accessors.
#[derive(Debug, Clone, Default)]
pub struct RunDocs(pub Vec<Doc>);

/// Names every kind of document's type once. From each
/// `Variant => Type, one, all $(: Measured)?;` line (`Variant` is the
/// [`DocKind`] of the vocabulary) come the [`Doc`] variant with its decoding
/// and encoding, the [`RunDocs`]
/// accessors `one()` (the first such document of a run) and `all()`, and, for a
/// bench kind marked `: Measured`, its metrics in [`RunDocs::metrics`] and its charts
/// in [`CHARTS`]. Append new kinds: the order is the report order of the charts.
macro_rules! documents {
    ($($variant:ident => $ty:ty, $one:ident, $all:ident $(: $measured:path)?;)+) => {
        /// One stored document, decoded into its type.
        #[derive(Debug, Clone)]
        pub enum Doc {
            $($variant(Box<$ty>)),+
        }

        impl Doc {
            /// Decodes a stored (or imported) `(kind, schema_version, body)`.
            pub fn decode(kind: &str, version: u32, json: &str) -> Result<Doc, DecodeError> {
                let k = DocKind::parse(kind).ok_or_else(|| DecodeError::UnknownKind {
                    kind: kind.to_string(),
                })?;
                Ok(match k {
                    $(DocKind::$variant => Doc::$variant(Box::new(body(version, json)?)),)+
                })
            }

            pub fn kind(&self) -> DocKind {
                match self {
                    $(Doc::$variant(_) => DocKind::$variant,)+
                }
            }

            /// The validity guard's verdict of a measurement document.
            pub fn validity(&self) -> Option<&Validity> {
                match self {
                    $(Doc::$variant(d) => d.validity(),)+
                }
            }

            /// The body as it is stored, with its schema version.
            pub fn encode(&self) -> serde_json::Result<(u32, String)> {
                fn enc<D: Document>(d: &D) -> serde_json::Result<(u32, String)> {
                    Ok((D::VERSION, crate::json::to_string(d)?))
                }
                match self {
                    $(Doc::$variant(d) => enc(d.as_ref()),)+
                }
            }
        }

        impl RunDocs {
            $(
                /// The first document of this kind in the run.
                pub fn $one(&self) -> Option<&$ty> {
                    self.0.iter().find_map(|d| match d {
                        Doc::$variant(x) => Some(&**x),
                        _ => None,
                    })
                }

                /// Every document of this kind in the run, in stored order.
                pub fn $all(&self) -> impl Iterator<Item = &$ty> + Clone {
                    self.0.iter().filter_map(|d| match d {
                        Doc::$variant(x) => Some(&**x),
                        _ => None,
                    })
                }
            )+

            /// The metrics of every bench document of the run, kind by kind.
            pub fn metrics(&self) -> Vec<Metric> {
                let mut out = Vec::new();
                $($(self.$all().for_each(|d| <$ty as $measured>::metrics(d, &mut out));)?)+
                out
            }
        }

        /// Every chart of every bench kind, in report order.
        pub const CHARTS: &[&[Chart]] = &[$($(<$ty as $measured>::CHARTS,)?)+];
    };
}

documents! {
    Snapshot => crate::probe::Snapshot, snapshot, snapshots;
    Findings => crate::advise::FindingsDoc, findings_doc, findings_docs;
    Check => crate::advise::check::CheckDoc, check, checks;
    Disk => crate::bench::disk::DiskBench, disk, disks: Measured;
    Crypto => crate::bench::crypto::CryptoReport, crypto, cryptos: Measured;
    Net => crate::net::doc::NetReport, net, nets: Measured;
    Http => crate::bench::http::HttpReport, http, https: Measured;
    TunePlan => crate::tune::plan::Plan, tune_plan, tune_plans;
    TuneTry => crate::tune::trial::TryReport, tune_try, tune_tries;
    Watch => crate::watch::RunSummary, watch, watches;
    Smb => crate::bench::smb::SmbReport, smb, smbs: Measured;
}

impl RunDocs {
    /// The worst validity among the run's measurements; `None` when none was
    /// judged (runs before 0.2, probe or advise runs). A check run's own
    /// verdict already gathers its measurements' (each reason named by its
    /// measurement), so it alone is taken.
    pub fn validity(&self) -> Option<Validity> {
        if let Some(v) = self.check().and_then(|c| c.validity.clone()) {
            return Some(v);
        }
        Validity::worst(self.0.iter().filter_map(Doc::validity))
    }

    /// The findings of the run, from an advise or a check document.
    pub fn findings(&self) -> Option<&[crate::advise::Finding]> {
        self.findings_doc()
            .map(|d| d.findings.as_slice())
            .or_else(|| self.check().map(|c| c.findings.as_slice()))
    }
}

/// Every document of a run, decoded into its type.
pub fn load(store: &Store, run: RunId) -> Result<RunDocs, StoreError> {
    let mut out = Vec::new();
    for (kind, version, body) in store.documents(run)? {
        out.push(
            Doc::decode(&kind, version, &body).map_err(|source| StoreError::Decode {
                path: store.path().to_path_buf(),
                run,
                cause: source,
            })?,
        );
    }
    Ok(RunDocs(out))
}

/// Stores an already decoded document (a check run's, an imported run's).
pub fn save(store: &Store, run: RunId, doc: &Doc) -> Result<(), StoreError> {
    let (version, body) = doc.encode().map_err(|source| StoreError::Encode {
        run,
        kind: doc.kind(),
        cause: source,
    })?;
    store.insert_document(run, doc.kind(), version, &body)
}

/// The kind of a stored or imported document once it decodes into its type:
/// what `history import` checks of each before it writes a run.
pub fn check_decodes(kind: &str, version: u32, json: &str) -> Result<DocKind, DecodeError> {
    Doc::decode(kind, version, json).map(|d| d.kind())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_newer_and_malformed_documents_are_named() {
        let e = Doc::decode("nfs", 1, "{}").unwrap_err().to_string();
        assert!(e.contains("'nfs'") && e.contains("upgrade"), "{e}");
        let e = Doc::decode("watch", 9, "{}").unwrap_err().to_string();
        assert!(e.contains("schema 9 is newer"), "{e}");
        let e = Doc::decode("watch", 1, "{\"samples\": \"x\"}")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'watch' document (schema 1) does not decode: samples: invalid type"),
            "{e}"
        );
    }

    #[test]
    fn every_chart_quantity_is_one_a_kind_emits() {
        let quantities: Vec<&str> = CHARTS
            .iter()
            .flat_map(|c| c.iter().map(|c| c.quantity))
            .collect();
        assert_eq!(
            quantities,
            [
                "bandwidth",
                "iops",
                "bandwidth alone vs together",
                "bandwidth per layer",
                "encrypt",
                "sent",
                "received",
                "requests/s",
                "smb bandwidth",
                "smb ops"
            ]
        );
    }
}
