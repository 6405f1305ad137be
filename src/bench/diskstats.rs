//! What the block devices really moved during a measurement: /proc/diskstats
//! before and after, for the device under the target and every layer below it
//! (partition -> disk, dm-crypt -> its slaves, md -> its members). Page-cache
//! hits, RAID parity and read-ahead show up as the difference between what the
//! bench asked for and what each layer did. The file itself is parsed in
//! probe::diskstats; this walks the device stack and diffs the counters.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::probe::diskstats::DevCounters;
use crate::root::{ReadError, Root};

/// /proc/diskstats counts sectors of 512 bytes whatever the device's block size.
const SECTOR_BYTES: u64 = 512;

/// One device in the stack under the target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layer {
    pub name: String,
    /// 0 for the device the target lives on, 1 for what is below it, and so on.
    pub depth: u32,
    /// "partition", "disk", "dm", "md", "loop" …: what the name says it is.
    pub kind: String,
}

/// The block device with these numbers, by name (`/sys/dev/block/M:m` links to it).
pub fn device_name(root: &Root, major: u32, minor: u32) -> Result<String, ReadError> {
    root.read_link_name(&format!("sys/dev/block/{major}:{minor}"))
}

fn kind_of(root: &Root, name: &str) -> String {
    if root.exists(&format!("sys/class/block/{name}/partition")) {
        "partition"
    } else if name.starts_with("dm-") {
        "dm"
    } else if name.starts_with("md") {
        "md"
    } else if name.starts_with("loop") {
        "loop"
    } else {
        "disk"
    }
    .to_string()
}

/// The device and everything below it: a partition's disk, and each device's
/// slaves, recursively. Bounded depth guards against a looping fixture tree.
pub fn stack(root: &Root, top: &str) -> Vec<Layer> {
    let mut out: Vec<Layer> = Vec::new();
    let mut todo = vec![(top.to_string(), 0u32)];
    while let Some((name, depth)) = todo.pop() {
        if depth > 8 || out.iter().any(|l| l.name == name) {
            continue;
        }
        let kind = kind_of(root, &name);
        if kind == "partition" {
            // /sys/class/block/sda1 -> ../../devices/.../block/sda/sda1
            if let Ok(target) = root.read_link(&format!("sys/class/block/{name}"))
                && let Some(parent) = target.parent().and_then(|p| p.file_name())
            {
                todo.push((parent.to_string_lossy().into_owned(), depth + 1));
            }
        }
        for slave in root
            .read_dir_optional(&format!("sys/class/block/{name}/slaves"))
            .unwrap_or_default()
        {
            todo.push((slave, depth + 1));
        }
        out.push(Layer { name, depth, kind });
    }
    out.sort_by(|a, b| a.depth.cmp(&b.depth).then(a.name.cmp(&b.name)));
    out
}

/// What one layer did during the measurement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerIo {
    pub name: String,
    pub depth: u32,
    pub kind: String,
    pub reads: u64,
    pub read_bytes: u64,
    pub writes: u64,
    pub write_bytes: u64,
    pub flushes: u64,
}

/// Counter differences per layer. Counters are unsigned long in the kernel, so a
/// 32-bit box wraps them; a wrap is undone modulo 2^32 when `after < before`.
pub fn layer_io(
    layers: &[Layer],
    before: &BTreeMap<String, DevCounters>,
    after: &BTreeMap<String, DevCounters>,
) -> Vec<LayerIo> {
    let d = |a: u64, b: u64| {
        if a >= b {
            a - b
        } else {
            (a + (1u64 << 32)).saturating_sub(b)
        }
    };
    layers
        .iter()
        .filter_map(|l| {
            let (b, a) = (before.get(&l.name)?, after.get(&l.name)?);
            Some(LayerIo {
                name: l.name.clone(),
                depth: l.depth,
                kind: l.kind.clone(),
                reads: d(a.reads, b.reads),
                read_bytes: d(a.read_sectors, b.read_sectors) * SECTOR_BYTES,
                writes: d(a.writes, b.writes),
                write_bytes: d(a.write_sectors, b.write_sectors) * SECTOR_BYTES,
                flushes: d(a.flushes, b.flushes),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_in_bytes_and_32_bit_wrap() {
        let layers = vec![Layer {
            name: "sda".into(),
            depth: 0,
            kind: "disk".into(),
        }];
        let mut before = BTreeMap::new();
        before.insert(
            "sda".into(),
            DevCounters {
                reads: u32::MAX as u64 - 1,
                read_sectors: 100,
                ..Default::default()
            },
        );
        let mut after = BTreeMap::new();
        after.insert(
            "sda".into(),
            DevCounters {
                reads: 3,
                read_sectors: 108,
                ..Default::default()
            },
        );
        let io = layer_io(&layers, &before, &after);
        assert_eq!(io[0].reads, 5);
        assert_eq!(io[0].read_bytes, 8 * 512);
    }

    #[test]
    fn walks_partition_dm_and_md_stacks() {
        // dm-0 (crypt) on md0 on sda1 + sdb1: the rk3399 shape, smaller.
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mk = |p: &str| std::fs::create_dir_all(d.join(p)).unwrap();
        mk("sys/devices/virtual/block/dm-0/slaves");
        mk("sys/devices/virtual/block/md0/slaves");
        for disk in ["sda", "sdb"] {
            mk(&format!("sys/devices/pci/{disk}/block/{disk}/{disk}1"));
            std::fs::write(
                d.join(format!(
                    "sys/devices/pci/{disk}/block/{disk}/{disk}1/partition"
                )),
                "1",
            )
            .unwrap();
        }
        mk("sys/class/block");
        let link = |target: &str, at: &str| std::os::unix::fs::symlink(target, d.join(at)).unwrap();
        link("../../devices/virtual/block/dm-0", "sys/class/block/dm-0");
        link("../../devices/virtual/block/md0", "sys/class/block/md0");
        for disk in ["sda", "sdb"] {
            link(
                &format!("../../devices/pci/{disk}/block/{disk}"),
                &format!("sys/class/block/{disk}"),
            );
            link(
                &format!("../../devices/pci/{disk}/block/{disk}/{disk}1"),
                &format!("sys/class/block/{disk}1"),
            );
            link(
                &format!("../../{disk}1"),
                &format!("sys/devices/virtual/block/md0/slaves/{disk}1"),
            );
        }
        link("../../md0", "sys/devices/virtual/block/dm-0/slaves/md0");
        let root = Root::tree(d).unwrap();
        let names: Vec<(String, u32, String)> = stack(&root, "dm-0")
            .into_iter()
            .map(|l| (l.name, l.depth, l.kind))
            .collect();
        assert_eq!(
            names,
            vec![
                ("dm-0".into(), 0, "dm".into()),
                ("md0".into(), 1, "md".into()),
                ("sda1".into(), 2, "partition".into()),
                ("sdb1".into(), 2, "partition".into()),
                ("sda".into(), 3, "disk".into()),
                ("sdb".into(), 3, "disk".into()),
            ]
        );
    }
}
