//! The validity verdict every measurement carries: each condition the guard
//! checked, with its figure, and whether the box was quiet. The guard that
//! judges (`bench::validity`) is an engine; the verdict is vocabulary, read by
//! store, compare, report and every bench document.

use serde::{Deserialize, Serialize};

/// The judgement a run carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Validity {
    pub verdict: Verdict,
    /// Why it is disturbed; empty when clean.
    pub reasons: Vec<String>,
    /// Every condition checked, clean ones too, with its figure.
    pub conditions: Vec<Condition>,
}

impl Validity {
    pub fn is_clean(&self) -> bool {
        self.verdict == Verdict::Clean
    }

    /// The worse of several (a `check` run's benches): disturbed if any is,
    /// with every reason once.
    pub fn worst<'a>(all: impl IntoIterator<Item = &'a Validity>) -> Option<Validity> {
        let mut out: Option<Validity> = None;
        for v in all {
            let o = out.get_or_insert_with(|| Validity {
                verdict: Verdict::Clean,
                reasons: Vec::new(),
                conditions: Vec::new(),
            });
            if !v.is_clean() {
                o.verdict = Verdict::Disturbed;
            }
            for r in &v.reasons {
                if !o.reasons.contains(r) {
                    o.reasons.push(r.clone());
                }
            }
            o.conditions.extend(v.conditions.iter().cloned());
        }
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Clean,
    Disturbed,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Clean => "clean",
            Verdict::Disturbed => "disturbed",
        }
    }
}

/// One condition: `thread_cpu`, `other_cpu`, `settle`, `swap`, `major_faults`,
/// `memory_pressure`, `cpu_frequency`, `thermal`, `throttling`, `md_sync`,
/// `ext4_lazyinit`, `target_io` or `page_cache`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Condition {
    pub name: String,
    pub figure: String,
    pub verdict: Verdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Condition {
    pub fn clean(name: &str, figure: String) -> Self {
        Condition {
            name: name.into(),
            figure,
            verdict: Verdict::Clean,
            reason: None,
        }
    }

    pub fn disturbed(name: &str, figure: String, reason: String) -> Self {
        Condition {
            name: name.into(),
            figure,
            verdict: Verdict::Disturbed,
            reason: Some(reason),
        }
    }
}
