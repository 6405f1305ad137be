//! CPU rules: frequency governors and AES instructions.

use super::measured::{cipher_speeds, kernel_cipher};
use super::{Change, Finding, Risk, Rule, RuleInfo, Severity};

pub static RULES: &[&Rule] = &[&GOVERNOR_POWERSAVE, &NO_AES];

/// Drivers whose `powersave` is a dynamic governor, not "stay at the minimum".
const DYNAMIC_POWERSAVE_DRIVERS: &[&str] = &["intel_pstate", "amd-pstate-epp", "intel_cpufreq"];

static GOVERNOR_POWERSAVE: Rule =
    Rule {
        info: RuleInfo {
            id: "cpu-governor-powersave",
            area: "cpu",
            title: "CPU pinned to its lowest frequency by the powersave governor",
            severity: Severity::Warning,
            risk: Risk::RuntimeSafe,
            checks: "A cpufreq policy uses the powersave governor with a driver where that means \
                 'always the minimum frequency' (not intel_pstate/amd-pstate-epp).",
            references: &["https://docs.kernel.org/admin-guide/pm/cpufreq.html"],
        },
        evaluate: |info, ctx| {
            let Some(cpu) = ctx.snapshot.cpu.data() else {
                return Vec::new();
            };
            cpu.frequency_policies
            .iter()
            .filter(|p| p.governor.as_deref() == Some("powersave"))
            .filter(|p| {
                !p.driver
                    .as_deref()
                    .is_some_and(|d| DYNAMIC_POWERSAVE_DRIVERS.contains(&d))
            })
            .map(|p| {
                let better = ["schedutil", "ondemand", "performance"]
                    .into_iter()
                    .find(|g| p.available_governors.iter().any(|a| a == g))
                    .unwrap_or("schedutil");
                let arithmetic = match (p.min_khz, p.max_khz) {
                    (Some(min), Some(max)) if max > 0 => format!(
                        "powersave holds cpus {} at {} kHz, {:.0}% of the {} kHz they can run, so \
                         every checksum, cipher and copy takes {:.1}x as long as it needs to.",
                        p.cpus,
                        min,
                        min as f64 * 100.0 / max as f64,
                        max,
                        max as f64 / min.max(1) as f64
                    ),
                    _ => format!("powersave holds cpus {} at their minimum frequency.", p.cpus),
                };
                Finding::of(
                    info,
                    format!("{} uses the powersave governor", p.name),
                    format!(
                        "{arithmetic} {better} raises the clock under load and lowers it when idle."
                    ),
                )
                .evidence(format!("{} governor", p.name), "powersave")
                .evidence(format!("{} driver", p.name), p.driver.as_deref().unwrap_or("?"))
                .setting(format!(
                    "sysfs:devices/system/cpu/cpufreq/{}/scaling_governor",
                    p.name
                ))
                .change(Change::SysfsAttribute {
                    path: format!("devices/system/cpu/cpufreq/{}/scaling_governor", p.name),
                    value: better.to_string(),
                })
            })
            .collect()
        },
    };

static NO_AES: Rule = Rule {
    info: RuleInfo {
        id: "cpu-without-aes",
        area: "crypto",
        title: "No AES instructions: prefer Adiantum for new encrypted volumes",
        severity: Severity::Notice,
        risk: Risk::AdviceOnly,
        checks: "The CPU lacks AES instructions (x86 AES-NI, ARMv8 crypto extensions), so \
                 dm-crypt's default aes-xts runs in software.",
        references: &[
            "https://docs.kernel.org/filesystems/fscrypt.html#adiantum-mode",
            "cryptsetup(8): --cipher xchacha12,aes-adiantum-plain64",
        ],
    },
    evaluate: |info, ctx| {
        let Some(cpu) = ctx.snapshot.cpu.data() else {
            return Vec::new();
        };
        if cpu.has_aes {
            return Vec::new();
        }
        let m = ctx.measurements;
        let measured = kernel_cipher(m, "aes-xts-plain64", Some(512)).zip(kernel_cipher(
            m,
            "xchacha12,aes-adiantum-plain64",
            None,
        ));
        let figures = match measured {
            Some((aes, adiantum)) => format!(
                "Through the kernel at dm-crypt's 4 KiB requests: {}; {} ({:.1}x the \
                 aes-xts decrypt speed).",
                cipher_speeds(aes),
                cipher_speeds(adiantum),
                adiantum.decrypt_bytes_per_sec / aes.decrypt_bytes_per_sec.max(1.0)
            ),
            None => "Run 'nastune bench crypto' to see both figures on this box.".to_string(),
        };
        let mut finding = Finding::of(
            info,
            format!(
                "{} has no AES instructions",
                cpu.model.as_deref().unwrap_or("this CPU")
            ),
            format!(
                "Without AES instructions every encrypted sector goes through table-based \
                 software AES; Adiantum (XChaCha12 + one AES block per sector) was designed for \
                 such CPUs and is typically several times faster there. Changing the cipher of \
                 an existing volume means re-encrypting it, so this is for new volumes only. \
                 {figures}"
            ),
        )
        .evidence("cpu model", cpu.model.as_deref().unwrap_or("?"))
        .evidence("aes flag", "absent");
        if let Some((aes, adiantum)) = measured {
            finding = finding
                .evidence("aes-xts measured", cipher_speeds(aes))
                .evidence("adiantum measured", cipher_speeds(adiantum));
        }
        vec![
            finding.change(Change::AdviceOnly {
                action: "for new LUKS volumes: cryptsetup luksFormat --cipher \
                     xchacha12,aes-adiantum-plain64 --key-size 256"
                    .into(),
            }),
        ]
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::Context;
    use crate::advise::test_support::snapshot_of;
    use crate::probe::Outcome;

    fn run(rule: &Rule, snap: &crate::probe::Snapshot) -> Vec<Finding> {
        rule.run(&Context::unmeasured(snap))
    }

    #[test]
    fn powersave_fires_only_where_it_pins_the_clock() {
        let mut snap = snapshot_of("pogoplug-v4");
        assert!(
            run(&GOVERNOR_POWERSAVE, &snap).is_empty(),
            "ondemand is fine"
        );
        if let Outcome::Ok { data } = &mut snap.cpu {
            data.frequency_policies[0].governor = Some("powersave".into());
        }
        let f = run(&GOVERNOR_POWERSAVE, &snap);
        assert_eq!(f.len(), 1);
        assert!(f[0].rationale.contains("50%"), "{}", f[0].rationale);
        assert!(f[0].rationale.contains("2.0x"), "{}", f[0].rationale);
        assert_eq!(
            f[0].recommendation[0],
            Change::SysfsAttribute {
                path: "devices/system/cpu/cpufreq/policy0/scaling_governor".into(),
                value: "schedutil".into()
            }
        );
        if let Outcome::Ok { data } = &mut snap.cpu {
            data.frequency_policies[0].driver = Some("intel_pstate".into());
        }
        assert!(
            run(&GOVERNOR_POWERSAVE, &snap).is_empty(),
            "intel_pstate powersave is dynamic"
        );
    }

    #[test]
    fn adiantum_advice_on_cpus_without_aes() {
        assert_eq!(run(&NO_AES, &snapshot_of("pogoplug-v4")).len(), 1);
        assert_eq!(run(&NO_AES, &snapshot_of("rpi2-luks")).len(), 1);
        assert!(run(&NO_AES, &snapshot_of("rk3399-raid5")).is_empty());
    }

    #[test]
    fn adiantum_advice_quotes_the_measured_ciphers() {
        use crate::advise::measured::kernel_figure;
        let snap = snapshot_of("pogoplug-v4");
        let unmeasured = run(&NO_AES, &snap);
        assert!(
            unmeasured[0]
                .rationale
                .contains("Run 'nastune bench crypto'")
        );
        let m = crate::advise::Measurements {
            crypto: vec![
                kernel_figure("aes-xts-plain64", 256, 20e6, 20e6),
                kernel_figure("aes-xts-plain64", 512, 15e6, 14e6),
                kernel_figure("xchacha12,aes-adiantum-plain64", 256, 45e6, 42e6),
            ],
            ..Default::default()
        };
        let f = crate::advise::test_support::run_measured(&NO_AES, &snap, &m);
        // The 512-bit key (the LUKS2 default) is the one compared: 42 / 14 = 3.0x.
        assert!(
            f[0].rationale.contains(
                "aes-xts-plain64 (512-bit key) 15.0 MB/s encrypt, 14.0 MB/s decrypt, measured \
                 by bench crypto run 3; xchacha12,aes-adiantum-plain64 (256-bit key) 45.0 MB/s \
                 encrypt, 42.0 MB/s decrypt, measured by bench crypto run 3 (3.0x"
            ),
            "{}",
            f[0].rationale
        );
        assert!(!f[0].rationale.contains("Run 'nastune bench crypto'"));
    }
}
