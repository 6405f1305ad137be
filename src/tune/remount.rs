//! Remounting for an fstab edit (`tune apply --reload`, and each switch of a
//! `tune try`): the edited entry takes effect by a remount with its options
//! spelled out; a trial also checks each revert against the mount's state
//! before it.
//!
//! A plain `mount -o remount MP` is not enough. util-linux merges the options
//! the mount has now into the remount (`noatime` stays beside a `relatime`
//! asked for, and wins), BusyBox's mount does it its own way, and on a remount
//! the kernel keeps the atime mode when no atime option is given
//! (fs/namespace.c). So the remount is made here with mount(2), the flags
//! taken from exactly the entry's options, and `relatime` (the kernel's default
//! at mount) named when the entry names no atime mode. Filesystem options such
//! as ext4's `commit=` stay as they were when left out; no option list can
//! reset those, so the mount's state after each revert is compared with the
//! state before and a difference stops the trial.

use std::ffi::CString;

use crate::probe::filesystems::{MountInfo, parse_mountinfo};
use crate::root::Root;

/// The options that set the atime mode of a mount on a remount.
const ATIME_OPTIONS: [&str; 4] = ["noatime", "relatime", "strictatime", "nodiratime"];

/// The options for `mount -o remount,…` that give the mount what a fresh
/// mount of the fstab entry with `fstab_options` would give it.
pub fn remount_options(fstab_options: &[String]) -> Vec<String> {
    let mut out = fstab_options.to_vec();
    if !out.iter().any(|o| ATIME_OPTIONS.contains(&o.as_str())) {
        out.push("relatime".to_string());
    }
    out
}

/// What the kernel shows of a mount: its per-mount and superblock options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountState {
    pub mount_options: Vec<String>,
    pub super_options: Vec<String>,
}

impl MountState {
    /// As `/proc/self/mountinfo` shows it: `rw,noatime | rw,errors=remount-ro`.
    pub fn describe(&self) -> String {
        format!(
            "{} | {}",
            self.mount_options.join(","),
            self.super_options.join(",")
        )
    }
}

/// `/srv/data/` and `/srv/data` are one mount point.
fn same_mount_point(a: &str, b: &str) -> bool {
    let t = |p: &str| p.trim_end_matches('/').to_string();
    t(a) == t(b) || (a.starts_with('/') && t(a).is_empty() && t(b).is_empty())
}

/// The mount at `mount_point` that is visible: the last one listed there.
pub fn mount_at<'m>(mounts: &'m [MountInfo], mount_point: &str) -> Option<&'m MountInfo> {
    mounts
        .iter()
        .rev()
        .find(|m| same_mount_point(&m.mount_point, mount_point))
}

/// The live mount at `mount_point`, from this process's mountinfo.
fn live_mount(mount_point: &str) -> Result<MountInfo, String> {
    let text = Root::live()
        .read_string("proc/self/mountinfo")
        .map_err(|e| e.to_string())?;
    let mounts = parse_mountinfo(&text).map_err(|e| e.to_string())?;
    mount_at(&mounts, mount_point)
        .cloned()
        .ok_or_else(|| format!("nothing is mounted at '{mount_point}': mount it first"))
}

/// The live state of the mount at `mount_point`.
pub fn mount_state(mount_point: &str) -> Result<MountState, String> {
    let m = live_mount(mount_point)?;
    Ok(MountState {
        mount_options: m.mount_options,
        super_options: m.super_options,
    })
}

/// The block device mounted at `mount_point` (`sda1`, `loop3`), by its
/// major:minor in /sys/dev/block; `None` for a filesystem on no block device.
pub fn mount_device(mount_point: &str) -> Option<String> {
    let m = live_mount(mount_point).ok()?;
    let real = std::fs::canonicalize(format!("/sys/dev/block/{}", m.major_minor)).ok()?;
    Some(real.file_name()?.to_str()?.to_string())
}

/// Options mount(8) keeps to itself: never passed to the kernel.
fn userspace_only(o: &str) -> bool {
    matches!(
        o,
        "defaults" | "auto" | "noauto" | "nouser" | "owner" | "group" | "nofail" | "_netdev"
    ) || o.starts_with("x-")
        || o.starts_with("X-")
        || o.starts_with("comment=")
}

/// The mount(2) flags set (`Some(true)`) or cleared (`Some(false)`) by a VFS
/// option (mount(8) "FILESYSTEM-INDEPENDENT MOUNT OPTIONS"); `None` for a
/// filesystem's own option, which goes to the kernel as data.
fn vfs_flag(o: &str) -> Option<(libc::c_ulong, bool)> {
    Some(match o {
        "ro" => (libc::MS_RDONLY, true),
        "rw" => (libc::MS_RDONLY, false),
        "nosuid" => (libc::MS_NOSUID, true),
        "suid" => (libc::MS_NOSUID, false),
        "nodev" => (libc::MS_NODEV, true),
        "dev" => (libc::MS_NODEV, false),
        "noexec" => (libc::MS_NOEXEC, true),
        "exec" => (libc::MS_NOEXEC, false),
        "sync" => (libc::MS_SYNCHRONOUS, true),
        "async" => (libc::MS_SYNCHRONOUS, false),
        "dirsync" => (libc::MS_DIRSYNC, true),
        "mand" => (libc::MS_MANDLOCK, true),
        "nomand" => (libc::MS_MANDLOCK, false),
        "noatime" => (libc::MS_NOATIME, true),
        "atime" => (libc::MS_NOATIME, false),
        "nodiratime" => (libc::MS_NODIRATIME, true),
        "diratime" => (libc::MS_NODIRATIME, false),
        "relatime" => (libc::MS_RELATIME, true),
        "norelatime" => (libc::MS_RELATIME, false),
        "strictatime" => (libc::MS_STRICTATIME, true),
        "lazytime" => (libc::MS_LAZYTIME, true),
        "nolazytime" => (libc::MS_LAZYTIME, false),
        "silent" => (libc::MS_SILENT, true),
        "loud" => (libc::MS_SILENT, false),
        // As in fstab: a user mount implies these unless later options say otherwise.
        "user" | "users" => (libc::MS_NOEXEC | libc::MS_NOSUID | libc::MS_NODEV, true),
        _ => return None,
    })
}

/// The mount(2) flags and data string for `options`, in order (a later
/// option wins over an earlier one, as with mount(8)).
pub fn flags_and_data(options: &[String]) -> (libc::c_ulong, String) {
    let mut flags: libc::c_ulong = 0;
    let mut data: Vec<&str> = Vec::new();
    for o in options.iter().map(String::as_str) {
        if userspace_only(o) {
            continue;
        }
        match vfs_flag(o) {
            Some((f, true)) => flags |= f,
            Some((f, false)) => flags &= !f,
            None => data.push(o),
        }
    }
    (flags, data.join(","))
}

/// Remounts `mount_point` with exactly `options` (mount(2), `MS_REMOUNT`).
pub fn remount(mount_point: &str, options: &[String]) -> Result<(), String> {
    let (flags, data) = flags_and_data(options);
    let nul = |s: &str| {
        CString::new(s).map_err(|_| format!("'{s}' holds a NUL byte: it cannot be a mount option"))
    };
    let (source, target, data_c) = (nul("none")?, nul(mount_point)?, nul(&data)?);
    let data_ptr = match data.is_empty() {
        true => std::ptr::null(),
        false => data_c.as_ptr().cast::<libc::c_void>(),
    };
    // SAFETY: mount(2) with NUL-terminated strings that outlive the call; the
    // source is ignored on a remount and no filesystem type is given.
    let r = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            std::ptr::null(),
            libc::MS_REMOUNT | flags,
            data_ptr,
        )
    };
    if r == 0 {
        return Ok(());
    }
    Err(format!(
        "remounting '{mount_point}' with '{}' failed: {}",
        options.join(","),
        std::io::Error::last_os_error()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split(',').map(str::to_string).collect()
    }

    #[test]
    fn an_entry_without_an_atime_option_remounts_relatime() {
        assert_eq!(remount_options(&v("defaults")), v("defaults,relatime"));
        assert_eq!(
            remount_options(&v("defaults,noatime")),
            v("defaults,noatime")
        );
        assert_eq!(
            remount_options(&v("rw,nodiratime,commit=60")),
            v("rw,nodiratime,commit=60")
        );
        assert_eq!(
            remount_options(&v("ro,lazytime")),
            v("ro,lazytime,relatime")
        );
    }

    #[test]
    fn options_become_flags_and_data_in_order() {
        let (f, d) = flags_and_data(&v("defaults,noatime,commit=60,nofail,x-systemd.automount"));
        assert_eq!((f, d.as_str()), (libc::MS_NOATIME, "commit=60"));
        let (f, d) = flags_and_data(&v("ro,rw,nodev,relatime,errors=remount-ro,data=ordered"));
        assert_eq!(f, libc::MS_NODEV | libc::MS_RELATIME);
        assert_eq!(d, "errors=remount-ro,data=ordered");
        let (f, _) = flags_and_data(&v("user,exec"));
        assert_eq!(f, libc::MS_NOSUID | libc::MS_NODEV);
        assert_eq!(flags_and_data(&v("defaults")), (0, String::new()));
    }

    #[test]
    fn the_visible_mount_is_the_last_one_at_its_point() {
        let text = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro
30 22 7:3 / /srv rw,relatime shared:2 - ext4 /dev/loop3 rw
31 22 7:4 / /srv rw,noatime shared:3 - xfs /dev/loop4 rw,attr2
";
        let mounts = parse_mountinfo(text).unwrap();
        let m = mount_at(&mounts, "/srv/").unwrap();
        assert_eq!(m.major_minor, "7:4");
        assert_eq!(m.mount_options, v("rw,noatime"));
        assert_eq!(mount_at(&mounts, "/").unwrap().source, "/dev/sda1");
        assert!(mount_at(&mounts, "/data").is_none());
        let s = MountState {
            mount_options: m.mount_options.clone(),
            super_options: m.super_options.clone(),
        };
        assert_eq!(s.describe(), "rw,noatime | rw,attr2");
    }
}
