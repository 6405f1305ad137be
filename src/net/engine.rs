//! Runs the data streams of one test: one thread per stream (as iperf3 3.16+),
//! counters behind a mutex per stream (no 64-bit atomics: ARMv5 has none), and a
//! sampler on the controlling thread that turns counters, TCP_INFO and CPU into
//! intervals and totals. Used by both the client and the server.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::cpu::{CpuMeter, CpuUse};
use super::tcp_info;
use super::udp::{self, Header, UdpReceiveStats};
use crate::root::Root;

pub enum DataSocket {
    Tcp(TcpStream),
    Udp(UdpSocket),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SendMethod {
    Copy,
    /// sendfile(2) from a memfd filled once: no user-space copy per block.
    Sendfile,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReceiveMethod {
    Copy,
    /// recv(MSG_TRUNC) on TCP: the kernel discards the data without copying it.
    MsgTrunc,
}

#[derive(Debug, Clone, Copy)]
pub struct StreamConfig {
    pub block_bytes: usize,
    /// Per stream; 0 = unlimited.
    pub rate_bits_per_sec: u64,
    pub udp_counters_64bit: bool,
    pub send: SendMethod,
    pub receive: ReceiveMethod,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Counters {
    pub bytes: u64,
    pub packets: u64,
    pub udp: UdpReceiveStats,
}

pub struct StreamSpec {
    pub id: u32,
    pub sender: bool,
    pub socket: DataSocket,
}

struct Flags {
    stop_send: AtomicBool,
    stop_receive: AtomicBool,
}

struct Stream {
    id: u32,
    sender: bool,
    udp: bool,
    counters: Arc<Mutex<Counters>>,
    handle: Option<JoinHandle<io::Result<()>>>,
    control: Option<TcpStream>,
    prev: Counters,
    prev_retransmits: u32,
    omit_base: Counters,
    omit_retransmits: u32,
    max_rtt_us: u32,
    min_rtt_us: u32,
    rtt_sum_us: u64,
    rtt_samples: u32,
    max_cwnd: u64,
}

/// One stream in one interval, with iperf3's key names.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IntervalStream {
    pub id: u32,
    pub sender: bool,
    pub start: f64,
    pub end: f64,
    pub seconds: f64,
    pub bytes: u64,
    pub bits_per_second: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snd_cwnd: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rttvar: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pmtu: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_percent: Option<f64>,
    pub omitted: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Interval {
    pub streams: Vec<IntervalStream>,
    /// All streams this end sends on (iperf3's `sum`), and those it receives on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum: Option<IntervalSum>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum_received: Option<IntervalSum>,
    pub cpu: CpuUse,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct IntervalSum {
    pub start: f64,
    pub end: f64,
    pub seconds: f64,
    pub bytes: u64,
    pub bits_per_second: f64,
    pub omitted: bool,
}

fn interval_sum<'a>(streams: impl Iterator<Item = &'a IntervalStream>) -> Option<IntervalSum> {
    let mut out: Option<IntervalSum> = None;
    for s in streams {
        let o = out.get_or_insert(IntervalSum {
            start: s.start,
            end: s.end,
            seconds: s.seconds,
            bytes: 0,
            bits_per_second: 0.0,
            omitted: s.omitted,
        });
        o.bytes += s.bytes;
        o.bits_per_second += s.bits_per_second;
    }
    out
}

/// A stream's totals after the omitted warm-up.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamTotals {
    pub id: u32,
    pub sender: bool,
    pub seconds: f64,
    pub bytes: u64,
    pub packets: u64,
    pub lost_packets: u64,
    pub out_of_order: u64,
    pub jitter_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_snd_cwnd: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_rtt: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rtt: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_rtt: Option<u32>,
}

pub struct Engine {
    streams: Vec<Stream>,
    flags: Arc<Flags>,
    started: Instant,
    last_sample: Instant,
    omit_until: Option<Instant>,
    omit_end: Instant,
    /// When the senders were told to stop: the end of the test for the totals,
    /// however long they then take to leave.
    stopped_at: Option<Instant>,
    cpu_interval: CpuMeter,
    cpu_test: CpuMeter,
    root: Root,
}

fn lock(c: &Mutex<Counters>) -> MutexGuard<'_, Counters> {
    // A panicked stream thread leaves plain counters behind; they are still valid.
    c.lock().unwrap_or_else(|p| p.into_inner())
}

/// Current CLOCK_MONOTONIC as (seconds, microseconds), iperf3's send stamp.
fn monotonic_now() -> (u32, u32) {
    // SAFETY: zero is a valid timespec; clock_gettime writes into it.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `ts` is valid and writable.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u32, (ts.tv_nsec / 1000) as u32)
}

/// Waits until `bytes` are due at `rate` bits/s since `started`, the test's start;
/// false if told to stop meanwhile. As iperf3 -b, the rate is an average from the
/// start, so a thread that started late on a busy box catches up instead of falling
/// short over the test's window (150 ms late was 5 % of a 3 s test here). The wait
/// parks, so [`Engine::stop`] ends it at once: a sleep held a 1 Mbit/s stream of
/// 128 KiB blocks for up to a second after the stop, and then sent one more block.
fn pace(started: Instant, bytes: u64, rate: u64, flags: &Flags) -> bool {
    if rate == 0 {
        return true;
    }
    let due = Duration::from_secs_f64(bytes as f64 * 8.0 / rate as f64);
    loop {
        if flags.stop_send.load(Ordering::Relaxed) {
            return false;
        }
        let elapsed = started.elapsed();
        if due <= elapsed {
            return true;
        }
        // Wakes early on unpark (or spuriously); the loop looks again.
        std::thread::park_timeout(due - elapsed);
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// A memfd holding one block, for sendfile; `None` if memfd or sendfile is unavailable.
fn block_memfd(len: usize) -> Option<OwnedFd> {
    // SAFETY: a constant NUL-terminated name; the returned fd is owned below.
    let fd = unsafe { libc::memfd_create(c"nastune-block".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` is a fresh descriptor we own.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut file = std::fs::File::from(owned);
    let pattern: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    file.write_all(&pattern).ok()?;
    Some(OwnedFd::from(file))
}

fn tcp_send(
    mut sock: TcpStream,
    cfg: StreamConfig,
    started: Instant,
    flags: &Flags,
    counters: &Mutex<Counters>,
) -> io::Result<()> {
    let memfd = match cfg.send {
        SendMethod::Sendfile => block_memfd(cfg.block_bytes),
        SendMethod::Copy => None,
    };
    let buf: Vec<u8> = (0..cfg.block_bytes).map(|i| (i % 251) as u8).collect();
    let mut sent: u64 = 0;
    while !flags.stop_send.load(Ordering::Relaxed) {
        if !pace(started, sent, cfg.rate_bits_per_sec, flags) {
            break;
        }
        let n = match &memfd {
            Some(fd) => {
                let mut off: libc::off_t = 0;
                // SAFETY: both descriptors are open for the duration of the call.
                let n = unsafe {
                    libc::sendfile(sock.as_raw_fd(), fd.as_raw_fd(), &mut off, cfg.block_bytes)
                };
                if n < 0 {
                    let e = io::Error::last_os_error();
                    if e.kind() == io::ErrorKind::Interrupted {
                        continue;
                    }
                    return finish_send(e, flags);
                }
                n as usize
            }
            None => match sock.write(&buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return finish_send(e, flags),
            },
        };
        if n == 0 {
            break;
        }
        sent += n as u64;
        lock(counters).bytes += n as u64;
    }
    Ok(())
}

/// A write error after we were told to stop (the socket was shut down) is the stop.
fn finish_send(e: io::Error, flags: &Flags) -> io::Result<()> {
    if flags.stop_send.load(Ordering::Relaxed) || is_timeout(&e) {
        Ok(())
    } else {
        Err(e)
    }
}

fn tcp_receive(
    mut sock: TcpStream,
    cfg: StreamConfig,
    flags: &Flags,
    counters: &Mutex<Counters>,
) -> io::Result<()> {
    sock.set_read_timeout(Some(Duration::from_millis(100)))?;
    let mut buf = vec![0u8; cfg.block_bytes.max(4096)];
    loop {
        let r = match cfg.receive {
            ReceiveMethod::MsgTrunc => {
                // SAFETY: `buf` is valid for its length; with MSG_TRUNC the kernel
                // discards the bytes instead of copying them.
                let n = unsafe {
                    libc::recv(
                        sock.as_raw_fd(),
                        buf.as_mut_ptr().cast(),
                        buf.len(),
                        libc::MSG_TRUNC,
                    )
                };
                if n < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(n as usize)
                }
            }
            ReceiveMethod::Copy => sock.read(&mut buf),
        };
        match r {
            Ok(0) => return Ok(()),
            Ok(n) => lock(counters).bytes += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) => {
                // Idle for 100 ms after the stop: everything in flight has arrived.
                if flags.stop_receive.load(Ordering::Relaxed) {
                    return Ok(());
                }
            }
            Err(e) => {
                return if flags.stop_receive.load(Ordering::Relaxed) {
                    Ok(())
                } else {
                    Err(e)
                };
            }
        }
    }
}

fn udp_send(
    sock: UdpSocket,
    cfg: StreamConfig,
    started: Instant,
    flags: &Flags,
    counters: &Mutex<Counters>,
) -> io::Result<()> {
    let mut buf: Vec<u8> = (0..cfg.block_bytes).map(|i| (i % 251) as u8).collect();
    let mut packets: u64 = 0;
    let mut sent: u64 = 0;
    while !flags.stop_send.load(Ordering::Relaxed) {
        if !pace(started, sent, cfg.rate_bits_per_sec, flags) {
            break;
        }
        packets += 1;
        let (sec, usec) = monotonic_now();
        udp::encode_header(
            Header {
                sec,
                usec,
                count: packets,
            },
            cfg.udp_counters_64bit,
            &mut buf,
        );
        match sock.send(&buf) {
            Ok(n) => {
                sent += n as u64;
                let mut c = lock(counters);
                c.bytes += n as u64;
                c.packets = packets;
            }
            // A full socket buffer or a transient ICMP error: iperf3 counts the
            // datagram as not sent and carries on.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::ConnectionRefused
                        | io::ErrorKind::Interrupted
                ) || e.raw_os_error() == Some(libc::ENOBUFS) =>
            {
                packets -= 1;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn udp_receive(
    sock: UdpSocket,
    cfg: StreamConfig,
    flags: &Flags,
    counters: &Mutex<Counters>,
) -> io::Result<()> {
    sock.set_read_timeout(Some(Duration::from_millis(100)))?;
    let mut buf = vec![0u8; 65_536];
    loop {
        match sock.recv(&mut buf) {
            Ok(n) => {
                let (sec, usec) = monotonic_now();
                let arrival = f64::from(sec) + f64::from(usec) / 1e6;
                let mut c = lock(counters);
                c.bytes += n as u64;
                if let Some(h) = udp::decode_header(&buf[..n], cfg.udp_counters_64bit) {
                    c.udp.record(h, arrival);
                    c.packets = c.udp.highest;
                }
            }
            Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {
                if flags.stop_receive.load(Ordering::Relaxed) {
                    return Ok(());
                }
            }
            // ICMP port unreachable from a peer that already left.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                if flags.stop_receive.load(Ordering::Relaxed) {
                    return Ok(());
                }
            }
            Err(e) => return Err(e),
        }
    }
}

fn minus(a: &Counters, b: &Counters) -> Counters {
    Counters {
        bytes: a.bytes.saturating_sub(b.bytes),
        packets: a.packets.saturating_sub(b.packets),
        udp: {
            let mut u = a.udp;
            u.lost = a.udp.lost.saturating_sub(b.udp.lost);
            u.out_of_order = a.udp.out_of_order.saturating_sub(b.udp.out_of_order);
            u
        },
    }
}

fn lost_percent(lost: u64, packets: u64) -> f64 {
    if packets == 0 {
        0.0
    } else {
        100.0 * lost as f64 / packets as f64
    }
}

impl Engine {
    /// Starts one thread per stream now; `omit` seconds of warm-up are excluded from totals.
    pub fn start(
        specs: Vec<StreamSpec>,
        cfg: StreamConfig,
        omit: Duration,
        root: Root,
    ) -> io::Result<Engine> {
        let flags = Arc::new(Flags {
            stop_send: AtomicBool::new(false),
            stop_receive: AtomicBool::new(false),
        });
        // The test starts before its threads do: they pace from here.
        let now = Instant::now();
        let mut streams = Vec::with_capacity(specs.len());
        for spec in specs {
            let counters = Arc::new(Mutex::new(Counters::default()));
            let (c, f) = (Arc::clone(&counters), Arc::clone(&flags));
            let (control, udp) = match &spec.socket {
                DataSocket::Tcp(s) => (Some(s.try_clone()?), false),
                DataSocket::Udp(_) => (None, true),
            };
            let sender = spec.sender;
            let handle = std::thread::Builder::new()
                .name(format!("stream-{}", spec.id))
                .spawn(move || match (spec.socket, sender) {
                    (DataSocket::Tcp(s), true) => tcp_send(s, cfg, now, &f, &c),
                    (DataSocket::Tcp(s), false) => tcp_receive(s, cfg, &f, &c),
                    (DataSocket::Udp(s), true) => udp_send(s, cfg, now, &f, &c),
                    (DataSocket::Udp(s), false) => udp_receive(s, cfg, &f, &c),
                })?;
            streams.push(Stream {
                id: spec.id,
                sender,
                udp,
                counters,
                handle: Some(handle),
                control,
                prev: Counters::default(),
                prev_retransmits: 0,
                omit_base: Counters::default(),
                omit_retransmits: 0,
                max_rtt_us: 0,
                min_rtt_us: u32::MAX,
                rtt_sum_us: 0,
                rtt_samples: 0,
                max_cwnd: 0,
            });
        }
        Ok(Engine {
            streams,
            flags,
            started: now,
            last_sample: now,
            omit_until: (!omit.is_zero()).then(|| now + omit),
            omit_end: now + omit,
            stopped_at: None,
            cpu_interval: CpuMeter::start(&root),
            cpu_test: CpuMeter::start(&root),
            root,
        })
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Whether the warm-up is still running.
    pub fn in_omit(&self) -> bool {
        self.omit_until.is_some_and(|t| Instant::now() < t)
    }

    /// Ends the warm-up when it is due: totals count from here. Call often (every
    /// ≤ 100 ms) so both ends cut at nearly the same moment.
    pub fn poll_omit(&mut self) {
        let now = Instant::now();
        if self.omit_until.is_some_and(|t| now >= t) {
            self.omit_until = None;
            self.omit_end = now;
            for s in &mut self.streams {
                s.omit_base = *lock(&s.counters);
                s.omit_retransmits = s
                    .control
                    .as_ref()
                    .and_then(tcp_info::read)
                    .map_or(0, |i| i.total_retransmits);
            }
            self.cpu_test = CpuMeter::start(&self.root);
        }
    }

    /// One interval since the previous sample.
    pub fn sample(&mut self) -> Interval {
        let now = Instant::now();
        let start = self.last_sample.duration_since(self.started).as_secs_f64();
        let end = now.duration_since(self.started).as_secs_f64();
        let seconds = (end - start).max(1e-9);
        let omitted = self.omit_until.is_some() || self.last_sample < self.omit_end;
        let mut out = Vec::with_capacity(self.streams.len());
        for s in &mut self.streams {
            let cur = *lock(&s.counters);
            let d = minus(&cur, &s.prev);
            let info = s.control.as_ref().and_then(tcp_info::read);
            if let Some(i) = info {
                if s.sender {
                    s.max_cwnd = s.max_cwnd.max(i.snd_cwnd_bytes);
                }
                if i.rtt_us > 0 && !omitted {
                    s.max_rtt_us = s.max_rtt_us.max(i.rtt_us);
                    s.min_rtt_us = s.min_rtt_us.min(i.rtt_us);
                    s.rtt_sum_us += u64::from(i.rtt_us);
                    s.rtt_samples += 1;
                }
            }
            let retransmits = info.map(|i| i.total_retransmits.saturating_sub(s.prev_retransmits));
            if let Some(i) = info {
                s.prev_retransmits = i.total_retransmits;
            }
            let udp_rx = s.udp && !s.sender;
            out.push(IntervalStream {
                id: s.id,
                sender: s.sender,
                start,
                end,
                seconds,
                bytes: d.bytes,
                bits_per_second: d.bytes as f64 * 8.0 / seconds,
                retransmits: retransmits.filter(|_| s.sender),
                snd_cwnd: info.map(|i| i.snd_cwnd_bytes).filter(|_| s.sender),
                rtt: info.map(|i| i.rtt_us),
                rttvar: info.map(|i| i.rttvar_us),
                pmtu: info.map(|i| i.pmtu_bytes),
                jitter_ms: udp_rx.then_some(cur.udp.jitter_secs * 1000.0),
                lost_packets: udp_rx.then_some(d.udp.lost),
                packets: s.udp.then_some(d.packets),
                lost_percent: udp_rx.then(|| lost_percent(d.udp.lost, d.packets)),
                omitted,
            });
            s.prev = cur;
        }
        self.last_sample = now;
        self.poll_omit();
        Interval {
            sum: interval_sum(out.iter().filter(|s| s.sender)),
            sum_received: interval_sum(out.iter().filter(|s| !s.sender)),
            streams: out,
            cpu: self.cpu_interval.lap(&self.root),
        }
    }

    /// Tells the sending threads to stop, without waiting for them: the test ends
    /// here (the first call counts).
    pub fn stop(&mut self) {
        self.poll_omit();
        self.stopped_at.get_or_insert_with(Instant::now);
        self.flags.stop_send.store(true, Ordering::Relaxed);
        // A paced sender waits parked; the flag is seen once it wakes.
        for h in self.streams.iter().filter_map(|s| s.handle.as_ref()) {
            h.thread().unpark();
        }
    }

    /// Stops the sending threads and waits for them; a sender blocked in a full
    /// socket is shut down.
    pub fn stop_senders(&mut self) {
        self.stop();
        let deadline = Instant::now() + Duration::from_millis(500);
        for s in self.streams.iter_mut().filter(|s| s.sender) {
            while s.handle.as_ref().is_some_and(|h| !h.is_finished()) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
            if s.handle.as_ref().is_some_and(|h| !h.is_finished())
                && let Some(c) = &s.control
            {
                let _ = c.shutdown(Shutdown::Write);
            }
        }
    }

    /// Lets receivers take what is still in flight (until EOF or 100 ms idle,
    /// at most `max`), then shuts everything down and returns the totals.
    pub fn finish(&mut self, max: Duration) -> (Vec<StreamTotals>, CpuUse, Vec<String>) {
        // The test ends when the senders were stopped (now, unless they already
        // were); draining only collects bytes already sent.
        self.stop_senders();
        let end = self.stopped_at.unwrap_or_else(Instant::now);
        self.flags.stop_receive.store(true, Ordering::Relaxed);
        let deadline = Instant::now() + max;
        for s in &self.streams {
            while s.handle.as_ref().is_some_and(|h| !h.is_finished()) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        let cpu = self.cpu_test.lap(&self.root);
        let mut errors = Vec::new();
        let mut totals = Vec::with_capacity(self.streams.len());
        for s in &mut self.streams {
            let cur = *lock(&s.counters);
            let info = s.control.as_ref().and_then(tcp_info::read);
            if let Some(c) = &s.control {
                let _ = c.shutdown(Shutdown::Both);
            }
            if let Some(h) = s.handle.take() {
                match h.join() {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => errors.push(format!("stream {}: {e}", s.id)),
                    Err(_) => errors.push(format!("stream {}: thread panicked", s.id)),
                }
            }
            let d = minus(&cur, &s.omit_base);
            let tcp = s.control.is_some();
            totals.push(StreamTotals {
                id: s.id,
                sender: s.sender,
                seconds: end.saturating_duration_since(self.omit_end).as_secs_f64(),
                bytes: d.bytes,
                packets: d.packets,
                lost_packets: d.udp.lost,
                out_of_order: d.udp.out_of_order,
                jitter_ms: cur.udp.jitter_secs * 1000.0,
                retransmits: info
                    .filter(|_| s.sender)
                    .map(|i| i.total_retransmits.saturating_sub(s.omit_retransmits)),
                max_snd_cwnd: (tcp && s.sender).then_some(s.max_cwnd),
                max_rtt: (s.rtt_samples > 0).then_some(s.max_rtt_us),
                min_rtt: (s.rtt_samples > 0).then_some(s.min_rtt_us),
                mean_rtt: (s.rtt_samples > 0)
                    .then(|| (s.rtt_sum_us / u64::from(s.rtt_samples)) as u32),
            });
        }
        (totals, cpu, errors)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.flags.stop_send.store(true, Ordering::Relaxed);
        self.flags.stop_receive.store(true, Ordering::Relaxed);
        for s in &self.streams {
            if let Some(h) = &s.handle {
                h.thread().unpark();
            }
            if let Some(c) = &s.control {
                let _ = c.shutdown(Shutdown::Both);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// 128 KiB blocks at 1 Mbit/s: the second is due 1.05 s after the first. The
    /// stop must end that wait at once (a sleep held it until the 500 ms deadline
    /// and a shutdown), and the sender's clock ends at the stop.
    #[test]
    fn a_paced_sender_stops_at_once_and_its_clock_ends_at_the_stop() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let tx = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_rx, _) = listener.accept().unwrap();
        let block = 128 * 1024;
        let cfg = StreamConfig {
            block_bytes: block,
            rate_bits_per_sec: 1_000_000,
            udp_counters_64bit: false,
            send: SendMethod::Copy,
            receive: ReceiveMethod::Copy,
        };
        let spec = StreamSpec {
            id: 1,
            sender: true,
            socket: DataSocket::Tcp(tx),
        };
        let mut engine = Engine::start(vec![spec], cfg, Duration::ZERO, Root::live()).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let asked = Instant::now();
        engine.stop_senders();
        let took = asked.elapsed();
        assert!(took < Duration::from_millis(100), "the stop took {took:?}");
        let (totals, _, errors) = engine.finish(Duration::from_millis(10));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(totals[0].bytes, block as u64, "one block, then the stop");
        // ~0.2 s from the first write to the stop; the sender's wait (1.05 s) and
        // its leaving do not count.
        let secs = totals[0].seconds;
        assert!((0.15..0.4).contains(&secs), "{secs} s");
    }
}
