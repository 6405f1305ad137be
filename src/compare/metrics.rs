//! The comparable numbers of each bench kind, with the samples behind them.
//! Every bench document implements [`Measured`], beside its type in its bench
//! module, and is marked `: Measured` in the documents table (src/store/doc.rs):
//! compare matches its metrics across runs (`RunDocs::metrics`) and report draws
//! its charts ([`CHARTS`]) from there. Never invents noise: a single number stays
//! a single sample.

use super::Metric;
use crate::bench::disk::LatencyStats;
use crate::stats::Summary;

/// Every chart of every bench kind, in report order (from the documents table).
pub use crate::store::doc::CHARTS;

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

/// The serialized name of a unit-like enum value (`read`, `keep-alive`).
pub fn name_of<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(e) => e.to_string(),
    }
}

pub fn single(
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
pub fn latency_mean(
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
                "bandwidth alone vs together",
                "bandwidth per layer",
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
