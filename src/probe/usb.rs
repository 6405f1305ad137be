//! USB storage doctor: for every disk behind a USB bridge, the driver (uas or
//! usb-storage), the usb-storage quirks in force, the bridge chip with what is
//! known against it, and the negotiated speed against what the device and the
//! ports above it can do. Everything comes from /sys/bus/usb/devices and
//! /sys/module/usb_storage/parameters/quirks; disks are matched to their USB
//! device through their /sys/block link.

use serde::{Deserialize, Serialize};

use super::{Outcome, ProbeError};
use crate::root::Root;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Usb {
    /// Every USB device (root hubs included, interfaces not).
    pub devices: Vec<UsbDevice>,
    /// One entry per disk behind a USB bridge.
    pub disks: Vec<UsbDisk>,
    /// `usb_storage`'s `quirks` parameter as set (`usb-storage.quirks=` on the
    /// kernel command line); `None` when empty or the module is not loaded.
    pub quirks_parameter: Option<String>,
    /// Attributes that were present but unreadable (left out, not fatal).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct UsbDevice {
    /// sysfs name: `usb1` (root hub), `1-1`, `1-1.3`.
    pub name: String,
    /// The hub it is plugged into; `None` for a root hub.
    pub parent: Option<String>,
    /// The host controller's sysfs path, root hubs only: an xHCI has two root
    /// hubs (USB 2 and USB 3) on one controller.
    pub controller: Option<String>,
    /// Negotiated speed (`speed`: 1.5, 12, 480, 5000, 10000, 20000).
    pub speed_mbit_per_sec: Option<f64>,
    /// bcdUSB, the USB version the device implements (`version`: `3.20`).
    pub version: Option<String>,
    pub vendor_id: Option<String>,
    pub product_id: Option<String>,
    pub manufacturer: Option<String>,
    pub product: Option<String>,
    /// `bMaxPower`: what the device may draw from the port (`896mA`).
    pub max_power: Option<String>,
    pub is_hub: bool,
    /// Drivers bound to its interfaces (`uas`, `usb-storage`, `smsc95xx`, `hub`).
    pub drivers: Vec<String>,
    /// Network interfaces on it (`eth0` of a Pi's smsc95xx or lan78xx).
    pub net_interfaces: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct UsbDisk {
    /// The block device: `sda`.
    pub disk: String,
    /// The USB device of its bridge: `2-1`.
    pub device: String,
    /// `uas` or `usb-storage`.
    pub driver: Option<String>,
    /// The bridge's `vendor:product` (`152d:0578`).
    pub bridge: Option<String>,
    /// What is known against this bridge chip, with the source.
    pub known_bridge: Option<KnownBridge>,
    /// usb-storage quirk flags set for this bridge on the command line.
    pub quirks: Vec<QuirkFlag>,
    pub negotiated_mbit_per_sec: Option<f64>,
    /// The fastest speed the device's USB version allows (a 3.x device: 5000
    /// at least).
    pub device_capable_mbit_per_sec: Option<f64>,
    /// The slowest hub above the disk or, for the root port, the fastest root
    /// hub of its controller: what the port can give.
    pub port_capable_mbit_per_sec: Option<f64>,
    /// The hub or controller that sets `port_capable_mbit_per_sec`.
    pub port_limited_by: Option<String>,
    /// The fastest root hub of the host controller: 5000 and up means the box
    /// has USB 3 ports even when this disk's path is USB 2.
    pub controller_capable_mbit_per_sec: Option<f64>,
    /// Other disks and network interfaces sharing the disk's upstream link
    /// (`sdb`, `eth0 (smsc95xx)`).
    pub shares_link_with: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct QuirkFlag {
    pub flag: String,
    /// The kernel's name without `US_FL_`: `IGNORE_UAS`.
    pub name: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KnownBridge {
    pub chip: String,
    pub trouble: String,
    pub sources: Vec<String>,
}

/// Bridges with a public record of UAS trouble on Linux, each with its sources.
/// Not every chip behind an id is affected (ASMedia reuses 174c:55aa), so the
/// advice is "if you see resets", never "always quirk".
const KNOWN_BRIDGES: &[(&str, &str, &str, &[&str])] = &[
    (
        "152d:0578",
        "JMicron JMS567/JMS578 SATA bridge",
        "UAS resets (uas_eh_device_reset_handler) and hangs, mostly on the Raspberry Pi 4; \
         usb-storage.quirks=152d:0578:u is the usual workaround",
        &[
            "https://github.com/raspberrypi/linux/issues/3070",
            "https://github.com/raspberrypi/linux/issues/4498",
            "https://github.com/home-assistant/operating-system/pull/3220",
        ],
    ),
    (
        "152d:0583",
        "JMicron JMS583 NVMe bridge",
        "UAS trouble on the Raspberry Pi; distributions ship 152d:0583:u",
        &["https://github.com/home-assistant/operating-system/pull/4366"],
    ),
    (
        "152d:a583",
        "JMicron JMS583 NVMe bridge (later revision)",
        "UAS trouble on the Raspberry Pi; distributions ship 152d:a583:u",
        &["https://github.com/home-assistant/operating-system/pull/3687"],
    ),
    (
        "174c:55aa",
        "ASMedia ASM1051E/ASM1053E/ASM1153E/ASM235CM SATA bridge (one id for several chips)",
        "older chips behind this id have broken UAS; the kernel's uas-detect.h tells some \
         apart, newer ones work with UAS",
        &[
            "https://github.com/home-assistant/operating-system/pull/2062",
            "https://github.com/raspberrypi/linux/issues/5153",
        ],
    ),
];

/// What is known against a bridge `vendor:product`, if anything.
pub fn known_bridge(id: &str) -> Option<KnownBridge> {
    let id = id.to_ascii_lowercase();
    KNOWN_BRIDGES
        .iter()
        .find(|(b, ..)| *b == id)
        .map(|(_, chip, trouble, sources)| KnownBridge {
            chip: chip.to_string(),
            trouble: trouble.to_string(),
            sources: sources.iter().map(|s| s.to_string()).collect(),
        })
}

/// usb-storage quirk letters (Documentation/admin-guide/kernel-parameters.txt,
/// `usb-storage.quirks`).
const QUIRK_FLAGS: &[(char, &str)] = &[
    ('a', "SANE_SENSE"),
    ('b', "BAD_SENSE"),
    ('c', "FIX_CAPACITY"),
    ('d', "NO_READ_DISC_INFO"),
    ('e', "NO_READ_CAPACITY_16"),
    ('f', "NO_REPORT_OPCODES"),
    ('g', "MAX_SECTORS_240"),
    ('h', "CAPACITY_HEURISTICS"),
    ('i', "IGNORE_DEVICE"),
    ('j', "NO_REPORT_LUNS"),
    ('k', "NO_SAME"),
    ('l', "NOT_LOCKABLE"),
    ('m', "MAX_SECTORS_64"),
    ('n', "INITIAL_READ10"),
    ('o', "CAPACITY_OK"),
    ('p', "WRITE_CACHE"),
    ('r', "IGNORE_RESIDUE"),
    ('s', "SINGLE_LUN"),
    ('t', "NO_ATA_1X"),
    ('u', "IGNORE_UAS"),
    ('w', "NO_WP_DETECT"),
    ('y', "ALWAYS_SYNC"),
];

/// The flags the quirks parameter sets for `bridge` (`vendor:product`);
/// unknown letters are kept as `UNKNOWN`.
pub fn quirks_for(parameter: &str, bridge: &str) -> Vec<QuirkFlag> {
    let bridge = bridge.to_ascii_lowercase();
    parameter
        .split(',')
        .filter_map(|entry| {
            let mut parts = entry.trim().splitn(3, ':');
            let id = format!("{}:{}", parts.next()?, parts.next()?).to_ascii_lowercase();
            (id == bridge).then(|| parts.next().unwrap_or(""))
        })
        .flat_map(|flags| flags.chars())
        .map(|c| QuirkFlag {
            flag: c.to_string(),
            name: QUIRK_FLAGS
                .iter()
                .find(|(f, _)| *f == c.to_ascii_lowercase())
                .map_or("UNKNOWN", |(_, n)| n)
                .to_string(),
        })
        .collect()
}

/// sysfs `speed` in Mbit/s ("1.5", "480", "5000"); `None` for "unknown".
pub fn parse_speed(value: &str) -> Option<f64> {
    value.trim().parse::<f64>().ok().filter(|s| *s > 0.0)
}

/// The fastest speed a device of USB version `version` (bcdUSB, " 3.20") can
/// negotiate: 3.x devices do SuperSpeed (5000 at least; Gen 2 is not told by
/// the version), 2.x high speed, older full speed.
pub fn device_capable_mbit(version: &str) -> Option<f64> {
    let major: u32 = version.trim().split('.').next()?.parse().ok()?;
    Some(match major {
        0 | 1 => 12.0,
        2 => 480.0,
        _ => 5000.0,
    })
}

/// A bus ceiling for storage: the link rate less line coding and protocol
/// overhead, with the arithmetic.
#[derive(Debug, Clone, PartialEq)]
pub struct BusCeiling {
    pub bytes_per_sec: f64,
    pub basis: String,
}

/// What a USB link of `mbit` Mbit/s can carry of disk data. High speed loses a
/// third to microframe scheduling and the bulk protocol (~40 MB/s is what UAS
/// reaches, usb-storage ~34 MB/s); SuperSpeed's 8b/10b coding costs 20 % and
/// packet headers another 10 %; 10 Gbit/s and up code 128b/132b.
pub fn bus_ceiling(mbit: f64) -> BusCeiling {
    let (efficiency, why) = if mbit <= 480.0 {
        (
            0.67,
            "USB 2 bulk transfers: microframe and protocol overhead",
        )
    } else if mbit <= 5000.0 {
        (0.72, "8b/10b coding 0.8 x packet overhead 0.9")
    } else {
        (0.87, "128b/132b coding 0.97 x packet overhead 0.9")
    };
    let bytes_per_sec = mbit * 1e6 / 8.0 * efficiency;
    BusCeiling {
        bytes_per_sec,
        basis: format!(
            "{} Mbit/s / 8 x {efficiency} ({why}) = {:.1} MB/s",
            format_mbit(mbit),
            bytes_per_sec / 1e6
        ),
    }
}

/// 480 → "480", 1.5 → "1.5".
pub fn format_mbit(mbit: f64) -> String {
    if mbit.fract() == 0.0 {
        format!("{mbit:.0}")
    } else {
        format!("{mbit}")
    }
}

/// The parent hub of a USB device from its sysfs link target
/// (`../../../devices/.../usb1/1-1/1-1.3` → `1-1`); `None` under a controller.
pub fn parent_from_link(target: &str) -> Option<String> {
    let mut parts = target.rsplit('/').filter(|p| !p.is_empty());
    parts.next()?;
    let parent = parts.next()?;
    is_device_name(parent).then(|| parent.to_string())
}

/// `usb1`, `1-1`, `1-1.3`: a USB device (not an interface `1-1:1.0`).
pub fn is_device_name(name: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if let Some(n) = name.strip_prefix("usb") {
        return !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    }
    match name.split_once('-') {
        Some((bus, port)) => digits(bus) && !bus.contains('.') && digits(port),
        None => false,
    }
}

fn find<'a>(devices: &'a [UsbDevice], name: &str) -> Option<&'a UsbDevice> {
    devices.iter().find(|d| d.name == name)
}

/// The hubs above `name`, nearest first, the root hub last.
fn ancestors<'a>(devices: &'a [UsbDevice], name: &str) -> Vec<&'a UsbDevice> {
    let mut out = Vec::new();
    let mut next = find(devices, name).and_then(|d| d.parent.clone());
    while let Some(p) = next {
        let Some(hub) = find(devices, &p) else { break };
        // A loop cannot happen in sysfs; a hostile tree must not hang us.
        if out.len() > 16 {
            break;
        }
        out.push(hub);
        next = hub.parent.clone();
    }
    out
}

/// The fastest root hub on the controller of root hub `root` (an xHCI has a
/// USB 2 and a USB 3 one).
fn controller_fastest(devices: &[UsbDevice], root: &UsbDevice) -> Option<f64> {
    devices
        .iter()
        .filter(|d| d.parent.is_none() && d.controller.is_some() && d.controller == root.controller)
        .filter_map(|d| d.speed_mbit_per_sec)
        .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.max(s))))
        .or(root.speed_mbit_per_sec)
}

/// What the host controller above `name` can do at best.
pub fn controller_capable(devices: &[UsbDevice], name: &str) -> Option<f64> {
    controller_fastest(devices, ancestors(devices, name).last()?)
}

/// What the port chain above `name` can give: the slowest hub, or at the root
/// the fastest root hub of the same controller (a USB 3 device that fell back
/// to 480 sits on the USB 2 root hub of a controller that also has a USB 3 one).
pub fn port_capable(devices: &[UsbDevice], name: &str) -> Option<(f64, String)> {
    let mut best: Option<(f64, String)> = None;
    for hub in ancestors(devices, name) {
        let cap = if hub.parent.is_none() {
            controller_fastest(devices, hub)
        } else {
            hub.speed_mbit_per_sec
        };
        let Some(cap) = cap else { continue };
        if best.as_ref().is_none_or(|(b, _)| cap < *b) {
            let what = if hub.parent.is_none() {
                format!("the host controller of {}", hub.name)
            } else {
                format!("hub {}", hub.name)
            };
            best = Some((cap, what));
        }
    }
    best
}

/// The devices that share `name`'s upstream bandwidth: on a USB 2 bus (root
/// hub at 480 or less) everything on the bus; otherwise everything under the
/// same hub on the root port.
pub fn link_sharers<'a>(devices: &'a [UsbDevice], name: &str) -> Vec<&'a UsbDevice> {
    let chain = ancestors(devices, name);
    let Some(root) = chain.last() else {
        return Vec::new();
    };
    let whole_bus = root.speed_mbit_per_sec.is_some_and(|s| s <= 480.0);
    // The hub on the root port (chain: nearest … root-port hub, root).
    let top = (chain.len() >= 2).then(|| chain[chain.len() - 2].name.clone());
    devices
        .iter()
        .filter(|d| d.name != name && !d.is_hub)
        .filter(|d| {
            let up = ancestors(devices, &d.name);
            if whole_bus {
                up.last().is_some_and(|r| r.name == root.name)
            } else {
                top.as_ref()
                    .is_some_and(|t| up.iter().any(|h| &h.name == t))
            }
        })
        .collect()
}

/// Puts together one disk's entry from the devices read.
pub fn summarise_disk(
    disk: &str,
    device: &str,
    devices: &[UsbDevice],
    disks_by_device: &[(String, String)],
    quirks_parameter: Option<&str>,
) -> UsbDisk {
    let dev = find(devices, device);
    let bridge = dev.and_then(|d| {
        Some(format!(
            "{}:{}",
            d.vendor_id.as_ref()?,
            d.product_id.as_ref()?
        ))
    });
    let port = port_capable(devices, device);
    let shares_link_with = link_sharers(devices, device)
        .into_iter()
        .flat_map(|d| {
            let disks = disks_by_device
                .iter()
                .filter(|(_, u)| *u == d.name)
                .map(|(k, _)| k.clone());
            let driver = d.drivers.first().cloned().unwrap_or_default();
            let nics = d
                .net_interfaces
                .iter()
                .map(move |n| format!("{n} ({driver})"));
            disks.chain(nics).collect::<Vec<_>>()
        })
        .collect();
    UsbDisk {
        disk: disk.to_string(),
        device: device.to_string(),
        driver: dev.and_then(|d| {
            d.drivers
                .iter()
                .find(|x| *x == "uas" || *x == "usb-storage")
                .cloned()
        }),
        known_bridge: bridge.as_deref().and_then(known_bridge),
        quirks: match (quirks_parameter, &bridge) {
            (Some(p), Some(b)) => quirks_for(p, b),
            _ => Vec::new(),
        },
        bridge,
        negotiated_mbit_per_sec: dev.and_then(|d| d.speed_mbit_per_sec),
        device_capable_mbit_per_sec: dev
            .and_then(|d| d.version.as_deref())
            .and_then(device_capable_mbit),
        port_capable_mbit_per_sec: port.as_ref().map(|(s, _)| *s),
        port_limited_by: port.map(|(_, w)| w),
        controller_capable_mbit_per_sec: controller_capable(devices, device),
        shares_link_with,
    }
}

const DEVICES: &str = "sys/bus/usb/devices";

/// Reads every USB device and the USB disks. Without sysfs it is unsupported;
/// a kernel without USB (no /sys/bus/usb) has no USB devices.
pub fn read_usb(root: &Root) -> Outcome<Usb> {
    if !root.exists("sys/block") {
        return Outcome::Unsupported {
            reason: "no /sys/block (sysfs not mounted?)".into(),
        };
    }
    read(root).into()
}

fn read(root: &Root) -> Result<Usb, ProbeError> {
    let names = root.read_dir_optional(DEVICES)?;
    let mut devices = Vec::new();
    let mut problems = Vec::new();
    for name in names.iter().filter(|n| is_device_name(n)) {
        devices.push(read_device(root, name, &names, &mut problems)?);
    }
    let mut disks_by_device = Vec::new();
    for disk in root.read_dir_optional("sys/block")? {
        let Ok(target) = root.read_link(&format!("sys/block/{disk}")) else {
            continue;
        };
        let target = target.to_string_lossy();
        if let Some(dir) = super::block::usb_device_dir(&target)
            && let Some((_, usb)) = dir.rsplit_once('/')
        {
            disks_by_device.push((disk, usb.to_string()));
        }
    }
    let quirks_parameter = attr(
        root,
        "sys/module/usb_storage/parameters/quirks",
        &mut problems,
    )
    .filter(|q| !q.is_empty());
    let disks = disks_by_device
        .iter()
        .map(|(disk, usb)| {
            summarise_disk(
                disk,
                usb,
                &devices,
                &disks_by_device,
                quirks_parameter.as_deref(),
            )
        })
        .collect();
    Ok(Usb {
        devices,
        disks,
        quirks_parameter,
        problems,
    })
}

/// One sysfs attribute; an unreadable one is noted in `problems` and left out.
pub(super) fn attr(root: &Root, rel: &str, problems: &mut Vec<String>) -> Option<String> {
    match root.read_optional(rel) {
        Ok(v) => v,
        Err(e) => {
            problems.push(e.to_string());
            None
        }
    }
}

fn read_device(
    root: &Root,
    name: &str,
    all: &[String],
    problems: &mut Vec<String>,
) -> Result<UsbDevice, ProbeError> {
    let dir = format!("{DEVICES}/{name}");
    let mut text = |a: &str| attr(root, &format!("{dir}/{a}"), problems);
    let target = root.read_link(&dir).ok();
    let target = target.as_ref().map(|t| t.to_string_lossy().into_owned());
    let parent = target.as_deref().and_then(parent_from_link);
    let controller = match (&parent, &target) {
        (None, Some(t)) => t
            .rsplit_once('/')
            .map(|(c, _)| c.trim_start_matches("../").to_string()),
        _ => None,
    };
    let mut drivers = Vec::new();
    let mut net_interfaces = Vec::new();
    let prefix = format!("{name}:");
    for iface in all.iter().filter(|n| n.starts_with(&prefix)) {
        if let Ok(d) = root.read_link_name(&format!("{DEVICES}/{iface}/driver"))
            && !drivers.contains(&d)
        {
            drivers.push(d);
        }
        net_interfaces.extend(root.read_dir_optional(&format!("{DEVICES}/{iface}/net"))?);
    }
    Ok(UsbDevice {
        name: name.to_string(),
        parent,
        controller,
        speed_mbit_per_sec: text("speed").as_deref().and_then(parse_speed),
        version: text("version"),
        vendor_id: text("idVendor"),
        product_id: text("idProduct"),
        manufacturer: text("manufacturer"),
        product: text("product"),
        max_power: text("bMaxPower"),
        is_hub: text("bDeviceClass").as_deref() == Some("09"),
        drivers,
        net_interfaces,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(name: &str, parent: Option<&str>, speed: f64, version: &str) -> UsbDevice {
        UsbDevice {
            name: name.into(),
            parent: parent.map(str::to_string),
            controller: parent.is_none().then(|| "xhci".to_string()),
            speed_mbit_per_sec: Some(speed),
            version: Some(version.into()),
            vendor_id: Some("152d".into()),
            product_id: Some("0578".into()),
            manufacturer: None,
            product: None,
            max_power: None,
            is_hub: parent.is_none(),
            drivers: Vec::new(),
            net_interfaces: Vec::new(),
        }
    }

    #[test]
    fn an_unreadable_attribute_costs_that_value_not_the_section() {
        let dir = tempfile::tempdir().unwrap();
        let dev = dir.path().join("sys/bus/usb/devices/1-1");
        std::fs::create_dir_all(dir.path().join("sys/block")).unwrap();
        // A directory where a value should be: EISDIR on read.
        std::fs::create_dir_all(dev.join("speed")).unwrap();
        std::fs::write(dev.join("version"), " 3.00\n").unwrap();
        let root = Root::tree(dir.path()).unwrap();
        let usb = read_usb(&root);
        let u = usb.data().expect("section ok");
        assert_eq!(u.devices[0].speed_mbit_per_sec, None);
        assert_eq!(u.devices[0].version.as_deref(), Some("3.00"));
        assert_eq!(u.problems.len(), 1, "{:?}", u.problems);
        assert!(u.problems[0].contains("speed"), "{:?}", u.problems);
    }

    #[test]
    fn sysfs_speeds_and_versions() {
        assert_eq!(parse_speed("480\n"), Some(480.0));
        assert_eq!(parse_speed("1.5"), Some(1.5));
        assert_eq!(parse_speed("5000"), Some(5000.0));
        assert_eq!(parse_speed("unknown"), None);
        assert_eq!(device_capable_mbit(" 3.20"), Some(5000.0));
        assert_eq!(device_capable_mbit(" 2.10"), Some(480.0));
        assert_eq!(device_capable_mbit(" 1.10"), Some(12.0));
        assert_eq!(device_capable_mbit("x"), None);
    }

    #[test]
    fn high_speed_ceiling_shows_its_arithmetic() {
        let c = bus_ceiling(480.0);
        assert!((c.bytes_per_sec - 40.2e6).abs() < 1.0, "{c:?}");
        assert_eq!(
            c.basis,
            "480 Mbit/s / 8 x 0.67 (USB 2 bulk transfers: microframe and protocol overhead) \
             = 40.2 MB/s"
        );
        assert!((bus_ceiling(5000.0).bytes_per_sec - 450e6).abs() < 1.0);
        assert!(bus_ceiling(10000.0).bytes_per_sec > 1e9);
    }

    #[test]
    fn quirk_letters_decode_for_the_matching_bridge_only() {
        let p = "174c:55aa:u,152D:0578:uf,0bc2:2322:";
        let q = quirks_for(p, "152d:0578");
        let names: Vec<&str> = q.iter().map(|q| q.name.as_str()).collect();
        assert_eq!(names, ["IGNORE_UAS", "NO_REPORT_OPCODES"]);
        assert!(quirks_for(p, "0bc2:2322").is_empty());
        assert!(quirks_for(p, "1058:25a2").is_empty());
        assert_eq!(quirks_for("1058:25a2:z", "1058:25a2")[0].name, "UNKNOWN");
    }

    #[test]
    fn known_bridges_carry_sources() {
        let b = known_bridge("152D:0578").unwrap();
        assert!(b.chip.contains("JMS567"));
        assert!(
            b.sources
                .iter()
                .all(|s| s.starts_with("https://github.com/"))
        );
        assert!(known_bridge("0bc2:ab38").is_none());
    }

    #[test]
    fn device_names_and_parents_from_links() {
        assert!(is_device_name("usb1"));
        assert!(is_device_name("1-1.3"));
        assert!(!is_device_name("1-1.3:1.0"));
        assert!(!is_device_name("usb"));
        assert_eq!(
            parent_from_link("../../../devices/platform/soc/3f980000.usb/usb1/1-1/1-1.3"),
            Some("1-1".into())
        );
        assert_eq!(
            parent_from_link("../../../devices/platform/soc/3f980000.usb/usb1/1-1"),
            Some("usb1".into())
        );
        assert_eq!(
            parent_from_link("../../../devices/platform/soc/3f980000.usb/usb1"),
            None
        );
    }

    #[test]
    fn a_usb3_disk_on_the_usb2_root_of_an_xhci_can_have_5000() {
        // xHCI: usb1 (480) and usb2 (5000) on one controller; the disk fell
        // back to 480 and hangs off usb1.
        let devices = vec![
            dev("usb1", None, 480.0, " 2.00"),
            dev("usb2", None, 5000.0, " 3.00"),
            dev("1-1", Some("usb1"), 480.0, " 3.20"),
        ];
        let d = summarise_disk("sda", "1-1", &devices, &[], Some("152d:0578:u"));
        assert_eq!(d.negotiated_mbit_per_sec, Some(480.0));
        assert_eq!(d.device_capable_mbit_per_sec, Some(5000.0));
        assert_eq!(d.port_capable_mbit_per_sec, Some(5000.0));
        assert_eq!(d.controller_capable_mbit_per_sec, Some(5000.0));
        assert_eq!(d.quirks[0].name, "IGNORE_UAS");
        assert!(d.known_bridge.is_some());
    }

    #[test]
    fn a_usb2_hub_limits_the_port_and_its_bus_is_shared() {
        let mut nic = dev("1-1.1", Some("1-1"), 480.0, " 2.00");
        nic.drivers = vec!["smsc95xx".into()];
        nic.net_interfaces = vec!["eth0".into()];
        let mut hub = dev("1-1", Some("usb1"), 480.0, " 2.00");
        hub.is_hub = true;
        let devices = vec![
            dev("usb1", None, 480.0, " 2.00"),
            hub,
            nic,
            dev("1-1.3", Some("1-1"), 480.0, " 3.00"),
            dev("1-1.4", Some("1-1"), 480.0, " 2.10"),
        ];
        let disks = vec![
            ("sda".to_string(), "1-1.3".to_string()),
            ("sdb".to_string(), "1-1.4".to_string()),
        ];
        let d = summarise_disk("sda", "1-1.3", &devices, &disks, None);
        assert_eq!(d.port_capable_mbit_per_sec, Some(480.0));
        assert_eq!(d.port_limited_by.as_deref(), Some("hub 1-1"));
        assert_eq!(d.controller_capable_mbit_per_sec, Some(480.0));
        assert_eq!(d.shares_link_with, ["eth0 (smsc95xx)", "sdb"]);
        assert!(d.quirks.is_empty());
    }

    #[test]
    fn superspeed_root_ports_are_not_shared_between_hubs() {
        let devices = vec![
            dev("usb2", None, 5000.0, " 3.00"),
            dev("2-1", Some("usb2"), 5000.0, " 3.20"),
            dev("2-2", Some("usb2"), 5000.0, " 3.20"),
        ];
        let disks = vec![
            ("sda".to_string(), "2-1".to_string()),
            ("sdb".to_string(), "2-2".to_string()),
        ];
        let d = summarise_disk("sda", "2-1", &devices, &disks, None);
        assert!(d.shares_link_with.is_empty(), "{:?}", d.shares_link_with);
    }
}
