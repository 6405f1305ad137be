//! dm-crypt rules: CESA cannot do XTS, and 512-byte crypt sectors on 4K disks.
//! (CPUs without AES are covered by `cpu-without-aes` in cpu.rs.)

use super::measured::{cipher_speeds, kernel_cipher};
use super::{Change, Context, Finding, Risk, Rule, RuleInfo, Severity};
use crate::probe::dm::Crypt;

pub static RULES: &[&Rule] = &[&CESA_NO_XTS, &CRYPT_SECTOR_512];

/// (dm device, its crypt parameters) for every open dm-crypt volume.
fn volumes<'a>(ctx: &'a Context) -> Vec<(&'a str, &'a Crypt, &'a [String])> {
    ctx.snapshot
        .storage
        .data()
        .map(|s| {
            s.dm_devices
                .iter()
                .filter_map(|d| Some((d.device.as_str(), d.crypt.as_ref()?, d.slaves.as_slice())))
                .collect()
        })
        .unwrap_or_default()
}

fn has_cesa(ctx: &Context) -> bool {
    ctx.snapshot.kernel_crypto.data().is_some_and(|k| {
        k.algorithms.iter().any(|a| {
            a.drivers
                .iter()
                .any(|d| d.module == "marvell_cesa" || d.driver.starts_with("mv-"))
        })
    })
}

static CESA_NO_XTS: Rule = Rule {
    info: RuleInfo {
        id: "cesa-lacks-xts",
        area: "crypto",
        title: "Marvell CESA cannot accelerate this aes-xts volume",
        severity: Severity::Notice,
        risk: Risk::AdviceOnly,
        checks: "The kernel has the marvell_cesa engine and a dm-crypt volume uses aes-xts. \
                 CESA implements ECB/CBC but not XTS, so the volume runs on the CPU.",
        references: &[
            "Documentation/devicetree/bindings/crypto/marvell-cesa.txt",
            "https://docs.kernel.org/filesystems/fscrypt.html (AES-128-CBC for CESA)",
        ],
    },
    evaluate: |info, ctx| {
        if !has_cesa(ctx) {
            return Vec::new();
        }
        volumes(ctx)
            .into_iter()
            .filter(|(_, c, _)| c.cipher.starts_with("aes-xts"))
            .map(|(dev, c, _)| {
                let m = ctx.measurements;
                let xts = kernel_cipher(m, &c.cipher, c.key_bits);
                let cbc = kernel_cipher(m, "aes-cbc-essiv:sha256", None);
                let figures = match (xts, cbc) {
                    (None, None) => "Compare with 'nastune bench crypto'.".to_string(),
                    _ => format!(
                        "Through the kernel at 4 KiB requests: {}.",
                        xts.into_iter()
                            .chain(cbc)
                            .map(cipher_speeds)
                            .collect::<Vec<_>>()
                            .join("; ")
                    ),
                };
                let mut finding = Finding::of(
                    info,
                    format!("{dev} uses {} which CESA cannot offload", c.cipher),
                    format!(
                        "CESA lacks XTS, so your volume does not use the engine: xts(aes) \
                         resolves to a CPU driver. aes-cbc-essiv:sha256 would run on CESA but \
                         is weaker (CBC malleability, no per-sector tweak); for new volumes \
                         Adiantum is the usual choice on such CPUs. {figures} Changing the \
                         cipher means re-encrypting."
                    ),
                )
                .evidence(format!("{dev} cipher"), &c.cipher)
                .evidence("crypto engine", "marvell_cesa (ecb/cbc only)");
                if let Some(f) = xts {
                    finding = finding.evidence(format!("{} measured", f.cipher), cipher_speeds(f));
                }
                finding
                    .setting(format!("dm-crypt:{dev}:cipher"))
                    .change(Change::AdviceOnly {
                        action: "new volumes: cryptsetup luksFormat --cipher \
                             xchacha12,aes-adiantum-plain64, or aes-cbc-essiv:sha256 to use \
                             CESA (weaker)"
                            .into(),
                    })
            })
            .collect()
    },
};

/// Physical sector size of the disk under a crypt volume's first slave.
fn physical_sector(ctx: &Context, slave: &str) -> Option<u64> {
    let storage = ctx.snapshot.storage.data()?;
    let dev = storage.devices.iter().find(|d| d.name == slave)?;
    let disk = dev
        .partition
        .as_ref()
        .map_or(dev.name.as_str(), |p| p.disk.as_str());
    storage
        .devices
        .iter()
        .find(|d| d.name == disk)?
        .queue
        .as_ref()?
        .physical_sector_bytes
}

static CRYPT_SECTOR_512: Rule = Rule {
    info: RuleInfo {
        id: "crypt-sector-512-on-4k",
        area: "crypto",
        title: "512-byte encryption sectors on a 4 KiB-sector disk",
        severity: Severity::Notice,
        risk: Risk::AdviceOnly,
        checks: "A dm-crypt volume encrypts in 512-byte sectors while its disk has 4096-byte \
                 physical sectors: 8× the cipher calls and read-modify-write risk.",
        references: &[
            "cryptsetup(8) luksFormat --sector-size",
            "https://docs.kernel.org/admin-guide/device-mapper/dm-crypt.html",
        ],
    },
    evaluate: |info, ctx| {
        volumes(ctx)
            .into_iter()
            .filter(|(_, c, _)| c.sector_bytes == 512)
            .filter_map(|(dev, c, slaves)| {
                let slave = slaves.first()?;
                let phys = physical_sector(ctx, slave).filter(|p| *p >= 4096)?;
                let calls = phys / c.sector_bytes;
                Some(
                    Finding::of(
                        info,
                        format!("{dev} encrypts 512-byte sectors on a {phys}-byte-sector disk"),
                        format!(
                            "Each {phys}-byte physical sector is {phys} ÷ 512 = {calls} \
                             separate cipher operations, each with its own IV setup; with \
                             --sector-size 4096 it is one. LUKS2 picks 4096 for new volumes \
                             on such disks since cryptsetup 2.4; an existing volume changes \
                             only by re-encryption (cryptsetup reencrypt --sector-size 4096)."
                        ),
                    )
                    .evidence(format!("{dev} crypt sector bytes"), c.sector_bytes)
                    .evidence(format!("{slave} physical sector bytes"), phys)
                    .setting(format!("dm-crypt:{dev}:sector_size"))
                    .change(Change::AdviceOnly {
                        action: "for new LUKS2 volumes: cryptsetup luksFormat --sector-size 4096"
                            .into(),
                    }),
                )
            })
            .collect()
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::test_support::{run_rule as run, snapshot_of};
    use crate::probe::Outcome;

    #[test]
    fn sector_size_notice_on_rpi2_only() {
        let f = run(&CRYPT_SECTOR_512, &snapshot_of("rpi2-luks"));
        assert_eq!(f.len(), 1);
        assert!(
            f[0].rationale.contains("4096 ÷ 512 = 8"),
            "{}",
            f[0].rationale
        );
        assert!(
            run(&CRYPT_SECTOR_512, &snapshot_of("rk3399-raid5")).is_empty(),
            "4096 already"
        );
    }

    #[test]
    fn cesa_notice_needs_cesa_and_xts() {
        let pogo = snapshot_of("pogoplug-v4");
        assert!(
            run(&CESA_NO_XTS, &pogo).is_empty(),
            "no crypt volume on the pogoplug"
        );
        // The pogoplug's kernel with the rpi2's LUKS volume stacked on it.
        let mut snap = pogo.clone();
        let rpi = snapshot_of("rpi2-luks");
        snap.storage = rpi.storage.clone();
        let f = run(&CESA_NO_XTS, &snap);
        assert_eq!(f.len(), 1);
        assert!(f[0].rationale.contains("CESA lacks XTS"));
        assert!(
            f[0].rationale
                .contains("Compare with 'nastune bench crypto'")
        );
        // Measured: the volume's cipher on the CPU against CBC on the engine.
        let m = crate::advise::Measurements {
            crypto: vec![
                crate::advise::measured::kernel_figure("aes-xts-plain64", 512, 15e6, 14e6),
                crate::advise::measured::kernel_figure("aes-cbc-essiv:sha256", 256, 60e6, 61e6),
            ],
            ..Default::default()
        };
        let measured = crate::advise::test_support::run_measured(&CESA_NO_XTS, &snap, &m);
        assert!(
            measured[0].rationale.contains(
                "Through the kernel at 4 KiB requests: aes-xts-plain64 (512-bit key) 15.0 MB/s \
                 encrypt, 14.0 MB/s decrypt, measured by bench crypto run 3; \
                 aes-cbc-essiv:sha256 (256-bit key) 60.0 MB/s"
            ),
            "{}",
            measured[0].rationale
        );
        assert!(run(&CESA_NO_XTS, &rpi).is_empty(), "no CESA on the Pi");
        if let Outcome::Ok { data } = &mut snap.storage {
            for d in &mut data.dm_devices {
                if let Some(c) = d.crypt.as_mut() {
                    c.cipher = "aes-cbc-essiv:sha256".into();
                }
            }
        }
        assert!(run(&CESA_NO_XTS, &snap).is_empty(), "cbc runs on CESA");
    }
}
