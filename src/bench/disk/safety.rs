//! Before writing to a raw block device: is anything using it or stored on it?
//! fio only compares the name with /etc/mtab. We refuse writes when the device
//! or any of its partitions is mounted, has holders (md, dm, LVM), is swap, or
//! carries a known signature. `--destroy-data` naming that same device overrides
//! the signatures (the data the user chose to destroy), never a device in use:
//! writing under a mounted filesystem, an array or active swap corrupts what is
//! running, and the fix is to stop that use first.

use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

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
        "refusing to write to '{}' even with --destroy-data: {}. Unmount it, stop the array or mapping, or swapoff it first",
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
    /// "an ext2/3/4 filesystem".
    pub signatures: Vec<String>,
    /// Anything else that stops us, such as an unreadable superblock area.
    pub other: Vec<String>,
}

impl DeviceFacts {
    /// Live uses of the device: what `--destroy-data` does not override.
    pub fn uses(&self) -> Vec<String> {
        let mut out = self.mounts.clone();
        out.extend(self.holders.iter().cloned());
        out.extend(self.swaps.iter().cloned());
        out
    }

    pub fn findings(&self) -> Vec<String> {
        let mut out = self.uses();
        out.extend(
            self.signatures
                .iter()
                .map(|s| format!("it carries {s} signature")),
        );
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
    if let Some((named, named_rdev)) = destroy_data {
        if named_rdev != rdev {
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
        return Ok(());
    }
    let findings = facts.findings();
    if findings.is_empty() {
        Ok(())
    } else {
        Err(SafetyError::Refused {
            device: device.to_path_buf(),
            findings,
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

/// Known signatures in the first 128 KiB (`head`) and last 128 KiB (`tail`) of a
/// device of `size` bytes.
pub fn detect_signatures(head: &[u8], tail: &[u8], size: u64) -> Vec<String> {
    let at = |buf: &[u8], off: usize, magic: &[u8]| buf.get(off..off + magic.len()) == Some(magic);
    let mut out = Vec::new();
    let gpt = [512usize, 4096].iter().any(|&o| at(head, o, b"EFI PART"));
    if gpt {
        out.push("a GPT partition table".to_string());
    } else if at(head, 510, &[0x55, 0xaa]) {
        out.push("an MBR partition table (or FAT boot sector)".to_string());
    }
    if at(head, 1080, &[0x53, 0xef]) {
        out.push("an ext2/3/4 filesystem".to_string());
    }
    if at(head, 0, b"XFSB") {
        out.push("an XFS filesystem".to_string());
    }
    if at(head, 0x10040, b"_BHRfS_M") {
        out.push("a btrfs filesystem".to_string());
    }
    if at(head, 0, b"LUKS\xba\xbe") || at(head, 0, b"SKUL\xba\xbe") {
        out.push("a LUKS (dm-crypt) header".to_string());
    }
    let swap = [4096usize, 8192, 16384, 65536]
        .iter()
        .any(|&p| at(head, p - 10, b"SWAPSPACE2") || at(head, p - 10, b"SWAP-SPACE"));
    if swap {
        out.push("a swap area".to_string());
    }
    // md superblocks: v1.1 at 0, v1.2 at 4 KiB, v1.0 near the end, v0.90 in the last 64 KiB block.
    const MD_MAGIC: [u8; 4] = 0xa92b_4efc_u32.to_le_bytes();
    let tail_start = size.saturating_sub(tail.len() as u64);
    let in_tail = |off: u64| {
        off.checked_sub(tail_start)
            .map(|o| at(tail, o as usize, &MD_MAGIC))
    };
    let v10 = ((size / 512).saturating_sub(16) & !7) * 512;
    let v090 = (size & !0xffff).saturating_sub(0x10000);
    if at(head, 0, &MD_MAGIC)
        || at(head, 4096, &MD_MAGIC)
        || (size >= 0x20000 && (in_tail(v10) == Some(true) || in_tail(v090) == Some(true)))
    {
        out.push("an md RAID superblock".to_string());
    }
    out
}

fn read_ends(path: &Path) -> std::io::Result<(Vec<u8>, Vec<u8>, u64)> {
    const SPAN: u64 = 128 * 1024;
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
    let head = read(0, SPAN.min(size))?;
    let tail_len = SPAN.min(size);
    let tail = read(size - tail_len, tail_len)?;
    Ok((head, tail, size))
}

/// Gathers the facts for block device `name` at `path` and decides.
pub fn check_write(
    root: &Root,
    path: &Path,
    name: &str,
    rdev: u64,
    destroy_data: Option<&Path>,
) -> Result<(), SafetyError> {
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
    let mut facts = DeviceFacts {
        mounts: root
            .read_string("proc/self/mountinfo")
            .map(|t| parse_mounts(&t, &numbered))
            .unwrap_or_default(),
        swaps: root
            .read_string("proc/swaps")
            .map(|t| parse_swaps(&t, &names))
            .unwrap_or_default(),
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
    match read_ends(path) {
        Ok((head, tail, size)) => facts.signatures = detect_signatures(&head, &tail, size),
        Err(e) => facts.other.push(format!(
            "its first and last blocks cannot be read to look for signatures ({e})"
        )),
    }
    decide(path, rdev, &facts, destroy)
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
        let e = decide(dev, 0x810, &facts, None).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("held by 'md0'"), "{msg}");
        assert!(msg.contains("md RAID superblock"), "{msg}");
        assert!(msg.contains("--destroy-data /dev/sdb"), "{msg}");
        // Held by md0: in use, so naming the device does not unlock it.
        let e = decide(dev, 0x810, &facts, Some((dev, 0x810))).unwrap_err();
        assert!(matches!(e, SafetyError::InUse { .. }), "{e}");
        assert!(e.to_string().contains("stop the array"), "{e}");
        // A signature alone is what --destroy-data is for.
        let stale = DeviceFacts {
            signatures: vec!["an md RAID superblock".into()],
            ..Default::default()
        };
        assert_eq!(decide(dev, 0x810, &stale, Some((dev, 0x810))), Ok(()));
        let mounted = DeviceFacts {
            mounts: vec!["'sdb1' is mounted at '/srv'".into()],
            ..Default::default()
        };
        assert!(decide(dev, 0x810, &mounted, Some((dev, 0x810))).is_err());
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
    fn signatures_at_their_offsets() {
        let size = 1u64 << 24;
        let blank = vec![0u8; 128 * 1024];
        assert!(detect_signatures(&blank, &blank, size).is_empty());
        let with = |off: usize, magic: &[u8]| {
            let mut h = blank.clone();
            h[off..off + magic.len()].copy_from_slice(magic);
            detect_signatures(&h, &blank, size)
        };
        assert!(with(512, b"EFI PART")[0].contains("GPT"));
        assert!(with(510, &[0x55, 0xaa])[0].contains("MBR"));
        assert!(with(1080, &[0x53, 0xef])[0].contains("ext2/3/4"));
        assert!(with(0, b"XFSB")[0].contains("XFS"));
        assert!(with(0x10040, b"_BHRfS_M")[0].contains("btrfs"));
        assert!(with(0, b"LUKS\xba\xbe")[0].contains("LUKS"));
        assert!(with(4086, b"SWAPSPACE2")[0].contains("swap"));
        assert!(with(4096, &[0xfc, 0x4e, 0x2b, 0xa9])[0].contains("md RAID"));
        // v1.0 superblock: 8 KiB before the end.
        let mut t = blank.clone();
        let off = t.len() - 8192;
        t[off..off + 4].copy_from_slice(&[0xfc, 0x4e, 0x2b, 0xa9]);
        assert!(detect_signatures(&blank, &t, size)[0].contains("md RAID"));
    }
}
