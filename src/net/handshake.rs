//! Limits on connections that have not finished their handshake, so slow or
//! silent peers cannot hold what a real test needs: one deadline for the whole
//! handshake (a per-read timeout restarts with every byte, so a peer dripping one
//! byte every few seconds would never time out), and a count of such
//! connections, in total and per source address.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{IpAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Default time from accept to complete parameters (cookie, key, parameters),
/// and for a data connection to send its cookie.
pub const HANDSHAKE_DEADLINE_SECS: u32 = 5;
/// Connections in their handshake over all peers: each holds a thread. When
/// full, a new connection evicts the oldest (see [`Pending`]).
pub const MAX_PENDING: usize = 64;
/// Connections in their handshake from one source address, so one host cannot
/// take most pending places; more from that address are closed at once.
pub const MAX_PENDING_PER_ADDR: usize = 8;
/// How long a connection may go without sending its cookie before it counts as
/// stalled. A client sends the cookie right after its connect, so it arrives
/// within a round trip (well under 10 ms on a LAN); 100 ms is ten of those.
pub const COOKIE_GRACE: Duration = Duration::from_millis(100);

/// Bytes the peer has sent on `sock` that nobody has read yet, counted up to
/// `max`, without waiting and without taking them.
pub fn queued(sock: &TcpStream, max: usize) -> usize {
    let mut buf = [0u8; 64];
    let len = max.min(buf.len());
    // SAFETY: `buf` holds `len` writable bytes; MSG_PEEK leaves the data in
    // place and MSG_DONTWAIT only affects this call, not the socket's mode
    // (which a thread blocked in read on the same socket relies on).
    let n = unsafe {
        libc::recv(
            sock.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            len,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    usize::try_from(n).unwrap_or(0)
}

/// One deadline for a whole exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline(Instant);

impl Deadline {
    pub fn new(start: Instant, limit: Duration) -> Deadline {
        Deadline(start + limit)
    }

    /// Time left at `now`; `None` once the deadline has passed.
    pub fn left(self, now: Instant) -> Option<Duration> {
        let left = self.0.saturating_duration_since(now);
        (!left.is_zero()).then_some(left)
    }
}

/// What [`Timed`] needs from a socket: timeouts for the next read and write.
pub trait SetTimeouts {
    fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()>;
    fn set_write_timeout(&self, d: Option<Duration>) -> io::Result<()>;
}

impl SetTimeouts for TcpStream {
    fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        TcpStream::set_read_timeout(self, d)
    }
    fn set_write_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        TcpStream::set_write_timeout(self, d)
    }
}

/// A stream whose reads and writes share one [`Deadline`]: each call may wait
/// only for the time left, read from `clock`.
pub struct Timed<'a, S, C> {
    inner: &'a mut S,
    deadline: Deadline,
    clock: C,
}

impl<'a, S: SetTimeouts, C: Fn() -> Instant> Timed<'a, S, C> {
    pub fn new(inner: &'a mut S, deadline: Deadline, clock: C) -> Self {
        Timed {
            inner,
            deadline,
            clock,
        }
    }

    fn left(&self) -> io::Result<Duration> {
        self.deadline
            .left((self.clock)())
            .ok_or_else(|| io::Error::from(io::ErrorKind::TimedOut))
    }
}

impl<S: Read + SetTimeouts, C: Fn() -> Instant> Read for Timed<'_, S, C> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.left()?;
        self.inner.set_read_timeout(Some(left))?;
        self.inner.read(buf)
    }
}

impl<S: Write + SetTimeouts, C: Fn() -> Instant> Write for Timed<'_, S, C> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let left = self.left()?;
        self.inner.set_write_timeout(Some(left))?;
        self.inner.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Bounds on connections in their handshake.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub total: usize,
    pub per_addr: usize,
}

/// Why a connection was not admitted.
#[derive(Debug, PartialEq, Eq)]
pub struct AddrFull;

struct Entry<H> {
    id: u64,
    ip: IpAddr,
    since: Instant,
    cookie_read: bool,
    handle: H,
}

/// Connections in their handshake, oldest first, each with a `handle` the
/// server uses to close it when it is evicted.
///
/// When all places are taken, a new connection evicts the oldest one whose
/// peer has not sent its cookie within [`COOKIE_GRACE`], else the oldest: a
/// slow peer can then only delay others by one handshake, never lock them out,
/// and nobody is told "busy" because of it.
///
/// Whether the cookie was sent is asked of the peer's socket (`sent_cookie`),
/// not of our thread's progress: a fresh connection whose cookie waits unread
/// in its socket is as far along as it can be. Judged by our own reads, a
/// churn of connections that send cookies made every new connection, the real
/// client's control and data connections among them, the first to go (3 of 6
/// iperf3 runs failed under 300 such connections a second).
pub struct Pending<H> {
    next_id: u64,
    entries: VecDeque<Entry<H>>,
}

impl<H> Default for Pending<H> {
    fn default() -> Self {
        Pending {
            next_id: 0,
            entries: VecDeque::new(),
        }
    }
}

impl<H> Pending<H> {
    pub fn total(&self) -> usize {
        self.entries.len()
    }

    pub fn contains(&self, id: u64) -> bool {
        self.entries.iter().any(|e| e.id == id)
    }

    /// Admits a connection from `ip` and returns its id and the handle of the
    /// one it evicted, if any. Refused when `ip` already has `per_addr` in their
    /// handshake, plus `expected` data connections that a session from `ip`
    /// waits for (a test with many streams must not be cut short by the bound).
    ///
    /// `now` is the time of the accept; `sent_cookie` tells whether a peer has
    /// sent its cookie although our thread has not read it yet.
    pub fn admit(
        &mut self,
        ip: IpAddr,
        handle: H,
        limits: Limits,
        expected: usize,
        now: Instant,
        sent_cookie: impl Fn(&H) -> bool,
    ) -> Result<(u64, Option<H>), AddrFull> {
        let from_ip = self.entries.iter().filter(|e| e.ip == ip).count();
        if from_ip >= limits.per_addr.saturating_add(expected) {
            return Err(AddrFull);
        }
        let evicted = if self.total() >= limits.total {
            let stalled = |e: &Entry<H>| {
                !e.cookie_read
                    && now.saturating_duration_since(e.since) >= COOKIE_GRACE
                    && !sent_cookie(&e.handle)
            };
            let at = self.entries.iter().position(stalled).unwrap_or(0);
            self.entries.remove(at).map(|e| e.handle)
        } else {
            None
        };
        let id = self.next_id;
        self.next_id += 1;
        self.entries.push_back(Entry {
            id,
            ip,
            since: now,
            cookie_read: false,
            handle,
        });
        Ok((id, evicted))
    }

    /// Notes that `id` sent its cookie; false when it was evicted meanwhile
    /// (its socket is shut down and must not be used).
    pub fn cookie_read(&mut self, id: u64) -> bool {
        match self.entries.iter_mut().find(|e| e.id == id) {
            Some(e) => {
                e.cookie_read = true;
                true
            }
            None => false,
        }
    }

    /// Forgets `id` (finished, failed or already evicted); false when it was
    /// evicted before.
    pub fn leave(&mut self, id: u64) -> bool {
        let before = self.entries.len();
        self.entries.retain(|e| e.id != id);
        self.entries.len() < before
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};

    /// A peer that sends one byte per read while the clock moves `step` on.
    struct Drip<'a> {
        data: &'a [u8],
        now: &'a Cell<Instant>,
        step: Duration,
        timeouts: RefCell<Vec<Duration>>,
    }

    impl SetTimeouts for Drip<'_> {
        fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
            self.timeouts.borrow_mut().extend(d);
            Ok(())
        }
        fn set_write_timeout(&self, d: Option<Duration>) -> io::Result<()> {
            self.set_read_timeout(d)
        }
    }

    impl Read for Drip<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let last = self.timeouts.borrow().last().copied();
            if last.is_some_and(|t| t < self.step) {
                // The byte would come after the socket timeout fires.
                self.now.set(self.now.get() + last.unwrap_or_default());
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let Some((&b, rest)) = self.data.split_first() else {
                return Ok(0);
            };
            self.now.set(self.now.get() + self.step);
            self.data = rest;
            buf[0] = b;
            Ok(1)
        }
    }

    fn drip<'a>(data: &'a [u8], now: &'a Cell<Instant>, step_ms: u64) -> Drip<'a> {
        Drip {
            data,
            now,
            step: Duration::from_millis(step_ms),
            timeouts: RefCell::new(Vec::new()),
        }
    }

    #[test]
    fn deadline_counts_down_and_ends() {
        let t0 = Instant::now();
        let d = Deadline::new(t0, Duration::from_secs(5));
        assert_eq!(d.left(t0), Some(Duration::from_secs(5)));
        assert_eq!(
            d.left(t0 + Duration::from_millis(4500)),
            Some(Duration::from_millis(500))
        );
        assert_eq!(d.left(t0 + Duration::from_secs(5)), None);
        assert_eq!(d.left(t0 + Duration::from_secs(60)), None);
    }

    #[test]
    fn one_byte_every_4_s_cannot_stretch_a_5_s_handshake() {
        let cookie = [b'a'; 37];
        let now = Cell::new(Instant::now());
        let start = now.get();
        let mut peer = drip(&cookie, &now, 4000);
        let deadline = Deadline::new(start, Duration::from_secs(5));
        let mut timed = Timed::new(&mut peer, deadline, || now.get());
        let err = super::super::protocol::read_cookie(&mut timed).unwrap_err();
        assert!(
            matches!(err, super::super::protocol::ProtocolError::TimedOut),
            "{err:?}"
        );
        // Each read waited only for what was left: 5 s, then 1 s, then nothing.
        assert_eq!(
            *peer.timeouts.borrow(),
            [Duration::from_secs(5), Duration::from_secs(1)]
        );
        assert_eq!(now.get() - start, Duration::from_secs(5));
    }

    #[test]
    fn a_peer_that_sends_in_time_gets_through() {
        let cookie = [b'b'; 37];
        let now = Cell::new(Instant::now());
        let mut peer = drip(&cookie, &now, 100);
        let deadline = Deadline::new(now.get(), Duration::from_secs(5));
        let mut timed = Timed::new(&mut peer, deadline, || now.get());
        assert_eq!(
            super::super::protocol::read_cookie(&mut timed).unwrap(),
            cookie
        );
        now.set(now.get() + Duration::from_secs(2));
        let mut out = Vec::new();
        let mut timed = Timed::new(&mut out, deadline, || now.get());
        let err = timed.write_all(b"x").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "past the deadline");
    }

    impl SetTimeouts for Vec<u8> {
        fn set_read_timeout(&self, _: Option<Duration>) -> io::Result<()> {
            Ok(())
        }
        fn set_write_timeout(&self, _: Option<Duration>) -> io::Result<()> {
            Ok(())
        }
    }

    const LIMITS: Limits = Limits {
        total: MAX_PENDING,
        per_addr: MAX_PENDING_PER_ADDR,
    };

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([192, 0, 2, n])
    }

    /// Admits with handles that have sent their cookie when they are even.
    fn admit(
        p: &mut Pending<usize>,
        ip: IpAddr,
        handle: usize,
        expected: usize,
        now: Instant,
    ) -> Result<(u64, Option<usize>), AddrFull> {
        p.admit(ip, handle, LIMITS, expected, now, |h| h % 2 == 0)
    }

    #[test]
    fn pending_is_bounded_per_address() {
        let mut p = Pending::default();
        let t = Instant::now();
        for i in 0..MAX_PENDING_PER_ADDR {
            assert_eq!(admit(&mut p, ip(1), i, 0, t), Ok((i as u64, None)));
        }
        assert_eq!(admit(&mut p, ip(1), 99, 0, t), Err(AddrFull), "a ninth");
        assert!(admit(&mut p, ip(2), 8, 0, t).is_ok(), "another address");
        // Data connections an authenticated session waits for get room beyond it.
        assert!(admit(&mut p, ip(1), 9, 2, t).is_ok());
        assert!(admit(&mut p, ip(1), 10, 2, t).is_ok());
        assert_eq!(admit(&mut p, ip(1), 11, 2, t), Err(AddrFull));
        assert!(p.leave(0));
        assert!(!p.leave(0), "already gone");
        assert!(
            admit(&mut p, ip(1), 11, 2, t).is_ok(),
            "room after one left"
        );
        assert_eq!(p.total(), MAX_PENDING_PER_ADDR + 3);
    }

    #[test]
    fn a_full_table_evicts_the_oldest_stalled_then_the_oldest() {
        let mut p = Pending::default();
        let t0 = Instant::now();
        let later = t0 + COOKIE_GRACE;
        // Full, from 8 addresses; the first two read their cookie, odd handles
        // have not sent one.
        for i in 0..MAX_PENDING {
            let (id, evicted) = admit(&mut p, ip((i / 8) as u8), i, 0, t0).unwrap();
            assert_eq!(evicted, None);
            if i < 2 {
                assert!(p.cookie_read(id));
            }
        }
        let (new, evicted) = admit(&mut p, ip(100), 1000, 0, later).unwrap();
        assert_eq!(evicted, Some(3), "oldest whose peer sent no cookie");
        assert_eq!(p.total(), MAX_PENDING);
        assert!(!p.contains(3) && p.contains(new));
        assert!(!p.cookie_read(3), "an evicted connection is told so");
        // Within the grace nobody is stalled yet: the oldest goes.
        let (_, evicted) = admit(&mut p, ip(101), 1002, 0, t0).unwrap();
        assert_eq!(evicted, Some(0));
        for id in 4..MAX_PENDING as u64 {
            p.cookie_read(id);
        }
        p.cookie_read(new);
        let (_, evicted) = admit(&mut p, ip(102), 1004, 0, later).unwrap();
        assert_eq!(evicted, Some(1), "all have cookies: the oldest");
        assert!(!p.leave(1)); // its thread ends later; nothing changes
        assert_eq!(p.total(), MAX_PENDING);
    }

    /// Connections whose cookies came in at once, then a new one whose cookie
    /// is still unread (or not yet here): the newcomer stays, the oldest goes.
    #[test]
    fn a_churn_of_cookie_senders_does_not_evict_a_newcomer() {
        let mut p = Pending::default();
        let t0 = Instant::now();
        for i in 0..MAX_PENDING {
            let (id, _) = admit(&mut p, ip((i / 8) as u8), 2 * i, 0, t0).unwrap();
            p.cookie_read(id);
        }
        let t1 = t0 + Duration::from_millis(500);
        let (real, evicted) = admit(&mut p, ip(200), 1, 0, t1).unwrap();
        assert_eq!(evicted, Some(0));
        for k in 0..MAX_PENDING - 1 {
            let at = t1 + Duration::from_millis(3 * k as u64 / 10);
            let (id, evicted) =
                admit(&mut p, ip(100 + (k / 4) as u8), 2 * (1000 + k), 0, at).unwrap();
            assert_ne!(evicted, Some(1), "the newcomer, after {k} more");
            p.cookie_read(id);
        }
        assert!(p.contains(real));
    }
}
