//! What the HTML and Markdown reports show, taken from stored run documents:
//! the box summary, findings, bench bars per run and latency percentiles.

use serde_json::Value;

use crate::compare::metrics;

/// One stored run with its documents (kind, JSON body).
pub struct ReportRun {
    pub id: i64,
    pub kind: String,
    pub started: String,
    pub docs: Vec<(String, Value)>,
    /// Counter series of a watch run that moved, by series name.
    pub counters: Vec<super::counter_series::CounterSeries>,
    /// Series that moved but were left out past `counter_series::MAX_CHARTS`.
    pub counters_left_out: usize,
}

impl ReportRun {
    pub fn label(&self) -> String {
        format!("run {} ({})", self.id, self.kind)
    }

    pub fn doc(&self, kind: &str) -> Option<&Value> {
        self.docs.iter().find(|(k, _)| k == kind).map(|(_, v)| v)
    }
}

fn text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// (fact, value) lines about the box from the newest snapshot among the runs.
pub fn box_summary(runs: &[ReportRun]) -> Option<Vec<(String, String)>> {
    let snap = runs.iter().rev().find_map(|r| r.doc("snapshot"))?;
    let host = &snap["host"]["data"];
    let cpu = &snap["cpu"]["data"];
    let mem = &snap["memory"]["data"];
    let mut out = vec![
        ("host".to_string(), text(&host["hostname"])),
        ("model".into(), text(&host["model"])),
        ("os".into(), text(&host["os"])),
        (
            "kernel".into(),
            format!(
                "{} ({})",
                text(&host["kernel_release"]),
                text(&host["architecture"])
            ),
        ),
        (
            "cpu".into(),
            format!(
                "{}, {} logical CPUs",
                text(&cpu["model"]),
                text(&cpu["logical_cpus"])
            ),
        ),
    ];
    if let Some(total) = mem["total_bytes"].as_u64() {
        out.push(("memory".into(), super::format::bytes(total)));
    }
    let disks: Vec<String> = snap["storage"]["data"]["devices"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| d["kind"].as_str() != Some("loop"))
        .map(|d| {
            let size = d["size_bytes"].as_u64().map(super::format::bytes);
            format!("{} {}", text(&d["name"]), size.unwrap_or_default())
        })
        .collect();
    if !disks.is_empty() {
        out.push(("block devices".into(), disks.join(", ")));
    }
    let nics: Vec<String> = snap["network"]["data"]["interfaces"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| n["is_virtual"].as_bool() != Some(true))
        .map(|n| format!("{} mtu {}", text(&n["name"]), text(&n["mtu_bytes"])))
        .collect();
    if !nics.is_empty() {
        out.push(("network".into(), nics.join(", ")));
    }
    out.retain(|(_, v)| v != "null");
    Some(out)
}

pub struct Finding {
    pub severity: String,
    pub rule_id: String,
    pub title: String,
    pub recommendation: Vec<String>,
}

/// Findings from the newest advise run among the runs; `None` when none was given.
pub fn findings(runs: &[ReportRun]) -> Option<Vec<Finding>> {
    let doc = runs.iter().rev().find_map(|r| r.doc("findings"))?;
    Some(
        doc["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| Finding {
                severity: text(&f["severity"]),
                rule_id: text(&f["rule_id"]),
                title: text(&f["title"]),
                recommendation: f["recommendation"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|r| text(&r["action"]))
                    .collect(),
            })
            .collect(),
    )
}

/// The bottleneck path an advise or bench document names, when one does.
pub fn bottleneck(runs: &[ReportRun]) -> Option<String> {
    runs.iter().rev().find_map(|r| {
        r.docs
            .iter()
            .map(|(_, v)| &v["bottleneck"])
            .find(|b| !b.is_null())
            .map(|b| match b {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
    })
}

/// One chart's worth of bars: a benchmark quantity, one value per run.
pub struct BarGroup {
    pub title: String,
    pub unit: &'static str,
    pub categories: Vec<String>,
    /// (run label, value per category)
    pub series: Vec<(String, Vec<Option<f64>>)>,
}

/// Bars for disk bandwidth, crypto encryption speed and network throughput: categories are the
/// workload identities, series the runs (before/after when several).
pub fn bench_bars(runs: &[ReportRun]) -> Vec<BarGroup> {
    let per_run: Vec<Vec<crate::compare::Metric>> =
        runs.iter().map(|r| metrics::extract(&r.docs)).collect();
    let mut groups = Vec::new();
    for (title, prefix, quantity) in [
        ("Disk bandwidth", "disk", "bandwidth"),
        ("Disk IOPS", "disk", "iops"),
        ("Encryption speed", "crypto", "encrypt"),
        ("Network throughput sent", "net", "sent"),
        ("Network throughput received", "net", "received"),
        ("HTTP requests", "http", "requests/s"),
    ] {
        let mut categories: Vec<String> = Vec::new();
        for m in per_run.iter().flatten() {
            if m.benchmark.starts_with(prefix)
                && m.quantity == quantity
                && !categories.contains(&m.benchmark)
            {
                categories.push(m.benchmark.clone());
            }
        }
        if categories.is_empty() {
            continue;
        }
        let series = runs
            .iter()
            .zip(&per_run)
            .filter(|(_, ms)| ms.iter().any(|m| m.quantity == quantity))
            .map(|(r, ms)| {
                let values = categories
                    .iter()
                    .map(|c| {
                        ms.iter()
                            .find(|m| &m.benchmark == c && m.quantity == quantity)
                            .map(|m| m.summary.mean)
                    })
                    .collect();
                (r.label(), values)
            })
            .collect();
        let unit = match quantity {
            "iops" => "IO/s",
            "sent" | "received" => "bits/s",
            "requests/s" => "req/s",
            _ => "bytes/s",
        };
        groups.push(BarGroup {
            title: title.into(),
            unit,
            categories: categories.iter().map(|c| short(c)).collect(),
            series,
        });
    }
    groups
}

/// Drops the defaults from a disk identity so chart labels stay short.
fn short(id: &str) -> String {
    id.split(' ')
        .filter(|p| {
            !matches!(
                *p,
                "rwmixread=50" | "fsync=0" | "fdatasync=0" | "end_fsync=false" | "verify=false"
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Latency percentiles of one disk test or one request/response test in one run.
pub struct LatencyCurve {
    pub name: String,
    /// (percentile, nanoseconds)
    pub points: Vec<(f64, f64)>,
}

pub fn latency_curves(runs: &[ReportRun]) -> Vec<LatencyCurve> {
    let mut out = Vec::new();
    for r in runs {
        let disk_tests = r.doc("disk").and_then(|d| d["tests"].as_array());
        for t in disk_tests.into_iter().flatten() {
            for dir in ["read", "write"] {
                let Some(pcts) = t[dir]["clat_ns"]["percentile"].as_object() else {
                    continue;
                };
                let mut points: Vec<(f64, f64)> = pcts
                    .iter()
                    .filter_map(|(p, v)| Some((p.parse::<f64>().ok()?, v.as_f64()?)))
                    .collect();
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                if points.is_empty() {
                    continue;
                }
                out.push(LatencyCurve {
                    name: format!("run {} {} [{dir}]", r.id, text(&t["name"])),
                    points,
                });
            }
        }
        for (kind, doc) in r.docs.iter().filter(|(k, _)| k == "net") {
            let rr = &doc["end"]["rr"];
            let points: Vec<(f64, f64)> = [(50.0, "p50"), (90.0, "p90"), (99.0, "p99")]
                .iter()
                .filter_map(|(p, key)| Some((*p, rr[format!("latency_{key}_ns")].as_f64()?)))
                .collect();
            if !points.is_empty() {
                out.push(LatencyCurve {
                    name: format!(
                        "run {} {kind} {} {}/{} B",
                        r.id,
                        text(&rr["mode"]),
                        text(&rr["request_bytes"]),
                        text(&rr["response_bytes"])
                    ),
                    points,
                });
            }
        }
    }
    out
}

/// "N samples from A to B" for a watch run, from its stored summary.
pub fn watch_span(r: &ReportRun) -> String {
    let Some(doc) = r.doc("watch") else {
        return "The watch ended without its summary (killed?); the span is that of the stored points.".into();
    };
    let time = |k: &str| {
        doc[k]
            .as_f64()
            .map_or("?".into(), |t| crate::time::rfc3339_utc(t.max(0.0) as u64))
    };
    format!(
        "{} samples{} from {} to {}, {} alerts",
        text(&doc["samples"]),
        if doc["replay"].as_bool() == Some(true) {
            " (replayed trees)"
        } else {
            ""
        },
        time("first_sample_unix_s"),
        time("last_sample_unix_s"),
        text(&doc["alerts"])
    )
}

/// ", 2 wraps, 1 reset" for a series' events, or "".
pub fn counter_events(c: &super::counter_series::CounterSeries) -> String {
    ["wrap", "reset", "reboot", "new_identity"]
        .iter()
        .filter_map(|e| {
            let n = c.count(e);
            (n > 0).then(|| {
                format!(
                    ", {n} {}{}",
                    e.replace('_', " "),
                    if n == 1 { "" } else { "s" }
                )
            })
        })
        .collect()
}

/// One `tune try` of a run: the change, both sides' means and the verdict.
pub struct Trial {
    pub run: String,
    pub setting: String,
    pub old: String,
    pub new: String,
    pub workload: String,
    pub metric: String,
    pub unit: String,
    pub without: f64,
    pub with: f64,
    /// Interval of the difference, in the metric's unit.
    pub ci: (f64, f64),
    pub confidence_pct: f64,
    pub kept: bool,
    pub reason: String,
}

pub fn tune_trials(runs: &[ReportRun]) -> Vec<Trial> {
    let mut out = Vec::new();
    for r in runs {
        let Some(d) = r.doc("tune-try") else {
            continue;
        };
        let num = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
        out.push(Trial {
            run: r.label(),
            setting: text(&d["change"]["setting"]),
            old: text(&d["change"]["old"]),
            new: text(&d["change"]["new"]),
            workload: text(&d["workload"]),
            metric: text(&d["metric"]["name"]),
            unit: text(&d["metric"]["unit"]),
            without: num(&d["baseline"]["mean"]),
            with: num(&d["changed"]["mean"]),
            ci: (num(&d["ci_low"]), num(&d["ci_high"])),
            confidence_pct: num(&d["confidence"]) * 100.0,
            kept: d["kept"] == true,
            reason: text(&d["reason"]),
        });
    }
    out
}

impl Trial {
    /// "kept" or "rolled back", with the interval: the line under its chart.
    pub fn verdict_line(&self) -> String {
        format!(
            "{}: {} '{}' -> '{}' on {}; difference {:.0} % interval {:+.2} to {:+.2} {}. {}",
            if self.kept { "kept" } else { "rolled back" },
            self.setting,
            self.old,
            self.new,
            self.workload,
            self.confidence_pct,
            self.ci.0,
            self.ci.1,
            self.unit,
            self.reason
        )
    }
}
