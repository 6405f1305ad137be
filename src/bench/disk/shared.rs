//! Several targets at once (`bench disk A B C`): each alone, then all
//! together, and whether the aggregate stopped scaling — the sign of a shared
//! bus, controller or backing store between them.

use serde::{Deserialize, Serialize};

use super::TestResult;
use super::target::TargetInfo;
use crate::bench::diskstats::Layer;

/// Together-aggregate below this fraction of the sum of the alone figures
/// means the targets share a ceiling.
pub const SCALING_THRESHOLD: f64 = 0.9;

/// One target of a multi-target run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetRun {
    pub target: TargetInfo,
    /// The block stack under this target, top first.
    pub layers: Vec<Layer>,
    /// The workload on this target with the others idle.
    pub alone: TestResult,
    /// The same workload on this target while every target ran it.
    pub together: TestResult,
}

/// The together phase summed over the targets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Together {
    /// Sum of the targets' together bandwidths (read + write).
    pub bw_bytes: f64,
    pub iops: f64,
    /// Sum of the targets' alone bandwidths: what full scaling would give.
    pub sum_alone_bw_bytes: f64,
    /// `bw_bytes / sum_alone_bw_bytes`: 1.0 scales fully.
    pub scaling: f64,
    /// The aggregate when it is below [`SCALING_THRESHOLD`] × the sum of the
    /// alone figures: the ceiling the targets share. `None` while they scale.
    pub shared_ceiling_bytes_per_sec: Option<f64>,
}

/// Bandwidth and IOPS of a test, both directions summed (0 when it did not run).
pub fn totals(t: &TestResult) -> (f64, f64) {
    [&t.read, &t.write]
        .into_iter()
        .flatten()
        .fold((0.0, 0.0), |(bw, io), d| (bw + d.bw_bytes, io + d.iops))
}

/// The rule: with at least two targets, a together aggregate below 0.9 × the
/// sum of the alone figures is the shared ceiling. Pure, on bandwidths.
pub fn shared_ceiling(alone: &[f64], together: &[f64]) -> (f64, f64, Option<f64>) {
    let sum_alone: f64 = alone.iter().sum();
    let aggregate: f64 = together.iter().sum();
    let scaling = if sum_alone > 0.0 {
        aggregate / sum_alone
    } else {
        0.0
    };
    let ceiling =
        (alone.len() >= 2 && sum_alone > 0.0 && scaling < SCALING_THRESHOLD).then_some(aggregate);
    (sum_alone, scaling, ceiling)
}

/// The together summary of finished target runs.
pub fn summarize(runs: &[TargetRun]) -> Together {
    let alone: Vec<f64> = runs.iter().map(|r| totals(&r.alone).0).collect();
    let together: Vec<(f64, f64)> = runs.iter().map(|r| totals(&r.together)).collect();
    let bws: Vec<f64> = together.iter().map(|t| t.0).collect();
    let (sum_alone, scaling, ceiling) = shared_ceiling(&alone, &bws);
    Together {
        bw_bytes: bws.iter().sum(),
        iops: together.iter().map(|t| t.1).sum(),
        sum_alone_bw_bytes: sum_alone,
        scaling,
        shared_ceiling_bytes_per_sec: ceiling,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: f64 = 1e6;

    #[test]
    fn an_aggregate_that_stops_scaling_is_the_shared_ceiling() {
        // Three loop devices on one 60 MB/s store: each alone near 60, together 60.
        let (sum, scaling, ceiling) =
            shared_ceiling(&[62.0 * MB, 61.0 * MB, 63.0 * MB], &[20.0 * MB; 3]);
        assert_eq!(sum, 186.0 * MB);
        assert!((scaling - 60.0 / 186.0).abs() < 1e-9);
        assert_eq!(ceiling, Some(60.0 * MB));
    }

    #[test]
    fn targets_that_scale_share_nothing() {
        // 0.95 of the sum: within noise of full scaling.
        let (_, scaling, ceiling) = shared_ceiling(&[100.0 * MB, 100.0 * MB], &[95.0 * MB; 2]);
        assert!((scaling - 0.95).abs() < 1e-9);
        assert_eq!(ceiling, None);
        // Exactly at the threshold is still scaling; just under is not.
        assert_eq!(shared_ceiling(&[50.0, 50.0], &[45.0, 45.0]).2, None);
        assert_eq!(shared_ceiling(&[50.0, 50.0], &[44.9, 45.0]).2, Some(89.9));
    }

    #[test]
    fn one_target_or_nothing_measured_has_no_ceiling() {
        assert_eq!(shared_ceiling(&[100.0], &[50.0]).2, None);
        assert_eq!(shared_ceiling(&[0.0, 0.0], &[0.0, 0.0]), (0.0, 0.0, None));
    }
}
