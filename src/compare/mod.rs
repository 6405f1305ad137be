//! Comparing two stored runs: the same benchmark in both, matched by its
//! workload identity, judged by Welch's t-test on the samples each run kept.
//! Pure: stored JSON documents in, rows out.

pub mod metrics;
mod net_metrics;
pub mod settings;

use serde::Serialize;
use serde_json::Value;

use crate::stats::{self, Summary};

pub const SCHEMA_VERSION: u32 = 1;
pub const CONFIDENCE: f64 = 0.95;

/// One measured quantity of one benchmark in one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// Workload identity plus the quantity, e.g. `disk read bs=65536 ... | bandwidth`.
    pub benchmark: String,
    pub quantity: &'static str,
    pub unit: &'static str,
    pub higher_is_better: bool,
    pub summary: Summary,
    /// Where the samples came from (passes, per-I/O latency, single value).
    pub samples_from: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Better,
    Worse,
    WithinNoise,
    NeedsRepeats,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::WithinNoise => "within noise",
            Verdict::NeedsRepeats => "needs repeats",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub benchmark: String,
    pub quantity: &'static str,
    pub unit: &'static str,
    pub higher_is_better: bool,
    pub a: Summary,
    pub b: Summary,
    pub samples_from: &'static str,
    pub change_pct: Option<f64>,
    /// 95 % confidence interval of the change, in percent of A's mean.
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    pub p_value: Option<f64>,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub schema_version: u32,
    pub run_a: i64,
    pub run_b: i64,
    pub confidence: f64,
    pub rows: Vec<Row>,
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    pub settings: settings::SettingsDiff,
}

/// Compares every metric present in both runs; `docs_*` are (kind, body).
pub fn compare(
    run_a: i64,
    docs_a: &[(String, Value)],
    run_b: i64,
    docs_b: &[(String, Value)],
) -> Comparison {
    let ma = metrics::extract(docs_a);
    let mb = metrics::extract(docs_b);
    let key = |m: &Metric| format!("{} | {}", m.benchmark, m.quantity);
    let mut rows = Vec::new();
    let mut only_in_a = Vec::new();
    for a in &ma {
        match mb.iter().find(|b| key(b) == key(a)) {
            Some(b) => rows.push(row(a, b)),
            None => only_in_a.push(key(a)),
        }
    }
    let only_in_b = mb
        .iter()
        .filter(|b| !ma.iter().any(|a| key(a) == key(b)))
        .map(key)
        .collect();
    let snapshot = |docs: &[(String, Value)]| {
        docs.iter()
            .find(|(k, _)| k == "snapshot")
            .map(|(_, v)| v.clone())
    };
    Comparison {
        schema_version: SCHEMA_VERSION,
        run_a,
        run_b,
        confidence: CONFIDENCE,
        rows,
        only_in_a,
        only_in_b,
        settings: settings::diff(snapshot(docs_a).as_ref(), snapshot(docs_b).as_ref()),
    }
}

fn row(a: &Metric, b: &Metric) -> Row {
    let base = a.summary.mean;
    let pct = |x: f64| (base != 0.0).then(|| x / base * 100.0);
    let change_pct = pct(b.summary.mean - base);
    let test = stats::welch(&a.summary, &b.summary, CONFIDENCE);
    let verdict = match &test {
        None => Verdict::NeedsRepeats,
        Some(w) if w.ci_low <= 0.0 && w.ci_high >= 0.0 => Verdict::WithinNoise,
        Some(w) => {
            if (w.diff > 0.0) == a.higher_is_better {
                Verdict::Better
            } else {
                Verdict::Worse
            }
        }
    };
    Row {
        benchmark: a.benchmark.clone(),
        quantity: a.quantity,
        unit: a.unit,
        higher_is_better: a.higher_is_better,
        a: a.summary,
        b: b.summary,
        samples_from: if a.samples_from == b.samples_from {
            a.samples_from
        } else {
            "mixed"
        },
        change_pct,
        ci_low_pct: test.and_then(|w| pct(w.ci_low)),
        ci_high_pct: test.and_then(|w| pct(w.ci_high)),
        p_value: test.map(|w| w.p_value),
        verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn disk(passes: &[f64]) -> (String, Value) {
        let passes: Vec<Value> = passes
            .iter()
            .map(|bw| json!({"bw_bytes": bw, "iops": bw / 4096.0}))
            .collect();
        (
            "disk".into(),
            json!({"tests": [{
                "name": "RND4K Q1T1 read", "status": "ok",
                "workload": {"rw": "randread", "bs": 4096, "iodepth": 1, "numjobs": 1,
                             "direct": true, "rwmixread": 50, "fsync": 0, "fdatasync": 0,
                             "end_fsync": false, "verify": false, "runtime": 1000, "ramp_time": 0},
                "read": {"bw_bytes": 1.0, "iops": 1.0},
                "spread": {"passes": passes}
            }]}),
        )
    }

    fn verdict(a: &[f64], b: &[f64]) -> Verdict {
        let c = compare(1, &[disk(a)], 2, &[disk(b)]);
        let row = c
            .rows
            .iter()
            .find(|r| r.quantity == "bandwidth")
            .expect("bandwidth row");
        row.verdict
    }

    #[test]
    fn verdicts_follow_the_interval() {
        assert_eq!(
            verdict(&[100.0, 102.0, 98.0], &[101.0, 99.0, 100.5]),
            Verdict::WithinNoise
        );
        assert_eq!(
            verdict(&[100.0, 102.0, 98.0], &[50.0, 51.0, 49.0]),
            Verdict::Worse
        );
        assert_eq!(
            verdict(&[50.0, 51.0, 49.0], &[100.0, 102.0, 98.0]),
            Verdict::Better
        );
        assert_eq!(verdict(&[100.0], &[50.0]), Verdict::NeedsRepeats);
    }

    #[test]
    fn runtime_does_not_change_the_identity_but_block_size_does() {
        let a = disk(&[1.0, 2.0]);
        let mut b = disk(&[1.0, 2.0]);
        b.1["tests"][0]["workload"]["runtime"] = json!(5000);
        assert_eq!(
            compare(1, std::slice::from_ref(&a), 2, std::slice::from_ref(&b))
                .only_in_a
                .len(),
            0
        );
        b.1["tests"][0]["workload"]["bs"] = json!(8192);
        let c = compare(1, &[a], 2, &[b]);
        assert!(c.rows.is_empty());
        assert!(!c.only_in_a.is_empty() && !c.only_in_b.is_empty());
    }
}
