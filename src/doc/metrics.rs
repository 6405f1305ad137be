//! The comparable numbers of each bench kind, with the samples behind them.
//! Every bench document implements [`Measured`], beside its type in its bench
//! module, and is marked `: Measured` in the documents table (src/runs/mod.rs):
//! compare matches its metrics across runs (`RunDocs::metrics`) and report draws
//! its charts (`runs::CHARTS`) from there. Never invents noise: a single number stays
//! a single sample.

use crate::histogram::LatencyStats;
use crate::stats::Summary;

/// One measured quantity of one benchmark in one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// Workload identity, e.g. `disk rw=read bs=65536 ...`: what must match.
    pub benchmark: String,
    /// What people call it: the suite name (`SEQ1M Q8T1 read`) or a short form.
    pub label: String,
    pub quantity: &'static str,
    pub unit: &'static str,
    pub higher_is_better: bool,
    pub summary: Summary,
    /// Where the samples came from (passes, per-I/O latency, single value).
    pub samples_from: &'static str,
}

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
