//! A sysctl: runtime value under /proc/sys, persisted in nastune's sysctl.d file.

use std::fmt::Write;

use super::ChangeKind;
use crate::advise::Change;
use crate::probe::kernel_config;
use crate::root::Root;
use crate::tune::export::{SYSCTL_FILE, Tuned, yaml_str};
use crate::tune::plan::{Persist, PlanItem, read_text};
use crate::tune::{sysctl_d, validate};

pub struct Sysctl<'a> {
    pub key: &'a str,
    pub value: &'a str,
}

/// `--set sysctl:KEY=VALUE`.
pub fn parse_set(key: &str, value: String) -> Option<Change> {
    (!key.is_empty()).then(|| Change::Sysctl {
        key: key.to_string(),
        value,
    })
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

impl ChangeKind for Sysctl<'_> {
    fn setting(&self) -> String {
        format!("sysctl:{}", self.key)
    }

    fn describe(&self) -> String {
        format!("sysctl -w {}='{}'", self.key, self.value)
    }

    fn plan(&self, root: &Root, item: &mut PlanItem) -> Result<(), String> {
        let key = self.key;
        let path = sysctl_path(key);
        let current = read_text(root, &path)?
            .ok_or_else(|| format!("'{key}' does not exist on this kernel"))?;
        let cc = key == "net.ipv4.tcp_congestion_control";
        // The kernel's build says which qdiscs and congestion controls exist at all.
        let config = (cc || key == "net.core.default_qdisc")
            .then(|| kernel_config::read_running(root))
            .flatten();
        if let Some(config) = &config {
            validate::check_in_kernel(&item.setting, key, self.value, config)
                .map_err(|e| e.to_string())?;
        }
        let choices = if cc {
            read_text(
                root,
                &sysctl_path("net.ipv4.tcp_available_congestion_control"),
            )?
            .map(|t| {
                let mut v: Vec<String> = t.split_whitespace().map(str::to_string).collect();
                // Only loaded ones are listed; a module loads when the setting names it.
                if config
                    .as_ref()
                    .is_some_and(|c| validate::loadable(key, self.value, c))
                {
                    v.push(self.value.trim().to_string());
                }
                v
            })
        } else {
            None
        };
        let new = validate::check(&item.setting, key, self.value, &current, choices.as_deref())
            .map_err(|e| e.to_string())?;
        item.set_old_new(&current, &new)?;
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
        item.warnings.extend(sysctl_d::later_sources(root, key));
        item.persist = Persist::Sysctl(key.to_string(), new);
        Ok(())
    }

    fn lowers_security(&self, root: &Root) -> Option<String> {
        let old = read_text(root, &sysctl_path(self.key)).ok()??;
        crate::tune::security::sysctl_trade(self.key, &old, self.value)
    }

    fn as_applied(&self, new: &str) -> Option<Change> {
        Some(Change::Sysctl {
            key: self.key.to_string(),
            value: new.to_string(),
        })
    }

    fn export_fields(&self) -> Vec<(&'static str, &str, bool)> {
        vec![("key", self.key, true), ("value", self.value, false)]
    }

    fn sysctl_line(&self) -> Option<String> {
        Some(format!("{} = {}", self.key, self.value))
    }

    fn tuned(&self, profile: &mut Tuned) -> bool {
        profile.sysctl.push(format!("{}={}", self.key, self.value));
        true
    }

    fn ansible(&self, name: &str, tasks: &mut String) -> bool {
        let _ = write!(
            tasks,
            "\n- name: {name}\n  ansible.posix.sysctl:\n    name: {}\n    value: {}\n    \
             sysctl_file: /{SYSCTL_FILE}\n    state: present\n    reload: true\n",
            yaml_str(self.key),
            yaml_str(self.value)
        );
        true
    }
}
