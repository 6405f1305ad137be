//! [`Change`]'s decoder, written by hand (issue 22: binary size). The derived
//! `#[serde(tag = "kind")]` one buffers the object into serde's private `Content`,
//! then decodes each of the ten variants from that buffer as an array or a map:
//! 24 KiB. Here each field is decoded once as it comes, in whatever order, into a
//! slot shared by the kinds that have it; the tag picks the variant at the end.
//! Accepts what the derived decoder accepted, with one difference nastune never
//! writes: a field of another kind, which is ignored, must still have its type.

use serde::de::{Error, IgnoredAny, MapAccess, Unexpected};

use super::Change;
use crate::json::{need, put};

const VARIANTS: &[&str] = &[
    "sysctl",
    "sysfs_attribute",
    "udev_rule",
    "mount_option",
    "smb_conf",
    "ethtool",
    "irq_affinity",
    "queue_cpus",
    "dm_crypt_flag",
    "advice_only",
];

/// The string fields of every kind (but `value`, which `smb_conf` may leave out).
const STRINGS: [&str; 17] = [
    "kind",
    "key",
    "path",
    "subsystem",
    "attribute",
    "mount_point",
    "section",
    "parameter",
    "interface",
    "setting",
    "irq",
    "cpus",
    "queue",
    "mask",
    "name",
    "flag",
    "action",
];

crate::json::map_decoder!(Change, "internally tagged enum Change", visit);

fn visit<'de, A: MapAccess<'de>>(mut map: A) -> Result<Change, A::Error> {
    let mut strings: [Option<String>; STRINGS.len()] = Default::default();
    // Outer None: absent; inner None: null (smb_conf's "remove the parameter").
    let mut value: Option<Option<String>> = None;
    let (mut matches, mut add, mut remove, mut on) = (None, None, None, None);
    while let Some(key) = map.next_key::<String>()? {
        match key.as_str() {
            "value" => put(&mut value, map.next_value()?, "value")?,
            "matches" => put(&mut matches, map.next_value()?, "matches")?,
            "add" => put(&mut add, map.next_value()?, "add")?,
            "remove" => put(&mut remove, map.next_value()?, "remove")?,
            "on" => put(&mut on, map.next_value()?, "on")?,
            other => match STRINGS.iter().position(|s| *s == other) {
                Some(i) => put(&mut strings[i], map.next_value()?, STRINGS[i])?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            },
        }
    }
    let mut s = |field: &'static str| -> Result<String, A::Error> {
        let i = STRINGS.iter().position(|s| *s == field).unwrap_or(0);
        need(strings[i].take(), field)
    };
    // Every kind but smb_conf needs a string here.
    let required = |value: Option<Option<String>>| match value {
        Some(Some(v)) => Ok(v),
        Some(None) => Err(A::Error::invalid_type(Unexpected::Unit, &"a string")),
        None => Err(A::Error::missing_field("value")),
    };
    let kind = s("kind")?;
    Ok(match kind.as_str() {
        "sysctl" => Change::Sysctl {
            key: s("key")?,
            value: required(value)?,
        },
        "sysfs_attribute" => Change::SysfsAttribute {
            path: s("path")?,
            value: required(value)?,
        },
        "udev_rule" => Change::UdevRule {
            subsystem: s("subsystem")?,
            matches: need(matches, "matches")?,
            attribute: s("attribute")?,
            value: required(value)?,
        },
        "mount_option" => Change::MountOption {
            mount_point: s("mount_point")?,
            add: need(add, "add")?,
            remove: need(remove, "remove")?,
        },
        "smb_conf" => Change::SmbConf {
            section: s("section")?,
            parameter: s("parameter")?,
            value: value.flatten(),
        },
        "ethtool" => Change::Ethtool {
            interface: s("interface")?,
            setting: s("setting")?,
            value: required(value)?,
        },
        "irq_affinity" => Change::IrqAffinity {
            irq: s("irq")?,
            cpus: s("cpus")?,
        },
        "queue_cpus" => Change::QueueCpus {
            interface: s("interface")?,
            queue: s("queue")?,
            mask: s("mask")?,
        },
        "dm_crypt_flag" => Change::DmCryptFlag {
            name: s("name")?,
            flag: s("flag")?,
            on: need(on, "on")?,
        },
        "advice_only" => Change::AdviceOnly {
            action: s("action")?,
        },
        other => return Err(A::Error::unknown_variant(other, VARIANTS)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_byte_for_byte() {
        // tune::export's list holds every kind, smb_conf with and without a value.
        for change in crate::tune::export::tests::changes() {
            let json = serde_json::to_string(&change).expect("encodes");
            let back: Change = crate::json::from_str(&json).expect("decodes");
            assert_eq!(back, change, "{json}");
            assert_eq!(serde_json::to_string(&back).expect("encodes"), json);
        }
    }

    #[test]
    fn reads_keys_in_any_order_and_ignores_unknown_ones() {
        let json =
            r#"{"value": "10", "note": [1, {"x": 2}], "key": "vm.swappiness", "kind": "sysctl"}"#;
        let change: Change = crate::json::from_str(json).expect("decodes");
        assert_eq!(
            change,
            Change::Sysctl {
                key: "vm.swappiness".into(),
                value: "10".into()
            }
        );
        let absent: Change =
            crate::json::from_str(r#"{"kind": "smb_conf", "section": "g", "parameter": "p"}"#)
                .expect("decodes");
        assert!(matches!(absent, Change::SmbConf { value: None, .. }));
    }

    #[test]
    fn says_what_is_wrong() {
        let err = |json: &str| {
            crate::json::from_str::<Change>(json)
                .expect_err(json)
                .to_string()
        };
        assert_eq!(
            err(r#"{"kind": "sysctl", "key": "k"}"#),
            "missing field `value` at line 1 column 30"
        );
        assert_eq!(
            err(r#"{"kind": "sysctl", "key": "k", "value": null}"#),
            "invalid type: null, expected a string at line 1 column 45"
        );
        assert!(
            err(r#"{"kind": "reboot"}"#)
                .starts_with("unknown variant `reboot`, expected one of `sysctl`")
        );
        assert_eq!(
            err(r#"{"key": "k"}"#),
            "missing field `kind` at line 1 column 12"
        );
        assert_eq!(
            err(r#"{"kind": "sysctl", "kind": "sysctl"}"#),
            "duplicate field `kind` at line 1 column 36"
        );
        assert!(err(r#"[1, 2]"#).contains("expected internally tagged enum Change"));
    }
}
