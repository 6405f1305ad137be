//! `bench http`: an HTTP/1.1 and HTTPS load generator. `-t` OS threads, each
//! with its own epoll loop over its share of `-c` connections (see engine.rs);
//! a hand-written response parser (parser.rs); rustls with ring (tls.rs).
//! This module plans the threads, runs one (URL, mode) measurement, merges the
//! threads' results into the plain document that is printed and stored.

pub mod engine;
pub mod fuzz;
mod measured;
pub mod parser;
mod poll;
pub mod target;
pub mod tls;

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use serde::{Deserialize, Serialize};

pub use engine::ConnMode;
use engine::{ErrorKind, InFlight, STATUS_CLASSES, ThreadPlan, ThreadResult};
use target::{RequestSpec, Url};

use crate::bench::cpu;
use crate::bench::disk::LatencyStats;
use crate::root::Root;

/// Version of the JSON document (`--json` and the store).
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error(transparent)]
    Url(#[from] target::UrlError),
    #[error("cannot resolve '{host}': {message}")]
    Resolve { host: String, message: String },
    #[error(transparent)]
    TlsSetup(#[from] tls::TlsSetupError),
    // Not a source (`From` below): the message embeds it.
    #[error("the first request failed, so no load was started: {0}")]
    Preflight(engine::ConnError),
    #[error("cannot start a load thread: {0}")]
    Thread(std::io::Error),
    #[error("interrupted before the first response")]
    Interrupted,
}

impl From<engine::ConnError> for HttpError {
    fn from(e: engine::ConnError) -> Self {
        HttpError::Preflight(e)
    }
}

/// Everything one measurement needs; the same for both URLs of a comparison.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Settings {
    pub threads: u32,
    pub connections: u32,
    pub duration_secs: f64,
    pub warmup_secs: f64,
    pub timeout_secs: f64,
    /// Open loop: total requests per second; None = closed loop.
    pub rate_per_sec: Option<f64>,
    pub request: RequestSpec,
    #[serde(skip)]
    pub trust: tls::Trust,
    pub insecure: bool,
}

/// A whole `bench http` run: each mode against each URL (a second URL is
/// compared against the first), all with the same settings.
#[derive(Debug, Clone)]
pub struct Plan {
    pub urls: Vec<target::Url>,
    pub modes: Vec<ConnMode>,
    pub settings: Settings,
}

/// The measurement of one URL in one connection mode.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub url: String,
    pub address: String,
    /// The mode asked for.
    pub mode: ConnMode,
    /// What ran: `resume` on http:// is a plain new connection per request.
    pub effective_mode: ConnMode,
    pub seconds: f64,
    pub requests: u64,
    pub requests_per_sec: f64,
    pub body_bytes: u64,
    pub body_bytes_per_sec: f64,
    pub target_rate_per_sec: Option<f64>,
    /// Open loop: requests due in the window, and those sent more than 1 ms late.
    pub requests_due: Option<u64>,
    pub requests_late: Option<u64>,
    pub status_classes: BTreeMap<String, u64>,
    pub errors: BTreeMap<String, u64>,
    pub error_examples: Vec<String>,
    /// Requests without a response when the run ended, by where they
    /// stood (`awaiting_response`, `reading_response`, ...).
    /// Runs stored before this was counted read back as empty.
    #[serde(default)]
    pub in_flight_at_end: BTreeMap<String, u64>,
    pub connections_opened: u64,
    pub tls_handshakes_full: u64,
    pub tls_handshakes_resumed: u64,
    pub latency: Latency,
    pub tls: Option<tls::TlsInfo>,
    pub cpu: CpuCost,
}

/// Latency by phase, in nanoseconds. `total_ns` runs from the request's start
/// (its intended send time with --rate; including connect and handshake when
/// the mode opens a connection per request) to the last byte of the response;
/// `ttfb_ns` from the request's first byte sent to the response's first byte.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Latency {
    pub connect_ns: Option<LatencyStats>,
    pub tls_handshake_ns: Option<LatencyStats>,
    pub ttfb_ns: Option<LatencyStats>,
    pub total_ns: Option<LatencyStats>,
}

/// What the load generator itself cost (getrusage over the whole run).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CpuCost {
    pub process_user_ns: u64,
    pub process_sys_ns: u64,
    pub percent_of_one_core: f64,
    pub requests_per_cpu_sec: Option<f64>,
}

/// The same mode against two URLs: how much slower the second is.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    pub mode: ConnMode,
    pub base_url: String,
    pub other_url: String,
    pub base_requests_per_sec: f64,
    pub other_requests_per_sec: f64,
    /// base req/s divided by other req/s (2.0 = the other is half as fast).
    pub slowdown_factor: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HttpReport {
    pub schema_version: u32,
    pub tool_version: String,
    pub settings: Settings,
    pub runs: Vec<RunResult>,
    pub comparisons: Vec<Comparison>,
    /// Whether the box was quiet while we measured (absent before 0.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<crate::bench::validity::Validity>,
}

/// Resolves the URL's host once (the first address), as wrk does.
pub fn resolve(url: &Url) -> Result<SocketAddr, HttpError> {
    let err = |message: String| HttpError::Resolve {
        host: url.host.clone(),
        message,
    };
    (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(|e| err(e.to_string()))?
        .next()
        .ok_or_else(|| err("no address".into()))
}

/// Measures one URL in one mode: a pre-flight request that turns the first
/// failure into a clear error, then the load on `settings.threads` threads.
pub fn measure(
    url: &Url,
    mode: ConnMode,
    settings: &Settings,
    root: &Root,
) -> Result<RunResult, HttpError> {
    let effective_mode = if !url.tls && mode == ConnMode::Resume {
        ConnMode::Close
    } else {
        mode
    };
    let addr = resolve(url)?;
    let tls = if url.tls {
        let config = tls::client_config(&settings.trust, root, mode == ConnMode::Resume)?;
        let name = ServerName::try_from(url.host.clone()).map_err(|_| HttpError::Resolve {
            host: url.host.clone(),
            message: "not a valid TLS server name".into(),
        })?;
        Some((config, name))
    } else {
        None
    };
    let close = effective_mode != ConnMode::KeepAlive;
    let request: Arc<[u8]> = target::build_request(url, &settings.request, close).into();
    let now = Instant::now();
    let mut plan = ThreadPlan {
        addr,
        tls,
        verified: !settings.insecure,
        request,
        head_request: settings.request.method.eq_ignore_ascii_case("HEAD"),
        mode: effective_mode,
        connections: 1,
        rate: None,
        start: now,
        warmup: Duration::ZERO,
        end: now + Duration::from_secs_f64(settings.timeout_secs),
        timeout: Duration::from_secs_f64(settings.timeout_secs),
        first_only: true,
    };
    let preflight = engine::run(&plan)?;
    if preflight.responses() == 0 {
        // The engine returns every other way to end without a response as an
        // error of its own.
        return Err(HttpError::Interrupted);
    }

    let threads = settings.threads.min(settings.connections).max(1);
    let start = Instant::now() + Duration::from_millis(5);
    let warmup = Duration::from_secs_f64(settings.warmup_secs);
    let measured = Duration::from_secs_f64(settings.duration_secs);
    plan.first_only = false;
    plan.start = start;
    plan.warmup = warmup;
    plan.end = start + warmup + measured;
    let cpu_before = cpu::process_cpu();
    let mut handles = Vec::new();
    for t in 0..threads {
        let mut p = plan.clone();
        let (c, extra) = (
            settings.connections / threads,
            settings.connections % threads,
        );
        p.connections = (c + u32::from(t < extra)) as usize;
        p.rate = settings.rate_per_sec.map(|r| r / f64::from(threads));
        let h = std::thread::Builder::new()
            .name(format!("http-load-{t}"))
            .stack_size(256 * 1024)
            .spawn(move || engine::run(&p))
            .map_err(HttpError::Thread)?;
        handles.push(h);
    }
    let mut total = ThreadResult::default();
    for h in handles {
        // A thread returns an error only with first_only; a panic is a bug.
        if let Ok(Ok(r)) = h.join() {
            total.merge(&r);
        }
    }
    let cpu_after = cpu::process_cpu();
    let seconds = Instant::now()
        .min(plan.end)
        .saturating_duration_since(start + warmup)
        .as_secs_f64()
        .max(1e-9);
    let cpu_ns = (cpu_after.user_ns + cpu_after.sys_ns)
        .saturating_sub(cpu_before.user_ns + cpu_before.sys_ns);
    if total.tls_info.is_none() {
        total.tls_info = preflight.tls_info;
    }
    Ok(summarize(
        url,
        addr,
        mode,
        effective_mode,
        settings,
        seconds,
        &total,
        CpuCost {
            process_user_ns: cpu_after.user_ns.saturating_sub(cpu_before.user_ns),
            process_sys_ns: cpu_after.sys_ns.saturating_sub(cpu_before.sys_ns),
            percent_of_one_core: cpu_ns as f64 / 1e9 / (seconds + warmup.as_secs_f64()) * 100.0,
            requests_per_cpu_sec: None,
        },
    ))
}

#[allow(clippy::too_many_arguments)]
fn summarize(
    url: &Url,
    addr: SocketAddr,
    mode: ConnMode,
    effective_mode: ConnMode,
    settings: &Settings,
    seconds: f64,
    t: &ThreadResult,
    mut cpu: CpuCost,
) -> RunResult {
    let requests = t.responses();
    let rps = requests as f64 / seconds;
    if cpu.percent_of_one_core > 0.0 {
        cpu.requests_per_cpu_sec = Some(rps / (cpu.percent_of_one_core / 100.0));
    }
    let status_classes = BTreeMap::from_iter(
        STATUS_CLASSES
            .iter()
            .zip(t.status_classes)
            .map(|(k, v)| (k.to_string(), v)),
    );
    let errors = BTreeMap::from_iter(
        ErrorKind::ALL
            .iter()
            .map(|k| (k.name().to_string(), t.errors[*k as usize])),
    );
    let in_flight_at_end = BTreeMap::from_iter(
        InFlight::ALL
            .iter()
            .map(|k| (k.name().to_string(), t.in_flight_at_end[*k as usize])),
    );
    let open = settings.rate_per_sec.is_some();
    RunResult {
        url: url.display(),
        address: addr.to_string(),
        mode,
        effective_mode,
        seconds,
        requests,
        requests_per_sec: rps,
        body_bytes: t.body_bytes,
        body_bytes_per_sec: t.body_bytes as f64 / seconds,
        target_rate_per_sec: settings.rate_per_sec,
        requests_due: open.then_some(t.requests_due),
        requests_late: open.then_some(t.requests_late),
        status_classes,
        errors,
        error_examples: t.error_examples.clone(),
        in_flight_at_end,
        connections_opened: t.connections_opened,
        tls_handshakes_full: t.handshakes_full,
        tls_handshakes_resumed: t.handshakes_resumed,
        latency: Latency {
            connect_ns: LatencyStats::from_histogram(&t.connect_ns),
            tls_handshake_ns: LatencyStats::from_histogram(&t.tls_handshake_ns),
            ttfb_ns: LatencyStats::from_histogram(&t.ttfb_ns),
            total_ns: LatencyStats::from_histogram(&t.total_ns),
        },
        tls: t.tls_info.clone(),
        cpu,
    }
}

/// Pairs the runs of the base URL with those of the other, mode by mode.
pub fn compare(runs: &[RunResult], base_url: &str, other_url: &str) -> Vec<Comparison> {
    let mut out = Vec::new();
    for b in runs.iter().filter(|r| r.url == base_url) {
        if let Some(o) = runs.iter().find(|r| r.url == other_url && r.mode == b.mode) {
            out.push(Comparison {
                mode: b.mode,
                base_url: b.url.clone(),
                other_url: o.url.clone(),
                base_requests_per_sec: b.requests_per_sec,
                other_requests_per_sec: o.requests_per_sec,
                slowdown_factor: (o.requests_per_sec > 0.0)
                    .then(|| b.requests_per_sec / o.requests_per_sec),
            });
        }
    }
    out
}

impl crate::doc::Document for HttpReport {
    const KIND: crate::doc::DocKind = crate::doc::DocKind::Http;
    const VERSION: u32 = SCHEMA_VERSION;

    fn validity(&self) -> Option<&crate::bench::validity::Validity> {
        self.validity.as_ref()
    }
}
