//! The storage stack and filesystems in the probe summary.

use std::fmt::Write;

use super::super::format;
use crate::probe::block::BlockDevice;
use crate::probe::filesystems::{Filesystem, Filesystems};
use crate::probe::storage::Storage;

pub fn storage(out: &mut String, s: &Storage) {
    for d in &s.devices {
        device(out, d);
    }
    if !s.empty_devices.is_empty() {
        let _ = writeln!(out, "  empty         {}", s.empty_devices.join(" "));
    }
    for m in &s.md_arrays {
        let members: Vec<String> = m
            .members
            .iter()
            .map(|x| format!("{} {}", x.device, x.state.as_deref().unwrap_or("?")))
            .collect();
        let _ = writeln!(
            out,
            "  {:<13} {} chunk {}, {} of {} members{} ({}), {}, sync {}, mismatches {}, stripe cache {}",
            m.name,
            m.level.as_deref().unwrap_or("?"),
            m.chunk_bytes
                .map(format::bytes)
                .unwrap_or_else(|| "-".into()),
            m.members.len(),
            m.raid_disks
                .map(|n| n.to_string())
                .unwrap_or_else(|| "?".into()),
            if m.degraded { ", DEGRADED" } else { "" },
            members.join(", "),
            m.state.as_deref().unwrap_or("?"),
            m.sync
                .as_ref()
                .map(|p| format!(
                    "{} {}",
                    p.action,
                    p.percent
                        .map(|x| format!("{x:.1}%"))
                        .or(p.waiting.clone())
                        .unwrap_or_default()
                ))
                .or(m.sync_action.clone())
                .unwrap_or_else(|| "-".into()),
            opt_num(m.mismatch_cnt),
            opt_num(m.stripe_cache_size),
        );
    }
    if let Some(p) = &s.mdstat_problem {
        let _ = writeln!(out, "  mdstat        {p}");
    }
    for d in &s.dm_devices {
        let what = match (&d.crypt, &d.crypt_unavailable) {
            (Some(c), _) => format!(
                "{} {}-bit, {} sectors ({})",
                c.cipher,
                c.key_bits
                    .map(|b| b.to_string())
                    .unwrap_or_else(|| "?".into()),
                format::bytes(c.sector_bytes),
                c.source
            ),
            (None, Some(why)) => format!("cipher unknown: {why}"),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            out,
            "  {:<13} {} {} {} {}",
            d.device,
            d.name.as_deref().unwrap_or("-"),
            d.target_type.as_deref().unwrap_or("?"),
            d.format.as_deref().unwrap_or("-"),
            what
        );
    }
    for c in &s.chains {
        let top = if !c.mount_points.is_empty() {
            format!(
                "{} {}",
                c.mount_points.join(" "),
                c.fs_type.as_deref().unwrap_or("")
            )
        } else if c.swap {
            "swap".to_string()
        } else {
            "unused".to_string()
        };
        let _ = writeln!(out, "  stack         {top}: {}", c.devices.join(" -> "));
    }
}

fn opt_num(v: Option<u64>) -> String {
    v.map(|n| n.to_string()).unwrap_or_else(|| "-".into())
}

fn device(out: &mut String, d: &BlockDevice) {
    if let Some(p) = &d.partition {
        let phys = match p.aligned_to_physical_sector {
            Some(true) => "sector-aligned",
            Some(false) => "NOT sector-aligned",
            None => "sector alignment unknown",
        };
        let mib = if p.aligned_to_1mib {
            "1 MiB-aligned"
        } else {
            "not 1 MiB-aligned"
        };
        let _ = writeln!(
            out,
            "    {:<11} {} at sector {} ({phys}, {mib})",
            d.name,
            format::bytes(d.size_bytes),
            p.start_sector
        );
    } else {
        // Vendor, model and serial are the drive's own words (sysfs, SMART).
        let ident: Vec<_> = [&d.vendor, &d.model, &d.serial]
            .into_iter()
            .filter_map(|v| v.as_deref().map(format::shown))
            .collect();
        let line = format!(
            "  {:<13} {} {}{} {}",
            d.name,
            format::bytes(d.size_bytes),
            d.transport,
            d.driver
                .as_ref()
                .map(|x| format!(" ({x})"))
                .unwrap_or_default(),
            ident.join(" ")
        );
        let _ = writeln!(out, "{}", line.trim_end());
        if let Some(q) = &d.queue {
            let _ = writeln!(
                out,
                "  {:<13} {}, sectors {}/{}, scheduler {} of [{}], read-ahead {}, nr_requests {}, {}",
                "",
                match q.rotational {
                    Some(true) => "rotational",
                    Some(false) => "non-rotational",
                    None => "rotation unknown",
                },
                opt_num(q.logical_sector_bytes),
                opt_num(q.physical_sector_bytes),
                q.scheduler.as_deref().unwrap_or("-"),
                q.schedulers_available.join(" "),
                q.read_ahead_bytes
                    .map(format::bytes)
                    .unwrap_or_else(|| "-".into()),
                opt_num(q.nr_requests),
                q.write_cache.as_deref().unwrap_or("write cache unknown"),
            );
        }
    }
    for p in &d.problems {
        let _ = writeln!(out, "  {:<13} problem: {p}", "");
    }
}

pub fn filesystems(out: &mut String, f: &Filesystems) {
    if f.mounts.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for m in &f.mounts {
        let space = match (&m.space, &m.space_unavailable) {
            (Some(s), _) => format!(
                "{} of {} available",
                format::bytes(s.available_bytes),
                format::bytes(s.size_bytes)
            ),
            (None, Some(why)) => format!("size unknown: {why}"),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            out,
            "  {:<13} {} on {}, {space}",
            m.mount_point,
            m.fs_type,
            m.device.as_deref().unwrap_or(&m.source),
        );
        geometry(out, m);
    }
}

fn geometry(out: &mut String, m: &Filesystem) {
    if let Some(g) = &m.geometry
        && (g.stripe_unit_bytes.unwrap_or(0) > 0
            || g.stripe_width_bytes.unwrap_or(0) > 0
            || g.ext4_mount_stripe_blocks.is_some())
    {
        let mut line = format!(
            "  {:<13} RAID geometry: stripe unit {}, stripe width {}",
            "",
            g.stripe_unit_bytes
                .map(format::bytes)
                .unwrap_or_else(|| "-".into()),
            g.stripe_width_bytes
                .map(format::bytes)
                .unwrap_or_else(|| "-".into()),
        );
        if let (Some(stride), Some(width), Some(block)) = (
            g.ext4_raid_stride_blocks,
            g.ext4_raid_stripe_width_blocks,
            g.ext4_block_bytes,
        ) {
            let _ = write!(
                line,
                " (stride {stride}, stripe-width {width} blocks of {})",
                format::bytes(block)
            );
        }
        if let Some(s) = g.ext4_mount_stripe_blocks {
            let _ = write!(line, ", mounted with stripe={s}");
        }
        let _ = writeln!(out, "{line}");
    }
    if let Some(why) = &m.geometry_unavailable {
        let _ = writeln!(out, "  {:<13} superblock: {why}", "");
    }
}
