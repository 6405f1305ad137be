//! Throughput over time: bytes and I/Os per interval of a test (one point a
//! second by default, iperf3's `-i`), with counters sampled at each interval's
//! end (dirty memory, the device's completions and queue, CPU clock and
//! temperature, kernel-log resets), the cliff or stall found in the series and
//! its cause. One average per test hides a copy that runs at 112 MB/s for four
//! seconds and then at 0 MB/s; the series shows it and the counters say why.

pub mod cause;
pub mod counters;
pub mod detect;
pub mod steady;

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use cause::{Cause, CauseKind};
pub use counters::{Counters, DirtyLimits, LogEvent, Sampler};
pub use detect::{Event, EventKind};

/// One point a second, as iperf3.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
/// The shortest interval: below 100 ms a point holds too few I/Os of a slow
/// disk (10 ms each) to be a rate, and the sampling of five files per point
/// starts to cost more than it shows.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// Points kept at most per test: a day at one a second. Bounds memory on a
/// 128 MiB box (16 bytes per point in the jobs, about 100 in the document)
/// whatever `--runtime` and `--interval` ask for; later I/O joins the last point.
pub const MAX_POINTS: usize = 86_400;

/// Bytes and I/Os per interval as one job saw them, by completion time.
#[derive(Debug, Clone)]
pub struct Buckets {
    start: Instant,
    interval: Duration,
    bytes: Vec<u64>,
    ops: Vec<u64>,
}

impl Buckets {
    pub fn new(start: Instant, interval: Duration) -> Self {
        Buckets {
            start,
            interval: interval.max(MIN_INTERVAL),
            bytes: Vec::new(),
            ops: Vec::new(),
        }
    }

    /// The interval each point covers.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Counts one completion of `bytes` at `t`.
    pub fn record(&mut self, t: Instant, bytes: u64) {
        let since = t.saturating_duration_since(self.start);
        let i = ((since.as_nanos() / self.interval.as_nanos()) as usize).min(MAX_POINTS - 1);
        if self.bytes.len() <= i {
            self.bytes.resize(i + 1, 0);
            self.ops.resize(i + 1, 0);
        }
        self.bytes[i] += bytes;
        self.ops[i] += 1;
    }

    /// Adds another job's counts (jobs of one pass start together).
    pub fn merge(&mut self, other: &Buckets) {
        let n = self.bytes.len().max(other.bytes.len());
        self.bytes.resize(n, 0);
        self.ops.resize(n, 0);
        for (i, (b, o)) in other.bytes.iter().zip(&other.ops).enumerate() {
            self.bytes[i] += b;
            self.ops[i] += o;
        }
    }

    /// The points of a window `window` long, each with the counters sampled
    /// at its end (`samples[i]` for point `i`, when there is one).
    pub fn points(&self, window: Duration, samples: &[Counters]) -> Vec<Point> {
        let step = self.interval.as_millis() as u64;
        let total = window.as_millis() as u64;
        let n = (total.div_ceil(step.max(1)) as usize)
            .max(self.bytes.len())
            .min(MAX_POINTS);
        (0..n)
            .map(|i| {
                let start = i as u64 * step;
                let end = if i + 1 == n {
                    total.max(start + 1)
                } else {
                    start + step
                };
                Point {
                    t_ms: end,
                    ms: end - start,
                    bytes: self.bytes.get(i).copied().unwrap_or(0),
                    ops: self.ops.get(i).copied().unwrap_or(0),
                    counters: samples.get(i).cloned().unwrap_or_default(),
                }
            })
            .collect()
    }
}

/// One interval of a test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The interval's end, in milliseconds since the measured window began.
    pub t_ms: u64,
    /// The interval's length (the last one may be shorter).
    pub ms: u64,
    /// Bytes and I/Os that completed in the interval.
    pub bytes: u64,
    pub ops: u64,
    #[serde(flatten)]
    pub counters: Counters,
}

impl Point {
    /// Bytes per second in this interval.
    pub fn rate(&self) -> f64 {
        self.bytes as f64 * 1000.0 / self.ms.max(1) as f64
    }
}

/// A test's throughput over time and what it showed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    pub interval_ms: u64,
    pub points: Vec<Point>,
    /// The block device whose counters the points carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// The dirty-page thresholds when the test began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirty: Option<DirtyLimits>,
    /// Storage-relevant kernel-log lines written during the test.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_events: Vec<LogEvent>,
    /// The cliff or stall, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<Event>,
    /// Why: from the counters around the event (or why none could show).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
    /// `--until-steady`: when the rate had settled and the test stopped, ms
    /// into the window (absent: it ran to its cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_ms: Option<u64>,
}

/// What a test did, for judging its timeline's cause.
#[derive(Debug, Clone, Copy)]
pub struct Context {
    /// Buffered writes: the page cache and its dirty limits are in the path.
    pub buffered_writes: bool,
}

impl Timeline {
    /// The timeline of one pass, its event detected and its cause judged.
    pub fn judge(
        interval: Duration,
        points: Vec<Point>,
        sampled: counters::Sampled,
        ctx: Context,
    ) -> Timeline {
        let event = detect::detect(&points);
        let cause = cause::judge(&points, event.as_ref(), &sampled, ctx);
        Timeline {
            interval_ms: interval.max(MIN_INTERVAL).as_millis() as u64,
            points,
            device: sampled.device,
            dirty: sampled.dirty,
            log_events: sampled.log_events,
            event,
            cause,
            steady_ms: None,
        }
    }

    /// The timeline of a series sampled without counters, its event
    /// detected and its cause `unknown` for the reason `why`.
    pub fn unsampled(interval: Duration, points: Vec<Point>, why: &str) -> Timeline {
        let event = detect::detect(&points);
        Timeline {
            interval_ms: interval.max(MIN_INTERVAL).as_millis() as u64,
            cause: cause::unsampled(event.as_ref(), why),
            points,
            device: None,
            dirty: None,
            log_events: Vec::new(),
            event,
            steady_ms: None,
        }
    }

    /// The longest run of intervals with no completed I/O, in milliseconds.
    pub fn longest_stall_ms(&self) -> u64 {
        detect::longest_stall_ms(&self.points)
    }

    /// The rate after the first seconds, or after the cliff or stall, bytes/s.
    pub fn sustained_rate(&self) -> Option<f64> {
        detect::sustained_rate(&self.points, self.event.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_land_in_their_interval_and_jobs_add_up() {
        let t0 = Instant::now();
        let step = Duration::from_millis(200);
        let mut a = Buckets::new(t0, step);
        a.record(t0 + Duration::from_millis(10), 4096);
        a.record(t0 + Duration::from_millis(199), 4096);
        a.record(t0 + Duration::from_millis(650), 1000);
        let mut b = Buckets::new(t0, step);
        b.record(t0 + Duration::from_millis(201), 512);
        a.merge(&b);
        let p = a.points(Duration::from_millis(700), &[]);
        let got: Vec<(u64, u64, u64, u64)> =
            p.iter().map(|p| (p.t_ms, p.ms, p.bytes, p.ops)).collect();
        // The interval with nothing in it is a point of 0 (a stall), and the
        // last one is as long as the window left it.
        assert_eq!(
            got,
            vec![
                (200, 200, 8192, 2),
                (400, 200, 512, 1),
                (600, 200, 0, 0),
                (700, 100, 1000, 1)
            ]
        );
        assert_eq!(p[3].rate(), 10_000.0);
    }

    #[test]
    fn a_far_completion_joins_the_last_kept_point() {
        let t0 = Instant::now();
        let mut a = Buckets::new(t0, Duration::from_millis(100));
        a.record(t0 + Duration::from_secs(1_000_000), 1);
        assert_eq!(a.bytes.len(), MAX_POINTS);
    }
}
