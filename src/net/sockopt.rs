//! The few socket options std does not expose: buffer sizes (`-w`), MSS (`-M`),
//! read back as the kernel applied them, and a UDP socket bound with
//! SO_REUSEADDR/SO_REUSEPORT (iperf3 binds one per UDP stream on the same port and
//! connects it to the peer).

use std::io;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use serde::{Deserialize, Serialize};

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

fn get_int<S: AsRawFd>(s: &S, level: i32, name: i32) -> io::Result<i32> {
    let mut value: i32 = 0;
    let mut len = std::mem::size_of::<i32>() as libc::socklen_t;
    // SAFETY: pointer and length describe a live i32.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            level,
            name,
            (&mut value as *mut i32).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(value)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// What the kernel made of `-w` and `-M` on one data socket, read with getsockopt, so
/// a result shows the buffers and segment size the test really ran with. Linux doubles
/// a requested buffer size (bookkeeping overhead) and caps the request at
/// net.core.wmem_max / rmem_max.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    pub sndbuf_bytes: u32,
    pub rcvbuf_bytes: u32,
    /// TCP_MAXSEG of the connected socket: the MSS in use (TCP only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mss_bytes: Option<u32>,
}

pub fn read_applied<S: AsRawFd>(s: &S, tcp: bool) -> io::Result<Applied> {
    let uint = |v: i32| u32::try_from(v).unwrap_or(0);
    Ok(Applied {
        sndbuf_bytes: uint(get_int(s, libc::SOL_SOCKET, libc::SO_SNDBUF)?),
        rcvbuf_bytes: uint(get_int(s, libc::SOL_SOCKET, libc::SO_RCVBUF)?),
        mss_bytes: if tcp {
            Some(uint(get_int(s, libc::IPPROTO_TCP, libc::TCP_MAXSEG)?))
        } else {
            None
        },
    })
}

/// A non-blocking TCP socket with `-w` and `-M` set and its connect in progress. Both
/// are set before the SYN, as iperf3 does: the MSS is announced in the handshake and
/// the window scale chosen from the receive buffer there, so either set after connect
/// changes nothing on the wire.
pub fn start_connect(addr: SocketAddr, window: u32, mss: u32) -> io::Result<TcpStream> {
    let sock = TcpStream::from(new_socket(addr, libc::SOCK_STREAM | libc::SOCK_NONBLOCK)?);
    set_window(&sock, window)?;
    set_mss(&sock, mss)?;
    let (storage, len) = sockaddr(addr);
    // SAFETY: `storage` holds a valid sockaddr of `len` bytes.
    let rc = unsafe {
        libc::connect(
            sock.as_raw_fd(),
            (&storage as *const libc::sockaddr_storage).cast(),
            len,
        )
    };
    if rc != 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(err);
        }
    }
    Ok(sock)
}

/// [`start_connect`] waited for, within `timeout`, and made blocking.
pub fn connect_tuned(
    addr: SocketAddr,
    timeout: Duration,
    window: u32,
    mss: u32,
) -> io::Result<TcpStream> {
    let sock = start_connect(addr, window, mss)?;
    let mut pfd = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLOUT,
        revents: 0,
    };
    let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: one live pollfd.
    match unsafe { libc::poll(&mut pfd, 1, ms) } {
        0 => return Err(io::Error::from(io::ErrorKind::TimedOut)),
        n if n < 0 => return Err(io::Error::last_os_error()),
        _ => {}
    }
    match get_int(&sock, libc::SOL_SOCKET, libc::SO_ERROR)? {
        0 => {}
        e => return Err(io::Error::from_raw_os_error(e)),
    }
    sock.set_nonblocking(false)?;
    Ok(sock)
}

/// A close-on-exec socket of `kind` (plus flags) for `addr`'s family.
fn new_socket(addr: SocketAddr, kind: i32) -> io::Result<OwnedFd> {
    let domain = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: plain socket(2).
    let fd = unsafe { libc::socket(domain, kind | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
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
    let sock = UdpSocket::from(new_socket(addr, libc::SOCK_DGRAM)?);
    set_int(&sock, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    set_int(&sock, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
    let (storage, len) = sockaddr(addr);
    // SAFETY: `storage` holds a valid sockaddr of `len` bytes.
    let rc = unsafe {
        libc::bind(
            sock.as_raw_fd(),
            (&storage as *const libc::sockaddr_storage).cast(),
            len,
        )
    };
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn proc_int(path: &str) -> u32 {
        std::fs::read_to_string(path)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// The values come from the kernel: doubled and capped as Linux does, which an
    /// option never set could not produce.
    #[test]
    fn window_and_mss_are_applied_before_the_handshake() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let window = 96 * 1024;
        let s = connect_tuned(addr, Duration::from_secs(5), window, 1000).unwrap();
        let applied = read_applied(&s, true).unwrap();
        let snd = 2 * window.min(proc_int("/proc/sys/net/core/wmem_max"));
        let rcv = 2 * window.min(proc_int("/proc/sys/net/core/rmem_max"));
        assert_eq!((applied.sndbuf_bytes, applied.rcvbuf_bytes), (snd, rcv));
        // Loopback's MTU is 64 KiB: only an MSS announced in the SYN keeps it this low
        // (less the 12 bytes of the timestamp option when that is on).
        let mss = applied.mss_bytes.unwrap();
        assert!((988..=1000).contains(&mss), "MSS {mss}");

        let plain = connect_tuned(addr, Duration::from_secs(5), 0, 0).unwrap();
        let mss = read_applied(&plain, true).unwrap().mss_bytes.unwrap();
        assert!(mss > 16_000, "loopback MSS without -M: {mss}");
        assert!(
            read_applied(&UdpSocket::bind("127.0.0.1:0").unwrap(), false)
                .unwrap()
                .mss_bytes
                .is_none()
        );
    }

    #[test]
    fn a_refused_connection_is_an_error() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let err = connect_tuned(addr, Duration::from_secs(5), 0, 0).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
    }
}
