//! A mount option in /etc/fstab: an in-place edit of the entry, taking effect
//! at the next mount (or `tune apply --reload`, which remounts).

use super::{ChangeKind, plan_edit};
use crate::advise::{Change, Risk};
use crate::root::Root;
use crate::tune::edit_file::FSTAB;
use crate::tune::edit_fstab;
use crate::tune::plan::PlanItem;
use crate::tune::reload::Step;

pub struct MountOption<'a> {
    pub mount_point: &'a str,
    pub add: &'a [String],
    pub remove: &'a [String],
}

/// `--set fstab:MOUNTPOINT=OPTIONS`: options to add, `-option` to remove.
pub fn parse_set(mount_point: &str, value: String) -> Option<Change> {
    if !mount_point.starts_with('/') {
        return None;
    }
    let (mut add, mut remove) = (Vec::new(), Vec::new());
    for o in value.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        match o.strip_prefix('-') {
            Some(r) => remove.push(r.to_string()),
            None => add.push(o.to_string()),
        }
    }
    if add.is_empty() && remove.is_empty() {
        return None;
    }
    Some(Change::MountOption {
        mount_point: mount_point.to_string(),
        add,
        remove,
    })
}

impl ChangeKind for MountOption<'_> {
    fn setting(&self) -> String {
        format!("fstab:{}", self.mount_point)
    }

    fn describe(&self) -> String {
        // Say only the half that applies: most fixes only add or only remove.
        let mut parts = Vec::new();
        if !self.add.is_empty() {
            parts.push(format!("add '{}'", self.add.join(",")));
        }
        if !self.remove.is_empty() {
            parts.push(format!("remove '{}'", self.remove.join(",")));
        }
        format!("fstab {}: {}", self.mount_point, parts.join(" "))
    }

    fn manual_risk(&self) -> Risk {
        Risk::NeedsRestart
    }

    fn plan(&self, root: &Root, item: &mut PlanItem) -> Result<(), String> {
        plan_edit(root, item, self)?;
        let mount_point = self.mount_point;
        item.warnings.push(format!(
            "takes effect at the next mount of '{mount_point}'; 'mount -o remount {mount_point}' \
applies it now ('tune apply --reload' does that)"
        ));
        Ok(())
    }

    fn edited_file(&self) -> Option<&'static str> {
        Some(FSTAB)
    }

    fn edit(&self, text: &str) -> Result<String, String> {
        edit_fstab::set_options(text, self.mount_point, self.add, self.remove)
            .map_err(|e| e.to_string())
    }

    fn reload(&self) -> Option<Step> {
        Some(Step::Remount(self.mount_point.to_string()))
    }

    fn export_fields(&self) -> Vec<(&'static str, &str, bool)> {
        let mut out = vec![("mount point", self.mount_point, false)];
        out.extend(
            self.add
                .iter()
                .chain(self.remove)
                .map(|o| ("mount option", &**o, false)),
        );
        out
    }

    // No Ansible task: ansible.posix.mount needs the source and type of the
    // entry, which a change does not carry, so mount options stay in the comment.
}
