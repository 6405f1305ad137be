//! The few socket options std does not expose: buffer sizes (`-w`), MSS (`-M`),
//! and a UDP socket bound with SO_REUSEADDR/SO_REUSEPORT (iperf3 binds one per
//! UDP stream on the same port and connects it to the peer).

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd};

fn set_int<S: AsRawFd>(s: &S, level: i32, name: i32, value: i32) -> io::Result<()> {
    // SAFETY: pointer and size describe a live i32.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            level,
            name,
            (&value as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `-w`: both buffers, as iperf3 does; 0 leaves the kernel's autotuning alone.
pub fn set_window<S: AsRawFd>(s: &S, bytes: u32) -> io::Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    let v = i32::try_from(bytes).unwrap_or(i32::MAX);
    set_int(s, libc::SOL_SOCKET, libc::SO_SNDBUF, v)?;
    set_int(s, libc::SOL_SOCKET, libc::SO_RCVBUF, v)
}

pub fn set_mss<S: AsRawFd>(s: &S, bytes: u32) -> io::Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    set_int(
        s,
        libc::IPPROTO_TCP,
        libc::TCP_MAXSEG,
        i32::try_from(bytes).unwrap_or(i32::MAX),
    )
}

/// A UDP socket on `addr` that may share the port with the other streams' sockets.
pub fn udp_bind_shared(addr: SocketAddr) -> io::Result<UdpSocket> {
    let domain = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: plain socket(2); the descriptor is owned by the UdpSocket below.
    let fd = unsafe { libc::socket(domain, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    let sock = unsafe { UdpSocket::from_raw_fd(fd) };
    set_int(&sock, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    set_int(&sock, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
    let (storage, len) = sockaddr(addr);
    // SAFETY: `storage` holds a valid sockaddr of `len` bytes.
    let rc = unsafe { libc::bind(fd, (&storage as *const libc::sockaddr_storage).cast(), len) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(sock)
}

fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: zero is a valid sockaddr_storage.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_in fits in sockaddr_storage.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin) };
            (
                storage,
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_in6 fits in sockaddr_storage.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin6) };
            (
                storage,
                std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            )
        }
    }
}
