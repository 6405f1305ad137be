//! `nastune watch`: samples counters and gauges over time, handles counter
//! wraps, resets, identity changes and reboots per series, derives disk
//! latency and utilisation, and raises alerts.
//!
//! Collection ([`sample`]) and semantics ([`counter`], [`alert`]) never print;
//! `cmd/watch.rs` presents, exports and persists.

pub mod alert;
pub mod counter;
pub mod http;
pub mod kernel_log;
pub mod metrics;
pub mod points;
pub mod replay;
pub mod sample;
pub mod thermal;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use alert::{Alert, AlertConfig, Alerter};
use counter::{Observation, SeriesState, Step, Tracker};
use sample::{Gauge, Sample};

pub const SCHEMA_VERSION: u32 = 1;

/// What one sample changed.
#[derive(Debug, Clone, Serialize)]
pub struct SampleReport {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub schema_version: u32,
    pub time_unix_s: f64,
    pub boot_id: String,
    pub series: usize,
    /// Series that increased, wrapped, reset, rebooted or changed identity.
    pub changes: Vec<Observation>,
    pub wraps: usize,
    pub resets: usize,
    pub gauges: BTreeMap<String, f64>,
    pub problems: Vec<String>,
    pub smart_read: bool,
    #[serde(skip)]
    pub alerts: Vec<Alert>,
}

/// The `watch` document stored with a watch run: the span the run's counter
/// points cover, so a series that moved late is still drawn from the start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub schema_version: u32,
    pub tool_version: String,
    pub host_id: String,
    /// Samples came from captured trees (`--replay`), not the live system.
    pub replay: bool,
    pub samples: u64,
    pub first_sample_unix_s: Option<f64>,
    pub last_sample_unix_s: Option<f64>,
    pub alerts: u64,
}

impl RunSummary {
    pub fn new(host_id: &str, replay: bool) -> Self {
        RunSummary {
            schema_version: SCHEMA_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            host_id: host_id.to_string(),
            replay,
            samples: 0,
            first_sample_unix_s: None,
            last_sample_unix_s: None,
            alerts: 0,
        }
    }

    pub fn add(&mut self, r: &SampleReport) {
        self.samples += 1;
        self.first_sample_unix_s.get_or_insert(r.time_unix_s);
        self.last_sample_unix_s = Some(r.time_unix_s);
        self.alerts += r.alerts.len() as u64;
    }
}

/// How much each counter grew over a whole watch, for the summary at its end.
/// One entry per series that grew: bounded by the box's series (87 on a NAS).
#[derive(Debug, Default)]
pub struct Growth(BTreeMap<String, u64>);

impl Growth {
    pub fn add(&mut self, r: &SampleReport) {
        for c in &r.changes {
            let d = c.step.delta();
            if d > 0 {
                let total = self.0.entry(c.series.clone()).or_default();
                *total = total.saturating_add(d);
            }
        }
    }

    /// The `n` series that grew most, most first (ties by name: the map's
    /// order, kept by the stable sort).
    pub fn top(&self, n: usize) -> Vec<(&str, u64)> {
        let mut all: Vec<(&str, u64)> = self.0.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        all.sort_by_key(|(_, v)| std::cmp::Reverse(*v));
        all.truncate(n);
        all
    }
}

pub struct Watcher {
    pub tracker: Tracker,
    alerter: Alerter,
    cfg: AlertConfig,
    /// Latest gauges and counter keys, for /metrics.
    pub gauges: Vec<Gauge>,
    pub live_keys: Vec<String>,
    pub samples: u64,
    /// Time of the sample before, if any.
    last_time: Option<f64>,
}

impl Watcher {
    pub fn new(cfg: AlertConfig, baselines: BTreeMap<String, SeriesState>) -> Self {
        Watcher {
            tracker: Tracker::with_states(baselines),
            alerter: Alerter::default(),
            cfg,
            gauges: Vec::new(),
            live_keys: Vec::new(),
            samples: 0,
            last_time: None,
        }
    }

    pub fn step(&mut self, sample: Sample) -> SampleReport {
        let time = sample.time_unix_s;
        let mut observations = Vec::with_capacity(sample.counters.len());
        for r in &sample.counters {
            if let Some(last) = self.last_time
                && kernel_log::counted_from_zero(r.metric)
                && self.tracker.get(&r.key()).is_none()
            {
                // No line of this class and device until now: it was 0 then.
                let zero = sample::Reading {
                    value: 0,
                    ..r.clone()
                };
                self.tracker.observe(&zero, &sample.boot_id, last);
            }
            let o = self.tracker.observe(r, &sample.boot_id, time);
            observations.push((r.metric, o));
        }
        let mut gauges = sample.gauges;
        gauges.extend(disk_gauges(&sample.counters, &observations));
        let alerts = self
            .alerter
            .evaluate(&self.cfg, time, &observations, &gauges, &self.tracker);
        self.samples += 1;
        self.last_time = Some(time);
        // SMART series are only read every few samples; keep them exported.
        let mut keys: Vec<String> = observations.iter().map(|(_, o)| o.series.clone()).collect();
        if !sample.smart_read {
            keys.extend(
                self.live_keys
                    .iter()
                    .filter(|k| k.starts_with("smart_") || k.starts_with("nvme_"))
                    .cloned(),
            );
        }
        self.live_keys = keys;
        self.gauges = gauges.clone();
        let changes: Vec<Observation> = observations
            .into_iter()
            .map(|(_, o)| o)
            .filter(|o| !matches!(o.step, Step::Unchanged | Step::First))
            .collect();
        SampleReport {
            kind: "sample",
            schema_version: SCHEMA_VERSION,
            time_unix_s: time,
            boot_id: sample.boot_id,
            series: self.live_keys.len(),
            wraps: changes
                .iter()
                .filter(|o| matches!(o.step, Step::Wrap { .. }))
                .count(),
            resets: changes.iter().filter(|o| o.step == Step::Reset).count(),
            changes,
            gauges: sample::gauges_by_key(&gauges),
            problems: sample.problems,
            smart_read: sample.smart_read,
            alerts,
        }
    }

    pub fn metrics_page(&self) -> String {
        metrics::render(
            self.tracker.states(),
            &self.live_keys,
            &self.gauges,
            self.samples,
        )
    }
}

/// Per-interval disk latency (average ms per completed I/O, as iostat's await)
/// and utilisation (share of the interval with I/O in flight), from the
/// wrap-corrected deltas of this sample.
fn disk_gauges(readings: &[sample::Reading], obs: &[(&'static str, Observation)]) -> Vec<Gauge> {
    let mut by_dev: BTreeMap<&str, BTreeMap<&str, (u64, Option<f64>)>> = BTreeMap::new();
    for (r, (metric, o)) in readings.iter().zip(obs) {
        if !metric.starts_with("disk_") {
            continue;
        }
        let Some((_, dev)) = r.labels.first() else {
            continue;
        };
        by_dev
            .entry(dev.as_str())
            .or_default()
            .insert(metric, (o.step.delta(), o.rate_per_sec));
    }
    let mut out = Vec::new();
    for (dev, m) in by_dev {
        let labels = vec![("device", dev.to_string())];
        let get = |k: &str| m.get(k).copied();
        for (ops, ms, metric) in [
            (
                "disk_reads",
                "disk_read_time_ms",
                "disk_read_latency_avg_ns",
            ),
            (
                "disk_writes",
                "disk_write_time_ms",
                "disk_write_latency_avg_ns",
            ),
        ] {
            if let (Some((n, Some(_))), Some((t, _))) = (get(ops), get(ms))
                && n > 0
            {
                out.push(Gauge {
                    metric,
                    labels: labels.clone(),
                    value: t as f64 * 1e6 / n as f64,
                });
            }
        }
        // io_ticks grows by at most 1000 ms per second: its rate is the busy share.
        if let Some((_, Some(rate))) = get("disk_io_time_ms") {
            out.push(Gauge {
                metric: "disk_utilisation_ratio",
                labels,
                value: (rate / 1000.0).min(1.0),
            });
        }
    }
    out
}

impl crate::doc::Document for RunSummary {
    const KIND: crate::doc::DocKind = crate::doc::DocKind::Watch;
    const VERSION: u32 = SCHEMA_VERSION;
}
