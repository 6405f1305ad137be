//! Kernel crypto through AF_ALG, the interface `cryptsetup benchmark` uses and
//! the same crypto API dm-crypt calls: a bound "transform" socket holds the
//! algorithm and key, and each accept()ed "op" socket carries requests
//! (sendmsg with ALG_SET_OP / ALG_SET_IV control messages, then read()).
//!
//! Written on libc (no kcapi): the structures are small and stable since 2.6.38.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Why a kernel cipher could not be used, classified by errno so the report can
/// say what to do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AfAlgError {
    #[error(
        "kernel crypto API for user space (AF_ALG) is not available: socket(AF_ALG) failed with \
EAFNOSUPPORT, so this kernel was built without CONFIG_CRYPTO_USER_API_SKCIPHER (or the af_alg \
module is not loaded); dm-crypt is unaffected, but its ciphers cannot be measured from user \
space: try 'modprobe algif_skcipher', or read the user-space figures"
    )]
    NoAfAlg,
    #[error(
        "the kernel offers no '{name}' skcipher (bind failed with ENOENT): the algorithm, its \
template module or algif_skcipher is not loaded; try 'modprobe algif_skcipher' and the cipher's module"
    )]
    NoCipher { name: String },
    #[error("'{name}' is busy (EBUSY on {op}): another user holds the engine; retry later")]
    Busy { name: String, op: &'static str },
    #[error("'{name}': {op} failed with {errno_name}: {message}")]
    Os {
        name: String,
        op: &'static str,
        errno: i32,
        errno_name: &'static str,
        message: String,
    },
    #[error("'{name}': the kernel took {done} of {wanted} bytes in one request")]
    Short {
        name: String,
        done: usize,
        wanted: usize,
    },
}

impl AfAlgError {
    /// The errno name behind the error, for the JSON report.
    pub fn errno_name(&self) -> Option<&'static str> {
        match self {
            AfAlgError::NoAfAlg => Some("EAFNOSUPPORT"),
            AfAlgError::NoCipher { .. } => Some("ENOENT"),
            AfAlgError::Busy { .. } => Some("EBUSY"),
            AfAlgError::Os { errno_name, .. } => Some(errno_name),
            AfAlgError::Short { .. } => None,
        }
    }

    fn from_errno(name: &str, op: &'static str, err: std::io::Error) -> AfAlgError {
        let errno = err.raw_os_error().unwrap_or(0);
        match errno {
            libc::EAFNOSUPPORT => AfAlgError::NoAfAlg,
            libc::ENOENT if op == "bind" => AfAlgError::NoCipher {
                name: name.to_string(),
            },
            libc::EBUSY => AfAlgError::Busy {
                name: name.to_string(),
                op,
            },
            _ => AfAlgError::Os {
                name: name.to_string(),
                op,
                errno,
                errno_name: errno_name(errno),
                message: err.to_string(),
            },
        }
    }
}

pub fn errno_name(errno: i32) -> &'static str {
    match errno {
        libc::EAFNOSUPPORT => "EAFNOSUPPORT",
        libc::ENOENT => "ENOENT",
        libc::EBUSY => "EBUSY",
        libc::EINVAL => "EINVAL",
        libc::ENOKEY => "ENOKEY",
        libc::EPERM => "EPERM",
        libc::EACCES => "EACCES",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENOMEM => "ENOMEM",
        libc::EBADMSG => "EBADMSG",
        libc::EMSGSIZE => "EMSGSIZE",
        _ => "an unexpected errno",
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Encrypt,
    Decrypt,
}

/// A bound, keyed AF_ALG skcipher transform.
pub struct Transform {
    fd: OwnedFd,
    name: String,
}

fn check(ret: libc::c_int) -> Result<libc::c_int, std::io::Error> {
    if ret < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

impl Transform {
    /// Opens `socket(AF_ALG)` and binds it to the skcipher `name` (e.g. "xts(aes)").
    pub fn skcipher(name: &str) -> Result<Transform, AfAlgError> {
        let err = |op, e| AfAlgError::from_errno(name, op, e);
        // SAFETY: plain socket(2) call; the result is checked before use.
        let raw = check(unsafe {
            libc::socket(libc::AF_ALG, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0)
        })
        .map_err(|e| err("socket", e))?;
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: sockaddr_alg is plain old data; all-zero is a valid value.
        let mut sa: libc::sockaddr_alg = unsafe { std::mem::zeroed() };
        sa.salg_family = libc::AF_ALG as libc::sa_family_t;
        let kind = b"skcipher";
        sa.salg_type[..kind.len()].copy_from_slice(kind);
        if name.len() >= sa.salg_name.len() || name.as_bytes().contains(&0) {
            return Err(AfAlgError::Os {
                name: name.to_string(),
                op: "bind",
                errno: libc::EINVAL,
                errno_name: "EINVAL",
                message: "algorithm name longer than 63 bytes or with a NUL".into(),
            });
        }
        sa.salg_name[..name.len()].copy_from_slice(name.as_bytes());
        // SAFETY: `sa` is a valid sockaddr_alg and we pass its exact size.
        check(unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sa as *const libc::sockaddr_alg).cast(),
                std::mem::size_of::<libc::sockaddr_alg>() as libc::socklen_t,
            )
        })
        .map_err(|e| err("bind", e))?;
        Ok(Transform {
            fd,
            name: name.to_string(),
        })
    }

    pub fn set_key(&self, key: &[u8]) -> Result<(), AfAlgError> {
        // SAFETY: the key buffer is valid for key.len() bytes.
        check(unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_ALG,
                libc::ALG_SET_KEY,
                key.as_ptr().cast(),
                key.len() as libc::socklen_t,
            )
        })
        .map_err(|e| AfAlgError::from_errno(&self.name, "setsockopt(ALG_SET_KEY)", e))?;
        Ok(())
    }

    /// A new request socket; several can be used at once from several threads.
    pub fn op(&self) -> Result<OpSocket, AfAlgError> {
        // SAFETY: accept4 without an address; the result is checked.
        let raw = check(unsafe {
            libc::accept4(
                self.fd.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_CLOEXEC,
            )
        })
        .map_err(|e| AfAlgError::from_errno(&self.name, "accept", e))?;
        Ok(OpSocket {
            // SAFETY: a fresh descriptor that nothing else owns.
            fd: unsafe { OwnedFd::from_raw_fd(raw) },
            name: self.name.clone(),
            cmsg: Vec::new(),
        })
    }
}

/// One request stream on a transform.
pub struct OpSocket {
    fd: OwnedFd,
    name: String,
    /// Reused control-message buffer (u64 for cmsghdr alignment).
    cmsg: Vec<u64>,
}

impl OpSocket {
    /// Encrypts or decrypts `input` into `output` (same length) as one request.
    pub fn crypt(
        &mut self,
        dir: Direction,
        iv: &[u8],
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(), AfAlgError> {
        let op: u32 = match dir {
            Direction::Encrypt => libc::ALG_OP_ENCRYPT as u32,
            Direction::Decrypt => libc::ALG_OP_DECRYPT as u32,
        };
        let iv_len = std::mem::size_of::<u32>() + iv.len();
        // SAFETY: CMSG_SPACE is pure arithmetic.
        let space = unsafe { libc::CMSG_SPACE(4) + libc::CMSG_SPACE(iv_len as u32) } as usize;
        self.cmsg.clear();
        self.cmsg.resize(space.div_ceil(8), 0);
        let mut iov = libc::iovec {
            iov_base: input.as_ptr() as *mut libc::c_void,
            iov_len: input.len(),
        };
        // SAFETY: msghdr is plain old data; zero is a valid start.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = self.cmsg.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        // SAFETY: the control buffer holds both headers (sized with CMSG_SPACE
        // above), CMSG_FIRSTHDR/NXTHDR stay inside it, and the data written fits
        // each header's CMSG_LEN.
        unsafe {
            let first = libc::CMSG_FIRSTHDR(&msg);
            (*first).cmsg_level = libc::SOL_ALG;
            (*first).cmsg_type = libc::ALG_SET_OP;
            (*first).cmsg_len = libc::CMSG_LEN(4) as _;
            std::ptr::copy_nonoverlapping(op.to_ne_bytes().as_ptr(), libc::CMSG_DATA(first), 4);
            let second = libc::CMSG_NXTHDR(&msg, first);
            (*second).cmsg_level = libc::SOL_ALG;
            (*second).cmsg_type = libc::ALG_SET_IV;
            (*second).cmsg_len = libc::CMSG_LEN(iv_len as u32) as _;
            let data = libc::CMSG_DATA(second);
            let len = (iv.len() as u32).to_ne_bytes();
            std::ptr::copy_nonoverlapping(len.as_ptr(), data, 4);
            std::ptr::copy_nonoverlapping(iv.as_ptr(), data.add(4), iv.len());
        }
        // SAFETY: msg points at live buffers for the duration of the call.
        let sent = unsafe { libc::sendmsg(self.fd.as_raw_fd(), &msg, 0) };
        if sent < 0 {
            let e = std::io::Error::last_os_error();
            return Err(AfAlgError::from_errno(&self.name, "sendmsg", e));
        }
        if sent as usize != input.len() {
            return Err(AfAlgError::Short {
                name: self.name.clone(),
                done: sent as usize,
                wanted: input.len(),
            });
        }
        let mut done = 0;
        while done < output.len() {
            let rest = &mut output[done..];
            // SAFETY: reads into the unread tail of `output`.
            let n =
                unsafe { libc::read(self.fd.as_raw_fd(), rest.as_mut_ptr().cast(), rest.len()) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                return Err(AfAlgError::from_errno(&self.name, "read", e));
            }
            if n == 0 {
                return Err(AfAlgError::Short {
                    name: self.name.clone(),
                    done,
                    wanted: output.len(),
                });
            }
            done += n as usize;
        }
        Ok(())
    }
}

/// Whether this kernel has AF_ALG at all (Ok) or why not.
pub fn probe() -> Result<(), AfAlgError> {
    // SAFETY: plain socket(2) call; the descriptor is closed by OwnedFd.
    let raw = unsafe { libc::socket(libc::AF_ALG, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(AfAlgError::from_errno(
            "AF_ALG",
            "socket",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: fresh descriptor owned here only.
    drop(unsafe { OwnedFd::from_raw_fd(raw) });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_their_errno_and_the_fix() {
        let e = AfAlgError::from_errno(
            "xts(aes)",
            "socket",
            std::io::Error::from_raw_os_error(libc::EAFNOSUPPORT),
        );
        assert_eq!(e, AfAlgError::NoAfAlg);
        assert!(e.to_string().contains("CONFIG_CRYPTO_USER_API_SKCIPHER"));
        let e = AfAlgError::from_errno(
            "adiantum(xchacha12,aes)",
            "bind",
            std::io::Error::from_raw_os_error(libc::ENOENT),
        );
        assert_eq!(e.errno_name(), Some("ENOENT"));
        assert!(e.to_string().contains("'adiantum(xchacha12,aes)'"));
        let e = AfAlgError::from_errno(
            "xts(aes)",
            "setsockopt(ALG_SET_KEY)",
            std::io::Error::from_raw_os_error(libc::EINVAL),
        );
        assert_eq!(e.errno_name(), Some("EINVAL"));
        let e = AfAlgError::from_errno(
            "cbc(aes)",
            "read",
            std::io::Error::from_raw_os_error(libc::EBUSY),
        );
        assert_eq!(e.errno_name(), Some("EBUSY"));
    }

    #[test]
    fn over_long_names_are_refused_before_the_kernel_sees_them() {
        match Transform::skcipher(&"x".repeat(64)) {
            // Without AF_ALG the socket fails first; both are clear errors.
            Err(AfAlgError::NoAfAlg) => {}
            Err(AfAlgError::Os { errno_name, .. }) => assert_eq!(errno_name, "EINVAL"),
            Err(e) => panic!("unexpected {e}"),
            Ok(_) => panic!("a 64-byte name was accepted"),
        }
    }
}
