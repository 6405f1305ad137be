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
}

impl ReportRun {
    pub fn label(&self) -> String {
        format!("run {} ({})", self.id, self.kind)
    }

    fn doc(&self, kind: &str) -> Option<&Value> {
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

/// Bars for disk bandwidth and crypto encryption speed: categories are the
/// workload identities, series the runs (before/after when several).
pub fn bench_bars(runs: &[ReportRun]) -> Vec<BarGroup> {
    let per_run: Vec<Vec<crate::compare::Metric>> =
        runs.iter().map(|r| metrics::extract(&r.docs)).collect();
    let mut groups = Vec::new();
    for (title, prefix, quantity) in [
        ("Disk bandwidth", "disk", "bandwidth"),
        ("Disk IOPS", "disk", "iops"),
        ("Encryption speed", "crypto", "encrypt"),
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

/// Completion-latency percentiles of one disk test in one run.
pub struct LatencyCurve {
    pub name: String,
    /// (percentile, nanoseconds)
    pub points: Vec<(f64, f64)>,
}

pub fn latency_curves(runs: &[ReportRun]) -> Vec<LatencyCurve> {
    let mut out = Vec::new();
    for r in runs {
        let Some(doc) = r.doc("disk") else { continue };
        for t in doc["tests"].as_array().into_iter().flatten() {
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
    }
    out
}

/// Number of stored watch documents (their charts are not drawn yet).
pub fn watch_documents(runs: &[ReportRun]) -> usize {
    runs.iter()
        .flat_map(|r| r.docs.iter())
        .filter(|(k, _)| k == "watch")
        .count()
}
