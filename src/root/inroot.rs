//! Paths below a directory resolved the way the kernel resolves them inside a
//! chroot: symlinks (absolute or relative) and `..` never leave it. A captured
//! tree is data from someone else's box; a link in it to `/etc/shadow` must
//! read the tree's own `etc/shadow`, never ours.
//!
//! openat2(RESOLVE_IN_ROOT) does this in the kernel (Linux 5.6+). Older kernels
//! (and seccomp filters that hide the call) get a walk that reads every link
//! itself and then opens each component with O_NOFOLLOW, so a link swapped in
//! between the two fails the open rather than escaping.

use std::collections::VecDeque;
use std::ffi::{CStr, CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Symlinks followed in one resolution before giving up, as the kernel does.
const MAX_LINKS: usize = 40;

/// Set once openat2 answered ENOSYS: every later open walks by hand.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// `struct open_how` of linux/openat2.h (libc's is non-exhaustive).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

fn errno(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| errno(libc::EINVAL))
}

fn owned(fd: libc::c_long) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a non-negative return of open/openat/openat2 is a fresh descriptor
    // that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

fn openat(dir: RawFd, name: &OsStr, flags: libc::c_int, mode: libc::c_uint) -> io::Result<OwnedFd> {
    let c = c_name(name)?;
    // SAFETY: `c` is NUL-terminated and outlives the call.
    owned(unsafe { libc::openat(dir, c.as_ptr(), flags | libc::O_CLOEXEC, mode) }.into())
}

/// Opens the directory every resolution starts from.
pub fn open_base(base: &Path) -> io::Result<OwnedFd> {
    openat(
        libc::AT_FDCWD,
        base.as_os_str(),
        libc::O_PATH | libc::O_DIRECTORY,
        0,
    )
}

/// The names of `rel`, `.` and empty ones dropped (`..` kept: it is resolved).
fn names(rel: &OsStr) -> impl DoubleEndedIterator<Item = OsString> + '_ {
    rel.as_bytes()
        .split(|b| *b == b'/')
        .filter(|n| !n.is_empty() && *n != b".")
        .map(|n| OsString::from_vec(n.to_vec()))
}

/// Opens `rel` below `base` (no O_CREAT): symlinks and `..` resolve inside it.
pub fn open(base: &OwnedFd, rel: &str, flags: libc::c_int) -> io::Result<OwnedFd> {
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        match openat2(base, rel, flags) {
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                NO_OPENAT2.store(true, Ordering::Relaxed);
            }
            // EPERM: a seccomp filter refusing the call; EAGAIN: a rename raced
            // the lookup. The walk does the same job either way.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::EAGAIN)) => {}
            other => return other,
        }
    }
    walk_open(base, rel, flags)
}

fn openat2(base: &OwnedFd, rel: &str, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = c_name(OsStr::new(rel))?;
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: `c` and `how` are valid for the call; the size is the struct's.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            base.as_raw_fd(),
            c.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    owned(fd)
}

/// The hand walk: resolve, then open every component with O_NOFOLLOW.
fn walk_open(base: &OwnedFd, rel: &str, flags: libc::c_int) -> io::Result<OwnedFd> {
    let canon = canonical(base, rel, true)?;
    match canon.split_last() {
        None => openat(base.as_raw_fd(), OsStr::new("."), flags, 0),
        Some((last, dirs)) => {
            let dir = open_dirs(base, dirs, false)?;
            openat(dir.as_raw_fd(), last, flags | libc::O_NOFOLLOW, 0)
        }
    }
}

/// `rel` as names from `base` down with no `.`, `..` or symlink left (a final
/// symlink stays itself unless `follow_last`). Names from the first missing one
/// on are kept as written: that is where a create puts them.
pub fn canonical(base: &OwnedFd, rel: &str, follow_last: bool) -> io::Result<Vec<OsString>> {
    let mut todo: VecDeque<OsString> = names(OsStr::new(rel)).collect();
    let mut done: Vec<OsString> = Vec::new();
    let mut links = 0;
    let mut missing = false;
    while let Some(name) = todo.pop_front() {
        if name == ".." {
            if missing {
                return Err(errno(libc::ENOENT));
            }
            // At the top, `..` stays there, as in a chroot.
            done.pop();
            continue;
        }
        if missing || (todo.is_empty() && !follow_last) {
            done.push(name);
            continue;
        }
        let dir = open_dirs(base, &done, false)?;
        match readlinkat(dir.as_raw_fd(), &name) {
            Ok(target) => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(errno(libc::ELOOP));
                }
                if target.as_bytes().starts_with(b"/") {
                    done.clear();
                }
                for n in names(&target).rev() {
                    todo.push_front(n);
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => done.push(name),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                missing = true;
                done.push(name);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Opens the directory `names` (canonical) below `base`, never following a
/// link; `create` makes missing ones.
fn open_dirs(base: &OwnedFd, names: &[OsString], create: bool) -> io::Result<OwnedFd> {
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
    let mut cur = openat(base.as_raw_fd(), OsStr::new("."), flags, 0)?;
    for name in names {
        cur = match openat(cur.as_raw_fd(), name, flags, 0) {
            Err(e) if create && e.raw_os_error() == Some(libc::ENOENT) => {
                let c = c_name(name)?;
                // SAFETY: `c` is NUL-terminated and outlives the call.
                let r = unsafe { libc::mkdirat(cur.as_raw_fd(), c.as_ptr(), 0o755) };
                if r != 0 {
                    let e = io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::EEXIST) {
                        return Err(e);
                    }
                }
                openat(cur.as_raw_fd(), name, flags, 0)?
            }
            other => other?,
        };
    }
    Ok(cur)
}

fn readlinkat(dir: RawFd, name: &OsStr) -> io::Result<OsString> {
    let c = c_name(name)?;
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: `buf` is writable for its length; `c` is NUL-terminated.
    let n = unsafe { libc::readlinkat(dir, c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(OsString::from_vec(buf))
}

// 32-bit glibc's plain readdir fails with EOVERFLOW on 64-bit inode numbers;
// musl's is 64-bit already.
#[cfg(not(target_env = "gnu"))]
use libc::readdir;
#[cfg(target_env = "gnu")]
use libc::readdir64 as readdir;

/// Reads the names in a directory opened for reading (not O_PATH), unsorted,
/// without `.` and `..`.
pub fn list(dir: OwnedFd) -> io::Result<Vec<OsString>> {
    let raw = dir.into_raw_fd();
    // SAFETY: `raw` is an open directory descriptor; fdopendir owns it from here
    // (closedir closes it), and on failure we close it ourselves.
    let handle = unsafe { libc::fdopendir(raw) };
    if handle.is_null() {
        let e = io::Error::last_os_error();
        // SAFETY: fdopendir failed, so `raw` is still ours.
        unsafe { libc::close(raw) };
        return Err(e);
    }
    let mut out = Vec::new();
    let result = loop {
        // SAFETY: errno is thread-local; readdir reports errors only through it.
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: `handle` is a live DIR stream.
        let entry = unsafe { readdir(handle) };
        if entry.is_null() {
            let e = io::Error::last_os_error();
            break if e.raw_os_error().unwrap_or(0) == 0 {
                Ok(())
            } else {
                Err(e)
            };
        }
        // SAFETY: readdir returned an entry whose d_name is NUL-terminated and
        // valid until the next readdir on this stream.
        let name = unsafe { CStr::from_ptr((*entry).d_name.as_ptr()) }.to_bytes();
        if name != b"." && name != b".." {
            out.push(OsString::from_vec(name.to_vec()));
        }
    };
    // SAFETY: `handle` is live and not used after this.
    unsafe { libc::closedir(handle) };
    result.map(|()| out)
}

/// Where a write lands: an open directory and a name in it, every symlink on
/// the way (and a final one, the file a link points at) resolved below the root.
#[derive(Debug)]
pub struct Place {
    dir: OwnedFd,
    name: OsString,
    /// The resolved location, for messages.
    pub path: PathBuf,
}

impl Place {
    /// Resolves `rel` below `base`; `create_dirs` makes missing directories.
    /// `follow_last` false names a final symlink itself.
    pub fn resolve(
        base: &Path,
        rel: &str,
        follow_last: bool,
        create_dirs: bool,
    ) -> io::Result<Place> {
        let base_fd = open_base(base)?;
        let mut canon = canonical(&base_fd, rel, follow_last)?;
        let name = canon.pop().ok_or_else(|| errno(libc::EISDIR))?;
        let dir = open_dirs(&base_fd, &canon, create_dirs)?;
        let mut path = base.to_path_buf();
        path.extend(canon.iter());
        path.push(&name);
        Ok(Place { dir, name, path })
    }

    pub fn name(&self) -> &OsStr {
        &self.name
    }

    /// The directory's path, for messages.
    pub fn dir_path(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("/"))
    }

    /// Opens `name` in the directory (a link there is not followed).
    pub fn open(
        &self,
        name: &OsStr,
        flags: libc::c_int,
        mode: libc::c_uint,
    ) -> io::Result<OwnedFd> {
        openat(self.dir.as_raw_fd(), name, flags | libc::O_NOFOLLOW, mode)
    }

    /// The target of the symlink at this place.
    pub fn read_link(&self) -> io::Result<PathBuf> {
        readlinkat(self.dir.as_raw_fd(), &self.name).map(PathBuf::from)
    }

    /// `stat` of `name` in the directory, links not followed.
    pub fn stat(&self, name: &OsStr) -> io::Result<libc::stat> {
        let c = c_name(name)?;
        // SAFETY: zero is a valid `stat`; fstatat fills it.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `c` and `st` are valid for the call.
        let r = unsafe {
            libc::fstatat(
                self.dir.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(st)
    }

    /// Renames `from` (in the same directory) over this place.
    pub fn rename_over(&self, from: &OsStr) -> io::Result<()> {
        let (f, t) = (c_name(from)?, c_name(&self.name)?);
        let d = self.dir.as_raw_fd();
        // SAFETY: both names are NUL-terminated and outlive the call.
        if unsafe { libc::renameat(d, f.as_ptr(), d, t.as_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Removes `name` from the directory.
    pub fn unlink(&self, name: &OsStr) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: `c` is NUL-terminated and outlives the call.
        if unsafe { libc::unlinkat(self.dir.as_raw_fd(), c.as_ptr(), 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Flushes the directory (a rename in it is durable after this).
    pub fn sync_dir(&self) -> io::Result<()> {
        let fd = openat(self.dir.as_raw_fd(), OsStr::new("."), libc::O_RDONLY, 0)?;
        std::fs::File::from(fd).sync_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("in/etc")).unwrap();
        fs::create_dir_all(d.path().join("in/sys/devices/pci/sdb")).unwrap();
        fs::create_dir_all(d.path().join("in/sys/class/block")).unwrap();
        fs::write(d.path().join("in/etc/passwd"), "inside\n").unwrap();
        fs::write(d.path().join("outside"), "secret\n").unwrap();
        fs::write(d.path().join("in/sys/devices/pci/sdb/size"), "8\n").unwrap();
        symlink("/etc/passwd", d.path().join("in/abs")).unwrap();
        symlink("../../../../outside", d.path().join("in/etc/up")).unwrap();
        symlink(
            "../../devices/pci/sdb",
            d.path().join("in/sys/class/block/sdb"),
        )
        .unwrap();
        d
    }

    fn read(base: &OwnedFd, rel: &str) -> io::Result<String> {
        let f = std::fs::File::from(open(base, rel, libc::O_RDONLY)?);
        io::read_to_string(f)
    }

    #[test]
    fn links_and_dotdot_stay_inside_both_ways() {
        let d = tree();
        let base = open_base(&d.path().join("in")).unwrap();
        for use_walk in [false, true] {
            let get = |rel: &str| {
                if use_walk {
                    walk_open(&base, rel, libc::O_RDONLY)
                        .map(std::fs::File::from)
                        .and_then(io::read_to_string)
                } else {
                    read(&base, rel)
                }
            };
            assert_eq!(get("abs").unwrap(), "inside\n", "walk {use_walk}");
            assert!(get("etc/up").is_err(), "walk {use_walk}");
            assert!(get("../outside").is_err(), "walk {use_walk}");
            assert_eq!(get("../../etc/passwd").unwrap(), "inside\n");
            assert_eq!(get("sys/class/block/sdb/size").unwrap(), "8\n");
            assert_eq!(get("sys/class/block/sdb/../sdb/size").unwrap(), "8\n");
        }
    }

    #[test]
    fn canonical_names_the_target_of_a_final_link_only_when_asked() {
        let d = tree();
        let base = open_base(&d.path().join("in")).unwrap();
        let c = canonical(&base, "sys/class/block/sdb", true).unwrap();
        assert_eq!(c, ["sys", "devices", "pci", "sdb"]);
        let c = canonical(&base, "sys/class/block/sdb", false).unwrap();
        assert_eq!(c, ["sys", "class", "block", "sdb"]);
        assert_eq!(canonical(&base, "etc/up", true).unwrap(), ["outside"]);
        assert_eq!(
            canonical(&base, "new/dir/f", true).unwrap(),
            ["new", "dir", "f"]
        );
    }

    #[test]
    fn link_loops_end() {
        let d = tempfile::tempdir().unwrap();
        symlink("b", d.path().join("a")).unwrap();
        symlink("a", d.path().join("b")).unwrap();
        let base = open_base(d.path()).unwrap();
        assert_eq!(
            walk_open(&base, "a", libc::O_RDONLY)
                .unwrap_err()
                .raw_os_error(),
            Some(libc::ELOOP)
        );
    }

    #[test]
    fn lists_a_directory_by_descriptor() {
        let d = tree();
        let base = open_base(&d.path().join("in")).unwrap();
        let dir = open(
            &base,
            "sys/class/block/sdb",
            libc::O_RDONLY | libc::O_DIRECTORY,
        )
        .unwrap();
        assert_eq!(list(dir).unwrap(), ["size"]);
    }
}
