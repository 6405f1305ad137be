//! What compare and report take from an HTTP bench: requests/s and mean total
//! latency per URL and connection mode under the same load settings.

use super::HttpReport;
use crate::doc::metrics::Metric;
use crate::doc::metrics::{Chart, Measured, latency_mean, single};

impl Measured for HttpReport {
    const KIND: &'static str = "http";
    const CHARTS: &'static [Chart] = &[Chart {
        title: "HTTP requests",
        quantity: "requests/s",
        unit: "req/s",
    }];

    /// Requests/s per (URL, mode) under the same load settings, and the mean
    /// total latency with every request as a sample (as disk does per I/O).
    fn metrics(&self, out: &mut Vec<Metric>) {
        let s = &self.settings;
        let rate = s
            .rate_per_sec
            .map_or_else(|| "null".to_string(), |r| r.to_string());
        let load = format!(
            "t={} c={} rate={rate} method={} body={}",
            s.threads, s.connections, s.request.method, s.request.body_bytes
        );
        for run in &self.runs {
            let mode = run.mode.name();
            let id = format!("http {} mode={mode} {load}", run.url);
            let label = format!("{} {mode}", run.url);
            out.extend(single(
                &id,
                &label,
                "requests/s",
                "req/s",
                run.requests_per_sec,
            ));
            out.extend(latency_mean(
                &id,
                &label,
                "total latency mean",
                run.latency.total_ns.as_ref(),
                "per-request latency",
            ));
        }
    }
}
