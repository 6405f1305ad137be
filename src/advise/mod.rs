//! Advice: rules that turn a [`Snapshot`] (and measurements, when present) into
//! findings a careful expert would write. Each rule is a data row with a stable id
//! and a pure `evaluate` function; the registry is [`RULES`].
//!
//! Knowledge is current for Linux 6.x and Samba 4.x (see docs/rules.md, generated
//! from this registry).

#[cfg(test)]
mod boards_netvm;
pub mod bottleneck;
pub mod buses;
pub mod check;
mod cpu;
pub mod cpu_estimate;
mod crypto;
mod geometry;
mod kernel_log;
mod links;
pub mod measured;
pub mod media;
mod memory;
mod net;
pub mod path_model;
mod paths;
mod samba;
mod smart;
mod storage;
#[cfg(test)]
mod storage_boards;
mod sysctl_conf;
mod tcp_path;
mod usb;
mod vm;
mod what_if;

use serde::{Deserialize, Serialize};

use crate::probe::Snapshot;
pub use bottleneck::Measurements;

/// How much a finding matters. Ordered: `--fail-on warning` also fails on critical.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Notice,
    Warning,
    Critical,
}

/// What applying the recommendation takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// A runtime value that can be set and reverted at once.
    RuntimeSafe,
    /// Needs a remount or a service restart.
    NeedsRestart,
    /// Never applied automatically (reshape, re-encrypt, mkfs, hardware).
    AdviceOnly,
}

/// A recommended change, typed so `tune` can apply it and journal the old value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    Sysctl {
        key: String,
        value: String,
    },
    /// A sysfs attribute, path relative to /sys.
    SysfsAttribute {
        path: String,
        value: String,
    },
    /// A udev rule that sets an attribute on matching devices at every add/change.
    UdevRule {
        subsystem: String,
        matches: Vec<(String, String)>,
        attribute: String,
        value: String,
    },
    MountOption {
        mount_point: String,
        add: Vec<String>,
        remove: Vec<String>,
    },
    /// `value: None` removes the parameter.
    SmbConf {
        section: String,
        parameter: String,
        value: Option<String>,
    },
    Ethtool {
        interface: String,
        setting: String,
        value: String,
    },
    /// The CPUs that serve interrupts: `irq` is an IRQ number, or an interface
    /// whose IRQs (all its queues') all get `cpus`, a CPU list such as `0-1`.
    IrqAffinity {
        irq: String,
        cpus: String,
    },
    /// The CPU mask of one queue of an interface: `rx-N` sets its RPS mask
    /// (`rps_cpus`), `tx-N` its XPS mask (`xps_cpus`); `mask` in hex.
    QueueCpus {
        interface: String,
        queue: String,
        mask: String,
    },
    /// A dm-crypt flag of an open mapping (`no_read_workqueue`,
    /// `no_write_workqueue`), on or off.
    DmCryptFlag {
        name: String,
        flag: String,
        on: bool,
    },
    AdviceOnly {
        action: String,
    },
}

/// One fact that triggered a finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub fact: String,
    pub value: String,
}

impl Evidence {
    pub fn new(fact: impl Into<String>, value: impl ToString) -> Self {
        Evidence {
            fact: fact.into(),
            value: value.to_string(),
        }
    }
}

/// The static description of a rule, shown by `advise --list` and docs/rules.md.
#[derive(Debug, Clone, Serialize)]
pub struct RuleInfo {
    pub id: &'static str,
    pub area: &'static str,
    pub title: &'static str,
    pub severity: Severity,
    pub risk: Risk,
    /// What the rule checks, in one or two sentences.
    pub checks: &'static str,
    pub references: &'static [&'static str],
}

/// What a rule found on this box.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub rule_id: String,
    pub title: String,
    pub severity: Severity,
    pub risk: Risk,
    pub evidence: Vec<Evidence>,
    /// Canonical names of the settings concerned (`sysctl:vm.swappiness`,
    /// `sysfs:block/sda/queue/scheduler`, `smb.conf:[global]:socket options`).
    pub settings: Vec<String>,
    pub recommendation: Vec<Change>,
    /// Why, with the arithmetic shown.
    pub rationale: String,
    pub references: Vec<String>,
}

/// Version of the `findings` document (`advise --json`).
pub const SCHEMA_VERSION: u32 = 1;

/// The `findings` document of an advise run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindingsDoc {
    pub schema_version: u32,
    pub tool_version: String,
    pub host_id: String,
    pub timestamp: String,
    pub findings: Vec<Finding>,
}

impl crate::doc::Document for FindingsDoc {
    const KIND: crate::doc::DocKind = crate::doc::DocKind::Findings;
    const VERSION: u32 = SCHEMA_VERSION;
}

/// Everything rules may look at: what the box is, and what was measured on it
/// (in the same run, or by the latest stored runs of this host).
pub struct Context<'a> {
    pub snapshot: &'a Snapshot,
    /// Empty when nothing was measured; rules then say what they assumed.
    pub measurements: &'a Measurements,
}

/// Nothing measured: the measurements of a [`Context`] built from a snapshot alone.
pub static UNMEASURED: Measurements = Measurements {
    disk: Vec::new(),
    crypto: Vec::new(),
    tcp_loopback_bytes_per_sec: None,
    tcp_loopback_measured_by: None,
    network_goodput_bytes_per_sec: None,
    network_goodput_measured_by: None,
    shared_disks: Vec::new(),
    services: Vec::new(),
    tcp: Vec::new(),
};

impl<'a> Context<'a> {
    /// Rules on a snapshot with nothing measured.
    pub fn unmeasured(snapshot: &'a Snapshot) -> Self {
        Context {
            snapshot,
            measurements: &UNMEASURED,
        }
    }
}

/// A rule: its description and a pure evaluation.
pub struct Rule {
    pub info: RuleInfo,
    pub evaluate: fn(&RuleInfo, &Context) -> Vec<Finding>,
}

impl Rule {
    /// The rule's findings on this context, each with the risk its changes carry.
    pub fn run(&self, ctx: &Context) -> Vec<Finding> {
        (self.evaluate)(&self.info, ctx)
            .into_iter()
            .map(Finding::with_risk_of_its_changes)
            .collect()
    }
}

impl Finding {
    /// A finding carrying the rule's defaults; callers fill in the specifics.
    pub fn of(info: &RuleInfo, title: impl Into<String>, rationale: impl Into<String>) -> Self {
        Finding {
            rule_id: info.id.to_string(),
            title: title.into(),
            severity: info.severity,
            risk: info.risk,
            evidence: Vec::new(),
            settings: Vec::new(),
            recommendation: Vec::new(),
            rationale: rationale.into(),
            references: info.references.iter().map(|r| r.to_string()).collect(),
        }
    }

    pub fn evidence(mut self, fact: impl Into<String>, value: impl ToString) -> Self {
        self.evidence.push(Evidence::new(fact, value));
        self
    }

    pub fn setting(mut self, name: impl Into<String>) -> Self {
        self.settings.push(name.into());
        self
    }

    pub fn change(mut self, c: Change) -> Self {
        self.recommendation.push(c);
        self
    }

    pub fn severity(mut self, s: Severity) -> Self {
        self.severity = s;
        self
    }

    /// A rule's risk describes the change it usually recommends; a finding whose every
    /// recommendation is advice (a kernel to rebuild, a disk to replace) has nothing
    /// `tune` could apply or revert, so "runtime, safe to revert" would be untrue.
    pub fn with_risk_of_its_changes(mut self) -> Self {
        if !self.recommendation.is_empty()
            && self
                .recommendation
                .iter()
                .all(|c| matches!(c, Change::AdviceOnly { .. }))
        {
            self.risk = Risk::AdviceOnly;
        }
        self
    }
}

/// Every rule nastune knows, grouped by area.
pub fn rules() -> Vec<&'static Rule> {
    let mut all: Vec<&'static Rule> = Vec::new();
    all.extend(cpu::RULES);
    all.extend(memory::RULES);
    all.extend(net::RULES);
    all.extend(sysctl_conf::RULES);
    all.extend(vm::RULES);
    all.extend(storage::RULES);
    all.extend(buses::RULES);
    all.extend(paths::RULES);
    all.extend(samba::RULES);
    all.extend(smart::RULES);
    all.extend(crypto::RULES);
    all.extend(geometry::RULES);
    all.extend(usb::RULES);
    all.extend(links::RULES);
    all.extend(kernel_log::RULES);
    all
}

/// Runs every rule; findings sorted by severity (highest first), then id.
pub fn evaluate(ctx: &Context) -> Vec<Finding> {
    let mut out: Vec<Finding> = rules().into_iter().flat_map(|r| r.run(ctx)).collect();
    out.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.rule_id.cmp(&b.rule_id)));
    out
}

#[cfg(test)]
pub(crate) mod test_support {
    use crate::probe::Snapshot;
    use crate::root::Root;

    /// Probes a fixture box by name.
    pub fn snapshot_of(boxname: &str) -> Snapshot {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/boxes")
            .join(boxname);
        crate::probe::probe(&Root::tree(&dir).expect("fixture box"))
    }

    /// Runs one rule on a snapshot.
    pub fn run_rule(rule: &super::Rule, snap: &Snapshot) -> Vec<super::Finding> {
        rule.run(&super::Context::unmeasured(snap))
    }

    /// Runs one rule on a snapshot with what was measured.
    pub fn run_measured(
        rule: &super::Rule,
        snapshot: &Snapshot,
        measurements: &super::Measurements,
    ) -> Vec<super::Finding> {
        let ctx = super::Context {
            snapshot,
            measurements,
        };
        rule.run(&ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_ids_are_unique_kebab_case() {
        let mut seen = std::collections::BTreeSet::new();
        for r in rules() {
            let id = r.info.id;
            assert!(seen.insert(id), "duplicate rule id '{id}'");
            assert!(
                id.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !id.starts_with('-')
                    && !id.ends_with('-'),
                "rule id '{id}' is not kebab-case"
            );
            assert!(
                !r.info.references.is_empty(),
                "rule '{id}' has no reference"
            );
        }
    }
}
