//! The short ranked summary of `nastune check`.

use std::fmt::Write;

use crate::advise::Severity;
use crate::advise::bottleneck::{PathAnalysis, Stage};
use crate::advise::check::CheckDoc;
use crate::advise::cpu_estimate::{CpuEstimate, VerdictKind};
use crate::format::rate as mb;
use crate::store::RunId;

/// The CPU's estimate as a stage line, what it counted and what it rests on.
pub fn estimate_lines(e: &CpuEstimate) -> Vec<String> {
    let mut out = vec![
        format!(
            "{:<12} estimate {:.1}-{:.1} MB/s, not measured ({})",
            "cpu",
            e.low_bytes_per_sec / 1e6,
            e.high_bytes_per_sec / 1e6,
            e.cpu
        ),
        format!("{:<12} counted: {}", "", e.services.join(", ")),
    ];
    out.extend(
        e.calibrated_on
            .iter()
            .map(|c| format!("{:<12} calibrated on {}: {}", "", c.board, c.source)),
    );
    out
}

/// A path's verdict in a few words with its deciding figure: `likely
/// limited by the CPU (36.4-55.2 MB/s est.)`. The stage lines under it carry
/// the other figures, each once.
pub fn verdict_words(p: &PathAnalysis) -> String {
    let stage = p.limiting_stage.map(|i| &p.stages[i]);
    let at = |s: &Stage| mb(s.ceiling_bytes_per_sec.unwrap_or(0.0));
    let est = p.cpu_estimate.as_ref().map(|e| {
        format!(
            "{:.1}-{:.1} MB/s est.",
            e.low_bytes_per_sec / 1e6,
            e.high_bytes_per_sec / 1e6
        )
    });
    match (p.verdict.as_ref().map(|v| v.kind), stage, est) {
        (Some(VerdictKind::LikelyCpu), _, Some(est)) => {
            format!("likely limited by the CPU ({est})")
        }
        (Some(VerdictKind::StageOrCpu), Some(s), Some(est)) => {
            format!("limited by {} ({}) or the CPU ({est})", s.name, at(s))
        }
        (Some(VerdictKind::Unknown), _, _) => p
            .verdict
            .as_ref()
            .map_or_else(String::new, |v| v.text.clone()),
        (_, Some(s), _) => format!("limited by {} ({})", s.name, at(s)),
        (_, None, _) => "nothing measured".into(),
    }
}

/// The one line a newcomer reads first: the first path's verdict, the
/// findings that need action, and whether the figures can be trusted.
fn headline(doc: &CheckDoc) -> String {
    let mut parts = vec![match doc.paths.first() {
        Some(p) => format!("{} is {}", p.name, verdict_words(p)),
        None => "no data filesystem or share found to analyse".into(),
    }];
    let count = |sev: Severity, one: &str, many: &str| {
        let n = doc.findings.iter().filter(|f| f.severity == sev).count();
        (n > 0).then(|| format!("{n} {}", if n == 1 { one } else { many }))
    };
    let counts: Vec<String> = [
        count(Severity::Critical, "critical finding", "critical findings"),
        count(Severity::Warning, "warning", "warnings"),
    ]
    .into_iter()
    .flatten()
    .collect();
    parts.push(if counts.is_empty() {
        "no warnings".into()
    } else {
        counts.join(", ")
    });
    if doc.validity.as_ref().is_some_and(|v| !v.is_clean()) {
        parts.push(format!(
            "measurements disturbed: {}",
            super::validity_text::RERUN
        ));
    }
    format!("Verdict: {}", parts.join("; "))
}

/// `run` is the stored run's id, `None` with `--no-store`.
pub fn render(doc: &CheckDoc, run: Option<RunId>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}\n", headline(doc));
    let _ = writeln!(out, "Bottlenecks");
    if doc.paths.is_empty() {
        let _ = writeln!(out, "  no data filesystem or share found to analyse");
    }
    for p in &doc.paths {
        // A verdict other than the lowest stage's (the CPU likely below it,
        // or unknown) is said as such, and every stage is listed under it.
        let hedged = p
            .verdict
            .as_ref()
            .filter(|v| v.kind != VerdictKind::Stage && v.text != "nothing measured");
        let shown = match (hedged, p.limiting_stage) {
            (Some(_), _) => {
                // The figures are the stage lines' and the estimate's below.
                let words = match p.verdict.as_ref().map(|v| v.kind) {
                    Some(VerdictKind::LikelyCpu) => "likely limited by the CPU".to_string(),
                    Some(VerdictKind::StageOrCpu) => p.limiting_stage.map_or_else(
                        || "limited by the CPU or a stage".to_string(),
                        |i| format!("limited by {} or the CPU", p.stages[i].name),
                    ),
                    _ => verdict_words(p),
                };
                let _ = writeln!(out, "  {:<28} {words}", p.name);
                None
            }
            (None, Some(i)) => {
                let s = &p.stages[i];
                let figure = mb(s.ceiling_bytes_per_sec.unwrap_or(0.0));
                // The basis mostly ends in the figure ("… = 40.2 MB/s"):
                // then it is said there only.
                let _ = if s.basis.contains(&figure) {
                    writeln!(out, "  {:<28} limited by {}: {}", p.name, s.name, s.basis)
                } else {
                    writeln!(
                        out,
                        "  {:<28} limited by {} at {figure} ({})",
                        p.name, s.name, s.basis
                    )
                };
                Some(i)
            }
            (None, None) => {
                let _ = writeln!(out, "  {:<28} nothing measured", p.name);
                None
            }
        };
        for (i, s) in p.stages.iter().enumerate() {
            if Some(i) != shown {
                let _ = writeln!(out, "  {:<28}   {:<12} {}", "", s.name, s.basis);
            }
        }
        for line in p.cpu_estimate.iter().flat_map(estimate_lines) {
            let _ = writeln!(out, "  {:<28}   {line}", "");
        }
        for line in p.model.iter().flat_map(super::runs::model_lines) {
            let _ = writeln!(out, "  {:<28}   {line}", "");
        }
    }
    let mut missing: Vec<&String> = doc.paths.iter().flat_map(|p| &p.missing).collect();
    missing.sort();
    missing.dedup();
    if !missing.is_empty() {
        let _ = writeln!(out, "\nWould decide the rest");
        for m in missing {
            let _ = writeln!(out, "  {m}");
        }
    }
    for n in &doc.not_measured {
        let _ = writeln!(out, "  not measured: {n}");
    }

    let _ = writeln!(out, "\nFindings (most serious first)");
    if doc.findings.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for (i, f) in doc.findings.iter().enumerate() {
        let sev = match f.severity {
            Severity::Critical => "CRITICAL",
            Severity::Warning => "warning",
            Severity::Notice => "notice",
            Severity::Info => "info",
        };
        let _ = writeln!(out, "  {:>2}. [{sev}] {} ({})", i + 1, f.title, f.rule_id);
    }
    let shown = match run {
        Some(id) => format!("'nastune history show {id}' shows this run"),
        None => "this run was not stored (--no-store)".to_string(),
    };
    if let Some(v) = &doc.validity {
        let _ = writeln!(out, "\n{}", super::validity_text::line(v));
    }
    let _ = writeln!(
        out,
        "\nDetails: 'nastune advise' explains each finding; {shown} ({:.0} s).",
        doc.elapsed_secs
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> CheckDoc {
        CheckDoc {
            schema_version: crate::advise::check::SCHEMA_VERSION,
            tool_version: "0".into(),
            host_id: "h".into(),
            timestamp: "t".into(),
            elapsed_secs: 3.0,
            measurements: Default::default(),
            not_measured: vec![],
            paths: vec![],
            findings: vec![],
            validity: None,
        }
    }

    #[test]
    fn names_the_stored_run_and_only_a_stored_one() {
        let stored = render(&doc(), Some(42));
        assert!(
            stored.contains("'nastune history show 42' shows this run"),
            "{stored}"
        );
        let unstored = render(&doc(), None);
        assert!(!unstored.contains("history show"), "{unstored}");
        assert!(unstored.contains("not stored (--no-store)"), "{unstored}");
    }
}
