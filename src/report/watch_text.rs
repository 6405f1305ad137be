//! `nastune watch` as plain periodic lines: one per sample with what changed,
//! one block per alert. Colour only on a terminal without NO_COLOR.

use std::fmt::Write;

use super::format::shown;

use crate::watch::alert::Alert;
use crate::watch::counter::Step;
use crate::watch::{RunSummary, SampleReport};

pub fn sample_line(r: &SampleReport) -> String {
    let mut out = format!(
        "{}  {} series",
        crate::time::rfc3339_utc(r.time_unix_s.max(0.0) as u64),
        r.series
    );
    // Traffic and I/O counters grow all the time: only their count is shown;
    // error counters and every wrap, reset or new baseline are listed.
    let listed = |c: &&crate::watch::counter::Observation| {
        let metric = c.series.split('{').next().unwrap_or("");
        crate::watch::alert::explain(metric).is_some() || !matches!(c.step, Step::Increase { .. })
    };
    let mut quiet: Vec<_> = r.changes.iter().filter(|c| !listed(c)).collect();
    match (r.changes.is_empty(), quiet.len()) {
        (true, _) => out.push_str(", no change"),
        (false, 0) => {}
        (false, n) => {
            // The count alone ("7 grew") does not say where the traffic went.
            quiet.sort_by_key(|c| std::cmp::Reverse(c.step.delta()));
            let _ = write!(
                out,
                ", {n} traffic/io counters grew, most: {}",
                grown(
                    quiet
                        .iter()
                        .take(TOP)
                        .map(|c| (c.series.as_str(), c.step.delta()))
                )
            );
        }
    }
    for c in r.changes.iter().filter(listed) {
        let what = match c.step {
            Step::Increase { delta } => format!("+{delta}"),
            Step::Wrap { delta, bits } => format!("+{delta} ({bits}-bit wrap)"),
            Step::Reset => format!("reset to {}", c.value),
            Step::Reboot { delta } => format!("+{delta} since reboot"),
            Step::NewIdentity => "new device, new baseline".into(),
            Step::First | Step::Unchanged => continue,
        };
        let _ = write!(out, "\n  {} {what}", shown(&c.series));
    }
    for p in &r.problems {
        let _ = write!(out, "\n  unreadable: {}", shown(p));
    }
    out.push('\n');
    out
}

/// Traffic and I/O counters named on a sample line and in the summary.
const TOP: usize = 3;

/// `a +1, b +2`, each name shown escaped (it came from the box).
fn grown<'a>(top: impl Iterator<Item = (&'a str, u64)>) -> String {
    top.map(|(series, delta)| format!("{} +{delta}", shown(series)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a watch saw, printed when it ends (its count reached, Ctrl-C,
/// SIGTERM) and by `history show`: samples, span, alerts, and the counters
/// that grew most over the whole run (`top`, empty when not known).
pub fn summary(s: &RunSummary, top: &[(&str, u64)]) -> String {
    let mut out = format!(
        "watch: {} sample(s){}",
        s.samples,
        if s.replay { " replayed from trees" } else { "" }
    );
    if let (Some(a), Some(b)) = (s.first_sample_unix_s, s.last_sample_unix_s) {
        let _ = write!(
            out,
            " from {} to {} ({})",
            crate::time::rfc3339_utc(a.max(0.0) as u64),
            crate::time::rfc3339_utc(b.max(0.0) as u64),
            super::format::duration(b - a)
        );
    }
    let _ = write!(out, ", {} alert(s)", s.alerts);
    if !top.is_empty() {
        let _ = write!(out, "\n  grew most: {}", grown(top.iter().copied()));
    }
    out.push('\n');
    out
}

pub fn alert_block(a: &Alert, colour: bool) -> String {
    let tag = if colour {
        "\x1b[1;31mALERT\x1b[0m"
    } else {
        "ALERT"
    };
    let mut out = format!(
        "{tag} {}\n  meaning: {}\n  split it: {}\n",
        shown(&a.message),
        shown(&a.meaning),
        shown(&a.how_to_split)
    );
    if let Some(e) = &a.evidence {
        let _ = writeln!(out, "  measured: {}", shown(e));
    }
    out
}
