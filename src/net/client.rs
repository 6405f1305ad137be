//! `nastune bench net HOST`: an iperf3-compatible client. The client opens every
//! connection (control and data, in every direction), so it works through NAT.

use std::io::{self, Read};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::time::{Duration, Instant};

use thiserror::Error;

use super::auth;
use super::doc::{
    self, ConnectingTo, CpuPercent, End, EndStream, NetReport, Start, SystemCpuBothEnds,
};
use super::engine::{
    DataSocket, Engine, Interval, ReceiveMethod, SendMethod, StreamConfig, StreamSpec,
};
use super::params::{self, Direction, Extension, Params, Protocol, RrMode, RrParams, TestPlan};
use super::protocol::{self as proto, COOKIE_SIZE, ProtocolError, State};
use super::results::{self, ExchangeResults};
use super::rr;
use super::server::local_results;
use super::sockopt;
use super::udp;
use crate::root::Root;

#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub host: String,
    pub port: u16,
    pub udp: bool,
    pub streams: u32,
    pub duration_secs: u32,
    pub omit_secs: u32,
    pub interval: Duration,
    pub block_bytes: Option<u32>,
    pub rate_bits_per_sec: Option<u64>,
    pub window_bytes: u32,
    pub mss_bytes: u32,
    pub nodelay: bool,
    pub reverse: bool,
    pub bidir: bool,
    pub udp_counters_64bit: bool,
    pub send: SendMethod,
    pub receive: ReceiveMethod,
    pub psk: Option<Vec<u8>>,
    pub rr: Option<RrParams>,
    pub connect_timeout: Duration,
}

#[derive(Debug, Error)]
pub enum ClientError {
    #[error("cannot resolve '{host}': {err}")]
    Resolve { host: String, err: io::Error },
    #[error(
        "cannot connect to '{addr}': {err}; is 'nastune net serve' or 'iperf3 -s' running there?"
    )]
    Connect { addr: SocketAddr, err: io::Error },
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    // Not a `source`: the message embeds it, and an error chain would say it twice.
    #[error("invalid test: {0}")]
    Params(params::ParamsError),
    #[error("the server asks for a pre-shared key; pass --psk-file with the server's key")]
    NeedPsk,
    #[error(
        "--psk-file was given but the server did not ask for authentication; refusing to run unauthenticated"
    )]
    ServerNotAuthenticating,
    #[error("the server's results are malformed: {0}")]
    Results(String),
    #[error("UDP stream set-up failed: {0}")]
    Udp(String),
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl From<params::ParamsError> for ClientError {
    fn from(e: params::ParamsError) -> Self {
        ClientError::Params(e)
    }
}

impl ClientConfig {
    /// The parameter JSON this client sends (and validates locally first).
    pub fn params(&self) -> Params {
        Params {
            tcp: (!self.udp).then_some(true),
            udp: self.udp.then_some(true),
            omit: Some(self.omit_secs),
            time: Some(self.duration_secs),
            parallel: Some(self.streams),
            reverse: self.reverse.then_some(true),
            bidirectional: self.bidir.then_some(true),
            window: (self.window_bytes > 0).then_some(self.window_bytes),
            len: Some(self.block_bytes.unwrap_or(if self.udp {
                params::DEFAULT_UDP_BLOCK
            } else {
                params::DEFAULT_TCP_BLOCK
            })),
            bandwidth: self
                .rate_bits_per_sec
                .or(self.udp.then_some(params::DEFAULT_UDP_RATE)),
            mss: (self.mss_bytes > 0).then_some(self.mss_bytes),
            nodelay: self.nodelay.then_some(true),
            udp_counters_64bit: self.udp_counters_64bit.then_some(1),
            zerocopy: (self.send == SendMethod::Sendfile).then_some(1),
            client_version: Some(concat!("nastune ", env!("CARGO_PKG_VERSION")).into()),
            nastune_results: Some(super::results::RESULTS_VERSION),
            nastune: self.rr.map(|r| Extension {
                version: 1,
                rr: Some(r),
            }),
            ..Params::default()
        }
    }
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr, ClientError> {
    let err = |err| ClientError::Resolve {
        host: host.to_string(),
        err,
    };
    (host, port)
        .to_socket_addrs()
        .map_err(err)?
        .next()
        .ok_or_else(|| err(io::Error::new(io::ErrorKind::NotFound, "no address")))
}

fn connect(addr: SocketAddr, timeout: Duration) -> Result<TcpStream, ClientError> {
    TcpStream::connect_timeout(&addr, timeout).map_err(|err| ClientError::Connect { addr, err })
}

/// Runs one test; `on_interval` sees each interval as it is measured.
pub fn run(
    cfg: &ClientConfig,
    on_interval: &mut dyn FnMut(&Interval),
) -> Result<NetReport, ClientError> {
    let params = cfg.params();
    // Our own limits are iperf3's; the server applies its own on top.
    let plan = params.plan(&params::Caps {
        max_duration_secs: params::MAX_TIME_SECS,
        max_streams: params::MAX_STREAMS,
        max_bitrate: 0,
    })?;
    let addr = resolve(&cfg.host, cfg.port)?;
    let mut ctrl = connect(addr, cfg.connect_timeout)?;
    ctrl.set_nodelay(true)?;
    ctrl.set_read_timeout(Some(Duration::from_secs(10)))?;
    let cookie = proto::make_cookie();
    io::Write::write_all(&mut ctrl, &cookie)?;

    let mut b = [0u8; 1];
    ctrl.read_exact(&mut b).map_err(|_| ProtocolError::Closed)?;
    let mut authenticated = false;
    if b[0] as i8 == auth::AUTH_CHALLENGE_STATE {
        let Some(psk) = &cfg.psk else {
            return Err(ClientError::NeedPsk);
        };
        let raw = proto::read_message(&mut ctrl, auth::MAX_AUTH_JSON)?;
        let ch: auth::Challenge = serde_json::from_slice(&raw).map_err(ProtocolError::Decode)?;
        let nonce = auth::unhex(&ch.nonce).map_err(|e| ClientError::Results(e.to_string()))?;
        let answer = serde_json::to_vec(&auth::Response {
            mac: auth::respond(psk, &nonce, &cookie),
        })
        .map_err(ProtocolError::Encode)?;
        proto::write_message(&mut ctrl, &answer)?;
        proto::expect_state(&mut ctrl, State::ParamExchange)?;
        authenticated = true;
    } else {
        match proto::read_state(&mut &b[..]) {
            Ok(State::ParamExchange) if cfg.psk.is_some() => {
                return Err(ClientError::ServerNotAuthenticating);
            }
            Ok(State::ParamExchange) => {}
            Ok(got) => {
                return Err(ProtocolError::UnexpectedState {
                    expected: State::ParamExchange,
                    got,
                }
                .into());
            }
            Err(e) => return Err(e.into()),
        }
    }
    let json = serde_json::to_vec(&params).map_err(ProtocolError::Encode)?;
    proto::write_message(&mut ctrl, &json)?;
    // The server may need a while to bind UDP sockets; the deadline is generous.
    proto::expect_state(&mut ctrl, State::CreateStreams)?;

    let crr = plan.rr.filter(|r| r.mode == RrMode::Crr);
    let mut specs = Vec::new();
    let mut socket_options = None;
    for index in 0..plan.connection_count() {
        let socket = match plan.protocol {
            Protocol::Tcp => DataSocket::Tcp(open_tcp(addr, &cookie, &plan, cfg.connect_timeout)?),
            Protocol::Udp => DataSocket::Udp(open_udp(addr, &plan)?),
        };
        // Every stream is set up alike; the first one's read-back stands for all.
        if socket_options.is_none() {
            socket_options = Some(match &socket {
                DataSocket::Tcp(t) => sockopt::read_applied(t, true)?,
                DataSocket::Udp(u) => sockopt::read_applied(u, false)?,
            });
        }
        specs.push(StreamSpec {
            id: params::stream_id(index),
            sender: plan.client_sends(index),
            socket,
        });
    }
    proto::expect_state(&mut ctrl, State::TestStart)?;
    proto::expect_state(&mut ctrl, State::TestRunning)?;
    let total = Duration::from_secs(u64::from(plan.duration_secs) + u64::from(plan.omit_secs));

    let mut intervals = Vec::new();
    let mut end = End::default();
    let started = Instant::now();
    let (totals, cpu) = if let Some(r) = plan.rr {
        let meter_root = Root::live();
        let mut meter = super::cpu::CpuMeter::start(&meter_root);
        let (hist, errors) = match crr {
            Some(_) => rr::run_crr(
                addr,
                cookie,
                plan.streams,
                r.request_bytes,
                r.response_bytes,
                total,
            ),
            None => {
                let socks = specs
                    .into_iter()
                    .filter_map(|s| match s.socket {
                        DataSocket::Tcp(t) => Some(t),
                        DataSocket::Udp(_) => None,
                    })
                    .collect();
                rr::run_rr(socks, r.request_bytes, r.response_bytes, total)
            }
        };
        let secs = started.elapsed().as_secs_f64();
        end.rr = Some(rr::summarize(
            r.mode,
            plan.streams,
            r.request_bytes,
            r.response_bytes,
            secs,
            &hist,
            errors,
        ));
        (Vec::new(), meter.lap(&meter_root))
    } else {
        let cfg_streams = StreamConfig {
            block_bytes: plan.block_bytes as usize,
            rate_bits_per_sec: plan.rate_bits_per_sec,
            udp_counters_64bit: plan.udp_counters_64bit,
            send: cfg.send,
            receive: cfg.receive,
        };
        let mut engine = Engine::start(
            specs,
            cfg_streams,
            Duration::from_secs(plan.omit_secs.into()),
            Root::live(),
        )?;
        let mut next = cfg.interval;
        loop {
            let elapsed = engine.elapsed();
            if elapsed >= total {
                break;
            }
            // Wake for the next report, the end, or the 50 ms tick that cuts the
            // warm-up and notices a server abort. Without reports (`-i 0`) the next
            // one is never due: waking for it at 0 s spun this thread at a whole
            // core (a paced 1 Gbit/s client used 12x iperf3's CPU per GB).
            let wake = if cfg.interval.is_zero() {
                total
            } else {
                next.min(total)
            };
            std::thread::sleep(wake.saturating_sub(elapsed).min(Duration::from_millis(50)));
            engine.poll_omit();
            check_server_abort(&ctrl)?;
            if engine.elapsed() >= next && !cfg.interval.is_zero() {
                let i = engine.sample();
                on_interval(&i);
                intervals.push(i);
                next += cfg.interval;
            }
        }
        // TEST_END goes at the stop, before waiting for the senders to leave: the
        // server's clock runs until it arrives (iperf3's client sends it from its
        // one thread at the same moment).
        engine.stop();
        proto::write_state(&mut ctrl, State::TestEnd)?;
        let (totals, cpu, errors) = engine.finish(Duration::from_secs(1));
        end.warnings = errors;
        (totals, cpu)
    };
    if plan.rr.is_some() {
        proto::write_state(&mut ctrl, State::TestEnd)?;
    }

    ctrl.set_read_timeout(Some(Duration::from_secs(15)))?;
    proto::expect_state(&mut ctrl, State::ExchangeResults)?;
    let ours = local_results(&totals, Some(cpu), cfg.send, cfg.receive, plan.protocol);
    proto::write_message(
        &mut ctrl,
        &serde_json::to_vec(&ours).map_err(ProtocolError::Encode)?,
    )?;
    let raw = proto::read_message(&mut ctrl, proto::MAX_RESULTS_JSON)?;
    let theirs = results::decode(&raw).map_err(|e| ClientError::Results(e.to_string()))?;
    proto::expect_state(&mut ctrl, State::DisplayResults)?;
    proto::write_state(&mut ctrl, State::IperfDone)?;

    fill_end(&mut end, &plan, &totals, &theirs)?;
    end.cpu_utilization_percent = CpuPercent {
        host_total: cpu.process_total_percent,
        host_user: cpu.process_user_percent,
        host_system: cpu.process_system_percent,
        remote_total: theirs.cpu_util_total.unwrap_or(0.0),
        remote_user: theirs.cpu_util_user.unwrap_or(0.0),
        remote_system: theirs.cpu_util_system.unwrap_or(0.0),
    };
    end.system_cpu_percent = SystemCpuBothEnds {
        host: cpu.system,
        remote: theirs.nastune.as_ref().and_then(|n| n.system_cpu),
        remote_intervals: theirs
            .nastune
            .as_ref()
            .map(|n| n.interval_system_cpu.clone())
            .unwrap_or_default(),
        host_cpus: super::cpu::online_cpus(&Root::live()),
        remote_cpus: theirs.nastune.as_ref().and_then(|n| n.cpus),
    };
    end.cpu_cost = doc::cpu_costs(&plan, &end);
    end.timelines = super::series::judge(&intervals, cfg.interval.as_millis() as u64);
    Ok(NetReport {
        schema_version: doc::SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        start: Start {
            connecting_to: ConnectingTo {
                host: cfg.host.clone(),
                port: cfg.port,
            },
            timestamp_unix: crate::time::now_unix(),
            cookie: String::from_utf8_lossy(&cookie[..COOKIE_SIZE - 1]).into_owned(),
            test_start: plan,
            authenticated,
            send_method: method_name(&cfg.send),
            receive_method: method_name(&cfg.receive),
            remote_send_method: theirs.nastune.as_ref().and_then(|n| n.send_method.clone()),
            socket_options,
        },
        intervals,
        end,
        validity: None,
    })
}

pub fn method_name<T: serde::Serialize>(m: &T) -> String {
    match serde_json::to_value(m) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// A server that gives up mid-test (max duration, error) says so on the control
/// connection; look without blocking.
fn check_server_abort(ctrl: &TcpStream) -> Result<(), ClientError> {
    ctrl.set_nonblocking(true)?;
    let mut b = [0u8; 1];
    let r = ctrl.peek(&mut b);
    ctrl.set_nonblocking(false)?;
    match r {
        Ok(0) => Err(ProtocolError::Closed.into()),
        Ok(_) => {
            let mut c = ctrl;
            match proto::read_state(&mut c) {
                Ok(s) => Err(ProtocolError::UnexpectedState {
                    expected: State::TestRunning,
                    got: s,
                }
                .into()),
                Err(e) => Err(e.into()),
            }
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
        Err(e) => Err(e.into()),
    }
}

fn open_tcp(
    addr: SocketAddr,
    cookie: &[u8; COOKIE_SIZE],
    plan: &TestPlan,
    timeout: Duration,
) -> Result<TcpStream, ClientError> {
    let s = sockopt::connect_tuned(addr, timeout, plan.window_bytes, plan.mss_bytes)
        .map_err(|err| ClientError::Connect { addr, err })?;
    if plan.nodelay {
        s.set_nodelay(true)?;
    }
    io::Write::write_all(&mut &s, cookie)?;
    Ok(s)
}

fn open_udp(addr: SocketAddr, plan: &TestPlan) -> Result<UdpSocket, ClientError> {
    let local: SocketAddr = if addr.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    }
    .parse()
    .map_err(|_| ClientError::Udp("bad local address".into()))?;
    let s = UdpSocket::bind(local)?;
    s.connect(addr)?;
    sockopt::set_window(&s, plan.window_bytes)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.send(&udp::CONNECT_MSG.to_ne_bytes())?;
    let mut buf = [0u8; 65_536];
    // In reverse mode data may overtake the reply; skip a few datagrams.
    for _ in 0..8 {
        let n = s
            .recv(&mut buf)
            .map_err(|e| ClientError::Udp(format!("no reply from the server: {e}")))?;
        if n == 4 && udp::is_connect_reply([buf[0], buf[1], buf[2], buf[3]]) {
            s.set_read_timeout(None)?;
            return Ok(s);
        }
    }
    Err(ClientError::Udp(
        "the server never sent the '9876' reply".into(),
    ))
}

fn fill_end(
    end: &mut End,
    plan: &TestPlan,
    totals: &[super::engine::StreamTotals],
    theirs: &ExchangeResults,
) -> Result<(), ClientError> {
    let udp = plan.protocol == Protocol::Udp;
    for t in totals {
        let Some(r) = theirs.streams.iter().find(|r| r.id == t.id) else {
            return Err(ClientError::Results(format!(
                "no results for stream id '{}'",
                t.id
            )));
        };
        let local = doc::local_side(t);
        let remote = doc::remote_side(r, t.seconds, t.sender, udp);
        end.streams.push(if t.sender {
            EndStream {
                sender: local,
                receiver: remote,
            }
        } else {
            EndStream {
                sender: remote,
                receiver: local,
            }
        });
    }
    // The client-to-server direction, and the other one (iperf3's naming).
    let forward = |e: &&EndStream| e.sender.local;
    let backward = |e: &&EndStream| !e.sender.local;
    match plan.direction {
        Direction::Send => {
            end.sum_sent = doc::sum(end.streams.iter().filter(forward).map(|e| &e.sender));
            end.sum_received = doc::sum(end.streams.iter().filter(forward).map(|e| &e.receiver));
        }
        Direction::Reverse => {
            end.sum_sent = doc::sum(end.streams.iter().filter(backward).map(|e| &e.sender));
            end.sum_received = doc::sum(end.streams.iter().filter(backward).map(|e| &e.receiver));
        }
        Direction::Bidir => {
            end.sum_sent = doc::sum(end.streams.iter().filter(forward).map(|e| &e.sender));
            end.sum_received = doc::sum(end.streams.iter().filter(forward).map(|e| &e.receiver));
            end.sum_sent_bidir_reverse =
                doc::sum(end.streams.iter().filter(backward).map(|e| &e.sender));
            end.sum_received_bidir_reverse =
                doc::sum(end.streams.iter().filter(backward).map(|e| &e.receiver));
        }
    }
    Ok(())
}
