//! The root qdisc of a network interface (`Change::Ethtool` with setting
//! `qdisc`): set through rtnetlink on the live system, behind the dead-man
//! timer, like the other device settings it shares its `--set` syntax with.
//! ethtool cannot set a qdisc, so what people see and what persists it are `tc`
//! and `net.core.default_qdisc`.

use super::ChangeKind;
use super::netdev::{export_fields, plan_live, setting_name};
use crate::probe::kernel_config;
use crate::root::Root;
use crate::tune::export::Tuned;
use crate::tune::netdev;
use crate::tune::plan::PlanItem;
use crate::tune::sysctl_d;
use crate::tune::validate;

/// The device setting name that makes an `Ethtool` change a qdisc change.
pub const SETTING: &str = "qdisc";

pub struct Qdisc<'a> {
    pub interface: &'a str,
    /// The qdisc kind: `fq_codel`, `cake`, …
    pub value: &'a str,
}

/// Refuses to replace a root qdisc that rollback could not put back as it is.
/// The journal keeps only the kind, and a kind alone restores only what the
/// kernel attached itself (handle `0:`, default parameters); a qdisc set up
/// with tc (a tbf shaping the link, a cake with a bandwidth) would come back
/// without its parameters, or not at all.
fn restorable(interface: &str, kind: &str, handle: &str) -> Result<(), String> {
    if handle == "0:" {
        return Ok(());
    }
    Err(format!(
        "the root qdisc of '{interface}' is '{kind}' (handle {handle}), set up with tc and its own \
parameters, which rollback could not put back; change it with tc instead, or delete it first \
('tc qdisc del dev {interface} root') if the kernel's default may replace it"
    ))
}

/// The command that replaces the root qdisc now.
fn command(interface: &str, kind: &str) -> String {
    format!("tc qdisc replace dev {interface} root {kind}")
}

/// How to keep it across a reboot: the kernel default for new qdiscs, or the
/// command run when the interface comes up.
fn persistence(interface: &str, kind: &str) -> String {
    format!(
        "runtime only: once confirmed, persist it with 'net.core.default_qdisc = {kind}' in \
/{} (qdiscs created at boot get it; also '--set sysctl:net.core.default_qdisc={kind}'), \
or run '{}' from the interface's post-up hook; ethtool cannot set a qdisc",
        sysctl_d::OWNED_FILE,
        command(interface, kind)
    )
}

impl ChangeKind for Qdisc<'_> {
    fn setting(&self) -> String {
        setting_name(self.interface, SETTING)
    }

    /// The command that does it now.
    fn describe(&self) -> String {
        command(self.interface, self.value)
    }

    fn plan(&self, root: &Root, item: &mut PlanItem) -> Result<(), String> {
        if root.is_live() {
            let (kind, handle) = netdev::root_qdisc(self.interface).map_err(|e| e.to_string())?;
            restorable(self.interface, &kind, &handle)?;
        }
        if let Some(config) = kernel_config::read_running(root) {
            validate::check_in_kernel(&self.setting(), SETTING, self.value, &config)
                .map_err(|e| e.to_string())?;
        }
        let persistence = persistence(self.interface, self.value);
        plan_live(root, item, self.interface, SETTING, self.value, persistence)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_root_the_kernel_attached_is_replaced() {
        assert_eq!(restorable("eth0", "fq_codel", "0:"), Ok(()));
        assert_eq!(restorable("eth0", "noqueue", "0:"), Ok(()));
        let e = restorable("veth1", "tbf", "8001:").unwrap_err();
        assert!(
            e.starts_with("the root qdisc of 'veth1' is 'tbf' (handle 8001:)"),
            "{e}"
        );
        assert!(e.contains("'tc qdisc del dev veth1 root'"), "{e}");
        assert!(restorable("eth0", "cake", "1:").is_err());
    }

    /// The plan once said to persist a qdisc as an ethtool line, which ethtool
    /// cannot set.
    #[test]
    fn qdisc_persists_through_tc_or_default_qdisc_not_ethtool() {
        let p = persistence("eth0", "fq_codel");
        assert!(
            p.contains("'net.core.default_qdisc = fq_codel' in /etc/sysctl.d/99-zz-nastune.conf"),
            "{p}"
        );
        assert!(
            p.contains("'tc qdisc replace dev eth0 root fq_codel'"),
            "{p}"
        );
        assert!(!p.contains("'ethtool' line"), "{p}");
        assert!(!p.contains("/etc/network/interfaces"), "{p}");
    }
}
