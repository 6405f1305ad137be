//! The vocabulary every engine speaks, at the bottom of the module graph: the
//! [`Document`] trait and the kinds of document and run, the validity verdict
//! ([`validity`]), and metrics and charts ([`metrics`]). It imports no engine, so
//! each engine declares its documents and metrics here without importing
//! another; the table that names every document type (`runs`) sits above them
//! all. Older schema versions, when there are any, are decoded in [`body`] and
//! nowhere else.

pub mod metrics;
pub mod validity;

use validity::Validity;

/// A document a run stores: its kind and the schema version it is written in.
pub trait Document: serde::Serialize + serde::de::DeserializeOwned {
    const KIND: DocKind;
    const VERSION: u32;

    /// The validity guard's verdict, for documents of a measurement.
    fn validity(&self) -> Option<&Validity> {
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

string_enum! {
    /// The kinds of document, as the `documents.kind` column spells them. The
    /// catalog (`runs::Doc`) matches on every one, so a kind without its row
    /// there does not compile.
    DocKind {
        Snapshot = "snapshot",
        Findings = "findings",
        Check = "check",
        Disk = "disk",
        Crypto = "crypto",
        Net = "net",
        Http = "http",
        TunePlan = "tune-plan",
        TuneTry = "tune-try",
        Watch = "watch",
        Smb = "smb",
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

/// Decodes a stored body of schema `version` into `D`.
pub fn body<D: Document>(version: u32, json: &str) -> Result<D, DecodeError> {
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
}
