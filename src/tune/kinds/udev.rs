//! A udev rule that sets an attribute on matching devices at every add/change:
//! set now on the devices that match, persisted in nastune's rules file.

use super::ChangeKind;
use crate::root::Root;
use crate::tune::export::Tuned;
use crate::tune::plan::{Persist, PlanItem, read_text};
use crate::tune::udev_rules::{self, Rule};
use crate::tune::{action::selected_value, validate};

pub struct Udev<'a> {
    pub subsystem: &'a str,
    pub matches: &'a [(String, String)],
    pub attribute: &'a str,
    pub value: &'a str,
}

impl Udev<'_> {
    fn rule(&self) -> Rule {
        Rule {
            subsystem: self.subsystem.to_string(),
            matches: self.matches.to_vec(),
            attribute: self.attribute.to_string(),
            value: self.value.to_string(),
        }
    }
}

impl ChangeKind for Udev<'_> {
    fn setting(&self) -> String {
        let m: Vec<String> = self
            .matches
            .iter()
            .map(|(k, v)| format!("{k}=={v}"))
            .collect();
        format!("udev:{}:{}:{}", self.subsystem, m.join(","), self.attribute)
    }

    fn describe(&self) -> String {
        let m: Vec<String> = self
            .matches
            .iter()
            .map(|(k, v)| format!("{k}==\"{v}\""))
            .collect();
        format!(
            "udev: SUBSYSTEM==\"{}\", {}, ATTR{{{}}}=\"{}\"",
            self.subsystem,
            m.join(", "),
            self.attribute,
            self.value
        )
    }

    fn plan(&self, root: &Root, item: &mut PlanItem) -> Result<(), String> {
        let rule = self.rule();
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
            let new = validate::check(&item.setting, &rule.attribute, &rule.value, &current, None)
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
        item.warnings
            .extend(udev_rules::overriding_hooks(root, &rule));
        item.persist = Persist::Udev(rule);
        Ok(())
    }

    fn export_fields(&self) -> Vec<(&'static str, &str, bool)> {
        let mut out = vec![
            ("subsystem", self.subsystem, true),
            ("attribute", self.attribute, true),
            ("value", self.value, false),
        ];
        for (k, v) in self.matches {
            out.extend([("match key", &**k, true), ("match value", &**v, false)]);
        }
        out
    }

    fn udev_line(&self) -> Option<String> {
        Some(self.rule().line())
    }

    fn tuned(&self, profile: &mut Tuned) -> bool {
        // Only a KERNEL match translates: TuneD picks devices by name.
        let [(key, dev)] = self.matches else {
            return false;
        };
        if key != "KERNEL" {
            return false;
        }
        let disk_option = match self.attribute {
            "queue/read_ahead_kb" => Some("readahead"),
            "queue/scheduler" => Some("elevator"),
            _ => None,
        };
        let (subsystem, attribute, value) = (self.subsystem, self.attribute, self.value);
        match (subsystem, disk_option) {
            ("block", Some(o)) => profile
                .disk
                .entry(dev.clone())
                .or_default()
                .push((o.into(), value.to_string())),
            _ => profile
                .sysfs
                .push(format!("/sys/class/{subsystem}/{dev}/{attribute}={value}")),
        }
        true
    }
}
