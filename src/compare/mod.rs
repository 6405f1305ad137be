//! Comparing two stored runs: the same benchmark in both, matched by its
//! workload identity, judged by Welch's t-test on the samples each run kept.
//! Pure: typed documents in, rows out.

pub mod settings;

use serde::Serialize;

pub use crate::doc::metrics::{self, Metric};
use crate::runs::RunDocs;
use crate::stats::{self, Summary};

pub const SCHEMA_VERSION: u32 = 1;
pub const CONFIDENCE: f64 = 0.95;

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
    pub label: String,
    pub quantity: &'static str,
    pub unit: &'static str,
    pub higher_is_better: bool,
    pub a: Summary,
    pub b: Summary,
    pub samples_from: &'static str,
    pub change_pct: Option<f64>,
    /// 95 % confidence interval of the change, in percent of A's mean, from
    /// the ratio of the means on the log scale (so never below -100 %).
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
    /// Why the difference may be the box's and not the change's: a run
    /// that was disturbed while the other was not.
    pub validity_warnings: Vec<String>,
}

/// Why two runs cannot be compared.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CompareError {
    #[error(
        "run {run_a} measured {kind} with the '{engine_a}' engine and run {run_b} with '{engine_b}': their numbers are not comparable; compare runs made with the same --engine"
    )]
    DifferentEngines {
        kind: &'static str,
        run_a: i64,
        engine_a: String,
        run_b: i64,
        engine_b: String,
    },
    #[error(
        "runs {run_a} and {run_b} share no benchmark: run {run_a} measured {a}; run {run_b} measured {b}. Compare runs of the same workload (same kind, rw, block size, queue depth, peer …)"
    )]
    NothingInCommon {
        run_a: i64,
        a: String,
        run_b: i64,
        b: String,
    },
}

/// The first engine name per bench kind, for the same-engine check.
fn engines(docs: &RunDocs) -> Vec<(&'static str, String)> {
    use metrics::Measured;
    let mut out = Vec::new();
    if let Some(e) = docs.disks().find_map(|d| d.engine()) {
        out.push((
            <crate::bench::disk::DiskBench as Measured>::KIND,
            e.to_string(),
        ));
    }
    out
}

/// "SEQ1M Q8T1 read, RND4K Q32T1 write" (at most a few) for a message.
fn workloads(ms: &[Metric]) -> String {
    let mut labels: Vec<&str> = Vec::new();
    for m in ms {
        if !labels.contains(&m.label.as_str()) {
            labels.push(&m.label);
        }
    }
    match labels.len() {
        0 => "no benchmark".into(),
        n if n > 4 => format!("{} and {} more", labels[..4].join(", "), n - 4),
        _ => labels.join(", "),
    }
}

/// Compares every metric present in both runs.
pub fn compare(
    run_a: i64,
    docs_a: &RunDocs,
    run_b: i64,
    docs_b: &RunDocs,
) -> Result<Comparison, CompareError> {
    for (kind, engine_a) in engines(docs_a) {
        if let Some((_, engine_b)) = engines(docs_b).into_iter().find(|(k, _)| *k == kind)
            && engine_b != engine_a
        {
            return Err(CompareError::DifferentEngines {
                kind,
                run_a,
                engine_a,
                run_b,
                engine_b,
            });
        }
    }
    let ma = docs_a.metrics();
    let mb = docs_b.metrics();
    let key = |m: &Metric| format!("{} | {}", m.benchmark, m.quantity);
    let mut rows = Vec::new();
    let mut only_in_a = Vec::new();
    for a in &ma {
        match mb.iter().find(|b| key(b) == key(a)) {
            Some(b) => rows.push(row(a, b)),
            None => only_in_a.push(key(a)),
        }
    }
    if rows.is_empty() && !ma.is_empty() && !mb.is_empty() {
        return Err(CompareError::NothingInCommon {
            run_a,
            a: workloads(&ma),
            run_b,
            b: workloads(&mb),
        });
    }
    let only_in_b = mb
        .iter()
        .filter(|b| !ma.iter().any(|a| key(a) == key(b)))
        .map(key)
        .collect();
    Ok(Comparison {
        schema_version: SCHEMA_VERSION,
        run_a,
        run_b,
        confidence: CONFIDENCE,
        rows,
        only_in_a,
        only_in_b,
        settings: settings::diff(docs_a.snapshot(), docs_b.snapshot()),
        validity_warnings: validity_warnings(run_a, docs_a, run_b, docs_b),
    })
}

/// A warning for each run that was disturbed, when the two differ in validity
/// (both disturbed is also worth saying: neither figure is the box's own).
fn validity_warnings(run_a: i64, a: &RunDocs, run_b: i64, b: &RunDocs) -> Vec<String> {
    let (va, vb) = (a.validity(), b.validity());
    let disturbed =
        |v: &Option<crate::doc::validity::Validity>| v.as_ref().is_some_and(|v| !v.is_clean());
    let mut out = Vec::new();
    for (run, v, other) in [(run_a, &va, &vb), (run_b, &vb, &va)] {
        if let Some(v) = v.as_ref().filter(|_| disturbed(v)) {
            let tail = match other {
                Some(o) if o.is_clean() => {
                    "; the other run was clean, so the difference may be the disturbance"
                }
                Some(_) => "; both runs were disturbed",
                None => "; the other run was not judged",
            };
            out.push(format!(
                "run {run} was disturbed: {}{tail}",
                v.reasons.join("; ")
            ));
        }
    }
    out
}

fn row(a: &Metric, b: &Metric) -> Row {
    let base = a.summary.mean;
    let pct = |x: f64| (base != 0.0).then(|| x / base * 100.0);
    let change_pct = pct(b.summary.mean - base);
    let test = stats::welch(&a.summary, &b.summary, CONFIDENCE);
    let ratio = stats::ratio_interval(&a.summary, &b.summary, CONFIDENCE);
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
        label: a.label.clone(),
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
        ci_low_pct: ratio.map(|(lo, _)| (lo - 1.0) * 100.0),
        ci_high_pct: ratio.map(|(_, hi)| (hi - 1.0) * 100.0),
        p_value: test.map(|w| w.p_value),
        verdict,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bench::disk::{DiskBench, PassSummary};
    use crate::runs::Doc;

    /// A stored document from the fixture store (tests/fixtures/docs).
    pub(crate) fn fixture<D: serde::de::DeserializeOwned>(name: &str) -> D {
        let path = format!("{}/tests/fixtures/docs/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn disk(passes: &[f64]) -> RunDocs {
        let mut d: DiskBench = fixture("disk-loops.json");
        let spread = d.tests[0].spread.as_mut().unwrap();
        spread.passes = passes
            .iter()
            .map(|&bw| PassSummary {
                bw_bytes: bw,
                iops: bw / 4096.0,
            })
            .collect();
        RunDocs(vec![Doc::Disk(Box::new(d))])
    }

    fn verdict(a: &[f64], b: &[f64]) -> Verdict {
        let c = compare(1, &disk(a), 2, &disk(b)).unwrap();
        let row = c
            .rows
            .iter()
            .find(|r| r.quantity == "bandwidth")
            .expect("bandwidth row");
        assert_eq!(row.label, "SEQ1M Q1T1 read");
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
    fn intervals_never_pass_minus_100_percent() {
        let c = compare(
            1,
            &disk(&[9.9e12, 3.0e12, 14.0e12]),
            2,
            &disk(&[12.9e9, 12.0e9, 11.5e9]),
        )
        .unwrap();
        for r in &c.rows {
            let (lo, hi) = (r.ci_low_pct.unwrap(), r.ci_high_pct.unwrap());
            assert!(lo > -100.0 && lo <= hi, "{}: {lo} {hi}", r.quantity);
        }
    }

    #[test]
    fn runtime_does_not_change_the_identity_but_block_size_does() {
        let a = disk(&[1.0, 2.0]);
        let mut b = disk(&[1.0, 2.0]);
        fn workload(b: &mut RunDocs) -> &mut crate::bench::disk::workload::Workload {
            match &mut b.0[0] {
                Doc::Disk(d) => &mut d.tests[0].workload,
                _ => unreachable!(),
            }
        }
        workload(&mut b).runtime = std::time::Duration::from_secs(5);
        assert_eq!(compare(1, &a, 2, &b).unwrap().only_in_a.len(), 0);
        workload(&mut b).bs = 8192;
        let e = compare(1, &a, 2, &b).unwrap_err();
        assert!(matches!(e, CompareError::NothingInCommon { .. }), "{e}");
        assert!(e.to_string().contains("SEQ1M Q1T1 read"), "{e}");
    }

    #[test]
    fn runs_of_different_engines_are_refused_naming_both() {
        let real = disk(&[1.0, 2.0]);
        let null = RunDocs(vec![Doc::Disk(Box::new(fixture("disk-null.json")))]);
        let e = compare(3, &null, 4, &real).unwrap_err().to_string();
        assert!(e.contains("'null'") && e.contains("'io_uring'"), "{e}");
        assert!(e.contains("run 3") && e.contains("run 4"), "{e}");
    }
}
