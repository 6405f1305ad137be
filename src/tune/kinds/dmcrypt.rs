//! A dm-crypt flag of an open mapping (`dmcrypt:NAME:no_read_workqueue=on`):
//! set on the live mapping through the device-mapper ioctls
//! ([`crate::tune::dmcrypt`]), journaled like a device setting (old value
//! read first), and persisted as the matching option of the mapping's
//! /etc/crypttab entry, edited in place.

use super::ChangeKind;
use crate::advise::Change;
use crate::root::Root;
use crate::tune::dmcrypt::{self, CONTROL, DmError};
use crate::tune::edit_file::{CRYPTTAB, Edit};
use crate::tune::plan::{Persist, PlanItem, read_text};

pub struct DmCryptFlag<'a> {
    pub name: &'a str,
    pub flag: &'a str,
    pub on: bool,
}

/// `--set dmcrypt:NAME:FLAG=on|off` (FLAG with `_` or `-`).
pub fn parse_set(rest: &str, value: String) -> Option<Change> {
    let (name, flag) = rest.split_once(':')?;
    let flag = flag.replace('-', "_");
    let on = match value.as_str() {
        "on" => true,
        "off" => false,
        _ => return None,
    };
    (!name.is_empty() && !name.contains('/') && dmcrypt::FLAGS.contains(&flag.as_str())).then(
        || Change::DmCryptFlag {
            name: name.to_string(),
            flag,
            on,
        },
    )
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

/// The journal path of a dm-crypt flag (a device setting, like `netdev/…`).
pub fn journal_path(name: &str, flag: &str) -> String {
    format!("dmcrypt/{name}/{flag}")
}

impl ChangeKind for DmCryptFlag<'_> {
    fn setting(&self) -> String {
        format!("dmcrypt:{}:{}", self.name, self.flag)
    }

    fn describe(&self) -> String {
        format!("dm-crypt {}: {} {}", self.name, self.flag, on_off(self.on))
    }

    fn plan(&self, root: &Root, item: &mut PlanItem) -> Result<(), String> {
        if !root.exists(CONTROL) {
            return Err(DmError::NoDeviceMapper.to_string());
        }
        if !root.is_live() {
            return Err(
                "dm-crypt flags are set on the live system only, not in a --root tree".into(),
            );
        }
        let current = dmcrypt::get(self.name, self.flag).map_err(|e| e.to_string())?;
        let new = on_off(self.on);
        item.set_old_new(&current, new)?;
        item.netdev
            .push((journal_path(self.name, self.flag), new.to_string()));
        let option = dmcrypt::crypttab_option(self.flag);
        let keep = format!(
            "runtime only: to keep it, put '{option}' in the options of '{}' in /etc/crypttab",
            self.name
        );
        match read_text(root, CRYPTTAB)? {
            None => item.warnings.push(keep),
            Some(text) => match self.edit(&text) {
                Ok(edited) if edited == text => {}
                Ok(_) => {
                    item.persisted_in = Some(format!("/{CRYPTTAB}"));
                    item.persist = Edit::of(&item.change).map_or(Persist::None, Persist::Edit);
                }
                Err(e) => item.warnings.push(format!("{keep} ({e})")),
            },
        }
        Ok(())
    }

    fn edited_file(&self) -> Option<&'static str> {
        Some(CRYPTTAB)
    }

    fn edit(&self, text: &str) -> Result<String, String> {
        dmcrypt::edit_crypttab(
            text,
            self.name,
            &dmcrypt::crypttab_option(self.flag),
            self.on,
        )
    }

    fn export_fields(&self) -> Vec<(&'static str, &str, bool)> {
        vec![
            ("mapping", self.name, true),
            ("flag", self.flag, true),
            ("value", on_off(self.on), true),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::plan::{build, manual, parse_set as plan_set};

    #[test]
    fn set_syntax_takes_both_spellings_and_only_on_off() {
        let c = plan_set("dmcrypt:data:no-read-workqueue=on").unwrap();
        assert_eq!(
            c,
            Change::DmCryptFlag {
                name: "data".into(),
                flag: "no_read_workqueue".into(),
                on: true,
            }
        );
        assert_eq!(
            super::super::kind(&c).setting(),
            "dmcrypt:data:no_read_workqueue"
        );
        assert!(plan_set("dmcrypt:data:no_write_workqueue=off").is_ok());
        assert!(plan_set("dmcrypt:data:no_read_workqueue=yes").is_err());
        assert!(plan_set("dmcrypt:data:allow_discards=on").is_err());
        assert!(plan_set("dmcrypt:no_read_workqueue=on").is_err());
    }

    /// A tree (like this machine) has no /dev/mapper/control: the change is
    /// skipped with the reason, and nothing is planned.
    #[test]
    fn without_device_mapper_the_plan_says_so() {
        let d = crate::tune::test_tree::tree(&[("etc/crypttab", "data UUID=1 none luks\n")]);
        let root = Root::tree(d.path()).unwrap();
        let plan = build(
            &root,
            vec![manual(
                plan_set("dmcrypt:data:no_read_workqueue=on").unwrap(),
            )],
        );
        assert_eq!(
            plan.items[0].reason.as_deref(),
            Some(
                "'/dev/mapper/control' is absent: this kernel has no device-mapper \
                 (CONFIG_BLK_DEV_DM), so there is no dm-crypt mapping to change"
            )
        );
        assert!(plan.steps.is_empty());
    }
}
