//! vm sysctls: swappiness by swap kind, vfs_cache_pressure, dirty writeback for
//! slow USB disks, and min_free_kbytes on tiny boards.

use super::bottleneck::{DiskFigure, holder_of};
use super::measured::origin;
use super::sysctl_conf::{persist_hint, value_u64};
use super::{Change, Context, Finding, Risk, Rule, RuleInfo, Severity};
use crate::probe::memory::Memory;
use crate::probe::storage::{Chain, Storage};

pub static RULES: &[&Rule] = &[
    &SWAPPINESS,
    &VFS_CACHE_PRESSURE,
    &DIRTY_USB,
    &MIN_FREE_SMALL_RAM,
];

const MIB: u64 = 1024 * 1024;

/// The kernel docs suggest above 100 for swap in RAM (zram), where a swap-in
/// costs less than re-reading a file page from disk.
const ZRAM_SWAPPINESS_MIN: u64 = 100;
const ZRAM_SWAPPINESS_RECOMMENDED: u64 = 100;
/// Swap on USB/SD flash wears it and is slow: keep the kernel reluctant.
const FLASH_SWAPPINESS_MAX: u64 = 30;

fn swap_device_transport(storage: Option<&Storage>, device: &str) -> Option<String> {
    let name = device.strip_prefix("/dev/")?;
    storage?
        .devices
        .iter()
        .find(|d| d.name == name)
        .map(|d| d.transport.clone())
}

static SWAPPINESS: Rule = Rule {
    info: RuleInfo {
        id: "swappiness-for-swap-kind",
        area: "memory",
        title: "vm.swappiness does not suit the kind of swap",
        severity: Severity::Notice,
        risk: Risk::RuntimeSafe,
        checks: "With only zram swap, swappiness below 100 makes the kernel drop file cache \
                 instead of compressing idle pages; with swap on USB/SD, swappiness above 30 \
                 swaps to slow, wearing media. No swap: not applicable.",
        references: &[
            "https://docs.kernel.org/admin-guide/sysctl/vm.html#swappiness",
            "https://docs.kernel.org/admin-guide/blockdev/zram.html",
        ],
    },
    evaluate: |info, ctx| {
        let (Some(mem), Some(swappiness)) =
            (ctx.snapshot.memory.data(), value_u64(ctx, "vm.swappiness"))
        else {
            return Vec::new();
        };
        if mem.swaps.is_empty() {
            return Vec::new();
        }
        let all_zram = mem.swaps.iter().all(|s| s.kind == "zram");
        let storage = ctx.snapshot.storage.data();
        let on_flash: Vec<String> = mem
            .swaps
            .iter()
            .filter_map(|s| {
                let t = swap_device_transport(storage, &s.device)?;
                (t == "usb" || t == "mmc").then(|| format!("{} ({t})", s.device))
            })
            .collect();
        let (target, why) = if all_zram && swappiness < ZRAM_SWAPPINESS_MIN {
            (
                ZRAM_SWAPPINESS_RECOMMENDED,
                format!(
                    "All swap is zram ({}), where a swapped page costs a decompression in RAM \
                     (microseconds) while a dropped file page costs a disk read (milliseconds). \
                     swappiness {swappiness} weights anonymous pages {swappiness}:{} against \
                     file pages, so the kernel throws away cache it will re-read rather than \
                     use zram. The kernel docs suggest values above 100 for in-RAM swap; \
                     100-180 is the useful range. (swappiness 10 is old advice for swap on \
                     disk.)",
                    mem.swaps
                        .iter()
                        .map(|s| s.device.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    200 - swappiness
                ),
            )
        } else if !all_zram && !on_flash.is_empty() && swappiness > FLASH_SWAPPINESS_MAX {
            (
                FLASH_SWAPPINESS_MAX,
                format!(
                    "Swap lives on {}, slow USB/SD media that wears with writes. At swappiness \
                     {swappiness} the kernel swaps out idle pages readily; 10-{} keeps it to \
                     real memory shortage. Better still: zram first, this swap as overflow.",
                    on_flash.join(", "),
                    FLASH_SWAPPINESS_MAX
                ),
            )
        } else {
            return Vec::new();
        };
        vec![
            Finding::of(
                info,
                format!("vm.swappiness {swappiness} with {}", swap_summary(mem)),
                format!("{why} Set vm.swappiness = {target}."),
            )
            .evidence("vm.swappiness", swappiness)
            .evidence("swap", swap_summary(mem))
            .setting("sysctl:vm.swappiness")
            .change(Change::Sysctl {
                key: "vm.swappiness".into(),
                value: target.to_string(),
            })
            .change(Change::AdviceOnly {
                action: persist_hint(ctx, "vm.swappiness"),
            }),
        ]
    },
};

fn swap_summary(mem: &Memory) -> String {
    mem.swaps
        .iter()
        .map(|s| format!("{} {} {} MiB", s.kind, s.device, s.size_bytes / MIB))
        .collect::<Vec<_>>()
        .join(", ")
}

/// "Significantly beyond 100" per vm.rst; 200 reclaims dentries/inodes twice as eagerly.
const VFS_CACHE_PRESSURE_WARN: u64 = 200;

static VFS_CACHE_PRESSURE: Rule = Rule {
    info: RuleInfo {
        id: "vfs-cache-pressure",
        area: "memory",
        title: "vm.vfs_cache_pressure throws away the dentry/inode cache",
        severity: Severity::Warning,
        risk: Risk::RuntimeSafe,
        checks: "vfs_cache_pressure is above 200 (reclaims directory and inode caches far \
                 faster than page cache) or 0 (never reclaims them: memory can run out).",
        references: &["https://docs.kernel.org/admin-guide/sysctl/vm.html#vfs-cache-pressure"],
    },
    evaluate: |info, ctx| {
        let Some(v) = value_u64(ctx, "vm.vfs_cache_pressure") else {
            return Vec::new();
        };
        let why = if v == 0 {
            "0 means dentries and inodes are never reclaimed, so a large tree walk (backup, \
             indexer, rsync) can fill RAM with them until the OOM killer runs."
                .to_string()
        } else if v > VFS_CACHE_PRESSURE_WARN {
            format!(
                "At {v} the kernel frees {:.0} times as many dentry/inode objects per reclaim \
                 pass as at the default 100. A file server lives on those caches: every SMB \
                 directory listing and stat after a reclaim goes back to the disk (and through \
                 dm-crypt/RAID). The kernel docs warn that values far above 100 hurt \
                 performance.",
                v as f64 / 100.0
            )
        } else {
            return Vec::new();
        };
        vec![
            Finding::of(
                info,
                format!("vm.vfs_cache_pressure is {v}"),
                format!("{why} Keep the default 100."),
            )
            .evidence("vm.vfs_cache_pressure", v)
            .setting("sysctl:vm.vfs_cache_pressure")
            .change(Change::Sysctl {
                key: "vm.vfs_cache_pressure".into(),
                value: "100".into(),
            })
            .change(Change::AdviceOnly {
                action: persist_hint(ctx, "vm.vfs_cache_pressure"),
            }),
        ]
    },
};

/// Assumed sustained write speed of a USB 2.0 hard disk when nothing was measured.
const ASSUMED_USB_WRITE_BYTES_PER_SEC: u64 = 30_000_000;
/// Writeback of the whole dirty limit taking longer than this stalls writers visibly.
const DIRTY_STALL_LIMIT_SECONDS: f64 = 5.0;
/// Seconds of disk throughput to allow as dirty data ("a few seconds' worth").
const DIRTY_TARGET_SECONDS: u64 = 3;
const DIRTY_BACKGROUND_TARGET_SECONDS: u64 = 1;

/// Mounted chains whose stack ends on a USB disk (swap excluded).
fn usb_chains(storage: &Storage) -> Vec<&Chain> {
    storage
        .chains
        .iter()
        .filter(|c| !c.swap && !c.mount_points.is_empty())
        .filter(|c| {
            c.devices.last().is_some_and(|bottom| {
                storage
                    .devices
                    .iter()
                    .any(|d| &d.name == bottom && d.transport == "usb")
            })
        })
        .collect()
}

/// The write speed the dirty limit is weighed against, and where it comes from.
struct WriteSpeed {
    bytes_per_sec: u64,
    /// For the rationale: `the measured 95 MB/s sequential write on dm-0 (/srv) by …`.
    basis: String,
    /// For the evidence: `95 MB/s (measured by bench disk run 12)`.
    evidence: String,
}

/// A measured sequential write speed of a chain: a bench on one of its devices
/// or on a path its filesystem holds.
fn measured_write<'m>(ctx: &Context<'m>, chain: &Chain) -> Option<(&'m DiskFigure, f64)> {
    ctx.measurements.disk.iter().find_map(|d| {
        let speed = d.seq_write_bytes_per_sec.filter(|s| *s > 0.0)?;
        let on_device = d
            .device
            .as_ref()
            .is_some_and(|dev| chain.devices.contains(dev));
        let on_mount =
            holder_of(ctx.snapshot, &d.path).is_some_and(|m| chain.mount_points.contains(&m));
        (on_device || on_mount).then_some((d, speed))
    })
}

/// The slowest write speed among the USB chains: measured where a bench ran on
/// them, else the USB 2.0 assumption (the dirty limit is shared, so the
/// slowest disk decides how long a full flush takes).
fn usb_write_speed(ctx: &Context, chains: &[&Chain]) -> Option<WriteSpeed> {
    chains
        .iter()
        .map(|chain| match measured_write(ctx, chain) {
            Some((fig, speed)) => {
                // Whole MB/s: the recommended byte counts stay readable.
                let mb_per_sec = (speed / 1e6).round().max(1.0) as u64;
                let on = fig.device.as_deref().unwrap_or(fig.path.as_str());
                let by = origin(fig.measured_by.as_ref());
                WriteSpeed {
                    bytes_per_sec: mb_per_sec * 1_000_000,
                    basis: format!(
                        "the measured {mb_per_sec} MB/s sequential write on {on} ({}) {by}",
                        chain.mount_points.join(", ")
                    ),
                    evidence: format!("{mb_per_sec} MB/s (measured on {on} {by})"),
                }
            }
            None => {
                let mb_per_sec = ASSUMED_USB_WRITE_BYTES_PER_SEC / 1_000_000;
                WriteSpeed {
                    bytes_per_sec: ASSUMED_USB_WRITE_BYTES_PER_SEC,
                    basis: format!(
                        "an assumed {mb_per_sec} MB/s (a USB 2.0 hard disk; not measured: run \
                         'nastune bench disk {}' to measure)",
                        chain.mount_points.first().map_or("DIR", String::as_str)
                    ),
                    evidence: format!("{mb_per_sec} MB/s (assumed)"),
                }
            }
        })
        .min_by_key(|s| s.bytes_per_sec)
}

static DIRTY_USB: Rule = Rule {
    info: RuleInfo {
        id: "dirty-limit-for-usb-disk",
        area: "memory",
        title: "Dirty page limit worth many seconds of a slow USB disk's writes",
        severity: Severity::Notice,
        risk: Risk::RuntimeSafe,
        checks: "A filesystem sits on a USB disk and vm.dirty_ratio of available memory holds \
                 more than 5 s of its write throughput: the sequential write speed measured \
                 there by 'bench disk' or 'check', else 30 MB/s assumed for USB 2.0. Writers \
                 then stall for that long once the limit is hit.",
        references: &[
            "https://docs.kernel.org/admin-guide/sysctl/vm.html#dirty-bytes",
            "https://lwn.net/Articles/572911/",
        ],
    },
    evaluate: |info, ctx| {
        let (Some(mem), Some(storage)) = (ctx.snapshot.memory.data(), ctx.snapshot.storage.data())
        else {
            return Vec::new();
        };
        let chains = usb_chains(storage);
        if chains.is_empty() {
            return Vec::new();
        }
        let mut mounts: Vec<&str> = chains
            .iter()
            .flat_map(|c| c.mount_points.iter().map(String::as_str))
            .collect();
        mounts.sort();
        mounts.dedup();
        // dirty_bytes, when set, replaces dirty_ratio (the kernel zeroes the other).
        let (limit, how) = match value_u64(ctx, "vm.dirty_bytes") {
            Some(bytes) if bytes > 0 => (bytes, format!("vm.dirty_bytes {bytes} B")),
            Some(_) => {
                let (Some(ratio), Some(available)) =
                    (value_u64(ctx, "vm.dirty_ratio"), mem.available_bytes)
                else {
                    return Vec::new();
                };
                (
                    available / 100 * ratio,
                    format!(
                        "vm.dirty_ratio {ratio}% of {} MiB available memory",
                        available / MIB
                    ),
                )
            }
            None => return Vec::new(),
        };
        let Some(speed) = usb_write_speed(ctx, &chains) else {
            return Vec::new();
        };
        let bps = speed.bytes_per_sec;
        let stall = limit as f64 / bps as f64;
        if stall <= DIRTY_STALL_LIMIT_SECONDS {
            return Vec::new();
        }
        let dirty = bps * DIRTY_TARGET_SECONDS;
        let background = bps * DIRTY_BACKGROUND_TARGET_SECONDS;
        vec![
            Finding::of(
                info,
                format!(
                    "up to {} MiB dirty data = {stall:.1} s of writeback to the USB disk",
                    limit / MIB
                ),
                format!(
                    "{how} = {} MiB of dirty pages may pile up before writers are throttled. \
                     At {} flushing that takes {} MiB / {} MB/s = {stall:.1} s, during which \
                     a writer (and an SMB client) hangs, and which is lost on a power cut. \
                     Capping dirty data at ~{DIRTY_TARGET_SECONDS} s of throughput ({} MB) \
                     with background writeback from ~{DIRTY_BACKGROUND_TARGET_SECONDS} s ({} \
                     MB) keeps the pipe full without the stall. Mounts on USB: {}.",
                    limit / MIB,
                    speed.basis,
                    limit / MIB,
                    bps / 1_000_000,
                    dirty / 1_000_000,
                    background / 1_000_000,
                    mounts.join(", ")
                ),
            )
            .evidence("dirty limit", &how)
            .evidence("dirty limit bytes", limit)
            .evidence("USB write speed", speed.evidence)
            .setting("sysctl:vm.dirty_bytes")
            .setting("sysctl:vm.dirty_background_bytes")
            .change(Change::Sysctl {
                key: "vm.dirty_background_bytes".into(),
                value: background.to_string(),
            })
            .change(Change::Sysctl {
                key: "vm.dirty_bytes".into(),
                value: dirty.to_string(),
            }),
        ]
    },
};

/// Boards this small are where a guide's min_free_kbytes hurts most.
const SMALL_RAM_BYTES: u64 = 256 * MIB;
/// Reserving more than this share of RAM leaves too little for cache and smbd.
const MIN_FREE_MAX_PERCENT: u64 = 5;

static MIN_FREE_SMALL_RAM: Rule = Rule {
    info: RuleInfo {
        id: "min-free-kbytes-small-ram",
        area: "memory",
        title: "vm.min_free_kbytes reserves too much of a small RAM",
        severity: Severity::Warning,
        risk: Risk::RuntimeSafe,
        checks: "On a box with at most 256 MiB of RAM, min_free_kbytes exceeds 5% of RAM: \
                 reclaim starts early and the reserve is unusable for cache or processes.",
        references: &["https://docs.kernel.org/admin-guide/sysctl/vm.html#min-free-kbytes"],
    },
    evaluate: |info, ctx| {
        let (Some(mem), Some(kb)) = (
            ctx.snapshot.memory.data(),
            value_u64(ctx, "vm.min_free_kbytes"),
        ) else {
            return Vec::new();
        };
        let total = mem.total_bytes;
        let reserved = kb.saturating_mul(1024);
        if total > SMALL_RAM_BYTES || total == 0 || reserved * 100 <= total * MIN_FREE_MAX_PERCENT {
            return Vec::new();
        }
        // The kernel's own choice: sqrt(16 × lowmem in KiB) (mm/page_alloc.c).
        let default_kb = ((16 * total / 1024) as f64).sqrt() as u64;
        vec![
            Finding::of(
                info,
                format!(
                    "vm.min_free_kbytes {kb} is {:.0}% of {} MiB RAM",
                    reserved as f64 * 100.0 / total as f64,
                    total / MIB
                ),
                format!(
                    "min_free_kbytes {kb} keeps {} MiB of {} MiB always free, and the \
                     low/high watermarks sit above it, so kswapd reclaims cache long before \
                     memory is short. The kernel's own value for this RAM is about \
                     sqrt(16 × {} KiB) = {default_kb} KiB. Larger reserves help only against \
                     atomic allocation failures in network drivers ('page allocation \
                     failure' in dmesg); without those, go back to the default.",
                    reserved / MIB,
                    total / MIB,
                    total / 1024
                ),
            )
            .evidence("vm.min_free_kbytes", kb)
            .evidence("MemTotal", format!("{} MiB", total / MIB))
            .setting("sysctl:vm.min_free_kbytes")
            .change(Change::Sysctl {
                key: "vm.min_free_kbytes".into(),
                value: default_kb.to_string(),
            }),
        ]
    },
};

#[cfg(test)]
mod tests {
    use super::super::sysctl_conf::test_edit::set;
    use super::*;
    use crate::advise::Context;
    use crate::advise::bottleneck::{MeasuredBy, Measurements};
    use crate::advise::test_support::{run_measured, snapshot_of};
    use crate::probe::Snapshot;

    fn run(rule: &Rule, snap: &Snapshot) -> Vec<Finding> {
        rule.run(&Context::unmeasured(snap))
    }

    /// A bench disk figure: sequential write in a directory of the filesystem.
    fn written(path: &str, device: Option<&str>, bytes_per_sec: f64) -> Measurements {
        Measurements {
            disk: vec![DiskFigure {
                path: path.into(),
                device: device.map(String::from),
                seq_read_bytes_per_sec: Some(bytes_per_sec * 1.2),
                seq_write_bytes_per_sec: Some(bytes_per_sec),
                measured_by: Some(MeasuredBy {
                    run_id: 12,
                    run_kind: "bench-disk".into(),
                }),
            }],
            ..Default::default()
        }
    }

    fn sysctl_value<'f>(f: &'f Finding, key: &str) -> &'f str {
        f.recommendation
            .iter()
            .find_map(|c| match c {
                Change::Sysctl { key: k, value } if k == key => Some(value.as_str()),
                _ => None,
            })
            .expect("sysctl change")
    }

    #[test]
    fn dirty_limit_uses_the_measured_write_speed_of_the_usb_disk() {
        let mut snap = snapshot_of("rpi2-luks");
        set(&mut snap, "vm.dirty_bytes", "1000000000");
        // 1 GB dirty: 10.5 s at a measured 95 MB/s, 83.3 s at 12 MB/s.
        let fast = run_measured(
            &DIRTY_USB,
            &snap,
            &written("/srv/nas/t", Some("dm-0"), 95.2e6),
        );
        let slow = run_measured(
            &DIRTY_USB,
            &snap,
            &written("/srv/nas/t", Some("dm-0"), 12e6),
        );
        assert_eq!(fast.len(), 1, "{fast:?}");
        assert_eq!(slow.len(), 1, "{slow:?}");
        assert_eq!(sysctl_value(&fast[0], "vm.dirty_bytes"), "285000000");
        assert_eq!(
            sysctl_value(&fast[0], "vm.dirty_background_bytes"),
            "95000000"
        );
        assert_eq!(sysctl_value(&slow[0], "vm.dirty_bytes"), "36000000");
        assert!(fast[0].title.contains("10.5 s"), "{}", fast[0].title);
        assert!(slow[0].title.contains("83.3 s"), "{}", slow[0].title);
        assert!(
            fast[0].rationale.contains(
                "the measured 95 MB/s sequential write on dm-0 (/srv/nas) by bench disk run 12"
            ),
            "{}",
            fast[0].rationale
        );
        assert!(
            !fast[0].rationale.contains("assumed"),
            "{}",
            fast[0].rationale
        );
        assert!(
            fast[0]
                .evidence
                .iter()
                .any(|e| e.value == "95 MB/s (measured on dm-0 by bench disk run 12)"),
            "{:?}",
            fast[0].evidence
        );

        // The default 20% of 742 MiB (5.2 s at the assumed 30 MB/s) is fine for a
        // disk measured at 95 MB/s, and worse for one measured at 12.
        let snap = snapshot_of("rpi2-luks");
        assert!(run_measured(&DIRTY_USB, &snap, &written("/srv/nas", None, 95e6)).is_empty());
        let f = run_measured(&DIRTY_USB, &snap, &written("/dev/sda", Some("sda"), 12e6));
        assert!(f[0].title.contains("13.0 s"), "{}", f[0].title);
        assert!(
            f[0].rationale.contains("on sda (/srv/nas)"),
            "{}",
            f[0].rationale
        );
        // Measured in this run (check): no stored run to name.
        let mut m = written("/srv/nas", None, 12e6);
        m.disk[0].measured_by = None;
        let f = run_measured(&DIRTY_USB, &snap, &m);
        assert!(
            f[0].rationale.contains("/srv/nas (/srv/nas) in this run"),
            "{}",
            f[0].rationale
        );

        // A figure of another filesystem is not this disk's: assumed, and said so.
        let f = run_measured(&DIRTY_USB, &snap, &written("/", Some("mmcblk0p2"), 95e6));
        assert!(
            f[0].rationale
                .contains("an assumed 30 MB/s (a USB 2.0 hard disk; not measured: run 'nastune bench disk /srv/nas' to measure)"),
            "{}",
            f[0].rationale
        );
    }

    #[test]
    fn swappiness_by_swap_kind() {
        // Pi: zram only at the stock 60 → raise to 100.
        let snap = snapshot_of("rpi2-luks");
        let f = run(&SWAPPINESS, &snap);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            f[0].recommendation[0],
            Change::Sysctl {
                key: "vm.swappiness".into(),
                value: "100".into()
            }
        );
        assert!(f[0].rationale.contains("60:140"), "{}", f[0].rationale);
        // Pogoplug: swap on a USB partition at 10 is right; at 60 it is not.
        let mut snap = snapshot_of("pogoplug-v4");
        assert!(run(&SWAPPINESS, &snap).is_empty());
        set(&mut snap, "vm.swappiness", "60");
        let f = run(&SWAPPINESS, &snap);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].rationale.contains("/dev/sda2 (usb)"),
            "{}",
            f[0].rationale
        );
        assert_eq!(
            f[0].recommendation[1],
            Change::AdviceOnly {
                action: "edit /etc/sysctl.d/60-nas.conf:2".into()
            }
        );
        // No swap: not applicable.
        let mut snap = snapshot_of("rk3399-raid5");
        set(&mut snap, "vm.swappiness", "10");
        assert!(run(&SWAPPINESS, &snap).is_empty());
    }

    #[test]
    fn vfs_cache_pressure_far_above_100_or_zero() {
        let mut snap = snapshot_of("rk3399-raid5");
        assert!(run(&VFS_CACHE_PRESSURE, &snap).is_empty());
        set(&mut snap, "vm.vfs_cache_pressure", "150");
        assert!(run(&VFS_CACHE_PRESSURE, &snap).is_empty(), "mild is fine");
        set(&mut snap, "vm.vfs_cache_pressure", "1000");
        let f = run(&VFS_CACHE_PRESSURE, &snap);
        assert_eq!(f.len(), 1);
        assert!(f[0].rationale.contains("10 times"), "{}", f[0].rationale);
        set(&mut snap, "vm.vfs_cache_pressure", "0");
        assert!(run(&VFS_CACHE_PRESSURE, &snap)[0].rationale.contains("OOM"));
    }

    #[test]
    fn dirty_limit_on_the_pi_usb_disk_with_arithmetic() {
        let snap = snapshot_of("rpi2-luks");
        let f = run(&DIRTY_USB, &snap);
        assert_eq!(f.len(), 1, "{f:?}");
        // 20% of 742 MiB available = 148 MiB; / 30 MB/s = 5.2 s.
        assert!(
            f[0].rationale.contains("20% of 742 MiB"),
            "{}",
            f[0].rationale
        );
        assert!(f[0].title.contains("5.2 s"), "{}", f[0].title);
        assert!(f[0].rationale.contains("assumed"), "{}", f[0].rationale);
        assert!(f[0].rationale.contains("/srv/nas"), "{}", f[0].rationale);
        // Pogoplug: 20% of 69 MiB flushes in under half a second.
        assert!(run(&DIRTY_USB, &snapshot_of("pogoplug-v4")).is_empty());
        // SATA disks: not this rule.
        assert!(run(&DIRTY_USB, &snapshot_of("rk3399-raid5")).is_empty());
        // Already capped in bytes.
        let mut snap = snapshot_of("rpi2-luks");
        set(&mut snap, "vm.dirty_bytes", "90000000");
        assert!(run(&DIRTY_USB, &snap).is_empty());
        // A guide's 500 MB dirty_bytes is 16.7 s at 30 MB/s.
        set(&mut snap, "vm.dirty_bytes", "500000000");
        let f = run(&DIRTY_USB, &snap);
        assert!(f[0].title.contains("16.7 s"), "{}", f[0].title);
    }

    #[test]
    fn min_free_kbytes_only_on_small_boards_when_large() {
        let mut snap = snapshot_of("pogoplug-v4");
        assert!(run(&MIN_FREE_SMALL_RAM, &snap).is_empty());
        set(&mut snap, "vm.min_free_kbytes", "16384");
        let f = run(&MIN_FREE_SMALL_RAM, &snap);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].title, "vm.min_free_kbytes 16384 is 13% of 120 MiB RAM");
        // The Pi's 16 MiB of 922 MiB is under 2%: fine.
        assert!(run(&MIN_FREE_SMALL_RAM, &snapshot_of("rpi2-luks")).is_empty());
    }
}
