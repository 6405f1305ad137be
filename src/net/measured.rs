//! The comparable numbers of a stored `bench net` document: throughput per
//! direction with each reporting interval as a sample, and request/response
//! transactions per second.

use crate::doc::metrics::Metric;
use crate::doc::metrics::{Chart, Measured, name_of};
use crate::net::doc::NetReport;
use crate::stats::Summary;

/// Intervals shorter than this (the tail fragment at the end of a test) are
/// left out: their rate rests on too few bytes.
const MIN_INTERVAL_SECS: f64 = 0.2;

/// The workload identity: what was asked of which peer. The port and the run
/// length only change where and how long it was measured.
fn identity(doc: &NetReport) -> String {
    let t = &doc.start.test_start;
    format!(
        "net {} {} to {} streams={} len={} rate={} window={} mss={} nodelay={}",
        name_of(&t.protocol),
        name_of(&t.direction),
        doc.start.connecting_to.host,
        t.streams,
        t.block_bytes,
        t.rate_bits_per_sec,
        t.window_bytes,
        t.mss_bytes,
        t.nodelay,
    )
}

impl Measured for NetReport {
    const KIND: &'static str = "net";
    const CHARTS: &'static [Chart] = &[
        Chart {
            title: "Network throughput sent",
            quantity: "sent",
            unit: "bits/s",
        },
        Chart {
            title: "Network throughput received",
            quantity: "received",
            unit: "bits/s",
        },
    ];

    fn metrics(&self, out: &mut Vec<Metric>) {
        let id = identity(self);
        let t = &self.start.test_start;
        let label = format!(
            "{} {} to {} x{}",
            name_of(&t.protocol),
            name_of(&t.direction),
            self.start.connecting_to.host,
            t.streams
        );
        if let Some(rr) = &self.end.rr {
            let mode = name_of(&rr.mode);
            let id = format!(
                "{id} {mode} request={} response={}",
                rr.request_bytes, rr.response_bytes
            );
            let label = format!(
                "{mode} {}/{} B to {}",
                rr.request_bytes, rr.response_bytes, self.start.connecting_to.host
            );
            if let Some(summary) = Summary::of(&[rr.transactions_per_sec]) {
                out.push(Metric {
                    benchmark: id,
                    label,
                    quantity: "transactions/s",
                    unit: "1/s",
                    higher_is_better: true,
                    summary,
                    samples_from: "single value",
                });
            }
            return;
        }
        for (received, quantity) in [(false, "sent"), (true, "received")] {
            let samples: Vec<f64> = self
                .intervals
                .iter()
                .filter_map(|i| if received { i.sum_received } else { i.sum })
                .filter(|s| !s.omitted && s.seconds >= MIN_INTERVAL_SECS)
                .map(|s| s.bits_per_second)
                .collect();
            if let Some(summary) = Summary::of(&samples) {
                out.push(Metric {
                    benchmark: id.clone(),
                    label: label.clone(),
                    quantity,
                    unit: "bits/s",
                    higher_is_better: true,
                    summary,
                    samples_from: "reporting intervals (-i)",
                });
            }
        }
        // What each byte cost each end's CPU: a change that keeps the rate but
        // burns more CPU shows here.
        let costs = self.end.cpu_cost.as_ref();
        for (quantity, cost) in [
            ("CPU per byte, local", costs.and_then(|c| c.host.as_ref())),
            (
                "CPU per byte, remote",
                costs.and_then(|c| c.remote.as_ref()),
            ),
        ] {
            if let Some(summary) = cost.and_then(|c| Summary::of(&[c.ns_per_byte])) {
                out.push(Metric {
                    benchmark: id.clone(),
                    label: label.clone(),
                    quantity,
                    unit: "ns/B",
                    higher_is_better: false,
                    summary,
                    samples_from: "single value",
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::tests::fixture;
    use crate::net::engine::IntervalSum;

    fn sum(bps: f64, seconds: f64, omitted: bool) -> Option<IntervalSum> {
        Some(IntervalSum {
            start: 0.0,
            end: seconds,
            seconds,
            bytes: 0,
            bits_per_second: bps,
            omitted,
        })
    }

    #[test]
    fn intervals_are_the_samples_without_omitted_and_tail_fragments() {
        let mut d: NetReport = fixture("net.json");
        let template = d.intervals[0].clone();
        d.intervals = [
            sum(5e9, 1.0, true),
            sum(9e8, 1.0, false),
            sum(1.1e9, 1.0, false),
            sum(1e3, 0.01, false),
        ]
        .into_iter()
        .map(|s| {
            let mut i = template.clone();
            i.sum = s;
            i.sum_received = None;
            i
        })
        .collect();
        let mut out = Vec::new();
        d.end.cpu_cost = None;
        d.metrics(&mut out);
        assert_eq!(out.len(), 1, "no received side: {out:?}");
        let m = &out[0];
        assert_eq!(m.quantity, "sent");
        assert_eq!(m.summary.n, 2);
        assert!((m.summary.mean - 1e9).abs() < 1.0, "{m:?}");
        assert!(m.summary.variance > 0.0);
        assert!(
            m.benchmark
                .starts_with("net tcp send to 127.0.0.1 streams=1"),
            "{}",
            m.benchmark
        );
    }

    #[test]
    fn cpu_per_byte_is_a_metric_where_measured() {
        let mut d: NetReport = fixture("net.json");
        d.end.cpu_cost = Some(crate::net::doc::sending_cost(61.2, 20.4));
        let mut out = Vec::new();
        d.metrics(&mut out);
        let cost: Vec<&Metric> = out.iter().filter(|m| m.unit == "ns/B").collect();
        assert_eq!(cost.len(), 1, "{out:?}");
        assert_eq!(cost[0].quantity, "CPU per byte, local");
        assert_eq!(cost[0].summary.mean, 61.2);
        assert!(!cost[0].higher_is_better);
    }

    #[test]
    fn request_response_gives_transactions_per_second() {
        let d: NetReport = fixture("net-rr.json");
        let mut out = Vec::new();
        d.metrics(&mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].quantity, "transactions/s");
        let rr = d.end.rr.as_ref().unwrap();
        assert_eq!(out[0].summary.mean, rr.transactions_per_sec);
        let shape = format!(
            " rr request={} response={}",
            rr.request_bytes, rr.response_bytes
        );
        assert!(out[0].benchmark.contains(&shape), "{}", out[0].benchmark);
    }
}
