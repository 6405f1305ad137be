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

/// The device-mapper name of `dev` (`dm/name`), as /dev/mapper shows it.
pub fn mapper_name(root: &Root, dev: &str) -> Option<String> {
    root.read_optional(&format!("sys/class/block/{dev}/dm/name"))
        .ok()
        .flatten()
        .filter(|n| !n.is_empty())
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

/// Whether two mappings over one device are known to hold different sectors
/// of it, from their uuids alone (their tables are not read: a dm-crypt table
/// holds its key). LVM gives each physical extent to one logical volume, so two
/// volumes of one volume group ("LVM-" and the group's 32-character uuid)
/// never share sectors, and a snapshot's or thin volume's writes land in its
/// own extents; kpartx's mappings of one map ("partN-" and the map's uuid) are
/// its partitions. Anything else may overlap.
pub fn apart(a: &Holder, b: &Holder) -> bool {
    let (Holder::Dm { uuid: ua, .. }, Holder::Dm { uuid: ub, .. }) = (a, b) else {
        return false;
    };
    if ua == ub {
        return false;
    }
    let vg = |u: &str| {
        u.strip_prefix("LVM-")
            .and_then(|rest| rest.get(..32))
            .filter(|_| u.len() >= 4 + 64)
            .map(str::to_string)
    };
    if let (Some(x), Some(y)) = (vg(ua), vg(ub)) {
        return x == y;
    }
    // "part2-mpath-3600a098…": the number, then the whole map's uuid.
    let map = |u: &str| {
        let rest = u.strip_prefix("part")?;
        let (n, map) = rest.split_once('-')?;
        (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && !map.is_empty())
            .then(|| map.to_string())
    };
    matches!((map(ua), map(ub)), (Some(x), Some(y)) if x == y)
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

    #[test]
    fn volumes_of_one_group_and_partitions_of_one_map_are_apart() {
        let vg = "Xb1Hk0a2MqzLs3Jd4Nf5Gh6Pq7Rs8Tu9";
        let other_vg = "Zz1Hk0a2MqzLs3Jd4Nf5Gh6Pq7Rs8Tu9";
        let lv1 = "Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8Ii9Jj0Kk";
        let lv2 = "Ll1Mm2Nn3Oo4Pp5Qq6Rr7Ss8Tt9Uu0Vv";
        let h = |uuid: String| dm("dm-9", "x", &uuid);
        assert!(apart(
            &h(format!("LVM-{vg}{lv1}")),
            &h(format!("LVM-{vg}{lv2}"))
        ));
        // A snapshot's copy-on-write layer is a volume of the group too.
        assert!(apart(
            &h(format!("LVM-{vg}{lv1}")),
            &h(format!("LVM-{vg}{lv2}-cow"))
        ));
        assert!(!apart(
            &h(format!("LVM-{vg}{lv1}")),
            &h(format!("LVM-{other_vg}{lv2}"))
        ));
        assert!(!apart(
            &h(format!("LVM-{vg}{lv1}")),
            &h(format!("LVM-{vg}{lv1}"))
        ));
        // A short uuid says no group.
        assert!(!apart(&h(format!("LVM-{vg}")), &h(format!("LVM-{vg}x"))));
        assert!(apart(
            &h("part1-mpath-3600a098".into()),
            &h("part2-mpath-3600a098".into())
        ));
        assert!(!apart(
            &h("part1-mpath-3600a098".into()),
            &h("part2-mpath-3600a099".into())
        ));
        assert!(!apart(
            &h("partx-mpath-a".into()),
            &h("party-mpath-a".into())
        ));
        // Hand-made mappings and dm-crypt may overlap anything.
        assert!(!apart(&h(String::new()), &h(String::new())));
        assert!(!apart(
            &h("CRYPT-LUKS2-a-x".into()),
            &h(format!("LVM-{vg}{lv1}"))
        ));
        let md = Holder::Md {
            dev: "md0".into(),
            level: "raid1".into(),
        };
        assert!(!apart(&md, &h(format!("LVM-{vg}{lv1}"))));
    }
}
