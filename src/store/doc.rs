//! Typed documents: what a run stores comes back as the same Rust type. Each
//! document type declares its kind and schema version once ([`Document`]);
//! [`Doc`] is every kind a run may hold, decoded. Older schema versions, when
//! there are any, are decoded here and nowhere else.

use crate::compare::Metric;
use crate::compare::metrics::{Chart, Measured};

/// A document a run stores: its kind and the schema version it is written in.
pub trait Document: serde::Serialize + serde::de::DeserializeOwned {
    const KIND: DocKind;
    const VERSION: u32;

    /// The validity guard's verdict, for documents of a measurement.
    fn validity(&self) -> Option<&crate::bench::validity::Validity> {
        None
    }
}

macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            pub fn parse(s: &str) -> Option<$name> {
                match s { $($text => Some($name::$variant),)+ _ => None }
            }
        }

        impl clap::ValueEnum for $name {
            fn value_variants<'a>() -> &'a [Self] {
                Self::ALL
            }

            fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
                Some(clap::builder::PossibleValue::new(self.as_str()))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

string_enum! {
    /// The kinds of run, as the `runs.kind` column spells them.
    RunKind {
        Probe = "probe",
        Advise = "advise",
        Check = "check",
        BenchDisk = "bench-disk",
        BenchCrypto = "bench-crypto",
        BenchNet = "bench-net",
        BenchHttp = "bench-http",
        BenchSmb = "bench-smb",
        Watch = "watch",
        Tune = "tune",
        TuneTry = "tune-try",
    }
}

/// Why a stored document could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error(
        "document kind '{kind}' is not known to this nastune {}; upgrade nastune to read it",
        env!("CARGO_PKG_VERSION")
    )]
    UnknownKind { kind: String },
    #[error(
        "'{kind}' document schema {found} is newer than this nastune knows ({known}); upgrade nastune"
    )]
    TooNew {
        kind: DocKind,
        found: u32,
        known: u32,
    },
    #[error("'{kind}' document (schema {version}) does not decode: {message}")]
    Malformed {
        kind: DocKind,
        version: u32,
        message: String,
    },
}

fn body<D: Document>(version: u32, json: &str) -> Result<D, DecodeError> {
    if version > D::VERSION {
        return Err(DecodeError::TooNew {
            kind: D::KIND,
            found: version,
            known: D::VERSION,
        });
    }
    from_json(json).map_err(|message| DecodeError::Malformed {
        kind: D::KIND,
        version,
        message,
    })
}

pub use crate::json::from_json;

/// The documents of one run, decoded, with typed accessors.
#[derive(Debug, Clone, Default)]
pub struct RunDocs(pub Vec<Doc>);

/// Declares every kind of document once. From each
/// `Variant = "kind" => Type, one, all $(: Measured)?;` line come the [`DocKind`]
/// name, the [`Doc`] variant with its decoding and encoding, the [`RunDocs`]
/// accessors `one()` (the first such document of a run) and `all()`, and, for a
/// bench kind marked `: Measured`, its metrics in [`RunDocs::metrics`] and its charts
/// in [`CHARTS`]. Append new kinds: the order is the report order of the charts.
macro_rules! documents {
    ($($variant:ident = $text:literal => $ty:ty, $one:ident, $all:ident $(: $measured:path)?;)+) => {
        string_enum! {
            /// The kinds of document, as the `documents.kind` column spells them.
            DocKind { $($variant = $text),+ }
        }

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
            pub fn validity(&self) -> Option<&crate::bench::validity::Validity> {
                match self {
                    $(Doc::$variant(d) => d.validity(),)+
                }
            }

            /// The body as it is stored, with its schema version.
            pub fn encode(&self) -> serde_json::Result<(u32, String)> {
                fn enc<D: Document>(d: &D) -> serde_json::Result<(u32, String)> {
                    Ok((D::VERSION, serde_json::to_string(d)?))
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
                pub fn $all(&self) -> impl Iterator<Item = &$ty> {
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
    Snapshot = "snapshot" => crate::probe::Snapshot, snapshot, snapshots;
    Findings = "findings" => crate::advise::FindingsDoc, findings_doc, findings_docs;
    Check = "check" => crate::advise::check::CheckDoc, check, checks;
    Disk = "disk" => crate::bench::disk::DiskBench, disk, disks: Measured;
    Crypto = "crypto" => crate::bench::crypto::CryptoReport, crypto, cryptos: Measured;
    Net = "net" => crate::net::doc::NetReport, net, nets: Measured;
    Http = "http" => crate::bench::http::HttpReport, http, https: Measured;
    TunePlan = "tune-plan" => crate::tune::plan::Plan, tune_plan, tune_plans;
    TuneTry = "tune-try" => crate::tune::trial::TryReport, tune_try, tune_tries;
    Watch = "watch" => crate::watch::RunSummary, watch, watches;
    Smb = "smb" => crate::bench::smb::SmbReport, smb, smbs: Measured;
}

impl RunDocs {
    /// The worst validity among the run's measurements; `None` when none was
    /// judged (runs before 0.2, probe or advise runs). A check run's own
    /// verdict already gathers its measurements' (each reason named by its
    /// measurement), so it alone is taken.
    pub fn validity(&self) -> Option<crate::bench::validity::Validity> {
        if let Some(v) = self.check().and_then(|c| c.validity.clone()) {
            return Some(v);
        }
        crate::bench::validity::Validity::worst(self.0.iter().filter_map(Doc::validity))
    }

    /// The findings of the run, from an advise or a check document.
    pub fn findings(&self) -> Option<&[crate::advise::Finding]> {
        self.findings_doc()
            .map(|d| d.findings.as_slice())
            .or_else(|| self.check().map(|c| c.findings.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_spell_as_stored_and_parse_back() {
        for k in DocKind::ALL {
            assert_eq!(DocKind::parse(k.as_str()), Some(*k));
        }
        for k in RunKind::ALL {
            assert_eq!(RunKind::parse(k.as_str()), Some(*k));
        }
        assert_eq!(DocKind::parse("bottleneck"), None);
    }

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
}
