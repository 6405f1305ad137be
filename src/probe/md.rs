//! Linux software RAID: /proc/mdstat for the overview and sync progress,
//! /sys/block/mdX/md/* for the settings and each member's state.

use serde::{Deserialize, Serialize};

use super::ParseError;
use super::text::{parse_f64, parse_u64};
use crate::root::Root;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MdArray {
    pub name: String,
    /// `raid5`, `raid1`, … (`None` while inactive).
    pub level: Option<String>,
    /// /sys `md/array_state` (`clean`, `active`, `readonly`, …) or mdstat's word.
    pub state: Option<String>,
    pub chunk_bytes: Option<u64>,
    pub raid_disks: Option<u64>,
    pub members: Vec<MdMember>,
    /// Members missing from a full array; `degraded` is this above zero.
    pub degraded_disks: Option<u64>,
    pub degraded: bool,
    /// mdstat's member map, e.g. `UU_U`.
    pub member_map: Option<String>,
    /// `idle`, `resync`, `recover`, `check`, `repair`, `reshape`.
    pub sync_action: Option<String>,
    pub sync: Option<SyncProgress>,
    pub mismatch_cnt: Option<u64>,
    /// Entries in the raid4/5/6 stripe cache; each holds one page per member.
    pub stripe_cache_size: Option<u64>,
    pub size_bytes: Option<u64>,
    pub metadata_version: Option<String>,
    pub problems: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MdMember {
    pub device: String,
    /// Role in the array; `None` for spares and failed members.
    pub slot: Option<u64>,
    /// /sys `md/dev-X/state` (`in_sync`, `faulty`, `spare`, `write_mostly`, …).
    pub state: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SyncProgress {
    /// `resync`, `recovery`, `check`, `reshape`.
    pub action: String,
    pub percent: Option<f64>,
    /// `DELAYED` or `PENDING` when the sync waits.
    pub waiting: Option<String>,
    pub finish_seconds: Option<f64>,
    pub speed_bytes_per_sec: Option<u64>,
}

/// One array as /proc/mdstat shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MdStatArray {
    pub name: String,
    pub active: bool,
    pub read_only: bool,
    pub level: Option<String>,
    /// `(device, slot, flags)`; flags are the letters in parentheses: F, S, W, R.
    pub members: Vec<(String, Option<u64>, String)>,
    pub size_bytes: Option<u64>,
    pub raid_disks: Option<u64>,
    pub working_disks: Option<u64>,
    pub member_map: Option<String>,
    pub chunk_bytes: Option<u64>,
    pub sync: Option<SyncProgress>,
}

/// Parses /proc/mdstat.
pub fn parse_mdstat(text: &str) -> Result<Vec<MdStatArray>, ParseError> {
    let mut arrays: Vec<MdStatArray> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if !line.starts_with(char::is_whitespace) {
            let Some((name, rest)) = line.split_once(':') else {
                return Err(ParseError::value("/proc/mdstat line", line));
            };
            let name = name.trim();
            if name == "Personalities" || name == "unused devices" || name == "read_ahead" {
                continue;
            }
            arrays.push(parse_header(name, rest)?);
            continue;
        }
        let Some(array) = arrays.last_mut() else {
            return Err(ParseError::value(
                "/proc/mdstat line before any array",
                line,
            ));
        };
        parse_detail(array, line.trim())?;
    }
    Ok(arrays)
}

/// `active raid5 dm-3[3] dm-2[2] sdb1[4](F)` after `md0 :`.
fn parse_header(name: &str, rest: &str) -> Result<MdStatArray, ParseError> {
    let mut a = MdStatArray {
        name: name.to_string(),
        ..Default::default()
    };
    let mut words = rest.split_whitespace();
    match words.next() {
        Some("active") => a.active = true,
        Some("inactive") => {}
        _ => {
            return Err(ParseError::value(
                format!("/proc/mdstat {name}"),
                rest.trim(),
            ));
        }
    }
    for w in words {
        if w.starts_with('(') {
            a.read_only |= w.contains("read-only");
        } else if let Some((dev, tail)) = w.split_once('[') {
            let (slot, flags) = tail
                .split_once(']')
                .ok_or_else(|| ParseError::value(format!("/proc/mdstat {name} member"), w))?;
            let slot = parse_u64(&format!("/proc/mdstat {name} member slot"), slot)?;
            let flags: String = flags.chars().filter(char::is_ascii_alphabetic).collect();
            a.members.push((dev.to_string(), Some(slot), flags));
        } else if a.level.is_none() && a.members.is_empty() {
            a.level = Some(w.to_string());
        } else {
            return Err(ParseError::value(format!("/proc/mdstat {name}"), w));
        }
    }
    Ok(a)
}

/// The indented lines: size and member map, bitmap, sync progress.
fn parse_detail(a: &mut MdStatArray, line: &str) -> Result<(), ParseError> {
    let what = format!("/proc/mdstat {}", a.name);
    if line.starts_with("bitmap:") {
        return Ok(());
    }
    if let Some(sync) = parse_sync_line(&what, line)? {
        a.sync = Some(sync);
        return Ok(());
    }
    let words: Vec<&str> = line.split_whitespace().collect();
    if words.get(1) == Some(&"blocks") {
        // mdstat "blocks" are KiB.
        a.size_bytes = Some(parse_u64(&what, words[0])?.saturating_mul(1024));
    }
    for (i, w) in words.iter().enumerate() {
        if *w == "chunk," || *w == "chunk" {
            let size = words.get(i.wrapping_sub(1)).copied().unwrap_or("");
            a.chunk_bytes = Some(parse_kib_suffix(&what, size)?);
        } else if let Some(inner) = w.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
            if let Some((n, m)) = inner.split_once('/') {
                a.raid_disks = Some(parse_u64(&what, n)?);
                a.working_disks = Some(parse_u64(&what, m)?);
            } else if !inner.is_empty() && inner.chars().all(|c| c == 'U' || c == '_') {
                a.member_map = Some(inner.to_string());
            }
        }
    }
    Ok(())
}

/// `512k` → bytes.
fn parse_kib_suffix(what: &str, s: &str) -> Result<u64, ParseError> {
    let n = s
        .strip_suffix(['k', 'K'])
        .ok_or_else(|| ParseError::value(what, s))?;
    Ok(parse_u64(what, n)?.saturating_mul(1024))
}

/// `[==>....]  resync = 12.6% (123/976) finish=78.4min speed=207128K/sec`,
/// or `resync=DELAYED`.
fn parse_sync_line(what: &str, line: &str) -> Result<Option<SyncProgress>, ParseError> {
    let body = line
        .strip_prefix('[')
        .and_then(|l| l.split_once(']'))
        .map_or(line, |(_, rest)| rest)
        .trim();
    let Some((action, rest)) = body.split_once('=') else {
        return Ok(None);
    };
    let action = action.trim();
    if !["resync", "recovery", "check", "reshape", "repair"].contains(&action) {
        return Ok(None);
    }
    let mut sync = SyncProgress {
        action: action.to_string(),
        percent: None,
        waiting: None,
        finish_seconds: None,
        speed_bytes_per_sec: None,
    };
    for w in rest.split_whitespace() {
        if let Some(p) = w.strip_suffix('%') {
            sync.percent = Some(parse_f64(what, p)?);
        } else if let Some(f) = w.strip_prefix("finish=") {
            let minutes = f
                .strip_suffix("min")
                .ok_or_else(|| ParseError::value(what, w))?;
            sync.finish_seconds = Some(parse_f64(what, minutes)? * 60.0);
        } else if let Some(s) = w.strip_prefix("speed=") {
            let kib = s
                .strip_suffix("K/sec")
                .ok_or_else(|| ParseError::value(what, w))?;
            sync.speed_bytes_per_sec = Some(parse_u64(what, kib)?.saturating_mul(1024));
        } else if w.chars().all(|c| c.is_ascii_uppercase()) {
            sync.waiting = Some(w.to_string());
        }
    }
    Ok(Some(sync))
}

/// Every md array: names from /proc/mdstat and /sys/block, details from both.
/// Problems with one array land in its `problems`; a malformed mdstat is
/// returned as the error string next to what sysfs alone gives.
pub fn read_md_arrays(root: &Root, block_names: &[String]) -> (Vec<MdArray>, Option<String>) {
    let (stat, problem) = match root.read_optional("proc/mdstat") {
        Ok(Some(t)) => match parse_mdstat(&t) {
            Ok(v) => (v, None),
            Err(e) => (Vec::new(), Some(e.to_string())),
        },
        Ok(None) => (Vec::new(), None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    let mut names: Vec<String> = stat.iter().map(|a| a.name.clone()).collect();
    for n in block_names {
        if n.starts_with("md") && !names.contains(n) && root.exists(&format!("sys/block/{n}/md")) {
            names.push(n.clone());
        }
    }
    names.sort();
    let arrays = names
        .iter()
        .map(|n| read_md_array(root, n, stat.iter().find(|a| &a.name == n)))
        .collect();
    (arrays, problem)
}

fn read_md_array(root: &Root, name: &str, stat: Option<&MdStatArray>) -> MdArray {
    let dir = format!("sys/block/{name}/md");
    let mut problems = Vec::new();
    let mut text = |attr: &str| -> Option<String> {
        match root.read_optional(&format!("{dir}/{attr}")) {
            Ok(v) => v.filter(|v| !v.is_empty()),
            Err(e) => {
                problems.push(e.to_string());
                None
            }
        }
    };
    let level = text("level");
    let state = text("array_state");
    let chunk = text("chunk_size");
    let raid_disks = text("raid_disks");
    let degraded = text("degraded");
    let sync_action = text("sync_action");
    let mismatch = text("mismatch_cnt");
    let stripe_cache = text("stripe_cache_size");
    let metadata_version = text("metadata_version");
    let mut number = |attr: &str, v: Option<String>| -> Option<u64> {
        let v = v?;
        parse_u64(&format!("/{dir}/{attr}"), &v)
            .map_err(|e| problems.push(e.to_string()))
            .ok()
    };
    let chunk_bytes = number("chunk_size", chunk);
    let raid_disks = number("raid_disks", raid_disks);
    let degraded_sysfs = number("degraded", degraded);
    let mismatch_cnt = number("mismatch_cnt", mismatch);
    let stripe_cache_size = number("stripe_cache_size", stripe_cache);
    let size_bytes = match root.read_optional(&format!("sys/block/{name}/size")) {
        Ok(Some(v)) => parse_u64(&format!("/sys/block/{name}/size"), &v)
            .map_err(|e| problems.push(e.to_string()))
            .ok()
            .map(|s| s.saturating_mul(super::block::SYSFS_SECTOR_BYTES)),
        Ok(None) => None,
        Err(e) => {
            problems.push(e.to_string());
            None
        }
    };
    let members = read_members(root, &dir, stat, &mut problems);

    let raid_disks = raid_disks.or(stat.and_then(|s| s.raid_disks));
    let degraded_disks = degraded_sysfs.or_else(|| {
        let s = stat?;
        Some(s.raid_disks?.saturating_sub(s.working_disks?))
    });
    MdArray {
        name: name.to_string(),
        level: level.or_else(|| stat.and_then(|s| s.level.clone())),
        state: state
            .or_else(|| stat.map(|s| if s.active { "active" } else { "inactive" }.to_string())),
        chunk_bytes: chunk_bytes.or(stat.and_then(|s| s.chunk_bytes)),
        raid_disks,
        members,
        degraded_disks,
        degraded: degraded_disks.is_some_and(|d| d > 0),
        member_map: stat.and_then(|s| s.member_map.clone()),
        sync_action,
        sync: stat.and_then(|s| s.sync.clone()),
        mismatch_cnt,
        stripe_cache_size,
        size_bytes: size_bytes.or(stat.and_then(|s| s.size_bytes)),
        metadata_version,
        problems,
    }
}

/// Members from `md/dev-*` (state, slot), else from mdstat's member list.
fn read_members(
    root: &Root,
    dir: &str,
    stat: Option<&MdStatArray>,
    problems: &mut Vec<String>,
) -> Vec<MdMember> {
    let entries = match root.read_dir_optional(dir) {
        Ok(v) => v,
        Err(e) => {
            problems.push(e.to_string());
            Vec::new()
        }
    };
    let mut members = Vec::new();
    for entry in entries {
        let Some(device) = entry.strip_prefix("dev-") else {
            continue;
        };
        let state = root
            .read_optional(&format!("{dir}/{entry}/state"))
            .map_err(|e| problems.push(e.to_string()))
            .ok()
            .flatten();
        let slot = root
            .read_optional(&format!("{dir}/{entry}/slot"))
            .map_err(|e| problems.push(e.to_string()))
            .ok()
            .flatten()
            .and_then(|s| s.parse().ok());
        members.push(MdMember {
            device: device.to_string(),
            slot,
            state,
        });
    }
    if members.is_empty()
        && let Some(s) = stat
    {
        for (device, slot, flags) in &s.members {
            let state = match flags.as_str() {
                "" => "in_sync",
                f if f.contains('F') => "faulty",
                f if f.contains('S') => "spare",
                f if f.contains('W') => "write_mostly",
                _ => "replacement",
            };
            members.push(MdMember {
                device: device.clone(),
                slot: *slot,
                state: Some(state.to_string()),
            });
        }
    }
    members.sort_by(|a, b| (a.slot, &a.device).cmp(&(b.slot, &b.device)));
    members
}

#[cfg(test)]
mod tests {
    use super::*;

    const MDSTAT: &str = "Personalities : [raid6] [raid5] [raid4] [raid1] \n\
md0 : active raid5 dm-3[3] dm-2[2] dm-1[1] dm-0[0]\n      \
5860147200 blocks super 1.2 level 5, 512k chunk, algorithm 2 [4/4] [UUUU]\n      \
bitmap: 0/15 pages [0KB], 65536KB chunk\n\
\n\
md1 : active raid5 sdd1[4](F) sdc1[2] sdb1[1] sda1[0]\n      \
2929890816 blocks super 1.2 level 5, 64k chunk, algorithm 2 [4/3] [UUU_]\n      \
\n\
md2 : active raid1 sdf1[1] sde1[0]\n      \
976630336 blocks super 1.2 [2/2] [UU]\n      \
[==>..................]  resync = 12.6% (123456000/976630336) finish=78.4min speed=207128K/sec\n      \
\n\
md3 : active (auto-read-only) raid1 sdh1[1] sdg1[0]\n      \
1048512 blocks super 1.2 [2/2] [UU]\n      \
\tresync=PENDING\n\
\n\
md4 : inactive sdi1[0](S)\n      \
1048576 blocks super 1.2\n\
\n\
unused devices: <none>\n";

    #[test]
    fn mdstat_clean_degraded_resyncing_and_inactive() {
        let a = parse_mdstat(MDSTAT).unwrap();
        assert_eq!(a.len(), 5);
        let md0 = &a[0];
        assert_eq!(md0.name, "md0");
        assert!(md0.active);
        assert_eq!(md0.level.as_deref(), Some("raid5"));
        assert_eq!(md0.chunk_bytes, Some(512 * 1024));
        assert_eq!(md0.size_bytes, Some(5_860_147_200 * 1024));
        assert_eq!((md0.raid_disks, md0.working_disks), (Some(4), Some(4)));
        assert_eq!(md0.members[0], ("dm-3".to_string(), Some(3), String::new()));
        assert_eq!(md0.sync, None);

        let md1 = &a[1];
        assert_eq!((md1.raid_disks, md1.working_disks), (Some(4), Some(3)));
        assert_eq!(md1.member_map.as_deref(), Some("UUU_"));
        assert_eq!(
            md1.members[0],
            ("sdd1".to_string(), Some(4), "F".to_string())
        );

        let sync = a[2].sync.as_ref().unwrap();
        assert_eq!(sync.action, "resync");
        assert_eq!(sync.percent, Some(12.6));
        assert_eq!(sync.speed_bytes_per_sec, Some(207_128 * 1024));
        assert!((sync.finish_seconds.unwrap() - 4704.0).abs() < 1e-6);
        assert_eq!(a[2].chunk_bytes, None);

        assert!(a[3].read_only);
        assert_eq!(
            a[3].sync.as_ref().unwrap().waiting.as_deref(),
            Some("PENDING")
        );

        assert!(!a[4].active);
        assert_eq!(a[4].level, None);
        assert_eq!(a[4].members[0].2, "S");
    }

    #[test]
    fn mdstat_degraded_member_map_with_hole() {
        let t = "md0 : active raid5 sda1[0] sdb1[1] sdd1[3]\n      \
2929890816 blocks super 1.2 level 5, 512k chunk, algorithm 2 [4/3] [UU_U]\n      \
[>....................]  recovery =  0.4% (4096/976630272) finish=397.2min speed=40960K/sec\n";
        let a = &parse_mdstat(t).unwrap()[0];
        assert_eq!(a.member_map.as_deref(), Some("UU_U"));
        assert_eq!(a.raid_disks.unwrap() - a.working_disks.unwrap(), 1);
        assert_eq!(a.sync.as_ref().unwrap().action, "recovery");
        assert_eq!(a.sync.as_ref().unwrap().percent, Some(0.4));
    }

    #[test]
    fn degraded_array_from_mdstat_alone() {
        // A kernel or capture without /sys/block/md1/md: mdstat still tells the story.
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        std::fs::write(dir.path().join("proc/mdstat"), MDSTAT).unwrap();
        let root = Root::tree(dir.path()).unwrap();
        let (arrays, problem) = read_md_arrays(&root, &[]);
        assert_eq!(problem, None);
        let md1 = arrays.iter().find(|a| a.name == "md1").unwrap();
        assert!(md1.degraded);
        assert_eq!(md1.degraded_disks, Some(1));
        assert_eq!(md1.member_map.as_deref(), Some("UUU_"));
        assert_eq!(md1.chunk_bytes, Some(64 * 1024));
        assert_eq!(md1.members[0].device, "sda1");
        let failed = md1.members.iter().find(|m| m.device == "sdd1").unwrap();
        assert_eq!(failed.state.as_deref(), Some("faulty"));
        let md0 = arrays.iter().find(|a| a.name == "md0").unwrap();
        assert!(!md0.degraded);
        assert_eq!(md0.state.as_deref(), Some("active"));

        std::fs::write(dir.path().join("proc/mdstat"), "md0 : sleeping\n").unwrap();
        let (arrays, problem) = read_md_arrays(&root, &[]);
        assert!(arrays.is_empty());
        assert!(problem.unwrap().contains("'sleeping'"));
    }

    #[test]
    fn mdstat_errors_name_the_value() {
        let e = parse_mdstat("md0 : active raid5 sda1[x]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("'x'"), "{e}");
        assert!(parse_mdstat("md0 : sleeping\n").is_err());
        assert!(parse_mdstat("      12 blocks\n").is_err());
        assert!(parse_mdstat("md0 : active raid1 a[0]\n  x blocks\n").is_err());
        assert!(parse_mdstat("md0 : active raid1 a[0]\n  1 blocks 5q chunk\n").is_err());
        assert_eq!(
            parse_mdstat("Personalities : \nunused devices: <none>\n").unwrap(),
            vec![]
        );
    }
}
