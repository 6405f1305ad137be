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
    pub validity: Option<crate::doc::validity::Validity>,
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
    /// The online CPUs each end's percentages are of (runs before 0.3 lack them;
    /// a nastune server older than that does not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpus: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_cpus: Option<u32>,
}

/// The CPU time each end spent per byte of a one-way TCP transfer, system-wide
/// (user + system + softirq of all its cores): what moving a byte over TCP
/// costs that box, to add to a path's other stages.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuCostBothEnds {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<EndCost>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<EndCost>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndCost {
    /// `send` or `receive`: what this end did.
    pub role: String,
    pub cpus: u32,
    /// CPU-seconds per GB (nanoseconds per byte), softirq included.
    pub ns_per_byte: f64,
    /// The softirq part of it (the kernel's receive and transmit completion work).
    pub softirq_ns_per_byte: f64,
}

/// Each end's cost per byte of a TCP test in one direction; `None` for UDP,
/// request/response, both directions at once, or without the CPU figures.
pub fn cpu_costs(plan: &TestPlan, end: &End) -> Option<CpuCostBothEnds> {
    use super::params::{Direction, Protocol};
    if plan.protocol != Protocol::Tcp || plan.rr.is_some() || end.rr.is_some() {
        return None;
    }
    let host_sends = match plan.direction {
        Direction::Send => true,
        Direction::Reverse => false,
        Direction::Bidir => return None,
    };
    // The bytes that arrived, over the time the CPU was metered.
    let moved = end.sum_received.as_ref().or(end.sum_sent.as_ref())?;
    let cost = |cpu: Option<SystemCpu>, cpus: Option<u32>, sends: bool| {
        let cpus = cpus?;
        let (all, softirq) = super::cpu::ns_per_byte(&cpu?, cpus, moved.seconds, moved.bytes)?;
        Some(EndCost {
            role: if sends { "send" } else { "receive" }.into(),
            cpus,
            ns_per_byte: all,
            softirq_ns_per_byte: softirq,
        })
    };
    let c = &end.system_cpu_percent;
    let out = CpuCostBothEnds {
        host: cost(c.host, c.host_cpus, host_sends),
        remote: cost(c.remote, c.remote_cpus, !host_sends),
    };
    (out.host.is_some() || out.remote.is_some()).then_some(out)
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
    /// CPU time per byte on each end nastune ran on (absent before 0.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_cost: Option<CpuCostBothEnds>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rr: Option<RrResult>,
    /// The cliff or stall found in each direction's interval reports (absent in
    /// runs stored before it, and without interval reports).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timelines: Vec<super::series::NetTimeline>,
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

impl crate::doc::Document for NetReport {
    const KIND: crate::doc::DocKind = crate::doc::DocKind::Net;
    const VERSION: u32 = SCHEMA_VERSION;

    fn validity(&self) -> Option<&crate::doc::validity::Validity> {
        self.validity.as_ref()
    }
}

/// This end sending at a cost, the other end unknown: for tests of what reads it.
#[cfg(test)]
pub(crate) fn sending_cost(ns_per_byte: f64, softirq_ns_per_byte: f64) -> CpuCostBothEnds {
    CpuCostBothEnds {
        host: Some(EndCost {
            role: "send".into(),
            cpus: 4,
            ns_per_byte,
            softirq_ns_per_byte,
        }),
        remote: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::params::{Direction, Protocol};

    fn plan(direction: Direction) -> TestPlan {
        TestPlan {
            protocol: Protocol::Tcp,
            direction,
            streams: 1,
            duration_secs: 10,
            omit_secs: 0,
            block_bytes: 131_072,
            rate_bits_per_sec: 0,
            window_bytes: 0,
            mss_bytes: 0,
            nodelay: false,
            udp_counters_64bit: false,
            zerocopy: false,
            rr: None,
        }
    }

    fn busy(user: f64, system: f64, softirq: f64) -> Option<SystemCpu> {
        Some(SystemCpu {
            busy_percent: user + system + softirq,
            user_percent: user,
            system_percent: system,
            softirq_percent: softirq,
            irq_percent: 0.0,
        })
    }

    /// A Pi 2 (four cores) sends to a PC over 100 Mbit/s: 117.7 MB in 10 s.
    #[test]
    fn each_end_gets_its_cost_per_byte_and_role() {
        let mut end = End {
            sum_received: Some(Side {
                seconds: 10.0,
                bytes: 117_700_000,
                ..Side::default()
            }),
            ..End::default()
        };
        end.system_cpu_percent = SystemCpuBothEnds {
            host: busy(2.0, 10.0, 6.0),
            remote: busy(0.1, 0.3, 0.2),
            host_cpus: Some(4),
            remote_cpus: Some(8),
            ..SystemCpuBothEnds::default()
        };
        let c = cpu_costs(&plan(Direction::Send), &end).unwrap();
        let host = c.host.unwrap();
        assert_eq!((host.role.as_str(), host.cpus), ("send", 4));
        // 18 % of 4 cores x 10 s = 7.2 CPU-s over 0.1177 GB = 61.2 ns/B.
        assert!((host.ns_per_byte - 61.17).abs() < 0.01, "{host:?}");
        assert!((host.softirq_ns_per_byte - 20.39).abs() < 0.01);
        let remote = c.remote.unwrap();
        assert_eq!(remote.role, "receive");
        // 0.6 % of 8 cores x 10 s = 0.48 CPU-s: 4.08 ns/B.
        assert!((remote.ns_per_byte - 4.078).abs() < 0.01, "{remote:?}");

        let reverse = cpu_costs(&plan(Direction::Reverse), &end).unwrap();
        assert_eq!(reverse.host.unwrap().role, "receive");
        // A server that did not say its CPU count: only our end.
        end.system_cpu_percent.remote_cpus = None;
        assert_eq!(
            cpu_costs(&plan(Direction::Send), &end).unwrap().remote,
            None
        );
        assert_eq!(cpu_costs(&plan(Direction::Bidir), &end), None);
        let mut udp = plan(Direction::Send);
        udp.protocol = Protocol::Udp;
        assert_eq!(cpu_costs(&udp, &end), None);
    }
}
