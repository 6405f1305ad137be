//! Shared buses: each disk's way to the CPU (from its sysfs device path:
//! PCIe functions, SATA ports, USB devices and hubs), and the nearest element
//! several disks share, with what it carries at most — "sda–sdd share the
//! PCIe 2.0 x1 link of 0000:01:00.0: 500 MB/s". The bottleneck analysis and
//! the path model take the shared element's ceiling as a capacity stage.

use serde::{Deserialize, Serialize};

use super::bottleneck::MeasuredBy;
use super::{Change, Finding, Risk, Rule, RuleInfo, Severity};
use crate::bench::disk::DiskBench;
use crate::probe::block::BlockDevice;
use crate::probe::links::PcieLink;
use crate::probe::usb::{UsbDevice, bus_ceiling, format_mbit};

/// One disk and the elements between it and the CPU, the CPU's side first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskWay {
    pub disk: String,
    /// `pci:0000:01:00.0`, `ata:ata1`, `usb:1-1.3` … from the sysfs path.
    pub elements: Vec<String>,
}

/// An element on the way of two or more disks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharedElement {
    /// The disks behind it, sorted.
    pub disks: Vec<String>,
    /// As in [`DiskWay::elements`].
    pub element: String,
    /// "PCIe 2.0 x1 link of 0000:01:00.0", "USB hub 1-1 at 480 Mbit/s".
    pub describe: String,
    /// What it carries at most, when the probe knows its link.
    pub ceiling_bytes_per_sec: Option<f64>,
}

impl SharedElement {
    /// "sda–sdd share the PCIe 2.0 x1 link of 0000:01:00.0: 500 MB/s".
    pub fn sentence(&self) -> String {
        let disks = match self.disks.as_slice() {
            [a, b] => format!("{a} and {b}"),
            [a, .., z] => format!("{a}–{z}"),
            _ => self.disks.join(", "),
        };
        let ceiling = self
            .ceiling_bytes_per_sec
            .map_or(String::new(), |c| format!(": {:.0} MB/s", c / 1e6));
        format!("{disks} share the {}{ceiling}", self.describe)
    }
}

/// `dddd:bb:dd.f`: a PCI function's address.
fn is_pci_address(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 12
        && b[4] == b':'
        && b[7] == b':'
        && b[10] == b'.'
        && b.iter()
            .enumerate()
            .all(|(i, c)| matches!(i, 4 | 7 | 10) || c.is_ascii_hexdigit())
}

/// `1-1`, `2-1.3`: a USB device (not `1-1:1.0`, an interface, nor `usb1`).
fn is_usb_device(s: &str) -> bool {
    let Some((bus, port)) = s.split_once('-') else {
        return false;
    };
    !bus.is_empty()
        && bus.bytes().all(|c| c.is_ascii_digit())
        && !port.is_empty()
        && port.bytes().all(|c| c.is_ascii_digit() || c == b'.')
}

/// The elements of a sysfs device path, CPU side first. Pure.
pub fn elements(sysfs_path: &str) -> Vec<String> {
    sysfs_path
        .split('/')
        .filter_map(|c| {
            let numbered = |prefix: &str| {
                c.strip_prefix(prefix)
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            };
            if is_pci_address(c) {
                Some(format!("pci:{c}"))
            } else if numbered("ata") {
                Some(format!("ata:{c}"))
            } else if numbered("usb") || is_usb_device(c) {
                Some(format!("usb:{c}"))
            } else {
                None
            }
        })
        .collect()
}

/// Each whole disk's way, from the storage section's devices.
pub fn ways(devices: &[BlockDevice]) -> Vec<DiskWay> {
    devices
        .iter()
        .filter(|d| d.kind == "disk")
        .filter_map(|d| {
            let elements = elements(d.sysfs_path.as_deref()?);
            (!elements.is_empty()).then(|| DiskWay {
                disk: d.name.clone(),
                elements,
            })
        })
        .collect()
}

/// PCIe generation of a transfer rate: 2.5 → 1.0, 5 → 2.0, 8 → 3.0 …
fn pcie_generation(gt: f64) -> &'static str {
    match gt {
        g if g <= 2.5 => "1.0",
        g if g <= 5.0 => "2.0",
        g if g <= 8.0 => "3.0",
        g if g <= 16.0 => "4.0",
        _ => "5.0",
    }
}

/// Payload bytes per second of a PCIe link: 8b/10b coding up to 5 GT/s,
/// 128b/130b above, per lane.
pub fn pcie_bytes_per_sec(gt_per_sec: f64, width: u32) -> f64 {
    let coding = if gt_per_sec <= 5.0 {
        0.8
    } else {
        128.0 / 130.0
    };
    gt_per_sec * 1e9 * coding / 8.0 * f64::from(width)
}

/// What an element is and carries, from the links and USB sections.
fn describe(element: &str, pcie: &[PcieLink], usb: &[UsbDevice]) -> (String, Option<f64>) {
    let (kind, id) = element.split_once(':').unwrap_or(("", element));
    match kind {
        "pci" => match pcie.iter().find(|l| l.address == id) {
            Some(
                l @ PcieLink {
                    current_gt_per_sec: Some(gt),
                    current_width: Some(w),
                    ..
                },
            ) => {
                let below = match (l.downgraded, l.max_gt_per_sec, l.max_width) {
                    (true, Some(mg), Some(mw)) => {
                        format!(" (downgraded from PCIe {} x{mw})", pcie_generation(mg))
                    }
                    _ => String::new(),
                };
                (
                    format!("PCIe {} x{w} link of {id}{below}", pcie_generation(*gt)),
                    Some(pcie_bytes_per_sec(*gt, *w)),
                )
            }
            _ => (format!("PCI device {id}"), None),
        },
        "usb" => {
            let dev = usb.iter().find(|d| d.name == id);
            let what = if id.starts_with("usb") {
                "USB root hub"
            } else if dev.is_some_and(|d| d.is_hub) {
                "USB hub"
            } else {
                "USB device"
            };
            match dev.and_then(|d| d.speed_mbit_per_sec) {
                Some(mbit) => (
                    format!("{what} {id} at {} Mbit/s", format_mbit(mbit)),
                    Some(bus_ceiling(mbit).bytes_per_sec),
                ),
                None => (format!("{what} {id}"), None),
            }
        }
        "ata" => (format!("SATA port {id}"), None),
        _ => (element.to_string(), None),
    }
}

/// The nearest element each group of disks shares: for every set of two or
/// more disks behind one element, the element closest to the disks (a root
/// port above a card's link carries the same disks and says less). Pure.
pub fn shared(ways: &[DiskWay], pcie: &[PcieLink], usb: &[UsbDevice]) -> Vec<SharedElement> {
    let mut out: Vec<SharedElement> = Vec::new();
    for way in ways {
        // Closest to the disk first, so the first element of a set wins.
        for e in way.elements.iter().rev() {
            let mut disks: Vec<String> = ways
                .iter()
                .filter(|w| w.elements.contains(e))
                .map(|w| w.disk.clone())
                .collect();
            if disks.len() < 2 {
                continue;
            }
            disks.sort();
            if out.iter().any(|s| s.disks == disks || s.element == *e) {
                continue;
            }
            let (describe, ceiling_bytes_per_sec) = describe(e, pcie, usb);
            out.push(SharedElement {
                disks,
                element: e.clone(),
                describe,
                ceiling_bytes_per_sec,
            });
        }
    }
    out
}

/// The shared elements of a snapshot (empty when a section is missing).
pub fn of_snapshot(s: &crate::probe::Snapshot) -> Vec<SharedElement> {
    let Some(storage) = s.storage.data() else {
        return Vec::new();
    };
    let pcie = s.links.data().map_or(&[][..], |l| &l.pcie[..]);
    let usb = s.usb.data().map_or(&[][..], |u| &u.devices[..]);
    shared(&ways(&storage.devices), pcie, usb)
}

/// A multi-target `bench disk` run: the targets' devices alone and together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TogetherFigure {
    /// The targets' block devices (their paths when not on one).
    pub devices: Vec<String>,
    pub sum_alone_bytes_per_sec: f64,
    pub together_bytes_per_sec: f64,
    /// Set when together stayed below 0.9 × the alone sum.
    pub shared_ceiling_bytes_per_sec: Option<f64>,
    /// The stored run this figure comes from; `None`: this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_by: Option<MeasuredBy>,
}

/// The together figure of a disk document with several targets.
pub fn together_figure(doc: &DiskBench) -> Option<TogetherFigure> {
    let t = doc.together.as_ref()?;
    Some(TogetherFigure {
        devices: doc
            .targets
            .iter()
            .map(|r| {
                r.target
                    .device
                    .clone()
                    .unwrap_or_else(|| r.target.path.display().to_string())
            })
            .collect(),
        sum_alone_bytes_per_sec: t.sum_alone_bw_bytes,
        together_bytes_per_sec: t.bw_bytes,
        shared_ceiling_bytes_per_sec: t.shared_ceiling_bytes_per_sec,
        measured_by: None,
    })
}

/// The shared element behind all of `devices` whose ceiling is within 25 % of
/// the measured one: what explains it.
pub fn explaining<'a>(
    shared: &'a [SharedElement],
    devices: &[String],
    measured: f64,
) -> Option<&'a SharedElement> {
    shared.iter().find(|s| {
        devices.iter().all(|d| s.disks.contains(d))
            && s.ceiling_bytes_per_sec
                .is_some_and(|c| (c - measured).abs() <= 0.25 * c)
    })
}

pub static RULES: &[&Rule] = &[&SHARED_CEILING];

static SHARED_CEILING: Rule = Rule {
    info: RuleInfo {
        id: "disks-share-a-ceiling",
        area: "storage",
        title: "Disks measured together stop scaling",
        severity: Severity::Notice,
        risk: Risk::AdviceOnly,
        checks: "A `bench disk` run on several targets whose together aggregate stayed below \
                 0.9 × the sum of their alone figures: they share a ceiling. The finding \
                 names the shared PCIe link, USB hub or port from sysfs when its capacity \
                 is within 25 % of the measured ceiling.",
        references: &["https://docs.kernel.org/PCI/sysfs-pci.html"],
    },
    evaluate: |info, ctx| {
        let shared = of_snapshot(ctx.snapshot);
        ctx.measurements
            .shared_disks
            .iter()
            .filter_map(|t| Some((t, t.shared_ceiling_bytes_per_sec?)))
            .map(|(t, ceiling)| {
                let devices = t.devices.join(", ");
                let why = match explaining(&shared, &t.devices, ceiling) {
                    Some(e) => format!("{}, and that is what they reach.", e.sentence()),
                    None => "No shared PCIe link or USB hub in sysfs carries about that \
                             little: look for a shared backing store, port multiplier, \
                             USB-SATA bridge or the CPU."
                        .to_string(),
                };
                Finding::of(
                    info,
                    format!(
                        "{devices} together reach {:.0} MB/s, {:.0} % of their {:.0} MB/s alone",
                        ceiling / 1e6,
                        t.together_bytes_per_sec / t.sum_alone_bytes_per_sec.max(1.0) * 100.0,
                        t.sum_alone_bytes_per_sec / 1e6
                    ),
                    format!(
                        "An array or copies across these disks cannot go faster than \
                         {:.0} MB/s together. {why}",
                        ceiling / 1e6
                    ),
                )
                .evidence("shared ceiling", format!("{:.0} MB/s", ceiling / 1e6))
                .evidence(
                    "alone sum",
                    format!("{:.0} MB/s", t.sum_alone_bytes_per_sec / 1e6),
                )
                .change(Change::AdviceOnly {
                    action: "spread the disks over separate controllers, root ports or USB \
                             buses, or budget the array at the shared ceiling"
                        .into(),
                })
            })
            .collect()
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sysfs_path_names_pci_functions_sata_ports_and_usb_devices() {
        let sata = "../devices/platform/f8000000.pcie/pci0000:00/0000:00:00.0/0000:01:00.0/\
                    ata1/host0/target0:0:0/0:0:0:0/block/sda";
        assert_eq!(
            elements(sata),
            ["pci:0000:00:00.0", "pci:0000:01:00.0", "ata:ata1"]
        );
        let usb = "../devices/platform/scb/fd500000.pcie/pci0000:00/0000:00:00.0/0000:01:00.0/\
                   usb2/2-1/2-1.3/2-1.3:1.0/host0/target0:0:0/0:0:0:0/block/sda";
        assert_eq!(
            elements(usb),
            [
                "pci:0000:00:00.0",
                "pci:0000:01:00.0",
                "usb:usb2",
                "usb:2-1",
                "usb:2-1.3"
            ]
        );
        assert!(elements("../devices/virtual/block/md0").is_empty());
    }

    /// The RK3399 build: four SATA disks on a PCIe SATA card, one lane.
    #[test]
    fn the_rk3399_disks_share_the_sata_cards_pcie_link() {
        let snap = crate::advise::test_support::snapshot_of("rk3399-raid5");
        let s = of_snapshot(&snap);
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(s[0].disks, ["sda", "sdb", "sdc", "sdd"]);
        assert_eq!(s[0].element, "pci:0000:01:00.0");
        assert_eq!(
            s[0].sentence(),
            "sda–sdd share the PCIe 1.0 x1 link of 0000:01:00.0 \
             (downgraded from PCIe 3.0 x2): 250 MB/s"
        );
        // The SD card is on its own way: no element shared with the disks.
        assert!(
            s.iter()
                .all(|e| !e.disks.iter().any(|d| d.starts_with("mmc")))
        );
    }

    #[test]
    fn a_measured_together_ceiling_names_the_shared_link() {
        let snap = crate::advise::test_support::snapshot_of("rk3399-raid5");
        let four = ["sda", "sdb", "sdc", "sdd"].map(String::from).to_vec();
        let fig = |ceiling: f64| TogetherFigure {
            devices: four.clone(),
            sum_alone_bytes_per_sec: 4.0 * 150e6,
            together_bytes_per_sec: ceiling,
            shared_ceiling_bytes_per_sec: Some(ceiling),
            measured_by: None,
        };
        let m = crate::advise::Measurements {
            shared_disks: vec![fig(240e6)],
            ..Default::default()
        };
        let f = crate::advise::test_support::run_measured(&SHARED_CEILING, &snap, &m);
        assert_eq!(f.len(), 1);
        let text = format!("{f:?}");
        assert!(
            text.contains("sda, sdb, sdc, sdd together reach 240 MB/s, 40 %"),
            "{text}"
        );
        assert!(
            text.contains("share the PCIe 1.0 x1 link of 0000:01:00.0"),
            "{text}"
        );
        // A ceiling far from the link's 250 MB/s is not blamed on it.
        let m = crate::advise::Measurements {
            shared_disks: vec![fig(100e6)],
            ..Default::default()
        };
        let text = format!(
            "{:?}",
            crate::advise::test_support::run_measured(&SHARED_CEILING, &snap, &m)
        );
        assert!(text.contains("No shared PCIe link"), "{text}");
        // Scaling disks: nothing to say.
        let m = crate::advise::Measurements {
            shared_disks: vec![TogetherFigure {
                shared_ceiling_bytes_per_sec: None,
                ..fig(590e6)
            }],
            ..Default::default()
        };
        assert!(crate::advise::test_support::run_measured(&SHARED_CEILING, &snap, &m).is_empty());
    }

    #[test]
    fn pcie_payload_rates() {
        assert_eq!(pcie_bytes_per_sec(5.0, 1), 500e6);
        assert_eq!(pcie_bytes_per_sec(2.5, 2), 500e6);
        assert!((pcie_bytes_per_sec(8.0, 1) - 984.6e6).abs() < 0.1e6);
    }

    fn hub(name: &str, mbit: f64, is_hub: bool) -> UsbDevice {
        UsbDevice {
            name: name.into(),
            parent: None,
            controller: None,
            speed_mbit_per_sec: Some(mbit),
            version: None,
            vendor_id: None,
            product_id: None,
            manufacturer: None,
            product: None,
            max_power: None,
            is_hub,
            drivers: Vec::new(),
            net_interfaces: Vec::new(),
        }
    }

    #[test]
    fn disks_behind_one_usb_hub_share_the_hub_not_the_root() {
        let way = |disk: &str, port: &str| DiskWay {
            disk: disk.into(),
            elements: vec![
                "usb:usb1".into(),
                "usb:1-1".into(),
                format!("usb:1-1.{port}"),
            ],
        };
        let ways = [way("sdb", "2"), way("sda", "1")];
        let usb = [hub("1-1", 480.0, true)];
        let s = shared(&ways, &[], &usb);
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(s[0].element, "usb:1-1");
        assert_eq!(
            s[0].sentence(),
            "sda and sdb share the USB hub 1-1 at 480 Mbit/s: 40 MB/s"
        );
        // One disk alone shares nothing.
        assert!(shared(&ways[..1], &[], &usb).is_empty());
    }
}
