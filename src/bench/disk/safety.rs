//! Before writing to a raw block device: is anything using it or stored on it?
//! fio only compares the name with /etc/mtab. A list of signatures always
//! misses something, so the rule is turned round: without `--destroy-data` a
//! device is written only when it looks blank, with no known signature *and*
//! zeros in its first and last MiB. `--destroy-data` naming that same device
//! overrides what is stored on it (the data the user chose to destroy), never a
//! live use: a mount, a holder (md, dm, LVM), swap, a loop device it backs, or
//! another program's exclusive open. Writing under those corrupts what is
//! running, and the fix is to stop that use first.

use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::signatures;
use crate::root::Root;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SafetyError {
    #[error(
        "refusing to write to '{}': {}. Writing would destroy it; if that is what you want, pass --destroy-data {}",
        device.display(),
        findings.join("; "),
        device.display()
    )]
    Refused {
        device: PathBuf,
        findings: Vec<String>,
    },
    #[error(
        "--destroy-data names '{}' but the target is '{}'; it must name the target device itself",
        named.display(),
        target.display()
    )]
    Mismatch { named: PathBuf, target: PathBuf },
    #[error(
        "refusing to write to '{}' even with --destroy-data: {}. Unmount it, stop the array, mapping or loop device, swapoff it, or close the program that holds it first",
        device.display(),
        uses.join("; ")
    )]
    InUse { device: PathBuf, uses: Vec<String> },
    #[error("--destroy-data '{}' is only for block-device targets", named.display())]
    NotADevice { named: PathBuf },
}

/// What was found on and around a device.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceFacts {
    /// "'sdb1' is mounted at '/srv'".
    pub mounts: Vec<String>,
    /// "'sdb' is held by 'md0'".
    pub holders: Vec<String>,
    /// "'sdb2' is active swap".
    pub swaps: Vec<String>,
    /// "'sdb' backs loop device 'loop3'".
    pub loop_backings: Vec<String>,
    /// "'/dev/sdb' is claimed exclusively by another user".
    pub claims: Vec<String>,
    /// "an ext2/3/4 filesystem".
    pub signatures: Vec<String>,
    /// Anything else that stops us: data no signature names, an unreadable end.
    pub other: Vec<String>,
}

impl DeviceFacts {
    /// Live uses of the device: what `--destroy-data` does not override.
    pub fn uses(&self) -> Vec<String> {
        [
            &self.mounts,
            &self.holders,
            &self.swaps,
            &self.loop_backings,
            &self.claims,
        ]
        .into_iter()
        .flatten()
        .cloned()
        .collect()
    }

    /// What is stored on the device: what `--destroy-data` overrides.
    pub fn contents(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .signatures
            .iter()
            .map(|s| format!("it carries {s} signature"))
            .collect();
        out.extend(self.other.iter().cloned());
        out
    }
}

/// The decision, on facts already gathered. `destroy_data` is the rdev of the
/// device `--destroy-data` named, with its path.
pub fn decide(
    device: &Path,
    rdev: u64,
    facts: &DeviceFacts,
    destroy_data: Option<(&Path, u64)>,
) -> Result<(), SafetyError> {
    if let Some((named, named_rdev)) = destroy_data
        && named_rdev != rdev
    {
        return Err(SafetyError::Mismatch {
            named: named.to_path_buf(),
            target: device.to_path_buf(),
        });
    }
    let uses = facts.uses();
    if !uses.is_empty() {
        return Err(SafetyError::InUse {
            device: device.to_path_buf(),
            uses,
        });
    }
    let contents = facts.contents();
    if destroy_data.is_some() || contents.is_empty() {
        Ok(())
    } else {
        Err(SafetyError::Refused {
            device: device.to_path_buf(),
            findings: contents,
        })
    }
}

/// Partitions of a disk: the entries of its sysfs directory that have a `partition` file.
pub fn partitions(root: &Root, name: &str) -> Vec<String> {
    root.read_dir_optional(&format!("sys/class/block/{name}"))
        .unwrap_or_default()
        .into_iter()
        .filter(|e| root.exists(&format!("sys/class/block/{name}/{e}/partition")))
        .collect()
}

/// "maj:min" of a device from sysfs.
fn dev_numbers(root: &Root, name: &str) -> Option<String> {
    root.read_optional(&format!("sys/class/block/{name}/dev"))
        .ok()
        .flatten()
}

/// Mounts of any of `devices` (name, "maj:min") in /proc/self/mountinfo. The
/// device numbers catch every mount of a block filesystem; btrfs reports an
/// anonymous 0:N there, so the mount source is compared by name too.
pub fn parse_mounts(mountinfo: &str, devices: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for line in mountinfo.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(numbers), Some(point)) = (f.get(2), f.get(4)) else {
            continue;
        };
        let source = line
            .split(" - ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().nth(1))
            .unwrap_or("");
        let source_name = source.strip_prefix("/dev/").unwrap_or("");
        for (name, nums) in devices {
            if (nums == numbers || source_name == name)
                && !out
                    .iter()
                    .any(|m: &String| m.starts_with(&format!("'{name}' ")))
            {
                out.push(format!(
                    "'{name}' is mounted at '{}'",
                    unescape_octal(point)
                ));
            }
        }
    }
    out
}

/// mountinfo escapes spaces and such as `\040`.
fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Active swap among `names`, from /proc/swaps (device paths in the first column).
pub fn parse_swaps(swaps: &str, names: &[String]) -> Vec<String> {
    swaps
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|p| p.strip_prefix("/dev/"))
        .filter(|n| names.iter().any(|x| x == n))
        .map(|n| format!("'{n}' is active swap"))
        .collect()
}

/// The first and last [`signatures::SPAN`] bytes of the device and its size.
fn read_ends(path: &Path) -> std::io::Result<(Vec<u8>, Vec<u8>, u64)> {
    let file = File::open(path)?;
    let size = {
        use std::io::{Seek, SeekFrom};
        let mut f = &file;
        f.seek(SeekFrom::End(0))?
    };
    let read = |off: u64, len: u64| -> std::io::Result<Vec<u8>> {
        let mut buf = vec![0u8; len as usize];
        let mut got = 0;
        while got < buf.len() {
            match file.read_at(&mut buf[got..], off + got as u64)? {
                0 => break,
                n => got += n,
            }
        }
        buf.truncate(got);
        Ok(buf)
    };
    let span = signatures::SPAN.min(size);
    let head = read(0, span)?;
    let tail = read(size - span, span)?;
    Ok((head, tail, size))
}

/// Loop devices whose backing file is one of `devices` (name, "maj:min"): a
/// live use that no holders directory shows. `stat_rdev` says what a backing
/// path is on the live system (None in a fixture tree).
pub fn loop_backings(
    root: &Root,
    devices: &[(String, String)],
    stat_rdev: &dyn Fn(&str) -> Option<String>,
) -> Vec<String> {
    let mut out = Vec::new();
    for l in root.read_dir_optional("sys/block").unwrap_or_default() {
        if !l.starts_with("loop") {
            continue;
        }
        let Ok(Some(backing)) = root.read_optional(&format!("sys/block/{l}/loop/backing_file"))
        else {
            continue;
        };
        let backing = backing.trim_end_matches(" (deleted)").to_string();
        let numbers = stat_rdev(&backing);
        for (name, nums) in devices {
            let same_name = backing == format!("/dev/{name}");
            let same_dev = numbers
                .as_deref()
                .is_some_and(|n| n == nums && !nums.is_empty());
            if same_name || same_dev {
                out.push(format!("'{name}' backs loop device '{l}'"));
            }
        }
    }
    out
}

/// "maj:min" of a block device node on the live system.
fn live_rdev(path: &str) -> Option<String> {
    use std::os::unix::fs::FileTypeExt;
    let m = std::fs::metadata(path).ok()?;
    m.file_type()
        .is_block_device()
        .then(|| format!("{}:{}", libc::major(m.rdev()), libc::minor(m.rdev())))
}

/// Exclusive opens of the device nodes: the kernel answers EBUSY when anything
/// has claimed one (a mount, md, dm, or another program's O_EXCL open, as mkfs
/// and VMs do). The files are held for the whole run, so nothing can mount or
/// claim the device while we write to it.
#[derive(Debug)]
pub struct Claim {
    _files: Vec<File>,
}

fn claim(paths: &[PathBuf]) -> (Claim, Vec<String>) {
    use std::os::unix::fs::OpenOptionsExt;
    let mut files = Vec::new();
    let mut busy = Vec::new();
    for p in paths {
        match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_EXCL | libc::O_CLOEXEC)
            .open(p)
        {
            Ok(f) => files.push(f),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => busy.push(format!(
                "'{}' is claimed exclusively by another user (a mount, an array or mapping, or a program such as mkfs or a VM)",
                p.display()
            )),
            // A partition node udev has not made yet: the other checks cover it.
            Err(_) => {}
        }
    }
    (Claim { _files: files }, busy)
}

/// What the ends of a device say: signatures by name, or the first byte of
/// data no signature names.
pub fn contents_facts(head: &[u8], tail: &[u8], size: u64) -> (Vec<String>, Vec<String>) {
    let names: Vec<String> = signatures::detect(head, tail, size)
        .into_iter()
        .map(str::to_string)
        .collect();
    let mut other = Vec::new();
    if names.is_empty()
        && let Some(off) = signatures::first_data(head, tail, size)
    {
        other.push(format!(
            "it is not blank: data at byte {off} of its first or last MiB, in no format nastune knows (it may still be someone's data)"
        ));
    }
    (names, other)
}

/// Gathers the facts for block device `name` at `path` and decides. On the
/// live system the device and its partitions stay claimed (O_EXCL) until the
/// returned [`Claim`] is dropped.
pub fn check_write(
    root: &Root,
    path: &Path,
    name: &str,
    rdev: u64,
    destroy_data: Option<&Path>,
) -> Result<Claim, SafetyError> {
    let destroy = match destroy_data {
        Some(named) => {
            let meta = std::fs::metadata(named).ok().filter(|m| {
                use std::os::unix::fs::FileTypeExt;
                m.file_type().is_block_device()
            });
            match meta {
                Some(m) => Some((named, m.rdev())),
                None => {
                    return Err(SafetyError::Mismatch {
                        named: named.to_path_buf(),
                        target: path.to_path_buf(),
                    });
                }
            }
        }
        None => None,
    };
    let mut names = vec![name.to_string()];
    names.extend(partitions(root, name));
    let numbered: Vec<(String, String)> = names
        .iter()
        .map(|n| (n.clone(), dev_numbers(root, n).unwrap_or_default()))
        .collect();
    let no_stat = |_: &str| None;
    let stat: &dyn Fn(&str) -> Option<String> = if root.is_live() { &live_rdev } else { &no_stat };
    let mut facts = DeviceFacts {
        mounts: root
            .read_string("proc/self/mountinfo")
            .map(|t| parse_mounts(&t, &numbered))
            .unwrap_or_default(),
        swaps: root
            .read_string("proc/swaps")
            .map(|t| parse_swaps(&t, &names))
            .unwrap_or_default(),
        loop_backings: loop_backings(root, &numbered, stat),
        ..Default::default()
    };
    for n in &names {
        for holder in root
            .read_dir_optional(&format!("sys/class/block/{n}/holders"))
            .unwrap_or_default()
        {
            facts
                .holders
                .push(format!("'{n}' is held by '{holder}' (md, dm or LVM)"));
        }
    }
    let held = if root.is_live() {
        let mut nodes = vec![path.to_path_buf()];
        nodes.extend(
            names
                .iter()
                .skip(1)
                .map(|n| PathBuf::from(format!("/dev/{n}"))),
        );
        let (held, busy) = claim(&nodes);
        facts.claims = busy;
        held
    } else {
        Claim { _files: Vec::new() }
    };
    match read_ends(path) {
        Ok((head, tail, size)) => {
            (facts.signatures, facts.other) = contents_facts(&head, &tail, size);
        }
        Err(e) => facts.other.push(format!(
            "its first and last MiB cannot be read to see whether it is blank ({e})"
        )),
    }
    decide(path, rdev, &facts, destroy)?;
    Ok(held)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decision_refuses_with_every_finding_and_honours_the_exact_device() {
        let facts = DeviceFacts {
            holders: vec!["'sdb' is held by 'md0' (md, dm or LVM)".into()],
            signatures: vec!["an md RAID superblock".into()],
            ..Default::default()
        };
        let dev = Path::new("/dev/sdb");
        // In use: refused, and --destroy-data is not offered as the way out.
        let e = decide(dev, 0x810, &facts, None).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("held by 'md0'"), "{msg}");
        assert!(!msg.contains("pass --destroy-data"), "{msg}");
        // Stored data alone: refused, naming what and how to override.
        let stale = DeviceFacts {
            signatures: vec!["an md RAID superblock".into()],
            ..Default::default()
        };
        let msg = decide(dev, 0x810, &stale, None).unwrap_err().to_string();
        assert!(msg.contains("md RAID superblock"), "{msg}");
        assert!(msg.contains("--destroy-data /dev/sdb"), "{msg}");
        // Held by md0: in use, so naming the device does not unlock it.
        let e = decide(dev, 0x810, &facts, Some((dev, 0x810))).unwrap_err();
        assert!(matches!(e, SafetyError::InUse { .. }), "{e}");
        assert!(e.to_string().contains("stop the array"), "{e}");
        // A signature alone is what --destroy-data is for.
        assert_eq!(decide(dev, 0x810, &stale, Some((dev, 0x810))), Ok(()));
        let mounted = DeviceFacts {
            mounts: vec!["'sdb1' is mounted at '/srv'".into()],
            ..Default::default()
        };
        assert!(decide(dev, 0x810, &mounted, Some((dev, 0x810))).is_err());
        for facts in [
            DeviceFacts {
                loop_backings: vec!["'sdb' backs loop device 'loop3'".into()],
                ..Default::default()
            },
            DeviceFacts {
                claims: vec!["'/dev/sdb' is claimed exclusively".into()],
                ..Default::default()
            },
        ] {
            let e = decide(dev, 0x810, &facts, Some((dev, 0x810))).unwrap_err();
            assert!(matches!(e, SafetyError::InUse { .. }), "{e}");
        }
        // Data no signature names is still data.
        let unknown = DeviceFacts {
            other: vec!["it is not blank".into()],
            ..Default::default()
        };
        assert!(matches!(
            decide(dev, 0x810, &unknown, None),
            Err(SafetyError::Refused { .. })
        ));
        assert!(matches!(
            decide(dev, 0x810, &facts, Some((Path::new("/dev/sdc"), 0x820))),
            Err(SafetyError::Mismatch { .. })
        ));
        // Even a blank device must not be written when another device is named.
        assert!(
            decide(
                dev,
                0x810,
                &DeviceFacts::default(),
                Some((Path::new("/dev/sdc"), 0x820))
            )
            .is_err()
        );
        assert_eq!(decide(dev, 0x810, &DeviceFacts::default(), None), Ok(()));
    }

    #[test]
    fn holders_found_through_a_fixture_sys_tree() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("sys/class/block/sdb/holders/md0")).unwrap();
        std::fs::create_dir_all(d.join("sys/class/block/sdb/sdb1/holders/dm-0")).unwrap();
        std::fs::write(d.join("sys/class/block/sdb/sdb1/partition"), "1").unwrap();
        std::fs::create_dir_all(d.join("sys/class/block/sdb1")).unwrap();
        std::fs::create_dir_all(d.join("sys/class/block/sdb1/holders/dm-0")).unwrap();
        std::fs::create_dir_all(d.join("proc/self")).unwrap();
        std::fs::write(d.join("proc/self/mountinfo"), "").unwrap();
        std::fs::write(d.join("proc/swaps"), "Filename Type Size Used Priority\n").unwrap();
        let root = Root::tree(d).unwrap();
        assert_eq!(partitions(&root, "sdb"), vec!["sdb1".to_string()]);
        // The device itself is a plain file here: it has no signature.
        let blank = d.join("blank");
        std::fs::write(&blank, vec![0u8; 8192]).unwrap();
        let e = check_write(&root, &blank, "sdb", 1, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("'sdb' is held by 'md0'"), "{e}");
        assert!(e.contains("'sdb1' is held by 'dm-0'"), "{e}");
    }

    #[test]
    fn mounts_by_numbers_or_name_and_swaps() {
        let mi = "36 25 8:17 / /srv\\040data rw,relatime shared:1 - ext4 /dev/sdb1 rw\n\
                  40 25 0:45 / /mnt/b rw - btrfs /dev/sdc rw\n";
        let devs = vec![
            ("sdb".to_string(), "8:16".to_string()),
            ("sdb1".to_string(), "8:17".to_string()),
        ];
        assert_eq!(
            parse_mounts(mi, &devs),
            vec!["'sdb1' is mounted at '/srv data'".to_string()]
        );
        let devs = vec![("sdc".to_string(), "8:32".to_string())];
        assert_eq!(
            parse_mounts(mi, &devs),
            vec!["'sdc' is mounted at '/mnt/b'".to_string()]
        );
        let swaps = "Filename Type Size Used Priority\n/dev/sdb2 partition 1048572 0 -2\n/swapfile file 1 0 -3\n";
        assert_eq!(
            parse_swaps(swaps, &["sdb".into(), "sdb2".into()]),
            vec!["'sdb2' is active swap".to_string()]
        );
    }

    #[test]
    fn contents_name_signatures_or_unknown_data() {
        let size = 16u64 << 20;
        let blank = vec![0u8; signatures::SPAN as usize];
        assert_eq!(contents_facts(&blank, &blank, size), (vec![], vec![]));
        let mut h = blank.clone();
        h[0..4].copy_from_slice(b"XFSB");
        let (names, other) = contents_facts(&h, &blank, size);
        assert_eq!(names, vec!["an XFS filesystem".to_string()]);
        assert!(other.is_empty());
        // One stray byte deep in the last MiB is enough to refuse.
        let mut t = blank.clone();
        t[700_000] = 0x42;
        let (names, other) = contents_facts(&blank, &t, size);
        assert!(names.is_empty());
        let at = size - signatures::SPAN + 700_000;
        assert!(
            other[0].contains(&format!("data at byte {at}")),
            "{other:?}"
        );
    }

    #[test]
    fn loop_devices_backed_by_the_target_are_found_by_name_or_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for (l, backing) in [
            ("loop0", "/dev/sdb1\n"),
            ("loop1", "/srv/disk.img (deleted)\n"),
            ("loop2", "/dev/disk/by-id/usb-x\n"),
        ] {
            std::fs::create_dir_all(d.join(format!("sys/block/{l}/loop"))).unwrap();
            std::fs::write(d.join(format!("sys/block/{l}/loop/backing_file")), backing).unwrap();
        }
        std::fs::create_dir_all(d.join("sys/block/loop7")).unwrap();
        let root = Root::tree(d).unwrap();
        let devs = vec![
            ("sdb".to_string(), "8:16".to_string()),
            ("sdb1".to_string(), "8:17".to_string()),
        ];
        let stat = |p: &str| (p == "/dev/disk/by-id/usb-x").then(|| "8:16".to_string());
        assert_eq!(
            loop_backings(&root, &devs, &stat),
            vec![
                "'sdb1' backs loop device 'loop0'".to_string(),
                "'sdb' backs loop device 'loop2'".to_string(),
            ]
        );
    }
}
