//! Text for `nastune tune try --folklore`: one row per recipe measured (old ->
//! new, the change of the mean and its interval in percent of the baseline,
//! the effect, what became of it), then the recipes skipped and why, then
//! where each measured recipe comes from.

use std::fmt::Write;

use crate::tune::folklore::{FolkloreReport, RowResult};
use crate::tune::trial::TryReport;

/// `x` in percent of the baseline mean, signed.
fn pct(x: f64, t: &TryReport) -> String {
    let base = t.outcome.baseline.mean;
    if base == 0.0 {
        return "n/a".into();
    }
    format!("{:+.1} %", x / base * 100.0)
}

/// One line per recipe and reason: the devices a per-device recipe skipped
/// for the same reason are named together, the reason with `<dev>` for each.
fn skipped_lines(r: &FolkloreReport) -> Vec<String> {
    let mut groups: Vec<(&str, String, Vec<&str>)> = Vec::new();
    for row in &r.rows {
        let RowResult::Skipped { reason } = &row.result else {
            continue;
        };
        let (reason, on) = match row.on.as_deref() {
            Some(on) => (
                reason
                    .replace(&format!("/{on}/"), "/<dev>/")
                    .replace(&format!("'{on}'"), "'<dev>'"),
                Some(on),
            ),
            None => (reason.clone(), None),
        };
        match groups
            .iter_mut()
            .find(|(name, why, _)| *name == row.recipe && *why == reason)
        {
            Some((_, _, ons)) => ons.extend(on),
            None => groups.push((&row.recipe, reason, on.into_iter().collect())),
        }
    }
    groups
        .into_iter()
        .map(|(name, why, ons)| match ons.as_slice() {
            [] => format!("  {name}: {why}"),
            [one] => format!("  {name} on {one}: {}", why.replace("<dev>", one)),
            many => format!("  {name} on {}: {why}", many.join(", ")),
        })
        .collect()
}

pub fn render(r: &FolkloreReport) -> String {
    let mut out = String::new();
    let measured: Vec<(&crate::tune::folklore::Row, &TryReport)> = r
        .rows
        .iter()
        .filter_map(|row| match &row.result {
            RowResult::Measured { trial } => Some((row, trial.as_ref())),
            RowResult::Skipped { .. } => None,
        })
        .collect();
    let _ = writeln!(
        out,
        "\nfolklore, measured on this box: {} recipe(s) tried, {} skipped; judged by {}",
        measured.len(),
        r.rows.len() - measured.len(),
        r.judges.join(", ")
    );
    if !measured.is_empty() {
        let lines: Vec<[String; 8]> = measured
            .iter()
            .map(|(row, t)| {
                let o = &t.outcome;
                [
                    row.recipe.clone(),
                    t.change.setting.clone(),
                    format!("{} -> {}", row.old.as_deref().unwrap_or("?"), row.new),
                    pct(o.diff, t),
                    format!("{} to {}", pct(o.ci_low, t), pct(o.ci_high, t)),
                    o.effect.map_or("?", |e| e.name()).to_string(),
                    if t.kept { "kept" } else { "reverted" }.to_string(),
                    t.session.to_string(),
                ]
            })
            .collect();
        let conf = measured
            .first()
            .map_or(95.0, |(_, t)| t.outcome.confidence * 100.0);
        let head = [
            "recipe".to_string(),
            "setting".into(),
            "old -> new".into(),
            "change".into(),
            format!("{conf:.0} % interval"),
            "effect".into(),
            "state".into(),
            "session".into(),
        ];
        let mut width = [0usize; 8];
        for l in lines.iter().chain(std::iter::once(&head)) {
            for (w, cell) in width.iter_mut().zip(l) {
                *w = (*w).max(cell.chars().count());
            }
        }
        for l in std::iter::once(&head).chain(&lines) {
            let cells: Vec<String> = l
                .iter()
                .zip(width)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect();
            let _ = writeln!(out, "{}", cells.join("  ").trim_end());
        }
    }
    let skipped = skipped_lines(r);
    if !skipped.is_empty() {
        let _ = writeln!(out, "skipped:\n{}", skipped.join("\n"));
    }
    if !measured.is_empty() {
        let _ = writeln!(out, "where they come from:");
        for (row, _) in &measured {
            let rule = row
                .rule
                .as_deref()
                .map(|r| format!(" (advise rule '{r}')"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {}: {}; now: {}{rule}",
                row.recipe, row.source, row.now
            );
        }
    }
    if !r.keep_helpful && !measured.is_empty() {
        let _ = writeln!(
            out,
            "every recipe was reverted; each trial is a stored 'tune-try' run (see its session), \
             --keep-helpful keeps those that win"
        );
    }
    out
}
