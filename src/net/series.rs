//! Throughput over time of a `bench net` run: the interval reports the
//! document already keeps (iperf3's `intervals[].sum`, `sum_received`) read
//! as the series `bench disk` keeps per test, so the same cliff and stall
//! detection runs on them and the same sparkline and chart draw them. The
//! series is not stored twice: the document keeps only what was found
//! (`end.timelines`), and the points are rebuilt from the intervals.

use serde::{Deserialize, Serialize};

use super::engine::{Interval, IntervalSum};
use crate::timeline::{Cause, Counters, Event, Point, Timeline, cause, detect};

/// Which of an interval's sums a series is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// `intervals[].sum`: what this end sent.
    Sent,
    /// `intervals[].sum_received`: what this end received.
    Received,
}

impl Direction {
    pub fn name(self) -> &'static str {
        match self {
            Direction::Sent => "sent",
            Direction::Received => "received",
        }
    }

    fn sum(self, i: &Interval) -> Option<&IntervalSum> {
        match self {
            Direction::Sent => i.sum.as_ref(),
            Direction::Received => i.sum_received.as_ref(),
        }
    }
}

/// What the cliff and stall detection found in one direction's intervals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetTimeline {
    pub direction: Direction,
    /// The reporting interval (`-i`), ms.
    pub interval_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<Event>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
}

impl NetTimeline {
    /// The full timeline for drawing: the points rebuilt from `intervals`.
    pub fn timeline(&self, intervals: &[Interval]) -> Timeline {
        Timeline {
            interval_ms: self.interval_ms,
            points: points(intervals, self.direction),
            device: None,
            dirty: None,
            log_events: Vec::new(),
            event: self.event.clone(),
            cause: self.cause.clone(),
            steady_ms: None,
        }
    }
}

/// The measured (not omitted) intervals of one direction as points, their
/// times from the first measured interval's start. A point's `ops` says
/// whether any byte moved: a network stream has no I/Os to count, and the
/// stall detection asks only "did anything complete".
pub fn points(intervals: &[Interval], dir: Direction) -> Vec<Point> {
    let sums: Vec<&IntervalSum> = intervals
        .iter()
        .filter_map(|i| dir.sum(i))
        .filter(|s| !s.omitted)
        .collect();
    let Some(origin) = sums.first().map(|s| s.start) else {
        return Vec::new();
    };
    let ms = |secs: f64| (secs.max(0.0) * 1000.0).round() as u64;
    sums.iter()
        .map(|s| Point {
            t_ms: ms(s.end - origin),
            ms: ms(s.seconds).max(1),
            bytes: s.bytes,
            ops: u64::from(s.bytes > 0),
            counters: Counters::default(),
        })
        .collect()
}

/// The cliff or stall of each direction the intervals carry. A network
/// series has no counter sampled alongside that could name a cause (the
/// disk's dirty memory and device queue are not in its path), so an event's
/// cause is `unknown`.
pub fn judge(intervals: &[Interval], interval_ms: u64) -> Vec<NetTimeline> {
    [Direction::Sent, Direction::Received]
        .into_iter()
        .filter_map(|dir| {
            let pts = points(intervals, dir);
            if pts.is_empty() {
                return None;
            }
            let event = detect::detect(&pts);
            let cause = cause::unsampled(
                event.as_ref(),
                "bench net samples no counter that says why the network's rate fell \
                 (another flow on the link, a shaper, the far end's load)",
            );
            Some(NetTimeline {
                direction: dir,
                interval_ms,
                event,
                cause,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::cpu::CpuUse;
    use crate::timeline::{CauseKind, EventKind};

    /// Intervals of `secs` each with these megabytes sent, the first
    /// `omitted` of them the warm-up.
    fn intervals(secs: f64, omitted: usize, mb: &[f64]) -> Vec<Interval> {
        mb.iter()
            .enumerate()
            .map(|(i, m)| Interval {
                streams: Vec::new(),
                sum: Some(IntervalSum {
                    start: i as f64 * secs,
                    end: (i + 1) as f64 * secs,
                    seconds: secs,
                    bytes: (m * 1e6) as u64,
                    bits_per_second: m * 8e6 / secs,
                    omitted: i < omitted,
                }),
                sum_received: None,
                cpu: CpuUse::default(),
            })
            .collect()
    }

    #[test]
    fn a_link_shaped_down_is_a_cliff_timed_from_the_first_measured_interval() {
        // 1 s omitted, then 12.5 MB per second (100 Mbit/s) for 3 s, then
        // 2.5 MB (20 Mbit/s).
        let iv = intervals(1.0, 1, &[5.0, 12.5, 12.5, 12.5, 2.5, 2.5, 2.5, 2.5]);
        let pts = points(&iv, Direction::Sent);
        assert_eq!(pts.len(), 7);
        assert_eq!((pts[0].t_ms, pts[0].ms), (1000, 1000));
        let t = judge(&iv, 1000);
        assert_eq!(t.len(), 1, "no received sums: one series");
        let e = t[0].event.as_ref().unwrap();
        assert_eq!((e.kind, e.start_ms), (EventKind::Cliff, 3000));
        assert_eq!(e.bytes_before, 37_500_000);
        assert_eq!(t[0].cause.as_ref().unwrap().kind, CauseKind::Unknown);
        // The drawn timeline carries the same event on the same points.
        let tl = t[0].timeline(&iv);
        assert_eq!(tl.points, pts);
        assert_eq!(tl.event.as_ref(), Some(e));
    }

    #[test]
    fn a_steady_link_has_no_event_and_no_cause() {
        let iv = intervals(0.5, 0, &[6.0, 6.2, 5.9, 6.1, 6.0, 5.8]);
        let t = judge(&iv, 500);
        assert_eq!((t[0].event.as_ref(), t[0].cause.as_ref()), (None, None));
        // Without interval reports (`-i 0`) there is no series.
        assert!(judge(&[], 0).is_empty());
    }
}
