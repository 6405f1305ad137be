//! Text for `nastune tune try`: every run, both sides' summaries, the interval
//! of the difference, the verdict and what became of the change.

use std::fmt::Write;

use crate::tune::trial::TryReport;
use crate::tune::trial::{Side, Verdict};

pub fn render(r: &TryReport) -> String {
    let mut out = String::new();
    let (c, o) = (&r.change, &r.outcome);
    let _ = writeln!(
        out,
        "\ntried {}: '{}' -> '{}' (session {})",
        c.setting,
        c.old.as_deref().unwrap_or("?"),
        c.new.as_deref().unwrap_or("?"),
        r.session
    );
    let better = r.metric.better.name();
    let _ = writeln!(
        out,
        "workload {}: {} run(s) per side of {} ms, in ABBA order after a warm-up run \
         ({:.2}); {} in {} ({better} is better)",
        r.workload, r.runs_per_side, r.runtime_ms, r.warmup_value, r.metric.name, r.metric.unit
    );
    // A disk judge's timeline figures ride along as two more columns.
    let timelines = (r.run_timelines.len() == o.runs.len()).then_some(&r.run_timelines);
    let extra_head = if timelines.is_some() {
        format!("  {:>12}  {:>14}", "stall s", "sustained MB/s")
    } else {
        String::new()
    };
    let _ = writeln!(out, "  run  side      {:>12}{extra_head}", r.metric.unit);
    for (n, (side, value)) in o.runs.iter().enumerate() {
        let side = match side {
            Side::Baseline => "without",
            Side::Changed => "with",
        };
        let extra = timelines
            .map(|t| {
                let sustained = t[n]
                    .sustained_mb_per_sec
                    .map_or("-".to_string(), |v| format!("{v:.2}"));
                format!("  {:>12.2}  {sustained:>14}", t[n].longest_stall_s)
            })
            .unwrap_or_default();
        let _ = writeln!(out, "  {:>3}  {side:<8}  {:>12.2}{extra}", n + 1, value);
    }
    for (name, s) in [("without", &o.baseline), ("with", &o.changed)] {
        let _ = writeln!(
            out,
            "{name:>8}: mean {:.2} {}, sd {:.2}, n {}",
            s.mean,
            r.metric.unit,
            s.variance.sqrt(),
            s.n
        );
    }
    let pct = o
        .diff_pct
        .map(|p| format!(" ({p:+.1} %)"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "difference: {:+.2} {}{pct}, {:.0} % interval {:+.2} to {:+.2}, p = {:.3}",
        o.diff,
        r.metric.unit,
        o.confidence * 100.0,
        o.ci_low,
        o.ci_high,
        o.p_value
    );
    let verdict = match o.verdict {
        Verdict::Keep => "keep",
        Verdict::Revert => "revert",
    };
    if let Some(e) = o.effect {
        let _ = writeln!(out, "effect: {}", e.name());
    }
    let _ = writeln!(out, "verdict: {verdict}: {}", o.reason);
    if let Some(t) = &r.security_trade {
        let _ = writeln!(out, "security: this change lowers it: {t}");
    }
    if r.reruns > 0 {
        let _ = writeln!(
            out,
            "{} disturbed run(s) were taken again (validity guard)",
            r.reruns
        );
    }
    for d in &r.disturbed_runs {
        let _ = writeln!(out, "warning: counted although disturbed: {d}");
    }
    let now = r
        .final_value
        .as_deref()
        .map(|v| format!(" ('{v}' now)"))
        .unwrap_or_default();
    if r.kept {
        let _ = writeln!(
            out,
            "the change stays{now}; undo with 'nastune tune rollback {}'",
            r.session
        );
    } else {
        let _ = writeln!(out, "session {} rolled back{now}", r.session);
    }
    out
}
