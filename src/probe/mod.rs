//! What the box is: one [`Snapshot`] built from sections that each read through a
//! [`Root`]. A section that cannot do its part says so as data
//! ([`Outcome::Unsupported`] or [`Outcome::Failed`]); one bad file never sinks the
//! probe.
//!
//! Each area has `read_*(&Root)` functions that do I/O and `parse_*(&str)`
//! functions that are pure and tested on literal kernel text.

pub mod block;
pub mod config_files;
pub mod cpu;
pub mod cpu_list;
pub mod crypto;
pub mod diskstats;
pub mod dm;
pub mod ethtool;
pub mod exports;
pub mod file_services;
pub mod filesystems;
pub mod gunzip;
pub mod host;
pub mod irq;
pub mod kernel_config;
pub mod kernel_log;
pub mod links;
pub mod md;
pub mod memory;
pub mod net;
pub mod nic_stats;
pub mod proc_stat;
pub mod qdisc;
pub mod smart;
pub mod smb;
pub mod storage;
pub mod sysctl;
pub mod text;
pub mod usb;

use std::cell::OnceCell;

use serde::{Deserialize, Serialize};

use crate::root::Root;

/// Version of the `probe --json` document. Bump on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// The result of one probe section. Serialized as `{"status": "ok", "data": …}`,
/// `{"status": "unsupported", "reason": …}` or `{"status": "failed", "error": …}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome<T> {
    Ok { data: T },
    Unsupported { reason: String },
    Failed { error: String },
}

impl<T> Outcome<T> {
    pub fn data(&self) -> Option<&T> {
        match self {
            Outcome::Ok { data } => Some(data),
            _ => None,
        }
    }

    pub fn status(&self) -> &'static str {
        match self {
            Outcome::Ok { .. } => "ok",
            Outcome::Unsupported { .. } => "unsupported",
            Outcome::Failed { .. } => "failed",
        }
    }

    /// The reason or error for a section that is not ok.
    pub fn problem(&self) -> Option<&str> {
        match self {
            Outcome::Ok { .. } => None,
            Outcome::Unsupported { reason } => Some(reason),
            Outcome::Failed { error } => Some(error),
        }
    }
}

impl<T, E: std::fmt::Display> From<Result<T, E>> for Outcome<T> {
    fn from(r: Result<T, E>) -> Self {
        match r {
            Ok(data) => Outcome::Ok { data },
            Err(e) => Outcome::Failed {
                error: e.to_string(),
            },
        }
    }
}

/// Where the snapshot was read from.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Live,
    Tree,
}

/// A section outcome for snapshots stored before the section existed: every section
/// field defaults to it, so older snapshots keep loading as sections are added.
pub fn not_probed<T>() -> Outcome<T> {
    Outcome::Unsupported {
        reason: "not probed by this version".into(),
    }
}

/// Declares the probe sections once. From each `name: Type = reader` line come the
/// [`Snapshot`] field (in this order, which is the `probe --json` order), its entry in
/// [`SECTIONS`] and [`Snapshot::section_statuses`], and its read in [`probe`]. A
/// reader is a closure over [`Probing`]: it reads through `p.root` and may use
/// sections it depends on (`p.memory()`), which are then read first, once.
macro_rules! sections {
    ($($(#[$doc:meta])* $name:ident: $ty:ty = $read:expr;)+) => {
        /// Everything `nastune probe` found.
        #[derive(Debug, Clone, Serialize, Deserialize)]
        pub struct Snapshot {
            pub schema_version: u32,
            pub tool_version: String,
            /// Stable, non-reversible id of the box (from /etc/machine-id or the boot id).
            pub host_id: String,
            pub timestamp_unix: u64,
            pub timestamp: String,
            pub source: Source,
            $($(#[$doc])* #[serde(default = "not_probed")] pub $name: Outcome<$ty>,)+
        }

        /// The section names, in snapshot order.
        pub const SECTIONS: &[&str] = &[$(stringify!($name)),+];

        impl Snapshot {
            /// `(section name, status, problem)` for every section, for summaries.
            pub fn section_statuses(&self) -> Vec<(&'static str, &'static str, Option<&str>)> {
                vec![$((stringify!($name), self.$name.status(), self.$name.problem())),+]
            }
        }

        /// A probe in progress: each section is read once, on first use, so one
        /// section can build on another whatever their order in the snapshot.
        pub struct Probing<'r> {
            pub root: &'r Root,
            $($name: OnceCell<Outcome<$ty>>,)+
        }

        impl<'r> Probing<'r> {
            fn new(root: &'r Root) -> Self {
                Probing { root, $($name: OnceCell::new(),)+ }
            }

            $(
                pub fn $name(&self) -> &Outcome<$ty> {
                    self.$name.get_or_init(|| {
                        let read: fn(&Probing<'_>) -> Outcome<$ty> = $read;
                        read(self)
                    })
                }
            )+

            /// Reads every section not read yet, in snapshot order.
            fn finish(self, header: Header) -> Snapshot {
                $(self.$name();)+
                Snapshot {
                    schema_version: SCHEMA_VERSION,
                    tool_version: env!("CARGO_PKG_VERSION").to_string(),
                    host_id: header.host_id,
                    timestamp_unix: header.timestamp_unix,
                    timestamp: header.timestamp,
                    source: header.source,
                    // Every cell was filled just above.
                    $($name: self.$name.into_inner().unwrap_or_else(not_probed),)+
                }
            }
        }
    };
}

sections! {
    host: host::Host = |p| host::read_host(p.root).into();
    cpu: cpu::Cpu = |p| cpu::read_cpu(p.root).into();
    memory: memory::Memory = |p| memory::read_memory(p.root).into();
    network: net::Network = |p| {
        let architecture = p.host().data().and_then(|h| h.architecture.as_deref());
        net::read_network(p.root, architecture).into()
    };
    sysctl: sysctl::Sysctl = |p| sysctl::read_sysctl(p.root).into();
    kernel_crypto: crypto::KernelCrypto = |p| crypto::read_crypto(p.root).into();
    // The config of the running kernel, so the release comes from the host section.
    kernel_config: kernel_config::KernelConfig = |p| match p.host().data() {
        Some(h) => Outcome::Ok {
            data: kernel_config::read_kernel_config(p.root, &h.kernel_release),
        },
        None => Outcome::Unsupported {
            reason: "the kernel release is unknown (the host section failed)".into(),
        },
    };
    // Storage reuses what memory and filesystems read, so a capture sees each file once.
    storage: storage::Storage = |p| {
        let swaps: Vec<String> = p
            .memory()
            .data()
            .map(|m| m.swaps.iter().map(|s| s.device.clone()).collect())
            .unwrap_or_default();
        let mounts = p.filesystems().data().map(|f| f.mounts.as_slice());
        storage::read_storage(p.root, mounts, &swaps)
    };
    filesystems: filesystems::Filesystems = |p| filesystems::read_filesystems(p.root).into();
    file_services: file_services::FileServices =
        |p| file_services::read_file_services(p.root).into();
    smart: smart::Smart = |p| {
        smart::read_smart(p.root).unwrap_or_else(|e| Outcome::Failed {
            error: e.to_string(),
        })
    };
    config_files: config_files::ConfigFiles = |p| config_files::read_config_files(p.root).into();
    usb: usb::Usb = |p| usb::read_usb(p.root);
    links: links::Links = |p| links::read_links(p.root);
    kernel_log: kernel_log::KernelLog = |p| kernel_log::read_kernel_log(p.root);
    irq: irq::Irq = |p| irq::read_irq(p.root);
}

/// The snapshot fields that are not sections.
struct Header {
    host_id: String,
    timestamp_unix: u64,
    timestamp: String,
    source: Source,
}

/// Runs every section against `root`. Never fails: problems are in the outcomes.
pub fn probe(root: &Root) -> Snapshot {
    let now = crate::time::now_unix();
    let p = Probing::new(root);
    p.host();
    let host_id = host::read_host_id(root);
    p.finish(Header {
        host_id,
        timestamp_unix: now,
        timestamp: crate::time::rfc3339_utc(now),
        source: if root.is_live() {
            Source::Live
        } else {
            Source::Tree
        },
    })
}

/// Errors of the probe's parsers: the value and where it came from.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("{what}: cannot parse '{value}'")]
    Value { what: String, value: String },
    #[error("{what}: missing '{field}'")]
    Missing { what: String, field: String },
}

impl ParseError {
    pub fn value(what: impl Into<String>, value: impl Into<String>) -> Self {
        let mut value: String = value.into();
        if value.len() > 80 {
            let mut cut = 80;
            while !value.is_char_boundary(cut) {
                cut -= 1;
            }
            value.truncate(cut);
            value.push('…');
        }
        ParseError::Value {
            what: what.into(),
            value,
        }
    }

    pub fn missing(what: impl Into<String>, field: impl Into<String>) -> Self {
        ParseError::Missing {
            what: what.into(),
            field: field.into(),
        }
    }
}

/// A section's error: reading or parsing.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(transparent)]
    Read(#[from] crate::root::ReadError),
    #[error(transparent)]
    Parse(#[from] ParseError),
}

impl crate::doc::Document for Snapshot {
    const KIND: crate::doc::DocKind = crate::doc::DocKind::Snapshot;
    const VERSION: u32 = SCHEMA_VERSION;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_the_sections_in_table_order_and_a_missing_one_loads_as_not_probed() {
        let snap = crate::advise::test_support::snapshot_of("pogoplug-v4");
        let text = serde_json::to_string(&snap).unwrap();
        let at: Vec<usize> = SECTIONS
            .iter()
            .map(|name| text.find(&format!("\"{name}\":{{\"status\"")).unwrap())
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}");
        assert!(text.find("\"source\"").unwrap() < at[0]);
        let mut json = serde_json::to_value(&snap).unwrap();
        // A snapshot stored before the smart section existed.
        json.as_object_mut().unwrap().remove("smart");
        let old: Snapshot = serde_json::from_value(json).unwrap();
        assert_eq!(old.smart.problem(), Some("not probed by this version"));
        assert_eq!(old.cpu.status(), snap.cpu.status());
    }

    #[test]
    fn outcome_decodes_what_it_encodes_in_any_key_order_and_refuses_a_bad_tag() {
        let all: [Outcome<Vec<u32>>; 3] = [
            Outcome::Ok { data: vec![1, 2] },
            Outcome::Unsupported {
                reason: "no".into(),
            },
            Outcome::Failed {
                error: "bad".into(),
            },
        ];
        for o in &all {
            let text = serde_json::to_string(o).unwrap();
            assert!(text.starts_with("{\"status\":"), "{text}");
            assert_eq!(
                &serde_json::from_str::<Outcome<Vec<u32>>>(&text).unwrap(),
                o
            );
        }
        let de = |t: &str| serde_json::from_str::<Outcome<Vec<u32>>>(t);
        assert_eq!(
            de(r#"{"data":[3],"extra":{"x":1},"status":"ok"}"#).unwrap(),
            Outcome::Ok { data: vec![3] }
        );
        // Data under another tag is skipped, not decoded.
        assert_eq!(
            de(r#"{"status":"failed","data":"not a list","error":"e"}"#).unwrap(),
            Outcome::Failed { error: "e".into() }
        );
        for (bad, says) in [
            (r#"{"data":[3]}"#, "missing field `status`"),
            (r#"{"status":"ok"}"#, "missing field `data`"),
            (
                r#"{"status":"unsupported","error":"e"}"#,
                "missing field `reason`",
            ),
            (
                r#"{"status":"gone","reason":"r"}"#,
                "unknown variant `gone`",
            ),
            (r#"{"status":"ok","data":"x"}"#, "invalid type"),
        ] {
            let e = de(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
