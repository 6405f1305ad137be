//! One self-contained HTML page: inline CSS and SVG, no script, no network.

use std::fmt::Write;

use super::runs::{self, Page, PageOut, PageWriter, ReportRun};
use super::svg::{self, Line, Series, escape};

const CSS: &str = "body{font-family:sans-serif;margin:2em;max-width:960px;color:#222;background:#fff}\
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}\
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.3em .6em;text-align:left}\
.sev-critical,.sev-warning{color:#b00}.sev-notice{color:#a60}.note{color:#666}\
svg .title{font-size:15px;font-weight:bold}svg .label{font-size:12px}svg .value{font-size:11px;fill:#333}\
svg .axis{stroke:#888}";

/// Writes the page of `page`'s runs to `out` piece by piece: the cross-run
/// sections from `page`, each run's own charts from the run read again.
pub fn render<O: PageOut>(page: &Page, out: &mut O) -> Result<(), O::Error> {
    let mut h = PageWriter::new(out);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>nastune report</title><style>{CSS}</style></head><body>\n<h1>nastune report</h1>\n<p class=\"note\">Runs: "
    );
    for (i, r) in page.runs.iter().enumerate() {
        if i > 0 {
            h.push_str("; ");
        }
        h.push_str(&escape(&format!("{} started {}", r.label, r.started)));
    }
    h.push_str("</p>\n");
    h.push_str("<h2>The box</h2>\n");
    match &page.box_summary {
        Some(facts) => {
            h.push_str("<table>\n");
            for (k, v) in facts {
                let _ = writeln!(h, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
            }
            h.push_str("</table>\n");
        }
        None => h.push_str("<p class=\"note\">No probe snapshot among these runs.</p>\n"),
    }
    h.push_str("<h2>Findings</h2>\n");
    match &page.findings {
        None => h.push_str(
            "<p class=\"note\">No advise or check run among these runs ('nastune check' or 'nastune advise' makes one).</p>\n",
        ),
        Some(f) if f.is_empty() => h.push_str("<p>No findings.</p>\n"),
        Some(f) => {
            h.push_str("<ul>\n");
            for f in f {
                let _ = writeln!(
                    h,
                    "<li><span class=\"sev-{0}\">{0}</span> <b>{1}</b>: {2}{3}</li>",
                    super::advise_text::severity(f.severity),
                    escape(&f.rule_id),
                    escape(&f.title),
                    f.recommendation
                        .iter()
                        .map(|r| format!("<br><code>{}</code>", escape(r)))
                        .collect::<String>()
                );
            }
            h.push_str("</ul>\n");
        }
    }
    if let Some(paths) = &page.bottleneck {
        bottleneck(&mut h, paths);
    }
    let bars = runs::bench_bars(&page.runs);
    if !bars.is_empty() {
        h.push_str("<h2>Benchmarks</h2>\n");
    }
    if page.validity().next().is_some() {
        h.push_str("<ul>\n");
        for v in page.validity() {
            let class = if v.clean { "note" } else { "sev-warning" };
            let _ = write!(
                h,
                "<li>{}: <span class=\"{class}\">{}</span>",
                escape(&v.run),
                escape(&v.headline)
            );
            if !v.reasons.is_empty() {
                h.push_str("<ul>");
                for r in &v.reasons {
                    let _ = write!(h, "<li class=\"{class}\">{}</li>", escape(r));
                }
                h.push_str("</ul>");
            }
            h.push_str("</li>\n");
        }
        h.push_str("</ul>\n");
    }
    for g in &bars {
        let unit = g.unit;
        let fmt = move |v: f64| super::compare_text::value(v, unit);
        h.push_str("<figure>");
        svg::bar_chart(&mut h, &g.title, &g.categories, &g.series, &fmt);
        h.push_str("</figure>\n");
    }
    // Each run's charts over time from the run read again, one run held at a time.
    let mut started = false;
    for d in page.runs.iter().filter(|d| d.timelines) {
        let r = h.run(d.id)?;
        super::timeline_html::section(&mut h, &r, &mut started);
    }
    tune_changes(&mut h, page);
    tune_trials(&mut h, page);
    if page.latency_curves().next().is_some() {
        h.push_str("<h2>Latency percentiles</h2>\n");
        let lines: Vec<Line> = page
            .latency_curves()
            .map(|c| Line {
                name: c.name.clone(),
                points: c.points.iter().map(|(p, ns)| (nines(*p), *ns)).collect(),
            })
            .collect();
        let ticks: Vec<(f64, String)> = [50.0, 90.0, 99.0, 99.9, 99.99]
            .iter()
            .map(|p| (nines(*p), format!("p{p}")))
            .collect();
        h.push_str("<figure>");
        svg::line_chart(
            &mut h,
            "Latency by percentile (disk completion, network request/response)",
            "percentile (log scale of 1 - p); latency on a log scale",
            &lines,
            &ticks,
            &svg::duration_ns,
        );
        h.push_str("</figure>\n");
    }
    for d in page
        .runs
        .iter()
        .filter(|d| d.is(crate::store::RunKind::Watch))
    {
        let r = h.run(d.id)?;
        counters(&mut h, &r);
    }
    let _ = writeln!(
        h,
        "<p class=\"note\">nastune {}</p>\n</body></html>",
        env!("CARGO_PKG_VERSION")
    );
    h.finish()
}

/// Each data path of a check run: its limit, then every stage with the arithmetic.
fn bottleneck<O: PageOut>(h: &mut PageWriter<O>, paths: &[runs::PathLimit]) {
    h.push_str("<h2 id=\"bottleneck\">Bottleneck</h2>\n");
    if paths.is_empty() {
        h.push_str("<p>No data filesystem or share found to analyse.</p>\n");
    }
    for p in paths {
        let _ = writeln!(
            h,
            "<h3>{}</h3>\n<p><b>{}</b>.</p>\n<table>\n<tr><th>stage</th><th>ceiling</th><th>how</th></tr>",
            escape(&p.path),
            escape(&p.verdict)
        );
        for (i, (stage, ceiling, basis)) in p.stages.iter().enumerate() {
            let strong = p.limiting == Some(i);
            let _ = writeln!(
                h,
                "<tr><td>{}{}{}</td><td>{}</td><td>{}</td></tr>",
                if strong { "<b>" } else { "" },
                escape(stage),
                if strong { "</b>" } else { "" },
                escape(ceiling),
                escape(basis)
            );
        }
        h.push_str("</table>\n");
        for line in &p.model {
            let _ = writeln!(h, "<p class=\"note\">{}</p>", escape(line));
        }
    }
}

/// The changes of tune runs, one row each.
fn tune_changes<O: PageOut>(h: &mut PageWriter<O>, page: &Page) {
    if page.tune_changes().next().is_none() {
        return;
    }
    h.push_str("<h2>Tuning</h2>\n<table>\n<tr><th>run</th><th>setting</th><th>was</th><th>set to</th><th>outcome</th></tr>\n");
    for c in page.tune_changes() {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&c.run),
            escape(&c.setting),
            escape(&c.old),
            escape(&c.new),
            escape(&c.outcome)
        );
    }
    h.push_str("</table>\n");
}

/// One before/after chart per `tune try`, its verdict and interval beneath.
fn tune_trials<O: PageOut>(h: &mut PageWriter<O>, page: &Page) {
    if page.tune_trials().next().is_none() {
        return;
    }
    h.push_str("<h2>Tuning trials</h2>\n");
    for t in page.tune_trials() {
        let series = [
            Series {
                name: format!("without ('{}')", t.old),
                values: vec![Some(t.without)],
            },
            Series {
                name: format!("with ('{}')", t.new),
                values: vec![Some(t.with)],
            },
        ];
        let unit = t.unit.clone();
        let fmt = move |v: f64| format!("{v:.2} {unit}");
        let title = t.title();
        h.push_str("<figure>");
        svg::bar_chart(h, &title, std::slice::from_ref(&t.workload), &series, &fmt);
        let _ = writeln!(
            h,
            "<figcaption>{}</figcaption></figure>",
            escape(&t.verdict_line())
        );
    }
}

/// One chart per counter that moved in a watch run.
fn counters<O: PageOut>(h: &mut PageWriter<O>, r: &ReportRun) {
    let _ = writeln!(h, "<h2>Counters over time: {}</h2>", escape(&r.label()));
    let _ = writeln!(h, "<p class=\"note\">{}</p>", escape(&runs::watch_span(r)));
    if r.counters.is_empty() {
        h.push_str("<p>No counter moved during this watch.</p>\n");
    }
    for c in &r.counters {
        let title = format!(
            "{}: +{}{}",
            c.title(),
            c.format(c.total as f64),
            runs::counter_events(c)
        );
        let (divisor, unit) = c.axis_unit();
        let points: Vec<(f64, f64)> = c.points.iter().map(|(t, v)| (*t, v / divisor)).collect();
        let fmt = |v: f64| {
            let n = format!("{v:.2}");
            let n = n.trim_end_matches('0').trim_end_matches('.');
            format!("{n} {unit}").trim_end().to_string()
        };
        h.push_str("<figure>");
        svg::time_chart(
            h,
            &title,
            "increase since the first sample (UTC time)",
            &points,
            &c.events,
            &fmt,
        );
        h.push_str("</figure>\n");
    }
    if r.counters_left_out > 0 {
        let _ = writeln!(
            h,
            "<p class=\"note\">{} more series moved and are not drawn.</p>",
            r.counters_left_out
        );
    }
}

/// Percentile to "number of nines": p50 -> 0.3, p99 -> 2, p99.99 -> 4.
pub fn nines(p: f64) -> f64 {
    -(1.0 - p / 100.0).max(1e-9).log10()
}
