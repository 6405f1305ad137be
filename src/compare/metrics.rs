//! The comparable numbers of each bench kind, with the samples behind them.
//! Every bench document implements [`Measured`]: compare matches its metrics
//! across runs and report draws its charts from the same list, so a new bench
//! kind is one `impl` here. Never invents noise: a single number stays a single
//! sample.

use serde::Serialize;

use super::Metric;
use crate::bench::crypto::CryptoReport;
use crate::bench::disk::{DiskBench, LatencyStats, TestStatus};
use crate::bench::http::HttpReport;
use crate::bench::smb::SmbReport;
use crate::net::doc::NetReport;
use crate::stats::Summary;
use crate::store::RunDocs;

/// A chart report draws for a bench kind: one bar per run and workload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Chart {
    pub title: &'static str,
    /// The metric's `quantity`.
    pub quantity: &'static str,
    pub unit: &'static str,
}

/// A bench document's comparable numbers and the charts that show them.
pub trait Measured {
    /// The document kind, for messages ("disk", "net").
    const KIND: &'static str;
    const CHARTS: &'static [Chart];
    fn metrics(&self, out: &mut Vec<Metric>);
    /// The engine that produced the numbers, when the kind has several.
    fn engine(&self) -> Option<&str> {
        None
    }
}

/// Every chart of every bench kind, in report order.
pub const CHARTS: &[&[Chart]] = &[
    <DiskBench as Measured>::CHARTS,
    <CryptoReport as Measured>::CHARTS,
    <NetReport as Measured>::CHARTS,
    <HttpReport as Measured>::CHARTS,
    <SmbReport as Measured>::CHARTS,
];

/// The metrics of every bench document of a run.
pub fn extract(docs: &RunDocs) -> Vec<Metric> {
    let mut out = Vec::new();
    docs.disks().for_each(|d| d.metrics(&mut out));
    docs.cryptos().for_each(|d| d.metrics(&mut out));
    docs.nets().for_each(|d| d.metrics(&mut out));
    docs.https().for_each(|d| d.metrics(&mut out));
    docs.smbs().for_each(|d| d.metrics(&mut out));
    out
}

/// The serialized name of a unit-like enum value (`read`, `keep-alive`).
pub fn name_of<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "?".into(),
    }
}

fn single(
    benchmark: &str,
    label: &str,
    quantity: &'static str,
    unit: &'static str,
    value: f64,
) -> Option<Metric> {
    Some(Metric {
        benchmark: benchmark.to_string(),
        label: label.to_string(),
        quantity,
        unit,
        higher_is_better: true,
        summary: Summary::of(&[value])?,
        samples_from: "single value",
    })
}

/// Every request or I/O as a sample: count, mean and deviation are stored.
fn latency_mean(
    benchmark: &str,
    label: &str,
    quantity: &'static str,
    stats: Option<&LatencyStats>,
    samples_from: &'static str,
) -> Option<Metric> {
    let s = stats.filter(|s| s.n > 0)?;
    Some(Metric {
        benchmark: benchmark.to_string(),
        label: label.to_string(),
        quantity,
        unit: "ns",
        higher_is_better: false,
        summary: Summary {
            n: s.n,
            mean: s.mean,
            variance: s.stddev * s.stddev,
        },
        samples_from,
    })
}

impl Measured for DiskBench {
    const KIND: &'static str = "disk";
    const CHARTS: &'static [Chart] = &[
        Chart {
            title: "Disk bandwidth",
            quantity: "bandwidth",
            unit: "bytes/s",
        },
        Chart {
            title: "Disk IOPS",
            quantity: "iops",
            unit: "IO/s",
        },
    ];

    fn engine(&self) -> Option<&str> {
        Some(&self.engine.name)
    }

    fn metrics(&self, out: &mut Vec<Metric>) {
        for test in &self.tests {
            if test.status != TestStatus::Ok {
                continue;
            }
            let id = test.workload.identity();
            let label = &test.label();
            let passes = test.spread.as_ref().map_or(&[][..], |s| &s.passes[..]);
            for (quantity, unit) in [("bandwidth", "bytes/s"), ("iops", "IO/s")] {
                let pick = |bw: f64, iops: f64| if quantity == "iops" { iops } else { bw };
                let (samples, from): (Vec<f64>, _) = if passes.len() > 1 {
                    let s = passes.iter().map(|p| pick(p.bw_bytes, p.iops)).collect();
                    (s, "passes (--loops)")
                } else {
                    let total = [&test.read, &test.write]
                        .into_iter()
                        .flatten()
                        .map(|d| pick(d.bw_bytes, d.iops))
                        .sum();
                    (vec![total], "single value")
                };
                if let Some(summary) = Summary::of(&samples) {
                    out.push(Metric {
                        benchmark: id.clone(),
                        label: label.clone(),
                        quantity,
                        unit,
                        higher_is_better: true,
                        summary,
                        samples_from: from,
                    });
                }
            }
            // Without passes, completion latency is the only noise estimate: every
            // I/O is a sample. I/Os are not independent, so this overstates
            // confidence; passes win.
            if passes.len() > 1 {
                continue;
            }
            let per_io = "per-I/O latency (use --loops for a sturdier verdict)";
            for (dir, quantity) in [
                (&test.read, "read latency mean"),
                (&test.write, "write latency mean"),
            ] {
                let stats = dir.as_ref().and_then(|d| d.clat_ns.as_ref());
                out.extend(latency_mean(&id, label, quantity, stats, per_io));
            }
        }
    }
}

impl Measured for CryptoReport {
    const KIND: &'static str = "crypto";
    const CHARTS: &'static [Chart] = &[Chart {
        title: "Encryption speed",
        quantity: "encrypt",
        unit: "bytes/s",
    }];

    fn metrics(&self, out: &mut Vec<Metric>) {
        for (section, list) in [("kernel", &self.kernel), ("user_space", &self.user_space)] {
            for entry in list {
                for p in &entry.points {
                    let id = format!(
                        "crypto {section} {} {}-bit {}B x{}",
                        entry.cipher, entry.key_bits, p.request_bytes, p.in_flight
                    );
                    let label = format!(
                        "{} {} {}-bit {} B{}",
                        section.replace('_', " "),
                        entry.cipher,
                        entry.key_bits,
                        p.request_bytes,
                        if p.in_flight > 1 {
                            format!(" x{}", p.in_flight)
                        } else {
                            String::new()
                        }
                    );
                    out.extend(single(
                        &id,
                        &label,
                        "encrypt",
                        "bytes/s",
                        p.encrypt.bytes_per_sec,
                    ));
                    out.extend(single(
                        &id,
                        &label,
                        "decrypt",
                        "bytes/s",
                        p.decrypt.bytes_per_sec,
                    ));
                }
            }
        }
    }
}

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

impl Measured for SmbReport {
    const KIND: &'static str = "smb";
    const CHARTS: &'static [Chart] = &[
        Chart {
            title: "SMB throughput",
            quantity: "smb bandwidth",
            unit: "B/s",
        },
        Chart {
            title: "SMB metadata and small files",
            quantity: "smb ops",
            unit: "ops/s",
        },
    ];

    /// Per workload (and phase) and security mode: bandwidth where data
    /// moved, operations per second otherwise, and the mean completion
    /// latency with every request or file as a sample.
    fn metrics(&self, out: &mut Vec<Metric>) {
        let s = &self.settings;
        for run in &self.runs {
            for r in &run.results {
                let sec = run.security.name();
                let id = format!(
                    "smb {} {} security={sec} block={} depth={} files={}x{}",
                    s.target,
                    r.label(),
                    run.block_bytes,
                    s.depth,
                    s.small_files,
                    s.small_file_bytes
                );
                let label = format!("{} {sec}", r.label());
                out.extend(if r.bytes > 0 {
                    single(&id, &label, "smb bandwidth", "B/s", r.bw_bytes)
                } else {
                    single(&id, &label, "smb ops", "ops/s", r.iops)
                });
                out.extend(latency_mean(
                    &id,
                    &label,
                    "completion latency mean",
                    r.clat_ns.as_ref(),
                    "per-request latency",
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_chart_quantity_is_one_a_kind_emits() {
        let quantities: Vec<&str> = CHARTS
            .iter()
            .flat_map(|c| c.iter().map(|c| c.quantity))
            .collect();
        assert_eq!(
            quantities,
            [
                "bandwidth",
                "iops",
                "encrypt",
                "sent",
                "received",
                "requests/s",
                "smb bandwidth",
                "smb ops"
            ]
        );
    }
}
