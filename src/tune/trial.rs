//! `tune try`: measure a workload, apply a change, measure again, and keep the
//! change only when it beats the noise in the metric's better direction
//! (Welch's t-test from [`crate::stats`]). Generic over closures so the logic is
//! tested with scripted numbers; [`workload`] measures real disks in-process.
//!
//! With `alternate`, the runs are taken in ABBA blocks (A B, B A, A B, …): a
//! slow drift (a warming disk, a filling cache) then lands on both sides alike
//! instead of on the second one, and the change is toggled only every two runs.

pub mod buffered;
pub mod engine;
pub mod exercise;
pub mod http;
pub mod judge;
pub mod net;
pub mod smb;
pub mod workload;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::stats::{Summary, welch};

/// Which way of the metric is an improvement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// Throughput, IOPS.
    Higher,
    /// Latency, CPU per I/O.
    Lower,
}

impl Better {
    /// "higher" or "lower", for "… is better".
    pub fn name(self) -> &'static str {
        match self {
            Better::Higher => "higher",
            Better::Lower => "lower",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct TrialPlan {
    /// Measurements on each side (at least 2: one number carries no noise estimate).
    pub runs: u32,
    /// Take the runs in ABBA blocks instead of all A then all B.
    pub alternate: bool,
    pub better: Better,
    /// Two-sided confidence of the interval, e.g. 0.95.
    pub confidence: f64,
    /// Smallest improvement of the mean worth keeping, in percent of the baseline
    /// (0: any improvement beyond the noise).
    pub min_gain_pct: f64,
}

impl TrialPlan {
    /// `runs` per side, 95 % confidence, any gain beyond the noise.
    pub fn new(runs: u32, alternate: bool, better: Better) -> Self {
        TrialPlan {
            runs,
            alternate,
            better,
            confidence: 0.95,
            min_gain_pct: 0.0,
        }
    }

    pub fn validate(&self) -> Result<(), PlanError> {
        if !(2..=1000).contains(&self.runs) {
            return Err(PlanError::Runs(self.runs));
        }
        if !(self.confidence > 0.5 && self.confidence < 1.0) {
            return Err(PlanError::Confidence(self.confidence));
        }
        if !(self.min_gain_pct >= 0.0 && self.min_gain_pct.is_finite()) {
            return Err(PlanError::MinGain(self.min_gain_pct));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("runs per side must be 2 to 1000, got '{0}': one run carries no noise estimate")]
    Runs(u32),
    #[error("confidence must be between 0.5 and 1 (exclusive), got '{0}'; 0.95 is usual")]
    Confidence(f64),
    #[error("the minimum gain must be a percentage of at least 0, got '{0}'")]
    MinGain(f64),
}

/// One side of a trial: without the change (A, baseline) or with it (B).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Baseline,
    Changed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The change is applied and stays.
    Keep,
    /// The change was reverted.
    Revert,
}

/// What the measurements say of the change, whatever was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Better beyond the noise.
    Helps,
    /// The interval includes no change.
    NoEffect,
    /// Worse beyond the noise.
    Hurts,
}

impl Effect {
    pub fn name(self) -> &'static str {
        match self {
            Effect::Helps => "helps",
            Effect::NoEffect => "no effect",
            Effect::Hurts => "hurts",
        }
    }
}

/// What a trial measured and decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialOutcome {
    /// Every measurement in the order taken (JSON: `{"side", "value"}` objects).
    #[serde(
        serialize_with = "runs_as_objects",
        deserialize_with = "runs_from_objects"
    )]
    pub runs: Vec<(Side, f64)>,
    pub baseline: Summary,
    pub changed: Summary,
    /// `changed.mean - baseline.mean`, with its confidence interval.
    pub diff: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub confidence: f64,
    pub p_value: f64,
    /// The difference in percent of the baseline mean (None for a zero baseline).
    pub diff_pct: Option<f64>,
    pub verdict: Verdict,
    /// Why, in one sentence with the numbers.
    pub reason: String,
    /// The measured effect (absent in documents stored before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<Effect>,
}

#[derive(Serialize, Deserialize)]
struct Run {
    side: Side,
    value: f64,
}

fn runs_as_objects<S: serde::Serializer>(runs: &[(Side, f64)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(runs.iter().map(|&(side, value)| Run { side, value }))
}

fn runs_from_objects<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<(Side, f64)>, D::Error> {
    let runs = Vec::<Run>::deserialize(d)?;
    Ok(runs.into_iter().map(|r| (r.side, r.value)).collect())
}

/// Which step of the trial failed, and whether the system is back as it was.
#[derive(Debug)]
pub enum TrialError<E> {
    Plan(PlanError),
    /// A step failed. The change was reverted unless `revert_failed` holds the
    /// revert's own error: then the change may still be in place.
    Stopped {
        step: Step,
        cause: Cause<E>,
        revert_failed: Option<E>,
    },
}

#[derive(Debug)]
pub enum Cause<E> {
    Error(E),
    /// A measurement came back NaN or infinite: a broken measurement, not data.
    NotFinite(f64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Measure,
    Apply,
    Revert,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::Measure => "measuring",
            Step::Apply => "applying the change",
            Step::Revert => "reverting the change",
        })
    }
}

impl<E: fmt::Display> fmt::Display for Cause<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::Error(e) => e.fmt(f),
            Cause::NotFinite(v) => write!(f, "the measurement returned '{v}', not a number"),
        }
    }
}

impl<E: fmt::Display> fmt::Display for TrialError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrialError::Plan(e) => e.fmt(f),
            TrialError::Stopped {
                step,
                cause,
                revert_failed: None,
            } => write!(
                f,
                "trial stopped while {step}: {cause}; the change was reverted"
            ),
            TrialError::Stopped {
                step,
                cause,
                revert_failed: Some(r),
            } => write!(
                f,
                "trial stopped while {step}: {cause}; reverting failed too ({r}): the change \
                 may still be in place, roll it back with 'nastune tune rollback'"
            ),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for TrialError<E> {}

/// The order of the runs: all baseline then all changed, or ABBA blocks.
pub fn schedule(runs: u32, alternate: bool) -> Vec<Side> {
    let (a, b) = (Side::Baseline, Side::Changed);
    if !alternate {
        let mut s = vec![a; runs as usize];
        s.extend(std::iter::repeat_n(b, runs as usize));
        return s;
    }
    (0..runs)
        .flat_map(|i| if i % 2 == 0 { [a, b] } else { [b, a] })
        .collect()
}

/// Runs the trial: baseline and changed measurements in the planned order,
/// calling `apply` and `revert` when the side changes, then the verdict. On
/// [`Verdict::Keep`] the change is left applied; on [`Verdict::Revert`] it is
/// reverted. On any error the change is reverted before returning (and the
/// error says if that failed too). `apply` and `revert` must be idempotent:
/// after a failed apply, revert is called to undo a half-applied change.
pub fn run_trial<E>(
    plan: &TrialPlan,
    measure: impl FnMut() -> Result<f64, E>,
    apply: impl FnMut() -> Result<(), E>,
    revert: impl FnMut() -> Result<(), E>,
) -> Result<TrialOutcome, TrialError<E>> {
    run_trial_reviewed(plan, measure, apply, revert, |_| {})
}

/// [`run_trial`] with a `review` of the outcome before the verdict is carried
/// out: it may turn a keep into a revert (a change that lowers security, a CPU
/// gain bought with throughput) or add to the reason; it sees the measured
/// effect, which it must not change.
pub fn run_trial_reviewed<E>(
    plan: &TrialPlan,
    mut measure: impl FnMut() -> Result<f64, E>,
    mut apply: impl FnMut() -> Result<(), E>,
    mut revert: impl FnMut() -> Result<(), E>,
    review: impl FnOnce(&mut TrialOutcome),
) -> Result<TrialOutcome, TrialError<E>> {
    plan.validate().map_err(TrialError::Plan)?;
    let mut applied = false;
    let mut runs = Vec::with_capacity(plan.runs as usize * 2);
    for side in schedule(plan.runs, plan.alternate) {
        switch(side == Side::Changed, &mut applied, &mut apply, &mut revert)?;
        match measure() {
            Ok(v) if v.is_finite() => runs.push((side, v)),
            Ok(v) => {
                return Err(stop(
                    Step::Measure,
                    Cause::NotFinite(v),
                    applied,
                    &mut revert,
                ));
            }
            Err(e) => return Err(stop(Step::Measure, Cause::Error(e), applied, &mut revert)),
        }
    }
    let mut outcome = decide(plan, runs);
    review(&mut outcome);
    switch(
        outcome.verdict == Verdict::Keep,
        &mut applied,
        &mut apply,
        &mut revert,
    )?;
    Ok(outcome)
}

/// Applies or reverts so that the change is in place exactly when `want`.
fn switch<E>(
    want: bool,
    applied: &mut bool,
    apply: &mut impl FnMut() -> Result<(), E>,
    revert: &mut impl FnMut() -> Result<(), E>,
) -> Result<(), TrialError<E>> {
    if want == *applied {
        return Ok(());
    }
    let (step, r) = if want {
        (Step::Apply, apply())
    } else {
        (Step::Revert, revert())
    };
    // A failed apply may have done half its work, and a failed revert may be
    // transient: either way, one revert is tried before giving up.
    r.map_err(|e| stop(step, Cause::Error(e), true, revert))?;
    *applied = want;
    Ok(())
}

/// The error for a failed step, after reverting unless the system is known to
/// be unchanged (`changed` false: before the first apply, or after a revert).
fn stop<E>(
    step: Step,
    cause: Cause<E>,
    changed: bool,
    revert: &mut impl FnMut() -> Result<(), E>,
) -> TrialError<E> {
    let revert_failed = if changed { revert().err() } else { None };
    TrialError::Stopped {
        step,
        cause,
        revert_failed,
    }
}

/// The verdict from the measurements: keep only when the confidence interval of
/// the difference lies wholly on the better side of zero and the mean gain is at
/// least `min_gain_pct`.
pub fn decide(plan: &TrialPlan, runs: Vec<(Side, f64)>) -> TrialOutcome {
    let side = |want: Side| -> Vec<f64> {
        runs.iter()
            .filter(|(s, _)| *s == want)
            .map(|(_, v)| *v)
            .collect()
    };
    let empty = Summary {
        n: 0,
        mean: 0.0,
        variance: 0.0,
    };
    let baseline = Summary::of(&side(Side::Baseline)).unwrap_or(empty);
    let changed = Summary::of(&side(Side::Changed)).unwrap_or(empty);
    let pct_of_baseline = |x: f64| (baseline.mean != 0.0).then(|| x / baseline.mean.abs() * 100.0);
    let conf_pct = plan.confidence * 100.0;
    let Some(w) = welch(&baseline, &changed, plan.confidence) else {
        return TrialOutcome {
            runs,
            baseline,
            changed,
            diff: changed.mean - baseline.mean,
            ci_low: f64::NEG_INFINITY,
            ci_high: f64::INFINITY,
            confidence: plan.confidence,
            p_value: 1.0,
            diff_pct: pct_of_baseline(changed.mean - baseline.mean),
            verdict: Verdict::Revert,
            reason: "fewer than two measurements on a side: no noise estimate, so no verdict"
                .into(),
            effect: None,
        };
    };
    // Positive `gain` is an improvement, whichever way the metric points.
    let sign = match plan.better {
        Better::Higher => 1.0,
        Better::Lower => -1.0,
    };
    let (gain_low, gain_high) = if sign > 0.0 {
        (w.ci_low, w.ci_high)
    } else {
        (-w.ci_high, -w.ci_low)
    };
    let gain_pct = pct_of_baseline(sign * w.diff);
    let numbers = format!(
        "mean {} with the change vs {} without ({}, {conf_pct:.0} % interval {} to {})",
        num(changed.mean),
        num(baseline.mean),
        signed_pct(pct_of_baseline(w.diff)),
        signed(w.ci_low),
        signed(w.ci_high),
    );
    let effect = if gain_low > 0.0 {
        Effect::Helps
    } else if gain_high < 0.0 {
        Effect::Hurts
    } else {
        Effect::NoEffect
    };
    let (verdict, why) = if gain_low > 0.0 {
        match gain_pct {
            Some(g) if g < plan.min_gain_pct => (
                Verdict::Revert,
                format!(
                    "better beyond the noise but by {g:.1} %, less than the {:.1} % asked for",
                    plan.min_gain_pct
                ),
            ),
            _ => (Verdict::Keep, "better beyond the noise".to_string()),
        }
    } else if gain_high < 0.0 {
        (Verdict::Revert, "worse beyond the noise".to_string())
    } else {
        (
            Verdict::Revert,
            "the interval includes no change: not better beyond the noise".to_string(),
        )
    };
    TrialOutcome {
        runs,
        baseline,
        changed,
        diff: w.diff,
        ci_low: w.ci_low,
        ci_high: w.ci_high,
        confidence: plan.confidence,
        p_value: w.p_value,
        diff_pct: pct_of_baseline(w.diff),
        verdict,
        reason: format!("{why}: {numbers}"),
        effect: Some(effect),
    }
}

/// Four significant digits are more than any disk or network measurement holds.
fn num(x: f64) -> String {
    let digits = if x == 0.0 {
        0
    } else {
        (3 - x.abs().log10().floor() as i32).clamp(0, 6) as usize
    };
    format!("{x:.digits$}")
}

fn signed(x: f64) -> String {
    if x >= 0.0 {
        format!("+{}", num(x))
    } else {
        num(x)
    }
}

fn signed_pct(p: Option<f64>) -> String {
    match p {
        Some(p) if p >= 0.0 => format!("+{p:.1} %"),
        Some(p) => format!("{p:.1} %"),
        None => "baseline 0".into(),
    }
}

/// The `tune-try` document: the change, every run, the interval, the verdict.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TryReport {
    pub change: crate::tune::plan::PlanItem,
    /// The judge as written: a disk workload, `net:…`, `smb://…` or `http:…`.
    pub workload: String,
    pub metric: workload::StoredMetric,
    pub runs_per_side: u32,
    /// Length of one run.
    pub runtime_ms: u64,
    /// The unused warm-up run before the first baseline run.
    pub warmup_value: f64,
    /// Runs taken in ABBA blocks (always: a runtime value can be switched freely).
    pub alternate: bool,
    /// The journal session that applied the change.
    pub session: i64,
    /// Every run, the two sides' summaries, the interval and the verdict.
    #[serde(flatten)]
    pub outcome: TrialOutcome,
    pub min_gain_pct: f64,
    /// Whether the change is in place now.
    pub kept: bool,
    /// The setting's runtime value after the trial.
    pub final_value: Option<String>,
    /// Runs that stayed disturbed after their re-runs, with the reasons: their
    /// values are in `runs`, and said here rather than silently counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disturbed_runs: Vec<String>,
    /// Measurements taken again because the box was disturbed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reruns: u32,
    /// What the change gives up in security, when it lowers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_trade: Option<String>,
    /// A disk judge's throughput over time, one entry per run in `runs`'
    /// order, whatever the metric: a dirty-limit change shows there (the
    /// longest stall, the sustained rate) when the mean hides it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub run_timelines: Vec<RunTimeline>,
}

/// The timeline figures of one trial run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RunTimeline {
    /// The longest time with no I/O completed.
    pub longest_stall_s: f64,
    /// MB/s after the first seconds, or after the cliff or stall.
    pub sustained_mb_per_sec: Option<f64>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl crate::doc::Document for TryReport {
    const KIND: crate::doc::DocKind = crate::doc::DocKind::TuneTry;
    const VERSION: u32 = crate::tune::plan::SCHEMA_VERSION;
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    #[test]
    fn a_stored_report_round_trips_byte_for_byte() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/docs/tune-try.json"
        );
        let stored = std::fs::read_to_string(path).unwrap();
        let report: TryReport = serde_json::from_str(&stored).unwrap();
        assert!(!report.outcome.runs.is_empty());
        let json = serde_json::to_string(&report).unwrap();
        let as_value = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap();
        assert_eq!(as_value(&json), as_value(&stored));
        let back: TryReport = serde_json::from_str(&json).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
        // A key of the outcome missing is still named as missing.
        let e = serde_json::from_str::<TryReport>(&json.replace("\"p_value\"", "\"p\""))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("missing field `p_value`"), "{e}");
    }

    /// A fake system: a flag for the change, a log of calls, and scripted
    /// numbers per side (each side's script is cycled).
    struct Fake {
        applied: bool,
        log: Vec<&'static str>,
        baseline: Vec<f64>,
        changed: Vec<f64>,
        taken: (usize, usize),
        fail_measure_at: Option<usize>,
        fail_apply: bool,
        fail_revert: bool,
    }

    impl Fake {
        fn new(baseline: &[f64], changed: &[f64]) -> RefCell<Fake> {
            RefCell::new(Fake {
                applied: false,
                log: Vec::new(),
                baseline: baseline.to_vec(),
                changed: changed.to_vec(),
                taken: (0, 0),
                fail_measure_at: None,
                fail_apply: false,
                fail_revert: false,
            })
        }
    }

    fn run(fake: &RefCell<Fake>, plan: &TrialPlan) -> Result<TrialOutcome, TrialError<String>> {
        run_trial(
            plan,
            || {
                let mut f = fake.borrow_mut();
                let n = f.taken.0 + f.taken.1;
                if f.fail_measure_at == Some(n) {
                    return Err("disk vanished".to_string());
                }
                let label = if f.applied { "B" } else { "A" };
                f.log.push(label);
                Ok(if f.applied {
                    f.taken.1 += 1;
                    f.changed[(f.taken.1 - 1) % f.changed.len()]
                } else {
                    f.taken.0 += 1;
                    f.baseline[(f.taken.0 - 1) % f.baseline.len()]
                })
            },
            || {
                let mut f = fake.borrow_mut();
                f.log.push("apply");
                // A failing apply leaves half its work behind.
                f.applied = true;
                if f.fail_apply {
                    return Err("EPERM".into());
                }
                Ok(())
            },
            || {
                let mut f = fake.borrow_mut();
                f.log.push("revert");
                if f.fail_revert {
                    return Err("EBUSY".into());
                }
                f.applied = false;
                Ok(())
            },
        )
    }

    const NOISY: [f64; 5] = [100.0, 103.0, 98.0, 101.0, 99.0];

    #[test]
    fn clear_improvement_is_kept_and_left_applied() {
        let fake = Fake::new(&NOISY, &[120.0, 118.0, 123.0, 121.0, 119.0]);
        let o = run(&fake, &TrialPlan::new(5, false, Better::Higher)).unwrap();
        assert_eq!(o.verdict, Verdict::Keep, "{}", o.reason);
        assert!(o.ci_low > 10.0 && o.ci_high < 30.0, "{o:?}");
        assert!((o.diff - 20.0).abs() < 1e-9, "{}", o.diff);
        assert!(
            o.reason
                .starts_with("better beyond the noise: mean 120.2 with"),
            "{}",
            o.reason
        );
        let f = fake.borrow();
        assert!(f.applied);
        assert_eq!(
            f.log,
            ["A", "A", "A", "A", "A", "apply", "B", "B", "B", "B", "B"]
        );
    }

    #[test]
    fn noise_is_reverted() {
        let fake = Fake::new(&NOISY, &[101.0, 97.0, 102.0, 100.0, 103.0]);
        let o = run(&fake, &TrialPlan::new(5, false, Better::Higher)).unwrap();
        assert_eq!(o.verdict, Verdict::Revert);
        assert!(o.ci_low < 0.0 && o.ci_high > 0.0, "{o:?}");
        assert_eq!(o.effect, Some(Effect::NoEffect));
        assert!(
            o.reason.starts_with("the interval includes no change"),
            "{}",
            o.reason
        );
        assert!(!fake.borrow().applied);
        assert_eq!(fake.borrow().log.last(), Some(&"revert"));
    }

    #[test]
    fn regression_is_reverted_in_either_direction() {
        let fake = Fake::new(&NOISY, &[80.0, 82.0, 79.0, 81.0, 80.0]);
        let o = run(&fake, &TrialPlan::new(5, false, Better::Higher)).unwrap();
        assert_eq!(o.verdict, Verdict::Revert);
        assert!(
            o.reason.starts_with("worse beyond the noise"),
            "{}",
            o.reason
        );
        assert_eq!(o.effect, Some(Effect::Hurts));
        assert!(!fake.borrow().applied);
        // The same numbers as latency: lower is better, so now it is a gain.
        let fake = Fake::new(&NOISY, &[80.0, 82.0, 79.0, 81.0, 80.0]);
        let o = run(&fake, &TrialPlan::new(5, false, Better::Lower)).unwrap();
        assert_eq!(o.verdict, Verdict::Keep, "{}", o.reason);
        assert!(fake.borrow().applied);
    }

    /// A review can refuse a measured gain: the change is then reverted and
    /// the effect still says what was measured.
    #[test]
    fn a_review_can_refuse_a_gain() {
        let fake = Fake::new(&NOISY, &[120.0, 118.0, 123.0, 121.0]);
        let f = &fake;
        let o = run_trial_reviewed(
            &TrialPlan::new(4, true, Better::Higher),
            || {
                let mut f = f.borrow_mut();
                f.taken.0 += 1;
                Ok::<f64, String>(if f.applied { 120.0 } else { 100.0 } + (f.taken.0 % 3) as f64)
            },
            || {
                f.borrow_mut().applied = true;
                Ok(())
            },
            || {
                f.borrow_mut().applied = false;
                Ok(())
            },
            |o| {
                o.verdict = Verdict::Revert;
                o.reason.push_str("; refused");
            },
        )
        .unwrap();
        assert_eq!(o.effect, Some(Effect::Helps));
        assert_eq!(o.verdict, Verdict::Revert);
        assert!(o.reason.ends_with("; refused"), "{}", o.reason);
        assert!(!fake.borrow().applied, "reverted after the review");
    }

    #[test]
    fn a_gain_below_the_minimum_is_reverted() {
        let fake = Fake::new(&[100.0, 100.5, 99.5], &[102.0, 102.5, 101.5]);
        let mut plan = TrialPlan::new(3, false, Better::Higher);
        plan.min_gain_pct = 5.0;
        let o = run(&fake, &plan).unwrap();
        assert_eq!(o.verdict, Verdict::Revert);
        assert!(
            o.reason.contains("by 2.0 %, less than the 5.0 %"),
            "{}",
            o.reason
        );
    }

    #[test]
    fn alternating_runs_abba_and_toggle_every_two_runs() {
        assert_eq!(
            schedule(3, true),
            [
                Side::Baseline,
                Side::Changed,
                Side::Changed,
                Side::Baseline,
                Side::Baseline,
                Side::Changed
            ]
        );
        let fake = Fake::new(&NOISY, &[120.0, 118.0, 123.0, 121.0]);
        let o = run(&fake, &TrialPlan::new(4, true, Better::Higher)).unwrap();
        assert_eq!(o.verdict, Verdict::Keep);
        assert_eq!(
            fake.borrow().log,
            [
                "A", "apply", "B", "B", "revert", "A", "A", "apply", "B", "B", "revert", "A",
                "apply"
            ]
        );
        assert!(fake.borrow().applied);
        assert_eq!(o.runs.len(), 8);
    }

    #[test]
    fn a_measure_error_leaves_the_system_reverted() {
        for at in [0, 2, 6] {
            let fake = Fake::new(&NOISY, &[120.0]);
            fake.borrow_mut().fail_measure_at = Some(at);
            let e = run(&fake, &TrialPlan::new(4, false, Better::Higher)).unwrap_err();
            assert!(
                matches!(
                    e,
                    TrialError::Stopped {
                        step: Step::Measure,
                        revert_failed: None,
                        ..
                    }
                ),
                "{e:?}"
            );
            assert!(!fake.borrow().applied, "measure error at run {at}");
            assert_eq!(
                e.to_string(),
                "trial stopped while measuring: disk vanished; the change was reverted"
            );
        }
    }

    #[test]
    fn a_failed_apply_is_reverted_and_a_failed_revert_is_said() {
        let fake = Fake::new(&NOISY, &[120.0]);
        fake.borrow_mut().fail_apply = true;
        let e = run(&fake, &TrialPlan::new(2, false, Better::Higher)).unwrap_err();
        assert!(
            matches!(
                e,
                TrialError::Stopped {
                    step: Step::Apply,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(!fake.borrow().applied);
        assert_eq!(fake.borrow().log, ["A", "A", "apply", "revert"]);

        let fake = Fake::new(&NOISY, &[120.0]);
        fake.borrow_mut().fail_revert = true;
        fake.borrow_mut().fail_measure_at = Some(3);
        let e = run(&fake, &TrialPlan::new(2, false, Better::Higher)).unwrap_err();
        assert!(
            e.to_string().contains("reverting failed too (EBUSY)"),
            "{e}"
        );
    }

    #[test]
    fn broken_numbers_and_plans_are_refused() {
        let fake = Fake::new(&NOISY, &[f64::NAN]);
        let e = run(&fake, &TrialPlan::new(2, false, Better::Higher)).unwrap_err();
        assert!(
            e.to_string().contains("returned 'NaN', not a number"),
            "{e}"
        );
        assert!(!fake.borrow().applied);
        let e = run(&fake, &TrialPlan::new(1, false, Better::Higher)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "runs per side must be 2 to 1000, got '1': one run carries no noise estimate"
        );
        let mut plan = TrialPlan::new(3, false, Better::Higher);
        plan.confidence = 95.0;
        assert_eq!(plan.validate(), Err(PlanError::Confidence(95.0)));
    }

    #[test]
    fn numbers_keep_four_significant_digits() {
        assert_eq!(num(120.2), "120.2");
        assert_eq!(num(12345.678), "12346");
        assert_eq!(num(0.012345), "0.01235");
        assert_eq!(signed(-3.0), "-3.000");
    }
}
