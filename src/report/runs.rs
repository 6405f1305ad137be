//! What the HTML and Markdown reports show, taken from the typed documents of
//! stored runs: the box summary, findings, the bottleneck, bench bars per run
//! and latency percentiles.

use crate::advise::Severity;
use crate::advise::bottleneck::PathAnalysis;
use crate::advise::cpu_estimate::VerdictKind;
use crate::compare::metrics;
use crate::runs::RunDocs;
use crate::store::RunKind;

/// One stored run with its documents.
pub struct ReportRun {
    pub id: i64,
    pub kind: String,
    pub started: String,
    pub docs: RunDocs,
    /// Counter series of a watch run that moved, by series name.
    pub counters: Vec<super::counter_series::CounterSeries>,
    /// Series that moved but were left out past `counter_series::MAX_CHARTS`.
    pub counters_left_out: usize,
}

impl ReportRun {
    pub fn label(&self) -> String {
        let null = self
            .docs
            .disks()
            .any(|d| d.engine.name == crate::bench::disk::engine::EngineKind::Null.name());
        format!(
            "run {} ({}{})",
            self.id,
            self.kind,
            if null { ", null engine: no I/O" } else { "" }
        )
    }

    pub fn is(&self, kind: RunKind) -> bool {
        self.kind == kind.as_str()
    }
}

/// What a page shows across its runs, gathered one run at a time so that
/// only one run's documents are held: a run of the 0.1 store decodes to some
/// 50 KiB, and 1661 of them held together took a report to 87 MiB RSS, past
/// the 64 MiB a command may take. What is kept per run is a few rows and
/// points ([`RunDigest`]); the sections that draw one run at length (its
/// throughput over time, its counters) read it again when they are written.
#[derive(Default)]
pub struct Page {
    pub runs: Vec<RunDigest>,
    /// (fact, value) lines about the box from the newest snapshot among the runs.
    pub box_summary: Option<Vec<(String, String)>>,
    /// Findings of the newest advise or check run; `None` when neither was given.
    pub findings: Option<Vec<Finding>>,
    /// The data paths of the newest check run, with their limits.
    pub bottleneck: Option<Vec<PathLimit>>,
}

/// One run's share of a [`Page`]: what the cross-run sections show of it.
pub struct RunDigest {
    pub id: i64,
    pub kind: String,
    pub started: String,
    pub label: String,
    pub validity: Option<RunValidity>,
    /// The run's metrics that a bench chart draws.
    pub metrics: Vec<crate::compare::Metric>,
    pub tune_changes: Vec<PlannedChange>,
    pub trials: Vec<Trial>,
    pub latency: Vec<LatencyCurve>,
    /// Whether the run has a throughput-over-time chart (drawn from the run read again).
    pub timelines: bool,
}

impl RunDigest {
    pub fn is(&self, kind: RunKind) -> bool {
        self.kind == kind.as_str()
    }
}

impl Page {
    /// Takes what the page shows of `r`, the next run in the page's order;
    /// for the box, the findings and the bottleneck a later run's replace an
    /// earlier one's (the newest given wins).
    pub fn add(&mut self, r: &ReportRun) {
        if let Some(b) = box_summary(r) {
            self.box_summary = Some(b);
        }
        if let Some(f) = findings(r) {
            self.findings = Some(f);
        }
        if let Some(b) = bottleneck(r) {
            self.bottleneck = Some(b);
        }
        let charted = |m: &crate::compare::Metric| {
            crate::runs::CHARTS
                .iter()
                .flat_map(|c| c.iter())
                .any(|c| c.quantity == m.quantity)
        };
        self.runs.push(RunDigest {
            id: r.id,
            kind: r.kind.clone(),
            started: r.started.clone(),
            label: r.label(),
            validity: validity(r),
            metrics: r.docs.metrics().into_iter().filter(charted).collect(),
            tune_changes: tune_changes(r),
            trials: tune_trials(r),
            latency: latency_curves(r),
            timelines: super::timeline_html::has_any(r),
        });
    }

    /// Each run's validity verdict, for runs that were judged.
    pub fn validity(&self) -> impl Iterator<Item = &RunValidity> {
        self.runs.iter().filter_map(|r| r.validity.as_ref())
    }

    /// The changes each tune run planned (and applied, unless skipped).
    pub fn tune_changes(&self) -> impl Iterator<Item = &PlannedChange> {
        self.runs.iter().flat_map(|r| &r.tune_changes)
    }

    /// Each `tune try` of the runs.
    pub fn tune_trials(&self) -> impl Iterator<Item = &Trial> {
        self.runs.iter().flat_map(|r| &r.trials)
    }

    /// Latency percentiles of every disk test and request/response test.
    pub fn latency_curves(&self) -> impl Iterator<Item = &LatencyCurve> {
        self.runs.iter().flat_map(|r| &r.latency)
    }
}

/// Where a page goes and where the runs it draws at length come from again.
pub trait PageOut {
    type Error;
    /// Run `id` read again, with its counters when it is a watch run.
    fn run(&mut self, id: i64) -> Result<ReportRun, Self::Error>;
    /// Writes the next piece of the page.
    fn write(&mut self, piece: &str) -> Result<(), Self::Error>;
}

/// How much of a page gathers before it goes out.
const PIECE_BYTES: usize = 64 << 10;

/// A page as it is rendered: the text gathers here and goes to its
/// [`PageOut`] every [`PIECE_BYTES`], so that nothing is held whole, not
/// the page (1661 runs make 2.2 MB of HTML) nor a chart with a bar or a
/// curve per run (601 check runs draw a 2 MB latency chart). The first
/// write error is kept: later text is dropped, and the next [`run`](Self::run)
/// or [`finish`](Self::finish) returns it.
pub struct PageWriter<'o, O: PageOut> {
    out: &'o mut O,
    buf: String,
    failed: Option<O::Error>,
}

impl<'o, O: PageOut> PageWriter<'o, O> {
    pub fn new(out: &'o mut O) -> Self {
        PageWriter {
            out,
            buf: String::new(),
            failed: None,
        }
    }

    pub fn push_str(&mut self, s: &str) {
        if self.failed.is_some() {
            return;
        }
        self.buf.push_str(s);
        if self.buf.len() >= PIECE_BYTES {
            self.send();
        }
    }

    pub fn push(&mut self, c: char) {
        self.push_str(c.encode_utf8(&mut [0; 4]));
    }

    fn send(&mut self) {
        if let Err(e) = self.out.write(&self.buf) {
            self.failed = Some(e);
        }
        self.buf.clear();
    }

    /// Run `id` read again, or the write error once there was one: a page
    /// that cannot be written reads no more runs.
    pub fn run(&mut self, id: i64) -> Result<ReportRun, O::Error> {
        match self.failed.take() {
            Some(e) => Err(e),
            None => self.out.run(id),
        }
    }

    /// Writes what is left.
    pub fn finish(mut self) -> Result<(), O::Error> {
        if self.failed.is_none() && !self.buf.is_empty() {
            self.send();
        }
        self.failed.map_or(Ok(()), Err)
    }
}

impl<O: PageOut> std::fmt::Write for PageWriter<'_, O> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.push_str(s);
        Ok(())
    }
}

/// A judged run's validity: its headline, and for a disturbed one each reason.
pub struct RunValidity {
    pub run: String,
    pub clean: bool,
    /// `validity: clean (…)` or `validity: DISTURBED`.
    pub headline: String,
    pub reasons: Vec<String>,
}

/// A run's validity verdict, when it was judged.
fn validity(r: &ReportRun) -> Option<RunValidity> {
    let v = r.docs.validity()?;
    let clean = v.is_clean();
    Some(RunValidity {
        run: r.label(),
        clean,
        headline: if clean {
            super::validity_text::line(&v)
        } else {
            format!("validity: DISTURBED ({})", super::validity_text::RERUN)
        },
        // Each condition once: a suite's tests and check's phases
        // hit the same ones (12 reasons for 3 conditions).
        reasons: if clean {
            Vec::new()
        } else {
            super::validity_text::disturbed_groups(&v)
        },
    })
}

fn or_unknown(v: Option<impl ToString>) -> String {
    v.map_or_else(|| "unknown".into(), |v| v.to_string())
}

/// (fact, value) lines about the box from the run's snapshot.
fn box_summary(r: &ReportRun) -> Option<Vec<(String, String)>> {
    let snap = r.docs.snapshot()?;
    let mut out = Vec::new();
    if let Some(host) = snap.host.data() {
        out.push(("host".to_string(), or_unknown(host.hostname.as_ref())));
        if let Some(model) = &host.model {
            out.push(("model".into(), model.clone()));
        }
        out.push(("os".into(), or_unknown(host.os.as_ref())));
        out.push((
            "kernel".into(),
            format!(
                "{} ({})",
                host.kernel_release,
                or_unknown(host.architecture.as_ref())
            ),
        ));
    }
    if let Some(cpu) = snap.cpu.data() {
        out.push((
            "cpu".into(),
            format!(
                "{}, {} logical CPUs",
                or_unknown(cpu.model.as_ref()),
                cpu.logical_cpus
            ),
        ));
    }
    if let Some(mem) = snap.memory.data() {
        out.push(("memory".into(), super::format::bytes(mem.total_bytes)));
    }
    // Disks people own: not loop, RAM or other virtual devices, not partitions.
    let disks: Vec<String> = snap
        .storage
        .data()
        .into_iter()
        .flat_map(|s| &s.devices)
        .filter(|d| {
            d.kind == "disk" && !matches!(d.transport.as_str(), "loop" | "zram" | "virtual")
        })
        .map(|d| format!("{} {}", d.name, super::format::bytes(d.size_bytes)))
        .collect();
    if !disks.is_empty() {
        out.push(("block devices".into(), disks.join(", ")));
    }
    let nics: Vec<String> = snap
        .network
        .data()
        .into_iter()
        .flat_map(|n| &n.interfaces)
        .filter(|n| !n.is_virtual)
        .map(|n| format!("{} mtu {}", n.name, or_unknown(n.mtu_bytes)))
        .collect();
    if !nics.is_empty() {
        out.push(("network".into(), nics.join(", ")));
    }
    Some(out)
}

pub struct Finding {
    pub severity: Severity,
    pub rule_id: String,
    pub title: String,
    /// Each recommended change as a person would type it.
    pub recommendation: Vec<String>,
}

/// Findings of an advise or check run; `None` for other kinds.
fn findings(r: &ReportRun) -> Option<Vec<Finding>> {
    let found = r.docs.findings()?;
    Some(
        found
            .iter()
            .map(|f| Finding {
                severity: f.severity,
                rule_id: f.rule_id.clone(),
                title: f.title.clone(),
                recommendation: f
                    .recommendation
                    .iter()
                    .map(super::advise_text::change)
                    .collect(),
            })
            .collect(),
    )
}

/// One data path of a check run: the limiting stage and every stage's figure.
pub struct PathLimit {
    pub path: String,
    /// "network at 11.8 MB/s", or why nothing limits yet.
    pub verdict: String,
    /// (stage, ceiling, the arithmetic behind it).
    pub stages: Vec<(String, String, String)>,
    pub limiting: Option<usize>,
    /// The path model's verdict and what-ifs, when a file service was measured.
    pub model: Vec<String>,
}

/// The path model in sentences: the limit, predicted against measured, and
/// each what-if (labelled as a prediction).
pub fn model_lines(m: &crate::advise::bottleneck::PathModel) -> Vec<String> {
    let mb = super::format::rate;
    let limit = m.limit.map_or("unknown", |l| l.name());
    let mut out = vec![
        match (m.predicted_bytes_per_sec, m.measured_bytes_per_sec) {
            (Some(p), Some(x)) => format!(
                "model: limit {limit}, predicted {} vs measured {} by {} ({:+.0} %){}",
                mb(p),
                mb(x),
                m.measured_by,
                m.miss_pct.unwrap_or(0.0),
                if m.miss_pct
                    .is_some_and(|d| d.abs() > crate::advise::path_model::MODEL_MISS_PCT)
                {
                    ": the model does not explain this path"
                } else {
                    ""
                }
            ),
            _ => format!("model: limit {limit}"),
        },
    ];
    // The CPU figure above lost what other processes took; the what-ifs
    // predict for a box without them, and say so once.
    if !m.what_ifs.is_empty()
        && m.cpu
            .as_ref()
            .is_some_and(|c| c.arithmetic.contains("used by other processes"))
    {
        out.push("what-ifs below assume a box without the other processes' load".into());
    }
    out.extend(m.what_ifs.iter().map(|w| {
        format!(
            "what if {}: predicted {} ({})",
            w.change,
            mb(w.predicted_bytes_per_sec),
            w.arithmetic
        )
    }));
    out
}

fn path_limit(p: &PathAnalysis) -> PathLimit {
    let ceiling = |c: Option<f64>| c.map_or_else(|| "not measured".into(), super::format::rate);
    PathLimit {
        path: p.name.clone(),
        // A whole phrase ("likely limited by the CPU (…)", "limited by
        // storage (…)"): the page put "Limited by" in front of a verdict
        // that already said it.
        verdict: super::check_text::verdict_words(p),
        stages: p
            .stages
            .iter()
            .map(|s| {
                (
                    s.name.clone(),
                    ceiling(s.ceiling_bytes_per_sec),
                    s.basis.clone(),
                )
            })
            .chain(p.cpu_estimate.iter().map(|e| {
                (
                    "cpu (estimate)".to_string(),
                    format!(
                        "{:.1}-{:.1} MB/s",
                        e.low_bytes_per_sec / 1e6,
                        e.high_bytes_per_sec / 1e6
                    ),
                    format!(
                        "not measured: {}; {}; calibrated on {}",
                        e.cpu,
                        e.services.join(", "),
                        e.calibrated_on
                            .iter()
                            .map(|c| format!("{} ({})", c.board, c.source))
                            .collect::<Vec<_>>()
                            .join("; ")
                    ),
                )
            }))
            .collect(),
        // A hedged verdict names no stage as the limit.
        limiting: p.limiting_stage.filter(|_| {
            p.verdict
                .as_ref()
                .is_none_or(|v| v.kind == VerdictKind::Stage)
        }),
        model: p.model.as_ref().map(model_lines).unwrap_or_default(),
    }
}

/// The data paths of a check run, with their limits.
fn bottleneck(r: &ReportRun) -> Option<Vec<PathLimit>> {
    let check = r.docs.check()?;
    Some(check.paths.iter().map(path_limit).collect())
}

/// One chart's worth of bars: a benchmark quantity, one value per run.
pub struct BarGroup {
    pub title: String,
    pub unit: &'static str,
    pub categories: Vec<String>,
    /// Per run, its label and its value per category.
    pub series: Vec<super::svg::Series>,
}

/// Bars for every chart a bench kind declares: categories are the workloads
/// (by the names people know: "SEQ1M Q8T1 read"), series the runs.
pub fn bench_bars(runs: &[RunDigest]) -> Vec<BarGroup> {
    let mut groups = Vec::new();
    for chart in crate::runs::CHARTS.iter().flat_map(|c| c.iter()) {
        // Categories by identity; the label is what is shown.
        let mut categories: Vec<(&str, &str)> = Vec::new();
        for m in runs.iter().flat_map(|r| &r.metrics) {
            if m.quantity == chart.quantity && !categories.iter().any(|(id, _)| *id == m.benchmark)
            {
                categories.push((&m.benchmark, &m.label));
            }
        }
        if categories.is_empty() {
            continue;
        }
        let series = runs
            .iter()
            .filter(|r| r.metrics.iter().any(|m| m.quantity == chart.quantity))
            .map(|r| {
                let values = categories
                    .iter()
                    .map(|(id, _)| {
                        r.metrics
                            .iter()
                            .find(|m| m.benchmark == *id && m.quantity == chart.quantity)
                            .map(|m| m.summary.mean)
                    })
                    .collect();
                super::svg::Series {
                    name: r.label.clone(),
                    values,
                }
            })
            .collect();
        groups.push(BarGroup {
            title: chart.title.into(),
            unit: chart.unit,
            categories: unique_labels(&categories),
            series,
        });
    }
    groups
}

/// Labels for the categories; two workloads with one label (same suite name,
/// other options) get their identity's differing part appended.
fn unique_labels(categories: &[(&str, &str)]) -> Vec<String> {
    categories
        .iter()
        .map(|(id, label)| {
            let twins = categories.iter().filter(|(_, l)| l == label).count();
            if twins > 1 {
                format!("{label} ({})", short(id))
            } else {
                label.to_string()
            }
        })
        .collect()
}

/// Drops the kind and the defaults from a disk identity.
fn short(id: &str) -> String {
    id.split(' ')
        .skip(1)
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

fn latency_curves(r: &ReportRun) -> Vec<LatencyCurve> {
    let mut out = Vec::new();
    for t in r.docs.disks().flat_map(|d| &d.tests) {
        // The direction tells a mixed test's two curves apart; a one-way
        // test's name already says it ("SEQ1M Q8T1 read").
        let both = t.read.is_some() && t.write.is_some();
        for (dir, result) in [("read", &t.read), ("write", &t.write)] {
            let Some(clat) = result.as_ref().and_then(|d| d.clat_ns.as_ref()) else {
                continue;
            };
            let mut points: Vec<(f64, f64)> = clat
                .percentile
                .iter()
                .filter_map(|(p, v)| Some((p.parse::<f64>().ok()?, *v as f64)))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            if points.is_empty() {
                continue;
            }
            out.push(LatencyCurve {
                name: if both {
                    format!("run {} {} [{dir}]", r.id, t.label())
                } else {
                    format!("run {} {}", r.id, t.label())
                },
                points,
            });
        }
    }
    for rr in r.docs.nets().filter_map(|n| n.end.rr.as_ref()) {
        out.push(LatencyCurve {
            name: format!(
                "run {} net {} {}/{} B",
                r.id,
                metrics::name_of(&rr.mode),
                rr.request_bytes,
                rr.response_bytes
            ),
            points: vec![
                (50.0, rr.latency_p50_ns as f64),
                (90.0, rr.latency_p90_ns as f64),
                (99.0, rr.latency_p99_ns as f64),
            ],
        });
    }
    out
}

/// "N samples from A to B" for a watch run, from its stored summary.
pub fn watch_span(r: &ReportRun) -> String {
    let Some(doc) = r.docs.watch() else {
        return "The watch ended without its summary (killed?); the span is that of the stored points.".into();
    };
    let time =
        |t: Option<f64>| t.map_or("?".into(), |t| crate::time::rfc3339_utc(t.max(0.0) as u64));
    format!(
        "{} samples{} from {} to {}, {} alerts",
        doc.samples,
        if doc.replay { " (replayed trees)" } else { "" },
        time(doc.first_sample_unix_s),
        time(doc.last_sample_unix_s),
        doc.alerts
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

/// One change of a `tune` run's plan: what it set, from what to what.
pub struct PlannedChange {
    pub run: String,
    pub setting: String,
    pub old: String,
    pub new: String,
    /// "applied" or why it was skipped.
    pub outcome: String,
}

/// The changes a tune run planned (and applied, unless skipped).
fn tune_changes(r: &ReportRun) -> Vec<PlannedChange> {
    let mut out = Vec::new();
    if r.is(RunKind::Tune) {
        for i in r.docs.tune_plans().flat_map(|p| &p.items) {
            out.push(PlannedChange {
                run: r.label(),
                setting: i.setting.clone(),
                old: or_unknown(i.old.as_ref()),
                new: or_unknown(i.new.as_ref()),
                outcome: match i.status {
                    crate::tune::plan::Status::Apply => "applied".into(),
                    crate::tune::plan::Status::Skip => format!(
                        "skipped: {}",
                        i.reason.as_deref().unwrap_or("no reason given")
                    ),
                },
            });
        }
    }
    out
}

/// One `tune try` of a run: the change, both sides' means and the verdict.
pub struct Trial {
    pub run: String,
    pub setting: String,
    pub old: String,
    pub new: String,
    pub workload: String,
    pub unit: String,
    /// "higher" or "lower": which way the metric is better.
    pub better: &'static str,
    pub without: f64,
    pub with: f64,
    pub runs_per_side: u32,
    pub p_value: f64,
    pub kept: bool,
    /// The verdict's reason, with both means and the interval of the difference.
    pub reason: String,
}

fn tune_trials(r: &ReportRun) -> Vec<Trial> {
    r.docs
        .tune_tries()
        .map(|d| {
            let o = &d.outcome;
            Trial {
                run: r.label(),
                setting: d.change.setting.clone(),
                old: or_unknown(d.change.old.as_ref()),
                new: or_unknown(d.change.new.as_ref()),
                workload: d.workload.clone(),
                unit: d.metric.unit.clone(),
                better: d.metric.better.name(),
                without: o.baseline.mean,
                with: o.changed.mean,
                runs_per_side: d.runs_per_side,
                p_value: o.p_value,
                kept: d.kept,
                reason: o.reason.clone(),
            }
        })
        .collect()
}

impl Trial {
    /// "Kept" or "Rolled back" and why, with the numbers behind it: the line under
    /// its chart. The change and the workload are in the chart (or the table's
    /// columns), so they are not repeated here.
    pub fn verdict_line(&self) -> String {
        format!(
            "{}: {}; {} runs per side, p = {:.3}",
            if self.kept { "Kept" } else { "Rolled back" },
            self.reason,
            self.runs_per_side,
            self.p_value
        )
    }

    /// The chart's title: the run, the setting, the unit and which way is better.
    pub fn title(&self) -> String {
        format!(
            "{}: {} ({}, {} is better)",
            self.run, self.setting, self.unit, self.better
        )
    }
}
