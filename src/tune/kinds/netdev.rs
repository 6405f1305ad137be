//! A network device setting (ring size, offload feature, mtu, txqueuelen) set
//! through ethtool ioctls on the live system, behind the dead-man timer; not
//! persisted by nastune.

use super::ChangeKind;
use crate::advise::Change;
use crate::root::Root;
use crate::tune::action::netdev_path;
use crate::tune::export::Tuned;
use crate::tune::netdev;
use crate::tune::plan::PlanItem;
use crate::tune::udev_rules::Rule;

#[derive(Clone, Copy)]
pub struct Netdev<'a> {
    pub interface: &'a str,
    pub setting: &'a str,
    pub value: &'a str,
}

/// `--set ethtool:IFACE:SETTING=VALUE` (also the root qdisc: SETTING `qdisc`).
pub fn parse_set(rest: &str, value: String) -> Option<Change> {
    match rest.split_once(':') {
        Some((interface, setting)) if !interface.is_empty() && !setting.is_empty() => {
            Some(Change::Ethtool {
                interface: interface.to_string(),
                setting: setting.to_string(),
                value,
            })
        }
        _ => None,
    }
}

/// Canonical name of a device setting.
pub(super) fn setting_name(interface: &str, setting: &str) -> String {
    format!("ethtool:{interface}:{setting}")
}

/// As a person would type it.
pub(super) fn describe(interface: &str, setting: &str, value: &str) -> String {
    format!("ethtool {interface}: {setting} {value}")
}

/// How to keep an ethtool setting once confirmed: nastune does not persist it.
fn ethtool_persistence(interface: &str) -> String {
    format!(
        "runtime only: once confirmed, keep it in the interface's configuration \
(an 'ethtool' line for '{interface}' in /etc/network/interfaces, or a systemd .link file)"
    )
}

/// Plans a device setting read and written through [`netdev`]: live only.
/// `persistence` is the warning that says how to keep it across a reboot.
pub(super) fn plan_live(
    root: &Root,
    item: &mut PlanItem,
    interface: &str,
    setting: &str,
    value: &str,
    persistence: String,
) -> Result<(), String> {
    if !root.is_live() {
        return Err(
            "ethtool settings are set on the live system only, not in a --root tree".into(),
        );
    }
    let current = netdev::get(interface, setting).map_err(|e| e.to_string())?;
    item.set_old_new(&current, value.trim())?;
    item.network = true;
    item.netdev
        .push((netdev_path(interface, setting), value.trim().to_string()));
    item.warnings.push(persistence);
    Ok(())
}

/// Fields an export writes; all three are names.
pub(super) fn export_fields<'a>(
    interface: &'a str,
    setting: &'a str,
    value: &'a str,
) -> Vec<(&'static str, &'a str, bool)> {
    vec![
        ("interface", interface, true),
        ("setting", setting, true),
        ("value", value, true),
    ]
}

impl ChangeKind for Netdev<'_> {
    fn setting(&self) -> String {
        setting_name(self.interface, self.setting)
    }

    fn describe(&self) -> String {
        describe(self.interface, self.setting, self.value)
    }

    fn plan(&self, root: &Root, item: &mut PlanItem) -> Result<(), String> {
        plan_live(
            root,
            item,
            self.interface,
            self.setting,
            self.value,
            ethtool_persistence(self.interface),
        )
    }

    fn export_fields(&self) -> Vec<(&'static str, &str, bool)> {
        export_fields(self.interface, self.setting, self.value)
    }

    /// mtu and txqueuelen are net device attributes udev can set.
    fn udev_line(&self) -> Option<String> {
        let attribute = match self.setting {
            "mtu" => "mtu",
            "txqueuelen" => "tx_queue_len",
            _ => return None,
        };
        let rule = Rule {
            subsystem: "net".into(),
            matches: vec![("KERNEL".into(), self.interface.to_string())],
            attribute: attribute.into(),
            value: self.value.to_string(),
        };
        Some(rule.line())
    }

    fn tuned(&self, profile: &mut Tuned) -> bool {
        let s = profile.net.entry(self.interface.to_string()).or_default();
        let (setting, value) = (self.setting, self.value);
        match setting {
            "rx" | "tx" => s.ring.push(format!("{setting} {value}")),
            "mtu" => s.mtu = Some(value.to_string()),
            "txqueuelen" => s.txqueuelen = Some(value.to_string()),
            feature => s.features.push(format!("{feature} {value}")),
        }
        true
    }
}
