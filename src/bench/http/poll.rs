//! The little of epoll the engine needs: one instance per thread, sockets
//! registered once edge-triggered for both directions (no epoll_ctl per
//! request), removed by closing them.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

pub struct Poll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
}

pub const WRITABLE: u32 = libc::EPOLLOUT as u32;
pub const HANGUP: u32 = (libc::EPOLLHUP | libc::EPOLLERR | libc::EPOLLRDHUP) as u32;

impl Poll {
    pub fn new(capacity: usize) -> io::Result<Poll> {
        // SAFETY: plain syscall; the returned fd is owned below.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Poll {
            // SAFETY: fd is a fresh descriptor nobody else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            events: vec![libc::epoll_event { events: 0, u64: 0 }; capacity.max(1)],
        })
    }

    pub fn register(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
            u64: token,
        };
        // SAFETY: both fds are open; ev outlives the call.
        let rc = unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Waits up to `timeout_ms`; returns (token, events) pairs. EINTR is no event.
    pub fn wait(&mut self, timeout_ms: i32) -> io::Result<impl Iterator<Item = (u64, u32)> + '_> {
        // SAFETY: the buffer holds `len` events and lives as long as self.
        let n = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as i32,
                timeout_ms,
            )
        };
        let n = if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
            0
        } else {
            n as usize
        };
        Ok(self.events[..n].iter().map(|e| (e.u64, e.events)))
    }
}
