//! One load thread: its own epoll loop over its share of the connections, each
//! connection a small state machine (connect, TLS handshake, send, receive),
//! rustls driven sans-IO on the non-blocking socket. Closed loop: a connection
//! sends its next request when the response ends. Open loop (`rate`): requests
//! are due at fixed intended times and their latency counts from that time, so
//! a stalled server cannot hide queueing (no coordinated omission).
//!
//! The hot path allocates nothing: one read buffer per thread, the request
//! bytes shared, the response head copied into a buffer each connection keeps.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;

use super::parser::{ParseError, Progress, ResponseParser};
use super::poll::{self, Poll};
use super::tls::{self, TlsInfo};
use crate::bench::histogram::Histogram;

/// How requests map to connections.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum ConnMode {
    /// Many requests per connection (HTTP/1.1 keep-alive).
    KeepAlive,
    /// A new connection (and full TLS handshake) per request.
    Close,
    /// A new connection per request, resuming the TLS session (ticket or ID).
    Resume,
}

impl ConnMode {
    pub fn name(self) -> &'static str {
        match self {
            ConnMode::KeepAlive => "keep-alive",
            ConnMode::Close => "close",
            ConnMode::Resume => "resume",
        }
    }
}

/// What one thread does.
#[derive(Clone)]
pub struct ThreadPlan {
    pub addr: SocketAddr,
    pub tls: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
    pub verified: bool,
    pub request: Arc<[u8]>,
    pub head_request: bool,
    pub mode: ConnMode,
    pub connections: usize,
    /// Requests per second for this thread (open loop); None = closed loop.
    pub rate: Option<f64>,
    /// Load starts at `start`; results count from `start + warmup` to `end`.
    pub start: Instant,
    pub warmup: Duration,
    pub end: Instant,
    pub timeout: Duration,
    /// Stop at the first response or error and return the error (the pre-flight request).
    pub first_only: bool,
}

/// Why a connection failed; counted by kind during the load, shown whole when
/// the pre-flight request fails.
#[derive(Debug, thiserror::Error)]
pub enum ConnError {
    #[error("cannot connect to '{addr}': {error}{}", connect_hint(error))]
    Connect { addr: SocketAddr, error: io::Error },
    #[error(
        "TLS handshake with '{addr}' failed: {}{}",
        tls_text(error),
        tls_hint(error)
    )]
    Tls {
        addr: SocketAddr,
        error: rustls::Error,
    },
    #[error("reading from '{addr}' failed: {error}")]
    Read { addr: SocketAddr, error: io::Error },
    #[error("sending to '{addr}' failed: {error}")]
    Write { addr: SocketAddr, error: io::Error },
    /// Not one byte for the whole --timeout.
    #[error(
        "'{addr}' sent nothing for {secs} s while {phase} ({received} bytes of the response had arrived before); raise --timeout if the server is just slow"
    )]
    Timeout {
        addr: SocketAddr,
        phase: &'static str,
        secs: f64,
        received: u64,
    },
    /// Progress, but no end: a server that trickles bytes, sends chunks or
    /// interim responses forever, or announces a body it never finishes.
    #[error(
        "'{addr}' did not complete a response within {secs} s although bytes kept coming ({received} received, still {phase}): an endless or trickling response, or raise --timeout if it is just that long"
    )]
    Deadline {
        addr: SocketAddr,
        phase: &'static str,
        secs: f64,
        received: u64,
    },
    #[error("'{addr}' sent a malformed response: {error}")]
    Parse { addr: SocketAddr, error: ParseError },
    #[error("'{addr}' closed the connection before a response; is this port speaking {}?", if *.tls { "TLS (try http://)" } else { "plain HTTP (try https://)" })]
    Closed { addr: SocketAddr, tls: bool },
}

fn connect_hint(e: &io::Error) -> &'static str {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => "; is the server running and listening on that port?",
        io::ErrorKind::HostUnreachable | io::ErrorKind::NetworkUnreachable => {
            "; check the address and the route to it"
        }
        _ => "",
    }
}

/// Our own refusal of a --cacert certificate, which rustls would show as Debug.
fn pin_error(e: &rustls::Error) -> Option<&tls::PinError> {
    match e {
        rustls::Error::InvalidCertificate(rustls::CertificateError::Other(o)) => {
            o.0.downcast_ref::<tls::PinError>()
        }
        _ => None,
    }
}

fn tls_text(e: &rustls::Error) -> String {
    match pin_error(e) {
        Some(pin) => format!("invalid peer certificate: {pin}"),
        None => e.to_string(),
    }
}

fn tls_hint(e: &rustls::Error) -> &'static str {
    match e {
        // Already says what to do about the certificate given by --cacert.
        _ if pin_error(e).is_some() => "",
        rustls::Error::InvalidCertificate(_) => {
            "; give the server's CA with --cacert FILE, or --insecure for a self-signed home server"
        }
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
            "; is this port speaking TLS?"
        }
        _ => "",
    }
}

/// Error kinds counted during the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    Connect,
    Tls,
    Read,
    Write,
    Timeout,
    Parse,
    Closed,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 7] = [
        ErrorKind::Connect,
        ErrorKind::Tls,
        ErrorKind::Read,
        ErrorKind::Write,
        ErrorKind::Timeout,
        ErrorKind::Parse,
        ErrorKind::Closed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Tls => "tls",
            ErrorKind::Read => "read",
            ErrorKind::Write => "write",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Parse => "parse",
            ErrorKind::Closed => "closed",
        }
    }
}

impl ConnError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            ConnError::Connect { .. } => ErrorKind::Connect,
            ConnError::Tls { .. } => ErrorKind::Tls,
            ConnError::Read { .. } => ErrorKind::Read,
            ConnError::Write { .. } => ErrorKind::Write,
            ConnError::Timeout { .. } | ConnError::Deadline { .. } => ErrorKind::Timeout,
            ConnError::Parse { .. } => ErrorKind::Parse,
            ConnError::Closed { .. } => ErrorKind::Closed,
        }
    }
}

/// Where a request stood when the run ended without its response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InFlight {
    Connecting,
    TlsHandshake,
    Sending,
    /// Sent, no byte of the response yet.
    AwaitingResponse,
    /// Part of the response arrived.
    ReadingResponse,
}

impl InFlight {
    pub const ALL: [InFlight; 5] = [
        InFlight::Connecting,
        InFlight::TlsHandshake,
        InFlight::Sending,
        InFlight::AwaitingResponse,
        InFlight::ReadingResponse,
    ];

    pub fn name(self) -> &'static str {
        match self {
            InFlight::Connecting => "connecting",
            InFlight::TlsHandshake => "tls_handshake",
            InFlight::Sending => "sending",
            InFlight::AwaitingResponse => "awaiting_response",
            InFlight::ReadingResponse => "reading_response",
        }
    }

    /// The words for a timeout message.
    fn doing(self) -> &'static str {
        match self {
            InFlight::Connecting => "connecting",
            InFlight::TlsHandshake => "in the TLS handshake",
            InFlight::Sending => "sending",
            InFlight::AwaitingResponse => "waiting for the response",
            InFlight::ReadingResponse => "reading the response",
        }
    }
}

/// Status classes counted: 1xx to 5xx, then anything else the status line
/// allows (600 to 999), which is no class RFC 9110 defines.
pub const STATUS_CLASSES: [&str; 6] = ["1xx", "2xx", "3xx", "4xx", "5xx", "unknown"];

fn status_class(status: u16) -> usize {
    match status / 100 {
        c @ 1..=5 => usize::from(c) - 1,
        _ => STATUS_CLASSES.len() - 1,
    }
}

/// What one thread measured.
#[derive(Debug, Clone, Default)]
pub struct ThreadResult {
    pub connect_ns: Histogram,
    pub tls_handshake_ns: Histogram,
    pub ttfb_ns: Histogram,
    pub total_ns: Histogram,
    /// Responses by class, as in `STATUS_CLASSES`.
    pub status_classes: [u64; STATUS_CLASSES.len()],
    /// Requests the end of the run cut off, by where they stood.
    pub in_flight_at_end: [u64; InFlight::ALL.len()],
    pub errors: [u64; ErrorKind::ALL.len()],
    /// The first message of each error kind, for the report.
    pub error_examples: Vec<String>,
    pub body_bytes: u64,
    pub connections_opened: u64,
    pub handshakes_full: u64,
    pub handshakes_resumed: u64,
    /// Open loop: requests due in the measured window, and how many of them were sent.
    pub requests_due: u64,
    pub requests_late: u64,
    pub tls_info: Option<TlsInfo>,
    pub first_error: Option<String>,
}

impl ThreadResult {
    pub fn responses(&self) -> u64 {
        self.status_classes.iter().sum()
    }

    pub fn merge(&mut self, o: &ThreadResult) {
        self.connect_ns.merge(&o.connect_ns);
        self.tls_handshake_ns.merge(&o.tls_handshake_ns);
        self.ttfb_ns.merge(&o.ttfb_ns);
        self.total_ns.merge(&o.total_ns);
        for (a, b) in self.status_classes.iter_mut().zip(o.status_classes) {
            *a += b;
        }
        for (a, b) in self.errors.iter_mut().zip(o.errors) {
            *a += b;
        }
        for (a, b) in self.in_flight_at_end.iter_mut().zip(o.in_flight_at_end) {
            *a += b;
        }
        for e in &o.error_examples {
            if self.error_examples.len() < ErrorKind::ALL.len() && !self.error_examples.contains(e)
            {
                self.error_examples.push(e.clone());
            }
        }
        self.body_bytes += o.body_bytes;
        self.connections_opened += o.connections_opened;
        self.handshakes_full += o.handshakes_full;
        self.handshakes_resumed += o.handshakes_resumed;
        self.requests_due += o.requests_due;
        self.requests_late += o.requests_late;
        if self.tls_info.is_none() {
            self.tls_info.clone_from(&o.tls_info);
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No socket.
    Closed,
    Connecting,
    Handshaking,
    Sending,
    Receiving,
    /// Connected, waiting for the open-loop schedule.
    Idle,
}

struct Conn {
    sock: Option<TcpStream>,
    tls: Option<rustls::ClientConnection>,
    phase: Phase,
    parser: ResponseParser,
    written: usize,
    /// The request this connection carries started at (intended time in open loop).
    request_start: Option<Instant>,
    connect_start: Instant,
    connected_at: Instant,
    sent_at: Instant,
    first_byte: bool,
    /// Bytes of the current response so far (after TLS), for the timeout errors.
    received: u64,
    last_progress: Instant,
    /// The connection took its current request then; --timeout bounds the
    /// whole request from here, not only the gaps between bytes.
    busy_since: Instant,
    /// Closed connections retry no earlier than this (no spinning on refusals).
    retry_at: Instant,
}

const READ_BUF: usize = 64 * 1024;
const RETRY_DELAY: Duration = Duration::from_millis(10);
const SCAN_EVERY: Duration = Duration::from_millis(20);

struct Worker<'a> {
    plan: &'a ThreadPlan,
    poll: Poll,
    conns: Vec<Conn>,
    buf: Vec<u8>,
    ready: Vec<(u64, u32)>,
    result: ThreadResult,
    measure_from: Instant,
    /// Open loop: index of the next request on the schedule, and the period.
    next_due: u64,
    period: Option<Duration>,
    done: bool,
    first_error: Option<ConnError>,
}

/// Runs one thread's load until `plan.end` (or an interrupt); with
/// `first_only`, until the first response, returning the first error instead.
pub fn run(plan: &ThreadPlan) -> Result<ThreadResult, ConnError> {
    let now = Instant::now();
    let n = if plan.first_only { 1 } else { plan.connections };
    let mut w = Worker {
        plan,
        poll: Poll::new(n.min(1024)).map_err(|error| ConnError::Connect {
            addr: plan.addr,
            error,
        })?,
        conns: (0..n)
            .map(|_| Conn {
                sock: None,
                tls: None,
                phase: Phase::Closed,
                parser: ResponseParser::new(),
                written: 0,
                request_start: None,
                connect_start: now,
                connected_at: now,
                sent_at: now,
                first_byte: false,
                received: 0,
                last_progress: now,
                busy_since: now,
                retry_at: now,
            })
            .collect(),
        buf: vec![0; READ_BUF],
        ready: Vec::with_capacity(n.min(1024)),
        result: ThreadResult::default(),
        measure_from: plan.start + plan.warmup,
        next_due: 0,
        period: plan
            .rate
            .filter(|r| *r > 0.0)
            .map(|r| Duration::from_secs_f64(1.0 / r)),
        done: false,
        first_error: None,
    };
    w.result.error_examples = Vec::with_capacity(ErrorKind::ALL.len());
    w.event_loop();
    if plan.first_only && !w.done && !crate::bench::interrupt::interrupted() {
        // The loop ends at `end`, as --timeout runs out: say how this request
        // stood then, silent or still receiving.
        let now = Instant::now();
        w.first_error = (0..w.conns.len()).find_map(|i| w.timeout_error(i, now, true));
    }
    w.count_unsent();
    w.count_in_flight();
    if let Some(e) = w.first_error {
        return Err(e);
    }
    Ok(w.result)
}

impl Worker<'_> {
    fn event_loop(&mut self) {
        // The load starts at `start`, the same moment on every thread.
        std::thread::sleep(self.plan.start.saturating_duration_since(Instant::now()));
        let mut next_scan = Instant::now();
        loop {
            let now = Instant::now();
            if now >= self.plan.end || self.done || crate::bench::interrupt::interrupted() {
                break;
            }
            if now >= next_scan {
                self.scan(now);
                next_scan = now + SCAN_EVERY;
            }
            if self.period.is_some() {
                self.dispatch_due(now);
            }
            let mut wake = next_scan.min(self.plan.end);
            if let Some(due) = self.due_time(self.next_due) {
                wake = wake.min(due);
            }
            let ms = wake
                .saturating_duration_since(now)
                .as_micros()
                .div_ceil(1000) as i32;
            // Copy the ready list out so that connections can be driven while
            // `poll` is borrowed no more; `ready` keeps its capacity.
            match self.poll.wait(ms) {
                Ok(it) => {
                    self.ready.clear();
                    self.ready.extend(it);
                }
                Err(_) => break,
            }
            for k in 0..self.ready.len() {
                let (token, flags) = self.ready[k];
                self.drive(token as usize, flags);
            }
        }
    }

    fn due_time(&self, k: u64) -> Option<Instant> {
        let period = self.period?;
        Some(self.plan.start + period.mul_f64(k as f64))
    }

    /// Open loop: hand every request whose time has come to a free connection.
    fn dispatch_due(&mut self, now: Instant) {
        while let Some(due) = self.due_time(self.next_due) {
            if due > now {
                break;
            }
            let free = self.conns.iter().position(|c| {
                c.request_start.is_none() && matches!(c.phase, Phase::Idle | Phase::Closed)
            });
            let Some(i) = free else {
                break; // all busy: the request waits, its latency already counting
            };
            self.next_due += 1;
            if due >= self.measure_from {
                self.result.requests_due += 1;
                if now.duration_since(due) > Duration::from_millis(1) {
                    self.result.requests_late += 1;
                }
            }
            self.assign(i, due, now);
        }
    }

    /// Open loop: requests due in the window that never found a free
    /// connection are due and late all the same (the server fell behind).
    fn count_unsent(&mut self) {
        let end = self.plan.end.min(Instant::now());
        while let Some(due) = self.due_time(self.next_due) {
            if due >= end {
                break;
            }
            self.next_due += 1;
            if due >= self.measure_from {
                self.result.requests_due += 1;
                self.result.requests_late += 1;
            }
        }
    }

    /// Where connection `i` stands, if it is busy with a request.
    fn in_flight(&self, i: usize) -> Option<InFlight> {
        let c = &self.conns[i];
        Some(match c.phase {
            Phase::Connecting => InFlight::Connecting,
            Phase::Handshaking => InFlight::TlsHandshake,
            Phase::Sending => InFlight::Sending,
            Phase::Receiving if c.first_byte => InFlight::ReadingResponse,
            Phase::Receiving => InFlight::AwaitingResponse,
            Phase::Closed | Phase::Idle => return None,
        })
    }

    /// Requests still open when the run ends are counted where they stood,
    /// those begun in the warm-up too: a server that never finishes a
    /// response shows up here even when the run is shorter than --timeout.
    fn count_in_flight(&mut self) {
        if self.plan.first_only {
            return;
        }
        for i in 0..self.conns.len() {
            let carrying = self.conns[i].request_start.is_some();
            if let Some(at) = self.in_flight(i).filter(|_| carrying) {
                self.result.in_flight_at_end[at as usize] += 1;
            }
        }
    }

    /// Gives connection `i` a request that started at `start`.
    fn assign(&mut self, i: usize, start: Instant, now: Instant) {
        self.conns[i].request_start = Some(start);
        self.conns[i].busy_since = now;
        if self.conns[i].phase == Phase::Idle {
            self.begin_send(i, now);
        } else {
            self.connect(i, now);
        }
    }

    /// The timeout connection `i` has run into at `now`, if it is busy and past
    /// --timeout (or, `at_end`, whatever it is doing when the time is up): no
    /// byte for the whole time, or bytes that never made a response.
    fn timeout_error(&self, i: usize, now: Instant, at_end: bool) -> Option<ConnError> {
        let c = &self.conns[i];
        let phase = self.in_flight(i)?.doing();
        let (addr, secs, received) = (self.plan.addr, self.plan.timeout.as_secs_f64(), c.received);
        let limit = self.plan.timeout;
        // Connecting and sending are progress too, so a server that never
        // answers reaches the whole-request limit (or the pre-flight's end,
        // --timeout after its start) a few milliseconds before the silence
        // limit: with no byte of the response that is still silence.
        let over = at_end || now.duration_since(c.busy_since) >= limit;
        if now.duration_since(c.last_progress) >= limit || (received == 0 && over) {
            Some(ConnError::Timeout {
                addr,
                phase,
                secs,
                received,
            })
        } else if over {
            Some(ConnError::Deadline {
                addr,
                phase,
                secs,
                received,
            })
        } else {
            None
        }
    }

    /// Periodic work: timeouts, retries after errors, closed-loop starts.
    fn scan(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            if let Some(err) = self.timeout_error(i, now, false) {
                self.fail(i, err, now);
            } else {
                let c = &self.conns[i];
                if self.in_flight(i).is_none()
                    && self.period.is_none()
                    && c.phase == Phase::Closed
                    && now >= c.retry_at
                {
                    self.assign(i, now, now);
                }
            }
        }
    }

    fn connect(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        c.connect_start = now;
        c.last_progress = now;
        c.phase = Phase::Connecting;
        match start_connect(self.plan.addr) {
            Ok(sock) => {
                if let Err(error) = self.poll.register(sock.as_raw_fd(), i as u64) {
                    let addr = self.plan.addr;
                    return self.fail(i, ConnError::Connect { addr, error }, now);
                }
                if now >= self.measure_from {
                    self.result.connections_opened += 1;
                }
                self.conns[i].sock = Some(sock);
            }
            Err(error) => {
                let addr = self.plan.addr;
                self.fail(i, ConnError::Connect { addr, error }, now)
            }
        }
    }

    fn fail(&mut self, i: usize, err: ConnError, now: Instant) {
        let kind = err.kind();
        let c = &mut self.conns[i];
        let measured = c.request_start.is_some_and(|s| s >= self.measure_from)
            || c.connect_start >= self.measure_from;
        c.sock = None;
        c.tls = None;
        c.phase = Phase::Closed;
        c.retry_at = now + RETRY_DELAY;
        if self.plan.first_only {
            self.first_error = Some(err);
            self.done = true;
            return;
        }
        // Open loop: the failed request is dropped, the schedule goes on.
        c.request_start = None;
        if measured && now < self.plan.end {
            self.result.errors[kind as usize] += 1;
            let msg = err.to_string();
            if self.result.error_examples.len() < ErrorKind::ALL.len()
                && !self.result.error_examples.iter().any(|m| m == &msg)
            {
                self.result.error_examples.push(msg);
            }
        }
    }

    fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        c.sock = None;
        c.tls = None;
        c.phase = Phase::Closed;
    }

    fn drive(&mut self, i: usize, flags: u32) {
        let now = Instant::now();
        if i >= self.conns.len() || self.conns[i].sock.is_none() {
            return;
        }
        if self.conns[i].phase == Phase::Connecting {
            if flags & (poll::WRITABLE | poll::HANGUP) == 0 {
                return;
            }
            let err = self.conns[i]
                .sock
                .as_ref()
                .and_then(|s| s.take_error().ok().flatten());
            if let Some(error) = err {
                let addr = self.plan.addr;
                return self.fail(i, ConnError::Connect { addr, error }, now);
            }
            self.on_connected(i, now);
        }
        match self.conns[i].phase {
            Phase::Handshaking => self.handshake(i),
            Phase::Sending => self.send(i),
            Phase::Receiving | Phase::Idle => self.receive(i, flags),
            Phase::Closed | Phase::Connecting => {}
        }
    }

    fn on_connected(&mut self, i: usize, now: Instant) {
        let measured = self.conns[i].connect_start >= self.measure_from;
        let c = &mut self.conns[i];
        c.connected_at = now;
        c.last_progress = now;
        if measured && now < self.plan.end {
            self.result
                .connect_ns
                .record(now.duration_since(c.connect_start).as_nanos() as u64);
        }
        if let Some((config, name)) = &self.plan.tls {
            match rustls::ClientConnection::new(config.clone(), name.clone()) {
                Ok(t) => {
                    c.tls = Some(t);
                    c.phase = Phase::Handshaking;
                }
                Err(error) => {
                    let addr = self.plan.addr;
                    self.fail(i, ConnError::Tls { addr, error }, now);
                }
            }
        } else {
            self.begin_send(i, now);
        }
    }

    fn handshake(&mut self, i: usize) {
        let addr = self.plan.addr;
        let c = &mut self.conns[i];
        let (Some(sock), Some(tls)) = (c.sock.as_mut(), c.tls.as_mut()) else {
            return;
        };
        loop {
            if let Err(error) = flush_tls(tls, sock) {
                return self.fail(i, ConnError::Write { addr, error }, Instant::now());
            }
            if !tls.is_handshaking() {
                break;
            }
            match tls.read_tls(sock) {
                Ok(0) => {
                    let tls_flag = true;
                    let err = ConnError::Closed {
                        addr,
                        tls: tls_flag,
                    };
                    return self.fail(i, err, Instant::now());
                }
                Ok(_) => {
                    if let Err(error) = tls.process_new_packets() {
                        // Send the alert, if it fits, then give up.
                        let _ = tls.write_tls(sock);
                        return self.fail(i, ConnError::Tls { addr, error }, Instant::now());
                    }
                    c.last_progress = Instant::now();
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(error) => {
                    return self.fail(i, ConnError::Read { addr, error }, Instant::now());
                }
            }
        }
        let now = Instant::now();
        let measured = c.connect_start >= self.measure_from && now < self.plan.end;
        if measured {
            self.result
                .tls_handshake_ns
                .record(now.duration_since(c.connected_at).as_nanos() as u64);
            match tls.handshake_kind() {
                Some(rustls::HandshakeKind::Resumed) => self.result.handshakes_resumed += 1,
                _ => self.result.handshakes_full += 1,
            }
        }
        if self.result.tls_info.is_none() {
            self.result.tls_info = Some(tls::info(tls, self.plan.verified));
        }
        self.begin_send(i, now);
    }

    fn begin_send(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        if c.request_start.is_none() {
            // Connected ahead of the open-loop schedule: wait for a request.
            c.phase = Phase::Idle;
            return;
        }
        c.phase = Phase::Sending;
        c.written = 0;
        c.sent_at = now;
        c.last_progress = now;
        c.first_byte = false;
        c.received = 0;
        c.parser.start(self.plan.head_request);
        if let Some(tls) = c.tls.as_mut() {
            // rustls buffers the plaintext; it cannot fail for a small request.
            let _ = tls.writer().write_all(&self.plan.request);
            c.written = self.plan.request.len();
        }
        self.send(i);
    }

    fn send(&mut self, i: usize) {
        let addr = self.plan.addr;
        let c = &mut self.conns[i];
        let Some(sock) = c.sock.as_mut() else { return };
        if let Some(tls) = c.tls.as_mut() {
            match flush_tls(tls, sock) {
                Ok(true) => {}
                Ok(false) => return,
                Err(error) => {
                    return self.fail(i, ConnError::Write { addr, error }, Instant::now());
                }
            }
        } else {
            let req = &self.plan.request;
            while c.written < req.len() {
                match sock.write(&req[c.written..]) {
                    Ok(n) => c.written += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(error) => {
                        return self.fail(i, ConnError::Write { addr, error }, Instant::now());
                    }
                }
            }
        }
        c.phase = Phase::Receiving;
        // The response cannot be there yet: wait for the readable edge.
    }

    /// Reads what the socket has; `flags` are the epoll events that woke us.
    fn receive(&mut self, i: usize, flags: u32) {
        let addr = self.plan.addr;
        let is_tls = self.plan.tls.is_some();
        loop {
            let c = &mut self.conns[i];
            let Some(sock) = c.sock.as_mut() else { return };
            // Fill `buf` with plaintext: straight from the socket, or through rustls.
            let got = if let Some(tls) = c.tls.as_mut() {
                match tls.reader().read(&mut self.buf) {
                    Ok(0) => Ok(0),
                    Ok(n) => Ok(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => match tls.read_tls(sock) {
                        Ok(0) => Ok(0),
                        Ok(_) => {
                            if let Err(error) = tls.process_new_packets() {
                                let now = Instant::now();
                                return self.fail(i, ConnError::Tls { addr, error }, now);
                            }
                            // Session tickets and key updates may want a reply.
                            let _ = flush_tls(tls, sock);
                            continue;
                        }
                        Err(e) => Err(e),
                    },
                    // A close_notify-less TCP close shows up here as UnexpectedEof.
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
                    Err(e) => Err(e),
                }
            } else {
                sock.read(&mut self.buf)
            };
            let n = match got {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => {
                    if c.phase == Phase::Idle {
                        return self.close(i);
                    }
                    return self.fail(i, ConnError::Read { addr, error }, Instant::now());
                }
            };
            let now = Instant::now();
            if n == 0 {
                return self.on_eof(i, is_tls, now);
            }
            if c.phase != Phase::Receiving {
                // Bytes nobody asked for: a server must not send them.
                let error = ParseError::BadStatusLine("unsolicited data".into());
                return self.fail(i, ConnError::Parse { addr, error }, now);
            }
            c.last_progress = now;
            c.received += n as u64;
            let measured = c.request_start.is_some_and(|s| s >= self.measure_from);
            if !c.first_byte {
                c.first_byte = true;
                if measured && now < self.plan.end {
                    self.result
                        .ttfb_ns
                        .record(now.duration_since(c.sent_at).as_nanos() as u64);
                }
            }
            match c.parser.feed(&self.buf[..n]) {
                Ok(Progress::NeedMore) => {
                    // A short read drained the socket and the next edge brings
                    // the rest, unless the peer has closed: its FIN came with
                    // this edge and no other follows, so read on to the EOF
                    // (the end of a body delimited by the close).
                    if c.tls.is_none() && n < self.buf.len() && flags & poll::HANGUP == 0 {
                        return;
                    }
                }
                Ok(Progress::Done { response, .. }) => {
                    return self.on_response(i, response, now);
                }
                Err(error) => {
                    return self.fail(i, ConnError::Parse { addr, error }, now);
                }
            }
        }
    }

    fn on_eof(&mut self, i: usize, is_tls: bool, now: Instant) {
        let addr = self.plan.addr;
        let c = &mut self.conns[i];
        match c.phase {
            Phase::Idle => self.close(i),
            Phase::Receiving if c.parser.started() => match c.parser.eof() {
                Ok(r) => {
                    let r = super::parser::Response {
                        keep_alive: false,
                        ..r
                    };
                    self.on_response(i, r, now)
                }
                Err(error) => self.fail(i, ConnError::Parse { addr, error }, now),
            },
            _ => self.fail(i, ConnError::Closed { addr, tls: is_tls }, now),
        }
    }

    fn on_response(&mut self, i: usize, r: super::parser::Response, now: Instant) {
        let c = &mut self.conns[i];
        let start = c.request_start.take().unwrap_or(c.sent_at);
        if start >= self.measure_from && now < self.plan.end {
            self.result.status_classes[status_class(r.status)] += 1;
            self.result.body_bytes += r.body_bytes;
            self.result
                .total_ns
                .record(now.duration_since(start).as_nanos() as u64);
        }
        if self.plan.first_only {
            self.done = true;
            return;
        }
        let reuse = r.keep_alive && self.plan.mode == ConnMode::KeepAlive;
        if reuse {
            c.phase = Phase::Idle;
        } else {
            self.close(i);
        }
        if self.period.is_none() {
            self.assign(i, now, now);
        } else {
            self.dispatch_due(now);
        }
    }
}

/// Writes what rustls has queued: Ok(true) when all of it went out, Ok(false)
/// when the socket is full (the writable edge resumes it).
fn flush_tls(tls: &mut rustls::ClientConnection, sock: &mut TcpStream) -> io::Result<bool> {
    while tls.wants_write() {
        match tls.write_tls(sock) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// A non-blocking socket with a connect in progress, TCP_NODELAY set.
fn start_connect(addr: SocketAddr) -> io::Result<TcpStream> {
    let sock = crate::net::sockopt::start_connect(addr, 0, 0)?;
    sock.set_nodelay(true)?;
    Ok(sock)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_outside_1xx_to_5xx_are_unknown_not_5xx() {
        let class = |s| STATUS_CLASSES[status_class(s)];
        assert_eq!(class(100), "1xx");
        assert_eq!(class(204), "2xx");
        assert_eq!(class(599), "5xx");
        assert_eq!(class(600), "unknown");
        assert_eq!(class(999), "unknown");
    }
}
