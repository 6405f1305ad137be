//! The comparable numbers in stored bench documents, with the samples behind
//! them. Never invents noise: a single number stays a single sample.

use serde_json::Value;

use super::Metric;
use crate::stats::Summary;

/// Workload fields that define "the same test"; runtime and ramp time only
/// change how long it was measured.
const DISK_IDENTITY: [&str; 10] = [
    "rw",
    "bs",
    "iodepth",
    "numjobs",
    "direct",
    "rwmixread",
    "fsync",
    "fdatasync",
    "end_fsync",
    "verify",
];

pub fn extract(docs: &[(String, Value)]) -> Vec<Metric> {
    let mut out = Vec::new();
    for (kind, body) in docs {
        match kind.as_str() {
            "disk" => disk(body, &mut out),
            "crypto" => crypto(body, &mut out),
            "net" => super::net_metrics::net(body, &mut out),
            "http" => http(body, &mut out),
            _ => {}
        }
    }
    out
}

/// The workload identity of one disk test, e.g. `disk rw=read bs=65536 iodepth=1 ...`.
pub fn disk_identity(workload: &Value) -> String {
    let mut id = String::from("disk");
    for f in DISK_IDENTITY {
        let v = &workload[f];
        let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
        id.push_str(&format!(" {f}={v}"));
    }
    id
}

fn disk(body: &Value, out: &mut Vec<Metric>) {
    for test in body["tests"].as_array().into_iter().flatten() {
        if test["status"].as_str() != Some("ok") {
            continue;
        }
        let id = disk_identity(&test["workload"]);
        let passes: Vec<&Value> = test["spread"]["passes"]
            .as_array()
            .into_iter()
            .flatten()
            .collect();
        for (quantity, key, unit) in [
            ("bandwidth", "bw_bytes", "bytes/s"),
            ("iops", "iops", "IO/s"),
        ] {
            let (samples, from) = if passes.len() > 1 {
                let s: Vec<f64> = passes.iter().filter_map(|p| p[key].as_f64()).collect();
                (s, "passes (--loops)")
            } else {
                let total: f64 = ["read", "write"]
                    .iter()
                    .filter_map(|d| test[*d][key].as_f64())
                    .sum();
                (vec![total], "single value")
            };
            if let Some(summary) = Summary::of(&samples) {
                out.push(Metric {
                    benchmark: id.clone(),
                    quantity,
                    unit,
                    higher_is_better: true,
                    summary,
                    samples_from: from,
                });
            }
        }
        // Without passes, completion latency is the only noise estimate: every
        // I/O is a sample (count, mean and standard deviation are stored). I/Os
        // are not independent, so this overstates confidence; passes win.
        if passes.len() > 1 {
            continue;
        }
        for (dir, quantity) in [
            ("read", "read latency mean"),
            ("write", "write latency mean"),
        ] {
            let c = &test[dir]["clat_ns"];
            if let (Some(n), Some(mean), Some(sd)) =
                (c["N"].as_u64(), c["mean"].as_f64(), c["stddev"].as_f64())
                && n > 0
            {
                out.push(Metric {
                    benchmark: id.clone(),
                    quantity,
                    unit: "ns",
                    higher_is_better: false,
                    summary: Summary {
                        n,
                        mean,
                        variance: sd * sd,
                    },
                    samples_from: "per-I/O latency (use --loops for a sturdier verdict)",
                });
            }
        }
    }
}

fn crypto(body: &Value, out: &mut Vec<Metric>) {
    for section in ["kernel", "user_space"] {
        for entry in body[section].as_array().into_iter().flatten() {
            let name = format!(
                "crypto {section} {} {}-bit",
                entry["cipher"].as_str().unwrap_or("?"),
                entry["key_bits"]
            );
            for p in entry["points"].as_array().into_iter().flatten() {
                let id = format!("{name} {}B x{}", p["request_bytes"], p["in_flight"]);
                for dir in ["encrypt", "decrypt"] {
                    if let Some(v) = p[dir]["bytes_per_sec"].as_f64()
                        && let Some(summary) = Summary::of(&[v])
                    {
                        out.push(Metric {
                            benchmark: id.clone(),
                            quantity: if dir == "encrypt" {
                                "encrypt"
                            } else {
                                "decrypt"
                            },
                            unit: "bytes/s",
                            higher_is_better: true,
                            summary,
                            samples_from: "single value",
                        });
                    }
                }
            }
        }
    }
}

/// `bench http`: requests/s per (URL, mode) under the same load settings, and
/// the mean total latency with every request as a sample (as disk does per I/O).
fn http(body: &Value, out: &mut Vec<Metric>) {
    let s = &body["settings"];
    let load = format!(
        "t={} c={} rate={} method={} body={}",
        s["threads"],
        s["connections"],
        s["rate_per_sec"],
        s["request"]["method"],
        s["request"]["body_bytes"]
    );
    for run in body["runs"].as_array().into_iter().flatten() {
        let id = format!(
            "http {} mode={} {load}",
            run["url"].as_str().unwrap_or("?"),
            run["mode"].as_str().unwrap_or("?")
        );
        if let Some(summary) = run["requests_per_sec"]
            .as_f64()
            .and_then(|v| Summary::of(&[v]))
        {
            out.push(Metric {
                benchmark: id.clone(),
                quantity: "requests/s",
                unit: "req/s",
                higher_is_better: true,
                summary,
                samples_from: "single value",
            });
        }
        let t = &run["latency"]["total_ns"];
        if let (Some(n), Some(mean), Some(sd)) =
            (t["N"].as_u64(), t["mean"].as_f64(), t["stddev"].as_f64())
            && n > 0
        {
            out.push(Metric {
                benchmark: id,
                quantity: "total latency mean",
                unit: "ns",
                higher_is_better: false,
                summary: Summary {
                    n,
                    mean,
                    variance: sd * sd,
                },
                samples_from: "per-request latency",
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_runs_give_rate_and_latency_per_url_and_mode() {
        let body = serde_json::json!({
            "settings": {"threads": 2, "connections": 10, "rate_per_sec": null,
                         "request": {"method": "GET", "body_bytes": 0}},
            "runs": [
                {"url": "http://h/", "mode": "keep-alive", "requests_per_sec": 900.0,
                 "latency": {"total_ns": {"N": 9000, "mean": 1000.0, "stddev": 10.0}}},
                {"url": "http://h/", "mode": "close", "requests_per_sec": 300.0,
                 "latency": {"total_ns": null}}
            ]
        });
        let m = extract(&[("http".into(), body)]);
        assert_eq!(m.len(), 3);
        assert!(
            m[0].benchmark
                .starts_with("http http://h/ mode=keep-alive t=2 c=10")
        );
        assert_eq!((m[0].quantity, m[0].summary.mean), ("requests/s", 900.0));
        assert_eq!(
            (m[1].quantity, m[1].summary.n),
            ("total latency mean", 9000)
        );
        assert!(!m[1].higher_is_better);
        assert!(m[2].benchmark.contains("mode=close"));
    }
}
