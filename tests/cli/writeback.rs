//! Machine-wide write settings for the tests that judge writeback: the dirty
//! limits (restored on drop) and a device's blkio write throttle (lifted on
//! drop), with an ext4 file system laid out in full before a throttle holds it.
//! Shared by path by the cli and quiet binaries.

use crate::loopdev::sh;

/// Restores a sysctl (or any file) on drop.
pub(crate) struct Restore(String, String);

impl Restore {
    pub(crate) fn set(path: &'static str, value: &str) -> Restore {
        let read = |p: &str| std::fs::read_to_string(p).unwrap();
        // The kernel keeps each dirty limit as bytes or as a ratio, whichever
        // was written last, and refuses 0 bytes (EINVAL): a limit that was a
        // ratio (dirty_bytes 0, the default) goes back by writing its ratio.
        // Writing the old "0" left the test's 512 MiB limit on the machine.
        let (back, old) = match path.strip_suffix("_bytes") {
            Some(stem) if read(path).trim() == "0" => {
                let ratio = format!("{stem}_ratio");
                let old = read(&ratio);
                (ratio, old)
            }
            _ => (path.to_string(), read(path)),
        };
        std::fs::write(path, value).unwrap();
        Restore(back, old)
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.0, &self.1);
    }
}

/// Lifts the blkio throttle of a device (root cgroup v1) on drop.
pub(crate) struct Throttle(String);

impl Throttle {
    /// Holds writes to `dev` to `bps` bytes a second (the root group: the
    /// flusher threads too).
    pub(crate) fn set(dev: &str, bps: u64) -> Throttle {
        let numbers = dev_numbers(dev);
        std::fs::write(THROTTLE, format!("{numbers} {bps}\n")).unwrap();
        Throttle(numbers)
    }
}

pub(crate) const THROTTLE: &str = "/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device";

impl Drop for Throttle {
    fn drop(&mut self) {
        let _ = std::fs::write(THROTTLE, format!("{} 0\n", self.0));
    }
}

/// Dirty + Writeback now, bytes.
pub(crate) fn dirty_now() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    text.lines()
        .filter(|l| l.starts_with("Dirty:") || l.starts_with("Writeback:"))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024)
        .sum()
}

/// ext4 on `l`, mounted at its mount point, with its inode tables and
/// journal written now, not later by ext4lazyinit through a throttle.
pub(crate) fn mount_ext4(l: &crate::loopdev::Loop) -> std::path::PathBuf {
    sh(&format!(
        "mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 {}",
        l.dev
    ));
    let mnt = l.mountpoint();
    sh(&format!("mount {} {}", l.dev, mnt.display()));
    mnt
}

pub(crate) fn dev_numbers(dev: &str) -> String {
    use std::os::unix::fs::MetadataExt;
    let r = std::fs::metadata(dev).unwrap().rdev();
    format!("{}:{}", libc::major(r), libc::minor(r))
}
