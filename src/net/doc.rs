//! The versioned result document of `nastune bench net`: iperf3's JSON key names
//! where they exist (`start`, `intervals`, `end.sum_sent`, `sum_received`,
//! `cpu_utilization_percent`, …) plus what iperf3 lacks (system CPU with softirq
//! on both ends, the send/receive method, request/response latency).

use serde::{Deserialize, Serialize};

use super::cpu::SystemCpu;
use super::engine::{Interval, StreamTotals};
use super::params::TestPlan;
use super::results::ExchangeStream;
use super::rr::RrResult;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NetReport {
    pub schema_version: u32,
    pub tool_version: String,
    pub start: Start,
    pub intervals: Vec<Interval>,
    pub end: End,
    /// Whether the box was quiet while we measured (absent before 0.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<crate::bench::validity::Validity>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Start {
    pub connecting_to: ConnectingTo,
    pub timestamp_unix: u64,
    pub cookie: String,
    pub test_start: TestPlan,
    pub authenticated: bool,
    pub send_method: String,
    pub receive_method: String,
    /// From the server's results: only a nastune server reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_send_method: Option<String>,
    /// Buffers and MSS of our data sockets as the kernel reports them (runs stored
    /// before 0.2 lack it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_options: Option<super::sockopt::Applied>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConnectingTo {
    pub host: String,
    pub port: u16,
}

/// One side of one stream at the end, iperf3's `end.streams[].sender|receiver`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Side {
    pub id: u32,
    pub start: f64,
    pub end: f64,
    pub seconds: f64,
    pub bytes: u64,
    pub bits_per_second: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_snd_cwnd: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_rtt: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rtt: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_rtt: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_percent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_of_order: Option<u64>,
    /// Whether this side is the local (client) end.
    pub local: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EndStream {
    pub sender: Side,
    pub receiver: Side,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct CpuPercent {
    pub host_total: f64,
    pub host_user: f64,
    pub host_system: f64,
    pub remote_total: f64,
    pub remote_user: f64,
    pub remote_system: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SystemCpuBothEnds {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<SystemCpu>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<SystemCpu>,
    /// The server's per-interval view (a nastune server only; ours is in `intervals[].cpu`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remote_intervals: Vec<SystemCpu>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct End {
    pub streams: Vec<EndStream>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum_sent: Option<Side>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum_received: Option<Side>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum_sent_bidir_reverse: Option<Side>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum_received_bidir_reverse: Option<Side>,
    pub cpu_utilization_percent: CpuPercent,
    pub system_cpu_percent: SystemCpuBothEnds,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rr: Option<RrResult>,
    /// Stream errors seen locally (a reset connection, say); empty when clean.
    pub warnings: Vec<String>,
}

pub fn local_side(t: &StreamTotals) -> Side {
    let udp_rx = !t.sender && t.packets > 0;
    Side {
        id: t.id,
        start: 0.0,
        end: t.seconds,
        seconds: t.seconds,
        bytes: t.bytes,
        bits_per_second: rate(t.bytes, t.seconds),
        retransmits: t.retransmits.map(i64::from),
        max_snd_cwnd: t.max_snd_cwnd,
        max_rtt: t.max_rtt,
        min_rtt: t.min_rtt,
        mean_rtt: t.mean_rtt,
        jitter_ms: udp_rx.then_some(t.jitter_ms),
        lost_packets: udp_rx.then_some(t.lost_packets as i64),
        packets: (t.packets > 0).then_some(t.packets as i64),
        lost_percent: udp_rx.then(|| percent(t.lost_packets as i64, t.packets as i64)),
        out_of_order: udp_rx.then_some(t.out_of_order),
        local: true,
    }
}

/// The peer's view of a stream; `seconds` falls back to ours for pre-3.2 peers.
pub fn remote_side(r: &ExchangeStream, fallback_seconds: f64, receiver: bool, udp: bool) -> Side {
    let seconds = if r.end_time > r.start_time {
        r.end_time - r.start_time
    } else {
        fallback_seconds
    };
    let udp_rx = udp && receiver;
    Side {
        id: r.id,
        start: 0.0,
        end: seconds,
        seconds,
        bytes: r.bytes,
        bits_per_second: rate(r.bytes, seconds),
        retransmits: (!receiver && r.retransmits >= 0).then_some(r.retransmits),
        jitter_ms: udp_rx.then_some(r.jitter * 1000.0),
        lost_packets: udp_rx.then_some(r.errors),
        packets: udp.then_some(r.packets),
        lost_percent: udp_rx.then(|| percent(r.errors, r.packets)),
        local: false,
        ..Side::default()
    }
}

pub fn rate(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        0.0
    }
}

fn percent(part: i64, whole: i64) -> f64 {
    if whole > 0 {
        100.0 * part as f64 / whole as f64
    } else {
        0.0
    }
}

/// Adds sides up as iperf3's `sum_*`: bytes add, seconds is the longest.
pub fn sum<'a>(sides: impl Iterator<Item = &'a Side>) -> Option<Side> {
    let mut out: Option<Side> = None;
    for s in sides {
        let o = out.get_or_insert_with(|| Side {
            local: s.local,
            ..Side::default()
        });
        o.bytes += s.bytes;
        o.seconds = o.seconds.max(s.seconds);
        o.end = o.seconds;
        o.retransmits = match (o.retransmits, s.retransmits) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        o.lost_packets = match (o.lost_packets, s.lost_packets) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        o.packets = match (o.packets, s.packets) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        o.jitter_ms = match (o.jitter_ms, s.jitter_ms) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
    if let Some(o) = &mut out {
        o.bits_per_second = rate(o.bytes, o.seconds);
        if let (Some(l), Some(p)) = (o.lost_packets, o.packets) {
            o.lost_percent = Some(percent(l, p));
        }
    }
    out
}

impl crate::store::Document for NetReport {
    const KIND: crate::store::DocKind = crate::store::DocKind::Net;
    const VERSION: u32 = SCHEMA_VERSION;

    fn validity(&self) -> Option<&crate::bench::validity::Validity> {
        self.validity.as_ref()
    }
}
