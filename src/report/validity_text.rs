//! The validity guard's verdict in text: one line a run, next to the figures.

use crate::bench::validity::Validity;

/// `validity: clean (…figures…)` or `validity: DISTURBED: reason; reason`.
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
    } else {
        format!("validity: DISTURBED: {}", v.reasons.join("; "))
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
        assert_eq!(line(&bad), "validity: DISTURBED: a; b");
    }
}
