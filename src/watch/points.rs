//! The time series a watch run keeps: between two store writes every counter
//! that moved is summed into one point (increase, peak rate, wraps and resets
//! seen), so the store grows by at most one row per moving series per write,
//! however short the sampling interval.

use std::collections::BTreeMap;

use super::counter::{Observation, Step};

/// What one counter series did since its previous point.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchPoint {
    pub series: String,
    /// Time of the last sample summed into this point.
    pub time_unix_s: f64,
    /// Increase, wraps included, resets counted as 0.
    pub delta: u64,
    pub max_rate_per_sec: Option<f64>,
    /// Distinct [`event_name`]s in the interval, in the order first seen.
    pub events: Vec<&'static str>,
}

/// The name a point records for a step that breaks the plain count, if any.
pub fn event_name(step: Step) -> Option<&'static str> {
    match step {
        Step::Wrap { .. } => Some("wrap"),
        Step::Reset => Some("reset"),
        Step::Reboot { .. } => Some("reboot"),
        Step::NewIdentity => Some("new_identity"),
        Step::First | Step::Unchanged | Step::Increase { .. } => None,
    }
}

/// Points not yet written, one per series (so bounded by the tracker's series cap).
#[derive(Debug, Default)]
pub struct PointBuffer {
    pending: BTreeMap<String, WatchPoint>,
}

impl PointBuffer {
    /// Adds the changes of one sample taken at `time`.
    pub fn add(&mut self, time: f64, changes: &[Observation]) {
        for o in changes {
            let event = event_name(o.step);
            if o.step.delta() == 0 && event.is_none() {
                continue;
            }
            let p = self
                .pending
                .entry(o.series.clone())
                .or_insert_with(|| WatchPoint {
                    series: o.series.clone(),
                    time_unix_s: time,
                    delta: 0,
                    max_rate_per_sec: None,
                    events: Vec::new(),
                });
            p.time_unix_s = time;
            p.delta = p.delta.saturating_add(o.step.delta());
            if let Some(r) = o.rate_per_sec {
                p.max_rate_per_sec = Some(p.max_rate_per_sec.map_or(r, |m| m.max(r)));
            }
            if let Some(e) = event
                && !p.events.contains(&e)
            {
                p.events.push(e);
            }
        }
    }

    /// The pending points, oldest series key first; the buffer is empty after.
    pub fn take(&mut self) -> Vec<WatchPoint> {
        std::mem::take(&mut self.pending).into_values().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(series: &str, step: Step, rate: Option<f64>) -> Observation {
        Observation {
            series: series.into(),
            step,
            value: 0,
            total: 0,
            rate_per_sec: rate,
        }
    }

    #[test]
    fn sums_between_writes_and_keeps_events() {
        let mut b = PointBuffer::default();
        b.add(
            10.0,
            &[
                obs("a", Step::Increase { delta: 2 }, Some(0.2)),
                // Unchanged and first values are no points.
                obs("b", Step::Unchanged, Some(0.0)),
                obs("c", Step::First, None),
            ],
        );
        b.add(
            20.0,
            &[
                obs("a", Step::Wrap { delta: 5, bits: 32 }, Some(0.5)),
                obs("d", Step::Reset, Some(0.0)),
            ],
        );
        b.add(30.0, &[obs("a", Step::Increase { delta: 1 }, Some(0.1))]);
        let pts = b.take();
        assert_eq!(
            pts,
            vec![
                WatchPoint {
                    series: "a".into(),
                    time_unix_s: 30.0,
                    delta: 8,
                    max_rate_per_sec: Some(0.5),
                    events: vec!["wrap"],
                },
                WatchPoint {
                    series: "d".into(),
                    time_unix_s: 20.0,
                    delta: 0,
                    max_rate_per_sec: Some(0.0),
                    events: vec!["reset"],
                },
            ]
        );
        assert!(b.take().is_empty(), "taking empties the buffer");
    }
}
