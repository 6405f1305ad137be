//! Prometheus text exposition (format 0.0.4), written by hand: counters are the
//! wrap-corrected totals (so a 32-bit wrap is no reset to PromQL), gauges the
//! latest values, and wraps and resets are counters of their own.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::counter::SeriesState;
use super::sample::Gauge;

pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Splits a series key `metric{labels}` into the metric and the label part
/// without braces.
fn split_key(key: &str) -> (&str, &str) {
    match key.split_once('{') {
        Some((m, rest)) => (m, rest.strip_suffix('}').unwrap_or(rest)),
        None => (key, ""),
    }
}

fn help(metric: &str) -> String {
    match super::alert::explain(metric) {
        Some((meaning, _)) => meaning.to_string(),
        None => match metric {
            m if m.starts_with("disk_") => format!("/proc/diskstats {m} (wrap-corrected)"),
            m if m.starts_with("pressure_") => format!("PSI {m} (wrap-corrected)"),
            m => format!("{m} (wrap-corrected)"),
        },
    }
    .replace('\\', "\\\\")
    .replace('\n', " ")
}

fn value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

/// Renders the counters named in `live` (the series of the latest sample) from
/// their tracked states, and the gauges.
pub fn render(
    states: &BTreeMap<String, SeriesState>,
    live: &[String],
    gauges: &[Gauge],
    samples_total: u64,
) -> String {
    let mut out = String::new();
    let mut by_metric: BTreeMap<&str, Vec<(&str, &SeriesState)>> = BTreeMap::new();
    for key in live {
        if let Some(state) = states.get(key) {
            let (metric, labels) = split_key(key);
            by_metric.entry(metric).or_default().push((labels, state));
        }
    }
    for (metric, rows) in &by_metric {
        let name = format!("nastune_{metric}_total");
        let _ = writeln!(out, "# HELP {name} {}", help(metric));
        let _ = writeln!(out, "# TYPE {name} counter");
        for (labels, s) in rows {
            let _ = writeln!(out, "{name}{} {}", braces(labels), s.total);
        }
    }
    for (name, what, get) in [
        (
            "nastune_counter_wraps_total",
            "counter wraps seen (32- or 64-bit) by series",
            (|s: &SeriesState| s.wraps) as fn(&SeriesState) -> u64,
        ),
        (
            "nastune_counter_resets_total",
            "counter resets seen (driver reload, counters cleared) by series",
            |s: &SeriesState| s.resets,
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {what}");
        let _ = writeln!(out, "# TYPE {name} counter");
        for (metric, rows) in &by_metric {
            for (labels, s) in rows {
                let metric_label = format!("metric=\"{metric}\"");
                let all = if labels.is_empty() {
                    metric_label
                } else {
                    format!("{metric_label},{labels}")
                };
                let _ = writeln!(out, "{name}{{{all}}} {}", get(s));
            }
        }
    }
    let mut gauge_groups: BTreeMap<&str, Vec<&Gauge>> = BTreeMap::new();
    for g in gauges {
        gauge_groups.entry(g.metric).or_default().push(g);
    }
    for (metric, rows) in gauge_groups {
        let name = format!("nastune_{metric}");
        let _ = writeln!(out, "# HELP {name} {}", metric.replace('_', " "));
        let _ = writeln!(out, "# TYPE {name} gauge");
        for g in rows {
            let key = g.key();
            let (_, labels) = split_key(&key);
            let _ = writeln!(out, "{name}{} {}", braces(labels), value(g.value));
        }
    }
    let _ = writeln!(
        out,
        "# HELP nastune_watch_samples_total samples taken by this watch"
    );
    let _ = writeln!(out, "# TYPE nastune_watch_samples_total counter");
    let _ = writeln!(out, "nastune_watch_samples_total {samples_total}");
    out
}

fn braces(labels: &str) -> String {
    if labels.is_empty() {
        String::new()
    } else {
        format!("{{{labels}}}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_gauges_and_escaping() {
        let mut states = BTreeMap::new();
        states.insert(
            "net_rx_dropped{device=\"eth0\"}".to_string(),
            SeriesState {
                identity: String::new(),
                stable_identity: String::new(),
                boot_id: None,
                last: 3,
                max_seen: 3,
                total: 7,
                wraps: 1,
                resets: 0,
                last_time_unix_s: 0.0,
                increases_unix_s: Default::default(),
            },
        );
        let gauges = vec![Gauge {
            metric: "temperature_celsius",
            labels: vec![("sensor", "a\"b".into())],
            value: 41.5,
        }];
        let text = render(
            &states,
            &["net_rx_dropped{device=\"eth0\"}".into()],
            &gauges,
            2,
        );
        assert!(
            text.contains("# TYPE nastune_net_rx_dropped_total counter\n"),
            "{text}"
        );
        assert!(
            text.contains("nastune_net_rx_dropped_total{device=\"eth0\"} 7\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "nastune_counter_wraps_total{metric=\"net_rx_dropped\",device=\"eth0\"} 1\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("nastune_temperature_celsius{sensor=\"a\\\"b\"} 41.5\n"),
            "{text}"
        );
        assert!(text.ends_with("nastune_watch_samples_total 2\n"));
    }
}
