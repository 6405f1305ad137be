//! Markdown for pasting into a forum post: tables, no pictures.

use std::fmt::Write;

use super::compare_text::value;
use super::runs::{self, Page, PageOut, PageWriter};

/// Keeps table cells intact: pipes and newlines would break the row.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// Writes the Markdown of `page`'s runs to `out` piece by piece, as
/// [`html::render`](super::html::render) does.
pub fn render<O: PageOut>(page: &Page, out: &mut O) -> Result<(), O::Error> {
    let mut m = PageWriter::new(out);
    m.push_str("## nastune report\n\n");
    for r in &page.runs {
        let _ = writeln!(m, "- {} started {}", cell(&r.label), r.started);
    }
    if let Some(facts) = &page.box_summary {
        m.push_str("\n### The box\n\n| | |\n|---|---|\n");
        for (k, v) in facts {
            let _ = writeln!(m, "| {} | {} |", cell(k), cell(v));
        }
    }
    if let Some(f) = &page.findings {
        m.push_str("\n### Findings\n\n");
        if f.is_empty() {
            m.push_str("No findings.\n");
        }
        for f in f {
            let _ = writeln!(
                m,
                "- **{}** `{}`: {}",
                super::advise_text::severity(f.severity),
                cell(&f.rule_id),
                cell(&f.title)
            );
            for r in &f.recommendation {
                let _ = writeln!(m, "  - `{}`", r.replace('`', "'"));
            }
        }
    }
    if let Some(paths) = &page.bottleneck {
        m.push_str("\n### Bottleneck\n\n");
        if paths.is_empty() {
            m.push_str("No data filesystem or share found to analyse.\n");
        }
        for p in paths {
            let _ = writeln!(m, "**{}**: {}\n", cell(&p.path), cell(&p.verdict));
            m.push_str("| stage | ceiling | how |\n|---|---:|---|\n");
            for (i, (stage, ceiling, basis)) in p.stages.iter().enumerate() {
                let mark = if p.limiting == Some(i) {
                    " (limit)"
                } else {
                    ""
                };
                let _ = writeln!(
                    m,
                    "| {}{mark} | {} | {} |",
                    cell(stage),
                    cell(ceiling),
                    cell(basis)
                );
            }
            for line in &p.model {
                let _ = writeln!(m, "\n{}", cell(line));
            }
            m.push('\n');
        }
    }
    if page.validity().next().is_some() {
        m.push('\n');
        for v in page.validity() {
            let _ = writeln!(m, "- {}: {}", cell(&v.run), cell(&v.headline));
            for r in &v.reasons {
                let _ = writeln!(m, "  - {}", cell(r));
            }
        }
    }
    for g in runs::bench_bars(&page.runs) {
        let _ = write!(m, "\n### {}\n\n| test |", g.title);
        for s in &g.series {
            let _ = write!(m, " {} |", cell(&s.name));
        }
        m.push_str("\n|---|");
        m.push_str(&"---:|".repeat(g.series.len()));
        m.push('\n');
        for (i, c) in g.categories.iter().enumerate() {
            let _ = write!(m, "| {} |", cell(c));
            for s in &g.series {
                let v = s.values.get(i).copied().flatten();
                let _ = write!(m, " {} |", v.map_or("-".into(), |v| value(v, g.unit)));
            }
            m.push('\n');
        }
    }
    if page.tune_changes().next().is_some() {
        m.push_str(
            "\n### Tuning\n\n| run | setting | was | set to | outcome |\n|---|---|---|---|---|\n",
        );
        for c in page.tune_changes() {
            let _ = writeln!(
                m,
                "| {} | `{}` | {} | {} | {} |",
                cell(&c.run),
                cell(&c.setting),
                cell(&c.old),
                cell(&c.new),
                cell(&c.outcome)
            );
        }
    }
    if page.tune_trials().next().is_some() {
        m.push_str("\n### Tuning trials\n\n| run | change | workload | without | with | verdict |\n|---|---|---|---:|---:|---|\n");
        for t in page.tune_trials() {
            let _ = writeln!(
                m,
                "| {} | {} '{}' -> '{}' | {} | {:.2} {} | {:.2} {} | {} |",
                cell(&t.run),
                cell(&t.setting),
                cell(&t.old),
                cell(&t.new),
                cell(&t.workload),
                t.without,
                cell(&t.unit),
                t.with,
                cell(&t.unit),
                cell(&t.verdict_line())
            );
        }
    }
    if page.latency_curves().next().is_some() {
        m.push_str("\n### Latency percentiles\n\n| test | p50 | p90 | p99 | p99.9 |\n|---|---:|---:|---:|---:|\n");
        for c in page.latency_curves() {
            let at = |p: f64| {
                c.points
                    .iter()
                    .find(|(x, _)| (*x - p).abs() < 1e-6)
                    .map_or("-".into(), |(_, ns)| value(*ns, "ns"))
            };
            let _ = writeln!(
                m,
                "| {} | {} | {} | {} | {} |",
                cell(&c.name),
                at(50.0),
                at(90.0),
                at(99.0),
                at(99.9)
            );
        }
    }
    for d in page
        .runs
        .iter()
        .filter(|d| d.is(crate::store::RunKind::Watch))
    {
        let r = &m.run(d.id)?;
        let _ = writeln!(
            m,
            "\n### Counters over time: {}\n\n{}\n",
            cell(&r.label()),
            cell(&runs::watch_span(r))
        );
        if r.counters.is_empty() {
            m.push_str("No counter moved during this watch.\n");
            continue;
        }
        m.push_str("| counter | increase | peak rate | events |\n|---|---:|---:|---|\n");
        for c in &r.counters {
            let _ = writeln!(
                m,
                "| `{}` | {} | {} | {} |",
                c.series.replace('`', "'").replace('|', "\\|"),
                c.format(c.total as f64),
                c.max_rate_per_sec.map_or("-".into(), |v| rate(c, v)),
                cell(runs::counter_events(c).trim_start_matches(", "))
            );
        }
        if r.counters_left_out > 0 {
            let _ = writeln!(m, "\n{} more series moved.", r.counters_left_out);
        }
    }
    m.finish()
}

/// A counter's rate per second, or per hour when that is below one: a slow
/// leak of one drop every two hours reads "0.5/h", not "0.000".
fn rate(c: &super::counter_series::CounterSeries, per_sec: f64) -> String {
    if per_sec >= 1.0 || per_sec == 0.0 {
        format!("{}/s", c.format(per_sec))
    } else {
        format!("{:.2}/h", per_sec * 3600.0)
    }
}
