//! The bottleneck of each data path a NAS serves: client → network → TCP stack →
//! crypto → RAID → disk, for reads and writes. Each stage gets a ceiling from what
//! was measured (or, for the wire, from the negotiated link speed with the framing
//! arithmetic shown); the lowest ceiling names the limit. Stages nobody measured
//! are listed with the measurement that would decide them.
//!
//! Measurements arrive as the stored JSON documents of the benches, so this works
//! on fresh results and on runs from the store alike.

use serde::{Deserialize, Serialize};

use crate::bench::crypto::CryptoReport;
use crate::bench::disk::DiskBench;
use crate::bench::disk::workload::Rw;
use crate::net::doc::NetReport;

use super::cpu_estimate::{self, CpuEstimate, Verdict, VerdictKind};
pub use super::measured::MeasuredBy;
use super::path_model::{self, Binding, CpuCeiling, ServiceFigure};
use super::what_if;

use crate::format::rate as mb;
use crate::probe::Snapshot;
use crate::probe::storage::Chain;

/// The sector sizes dm-crypt can run at (cryptsetup --sector-size): each is
/// the request size its cipher sees, so each has its own crypto figure.
const DM_CRYPT_SECTOR_BYTES: [u32; 4] = [512, 1024, 2048, 4096];

/// What the benches measured, extracted from their documents.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Measurements {
    /// Sequential 1 MiB throughput on a filesystem, by bench disk.
    pub disk: Vec<DiskFigure>,
    /// Cipher throughput at dm-crypt's request size, by bench crypto.
    pub crypto: Vec<CipherFigure>,
    /// This box's own TCP ceiling over loopback, by bench net --loopback.
    pub tcp_loopback_bytes_per_sec: Option<f64>,
    /// The stored run the loopback figure comes from; `None`: this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_loopback_measured_by: Option<MeasuredBy>,
    /// Goodput measured across the network, by bench net.
    pub network_goodput_bytes_per_sec: Option<f64>,
    /// The stored run the goodput figure comes from; `None`: this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_goodput_measured_by: Option<MeasuredBy>,
    /// Several disks measured alone and together (`bench disk A B C`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared_disks: Vec<crate::advise::buses::TogetherFigure>,
    /// File services measured end to end (bench smb, check --smb), with their
    /// per-byte stage costs when the server is this box.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<ServiceFigure>,
    /// One-way TCP transfers to a peer with this box's CPU cost per byte (bench net).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tcp: Vec<path_model::TcpFigure>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DiskFigure {
    /// The file or directory the bench ran on.
    pub path: String,
    /// The block device under it, when known (`dm-0`, `md0`, `sda`).
    pub device: Option<String>,
    pub seq_read_bytes_per_sec: Option<f64>,
    pub seq_write_bytes_per_sec: Option<f64>,
    /// The stored run this figure comes from; `None`: this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_by: Option<MeasuredBy>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CipherFigure {
    /// dm-crypt's name: `aes-xts-plain64`, `xchacha12,aes-adiantum-plain64`.
    pub cipher: String,
    pub key_bits: u32,
    /// `kernel` (AF_ALG, what dm-crypt uses) or `user space`.
    pub path: String,
    pub encrypt_bytes_per_sec: f64,
    pub decrypt_bytes_per_sec: f64,
    /// The request size measured: the dm-crypt sector size it stands for.
    #[serde(default = "four_kib")]
    pub request_bytes: u32,
    /// The stored run this figure comes from; `None`: this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_by: Option<MeasuredBy>,
}

fn four_kib() -> u32 {
    4096
}

pub fn disk_figure(doc: &DiskBench) -> DiskFigure {
    let mut fig = DiskFigure {
        path: doc.target.path.to_string_lossy().into_owned(),
        device: doc.target.device.clone(),
        seq_read_bytes_per_sec: None,
        seq_write_bytes_per_sec: None,
        measured_by: None,
    };
    for test in &doc.tests {
        let w = &test.workload;
        // The page cache's speed is no ceiling of the disk.
        if !matches!(w.rw, Rw::Read | Rw::Write) || w.bs < 128 * 1024 || test.page_cache {
            continue;
        }
        let best = |slot: &mut Option<f64>, v: Option<f64>| {
            if let Some(v) = v.filter(|v| *v > 0.0) {
                *slot = Some(slot.map_or(v, |s: f64| s.max(v)));
            }
        };
        best(
            &mut fig.seq_read_bytes_per_sec,
            test.read.as_ref().map(|r| r.bw_bytes),
        );
        best(
            &mut fig.seq_write_bytes_per_sec,
            test.write.as_ref().map(|r| r.bw_bytes),
        );
    }
    fig
}

pub fn cipher_figures(doc: &CryptoReport) -> Vec<CipherFigure> {
    let mut out = Vec::new();
    for (list, path) in [(&doc.kernel, "kernel"), (&doc.user_space, "user space")] {
        for c in list {
            // One request at a time at each of dm-crypt's sector sizes: what a
            // single stream sees on a volume of that sector size.
            for point in c
                .points
                .iter()
                .filter(|p| DM_CRYPT_SECTOR_BYTES.contains(&p.request_bytes) && p.in_flight <= 1)
            {
                out.push(CipherFigure {
                    cipher: c.cipher.clone(),
                    key_bits: c.key_bits,
                    path: path.to_string(),
                    // Per CPU-second: the cost model's figure is one core's,
                    // which other load during the bench does not change.
                    encrypt_bytes_per_sec: point.encrypt.headline(c.cpu_bound()),
                    decrypt_bytes_per_sec: point.decrypt.headline(c.cpu_bound()),
                    request_bytes: point.request_bytes,
                    measured_by: None,
                });
            }
        }
    }
    out
}

pub fn read_net(doc: &NetReport, m: &mut Measurements) {
    let bps = doc
        .end
        .sum_received
        .as_ref()
        .or(doc.end.sum_sent.as_ref())
        .map(|s| s.bits_per_second);
    let Some(bps) = bps else { return };
    let loopback = doc
        .start
        .connecting_to
        .host
        .parse::<std::net::IpAddr>()
        .is_ok_and(|a| a.is_loopback());
    if loopback {
        m.tcp_loopback_bytes_per_sec = Some(bps / 8.0);
    } else {
        m.network_goodput_bytes_per_sec = Some(bps / 8.0);
    }
}

/// One stage of a path and its ceiling.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Stage {
    pub name: String,
    /// `None`: not measured; `missing` says what would measure it.
    pub ceiling_bytes_per_sec: Option<f64>,
    /// Where the figure comes from, with the arithmetic.
    pub basis: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PathAnalysis {
    /// `read /srv` (client reads from the share) or `write /srv`.
    pub name: String,
    pub mount_point: String,
    pub stages: Vec<Stage>,
    /// Index into `stages` of the lowest known ceiling.
    pub limiting_stage: Option<usize>,
    pub limit_bytes_per_sec: Option<f64>,
    /// Measurements that would decide the stages without a figure.
    pub missing: Vec<String>,
    /// The shared-CPU model and the end-to-end check, when a file service was
    /// measured on this path (absent before 0.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<PathModel>,
    /// What most likely limits the path: `limiting_stage` is only the lowest
    /// stage a figure is known for, and an unmeasured CPU may lie below it
    /// (absent before 0.3, and on remote and TCP paths).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// The shared CPU's estimated ceiling when nobody measured it on an SMB
    /// path: a range from the tree's CPU and the path's services.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_estimate: Option<CpuEstimate>,
}

/// What limits a path, in the words of the path model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    Wire,
    Cpu,
    Storage,
    SharedBus,
    Crypto,
    TcpStack,
    Service,
}

impl Limit {
    pub fn name(self) -> &'static str {
        match self {
            Limit::Wire => "wire",
            Limit::Cpu => "cpu",
            Limit::Storage => "storage",
            Limit::SharedBus => "shared_bus",
            Limit::Crypto => "crypto",
            Limit::TcpStack => "tcp_stack",
            Limit::Service => "service",
        }
    }
}

/// The model of a path that a file service was measured on.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PathModel {
    pub limit: Option<Limit>,
    /// The CPU's ceiling with its arithmetic and each stage's share.
    pub cpu: Option<CpuCeiling>,
    /// The lowest ceiling of all stages: what the model predicts.
    pub predicted_bytes_per_sec: Option<f64>,
    /// What the file service moved end to end.
    pub measured_bytes_per_sec: Option<f64>,
    /// "bench smb seq-read of share 'data'".
    pub measured_by: String,
    /// (predicted − measured) / measured, percent.
    pub miss_pct: Option<f64>,
    /// Predictions for changes to the box, labelled as predictions.
    pub what_ifs: Vec<WhatIf>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WhatIf {
    pub change: String,
    pub predicted_bytes_per_sec: f64,
    pub arithmetic: String,
}

/// The data paths: every mounted filesystem that holds shares (Samba or NFS) or
/// was measured by bench disk, or else every data filesystem other than /, /boot*
/// and bind mounts; each share of another box measured from here; then each
/// TCP transfer bench net measured to a peer.
pub fn analyse(snapshot: &Snapshot, m: &Measurements) -> Vec<PathAnalysis> {
    let mut out = Vec::new();
    for mount in data_mounts(snapshot, m) {
        let chain = snapshot
            .storage
            .data()
            .and_then(|s| s.chains.iter().find(|c| c.mount_points.contains(&mount)));
        for write in [false, true] {
            out.push(analyse_path(snapshot, m, &mount, chain, write));
        }
    }
    for s in m.services.iter().filter(|s| !s.server_local) {
        for write in [false, true] {
            out.push(remote_path(snapshot, m, s, write));
        }
    }
    out.extend(super::tcp_path::tcp_paths(snapshot, m));
    out
}

fn data_mounts(snapshot: &Snapshot, m: &Measurements) -> Vec<String> {
    let mut shared: Vec<String> = m.disk.iter().map(|d| d.path.clone()).collect();
    shared.extend(m.services.iter().filter_map(|s| s.share_path.clone()));
    if let Some(fs) = snapshot.file_services.data() {
        let samba_paths = fs
            .samba
            .iter()
            .flat_map(|s| s.file_shares().filter_map(|sh| sh.path.clone()));
        let nfs_paths = fs
            .nfs
            .iter()
            .flat_map(|n| n.exports.iter().map(|e| e.path.clone()));
        shared.extend(samba_paths.chain(nfs_paths));
    }
    let Some(fss) = snapshot.filesystems.data() else {
        return Vec::new();
    };
    let mut mounts: Vec<String> = shared
        .iter()
        .filter_map(|p| holder_of(snapshot, p))
        .collect();
    if mounts.is_empty() {
        mounts = fss
            .mounts
            .iter()
            .filter(|f| f.device.is_some() && f.bind_root.as_deref().is_none_or(|r| r == "/"))
            .filter(|f| f.mount_point != "/" && !f.mount_point.starts_with("/boot"))
            .filter(|f| !f.mount_point.starts_with("/run"))
            .map(|f| f.mount_point.clone())
            .collect();
    }
    mounts.sort();
    mounts.dedup();
    mounts
}

/// The mount that holds a path: the longest mount point that prefixes it.
pub(super) fn holder_of(snapshot: &Snapshot, path: &str) -> Option<String> {
    let path = std::path::Path::new(path);
    snapshot
        .filesystems
        .data()?
        .mounts
        .iter()
        .filter(|f| path.starts_with(&f.mount_point))
        .max_by_key(|f| f.mount_point.len())
        .map(|f| f.mount_point.clone())
}

/// An interface that is up but reports no speed (virtio, veth, a bridge),
/// described by name and driver: physical-looking ones first, never `lo`.
fn unrated_link(snapshot: &Snapshot) -> Option<String> {
    let net = snapshot.network.data()?;
    let i = net
        .interfaces
        .iter()
        .filter(|i| i.name != "lo" && i.carrier == Some(true))
        .min_by_key(|i| i.is_virtual)?;
    let driver = i.driver.clone().or_else(|| {
        i.ethtool
            .data()
            .and_then(|e| e.driver_info.data())
            .map(|d| d.driver.clone())
    });
    let kind = if i.is_virtual { "virtual" } else { "link" };
    Some(match driver {
        Some(d) => format!("{} ({d} {kind})", i.name),
        None => format!("{} ({kind})", i.name),
    })
}

/// The fastest physical link with a carrier: name and Mbit/s.
pub(super) fn fastest_link(snapshot: &Snapshot) -> Option<(String, u64)> {
    snapshot.network.data().and_then(|n| {
        n.interfaces
            .iter()
            .filter(|i| !i.is_virtual && i.carrier == Some(true))
            .filter_map(|i| i.speed_mbit_per_sec.map(|s| (i.name.clone(), s)))
            .max_by_key(|(_, s)| *s)
    })
}

/// The lowest USB bus ceiling under the chain's disks, with its arithmetic.
fn usb_ceiling(snapshot: &Snapshot, devices: &[&str]) -> Option<(f64, String)> {
    snapshot
        .usb
        .data()?
        .disks
        .iter()
        .filter(|d| devices.contains(&d.disk.as_str()))
        .filter_map(|d| {
            let c = crate::probe::usb::bus_ceiling(d.negotiated_mbit_per_sec?);
            Some((
                c.bytes_per_sec,
                format!("USB bus of {}: {}", d.disk, c.basis),
            ))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
}

/// The network's stage: measured goodput, else the fastest physical link's
/// framing ceiling, else what would measure it.
fn network_stage(snapshot: &Snapshot, m: &Measurements, missing: &mut Vec<String>) -> Stage {
    let stage = |ceiling: Option<f64>, basis: String| Stage {
        name: "network".into(),
        ceiling_bytes_per_sec: ceiling,
        basis,
    };
    if let Some(g) = m.network_goodput_bytes_per_sec {
        return stage(Some(g), format!("measured goodput {}", mb(g)));
    }
    if let Some((name, mbit)) = fastest_link(snapshot) {
        let ceiling = path_model::wire_goodput(mbit);
        missing.push("network goodput: nastune bench net HOST from a client".into());
        return stage(
            Some(ceiling),
            format!(
                "{name} link {mbit} Mbit/s x 1448/1538 (TCP payload per frame at MTU 1500) = {}",
                mb(ceiling)
            ),
        );
    }
    let basis = match unrated_link(snapshot) {
        // A VM's virtio NIC or a container's veth: clients still
        // come this way, at a speed only a measurement can tell.
        Some(what) => {
            missing.push(format!(
                "network goodput over {what}: nastune check --peer HOST (HOST running 'nastune \
                 net serve' or 'iperf3 -s')"
            ));
            format!("{what} is up but has no rated speed; measure it")
        }
        None => "no interface with a link".into(),
    };
    stage(None, basis)
}

/// The TCP stack's stage: what loopback TCP measured, else a note of what to run.
fn tcp_stage(loopback_bytes_per_sec: Option<f64>, missing: &mut Vec<String>) -> Stage {
    match loopback_bytes_per_sec {
        Some(t) => Stage {
            name: "tcp stack".into(),
            ceiling_bytes_per_sec: Some(t),
            basis: format!("loopback TCP measured {}", mb(t)),
        },
        None => {
            missing.push("TCP stack ceiling: nastune bench net --loopback".into());
            Stage {
                name: "tcp stack".into(),
                ceiling_bytes_per_sec: None,
                basis: "not measured".into(),
            }
        }
    }
}

/// The storage stage: the sequential rate bench disk measured on `mount`
/// (`rate`), or the USB bus's ceiling (`bus`) when that is lower or nothing was
/// measured.
fn storage_stage(
    stage_name: String,
    rate: Option<f64>,
    bus: Option<(f64, String)>,
    mount: &str,
    write: bool,
    missing: &mut Vec<String>,
) -> Stage {
    match (rate, bus) {
        // The bus is the ceiling when it is lower than what the disk showed (a
        // faster figure came from a cache) or nothing was measured.
        (r, Some((b, basis))) if r.is_none_or(|r| b < r) => {
            if r.is_none() {
                missing.push(format!("storage throughput: nastune bench disk {mount}"));
            }
            Stage {
                name: stage_name,
                ceiling_bytes_per_sec: Some(b),
                basis: match r {
                    Some(r) => format!("{basis} (measured {} is above the bus)", mb(r)),
                    None => basis,
                },
            }
        }
        (Some(r), _) => Stage {
            name: stage_name,
            ceiling_bytes_per_sec: Some(r),
            basis: format!(
                "sequential 1 MiB {} measured on {}: {}",
                if write { "write" } else { "read" },
                mount,
                mb(r)
            ),
        },
        (None, _) => {
            missing.push(format!("storage throughput: nastune bench disk {mount}"));
            Stage {
                name: stage_name,
                ceiling_bytes_per_sec: None,
                basis: "not measured".into(),
            }
        }
    }
}

/// The crypto stage of a path on a dm-crypt volume (`c`): the measured
/// cipher's rate in the path's direction, with its CPU cost for the CPU
/// stage, or a note of what to measure. A figure at another request size than
/// the volume's sectors is used and the measurement at the right size named.
fn crypto_stage(
    c: &crate::probe::dm::Crypt,
    figure: Option<&CipherFigure>,
    write: bool,
    missing: &mut Vec<String>,
) -> (Stage, Option<path_model::CpuCost>) {
    let mut crypto_cost = None;
    if figure.is_some_and(|f| u64::from(f.request_bytes) != c.sector_bytes) {
        missing.push(format!(
            "{} at the volume's {}-byte sectors: nastune bench crypto --sector-size {}",
            c.cipher, c.sector_bytes, c.sector_bytes
        ));
    }
    let stage = match figure {
        Some(f) => {
            let rate = if write {
                f.encrypt_bytes_per_sec
            } else {
                f.decrypt_bytes_per_sec
            };
            crypto_cost = path_model::crypto_cost(&c.cipher, rate, f.request_bytes);
            Stage {
                name: "crypto".into(),
                ceiling_bytes_per_sec: Some(rate),
                basis: format!(
                    "{} {}-bit {} ({}) at {}-byte sectors{}: {}",
                    c.cipher,
                    f.key_bits,
                    if write { "encrypt" } else { "decrypt" },
                    f.path,
                    f.request_bytes,
                    if u64::from(f.request_bytes) == c.sector_bytes {
                        String::new()
                    } else {
                        format!(" (the volume's {} were not measured)", c.sector_bytes)
                    },
                    mb(rate)
                ),
            }
        }
        None => {
            missing.push(format!("{} speed: nastune bench crypto", c.cipher));
            Stage {
                name: "crypto".into(),
                ceiling_bytes_per_sec: None,
                basis: format!("{} not measured", c.cipher),
            }
        }
    };
    (stage, crypto_cost)
}

fn analyse_path(
    snapshot: &Snapshot,
    m: &Measurements,
    mount: &str,
    chain: Option<&Chain>,
    write: bool,
) -> PathAnalysis {
    let mut missing = Vec::new();
    let network = network_stage(snapshot, m, &mut missing);
    let tcp = tcp_stage(m.tcp_loopback_bytes_per_sec, &mut missing);

    let devices: Vec<&str> = chain
        .map(|c| c.devices.iter().map(String::as_str).collect())
        .unwrap_or_default();
    let storage = snapshot.storage.data();
    // Crypto: the volume's own cipher, kernel figure preferred (that is dm-crypt's path).
    let crypt = storage.and_then(|s| {
        s.dm_devices
            .iter()
            .filter(|d| devices.contains(&d.device.as_str()))
            .find_map(|d| d.crypt.as_ref())
    });
    let (crypto, crypto_cost) = match crypt {
        Some(c) => {
            let figure = path_model::volume_cipher(&m.crypto, c);
            let (st, cost) = crypto_stage(c, figure, write, &mut missing);
            (Some(st), cost)
        }
        None => (None, None),
    };

    // Storage: what bench disk measured on this filesystem (RAID, crypto and disks
    // together, as the filesystem sees them).
    let md = storage.and_then(|s| {
        s.md_arrays
            .iter()
            .find(|a| devices.contains(&a.name.as_str()))
    });
    let stage_name = storage_name(md.map(|a| (a.level.as_deref(), a.members.len())));
    let rate = disk_rate(&m.disk, mount, devices.first().copied(), write);
    let bus = usb_ceiling(snapshot, &devices);
    let disk_stage = storage_stage(stage_name, rate, bus, mount, write, &mut missing);

    // The shared CPU, when a file service measured on this path left its
    // per-byte costs (bench smb on this box), else from the stages measured apart.
    let service = m
        .services
        .iter()
        .find(|s| s.server_local && share_mount(snapshot, s).as_deref() == Some(mount));
    let cores = path_cores(
        service.and_then(|s| s.cores.as_ref()),
        snapshot.cpu.data().map(|c| c.logical_cpus),
    );
    let cpu = shared_cpu(service, cores, &m.tcp, crypto_cost.clone(), write);
    let crypto = crypto.map(|st| crypto_during_copy(st, &cpu.copy_costs, cpu.cores.count));

    // The stages in the data's order; the what-ifs hold the CPU's changes
    // against the others.
    let mut stages = vec![network, tcp];
    stages.extend(crypto);
    stages.push(disk_stage);
    let others = stages.clone();
    stages.extend(cpu.ceiling.as_ref().map(cpu_stage));

    let limiting_stage = lowest(&stages);
    let limit_bytes_per_sec = limiting_stage.and_then(|i| stages[i].ceiling_bytes_per_sec);
    let lowest_known = limiting_stage.and_then(|i| {
        stages[i]
            .ceiling_bytes_per_sec
            .map(|c| (stages[i].name.as_str(), c))
    });
    let (verdict, cpu_estimate) = if cpu.ceiling.is_some() {
        (stage_verdict(lowest_known), None)
    } else {
        let on_path = PathServices {
            mount,
            devices: &devices,
            crypt: crypt.map(|c| match &crypto_cost {
                Some(cost) => cpu_estimate::Crypt::Measured(cost.clone()),
                None => cpu_estimate::Crypt::Cipher(c.cipher.clone()),
            }),
            write,
        };
        unmeasured_cpu(snapshot, &on_path, lowest_known, &mut missing)
    };
    let model = service.map(|s| {
        let changes = what_if::inputs(&what_if::Path {
            snapshot,
            m,
            service: s,
            costs: &cpu.costs,
            cores: cpu.cores.count,
            smbd_core: cpu.only_core(),
            others: &others,
            write,
            crypt,
        });
        model_of(
            s,
            write,
            &stages,
            cpu.ceiling.clone(),
            what_if::predict(&changes),
        )
    });
    PathAnalysis {
        name: path_name(snapshot, m, mount, write),
        mount_point: mount.to_string(),
        limit_bytes_per_sec,
        limiting_stage,
        stages,
        missing,
        model,
        verdict: Some(verdict),
        cpu_estimate,
    }
}

/// The cores a path's processes may use: smbd's affinity as check read it
/// (`service_cores`), else every logical CPU. smbd pinned to one core cannot
/// spread its work over the others.
fn path_cores(
    service_cores: Option<&path_model::PathCores>,
    logical_cpus: Option<u32>,
) -> path_model::PathCores {
    service_cores.cloned().unwrap_or_else(|| {
        path_model::PathCores::counted(logical_cpus.map_or(1.0, |n| f64::from(n.max(1))))
    })
}

/// The storage stage's name: `storage`, or with the md array under the
/// mount, its level (`None`: unknown) and member count.
fn storage_name(md: Option<(Option<&str>, usize)>) -> String {
    match md {
        Some((level, members)) => {
            format!("storage ({} over {members} members)", level.unwrap_or("md"))
        }
        None => "storage".to_string(),
    }
}

/// The sequential rate bench disk measured in the path's direction on
/// `mount`: on the mount, a path below it, or the device at the top of its
/// chain (`top_device`).
fn disk_rate(
    disks: &[DiskFigure],
    mount: &str,
    top_device: Option<&str>,
    write: bool,
) -> Option<f64> {
    let below = format!("{}/", mount.trim_end_matches('/'));
    let disk = disks.iter().find(|d| {
        d.path == mount
            || d.path.starts_with(&below)
            || d.device
                .as_deref()
                .is_some_and(|dev| top_device == Some(dev))
    })?;
    if write {
        disk.seq_write_bytes_per_sec
    } else {
        disk.seq_read_bytes_per_sec
    }
}

/// A path's shared CPU: the cores it had, the per-byte costs its ceiling is
/// figured from, and that ceiling.
struct SharedCpu {
    cores: path_model::PathCores,
    /// The copy's costs, else the stages measured apart.
    costs: Vec<path_model::CpuCost>,
    /// The copy's own costs, capped at the CPUs' busy time; empty without a
    /// copy measured on this box.
    copy_costs: Vec<path_model::CpuCost>,
    ceiling: Option<CpuCeiling>,
}

impl SharedCpu {
    /// The one core smbd may use, when its affinity is one core.
    fn only_core(&self) -> Option<u32> {
        match self.cores.cpus[..] {
            [only] => Some(only),
            _ => None,
        }
    }
}

/// The shared CPU of a path on `cores`: the costs of the copy a file service
/// measured on it (`service`), capped at what the CPUs were seen busy, else
/// this box's TCP cost (bench net, `tcp`) with dm-crypt's (`crypto_cost`).
/// What other processes took of those cores during the copy is CPU the path
/// never had; the what-ifs still predict for a quiet box.
fn shared_cpu(
    service: Option<&ServiceFigure>,
    mut cores: path_model::PathCores,
    tcp: &[path_model::TcpFigure],
    crypto_cost: Option<path_model::CpuCost>,
    write: bool,
) -> SharedCpu {
    let (copy_costs, scale) = service.map_or((Vec::new(), None), |s| s.capped_costs(write, false));
    let costs = if copy_costs.is_empty() {
        path_model::assembled_costs(tcp, write, crypto_cost)
    } else {
        copy_costs.clone()
    };
    let load = service.and_then(|s| {
        if write {
            s.write_load.as_ref()
        } else {
            s.read_load.as_ref()
        }
    });
    if let Some(load) = load {
        cores.taken_by_others = path_model::taken_by_others(load, &cores.cpus, &costs);
    }
    let ceiling = path_model::cpu_ceiling_on(&costs, &cores).map(|c| c.scaled_by(scale));
    SharedCpu {
        cores,
        costs,
        copy_costs,
        ceiling,
    }
}

/// The crypto stage (`st`) re-rated by the copy measured on the path: dm-crypt's
/// rate on the path's `cores` replaces bench crypto's figure (one request at
/// a time, through AF_ALG), which undersells kcryptd's queues. dm-crypt's work
/// queues run in kworker threads, named kcryptd only while an item runs (a
/// read's decryption is all kworker): on a dm-crypt path the kworker time
/// counts as dm-crypt's. At most it is all of it, so this ceiling stays at or
/// above the CPU's, which already bills the same time. Without such costs in
/// `copy_costs` the stage stands.
fn crypto_during_copy(mut st: Stage, copy_costs: &[path_model::CpuCost], cores: f64) -> Stage {
    let crypt_work: Vec<&path_model::CpuCost> = copy_costs
        .iter()
        .filter(|c| c.ns_per_byte > 0.0 && matches!(c.stage.as_str(), "kcryptd" | "kworker"))
        .collect();
    let crypt_ns: f64 = crypt_work.iter().map(|c| c.ns_per_byte).sum();
    if crypt_ns <= 0.0 {
        return st;
    }
    let rate = cores * 1e9 / crypt_ns;
    let terms: Vec<String> = crypt_work
        .iter()
        .map(|c| format!("{} {:.1}", c.stage, c.ns_per_byte))
        .collect();
    st.basis = format!(
        "dm-crypt during the copy: {} / {} ns/B = {} (instead of {})",
        path_model::cores_text(cores),
        if terms.len() > 1 {
            format!("({})", terms.join(" + "))
        } else {
            terms.join("")
        },
        mb(rate),
        st.basis
    );
    st.ceiling_bytes_per_sec = Some(rate);
    st
}

/// The CPU's stage: its ceiling, with the arithmetic and each stage's share.
fn cpu_stage(c: &CpuCeiling) -> Stage {
    let shares: Vec<String> = c
        .shares
        .iter()
        .map(|s| format!("{} {:.0} %", s.stage, s.pct))
        .collect();
    Stage {
        name: "cpu".into(),
        ceiling_bytes_per_sec: Some(c.bytes_per_sec),
        basis: format!("{}; shares: {}", c.arithmetic, shares.join(", ")),
    }
}

/// `read from /srv` when a client reaches the mount through a share (Samba,
/// NFS or a file service measured here), else `local disk / (read)`: a
/// filesystem nothing shares is read by programs on the box itself, and
/// "read from /" made it look like a share a client reads.
fn path_name(snapshot: &Snapshot, m: &Measurements, mount: &str, write: bool) -> String {
    let on_mount = |p: &str| holder_of(snapshot, p).as_deref() == Some(mount);
    let fs = snapshot.file_services.data();
    let samba = fs.and_then(|f| f.samba.as_ref()).is_some_and(|s| {
        s.file_shares()
            .filter_map(|sh| sh.path.as_deref())
            .any(on_mount)
    });
    let nfs = fs
        .and_then(|f| f.nfs.as_ref())
        .is_some_and(|n| n.exports.iter().any(|e| on_mount(&e.path)));
    let service = m
        .services
        .iter()
        .any(|s| s.server_local && share_mount(snapshot, s).as_deref() == Some(mount));
    match (samba || nfs || service, write) {
        (true, false) => format!("read from {mount}"),
        (true, true) => format!("write to {mount}"),
        (false, false) => format!("local disk {mount} (read)"),
        (false, true) => format!("local disk {mount} (write)"),
    }
}

/// A path's services, as the CPU's estimate counts them.
struct PathServices<'a> {
    mount: &'a str,
    devices: &'a [&'a str],
    crypt: Option<cpu_estimate::Crypt>,
    write: bool,
}

/// The verdict of a path whose lowest known stage stands: nothing unknown
/// is likely below it.
fn stage_verdict(lowest: Option<(&str, f64)>) -> Verdict {
    match lowest {
        Some((stage, at)) => Verdict {
            kind: VerdictKind::Stage,
            text: format!("limited by {stage} at {}", mb(at)),
        },
        None => Verdict {
            kind: VerdictKind::Unknown,
            text: "nothing measured".into(),
        },
    }
}

/// The verdict of a path whose CPU nobody measured. A Samba share on it
/// gets the CPU's estimate beside the lowest known stage; a path serving
/// only NFS has a CPU cost nothing here models, so its limit is unknown; a
/// filesystem no service shares has no CPU stage between it and a client.
fn unmeasured_cpu(
    snapshot: &Snapshot,
    on_path: &PathServices,
    lowest: Option<(&str, f64)>,
    missing: &mut Vec<String>,
) -> (Verdict, Option<CpuEstimate>) {
    let fs = snapshot.file_services.data();
    let on_mount = |p: &str| holder_of(snapshot, p).as_deref() == Some(on_path.mount);
    let share = fs
        .and_then(|f| f.samba.as_ref())
        .and_then(|s| {
            s.file_shares()
                .find(|sh| sh.path.as_deref().is_some_and(on_mount))
        })
        .map(|sh| sh.name.clone());
    let nfs = fs
        .and_then(|f| f.nfs.as_ref())
        .is_some_and(|n| n.exports.iter().any(|e| on_mount(&e.path)));
    let Some(share) = share else {
        if nfs && let Some((stage, at)) = lowest {
            missing.push(format!(
                "the CPU of serving NFS from {}: not modelled; time a client's copy against                  nastune bench net and bench disk",
                on_path.mount
            ));
            return (
                Verdict {
                    kind: VerdictKind::Unknown,
                    text: format!(
                        "limit unknown: {stage} allows {} but the CPU cost of serving NFS is                          neither measured nor modelled",
                        mb(at)
                    ),
                },
                None,
            );
        }
        return (stage_verdict(lowest), None);
    };
    let services = cpu_estimate::Services {
        write: on_path.write,
        usb: usb_ceiling(snapshot, on_path.devices).is_some(),
        crypt: on_path.crypt.clone(),
    };
    let estimate = match snapshot.cpu.data() {
        Some(cpu) => cpu_estimate::estimate(cpu, &services),
        None => Err("the tree shows no CPU".to_string()),
    };
    missing.push(format!(
        "the shared CPU of the SMB path: nastune check --smb //localhost/{share} on the box"
    ));
    (cpu_estimate::verdict(lowest, &estimate), estimate.ok())
}

/// The model of a path a file service was measured on: the lowest stage
/// is the prediction, checked against the service's own figure.
fn model_of(
    s: &ServiceFigure,
    write: bool,
    stages: &[Stage],
    cpu: Option<CpuCeiling>,
    what_ifs: Vec<WhatIf>,
) -> PathModel {
    let limiting_stage = lowest(stages);
    let predicted = limiting_stage.and_then(|i| stages[i].ceiling_bytes_per_sec);
    let measured = if write {
        s.write_bytes_per_sec
    } else {
        s.read_bytes_per_sec
    };
    PathModel {
        limit: limiting_stage.map(|i| limit_of(&stages[i], cpu.as_ref())),
        cpu,
        predicted_bytes_per_sec: predicted,
        measured_bytes_per_sec: measured,
        measured_by: format!(
            "bench {} {} of share '{}'",
            s.service,
            if write { "seq-write" } else { "seq-read" },
            s.share
        ),
        miss_pct: predicted
            .zip(measured)
            .and_then(|(p, m)| path_model::miss_pct(p, m)),
        what_ifs,
    }
}

/// A share served by another box, seen from this client: of its stages only
/// the network is measured here; the server's are for check on the server.
fn remote_path(
    snapshot: &Snapshot,
    m: &Measurements,
    s: &ServiceFigure,
    write: bool,
) -> PathAnalysis {
    let mut missing = Vec::new();
    let stages = vec![network_stage(snapshot, m, &mut missing)];
    missing.push(format!(
        "the server's storage and CPU: nastune check --smb //localhost/{} on the server",
        s.share
    ));
    let target = s.target.clone().unwrap_or_else(|| s.share.clone());
    let limiting_stage = lowest(&stages);
    PathAnalysis {
        name: format!("{} {target}", if write { "write to" } else { "read from" }),
        mount_point: target,
        limit_bytes_per_sec: limiting_stage.and_then(|i| stages[i].ceiling_bytes_per_sec),
        limiting_stage,
        model: Some(model_of(s, write, &stages, None, Vec::new())),
        stages,
        missing,
        verdict: None,
        cpu_estimate: None,
    }
}

/// Index of the stage with the lowest known ceiling.
pub(super) fn lowest(stages: &[Stage]) -> Option<usize> {
    stages
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.ceiling_bytes_per_sec.map(|c| (i, c)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
}

/// The mount that holds a Samba share's path on this box: the path the
/// serving smbd's own configuration gives (check reads it), else the share of
/// that name in the configuration the probe read.
fn share_mount(snapshot: &Snapshot, service: &ServiceFigure) -> Option<String> {
    let path = match &service.share_path {
        Some(p) => p.clone(),
        None => snapshot
            .file_services
            .data()?
            .samba
            .iter()
            .flat_map(|s| s.shares.iter())
            .find(|s| s.name.eq_ignore_ascii_case(&service.share))?
            .path
            .clone()?,
    };
    holder_of(snapshot, &path)
}

/// The limit in the model's words: the CPU stage says which part of it binds.
pub(super) fn limit_of(stage: &Stage, cpu: Option<&CpuCeiling>) -> Limit {
    match stage.name.as_str() {
        "network" => Limit::Wire,
        "tcp stack" => Limit::TcpStack,
        "crypto" => Limit::Crypto,
        "cpu" => match cpu.map(|c| &c.binding) {
            Some(Binding::OneStage(s)) if s == "smbd" || s.starts_with("client") => Limit::Service,
            Some(Binding::OneStage(s)) if s == "softirq" => Limit::TcpStack,
            Some(Binding::OneStage(s)) if s == "kcryptd" => Limit::Crypto,
            _ => Limit::Cpu,
        },
        _ if stage.basis.contains("share the") => Limit::SharedBus,
        _ => Limit::Storage,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crypto_stage_is_the_cipher_in_the_paths_direction() {
        let c = crate::probe::dm::Crypt {
            cipher: "aes-xts-plain64".into(),
            key_bits: Some(512),
            sector_bytes: 4096,
            source: "luks2 header on sda1".into(),
        };
        let fig = |request_bytes| CipherFigure {
            cipher: "aes-xts-plain64".into(),
            key_bits: 512,
            path: "kernel".into(),
            encrypt_bytes_per_sec: 40e6,
            decrypt_bytes_per_sec: 50e6,
            request_bytes,
            measured_by: None,
        };
        let mut missing = Vec::new();
        let (st, cost) = crypto_stage(&c, Some(&fig(4096)), false, &mut missing);
        assert_eq!(st.ceiling_bytes_per_sec, Some(50e6));
        assert_eq!(
            st.basis,
            format!(
                "aes-xts-plain64 512-bit decrypt (kernel) at 4096-byte sectors: {}",
                mb(50e6)
            )
        );
        assert!(missing.is_empty());
        // 1 s / 50 MB/s = 20 ns per byte of CPU.
        assert!((cost.expect("a cost").ns_per_byte - 20.0).abs() < 1e-9);

        let (st, _) = crypto_stage(&c, Some(&fig(512)), true, &mut missing);
        assert_eq!(st.ceiling_bytes_per_sec, Some(40e6));
        assert!(
            st.basis.contains(
                "encrypt (kernel) at 512-byte sectors (the volume's 4096 were not measured)"
            ),
            "{}",
            st.basis
        );
        assert_eq!(
            missing,
            [
                "aes-xts-plain64 at the volume's 4096-byte sectors: nastune bench crypto --sector-size 4096"
            ]
        );

        let (st, cost) = crypto_stage(&c, None, true, &mut missing);
        assert_eq!(
            (st.ceiling_bytes_per_sec, st.basis.as_str()),
            (None, "aes-xts-plain64 not measured")
        );
        assert!(cost.is_none());
        assert_eq!(missing[1], "aes-xts-plain64 speed: nastune bench crypto");
    }

    #[test]
    fn the_tcp_stage_is_the_loopback_figure_or_a_note() {
        let mut missing = Vec::new();
        let st = tcp_stage(Some(1.5e9), &mut missing);
        assert_eq!(st.ceiling_bytes_per_sec, Some(1.5e9));
        assert_eq!(st.basis, format!("loopback TCP measured {}", mb(1.5e9)));
        assert!(missing.is_empty());
        let st = tcp_stage(None, &mut missing);
        assert_eq!(
            (st.ceiling_bytes_per_sec, st.basis.as_str()),
            (None, "not measured")
        );
        assert_eq!(missing, ["TCP stack ceiling: nastune bench net --loopback"]);
    }

    #[test]
    fn the_storage_stage_is_the_lower_of_disk_and_bus() {
        let bus = || Some((35e6, "USB 2.0 bus: 35 MB/s".to_string()));
        let mut missing = Vec::new();
        // 110 MB/s measured behind a 35 MB/s bus came from a cache: the bus limits.
        let st = storage_stage(
            "storage".into(),
            Some(110e6),
            bus(),
            "/srv",
            false,
            &mut missing,
        );
        assert_eq!(st.ceiling_bytes_per_sec, Some(35e6));
        assert_eq!(
            st.basis,
            format!(
                "USB 2.0 bus: 35 MB/s (measured {} is above the bus)",
                mb(110e6)
            )
        );
        assert!(missing.is_empty());
        // Below the bus, the measurement is the ceiling.
        let st = storage_stage(
            "storage".into(),
            Some(20e6),
            bus(),
            "/srv",
            true,
            &mut missing,
        );
        assert_eq!(st.ceiling_bytes_per_sec, Some(20e6));
        assert_eq!(
            st.basis,
            format!("sequential 1 MiB write measured on /srv: {}", mb(20e6))
        );
        // Not measured: the bus stands in, and the missing measurement is named.
        let st = storage_stage("storage".into(), None, bus(), "/srv", false, &mut missing);
        assert_eq!(st.ceiling_bytes_per_sec, Some(35e6));
        assert_eq!(missing, ["storage throughput: nastune bench disk /srv"]);
        let st = storage_stage("storage".into(), None, None, "/srv", false, &mut missing);
        assert_eq!(
            (st.ceiling_bytes_per_sec, st.basis.as_str()),
            (None, "not measured")
        );
        assert_eq!(missing.len(), 2);
    }
    fn cost(stage: &str, ns_per_byte: f64) -> path_model::CpuCost {
        path_model::CpuCost {
            stage: stage.into(),
            ns_per_byte,
            single_threaded: stage == "smbd",
            basis: "literal".into(),
        }
    }

    /// A transfer of `bytes` in `elapsed_ns` while CPU 2 was busy `busy_ns`.
    fn load_on_cpu2(busy_ns: u64, elapsed_ns: u64, bytes: u64) -> path_model::CoreLoad {
        path_model::CoreLoad {
            busy_by_cpu: vec![crate::bench::smb::server::CpuBusy { cpu: 2, busy_ns }],
            elapsed_ns,
            bytes,
        }
    }

    #[test]
    fn the_storage_name_and_disk_rate_are_the_mounts() {
        assert_eq!(storage_name(None), "storage");
        assert_eq!(
            storage_name(Some((Some("raid5"), 3))),
            "storage (raid5 over 3 members)"
        );
        assert_eq!(storage_name(Some((None, 2))), "storage (md over 2 members)");
        let disk = |path: &str, device: Option<&str>| DiskFigure {
            path: path.into(),
            device: device.map(str::to_string),
            seq_read_bytes_per_sec: Some(90e6),
            seq_write_bytes_per_sec: Some(30e6),
            measured_by: None,
        };
        // A file below the mount stands for it; /srv2 is another mount.
        let disks = [disk("/srv2", None), disk("/srv/bench", None)];
        assert_eq!(disk_rate(&disks, "/srv/", None, false), Some(90e6));
        assert_eq!(disk_rate(&disks, "/srv", None, true), Some(30e6));
        assert_eq!(disk_rate(&disks[..1], "/srv", None, true), None);
        // Else the device at the top of the mount's chain.
        let disks = [disk("/mnt/x", Some("md0"))];
        assert_eq!(disk_rate(&disks, "/srv", Some("md0"), true), Some(30e6));
        assert_eq!(disk_rate(&disks, "/srv", Some("sda"), true), None);
    }

    #[test]
    fn the_path_has_smbds_cores_else_every_logical_cpu() {
        let pinned = path_model::PathCores {
            count: 1.0,
            source: Some("smbd's affinity: 2".into()),
            cpus: vec![2],
            taken_by_others: 0.0,
        };
        assert_eq!(path_cores(Some(&pinned), Some(4)), pinned);
        assert_eq!(path_cores(None, Some(4)).count, 4.0);
        // No CPU in the tree, or a count of 0: one core, never a division by 0.
        assert_eq!(path_cores(None, None).count, 1.0);
        assert_eq!(path_cores(None, Some(0)).count, 1.0);
    }

    #[test]
    fn the_shared_cpu_is_the_copys_costs_else_the_stages_measured_apart() {
        // Measured apart: this box sends at 10 ns/B of CPU (softirq 4 of it)
        // and decrypts at 20 ns/B, on 2 cores.
        let tcp = [path_model::TcpFigure {
            peer: "10.0.0.2".into(),
            role: "send".into(),
            streams: 1,
            bytes_per_sec: 100e6,
            cpus: 2,
            ns_per_byte: 10.0,
            softirq_ns_per_byte: 4.0,
            measured_by: None,
        }];
        let apart = shared_cpu(
            None,
            path_model::PathCores::counted(2.0),
            &tcp,
            Some(cost("kcryptd", 20.0)),
            false,
        );
        assert!(apart.copy_costs.is_empty());
        assert_eq!(apart.only_core(), None);
        let total: f64 = apart.costs.iter().map(|c| c.ns_per_byte).sum();
        assert!((total - 30.0).abs() < 1e-9, "{:?}", apart.costs);
        // 2 cores / 30 ns/B = 66.7 MB/s.
        let c = apart.ceiling.expect("a ceiling");
        assert!((c.bytes_per_sec - 2e9 / 30.0).abs() < 1.0, "{c:?}");
        // Nothing measured to write with: no costs, no ceiling.
        let none = shared_cpu(None, path_model::PathCores::counted(2.0), &tcp, None, true);
        assert!(none.costs.is_empty() && none.ceiling.is_none());

        // A copy on smbd's one core (CPU 2), busy 1 s of the 1 s it moved
        // 20 MB: smbd's 20 ns/B took 0.4 s, the other 0.6 s were others'.
        let mut svc = service(true, None);
        svc.write_costs = vec![cost("smbd", 20.0)];
        svc.write_load = Some(load_on_cpu2(1_000_000_000, 1_000_000_000, 20_000_000));
        let cores = svc.cores.clone().unwrap();
        let copy = shared_cpu(Some(&svc), cores, &tcp, Some(cost("kcryptd", 20.0)), true);
        assert_eq!(copy.costs, [cost("smbd", 20.0)]);
        assert_eq!(copy.copy_costs, copy.costs);
        assert_eq!(copy.only_core(), Some(2));
        assert!(
            (copy.cores.taken_by_others - 0.6).abs() < 1e-9,
            "{:?}",
            copy.cores
        );
        // The 0.4 core left / 20 ns/B = 20 MB/s, below smbd's 1 core / 20 ns/B.
        let c = copy.ceiling.expect("a ceiling");
        assert!((c.bytes_per_sec - 20e6).abs() < 1.0, "{c:?}");
    }

    #[test]
    fn the_copys_dm_crypt_time_rerates_the_crypto_stage() {
        let st = || Stage {
            name: "crypto".into(),
            ceiling_bytes_per_sec: Some(21.8e6),
            basis: "bench crypto".into(),
        };
        // 2 cores / (4.0 + 6.0 ns/B) = 200 MB/s; smbd's time is not dm-crypt's.
        let copy = [
            cost("smbd", 9.0),
            cost("kcryptd", 4.0),
            cost("kworker", 6.0),
        ];
        let r = crypto_during_copy(st(), &copy, 2.0);
        assert!((r.ceiling_bytes_per_sec.unwrap() - 200e6).abs() < 1.0);
        assert_eq!(
            r.basis,
            format!(
                "dm-crypt during the copy: 2 cores / (kcryptd 4.0 + kworker 6.0) ns/B = {} (instead of bench crypto)",
                mb(200e6)
            )
        );
        // No dm-crypt time in the copy: bench crypto's figure stands.
        assert_eq!(crypto_during_copy(st(), &copy[..1], 2.0), st());
        assert_eq!(crypto_during_copy(st(), &[], 2.0), st());
    }

    #[test]
    fn the_cpu_stage_is_the_ceiling_with_each_stages_share() {
        let c = path_model::cpu_ceiling(&[cost("smbd", 15.0), cost("kcryptd", 5.0)], 2.0)
            .expect("a ceiling");
        let st = cpu_stage(&c);
        assert_eq!(st.name, "cpu");
        // smbd alone on its core: 1 core / 15 ns/B = 66.7 MB/s, below 2 cores / 20 ns/B.
        assert!((st.ceiling_bytes_per_sec.unwrap() - 1e9 / 15.0).abs() < 1.0);
        assert_eq!(
            st.basis,
            format!("{}; shares: smbd 75 %, kcryptd 25 %", c.arithmetic)
        );
    }

    /// The model of a copy measured at 40 MB/s on a path whose CPU allows
    /// 50 MB/s: the prediction misses by 25 %, and the what-if of one core
    /// fewer is held by the CPU.
    #[test]
    fn a_services_model_is_its_lowest_stage_against_the_copy() {
        let costs = [cost("smbd", 10.0), cost("kcryptd", 30.0)];
        let cpu = path_model::cpu_ceiling(&costs, 2.0).expect("a ceiling");
        let others = vec![
            Stage {
                name: "network".into(),
                ceiling_bytes_per_sec: Some(117e6),
                basis: "literal".into(),
            },
            Stage {
                name: "storage".into(),
                ceiling_bytes_per_sec: Some(90e6),
                basis: "literal".into(),
            },
        ];
        let mut stages = others.clone();
        stages.push(cpu_stage(&cpu));
        let changes = what_if::Inputs {
            costs: costs.to_vec(),
            cores: 2.0,
            others,
            ..Default::default()
        };
        let model = model_of(
            &service(true, None),
            true,
            &stages,
            Some(cpu),
            what_if::predict(&changes),
        );
        // 2 cores / 40 ns/B = 50 MB/s.
        assert!((model.predicted_bytes_per_sec.unwrap() - 50e6).abs() < 1.0);
        assert_eq!(model.measured_bytes_per_sec, Some(40e6));
        assert!((model.miss_pct.unwrap() - 25.0).abs() < 1e-9, "{model:?}");
        assert_eq!(model.limit, Some(Limit::Cpu));
        assert_eq!(model.measured_by, "bench smb seq-write of share 'data'");
        // 1 core / 40 ns/B = 25 MB/s.
        let one = model
            .what_ifs
            .iter()
            .find(|w| w.change == "only one core")
            .expect("a one-core what-if");
        assert!((one.predicted_bytes_per_sec - 25e6).abs() < 1.0, "{one:?}");
    }
    use crate::advise::test_support::snapshot_of;

    fn cipher(cipher: &str, bits: u32, enc: f64, dec: f64) -> CipherFigure {
        CipherFigure {
            cipher: cipher.into(),
            key_bits: bits,
            path: "user space".into(),
            encrypt_bytes_per_sec: enc,
            decrypt_bytes_per_sec: dec,
            request_bytes: 4096,
            measured_by: None,
        }
    }

    #[test]
    fn pi2_luks_path_is_limited_by_crypto_when_measured_slow() {
        let snap = snapshot_of("rpi2-luks");
        let m = Measurements {
            crypto: vec![cipher("aes-xts-plain64", 512, 15.3e6, 14.6e6)],
            disk: vec![DiskFigure {
                path: "/srv/nas/.nastune-bench".into(),
                device: Some("dm-0".into()),
                seq_read_bytes_per_sec: Some(33.0e6),
                seq_write_bytes_per_sec: None,
                measured_by: None,
            }],
            ..Default::default()
        };
        let paths = analyse(&snap, &m);
        let read = path_named(&paths, "read from /srv/nas");
        let names: Vec<&str> = read.stages.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["network", "tcp stack", "crypto", "storage"]);
        // 100 Mbit/s x 1448/1538 = 11.77 MB/s is below the 14.6 MB/s of decrypt.
        assert_eq!(read.stages[read.limiting_stage.unwrap()].name, "network");
        assert!((read.limit_bytes_per_sec.unwrap() - 11.77e6).abs() < 0.01e6);
        assert!(read.stages[0].basis.contains("100 Mbit/s x 1448/1538"));
        assert!(read.missing.iter().any(|s| s.contains("--loopback")));
    }

    #[test]
    fn rk3399_raid_path_names_the_slowest_measured_stage() {
        let snap = snapshot_of("rk3399-raid5");
        let m = Measurements {
            crypto: vec![cipher("aes-xts-plain64", 512, 95e6, 90e6)],
            ..Default::default()
        };
        let write = analyse(&snap, &m)
            .into_iter()
            .find(|p| p.name == "write to /srv")
            .unwrap();
        // Gigabit: 117.7 MB/s on the wire, 95 MB/s encrypt: crypto limits writes.
        assert_eq!(write.stages[write.limiting_stage.unwrap()].name, "crypto");
        assert!(
            write
                .stages
                .iter()
                .any(|s| s.name.starts_with("storage (raid5 over 4")),
            "{:?}",
            write.stages
        );
        assert!(write.missing.iter().any(|s| s.contains("bench disk /srv")));
    }

    #[test]
    fn a_mount_no_share_holds_is_named_a_local_disk_not_a_read_from() {
        // rpi4-usb shares nothing: its /srv is a disk programs on the box use.
        let names = |box_name| -> Vec<String> {
            analyse(&snapshot_of(box_name), &Measurements::default())
                .into_iter()
                .map(|p| p.name)
                .collect()
        };
        assert_eq!(
            names("rpi4-usb"),
            vec!["local disk /srv (read)", "local disk /srv (write)"]
        );
        // rk3399-raid5's smb.conf shares a path on /srv: clients read from it.
        assert_eq!(
            names("rk3399-raid5"),
            vec!["read from /srv", "write to /srv"]
        );
        // The same shares made print queues (Debian's stock [printers] is one,
        // on /var/tmp) serve no files: /srv is a local disk again.
        let mut snap = snapshot_of("rk3399-raid5");
        if let crate::probe::Outcome::Ok { data } = &mut snap.file_services
            && let Some(samba) = &mut data.samba
        {
            for share in &mut samba.shares {
                share.params.push(crate::probe::smb::SmbParam {
                    name: "printable".into(),
                    value: "yes".into(),
                    written_as: None,
                    file: "/etc/samba/smb.conf".into(),
                    line: 1,
                });
            }
        }
        let printed: Vec<String> = analyse(&snap, &Measurements::default())
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(
            printed,
            vec!["local disk /srv (read)", "local disk /srv (write)"]
        );
    }

    #[test]
    fn a_vm_virtio_link_is_named_and_offered_a_peer_measurement() {
        let snap = snapshot_of("buildhost");
        // A check run measured a directory on the root filesystem.
        let m = Measurements {
            disk: vec![DiskFigure {
                path: "/var/tmp".into(),
                device: None,
                seq_read_bytes_per_sec: Some(500e6),
                seq_write_bytes_per_sec: Some(400e6),
                measured_by: None,
            }],
            ..Default::default()
        };
        let paths = analyse(&snap, &m);
        assert!(!paths.is_empty());
        for p in &paths {
            let net = &p.stages[0];
            assert_eq!(net.name, "network");
            assert_eq!(
                net.basis,
                "eth0 (virtio_net link) is up but has no rated speed; measure it"
            );
            assert!(
                p.missing
                    .iter()
                    .any(|m| m.contains("nastune check --peer HOST")),
                "{:?}",
                p.missing
            );
        }
    }

    #[test]
    fn without_measurements_every_undecided_stage_names_its_bench() {
        let snap = snapshot_of("pogoplug-v4");
        let paths = analyse(&snap, &Measurements::default());
        assert!(!paths.is_empty());
        for p in &paths {
            assert!(p.missing.iter().any(|s| s.contains("bench disk")), "{p:?}");
        }
    }

    fn path_named<'a>(paths: &'a [PathAnalysis], name: &str) -> &'a PathAnalysis {
        paths.iter().find(|p| p.name == name).expect(name)
    }

    fn service(local: bool, share_path: Option<&str>) -> ServiceFigure {
        ServiceFigure {
            service: "smb".into(),
            share: "data".into(),
            target: Some("//nas/data".into()),
            server_local: local,
            read_bytes_per_sec: Some(11.5e6),
            write_bytes_per_sec: Some(40e6),
            read_costs: Vec::new(),
            write_costs: vec![path_model::CpuCost {
                stage: "smbd".into(),
                ns_per_byte: 20.0,
                single_threaded: true,
                basis: "literal".into(),
            }],
            read_load: None,
            write_load: None,
            cores: Some(path_model::PathCores {
                count: 1.0,
                source: Some("smbd's affinity: 2".into()),
                cpus: vec![2],
                taken_by_others: 0.0,
            }),
            share_path: share_path.map(str::to_string),
            encrypted_read_costs: Vec::new(),
            encrypted_write_costs: Vec::new(),
            encrypted_read_load: None,
            encrypted_write_load: None,
        }
    }

    /// A share on another box, measured from this client: the network is
    /// the one stage seen here, and it is the model's prediction.
    #[test]
    fn a_remote_share_is_modelled_by_the_network_this_client_measured() {
        let snap = snapshot_of("rk3399-raid5");
        let m = Measurements {
            network_goodput_bytes_per_sec: Some(11.8e6),
            services: vec![service(false, None)],
            ..Default::default()
        };
        let paths = analyse(&snap, &m);
        let read = path_named(&paths, "read from //nas/data");
        let model = read.model.as_ref().unwrap();
        assert_eq!(model.limit, Some(Limit::Wire));
        assert_eq!(model.predicted_bytes_per_sec, Some(11.8e6));
        assert!((model.miss_pct.unwrap() - 2.6).abs() < 0.1);
        assert!(read.missing.iter().any(|s| s.contains("on the server")));
        // No path of this box's own claims the remote figure.
        assert!(
            paths
                .iter()
                .filter(|p| !p.name.contains("//nas"))
                .all(|p| p.model.is_none())
        );
    }

    /// The serving smbd's share path (check reads it from that smbd's own
    /// configuration) places the figure on its mount, and its affinity of
    /// one CPU, not the box's six, sets the CPU ceiling.
    #[test]
    fn the_serving_smbds_share_path_and_affinity_decide_the_path() {
        let snap = snapshot_of("rk3399-raid5");
        let m = Measurements {
            services: vec![service(true, Some("/srv/other"))],
            ..Default::default()
        };
        let write = analyse(&snap, &m)
            .into_iter()
            .find(|p| p.name == "write to /srv")
            .unwrap();
        let model = write.model.unwrap();
        let cpu = model.cpu.unwrap();
        assert_eq!(cpu.cores, 1.0);
        assert_eq!(
            cpu.arithmetic,
            "1 core (smbd's affinity: 2) / (20.0 ns/B) = 50.0 MB/s"
        );
        assert!((model.predicted_bytes_per_sec.unwrap() - 50e6).abs() < 1.0);
        assert_eq!(model.limit, Some(Limit::Cpu));
    }

    /// The copy's own kcryptd cost sets the crypto stage: bench crypto's
    /// one-request figure (10 MB/s here) undersells dm-crypt's queues, and
    /// the CPU the copy measured (smbd and kcryptd on one core) is the limit.
    #[test]
    fn the_copys_kcryptd_cost_replaces_the_one_request_crypto_figure() {
        let snap = snapshot_of("rk3399-raid5");
        let mut svc = service(true, Some("/srv/other"));
        svc.write_costs.push(path_model::CpuCost {
            stage: "kcryptd".into(),
            ns_per_byte: 5.0,
            single_threaded: false,
            basis: "literal".into(),
        });
        let m = Measurements {
            crypto: vec![cipher("aes-xts-plain64", 512, 10e6, 10e6)],
            services: vec![svc],
            ..Default::default()
        };
        let write = analyse(&snap, &m)
            .into_iter()
            .find(|p| p.name == "write to /srv")
            .unwrap();
        let crypto = write.stages.iter().find(|s| s.name == "crypto").unwrap();
        // 1 core / 5 ns/B = 200 MB/s.
        assert!((crypto.ceiling_bytes_per_sec.unwrap() - 200e6).abs() < 1.0);
        assert!(
            crypto
                .basis
                .starts_with("dm-crypt during the copy: 1 core / kcryptd 5.0 ns/B = 200.0 MB/s"),
            "{}",
            crypto.basis
        );
        let model = write.model.unwrap();
        // 1 core / (20 + 5 ns/B) = 40 MB/s.
        assert!((model.predicted_bytes_per_sec.unwrap() - 40e6).abs() < 1.0);
        assert_eq!(model.limit, Some(Limit::Cpu));
    }

    /// The lab's read (run 1): decryption ran in kworker threads (kcryptd's
    /// work queue), none named kcryptd, and bench crypto's one-request figure
    /// (21.8 MB/s) bound the path below the 24.7 MB/s of the CPU that did
    /// the decryption too. The kworker time is dm-crypt's on this path.
    #[test]
    fn a_reads_kworker_time_is_dm_crypts_on_a_crypt_path() {
        let snap = snapshot_of("rk3399-raid5");
        let mut svc = service(true, Some("/srv/other"));
        let c = |stage: &str, ns: f64| path_model::CpuCost {
            stage: stage.into(),
            ns_per_byte: ns,
            single_threaded: stage == "smbd",
            basis: "literal".into(),
        };
        svc.read_costs = vec![
            c("smbd", 9.2),
            c("kworker", 11.3),
            c("client (this box)", 19.4),
        ];
        let m = Measurements {
            crypto: vec![cipher("aes-xts-plain64", 512, 21.8e6, 21.8e6)],
            services: vec![svc],
            ..Default::default()
        };
        let read = analyse(&snap, &m)
            .into_iter()
            .find(|p| p.name == "read from /srv")
            .unwrap();
        let crypto = read.stages.iter().find(|s| s.name == "crypto").unwrap();
        // 1 core / 11.3 ns/B = 88.5 MB/s.
        assert!(
            crypto
                .basis
                .starts_with("dm-crypt during the copy: 1 core / kworker 11.3 ns/B = 88.5 MB/s"),
            "{}",
            crypto.basis
        );
        let model = read.model.unwrap();
        // 1 core / (9.2 + 11.3 + 19.4 ns/B) = 25.1 MB/s: the CPU, not crypto.
        assert_eq!(model.limit, Some(Limit::Cpu));
        assert!((model.predicted_bytes_per_sec.unwrap() - 1e9 / 39.9).abs() < 1.0);
    }

    /// A loaded host under a guest without steal accounting: the threads'
    /// clocks counted 2866 ms where the one CPU was busy 1030 ms. The costs
    /// are scaled to the busy time before they predict, and the arithmetic
    /// says so.
    #[test]
    fn a_copys_costs_are_capped_at_the_cpus_busy_time() {
        let snap = snapshot_of("rk3399-raid5");
        let mut svc = service(true, Some("/srv/other"));
        // 20 ns/B x 143.3 MB = 2866 ms.
        svc.write_bytes_per_sec = Some(50e6);
        svc.write_load = Some(load_on_cpu2(1_030_000_000, 2_842_000_000, 143_300_000));
        let m = Measurements {
            services: vec![svc],
            ..Default::default()
        };
        let write = path_named(&analyse(&snap, &m), "write to /srv").clone();
        let cpu = write.model.unwrap().cpu.unwrap();
        let scale = cpu.scaled.clone().unwrap();
        assert!((scale.factor - 1030.0 / 2866.0).abs() < 1e-9, "{scale:?}");
        // 1 core / (20 x 0.359 = 7.19 ns/B) = 139.1 MB/s.
        assert!((cpu.bytes_per_sec - 1e9 / (20.0 * 1030.0 / 2866.0)).abs() < 1.0);
        assert!(
            cpu.arithmetic.ends_with(
                "(costs scaled by 0.36: the stages counted 2866 ms, the CPUs were busy 1030 ms)"
            ),
            "{}",
            cpu.arithmetic
        );
        // Nothing is left for other processes: the path had its whole core.
        assert!(!cpu.arithmetic.contains("used by other processes"));
        // The copy measured 50 MB/s under the load: a model miss, whose evidence
        // says the costs were scaled.
        let rule = super::super::paths::RULES[0];
        let findings = (rule.evaluate)(
            &rule.info,
            &crate::advise::Context {
                snapshot: &snap,
                measurements: &m,
            },
        );
        let miss = findings
            .iter()
            .find(|f| f.title.starts_with("write to /srv"))
            .expect("a path-model-miss finding");
        assert!(
            miss.evidence
                .iter()
                .any(|e| e.fact == "costs scaled" && e.value.starts_with("costs scaled by 0.36")),
            "{:?}",
            miss.evidence
        );
    }
}
