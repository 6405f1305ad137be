//! Where the system is read from: `/` on the live box, a captured tree in tests and
//! for boxes users send us. Every read of /proc, /sys, /etc and /dev goes through a
//! [`Root`], so a probe never reaches past it and a capture can copy exactly what
//! was read. In a tree, paths resolve as in a chroot (symlinks and `..` stay
//! inside it; openat2 RESOLVE_IN_ROOT or a careful walk), and only regular files are read: a FIFO planted
//! where a file should be is refused at once instead of blocking forever.
//!
//! Paths given to a `Root` are relative (`"proc/cpuinfo"`, `"sys/class/net"`).
//! Values that do not live in files (ethtool ioctls, statvfs, uname, smartctl) go
//! through [`Root::captured`]: live, they are computed and remembered; in a tree,
//! they are read back from `.nastune/<name>.json`.

pub mod capture;
mod inroot;

pub use inroot::Place;

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use capture::{Event, Recorder};

/// Largest file a probe reads whole. /proc and /sys files are small; a bigger one
/// means we were pointed at the wrong tree, and bounded memory matters on 128 MiB.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The longest line [`Root::read_lines_kept`] reads: a /proc table's lines
/// are under 200 bytes; a tree's file without newlines is not read whole.
pub const MAX_LINE_BYTES: u64 = 64 * 1024;

/// Directory inside a captured tree that holds values not read from files.
pub const SYNTHETIC_DIR: &str = ".nastune";

/// Read failures that a captured tree replays as they happened on the live box.
const ERRORS_FILE: &str = ".nastune/read-errors.json";

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("'{}' does not exist", path.display())]
    NotFound { path: PathBuf },
    #[error("cannot read '{}': {message}", path.display())]
    Io { path: PathBuf, message: String },
    /// EPERM or EACCES. Root is refused too: a container's device rules
    /// refuse `/dev/vda` to root (Operation not permitted), so "needs root"
    /// would send a user who is root looking for the wrong cause.
    #[error("cannot read '{}': {message} ({})", path.display(), refusal_hint(*as_root))]
    Refused {
        path: PathBuf,
        message: String,
        as_root: bool,
    },
    #[error("'{}' is larger than {limit} bytes; is --root pointing at the right tree?", path.display())]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("'{}' is not UTF-8 text", path.display())]
    NotText { path: PathBuf },
    #[error("'{}' in the captured tree is not valid: {message}", path.display())]
    BadCapture { path: PathBuf, message: String },
    #[error(
        "'{}' is a {kind}, not a regular file; nastune does not read it (it could block or never end): replace it with a regular file",
        path.display()
    )]
    NotRegular { path: PathBuf, kind: &'static str },
}

impl ReadError {
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadError::NotFound { .. })
    }

    fn from_io(path: PathBuf, err: io::Error) -> Self {
        if err.kind() == io::ErrorKind::NotFound {
            ReadError::NotFound { path }
        } else if err.kind() == io::ErrorKind::PermissionDenied {
            ReadError::Refused {
                path,
                message: err.to_string(),
                // SAFETY: geteuid has no preconditions and cannot fail.
                as_root: unsafe { libc::geteuid() } == 0,
            }
        } else {
            ReadError::Io {
                path,
                message: err.to_string(),
            }
        }
    }
}

/// Why a read was refused, by who was refused.
fn refusal_hint(as_root: bool) -> &'static str {
    if as_root {
        "refused to root: for a device, a container's device rules (the devices cgroup) \
         do not allow it; else a security module (AppArmor, SELinux)"
    } else {
        "reading it needs root"
    }
}

/// The place the system is read from.
#[derive(Debug)]
pub struct Root {
    base: PathBuf,
    live: bool,
    /// Errors the live box gave when the tree was captured, keyed by relative path.
    replayed_errors: BTreeMap<String, String>,
    recorder: Option<Mutex<Recorder>>,
}

impl Root {
    /// The running system.
    pub fn live() -> Self {
        Root {
            base: PathBuf::from("/"),
            live: true,
            replayed_errors: BTreeMap::new(),
            recorder: None,
        }
    }

    /// A captured or hand-made tree with proc/, sys/, etc/ below `dir`.
    pub fn tree(dir: &Path) -> Result<Self, ReadError> {
        let meta = fs::metadata(dir).map_err(|e| ReadError::from_io(dir.to_path_buf(), e))?;
        if !meta.is_dir() {
            return Err(ReadError::Io {
                path: dir.to_path_buf(),
                message: "not a directory; --root takes a tree with proc/, sys/ and etc/".into(),
            });
        }
        let mut root = Root {
            base: dir.to_path_buf(),
            live: false,
            replayed_errors: BTreeMap::new(),
            recorder: None,
        };
        match root.read_string(ERRORS_FILE) {
            Ok(text) => {
                root.replayed_errors =
                    serde_json::from_str(&text).map_err(|e| ReadError::BadCapture {
                        path: dir.join(ERRORS_FILE),
                        message: e.to_string(),
                    })?
            }
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
        Ok(root)
    }

    /// Remember every read so that [`capture`] can copy it afterwards.
    pub fn with_recorder(mut self) -> Self {
        self.recorder = Some(Mutex::new(Recorder::default()));
        self
    }

    pub fn is_live(&self) -> bool {
        self.live
    }

    pub fn base(&self) -> &Path {
        &self.base
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.base.join(rel.trim_start_matches('/'))
    }

    /// Where a write to `rel` lands: symlinks on the way and a final one (an
    /// /etc/fstab that links elsewhere) resolved, inside the tree for a tree.
    /// `create_dirs` makes missing directories.
    pub fn place(&self, rel: &str, create_dirs: bool) -> io::Result<Place> {
        Place::resolve(&self.base, rel.trim_start_matches('/'), true, create_dirs)
    }

    /// Opens `rel` inside the tree (never for the live root).
    fn open_in_tree(&self, rel: &str, flags: libc::c_int) -> io::Result<fs::File> {
        let base = inroot::open_base(&self.base)?;
        inroot::open(&base, rel.trim_start_matches('/'), flags).map(fs::File::from)
    }

    /// Opens a file to read, without blocking on a FIFO, and refuses what a read
    /// might never finish on: anything but a regular file, or a block device when
    /// `devices` (live, a block device's head is read for its superblock).
    fn open_for_read(&self, rel: &str, path: &Path, devices: bool) -> Result<fs::File, ReadError> {
        let open = |flags| {
            if self.live {
                fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(flags)
                    .open(path)
            } else {
                self.open_in_tree(rel, libc::O_RDONLY | flags)
            }
        };
        let file = match open(libc::O_NONBLOCK) {
            // A socket cannot be opened at all; name what it is.
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => open(libc::O_PATH),
            other => other,
        }
        .map_err(|e| ReadError::from_io(path.to_path_buf(), e))?;
        check_kind(&file, path, devices)?;
        set_blocking(file, path)
    }

    /// Hands over what was recorded; empty when no recorder was attached.
    pub fn take_recording(&self) -> Recorder {
        match &self.recorder {
            Some(m) => std::mem::take(&mut *m.lock().unwrap_or_else(|p| p.into_inner())),
            None => Recorder::default(),
        }
    }

    fn record(&self, rel: &str, event: Event) {
        if let Some(m) = &self.recorder {
            m.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(rel.trim_start_matches('/'), event);
        }
    }

    fn replayed(&self, rel: &str) -> Result<(), ReadError> {
        match self.replayed_errors.get(rel.trim_start_matches('/')) {
            // Named as on the live box, so a capture reads back to the same text.
            Some(message) => Err(ReadError::Io {
                path: Path::new("/").join(rel.trim_start_matches('/')),
                message: message.clone(),
            }),
            None => Ok(()),
        }
    }

    fn note_error(&self, rel: &str, err: &ReadError) {
        match err {
            ReadError::Io { message, .. } => self.record(rel, Event::Error(message.clone())),
            // With who was refused: the tree replays it as this box said it.
            ReadError::Refused {
                message, as_root, ..
            } => self.record(
                rel,
                Event::Error(format!("{message} ({})", refusal_hint(*as_root))),
            ),
            _ => {}
        }
    }

    /// Reads a whole text file (bounded by [`MAX_FILE_BYTES`]).
    pub fn read_string(&self, rel: &str) -> Result<String, ReadError> {
        let bytes = self.read_bytes(rel, MAX_FILE_BYTES)?;
        String::from_utf8(bytes).map_err(|_| ReadError::NotText {
            path: self.path(rel),
        })
    }

    /// Reads a one-value sysfs or procfs file, trimmed.
    pub fn read_value(&self, rel: &str) -> Result<String, ReadError> {
        Ok(self.read_string(rel)?.trim().to_string())
    }

    /// Like [`Root::read_value`], but a missing file is `None` rather than an error:
    /// many attributes exist only on some kernels or drivers.
    pub fn read_optional(&self, rel: &str) -> Result<Option<String>, ReadError> {
        match self.read_value(rel) {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Reads a text file of any length a line at a time and returns the lines
    /// `keep` accepts, in order. /proc/net/tcp lists every socket of the
    /// namespace at 150 bytes a line, so a box holding 30,000 connections in
    /// TIME_WAIT (a web server, a client churning connections) passes
    /// [`MAX_FILE_BYTES`] while the few lines wanted are small. The lines
    /// kept are bounded by [`MAX_FILE_BYTES`], and each line read by
    /// [`MAX_LINE_BYTES`]; a capture stores the lines kept.
    pub fn read_lines_kept(
        &self,
        rel: &str,
        mut keep: impl FnMut(&str) -> bool,
    ) -> Result<String, ReadError> {
        use std::io::BufRead;
        self.replayed(rel)?;
        let path = self.path(rel);
        let result = (|| {
            let io = |e| ReadError::from_io(path.clone(), e);
            let file = self.open_for_read(rel, &path, false)?;
            let mut reader = io::BufReader::new(file);
            let (mut kept, mut line) = (String::new(), Vec::new());
            loop {
                line.clear();
                let n = (&mut reader)
                    .take(MAX_LINE_BYTES + 1)
                    .read_until(b'\n', &mut line)
                    .map_err(io)?;
                if n == 0 {
                    return Ok(kept);
                }
                if n as u64 > MAX_LINE_BYTES {
                    return Err(ReadError::TooLarge {
                        path: path.clone(),
                        limit: MAX_LINE_BYTES,
                    });
                }
                let text = std::str::from_utf8(&line)
                    .map_err(|_| ReadError::NotText { path: path.clone() })?;
                if keep(text.trim_end_matches('\n')) {
                    if (kept.len() + text.len()) as u64 > MAX_FILE_BYTES {
                        return Err(ReadError::TooLarge {
                            path: path.clone(),
                            limit: MAX_FILE_BYTES,
                        });
                    }
                    kept.push_str(text);
                }
            }
        })();
        match &result {
            Ok(text) => self.record(rel, Event::File(text.clone().into_bytes())),
            Err(e) => self.note_error(rel, e),
        }
        result
    }

    /// Reads at most `limit` bytes from the start of a file (a block device's
    /// superblock, say). A capture stores exactly these bytes.
    pub fn read_head(&self, rel: &str, limit: u64) -> Result<Vec<u8>, ReadError> {
        self.read_bytes_inner(rel, limit, false)
    }

    /// Reads a whole binary file of at most `limit` bytes; a larger one is an
    /// error ([`ReadError::TooLarge`]), not cut.
    pub fn read_bytes(&self, rel: &str, limit: u64) -> Result<Vec<u8>, ReadError> {
        self.read_bytes_inner(rel, limit, true)
    }

    fn read_bytes_inner(&self, rel: &str, limit: u64, whole: bool) -> Result<Vec<u8>, ReadError> {
        self.replayed(rel)?;
        let path = self.path(rel);
        let result = (|| {
            let file = self.open_for_read(rel, &path, self.live)?;
            // Sized from the file's length: grown by doubling, a 4 MiB file
            // took an 8 MiB buffer. Files of /proc and /sys say 0 or 4096.
            let size = file.metadata().map_or(0, |m| m.len()).min(limit) + 1;
            let mut buf = Vec::with_capacity(size as usize);
            file.take(limit + 1)
                .read_to_end(&mut buf)
                .map_err(|e| ReadError::from_io(path.clone(), e))?;
            if buf.len() as u64 > limit {
                if whole {
                    return Err(ReadError::TooLarge {
                        path: path.clone(),
                        limit,
                    });
                }
                buf.truncate(limit as usize);
            }
            Ok(buf)
        })();
        match &result {
            Ok(buf) => self.record(rel, Event::File(buf.clone())),
            Err(e) => self.note_error(rel, e),
        }
        result
    }

    /// Lists a directory, sorted by name.
    pub fn read_dir(&self, rel: &str) -> Result<Vec<String>, ReadError> {
        self.replayed(rel)?;
        let path = self.path(rel);
        let result = (|| {
            let io = |e| ReadError::from_io(path.clone(), e);
            let mut names: Vec<String> = if self.live {
                let mut names = Vec::new();
                for entry in fs::read_dir(&path).map_err(io)? {
                    names.push(entry.map_err(io)?.file_name());
                }
                names
            } else {
                let dir = self
                    .open_in_tree(rel, libc::O_RDONLY | libc::O_DIRECTORY)
                    .map_err(io)?;
                inroot::list(dir.into()).map_err(io)?
            }
            .into_iter()
            .filter_map(|n| n.into_string().ok())
            .collect();
            names.sort();
            Ok(names)
        })();
        match &result {
            Ok(_) => self.record(rel, Event::Dir),
            Err(e) => self.note_error(rel, e),
        }
        result
    }

    /// Like [`Root::read_dir`], but a missing directory is an empty list.
    pub fn read_dir_optional(&self, rel: &str) -> Result<Vec<String>, ReadError> {
        match self.read_dir(rel) {
            Err(e) if e.is_not_found() => Ok(Vec::new()),
            other => other,
        }
    }

    /// Reads a symlink's target (sysfs `device/driver`, `/dev/disk/by-id/*`).
    pub fn read_link(&self, rel: &str) -> Result<PathBuf, ReadError> {
        self.replayed(rel)?;
        let path = self.path(rel);
        let result = if self.live {
            fs::read_link(&path)
        } else {
            Place::resolve(&self.base, rel.trim_start_matches('/'), false, false)
                .and_then(|p| p.read_link())
        }
        .map_err(|e| ReadError::from_io(path.clone(), e));
        match &result {
            Ok(_) => self.record(rel, Event::Link),
            Err(e) => self.note_error(rel, e),
        }
        result
    }

    /// The last component of a symlink's target: the driver or module name sysfs
    /// links to.
    pub fn read_link_name(&self, rel: &str) -> Result<String, ReadError> {
        let target = self.read_link(rel)?;
        Ok(target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default())
    }

    /// Whether a path exists (following symlinks).
    pub fn exists(&self, rel: &str) -> bool {
        let found = if self.live {
            self.path(rel).exists()
        } else {
            self.open_in_tree(rel, libc::O_PATH).is_ok()
        };
        if found {
            self.record(rel, Event::Exists);
        }
        found
    }

    /// A value that does not come from a file: computed by `live` on the running
    /// system (and remembered for a capture), read back from the tree otherwise.
    /// An `Err` from `live` is a reason such as "ioctl not supported by driver".
    pub fn captured<T, F>(&self, name: &str, live: F) -> Result<T, String>
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
        F: FnOnce() -> Result<T, String>,
    {
        let rel = format!("{SYNTHETIC_DIR}/{name}.json");
        if self.live {
            let value = live();
            // Through a value tree, whose keys are sorted: captures stay
            // byte for byte what earlier versions wrote.
            let stored = match &value {
                Ok(v) => serde_json::to_value(v)
                    .map_or_else(|e| Captured::Unavailable(e.to_string()), Captured::Value),
                Err(reason) => Captured::Unavailable(reason.clone()),
            };
            // A value tree always serializes: its keys are strings.
            let bytes = crate::json::to_string_pretty(&stored)
                .unwrap_or_default()
                .into_bytes();
            self.record(&rel, Event::Synthetic(bytes));
            return value;
        }
        let text = match self.read_string(&rel) {
            Ok(t) => t,
            Err(e) if e.is_not_found() => return Err(not_captured(&rel)),
            Err(e) => return Err(e.to_string()),
        };
        // Straight into T, not through a serde_json::Value: a value tree takes
        // 10 to 30 times the text's size, T a few.
        let stored: Captured<T> = crate::json::from_json(&text).map_err(|e| {
            format!("'{rel}' in the captured tree is not valid JSON of the right shape: {e}")
        })?;
        match stored {
            Captured::Value(v) => Ok(v),
            Captured::Unavailable(reason) => Err(reason),
        }
    }
}

impl Root {
    /// Like [`Root::captured`] for text stored as it is at `.nastune/<name>`
    /// (the kernel log in dmesg's format): computed live and remembered for a
    /// capture, read back from a tree. A live `Err` is replayed as a read error.
    pub fn captured_text<F>(&self, name: &str, live: F) -> Result<String, String>
    where
        F: FnOnce() -> Result<String, String>,
    {
        let rel = format!("{SYNTHETIC_DIR}/{name}");
        if self.live {
            let value = live();
            match &value {
                Ok(text) => self.record(&rel, Event::Synthetic(text.clone().into_bytes())),
                Err(reason) => self.record(&rel, Event::Error(reason.clone())),
            }
            return value;
        }
        self.read_string(&rel).map_err(|e| {
            if e.is_not_found() {
                not_captured(&rel)
            } else {
                e.to_string()
            }
        })
    }
}

fn not_captured(rel: &str) -> String {
    format!(
        "not in the captured tree ('{rel}'); capture the box with 'nastune probe --capture DIR'"
    )
}

/// Opens a file named on the command line (a key file, a request body) to read:
/// a FIFO does not block the open, and anything but a regular file is refused.
pub fn open_regular(path: &Path) -> Result<fs::File, ReadError> {
    Root::live().open_for_read("", path, false)
}

/// Refuses anything but a regular file (and a block device when `devices`).
fn check_kind(file: &fs::File, path: &Path, devices: bool) -> Result<(), ReadError> {
    let t = file
        .metadata()
        .map_err(|e| ReadError::from_io(path.to_path_buf(), e))?
        .file_type();
    let kind = if t.is_file() || (devices && t.is_block_device()) {
        return Ok(());
    } else if t.is_fifo() {
        "named pipe (FIFO)"
    } else if t.is_socket() {
        "socket"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_dir() {
        "directory"
    } else {
        "special file"
    };
    Err(ReadError::NotRegular {
        path: path.to_path_buf(),
        kind,
    })
}

/// Clears the O_NONBLOCK the open needed, so reads behave as they always did.
fn set_blocking(file: fs::File, path: &Path) -> Result<fs::File, ReadError> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: F_GETFL/F_SETFL on a descriptor we own change only its flags.
    let ok = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) == 0
    };
    if !ok {
        return Err(ReadError::from_io(
            path.to_path_buf(),
            io::Error::last_os_error(),
        ));
    }
    Ok(file)
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum Captured<T> {
    Value(T),
    Unavailable(String),
}

/// Makes a named pipe (tests plant them where files should be).
#[cfg(test)]
pub(crate) fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is NUL-terminated and outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A device the kernel refuses to root: a block device the container's
    /// device rules do not allow (here /dev/vda, EPERM). Made with mknod from
    /// /sys/block's numbers; `None` where every device opens (no such rules).
    fn refused_device(dir: &Path) -> Option<(PathBuf, io::Error)> {
        use std::os::unix::ffi::OsStrExt;
        for entry in fs::read_dir("/sys/block").ok()?.flatten() {
            let Ok(dev) = fs::read_to_string(entry.path().join("dev")) else {
                continue;
            };
            let Some((major, minor)) = dev.trim().split_once(':') else {
                continue;
            };
            let (Ok(major), Ok(minor)) = (major.parse::<u32>(), minor.parse::<u32>()) else {
                continue;
            };
            let node = dir.join(entry.file_name());
            let c = std::ffi::CString::new(node.as_os_str().as_bytes()).unwrap();
            // SAFETY: `c` is NUL-terminated and outlives the call.
            let made = unsafe {
                libc::mknod(
                    c.as_ptr(),
                    libc::S_IFBLK | 0o600,
                    libc::makedev(major, minor),
                )
            };
            if made != 0 {
                continue;
            }
            if let Err(e) = fs::File::open(&node)
                && e.kind() == io::ErrorKind::PermissionDenied
            {
                return Some((node, e));
            }
        }
        None
    }

    #[test]
    fn a_refused_read_names_who_refused_it() {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let err = ReadError::from_io("/dev/x".into(), io::Error::from_raw_os_error(libc::EACCES));
        let text = err.to_string();
        if root {
            assert!(text.contains("refused to root"), "{text}");
            assert!(!text.contains("needs root"), "{text}");
        } else {
            assert!(text.ends_with("(reading it needs root)"), "{text}");
        }
        if !root {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let Some((node, e)) = refused_device(dir.path()) else {
            println!("SKIP: no device is refused to root here (no container device rules)");
            return;
        };
        let text = ReadError::from_io(node.clone(), e).to_string();
        assert!(
            text.contains("Operation not permitted") || text.contains("Permission denied"),
            "{text}"
        );
        assert!(text.contains("a container's device rules"), "{text}");
    }

    /// A tree below `t/in` and a secret beside it, at `t/secret`.
    fn tree_with_secret() -> (tempfile::TempDir, Root) {
        let t = tempfile::tempdir().unwrap();
        let secret = t.path().join("secret");
        fs::write(&secret, "TOPSECRET\n").unwrap();
        let d = t.path().join("in");
        fs::create_dir_all(d.join("proc/sys/kernel")).unwrap();
        fs::create_dir_all(d.join("etc/samba")).unwrap();
        symlink(&secret, d.join("proc/sys/kernel/hostname")).unwrap();
        symlink("../../../../secret", d.join("proc/sys/kernel/domainname")).unwrap();
        symlink("../../../secret", d.join("etc/samba/dir")).unwrap();
        (t, Root::tree(&d).unwrap())
    }

    #[test]
    fn nothing_outside_a_tree_is_read_through_links_or_dotdot() {
        let (t, root) = tree_with_secret();
        for rel in [
            "proc/sys/kernel/hostname",
            "proc/sys/kernel/domainname",
            "etc/samba/../../../secret",
            "../secret",
            "/../secret",
        ] {
            let r = root.read_string(rel);
            assert!(r.as_ref().is_err_and(|e| e.is_not_found()), "{rel}: {r:?}");
            assert!(!root.exists(rel), "{rel}");
        }
        assert!(root.read_dir("etc/samba/dir").unwrap_err().is_not_found());
        // The same secret, planted inside the tree where the links clamp to, is read.
        let inside = t
            .path()
            .join("in")
            .join(t.path().strip_prefix("/").unwrap());
        fs::create_dir_all(&inside).unwrap();
        fs::write(inside.join("secret"), "inside\n").unwrap();
        fs::write(t.path().join("in/secret"), "clamped\n").unwrap();
        for (rel, want) in [
            ("proc/sys/kernel/hostname", "inside"),
            ("proc/sys/kernel/domainname", "clamped"),
            ("etc/samba/../../../secret", "clamped"),
        ] {
            assert_eq!(root.read_value(rel).unwrap(), want, "{rel}");
        }
        assert_eq!(
            root.read_link_name("proc/sys/kernel/domainname").unwrap(),
            "secret"
        );
    }

    #[test]
    fn fifos_and_sockets_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("proc")).unwrap();
        mkfifo(&dir.path().join("proc/meminfo"));
        let _sock = std::os::unix::net::UnixListener::bind(dir.path().join("proc/mdstat")).unwrap();
        let root = Root::tree(dir.path()).unwrap();
        let started = std::time::Instant::now();
        let e = root.read_string("proc/meminfo").unwrap_err();
        assert!(
            matches!(
                e,
                ReadError::NotRegular {
                    kind: "named pipe (FIFO)",
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("proc/meminfo"), "{e}");
        let e = root.read_string("proc/mdstat").unwrap_err();
        assert!(e.to_string().contains("is a socket"), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        // On the live root too: a FIFO named by a user never blocks.
        assert!(open_regular(&dir.path().join("proc/meminfo")).is_err());
    }

    #[test]
    fn a_fifo_as_the_capture_error_file_fails_the_tree_at_once() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join(SYNTHETIC_DIR)).unwrap();
        mkfifo(&dir.path().join(ERRORS_FILE));
        let e = Root::tree(dir.path()).unwrap_err();
        assert!(matches!(e, ReadError::NotRegular { .. }), "{e}");
    }

    #[test]
    fn reads_values_and_reports_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("proc/sys/vm")).unwrap();
        fs::write(dir.path().join("proc/sys/vm/swappiness"), "60\n").unwrap();
        let root = Root::tree(dir.path()).unwrap();
        assert_eq!(root.read_value("proc/sys/vm/swappiness").unwrap(), "60");
        assert_eq!(root.read_optional("proc/sys/vm/nope").unwrap(), None);
        let err = root.read_string("/proc/sys/vm/nope").unwrap_err();
        assert!(err.is_not_found());
        assert!(err.to_string().contains("proc/sys/vm/nope"));
    }

    #[test]
    fn refuses_oversized_files() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("proc")).unwrap();
        let big = vec![b'x'; (MAX_FILE_BYTES + 10) as usize];
        fs::write(dir.path().join("proc/big"), &big).unwrap();
        let root = Root::tree(dir.path()).unwrap();
        assert!(matches!(
            root.read_string("proc/big"),
            Err(ReadError::TooLarge { .. })
        ));
        assert_eq!(root.read_head("proc/big", 16).unwrap().len(), 16);
    }

    #[test]
    fn a_table_larger_than_a_whole_read_gives_its_kept_lines() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("proc")).unwrap();
        let mut text = "x".repeat(100) + "\n";
        text = text.repeat((MAX_FILE_BYTES / 100) as usize);
        text.push_str("wanted 1\n");
        fs::write(dir.path().join("proc/table"), &text).unwrap();
        fs::write(dir.path().join("proc/oneline"), "y".repeat(70_000)).unwrap();
        let root = Root::tree(dir.path()).unwrap().with_recorder();
        let kept = root.read_lines_kept("proc/table", |l| l.starts_with("wanted"));
        assert_eq!(kept.unwrap(), "wanted 1\n");
        // What a capture stores is what was kept.
        let recorded = format!("{:?}", root.take_recording());
        let kept_bytes = format!("File({:?})", b"wanted 1\n".to_vec());
        assert!(
            recorded.ends_with(&format!("{kept_bytes})] }}")),
            "{recorded}"
        );
        // Keeping every line is bounded like a whole read; so is one line.
        assert!(matches!(
            root.read_lines_kept("proc/table", |_| true),
            Err(ReadError::TooLarge { .. })
        ));
        assert!(matches!(
            root.read_lines_kept("proc/oneline", |_| true),
            Err(ReadError::TooLarge { limit, .. }) if limit == MAX_LINE_BYTES
        ));
    }

    #[test]
    fn captured_values_missing_from_a_tree_say_how_to_get_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::tree(dir.path()).unwrap();
        let v: Result<u32, String> = root.captured("uname", || Ok(1));
        assert!(v.unwrap_err().contains("--capture"));
    }

    #[test]
    fn tree_must_be_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        fs::write(&file, "x").unwrap();
        assert!(Root::tree(&file).is_err());
        assert!(
            Root::tree(&dir.path().join("missing"))
                .unwrap_err()
                .is_not_found()
        );
    }
}
