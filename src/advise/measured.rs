//! What rules may know beyond the snapshot: the figures the latest stored bench
//! and check runs of this host measured (gathered by `runs::measured`), and
//! where each came from. `advise` measures nothing itself; `check` passes its
//! own fresh figures instead.

use serde::{Deserialize, Serialize};

use super::bottleneck::{self, CipherFigure, Measurements};
use super::{buses, path_model};
use crate::store::RunId;

/// The figures the analysis reads from typed bench documents (`disk`,
/// `crypto`, `net`, `smb`): a stored run's, or the ones `check` just measured.
pub fn from_documents<'a>(
    disks: impl Iterator<Item = &'a crate::bench::disk::DiskBench> + Clone,
    cryptos: impl Iterator<Item = &'a crate::bench::crypto::CryptoReport>,
    nets: impl Iterator<Item = &'a crate::net::doc::NetReport> + Clone,
    smbs: impl Iterator<Item = &'a crate::bench::smb::SmbReport>,
) -> Measurements {
    let mut m = Measurements::default();
    m.disk.extend(disks.clone().map(bottleneck::disk_figure));
    m.shared_disks
        .extend(disks.filter_map(buses::together_figure));
    for c in cryptos {
        m.crypto.extend(bottleneck::cipher_figures(c));
    }
    for n in nets.clone() {
        bottleneck::read_net(n, &mut m);
    }
    m.tcp.extend(nets.filter_map(path_model::tcp_figure));
    m.services.extend(smbs.filter_map(path_model::smb_figures));
    m
}

/// The stored run a figure was read from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct MeasuredBy {
    pub run_id: RunId,
    /// The run's kind as stored (`bench-disk`, `check`).
    pub run_kind: String,
}

impl std::fmt::Display for MeasuredBy {
    /// `bench disk run 12`: the command that measured it, then the run id.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} run {}", self.run_kind.replace('-', " "), self.run_id)
    }
}

/// Says where a figure comes from, for a rationale: `by bench disk run 12`, or
/// `in this run` for a figure measured by the running command.
pub fn origin(by: Option<&MeasuredBy>) -> String {
    by.map_or_else(|| "in this run".to_string(), |b| format!("by {b}"))
}

/// The measured figure of a cipher as dm-crypt runs it (the kernel's, at 4 KiB
/// requests): of that key size when given and measured, else any key size.
pub fn kernel_cipher<'m>(
    m: &'m Measurements,
    cipher: &str,
    key_bits: Option<u64>,
) -> Option<&'m CipherFigure> {
    let mut kernel = m
        .crypto
        .iter()
        .filter(|c| c.path == "kernel" && c.cipher == cipher && c.request_bytes == 4096);
    let first = kernel.clone().next();
    kernel
        .find(|c| key_bits.is_some_and(|k| u64::from(c.key_bits) == k))
        .or(first)
}

/// `aes-xts-plain64 (512-bit key) 14.2 MB/s encrypt, 13.9 MB/s decrypt, measured
/// by bench crypto run 3`.
pub fn cipher_speeds(c: &CipherFigure) -> String {
    format!(
        "{} ({}-bit key) {:.1} MB/s encrypt, {:.1} MB/s decrypt, measured {}",
        c.cipher,
        c.key_bits,
        c.encrypt_bytes_per_sec / 1e6,
        c.decrypt_bytes_per_sec / 1e6,
        origin(c.measured_by.as_ref())
    )
}

/// A kernel cipher figure measured by a stored bench crypto run, for rule tests.
#[cfg(test)]
pub(crate) fn kernel_figure(cipher: &str, key_bits: u32, enc: f64, dec: f64) -> CipherFigure {
    CipherFigure {
        cipher: cipher.into(),
        key_bits,
        path: "kernel".into(),
        encrypt_bytes_per_sec: enc,
        decrypt_bytes_per_sec: dec,
        request_bytes: 4096,
        measured_by: Some(MeasuredBy {
            run_id: 3,
            run_kind: "bench-crypto".into(),
        }),
    }
}
