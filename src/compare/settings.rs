//! Settings that differ between two probe snapshots: sysctl values, block
//! queue settings, mount options and NIC settings. Counters are not settings.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, Default, Serialize)]
pub struct SettingsDiff {
    /// Why no diff could be made (a run without a snapshot).
    pub unavailable: Option<String>,
    pub changed: Vec<Change>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub setting: String,
    pub a: Option<String>,
    pub b: Option<String>,
}

pub fn diff(a: Option<&Value>, b: Option<&Value>) -> SettingsDiff {
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

/// `setting name -> value` for the parts of a snapshot that are settings.
pub fn flatten(snap: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    if let Some(values) = snap["sysctl"]["data"]["values"].as_object() {
        for (k, v) in values {
            out.insert(format!("sysctl {k}"), text(v));
        }
    }
    for dev in snap["storage"]["data"]["devices"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let name = dev["name"].as_str().unwrap_or("?");
        for (k, v) in dev["queue"].as_object().into_iter().flatten() {
            out.insert(format!("queue {name} {k}"), text(v));
        }
    }
    for m in snap["filesystems"]["data"]["mounts"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let mp = m["mount_point"].as_str().unwrap_or("?");
        for k in ["mount_options", "super_options"] {
            if let Some(opts) = m[k].as_array() {
                let opts: Vec<String> = opts.iter().map(text).collect();
                out.insert(format!("mount {mp} {k}"), opts.join(","));
            }
        }
    }
    for nic in snap["network"]["data"]["interfaces"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let name = nic["name"].as_str().unwrap_or("?");
        for k in [
            "speed_mbit_per_sec",
            "duplex",
            "mtu_bytes",
            "tx_queue_len_packets",
            "qdisc",
        ] {
            out.insert(format!("nic {name} {k}"), text(&nic[k]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn snap(readahead: u64, swappiness: &str) -> Value {
        json!({
            "sysctl": {"data": {"values": {"vm.swappiness": swappiness, "vm.dirty_ratio": "20"}}},
            "storage": {"data": {"devices": [{"name": "sda", "queue": {"read_ahead_bytes": readahead, "scheduler": "mq-deadline"}}]}},
            "filesystems": {"data": {"mounts": [{"mount_point": "/srv", "mount_options": ["rw", "noatime"]}]}},
            "network": {"data": {"interfaces": [{"name": "eth0", "mtu_bytes": 1500, "counters": {"rx_bytes": 5}}]}}
        })
    }

    #[test]
    fn only_changed_settings_are_listed() {
        let d = diff(Some(&snap(131072, "60")), Some(&snap(4096, "10")));
        let names: Vec<&str> = d.changed.iter().map(|c| c.setting.as_str()).collect();
        assert_eq!(
            names,
            ["queue sda read_ahead_bytes", "sysctl vm.swappiness"]
        );
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
