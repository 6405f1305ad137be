//! Typed documents: what a run stores comes back as the same Rust type. Each
//! document type declares its kind and schema version once ([`Document`]);
//! [`Doc`] is every kind a run may hold, decoded. Older schema versions, when
//! there are any, are decoded here and nowhere else.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A document a run stores: its kind and the schema version it is written in.
pub trait Document: Serialize + DeserializeOwned {
    const KIND: DocKind;
    const VERSION: u32;
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
    /// The kinds of document, as the `documents.kind` column spells them.
    DocKind {
        Snapshot = "snapshot",
        Findings = "findings",
        Check = "check",
        Disk = "disk",
        Crypto = "crypto",
        Net = "net",
        Http = "http",
        Smb = "smb",
        TunePlan = "tune-plan",
        TuneTry = "tune-try",
        Watch = "watch",
    }
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

/// One stored document, decoded into its type.
#[derive(Debug, Clone)]
pub enum Doc {
    Snapshot(Box<crate::probe::Snapshot>),
    Findings(crate::advise::FindingsDoc),
    Check(Box<crate::advise::check::CheckDoc>),
    Disk(Box<crate::bench::disk::DiskBench>),
    Crypto(Box<crate::bench::crypto::CryptoReport>),
    Net(Box<crate::net::doc::NetReport>),
    Http(Box<crate::bench::http::HttpReport>),
    Smb(Box<crate::bench::smb::SmbReport>),
    TunePlan(Box<crate::tune::plan::Plan>),
    TuneTry(Box<crate::tune::trial::TryReport>),
    Watch(crate::watch::RunSummary),
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
    serde_json::from_str(json).map_err(|e| DecodeError::Malformed {
        kind: D::KIND,
        version,
        message: e.to_string(),
    })
}

impl Doc {
    /// Decodes a stored `(kind, schema_version, body)`.
    pub fn decode(kind: &str, version: u32, json: &str) -> Result<Doc, DecodeError> {
        let k = DocKind::parse(kind).ok_or_else(|| DecodeError::UnknownKind {
            kind: kind.to_string(),
        })?;
        Ok(match k {
            DocKind::Snapshot => Doc::Snapshot(Box::new(body(version, json)?)),
            DocKind::Findings => Doc::Findings(body(version, json)?),
            DocKind::Check => Doc::Check(Box::new(body(version, json)?)),
            DocKind::Disk => Doc::Disk(Box::new(body(version, json)?)),
            DocKind::Crypto => Doc::Crypto(Box::new(body(version, json)?)),
            DocKind::Net => Doc::Net(Box::new(body(version, json)?)),
            DocKind::Http => Doc::Http(Box::new(body(version, json)?)),
            DocKind::Smb => Doc::Smb(Box::new(body(version, json)?)),
            DocKind::TunePlan => Doc::TunePlan(Box::new(body(version, json)?)),
            DocKind::TuneTry => Doc::TuneTry(Box::new(body(version, json)?)),
            DocKind::Watch => Doc::Watch(body(version, json)?),
        })
    }

    pub fn kind(&self) -> DocKind {
        match self {
            Doc::Snapshot(_) => DocKind::Snapshot,
            Doc::Findings(_) => DocKind::Findings,
            Doc::Check(_) => DocKind::Check,
            Doc::Disk(_) => DocKind::Disk,
            Doc::Crypto(_) => DocKind::Crypto,
            Doc::Net(_) => DocKind::Net,
            Doc::Http(_) => DocKind::Http,
            Doc::Smb(_) => DocKind::Smb,
            Doc::TunePlan(_) => DocKind::TunePlan,
            Doc::TuneTry(_) => DocKind::TuneTry,
            Doc::Watch(_) => DocKind::Watch,
        }
    }

    /// The body as it is stored, with its schema version.
    pub fn encode(&self) -> Result<(u32, String), serde_json::Error> {
        fn enc<D: Document>(d: &D) -> Result<(u32, String), serde_json::Error> {
            Ok((D::VERSION, serde_json::to_string(d)?))
        }
        match self {
            Doc::Snapshot(d) => enc(d.as_ref()),
            Doc::Findings(d) => enc(d),
            Doc::Check(d) => enc(d.as_ref()),
            Doc::Disk(d) => enc(d.as_ref()),
            Doc::Crypto(d) => enc(d.as_ref()),
            Doc::Net(d) => enc(d.as_ref()),
            Doc::Http(d) => enc(d.as_ref()),
            Doc::Smb(d) => enc(d.as_ref()),
            Doc::TunePlan(d) => enc(d.as_ref()),
            Doc::TuneTry(d) => enc(d.as_ref()),
            Doc::Watch(d) => enc(d),
        }
    }
}

/// The documents of one run, decoded, with typed accessors.
#[derive(Debug, Clone, Default)]
pub struct RunDocs(pub Vec<Doc>);

macro_rules! accessors {
    ($($one:ident, $all:ident => $variant:ident : $ty:ty;)+) => {
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
        }
    };
}

accessors! {
    snapshot, snapshots => Snapshot: crate::probe::Snapshot;
    check, checks => Check: crate::advise::check::CheckDoc;
    disk, disks => Disk: crate::bench::disk::DiskBench;
    crypto, cryptos => Crypto: crate::bench::crypto::CryptoReport;
    net, nets => Net: crate::net::doc::NetReport;
    http, https => Http: crate::bench::http::HttpReport;
    smb, smbs => Smb: crate::bench::smb::SmbReport;
    tune_plan, tune_plans => TunePlan: crate::tune::plan::Plan;
    tune_try, tune_tries => TuneTry: crate::tune::trial::TryReport;
}

impl RunDocs {
    pub fn findings_doc(&self) -> Option<&crate::advise::FindingsDoc> {
        self.0.iter().find_map(|d| match d {
            Doc::Findings(x) => Some(x),
            _ => None,
        })
    }

    pub fn watch(&self) -> Option<&crate::watch::RunSummary> {
        self.0.iter().find_map(|d| match d {
            Doc::Watch(x) => Some(x),
            _ => None,
        })
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
            e.contains("'watch' document (schema 1) does not decode"),
            "{e}"
        );
    }
}
