//! Throughput over time in the terminal: one sparkline row per test, then
//! the cliff or stall with its cause and fix.

use std::fmt::Write;

use crate::bench::disk::TestResult;
use crate::report::format;
use crate::timeline::{EventKind, Point, Timeline};

/// Characters a sparkline is drawn with, lowest first; an interval with no
/// I/O at all is a blank so a stall shows as a gap.
const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
/// Columns at most: longer series are averaged into this many.
pub const MAX_COLUMNS: usize = 60;

/// Rates (bytes/s) of at most [`MAX_COLUMNS`] columns: groups of adjacent
/// points, each the group's bytes over its time.
pub fn columns(points: &[Point]) -> Vec<f64> {
    let per = points.len().div_ceil(MAX_COLUMNS).max(1);
    points
        .chunks(per)
        .map(|c| {
            let bytes: u64 = c.iter().map(|p| p.bytes).sum();
            let ms: u64 = c.iter().map(|p| p.ms).sum();
            bytes as f64 * 1000.0 / ms.max(1) as f64
        })
        .collect()
}

/// The sparkline of `rates` scaled to their maximum.
pub fn sparkline(rates: &[f64]) -> String {
    let max = rates.iter().copied().fold(0.0, f64::max);
    rates
        .iter()
        .map(|r| {
            if *r <= 0.0 || max <= 0.0 {
                ' '
            } else {
                let i = ((r / max) * BARS.len() as f64).ceil() as usize;
                BARS[i.clamp(1, BARS.len()) - 1]
            }
        })
        .collect()
}

fn secs(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// The event of a timeline in one line.
pub fn event_line(t: &Timeline) -> Option<String> {
    let e = t.event.as_ref()?;
    let what = match e.kind {
        EventKind::Cliff => "cliff",
        EventKind::Stall => "stall",
    };
    Some(format!(
        "{what} at {} after {}: {} in the first seconds, then {} (longest stall {})",
        secs(e.start_ms),
        format::bytes(e.bytes_before),
        format::rate(e.rate_before),
        format::rate(e.rate_after),
        secs(e.longest_stall_ms)
    ))
}

/// The timeline section for these tests; empty when none has a timeline.
pub fn render(out: &mut String, tests: &[TestResult]) {
    let with: Vec<(String, &Timeline)> = tests
        .iter()
        .filter_map(|t| Some((t.label(), t.timeline.as_ref()?)))
        .collect();
    render_labelled(out, &with, "no I/O completed");
}

/// The timeline section for these labelled timelines (a disk test, a
/// direction of a network test); empty when none has a point. `blank` says
/// what a blank column means.
pub fn render_labelled<T: std::borrow::Borrow<Timeline>>(
    out: &mut String,
    with: &[(String, T)],
    blank: &str,
) {
    let with: Vec<(&str, &Timeline)> = with
        .iter()
        .map(|(l, t)| (l.as_str(), t.borrow()))
        .filter(|(_, tl)| !tl.points.is_empty())
        .collect();
    let Some((_, first)) = with.first() else {
        return;
    };
    let _ = writeln!(
        out,
        "\nthroughput over time ({} s per point; blank: {blank}):",
        first.interval_ms as f64 / 1000.0
    );
    for (label, tl) in &with {
        let rates = columns(&tl.points);
        let lo = rates.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = rates.iter().copied().fold(0.0, f64::max);
        let _ = writeln!(
            out,
            "{:<30} |{}| {} to {}",
            label,
            sparkline(&rates),
            format::rate(lo),
            format::rate(hi)
        );
        if let Some(line) = event_line(tl) {
            let _ = writeln!(out, "    {line}");
        }
        if let Some(c) = &tl.cause {
            let _ = writeln!(out, "    cause: {}", c.summary);
            if let Some(fix) = &c.fix {
                let _ = writeln!(out, "    fix: {fix}");
            }
        }
        for l in &tl.log_events {
            let _ = writeln!(
                out,
                "    kernel log at {}: {}",
                secs(l.t_ms),
                format::shown(&l.line)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::Counters;

    fn p(ms: u64, bytes: u64) -> Point {
        Point {
            t_ms: 0,
            ms,
            bytes,
            ops: u64::from(bytes > 0),
            counters: Counters::default(),
        }
    }

    #[test]
    fn a_stall_is_a_gap_and_the_peak_is_the_full_bar() {
        let rates = columns(&[p(1000, 100), p(1000, 50), p(1000, 0), p(1000, 1)]);
        assert_eq!(rates, vec![100.0, 50.0, 0.0, 1.0]);
        assert_eq!(sparkline(&rates), "█▄ ▁");
    }

    #[test]
    fn long_series_are_averaged_into_at_most_sixty_columns() {
        let pts: Vec<Point> = (0..130)
            .map(|i| p(1000, if i < 65 { 10 } else { 0 }))
            .collect();
        let c = columns(&pts);
        assert_eq!(c.len(), 44);
        assert_eq!(c[0], 10.0);
        // The column holding points 63-65 mixes both halves.
        assert!((c[21] - 20.0 / 3.0).abs() < 1e-9, "{}", c[21]);
    }
}
