//! Link doctor: how each physical NIC negotiated (energy-efficient Ethernet,
//! its own and the link partner's advertised modes, pause frames) and how each
//! PCIe NIC, SATA and NVMe controller trained (current against maximum link
//! speed and width, of the device and of the port above it).
//!
//! The NIC side asks the `SIOCETHTOOL` ioctl (`ETHTOOL_GEEE`,
//! `ETHTOOL_GLINKSETTINGS`, `ETHTOOL_GPAUSEPARAM`) and is stored as
//! `.nastune/links/<ifname>.json` in a capture; the PCIe side is sysfs.

use serde::{Deserialize, Serialize};

use super::ethtool::{AlignedBuf, Request, Socket, item};
use super::usb::attr;
use super::{Outcome, ProbeError};
use crate::root::Root;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Links {
    pub nics: Vec<NicLink>,
    pub pcie: Vec<PcieLink>,
    /// Attributes that were present but unreadable (left out, not fatal).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NicLink {
    pub interface: String,
    pub ethtool: Outcome<LinkEthtool>,
    /// The fastest mode both this NIC and the link partner advertise.
    pub best_common_mode: Option<String>,
    pub best_common_mbit_per_sec: Option<u64>,
    /// The link runs below `best_common_mbit_per_sec`: a cable or a port that
    /// cannot carry the faster mode (gigabit needs all four pairs).
    pub downshifted: bool,
}

/// What the ethtool ioctl told about one link.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LinkEthtool {
    pub modes: Outcome<LinkModes>,
    pub eee: Outcome<Eee>,
    pub pause: Outcome<Pause>,
}

/// `ETHTOOL_GLINKSETTINGS`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LinkModes {
    /// `None` when the link is down or the driver cannot say.
    pub speed_mbit_per_sec: Option<u64>,
    /// `half`, `full` or `None`.
    pub duplex: Option<String>,
    pub autoneg: bool,
    pub supported: Vec<String>,
    pub advertised: Vec<String>,
    /// What the link partner advertised (empty without autonegotiation).
    pub partner_advertised: Vec<String>,
}

/// `ETHTOOL_GEEE`: energy-efficient Ethernet (802.3az).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Eee {
    pub enabled: bool,
    /// Negotiated with the partner and in use.
    pub active: bool,
    pub tx_lpi_enabled: bool,
    pub tx_lpi_timer_us: u32,
    pub advertised: Vec<String>,
    pub partner_advertised: Vec<String>,
}

/// `ETHTOOL_GPAUSEPARAM`: Ethernet flow control.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Pause {
    pub autoneg: bool,
    pub rx: bool,
    pub tx: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PcieLink {
    /// PCI address: `0000:01:00.0`.
    pub address: String,
    /// `network`, `sata`, `nvme` or `storage`.
    pub kind: String,
    pub driver: Option<String>,
    pub current_gt_per_sec: Option<f64>,
    pub max_gt_per_sec: Option<f64>,
    pub current_width: Option<u32>,
    pub max_width: Option<u32>,
    /// The upstream port's maximum (a Gen 3 card in a Gen 2 slot trains at Gen 2
    /// and that is not a fault).
    pub port_max_gt_per_sec: Option<f64>,
    pub port_max_width: Option<u32>,
    /// Trained below what both the device and its port can do.
    pub downgraded: bool,
}

/// Link mode bit numbers (`enum ethtool_link_mode_bit_indices`) with their
/// speed; the twisted-pair and common fibre modes a NAS meets.
const LINK_MODES: &[(u32, &str, u64)] = &[
    (0, "10baseT/Half", 10),
    (1, "10baseT/Full", 10),
    (2, "100baseT/Half", 100),
    (3, "100baseT/Full", 100),
    (4, "1000baseT/Half", 1000),
    (5, "1000baseT/Full", 1000),
    (12, "10000baseT/Full", 10000),
    (15, "2500baseX/Full", 2500),
    (17, "1000baseKX/Full", 1000),
    (41, "1000baseX/Full", 1000),
    (43, "10000baseSR/Full", 10000),
    (44, "10000baseLR/Full", 10000),
    (47, "2500baseT/Full", 2500),
    (48, "5000baseT/Full", 5000),
];

/// Names of the speed modes set in a link mode bitmap (32-bit words, bit `i`
/// of the map is bit `i % 32` of word `i / 32`); other bits (ports, pause,
/// autoneg) are left out.
pub fn mode_names(words: &[u32]) -> Vec<String> {
    LINK_MODES
        .iter()
        .filter(|(bit, ..)| {
            words
                .get(*bit as usize / 32)
                .is_some_and(|w| w & (1 << (bit % 32)) != 0)
        })
        .map(|(_, name, _)| name.to_string())
        .collect()
}

fn mode_speed(name: &str) -> Option<u64> {
    LINK_MODES
        .iter()
        .find(|(_, n, _)| *n == name)
        .map(|(.., s)| *s)
}

/// The fastest mode both sides advertise.
pub fn best_common(modes: &LinkModes) -> Option<(String, u64)> {
    modes
        .advertised
        .iter()
        .filter(|m| modes.partner_advertised.contains(m))
        .filter_map(|m| Some((m.clone(), mode_speed(m)?)))
        .max_by_key(|(_, s)| *s)
}

/// Puts the verdict on one NIC's link.
pub fn judge_nic(interface: &str, ethtool: Outcome<LinkEthtool>) -> NicLink {
    let modes = ethtool.data().and_then(|e| e.modes.data());
    let best = modes.and_then(best_common);
    let downshifted = match (modes.and_then(|m| m.speed_mbit_per_sec), &best) {
        (Some(now), Some((_, best))) => now < *best,
        _ => false,
    };
    NicLink {
        interface: interface.to_string(),
        best_common_mbit_per_sec: best.as_ref().map(|(_, s)| *s),
        best_common_mode: best.map(|(m, _)| m),
        downshifted,
        ethtool,
    }
}

/// sysfs `current_link_speed`: "5.0 GT/s PCIe", "2.5 GT/s", "Unknown".
pub fn parse_gt(value: &str) -> Option<f64> {
    value
        .split_whitespace()
        .next()?
        .parse::<f64>()
        .ok()
        .filter(|v| *v > 0.0)
}

/// The kind of a PCI device worth a link check, from its sysfs `class`
/// (`0x010802` NVMe, `0x010601` AHCI, `0x020000` Ethernet).
pub fn pci_kind(class: &str) -> Option<&'static str> {
    let c = u32::from_str_radix(class.trim().trim_start_matches("0x"), 16).ok()?;
    match (c >> 16, (c >> 8) & 0xff) {
        (0x02, _) => Some("network"),
        (0x01, 0x06) => Some("sata"),
        (0x01, 0x08) => Some("nvme"),
        (0x01, _) => Some("storage"),
        _ => None,
    }
}

/// Data rate of one lane in bytes per second: 8b/10b up to 5 GT/s, 128b/130b
/// from 8 GT/s.
pub fn lane_bytes_per_sec(gt: f64) -> f64 {
    let coding = if gt <= 5.0 { 0.8 } else { 128.0 / 130.0 };
    gt * 1e9 * coding / 8.0
}

/// Whether a link trained below what the device and its port both can do.
pub fn is_downgraded(l: &PcieLink) -> bool {
    let cap = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let speed = cap(l.max_gt_per_sec, l.port_max_gt_per_sec);
    let width = cap(l.max_width.map(f64::from), l.port_max_width.map(f64::from));
    let below = |now: Option<f64>, can: Option<f64>| matches!((now, can), (Some(n), Some(c)) if n + 1e-9 < c);
    below(l.current_gt_per_sec, speed) || below(l.current_width.map(f64::from), width)
}

pub fn read_links(root: &Root) -> Outcome<Links> {
    read(root).into()
}

fn read(root: &Root) -> Result<Links, ProbeError> {
    let mut nics = Vec::new();
    for name in root.read_dir_optional("sys/class/net")? {
        // Only NICs with hardware under them negotiate a link.
        let physical = root.exists(&format!("sys/class/net/{name}/device"));
        if !physical {
            continue;
        }
        let ethtool = match root.captured(&format!("links/{name}"), || live_link(&name)) {
            Ok(data) => Outcome::Ok { data },
            Err(reason) => Outcome::Unsupported { reason },
        };
        nics.push(judge_nic(&name, ethtool));
    }
    let mut pcie = Vec::new();
    let mut problems = Vec::new();
    for address in root.read_dir_optional("sys/bus/pci/devices")? {
        if let Some(link) = read_pcie(root, &address, &mut problems) {
            pcie.push(link);
        }
    }
    Ok(Links {
        nics,
        pcie,
        problems,
    })
}

fn read_pcie(root: &Root, address: &str, problems: &mut Vec<String>) -> Option<PcieLink> {
    let dir = format!("sys/bus/pci/devices/{address}");
    let kind = pci_kind(&attr(root, &format!("{dir}/class"), problems)?)?;
    let mut text = |d: &str, a: &str| attr(root, &format!("{d}/{a}"), problems);
    let width = |v: Option<String>| {
        v.and_then(|w| w.trim().parse::<u32>().ok())
            .filter(|w| *w > 0)
    };
    // The upstream port is the parent directory of the device's sysfs path.
    let port = root
        .read_link(&dir)
        .ok()
        .and_then(|t| {
            let t = t.to_string_lossy().into_owned();
            let parent = t.rsplit('/').nth(1)?.to_string();
            (parent.contains(':') && parent.contains('.')).then_some(parent)
        })
        .map(|p| format!("sys/bus/pci/devices/{p}"));
    let (port_max_gt_per_sec, port_max_width) = match &port {
        Some(p) => (
            text(p, "max_link_speed").as_deref().and_then(parse_gt),
            width(text(p, "max_link_width")),
        ),
        None => (None, None),
    };
    let mut link = PcieLink {
        address: address.to_string(),
        kind: kind.to_string(),
        driver: root.read_link_name(&format!("{dir}/driver")).ok(),
        current_gt_per_sec: text(&dir, "current_link_speed")
            .as_deref()
            .and_then(parse_gt),
        max_gt_per_sec: text(&dir, "max_link_speed").as_deref().and_then(parse_gt),
        current_width: width(text(&dir, "current_link_width")),
        max_width: width(text(&dir, "max_link_width")),
        port_max_gt_per_sec,
        port_max_width,
        downgraded: false,
    };
    if link.current_gt_per_sec.is_none() && link.max_gt_per_sec.is_none() {
        // Not a PCIe device (legacy PCI, or a platform without link attributes).
        return None;
    }
    link.downgraded = is_downgraded(&link);
    Some(link)
}

// Command numbers and layouts from include/uapi/linux/ethtool.h.
const ETHTOOL_GPAUSEPARAM: u32 = 0x12;
const ETHTOOL_GEEE: u32 = 0x44;
const ETHTOOL_GLINKSETTINGS: u32 = 0x4c;
/// No kernel has more than a few words of link modes; refuse absurd counts.
const MAX_MODE_WORDS: usize = 16;

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct EthtoolEee {
    pub cmd: u32,
    pub supported: u32,
    pub advertised: u32,
    pub lp_advertised: u32,
    pub eee_active: u32,
    pub eee_enabled: u32,
    pub tx_lpi_enabled: u32,
    pub tx_lpi_timer: u32,
    pub reserved: [u32; 2],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct EthtoolPauseparam {
    pub cmd: u32,
    pub autoneg: u32,
    pub rx_pause: u32,
    pub tx_pause: u32,
}

/// Header of `struct ethtool_link_settings`; three bitmaps of
/// `link_mode_masks_nwords` u32 each follow (supported, advertising, partner).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct EthtoolLinkSettings {
    pub cmd: u32,
    pub speed: u32,
    pub duplex: u8,
    pub port: u8,
    pub phy_address: u8,
    pub autoneg: u8,
    pub mdio_support: u8,
    pub eth_tp_mdix: u8,
    pub eth_tp_mdix_ctrl: u8,
    pub link_mode_masks_nwords: i8,
    pub transceiver: u8,
    pub master_slave_cfg: u8,
    pub master_slave_state: u8,
    pub rate_matching: u8,
    pub reserved: [u32; 7],
}

/// Reads the link of `ifname` on the running system.
pub fn live_link(ifname: &str) -> Result<LinkEthtool, String> {
    let sock = Socket::new()?;
    let req = Request::new(&sock, ifname)?;
    Ok(LinkEthtool {
        modes: item("link modes", link_modes(&req)),
        eee: item("energy-efficient Ethernet", eee(&req)),
        pause: item("pause settings", pause(&req)),
    })
}

fn eee(req: &Request) -> std::io::Result<Eee> {
    let mut e = EthtoolEee {
        cmd: ETHTOOL_GEEE,
        ..Default::default()
    };
    // SAFETY: e is a complete struct ethtool_eee.
    unsafe { req.ioctl((&raw mut e).cast())? };
    Ok(Eee {
        enabled: e.eee_enabled != 0,
        active: e.eee_active != 0,
        tx_lpi_enabled: e.tx_lpi_enabled != 0,
        tx_lpi_timer_us: e.tx_lpi_timer,
        advertised: mode_names(&[e.advertised]),
        partner_advertised: mode_names(&[e.lp_advertised]),
    })
}

fn pause(req: &Request) -> std::io::Result<Pause> {
    let mut p = EthtoolPauseparam {
        cmd: ETHTOOL_GPAUSEPARAM,
        ..Default::default()
    };
    // SAFETY: p is a complete struct ethtool_pauseparam.
    unsafe { req.ioctl((&raw mut p).cast())? };
    Ok(Pause {
        autoneg: p.autoneg != 0,
        rx: p.rx_pause != 0,
        tx: p.tx_pause != 0,
    })
}

fn link_modes(req: &Request) -> std::io::Result<LinkModes> {
    let header = size_of::<EthtoolLinkSettings>();
    // The handshake: ask with 0 words, the kernel answers with minus the count.
    let mut probe = EthtoolLinkSettings {
        cmd: ETHTOOL_GLINKSETTINGS,
        ..Default::default()
    };
    // SAFETY: with nwords 0 the kernel writes only the header.
    unsafe { req.ioctl((&raw mut probe).cast())? };
    let nwords = usize::from(probe.link_mode_masks_nwords.unsigned_abs());
    if probe.link_mode_masks_nwords >= 0 || nwords == 0 || nwords > MAX_MODE_WORDS {
        return Err(std::io::Error::from_raw_os_error(libc::EOPNOTSUPP));
    }
    let mut buf = AlignedBuf::new(header + 3 * nwords * 4);
    buf.put(EthtoolLinkSettings {
        cmd: ETHTOOL_GLINKSETTINGS,
        link_mode_masks_nwords: nwords as i8,
        ..Default::default()
    });
    // SAFETY: the buffer holds the header and three bitmaps of nwords u32.
    unsafe { req.ioctl(buf.as_mut_ptr())? };
    let bytes = buf.bytes();
    // SAFETY: the buffer starts with the header, 8-aligned.
    let s: EthtoolLinkSettings = unsafe { std::ptr::read(bytes.as_ptr().cast()) };
    let words: Vec<u32> = bytes[header..]
        .chunks_exact(4)
        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let map = |i: usize| mode_names(&words[i * nwords..(i + 1) * nwords]);
    Ok(LinkModes {
        speed_mbit_per_sec: (s.speed != 0 && s.speed != u32::MAX).then_some(u64::from(s.speed)),
        duplex: match s.duplex {
            0 => Some("half".into()),
            1 => Some("full".into()),
            _ => None,
        },
        autoneg: s.autoneg != 0,
        supported: map(0),
        advertised: map(1),
        partner_advertised: map(2),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    #[test]
    fn loopback_has_no_link_to_negotiate() {
        let l = live_link("lo").unwrap();
        for (what, problem) in [
            ("modes", l.modes.problem()),
            ("eee", l.eee.problem()),
            ("pause", l.pause.problem()),
        ] {
            let p = problem.unwrap_or_else(|| panic!("lo reports {what}"));
            assert!(p.contains("EOPNOTSUPP"), "{what}: {p}");
        }
        assert!(live_link("a-name-longer-than-15").is_err());
    }

    #[test]
    fn structs_match_the_kernel_abi() {
        assert_eq!(size_of::<EthtoolEee>(), 40);
        assert_eq!(offset_of!(EthtoolEee, eee_active), 16);
        assert_eq!(size_of::<EthtoolPauseparam>(), 16);
        assert_eq!(size_of::<EthtoolLinkSettings>(), 48);
        assert_eq!(offset_of!(EthtoolLinkSettings, link_mode_masks_nwords), 15);
    }

    fn modes(speed: u64, ours: &[u32], partner: &[u32]) -> LinkModes {
        LinkModes {
            speed_mbit_per_sec: Some(speed),
            duplex: Some("full".into()),
            autoneg: true,
            supported: mode_names(ours),
            advertised: mode_names(ours),
            partner_advertised: mode_names(partner),
        }
    }

    fn nic(m: LinkModes) -> NicLink {
        judge_nic(
            "eth0",
            Outcome::Ok {
                data: LinkEthtool {
                    modes: Outcome::Ok { data: m },
                    eee: Outcome::Unsupported { reason: "-".into() },
                    pause: Outcome::Unsupported { reason: "-".into() },
                },
            },
        )
    }

    #[test]
    fn mode_bits_decode_across_words() {
        // 0x2f: 10/100 half and full, 1000 full; word 1 bit 15 = bit 47 2500baseT.
        assert_eq!(
            mode_names(&[0x2f, 1 << 15]),
            [
                "10baseT/Half",
                "10baseT/Full",
                "100baseT/Half",
                "100baseT/Full",
                "1000baseT/Full",
                "2500baseT/Full"
            ]
        );
        // Autoneg (6), TP (7), Pause (13) are not speeds.
        assert!(mode_names(&[(1 << 6) | (1 << 7) | (1 << 13)]).is_empty());
    }

    #[test]
    fn gigabit_on_both_sides_at_100_is_downshifted() {
        let n = nic(modes(100, &[0x2f], &[0x2f]));
        assert!(n.downshifted);
        assert_eq!(n.best_common_mode.as_deref(), Some("1000baseT/Full"));
        assert_eq!(n.best_common_mbit_per_sec, Some(1000));
    }

    #[test]
    fn a_100_megabit_partner_is_not_a_downshift() {
        let n = nic(modes(100, &[0x2f], &[0x0f]));
        assert!(!n.downshifted);
        assert_eq!(n.best_common_mbit_per_sec, Some(100));
        // Without a partner's advertisement nothing can be said.
        let n = nic(modes(100, &[0x2f], &[]));
        assert!(!n.downshifted);
        assert_eq!(n.best_common_mode, None);
    }

    #[test]
    fn sysfs_link_values() {
        assert_eq!(parse_gt("5.0 GT/s PCIe\n"), Some(5.0));
        assert_eq!(parse_gt("2.5 GT/s"), Some(2.5));
        assert_eq!(parse_gt("Unknown"), None);
        assert_eq!(pci_kind("0x010802"), Some("nvme"));
        assert_eq!(pci_kind("0x010601"), Some("sata"));
        assert_eq!(pci_kind("0x020000"), Some("network"));
        assert_eq!(pci_kind("0x0c0330"), None);
        assert!((lane_bytes_per_sec(2.5) - 250e6).abs() < 1.0);
        assert!((lane_bytes_per_sec(8.0) - 984.6e6).abs() < 0.1e6);
    }

    fn pcie(cur: (f64, u32), max: (f64, u32), port: (f64, u32)) -> PcieLink {
        PcieLink {
            address: "0000:01:00.0".into(),
            kind: "sata".into(),
            driver: None,
            current_gt_per_sec: Some(cur.0),
            max_gt_per_sec: Some(max.0),
            current_width: Some(cur.1),
            max_width: Some(max.1),
            port_max_gt_per_sec: Some(port.0),
            port_max_width: Some(port.1),
            downgraded: false,
        }
    }

    #[test]
    fn a_link_below_device_and_port_is_downgraded() {
        // JMB585 (8 GT/s x2) on the RK3399's 5 GT/s x4 port, trained 2.5 GT/s x1.
        assert!(is_downgraded(&pcie((2.5, 1), (8.0, 2), (5.0, 4))));
        // Width alone: 5 GT/s but x1 of x2.
        assert!(is_downgraded(&pcie((5.0, 1), (8.0, 2), (5.0, 4))));
        // Gen 3 card in a Gen 2 slot at Gen 2 x2: what the slot allows.
        assert!(!is_downgraded(&pcie((5.0, 2), (8.0, 2), (5.0, 4))));
    }
}
