//! Limits on connections that have not finished their handshake, so slow or
//! silent peers cannot hold what a real test needs: one deadline for the whole
//! handshake (a per-read timeout restarts with every byte, so a peer dripping one
//! byte every few seconds would never time out), and a count of such
//! connections, in total and per source address.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, TcpStream};
use std::time::{Duration, Instant};

/// Default time from accept to complete parameters (cookie, key, parameters),
/// and for a data connection to send its cookie.
pub const HANDSHAKE_DEADLINE_SECS: u32 = 5;
/// Connections in their handshake over all peers: each holds a thread. When
/// full, the server stops accepting (the kernel queues new connections) instead
/// of refusing them, so a client waits at most one deadline for room.
pub const MAX_PENDING: usize = 64;
/// Connections in their handshake from one source address, so one host cannot
/// take every pending place; more from that address are closed at once.
pub const MAX_PENDING_PER_ADDR: usize = 8;

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

/// Connections in their handshake, in total and per source address.
#[derive(Debug, Default)]
pub struct Pending {
    total: usize,
    per_addr: HashMap<IpAddr, usize>,
}

impl Pending {
    pub fn total(&self) -> usize {
        self.total
    }

    /// Counts a new connection from `ip` unless that address already has
    /// `per_addr` in their handshake. `expected` more are allowed for data
    /// connections that an authenticated session from `ip` is waiting for, so
    /// a test with many streams is not cut short by the bound.
    pub fn enter(&mut self, ip: IpAddr, per_addr: usize, expected: usize) -> bool {
        let n = self.per_addr.entry(ip).or_insert(0);
        if *n >= per_addr.saturating_add(expected) {
            return false;
        }
        *n += 1;
        self.total += 1;
        true
    }

    pub fn leave(&mut self, ip: IpAddr) {
        if let Some(n) = self.per_addr.get_mut(&ip) {
            *n -= 1;
            self.total -= 1;
            if *n == 0 {
                self.per_addr.remove(&ip);
            }
        }
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

    #[test]
    fn pending_is_bounded_per_address_and_counted_in_total() {
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let mut p = Pending::default();
        for _ in 0..MAX_PENDING_PER_ADDR {
            assert!(p.enter(a, MAX_PENDING_PER_ADDR, 0));
        }
        assert!(
            !p.enter(a, MAX_PENDING_PER_ADDR, 0),
            "a ninth from one address"
        );
        assert!(
            p.enter(b, MAX_PENDING_PER_ADDR, 0),
            "another address still gets in"
        );
        assert_eq!(p.total(), MAX_PENDING_PER_ADDR + 1);
        // Data connections an authenticated session waits for get room beyond the bound.
        assert!(p.enter(a, MAX_PENDING_PER_ADDR, 2));
        assert!(p.enter(a, MAX_PENDING_PER_ADDR, 2));
        assert!(!p.enter(a, MAX_PENDING_PER_ADDR, 2));
        p.leave(a);
        assert!(
            p.enter(a, MAX_PENDING_PER_ADDR, 2),
            "room again after one left"
        );
        for _ in 0..(MAX_PENDING_PER_ADDR + 2) {
            p.leave(a);
        }
        p.leave(b);
        p.leave(b); // an unknown address changes nothing
        assert_eq!(p.total(), 0);
        assert!(p.per_addr.is_empty());
    }
}
