//! The md arrays and device-mapper mappings stacked on a block device (its
//! sysfs `holders`) and under one (its `slaves`), named as their user knows
//! them: the mapper name under /dev/mapper and what made it (cryptsetup, LVM,
//! multipath), or the array and its level. A kernel name alone ("dm-2")
//! leaves the user to find which of a NAS's mappings to close first.

use crate::probe::dm::kind_from_uuid;
use crate::root::Root;

/// A device built on others, as sysfs shows it.
#[derive(Debug, Clone, PartialEq)]
pub enum Holder {
    /// An md array: its `md/level` ("raid1"; empty while the array is not running).
    Md { dev: String, level: String },
    /// A device-mapper device: its `dm/name` and `dm/uuid` (either may be empty).
    Dm {
        dev: String,
        name: String,
        uuid: String,
    },
    /// Anything else (bcache, drbd): only the kernel name.
    Other { dev: String },
}

/// The devices built on `dev` (its `holders` directory).
pub fn holders(root: &Root, dev: &str) -> Vec<String> {
    root.read_dir_optional(&format!("sys/class/block/{dev}/holders"))
        .unwrap_or_default()
}

/// The devices `dev` is built on (its `slaves` directory): what a write to an
/// array or mapping reaches.
pub fn slaves(root: &Root, dev: &str) -> Vec<String> {
    root.read_dir_optional(&format!("sys/class/block/{dev}/slaves"))
        .unwrap_or_default()
}

/// What kind of device `dev` is, from sysfs.
pub fn read_holder(root: &Root, dev: &str) -> Holder {
    let attr = |rel: &str| {
        root.read_optional(&format!("sys/class/block/{dev}/{rel}"))
            .ok()
            .flatten()
    };
    let dev = dev.to_string();
    if let Some(name) = attr("dm/name") {
        let uuid = attr("dm/uuid").unwrap_or_default();
        return Holder::Dm { dev, name, uuid };
    }
    if root.exists(&format!("sys/class/block/{dev}/md")) {
        let level = attr("md/level").unwrap_or_default();
        return Holder::Md { dev, level };
    }
    Holder::Other { dev }
}

/// "md array 'md0' (raid1)", "dm-crypt mapping 'cryptdata' (dm-2, luks2)",
/// "LVM volume 'vg-data' (dm-4)", "device-mapper mapping 'lin' (dm-0)".
pub fn describe(h: &Holder) -> String {
    match h {
        Holder::Md { dev, level } if level.is_empty() => {
            format!("md array '{dev}' (not running)")
        }
        Holder::Md { dev, level } => format!("md array '{dev}' ({level})"),
        Holder::Dm { dev, name, .. } if name.is_empty() => {
            format!("device-mapper device '{dev}'")
        }
        Holder::Dm { dev, name, uuid } => match kind_from_uuid(uuid) {
            (Some(t), Some(f)) if t == "crypt" => {
                format!("dm-crypt mapping '{name}' ({dev}, {f})")
            }
            (Some(t), _) if t == "verity" || t == "integrity" => {
                format!("dm-{t} mapping '{name}' ({dev})")
            }
            (_, Some(f)) if f == "lvm" => format!("LVM volume '{name}' ({dev})"),
            (_, Some(f)) if f == "multipath" => format!("multipath map '{name}' ({dev})"),
            (_, Some(f)) if f == "multipath-partition" => {
                format!("multipath partition '{name}' ({dev})")
            }
            _ => format!("device-mapper mapping '{name}' ({dev})"),
        },
        Holder::Other { dev } => format!("'{dev}'"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dm(dev: &str, name: &str, uuid: &str) -> Holder {
        Holder::Dm {
            dev: dev.into(),
            name: name.into(),
            uuid: uuid.into(),
        }
    }

    #[test]
    fn holders_are_named_as_their_user_knows_them() {
        let cases = [
            (
                dm("dm-2", "cryptdata", "CRYPT-LUKS2-0123abcd-cryptdata"),
                "dm-crypt mapping 'cryptdata' (dm-2, luks2)",
            ),
            (
                dm("dm-3", "lc-mdcrypt", "CRYPT-PLAIN-lc-mdcrypt"),
                "dm-crypt mapping 'lc-mdcrypt' (dm-3, plain)",
            ),
            (
                dm("dm-4", "vg-data", "LVM-abcdefabcdef"),
                "LVM volume 'vg-data' (dm-4)",
            ),
            (
                dm("dm-5", "root_verity", "CRYPT-VERITY-01-root_verity"),
                "dm-verity mapping 'root_verity' (dm-5)",
            ),
            (
                dm("dm-6", "mpatha", "mpath-3600a098"),
                "multipath map 'mpatha' (dm-6)",
            ),
            (dm("dm-0", "lin", ""), "device-mapper mapping 'lin' (dm-0)"),
            (dm("dm-7", "", ""), "device-mapper device 'dm-7'"),
            (
                Holder::Md {
                    dev: "md0".into(),
                    level: "raid1".into(),
                },
                "md array 'md0' (raid1)",
            ),
            (
                Holder::Md {
                    dev: "md127".into(),
                    level: String::new(),
                },
                "md array 'md127' (not running)",
            ),
            (
                Holder::Other {
                    dev: "bcache0".into(),
                },
                "'bcache0'",
            ),
        ];
        for (h, want) in cases {
            assert_eq!(describe(&h), want, "{h:?}");
        }
    }

    #[test]
    fn kinds_read_from_a_fixture_sys_tree() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let put = |rel: &str, text: &str| {
            let p = d.join("sys/class/block").join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put("dm-1/dm/name", "cryptdata\n");
        put("dm-1/dm/uuid", "CRYPT-LUKS2-0123-cryptdata\n");
        put("md0/md/level", "raid5\n");
        put("md127/md/array_state", "inactive\n");
        put("md127/md/level", "\n");
        std::fs::create_dir_all(d.join("sys/class/block/sdb/holders/md0")).unwrap();
        std::fs::create_dir_all(d.join("sys/class/block/md0/slaves/sdb")).unwrap();
        std::fs::create_dir_all(d.join("sys/class/block/bcache0")).unwrap();
        let root = Root::tree(d).unwrap();
        assert_eq!(
            read_holder(&root, "dm-1"),
            dm("dm-1", "cryptdata", "CRYPT-LUKS2-0123-cryptdata")
        );
        assert_eq!(
            describe(&read_holder(&root, "md0")),
            "md array 'md0' (raid5)"
        );
        assert_eq!(
            describe(&read_holder(&root, "md127")),
            "md array 'md127' (not running)"
        );
        assert_eq!(describe(&read_holder(&root, "bcache0")), "'bcache0'");
        assert_eq!(holders(&root, "sdb"), vec!["md0".to_string()]);
        assert_eq!(slaves(&root, "md0"), vec!["sdb".to_string()]);
        assert!(slaves(&root, "sdb").is_empty());
    }
}
