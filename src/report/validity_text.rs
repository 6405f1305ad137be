//! The validity guard's verdict in text: one line a run, next to the figures.

use crate::bench::validity::{Validity, Verdict};

/// `validity: clean (…figures…)`, `validity: DISTURBED: reason`, or for
/// several reasons (check's phases each add theirs) one indented line each,
/// so a reader can take them in.
pub fn line(v: &Validity) -> String {
    if v.is_clean() {
        // check's phases each add their own conditions: one entry per name,
        // its figures as a range, instead of the same words once a phase.
        let mut by_name: Vec<(&str, Vec<&str>)> = Vec::new();
        for c in v.conditions.iter().filter(|c| {
            matches!(
                c.name.as_str(),
                "settle" | "thread_cpu" | "other_cpu" | "cpu_frequency"
            )
        }) {
            match by_name.iter_mut().find(|(n, _)| *n == c.name) {
                Some((_, figures)) => figures.push(&c.figure),
                None => by_name.push((&c.name, vec![&c.figure])),
            }
        }
        let figures: Vec<String> = by_name
            .iter()
            .map(|(name, figures)| format!("{} {}", name.replace('_', " "), range(figures)))
            .collect();
        if figures.is_empty() {
            "validity: clean".into()
        } else {
            format!("validity: clean ({})", figures.join(", "))
        }
    } else {
        let groups = disturbed_groups(v);
        if let [one] = groups.as_slice() {
            format!("validity: DISTURBED: {one}; {RERUN}")
        } else {
            let mut out = format!("validity: DISTURBED ({RERUN}):");
            for g in &groups {
                out.push_str("\n  - ");
                out.push_str(g);
            }
            out
        }
    }
}

/// What a disturbed run's reader should do: its figures measured the box's
/// other work as much as the box.
pub const RERUN: &str = "rerun when the box is idle";

/// A disturbed run in one line, without the reasons: the conditions that
/// failed with their figures (`other cpu 1.18 cores, other io 554.0 MB/s`),
/// for a test of a suite whose reasons the run's own line gives once.
pub fn short(v: &Validity) -> String {
    let failed: Vec<String> = v
        .conditions
        .iter()
        .filter(|c| c.verdict == Verdict::Disturbed)
        .map(|c| format!("{} {}", c.name.replace('_', " "), c.figure))
        .collect();
    if failed.is_empty() {
        format!("validity: disturbed ({} reasons)", v.reasons.len())
    } else {
        format!("validity: disturbed ({})", failed.join(", "))
    }
}

/// The reasons of a disturbed run, one entry per condition: check's phases
/// and a suite's tests each disturb the same conditions (a busy box makes
/// "other processes used N cores" six times over), so each condition is said
/// once with its figures as a range, the runs it hit and its first reason.
pub fn disturbed_groups(v: &Validity) -> Vec<String> {
    // (condition, figures, phases, first reason as given).
    let mut groups: Vec<(&str, Vec<&str>, Vec<&str>, &str)> = Vec::new();
    let mut unmatched: Vec<&str> = Vec::new();
    let mut used = vec![false; v.conditions.len()];
    for r in &v.reasons {
        // check names the phase in front of a reason: `disk: other processes…`.
        let (phase, bare) = match r.split_once(": ") {
            Some((p, rest)) if !p.contains(' ') => (Some(p), rest),
            _ => (None, r.as_str()),
        };
        let found = v.conditions.iter().enumerate().find(|(i, c)| {
            !used[*i] && c.reason.as_deref().is_some_and(|cr| cr == bare || cr == r)
        });
        let Some((i, c)) = found else {
            if !unmatched.contains(&r.as_str()) {
                unmatched.push(r);
            }
            continue;
        };
        used[i] = true;
        match groups.iter_mut().find(|g| g.0 == c.name) {
            Some(g) => {
                g.1.push(&c.figure);
                g.2.extend(phase);
            }
            None => groups.push((&c.name, vec![&c.figure], phase.into_iter().collect(), r)),
        }
    }
    let mut out: Vec<String> = groups
        .iter()
        .map(|(name, figures, phases, first)| {
            if figures.len() == 1 {
                return (*first).to_string();
            }
            let mut counted: Vec<String> = Vec::new();
            for p in phases {
                if counted.iter().any(|c| c.split(' ').next() == Some(*p)) {
                    continue;
                }
                let n = phases.iter().filter(|q| *q == p).count();
                counted.push(if n > 1 {
                    format!("{p} x{n}")
                } else {
                    (*p).to_string()
                });
            }
            let runs = if counted.is_empty() {
                format!("{} runs", figures.len())
            } else {
                format!("{} runs: {}", figures.len(), counted.join(", "))
            };
            format!(
                "{} {} in {runs}; first: {first}",
                name.replace('_', " "),
                range(figures)
            )
        })
        .collect();
    out.extend(unmatched.into_iter().map(str::to_string));
    out
}

/// Figures of one condition: the one figure, or `low–high unit` when they
/// are numbers with the same unit (`0.00–0.02 cores`), else the distinct ones.
fn range(figures: &[&str]) -> String {
    let mut distinct: Vec<&str> = Vec::new();
    for f in figures {
        if !distinct.contains(f) {
            distinct.push(f);
        }
    }
    if let [one] = distinct.as_slice() {
        return (*one).to_string();
    }
    // (value, number as written, unit) of each figure.
    let parts: Option<Vec<(f64, &str, &str)>> = distinct
        .iter()
        .map(|f| {
            let (number, unit) = f.split_once(' ').unwrap_or((f, ""));
            Some((number.parse().ok()?, number, unit))
        })
        .collect();
    match parts {
        Some(p) if p.iter().all(|x| x.2 == p[0].2) => {
            let low = p.iter().min_by(|a, b| a.0.total_cmp(&b.0));
            let high = p.iter().max_by(|a, b| a.0.total_cmp(&b.0));
            match (low, high) {
                (Some(low), Some(high)) => format!("{}–{} {}", low.1, high.1, low.2)
                    .trim_end()
                    .to_string(),
                _ => distinct.join(", "),
            }
        }
        _ => distinct.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::validity::Condition;

    #[test]
    fn clean_shows_figures_and_disturbed_the_reasons() {
        let c = |name: &str, verdict, reason: Option<&str>| Condition {
            name: name.into(),
            figure: "0.02 cores".into(),
            verdict,
            reason: reason.map(Into::into),
        };
        let clean = Validity {
            verdict: Verdict::Clean,
            reasons: vec![],
            conditions: vec![
                c("other_cpu", Verdict::Clean, None),
                c("swap", Verdict::Clean, None),
            ],
        };
        assert_eq!(line(&clean), "validity: clean (other cpu 0.02 cores)");
        // check's phases: one entry per condition, its figures as a range.
        let mut phases = clean.clone();
        for figure in ["0.01 cores", "0.00 cores", "0.01 cores"] {
            phases.conditions.push(Condition {
                figure: figure.into(),
                ..c("other_cpu", Verdict::Clean, None)
            });
        }
        phases.conditions.push(Condition {
            figure: "0.00 busy cores after 0.3 s".into(),
            ..c("settle", Verdict::Clean, None)
        });
        assert_eq!(
            line(&phases),
            "validity: clean (other cpu 0.00–0.02 cores, settle 0.00 busy cores after 0.3 s)"
        );
        assert_eq!(range(&["1 GHz", "2 MHz"]), "1 GHz, 2 MHz");
        assert_eq!(range(&["x", "x"]), "x");
        let bad = Validity {
            verdict: Verdict::Disturbed,
            reasons: vec!["a".into(), "b".into()],
            conditions: vec![],
        };
        assert_eq!(
            line(&bad),
            "validity: DISTURBED (rerun when the box is idle):\n  - a\n  - b"
        );
        let one = Validity {
            reasons: vec!["a".into()],
            ..bad
        };
        assert_eq!(
            line(&one),
            "validity: DISTURBED: a; rerun when the box is idle"
        );
    }

    /// check's three phases, each disturbed by other processes' CPU: the
    /// condition once with its range and phases, not three lines of it.
    #[test]
    fn a_condition_disturbing_several_runs_is_said_once() {
        let busy = |cores: &str| Condition {
            name: "other_cpu".into(),
            figure: format!("{cores} cores"),
            verdict: Verdict::Disturbed,
            reason: Some(format!(
                "other processes used {cores} cores during the run: rustc"
            )),
        };
        let swap = Condition {
            name: "swap".into(),
            figure: "9 in, 0 out (pages)".into(),
            verdict: Verdict::Disturbed,
            reason: Some("the box swapped 9 pages".into()),
        };
        let phases = [("disk", "1.18"), ("disk", "1.37"), ("net", "0.78")];
        let mut v = Validity {
            verdict: Verdict::Disturbed,
            reasons: phases
                .iter()
                .map(|(p, c)| format!("{p}: {}", busy(c).reason.unwrap()))
                .collect(),
            conditions: phases.iter().map(|(_, c)| busy(c)).collect(),
        };
        v.reasons.push("net: the box swapped 9 pages".into());
        v.conditions.push(swap);
        let text = line(&v);
        assert_eq!(
            text,
            "validity: DISTURBED (rerun when the box is idle):\n  \
             - other cpu 0.78–1.37 cores in 3 runs: disk x2, net; first: disk: other processes \
             used 1.18 cores during the run: rustc\n  \
             - net: the box swapped 9 pages"
        );
        assert_eq!(text.matches("other processes used").count(), 1, "{text}");
        assert_eq!(
            short(&v),
            "validity: disturbed (other cpu 1.18 cores, other cpu 1.37 cores, other cpu 0.78 \
             cores, swap 9 in, 0 out (pages))"
        );
    }
}
