//! A watch run's counter series as the reports draw them: the increase since
//! the run's first sample over time (wraps counted, resets adding 0), with
//! wraps, resets, reboots and device changes marked, downsampled to a bounded
//! number of points so a month-long watch still makes a small page.

use crate::watch::points::WatchPoint;

/// Points drawn per series at most.
pub const MAX_POINTS: usize = 500;

/// Series charted per run at most (the rest are counted in a note).
pub const MAX_CHARTS: usize = 200;

#[derive(Debug, Clone, PartialEq)]
pub struct CounterSeries {
    pub series: String,
    /// (time, increase since the first sample), time ascending.
    pub points: Vec<(f64, f64)>,
    /// (time, event name) of wraps, resets, reboots and new devices.
    pub events: Vec<(f64, &'static str)>,
    pub total: u64,
    pub max_rate_per_sec: Option<f64>,
    /// Points stored for this series (before downsampling).
    pub stored_points: usize,
}

impl CounterSeries {
    pub fn count(&self, event: &str) -> usize {
        self.events.iter().filter(|(_, e)| *e == event).count()
    }

    /// The series in words: `CPU pressure (some), µs stalled`, `eth0: bytes received`.
    pub fn title(&self) -> String {
        display_name(&self.series)
    }

    /// The one unit of a chart's axis, as (divisor, suffix): a byte counter
    /// in the binary unit its total calls for, a count in millions from a
    /// million on. Every tick of the axis is then in that unit (0, 2, 4, 6
    /// KiB), not each in its own.
    pub fn axis_unit(&self) -> (f64, &'static str) {
        let total = self.total as f64;
        if self.series.contains("_bytes") {
            let units = ["B", "KiB", "MiB", "GiB", "TiB"];
            let mut i = 0;
            while i + 1 < units.len() && total >= 1024f64.powi(i as i32 + 1) {
                i += 1;
            }
            (1024f64.powi(i as i32), units[i])
        } else if total >= 1e6 {
            (1e6, "M")
        } else {
            (1.0, "")
        }
    }

    /// Counters in bytes are shown in binary units, the rest as plain counts.
    pub fn format(&self, v: f64) -> String {
        if self.series.contains("_bytes") {
            super::format::bytes(v.max(0.0) as u64)
        } else if v.abs() >= 1e6 {
            format!("{:.2} M", v / 1e6)
        } else {
            format!("{v:.0}")
        }
    }
}

/// A stored series key (`pressure_some_stalled_us{resource="cpu"}`) in
/// words for a chart (`CPU pressure (some), µs`): the metric's meaning, the
/// device or other labels in front, the unit last. Unknown metrics keep
/// their name with spaces, so every series still gets a title.
pub fn display_name(series: &str) -> String {
    let (metric, labels) = match series.split_once('{') {
        Some((m, rest)) => (m, parse_labels(rest.trim_end_matches('}'))),
        None => (series, Vec::new()),
    };
    let label = |k: &str| labels.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let what = match metric {
        "pressure_some_stalled_us" | "pressure_full_stalled_us" => {
            let resource = match label("resource") {
                Some("cpu") => "CPU".to_string(),
                Some("io") => "I/O".to_string(),
                Some(r) => r.to_string(),
                None => "?".to_string(),
            };
            let kind = if metric.contains("some") {
                "some"
            } else {
                "full"
            };
            return format!("{resource} pressure ({kind}), µs stalled");
        }
        "disk_io_time_ms" => "time busy with I/O, ms".to_string(),
        "disk_read_time_ms" => "time spent reading, ms".to_string(),
        "disk_write_time_ms" => "time spent writing, ms".to_string(),
        "disk_reads" => "reads completed".to_string(),
        "disk_writes" => "writes completed".to_string(),
        "softnet_dropped" => "packets dropped by a full backlog".to_string(),
        "softnet_time_squeeze" => "receive runs out of time or budget".to_string(),
        "smart_attribute_raw" => format!("SMART attribute {}", label("id").unwrap_or("?")),
        "net_driver_counter" => format!("driver counter {}", label("counter").unwrap_or("?")),
        m => {
            let m = m.strip_prefix("net_").unwrap_or(m);
            // rx_bytes -> bytes received, rx_dropped -> received packets
            // dropped, rx_crc_errors -> receive crc errors.
            let way = |rest: &str, done: &str, doing: &str| match rest {
                "dropped" => format!("{done} packets dropped"),
                r if r.ends_with("errors") => format!("{doing} {r}"),
                r => format!("{r} {done}"),
            };
            let m = m
                .strip_prefix("rx_")
                .map(|r| way(r, "received", "receive"))
                .or_else(|| m.strip_prefix("tx_").map(|t| way(t, "sent", "send")))
                .unwrap_or_else(|| m.to_string());
            m.replace('_', " ")
        }
    };
    // The thing the counter belongs to, in front: `eth0: received bytes`.
    let owner: Vec<String> = labels
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "id" | "counter" | "resource"))
        .map(|(k, v)| match k.as_str() {
            "device" | "array" | "sensor" => v.clone(),
            "cpu" => format!("CPU {v}"),
            k => format!("{k} {v}"),
        })
        .collect();
    if owner.is_empty() {
        what
    } else {
        format!("{}: {what}", owner.join(" "))
    }
}

/// `k="v",k2="v2"` with Prometheus escapes (`\"`, `\\`, `\n`) undone.
fn parse_labels(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some((key, after)) = rest.split_once("=\"") {
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next().map(|(_, e)| e) {
                    Some('n') => value.push('\n'),
                    Some(e) => value.push(e),
                    None => {}
                },
                '"' => {
                    end = i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        out.push((key.trim_start_matches(',').to_string(), value));
        rest = &after[end..];
    }
    out
}

/// Builds one series from its stored points (time order) over the run's
/// sample span `[start, end]`; `None` when it never moved (no increase, wrap
/// or reset).
pub fn build(
    series: &str,
    stored: &[WatchPoint],
    start: Option<f64>,
    end: Option<f64>,
    max_points: usize,
) -> Option<CounterSeries> {
    let first = stored.first()?;
    let mut points = Vec::with_capacity(stored.len() + 2);
    // The first sample is the baseline: nothing has increased yet. A point
    // at it holds the growth since the store's last baseline (an earlier
    // watch, hours before), not growth in this run: drawn, it started the
    // line at its full height on an axis of "increase since the first
    // sample".
    if let Some(s) = start {
        points.push((s.min(first.time_unix_s), 0.0));
    }
    let mut total: u64 = 0;
    let mut max_rate: Option<f64> = None;
    let mut events = Vec::new();
    for p in stored {
        if start.is_none_or(|s| p.time_unix_s > s) {
            total = total.saturating_add(p.delta);
            points.push((p.time_unix_s, total as f64));
        }
        if let Some(r) = p.max_rate_per_sec {
            max_rate = Some(max_rate.map_or(r, |m: f64| m.max(r)));
        }
        events.extend(p.events.iter().map(|e| (p.time_unix_s, *e)));
    }
    if let Some(e) = end.filter(|e| points.last().is_some_and(|(t, _)| t < e)) {
        points.push((e, total as f64));
    }
    // A reboot or a new device alone is a new baseline, not movement.
    if total == 0 && !events.iter().any(|(_, e)| matches!(*e, "wrap" | "reset")) {
        return None;
    }
    Some(CounterSeries {
        series: series.to_string(),
        points: downsample(&points, max_points),
        events: thin_events(&events, max_points),
        total,
        max_rate_per_sec: max_rate,
        stored_points: stored.len(),
    })
}

/// At most `max` of the (time, cumulative value) points: the first and the
/// last, and the last point of each of `max - 2` equal time slices between
/// them. Values are running totals, so the kept ones stay exact.
pub fn downsample(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    if points.len() <= max.max(2) {
        return points.to_vec();
    }
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return Vec::new();
    };
    let slices = max.max(3) - 2;
    let mut out = Vec::with_capacity(max);
    out.push(*first);
    let inner = &points[1..points.len() - 1];
    for (i, p) in inner.iter().enumerate() {
        let this = slice(p.0, first.0, last.0, slices);
        let next = inner
            .get(i + 1)
            .map(|n| slice(n.0, first.0, last.0, slices));
        if next != Some(this) {
            out.push(*p);
        }
    }
    out.push(*last);
    out
}

/// One marker per event kind per time slice: a counter resetting every
/// sample for a month still draws a bounded number of marks.
fn thin_events(events: &[(f64, &'static str)], max: usize) -> Vec<(f64, &'static str)> {
    let (Some(first), Some(last)) = (events.first(), events.last()) else {
        return Vec::new();
    };
    let slices = max.max(1);
    let mut out: Vec<(f64, &'static str)> = Vec::new();
    for e in events {
        let s = slice(e.0, first.0, last.0, slices);
        if !out
            .iter()
            .any(|o| o.1 == e.1 && slice(o.0, first.0, last.0, slices) == s)
        {
            out.push(*e);
        }
    }
    out
}

fn slice(t: f64, t0: f64, t1: f64, slices: usize) -> usize {
    if t1 <= t0 {
        return 0;
    }
    (((t - t0) / (t1 - t0) * slices as f64) as usize).min(slices - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(t: f64, delta: u64, events: Vec<&'static str>) -> WatchPoint {
        WatchPoint {
            series: "net_rx_dropped{device=\"eth0\"}".into(),
            time_unix_s: t,
            delta,
            max_rate_per_sec: Some(delta as f64 / 10.0),
            events,
        }
    }

    #[test]
    fn cumulative_from_the_first_sample_to_the_last() {
        let s = build(
            "x",
            &[
                p(20.0, 2, vec![]),
                p(30.0, 0, vec!["reset"]),
                p(40.0, 5, vec!["wrap"]),
            ],
            Some(10.0),
            Some(60.0),
            MAX_POINTS,
        )
        .unwrap();
        assert_eq!(
            s.points,
            vec![
                (10.0, 0.0),
                (20.0, 2.0),
                (30.0, 2.0),
                (40.0, 7.0),
                (60.0, 7.0)
            ]
        );
        assert_eq!(s.events, vec![(30.0, "reset"), (40.0, "wrap")]);
        assert_eq!((s.total, s.count("wrap"), s.count("reset")), (7, 1, 1));
        assert_eq!(s.max_rate_per_sec, Some(0.5));
        assert_eq!(s.stored_points, 3);
        // Never moved: nothing to draw.
        assert!(build("x", &[p(20.0, 0, vec![])], None, None, 10).is_none());
        assert!(build("x", &[p(20.0, 0, vec!["new_identity"])], None, None, 10).is_none());
        assert!(build("x", &[p(20.0, 0, vec!["reset"])], None, None, 10).is_some());
        assert!(build("x", &[], Some(1.0), Some(2.0), 10).is_none());
    }

    /// A watch resumed from the store's baselines: the first sample's point
    /// holds the growth since the last watch. The line starts at 0 and
    /// draws a point per sample after it.
    #[test]
    fn the_first_sample_is_the_baseline_at_zero() {
        let stored: Vec<WatchPoint> = (0..5).map(|i| p(100.0 + f64::from(i), 3, vec![])).collect();
        let mut first = stored.clone();
        first[0].delta = 27_615;
        let s = build("x", &first, Some(100.0), Some(104.0), MAX_POINTS).unwrap();
        assert_eq!(
            s.points,
            vec![
                (100.0, 0.0),
                (101.0, 3.0),
                (102.0, 6.0),
                (103.0, 9.0),
                (104.0, 12.0)
            ]
        );
        assert_eq!(s.total, 12);
    }

    #[test]
    fn series_keys_read_as_words() {
        for (key, words) in [
            (
                "pressure_some_stalled_us{resource=\"cpu\"}",
                "CPU pressure (some), µs stalled",
            ),
            (
                "pressure_full_stalled_us{resource=\"io\"}",
                "I/O pressure (full), µs stalled",
            ),
            ("net_rx_bytes{device=\"eth0\"}", "eth0: bytes received"),
            ("net_tx_packets{device=\"lo\"}", "lo: packets sent"),
            (
                "net_rx_dropped{device=\"eth0\"}",
                "eth0: received packets dropped",
            ),
            (
                "net_rx_crc_errors{device=\"eth0\"}",
                "eth0: receive crc errors",
            ),
            (
                "disk_io_time_ms{device=\"vda\"}",
                "vda: time busy with I/O, ms",
            ),
            (
                "softnet_dropped{cpu=\"1\"}",
                "CPU 1: packets dropped by a full backlog",
            ),
            (
                "smart_attribute_raw{device=\"sda\",id=\"199\"}",
                "sda: SMART attribute 199",
            ),
            (
                "net_carrier_changes{device=\"a\\\"b\"}",
                "a\"b: carrier changes",
            ),
            (
                "md_mismatch_sectors{array=\"md0\"}",
                "md0: md mismatch sectors",
            ),
            ("kernel_oom_kills", "kernel oom kills"),
        ] {
            assert_eq!(display_name(key), words, "{key}");
        }
    }

    #[test]
    fn downsampling_is_bounded_keeps_the_ends_and_exact_totals() {
        let pts: Vec<(f64, f64)> = (0..10_000)
            .map(|i| (f64::from(i), f64::from(i) * 2.0))
            .collect();
        let d = downsample(&pts, 500);
        assert!(d.len() <= 500 && d.len() >= 450, "{}", d.len());
        assert_eq!(d.first(), Some(&(0.0, 0.0)));
        assert_eq!(d.last(), Some(&(9999.0, 19998.0)));
        assert!(d.windows(2).all(|w| w[0].0 < w[1].0), "time ascending");
        // Every kept point is an original one: no averaging of running totals.
        assert!(d.iter().all(|(t, v)| *v == t * 2.0));
        // Short series and tiny limits are left whole or still bounded.
        assert_eq!(downsample(&pts[..3], 500).len(), 3);
        assert!(downsample(&pts, 3).len() <= 3);
        // Bursty times: the limit holds however the points cluster.
        let bursty: Vec<(f64, f64)> = (0..5000)
            .map(|i| {
                (
                    if i < 4990 {
                        f64::from(i) * 1e-3
                    } else {
                        f64::from(i)
                    },
                    f64::from(i),
                )
            })
            .collect();
        assert!(downsample(&bursty, 100).len() <= 100);
    }

    #[test]
    fn events_are_thinned_per_kind_and_slice() {
        let stored: Vec<WatchPoint> = (0..10_000)
            .map(|i| p(f64::from(i), 1, vec!["reset"]))
            .chain([p(20_000.0, 1, vec!["wrap"])])
            .collect();
        let s = build("x", &stored, None, None, 50).unwrap();
        assert!(s.points.len() <= 50);
        assert!(s.events.len() <= 51, "{}", s.events.len());
        assert_eq!(s.count("wrap"), 1);
        assert_eq!(s.total, 10_001);
    }
}
