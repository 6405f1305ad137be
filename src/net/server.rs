//! `nastune net serve`: an iperf3-compatible server that runs several tests at
//! once, answers ACCESS_DENIED at once when full, and puts a deadline on every
//! protocol state so an idle or half-open peer never blocks anyone else.
//!
//! Every connection starts with a 37-byte cookie. A cookie that belongs to a
//! session waiting for its data connections (from the same peer address) joins
//! that session; any other cookie starts a new session. A session takes one of
//! the `max_sessions` test places only once it is authenticated and its
//! parameters are complete, all within one handshake deadline, so peers that
//! never finish cannot make the server answer "busy".

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::allow::{self, Cidr};
use super::auth;
use super::cpu::{CpuMeter, SystemCpu};
use super::engine::{
    DataSocket, Engine, ReceiveMethod, SendMethod, StreamConfig, StreamSpec, StreamTotals,
};
use super::handshake::{self, Deadline, Limits, Pending, Timed};
use super::params::{self, Caps, Params, Protocol, RrMode, TestPlan};
use super::protocol::{self as proto, COOKIE_SIZE, ProtocolError, State};
use super::results::{ExchangeResults, ExchangeStream, ResultsExtension, ServerExtra};
use super::rr;
use super::sockopt;
use super::udp;
use crate::root::Root;

/// Deadlines per protocol state (lesson 2 of the iperf3 history).
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// One deadline from accept to complete parameters (cookie, key answer,
    /// parameters), and for each data connection's cookie; also the deadline
    /// for all data connections to arrive.
    pub handshake: Duration,
    /// Results exchange and IPERF_DONE.
    pub results: Duration,
    /// Extra time past duration + omit before a silent client is dropped.
    pub grace: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            handshake: Duration::from_secs(super::handshake::HANDSHAKE_DEADLINE_SECS.into()),
            results: Duration::from_secs(10),
            grace: Duration::from_secs(10),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub caps: Caps,
    pub max_sessions: usize,
    pub allow: Vec<Cidr>,
    pub psk: Option<Vec<u8>>,
    pub timeouts: Timeouts,
    /// Bound on connections still in their handshake, so a flood of idle
    /// sockets cannot exhaust threads; when reached, the oldest is closed.
    pub max_pending: usize,
    /// The same bound per source address; more are closed at once.
    pub max_pending_per_addr: usize,
}

/// What the server reports for each session (stdout, one JSON line or a text line).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionReport {
    pub peer: String,
    pub outcome: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<TestPlan>,
    pub streams: Vec<StreamTotals>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_cpu: Option<SystemCpu>,
    pub send_method: SendMethod,
    pub receive_method: ReceiveMethod,
    pub concurrent_sessions_max: usize,
    /// Transactions served by an --rr or --crr test.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transactions: Option<Transactions>,
}

/// What the server saw of a latency test: transactions served, and from
/// their count the mean time of one. Each stream waits for its response
/// before it sends the next request, so one transaction takes
/// streams x seconds / transactions (netperf's TCP_RR figure).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transactions {
    pub mode: RrMode,
    pub streams: u32,
    pub request_bytes: u32,
    pub response_bytes: u32,
    pub count: u64,
    /// From TEST_RUNNING to TEST_END, warm-up included as in the count.
    pub seconds: f64,
}

impl Transactions {
    pub fn mean_secs(&self) -> Option<f64> {
        (self.count > 0).then(|| f64::from(self.streams) * self.seconds / self.count as f64)
    }
}

/// A data connection past its cookie, with its place in the accept order.
type Arrived = (u64, TcpStream);

enum Slot {
    /// Waiting for `remaining` more data connections from this peer, each sent
    /// with its place in the accept order.
    Collecting {
        peer: IpAddr,
        tx: Sender<Arrived>,
        remaining: u32,
    },
    /// Connect/request/response transactions served by the accepting thread;
    /// `streams` of them at a time.
    Crr {
        peer: IpAddr,
        request: u32,
        response: u32,
        streams: u32,
        /// Transactions served so far.
        served: Arc<AtomicUsize>,
    },
    /// A test that takes no connections now.
    Busy,
}

struct Shared {
    cfg: ServeConfig,
    sessions: Mutex<HashMap<[u8; COOKIE_SIZE], Slot>>,
    /// Connections in their handshake, with a handle to close each.
    pending: Mutex<Pending<TcpStream>>,
    active: AtomicUsize,
    peak: AtomicUsize,
    /// UDP stream set-up binds the shared port; one session at a time does it.
    udp_accept: Mutex<()>,
    local: SocketAddr,
    report: Box<dyn Fn(SessionReport) + Send + Sync>,
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Serves until the process ends (accept errors are waited out); each report
/// goes to `report`.
pub fn serve(
    listener: TcpListener,
    cfg: ServeConfig,
    report: Box<dyn Fn(SessionReport) + Send + Sync>,
) -> io::Result<()> {
    let local = listener.local_addr()?;
    let shared = Arc::new(Shared {
        cfg,
        sessions: Mutex::new(HashMap::new()),
        pending: Mutex::new(Pending::default()),
        active: AtomicUsize::new(0),
        peak: AtomicUsize::new(0),
        udp_accept: Mutex::new(()),
        local,
        report,
    });
    let limits = Limits {
        total: shared.cfg.max_pending,
        per_addr: shared.cfg.max_pending_per_addr,
    };
    loop {
        let (mut sock, peer) = match listener.accept() {
            Ok(s) => s,
            // EMFILE and friends: keep serving the tests already running.
            Err(_) => {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let since = Instant::now();
        let ip = peer.ip();
        if !allow::allowed(&shared.cfg.allow, ip) {
            deny(&mut sock);
            continue;
        }
        let Ok(handle) = sock.try_clone() else {
            continue;
        };
        let expected = expected_connections(&shared, ip);
        let admitted = locked(&shared.pending).admit(ip, handle, limits, expected, since, |s| {
            handshake::queued(s, COOKIE_SIZE) == COOKIE_SIZE
        });
        // Refused: this address has its share in the handshake already; close
        // without an answer, since no test makes the server busy.
        let Ok((id, evicted)) = admitted else {
            continue;
        };
        if let Some(oldest) = evicted {
            // Its thread reads end-of-file and ends.
            let _ = oldest.shutdown(Shutdown::Both);
        }
        let place = PendingPlace {
            shared: Arc::clone(&shared),
            id,
            since,
        };
        let s = Arc::clone(&shared);
        // If the thread cannot start, the closure and its place are dropped.
        let _ = std::thread::Builder::new()
            .name("net-conn".into())
            .spawn(move || handle_connection(&s, sock, peer, place));
    }
}

/// Data connections (or CRR transactions at a time) that sessions from `ip`
/// still expect: these get room beyond the per-address bound.
fn expected_connections(shared: &Shared, ip: IpAddr) -> usize {
    locked(&shared.sessions)
        .values()
        .map(|slot| match slot {
            Slot::Collecting {
                peer, remaining, ..
            } if *peer == ip => *remaining as usize,
            Slot::Crr { peer, streams, .. } if *peer == ip => *streams as usize,
            _ => 0,
        })
        .sum()
}

/// A connection's place among those in their handshake; given back on drop.
struct PendingPlace {
    shared: Arc<Shared>,
    id: u64,
    /// When it was accepted: the handshake deadline counts from here.
    since: Instant,
}

impl PendingPlace {
    /// A connection past its cookie; false when it was evicted meanwhile and
    /// its socket is shut down.
    fn cookie_read(&self) -> bool {
        locked(&self.shared.pending).cookie_read(self.id)
    }

    /// Leaves the pending connections for good (a data connection handed to
    /// its session); false when it was evicted first.
    fn leave(&self) -> bool {
        locked(&self.shared.pending).leave(self.id)
    }

    fn evicted(&self) -> bool {
        !locked(&self.shared.pending).contains(self.id)
    }
}

impl Drop for PendingPlace {
    fn drop(&mut self) {
        locked(&self.shared.pending).leave(self.id);
    }
}

/// One of the `max_sessions` test places, held by an authenticated session with
/// complete parameters; given back (and its cookie forgotten) on drop.
struct TestPlace<'a> {
    shared: &'a Shared,
    cookie: [u8; COOKIE_SIZE],
}

impl Drop for TestPlace<'_> {
    fn drop(&mut self) {
        locked(&self.shared.sessions).remove(&self.cookie);
        self.shared.active.fetch_sub(1, Ordering::SeqCst);
    }
}

/// ACCESS_DENIED: sent only when the peer is not allowed or when
/// `max_sessions` real tests run.
fn deny<W: Write>(sock: &mut W) {
    let _ = sock.write_all(&[State::AccessDenied.to_byte() as u8]);
}

fn take_test_place<'a>(
    shared: &'a Shared,
    sock: &mut TcpStream,
    cookie: [u8; COOKIE_SIZE],
) -> Result<TestPlace<'a>, SessionError> {
    let max = shared.cfg.max_sessions;
    let active = shared.active.fetch_add(1, Ordering::SeqCst) + 1;
    if active > max {
        shared.active.fetch_sub(1, Ordering::SeqCst);
        deny(sock);
        return Err(SessionError::Refused(format!(
            "busy: '{max}' tests are running"
        )));
    }
    {
        let mut sessions = locked(&shared.sessions);
        if sessions.contains_key(&cookie) {
            drop(sessions);
            shared.active.fetch_sub(1, Ordering::SeqCst);
            deny(sock);
            return Err(SessionError::Refused(
                "the cookie belongs to a test that is running".into(),
            ));
        }
        sessions.insert(cookie, Slot::Busy);
    }
    shared.peak.fetch_max(active, Ordering::SeqCst);
    Ok(TestPlace { shared, cookie })
}

/// Where a connection goes after its cookie.
enum Route {
    Data(Sender<Arrived>),
    Crr(u32, u32, Arc<AtomicUsize>),
    Close,
    New,
}

/// Routes a cookie; a data connection counts against its session's streams.
fn route(shared: &Shared, cookie: &[u8; COOKIE_SIZE], ip: IpAddr) -> Route {
    match locked(&shared.sessions).get_mut(cookie) {
        Some(Slot::Collecting {
            peer,
            tx,
            remaining,
        }) if *peer == ip && *remaining > 0 => {
            *remaining -= 1;
            Route::Data(tx.clone())
        }
        Some(Slot::Crr {
            peer,
            request,
            response,
            served,
            ..
        }) if *peer == ip => Route::Crr(*request, *response, Arc::clone(served)),
        // The right cookie from the wrong address, beyond the session's streams,
        // or for a test not taking connections now: close without reading more.
        Some(_) => Route::Close,
        None => Route::New,
    }
}

fn handle_connection(
    shared: &Arc<Shared>,
    mut sock: TcpStream,
    peer: SocketAddr,
    place: PendingPlace,
) {
    let timeouts = shared.cfg.timeouts;
    let deadline = Deadline::new(place.since, timeouts.handshake);
    let cookie = proto::read_cookie(&mut Timed::new(&mut sock, deadline, Instant::now));
    let Ok(cookie) = cookie else { return };
    // Evicted while the cookie was read: the socket is shut down, and a data
    // connection handed on now would fail its test.
    if !place.cookie_read() {
        return;
    }
    match route(shared, &cookie, peer.ip()) {
        Route::Data(tx) => {
            if place.leave() {
                let _ = tx.send((place.id, sock));
            }
            return;
        }
        Route::Crr(request, response, served) => {
            if !place.leave() {
                return;
            }
            let deadline = Deadline::new(Instant::now(), timeouts.handshake);
            let mut timed = Timed::new(&mut sock, deadline, Instant::now);
            if rr::serve_one(&mut timed, request, response).is_ok() {
                served.fetch_add(1, Ordering::Relaxed);
            }
            return;
        }
        Route::Close => return,
        Route::New => {}
    }
    if !proto::is_cookie(&cookie) {
        return;
    }
    // A control connection, with TCP_NODELAY as iperf3 sets it: under Nagle its
    // one-byte TEST_RUNNING waited for the peer's delayed ACK of TEST_START, and the
    // client started 40 ms into this end's clock (1.3 % of a 3 s test).
    sock.set_nodelay(true).ok();
    // Every test place is taken by a real test: say so at once.
    if shared.active.load(Ordering::SeqCst) >= shared.cfg.max_sessions {
        deny(&mut sock);
        return;
    }
    let mut report = SessionReport {
        peer: peer.to_string(),
        outcome: String::new(),
        plan: None,
        streams: Vec::new(),
        system_cpu: None,
        send_method: SendMethod::Copy,
        receive_method: ReceiveMethod::MsgTrunc,
        concurrent_sessions_max: 0,
        transactions: None,
    };
    let outcome = (|| {
        let handshake = handshake(shared, &mut sock, deadline, &cookie);
        if handshake.is_err() && place.evicted() {
            return Err(SessionError::Refused(format!(
                "closed by the server: '{}' connections were in their handshake and this was the oldest",
                shared.cfg.max_pending
            )));
        }
        let (params, plan) = handshake?;
        drop(place);
        let _test_place = take_test_place(shared, &mut sock, cookie)?;
        run_session(shared, &mut sock, peer, cookie, &params, plan, &mut report)
    })();
    report.concurrent_sessions_max = shared.peak.load(Ordering::SeqCst);
    report.outcome = match outcome {
        Ok(()) => "ok".into(),
        Err(e) => {
            // Tell the peer why we stop when it sent something we refuse; a peer
            // that vanished or timed out gets nothing more.
            if matches!(
                e,
                SessionError::Params(_)
                    | SessionError::Results(_)
                    | SessionError::Protocol(
                        ProtocolError::TooLong { .. }
                            | ProtocolError::Empty
                            | ProtocolError::Decode(_)
                            | ProtocolError::UnknownState(_)
                    )
            ) {
                let _ = send_server_error(&mut sock);
            }
            e.to_string()
        }
    };
    (shared.report)(report);
}

#[derive(Debug, thiserror::Error)]
enum SessionError {
    #[error("refused: {0}")]
    Refused(String),
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    #[error(transparent)]
    Params(#[from] params::ParamsError),
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error("results from the client are malformed: {0}")]
    Results(String),
    #[error("timed out waiting for {0}")]
    Timeout(&'static str),
}

fn send_server_error(sock: &mut TcpStream) -> io::Result<()> {
    let mut msg = vec![State::ServerError.to_byte() as u8];
    // iperf3's IESERVERERROR-style pair: our own code 100 and EINVAL.
    msg.extend_from_slice(&100i32.to_be_bytes());
    msg.extend_from_slice(&libc::EINVAL.to_be_bytes());
    sock.write_all(&msg)
}

fn authenticate<S: Read + Write>(
    shared: &Shared,
    sock: &mut S,
    cookie: &[u8; COOKIE_SIZE],
) -> Result<(), SessionError> {
    let Some(psk) = &shared.cfg.psk else {
        return Ok(());
    };
    let mut nonce = [0u8; auth::NONCE_BYTES];
    proto::fill_random(&mut nonce);
    sock.write_all(&[auth::AUTH_CHALLENGE_STATE as u8])?;
    let challenge = serde_json::to_vec(&auth::Challenge {
        nonce: auth::hex(&nonce),
    })
    .map_err(ProtocolError::Encode)?;
    proto::write_message(sock, &challenge)?;
    let answer = proto::read_message(sock, auth::MAX_AUTH_JSON)?;
    let answer: auth::Response = serde_json::from_slice(&answer).map_err(ProtocolError::Decode)?;
    if auth::verify(psk, &nonce, cookie, &answer.mac) {
        Ok(())
    } else {
        deny(sock);
        Err(SessionError::Refused("wrong pre-shared key".into()))
    }
}

/// Key answer and parameters, all before `deadline`, which counts from accept.
fn handshake(
    shared: &Shared,
    sock: &mut TcpStream,
    deadline: Deadline,
    cookie: &[u8; COOKIE_SIZE],
) -> Result<(Params, TestPlan), SessionError> {
    let result = (|| -> Result<_, SessionError> {
        let mut timed = Timed::new(&mut *sock, deadline, Instant::now);
        authenticate(shared, &mut timed, cookie)?;
        proto::write_state(&mut timed, State::ParamExchange)?;
        let raw = proto::read_message(&mut timed, proto::MAX_PARAMS_JSON)?;
        let params = params::decode(&raw)?;
        let plan = params.plan(&shared.cfg.caps)?;
        Ok((params, plan))
    })();
    // The states that follow get a handshake's time per step.
    let t = shared.cfg.timeouts.handshake;
    sock.set_read_timeout(Some(t))?;
    sock.set_write_timeout(Some(t))?;
    result.map_err(|e| {
        let timed_out = match &e {
            SessionError::Protocol(ProtocolError::TimedOut) => true,
            SessionError::Io(io) | SessionError::Protocol(ProtocolError::Io(io)) => matches!(
                io.kind(),
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
            ),
            _ => false,
        };
        if timed_out {
            SessionError::Timeout("the handshake (key answer and parameters) to finish")
        } else {
            e
        }
    })
}

fn run_session(
    shared: &Arc<Shared>,
    sock: &mut TcpStream,
    peer: SocketAddr,
    cookie: [u8; COOKIE_SIZE],
    params: &Params,
    plan: TestPlan,
    report: &mut SessionReport,
) -> Result<(), SessionError> {
    let t = shared.cfg.timeouts;
    report.plan = Some(plan.clone());
    let send = if plan.zerocopy || params.nastune.is_some() {
        SendMethod::Sendfile
    } else {
        SendMethod::Copy
    };
    report.send_method = send;
    let stream_cfg = StreamConfig {
        block_bytes: plan.block_bytes as usize,
        rate_bits_per_sec: plan.rate_bits_per_sec,
        udp_counters_64bit: plan.udp_counters_64bit,
        send,
        receive: ReceiveMethod::MsgTrunc,
    };

    // CRR: the accept loop serves each transaction; this thread only keeps time.
    let served = Arc::new(AtomicUsize::new(0));
    if let Some(r) = plan.rr.filter(|r| r.mode == RrMode::Crr) {
        locked(&shared.sessions).insert(
            cookie,
            Slot::Crr {
                peer: peer.ip(),
                request: r.request_bytes,
                response: r.response_bytes,
                streams: plan.streams,
                served: Arc::clone(&served),
            },
        );
        proto::write_state(sock, State::CreateStreams)?;
        proto::write_state(sock, State::TestStart)?;
        proto::write_state(sock, State::TestRunning)?;
        let outcome = finish_latency_test(sock, &plan, t, send, report, &served);
        locked(&shared.sessions).insert(cookie, Slot::Busy);
        return outcome;
    }

    let specs = match plan.protocol {
        Protocol::Tcp => collect_tcp(shared, sock, peer, cookie, &plan)?,
        Protocol::Udp => collect_udp(shared, sock, peer, &plan)?,
    };
    proto::write_state(sock, State::TestStart)?;
    let mut engine = if let Some(r) = plan.rr {
        let sockets = specs
            .into_iter()
            .filter_map(|s| match s.socket {
                DataSocket::Tcp(t) => Some(t),
                DataSocket::Udp(_) => None,
            })
            .collect();
        proto::write_state(sock, State::TestRunning)?;
        let _handles = rr::serve_streams(sockets, r.request_bytes, r.response_bytes, &served);
        return finish_latency_test(sock, &plan, t, send, report, &served);
    } else {
        Engine::start(
            specs,
            stream_cfg,
            Duration::from_secs(plan.omit_secs.into()),
            Root::live(),
        )?
    };
    proto::write_state(sock, State::TestRunning)?;
    let mut cpu_intervals = Vec::new();
    wait_test_end(sock, &plan, t, Some(&mut engine), &mut cpu_intervals)?;
    let (totals, cpu, _errors) = engine.finish(Duration::from_secs(1));
    report.streams = totals.clone();
    report.system_cpu = cpu.system;
    let reads_cpus = params
        .nastune_results
        .is_some_and(|v| v >= super::results::RESULTS_VERSION);
    exchange_results(
        sock,
        t,
        totals,
        Some(cpu),
        ServerExtra {
            interval_system_cpu: cpu_intervals,
            cpus: reads_cpus
                .then(|| super::cpu::online_cpus(&Root::live()))
                .flatten(),
        },
        send,
        plan.protocol,
    )
}

fn collect_tcp(
    shared: &Arc<Shared>,
    sock: &mut TcpStream,
    peer: SocketAddr,
    cookie: [u8; COOKIE_SIZE],
    plan: &TestPlan,
) -> Result<Vec<StreamSpec>, SessionError> {
    let (tx, rx): (Sender<Arrived>, Receiver<Arrived>) = mpsc::channel();
    locked(&shared.sessions).insert(
        cookie,
        Slot::Collecting {
            peer: peer.ip(),
            tx,
            remaining: plan.connection_count(),
        },
    );
    let result = (|| {
        proto::write_state(sock, State::CreateStreams)?;
        let deadline = Instant::now() + shared.cfg.timeouts.handshake;
        let mut arrived = Vec::new();
        for _ in 0..plan.connection_count() {
            let left = deadline.saturating_duration_since(Instant::now());
            arrived.push(
                rx.recv_timeout(left)
                    .map_err(|_| SessionError::Timeout("the data connections"))?,
            );
        }
        // Each connection reads its cookie on its own thread, so they come here in
        // any order; a stream's role (who sends) follows the order the client
        // opened them in, which is the accept order. Taken as they came, a --bidir
        // test now and then had both ends sending on one connection and reading
        // the other: 0 bytes received each way.
        arrived.sort_by_key(|(id, _)| *id);
        let mut specs = Vec::new();
        for (index, (_, data)) in (0..).zip(arrived) {
            data.set_read_timeout(None)?;
            data.set_write_timeout(None)?;
            sockopt::set_window(&data, plan.window_bytes)?;
            if plan.nodelay {
                data.set_nodelay(true)?;
            }
            specs.push(StreamSpec {
                id: params::stream_id(index),
                // The server sends where the client receives.
                sender: !plan.client_sends(index),
                socket: DataSocket::Tcp(data),
            });
        }
        Ok(specs)
    })();
    locked(&shared.sessions).insert(cookie, Slot::Busy);
    result
}

fn collect_udp(
    shared: &Arc<Shared>,
    sock: &mut TcpStream,
    peer: SocketAddr,
    plan: &TestPlan,
) -> Result<Vec<StreamSpec>, SessionError> {
    let _one_at_a_time = locked(&shared.udp_accept);
    let bind = SocketAddr::new(shared.local.ip(), shared.local.port());
    let mut listener = sockopt::udp_bind_shared(bind)?;
    proto::write_state(sock, State::CreateStreams)?;
    let deadline = Instant::now() + shared.cfg.timeouts.handshake;
    let mut specs = Vec::new();
    let mut index = 0;
    while index < plan.connection_count() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(SessionError::Timeout("the UDP stream handshakes"));
        }
        listener.set_read_timeout(Some(left))?;
        let mut buf = [0u8; 64];
        let (n, from) = match listener.recv_from(&mut buf) {
            Ok(x) => x,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(SessionError::Timeout("the UDP stream handshakes"));
            }
            Err(e) => return Err(e.into()),
        };
        // UDP goes only to the peer of the accepted control connection.
        if from.ip() != peer.ip()
            || n != 4
            || !udp::is_connect_msg([buf[0], buf[1], buf[2], buf[3]])
        {
            continue;
        }
        listener.connect(from)?;
        listener.set_read_timeout(None)?;
        sockopt::set_window(&listener, plan.window_bytes)?;
        listener.send(&udp::CONNECT_REPLY.to_ne_bytes())?;
        let next = sockopt::udp_bind_shared(bind)?;
        let data: UdpSocket = std::mem::replace(&mut listener, next);
        specs.push(StreamSpec {
            id: params::stream_id(index),
            sender: !plan.client_sends(index),
            socket: DataSocket::Udp(data),
        });
        index += 1;
    }
    Ok(specs)
}

/// RR and CRR: the transactions run elsewhere; keep time, measure CPU, report.
fn finish_latency_test(
    sock: &mut TcpStream,
    plan: &TestPlan,
    t: Timeouts,
    send: SendMethod,
    report: &mut SessionReport,
    served: &AtomicUsize,
) -> Result<(), SessionError> {
    let root = Root::live();
    let mut meter = CpuMeter::start(&root);
    let started = Instant::now();
    wait_test_end(sock, plan, t, None, &mut Vec::new())?;
    if let Some(r) = plan.rr {
        report.transactions = Some(Transactions {
            mode: r.mode,
            streams: plan.streams,
            request_bytes: r.request_bytes,
            response_bytes: r.response_bytes,
            count: served.load(Ordering::Relaxed) as u64,
            seconds: started.elapsed().as_secs_f64(),
        });
    }
    let cpu = meter.lap(&root);
    report.system_cpu = cpu.system;
    exchange_results(
        sock,
        t,
        Vec::new(),
        Some(cpu),
        ServerExtra::default(),
        send,
        plan.protocol,
    )
}

/// Waits for TEST_END, sampling intervals on the way; drops a client that stays
/// silent past duration + omit + grace.
fn wait_test_end(
    sock: &mut TcpStream,
    plan: &TestPlan,
    t: Timeouts,
    mut engine: Option<&mut Engine>,
    cpu_intervals: &mut Vec<SystemCpu>,
) -> Result<(), SessionError> {
    let limit =
        Duration::from_secs(u64::from(plan.duration_secs) + u64::from(plan.omit_secs)) + t.grace;
    let deadline = Instant::now() + limit;
    // Short reads so the warm-up ends within 50 ms of the client's cut.
    let tick = Duration::from_millis(50);
    let mut next_sample = Instant::now() + Duration::from_secs(1);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            let _ = proto::write_state(sock, State::ServerTerminate);
            return Err(SessionError::Timeout("TEST_END"));
        }
        sock.set_read_timeout(Some(left.min(tick)))?;
        let mut b = [0u8; 1];
        match sock.read(&mut b) {
            Ok(0) => return Err(ProtocolError::Closed.into()),
            Ok(_) => match State::from_byte(b[0] as i8)? {
                State::TestEnd => return Ok(()),
                State::ClientTerminate | State::IperfDone => {
                    return Err(ProtocolError::Terminated.into());
                }
                other => {
                    return Err(ProtocolError::UnexpectedState {
                        expected: State::TestEnd,
                        got: other,
                    }
                    .into());
                }
            },
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if let Some(e) = engine.as_deref_mut() {
                    e.poll_omit();
                    if Instant::now() >= next_sample {
                        // Sampling keeps TCP_INFO min/max RTT and cwnd up to date.
                        let i = e.sample();
                        if let Some(c) = i.cpu.system
                            && cpu_intervals.len() < super::results::MAX_CPU_INTERVALS
                        {
                            cpu_intervals.push(c);
                        }
                        next_sample += Duration::from_secs(1);
                    }
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
}

fn exchange_results(
    sock: &mut TcpStream,
    t: Timeouts,
    totals: Vec<StreamTotals>,
    cpu: Option<super::cpu::CpuUse>,
    extra: ServerExtra,
    send: SendMethod,
    protocol: Protocol,
) -> Result<(), SessionError> {
    sock.set_read_timeout(Some(t.results))?;
    sock.set_write_timeout(Some(t.results))?;
    proto::write_state(sock, State::ExchangeResults)?;
    let theirs = proto::read_message(sock, proto::MAX_RESULTS_JSON)?;
    super::results::decode(&theirs).map_err(|e| SessionError::Results(e.to_string()))?;
    let mut ours = local_results(&totals, cpu, send, ReceiveMethod::MsgTrunc, protocol);
    if let Some(n) = &mut ours.nastune {
        n.interval_system_cpu = extra.interval_system_cpu;
        n.cpus = extra.cpus;
    }
    let text = serde_json::to_vec(&ours).map_err(ProtocolError::Encode)?;
    proto::write_message(sock, &text)?;
    proto::write_state(sock, State::DisplayResults)?;
    match proto::read_state(sock) {
        Ok(State::IperfDone) | Err(ProtocolError::Closed) => Ok(()),
        Ok(other) => Err(ProtocolError::UnexpectedState {
            expected: State::IperfDone,
            got: other,
        }
        .into()),
        Err(e) => Err(e.into()),
    }
}

/// Our side's results in iperf3's exchange shape (used by client and server).
pub fn local_results(
    totals: &[StreamTotals],
    cpu: Option<super::cpu::CpuUse>,
    send: SendMethod,
    receive: ReceiveMethod,
    protocol: Protocol,
) -> ExchangeResults {
    let any_sender = totals.iter().any(|s| s.sender);
    let all_senders = totals.iter().all(|s| s.sender) && !totals.is_empty();
    let has_retransmits =
        protocol == Protocol::Tcp && totals.iter().any(|s| s.retransmits.is_some());
    ExchangeResults {
        cpu_util_total: Some(cpu.map_or(0.0, |c| c.process_total_percent)),
        cpu_util_user: Some(cpu.map_or(0.0, |c| c.process_user_percent)),
        cpu_util_system: Some(cpu.map_or(0.0, |c| c.process_system_percent)),
        sender_has_retransmits: match (any_sender, all_senders) {
            (false, _) => -1,
            _ => i64::from(has_retransmits),
        },
        congestion_used: None,
        streams: totals
            .iter()
            .map(|s| ExchangeStream {
                id: s.id,
                bytes: s.bytes,
                retransmits: if s.sender {
                    s.retransmits.map_or(-1, i64::from)
                } else {
                    -1
                },
                jitter: s.jitter_ms / 1000.0,
                errors: s.lost_packets as i64,
                packets: s.packets as i64,
                start_time: 0.0,
                end_time: s.seconds,
            })
            .collect(),
        server_output_text: None,
        nastune: Some(ResultsExtension {
            version: 1,
            system_cpu: cpu.and_then(|c| c.system),
            interval_system_cpu: Vec::new(),
            send_method: Some(format!("{send:?}").to_lowercase()),
            receive_method: Some(format!("{receive:?}").to_lowercase()),
            cpus: None,
        }),
    }
}
