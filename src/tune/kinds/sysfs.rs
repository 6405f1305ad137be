//! A sysfs attribute (path relative to /sys): runtime value, persisted as a
//! udev rule when it belongs to a block or network device.

use super::ChangeKind;
use crate::advise::Change;
use crate::root::Root;
use crate::tune::export::Tuned;
use crate::tune::plan::{Persist, PlanItem, read_text};
use crate::tune::udev_rules::{self, Rule};
use crate::tune::validate;

pub struct Sysfs<'a> {
    pub path: &'a str,
    pub value: &'a str,
}

/// `--set sysfs:PATH=VALUE`, PATH below /sys with or without `/sys/`.
pub fn parse_set(path: &str, value: String) -> Option<Change> {
    (!path.is_empty()).then(|| Change::SysfsAttribute {
        path: path.trim_start_matches("/sys/").to_string(),
        value,
    })
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

/// A device attribute as udev sees it, for export: (subsystem, kernel name,
/// attribute).
fn device_attribute(path: &str) -> Option<(String, String, String)> {
    let parts: Vec<&str> = path.splitn(4, '/').collect();
    match parts.as_slice() {
        ["block", dev, rest @ ..] if !rest.is_empty() => {
            Some(("block".into(), dev.to_string(), rest.join("/")))
        }
        ["class", subsystem, dev, attr] => {
            Some((subsystem.to_string(), dev.to_string(), attr.to_string()))
        }
        _ => None,
    }
}

impl ChangeKind for Sysfs<'_> {
    fn setting(&self) -> String {
        format!("sysfs:{}", self.path)
    }

    fn describe(&self) -> String {
        format!("echo '{}' > /sys/{}", self.value, self.path)
    }

    fn plan(&self, root: &Root, item: &mut PlanItem) -> Result<(), String> {
        let path = self.path;
        let rel = format!("sys/{path}");
        let current = read_text(root, &rel)?
            .ok_or_else(|| format!("'/sys/{path}' does not exist on this kernel"))?;
        let (rule, name) = device_rule(path, self.value);
        let new = validate::check(&item.setting, &name, self.value, &current, None)
            .map_err(|e| e.to_string())?;
        item.set_old_new(&current, &new)?;
        item.network = path.starts_with("class/net/");
        item.runtime.push((rel, Some(new)));
        match rule {
            Some(mut rule) => {
                rule.value = item.new.clone().unwrap_or_default();
                item.persisted_in = Some(format!("/{}", udev_rules::OWNED_FILE));
                item.warnings
                    .extend(udev_rules::overriding_hooks(root, &rule));
                item.persist = Persist::Udev(rule);
            }
            None => item
                .warnings
                .push("runtime only: nastune does not persist this attribute".into()),
        }
        Ok(())
    }

    fn as_applied(&self, new: &str) -> Option<Change> {
        Some(Change::SysfsAttribute {
            path: self.path.to_string(),
            value: new.to_string(),
        })
    }

    fn export_fields(&self) -> Vec<(&'static str, &str, bool)> {
        vec![("path", self.path, true), ("value", self.value, false)]
    }

    fn udev_line(&self) -> Option<String> {
        let (subsystem, dev, attribute) = device_attribute(self.path)?;
        let rule = Rule {
            subsystem,
            matches: vec![("KERNEL".into(), dev)],
            attribute,
            value: self.value.to_string(),
        };
        Some(rule.line())
    }

    fn tuned(&self, profile: &mut Tuned) -> bool {
        profile
            .sysfs
            .push(format!("/sys/{}={}", self.path, self.value));
        true
    }
}
