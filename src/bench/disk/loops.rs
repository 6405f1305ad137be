//! Attached loop devices and what each sits on. The kernel's own answer
//! (LOOP_GET_STATUS64: the backing file's device and inode, or the backing
//! block device's numbers) is what is compared, never the name sysfs shows:
//! one file has other names (a hardlink, a bind mount, a path in another mount
//! namespace), and a file renamed or deleted after `losetup` still backs its
//! device under the old name.

use std::path::Path;

use crate::root::Root;

/// What a loop device reads and writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backing {
    /// A regular file: its filesystem's device number and its inode.
    File { dev: u64, ino: u64 },
    /// A block device, by its numbers.
    Device { major: u32, minor: u32 },
    /// Only the name sysfs shows: a fixture tree, or the kernel did not say.
    Named(String),
}

/// One attached loop device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopDev {
    /// "loop3".
    pub name: String,
    /// The backing file's name as sysfs shows it, for messages.
    pub file: String,
    pub backing: Backing,
}

impl LoopDev {
    /// Whether this loop device sits on the block device `name` with numbers
    /// `numbers` ("maj:min", empty when unknown).
    pub fn is_over(&self, name: &str, numbers: &str) -> bool {
        match &self.backing {
            Backing::Device { major, minor } => format!("{major}:{minor}") == numbers,
            Backing::Named(p) => p.strip_prefix("/dev/") == Some(name),
            Backing::File { .. } => false,
        }
    }
}

/// Every attached loop device: those with a `loop/backing_file` in sysfs.
pub fn read_loops(root: &Root) -> Vec<LoopDev> {
    let mut out = Vec::new();
    for name in root.read_dir_optional("sys/block").unwrap_or_default() {
        if !name.starts_with("loop") {
            continue;
        }
        let Ok(Some(file)) = root.read_optional(&format!("sys/block/{name}/loop/backing_file"))
        else {
            continue;
        };
        let file = file.trim_end_matches(" (deleted)").to_string();
        let backing = if root.is_live() {
            status(Path::new(&format!("/dev/{name}")))
                .or_else(|| stat_backing(Path::new(&file)))
                .unwrap_or_else(|| Backing::Named(file.clone()))
        } else {
            Backing::Named(file.clone())
        };
        out.push(LoopDev {
            name,
            file,
            backing,
        });
    }
    out
}

/// What a file or device at `path` is as a backing: a regular file by device
/// and inode, a block device by its numbers.
pub fn stat_backing(path: &Path) -> Option<Backing> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let m = std::fs::metadata(path).ok()?;
    if m.file_type().is_block_device() {
        Some(Backing::Device {
            major: libc::major(m.rdev()),
            minor: libc::minor(m.rdev()),
        })
    } else if m.is_file() {
        Some(Backing::File {
            dev: m.dev(),
            ino: m.ino(),
        })
    } else {
        None
    }
}

/// `struct loop_info64` of <linux/loop.h>: 232 bytes on every architecture
/// (the u64 fields come first, so 32-bit ARM lays it out the same).
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

const _: () = assert!(std::mem::size_of::<LoopInfo64>() == 232);

/// LOOP_GET_STATUS64 (0x4C05) on the loop device node at `node`.
fn status(node: &Path) -> Option<Backing> {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(node).ok()?;
    // SAFETY: an all-zero loop_info64 is a valid value of this plain struct.
    let mut info: LoopInfo64 = unsafe { std::mem::zeroed() };
    // SAFETY: LOOP_GET_STATUS64 fills one loop_info64, which `info` is.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), 0x4C05, &mut info as *mut LoopInfo64) };
    if rc != 0 {
        return None;
    }
    // The kernel encodes both numbers as user space's dev_t does (huge_encode_dev).
    Some(if info.lo_rdevice != 0 {
        Backing::Device {
            major: libc::major(info.lo_rdevice),
            minor: libc::minor(info.lo_rdevice),
        }
    } else {
        Backing::File {
            dev: info.lo_device,
            ino: info.lo_inode,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixture_tree_names_backings_and_devices_match_by_name_or_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for (l, backing) in [
            ("loop0", "/dev/sdb1\n"),
            ("loop1", "/srv/disk.img (deleted)\n"),
        ] {
            std::fs::create_dir_all(d.join(format!("sys/block/{l}/loop"))).unwrap();
            std::fs::write(d.join(format!("sys/block/{l}/loop/backing_file")), backing).unwrap();
        }
        // Detached: no backing_file.
        std::fs::create_dir_all(d.join("sys/block/loop7")).unwrap();
        std::fs::create_dir_all(d.join("sys/block/sda")).unwrap();
        let loops = read_loops(&Root::tree(d).unwrap());
        assert_eq!(loops.len(), 2, "{loops:?}");
        assert_eq!(loops[1].file, "/srv/disk.img");
        assert_eq!(loops[1].backing, Backing::Named("/srv/disk.img".into()));
        assert!(loops[0].is_over("sdb1", ""));
        assert!(!loops[0].is_over("sdb", "8:16"));
        let over = LoopDev {
            name: "loop2".into(),
            file: "/dev/disk/by-id/usb-x".into(),
            backing: Backing::Device {
                major: 8,
                minor: 16,
            },
        };
        assert!(over.is_over("sdb", "8:16"));
        assert!(!over.is_over("sdb", "8:17"));
    }
}
