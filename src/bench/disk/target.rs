//! What the bench runs against: a temporary file in a directory (the default:
//! removed afterwards, also on Ctrl-C, and by the next run after a kill), an
//! existing file (written only when no loop device or swap sits on it), or a
//! block device (writes only after [`super::safety`] allows them).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::buffers::Buffers;
use super::safety::{self, SafetyError};
use crate::root::Root;

/// Default temporary file: 1 GiB, or half the free space if that is less.
pub const DEFAULT_TEMP_BYTES: u64 = 1 << 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    TempFile,
    File,
    BlockDevice,
}

#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("'{}' does not exist, nor does the directory it would be created in; give a directory (nastune creates a temporary file there), a file in an existing directory or a block device", path.display())]
    Missing { path: PathBuf },
    #[error("'{}' does not exist; a path under /dev is a device nastune never creates: give an existing block device", path.display())]
    MissingDevice { path: PathBuf },
    #[error("'{}' is not a directory, regular file or block device", path.display())]
    Unsupported { path: PathBuf },
    #[error("cannot use '{}': {cause}", path.display())]
    Io { path: PathBuf, cause: io::Error },
    #[error("--size {want} is more than half the free space in '{}' ({free} bytes free); give a smaller --size", path.display())]
    NoSpace { path: PathBuf, want: u64, free: u64 },
    #[error("--size {want} is larger than '{}' ({have} bytes)", path.display())]
    SizeBeyondEnd { path: PathBuf, want: u64, have: u64 },
    #[error("interrupted while laying out the test file")]
    Interrupted,
    #[error(transparent)]
    Safety(#[from] SafetyError),
}

/// What the bench runs against, as the run's document says it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    pub path: PathBuf,
    pub kind: TargetKind,
    pub size_bytes: u64,
    /// Offsets and lengths of direct I/O must be multiples of this.
    pub logical_block_bytes: u32,
    /// Buffer alignment for direct I/O.
    pub memory_align_bytes: u32,
    /// The block device the target is on (or is), when there is one.
    pub device: Option<String>,
    /// The network or FUSE filesystem the target is on: then the bench measures
    /// the file service, not a disk (absent in runs before 0.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_fs: Option<super::network_fs::NetworkFs>,
}

#[derive(Debug)]
pub struct Target {
    info: TargetInfo,
    remove_on_drop: bool,
    /// A written device stays claimed (O_EXCL) for the whole run.
    _claim: Option<safety::Claim>,
    /// The temporary file, open and locked (flock) for the whole run, so the
    /// next run's sweep knows it is in use.
    _lock: Option<File>,
    /// Leftovers of killed runs removed from the directory before this one.
    pub removed: Vec<super::leftover::Removed>,
}

impl Drop for Target {
    fn drop(&mut self) {
        if self.remove_on_drop {
            let _ = fs::remove_file(&self.path);
        }
    }
}

fn io_err(path: &Path) -> impl Fn(io::Error) -> TargetError + '_ {
    move |source| TargetError::Io {
        path: path.to_path_buf(),
        cause: source,
    }
}

/// Free bytes for an unprivileged writer in the filesystem holding `dir`.
pub fn free_bytes(dir: &Path) -> io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())?;
    // SAFETY: c is a valid C string and st a zeroed out-parameter.
    let st = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return Err(io::Error::last_os_error());
        }
        st
    };
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

/// (offset alignment, memory alignment) for direct I/O on a file, from statx
/// STATX_DIOALIGN (kernel 6.1+); None when the kernel or filesystem cannot say.
fn dio_alignment(path: &Path) -> Option<(u32, u32)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: valid path, zeroed out-parameter.
    let stx = unsafe {
        let mut stx: libc::statx = std::mem::zeroed();
        if libc::statx(
            libc::AT_FDCWD,
            c.as_ptr(),
            0,
            libc::STATX_DIOALIGN,
            &mut stx,
        ) != 0
        {
            return None;
        }
        stx
    };
    (stx.stx_mask & libc::STATX_DIOALIGN != 0 && stx.stx_dio_offset_align > 0)
        .then_some((stx.stx_dio_offset_align, stx.stx_dio_mem_align.max(1)))
}

fn block_size_ioctl(file: &File) -> Option<u32> {
    use std::os::fd::AsRawFd;
    let mut n: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one int.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), libc::BLKSSZGET, &mut n) };
    (rc == 0 && n > 0).then_some(n as u32)
}

fn sysfs_block_size(root: &Root, dev: &str) -> Option<u32> {
    root.read_optional(&format!("sys/class/block/{dev}/queue/logical_block_size"))
        .ok()
        .flatten()
        .or_else(|| {
            root.read_optional(&format!(
                "sys/class/block/{dev}/../queue/logical_block_size"
            ))
            .ok()
            .flatten()
        })
        .and_then(|v| v.parse().ok())
}

fn split_dev(dev: u64) -> (u32, u32) {
    (libc::major(dev), libc::minor(dev))
}

/// Resolves PATH. `size` is `--size`; `writes` says whether any test writes.
pub fn open(
    root: &Root,
    path: &Path,
    size: Option<u64>,
    writes: bool,
    destroy_data: Option<&Path>,
) -> Result<Target, TargetError> {
    let meta = match fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound && destroy_data.is_none() => {
            return create_file(root, path, size);
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(TargetError::Missing {
                path: path.to_path_buf(),
            });
        }
        Err(e) => return Err(io_err(path)(e)),
    };
    let ft = meta.file_type();
    if ft.is_block_device() {
        let (major, minor) = split_dev(meta.rdev());
        let name = crate::bench::diskstats::device_name(root, major, minor).ok();
        let mut claim = None;
        if writes {
            let dev_name = name.clone().unwrap_or_else(|| path.display().to_string());
            claim = Some(safety::check_write(
                root,
                path,
                &dev_name,
                meta.rdev(),
                destroy_data,
            )?);
        }
        let file = File::open(path).map_err(io_err(path))?;
        let have = file_len(&file).map_err(io_err(path))?;
        let size_bytes = match size {
            Some(want) if want > have => {
                return Err(TargetError::SizeBeyondEnd {
                    path: path.to_path_buf(),
                    want,
                    have,
                });
            }
            Some(want) => want,
            None => have,
        };
        let lbs = block_size_ioctl(&file).unwrap_or(512);
        return Ok(Target {
            info: TargetInfo {
                path: path.to_path_buf(),
                kind: TargetKind::BlockDevice,
                size_bytes,
                logical_block_bytes: lbs,
                memory_align_bytes: lbs.max(4096),
                device: name,
                network_fs: None,
            },
            remove_on_drop: false,
            _claim: claim,
            _lock: None,
            removed: Vec::new(),
        });
    }
    if let Some(named) = destroy_data {
        return Err(SafetyError::NotADevice {
            named: named.to_path_buf(),
        }
        .into());
    }
    let (major, minor) = split_dev(meta.dev());
    let device = crate::bench::diskstats::device_name(root, major, minor).ok();
    let mut removed = Vec::new();
    let (kind, file_path, size_bytes, remove) = if ft.is_dir() {
        // Before the free space is measured: a killed run's file holds it.
        removed = super::leftover::sweep(path);
        let size_bytes = file_size_in(path, size)?;
        (TargetKind::TempFile, path.to_path_buf(), size_bytes, true)
    } else if ft.is_file() {
        let have = meta.len();
        let size_bytes = match size {
            Some(want) if want > have && !writes => {
                return Err(TargetError::SizeBeyondEnd {
                    path: path.to_path_buf(),
                    want,
                    have,
                });
            }
            Some(want) => want,
            None => have,
        };
        if writes {
            safety::check_file_write(root, path)?;
        }
        (TargetKind::File, path.to_path_buf(), size_bytes, false)
    } else {
        return Err(TargetError::Unsupported {
            path: path.to_path_buf(),
        });
    };
    let mut target = Target {
        info: TargetInfo {
            path: file_path,
            kind,
            size_bytes,
            logical_block_bytes: 512,
            memory_align_bytes: 4096,
            device,
            network_fs: network_fs(root, path),
        },
        remove_on_drop: false,
        _claim: None,
        _lock: None,
        removed,
    };
    if kind == TargetKind::TempFile {
        let (file_path, file) = super::leftover::create(path).map_err(io_err(path))?;
        target.info.path = file_path;
        // From here on the file is ours: Drop removes it, whatever happens next.
        target.remove_on_drop = remove;
        let file = target._lock.insert(file);
        lay_out(file, size_bytes).map_err(|e| match e.kind() {
            io::ErrorKind::Interrupted => TargetError::Interrupted,
            _ => TargetError::Io {
                path: target.path.clone(),
                cause: e,
            },
        })?;
    } else if size_bytes > meta.len() {
        let file = OpenOptions::new()
            .write(true)
            .open(&target.path)
            .map_err(io_err(&target.path))?;
        lay_out_from(&file, meta.len() & !((1 << 20) - 1), size_bytes)
            .map_err(io_err(&target.path))?;
    }
    set_alignment(root, &mut target);
    Ok(target)
}

/// The size of a file nastune lays out in `dir`: `--size`, at most half the free
/// space, or [`DEFAULT_TEMP_BYTES`] capped at that half.
fn file_size_in(dir: &Path, size: Option<u64>) -> Result<u64, TargetError> {
    let free = free_bytes(dir).map_err(io_err(dir))?;
    match size {
        Some(want) if want > free / 2 => Err(TargetError::NoSpace {
            path: dir.to_path_buf(),
            want,
            free,
        }),
        Some(want) => Ok(want),
        None => Ok(DEFAULT_TEMP_BYTES.min(free / 2) & !((1 << 20) - 1)),
    }
}

/// A FILE that does not exist is created, as fio creates its job file: exclusively
/// (O_CREAT|O_EXCL, so a file another process creates meanwhile is never taken
/// over), laid out to its size like the temporary file, and removed when the run
/// ends (also on Ctrl-C). Never under /dev, where a missing name is a device that
/// is not there, and a regular file created in devtmpfs would fill RAM.
fn create_file(root: &Root, path: &Path, size: Option<u64>) -> Result<Target, TargetError> {
    let missing = || TargetError::Missing {
        path: path.to_path_buf(),
    };
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir = fs::canonicalize(parent).map_err(|_| missing())?;
    if dir.starts_with("/dev") {
        return Err(TargetError::MissingDevice {
            path: path.to_path_buf(),
        });
    }
    let dir_meta = fs::metadata(&dir).map_err(|_| missing())?;
    if !dir_meta.is_dir() {
        return Err(missing());
    }
    let size_bytes = file_size_in(&dir, size)?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(io_err(path))?;
    let (major, minor) = split_dev(dir_meta.dev());
    let mut target = Target {
        info: TargetInfo {
            path: path.to_path_buf(),
            kind: TargetKind::File,
            size_bytes,
            logical_block_bytes: 512,
            memory_align_bytes: 4096,
            device: crate::bench::diskstats::device_name(root, major, minor).ok(),
            network_fs: network_fs(root, &dir),
        },
        // From here on the file is ours: Drop removes it, whatever happens next.
        remove_on_drop: true,
        _claim: None,
        _lock: None,
        removed: Vec::new(),
    };
    lay_out(&file, size_bytes).map_err(|e| match e.kind() {
        io::ErrorKind::Interrupted => TargetError::Interrupted,
        _ => io_err(path)(e),
    })?;
    set_alignment(root, &mut target);
    Ok(target)
}

/// Direct I/O alignment of the target's file, from statx, else the device's block size.
fn set_alignment(root: &Root, target: &mut Target) {
    let fallback = target
        .device
        .as_deref()
        .and_then(|d| sysfs_block_size(root, d))
        .unwrap_or(512);
    let (off_align, mem_align) = dio_alignment(&target.path).unwrap_or((fallback, 4096));
    target.info.logical_block_bytes = off_align;
    target.info.memory_align_bytes = mem_align.max(4096);
}

/// The network or FUSE mount holding `path`, from /proc/self/mountinfo.
fn network_fs(root: &Root, path: &Path) -> Option<super::network_fs::NetworkFs> {
    let canonical = fs::canonicalize(path).ok()?;
    let text = root.read_string("proc/self/mountinfo").ok()?;
    let mounts = crate::probe::filesystems::parse_mountinfo(&text).ok()?;
    super::network_fs::find(&mounts, &canonical)
}

fn file_len(file: &File) -> io::Result<u64> {
    use std::io::{Seek, SeekFrom};
    let mut f = file;
    f.seek(SeekFrom::End(0))
}

/// Writes random data over the whole file (like fio's "Laying out IO file"), so
/// reads hit real blocks rather than holes the filesystem answers without I/O.
fn lay_out(file: &File, size: u64) -> io::Result<()> {
    lay_out_from(file, 0, size)
}

fn lay_out_from(file: &File, from: u64, size: u64) -> io::Result<()> {
    const CHUNK: usize = 1 << 20;
    let bufs = Buffers::new(1, CHUNK, 4096, 0x5eed).map_err(io::Error::other)?;
    let mut f = file;
    use std::io::{Seek, SeekFrom};
    f.seek(SeekFrom::Start(from))?;
    let mut left = size.saturating_sub(from);
    while left > 0 {
        if crate::bench::interrupt::interrupted() {
            return Err(io::Error::from(io::ErrorKind::Interrupted));
        }
        let n = left.min(CHUNK as u64) as usize;
        f.write_all(&bufs.slot(0)[..n])?;
        left -= n as u64;
    }
    file.sync_all()
}

impl std::ops::Deref for Target {
    type Target = TargetInfo;

    fn deref(&self) -> &TargetInfo {
        &self.info
    }
}

impl Target {
    pub fn info(&self) -> TargetInfo {
        self.info.clone()
    }

    /// Opens the target for one job.
    pub fn open_for_io(&self, direct: bool, write: bool) -> io::Result<File> {
        let mut o = OpenOptions::new();
        o.read(true).write(write);
        if direct {
            o.custom_flags(libc::O_DIRECT);
        }
        o.open(&self.path)
    }

    /// Drops the target's pages from the page cache (fio's `invalidate=1`), so a
    /// buffered read test starts cold.
    pub fn invalidate_cache(&self) {
        use std::os::fd::AsRawFd;
        if let Ok(f) = File::open(&self.path) {
            // SAFETY: advisory call on an open fd.
            unsafe {
                libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
            }
        }
    }
}
