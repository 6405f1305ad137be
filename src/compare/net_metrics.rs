//! The comparable numbers of a stored `bench net` document: throughput per
//! direction with each reporting interval as a sample, and request/response
//! transactions per second.

use serde_json::Value;

use super::Metric;
use crate::stats::Summary;

/// Intervals shorter than this (the tail fragment at the end of a test) are
/// left out: their rate rests on too few bytes.
const MIN_INTERVAL_SECS: f64 = 0.2;

/// The workload identity: what was asked of which peer. The port and the run
/// length only change where and how long it was measured.
fn identity(body: &Value) -> String {
    let t = &body["start"]["test_start"];
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    format!(
        "net {} {} to {} streams={} len={} rate={} window={} mss={} nodelay={}",
        text(&t["protocol"]),
        text(&t["direction"]),
        text(&body["start"]["connecting_to"]["host"]),
        t["streams"],
        t["block_bytes"],
        t["rate_bits_per_sec"],
        t["window_bytes"],
        t["mss_bytes"],
        t["nodelay"],
    )
}

pub fn net(body: &Value, out: &mut Vec<Metric>) {
    let id = identity(body);
    if let Some(rr) = body["end"]["rr"].as_object() {
        let id = format!(
            "{id} {} request={} response={}",
            rr.get("mode").and_then(Value::as_str).unwrap_or("?"),
            rr.get("request_bytes").unwrap_or(&Value::Null),
            rr.get("response_bytes").unwrap_or(&Value::Null),
        );
        if let Some(summary) = rr
            .get("transactions_per_sec")
            .and_then(Value::as_f64)
            .and_then(|v| Summary::of(&[v]))
        {
            out.push(Metric {
                benchmark: id,
                quantity: "transactions/s",
                unit: "1/s",
                higher_is_better: true,
                summary,
                samples_from: "single value",
            });
        }
        return;
    }
    let intervals = body["intervals"].as_array();
    for (key, quantity) in [("sum", "sent"), ("sum_received", "received")] {
        let samples: Vec<f64> = intervals
            .into_iter()
            .flatten()
            .map(|i| &i[key])
            .filter(|s| s["omitted"] != true)
            .filter(|s| {
                s["seconds"]
                    .as_f64()
                    .is_some_and(|x| x >= MIN_INTERVAL_SECS)
            })
            .filter_map(|s| s["bits_per_second"].as_f64())
            .collect();
        if let Some(summary) = Summary::of(&samples) {
            out.push(Metric {
                benchmark: id.clone(),
                quantity,
                unit: "bits/s",
                higher_is_better: true,
                summary,
                samples_from: "reporting intervals (-i)",
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(intervals: Value, rr: Value) -> Value {
        json!({
            "start": {
                "connecting_to": {"host": "nas.local", "port": 5201},
                "test_start": {"protocol": "tcp", "direction": "send", "streams": 1,
                    "block_bytes": 131072, "rate_bits_per_sec": 0, "window_bytes": 0,
                    "mss_bytes": 0, "nodelay": false}
            },
            "intervals": intervals,
            "end": {"rr": rr}
        })
    }

    fn sum(bps: f64, seconds: f64, omitted: bool) -> Value {
        json!({"sum": {"seconds": seconds, "bits_per_second": bps, "omitted": omitted}})
    }

    #[test]
    fn intervals_are_the_samples_without_omitted_and_tail_fragments() {
        let d = doc(
            json!([
                sum(5e9, 1.0, true),
                sum(9e8, 1.0, false),
                sum(1.1e9, 1.0, false),
                sum(1e3, 0.01, false)
            ]),
            Value::Null,
        );
        let mut out = Vec::new();
        net(&d, &mut out);
        assert_eq!(out.len(), 1, "no received side: {out:?}");
        let m = &out[0];
        assert_eq!(m.quantity, "sent");
        assert_eq!(m.summary.n, 2);
        assert!((m.summary.mean - 1e9).abs() < 1.0, "{m:?}");
        assert!(m.summary.variance > 0.0);
        assert!(
            m.benchmark
                .starts_with("net tcp send to nas.local streams=1")
        );
    }

    #[test]
    fn request_response_gives_transactions_per_second() {
        let rr = json!({"mode": "rr", "request_bytes": 1, "response_bytes": 1,
            "transactions_per_sec": 12345.0});
        let mut out = Vec::new();
        net(&doc(json!([]), rr), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].quantity, "transactions/s");
        assert_eq!(out[0].summary.mean, 12345.0);
        assert!(out[0].benchmark.contains(" rr request=1 response=1"));
    }
}
