//! Settings that differ between two probe snapshots: sysctl values, block
//! queue settings, mount options and NIC settings. Counters are not settings.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::probe::Snapshot;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SettingsDiff {
    /// Why no diff could be made (a run without a snapshot).
    pub unavailable: Option<String>,
    pub changed: Vec<Change>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub setting: String,
    pub a: Option<String>,
    pub b: Option<String>,
}

pub fn diff(a: Option<&Snapshot>, b: Option<&Snapshot>) -> SettingsDiff {
    let (Some(a), Some(b)) = (a, b) else {
        return SettingsDiff {
            unavailable: Some(
                "a run has no probe snapshot (runs from before snapshots were stored with benches)"
                    .into(),
            ),
            changed: Vec::new(),
        };
    };
    let (fa, fb) = (flatten(a), flatten(b));
    let mut changed = Vec::new();
    for key in fa.keys().chain(fb.keys().filter(|k| !fa.contains_key(*k))) {
        let (va, vb) = (fa.get(key), fb.get(key));
        if va != vb {
            changed.push(Change {
                setting: key.clone(),
                a: va.cloned(),
                b: vb.cloned(),
            });
        }
    }
    changed.sort_by(|x, y| x.setting.cmp(&y.setting));
    SettingsDiff {
        unavailable: None,
        changed,
    }
}

/// Every field of a settings struct by its serialized name (set fields only),
/// so a setting added to the probe is compared without a change here.
fn fields<T: serde::Serialize>(v: &T) -> Vec<(String, String)> {
    let Ok(Value::Object(map)) = serde_json::to_value(v) else {
        return Vec::new();
    };
    map.into_iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k, v.as_str().map_or_else(|| v.to_string(), str::to_string)))
        .collect()
}

/// `setting name -> value` for the parts of a snapshot that are settings.
pub fn flatten(snap: &Snapshot) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Some(sysctl) = snap.sysctl.data() {
        for (k, v) in &sysctl.values {
            out.insert(format!("sysctl {k}"), v.clone());
        }
    }
    for dev in snap.storage.data().into_iter().flat_map(|s| &s.devices) {
        for (k, v) in dev.queue.as_ref().map(fields).unwrap_or_default() {
            out.insert(format!("queue {} {k}", dev.name), v);
        }
    }
    for m in snap.filesystems.data().into_iter().flat_map(|f| &f.mounts) {
        let mp = &m.mount_point;
        out.insert(
            format!("mount {mp} mount_options"),
            m.mount_options.join(","),
        );
        out.insert(
            format!("mount {mp} super_options"),
            m.super_options.join(","),
        );
    }
    for nic in snap.network.data().into_iter().flat_map(|n| &n.interfaces) {
        let name = &nic.name;
        let opt = |v: Option<String>| v.unwrap_or_else(|| "null".into());
        for (k, v) in [
            (
                "speed_mbit_per_sec",
                opt(nic.speed_mbit_per_sec.map(|x| x.to_string())),
            ),
            ("duplex", opt(nic.duplex.clone())),
            ("mtu_bytes", opt(nic.mtu_bytes.map(|x| x.to_string()))),
            (
                "tx_queue_len_packets",
                opt(nic.tx_queue_len_packets.map(|x| x.to_string())),
            ),
            ("qdisc", opt(nic.qdisc.clone())),
        ] {
            out.insert(format!("nic {name} {k}"), v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::test_support::snapshot_of;

    fn snap(readahead: u64, swappiness: &str) -> Snapshot {
        let mut s = snapshot_of("rpi2-luks");
        if let crate::probe::Outcome::Ok { data } = &mut s.sysctl {
            data.values
                .insert("vm.swappiness".into(), swappiness.into());
        }
        if let crate::probe::Outcome::Ok { data } = &mut s.storage
            && let Some(q) = data.devices.iter_mut().find_map(|d| d.queue.as_mut())
        {
            q.read_ahead_bytes = Some(readahead);
        }
        s
    }

    #[test]
    fn only_changed_settings_are_listed() {
        let d = diff(Some(&snap(131072, "60")), Some(&snap(4096, "10")));
        let names: Vec<&str> = d.changed.iter().map(|c| c.setting.as_str()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names[0].starts_with("queue ") && names[0].ends_with(" read_ahead_bytes"));
        assert_eq!(names[1], "sysctl vm.swappiness");
        assert_eq!(d.changed[1].a.as_deref(), Some("60"));
        assert_eq!(d.changed[1].b.as_deref(), Some("10"));
        assert!(
            diff(Some(&snap(1, "1")), Some(&snap(1, "1")))
                .changed
                .is_empty()
        );
    }

    #[test]
    fn a_missing_snapshot_is_said() {
        assert!(diff(None, Some(&snap(1, "1"))).unavailable.is_some());
    }
}
