//! `nastune watch` as plain periodic lines: one per sample with what changed,
//! one block per alert. Colour only on a terminal without NO_COLOR.

use std::fmt::Write;

use crate::watch::SampleReport;
use crate::watch::alert::Alert;
use crate::watch::counter::Step;

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
    let quiet = r.changes.len() - r.changes.iter().filter(listed).count();
    match (r.changes.is_empty(), quiet) {
        (true, _) => out.push_str(", no change"),
        (false, 0) => {}
        (false, n) => {
            let _ = write!(out, ", {n} traffic/io counters grew");
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
        let _ = write!(out, "\n  {} {what}", c.series);
    }
    for p in &r.problems {
        let _ = write!(out, "\n  unreadable: {p}");
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
        a.message, a.meaning, a.how_to_split
    );
    if let Some(e) = &a.evidence {
        let _ = writeln!(out, "  measured: {e}");
    }
    out
}
