//! What a file is besides its bytes: owner, group, mode and extended
//! attributes (an ACL in `system.posix_acl_access`, an SELinux label in
//! `security.selinux`, `user.*` notes). A file that tune replaces by rename is
//! a new inode, which would otherwise come back root-owned, 0644-or-umask and
//! bare: a Samba that runs as its own user then cannot read its smb.conf, and
//! an SELinux box denies it. The journal keeps the old file's [`FileMeta`], so
//! a rollback puts it back as well as the bytes.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    pub uid: u32,
    pub gid: u32,
    /// Permission bits with setuid, setgid and sticky (`st_mode & 0o7777`).
    pub mode: u32,
    /// `(name, value)` of every extended attribute, in the order listed.
    pub xattrs: Vec<(Vec<u8>, Vec<u8>)>,
}

/// First bytes of an encoded [`FileMeta`] (version 1 of the layout).
const MAGIC: &[u8; 4] = b"NFM1";

/// The kernel's limit for one attribute value (XATTR_SIZE_MAX, 64 KiB).
const XATTR_SIZE_MAX: usize = 64 << 10;

impl FileMeta {
    /// The metadata of an open file.
    pub fn of(f: &File) -> io::Result<FileMeta> {
        let st = f.metadata()?;
        use std::os::unix::fs::MetadataExt;
        let mut xattrs = Vec::new();
        for name in list_xattrs(f)? {
            match get_xattr(f, &name) {
                Ok(value) => xattrs.push((name, value)),
                // Removed between the list and the read: it is not there.
                Err(e) if e.raw_os_error() == Some(libc::ENODATA) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(FileMeta {
            uid: st.uid(),
            gid: st.gid(),
            mode: st.mode() & 0o7777,
            xattrs,
        })
    }

    /// Makes `f` carry this metadata: owner first (chown clears setuid and
    /// setgid), then the mode, then the attributes (an ACL sets the group bits
    /// from its mask, which matches the mode it was read with), and attributes
    /// `f` has but this has not (a default ACL or label inherited at creation)
    /// are removed.
    pub fn apply_to(&self, f: &File) -> io::Result<()> {
        let fd = f.as_raw_fd();
        // SAFETY: `fd` is an open descriptor for the duration of the call.
        if unsafe { libc::fchown(fd, self.uid, self.gid) } != 0 {
            let e = io::Error::last_os_error();
            return Err(context(e, &format!("owner {}:{}", self.uid, self.gid)));
        }
        // SAFETY: as above.
        if unsafe { libc::fchmod(fd, self.mode as libc::mode_t) } != 0 {
            return Err(context(
                io::Error::last_os_error(),
                &format!("mode {:o}", self.mode),
            ));
        }
        for name in list_xattrs(f)? {
            if self.xattrs.iter().any(|(n, _)| *n == name) {
                continue;
            }
            let c = c_name(&name)?;
            // SAFETY: `c` is NUL-terminated and outlives the call.
            if unsafe { libc::fremovexattr(fd, c.as_ptr()) } != 0 {
                let e = io::Error::last_os_error();
                // A label the security module keeps on every file cannot go.
                if !name.starts_with(b"security.") {
                    return Err(context(e, &attr_name(&name)));
                }
            }
        }
        for (name, value) in &self.xattrs {
            let c = c_name(name)?;
            // SAFETY: `c` and `value` are valid for the call.
            let r =
                unsafe { libc::fsetxattr(fd, c.as_ptr(), value.as_ptr().cast(), value.len(), 0) };
            if r != 0 {
                return Err(context(io::Error::last_os_error(), &attr_name(name)));
            }
        }
        Ok(())
    }

    /// A compact binary form for the journal: the magic, uid, gid, mode and
    /// attribute count as little-endian u32, then each name and value with its
    /// u32 length.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        let n = self.xattrs.len() as u32;
        for v in [self.uid, self.gid, self.mode, n] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for (name, value) in &self.xattrs {
            for part in [name, value] {
                out.extend_from_slice(&(part.len() as u32).to_le_bytes());
                out.extend_from_slice(part);
            }
        }
        out
    }

    /// The metadata [`FileMeta::encode`] wrote; `None` for anything else.
    pub fn decode(bytes: &[u8]) -> Option<FileMeta> {
        let mut r = Reader(bytes.strip_prefix(MAGIC)?);
        let (uid, gid, mode, count) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?);
        let mut xattrs = Vec::new();
        for _ in 0..count {
            let n = r.u32()? as usize;
            let name = r.take(n)?.to_vec();
            let n = r.u32()? as usize;
            xattrs.push((name, r.take(n)?.to_vec()));
        }
        r.0.is_empty().then_some(FileMeta {
            uid,
            gid,
            mode,
            xattrs,
        })
    }
}

/// The unread rest of an encoded [`FileMeta`].
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, tail) = self.0.split_at_checked(n)?;
        self.0 = tail;
        Some(head)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
}

fn context(e: io::Error, what: &str) -> io::Error {
    io::Error::new(e.kind(), format!("cannot set {what}: {e}"))
}

fn attr_name(name: &[u8]) -> String {
    format!("extended attribute '{}'", String::from_utf8_lossy(name))
}

fn c_name(name: &[u8]) -> io::Result<std::ffi::CString> {
    std::ffi::CString::new(name).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Names of the attributes of `f`; a file system without them has none.
fn list_xattrs(f: &File) -> io::Result<Vec<Vec<u8>>> {
    let fd = f.as_raw_fd();
    let buf = sized_read(|buf: &mut [u8]| {
        // SAFETY: `buf` is valid for writes of its length (0 asks the size).
        unsafe { libc::flistxattr(fd, buf.as_mut_ptr().cast(), buf.len()) }
    });
    match buf {
        Ok(b) => Ok(b
            .split(|&c| c == 0)
            .filter(|n| !n.is_empty())
            .map(<[u8]>::to_vec)
            .collect()),
        Err(e) if e.raw_os_error() == Some(libc::ENOTSUP) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

fn get_xattr(f: &File, name: &[u8]) -> io::Result<Vec<u8>> {
    let c = c_name(name)?;
    let fd = f.as_raw_fd();
    sized_read(|buf: &mut [u8]| {
        // SAFETY: `c` is NUL-terminated; `buf` is valid for writes of its length.
        unsafe { libc::fgetxattr(fd, c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) }
    })
}

/// Calls `call` with an empty buffer for the size, then with one that size;
/// ERANGE (it grew in between) asks again, a few times.
fn sized_read(mut call: impl FnMut(&mut [u8]) -> libc::ssize_t) -> io::Result<Vec<u8>> {
    for _ in 0..4 {
        let size = call(&mut []);
        if size < 0 {
            return Err(io::Error::last_os_error());
        }
        // A list of names can be longer than one value: a few of them at most.
        let mut buf = vec![0u8; (size as usize).min(4 * XATTR_SIZE_MAX)];
        let got = call(&mut buf);
        if got >= 0 {
            buf.truncate(got as usize);
            return Ok(buf);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ERANGE) {
            return Err(e);
        }
    }
    Err(io::Error::from_raw_os_error(libc::ERANGE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips_and_rejects_junk() {
        let m = FileMeta {
            uid: 65534,
            gid: 100,
            mode: 0o2640,
            xattrs: vec![
                (b"user.note".to_vec(), b"keep me".to_vec()),
                (b"system.posix_acl_access".to_vec(), vec![2, 0, 0, 0, 1, 0]),
                (b"user.empty".to_vec(), Vec::new()),
            ],
        };
        let bytes = m.encode();
        assert_eq!(FileMeta::decode(&bytes), Some(m));
        for cut in 0..bytes.len() {
            assert_eq!(FileMeta::decode(&bytes[..cut]), None, "cut at {cut}");
        }
        assert_eq!(FileMeta::decode(b"old file bytes"), None);
    }

    #[test]
    fn owner_mode_and_attributes_are_copied_and_extras_removed() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::write(&a, "a").unwrap();
        std::fs::write(&b, "b").unwrap();
        let fa = File::open(&a).unwrap();
        let fb = File::open(&b).unwrap();
        let mut want = FileMeta::of(&fa).unwrap();
        want.mode = 0o640;
        want.xattrs.push((b"user.note".to_vec(), b"x".to_vec()));
        let set = |f: &File, n: &[u8], v: &[u8]| {
            let c = c_name(n).unwrap();
            // SAFETY: valid name and value for the call.
            unsafe { libc::fsetxattr(f.as_raw_fd(), c.as_ptr(), v.as_ptr().cast(), v.len(), 0) }
        };
        if set(&fb, b"user.extra", b"y") != 0 {
            println!("SKIP: no user.* attributes on {}", d.path().display());
            return;
        }
        want.apply_to(&fb).unwrap();
        assert_eq!(FileMeta::of(&fb).unwrap(), want);
    }
}
