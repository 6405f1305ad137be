//! The three things `tune` ever writes, journaled the same way: a runtime value (a
//! file under /proc/sys or /sys: old string → new string), a network device
//! setting (ethtool ioctls: old value → new value) and a whole file under the root
//! (old bytes or absent → new bytes). Every change kind becomes a list of these.

use std::fs;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

pub use super::file_meta::FileMeta;
use crate::root::{MAX_FILE_BYTES, Place, Root};

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// `value: None` only journals the old value (a companion that rollback must
    /// restore, such as vm.dirty_ratio when vm.dirty_bytes is set).
    Runtime { path: String, value: Option<String> },
    /// A device setting made through ioctls: a network device's (`rx`, `mtu`,
    /// an offload feature, coalescing) through ethtool, `path`
    /// `netdev/IFACE/SETTING` (see [`netdev_path`]); or a dm-crypt flag through
    /// device-mapper, `path` `dmcrypt/NAME/FLAG`.
    Netdev { path: String, value: String },
    /// A whole file, written atomically: owned by nastune, or an in-place edit of
    /// fstab or smb.conf whose old bytes are journaled whole.
    File { path: String, content: Vec<u8> },
}

/// Journal kind of each action; rollback and verify dispatch on it.
pub const KIND_RUNTIME: &str = "runtime";
pub const KIND_NETDEV: &str = "netdev";
pub const KIND_FILE: &str = "file";

/// The journal path of a network device setting.
pub fn netdev_path(interface: &str, setting: &str) -> String {
    format!("netdev/{interface}/{setting}")
}

/// Interface and setting of a `netdev/IFACE/SETTING` journal path.
fn split_netdev_path(path: &str) -> Result<(&str, &str), WriteError> {
    path.strip_prefix("netdev/")
        .and_then(|r| r.split_once('/'))
        .ok_or_else(|| WriteError::Read {
            path: path.to_string(),
            message: "not a netdev/IFACE/SETTING journal path".into(),
        })
}

/// The current value of a journaled path of `kind`: a network device setting
/// through ethtool, anything else read below the root.
pub fn read_entry(root: &Root, kind: &str, path: &str) -> Result<Option<Vec<u8>>, WriteError> {
    if kind != KIND_NETDEV {
        return read_current(root, path);
    }
    let read_err = |message: String| WriteError::Read {
        path: path.to_string(),
        message,
    };
    if let Some((name, flag)) = split_dmcrypt_path(path) {
        return super::dmcrypt::get(name, flag)
            .map(|v| Some(v.into_bytes()))
            .map_err(|e| read_err(e.to_string()));
    }
    let (interface, setting) = split_netdev_path(path)?;
    super::netdev::get(interface, setting)
        .map(|v| Some(v.into_bytes()))
        .map_err(|e| read_err(e.to_string()))
}

/// Mapping and flag of a `dmcrypt/NAME/FLAG` journal path: a dm-crypt flag,
/// journaled as a device setting like the network ones.
fn split_dmcrypt_path(path: &str) -> Option<(&str, &str)> {
    path.strip_prefix("dmcrypt/")?.split_once('/')
}

/// Sets a network device setting named by its journal path.
pub fn write_netdev(path: &str, value: &str) -> Result<(), WriteError> {
    let io_err = |message: String| WriteError::Io {
        path: path.into(),
        cause: io::Error::other(message),
    };
    if let Some((name, flag)) = split_dmcrypt_path(path) {
        return super::dmcrypt::set(name, flag, value.trim()).map_err(|e| io_err(e.to_string()));
    }
    let (interface, setting) = split_netdev_path(path)?;
    super::netdev::set(interface, setting, value.trim()).map_err(|e| io_err(e.to_string()))
}

impl Action {
    pub fn kind(&self) -> &'static str {
        match self {
            Action::Runtime { .. } => KIND_RUNTIME,
            Action::Netdev { .. } => KIND_NETDEV,
            Action::File { .. } => KIND_FILE,
        }
    }

    pub fn path(&self) -> &str {
        match self {
            Action::Runtime { path, .. }
            | Action::Netdev { path, .. }
            | Action::File { path, .. } => path,
        }
    }

    /// The new value as journaled.
    pub fn new_bytes(&self) -> Option<Vec<u8>> {
        match self {
            Action::Runtime { value, .. } => value.as_ref().map(|v| v.as_bytes().to_vec()),
            Action::Netdev { value, .. } => Some(value.as_bytes().to_vec()),
            Action::File { content, .. } => Some(content.clone()),
        }
    }
}

/// One step of an apply: an action and what it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub action: Action,
    /// Canonical setting name (`sysctl:vm.swappiness`, `file:/etc/sysctl.d/…`).
    pub setting: String,
    pub rule_id: Option<String>,
    /// Reverted by the dead-man timer unless confirmed.
    pub network: bool,
    /// Written only at `tune confirm` (persistence of network changes, so a reboot
    /// before the confirmation does not bring them back).
    pub deferred: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("cannot write '{}': {cause}", path.display())]
    Io {
        path: std::path::PathBuf,
        cause: io::Error,
    },
    #[error("cannot read '{path}': {message}")]
    Read { path: String, message: String },
    #[error("'{0}' leaves the root; tune only writes below it")]
    Escapes(String),
    #[error(
        "cannot write '{}': it is on a read-only file system (EROFS); remount it read-write ('mount -o remount,rw' on its mount point) or leave out the changes that write there",
        path.display()
    )]
    ReadOnly { path: std::path::PathBuf },
    #[error(
        "cannot replace '{}': it is immutable or append-only; 'chattr -i -a' it first if the change is wanted",
        path.display()
    )]
    Immutable { path: std::path::PathBuf },
}

/// Refuses paths with `..` or an absolute start: every write stays below the root.
pub fn check_relative(rel: &str) -> Result<(), WriteError> {
    let p = Path::new(rel);
    if p.is_absolute()
        || p.components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return Err(WriteError::Escapes(rel.to_string()));
    }
    Ok(())
}

/// The current bytes of a runtime value or file; `None` when absent. A file
/// over the cap is an error, never cut: its head, edited and written back (and
/// journaled as the old value), lost the shares after the first 4 MiB.
pub fn read_current(root: &Root, rel: &str) -> Result<Option<Vec<u8>>, WriteError> {
    read_capped(root, rel, true)
}

/// The current value of a journaled path, to compare with the journal
/// (rollback, verify): like [`read_entry`], but a file over the cap reads as
/// its first cap + 1 bytes, which equal no journaled value (each within the
/// cap), so a file that grew past the cap is still put back.
pub fn read_entry_to_compare(
    root: &Root,
    kind: &str,
    path: &str,
) -> Result<Option<Vec<u8>>, WriteError> {
    if kind == KIND_NETDEV {
        return read_entry(root, kind, path);
    }
    read_capped(root, path, false)
}

fn read_capped(root: &Root, rel: &str, whole: bool) -> Result<Option<Vec<u8>>, WriteError> {
    let read = if whole {
        root.read_bytes(rel, MAX_FILE_BYTES)
    } else {
        root.read_head(rel, MAX_FILE_BYTES + 1)
    };
    match read {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(WriteError::Read {
            path: rel.to_string(),
            message: e.to_string(),
        }),
    }
}

/// The value a runtime file holds: the bracketed choice of a list such as
/// `mq-deadline [none]`, otherwise the text with whitespace runs made one space.
pub fn selected_value(raw: &str) -> String {
    if let Some(start) = raw.find('[')
        && let Some(len) = raw[start + 1..].find(']')
    {
        return raw[start + 1..start + 1 + len].to_string();
    }
    raw.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Writes a runtime value. Live, the kernel gets the value. In a tree, the file is
/// made to read as the kernel would answer: the brackets move within a choice list,
/// anything else becomes `value\n`.
pub fn write_runtime(root: &Root, rel: &str, value: &str) -> Result<(), WriteError> {
    check_relative(rel)?;
    if root.is_live() {
        let path = root.path(rel);
        let io = |source| WriteError::Io {
            path: path.clone(),
            cause: source,
        };
        let mut f = fs::OpenOptions::new().write(true).open(&path).map_err(io)?;
        return f.write_all(value.as_bytes()).map_err(io);
    }
    let current = root.read_string(rel).map_err(|e| WriteError::Read {
        path: rel.to_string(),
        message: e.to_string(),
    })?;
    let text = if current.contains('[') {
        current
            .split_whitespace()
            .map(|t| {
                let name = t.trim_start_matches('[').trim_end_matches(']');
                if name == value {
                    format!("[{name}]")
                } else {
                    name.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
            + "\n"
    } else {
        format!("{value}\n")
    };
    rewrite(&place(root, rel, false)?, text.as_bytes(), false, None)
}

/// Puts a runtime value back. In a tree the exact old bytes return; live, the
/// old selected value is written (a kernel file cannot take `mq-deadline [none]`).
pub fn restore_runtime(root: &Root, rel: &str, old: &[u8]) -> Result<(), WriteError> {
    check_relative(rel)?;
    if !root.is_live() {
        return rewrite(&place(root, rel, false)?, old, true, None);
    }
    let old = selected_value(&String::from_utf8_lossy(old));
    // The kernel rejects 0 for dirty_bytes; the journaled dirty_ratio companion
    // restores the ratio, which turns the byte limit off again.
    if old == "0" && (rel.ends_with("vm/dirty_bytes") || rel.ends_with("vm/dirty_background_bytes"))
    {
        return Ok(());
    }
    write_runtime(root, rel, &old)
}

/// Where `rel` is written: symlinks resolved (inside the tree for a tree), so a
/// linked file is written at its target and the link stays a link.
fn place(root: &Root, rel: &str, create_dirs: bool) -> Result<Place, WriteError> {
    root.place(rel, create_dirs)
        .map_err(|source| WriteError::Io {
            path: root.path(rel),
            cause: source,
        })
}

/// Rewrites the file at `place` in place (truncate and write), and gives it
/// `meta` when one is given (the inode keeps its own otherwise). Non-blocking
/// and regular files only: a FIFO planted in a tree fails instead of hanging.
fn rewrite(
    place: &Place,
    content: &[u8],
    create: bool,
    meta: Option<&FileMeta>,
) -> Result<(), WriteError> {
    let io = |source| WriteError::Io {
        path: place.path.clone(),
        cause: source,
    };
    let create = if create { libc::O_CREAT } else { 0 };
    let fd = place
        .open(
            place.name(),
            libc::O_WRONLY | libc::O_NONBLOCK | libc::O_TRUNC | create,
            0o644,
        )
        .map_err(|e| read_only(&place.path, e))?;
    let mut f = fs::File::from(fd);
    if !f.metadata().map_err(io)?.is_file() {
        return Err(io(io::Error::other("not a regular file")));
    }
    f.write_all(content).map_err(io)?;
    if let Some(meta) = meta {
        meta.apply_to(&f).map_err(io)?;
    }
    f.sync_all().map_err(io)
}

/// The metadata and link count of the regular file at `place`; `None` when
/// there is none (or something else is there, which the rename replaces).
fn existing(place: &Place) -> Result<Option<(FileMeta, u64)>, WriteError> {
    let io = |source| WriteError::Io {
        path: place.path.clone(),
        cause: source,
    };
    let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    let f = match place.open(place.name(), flags, 0) {
        Ok(fd) => fs::File::from(fd),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        // A symlink left at the place (one that leaves a tree) is replaced.
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    let st = f.metadata().map_err(io)?;
    if !st.is_file() {
        return Ok(None);
    }
    use std::os::unix::fs::MetadataExt;
    Ok(Some((FileMeta::of(&f).map_err(io)?, st.nlink())))
}

/// The metadata of the file `rel` (its target, for a symlink), for the
/// journal; `None` when it is absent.
pub fn read_meta(root: &Root, rel: &str) -> Result<Option<FileMeta>, WriteError> {
    check_relative(rel)?;
    let place = match root.place(rel, false) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        other => other.map_err(|source| WriteError::Io {
            path: root.path(rel),
            cause: source,
        })?,
    };
    Ok(existing(&place)?.map(|(meta, _)| meta))
}

/// Writes a whole file atomically (temporary file, fsync, rename, fsync of the
/// directory), creating missing parent directories. A symlinked file (an
/// /etc/fstab that links elsewhere) is replaced at its target, inside the tree
/// for a tree, so the link stays and rollback restores the target too. The
/// new file keeps the owner, group, mode and extended attributes of the one
/// it replaces; see [`write_file_as`].
pub fn write_file(root: &Root, rel: &str, content: &[u8]) -> Result<(), WriteError> {
    write_file_as(root, rel, content, None)
}

/// [`write_file`] with the metadata the file gets: `meta`, else that of the
/// file it replaces (a new file gets ours and 0666 less the umask). A file
/// with more than one hard link is rewritten in place instead, so that every
/// name keeps seeing one file (a rename would leave the others the old text).
pub fn write_file_as(
    root: &Root,
    rel: &str,
    content: &[u8],
    meta: Option<&FileMeta>,
) -> Result<(), WriteError> {
    check_relative(rel)?;
    let place = place(root, rel, true)?;
    let found = existing(&place)?;
    let meta = meta.or(found.as_ref().map(|(m, _)| m));
    if found.as_ref().is_some_and(|(_, links)| *links > 1) {
        return rewrite(&place, content, false, meta);
    }
    let tmp_name = temp_name(place.name());
    let tmp = std::ffi::OsStr::new(&tmp_name);
    let tmp_path = place.dir_path().join(tmp);
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| WriteError::Io {
            path: p,
            cause: source,
        }
    };
    // A leftover of a killed run (or anything planted under its name) goes first:
    // O_EXCL then makes sure we write a fresh file of our own.
    match place.unlink(tmp) {
        Err(e) if e.kind() != io::ErrorKind::NotFound && !absent_on_read_only(&place, tmp, &e) => {
            return Err(io(&tmp_path)(e));
        }
        _ => {}
    }
    {
        // Private until it has the old file's metadata: a 0640 smb.conf's
        // text is not world-readable even for the moment of the write.
        let initial = if meta.is_some() { 0o600 } else { 0o666 };
        let fd = place
            .open(tmp, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, initial)
            .map_err(|e| read_only(&tmp_path, e))?;
        let mut f = fs::File::from(fd);
        let written = f
            .write_all(content)
            .and_then(|()| meta.map_or(Ok(()), |m| m.apply_to(&f)))
            .and_then(|()| f.sync_all());
        if let Err(e) = written {
            let _ = place.unlink(tmp);
            return Err(io(&tmp_path)(e));
        }
    }
    match place.rename_over(tmp) {
        Ok(()) => {}
        // The file is a mount point (bind-mounted, as in containers): it cannot
        // be replaced, only rewritten. Its old bytes are journaled already.
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
            let _ = place.unlink(tmp);
            return rewrite(&place, content, false, meta);
        }
        Err(e) => {
            let _ = place.unlink(tmp);
            return Err(immutable(&place, e));
        }
    }
    place.sync_dir().map_err(io(place.dir_path()))
}

/// An unlink refused with EROFS although nothing is there to unlink: a
/// read-only directory has no leftover temporary file to remove.
fn absent_on_read_only(place: &Place, name: &std::ffi::OsStr, e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EROFS)
        && place
            .stat(name)
            .is_err_and(|e| e.kind() == io::ErrorKind::NotFound)
}

/// The error for a file that could not be opened for writing: a read-only
/// file system gets its own, which says what to do.
fn read_only(path: &Path, e: io::Error) -> WriteError {
    if e.raw_os_error() == Some(libc::EROFS) {
        return WriteError::ReadOnly {
            path: path.to_path_buf(),
        };
    }
    WriteError::Io {
        path: path.to_path_buf(),
        cause: e,
    }
}

/// The error for a rename refused: an immutable file (`chattr +i`) gets its
/// own, which says what to do.
fn immutable(place: &Place, e: io::Error) -> WriteError {
    if e.raw_os_error() == Some(libc::EPERM) && is_immutable(place) {
        return WriteError::Immutable {
            path: place.path.clone(),
        };
    }
    WriteError::Io {
        path: place.path.clone(),
        cause: e,
    }
}

/// Whether the file at `place` has the immutable or append-only flag.
fn is_immutable(place: &Place) -> bool {
    let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    let Ok(fd) = place.open(place.name(), flags, 0) else {
        return false;
    };
    let mut attr: libc::c_long = 0;
    // SAFETY: FS_IOC_GETFLAGS writes at most one long into `attr`.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), FS_IOC_GETFLAGS, &mut attr) };
    // FS_IMMUTABLE_FL and FS_APPEND_FL from linux/fs.h.
    r == 0 && attr & (0x10 | 0x20) != 0
}

/// `_IOR('f', 1, long)` from linux/fs.h, for this word size.
const FS_IOC_GETFLAGS: libc::Ioctl = if cfg!(target_pointer_width = "64") {
    0x8008_6601u32 as libc::Ioctl
} else {
    0x8004_6601u32 as libc::Ioctl
};

/// The temporary file [`write_file`] renames over a file: one fixed name per
/// target (`.NAME.nastune-tmp` beside it), so a write killed before its rename
/// leaves a file that rollback and the next apply recognise and remove.
fn temp_name(name: &std::ffi::OsStr) -> String {
    format!(".{}.nastune-tmp", name.to_string_lossy())
}

/// Where [`write_file`] puts its temporary file for `path`.
pub fn temp_path(path: &Path) -> std::path::PathBuf {
    let name = path.file_name().unwrap_or_default();
    path.with_file_name(temp_name(name))
}

/// Removes the temporary file a killed [`write_file`] of `rel` left behind;
/// none is fine. Resolved inside the tree like the write itself.
pub fn remove_stale_temp(root: &Root, rel: &str) -> Result<(), WriteError> {
    unlink_beside(root, rel, |name| temp_name(name).into())
}

/// Removes a file that was absent before, and any temporary file of it;
/// already gone is fine (rollback is idempotent). A symlink's target goes, not
/// the link.
pub fn remove_file(root: &Root, rel: &str) -> Result<(), WriteError> {
    unlink_beside(root, rel, std::ffi::OsStr::to_os_string)?;
    remove_stale_temp(root, rel)
}

/// Unlinks the entry `which(name of rel)` in `rel`'s directory, resolved inside
/// the tree; a missing directory or entry is fine.
fn unlink_beside(
    root: &Root,
    rel: &str,
    which: impl FnOnce(&std::ffi::OsStr) -> std::ffi::OsString,
) -> Result<(), WriteError> {
    check_relative(rel)?;
    let place = match root.place(rel, false) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        other => other.map_err(|source| WriteError::Io {
            path: root.path(rel),
            cause: source,
        })?,
    };
    let name = which(place.name());
    match place.unlink(&name) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        // The kernel says EROFS before it looks the name up; with nothing
        // there, there is nothing to remove, and the write says what fails.
        Err(e) if absent_on_read_only(&place, &name, &e) => Ok(()),
        Err(source) => Err(WriteError::Io {
            path: place.dir_path().join(name),
            cause: source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selected_value_reads_choice_lists_and_numbers() {
        assert_eq!(selected_value("mq-deadline [none] bfq\n"), "none");
        assert_eq!(
            selected_value("4096\t131072\t6291456\n"),
            "4096 131072 6291456"
        );
        assert_eq!(selected_value("60\n"), "60");
    }

    #[test]
    fn tree_writes_look_like_the_kernel_and_restore_exactly() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("sys/q")).unwrap();
        fs::write(d.path().join("sys/q/scheduler"), "[mq-deadline] none\n").unwrap();
        let root = Root::tree(d.path()).unwrap();
        write_runtime(&root, "sys/q/scheduler", "none").unwrap();
        assert_eq!(
            fs::read_to_string(d.path().join("sys/q/scheduler")).unwrap(),
            "mq-deadline [none]\n"
        );
        restore_runtime(&root, "sys/q/scheduler", b"[mq-deadline] none\n").unwrap();
        assert_eq!(
            fs::read_to_string(d.path().join("sys/q/scheduler")).unwrap(),
            "[mq-deadline] none\n"
        );
    }

    #[test]
    fn files_are_written_and_removed_below_the_root_only() {
        let d = tempfile::tempdir().unwrap();
        let root = Root::tree(d.path()).unwrap();
        write_file(&root, "etc/sysctl.d/x.conf", b"a = 1\n").unwrap();
        assert_eq!(
            read_current(&root, "etc/sysctl.d/x.conf").unwrap(),
            Some(b"a = 1\n".to_vec())
        );
        // A kill between the temp write and the rename leaves the temp; removing
        // the file (a rollback to absent) removes it too.
        let temp = temp_path(&d.path().join("etc/sysctl.d/x.conf"));
        assert!(temp.ends_with("etc/sysctl.d/.x.conf.nastune-tmp"));
        fs::write(&temp, b"half").unwrap();
        remove_file(&root, "etc/sysctl.d/x.conf").unwrap();
        assert!(!temp.exists());
        remove_file(&root, "etc/sysctl.d/x.conf").unwrap();
        assert_eq!(read_current(&root, "etc/sysctl.d/x.conf").unwrap(), None);
        assert!(matches!(
            write_file(&root, "../escape", b"x"),
            Err(WriteError::Escapes(_))
        ));
        assert!(check_relative("/etc/passwd").is_err());
    }

    /// `t/in` is the tree; `t/outside` must never change.
    fn tree_with_links() -> (tempfile::TempDir, Root) {
        let t = tempfile::tempdir().unwrap();
        let (tree, out) = (t.path().join("in"), t.path().join("outside"));
        for d in [&out, &tree.join("proc/sys/vm"), &tree.join("etc")] {
            fs::create_dir_all(d).unwrap();
        }
        fs::write(out.join("swappiness"), "60\n").unwrap();
        std::os::unix::fs::symlink(
            "../../../../outside/swappiness",
            tree.join("proc/sys/vm/swappiness"),
        )
        .unwrap();
        std::os::unix::fs::symlink(&out, tree.join("etc/sysctl.d")).unwrap();
        (t, Root::tree(&tree).unwrap())
    }

    #[test]
    fn symlinks_in_a_tree_never_lead_writes_outside_it() {
        let (t, root) = tree_with_links();
        let (tree, out) = (t.path().join("in"), t.path().join("outside"));
        // Clamped at the tree's top, the escaping link names in/outside/swappiness:
        // absent, so there is nothing to set.
        assert!(write_runtime(&root, "proc/sys/vm/swappiness", "10").is_err());
        fs::create_dir_all(tree.join("outside")).unwrap();
        fs::write(tree.join("outside/swappiness"), "60\n").unwrap();
        write_runtime(&root, "proc/sys/vm/swappiness", "10").unwrap();
        assert_eq!(
            fs::read_to_string(tree.join("outside/swappiness")).unwrap(),
            "10\n"
        );
        restore_runtime(&root, "proc/sys/vm/swappiness", b"60\n").unwrap();
        // The absolute link to `t/outside` is `in/t/outside` inside the tree.
        write_file(&root, "etc/sysctl.d/99-x.conf", b"vm.swappiness = 10\n").unwrap();
        let inside = tree.join(out.strip_prefix("/").unwrap());
        assert_eq!(
            fs::read(inside.join("99-x.conf")).unwrap(),
            b"vm.swappiness = 10\n"
        );
        remove_file(&root, "etc/sysctl.d/99-x.conf").unwrap();
        assert!(!inside.join("99-x.conf").exists());
        let names: Vec<_> = fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["swappiness"]);
        assert_eq!(fs::read_to_string(out.join("swappiness")).unwrap(), "60\n");
    }

    #[test]
    fn a_symlinked_file_is_written_at_its_target_and_stays_a_link() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("etc")).unwrap();
        fs::create_dir_all(d.path().join("srv/conf")).unwrap();
        fs::write(d.path().join("srv/conf/fstab"), "old\n").unwrap();
        std::os::unix::fs::symlink("/srv/conf/fstab", d.path().join("etc/fstab")).unwrap();
        let root = Root::tree(d.path()).unwrap();
        write_file(&root, "etc/fstab", b"new\n").unwrap();
        write_file(&root, "etc/fstab", b"old\n").unwrap();
        let link = fs::symlink_metadata(d.path().join("etc/fstab")).unwrap();
        assert!(link.file_type().is_symlink());
        assert_eq!(fs::read(d.path().join("srv/conf/fstab")).unwrap(), b"old\n");
        assert!(!d.path().join("srv/conf/.fstab.nastune-tmp").exists());
    }

    #[test]
    fn a_fifo_in_a_tree_fails_a_runtime_write_at_once() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("proc/sys/vm")).unwrap();
        crate::root::mkfifo(&d.path().join("proc/sys/vm/swappiness"));
        let root = Root::tree(d.path()).unwrap();
        let e = write_runtime(&root, "proc/sys/vm/swappiness", "10").unwrap_err();
        assert!(e.to_string().contains("named pipe"), "{e}");
        assert!(restore_runtime(&root, "proc/sys/vm/swappiness", b"60\n").is_err());
    }
}
