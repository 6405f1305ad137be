//! Geometry rules: filesystem stripe settings against the md layout, partition
//! alignment (to sectors and stripes, and to the pages and erase blocks of flash
//! media), and drive-managed SMR disks in RAID.

use super::media::{self, Media};
use super::{Change, Context, Finding, Risk, Rule, RuleInfo, Severity};
use crate::probe::Snapshot;
use crate::probe::block::{BlockDevice, Partition, Queue};
use crate::probe::md::MdArray;

pub static RULES: &[&Rule] = &[
    &STRIPE_MISMATCH,
    &PARTITION_MISALIGNED,
    &PARTITION_MISALIGNED_FLASH,
    &SMR_IN_RAID,
];

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
/// The flash page a 4 KiB filesystem block should fit in.
const FLASH_PAGE_BYTES: u64 = 4 * KIB;

/// What kind of flash medium a disk is, when it is an SD card, eMMC or USB
/// flash stick (not SATA/NVMe SSDs, whose controllers remap small writes),
/// with the evidence that says so.
fn flash_medium(snap: &Snapshot, disk: &BlockDevice) -> Option<(&'static str, String)> {
    let (kind, clues) = media::media_kind(&media::facts(snap, disk));
    let medium = match (disk.transport.as_str(), kind) {
        ("mmc", _) => "SD card or eMMC",
        ("usb", Media::Flash) => "USB flash",
        _ => return None,
    };
    Some((medium, media::describe(&clues)))
}

/// Every partition with its disk.
fn partitions<'a>(
    ctx: &Context<'a>,
) -> impl Iterator<Item = (&'a BlockDevice, &'a Partition, &'a BlockDevice)> {
    let devices = ctx.snapshot.storage.data().map_or(&[][..], |s| &s.devices);
    devices.iter().filter_map(|d| {
        let p = d.partition.as_ref()?;
        let disk = devices.iter().find(|x| x.name == p.disk)?;
        Some((d, p, disk))
    })
}

/// The unit a partition start misses, for the sector/stripe rule.
fn sector_misalignment(p: &Partition, q: &Queue) -> Option<(u64, &'static str)> {
    let phys = q.physical_sector_bytes.unwrap_or(512).max(1);
    let opt = q.optimal_io_bytes.unwrap_or(0);
    if p.aligned_to_physical_sector == Some(false) || !p.start_bytes.is_multiple_of(phys) {
        Some((phys, "physical sector"))
    } else if opt > 0 && !p.start_bytes.is_multiple_of(opt) {
        Some((opt, "optimal I/O size (stripe)"))
    } else {
        None
    }
}

/// Model fragments of drive-managed SMR disks, from the vendors' 2020 disclosures.
const DM_SMR_MODELS: &[&str] = &[
    "WD20EFAX",
    "WD30EFAX",
    "WD40EFAX",
    "WD60EFAX",
    "ST8000DM004",
    "ST6000DM003",
    "ST5000DM000",
    "ST4000DM004",
    "ST3000DM007",
    "ST2000DM008",
    "DT02ABA",
];

/// Disks that carry data: the RAID level's member count minus parity/mirror copies.
fn data_disks(a: &MdArray) -> Option<u64> {
    let n = a.raid_disks?;
    match a.level.as_deref()? {
        "raid0" => Some(n),
        "raid4" | "raid5" => n.checked_sub(1),
        "raid6" => n.checked_sub(2),
        // The default near=2 layout.
        "raid10" => Some(n / 2),
        _ => None,
    }
    .filter(|d| *d > 0)
}

static STRIPE_MISMATCH: Rule = Rule {
    info: RuleInfo {
        id: "fs-stripe-geometry-mismatch",
        area: "storage",
        title: "Filesystem stripe geometry does not match the RAID layout",
        severity: Severity::Warning,
        risk: Risk::NeedsRestart,
        checks: "For a filesystem on md RAID0/4/5/6/10, the effective stripe unit should be \
                 the chunk and the stripe width chunk × data disks (ext4 stride/stripe-width \
                 or stripe=, XFS sunit/swidth).",
        references: &[
            "mke2fs(8) -E stride,stripe_width; tune2fs(8) -E",
            "mkfs.xfs(8) su/sw; xfs(5) mount options sunit/swidth",
        ],
    },
    evaluate: |info, ctx| {
        let (Some(storage), Some(fs)) =
            (ctx.snapshot.storage.data(), ctx.snapshot.filesystems.data())
        else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for m in &fs.mounts {
            if m.bind_root.is_some()
                || out
                    .iter()
                    .any(|f: &Finding| f.title.contains(&m.mount_point))
            {
                continue;
            }
            let (Some(dev), Some(g)) = (m.device.as_deref(), m.geometry.as_ref()) else {
                continue;
            };
            // The md array the filesystem sits on, possibly under dm-crypt/LVM.
            let Some(array) = storage
                .chains
                .iter()
                .filter(|c| c.devices.first().map(String::as_str) == Some(dev))
                .flat_map(|c| c.devices.iter())
                .find_map(|d| storage.md_arrays.iter().find(|a| &a.name == d))
            else {
                continue;
            };
            let (Some(chunk), Some(data)) = (array.chunk_bytes, data_disks(array)) else {
                continue;
            };
            let (Some(su), Some(sw)) = (g.stripe_unit_bytes, g.stripe_width_bytes) else {
                continue;
            };
            let want_sw = chunk * data;
            if su == chunk && sw == want_sw {
                continue;
            }
            let is_xfs = m.fs_type == "xfs";
            let (how, change) = if is_xfs {
                // XFS mount options count 512-byte sectors.
                let (s, w) = (chunk / 512, want_sw / 512);
                (
                    format!("sunit={s},swidth={w} (512-byte units) as mount options"),
                    Change::MountOption {
                        mount_point: m.mount_point.clone(),
                        add: vec![format!("sunit={s}"), format!("swidth={w}")],
                        remove: Vec::new(),
                    },
                )
            } else {
                let block = g.ext4_block_bytes.unwrap_or(4096).max(1);
                let (stride, width) = (chunk / block, want_sw / block);
                (
                    format!(
                        "'tune2fs -E stride={stride},stripe_width={width} /dev/{dev}' or the \
                         mount option stripe={width} ({block}-byte blocks)"
                    ),
                    Change::MountOption {
                        mount_point: m.mount_point.clone(),
                        add: vec![format!("stripe={width}")],
                        remove: Vec::new(),
                    },
                )
            };
            out.push(
                Finding::of(
                    info,
                    format!(
                        "{} allocates for {} KiB × {} KiB, {} wants {} KiB × {} KiB",
                        m.mount_point,
                        su / KIB,
                        sw / KIB,
                        array.name,
                        chunk / KIB,
                        want_sw / KIB
                    ),
                    format!(
                        "{} is {} with {} disks, {} carrying data: stripe unit = chunk = {} \
                         KiB, full stripe = {} KiB × {data} = {} KiB. The filesystem uses {} \
                         KiB / {} KiB, so large writes straddle stripes and RAID5/6 must \
                         read back parity (read-modify-write). Fix without reformatting: {how}.",
                        array.name,
                        array.level.as_deref().unwrap_or("?"),
                        array.raid_disks.unwrap_or(0),
                        data,
                        chunk / KIB,
                        chunk / KIB,
                        want_sw / KIB,
                        su / KIB,
                        sw / KIB
                    ),
                )
                .evidence(format!("{} chunk KiB", array.name), chunk / KIB)
                .evidence("data disks", data)
                .evidence(format!("{} stripe unit KiB", m.mount_point), su / KIB)
                .evidence(format!("{} stripe width KiB", m.mount_point), sw / KIB)
                .setting(format!(
                    "fstab:{}:{}",
                    m.mount_point,
                    if is_xfs { "sunit,swidth" } else { "stripe" }
                ))
                .change(change),
            );
        }
        out
    },
};

static PARTITION_MISALIGNED: Rule = Rule {
    info: RuleInfo {
        id: "partition-misaligned",
        area: "storage",
        title: "Partition not aligned to the disk's sectors or stripe",
        severity: Severity::Warning,
        risk: Risk::AdviceOnly,
        checks: "A partition starts off a physical-sector boundary, or off the optimal I/O \
                 size (stripe) the disk exports: every write then touches two sectors or \
                 stripes.",
        references: &[
            "parted(8) align-check",
            "Documentation/ABI/stable/sysfs-block (alignment_offset, optimal_io_size)",
        ],
    },
    evaluate: |info, ctx| {
        partitions(ctx)
            .filter_map(|(d, p, disk)| {
                let (unit, what) = sector_misalignment(p, disk.queue.as_ref()?)?;
                Some(
                    Finding::of(
                        info,
                        format!("{} starts off the {} {what} boundary", d.name, p.disk),
                        format!(
                            "{} starts at sector {} = byte {}; {} mod {unit} = {}, so it is \
                             not a multiple of the {unit}-byte {what}. Every aligned write \
                             from the filesystem straddles two units (read-modify-write \
                             inside the drive or the array). Moving a partition means backup, \
                             repartition at 1 MiB and restore.",
                            d.name,
                            p.start_sector,
                            p.start_bytes,
                            p.start_bytes,
                            p.start_bytes % unit
                        ),
                    )
                    .evidence(format!("{} start bytes", d.name), p.start_bytes)
                    .evidence(format!("{} {what} bytes", p.disk), unit)
                    .setting(format!("sysfs:block/{}/{}/start", p.disk, d.name))
                    .change(Change::AdviceOnly {
                        action: "recreate the partition starting at a 1 MiB boundary (after a \
                                 backup)"
                            .into(),
                    }),
                )
            })
            .collect()
    },
};

static PARTITION_MISALIGNED_FLASH: Rule = Rule {
    info: RuleInfo {
        id: "partition-misaligned-flash",
        area: "storage",
        title: "Partition on flash media not aligned to 1 MiB",
        severity: Severity::Notice,
        risk: Risk::AdviceOnly,
        checks: "A partition on an SD card, eMMC or USB flash stick does not start on a 1 MiB \
                 boundary (sector 63 from old fdisk, for example). Flash writes whole pages and \
                 erases whole blocks of 1 MiB or more, so a shifted partition makes writes \
                 straddle them. USB sticks and card readers often claim to be rotational, so \
                 flash is recognised from SMART's rotation rate, the removable bit, the model \
                 and USB product names, the size and the driver, and the finding names the \
                 evidence. Hard disks with 512-byte sectors are not flagged.",
        references: &[
            "parted(8) align-check",
            "https://lwn.net/Articles/428584/ (Optimizing Linux with cheap flash drives)",
        ],
    },
    evaluate: |info, ctx| {
        partitions(ctx)
            .filter_map(|(d, p, disk)| {
                let (medium, why) = flash_medium(ctx.snapshot, disk)?;
                // Off a sector or stripe: the other rule says so already.
                let sector_rule = disk.queue.as_ref().and_then(|q| sector_misalignment(p, q));
                if p.aligned_to_1mib || sector_rule.is_some() {
                    return None;
                }
                let page_off = p.start_bytes % FLASH_PAGE_BYTES;
                let erase_off = p.start_bytes % MIB;
                let cost = if page_off != 0 {
                    format!(
                        "Each 4 KiB filesystem block then covers parts of two flash pages, so \
                         the controller programs two pages (reading back and rewriting the \
                         part it keeps) for every block: small writes cost up to twice the \
                         flash work, and cheap sticks and cards lose about that much write \
                         speed. Blocks straddle erase blocks too ({erase_off} B into the first \
                         one)."
                    )
                } else {
                    format!(
                        "Filesystem blocks fit the pages, but the partition starts {erase_off} B \
                         into an erase block, so every erase-block-sized write of the \
                         filesystem spans two of them: the controller must copy the partly \
                         written block elsewhere before erasing it, which costs write speed \
                         and wear."
                    )
                };
                Some(
                    Finding::of(
                        info,
                        format!(
                            "{} starts at sector {} on {medium} {}, not at a 1 MiB boundary",
                            d.name, p.start_sector, p.disk
                        ),
                        format!(
                            "{} starts at sector {} = byte {}; {} mod {FLASH_PAGE_BYTES} = \
                             {page_off} and {} mod {MIB} = {erase_off}. {} is flash: {why}. \
                             Flash writes in pages \
                             (4-16 KiB) and erases in blocks of 1 MiB or more (4 MiB \
                             allocation units on most SD cards). {cost} Fixing it means backup, \
                             repartition starting at 1 MiB (4 MiB on SD cards) and restore.",
                            d.name,
                            p.start_sector,
                            p.start_bytes,
                            p.start_bytes,
                            p.start_bytes,
                            p.disk
                        ),
                    )
                    .evidence(format!("{} start bytes", d.name), p.start_bytes)
                    .evidence(format!("{} medium", p.disk), medium)
                    .evidence(format!("{} flash evidence", p.disk), &why)
                    .evidence("offset into a 4 KiB page, bytes", page_off)
                    .evidence("offset into a 1 MiB erase block, bytes", erase_off)
                    .setting(format!("sysfs:block/{}/{}/start", p.disk, d.name))
                    .change(Change::AdviceOnly {
                        action: "recreate the partition starting at a 1 MiB boundary (4 MiB on \
                                 SD cards) after a backup"
                            .into(),
                    }),
                )
            })
            .collect()
    },
};

static SMR_IN_RAID: Rule = Rule {
    info: RuleInfo {
        id: "smr-drive-in-raid",
        area: "storage",
        title: "Drive-managed SMR disk in a RAID array",
        severity: Severity::Notice,
        risk: Risk::AdviceOnly,
        checks: "A disk under an md array matches a known drive-managed SMR model (WD Red \
                 EFAX, Seagate Barracuda DM004/DM008, Toshiba DT02ABA). Their rebuilds and \
                 sustained writes can stall for minutes.",
        references: &[
            "https://www.westerndigital.com/support/wd-red-nas-hard-drive-smr (2020)",
            "https://raid.wiki.kernel.org/index.php/Timeout_Mismatch",
        ],
    },
    evaluate: |info, ctx| {
        let Some(storage) = ctx.snapshot.storage.data() else {
            return Vec::new();
        };
        // SMART's model only when SMART describes this disk (serial, size).
        let smart_model = |name: &str| -> Option<String> {
            let h = ctx
                .snapshot
                .smart
                .data()?
                .devices
                .iter()
                .find(|d| d.name == name)?
                .health
                .data()?;
            if super::smart::smart_mismatch(ctx, name, h).is_some() {
                return None;
            }
            h.model.clone()
        };
        let mut disks: Vec<(&str, &str)> = storage
            .chains
            .iter()
            .filter_map(|c| {
                let array = c
                    .devices
                    .iter()
                    .find(|d| storage.md_arrays.iter().any(|a| &a.name == *d))?;
                Some((c.devices.last()?.as_str(), array.as_str()))
            })
            .collect();
        disks.sort();
        disks.dedup();
        disks
            .into_iter()
            .filter_map(|(disk, array)| {
                let sysfs = storage
                    .devices
                    .iter()
                    .find(|d| d.name == disk)?
                    .model
                    .clone();
                let model = smart_model(disk).or(sysfs)?;
                let compact = model.replace(' ', "").to_ascii_uppercase();
                let hit = DM_SMR_MODELS.iter().find(|m| compact.contains(*m))?;
                Some(
                    Finding::of(
                        info,
                        format!("{disk} ({model}) in {array} is a drive-managed SMR disk"),
                        format!(
                            "{hit} records with shingled magnetic recording behind a CMR cache. \
                             Under a RAID rebuild or long writes the cache fills and the drive \
                             stalls for seconds to minutes; md or the SCSI layer can time out \
                             and kick it, turning a rebuild into a second failure. Prefer CMR \
                             disks (WD Red Plus/Pro, IronWolf) when replacing."
                        ),
                    )
                    .evidence(format!("{disk} model"), &model)
                    .evidence("array", array)
                    .setting(format!("md:{array}:members"))
                    .change(Change::AdviceOnly {
                        action: format!(
                            "replace {disk} with a CMR disk at the next opportunity; until \
                             then raise its SCSI timeout (device/timeout = 180)"
                        ),
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
    fn stripe_geometry_matches_on_rk3399_and_mismatch_is_shown() {
        let mut snap = snapshot_of("rk3399-raid5");
        assert!(
            run(&STRIPE_MISMATCH, &snap).is_empty(),
            "128/384 blocks is right"
        );
        if let Outcome::Ok { data } = &mut snap.filesystems {
            for m in data.mounts.iter_mut().filter(|m| m.mount_point == "/srv") {
                let g = m.geometry.as_mut().expect("geometry");
                g.stripe_unit_bytes = Some(64 * 1024);
                g.stripe_width_bytes = Some(256 * 1024);
            }
        }
        let f = run(&STRIPE_MISMATCH, &snap);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].rationale
                .contains("full stripe = 512 KiB × 3 = 1536 KiB"),
            "{}",
            f[0].rationale
        );
        assert!(f[0].rationale.contains("stride=128,stripe_width=384"));
        assert_eq!(
            f[0].recommendation[0],
            Change::MountOption {
                mount_point: "/srv".into(),
                add: vec!["stripe=384".into()],
                remove: vec![]
            }
        );
    }

    #[test]
    fn misaligned_partition_fires() {
        let mut snap = snapshot_of("rpi2-luks");
        assert!(run(&PARTITION_MISALIGNED, &snap).is_empty());
        if let Outcome::Ok { data } = &mut snap.storage {
            for d in data.devices.iter_mut().filter(|d| d.name == "sda1") {
                let p = d.partition.as_mut().expect("partition");
                p.start_sector = 63;
                p.start_bytes = 63 * 512;
                p.aligned_to_physical_sector = Some(false);
            }
        }
        let f = run(&PARTITION_MISALIGNED, &snap);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].rationale.contains("32256 mod 4096 = 3584"),
            "{}",
            f[0].rationale
        );
    }

    /// Moves a partition's start, keeping the probe's alignment flags true.
    fn move_start(snap: &mut crate::probe::Snapshot, name: &str, sector: u64) {
        let Outcome::Ok { data } = &mut snap.storage else {
            panic!("no storage section");
        };
        let d = data
            .devices
            .iter_mut()
            .find(|d| d.name == name)
            .expect(name);
        let p = d.partition.as_mut().expect("partition");
        p.start_sector = sector;
        p.start_bytes = sector * 512;
        p.aligned_to_1mib = p.start_bytes % MIB == 0;
        p.aligned_to_physical_sector = None;
    }

    /// Sector 63 on a USB stick was once shown, never a finding, though it
    /// splits every 4 KiB write across two flash pages.
    #[test]
    fn flash_partition_at_sector_63_is_a_finding_with_the_arithmetic() {
        let mut snap = snapshot_of("pogoplug-v4");
        assert!(run(&PARTITION_MISALIGNED_FLASH, &snap).is_empty());
        // sdb is a SanDisk Cruzer Fit, rotational as USB bridges report it.
        move_start(&mut snap, "sdb1", 63);
        let f = run(&PARTITION_MISALIGNED_FLASH, &snap);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            f[0].title,
            "sdb1 starts at sector 63 on USB flash sdb, not at a 1 MiB boundary"
        );
        assert!(
            f[0].rationale.contains("32256 mod 4096 = 3584")
                && f[0].rationale.contains("32256 mod 1048576 = 32256")
                && f[0].rationale.contains("two flash pages"),
            "{}",
            f[0].rationale
        );
        assert!(
            run(&PARTITION_MISALIGNED, &snap).is_empty(),
            "512-byte sectors"
        );
        // 4 KiB-aligned but inside an erase block: still a finding, page cost not claimed.
        move_start(&mut snap, "sdb1", 8);
        let f = run(&PARTITION_MISALIGNED_FLASH, &snap);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].rationale.contains("4096 mod 4096 = 0")
                && !f[0].rationale.contains("two flash pages"),
            "{}",
            f[0].rationale
        );
        // An SD card.
        let mut rpi = snapshot_of("rpi2-luks");
        move_start(&mut rpi, "mmcblk0p1", 63);
        let f = run(&PARTITION_MISALIGNED_FLASH, &rpi);
        assert_eq!(f.len(), 1);
        assert!(f[0].title.contains("SD card or eMMC"), "{}", f[0].title);
    }

    #[test]
    fn hard_disk_partitions_are_not_flash_findings() {
        let mut snap = snapshot_of("pogoplug-v4");
        // sda is a USB hard disk (Seagate Expansion Desk): not flash, whatever its start.
        move_start(&mut snap, "sda1", 63);
        assert!(run(&PARTITION_MISALIGNED_FLASH, &snap).is_empty());
        // 4K-aligned on a 512-byte-sector SATA disk: neither rule fires.
        let mut rk = snapshot_of("rk3399-raid5");
        move_start(&mut rk, "sda1", 8);
        assert!(run(&PARTITION_MISALIGNED_FLASH, &rk).is_empty());
        let sector = run(&PARTITION_MISALIGNED, &rk);
        assert!(sector.is_empty(), "{sector:?}");
    }

    #[test]
    fn smr_models_in_raid_only() {
        let mut snap = snapshot_of("rk3399-raid5");
        assert!(run(&SMR_IN_RAID, &snap).is_empty(), "IronWolf is CMR");
        if let Outcome::Ok { data } = &mut snap.smart
            && let Outcome::Ok { data: h } = &mut data.devices[1].health
        {
            h.model = Some("WDC WD40EFAX-68JH4N0".into());
        }
        // The fixture's SMART serials are other drives' (smart-identity-mismatch):
        // their model is not believed, and sysfs says WD40EFZX (CMR).
        assert!(run(&SMR_IN_RAID, &snap).is_empty());
        if let Outcome::Ok { data } = &mut snap.smart
            && let Outcome::Ok { data: h } = &mut data.devices[1].health
        {
            h.serial = Some("WD-WX32D81ABCD2".into());
        }
        let f = run(&SMR_IN_RAID, &snap);
        assert_eq!(f.len(), 1);
        assert!(f[0].title.starts_with("sdb"), "{}", f[0].title);
        let mut pogo = snapshot_of("pogoplug-v4");
        if let Outcome::Ok { data } = &mut pogo.smart
            && let Outcome::Ok { data: h } = &mut data.devices[0].health
        {
            h.model = Some("WDC WD40EFAX-68JH4N0".into());
        }
        assert!(run(&SMR_IN_RAID, &pogo).is_empty(), "not in RAID");
    }
}
