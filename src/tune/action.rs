//! The three things `tune` ever writes, journaled the same way: a runtime value (a
//! file under /proc/sys or /sys: old string → new string), a network device
//! setting (ethtool ioctls: old value → new value) and a whole file under the root
//! (old bytes or absent → new bytes). Every change kind becomes a list of these.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use crate::root::{MAX_FILE_BYTES, Root};

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// `value: None` only journals the old value (a companion that rollback must
    /// restore, such as vm.dirty_ratio when vm.dirty_bytes is set).
    Runtime { path: String, value: Option<String> },
    /// A network device setting (`rx`, `mtu`, an offload feature) set through
    /// ethtool ioctls; `path` is `netdev/IFACE/SETTING` (see [`netdev_path`]).
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
    let (interface, setting) = split_netdev_path(path)?;
    super::netdev::get(interface, setting)
        .map(|v| Some(v.into_bytes()))
        .map_err(|e| WriteError::Read {
            path: path.to_string(),
            message: e.to_string(),
        })
}

/// Sets a network device setting named by its journal path.
pub fn write_netdev(path: &str, value: &str) -> Result<(), WriteError> {
    let (interface, setting) = split_netdev_path(path)?;
    super::netdev::set(interface, setting, value.trim()).map_err(|e| WriteError::Io {
        path: path.into(),
        source: io::Error::other(e.to_string()),
    })
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
    #[error("cannot write '{}': {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        source: io::Error,
    },
    #[error("cannot read '{path}': {message}")]
    Read { path: String, message: String },
    #[error("'{0}' leaves the root; tune only writes below it")]
    Escapes(String),
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

/// The current bytes of a runtime value or file; `None` when absent.
pub fn read_current(root: &Root, rel: &str) -> Result<Option<Vec<u8>>, WriteError> {
    match root.read_head(rel, MAX_FILE_BYTES) {
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
    let path = root.path(rel);
    let io = |source| WriteError::Io {
        path: path.clone(),
        source,
    };
    if root.is_live() {
        let mut f = fs::OpenOptions::new().write(true).open(&path).map_err(io)?;
        return f.write_all(value.as_bytes()).map_err(io);
    }
    let current = fs::read_to_string(&path).map_err(io)?;
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
    fs::write(&path, text).map_err(io)
}

/// Puts a runtime value back. In a tree the exact old bytes return; live, the
/// old selected value is written (a kernel file cannot take `mq-deadline [none]`).
pub fn restore_runtime(root: &Root, rel: &str, old: &[u8]) -> Result<(), WriteError> {
    check_relative(rel)?;
    if !root.is_live() {
        let path = root.path(rel);
        return fs::write(&path, old).map_err(|source| WriteError::Io { path, source });
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

/// Writes a whole file atomically (temporary file, fsync, rename, fsync of the
/// directory), creating missing parent directories.
pub fn write_file(root: &Root, rel: &str, content: &[u8]) -> Result<(), WriteError> {
    check_relative(rel)?;
    let path = root.path(rel);
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| WriteError::Io { path: p, source }
    };
    let dir = path.parent().unwrap_or(Path::new("/"));
    fs::create_dir_all(dir).map_err(io(dir))?;
    let tmp = temp_path(&path);
    {
        let mut f = fs::File::create(&tmp).map_err(io(&tmp))?;
        f.write_all(content).map_err(io(&tmp))?;
        // A replaced file keeps its mode (an smb.conf may be 0600).
        if let Ok(m) = fs::metadata(&path) {
            f.set_permissions(m.permissions()).map_err(io(&tmp))?;
        }
        f.sync_all().map_err(io(&tmp))?;
    }
    match fs::rename(&tmp, &path) {
        Ok(()) => {}
        // The file is a mount point (bind-mounted, as in containers): it cannot
        // be replaced, only rewritten. Its old bytes are journaled already.
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
            let _ = fs::remove_file(&tmp);
            let mut f = fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&path)
                .map_err(io(&path))?;
            f.write_all(content).map_err(io(&path))?;
            f.sync_all().map_err(io(&path))?;
            return Ok(());
        }
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            return Err(io(&path)(e));
        }
    }
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))
}

/// The temporary file [`write_file`] renames over `path`: one fixed name per
/// target (`.NAME.nastune-tmp` beside it), so a write killed before its rename
/// leaves a file that rollback and the next apply recognise and remove.
pub fn temp_path(path: &Path) -> std::path::PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.nastune-tmp"))
}

/// Removes the temporary file a killed [`write_file`] of `rel` left behind;
/// none is fine.
pub fn remove_stale_temp(root: &Root, rel: &str) -> Result<(), WriteError> {
    check_relative(rel)?;
    remove_path(temp_path(&root.path(rel)))
}

/// Removes a file that was absent before, and any temporary file of it; already
/// gone is fine (rollback is idempotent).
pub fn remove_file(root: &Root, rel: &str) -> Result<(), WriteError> {
    check_relative(rel)?;
    remove_path(root.path(rel))?;
    remove_stale_temp(root, rel)
}

fn remove_path(path: std::path::PathBuf) -> Result<(), WriteError> {
    match fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(WriteError::Io { path, source }),
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
}
