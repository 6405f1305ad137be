//! The root qdisc of a network interface (`Change::Ethtool` with setting
//! `qdisc`): set through rtnetlink on the live system, behind the dead-man
//! timer, like the other device settings it shares its `--set` syntax with.

use super::ChangeKind;
use super::netdev::{describe, export_fields, plan_live, setting_name};
use crate::root::Root;
use crate::tune::export::Tuned;
use crate::tune::plan::PlanItem;

/// The device setting name that makes an `Ethtool` change a qdisc change.
pub const SETTING: &str = "qdisc";

pub struct Qdisc<'a> {
    pub interface: &'a str,
    /// The qdisc kind: `fq_codel`, `cake`, …
    pub value: &'a str,
}

impl ChangeKind for Qdisc<'_> {
    fn setting(&self) -> String {
        setting_name(self.interface, SETTING)
    }

    fn describe(&self) -> String {
        describe(self.interface, SETTING, self.value)
    }

    fn plan(&self, root: &Root, item: &mut PlanItem) -> Result<(), String> {
        plan_live(root, item, self.interface, SETTING, self.value)
    }

    fn untryable(&self) -> Option<&'static str> {
        Some("an ethtool")
    }

    fn export_fields(&self) -> Vec<(&'static str, &str, bool)> {
        export_fields(self.interface, SETTING, self.value)
    }

    // No udev line: a qdisc is no device attribute.

    /// In the interface's net section, as the export wrote it before the kinds
    /// were split (TuneD's `features` option).
    fn tuned(&self, profile: &mut Tuned) -> bool {
        let s = profile.net.entry(self.interface.to_string()).or_default();
        s.features.push(format!("{SETTING} {}", self.value));
        true
    }
}
