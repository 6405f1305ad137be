//! From findings (and changes asked for with `--set`) to a plan: per change, the
//! setting, its value now and after, why, its risk, whether it is applied or
//! skipped and why, and the writes (steps) that apply it.

use serde::{Deserialize, Serialize};

use super::action::netdev_path;
use super::action::{Action, Step, check_relative, read_current, selected_value};
use super::edit_file::Edit;
use super::udev_rules::{self, Rule};
use super::{netdev, sysctl_d, validate};
use crate::advise::{Change, Finding, Risk};
use crate::root::Root;

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(
        "'{0}' matches no finding: give a rule id or a finding number from 'nastune tune plan'"
    )]
    NoSuchId(String),
    #[error(
        "--set '{0}' is not SETTING=VALUE with SETTING 'sysctl:KEY', 'sysfs:PATH' (PATH below /sys), 'ethtool:IFACE:SETTING', 'fstab:MOUNTPOINT' (VALUE: options to add, '-option' to remove) or 'smb.conf:SECTION:PARAMETER', e.g. 'sysctl:vm.swappiness=10'"
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
    in_place: bool,
    #[serde(skip)]
    runtime: Vec<(String, Option<String>)>,
    /// Network device settings: journal path (`netdev/IFACE/SETTING`) and value.
    #[serde(skip)]
    netdev: Vec<(String, String)>,
    #[serde(skip)]
    persist: Persist,
}

#[derive(Debug, Clone, Default)]
enum Persist {
    #[default]
    None,
    Sysctl(String, String),
    Udev(Rule),
    /// An in-place edit of a configuration file that is not nastune's own.
    Edit(Edit),
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

/// Parses `--set sysctl:KEY=VALUE` or `--set sysfs:PATH=VALUE`.
pub fn parse_set(text: &str) -> Result<Change, PlanError> {
    let bad = || PlanError::BadSet(text.to_string());
    let (setting, value) = text.split_once('=').ok_or_else(bad)?;
    let value = value.trim().to_string();
    match setting.trim().split_once(':').ok_or_else(bad)? {
        ("sysctl", key) if !key.is_empty() => Ok(Change::Sysctl {
            key: key.to_string(),
            value,
        }),
        ("sysfs", path) if !path.is_empty() => Ok(Change::SysfsAttribute {
            path: path.trim_start_matches("/sys/").to_string(),
            value,
        }),
        ("fstab", mount_point) if mount_point.starts_with('/') => {
            let (mut add, mut remove) = (Vec::new(), Vec::new());
            for o in value.split(',').map(str::trim).filter(|o| !o.is_empty()) {
                match o.strip_prefix('-') {
                    Some(r) => remove.push(r.to_string()),
                    None => add.push(o.to_string()),
                }
            }
            if add.is_empty() && remove.is_empty() {
                return Err(bad());
            }
            Ok(Change::MountOption {
                mount_point: mount_point.to_string(),
                add,
                remove,
            })
        }
        ("smb.conf", rest) => match rest.split_once(':') {
            Some((section, parameter)) if !section.is_empty() && !parameter.trim().is_empty() => {
                Ok(Change::SmbConf {
                    section: section
                        .trim_start_matches('[')
                        .trim_end_matches(']')
                        .to_string(),
                    parameter: parameter.trim().to_string(),
                    value: Some(value),
                })
            }
            _ => Err(bad()),
        },
        ("ethtool", rest) => match rest.split_once(':') {
            Some((interface, setting)) if !interface.is_empty() && !setting.is_empty() => {
                Ok(Change::Ethtool {
                    interface: interface.to_string(),
                    setting: setting.to_string(),
                    value,
                })
            }
            _ => Err(bad()),
        },
        _ => Err(bad()),
    }
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
    let risk = match change {
        Change::MountOption { .. } | Change::SmbConf { .. } => Risk::NeedsRestart,
        _ => Risk::RuntimeSafe,
    };
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
        let mut item = PlanItem {
            item: n + 1,
            finding: src.finding,
            rule_id: src.rule_id,
            title: src.title,
            risk: src.risk,
            setting: setting_name(&src.change),
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
    let (files, steps) = persistence(root, &mut items);
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

fn setting_name(c: &Change) -> String {
    match c {
        Change::Sysctl { key, .. } => format!("sysctl:{key}"),
        Change::SysfsAttribute { path, .. } => format!("sysfs:{path}"),
        Change::UdevRule {
            subsystem,
            matches,
            attribute,
            ..
        } => {
            let m: Vec<String> = matches.iter().map(|(k, v)| format!("{k}=={v}")).collect();
            format!("udev:{subsystem}:{}:{attribute}", m.join(","))
        }
        Change::MountOption { mount_point, .. } => format!("fstab:{mount_point}"),
        Change::SmbConf {
            section, parameter, ..
        } => format!("smb.conf:[{section}]:{parameter}"),
        Change::Ethtool {
            interface, setting, ..
        } => format!("ethtool:{interface}:{setting}"),
        Change::AdviceOnly { action } => format!("advice: {action}"),
    }
}

/// `/proc/sys` path of a key (`net.ipv4.conf.eth0/100.rp_filter` keeps its dot).
pub fn sysctl_path(key: &str) -> String {
    let p: String = key
        .chars()
        .map(|c| match c {
            '.' => '/',
            '/' => '.',
            c => c,
        })
        .collect();
    format!("proc/sys/{p}")
}

fn read_text(root: &Root, rel: &str) -> Result<Option<String>, String> {
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
    match item.change.clone() {
        Change::Sysctl { key, value } => {
            let path = sysctl_path(&key);
            let current = read_text(root, &path)?
                .ok_or_else(|| format!("'{key}' does not exist on this kernel"))?;
            let choices = if key == "net.ipv4.tcp_congestion_control" {
                read_text(
                    root,
                    &sysctl_path("net.ipv4.tcp_available_congestion_control"),
                )?
                .map(|t| t.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            } else {
                None
            };
            let new = validate::check(&item.setting, &key, &value, &current, choices.as_deref())
                .map_err(|e| e.to_string())?;
            set_old_new(item, &current, &new)?;
            item.network = key.starts_with("net.");
            // Setting a byte limit zeroes the ratio; journal the ratio so that
            // rollback can bring it back (the kernel refuses dirty_bytes = 0).
            if let Some(ratio) = key
                .strip_suffix("_bytes")
                .filter(|k| k.starts_with("vm.dirty"))
            {
                let rp = sysctl_path(&format!("{ratio}_ratio"));
                if root.exists(&rp) {
                    item.runtime.push((rp, None));
                }
            }
            item.runtime.push((path, Some(new.clone())));
            item.persisted_in = Some(format!("/{}", sysctl_d::OWNED_FILE));
            item.warnings.extend(sysctl_d::later_sources(root, &key));
            item.persist = Persist::Sysctl(key, new);
            Ok(())
        }
        Change::SysfsAttribute { path, value } => {
            let rel = format!("sys/{path}");
            let current = read_text(root, &rel)?
                .ok_or_else(|| format!("'/sys/{path}' does not exist on this kernel"))?;
            let (rule, name) = device_rule(&path, &value);
            let new = validate::check(&item.setting, &name, &value, &current, None)
                .map_err(|e| e.to_string())?;
            set_old_new(item, &current, &new)?;
            item.network = path.starts_with("class/net/");
            item.runtime.push((rel, Some(new)));
            match rule {
                Some(mut rule) => {
                    rule.value = item.new.clone().unwrap_or_default();
                    item.persisted_in = Some(format!("/{}", udev_rules::OWNED_FILE));
                    item.persist = Persist::Udev(rule);
                }
                None => item
                    .warnings
                    .push("runtime only: nastune does not persist this attribute".into()),
            }
            Ok(())
        }
        Change::UdevRule {
            subsystem,
            matches,
            attribute,
            value,
        } => {
            let rule = Rule {
                subsystem,
                matches,
                attribute,
                value,
            };
            if let Some(why) = rule.unsupported() {
                return Err(why);
            }
            let devices = rule.matching_devices(root)?;
            let mut olds = Vec::new();
            for dev in &devices {
                let rel = format!("{dev}/{}", rule.attribute);
                let Some(current) = read_text(root, &rel)? else {
                    item.warnings
                        .push(format!("'/{rel}' does not exist; only the rule is written"));
                    continue;
                };
                let new =
                    validate::check(&item.setting, &rule.attribute, &rule.value, &current, None)
                        .map_err(|e| e.to_string())?;
                let name = dev.rsplit('/').next().unwrap_or(dev);
                olds.push(format!("{name}: {}", selected_value(&current)));
                if selected_value(&current) != new {
                    item.runtime.push((rel, Some(new)));
                }
            }
            if devices.is_empty() {
                item.warnings
                    .push("no device matches now; the rule takes effect when one appears".into());
            }
            item.old = (!olds.is_empty()).then(|| olds.join(", "));
            item.new = Some(rule.value.clone());
            item.network = rule.subsystem == "net";
            item.persisted_in = Some(format!("/{}", udev_rules::OWNED_FILE));
            item.persist = Persist::Udev(rule);
            Ok(())
        }
        Change::AdviceOnly { .. } => Err("advice only: never applied automatically".into()),
        Change::MountOption { mount_point, .. } => {
            plan_edit(root, item)?;
            item.warnings.push(format!(
                "takes effect at the next mount of '{mount_point}'; 'mount -o remount {mount_point}' \
applies it now ('tune apply --reload' does that)"
            ));
            Ok(())
        }
        Change::SmbConf { .. } => {
            plan_edit(root, item)?;
            item.warnings.push(
                "Samba reads it at its next reload: 'smbcontrol smbd reload-config' \
('tune apply --reload' does that)"
                    .into(),
            );
            Ok(())
        }
        Change::Ethtool {
            interface,
            setting,
            value,
        } => {
            if !root.is_live() {
                return Err(
                    "ethtool settings are set on the live system only, not in a --root tree".into(),
                );
            }
            let current = netdev::get(&interface, &setting).map_err(|e| e.to_string())?;
            set_old_new(item, &current, value.trim())?;
            item.network = true;
            item.netdev
                .push((netdev_path(&interface, &setting), value.trim().to_string()));
            item.warnings.push(format!(
                "runtime only: once confirmed, keep it in the interface's configuration \
(an 'ethtool' line for '{interface}' in /etc/network/interfaces, or a systemd .link file)"
            ));
            Ok(())
        }
    }
}

/// Plans an in-place edit on its own (the edits of one file are combined in
/// [`persistence`]): old and new are the lines that change.
fn plan_edit(root: &Root, item: &mut PlanItem) -> Result<(), String> {
    let edit = Edit::of(&item.change).expect("a mount option or smb.conf change");
    let file = edit.file();
    let text = read_text(root, file)?.ok_or_else(|| format!("'/{file}' does not exist"))?;
    let new = edit.apply(&text)?;
    let (old_lines, new_lines) = changed_lines(&text, &new);
    if old_lines.is_empty() && new_lines.is_empty() {
        item.in_place = true;
        return Err("already set that way".into());
    }
    item.old = Some(or_absent(old_lines));
    item.new = Some(or_absent(new_lines));
    item.persisted_in = Some(format!("/{file}"));
    item.persist = Persist::Edit(edit);
    Ok(())
}

fn or_absent(lines: String) -> String {
    if lines.is_empty() {
        "(no line)".into()
    } else {
        lines
    }
}

/// The lines between the common head and the common tail of two texts, each
/// side joined with " / ".
fn changed_lines(a: &str, b: &str) -> (String, String) {
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let head = la.iter().zip(&lb).take_while(|(x, y)| x == y).count();
    let tail = la[head..]
        .iter()
        .rev()
        .zip(lb[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let join = |l: &[&str]| l.iter().map(|s| s.trim()).collect::<Vec<_>>().join(" / ");
    (
        join(&la[head..la.len() - tail]),
        join(&lb[head..lb.len() - tail]),
    )
}

fn set_old_new(item: &mut PlanItem, current: &str, new: &str) -> Result<(), String> {
    let old = selected_value(current);
    item.old = Some(old.clone());
    item.new = Some(new.to_string());
    if old == new {
        item.in_place = true;
        return Err(format!("already '{new}'"));
    }
    Ok(())
}

/// A block or net device attribute persists as a udev rule; the second value is
/// the attribute's name for validation (`queue/read_ahead_kb`).
fn device_rule(path: &str, value: &str) -> (Option<Rule>, String) {
    let split = |prefix: &str, subsystem: &str| {
        let rest = path.strip_prefix(prefix)?;
        let (dev, attr) = rest.split_once('/')?;
        Some(Rule {
            subsystem: subsystem.into(),
            matches: vec![("KERNEL".into(), dev.into())],
            attribute: attr.into(),
            value: value.into(),
        })
    };
    match split("block/", "block").or_else(|| split("class/net/", "net")) {
        Some(rule) if rule.unsupported().is_none() => {
            let name = rule.attribute.clone();
            (Some(rule), name)
        }
        _ => (None, path.rsplit('/').next().unwrap_or(path).to_string()),
    }
}

/// Builds the owned files (non-network content first, then network content,
/// which waits for `tune confirm`) and the ordered steps.
fn persistence(root: &Root, items: &mut [PlanItem]) -> (Vec<FilePlan>, Vec<Step>) {
    let mut files = Vec::new();
    let mut file_steps: [Vec<Step>; 2] = [Vec::new(), Vec::new()];
    for sysctl in [true, false] {
        let path = if sysctl {
            sysctl_d::OWNED_FILE
        } else {
            udev_rules::OWNED_FILE
        };
        let belongs = |i: &PlanItem| {
            i.status == Status::Apply
                && match &i.persist {
                    Persist::Sysctl(..) => sysctl,
                    Persist::Udev(_) => !sysctl,
                    Persist::None | Persist::Edit(_) => false,
                }
        };
        if !items.iter().any(belongs) {
            continue;
        }
        let existing = match read_text(root, path) {
            Ok(e) => e,
            Err(e) => {
                skip_all(items, &belongs, &e);
                continue;
            }
        };
        let mut content = existing.clone();
        for network in [false, true] {
            let group: Vec<&PlanItem> = items
                .iter()
                .filter(|i| belongs(i) && i.network == network)
                .collect();
            if group.is_empty() {
                continue;
            }
            let rendered = if sysctl {
                let set: Vec<(String, String)> = group
                    .iter()
                    .filter_map(|i| match &i.persist {
                        Persist::Sysctl(k, v) => Some((k.clone(), v.clone())),
                        _ => None,
                    })
                    .collect();
                sysctl_d::render(content.as_deref(), &set).map_err(|e| e.to_string())
            } else {
                let rules: Vec<Rule> = group
                    .iter()
                    .filter_map(|i| match &i.persist {
                        Persist::Udev(r) => Some(r.clone()),
                        _ => None,
                    })
                    .collect();
                udev_rules::render(content.as_deref(), &rules).map_err(|e| e.to_string())
            };
            let text = match rendered {
                Ok(t) => t,
                Err(e) => {
                    skip_all(items, &belongs, &e);
                    break;
                }
            };
            files.push(FilePlan {
                path: format!("/{path}"),
                existed: existing.is_some(),
                network,
                deferred: network,
                content: text.clone(),
            });
            file_steps[network as usize].push(Step {
                action: Action::File {
                    path: path.to_string(),
                    content: text.clone().into_bytes(),
                },
                setting: format!("file:/{path}"),
                rule_id: None,
                network,
                deferred: network,
            });
            content = Some(text);
        }
    }
    let runtime = |network: bool| {
        items
            .iter()
            .filter(move |i| i.status == Status::Apply && i.network == network)
            .flat_map(|i| {
                i.runtime.iter().map(|(path, value)| Step {
                    action: Action::Runtime {
                        path: path.clone(),
                        value: value.clone(),
                    },
                    setting: if value.is_some() {
                        i.setting.clone()
                    } else {
                        format!("companion:{path}")
                    },
                    rule_id: i.rule_id.clone(),
                    network,
                    deferred: false,
                })
            })
            .collect::<Vec<_>>()
    };
    let netdev_steps = items
        .iter()
        .filter(|i| i.status == Status::Apply)
        .flat_map(|i| {
            i.netdev.iter().map(|(path, value)| Step {
                action: Action::Netdev {
                    path: path.clone(),
                    value: value.clone(),
                },
                setting: i.setting.clone(),
                rule_id: i.rule_id.clone(),
                network: true,
                deferred: false,
            })
        })
        .collect::<Vec<_>>();
    let (local, network) = (runtime(false), runtime(true));
    let mut steps = local;
    steps.append(&mut file_steps[0]);
    steps.extend(edits(root, items, &mut files));
    steps.extend(network);
    steps.extend(netdev_steps);
    steps.append(&mut file_steps[1]);
    (files, steps)
}

/// One whole-file write per edited file, its edits applied in plan order; an edit
/// that fails on top of the earlier ones skips its item, a file the validator
/// (findmnt, testparm) likes less than before skips every item on it.
fn edits(root: &Root, items: &mut [PlanItem], files: &mut Vec<FilePlan>) -> Vec<Step> {
    let mut steps = Vec::new();
    for file in Edit::FILES {
        let on_file = |i: &PlanItem| {
            i.status == Status::Apply && matches!(&i.persist, Persist::Edit(e) if e.file() == file)
        };
        let Ok(Some(original)) = read_text(root, file) else {
            continue;
        };
        let mut content = original.clone();
        for i in items.iter_mut().filter(|i| on_file(i)) {
            let Persist::Edit(edit) = &i.persist else {
                continue;
            };
            match edit.apply(&content) {
                Ok(t) => content = t,
                Err(e) => {
                    i.status = Status::Skip;
                    i.reason = Some(e);
                }
            }
        }
        if content == original {
            continue;
        }
        if let Some(why) = super::edit_file::validate(file, &original, &content) {
            skip_all(items, &on_file, &why);
            continue;
        }
        files.push(FilePlan {
            path: format!("/{file}"),
            existed: true,
            network: false,
            deferred: false,
            content: content.clone(),
        });
        steps.push(Step {
            action: Action::File {
                path: file.to_string(),
                content: content.into_bytes(),
            },
            setting: format!("file:/{file}"),
            rule_id: None,
            network: false,
            deferred: false,
        });
    }
    steps
}

fn skip_all(items: &mut [PlanItem], belongs: &dyn Fn(&PlanItem) -> bool, reason: &str) {
    for i in items.iter_mut() {
        if belongs(i) {
            i.status = Status::Skip;
            i.reason = Some(reason.to_string());
        }
    }
}

impl crate::store::Document for Plan {
    const KIND: crate::store::DocKind = crate::store::DocKind::TunePlan;
    const VERSION: u32 = SCHEMA_VERSION;
}

#[cfg(test)]
mod tests {
    use super::*;

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
