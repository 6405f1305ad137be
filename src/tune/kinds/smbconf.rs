//! An smb.conf parameter: an in-place edit of its section, read by Samba at
//! its next reload (`tune apply --reload` asks for one).

use std::fmt::Write;

use super::{ChangeKind, plan_edit};
use crate::advise::{Change, Risk};
use crate::root::Root;
use crate::tune::edit_file;
use crate::tune::edit_smbconf;
use crate::tune::export::{SMB_CONF, yaml_str};
use crate::tune::plan::{PlanItem, read_text};
use crate::tune::reload::Step;

pub struct SmbConf<'a> {
    pub section: &'a str,
    pub parameter: &'a str,
    /// `None` removes the parameter.
    pub value: Option<&'a str>,
}

/// `--set smb.conf:SECTION:PARAMETER=VALUE` (SECTION with or without brackets).
pub fn parse_set(rest: &str, value: String) -> Option<Change> {
    match rest.split_once(':') {
        Some((section, parameter)) if !section.is_empty() && !parameter.trim().is_empty() => {
            Some(Change::SmbConf {
                section: section
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_string(),
                parameter: parameter.trim().to_string(),
                value: Some(value),
            })
        }
        _ => None,
    }
}

impl ChangeKind for SmbConf<'_> {
    fn setting(&self) -> String {
        format!("smb.conf:[{}]:{}", self.section, self.parameter)
    }

    fn describe(&self) -> String {
        let (section, parameter) = (self.section, self.parameter);
        match self.value {
            Some(v) => format!("smb.conf [{section}]: {parameter} = {v}"),
            None => format!("smb.conf [{section}]: remove '{parameter}'"),
        }
    }

    fn manual_risk(&self) -> Risk {
        Risk::NeedsRestart
    }

    fn plan(&self, root: &Root, item: &mut PlanItem) -> Result<(), String> {
        plan_edit(root, item, self)?;
        item.warnings.push(
            "Samba reads it at its next reload: 'smbcontrol smbd reload-config' \
('tune apply --reload' does that)"
                .into(),
        );
        Ok(())
    }

    fn lowers_security(&self, root: &Root) -> Option<String> {
        let text = read_text(root, edit_file::SMB_CONF).ok()??;
        crate::tune::security::smb_trade(&text, self.section, self.parameter, self.value)
    }

    fn edited_file(&self) -> Option<&'static str> {
        Some(edit_file::SMB_CONF)
    }

    fn edit(&self, text: &str) -> Result<String, String> {
        edit_smbconf::set_parameter(text, self.section, self.parameter, self.value)
            .map_err(|e| e.to_string())
    }

    fn reload(&self) -> Option<Step> {
        Some(Step::Command(
            ["smbcontrol", "smbd", "reload-config"]
                .map(String::from)
                .to_vec(),
        ))
    }

    fn export_fields(&self) -> Vec<(&'static str, &str, bool)> {
        let mut out = vec![
            ("smb.conf section", self.section, false),
            ("parameter", self.parameter, false),
        ];
        out.extend(self.value.map(|v| ("smb.conf value", v, false)));
        out
    }

    fn ansible(&self, name: &str, tasks: &mut String) -> bool {
        let _ = write!(
            tasks,
            "\n- name: {name}\n  community.general.ini_file:\n    path: {SMB_CONF}\n    \
             section: {}\n    option: {}\n",
            yaml_str(self.section),
            yaml_str(self.parameter)
        );
        let _ = match self.value {
            Some(v) => writeln!(tasks, "    value: {}\n    state: present", yaml_str(v)),
            None => writeln!(tasks, "    state: absent"),
        };
        true
    }
}
