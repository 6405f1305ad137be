//! SMART rules: cable/bridge CRC errors, sector problems, failed self-assessment,
//! NVMe health.

use super::{Change, Context, Finding, Risk, Rule, RuleInfo, Severity};
use crate::probe::block::BlockDevice;
use crate::probe::smart::{DiskHealth, identity_mismatch};

pub static RULES: &[&Rule] = &[
    &IDENTITY_MISMATCH,
    &CRC_ERRORS,
    &SECTOR_PROBLEMS,
    &FAILED,
    &NVME_HEALTH,
];

const SMARTCTL_REF: &str = "smartctl(8); https://www.smartmontools.org/wiki/FAQ";

/// Disks whose SMART data was read.
fn disks<'a>(ctx: &'a Context) -> Vec<(&'a str, &'a DiskHealth)> {
    ctx.snapshot
        .smart
        .data()
        .map(|s| {
            s.devices
                .iter()
                .filter_map(|d| Some((d.name.as_str(), d.health.data()?)))
                .collect()
        })
        .unwrap_or_default()
}

fn raw(h: &DiskHealth, id: u32) -> Option<u64> {
    h.ata_attributes
        .iter()
        .find(|a| a.id == id)
        .map(|a| a.raw_value)
}

fn model(h: &DiskHealth) -> &str {
    h.model.as_deref().unwrap_or("?")
}

/// The block device the kernel knows by `name`.
fn kernel_disk<'a>(ctx: &'a Context, name: &str) -> Option<&'a BlockDevice> {
    ctx.snapshot
        .storage
        .data()?
        .devices
        .iter()
        .find(|d| d.name == name)
}

/// Why the SMART answer for `name` is not the disk the kernel sees, if it is not.
pub(super) fn smart_mismatch(ctx: &Context, name: &str, h: &DiskHealth) -> Option<String> {
    identity_mismatch(kernel_disk(ctx, name)?, h)
}

static IDENTITY_MISMATCH: Rule = Rule {
    info: RuleInfo {
        id: "smart-identity-mismatch",
        area: "smart",
        title: "SMART describes another disk than the kernel sees",
        severity: Severity::Warning,
        risk: Risk::AdviceOnly,
        checks: "The serial or size smartctl reports for a device differs from sysfs's (size \
                 by more than 1 %): the SMART data, and every finding drawn from it, may \
                 belong to another disk.",
        references: &[SMARTCTL_REF],
    },
    evaluate: |info, ctx| {
        disks(ctx)
            .into_iter()
            .filter_map(|(name, h)| {
                let kernel = kernel_disk(ctx, name)?;
                let why = identity_mismatch(kernel, h)?;
                let sysfs_model = [kernel.vendor.as_deref(), kernel.model.as_deref()]
                    .into_iter()
                    .flatten()
                    .map(str::trim)
                    .collect::<Vec<_>>()
                    .join(" ");
                Some(
                    Finding::of(
                        info,
                        format!(
                            "{name}: SMART says {} but the kernel sees {sysfs_model}",
                            model(h)
                        ),
                        format!(
                            "{why}. SMART data for {name} came through {} and names \
                             another disk than the one the kernel reports, so its health \
                             figures (and findings drawn from them, such as the SMR model \
                             check) may not be this disk's. A USB bridge or enclosure can \
                             answer for the wrong drive, or the data was captured on \
                             another machine. Compare 'smartctl -i /dev/{name}' with \
                             'lsblk -o NAME,SIZE,MODEL,SERIAL' before trusting either.",
                            h.device_type
                        ),
                    )
                    .evidence(format!("{name} SMART model"), model(h))
                    .evidence(format!("{name} sysfs model"), &sysfs_model)
                    .evidence(format!("{name} mismatch"), &why)
                    .setting(format!("smart:{name}:identity"))
                    .change(Change::AdviceOnly {
                        action: format!(
                            "compare 'smartctl -i /dev/{name}' with 'lsblk -o \
                             NAME,SIZE,MODEL,SERIAL /dev/{name}'"
                        ),
                    }),
                )
            })
            .collect()
    },
};

static CRC_ERRORS: Rule = Rule {
    info: RuleInfo {
        id: "smart-crc-errors",
        area: "smart",
        title: "Interface CRC errors: cable, connector or USB bridge",
        severity: Severity::Warning,
        risk: Risk::AdviceOnly,
        checks: "ATA attribute 199 (UDMA_CRC_Error_Count) is above 0: data was corrupted on \
                 the link and retried. The disk itself is usually fine.",
        references: &[SMARTCTL_REF],
    },
    evaluate: |info, ctx| {
        disks(ctx)
            .into_iter()
            .filter_map(|(name, h)| {
                let n = raw(h, 199).filter(|n| *n > 0)?;
                Some(
                    Finding::of(
                        info,
                        format!("{name} ({}) has {n} interface CRC errors", model(h)),
                        format!(
                            "Attribute 199 counts transfers that arrived corrupted between the \
                             disk and the controller: {n} so far. The counter never resets; if \
                             it keeps growing, replace the SATA cable or the USB bridge/cable \
                             and check the power supply. It says nothing bad about the platters."
                        ),
                    )
                    .evidence(format!("{name} UDMA_CRC_Error_Count"), n)
                    .setting(format!("smart:{name}:199"))
                    .change(Change::AdviceOnly {
                        action: "reseat or replace the data cable / USB bridge; note the \
                                 count and re-check that it stops growing"
                            .into(),
                    }),
                )
            })
            .collect()
    },
};

static SECTOR_PROBLEMS: Rule = Rule {
    info: RuleInfo {
        id: "smart-sector-problems",
        area: "smart",
        title: "Reallocated, pending or uncorrectable sectors",
        severity: Severity::Warning,
        risk: Risk::AdviceOnly,
        checks: "ATA 5 (reallocated) > 0 is a warning; 197 (pending) or 198 (offline \
                 uncorrectable) > 0 is critical: those sectors cannot be read now.",
        references: &[SMARTCTL_REF],
    },
    evaluate: |info, ctx| {
        disks(ctx)
            .into_iter()
            .filter_map(|(name, h)| {
                let realloc = raw(h, 5).unwrap_or(0);
                let pending = raw(h, 197).unwrap_or(0);
                let offline = raw(h, 198).unwrap_or(0);
                if realloc + pending + offline == 0 {
                    return None;
                }
                let sev = if pending + offline > 0 {
                    Severity::Critical
                } else {
                    Severity::Warning
                };
                Some(
                    Finding::of(
                        info,
                        format!(
                            "{name} ({}): {realloc} reallocated, {pending} pending, {offline} \
                             uncorrectable sectors",
                            model(h)
                        ),
                        "Reallocated sectors were remapped to spares: the disk is wearing and \
                         the count should be watched. Pending and offline-uncorrectable \
                         sectors could not be read: the data in them is at risk now. Back up, \
                         run a long self-test (smartctl -t long), and on RAID run a check so \
                         md rewrites them from parity; replace the disk if counts grow.",
                    )
                    .severity(sev)
                    .evidence(format!("{name} Reallocated_Sector_Ct"), realloc)
                    .evidence(format!("{name} Current_Pending_Sector"), pending)
                    .evidence(format!("{name} Offline_Uncorrectable"), offline)
                    .setting(format!("smart:{name}:5,197,198"))
                    .change(Change::AdviceOnly {
                        action: format!("smartctl -t long /dev/{name}; back up; plan replacement"),
                    }),
                )
            })
            .collect()
    },
};

static FAILED: Rule = Rule {
    info: RuleInfo {
        id: "smart-failed",
        area: "smart",
        title: "Disk fails its SMART self-assessment",
        severity: Severity::Critical,
        risk: Risk::AdviceOnly,
        checks: "smartctl reports the overall health self-assessment as FAILED.",
        references: &[SMARTCTL_REF],
    },
    evaluate: |info, ctx| {
        disks(ctx)
            .into_iter()
            .filter(|(_, h)| h.smart_passed == Some(false))
            .map(|(name, h)| {
                Finding::of(
                    info,
                    format!("{name} ({}) failed SMART", model(h)),
                    "The drive itself predicts failure (a normalised attribute fell to its \
                     threshold, or NVMe critical warning). Copy the data off now and replace it.",
                )
                .evidence(format!("{name} smart_passed"), "false")
                .setting(format!("smart:{name}:health"))
                .change(Change::AdviceOnly {
                    action: format!("back up and replace /dev/{name}"),
                })
            })
            .collect()
    },
};

static NVME_HEALTH: Rule = Rule {
    info: RuleInfo {
        id: "nvme-health",
        area: "smart",
        title: "NVMe critical warning or media errors",
        severity: Severity::Warning,
        risk: Risk::AdviceOnly,
        checks: "NVMe critical_warning is non-zero (critical) or media_errors > 0 (warning).",
        references: &[
            SMARTCTL_REF,
            "NVM Express Base Specification, SMART / Health log",
        ],
    },
    evaluate: |info, ctx| {
        disks(ctx)
            .into_iter()
            .filter_map(|(name, h)| {
                let n = h.nvme.as_ref()?;
                if n.critical_warning == 0 && n.media_errors == 0 {
                    return None;
                }
                let sev = if n.critical_warning != 0 {
                    Severity::Critical
                } else {
                    Severity::Warning
                };
                Some(
                    Finding::of(
                        info,
                        format!(
                            "{name}: critical_warning 0x{:02x}, {} media errors",
                            n.critical_warning, n.media_errors
                        ),
                        "critical_warning bits: 0x01 spare below threshold, 0x02 temperature, \
                         0x04 reliability degraded, 0x08 read-only, 0x10 volatile backup \
                         failed. Media errors are unrecovered data-integrity errors. Back up \
                         and check 'smartctl -a'.",
                    )
                    .severity(sev)
                    .evidence(format!("{name} critical_warning"), n.critical_warning)
                    .evidence(format!("{name} media_errors"), n.media_errors)
                    .setting(format!("smart:{name}:nvme"))
                    .change(Change::AdviceOnly {
                        action: format!("back up /dev/{name} and plan replacement"),
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
    fn smart_that_names_another_disk_is_flagged() {
        // pogoplug sda: sysfs 'Seagate Expansion Desk' 3.0 TB, SMART WDC WD20EFRX 2.0 TB.
        let mut snap = snapshot_of("pogoplug-v4");
        let f = run(&IDENTITY_MISMATCH, &snap);
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].title,
            "sda: SMART says WDC WD20EFRX-68EUZN0 but the kernel sees Seagate Expansion Desk"
        );
        assert!(
            f[0].rationale
                .starts_with("size 3000592982016 B in sysfs, 2000398934016 B in SMART."),
            "{}",
            f[0].rationale
        );
        // A USB disk's sysfs serial is its bridge's: not compared.
        if let crate::probe::Outcome::Ok { data } = &mut snap.storage {
            let sda = data.devices.iter_mut().find(|d| d.name == "sda").unwrap();
            sda.size_bytes = 2_000_398_934_016;
        }
        assert!(run(&IDENTITY_MISMATCH, &snap).is_empty());
        // rk3399's SATA disks: sysfs serial WD-WX32D81ABCD1 (WD40EFZX), SMART
        // ZDH1A2B3 (ST4000VN008): the same size, another drive.
        let f = run(&IDENTITY_MISMATCH, &snapshot_of("rk3399-raid5"));
        assert_eq!(f.len(), 4);
        assert!(
            f[0].rationale
                .starts_with("serial 'WD-WX32D81ABCD1' in sysfs, 'ZDH1A2B3' in SMART"),
            "{}",
            f[0].rationale
        );
    }

    #[test]
    fn crc_errors_on_the_pogoplug_bridge() {
        let f = run(&CRC_ERRORS, &snapshot_of("pogoplug-v4"));
        assert_eq!(f.len(), 1);
        assert!(f[0].title.contains("12 interface CRC errors"));
        assert!(run(&CRC_ERRORS, &snapshot_of("rk3399-raid5")).is_empty());
    }

    #[test]
    fn reallocated_sectors_on_rk3399_sdb() {
        let mut snap = snapshot_of("rk3399-raid5");
        let f = run(&SECTOR_PROBLEMS, &snap);
        assert_eq!(f.len(), 1);
        assert!(f[0].title.starts_with("sdb"));
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(run(&SECTOR_PROBLEMS, &snapshot_of("pogoplug-v4")).is_empty());
        assert!(run(&FAILED, &snap).is_empty());
        if let Outcome::Ok { data } = &mut snap.smart
            && let Outcome::Ok { data: h } = &mut data.devices[0].health
        {
            h.smart_passed = Some(false);
            h.ata_attributes
                .iter_mut()
                .filter(|a| a.id == 197)
                .for_each(|a| a.raw_value = 3);
        }
        assert_eq!(run(&FAILED, &snap).len(), 1);
        let f = run(&SECTOR_PROBLEMS, &snap);
        assert_eq!(f[0].severity, Severity::Critical);
    }

    #[test]
    fn nvme_health_fires_on_warning_bits() {
        let mut snap = snapshot_of("rk3399-raid5");
        assert!(run(&NVME_HEALTH, &snap).is_empty());
        if let Outcome::Ok { data } = &mut snap.smart
            && let Outcome::Ok { data: h } = &mut data.devices[0].health
        {
            h.nvme = Some(crate::probe::smart::NvmeHealth {
                critical_warning: 0,
                media_errors: 2,
                num_err_log_entries: 0,
                percentage_used: None,
                available_spare: None,
                unsafe_shutdowns: None,
            });
        }
        assert_eq!(run(&NVME_HEALTH, &snap)[0].severity, Severity::Warning);
    }
}
