//! The time series a watch run keeps: every sample in which a counter moved
//! is a point (increase, peak rate, wraps and resets seen), so a report draws
//! one point per sample. Between two store writes a series keeps at most
//! [`MAX_PENDING`] points; past that, neighbours are merged pairwise, so the
//! store grows by a bounded number of rows per moving series per write
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

/// Points a series keeps between two store writes: 60 is a minute of 1 s
/// samples (the default --persist-every), so a default watch keeps every
/// sample; a day between writes at 1 s is 86 400 samples, merged pairwise
/// down to at most 60 rows a series instead.
pub const MAX_PENDING: usize = 60;

/// Points not yet written, at most [`MAX_PENDING`] per series (so bounded by
/// the tracker's series cap).
#[derive(Debug, Default)]
pub struct PointBuffer {
    pending: BTreeMap<String, Vec<WatchPoint>>,
}

impl PointBuffer {
    /// Adds the changes of one sample taken at `time`: a point per series
    /// that moved.
    pub fn add(&mut self, time: f64, changes: &[Observation]) {
        for o in changes {
            let event = event_name(o.step);
            if o.step.delta() == 0 && event.is_none() {
                continue;
            }
            let points = self.pending.entry(o.series.clone()).or_default();
            if points.len() >= MAX_PENDING {
                halve(points);
            }
            points.push(WatchPoint {
                series: o.series.clone(),
                time_unix_s: time,
                delta: o.step.delta(),
                max_rate_per_sec: o.rate_per_sec,
                events: event.into_iter().collect(),
            });
        }
    }

    /// The pending points, series by key and each in time order; the buffer
    /// is empty after.
    pub fn take(&mut self) -> Vec<WatchPoint> {
        std::mem::take(&mut self.pending)
            .into_values()
            .flatten()
            .collect()
    }
}

/// Merges neighbours pairwise into the later one: half the points, the same
/// total increase, the peak rate and every event kept.
fn halve(points: &mut Vec<WatchPoint>) {
    let old = std::mem::take(points);
    let mut it = old.into_iter();
    while let Some(mut a) = it.next() {
        if let Some(b) = it.next() {
            a.time_unix_s = b.time_unix_s;
            a.delta = a.delta.saturating_add(b.delta);
            a.max_rate_per_sec = match (a.max_rate_per_sec, b.max_rate_per_sec) {
                (Some(x), Some(y)) => Some(x.max(y)),
                (x, y) => x.or(y),
            };
            for e in b.events {
                if !a.events.contains(&e) {
                    a.events.push(e);
                }
            }
        }
        points.push(a);
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

    fn point(series: &str, t: f64, delta: u64, rate: f64, events: Vec<&'static str>) -> WatchPoint {
        WatchPoint {
            series: series.into(),
            time_unix_s: t,
            delta,
            max_rate_per_sec: Some(rate),
            events,
        }
    }

    /// Three samples between writes are three points, not one sum: a
    /// report of a 5-sample watch drew two points before.
    #[test]
    fn keeps_a_point_per_sample_and_its_events() {
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
        assert_eq!(
            b.take(),
            vec![
                point("a", 10.0, 2, 0.2, vec![]),
                point("a", 20.0, 5, 0.5, vec!["wrap"]),
                point("a", 30.0, 1, 0.1, vec![]),
                point("d", 20.0, 0, 0.0, vec!["reset"]),
            ]
        );
        assert!(b.take().is_empty(), "taking empties the buffer");
    }

    /// A long time between writes: at most MAX_PENDING points a series, the
    /// total, the peak and the events kept.
    #[test]
    fn many_samples_between_writes_merge_pairwise_within_the_bound() {
        let mut b = PointBuffer::default();
        for i in 0..1000u32 {
            let step = if i == 500 {
                Step::Reset
            } else {
                Step::Increase { delta: 1 }
            };
            b.add(f64::from(i), &[obs("a", step, Some(f64::from(i % 7)))]);
        }
        let pts = b.take();
        assert!(
            pts.len() <= MAX_PENDING && pts.len() >= MAX_PENDING / 2,
            "{}",
            pts.len()
        );
        assert_eq!(pts.iter().map(|p| p.delta).sum::<u64>(), 999);
        assert!(pts.windows(2).all(|w| w[0].time_unix_s < w[1].time_unix_s));
        assert_eq!(pts.last().unwrap().time_unix_s, 999.0);
        assert_eq!(pts.iter().filter(|p| p.events == ["reset"]).count(), 1);
        assert!(pts.iter().all(|p| p.max_rate_per_sec <= Some(6.0)));
    }
}
