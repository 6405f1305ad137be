//! Block devices from /sys/block: disks with their queue settings and
//! partitions with their alignment, plus the holders/slaves links that stack
//! them (disk → partition → md → dm-crypt).

use serde::{Deserialize, Serialize};

use super::text::{parse_bool01, parse_bracketed_choice, parse_u64};
use crate::root::Root;

/// sysfs `size` and partition `start` are always in 512-byte units.
pub const SYSFS_SECTOR_BYTES: u64 = 512;
const MIB: u64 = 1024 * 1024;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BlockDevice {
    /// Kernel name: `sda`, `sda1`, `md0`, `dm-0`, `mmcblk0p2`.
    pub name: String,
    /// `disk` or `partition`.
    pub kind: String,
    pub major_minor: Option<String>,
    /// sata, usb, nvme, mmc, virtio, scsi, loop, md, dm, zram, virtual or unknown;
    /// a partition has its disk's.
    pub transport: String,
    /// The driver of the controller or bridge (`ahci`, `uas`, `usb-storage`, `virtio_blk`).
    pub driver: Option<String>,
    pub vendor: Option<String>,
    pub model: Option<String>,
    pub serial: Option<String>,
    /// `power/control` of the USB device a USB disk hangs off (`on` or `auto`):
    /// autosuspending a storage bridge drops disks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usb_power_control: Option<String>,
    /// Its sysfs device path (the `sys/block/NAME` link): its way to the CPU
    /// through host controller, USB ports and hubs, PCIe bridges. Absent in
    /// snapshots before 0.2 and for virtual devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sysfs_path: Option<String>,
    pub size_bytes: u64,
    /// sysfs `removable`: the SCSI RMB bit (card readers, most USB flash sticks)
    /// or removable-media drives. USB hard disks and SSDs behind bridges report 0,
    /// so it tells sticks from disks where `rotational` cannot. Disks only;
    /// absent in older snapshots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removable: Option<bool>,
    pub read_only: Option<bool>,
    /// Devices this one is built on (`/sys/block/X/slaves`).
    pub slaves: Vec<String>,
    /// Devices built on this one (`/sys/block/X/holders`).
    pub holders: Vec<String>,
    /// Queue settings; disks only (partitions share their disk's queue).
    pub queue: Option<Queue>,
    pub partition: Option<Partition>,
    /// Attributes that were present but unreadable or malformed.
    pub problems: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Queue {
    pub rotational: Option<bool>,
    pub logical_sector_bytes: Option<u64>,
    pub physical_sector_bytes: Option<u64>,
    pub minimum_io_bytes: Option<u64>,
    pub optimal_io_bytes: Option<u64>,
    pub scheduler: Option<String>,
    pub schedulers_available: Vec<String>,
    pub read_ahead_bytes: Option<u64>,
    pub nr_requests: Option<u64>,
    /// `write back` or `write through`, as the kernel sees the device.
    pub write_cache: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Partition {
    /// The disk it is on.
    pub disk: String,
    pub number: Option<u64>,
    pub start_sector: u64,
    pub start_bytes: u64,
    /// Start is a multiple of the disk's physical sector (unknown without one).
    pub aligned_to_physical_sector: Option<bool>,
    pub aligned_to_1mib: bool,
}

/// What `read_block_devices` found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BlockScan {
    pub devices: Vec<BlockDevice>,
    /// Disks of size 0 (unbound loop devices, empty card readers), left out.
    pub empty: Vec<String>,
}

/// Lists every disk in /sys/block and its partitions.
pub fn read_block_devices(root: &Root) -> Result<BlockScan, crate::root::ReadError> {
    let mut scan = BlockScan::default();
    for name in root.read_dir("sys/block")? {
        // Size first: unbound loop devices are many and say nothing. A device
        // without one vanished while we looked (loop devices come and go).
        match root.read_optional(&format!("sys/block/{name}/size")) {
            Ok(None) => continue,
            Ok(Some(size)) if size == "0" => {
                scan.empty.push(name);
                continue;
            }
            _ => {}
        }
        let disk = read_disk(root, &name);
        let partitions = read_partitions(root, &disk);
        scan.devices.push(disk);
        scan.devices.extend(partitions);
    }
    Ok(scan)
}

/// Collects a device's attribute problems instead of failing the device.
struct Attrs<'a> {
    root: &'a Root,
    dir: String,
    problems: Vec<String>,
}

impl Attrs<'_> {
    fn text(&mut self, rel: &str) -> Option<String> {
        match self.root.read_optional(&format!("{}/{rel}", self.dir)) {
            Ok(Some(v)) if !v.is_empty() => Some(v),
            Ok(_) => None,
            Err(e) => {
                self.problems.push(e.to_string());
                None
            }
        }
    }

    fn parsed<T>(
        &mut self,
        rel: &str,
        parse: impl Fn(&str, &str) -> Result<T, super::ParseError>,
    ) -> Option<T> {
        let value = self.text(rel)?;
        match parse(&format!("/{}/{rel}", self.dir), &value) {
            Ok(v) => Some(v),
            Err(e) => {
                self.problems.push(e.to_string());
                None
            }
        }
    }

    fn list(&mut self, rel: &str) -> Vec<String> {
        match self.root.read_dir_optional(&format!("{}/{rel}", self.dir)) {
            Ok(v) => v,
            Err(e) => {
                self.problems.push(e.to_string());
                Vec::new()
            }
        }
    }
}

fn read_disk(root: &Root, name: &str) -> BlockDevice {
    let mut a = Attrs {
        root,
        dir: format!("sys/block/{name}"),
        problems: Vec::new(),
    };
    // The link target tells the bus: ../devices/pci0000:00/.../ata1/host0/.../block/sda
    let device_path = match root.read_link(&a.dir) {
        Ok(p) => Some(p.to_string_lossy().into_owned()),
        Err(e) if e.is_not_found() => None,
        Err(e) => {
            a.problems.push(e.to_string());
            None
        }
    };
    let transport = transport_from_path(name, device_path.as_deref().unwrap_or(""));
    let driver = device_path
        .as_deref()
        .and_then(controller_dir)
        .and_then(|dir| root.read_link_name(&format!("sys/{dir}/driver")).ok());
    let size_bytes = sectors_to_bytes(a.parsed("size", parse_u64).unwrap_or(0));
    let serial = read_serial(&mut a, &transport, device_path.as_deref());
    let model = a.text("device/model").or_else(|| a.text("device/name"));
    let queue = read_queue(&mut a);
    let usb_power_control = if transport == "usb" {
        device_path
            .as_deref()
            .and_then(usb_device_dir)
            .and_then(|dir| {
                root.read_optional(&format!("sys/{dir}/power/control"))
                    .ok()?
            })
    } else {
        None
    };
    BlockDevice {
        name: name.to_string(),
        kind: "disk".into(),
        major_minor: a.text("dev"),
        transport: transport.clone(),
        driver,
        // Only SCSI-style devices have a vendor string there (virtio has a PCI id).
        vendor: if matches!(transport.as_str(), "sata" | "usb" | "scsi") {
            a.text("device/vendor")
        } else {
            None
        },
        model,
        serial,
        usb_power_control,
        sysfs_path: device_path.clone(),
        size_bytes,
        removable: a.parsed("removable", parse_bool01),
        read_only: a.parsed("ro", parse_bool01),
        slaves: a.list("slaves"),
        holders: a.list("holders"),
        queue: Some(queue),
        partition: None,
        problems: a.problems,
    }
}

fn read_queue(a: &mut Attrs) -> Queue {
    let (scheduler, schedulers_available) = match a.text("queue/scheduler") {
        Some(v) => parse_bracketed_choice(&v),
        None => (None, Vec::new()),
    };
    Queue {
        rotational: a.parsed("queue/rotational", parse_bool01),
        logical_sector_bytes: a.parsed("queue/logical_block_size", parse_u64),
        physical_sector_bytes: a.parsed("queue/physical_block_size", parse_u64),
        minimum_io_bytes: a.parsed("queue/minimum_io_size", parse_u64),
        optimal_io_bytes: a.parsed("queue/optimal_io_size", parse_u64),
        // `none` means the device has no I/O scheduler to choose (dm, md).
        scheduler: scheduler
            .or_else(|| (schedulers_available == ["none"]).then(|| "none".to_string())),
        schedulers_available,
        read_ahead_bytes: a
            .parsed("queue/read_ahead_kb", parse_u64)
            .map(|kb| kb.saturating_mul(1024)),
        nr_requests: a.parsed("queue/nr_requests", parse_u64),
        write_cache: a.text("queue/write_cache"),
    }
}

/// Serial numbers live in a different place for every bus.
fn read_serial(a: &mut Attrs, transport: &str, device_path: Option<&str>) -> Option<String> {
    if let Some(s) = a.text("serial").or_else(|| a.text("device/serial")) {
        return Some(s);
    }
    if transport == "usb"
        && let Some(dir) = device_path.and_then(usb_device_dir)
    {
        return a.root.read_optional(&format!("sys/{dir}/serial")).ok()?;
    }
    // SCSI and libata disks: VPD page 0x80 (unit serial number), binary.
    let bytes = a
        .root
        .read_head(&format!("{}/device/vpd_pg80", a.dir), 256)
        .ok()?;
    parse_vpd_serial(&bytes)
}

fn read_partitions(root: &Root, disk: &BlockDevice) -> Vec<BlockDevice> {
    let dir = format!("sys/block/{}", disk.name);
    let entries = match root.read_dir(&dir) {
        Ok(v) => v,
        Err(_) => return Vec::new(),
    };
    let physical = disk.queue.as_ref().and_then(|q| q.physical_sector_bytes);
    let mut out = Vec::new();
    for entry in entries {
        if !entry.starts_with(&disk.name) || !root.exists(&format!("{dir}/{entry}/partition")) {
            continue;
        }
        let mut a = Attrs {
            root,
            dir: format!("{dir}/{entry}"),
            problems: Vec::new(),
        };
        let start_sector = a.parsed("start", parse_u64).unwrap_or(0);
        let start_bytes = sectors_to_bytes(start_sector);
        out.push(BlockDevice {
            name: entry,
            kind: "partition".into(),
            major_minor: a.text("dev"),
            transport: disk.transport.clone(),
            driver: disk.driver.clone(),
            vendor: None,
            model: None,
            serial: None,
            usb_power_control: None,
            sysfs_path: None,
            size_bytes: sectors_to_bytes(a.parsed("size", parse_u64).unwrap_or(0)),
            removable: None,
            read_only: a.parsed("ro", parse_bool01),
            slaves: a.list("slaves"),
            holders: a.list("holders"),
            queue: None,
            partition: Some(Partition {
                disk: disk.name.clone(),
                number: a.parsed("partition", parse_u64),
                start_sector,
                start_bytes,
                aligned_to_physical_sector: physical.map(|p| is_aligned(start_bytes, p)),
                aligned_to_1mib: is_aligned(start_bytes, MIB),
            }),
            problems: a.problems,
        });
    }
    out
}

fn sectors_to_bytes(sectors: u64) -> u64 {
    sectors.saturating_mul(SYSFS_SECTOR_BYTES)
}

/// Whether `offset` is a multiple of `unit` (a zero unit is never aligned).
pub fn is_aligned(offset: u64, unit: u64) -> bool {
    unit != 0 && offset.is_multiple_of(unit)
}

/// The bus a disk hangs on, from its sysfs device path.
pub fn transport_from_path(name: &str, path: &str) -> String {
    let by_name = [
        ("loop", "loop"),
        ("md", "md"),
        ("dm-", "dm"),
        ("zram", "zram"),
        ("nbd", "nbd"),
        ("ram", "ram"),
    ];
    let t = if path.contains("/usb") {
        "usb"
    } else if path.contains("/ata") {
        "sata"
    } else if path.contains("nvme") {
        "nvme"
    } else if path.contains("mmc") {
        "mmc"
    } else if path.contains("virtio") {
        "virtio"
    } else if let Some((_, t)) = by_name.iter().find(|(p, _)| name.starts_with(p)) {
        t
    } else if path.contains("/host") {
        "scsi"
    } else if path.contains("/virtual/") {
        "virtual"
    } else {
        "unknown"
    };
    t.to_string()
}

/// The sysfs directory (below `sys/`) of the controller or bridge whose driver
/// says how the disk is attached: the parent of `ataN`/`hostN`/`mmc_host`/`nvme`,
/// or the `virtioN` device itself.
pub fn controller_dir(link_target: &str) -> Option<String> {
    let parts: Vec<&str> = link_target
        .split('/')
        .filter(|p| !p.is_empty() && *p != "..")
        .collect();
    let is_num = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    for (i, p) in parts.iter().enumerate() {
        if let Some(n) = p.strip_prefix("virtio")
            && is_num(n)
        {
            return Some(parts[..=i].join("/"));
        }
        let boundary = p.strip_prefix("ata").is_some_and(is_num)
            || p.strip_prefix("host").is_some_and(is_num)
            || *p == "mmc_host"
            || *p == "nvme";
        if boundary && i > 1 {
            return Some(parts[..i].join("/"));
        }
    }
    None
}

/// The USB device directory (`.../usb1/1-1/1-1.2`) above a disk's interface
/// (`1-1.2:1.0`), where the bridge's `serial` lives.
pub fn usb_device_dir(link_target: &str) -> Option<String> {
    let controller = controller_dir(link_target)?;
    let (parent, iface) = controller.rsplit_once('/')?;
    // USB interfaces are `<bus>-<port path>:<config>.<interface>`, e.g. `1-1.2:1.0`.
    let (port, _) = iface.split_once(':')?;
    let is_usb = port.contains('-')
        && port
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'-' || b == b'.');
    is_usb.then(|| parent.to_string())
}

/// Unit serial number from SCSI VPD page 0x80: 4-byte header, length at byte 3.
pub fn parse_vpd_serial(bytes: &[u8]) -> Option<String> {
    if bytes.len() < 4 || bytes[1] != 0x80 {
        return None;
    }
    let len = usize::from(bytes[3]);
    let body = bytes.get(4..4 + len).unwrap_or(&bytes[4..]);
    let text: String = body
        .iter()
        .filter(|b| b.is_ascii_graphic() || **b == b' ')
        .map(|b| char::from(*b))
        .collect();
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_from_real_sysfs_paths() {
        let cases = [
            (
                "sda",
                "../devices/platform/soc/soc:internal-regs/f1080000.pcie/pci0000:00/0000:00:01.0/0000:01:00.0/usb2/2-1/2-1:1.0/host0/target0:0:0/0:0:0:0/block/sda",
                "usb",
            ),
            (
                "sdb",
                "../devices/platform/f8000000.pcie/pci0000:00/0000:00:00.0/0000:01:00.0/ata2/host1/target1:0:0/1:0:0:0/block/sdb",
                "sata",
            ),
            (
                "nvme0n1",
                "../devices/pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme0/nvme0n1",
                "nvme",
            ),
            (
                "mmcblk0",
                "../devices/platform/soc/3f202000.mmc/mmc_host/mmc0/mmc0:aaaa/block/mmcblk0",
                "mmc",
            ),
            (
                "vda",
                "../devices/pci0000:00/0000:00:02.0/virtio1/block/vda",
                "virtio",
            ),
            ("loop0", "../devices/virtual/block/loop0", "loop"),
            ("md0", "../devices/virtual/block/md0", "md"),
            ("dm-3", "../devices/virtual/block/dm-3", "dm"),
            ("zram0", "../devices/virtual/block/zram0", "zram"),
            ("xyz", "../devices/virtual/block/xyz", "virtual"),
            ("q", "", "unknown"),
        ];
        for (name, path, want) in cases {
            assert_eq!(transport_from_path(name, path), want, "{path}");
        }
    }

    #[test]
    fn controller_and_usb_dirs() {
        let usb = "../devices/platform/soc/3f980000.usb/usb1/1-1/1-1.1/1-1.1.2/1-1.1.2:1.0/host0/target0:0:0/0:0:0:0/block/sda";
        assert_eq!(
            controller_dir(usb).unwrap(),
            "devices/platform/soc/3f980000.usb/usb1/1-1/1-1.1/1-1.1.2/1-1.1.2:1.0"
        );
        assert_eq!(
            usb_device_dir(usb).unwrap(),
            "devices/platform/soc/3f980000.usb/usb1/1-1/1-1.1/1-1.1.2"
        );
        assert_eq!(
            controller_dir("../devices/pci0000:00/0000:00:02.0/virtio1/block/vda").unwrap(),
            "devices/pci0000:00/0000:00:02.0/virtio1"
        );
        assert_eq!(
            controller_dir(
                "../devices/pci0000:00/0000:00:17.0/ata3/host2/target2:0:0/2:0:0:0/block/sdc"
            )
            .unwrap(),
            "devices/pci0000:00/0000:00:17.0"
        );
        assert_eq!(controller_dir("../devices/virtual/block/loop0"), None);
        assert_eq!(
            usb_device_dir("../devices/pci0000:00/0000:00:17.0/ata3/host2/x"),
            None
        );
    }

    #[test]
    fn alignment_arithmetic() {
        // 2048 sectors = 1 MiB: aligned to everything.
        assert!(is_aligned(2048 * 512, MIB));
        assert!(is_aligned(2048 * 512, 4096));
        // The old DOS start at sector 63 is aligned to neither.
        assert!(!is_aligned(63 * 512, 4096));
        assert!(!is_aligned(63 * 512, MIB));
        // Sector 8192 on a 4K disk: aligned; sector 8193: not.
        assert!(is_aligned(8192 * 512, 4096));
        assert!(!is_aligned(8193 * 512, 4096));
        assert!(!is_aligned(4096, 0));
    }

    #[test]
    fn vpd_serial() {
        let mut page = vec![0x00, 0x80, 0x00, 0x0c];
        page.extend_from_slice(b"  WD-WX12AB34");
        assert_eq!(parse_vpd_serial(&page).as_deref(), Some("WD-WX12AB3"));
        assert_eq!(parse_vpd_serial(&[0, 0x83, 0, 1, b'x']), None);
        assert_eq!(
            parse_vpd_serial(&[0, 0x80, 0, 40, b'A', b'B']).as_deref(),
            Some("AB")
        );
        assert_eq!(parse_vpd_serial(&[0, 0x80]), None);
    }
}
