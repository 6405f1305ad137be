//! Text for `nastune bench http`: one block per (URL, mode) with rates, latency
//! by phase, status classes, errors, TLS parameters and the generator's own CPU,
//! then the slowdown factors of a --compare.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::bench::disk::LatencyStats;
use crate::bench::http::target::Url;
use crate::bench::http::{ConnMode, HttpReport, RunResult, Settings};

pub fn progress(url: &Url, mode: ConnMode, s: &Settings) -> String {
    format!(
        "Loading '{}' ({}): {} thread(s), {} connection(s), {} s + {} s warm-up, {}",
        url.display(),
        mode.name(),
        s.threads.min(s.connections),
        s.connections,
        s.duration_secs,
        s.warmup_secs,
        match s.rate_per_sec {
            Some(r) => format!("open loop at {r} req/s"),
            None => "closed loop".into(),
        }
    )
}

fn ms(ns: u64) -> String {
    let v = ns as f64 / 1e6;
    if v >= 100.0 {
        format!("{v:.0} ms")
    } else if v >= 1.0 {
        format!("{v:.2} ms")
    } else {
        format!("{:.0} us", ns as f64 / 1e3)
    }
}

fn latency_line(out: &mut String, label: &str, l: &Option<LatencyStats>) {
    let Some(l) = l else { return };
    let p = |q: f64| l.at(q).map(ms).unwrap_or_else(|| "-".into());
    let _ = writeln!(
        out,
        "  {label:<14} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        ms(l.mean as u64),
        p(50.0),
        p(90.0),
        p(99.0),
        p(99.9),
        ms(l.max)
    );
}

/// `a 1, b 2` with the non-zero counts, or `none`.
fn counts_text(counts: &BTreeMap<String, u64>) -> String {
    let nonzero: Vec<String> = counts
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{} {n}", super::format::shown(k)))
        .collect();
    if nonzero.is_empty() {
        "none".to_string()
    } else {
        nonzero.join(", ")
    }
}

fn counts_line(out: &mut String, label: &str, counts: &BTreeMap<String, u64>) {
    let _ = writeln!(out, "  {label}: {}", counts_text(counts));
}

fn run_block(out: &mut String, r: &RunResult) {
    let mode = if r.mode == r.effective_mode {
        r.mode.name().to_string()
    } else {
        format!(
            "{} (run as {}: no TLS)",
            r.mode.name(),
            r.effective_mode.name()
        )
    };
    let _ = writeln!(
        out,
        "{} ({}), {mode}",
        super::format::shown(&r.url),
        super::format::shown(&r.address)
    );
    let _ = writeln!(
        out,
        "  {:.0} requests/s ({} in {:.2} s), {}/s of body",
        r.requests_per_sec,
        r.requests,
        r.seconds,
        super::format::bytes(r.body_bytes_per_sec as u64)
    );
    if let (Some(target), Some(due), Some(late)) =
        (r.target_rate_per_sec, r.requests_due, r.requests_late)
    {
        let _ = writeln!(
            out,
            "  target {target:.0} req/s: {due} due, {late} sent more than 1 ms late"
        );
        if due > 0 && (late * 10 > due || r.requests_per_sec < target * 0.9) {
            let _ = writeln!(
                out,
                "  warning: behind schedule; more connections (-c) or a lower --rate"
            );
        }
    }
    let _ = writeln!(
        out,
        "  {:<14} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "latency", "mean", "p50", "p90", "p99", "p99.9", "max"
    );
    latency_line(out, "connect", &r.latency.connect_ns);
    latency_line(out, "TLS handshake", &r.latency.tls_handshake_ns);
    latency_line(out, "first byte", &r.latency.ttfb_ns);
    latency_line(out, "total", &r.latency.total_ns);
    counts_line(out, "responses", &r.status_classes);
    counts_line(out, "socket errors", &r.errors);
    for e in &r.error_examples {
        // An example error may quote the server's reply (a status line, a header).
        let _ = writeln!(out, "    e.g. {}", super::format::shown(e));
    }
    counts_line(out, "cut off by the end of the run", &r.in_flight_at_end);
    let _ = write!(out, "  connections opened: {}", r.connections_opened);
    if r.tls_handshakes_full + r.tls_handshakes_resumed > 0 {
        let _ = write!(
            out,
            ", TLS handshakes: {} full, {} resumed",
            r.tls_handshakes_full, r.tls_handshakes_resumed
        );
        if r.effective_mode == ConnMode::Resume && r.tls_handshakes_resumed == 0 {
            out.push_str(
                " (the server resumed no session: are its session tickets and cache off?)",
            );
        }
    }
    out.push('\n');
    if let Some(t) = &r.tls {
        let _ = writeln!(
            out,
            "  TLS: {}, {}, key exchange {}, certificate {}{}",
            t.version,
            t.cipher_suite,
            t.key_exchange,
            t.certificate_key,
            if t.verified {
                ""
            } else {
                " (not verified: --insecure)"
            }
        );
    }
    let _ = write!(
        out,
        "  load generator CPU: {:.0} % of one core",
        r.cpu.percent_of_one_core
    );
    if let Some(per) = r.cpu.requests_per_cpu_sec {
        let _ = write!(out, " ({per:.0} requests per CPU second)");
    }
    out.push('\n');
}

/// Why a run measured nothing, for stderr and exit status 1: its errors and
/// the requests the end cut off, which a server that never finishes leaves.
pub fn no_responses(r: &RunResult) -> Option<String> {
    if r.requests > 0 {
        return None;
    }
    Some(format!(
        "no response to '{}' ({}) completed in the measured {:.2} s: errors: {}; cut off by the end: {}; \
the server finished no response in time (see the errors), or needs longer than the run: raise --timeout or --duration",
        r.url,
        r.mode.name(),
        r.seconds,
        counts_text(&r.errors),
        counts_text(&r.in_flight_at_end)
    ))
}

pub fn render(report: &HttpReport) -> String {
    let mut out = String::new();
    for (i, r) in report.runs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        run_block(&mut out, r);
    }
    if !report.comparisons.is_empty() {
        out.push('\n');
        let _ = writeln!(out, "slowdown of the second URL against the first:");
        for c in &report.comparisons {
            let factor = c
                .slowdown_factor
                .map(|f| format!("{f:.2}x"))
                .unwrap_or_else(|| "n/a (no responses)".into());
            let _ = writeln!(
                out,
                "  {:<11} {:>9.0} vs {:>9.0} req/s  {factor}",
                c.mode.name(),
                c.base_requests_per_sec,
                c.other_requests_per_sec
            );
        }
    }
    if let Some(v) = &report.validity {
        let _ = writeln!(out, "\n{}", super::validity_text::line(v));
    }
    out
}
