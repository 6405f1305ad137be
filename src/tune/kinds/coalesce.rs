//! Interrupt coalescing of a network device (`ethtool:IFACE:rx-usecs=N`,
//! rx-frames, tx-usecs, tx-frames, adaptive-rx, adaptive-tx): read and set
//! with ETHTOOL_GCOALESCE/SCOALESCE on the live system, old value journaled
//! first, behind the dead-man timer like every network device setting. A
//! driver without coalescing (veth, lo, many SoC NICs) is refused as
//! unsupported, with EOPNOTSUPP named.

use super::ChangeKind;
use super::netdev::{Netdev, plan_live};
use crate::probe::ethtool::COALESCE_SETTINGS;
use crate::root::Root;
use crate::tune::export::Tuned;
use crate::tune::plan::PlanItem;

/// A device setting like the others, with its own persistence, export and trial.
pub struct Coalesce<'a>(pub Netdev<'a>);

/// Whether an ethtool setting name is a coalescing one.
pub fn is_coalesce(setting: &str) -> bool {
    COALESCE_SETTINGS.contains(&setting)
}

impl ChangeKind for Coalesce<'_> {
    fn setting(&self) -> String {
        self.0.setting()
    }

    fn describe(&self) -> String {
        self.0.describe()
    }

    fn plan(&self, root: &Root, item: &mut PlanItem) -> Result<(), String> {
        let Netdev {
            interface,
            setting,
            value,
        } = self.0;
        let keep = format!(
            "runtime only: once confirmed, keep it in the interface's configuration \
(a post-up 'ethtool -C {interface} {setting} {value}' in /etc/network/interfaces, or a systemd .link file)"
        );
        plan_live(root, item, interface, setting, value, keep)
    }

    fn export_fields(&self) -> Vec<(&'static str, &str, bool)> {
        self.0.export_fields()
    }

    /// TuneD's net plugin takes `ethtool -C` pairs in `coalesce=`.
    fn tuned(&self, profile: &mut Tuned) -> bool {
        let Netdev {
            interface,
            setting,
            value,
        } = self.0;
        let section = profile.net.entry(interface.to_string()).or_default();
        section.coalesce.push(format!("{setting} {value}"));
        true
    }
}
