//! Text for `nastune bench net` and `nastune net serve`: iperf3-like interval
//! lines and a summary that adds what iperf3 leaves out (system CPU, softirq, method).

use std::fmt::Write;

use super::format;
use crate::net::client::ClientConfig;
use crate::net::doc::{NetReport, Side};
use crate::net::engine::Interval;
use crate::net::server::SessionReport;

/// A rate measured in bits a second (iperf3's unit, which `--json` keeps) in the
/// decimal MB/s every other text and page gives a rate in: `check` said the
/// network carries 117.7 MB/s where `bench net` said 941.60 Mbit/s of that link.
pub fn bits(bps: f64) -> String {
    format::rate(bps / 8.0)
}

pub fn header(cfg: &ClientConfig) -> String {
    format!(
        "Connecting to '{}:{}': {} {} stream(s), {} s{}",
        cfg.host,
        cfg.port,
        if cfg.udp { "UDP" } else { "TCP" },
        cfg.streams,
        cfg.duration_secs,
        if cfg.reverse {
            ", reverse"
        } else if cfg.bidir {
            ", bidirectional"
        } else {
            ""
        }
    )
}

pub fn interval(i: &Interval) -> String {
    let mut out = String::new();
    for s in &i.streams {
        let _ = write!(
            out,
            "[{:>3}] {:6.2}-{:<6.2} s  {:>10}  {:>12}  {}",
            s.id,
            s.start,
            s.end,
            format::bytes(s.bytes),
            bits(s.bits_per_second),
            if s.sender { "sent" } else { "received" }
        );
        if let Some(r) = s.retransmits {
            let _ = write!(out, "  retr {r}");
        }
        if let Some(c) = s.snd_cwnd {
            let _ = write!(out, "  cwnd {}", format::bytes(c));
        }
        if let Some(r) = s.rtt {
            let _ = write!(out, "  rtt {r} us");
        }
        if let (Some(j), Some(l), Some(p)) = (s.jitter_ms, s.lost_packets, s.packets) {
            let _ = write!(out, "  jitter {j:.3} ms  lost {l}/{p}");
        }
        if s.omitted {
            out.push_str("  (omitted)");
        }
        out.push('\n');
    }
    if let Some(sys) = i.cpu.system {
        let _ = writeln!(
            out,
            "      cpu: system {:.1} % (softirq {:.1} %), this process {:.1} % of one core",
            sys.busy_percent, sys.softirq_percent, i.cpu.process_total_percent
        );
    }
    out
}

fn side_line(label: &str, s: &Side) -> String {
    let mut line = format!(
        "{label:<22} {:>10}  {:>12}  in {:.2} s",
        format::bytes(s.bytes),
        bits(s.bits_per_second),
        s.seconds
    );
    if let Some(r) = s.retransmits {
        let _ = write!(line, "  retr {r}");
    }
    if let (Some(j), Some(l), Some(p), Some(pc)) =
        (s.jitter_ms, s.lost_packets, s.packets, s.lost_percent)
    {
        let _ = write!(line, "  jitter {j:.3} ms  lost {l}/{p} ({pc:.2} %)");
    }
    if let Some(o) = s.out_of_order.filter(|o| *o > 0) {
        let _ = write!(line, "  out-of-order {o}");
    }
    line.push('\n');
    line
}

pub fn summary(r: &NetReport) -> String {
    let mut out = String::new();
    let e = &r.end;
    for (label, side) in [
        ("sent", &e.sum_sent),
        ("received", &e.sum_received),
        ("sent (reverse)", &e.sum_sent_bidir_reverse),
        ("received (reverse)", &e.sum_received_bidir_reverse),
    ] {
        if let Some(s) = side {
            out.push_str(&side_line(label, s));
        }
    }
    for s in &e.streams {
        if let (Some(min), Some(mean), Some(max)) =
            (s.sender.min_rtt, s.sender.mean_rtt, s.sender.max_rtt)
        {
            let _ = writeln!(
                out,
                "stream {:>3} rtt min/mean/max {min}/{mean}/{max} us, max cwnd {}",
                s.sender.id,
                format::bytes(s.sender.max_snd_cwnd.unwrap_or(0))
            );
        }
    }
    if let Some(rr) = &e.rr {
        let _ = writeln!(
            out,
            "{}: {} transactions, {:.0}/s, latency p50 {:.1} us, p90 {:.1} us, p99 {:.1} us, max {:.1} us, errors {}",
            crate::net::client::method_name(&rr.mode),
            rr.transactions,
            rr.transactions_per_sec,
            rr.latency_p50_ns as f64 / 1e3,
            rr.latency_p90_ns as f64 / 1e3,
            rr.latency_p99_ns as f64 / 1e3,
            rr.latency_max_ns as f64 / 1e3,
            rr.errors
        );
    }
    let c = &e.cpu_utilization_percent;
    let _ = writeln!(
        out,
        "cpu (process, % of one core): local {:.1} %, remote {:.1} %",
        c.host_total, c.remote_total
    );
    for (label, sys) in [
        ("local", e.system_cpu_percent.host),
        ("remote", e.system_cpu_percent.remote),
    ] {
        if let Some(s) = sys {
            let _ = writeln!(
                out,
                "cpu (system-wide, all cores): {label} {:.1} % busy, softirq {:.1} %",
                s.busy_percent, s.softirq_percent
            );
        }
    }
    if let Some(cost) = &e.cpu_cost {
        for (label, c) in [("local", &cost.host), ("remote", &cost.remote)] {
            if let Some(c) = c {
                let _ = writeln!(
                    out,
                    "cpu per byte ({label} {}s, {} cores): {:.2} ns/B (CPU-s per GB), softirq {:.2}",
                    c.role, c.cpus, c.ns_per_byte, c.softirq_ns_per_byte
                );
            }
        }
    }
    let _ = writeln!(
        out,
        "method: send {}, receive {}{}",
        r.start.send_method,
        r.start.receive_method,
        r.start
            .remote_send_method
            .as_ref()
            .map(|m| format!(", server sends with {m}"))
            .unwrap_or_default()
    );
    for w in &e.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    let timelines: Vec<(String, crate::timeline::Timeline)> = e
        .timelines
        .iter()
        .map(|t| (t.direction.name().to_string(), t.timeline(&r.intervals)))
        .collect();
    super::timeline_text::render_labelled(&mut out, &timelines, "no byte moved");
    if let Some(v) = &r.validity {
        let _ = writeln!(out, "{}", super::validity_text::line(v));
    }
    out
}

pub fn session_line(r: &SessionReport) -> String {
    let sent: u64 = r.streams.iter().filter(|s| s.sender).map(|s| s.bytes).sum();
    let received: u64 = r
        .streams
        .iter()
        .filter(|s| !s.sender)
        .map(|s| s.bytes)
        .sum();
    let secs = r.streams.iter().map(|s| s.seconds).fold(0.0, f64::max);
    let rate = |b: u64| {
        if secs > 0.0 {
            b as f64 * 8.0 / secs
        } else {
            0.0
        }
    };
    // A latency test moves a few bytes a transaction: its figures are the
    // transactions ("received 0 B ... 0 stream(s)" said nothing).
    if let Some(t) = &r.transactions {
        let mode = match t.mode {
            crate::net::params::RrMode::Rr => "rr",
            crate::net::params::RrMode::Crr => "crr",
        };
        return format!(
            "session from '{}': {}; {mode}, {} stream(s) of {} B requests and {} B responses: \
             {} transactions in {:.1} s, {} each",
            r.peer,
            format::shown(&r.outcome),
            t.streams,
            t.request_bytes,
            t.response_bytes,
            t.count,
            t.seconds,
            t.mean_secs()
                .map_or("none completed".into(), |s| format!("{:.1} us", s * 1e6))
        );
    }
    format!(
        "session from '{}': {}; received {} ({}), sent {} ({}), {} stream(s)",
        r.peer,
        // The outcome of a refused session may quote what the client sent.
        format::shown(&r.outcome),
        format::bytes(received),
        bits(rate(received)),
        format::bytes(sent),
        bits(rate(sent)),
        r.streams.len()
    )
}

#[cfg(test)]
mod tests {
    /// One link, one figure: `check` gives the network stage of a gigabit path as
    /// 117.7 MB/s, so `bench net`, `compare` and the pages' charts say the same
    /// 941.6 Mbit/s that way too (`--json` keeps bits per second).
    #[test]
    fn network_rates_are_decimal_mb_per_second_like_check() {
        assert_eq!(super::bits(941.6e6), "117.7 MB/s");
        assert_eq!(
            crate::report::compare_text::value(941.6e6, "bits/s"),
            "117.7 MB/s"
        );
    }
}
