//! Storage rules: I/O schedulers and readahead as old guides set them, hdparm in
//! rc.local, md RAID health and stripe cache, fstab options, USB autosuspend and
//! write cache.

use super::measured::origin;
use super::{Change, Context, Finding, Risk, Rule, RuleInfo, Severity};
use crate::probe::block::BlockDevice;
use crate::probe::config_files::{ConfigFiles, RC_LOCAL, RcKind};

pub static RULES: &[&Rule] = &[
    &SCHEDULER_LEGACY,
    &SCHEDULER_ON_STACKED,
    &BFQ_ON_FLASH,
    &READAHEAD_OVERSIZED,
    &HDPARM_AAM,
    &READAHEAD_IN_RC_LOCAL,
    &STRIPE_CACHE_RAM,
    &MD_DEGRADED,
    &MD_MISMATCH,
    &MD_RESYNC,
    &FSTAB_REMOVED_OPTION,
    &FSTAB_NODIRATIME,
    &FSTAB_BARRIER_OFF,
    &NO_NOATIME,
    &USB_WITHOUT_NOFAIL,
    &USB_AUTOSUSPEND,
    &WRITE_CACHE_OFF,
];

const MIB: u64 = 1024 * 1024;
/// md allocates one page per member disk for every stripe-cache entry; we assume
/// 4 KiB pages because a tree capture does not tell us the kernel's page size.
const PAGE_BYTES: u64 = 4096;
/// Stripe cache above this share of RAM starves the page cache on small boards.
const STRIPE_CACHE_MAX_RAM_PERCENT: u64 = 5;
/// md's default stripe_cache_size; never a finding.
const STRIPE_CACHE_DEFAULT: u64 = 256;
/// Readahead at or above this is large for any link a small NAS feeds.
const READAHEAD_LARGE_BYTES: u64 = 4 * MIB;
/// Boards at or below this RAM should keep readahead ≤ 512 KiB.
const SMALL_BOARD_RAM_BYTES: u64 = 256 * MIB;
/// Concurrent sequential readers we assume when weighing readahead against RAM.
const READAHEAD_STREAMS: u64 = 32;
/// TCP payload per Mbit/s of Ethernet line rate (1000 Mbit/s ≈ 110 MB/s after
/// framing and headers).
const PAYLOAD_BYTES_PER_MBIT: u64 = 110_000;
/// Assumed when no physical link reports a speed: gigabit.
const DEFAULT_LINK_MBIT: u64 = 1000;
/// Mount points that are the system, not data.
const SYSTEM_MOUNTS: &[&str] = &["/", "/boot", "/boot/firmware", "/boot/efi", "/usr", "/var"];

fn config<'a>(ctx: &'a Context) -> Option<&'a ConfigFiles> {
    ctx.snapshot.config_files.data()
}

fn devices<'a>(ctx: &'a Context) -> &'a [BlockDevice] {
    ctx.snapshot
        .storage
        .data()
        .map_or(&[], |s| s.devices.as_slice())
}

fn ram_bytes(ctx: &Context) -> Option<u64> {
    ctx.snapshot.memory.data().map(|m| m.total_bytes)
}

/// Every place the box sets a sysfs attribute at boot: (where, device pattern,
/// attribute, value). Udev rules give the KERNEL match as the device; their
/// `RUN+=` hooks count too (hdparm -a, txqueuelen, echo to /sys).
fn boot_settings(ctx: &Context) -> Vec<(String, String, String, String)> {
    let Some(c) = config(ctx) else {
        return Vec::new();
    };
    let mut out: Vec<(String, String, String, String)> = c
        .udev_assignments
        .iter()
        .map(|a| {
            (
                format!("{}:{}", a.file, a.line),
                a.match_value("KERNEL").unwrap_or("*").to_string(),
                a.attribute.clone(),
                a.value.clone(),
            )
        })
        .collect();
    for run in &c.udev_runs {
        for (dev, attr, value) in run.kind.attributes() {
            out.push((format!("{}:{}", run.file, run.line), dev, attr, value));
        }
    }
    for cmd in c.rc_local.iter().flatten() {
        if let RcKind::SysfsWrite { path, value } = &cmd.kind {
            // block/<dev>/<attr...> or class/.../<attr>
            let mut parts = path.splitn(3, '/');
            let (Some(_), Some(dev), Some(attr)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            out.push((
                format!("/etc/rc.local:{}", cmd.line),
                dev.to_string(),
                attr.to_string(),
                value.clone(),
            ));
        }
    }
    out
}

fn is_stacked_pattern(dev: &str) -> bool {
    dev.starts_with("md") || dev.starts_with("dm-")
}

static SCHEDULER_LEGACY: Rule = Rule {
    info: RuleInfo {
        id: "scheduler-legacy-name",
        area: "storage",
        title: "I/O scheduler set to a name from the single-queue era",
        severity: Severity::Warning,
        risk: Risk::NeedsRestart,
        checks: "A udev rule or rc.local writes noop, cfq, anticipatory or deadline to \
                 queue/scheduler. Linux 5.0+ rejects the first three (the write fails and \
                 the rule does nothing); deadline is only an alias of mq-deadline.",
        references: &[
            "https://docs.kernel.org/block/switching-sched.html",
            "block/mq-deadline.c (elevator_alias)",
        ],
    },
    evaluate: |info, ctx| {
        boot_settings(ctx)
            .into_iter()
            .filter(|(_, _, attr, _)| attr == "queue/scheduler")
            .filter_map(|(place, dev, _, value)| {
                let (severity, replacement, why) = match value.as_str() {
                    "noop" => (
                        Severity::Warning,
                        "none",
                        "'noop' was removed with the legacy block layer in Linux 5.0; the \
                         kernel rejects it, so this line silently does nothing. Its \
                         multi-queue successor is 'none'.",
                    ),
                    "cfq" | "anticipatory" => (
                        Severity::Warning,
                        "bfq",
                        "this scheduler was removed in Linux 5.0; the kernel rejects the name, \
                         so this line silently does nothing. The closest multi-queue \
                         scheduler is 'bfq'.",
                    ),
                    "deadline" => (
                        Severity::Info,
                        "mq-deadline",
                        "'deadline' still works only as an alias of mq-deadline, which the \
                         kernel already picks for single-queue disks (SATA, USB, SD/eMMC).",
                    ),
                    _ => return None,
                };
                Some(
                    Finding::of(
                        info,
                        format!("{place} sets scheduler '{value}' on {dev}"),
                        format!(
                            "{why} Keep the kernel default (mq-deadline for disks, none for \
                             NVMe); change it only after an A/B benchmark, and then write \
                             '{replacement}' and read the bracketed value back."
                        ),
                    )
                    .severity(severity)
                    .evidence("set at", &place)
                    .evidence("value written", &value)
                    .setting(format!("sysfs:block/{dev}/queue/scheduler"))
                    .change(Change::AdviceOnly {
                        action: format!(
                            "delete the scheduler setting at {place} (the kernel default \
                             applies); if a benchmark shows a gain, use '{replacement}'"
                        ),
                    }),
                )
            })
            .collect()
    },
};

static SCHEDULER_ON_STACKED: Rule = Rule {
    info: RuleInfo {
        id: "scheduler-on-md-dm",
        area: "storage",
        title: "I/O scheduler set on an md or dm device, which has none",
        severity: Severity::Notice,
        risk: Risk::NeedsRestart,
        checks: "A udev rule or rc.local sets queue/scheduler on md* or dm-* devices. Those are \
                 bio-based and have no scheduler; scheduling happens on their member disks.",
        references: &["https://docs.kernel.org/block/switching-sched.html"],
    },
    evaluate: |info, ctx| {
        boot_settings(ctx)
            .into_iter()
            .filter(|(_, dev, attr, _)| attr == "queue/scheduler" && is_stacked_pattern(dev))
            .map(|(place, dev, _, value)| {
                Finding::of(
                    info,
                    format!("{place} sets a scheduler on {dev}"),
                    format!(
                        "{dev} is a stacked device: its queue/scheduler offers only 'none', so \
                         writing '{value}' has no effect. Set schedulers on the member disks."
                    ),
                )
                .evidence("set at", &place)
                .evidence("device", &dev)
                .setting(format!("sysfs:block/{dev}/queue/scheduler"))
                .change(Change::AdviceOnly {
                    action: format!("delete the setting at {place}"),
                })
            })
            .collect()
    },
};

static BFQ_ON_FLASH: Rule = Rule {
    info: RuleInfo {
        id: "bfq-on-flash",
        area: "storage",
        title: "bfq on a fast flash device",
        severity: Severity::Notice,
        risk: Risk::RuntimeSafe,
        checks: "An NVMe device (or other non-rotational device with several hardware queues) \
                 uses bfq, whose per-request cost caps IOPS far below what flash can do.",
        references: &["https://docs.kernel.org/block/bfq-iosched.html"],
    },
    evaluate: |info, ctx| {
        devices(ctx)
            .iter()
            .filter(|d| d.kind == "disk" && d.transport == "nvme")
            .filter_map(|d| Some((d, d.queue.as_ref()?)))
            .filter(|(_, q)| q.scheduler.as_deref() == Some("bfq") && q.rotational == Some(false))
            .map(|(d, _)| {
                Finding::of(
                    info,
                    format!("{} (NVMe) uses bfq", d.name),
                    "bfq spends about 1.9 µs of CPU per request against 0.7 µs for \
                     mq-deadline (kernel bfq-iosched docs) and tops out near 80 KIOPS on \
                     small ARM cores, well below an NVMe drive. 'none' is the kernel default \
                     for NVMe.",
                )
                .evidence(format!("{} scheduler", d.name), "bfq")
                .setting(format!("sysfs:block/{}/queue/scheduler", d.name))
                .change(Change::SysfsAttribute {
                    path: format!("block/{}/queue/scheduler", d.name),
                    value: "none".into(),
                })
            })
            .collect()
    },
};

static READAHEAD_OVERSIZED: Rule = Rule {
    info: RuleInfo {
        id: "readahead-oversized",
        area: "storage",
        title: "Readahead far larger than the link it feeds needs",
        severity: Severity::Notice,
        risk: Risk::RuntimeSafe,
        checks: "The top device of a mounted chain has read_ahead_kb ≥ 4 MiB and either RAM ≤ \
                 256 MiB or 32 concurrent readers' windows would exceed RAM.",
        references: &[
            "Documentation/ABI/stable/sysfs-block (read_ahead_kb)",
            "block/blk-settings.c (blk_apply_bdi_limits)",
        ],
    },
    evaluate: |info, ctx| {
        let (Some(storage), Some(ram)) = (ctx.snapshot.storage.data(), ram_bytes(ctx)) else {
            return Vec::new();
        };
        let mut tops: Vec<&str> = storage
            .chains
            .iter()
            .filter(|c| !c.mount_points.is_empty())
            .filter_map(|c| c.devices.first().map(String::as_str))
            .collect();
        tops.sort();
        tops.dedup();
        tops.into_iter()
            .filter_map(|name| {
                let d = storage.devices.iter().find(|d| d.name == name)?;
                let ra = d.queue.as_ref()?.read_ahead_bytes?;
                let too_big = ra >= READAHEAD_LARGE_BYTES
                    && (ram <= SMALL_BOARD_RAM_BYTES || ra * READAHEAD_STREAMS > ram);
                if !too_big {
                    return None;
                }
                let (link, feeds) = link_goodput(ctx);
                let ms = ra as f64 * 1000.0 / link as f64;
                let suggest_kib: u64 = if ram <= SMALL_BOARD_RAM_BYTES {
                    512
                } else {
                    1024
                };
                Some(
                    Finding::of(
                        info,
                        format!("{name} reads ahead {} KiB", ra / 1024),
                        format!(
                            "{} KiB of readahead is {ms:.0} ms of {feeds}; {suggest_kib} KiB \
                             is {:.0} ms and usually saturates it. \
                             {READAHEAD_STREAMS} \
                             readers × {} MiB = {} MiB of page cache against {} MiB of RAM. \
                             Benchmark sequential reads at 128/512/1024/2048 KiB and keep the \
                             smallest that saturates the link.",
                            ra / 1024,
                            (suggest_kib * 1024) as f64 * 1000.0 / link as f64,
                            ra / MIB,
                            ra * READAHEAD_STREAMS / MIB,
                            ram / MIB
                        ),
                    )
                    .evidence(format!("{name} read_ahead_kb"), ra / 1024)
                    .evidence("memory total MiB", ram / MIB)
                    .setting(format!("sysfs:block/{name}/queue/read_ahead_kb"))
                    .change(Change::SysfsAttribute {
                        path: format!("block/{name}/queue/read_ahead_kb"),
                        value: suggest_kib.to_string(),
                    }),
                )
            })
            .collect()
    },
};

/// hdparm flags in rc.local, with the line and device list.
fn hdparm_flags(ctx: &Context, flag: &str) -> Vec<(usize, Option<String>, Vec<String>)> {
    let rc = config(ctx).and_then(|c| c.rc_local.as_ref());
    rc.into_iter()
        .flatten()
        .filter_map(|cmd| Some((cmd.line, hdparm_flag(&cmd.kind, flag)?)))
        .map(|(line, (value, devices))| (line, value, devices))
        .collect()
}

/// A flag's value and the devices of an hdparm command.
fn hdparm_flag(kind: &RcKind, flag: &str) -> Option<(Option<String>, Vec<String>)> {
    match kind {
        RcKind::Hdparm { flags, devices } => flags
            .iter()
            .find(|(f, _)| f == flag)
            .map(|(_, v)| (v.clone(), devices.clone())),
        _ => None,
    }
}

/// hdparm flags run at boot, by rc.local or a udev `RUN+=` hook: (file, line,
/// value, devices).
fn boot_hdparm_flags(
    ctx: &Context,
    flag: &str,
) -> Vec<(String, usize, Option<String>, Vec<String>)> {
    let rc = hdparm_flags(ctx, flag)
        .into_iter()
        .map(|(line, v, d)| (format!("/{RC_LOCAL}"), line, v, d));
    let udev = config(ctx)
        .map_or(&[][..], |c| c.udev_runs.as_slice())
        .iter()
        .filter_map(|r| {
            let (v, d) = hdparm_flag(&r.kind, flag)?;
            Some((r.file.clone(), r.line, v, d))
        });
    rc.chain(udev).collect()
}

/// What readahead must feed, in bytes/s, and a phrase naming it: the network
/// goodput bench net measured, else the fastest link's line rate less framing.
fn link_goodput(ctx: &Context) -> (u64, String) {
    let m = ctx.measurements;
    if let Some(goodput) = m.network_goodput_bytes_per_sec.filter(|g| *g >= 1.0) {
        let by = origin(m.network_goodput_measured_by.as_ref());
        return (
            goodput as u64,
            format!(
                "the network goodput of {:.0} MB/s measured {by}",
                goodput / 1e6
            ),
        );
    }
    let mbit = link_mbit(ctx);
    let link = mbit * PAYLOAD_BYTES_PER_MBIT;
    (
        link,
        format!("the {mbit} Mbit/s link ({:.0} MB/s)", link as f64 / 1e6),
    )
}

/// The fastest physical link that is up, in Mbit/s: what readahead must feed.
fn link_mbit(ctx: &Context) -> u64 {
    ctx.snapshot
        .network
        .data()
        .and_then(|n| {
            n.interfaces
                .iter()
                .filter(|i| !i.is_virtual && i.operstate.as_deref() == Some("up"))
                .filter_map(|i| i.speed_mbit_per_sec)
                .max()
        })
        .unwrap_or(DEFAULT_LINK_MBIT)
}

static HDPARM_AAM: Rule = Rule {
    info: RuleInfo {
        id: "hdparm-aam-obsolete",
        area: "storage",
        title: "hdparm -M (acoustic management) is obsolete",
        severity: Severity::Notice,
        risk: Risk::AdviceOnly,
        checks: "/etc/rc.local or a udev RUN+= hook runs hdparm -M. AAM was declared obsolete \
                 in ATA ACS-2 (2010); most drives ignore it and 254 is already the fast setting.",
        references: &[
            "hdparm(8)",
            "ATA ACS-2 (Automatic Acoustic Management obsolete)",
        ],
    },
    evaluate: |info, ctx| {
        boot_hdparm_flags(ctx, "M")
            .into_iter()
            .map(|(file, line, value, devs)| {
                let value = value.unwrap_or_else(|| "?".into());
                Finding::of(
                    info,
                    format!("{file}:{line} runs hdparm -M {value}"),
                    "Automatic Acoustic Management was made obsolete in ATA ACS-2; drives \
                     made since do not implement it, 254 is the 'fastest' level anyway and \
                     USB bridges often block the ATA passthrough. The command does nothing \
                     useful. For power, use -B/-S only where the drive reports support, and \
                     avoid frequent spin-down of RAID members.",
                )
                .evidence("set at", format!("{file}:{line}"))
                .evidence("devices", devs.join(" "))
                .setting(format!("file:{file}"))
                .change(Change::AdviceOnly {
                    action: format!("remove '-M {value}' from {file}:{line}"),
                })
            })
            .collect()
    },
};

static READAHEAD_IN_RC_LOCAL: Rule = Rule {
    info: RuleInfo {
        id: "readahead-in-rc-local",
        area: "storage",
        title: "Readahead set once at boot by hdparm -a or blockdev --setra",
        severity: Severity::Info,
        risk: Risk::NeedsRestart,
        checks: "/etc/rc.local sets readahead (hdparm -a, blockdev --setra). The value is lost \
                 when a USB disk re-enumerates and recomputed when queue limits change.",
        references: &[
            "hdparm(8)",
            "Documentation/ABI/stable/sysfs-block (read_ahead_kb)",
        ],
    },
    evaluate: |info, ctx| {
        let mut out = Vec::new();
        let mut push = |line: usize, sectors: u64, devs: Vec<String>, how: &str| {
            let kib = sectors / 2;
            let dev = devs
                .first()
                .map(|d| d.trim_start_matches("/dev/").to_string())
                .unwrap_or_else(|| "?".into());
            out.push(
                Finding::of(
                    info,
                    format!("/etc/rc.local:{line} sets readahead of {dev} to {kib} KiB"),
                    format!(
                        "{how} {sectors} sectors × 512 B = {kib} KiB, the same knob as \
                         read_ahead_kb. rc.local runs once, so a USB disk that re-enumerates \
                         or a queue-limit change loses it. Set it on the top device (the one \
                         the filesystem or dm-crypt sits on) with a udev rule on \
                         ACTION==\"add|change\", after benchmarking 128–2048 KiB."
                    ),
                )
                .evidence("set at", format!("/etc/rc.local:{line}"))
                .evidence("sectors", sectors)
                .setting(format!("sysfs:block/{dev}/queue/read_ahead_kb"))
                .change(Change::UdevRule {
                    subsystem: "block".into(),
                    matches: vec![("KERNEL".into(), dev.clone())],
                    attribute: "queue/read_ahead_kb".into(),
                    value: kib.min(1024).to_string(),
                }),
            );
        };
        for (line, value, devs) in hdparm_flags(ctx, "a") {
            if let Some(sectors) = value.and_then(|v| v.parse().ok()) {
                push(line, sectors, devs, "hdparm -a counts sectors:");
            }
        }
        for cmd in config(ctx)
            .and_then(|c| c.rc_local.as_ref())
            .into_iter()
            .flatten()
        {
            if let RcKind::BlockdevSetra { sectors, devices } = &cmd.kind {
                push(
                    cmd.line,
                    *sectors,
                    devices.clone(),
                    "blockdev --setra counts sectors:",
                );
            }
        }
        out
    },
};

static STRIPE_CACHE_RAM: Rule = Rule {
    info: RuleInfo {
        id: "md-stripe-cache-ram",
        area: "storage",
        title: "md stripe cache too big for this RAM",
        severity: Severity::Warning,
        risk: Risk::RuntimeSafe,
        checks: "stripe_cache_size × page size × member disks exceeds 5% of RAM. Each entry \
                 pins one page per member disk (16× more on 64 KiB-page kernels).",
        references: &[
            "https://docs.kernel.org/admin-guide/md.html (stripe_cache_size)",
            "md/raid5: let multiple devices of stripe_head share page",
        ],
    },
    evaluate: |info, ctx| {
        let (Some(storage), Some(ram)) = (ctx.snapshot.storage.data(), ram_bytes(ctx)) else {
            return Vec::new();
        };
        storage
            .md_arrays
            .iter()
            .filter_map(|a| {
                let entries = a.stripe_cache_size?;
                let members = a.raid_disks.unwrap_or(a.members.len() as u64);
                let bytes = entries * PAGE_BYTES * members;
                if entries <= STRIPE_CACHE_DEFAULT
                    || bytes * 100 <= ram * STRIPE_CACHE_MAX_RAM_PERCENT
                {
                    return None;
                }
                // Largest power of two that stays within the cap, never below the default.
                let cap_entries = ram * STRIPE_CACHE_MAX_RAM_PERCENT / 100 / (PAGE_BYTES * members);
                let mut suggested = STRIPE_CACHE_DEFAULT;
                while suggested * 2 <= cap_entries {
                    suggested *= 2;
                }
                // Where the boot configuration sets it, so the fix lands there too.
                let boot: Vec<String> = boot_settings(ctx)
                    .into_iter()
                    .filter(|(_, dev, attr, _)| {
                        attr == "md/stripe_cache_size" && (dev == &a.name || dev.contains('*'))
                    })
                    .map(|(place, _, _, value)| format!("{place} ({value})"))
                    .collect();
                let persist = if boot.is_empty() {
                    String::new()
                } else {
                    format!(
                        " Change it where the boot sets it too: {}.",
                        boot.join(", ")
                    )
                };
                let mut f = Finding::of(
                    info,
                    format!("{} stripe cache pins {} MiB", a.name, bytes / MIB),
                    format!(
                        "{entries} entries × 4 KiB page × {members} disks = {} MiB, {:.1}% \
                             of {} MiB RAM (cap {STRIPE_CACHE_MAX_RAM_PERCENT}% = {} MiB). On a \
                             64 KiB-page kernel it would be 16× that. {suggested} entries = {} \
                             MiB stays under the cap; step 256→512→1024 with a sequential \
                             write benchmark and watch stripe_cache_active.{persist}",
                        bytes / MIB,
                        bytes as f64 * 100.0 / ram as f64,
                        ram / MIB,
                        ram * STRIPE_CACHE_MAX_RAM_PERCENT / 100 / MIB,
                        suggested * PAGE_BYTES * members / MIB
                    ),
                )
                .evidence(format!("{} stripe_cache_size", a.name), entries)
                .evidence("member disks", members)
                .evidence("memory total MiB", ram / MIB)
                .setting(format!("sysfs:block/{}/md/stripe_cache_size", a.name))
                .change(Change::SysfsAttribute {
                    path: format!("block/{}/md/stripe_cache_size", a.name),
                    value: suggested.to_string(),
                });
                for place in boot {
                    f = f.evidence("set at boot by", &place);
                }
                Some(f)
            })
            .collect()
    },
};

fn md_rule(
    ctx: &Context,
    pick: impl Fn(&crate::probe::md::MdArray) -> Option<Finding>,
) -> Vec<Finding> {
    ctx.snapshot
        .storage
        .data()
        .map(|s| s.md_arrays.iter().filter_map(pick).collect())
        .unwrap_or_default()
}

static MD_DEGRADED: Rule = Rule {
    info: RuleInfo {
        id: "md-degraded",
        area: "storage",
        title: "RAID array is degraded",
        severity: Severity::Critical,
        risk: Risk::AdviceOnly,
        checks: "An md array reports missing or failed members: one more failure loses data.",
        references: &["md(4)", "mdadm(8) --detail, --add"],
    },
    evaluate: |info, ctx| {
        md_rule(ctx, |a| {
            if !a.degraded {
                return None;
            }
            let missing = a.degraded_disks.unwrap_or(1);
            Some(
                Finding::of(
                    info,
                    format!("{} runs degraded ({missing} disk(s) missing)", a.name),
                    format!(
                        "{} has {} of {} members working (map {}). A {} array survives no \
                         further failure at this point; back up first, then replace the \
                         disk and let it rebuild.",
                        a.name,
                        a.raid_disks.unwrap_or(0).saturating_sub(missing),
                        a.raid_disks.unwrap_or(0),
                        a.member_map.as_deref().unwrap_or("?"),
                        a.level.as_deref().unwrap_or("raid")
                    ),
                )
                .evidence(format!("{} degraded disks", a.name), missing)
                .setting(format!("sysfs:block/{}/md/degraded", a.name))
                .change(Change::AdviceOnly {
                    action: format!(
                        "check 'mdadm --detail /dev/{}', replace the failed disk and \
                         'mdadm /dev/{} --add' it",
                        a.name, a.name
                    ),
                }),
            )
        })
    },
};

/// mismatch_cnt counts sectors; above this it is more than swap/unwritten noise.
const MISMATCH_WARN_SECTORS: u64 = 1024;

static MD_MISMATCH: Rule = Rule {
    info: RuleInfo {
        id: "md-mismatch",
        area: "storage",
        title: "RAID check found mismatched parity",
        severity: Severity::Notice,
        risk: Risk::AdviceOnly,
        checks: "mismatch_cnt > 0 after a check: some stripes' parity disagrees with the data \
                 (warning above 1024 sectors).",
        references: &["https://docs.kernel.org/admin-guide/md.html (mismatch_cnt)"],
    },
    evaluate: |info, ctx| {
        md_rule(ctx, |a| {
            let n = a.mismatch_cnt.filter(|n| *n > 0)?;
            let sev = if n > MISMATCH_WARN_SECTORS {
                Severity::Warning
            } else {
                Severity::Notice
            };
            Some(
                Finding::of(
                    info,
                    format!("{} mismatch_cnt is {n}", a.name),
                    format!(
                        "{n} sectors × 512 B = {} KiB of stripes whose parity disagrees. A few \
                         can come from aborted writes; more point at a disk or memory problem. \
                         Check SMART, then run 'repair' and a new 'check'.",
                        n / 2
                    ),
                )
                .severity(sev)
                .evidence(format!("{} mismatch_cnt", a.name), n)
                .setting(format!("sysfs:block/{}/md/mismatch_cnt", a.name))
                .change(Change::AdviceOnly {
                    action: format!(
                        "echo repair > /sys/block/{}/md/sync_action, then check again",
                        a.name
                    ),
                }),
            )
        })
    },
};

static MD_RESYNC: Rule = Rule {
    info: RuleInfo {
        id: "md-resync-running",
        area: "storage",
        title: "RAID resync, recovery or check in progress",
        severity: Severity::Info,
        risk: Risk::AdviceOnly,
        checks: "An md array is resyncing, recovering, reshaping or checking; benchmarks now \
                 measure the array under that load.",
        references: &["https://docs.kernel.org/admin-guide/md.html (sync_action)"],
    },
    evaluate: |info, ctx| {
        md_rule(ctx, |a| {
            let action = a.sync_action.as_deref().filter(|s| *s != "idle")?;
            let pct = a
                .sync
                .as_ref()
                .and_then(|s| s.percent)
                .map_or(String::new(), |p| format!(" at {p:.1}%"));
            Some(
                Finding::of(
                    info,
                    format!("{} is running {action}{pct}", a.name),
                    "While md syncs, every disk is busy; throughput figures taken now are \
                     not the array's normal performance. Benchmark after it finishes.",
                )
                .evidence(format!("{} sync_action", a.name), action)
                .setting(format!("sysfs:block/{}/md/sync_action", a.name))
                .change(Change::AdviceOnly {
                    action: "wait for the sync to finish before benchmarking".into(),
                }),
            )
        })
    },
};

/// ext4 options the kernel now parses only to ignore (fs/ext4/super.c Opt_removed).
const EXT4_REMOVED_OPTIONS: &[&str] = &["nobh", "bh"];

fn fstab_findings(
    ctx: &Context,
    pick: impl Fn(&crate::probe::config_files::FstabEntry) -> Option<Finding>,
) -> Vec<Finding> {
    config(ctx)
        .and_then(|c| c.fstab.as_ref())
        .map(|f| f.iter().filter_map(pick).collect())
        .unwrap_or_default()
}

/// A finding that an fstab entry should drop `options`.
fn drop_options(
    info: &RuleInfo,
    e: &crate::probe::config_files::FstabEntry,
    options: Vec<String>,
    why: &str,
) -> Finding {
    Finding::of(
        info,
        format!(
            "/etc/fstab:{} {} uses {}",
            e.line,
            e.mount_point,
            options.join(",")
        ),
        why,
    )
    .evidence("fstab line", e.line)
    .evidence("options", e.options.join(","))
    .setting(format!("fstab:{}:{}", e.mount_point, options.join(",")))
    .change(Change::MountOption {
        mount_point: e.mount_point.clone(),
        add: Vec::new(),
        remove: options,
    })
}

static FSTAB_REMOVED_OPTION: Rule = Rule {
    info: RuleInfo {
        id: "fstab-removed-option",
        area: "storage",
        title: "fstab uses a mount option the kernel removed",
        severity: Severity::Notice,
        risk: Risk::NeedsRestart,
        checks: "An ext4 fstab entry has nobh or bh, which ext4 ignores with a warning.",
        references: &[
            "https://docs.kernel.org/admin-guide/ext4.html",
            "fs/ext4/super.c (Opt_removed)",
        ],
    },
    evaluate: |info, ctx| {
        fstab_findings(ctx, |e| {
            if e.fs_type != "ext4" {
                return None;
            }
            let removed: Vec<String> = e
                .options
                .iter()
                .filter(|o| EXT4_REMOVED_OPTIONS.contains(&o.as_str()))
                .cloned()
                .collect();
            if removed.is_empty() {
                return None;
            }
            Some(drop_options(
                info,
                e,
                removed,
                "ext4 lists these as removed options: it logs a warning at every mount \
                 and does nothing else. Drop them.",
            ))
        })
    },
};

static FSTAB_NODIRATIME: Rule = Rule {
    info: RuleInfo {
        id: "fstab-nodiratime-redundant",
        area: "storage",
        title: "nodiratime is redundant with noatime",
        severity: Severity::Info,
        risk: Risk::NeedsRestart,
        checks: "An fstab entry has both noatime and nodiratime; noatime already covers \
                 directories.",
        references: &["mount(8) (noatime, nodiratime)"],
    },
    evaluate: |info, ctx| {
        fstab_findings(ctx, |e| {
            let has = |o: &str| e.options.iter().any(|x| x == o);
            if !(has("noatime") && has("nodiratime")) {
                return None;
            }
            Some(
                Finding::of(
                    info,
                    format!(
                        "/etc/fstab:{} {} has noatime,nodiratime",
                        e.line, e.mount_point
                    ),
                    "noatime implies nodiratime (mount(8)); the second option changes nothing.",
                )
                .evidence("fstab line", e.line)
                .setting(format!("fstab:{}:nodiratime", e.mount_point))
                .change(Change::MountOption {
                    mount_point: e.mount_point.clone(),
                    add: Vec::new(),
                    remove: vec!["nodiratime".into()],
                }),
            )
        })
    },
};

static FSTAB_BARRIER_OFF: Rule = Rule {
    info: RuleInfo {
        id: "fstab-barrier-off",
        area: "storage",
        title: "Write barriers disabled in fstab",
        severity: Severity::Warning,
        risk: Risk::NeedsRestart,
        checks: "An ext4 entry has nobarrier or barrier=0 (cache flushes off: a power cut can \
                 corrupt the journal), or an XFS entry has barrier/nobarrier, options XFS \
                 removed in Linux 4.19 so the mount fails.",
        references: &[
            "https://docs.kernel.org/admin-guide/ext4.html (barrier)",
            "https://docs.kernel.org/admin-guide/xfs.html (deprecated and removed options)",
        ],
    },
    evaluate: |info, ctx| {
        fstab_findings(ctx, |e| {
            let bad: Vec<String> = e
                .options
                .iter()
                .filter(|o| match e.fs_type.as_str() {
                    "ext4" | "ext3" => ["nobarrier", "barrier=0"].contains(&o.as_str()),
                    "xfs" => ["nobarrier", "barrier"].contains(&o.as_str()),
                    _ => false,
                })
                .cloned()
                .collect();
            if bad.is_empty() {
                return None;
            }
            let why = if e.fs_type == "xfs" {
                "XFS removed barrier/nobarrier in Linux 4.19: the mount now fails with an \
                 unknown-option error (XFS always issues flushes)."
            } else {
                "Without barriers ext4 does not flush the disk's volatile write cache at \
                 journal commits; a power cut or USB disconnect can leave a corrupt journal \
                 and lost files. The speed gain on modern kernels is small."
            };
            Some(drop_options(info, e, bad, why))
        })
    },
};

fn is_data_mount(mount_point: &str) -> bool {
    !SYSTEM_MOUNTS.contains(&mount_point)
        && !["/run", "/proc", "/sys", "/dev", "/tmp"]
            .iter()
            .any(|p| mount_point == *p || mount_point.starts_with(&format!("{p}/")))
}

static NO_NOATIME: Rule = Rule {
    info: RuleInfo {
        id: "data-fs-without-noatime",
        area: "storage",
        title: "Data filesystem updates access times",
        severity: Severity::Info,
        risk: Risk::NeedsRestart,
        checks: "A mounted data filesystem (ext4, xfs, btrfs, f2fs outside the system mounts) \
                 uses neither noatime nor lazytime.",
        references: &["mount(8) (noatime, relatime, lazytime)"],
    },
    evaluate: |info, ctx| {
        let Some(fs) = ctx.snapshot.filesystems.data() else {
            return Vec::new();
        };
        fs.mounts
            .iter()
            .filter(|m| ["ext4", "xfs", "btrfs", "f2fs"].contains(&m.fs_type.as_str()))
            .filter(|m| m.bind_root.is_none() && is_data_mount(&m.mount_point))
            .filter(|m| {
                !m.mount_options
                    .iter()
                    .any(|o| o == "noatime" || o == "lazytime")
            })
            .map(|m| {
                Finding::of(
                    info,
                    format!("{} is mounted without noatime", m.mount_point),
                    "With relatime (the default) the first read after each write, and one a \
                     day, writes the inode back; on a share of many files that is extra \
                     small writes on disks and flash. noatime (or lazytime) avoids them \
                     unless an application needs access times.",
                )
                .evidence(
                    format!("{} options", m.mount_point),
                    m.mount_options.join(","),
                )
                .setting(format!("fstab:{}:noatime", m.mount_point))
                .change(Change::MountOption {
                    mount_point: m.mount_point.clone(),
                    add: vec!["noatime".into()],
                    remove: vec!["relatime".into()],
                })
            })
            .collect()
    },
};

/// Mount points whose storage chain includes a USB device.
fn usb_mount_points(ctx: &Context) -> Vec<String> {
    let Some(storage) = ctx.snapshot.storage.data() else {
        return Vec::new();
    };
    storage
        .chains
        .iter()
        .filter(|c| {
            c.devices.iter().any(|n| {
                storage
                    .devices
                    .iter()
                    .any(|d| &d.name == n && d.transport == "usb")
            })
        })
        .flat_map(|c| c.mount_points.iter().cloned())
        .collect()
}

static USB_WITHOUT_NOFAIL: Rule = Rule {
    info: RuleInfo {
        id: "usb-data-disk-without-nofail",
        area: "storage",
        title: "USB data disk in fstab without nofail",
        severity: Severity::Notice,
        risk: Risk::NeedsRestart,
        checks: "An fstab entry for a data filesystem on a USB disk lacks nofail: if the disk \
                 is missing or slow at boot, the box drops to emergency mode.",
        references: &["systemd.mount(5) (nofail)", "fstab(5)"],
    },
    evaluate: |info, ctx| {
        let usb = usb_mount_points(ctx);
        fstab_findings(ctx, |e| {
            if !usb.contains(&e.mount_point)
                || !is_data_mount(&e.mount_point)
                || e.options.iter().any(|o| o == "nofail")
            {
                return None;
            }
            Some(
                Finding::of(
                    info,
                    format!("/etc/fstab:{} {} (USB) lacks nofail", e.line, e.mount_point),
                    "USB disks enumerate late and sometimes not at all; without nofail \
                     systemd waits 90 s and then stops the boot in emergency mode, so a \
                     headless box is unreachable over the network.",
                )
                .evidence("fstab line", e.line)
                .evidence("options", e.options.join(","))
                .setting(format!("fstab:{}:nofail", e.mount_point))
                .change(Change::MountOption {
                    mount_point: e.mount_point.clone(),
                    add: vec!["nofail".into()],
                    remove: Vec::new(),
                }),
            )
        })
    },
};

/// Match keys that do not narrow a rule to particular devices.
const BROAD_UDEV_KEYS: &[&str] = &[
    "ACTION",
    "SUBSYSTEM",
    "SUBSYSTEMS",
    "DEVTYPE",
    "KERNEL",
    "TEST",
];

/// Boot-time `power/control=auto` settings that can reach a USB storage bridge:
/// blanket udev rules, rules naming usb-storage/uas, and rc.local writes. Rules
/// gated on a device list (systemd's hwdb `ID_AUTOSUSPEND`, vendor ids) are not.
fn autosuspend_settings(ctx: &Context) -> Vec<(String, String)> {
    let Some(c) = config(ctx) else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = c
        .udev_assignments
        .iter()
        .filter(|a| a.attribute == "power/control" && a.value == "auto")
        .filter(|a| {
            let storage = a
                .matches
                .iter()
                .any(|m| m.contains("usb-storage") || m.contains("uas"));
            let blanket = a.matches.iter().all(|m| {
                BROAD_UDEV_KEYS.iter().any(|k| {
                    m.strip_prefix(k)
                        .is_some_and(|r| r.starts_with("==") || r.starts_with("!="))
                })
            });
            storage || blanket
        })
        .map(|a| (format!("{}:{}", a.file, a.line), a.matches.join(", ")))
        .collect();
    for cmd in c.rc_local.iter().flatten() {
        if let RcKind::SysfsWrite { path, value } = &cmd.kind
            && path.ends_with("power/control")
            && value == "auto"
            && (path.starts_with("bus/usb/") || path.contains("/usb"))
        {
            out.push((format!("/etc/rc.local:{}", cmd.line), path.clone()));
        }
    }
    out
}

static USB_AUTOSUSPEND: Rule = Rule {
    info: RuleInfo {
        id: "usb-storage-autosuspend",
        area: "storage",
        title: "USB autosuspend enabled for storage bridges",
        severity: Severity::Warning,
        risk: Risk::AdviceOnly,
        checks: "A udev rule or rc.local sets power/control=auto on USB devices while the box \
                 has USB storage: suspending a storage bridge resets or drops the disk.",
        references: &[
            "https://docs.kernel.org/driver-api/usb/power-management.html",
            "powertop issue #101 (auto-tune suspends USB devices)",
        ],
    },
    evaluate: |info, ctx| {
        let has_usb_storage = devices(ctx).iter().any(|d| d.transport == "usb");
        if !has_usb_storage {
            return Vec::new();
        }
        // Bridges autosuspended right now, whoever set it.
        let live = devices(ctx)
            .iter()
            .filter(|d| d.usb_power_control.as_deref() == Some("auto"))
            .map(|d| {
                (
                    format!(
                        "{}'s USB bridge ({})",
                        d.name,
                        d.driver.as_deref().unwrap_or("?")
                    ),
                    "power/control = auto".to_string(),
                )
            });
        autosuspend_settings(ctx)
            .into_iter()
            .chain(live)
            .map(|(place, dev)| {
                Finding::of(
                    info,
                    format!("{place} enables USB autosuspend"),
                    "When a USB storage bridge autosuspends, the next I/O waits for a resume \
                     that many bridges handle badly: the disk resets, I/O errors reach the \
                     filesystem, and a RAID or dm-crypt layer above may drop the device. \
                     Never autosuspend storage bridges; exclude usb-storage/uas devices \
                     (power/control=on).",
                )
                .evidence("set at", &place)
                .evidence("device match", &dev)
                .setting("sysfs:bus/usb/devices/*/power/control")
                .change(Change::AdviceOnly {
                    action: format!(
                        "remove the setting at {place} or restrict it to non-storage \
                         devices; keep power/control=on for usb-storage and uas"
                    ),
                })
            })
            .collect()
    },
};

static WRITE_CACHE_OFF: Rule = Rule {
    info: RuleInfo {
        id: "disk-write-cache-off",
        area: "storage",
        title: "SATA disk write cache is off",
        severity: Severity::Info,
        risk: Risk::AdviceOnly,
        checks: "A rotational SATA/SAS disk reports 'write through': its volatile write cache \
                 is disabled, which costs write throughput.",
        references: &[
            "Documentation/ABI/stable/sysfs-block (queue/write_cache)",
            "hdparm(8) -W",
        ],
    },
    evaluate: |info, ctx| {
        devices(ctx)
            .iter()
            .filter(|d| d.kind == "disk" && (d.transport == "sata" || d.transport == "sas"))
            .filter(|d| {
                d.queue.as_ref().is_some_and(|q| {
                    q.rotational == Some(true) && q.write_cache.as_deref() == Some("write through")
                })
            })
            .map(|d| {
                Finding::of(
                    info,
                    format!("{} has its write cache off", d.name),
                    "With the drive's write cache off each write waits for the platter; the \
                     kernel issues flushes when filesystems need ordering, so a write-back \
                     cache is safe with barriers on. Someone may have disabled it on \
                     purpose (hdparm -W0); check before turning it on with hdparm -W1.",
                )
                .evidence(format!("{} write_cache", d.name), "write through")
                .setting(format!("sysfs:block/{}/queue/write_cache", d.name))
                .change(Change::AdviceOnly {
                    action: format!(
                        "hdparm -W1 /dev/{} if the disk was not set so on purpose",
                        d.name
                    ),
                })
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
    fn legacy_scheduler_names_flagged_on_oldguide_only() {
        let f = run(&SCHEDULER_LEGACY, &snapshot_of("oldguide"));
        let values: Vec<_> = f
            .iter()
            .map(|f| (f.evidence[1].value.as_str(), f.severity))
            .collect();
        assert_eq!(
            values,
            [
                ("deadline", Severity::Info),
                ("noop", Severity::Warning),
                ("cfq", Severity::Warning),
                ("deadline", Severity::Info)
            ]
        );
        assert!(f[1].rationale.contains("'none'"));
        assert!(run(&SCHEDULER_LEGACY, &snapshot_of("rk3399-raid5")).is_empty());
        let f = run(&SCHEDULER_ON_STACKED, &snapshot_of("oldguide"));
        assert_eq!(f.len(), 1);
        assert!(f[0].title.contains("md[0-9]*"), "{}", f[0].title);
        assert!(run(&SCHEDULER_ON_STACKED, &snapshot_of("rk3399-raid5")).is_empty());
        // The same mistake written into rc.local.
        let mut snap = snapshot_of("rk3399-raid5");
        snap.config_files = Outcome::Ok {
            data: ConfigFiles {
                rc_local: Some(crate::probe::config_files::parse_rc_local(
                    "echo cfq > /sys/block/sda/queue/scheduler\n\
                     echo mq-deadline > /sys/block/sdb/queue/scheduler\n",
                )),
                ..Default::default()
            },
        };
        let f = run(&SCHEDULER_LEGACY, &snap);
        assert_eq!(f.len(), 1, "mq-deadline is a current name");
        assert_eq!(f[0].title, "/etc/rc.local:1 sets scheduler 'cfq' on sda");
    }

    #[test]
    fn bfq_on_nvme_only() {
        let mut snap = snapshot_of("rk3399-raid5");
        assert!(run(&BFQ_ON_FLASH, &snap).is_empty());
        if let Outcome::Ok { data } = &mut snap.storage {
            let d = &mut data.devices[0];
            d.transport = "nvme".into();
            let q = d.queue.as_mut().expect("queue");
            q.rotational = Some(false);
            q.scheduler = Some("bfq".into());
        }
        assert_eq!(run(&BFQ_ON_FLASH, &snap).len(), 1);
    }

    #[test]
    fn readahead_oversized_on_oldguide_md() {
        let f = run(&READAHEAD_OVERSIZED, &snapshot_of("oldguide"));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].title.contains("md0 reads ahead 32768 KiB"));
        assert!(
            f[0].rationale.contains("32 readers × 32 MiB = 1024 MiB"),
            "{}",
            f[0].rationale
        );
        for b in ["rk3399-raid5", "buildhost", "pogoplug-v4", "rpi2-luks"] {
            assert!(run(&READAHEAD_OVERSIZED, &snapshot_of(b)).is_empty(), "{b}");
        }
    }

    #[test]
    fn readahead_is_weighed_against_measured_network_goodput() {
        let snap = snapshot_of("oldguide");
        let unmeasured = run(&READAHEAD_OVERSIZED, &snap);
        assert!(
            unmeasured[0].rationale.contains("Mbit/s link"),
            "{}",
            unmeasured[0].rationale
        );
        let m = crate::advise::Measurements {
            network_goodput_bytes_per_sec: Some(40e6),
            network_goodput_measured_by: Some(crate::advise::measured::MeasuredBy {
                run_id: 5,
                run_kind: "bench-net".into(),
            }),
            ..Default::default()
        };
        let f = crate::advise::test_support::run_measured(&READAHEAD_OVERSIZED, &snap, &m);
        // 32 MiB at 40 MB/s = 839 ms; 1 MiB = 26 ms.
        assert!(
            f[0].rationale.contains(
                "32768 KiB of readahead is 839 ms of the network goodput of 40 MB/s measured \
                 by bench net run 5; 1024 KiB is 26 ms"
            ),
            "{}",
            f[0].rationale
        );
    }

    #[test]
    fn hdparm_and_readahead_in_rc_local() {
        let snap = snapshot_of("oldguide");
        let f = run(&HDPARM_AAM, &snap);
        assert_eq!(f.len(), 1);
        assert!(f[0].title.contains("hdparm -M 254"));
        let f = run(&READAHEAD_IN_RC_LOCAL, &snap);
        assert_eq!(f.len(), 2);
        assert!(
            f[0].rationale.contains("1024 sectors × 512 B = 512 KiB"),
            "{}",
            f[0].rationale
        );
        assert!(f[1].title.contains("md0 to 32768 KiB"));
        assert!(run(&HDPARM_AAM, &snapshot_of("rk3399-raid5")).is_empty());
        assert!(run(&READAHEAD_IN_RC_LOCAL, &snapshot_of("rk3399-raid5")).is_empty());
    }

    /// The same hdparm -M and a legacy scheduler in udev RUN+= hooks, which
    /// were once not read.
    #[test]
    fn udev_run_hooks_are_boot_settings_too() {
        let mut snap = snapshot_of("rk3399-raid5");
        snap.config_files = Outcome::Ok {
            data: ConfigFiles {
                udev_runs: crate::probe::config_files::parse_udev_runs(
                    "/etc/udev/rules.d/50-disks.rules",
                    "ACTION==\"add\", KERNEL==\"sda\", RUN+=\"/sbin/hdparm -M 254 /dev/%k\"\n\
                     ACTION==\"add\", KERNEL==\"sdb\", \
                     RUN+=\"/bin/sh -c 'echo cfq > /sys/block/%k/queue/scheduler'\"\n",
                ),
                ..Default::default()
            },
        };
        let f = run(&HDPARM_AAM, &snap);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            f[0].title,
            "/etc/udev/rules.d/50-disks.rules:1 runs hdparm -M 254"
        );
        assert_eq!(
            f[0].recommendation[0],
            Change::AdviceOnly {
                action: "remove '-M 254' from /etc/udev/rules.d/50-disks.rules:1".into()
            }
        );
        let f = run(&SCHEDULER_LEGACY, &snap);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].title.starts_with("/etc/udev/rules.d/50-disks.rules:2"),
            "{}",
            f[0].title
        );
    }

    #[test]
    fn stripe_cache_against_ram() {
        let f = run(&STRIPE_CACHE_RAM, &snapshot_of("oldguide"));
        assert_eq!(f.len(), 1);
        let r = &f[0].rationale;
        assert!(
            r.contains("8192 entries × 4 KiB page × 4 disks = 128 MiB"),
            "{r}"
        );
        assert!(r.contains("12.9% of 988 MiB"), "{r}");
        assert!(r.contains("/etc/rc.local:5 (8192)"), "{r}");
        assert_eq!(
            f[0].recommendation[0],
            Change::SysfsAttribute {
                path: "block/md0/md/stripe_cache_size".into(),
                value: "2048".into()
            }
        );
        assert!(
            run(&STRIPE_CACHE_RAM, &snapshot_of("rk3399-raid5")).is_empty(),
            "default 256"
        );
    }

    #[test]
    fn md_health_rules() {
        let mut snap = snapshot_of("rk3399-raid5");
        for r in [&MD_DEGRADED, &MD_MISMATCH, &MD_RESYNC] {
            assert!(run(r, &snap).is_empty(), "{}", r.info.id);
        }
        if let Outcome::Ok { data } = &mut snap.storage {
            let a = &mut data.md_arrays[0];
            a.degraded = true;
            a.degraded_disks = Some(1);
            a.member_map = Some("UU_U".into());
            a.mismatch_cnt = Some(4096);
            a.sync_action = Some("recover".into());
        }
        let f = run(&MD_DEGRADED, &snap);
        assert_eq!(f[0].severity, Severity::Critical);
        assert!(f[0].rationale.contains("3 of 4 members working (map UU_U)"));
        let f = run(&MD_MISMATCH, &snap);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].rationale.contains("2048 KiB"));
        assert_eq!(run(&MD_RESYNC, &snap).len(), 1);
    }

    #[test]
    fn fstab_rules_on_oldguide() {
        let snap = snapshot_of("oldguide");
        let f = run(&FSTAB_REMOVED_OPTION, &snap);
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].recommendation[0],
            Change::MountOption {
                mount_point: "/srv".into(),
                add: vec![],
                remove: vec!["nobh".into()]
            }
        );
        assert_eq!(run(&FSTAB_NODIRATIME, &snap).len(), 1);
        assert!(run(&FSTAB_BARRIER_OFF, &snap).is_empty());
        let mut barrier = snap.clone();
        barrier.config_files = Outcome::Ok {
            data: ConfigFiles {
                fstab: Some(
                    crate::probe::config_files::parse_fstab(
                        "/dev/md0 /srv ext4 noatime,barrier=0 0 2\n\
                         /dev/sda1 /backup xfs nobarrier 0 2\n\
                         /dev/sdb1 /mnt ext4 barrier=1 0 2\n",
                    )
                    .0,
                ),
                ..Default::default()
            },
        };
        let f = run(&FSTAB_BARRIER_OFF, &barrier);
        assert_eq!(f.len(), 2);
        assert!(f[0].rationale.contains("power cut"));
        assert!(f[1].rationale.contains("4.19"));
        for b in ["rk3399-raid5", "buildhost"] {
            assert!(run(&FSTAB_REMOVED_OPTION, &snapshot_of(b)).is_empty());
            assert!(run(&FSTAB_NODIRATIME, &snapshot_of(b)).is_empty());
        }
    }

    #[test]
    fn noatime_on_data_mounts_only() {
        let mut snap = snapshot_of("rpi2-luks");
        assert!(run(&NO_NOATIME, &snap).is_empty());
        assert!(
            run(&NO_NOATIME, &snapshot_of("buildhost")).is_empty(),
            "/ is system"
        );
        if let Outcome::Ok { data } = &mut snap.filesystems {
            for m in &mut data.mounts {
                m.mount_options = vec!["rw".into(), "relatime".into()];
            }
        }
        let f = run(&NO_NOATIME, &snap);
        assert_eq!(f.len(), 1, "only /srv/nas, not / or /boot/firmware");
        assert!(f[0].title.contains("/srv/nas"));
    }

    #[test]
    fn usb_nofail_and_autosuspend() {
        use crate::probe::config_files::{parse_fstab, parse_udev_rules};
        let mut snap = snapshot_of("rpi2-luks");
        assert!(
            run(&USB_WITHOUT_NOFAIL, &snap).is_empty(),
            "no fstab in fixture"
        );
        let udev = "ACTION==\"add\", SUBSYSTEM==\"usb\", ATTR{power/control}=\"auto\"\n";
        snap.config_files = Outcome::Ok {
            data: ConfigFiles {
                fstab: Some(parse_fstab("/dev/mapper/nas /srv/nas ext4 noatime 0 2\n").0),
                udev_assignments: parse_udev_rules("/etc/udev/rules.d/50-pt.rules", udev),
                ..Default::default()
            },
        };
        assert_eq!(run(&USB_WITHOUT_NOFAIL, &snap).len(), 1);
        assert_eq!(run(&USB_AUTOSUSPEND, &snap).len(), 1);
        let pogo = snapshot_of("pogoplug-v4");
        let sda = pogo
            .storage
            .data()
            .and_then(|s| s.devices.iter().find(|d| d.name == "sda"));
        assert_eq!(
            sda.and_then(|d| d.usb_power_control.as_deref()),
            Some("on"),
            "read from the bridge's USB device"
        );
        assert!(run(&USB_AUTOSUSPEND, &pogo).is_empty());
        let mut sata = snapshot_of("rk3399-raid5");
        sata.config_files = snap.config_files.clone();
        assert!(run(&USB_WITHOUT_NOFAIL, &sata).is_empty(), "not USB");
        assert!(run(&USB_AUTOSUSPEND, &sata).is_empty(), "no USB storage");
        // systemd's stock 60-autosuspend.rules only enables it for hwdb-listed devices.
        let stock = "ENV{ID_AUTOSUSPEND}==\"1\", TEST==\"power/control\", \\\n  ATTR{power/control}=\"auto\"\n";
        snap.config_files = Outcome::Ok {
            data: ConfigFiles {
                udev_assignments: parse_udev_rules("/lib/udev/rules.d/60-autosuspend.rules", stock),
                rc_local: Some(crate::probe::config_files::parse_rc_local(
                    "for f in /sys/bus/usb/devices/*/power/control; do echo auto > $f; done\n\
                     echo auto > /sys/bus/usb/devices/1-1/power/control\n",
                )),
                ..Default::default()
            },
        };
        let f = run(&USB_AUTOSUSPEND, &snap);
        assert_eq!(f.len(), 1, "only the rc.local write: {f:?}");
        assert!(f[0].title.starts_with("/etc/rc.local:2"));
        // The live attribute of the disk's USB device.
        snap.config_files = Outcome::Ok {
            data: ConfigFiles::default(),
        };
        assert!(run(&USB_AUTOSUSPEND, &snap).is_empty());
        if let Outcome::Ok { data } = &mut snap.storage {
            for d in data.devices.iter_mut().filter(|d| d.name == "sda") {
                d.usb_power_control = Some("auto".into());
            }
        }
        let f = run(&USB_AUTOSUSPEND, &snap);
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].title,
            "sda's USB bridge (usb-storage) enables USB autosuspend"
        );
    }

    #[test]
    fn write_cache_off_on_sata_only() {
        let mut snap = snapshot_of("rk3399-raid5");
        assert!(run(&WRITE_CACHE_OFF, &snap).is_empty());
        assert!(
            run(&WRITE_CACHE_OFF, &snapshot_of("rpi2-luks")).is_empty(),
            "USB bridge"
        );
        if let Outcome::Ok { data } = &mut snap.storage {
            for d in data.devices.iter_mut().filter(|d| d.name == "sda") {
                d.queue.as_mut().expect("queue").write_cache = Some("write through".into());
            }
        }
        assert_eq!(run(&WRITE_CACHE_OFF, &snap).len(), 1);
    }
}
