//! From findings (and changes asked for with `--set`) to a plan: per change, the
//! setting, its value now and after, why, its risk, whether it is applied or
//! skipped and why, and the writes (steps) that apply it.

use serde::{Deserialize, Serialize};

use super::action::{Step, check_relative, read_current, selected_value};
use super::edit_file::Edit;
use super::kinds;
use super::udev_rules::Rule;
use crate::advise::{Change, Finding, Risk};

mod files;
use crate::root::Root;

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(
        "'{0}' matches no finding: give a rule id or a finding number from 'nastune tune plan'"
    )]
    NoSuchId(String),
    #[error(
        "--set '{0}' is not SETTING=VALUE with SETTING 'sysctl:KEY', 'sysfs:PATH' (PATH below /sys), 'ethtool:IFACE:SETTING', 'irq:N' or 'irq:IFACE' (VALUE: a CPU list), 'rps:IFACE:rx-N' or 'xps:IFACE:tx-N' (VALUE: a hex CPU mask), 'dmcrypt:NAME:no_read_workqueue' or 'dmcrypt:NAME:no_write_workqueue' (VALUE: on or off), 'fstab:MOUNTPOINT' (VALUE: options to add, '-option' to remove) or 'smb.conf:SECTION:PARAMETER', e.g. 'sysctl:vm.swappiness=10'"
    )]
    BadSet(String),
}

/// What a planned change came from.
#[derive(Debug, Clone)]
pub struct Source {
    /// 1-based, as `advise` numbers findings; `None` for `--set`.
    pub finding: Option<usize>,
    pub rule_id: Option<String>,
    pub title: String,
    pub risk: Risk,
    pub change: Change,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Apply,
    Skip,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlanItem {
    /// 1-based position in the plan.
    pub item: usize,
    pub finding: Option<usize>,
    pub rule_id: Option<String>,
    pub title: String,
    pub risk: Risk,
    pub change: Change,
    /// Canonical name: `sysctl:vm.swappiness`, `sysfs:block/sda/queue/scheduler`, `udev:…`.
    pub setting: String,
    pub old: Option<String>,
    pub new: Option<String>,
    /// Applied behind the dead-man timer.
    pub network: bool,
    /// The file that makes it survive a reboot, if any.
    pub persisted_in: Option<String>,
    pub status: Status,
    pub reason: Option<String>,
    pub warnings: Vec<String>,
    /// Skipped because the setting is that way already (or another item makes
    /// the same change): nothing is wrong with what was asked.
    #[serde(skip)]
    pub(in crate::tune) in_place: bool,
    #[serde(skip)]
    pub(in crate::tune) runtime: Vec<(String, Option<String>)>,
    /// Network device settings: journal path (`netdev/IFACE/SETTING`) and value.
    #[serde(skip)]
    pub(in crate::tune) netdev: Vec<(String, String)>,
    #[serde(skip)]
    pub(in crate::tune) persist: Persist,
}

#[derive(Debug, Clone, Default)]
pub(in crate::tune) enum Persist {
    #[default]
    None,
    Sysctl(String, String),
    Udev(Rule),
    /// An in-place edit of a configuration file that is not nastune's own.
    Edit(Edit),
    /// An IRQ affinity set at boot by nastune's systemd unit.
    Boot(super::boot_unit::Affinity),
}

impl PlanItem {
    /// Sets old (the value `current` selects) and new; in place already is an
    /// error that says so.
    pub(in crate::tune) fn set_old_new(&mut self, current: &str, new: &str) -> Result<(), String> {
        let old = selected_value(current);
        self.old = Some(old.clone());
        self.new = Some(new.to_string());
        if old == new {
            self.in_place = true;
            return Err(format!("already '{new}'"));
        }
        Ok(())
    }
}

/// One owned file the plan writes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FilePlan {
    pub path: String,
    pub existed: bool,
    pub network: bool,
    /// Written at `tune confirm`, not at apply.
    pub deferred: bool,
    pub content: String,
}

/// Version of the tune documents (`tune plan --json`, `tune-plan`, `tune-try`).
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    pub items: Vec<PlanItem>,
    pub files: Vec<FilePlan>,
    #[serde(skip)]
    pub steps: Vec<Step>,
}

impl Plan {
    pub fn to_apply(&self) -> usize {
        self.items
            .iter()
            .filter(|i| i.status == Status::Apply)
            .count()
    }

    /// Changes were asked for with `--set` and not one of them can be made:
    /// each is skipped for a reason other than being in place already.
    pub fn every_set_rejected(&self) -> bool {
        let mut sets = self.items.iter().filter(|i| i.finding.is_none()).peekable();
        sets.peek().is_some() && sets.all(|i| i.status == Status::Skip && !i.in_place)
    }

    pub fn has_network(&self) -> bool {
        self.steps.iter().any(|s| s.network)
    }
}

/// Parses `--set KIND:…=VALUE`; each kind knows its syntax.
pub fn parse_set(text: &str) -> Result<Change, PlanError> {
    let bad = || PlanError::BadSet(text.to_string());
    let (setting, value) = text.split_once('=').ok_or_else(bad)?;
    kinds::parse_set(setting.trim(), value.trim().to_string()).ok_or_else(bad)
}

/// The findings chosen by `ids` (rule ids or 1-based finding numbers): all of
/// them when no id and no `--set` is given.
pub fn select(
    findings: &[Finding],
    ids: &[String],
    has_sets: bool,
) -> Result<Vec<Source>, PlanError> {
    let pick = |i: usize| {
        ids.is_empty() && !has_sets
            || ids
                .iter()
                .any(|id| *id == findings[i].rule_id || id.parse() == Ok(i + 1))
    };
    for id in ids {
        let known = findings
            .iter()
            .enumerate()
            .any(|(i, f)| *id == f.rule_id || id.parse() == Ok(i + 1));
        if !known {
            return Err(PlanError::NoSuchId(id.clone()));
        }
    }
    let mut out = Vec::new();
    for (i, f) in findings.iter().enumerate().filter(|(i, _)| pick(*i)) {
        for c in &f.recommendation {
            out.push(Source {
                finding: Some(i + 1),
                rule_id: Some(f.rule_id.to_string()),
                title: f.title.clone(),
                risk: f.risk,
                change: c.clone(),
            });
        }
    }
    Ok(out)
}

/// A `--set` change as a plan source.
pub fn manual(change: Change) -> Source {
    let risk = kinds::kind(&change).manual_risk();
    Source {
        finding: None,
        rule_id: None,
        title: "asked for with --set".into(),
        risk,
        change,
    }
}

/// Reads the current values and builds the plan.
pub fn build(root: &Root, sources: Vec<Source>) -> Plan {
    let mut items: Vec<PlanItem> = Vec::new();
    for (n, src) in sources.into_iter().enumerate() {
        let setting = kinds::kind(&src.change).setting();
        let mut item = PlanItem {
            item: n + 1,
            finding: src.finding,
            rule_id: src.rule_id,
            title: src.title,
            risk: src.risk,
            setting,
            change: src.change,
            old: None,
            new: None,
            network: false,
            persisted_in: None,
            status: Status::Apply,
            reason: None,
            warnings: Vec::new(),
            in_place: false,
            runtime: Vec::new(),
            netdev: Vec::new(),
            persist: Persist::None,
        };
        if let Err(reason) = resolve(root, &mut item) {
            item.status = Status::Skip;
            item.reason = Some(reason);
        }
        if item.status == Status::Apply
            && let Some(prev) = items
                .iter()
                .find(|p| p.status == Status::Apply && overlaps(p, &item))
        {
            item.status = Status::Skip;
            item.in_place = prev.new == item.new;
            item.reason = Some(if prev.new == item.new {
                format!("same change as item {}", prev.item)
            } else {
                format!(
                    "conflicts with item {}, which sets '{}'",
                    prev.item,
                    prev.new.as_deref().unwrap_or_default()
                )
            });
        }
        items.push(item);
    }
    let (files, steps) = files::persistence(root, &mut items);
    Plan {
        items,
        files,
        steps,
    }
}

/// Two items set the same thing: same setting, or a runtime path both write.
fn overlaps(a: &PlanItem, b: &PlanItem) -> bool {
    a.setting == b.setting
        || a.runtime.iter().any(|(pa, va)| {
            va.is_some() && b.runtime.iter().any(|(pb, vb)| vb.is_some() && pa == pb)
        })
}

pub use super::kinds::sysctl::sysctl_path;

/// The text of a file below the root; `None` when absent.
pub(in crate::tune) fn read_text(root: &Root, rel: &str) -> Result<Option<String>, String> {
    check_relative(rel).map_err(|e| e.to_string())?;
    read_current(root, rel)
        .map(|o| o.map(|b| String::from_utf8_lossy(&b).into_owned()))
        .map_err(|e| e.to_string())
}

/// Fills in old/new/steps of one item, or says why it is skipped.
fn resolve(root: &Root, item: &mut PlanItem) -> Result<(), String> {
    if item.risk == Risk::AdviceOnly {
        return Err("advice only: never applied automatically".into());
    }
    let change = item.change.clone();
    kinds::kind(&change).plan(root, item)
}

impl crate::doc::Document for Plan {
    const KIND: crate::doc::DocKind = crate::doc::DocKind::TunePlan;
    const VERSION: u32 = SCHEMA_VERSION;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::{sysctl_d, udev_rules};

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (p, t) in [
            ("proc/sys/vm/swappiness", "60\n"),
            ("proc/sys/vm/dirty_bytes", "0\n"),
            ("proc/sys/vm/dirty_ratio", "20\n"),
            ("proc/sys/net/core/rmem_max", "212992\n"),
            ("sys/block/sda/queue/scheduler", "[mq-deadline] none bfq\n"),
            ("sys/class/net/eth0/tx_queue_len", "5000\n"),
            ("etc/sysctl.conf", "net.core.rmem_max = 1\n"),
        ] {
            std::fs::create_dir_all(d.path().join(p).parent().unwrap()).unwrap();
            std::fs::write(d.path().join(p), t).unwrap();
        }
        d
    }

    fn set(s: &str) -> Source {
        manual(parse_set(s).unwrap())
    }

    #[test]
    fn plans_each_kind_with_old_new_and_steps() {
        let d = tree();
        let root = Root::tree(d.path()).unwrap();
        let plan = build(
            &root,
            vec![
                set("sysctl:vm.swappiness=10"),
                set("sysctl:net.core.rmem_max=4194304"),
                set("sysfs:block/sda/queue/scheduler=bfq"),
                set("sysfs:class/net/eth0/tx_queue_len=1000"),
                set("sysctl:vm.dirty_bytes=90000000"),
            ],
        );
        let i = &plan.items;
        assert_eq!(i[0].old.as_deref(), Some("60"));
        assert_eq!(i[0].new.as_deref(), Some("10"));
        assert!(!i[0].network && i[1].network && !i[2].network && i[3].network);
        assert!(
            i[1].warnings[0].contains("'/etc/sysctl.conf' line 1"),
            "{:?}",
            i[1].warnings
        );
        assert_eq!(i[2].old.as_deref(), Some("mq-deadline"));
        assert_eq!(plan.to_apply(), 5);
        let kinds: Vec<(&str, &str, bool, bool)> = plan
            .steps
            .iter()
            .map(|s| (s.action.kind(), s.action.path(), s.network, s.deferred))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("runtime", "proc/sys/vm/swappiness", false, false),
                ("runtime", "sys/block/sda/queue/scheduler", false, false),
                ("runtime", "proc/sys/vm/dirty_ratio", false, false),
                ("runtime", "proc/sys/vm/dirty_bytes", false, false),
                ("file", sysctl_d::OWNED_FILE, false, false),
                ("file", udev_rules::OWNED_FILE, false, false),
                ("runtime", "proc/sys/net/core/rmem_max", true, false),
                ("runtime", "sys/class/net/eth0/tx_queue_len", true, false),
                ("file", sysctl_d::OWNED_FILE, true, true),
                ("file", udev_rules::OWNED_FILE, true, true),
            ]
        );
        // The network content builds on the non-network content.
        let sysctl_files: Vec<&FilePlan> = plan
            .files
            .iter()
            .filter(|f| f.path.contains("sysctl"))
            .collect();
        assert!(!sysctl_files[0].content.contains("rmem_max"));
        assert!(sysctl_files[1].content.contains("vm.swappiness = 10\n"));
        assert!(
            sysctl_files[1]
                .content
                .contains("net.core.rmem_max = 4194304\n")
        );
    }

    #[test]
    fn skips_with_reasons() {
        let d = tree();
        let root = Root::tree(d.path()).unwrap();
        let plan = build(
            &root,
            vec![
                set("sysctl:vm.swappiness=60"),
                set("sysctl:vm.nope=1"),
                set("sysfs:block/sda/queue/scheduler=deadline"),
                set("sysctl:vm.swappiness=10"),
                set("sysctl:vm.swappiness=20"),
                manual(Change::Ethtool {
                    interface: "eth0".into(),
                    setting: "tso".into(),
                    value: "on".into(),
                }),
            ],
        );
        let reasons: Vec<String> = plan
            .items
            .iter()
            .map(|i| i.reason.clone().unwrap_or_default())
            .collect();
        assert_eq!(reasons[0], "already '60'");
        assert!(reasons[1].contains("'vm.nope' does not exist"));
        assert!(
            reasons[2].contains("mq-deadline, none, bfq"),
            "{}",
            reasons[2]
        );
        assert_eq!(reasons[3], "");
        assert!(reasons[4].contains("conflicts with item 4"));
        assert_eq!(
            reasons[5],
            "ethtool settings are set on the live system only, not in a --root tree"
        );
        assert_eq!(plan.to_apply(), 1);
        assert!(!plan.every_set_rejected());
    }

    #[test]
    fn every_set_rejected_only_when_no_set_is_possible_or_in_place() {
        let d = tree();
        let root = Root::tree(d.path()).unwrap();
        let plan_of = |sets: &[&str]| build(&root, sets.iter().map(|s| set(s)).collect());
        assert!(plan_of(&["sysctl:vm.nope=1", "sysctl:vm.swappiness=abc"]).every_set_rejected());
        // In place already is not a rejection, nor is one change that can be made.
        assert!(!plan_of(&["sysctl:vm.nope=1", "sysctl:vm.swappiness=60"]).every_set_rejected());
        assert!(!plan_of(&["sysctl:vm.nope=1", "sysctl:vm.swappiness=10"]).every_set_rejected());
        assert!(!plan_of(&[]).every_set_rejected());
    }

    #[test]
    fn set_syntax() {
        assert!(matches!(
            parse_set("sysfs:/sys/block/sda/queue/read_ahead_kb=512").unwrap(),
            Change::SysfsAttribute { path, .. } if path == "block/sda/queue/read_ahead_kb"
        ));
        assert!(matches!(
            parse_set("ethtool:eth0:rx-gro=off").unwrap(),
            Change::Ethtool { interface, setting, value }
                if interface == "eth0" && setting == "rx-gro" && value == "off"
        ));
        assert!(parse_set("ethtool:eth0=off").is_err());
        assert!(matches!(
            parse_set("fstab:/srv=noatime,-relatime").unwrap(),
            Change::MountOption { mount_point, add, remove }
                if mount_point == "/srv" && add == ["noatime"] && remove == ["relatime"]
        ));
        assert!(parse_set("fstab:/srv=").is_err());
        assert!(matches!(
            parse_set("smb.conf:[global]:server min protocol=SMB2").unwrap(),
            Change::SmbConf { section, parameter, value }
                if section == "global" && parameter == "server min protocol"
                    && value.as_deref() == Some("SMB2")
        ));
        assert!(parse_set("vm.swappiness=1").is_err());
        assert!(parse_set("sysctl:vm.swappiness").is_err());
        assert_eq!(
            sysctl_path("net.ipv4.conf.eth0/100.rp_filter"),
            "proc/sys/net/ipv4/conf/eth0.100/rp_filter"
        );
    }
}
