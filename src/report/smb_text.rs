//! `bench smb` on the terminal: what was negotiated, one line per workload
//! with fio's quantities, the server's CPU per GB when it is this box, and
//! the slowdown factors of signing and encryption.

use std::fmt::Write;

use crate::bench::smb::{ColdCache, SecurityRun, SmbReport, WorkloadResult};

fn session_line(r: &SecurityRun) -> String {
    let s = &r.session;
    format!(
        "{}: SMB {}, signing {}, encryption {}, max read {} / write {}, {} credits{}, block {}, file {}",
        r.security.name(),
        s.dialect.name(),
        s.signing.map_or("off", |a| a.name()),
        s.cipher.map_or("off", |c| c.name()),
        super::format::bytes(u64::from(s.max_read_bytes)),
        super::format::bytes(u64::from(s.max_write_bytes)),
        s.credits_granted,
        if s.guest { ", guest" } else { "" },
        super::format::bytes(u64::from(r.block_bytes)),
        super::format::bytes(r.size_bytes),
    )
}

fn pct(r: &WorkloadResult, p: &str) -> String {
    r.clat_ns
        .as_ref()
        .and_then(|l| l.percentile.get(p))
        .map_or_else(|| "-".into(), |ns| format!("{:.2}", *ns as f64 / 1e6))
}

fn result_line(r: &WorkloadResult) -> String {
    let per_gb = |ns: u64| {
        if r.bytes == 0 {
            "-".to_string()
        } else {
            format!("{:.2}", ns as f64 / 1e9 / (r.bytes as f64 / 1e9))
        }
    };
    let server = r.server.as_ref().map_or_else(String::new, |s| {
        let stages: Vec<String> = s
            .stages
            .iter()
            .filter(|st| st.cpu_ns > 0)
            .map(|st| match st.cpu_seconds_per_gb {
                Some(g) => format!("{} {g:.2}", st.stage),
                None => format!("{} {:.2}s", st.stage, st.cpu_ns as f64 / 1e9),
            })
            .collect();
        format!("  server CPU-s/GB: {}", stages.join(", "))
    });
    format!(
        "  {:<20} {:>10.1} {:>10.0} {:>8} {:>8} {:>8}{}",
        r.label(),
        r.bw_bytes / 1e6,
        r.iops,
        pct(r, "50.000000"),
        pct(r, "99.000000"),
        per_gb(r.client_cpu_ns),
        server
    )
}

pub fn render(report: &SmbReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "SMB {}{}",
        report.settings.target,
        if report.server_local {
            " (server: this box)"
        } else {
            ""
        }
    );
    for run in &report.runs {
        out.push('\n');
        let _ = writeln!(out, "{}", session_line(run));
        let _ = writeln!(
            out,
            "  {:<20} {:>10} {:>10} {:>8} {:>8} {:>8}",
            "workload", "MB/s", "ops/s", "p50 ms", "p99 ms", "CPU-s/GB"
        );
        for r in &run.results {
            let _ = writeln!(out, "{}", result_line(r));
        }
        let timelines: Vec<(String, &crate::timeline::Timeline)> = run
            .results
            .iter()
            .filter_map(|r| Some((r.label(), r.timeline.as_ref()?)))
            .collect();
        super::timeline_text::render_labelled(&mut out, &timelines, "no request completed");
        // Said once per run: a warm read measures the server's memory.
        for r in &run.results {
            if let Some(ColdCache::NotEvicted(why)) = &r.cold_cache {
                let _ = writeln!(
                    out,
                    "  note: {} may have come from the server's page cache: {why}",
                    r.label()
                );
            }
        }
    }
    if !report.slowdowns.is_empty() {
        out.push('\n');
        let _ = writeln!(out, "slowdown against plain (plain rate / this rate):");
        for s in &report.slowdowns {
            let _ = writeln!(
                out,
                "  {:<20} {:<8} {:.2}x",
                s.workload,
                s.security.name(),
                s.factor
            );
        }
    }
    if let Some(v) = &report.validity {
        let _ = writeln!(out, "\n{}", super::validity_text::line(v));
    }
    out
}

/// The progress line for one security mode and workload.
pub fn progress(target: &str, step: &str) -> String {
    format!("bench smb {target}: {step}")
}
