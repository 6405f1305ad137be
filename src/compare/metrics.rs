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
