//! Mounted filesystems from /proc/self/mountinfo: where, from which block
//! device, with which options, how full (statvfs), and the RAID geometry the
//! filesystem was told about (XFS sunit/swidth, ext4 stride/stripe-width).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::text::parse_u64;
use super::{ParseError, ProbeError};
use crate::root::Root;

/// Kernel-internal and memory-backed filesystems that say nothing about storage.
const PSEUDO: &[&str] = &[
    "proc",
    "sysfs",
    "tmpfs",
    "devtmpfs",
    "devpts",
    "cgroup",
    "cgroup2",
    "securityfs",
    "debugfs",
    "tracefs",
    "pstore",
    "bpf",
    "mqueue",
    "hugetlbfs",
    "configfs",
    "fusectl",
    "autofs",
    "binfmt_misc",
    "efivarfs",
    "rpc_pipefs",
    "nsfs",
    "ramfs",
    "selinuxfs",
    "nfsd",
];

/// statvfs on these can hang for minutes when the server is away.
const NETWORK: &[&str] = &["nfs", "nfs4", "cifs", "smb3", "fuse.sshfs", "9p"];

/// Bytes read from the start of a device for an ext2/3/4 superblock.
const EXT_HEAD_BYTES: u64 = 2048;
const EXT_SUPERBLOCK_OFFSET: usize = 1024;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Filesystems {
    pub mounts: Vec<Filesystem>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Filesystem {
    pub mount_point: String,
    /// What was mounted (`/dev/md0`, `server:/export`).
    pub source: String,
    pub fs_type: String,
    pub major_minor: String,
    /// Kernel name of the block device (via /sys/dev/block), when there is one.
    pub device: Option<String>,
    /// The subtree mounted, for bind mounts (`None` when the whole filesystem).
    pub bind_root: Option<String>,
    pub mount_options: Vec<String>,
    pub super_options: Vec<String>,
    pub space: Option<Space>,
    pub space_unavailable: Option<String>,
    pub geometry: Option<Geometry>,
    pub geometry_unavailable: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Space {
    pub size_bytes: u64,
    pub free_bytes: u64,
    /// Free to unprivileged users (free minus the reserved blocks).
    pub available_bytes: u64,
    pub files_total: u64,
    pub files_free: u64,
}

/// The RAID layout a filesystem allocates for.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Geometry {
    pub stripe_unit_bytes: Option<u64>,
    pub stripe_width_bytes: Option<u64>,
    pub ext4_block_bytes: Option<u64>,
    pub ext4_raid_stride_blocks: Option<u64>,
    pub ext4_raid_stripe_width_blocks: Option<u64>,
    /// The `stripe=` mount option, in filesystem blocks.
    pub ext4_mount_stripe_blocks: Option<u64>,
    pub xfs_sunit_bytes: Option<u64>,
    pub xfs_swidth_bytes: Option<u64>,
}

/// One line of /proc/self/mountinfo.
#[derive(Debug, Clone, PartialEq)]
pub struct MountInfo {
    pub major_minor: String,
    pub root: String,
    pub mount_point: String,
    pub mount_options: Vec<String>,
    pub fs_type: String,
    pub source: String,
    pub super_options: Vec<String>,
}

pub fn read_filesystems(root: &Root) -> Result<Filesystems, ProbeError> {
    let text = root.read_string("proc/self/mountinfo")?;
    let mut mounts = Vec::new();
    // Bind mounts share a device: read its superblock once.
    let mut superblocks = BTreeMap::new();
    for m in parse_mountinfo(&text)? {
        if PSEUDO.contains(&m.fs_type.as_str()) {
            continue;
        }
        mounts.push(read_filesystem(root, m, &mut superblocks));
    }
    Ok(Filesystems { mounts })
}

type Superblocks = BTreeMap<String, Result<ExtSuperblock, String>>;

fn read_filesystem(root: &Root, m: MountInfo, superblocks: &mut Superblocks) -> Filesystem {
    let device = if m.major_minor.starts_with("0:") {
        None
    } else {
        root.read_link_name(&format!("sys/dev/block/{}", m.major_minor))
            .ok()
    };
    let (space, space_unavailable) = if NETWORK.contains(&m.fs_type.as_str()) {
        (
            None,
            Some("not queried on a network filesystem (statvfs can hang)".into()),
        )
    } else {
        let path = m.mount_point.clone();
        match root.captured(&format!("statvfs/{}", escape_path(&path)), || {
            live_statvfs(&path)
        }) {
            Ok(s) => (Some(s), None),
            Err(why) => (None, Some(why)),
        }
    };
    let options = m.super_options.iter().chain(&m.mount_options);
    let (geometry, geometry_unavailable) = match m.fs_type.as_str() {
        "xfs" => (Some(xfs_geometry(options)), None),
        "ext2" | "ext3" | "ext4" => ext_geometry(root, device.as_deref(), options, superblocks),
        _ => (None, None),
    };
    Filesystem {
        mount_point: m.mount_point,
        source: m.source,
        fs_type: m.fs_type,
        major_minor: m.major_minor,
        device,
        bind_root: (m.root != "/").then_some(m.root),
        mount_options: m.mount_options,
        super_options: m.super_options,
        space,
        space_unavailable,
        geometry,
        geometry_unavailable,
    }
}

/// A numeric `key=value` among mount options.
fn option_u64<'a>(options: impl Iterator<Item = &'a String>, key: &str) -> Option<u64> {
    options
        .filter_map(|o| o.strip_prefix(key)?.strip_prefix('='))
        .find_map(|v| v.parse().ok())
}

/// XFS prints `sunit=`/`swidth=` (512-byte units) only when they are set.
fn xfs_geometry<'a>(options: impl Iterator<Item = &'a String> + Clone) -> Geometry {
    let sunit = option_u64(options.clone(), "sunit").unwrap_or(0) * 512;
    let swidth = option_u64(options, "swidth").unwrap_or(0) * 512;
    Geometry {
        stripe_unit_bytes: Some(sunit),
        stripe_width_bytes: Some(swidth),
        xfs_sunit_bytes: Some(sunit),
        xfs_swidth_bytes: Some(swidth),
        ..Default::default()
    }
}

fn ext_geometry<'a>(
    root: &Root,
    device: Option<&str>,
    options: impl Iterator<Item = &'a String>,
    superblocks: &mut Superblocks,
) -> (Option<Geometry>, Option<String>) {
    let mount_stripe = option_u64(options, "stripe");
    let mut g = Geometry {
        ext4_mount_stripe_blocks: mount_stripe,
        ..Default::default()
    };
    let sb = match device {
        None => Err("no block device to read the superblock from".to_string()),
        Some(dev) => superblocks
            .entry(dev.to_string())
            .or_insert_with(|| {
                root.read_head(&format!("dev/{dev}"), EXT_HEAD_BYTES)
                    .map_err(|e| e.to_string())
                    .and_then(|head| parse_ext_superblock(&head).map_err(|e| format!("{dev}: {e}")))
            })
            .clone(),
    };
    let why = match sb {
        Ok(sb) => {
            g.ext4_block_bytes = Some(sb.block_bytes);
            g.ext4_raid_stride_blocks = Some(sb.raid_stride_blocks);
            g.ext4_raid_stripe_width_blocks = Some(sb.raid_stripe_width_blocks);
            g.stripe_unit_bytes = Some(sb.raid_stride_blocks * sb.block_bytes);
            // The mount option overrides the superblock for the allocator.
            let width = mount_stripe.unwrap_or(sb.raid_stripe_width_blocks);
            g.stripe_width_bytes = Some(width * sb.block_bytes);
            None
        }
        Err(why) => Some(why),
    };
    (Some(g), why)
}

/// The fields of an ext2/3/4 superblock we use.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtSuperblock {
    pub block_bytes: u64,
    pub raid_stride_blocks: u64,
    pub raid_stripe_width_blocks: u64,
}

/// Parses the superblock at offset 1024 of `head` (the first 2 KiB of the device).
pub fn parse_ext_superblock(head: &[u8]) -> Result<ExtSuperblock, ParseError> {
    let sb = head
        .get(EXT_SUPERBLOCK_OFFSET..EXT_SUPERBLOCK_OFFSET + 1024)
        .ok_or_else(|| ParseError::missing("ext4 superblock", "1024 bytes at offset 1024"))?;
    let u16_at = |o: usize| u16::from_le_bytes([sb[o], sb[o + 1]]);
    let u32_at = |o: usize| u32::from_le_bytes([sb[o], sb[o + 1], sb[o + 2], sb[o + 3]]);
    let magic = u16_at(0x38);
    if magic != 0xEF53 {
        return Err(ParseError::value(
            "ext4 superblock magic",
            format!("{magic:#06x}"),
        ));
    }
    let log = u32_at(0x18);
    // Block sizes run from 1 KiB (log 0) to 64 KiB (log 6).
    if log > 6 {
        return Err(ParseError::value(
            "ext4 superblock s_log_block_size",
            log.to_string(),
        ));
    }
    Ok(ExtSuperblock {
        block_bytes: 1024 << log,
        raid_stride_blocks: u64::from(u16_at(0x164)),
        raid_stripe_width_blocks: u64::from(u32_at(0x170)),
    })
}

/// Parses /proc/self/mountinfo (proc(5)).
pub fn parse_mountinfo(text: &str) -> Result<Vec<MountInfo>, ParseError> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(' ').collect();
        let sep = fields
            .iter()
            .position(|f| *f == "-")
            .ok_or_else(|| ParseError::value("/proc/self/mountinfo line", line))?;
        if sep < 6 || fields.len() < sep + 3 {
            return Err(ParseError::value("/proc/self/mountinfo line", line));
        }
        let major_minor = fields[2];
        let valid_dev = major_minor
            .split_once(':')
            .is_some_and(|(a, b)| parse_u64("", a).is_ok() && parse_u64("", b).is_ok());
        if !valid_dev {
            return Err(ParseError::value(
                "/proc/self/mountinfo major:minor",
                major_minor,
            ));
        }
        let split = |s: &str| s.split(',').map(unescape).collect::<Vec<_>>();
        out.push(MountInfo {
            major_minor: major_minor.to_string(),
            root: unescape(fields[3]),
            mount_point: unescape(fields[4]),
            mount_options: split(fields[5]),
            fs_type: unescape(fields[sep + 1]),
            source: unescape(fields[sep + 2]),
            super_options: fields.get(sep + 3).map(|s| split(s)).unwrap_or_default(),
        });
    }
    Ok(out)
}

/// Undoes the kernel's octal escapes (`\040` space, `\011` tab, `\012`, `\134`).
pub fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && let Some(oct) = b.get(i + 1..i + 4)
            && oct.iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = oct
                .iter()
                .fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
            if let Ok(byte) = u8::try_from(v) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A mount point as one file name, systemd-escape style: `/srv/nas` → `srv-nas`,
/// `/` → `-`; anything but `[A-Za-z0-9_.]` becomes `\xNN`.
pub fn escape_path(path: &str) -> String {
    let trimmed = path.trim_matches('/');
    if trimmed.is_empty() {
        return "-".into();
    }
    let mut out = String::new();
    for (i, b) in trimmed.bytes().enumerate() {
        match b {
            b'/' => out.push('-'),
            b'.' if i == 0 => out.push_str("\\x2e"),
            b if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' => out.push(char::from(b)),
            b => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

#[cfg(target_env = "musl")]
use libc::{statvfs as statvfs_call, statvfs as StatVfs};
#[cfg(not(target_env = "musl"))]
use libc::{statvfs64 as statvfs_call, statvfs64 as StatVfs};

/// statvfs(3) through the large-file call, so 32-bit ARM sees disks over 2 TiB.
fn live_statvfs(path: &str) -> Result<Space, String> {
    let c = std::ffi::CString::new(path).map_err(|_| format!("'{path}' contains a NUL byte"))?;
    // SAFETY: StatVfs is plain old data; statvfs fills it on success.
    let mut s: StatVfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated string and `s` a valid out pointer.
    if unsafe { statvfs_call(c.as_ptr(), &mut s) } != 0 {
        return Err(format!(
            "statvfs '{path}': {}",
            std::io::Error::last_os_error()
        ));
    }
    #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
    let frsize = s.f_frsize as u64;
    #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
    Ok(Space {
        size_bytes: (s.f_blocks as u64).saturating_mul(frsize),
        free_bytes: (s.f_bfree as u64).saturating_mul(frsize),
        available_bytes: (s.f_bavail as u64).saturating_mul(frsize),
        files_total: s.f_files as u64,
        files_free: s.f_ffree as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
31 27 9:0 / /srv rw,noatime shared:5 - ext4 /dev/md0 rw,stripe=384
32 27 253:0 / /srv/my\\040share rw,relatime shared:6 master:2 - xfs /dev/mapper/nas\\040data rw,attr2,inode64,sunit=1024,swidth=3072,noquota
33 27 253:0 /exports /export/x rw - xfs /dev/mapper/nas\\040data rw
";

    #[test]
    fn mountinfo_fields_and_escapes() {
        let m = parse_mountinfo(MOUNTINFO).unwrap();
        assert_eq!(m.len(), 5);
        assert_eq!(m[1].mount_point, "/");
        assert_eq!(m[1].major_minor, "254:0");
        assert_eq!(m[2].super_options, vec!["rw", "stripe=384"]);
        assert_eq!(m[2].mount_options, vec!["rw", "noatime"]);
        assert_eq!(m[3].mount_point, "/srv/my share");
        assert_eq!(m[3].source, "/dev/mapper/nas data");
        assert_eq!(m[3].fs_type, "xfs");
        assert_eq!(m[4].root, "/exports");
        assert!(parse_mountinfo("1 2 3:4 / /x rw\n").is_err());
        let e = parse_mountinfo("1 2 x:4 / /x rw - ext4 /dev/x rw\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("'x:4'"), "{e}");
    }

    #[test]
    fn octal_unescape() {
        assert_eq!(unescape("a\\040b\\011c\\134d"), "a b\tc\\d");
        assert_eq!(unescape("trailing\\04"), "trailing\\04");
        assert_eq!(unescape("\\777"), "\\777");
    }

    #[test]
    fn mount_points_as_file_names() {
        assert_eq!(escape_path("/"), "-");
        assert_eq!(escape_path("/srv/nas"), "srv-nas");
        assert_eq!(escape_path("/srv/my share"), "srv-my\\x20share");
        assert_eq!(escape_path("/a-b/.c"), "a\\x2db-.c");
        assert_eq!(escape_path("/.hidden"), "\\x2ehidden");
    }

    #[test]
    fn xfs_options_are_512_byte_units() {
        let m = parse_mountinfo(MOUNTINFO).unwrap();
        let g = xfs_geometry(m[3].super_options.iter());
        assert_eq!(g.xfs_sunit_bytes, Some(512 * 1024));
        assert_eq!(g.stripe_width_bytes, Some(3 * 512 * 1024));
        let none = xfs_geometry(m[4].super_options.iter());
        assert_eq!(none.stripe_unit_bytes, Some(0));
    }

    fn superblock(log: u32, stride: u16, width: u32) -> Vec<u8> {
        let mut head = vec![0u8; 2048];
        let sb = &mut head[1024..];
        sb[0x18..0x1c].copy_from_slice(&log.to_le_bytes());
        sb[0x38..0x3a].copy_from_slice(&0xEF53u16.to_le_bytes());
        sb[0x164..0x166].copy_from_slice(&stride.to_le_bytes());
        sb[0x170..0x174].copy_from_slice(&width.to_le_bytes());
        head
    }

    #[test]
    fn ext4_superblock_fields() {
        let sb = parse_ext_superblock(&superblock(2, 128, 384)).unwrap();
        assert_eq!(sb.block_bytes, 4096);
        assert_eq!(sb.raid_stride_blocks, 128);
        assert_eq!(sb.raid_stripe_width_blocks, 384);
        assert!(parse_ext_superblock(&superblock(2, 1, 1)[..1500]).is_err());
        let mut bad = superblock(2, 1, 1);
        bad[1024 + 0x38] = 0;
        let e = parse_ext_superblock(&bad).unwrap_err().to_string();
        assert!(e.contains("'0xef00'"), "{e}");
        assert!(parse_ext_superblock(&superblock(40, 1, 1)).is_err());
    }
}
