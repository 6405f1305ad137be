//! The validity guard's verdict in text: one line a run, next to the figures.

use crate::bench::validity::Validity;

/// `validity: clean (…figures…)`, `validity: DISTURBED: reason`, or for
/// several reasons (check's phases each add theirs) one indented line each,
/// so a reader can take them in.
pub fn line(v: &Validity) -> String {
    if v.is_clean() {
        let figures: Vec<String> = v
            .conditions
            .iter()
            .filter(|c| matches!(c.name.as_str(), "settle" | "other_cpu" | "cpu_frequency"))
            .map(|c| format!("{} {}", c.name.replace('_', " "), c.figure))
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
