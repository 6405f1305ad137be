//! The storage stack as one picture: block devices, md arrays, dm devices, and
//! the chains that connect a filesystem to the physical disks under it
//! (`md0 → dm-0 → sda1 → sda`).

use serde::{Deserialize, Serialize};

use super::block::{self, BlockDevice};
use super::dm::{self, DmDevice};
use super::filesystems::Filesystem;
use super::md::{self, MdArray};
use super::{Outcome, ProbeError};
use crate::root::Root;

/// Stacks deeper than this are a loop in a malformed tree, not a real box.
const MAX_DEPTH: usize = 16;
const MAX_CHAINS: usize = 1024;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Storage {
    /// Disks, each followed by its partitions.
    pub devices: Vec<BlockDevice>,
    /// Disks of size 0 (unbound loop devices, empty readers), listed by name only.
    pub empty_devices: Vec<String>,
    pub md_arrays: Vec<MdArray>,
    /// Why /proc/mdstat could not be used (arrays then come from sysfs alone).
    pub mdstat_problem: Option<String>,
    pub dm_devices: Vec<DmDevice>,
    /// Every path from a top device down to a physical disk.
    pub chains: Vec<Chain>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Chain {
    /// Kernel names, top first: `["md0", "dm-0", "sda1", "sda"]`.
    pub devices: Vec<String>,
    /// Where the top device is mounted.
    pub mount_points: Vec<String>,
    pub fs_type: Option<String>,
    /// The top device is active swap.
    pub swap: bool,
}

/// Reads the stack; `mounts` and `swaps` (device paths) come from the other
/// sections so nothing is read twice.
pub fn read_storage(
    root: &Root,
    mounts: Option<&[Filesystem]>,
    swaps: &[String],
) -> Outcome<Storage> {
    if !root.exists("sys/block") {
        return Outcome::Unsupported {
            reason: "no /sys/block (sysfs not mounted?)".into(),
        };
    }
    let scan = match block::read_block_devices(root) {
        Ok(s) => s,
        Err(e) => return Outcome::from(Err::<Storage, _>(ProbeError::from(e))),
    };
    let disk_names: Vec<String> = scan
        .devices
        .iter()
        .filter(|d| d.kind == "disk")
        .map(|d| d.name.clone())
        .collect();
    let (md_arrays, mdstat_problem) = md::read_md_arrays(root, &disk_names);
    let dm_devices = dm::read_dm_devices(root, &disk_names);
    // Swap on dm-crypt is listed as /dev/mapper/<name>; chains use kernel names.
    let swaps: Vec<String> = swaps
        .iter()
        .map(|s| match s.strip_prefix("/dev/mapper/") {
            Some(n) => dm_devices
                .iter()
                .find(|d| d.name.as_deref() == Some(n))
                .map_or_else(|| s.clone(), |d| d.device.clone()),
            None => s.clone(),
        })
        .collect();
    let chains = build_chains(&scan.devices, mounts.unwrap_or(&[]), &swaps);
    Outcome::Ok {
        data: Storage {
            devices: scan.devices,
            empty_devices: scan.empty,
            md_arrays,
            mdstat_problem,
            dm_devices,
            chains,
        },
    }
}

/// Walks down from every device nothing is built on, through slaves and from
/// partitions to their disk.
pub fn build_chains(
    devices: &[BlockDevice],
    mounts: &[Filesystem],
    swaps: &[String],
) -> Vec<Chain> {
    let find = |name: &str| devices.iter().find(|d| d.name == name);
    let below = |d: &BlockDevice| -> Vec<String> {
        let mut v = d.slaves.clone();
        if let Some(p) = &d.partition {
            v.push(p.disk.clone());
        }
        v
    };
    let has_partitions = |name: &str| {
        devices
            .iter()
            .any(|d| d.partition.as_ref().is_some_and(|p| p.disk == name))
    };
    let mut chains = Vec::new();
    for top in devices {
        if !top.holders.is_empty() || has_partitions(&top.name) {
            continue;
        }
        let mount_points: Vec<String> = mounts
            .iter()
            .filter(|m| m.device.as_deref() == Some(top.name.as_str()))
            .map(|m| m.mount_point.clone())
            .collect();
        let fs_type = mounts
            .iter()
            .find(|m| m.device.as_deref() == Some(top.name.as_str()))
            .map(|m| m.fs_type.clone());
        let swap = swaps
            .iter()
            .any(|s| s.rsplit('/').next() == Some(top.name.as_str()));
        let mut stack = vec![vec![top.name.clone()]];
        while let Some(path) = stack.pop() {
            if chains.len() >= MAX_CHAINS {
                return chains;
            }
            let last = path.last().and_then(|n| find(n));
            let next: Vec<String> = last
                .map(below)
                .unwrap_or_default()
                .into_iter()
                .filter(|n| !path.contains(n))
                .collect();
            if next.is_empty() || path.len() >= MAX_DEPTH {
                chains.push(Chain {
                    devices: path,
                    mount_points: mount_points.clone(),
                    fs_type: fs_type.clone(),
                    swap,
                });
                continue;
            }
            // Reverse so that the first slave's chain comes out first.
            for n in next.into_iter().rev() {
                let mut p = path.clone();
                p.push(n);
                stack.push(p);
            }
        }
    }
    chains
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(name: &str, disk: Option<&str>, slaves: &[&str], holders: &[&str]) -> BlockDevice {
        BlockDevice {
            name: name.into(),
            kind: if disk.is_some() { "partition" } else { "disk" }.into(),
            major_minor: None,
            transport: "sata".into(),
            driver: None,
            vendor: None,
            model: None,
            serial: None,
            usb_power_control: None,
            sysfs_path: None,
            size_bytes: 1,
            removable: None,
            read_only: None,
            slaves: slaves.iter().map(|s| s.to_string()).collect(),
            holders: holders.iter().map(|s| s.to_string()).collect(),
            queue: None,
            partition: disk.map(|d| block::Partition {
                disk: d.into(),
                number: None,
                start_sector: 2048,
                start_bytes: 2048 * 512,
                aligned_to_physical_sector: Some(true),
                aligned_to_1mib: true,
            }),
            problems: vec![],
        }
    }

    #[test]
    fn raid_over_crypt_over_partitions() {
        let devices = vec![
            dev("sda", None, &[], &[]),
            dev("sda1", Some("sda"), &[], &["dm-0"]),
            dev("sdb", None, &[], &[]),
            dev("sdb1", Some("sdb"), &[], &["dm-1"]),
            dev("sdb2", Some("sdb"), &[], &[]),
            dev("dm-0", None, &["sda1"], &["md0"]),
            dev("dm-1", None, &["sdb1"], &["md0"]),
            dev("md0", None, &["dm-0", "dm-1"], &[]),
        ];
        let chains = build_chains(&devices, &[], &["/dev/sdb2".to_string()]);
        let paths: Vec<Vec<&str>> = chains
            .iter()
            .map(|c| c.devices.iter().map(String::as_str).collect())
            .collect();
        assert_eq!(
            paths,
            vec![
                vec!["sdb2", "sdb"],
                vec!["md0", "dm-0", "sda1", "sda"],
                vec!["md0", "dm-1", "sdb1", "sdb"],
            ]
        );
        assert!(chains[0].swap);
        assert!(!chains[1].swap);
    }

    #[test]
    fn swap_on_a_mapper_name_marks_the_dm_chain() {
        let dir = tempfile::tempdir().unwrap();
        let dm = dir.path().join("sys/devices/virtual/block/dm-0");
        std::fs::create_dir_all(dm.join("dm")).unwrap();
        std::fs::write(dm.join("size"), "2048\n").unwrap();
        std::fs::write(dm.join("dm/name"), "cryptswap\n").unwrap();
        std::fs::write(dm.join("dm/uuid"), "CRYPT-PLAIN-cryptswap\n").unwrap();
        std::fs::create_dir_all(dir.path().join("sys/block")).unwrap();
        std::os::unix::fs::symlink(
            "../devices/virtual/block/dm-0",
            dir.path().join("sys/block/dm-0"),
        )
        .unwrap();
        let root = Root::tree(dir.path()).unwrap();
        let s = read_storage(&root, None, &["/dev/mapper/cryptswap".to_string()]);
        let s = s.data().unwrap();
        assert_eq!(s.chains.len(), 1);
        assert!(s.chains[0].swap);
        assert_eq!(s.dm_devices[0].format.as_deref(), Some("plain"));
        assert!(s.dm_devices[0].crypt_unavailable.is_some());
        assert_eq!(s.devices[0].transport, "dm");
    }

    #[test]
    fn cycles_and_depth_are_bounded() {
        let devices = vec![dev("a", None, &["b"], &[]), dev("b", None, &["a"], &["a"])];
        let chains = build_chains(&devices, &[], &[]);
        assert_eq!(chains.len(), 1);
        assert_eq!(chains[0].devices, vec!["a", "b"]);
    }
}
