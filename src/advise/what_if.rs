//! What a path would do after a change to the box, predicted from the same
//! per-byte costs and ceilings the path model uses: fewer cores, the client
//! elsewhere, SMB encryption on, another volume cipher, the NIC's interrupts
//! on another core than smbd's, a faster link. Each is a prediction and says
//! its arithmetic; none was measured.
//!
//! [`inputs`] reads what the changes need from the snapshot and the
//! measurements; [`predict`] is pure, so the what-ifs are tested on literal
//! figures.

use super::bottleneck::{Measurements, Stage, WhatIf};
use super::path_model::{self, Change, CpuCost, ServiceFigure};
use crate::format::rate as mb;
use crate::probe::Snapshot;

/// Standard Ethernet speeds, Mbit/s: the next one up is "a faster link".
const LINK_SPEEDS: [u64; 7] = [10, 100, 1000, 2500, 5000, 10_000, 25_000];

/// A path the model covers, as the bottleneck analysis sees it.
pub struct Path<'a> {
    pub snapshot: &'a Snapshot,
    pub m: &'a Measurements,
    pub service: &'a ServiceFigure,
    pub costs: &'a [CpuCost],
    pub cores: f64,
    /// The one core smbd may use (its affinity), when it is one.
    pub smbd_core: Option<u32>,
    /// The stages other than the CPU's.
    pub others: &'a [Stage],
    pub write: bool,
    /// The path's dm-crypt volume, when it has one.
    pub crypt: Option<&'a crate::probe::dm::Crypt>,
}

/// Another volume cipher, as measured by bench crypto.
#[derive(Debug, Clone, PartialEq)]
pub struct Cipher {
    pub name: String,
    /// Its rate at the volume's request size, this direction, one core.
    pub bytes_per_sec: f64,
    pub request_bytes: u32,
}

/// Everything the what-ifs need, as plain data.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inputs {
    pub costs: Vec<CpuCost>,
    pub cores: f64,
    pub others: Vec<Stage>,
    /// The path's costs with SMB encryption on (bench smb --compare-security).
    pub smb_encrypted: Vec<CpuCost>,
    /// How those were scaled to the CPUs' busy time, if they were.
    pub smb_encrypted_scale: Option<path_model::CostScale>,
    /// The volume's cipher and the other ciphers measured at its sector size.
    pub volume_cipher: Option<String>,
    pub other_ciphers: Vec<Cipher>,
    /// The core that takes all of the NIC's interrupts when it is also the
    /// only core smbd may use (the softirq then queues behind smbd).
    pub irq_core_shared_with_smbd: Option<u32>,
    /// The negotiated speed of the fastest physical link, Mbit/s.
    pub link_mbit_per_sec: Option<u64>,
}

/// Gathers the inputs of one path.
pub fn inputs(p: &Path) -> Inputs {
    let crypt = p.crypt;
    let mut other_ciphers = Vec::new();
    if let Some(c) = crypt
        && let Some(now) = path_model::volume_cipher(&p.m.crypto, c)
    {
        for f in p.m.crypto.iter().filter(|f| {
            f.cipher != c.cipher && f.path == now.path && f.request_bytes == now.request_bytes
        }) {
            let rate = if p.write {
                f.encrypt_bytes_per_sec
            } else {
                f.decrypt_bytes_per_sec
            };
            // One figure per cipher: the fastest key size measured.
            match other_ciphers
                .iter_mut()
                .find(|o: &&mut Cipher| o.name == f.cipher)
            {
                Some(o) if o.bytes_per_sec >= rate => {}
                Some(o) => o.bytes_per_sec = rate,
                None => other_ciphers.push(Cipher {
                    name: f.cipher.clone(),
                    bytes_per_sec: rate,
                    request_bytes: f.request_bytes,
                }),
            }
        }
    }
    // Capped like the plain copy's: the host's load during the encrypted
    // copy is no cost of encryption.
    let (smb_encrypted, smb_encrypted_scale) = p.service.capped_costs(p.write, true);
    Inputs {
        costs: p.costs.to_vec(),
        cores: p.cores,
        others: p.others.to_vec(),
        smb_encrypted,
        smb_encrypted_scale,
        volume_cipher: crypt.map(|c| c.cipher.clone()),
        other_ciphers,
        irq_core_shared_with_smbd: irq_shared_with(p.snapshot, p.smbd_core),
        link_mbit_per_sec: super::bottleneck::fastest_link(p.snapshot).map(|(_, s)| s),
    }
}

/// The core that takes every interrupt of the physical NIC when it is `core`.
pub fn irq_shared_with(snapshot: &Snapshot, core: Option<u32>) -> Option<u32> {
    let core = core?;
    let irq = snapshot.irq.data()?;
    let (name, _) = super::bottleneck::fastest_link(snapshot)?;
    (irq.only_core(&name) == Some(core)).then_some(core)
}

/// The lowest known ceiling among `stages`.
fn floor_of(stages: &[Stage]) -> Option<f64> {
    stages
        .iter()
        .filter_map(|s| s.ceiling_bytes_per_sec)
        .min_by(f64::total_cmp)
}

/// A CPU ceiling held against the other stages: the lower one is the prediction.
fn held_down(cpu: Option<(f64, String)>, others: &[Stage]) -> Option<(f64, String)> {
    let floor = floor_of(others);
    match (cpu, floor) {
        (Some((c, text)), Some(f)) if f < c => {
            Some((f, format!("{text}; another stage stays lower at {}", mb(f))))
        }
        (Some(c), _) => Some(c),
        (None, Some(f)) => Some((f, format!("the lowest other stage: {}", mb(f)))),
        (None, None) => None,
    }
}

/// Every what-if the inputs allow, each with its arithmetic.
pub fn predict(i: &Inputs) -> Vec<WhatIf> {
    let mut out = Vec::new();
    let mut push = |change: String, r: Option<(f64, String)>| {
        if let Some((predicted, arithmetic)) = r {
            out.push(WhatIf {
                change,
                predicted_bytes_per_sec: predicted,
                arithmetic,
            });
        }
    };
    let cpu = |ch: &Change| {
        path_model::with_change(&i.costs, i.cores, ch).map(|c| (c.bytes_per_sec, c.arithmetic))
    };

    if i.cores > 1.0 {
        push(
            "only one core".into(),
            held_down(cpu(&Change::Cores(1.0)), &i.others),
        );
    }
    if i.cores > 2.0 {
        push(
            "one core fewer".into(),
            held_down(cpu(&Change::Cores(i.cores - 1.0)), &i.others),
        );
    }
    if let Some(c) = i.costs.iter().find(|c| c.stage.starts_with("client")) {
        push(
            "the client on another machine".into(),
            held_down(
                cpu(&Change::Stage {
                    stage: c.stage.clone(),
                    cost: None,
                }),
                &i.others,
            ),
        );
    }
    if !i.smb_encrypted.is_empty() {
        push(
            "SMB encryption on".into(),
            held_down(
                path_model::with_change(&i.costs, i.cores, &Change::Costs(i.smb_encrypted.clone()))
                    .map(|c| c.scaled_by(i.smb_encrypted_scale.clone()))
                    .map(|c| (c.bytes_per_sec, c.arithmetic)),
                &i.others,
            )
            .map(|(v, a)| (v, format!("the encrypted run's costs: {a}"))),
        );
    }
    if let Some(now) = &i.volume_cipher {
        for c in &i.other_ciphers {
            push(
                format!("volume cipher {} instead of {now}", c.name),
                cipher(i, c),
            );
        }
    }
    if let Some(core) = i.irq_core_shared_with_smbd {
        push(
            format!("the NIC's interrupts moved off CPU{core}, smbd's only core"),
            irq_moved(i, core),
        );
    }
    if let Some(mbit) = i.link_mbit_per_sec {
        push(
            format!("a link faster than {mbit} Mbit/s"),
            faster_link(i, mbit),
        );
    }
    out
}

/// Another cipher: dm-crypt's cost and the crypto stage's ceiling both change.
fn cipher(i: &Inputs, c: &Cipher) -> Option<(f64, String)> {
    let others: Vec<Stage> = i
        .others
        .iter()
        .map(|s| {
            if s.name == "crypto" {
                Stage {
                    ceiling_bytes_per_sec: Some(c.bytes_per_sec),
                    ..s.clone()
                }
            } else {
                s.clone()
            }
        })
        .collect();
    let stage = format!(
        "{} at {}-byte sectors: crypto stage {}",
        c.name,
        c.request_bytes,
        mb(c.bytes_per_sec)
    );
    let cost = path_model::crypto_cost(&c.name, c.bytes_per_sec, c.request_bytes);
    let cpu = i
        .costs
        .iter()
        .any(|k| k.stage == "kcryptd")
        .then(|| {
            path_model::with_change(
                &i.costs,
                i.cores,
                &Change::Stage {
                    stage: "kcryptd".into(),
                    cost: cost.clone(),
                },
            )
        })
        .flatten()
        .map(|k| {
            (
                k.bytes_per_sec,
                format!(
                    "{stage}, kcryptd {:.2} ns/B; {}",
                    cost.as_ref().map_or(0.0, |c| c.ns_per_byte),
                    k.arithmetic
                ),
            )
        });
    match cpu {
        Some(c) => held_down(Some(c), &others),
        None => held_down(None, &others).map(|(v, a)| (v, format!("{stage}; {a}"))),
    }
}

/// The softirq off smbd's core: today both share it, one core for the two;
/// moved, each has its own and the model's usual ceiling holds.
fn irq_moved(i: &Inputs, core: u32) -> Option<(f64, String)> {
    let softirq = i.costs.iter().find(|c| c.stage == "softirq")?;
    let smbd = i.costs.iter().find(|c| c.stage == "smbd")?;
    let shared = 1e9 / (softirq.ns_per_byte + smbd.ns_per_byte);
    let after = path_model::cpu_ceiling(&i.costs, i.cores)?;
    held_down(
        Some((
            after.bytes_per_sec,
            format!(
                "now softirq and smbd share CPU{core}: 1 core / ({:.1} + {:.1} ns/B) = {}; \
                 apart: {}",
                softirq.ns_per_byte,
                smbd.ns_per_byte,
                mb(shared),
                after.arithmetic
            ),
        )),
        &i.others,
    )
}

/// The wire stage at the next standard speed's TCP goodput.
fn faster_link(i: &Inputs, mbit: u64) -> Option<(f64, String)> {
    let next = *LINK_SPEEDS.iter().find(|s| **s > mbit)?;
    let wire = path_model::wire_goodput(next);
    let mut seen = false;
    let others: Vec<Stage> = i
        .others
        .iter()
        .map(|s| {
            if s.name == "network" {
                seen = true;
                Stage {
                    ceiling_bytes_per_sec: Some(wire),
                    ..s.clone()
                }
            } else {
                s.clone()
            }
        })
        .collect();
    if !seen {
        return None;
    }
    let link = format!("{next} Mbit/s x 1448/1538 = {}", mb(wire));
    let cpu = path_model::cpu_ceiling(&i.costs, i.cores).map(|c| (c.bytes_per_sec, c.arithmetic));
    held_down(cpu, &others).map(|(v, a)| (v, format!("wire {link}; {a}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::path_model::tests::cost;

    fn stage(name: &str, ceiling: f64) -> Stage {
        Stage {
            name: name.into(),
            ceiling_bytes_per_sec: Some(ceiling),
            basis: "literal".into(),
        }
    }

    fn find<'w>(w: &'w [WhatIf], change: &str) -> &'w WhatIf {
        w.iter()
            .find(|w| w.change.starts_with(change))
            .unwrap_or_else(|| panic!("no what-if '{change}' in {w:?}"))
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 0.05e6
    }

    /// The Pogoplug: one core, gigabit, a LUKS volume; a Samba write measured
    /// at 26 MiB/s with its server-side costs and an encrypted run.
    fn pogoplug() -> Inputs {
        Inputs {
            costs: vec![
                cost("softirq", 9.1, true),
                cost("smbd", 12.4, true),
                cost("kcryptd", 14.0, false),
                cost("kworker", 2.2, false),
            ],
            cores: 1.0,
            others: vec![
                stage("network", path_model::wire_goodput(1000)),
                stage("crypto", 71.4e6),
                stage("storage", 100e6),
            ],
            smb_encrypted: vec![
                cost("softirq", 9.1, true),
                cost("smbd", 41.0, true),
                cost("kcryptd", 14.0, false),
                cost("kworker", 2.2, false),
            ],
            smb_encrypted_scale: None,
            volume_cipher: Some("aes-xts-plain64".into()),
            other_ciphers: vec![Cipher {
                name: "xchacha12,aes-adiantum-plain64".into(),
                bytes_per_sec: 200e6,
                request_bytes: 512,
            }],
            irq_core_shared_with_smbd: None,
            link_mbit_per_sec: Some(1000),
        }
    }

    #[test]
    fn pogoplug_one_core_has_no_core_what_ifs_and_the_link_does_not_help() {
        let w = predict(&pogoplug());
        assert!(w.iter().all(|w| !w.change.contains("core")), "{w:?}");
        // A faster link leaves the one core at 1e9 / 37.7 = 26.5 MB/s.
        let link = find(&w, "a link faster than 1000");
        assert!(close(link.predicted_bytes_per_sec, 26.5e6), "{link:?}");
        assert!(
            link.arithmetic
                .starts_with("wire 2500 Mbit/s x 1448/1538 = 294.2 MB/s; 1 core"),
            "{}",
            link.arithmetic
        );
    }

    #[test]
    fn pogoplug_smb_encryption_on_costs_smbd_more() {
        let w = predict(&pogoplug());
        let enc = find(&w, "SMB encryption on");
        // 1 core / (9.1 + 41.0 + 14.0 + 2.2) = 15.1 MB/s.
        assert!(close(enc.predicted_bytes_per_sec, 15.08e6), "{enc:?}");
        assert!(
            enc.arithmetic
                .contains("1 core / (9.1 + 41.0 + 14.0 + 2.2 ns/B) = 15.1 MB/s"),
            "{}",
            enc.arithmetic
        );
    }

    #[test]
    fn pogoplug_adiantum_replaces_kcryptd_cost_and_the_crypto_ceiling() {
        let w = predict(&pogoplug());
        let a = find(&w, "volume cipher xchacha12,aes-adiantum-plain64");
        // kcryptd 1e9 / 200 MB/s = 5 ns/B: 1 core / (9.1 + 12.4 + 2.2 + 5.0) = 34.8 MB/s.
        assert!(close(a.predicted_bytes_per_sec, 34.84e6), "{a:?}");
        assert!(
            a.arithmetic.contains("kcryptd 5.00 ns/B"),
            "{}",
            a.arithmetic
        );
        assert!(
            a.arithmetic.contains("at 512-byte sectors"),
            "{}",
            a.arithmetic
        );
    }

    /// The Pi 2: four slow cores, no AES instructions, 100 Mbit/s. Costs from
    /// bench net (this box sending) and bench crypto, no bench smb sampling.
    fn pi2() -> Inputs {
        Inputs {
            costs: vec![
                cost("softirq", 20.4, true),
                cost("tcp", 40.8, true),
                cost("kcryptd", 68.5, false),
            ],
            cores: 4.0,
            others: vec![
                stage("network", path_model::wire_goodput(100)),
                stage("crypto", 14.6e6),
                stage("storage", 33e6),
            ],
            volume_cipher: Some("aes-xts-plain64".into()),
            other_ciphers: vec![Cipher {
                name: "xchacha12,aes-adiantum-plain64".into(),
                bytes_per_sec: 55e6,
                request_bytes: 512,
            }],
            link_mbit_per_sec: Some(100),
            ..Inputs::default()
        }
    }

    #[test]
    fn pi2_faster_link_is_then_held_by_crypto() {
        let w = predict(&pi2());
        let link = find(&w, "a link faster than 100");
        // Gigabit's 117.7 MB/s is above the 14.6 MB/s AES-XTS decrypt.
        assert!(close(link.predicted_bytes_per_sec, 14.6e6), "{link:?}");
        assert!(
            link.arithmetic
                .starts_with("wire 1000 Mbit/s x 1448/1538 = 117.7 MB/s")
        );
        assert!(
            link.arithmetic
                .contains("another stage stays lower at 14.6 MB/s")
        );
    }

    #[test]
    fn pi2_adiantum_then_the_wire_binds_and_one_core_binds_harder() {
        let w = predict(&pi2());
        let a = find(&w, "volume cipher xchacha12");
        // Crypto 55 MB/s now; the 100 Mbit/s wire (11.8 MB/s) is the floor.
        assert!(close(a.predicted_bytes_per_sec, 11.77e6), "{a:?}");
        // One core: 1e9 / (20.4 + 40.8 + 68.5) = 7.7 MB/s, below the wire.
        let one = find(&w, "only one core");
        assert!(close(one.predicted_bytes_per_sec, 7.71e6), "{one:?}");
        // Three cores: tcp single-threaded at 1e9 / 40.8 = 24.5 MB/s; all three
        // 3e9 / 129.7 = 23.1 MB/s; the wire still lower.
        let fewer = find(&w, "one core fewer");
        assert!(close(fewer.predicted_bytes_per_sec, 11.77e6), "{fewer:?}");
        assert!(w.iter().all(|w| !w.change.starts_with("SMB")), "{w:?}");
    }

    #[test]
    fn irq_moved_off_smbds_core_separates_softirq_and_smbd() {
        let i = Inputs {
            costs: vec![cost("softirq", 9.1, true), cost("smbd", 12.4, true)],
            cores: 4.0,
            irq_core_shared_with_smbd: Some(0),
            ..Inputs::default()
        };
        let w = predict(&i);
        let m = find(&w, "the NIC's interrupts moved off CPU0");
        // Apart: smbd alone 1e9 / 12.4 = 80.6 MB/s; together 1e9 / 21.5 = 46.5.
        assert!(close(m.predicted_bytes_per_sec, 80.65e6), "{m:?}");
        assert!(
            m.arithmetic.starts_with(
                "now softirq and smbd share CPU0: 1 core / (9.1 + 12.4 ns/B) = 46.5 MB/s"
            ),
            "{}",
            m.arithmetic
        );
    }

    /// From the Pi 2's snapshot and bench crypto's figures: the other ciphers
    /// at the volume's 512-byte sectors, the fastest key of each, this direction.
    #[test]
    fn inputs_gather_other_ciphers_at_the_volumes_sector_size() {
        use crate::advise::bottleneck::CipherFigure;
        let snap = crate::advise::test_support::snapshot_of("rpi2-luks");
        let fig = |cipher: &str, bits: u32, size: u32, dec: f64| CipherFigure {
            cipher: cipher.into(),
            key_bits: bits,
            path: "kernel".into(),
            encrypt_bytes_per_sec: dec * 1.1,
            decrypt_bytes_per_sec: dec,
            request_bytes: size,
            measured_by: None,
        };
        let adiantum = "xchacha12,aes-adiantum-plain64";
        let m = Measurements {
            crypto: vec![
                fig("aes-xts-plain64", 512, 512, 9.8e6),
                fig(adiantum, 256, 4096, 60e6),
                fig(adiantum, 256, 512, 40e6),
                fig("aes-cbc-essiv:sha256", 128, 512, 11e6),
                fig("aes-cbc-essiv:sha256", 256, 512, 10e6),
            ],
            ..Default::default()
        };
        let crypt = snap
            .storage
            .data()
            .and_then(|s| s.dm_devices.iter().find_map(|d| d.crypt.as_ref()));
        let service = ServiceFigure {
            service: "smb".into(),
            share: "nas".into(),
            server_local: true,
            read_bytes_per_sec: None,
            write_bytes_per_sec: None,
            read_costs: vec![],
            write_costs: vec![],
            encrypted_read_costs: vec![cost("smbd", 41.0, true)],
            encrypted_write_costs: vec![],
            target: None,
            read_load: None,
            write_load: None,
            cores: None,
            share_path: None,
            // The encrypted copy's threads counted 4100 ms (41 ns/B x 100 MB)
            // on a CPU seen busy 2050 ms: half of it was the host's.
            encrypted_read_load: Some(path_model::CoreLoad {
                busy_by_cpu: vec![crate::bench::smb::server::CpuBusy {
                    cpu: 0,
                    busy_ns: 2_050_000_000,
                }],
                elapsed_ns: 4_100_000_000,
                bytes: 100_000_000,
            }),
            encrypted_write_load: None,
        };
        let i = inputs(&Path {
            snapshot: &snap,
            m: &m,
            service: &service,
            costs: &[],
            cores: 4.0,
            smbd_core: None,
            others: &[],
            write: false,
            crypt,
        });
        assert_eq!(i.volume_cipher.as_deref(), Some("aes-xts-plain64"));
        let others: Vec<(&str, f64, u32)> = i
            .other_ciphers
            .iter()
            .map(|c| (c.name.as_str(), c.bytes_per_sec, c.request_bytes))
            .collect();
        assert_eq!(
            others,
            vec![(adiantum, 40e6, 512), ("aes-cbc-essiv:sha256", 11e6, 512)]
        );
        assert_eq!(i.smb_encrypted.len(), 1);
        assert!((i.smb_encrypted[0].ns_per_byte - 20.5).abs() < 1e-9);
        // 4 cores, but smbd is single-threaded: 1e9 / 20.5 = 48.8 MB/s.
        let enc = predict(&i)
            .into_iter()
            .find(|w| w.change == "SMB encryption on")
            .unwrap();
        assert!(close(enc.predicted_bytes_per_sec, 48.78e6), "{enc:?}");
        assert!(
            enc.arithmetic.ends_with(
                "(costs scaled by 0.50: the stages counted 4100 ms, the CPUs were busy 2050 ms)"
            ),
            "{}",
            enc.arithmetic
        );
        assert_eq!(i.link_mbit_per_sec, Some(100));
        // Nothing says where smbd may run, so no IRQ what-if.
        assert_eq!(i.irq_core_shared_with_smbd, None);
    }

    /// The RK3399 takes all of eth0's interrupts on CPU0.
    #[test]
    fn the_nic_irq_core_is_shared_only_when_it_is_smbds() {
        let snap = crate::advise::test_support::snapshot_of("rk3399-raid5");
        assert_eq!(irq_shared_with(&snap, Some(0)), Some(0));
        assert_eq!(irq_shared_with(&snap, Some(3)), None);
        assert_eq!(irq_shared_with(&snap, None), None);
    }

    #[test]
    fn the_client_on_this_box_can_move_away() {
        let i = Inputs {
            costs: vec![
                cost("smbd", 10.0, true),
                cost("client (this box)", 15.0, true),
            ],
            cores: 1.0,
            ..Inputs::default()
        };
        let w = predict(&i);
        assert!(close(
            find(&w, "the client on another").predicted_bytes_per_sec,
            100e6
        ));
    }
}
