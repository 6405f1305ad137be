//! The validity guard's verdict in text: one line a run, next to the figures.

use crate::bench::validity::Validity;

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
    } else if let [one] = v.reasons.as_slice() {
        format!("validity: DISTURBED: {one}")
    } else {
        let mut out = String::from("validity: DISTURBED:");
        for r in &v.reasons {
            out.push_str("\n  - ");
            out.push_str(r);
        }
        out
    }
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
    use crate::bench::validity::{Condition, Verdict};

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
        assert_eq!(line(&bad), "validity: DISTURBED:\n  - a\n  - b");
        let one = Validity {
            reasons: vec!["a".into()],
            ..bad
        };
        assert_eq!(line(&one), "validity: DISTURBED: a");
    }
}
