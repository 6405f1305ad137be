//! Which kernel-log lines are about a problem, and which device they name.
//! Pure: one message in, one class (or none) out. The patterns are the strings
//! the drivers print (libata's error handler, usb core's hub.c, uas, the block
//! layer, ext4/xfs/btrfs, md, r8169/stmmac/mvneta/mv643xx and the netdev
//! watchdog, the crypto manager's self-tests, the Raspberry Pi firmware and
//! hwmon drivers). Boot chatter (a new USB device, a mounted filesystem, an empty
//! SATA port's "SATA link down", "Link is Up", "self-tests ... passed") matches
//! none of them.
//!
//! "Link is Down" is an event, not a verdict: one at boot or an unplugged cable
//! is normal, several on one NIC are a flapping link. The class records each
//! down; the advise rule and the watch alert decide by how many there are.

use serde::{Deserialize, Serialize};

/// What a kernel-log line is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    AtaLinkReset,
    UsbReset,
    UasAbort,
    IoError,
    FsError,
    Oom,
    UndervoltageThrottle,
    NicLink,
    NicDriverError,
    MdRaid,
    CryptoDriver,
}

impl Class {
    pub const ALL: [Class; 11] = [
        Class::AtaLinkReset,
        Class::UsbReset,
        Class::UasAbort,
        Class::IoError,
        Class::FsError,
        Class::Oom,
        Class::UndervoltageThrottle,
        Class::NicLink,
        Class::NicDriverError,
        Class::MdRaid,
        Class::CryptoDriver,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Class::AtaLinkReset => "ata_link_reset",
            Class::UsbReset => "usb_reset",
            Class::UasAbort => "uas_abort",
            Class::IoError => "io_error",
            Class::FsError => "fs_error",
            Class::Oom => "oom",
            Class::UndervoltageThrottle => "undervoltage_throttle",
            Class::NicLink => "nic_link",
            Class::NicDriverError => "nic_driver_error",
            Class::MdRaid => "md_raid",
            Class::CryptoDriver => "crypto_driver",
        }
    }

    pub fn from_name(name: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// The class of one kernel message (without its timestamp) and the device it
/// names, if any.
pub fn classify(msg: &str) -> Option<(Class, Option<String>)> {
    let msg = msg.trim();
    fs_error(msg)
        .or_else(|| ata(msg))
        .or_else(|| uas(msg))
        .or_else(|| usb(msg))
        .or_else(|| io_error(msg))
        .or_else(|| oom(msg))
        .or_else(|| power(msg))
        .or_else(|| nic(msg))
        .or_else(|| md(msg))
        .or_else(|| crypto(msg))
}

type Hit = Option<(Class, Option<String>)>;

/// The text between `open` and the first of `ends` after it.
fn between(msg: &str, open: &str, ends: &[char]) -> Option<String> {
    let start = msg.find(open)? + open.len();
    let rest = &msg[start..];
    let end = rest.find(ends).unwrap_or(rest.len());
    let v = rest[..end].trim();
    (!v.is_empty()).then(|| v.to_string())
}

/// The whitespace-separated word right before byte `idx`, without a trailing ':'.
fn word_before(msg: &str, idx: usize) -> Option<String> {
    let w = msg[..idx].trim_end().trim_end_matches(':');
    let w = w.rsplit(char::is_whitespace).next()?.trim_end_matches(':');
    (!w.is_empty()).then(|| w.to_string())
}

/// `[sda]` as printed by the SCSI disk driver.
fn bracketed_disk(msg: &str) -> Option<String> {
    let d = between(msg, "[", &[']'])?;
    d.chars().all(|c| c.is_ascii_alphanumeric()).then_some(d)
}

fn fs_error(msg: &str) -> Hit {
    let class = Class::FsError;
    if let Some(rest) = msg
        .strip_prefix("EXT4-fs ")
        .or(msg.strip_prefix("EXT3-fs "))
    {
        // "EXT4-fs error (device sda2): ...", "EXT4-fs (sda2): I/O error while
        // writing superblock", "... Remounting filesystem read-only", the
        // periodic "error count since last fsck".
        let bad = rest.starts_with("error")
            || rest.contains("I/O error")
            || rest.contains("error count since last fsck")
            || rest.contains("initial error at time")
            || rest.contains("last error at time")
            || rest.contains("Remounting filesystem read-only")
            || rest.contains("error reading directory block")
            || rest.contains("error -5 reading");
        return bad.then(|| (class, fs_device(rest)));
    }
    if let Some(rest) = msg.strip_prefix("BTRFS") {
        let bad = rest.starts_with(" error")
            || rest.starts_with(": error")
            || rest.starts_with(" critical")
            || rest.contains("forced readonly")
            || rest.contains("checksum error")
            || rest.contains("csum failed")
            || rest.contains("direct IO failed")
            || btrfs_device_errors(rest);
        return bad.then(|| (class, fs_device(rest)));
    }
    if let Some(rest) = msg.strip_prefix("XFS ") {
        let bad = rest.contains("I/O error")
            || rest.contains("orruption detected")
            || rest.contains("xfs_repair")
            || rest.contains("force_shutdown")
            || rest.contains("has been shut down");
        return bad.then(|| (class, between(rest, "(", &[')'])));
    }
    if let Some(rest) = msg.strip_prefix("FAT-fs ") {
        let bad = rest.contains("unable to read") || rest.contains("error,");
        return bad.then(|| (class, between(rest, "(", &[')'])));
    }
    None
}

/// "bdev /dev/sdb errs: wr 29, rd 0, flush 0, corrupt 21, gen 0" at mount:
/// the device's error counters, a problem when any is non-zero.
fn btrfs_device_errors(rest: &str) -> bool {
    let Some((_, counters)) = rest.split_once("errs:") else {
        return false;
    };
    counters
        .split(',')
        .filter_map(|kv| kv.split_whitespace().last()?.parse::<u64>().ok())
        .any(|n| n > 0)
}

fn fs_device(rest: &str) -> Option<String> {
    between(rest, "(device ", &[')', ' ', ':']).or_else(|| between(rest, "(", &[')']))
}

fn ata(msg: &str) -> Hit {
    if !msg.starts_with("ata") {
        return None;
    }
    let port = msg
        .split([':', '.'])
        .next()
        .filter(|p| p.len() > 3 && p[3..].chars().all(|c| c.is_ascii_digit()))?;
    // libata's error handler: the exception that starts it, the resets it
    // does, the speed it falls back to, and a device it gives up on.
    const EH: [&str; 9] = [
        "hard resetting link",
        "soft resetting link",
        "exception Emask",
        "limiting SATA link speed",
        "COMRESET failed",
        "link is slow to respond",
        "failed command:",
        "SError:",
        ": disabled",
    ];
    if msg.contains("error: { UNC }") || msg.contains("error: { ICRC ABRT }") {
        return Some((Class::IoError, Some(port.to_string())));
    }
    EH.iter()
        .any(|p| msg.contains(p))
        .then(|| (Class::AtaLinkReset, Some(port.to_string())))
}

fn uas(msg: &str) -> Hit {
    let hit = msg.contains("uas_eh_abort_handler")
        || msg.contains("uas_eh_device_reset_handler start")
        || (msg.contains("uas-tag") && msg.contains("cmplt err"))
        || msg.contains("uas_zap_pending");
    hit.then(|| (Class::UasAbort, bracketed_disk(msg)))
}

fn usb(msg: &str) -> Hit {
    // "usb 1-1.3: reset high-speed USB device number 4 using dwc_otg" and the
    // enumeration failures a flaky cable or a starved port gives.
    let rest = msg.strip_prefix("usb ")?;
    let (dev, what) = rest.split_once(": ")?;
    let reset = what.starts_with("reset ") && what.contains("USB device");
    let enumeration = what.contains("device descriptor read")
        || what.contains("device not accepting address")
        || what.contains("unable to enumerate USB device")
        || what.contains("Cannot enable. Maybe the USB cable is bad")
        || what.contains("Device not responding to setup address")
        || what.contains("attempt power cycle");
    (reset || enumeration).then(|| {
        let name = if dev.starts_with("usb") {
            dev.to_string()
        } else {
            format!("usb {dev}")
        };
        (Class::UsbReset, Some(name))
    })
}

fn io_error(msg: &str) -> Hit {
    let class = Class::IoError;
    // Block layer: "blk_update_request: I/O error, dev sda, sector 123",
    // "critical medium error, dev sdb", older "end_request: I/O error, dev sdb".
    if let Some(i) = msg.find(" error, dev ") {
        return Some((class, between(&msg[i..], ", dev ", &[',', ' '])));
    }
    if msg.starts_with("Buffer I/O error on dev") {
        return Some((class, between(msg, "on dev ", &[',', ' '])));
    }
    // SCSI sense data of a failed command.
    let sense = msg.contains("Sense Key : Medium Error")
        || msg.contains("Sense Key : Hardware Error")
        || msg.contains("Unrecovered read error")
        || (msg.contains("FAILED Result:") && msg.starts_with("sd "))
        || msg.contains("rejecting I/O to offline device");
    if sense {
        return Some((class, bracketed_disk(msg)));
    }
    if msg.starts_with("mmcblk") && msg.contains("error") && msg.contains("transferring data") {
        return Some((class, msg.split(':').next().map(str::to_string)));
    }
    None
}

fn oom(msg: &str) -> Hit {
    // One line per kill; "invoked oom-killer" and the task dump around it
    // belong to the same event and are not counted again.
    (msg.contains("Out of memory: Kill") || msg.contains("out of memory: Killed process"))
        .then_some((Class::Oom, None))
}

fn power(msg: &str) -> Hit {
    // raspberrypi firmware (older kernels): "Under-voltage detected! (0x00050005)";
    // raspberrypi-hwmon: "hwmon hwmon1: Undervoltage detected!"; x86 thermal
    // throttling: "CPU0: Core temperature above threshold, cpu clock throttled".
    let hit = msg.contains("Under-voltage detected")
        || msg.contains("Undervoltage detected")
        || msg.contains("cpu clock throttled");
    hit.then_some((Class::UndervoltageThrottle, None))
}

fn nic(msg: &str) -> Hit {
    if let Some(i) = msg.find("NETDEV WATCHDOG: ") {
        let after = &msg[i + "NETDEV WATCHDOG: ".len()..];
        // New format: "r8125 0000:22:04.0 eth4: NETDEV WATCHDOG: CPU: 3: transmit
        // queue 0 timed out"; old: "NETDEV WATCHDOG: eth0 (r8169): transmit ...".
        let dev = if after.starts_with("CPU") {
            word_before(msg, i)
        } else {
            after.split([' ', ':']).next().map(str::to_string)
        };
        return Some((Class::NicDriverError, dev));
    }
    const DRIVER: [&str; 10] = [
        "rtl_rxtx_empty_cond == 0",
        "rtl_txcfg_empty_cond == 0",
        "rtl_chipcmd_cond == 1",
        "rtl_eriar_cond == 1",
        "Transmit timeout reset Device",
        ": Tx timeout",
        "Detected Hardware Unit Hang",
        "bad rx status",
        "Failed to reset the dma",
        "DMA engine initialization failed",
    ];
    if let Some(p) = DRIVER.iter().find(|p| msg.contains(*p)) {
        let i = msg.find(p).unwrap_or(0);
        return Some((Class::NicDriverError, iface_before(msg, i)));
    }
    // phylib and most drivers: "eth0: Link is Down"; e1000e/igb "NIC Link is
    // Down"; mv643xx_eth and mtk "eth0: link down" / "eth0: port 2 link down".
    for p in ["NIC Link is Down", "Link is Down", "link down"] {
        if let Some(i) = msg.find(p) {
            if msg.starts_with("ata") || msg.contains("SATA") {
                return None;
            }
            return Some((Class::NicLink, iface_before(msg, i)));
        }
    }
    None
}

/// The interface a driver message names: the last word ending in ':' before
/// byte `idx` ("r8169 0000:02:00.0 enp2s0: ..." → enp2s0).
fn iface_before(msg: &str, idx: usize) -> Option<String> {
    msg[..idx]
        .split_whitespace()
        .rev()
        .find(|w| w.ends_with(':') && !w.contains("0000:") && w.len() > 1)
        .map(|w| w.trim_end_matches(':').to_string())
        .or_else(|| word_before(msg, idx))
}

fn md(msg: &str) -> Hit {
    let class = Class::MdRaid;
    if let Some(rest) = msg.strip_prefix("md/raid") {
        // "md/raid1:md0: Disk failure on sdb1", "md/raid:md0: raid level 5 active
        // with 3 out of 4 devices" (degraded), "rescheduling sector", "read
        // error corrected", "not clean -- starting background reconstruction".
        let array = rest
            .split(':')
            .nth(1)
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty());
        let degraded = active_with_fewer(rest);
        let bad = degraded
            || rest.contains("Disk failure on")
            || rest.contains("Operation continuing on")
            || rest.contains("rescheduling sector")
            || rest.contains("redirecting sector")
            || rest.contains("read error")
            || rest.contains("not clean")
            || rest.contains("Cannot continue operation");
        return bad.then_some((class, array));
    }
    if let Some(rest) = msg.strip_prefix("md: ") {
        // Resync and recovery load every member for hours; the monthly
        // "data-check" is scheduled and stays unclassified.
        if let Some(array) = ["resync of RAID array ", "recovery of RAID array "]
            .iter()
            .find_map(|p| rest.strip_prefix(p))
        {
            return Some((class, Some(array.trim().to_string())));
        }
        if rest.contains("kicking non-fresh")
            || rest.contains("interrupted")
            || rest.contains("super_written gets error")
        {
            let array = rest
                .split(':')
                .next()
                .filter(|a| a.starts_with("md"))
                .map(str::to_string);
            return Some((class, array));
        }
    }
    None
}

/// "active with 1 out of 2 mirrors": fewer members than the array has.
fn active_with_fewer(rest: &str) -> bool {
    let Some(i) = rest.find("active with ") else {
        return false;
    };
    let mut words = rest[i + "active with ".len()..].split_whitespace();
    let have = words.next().and_then(|w| w.parse::<u32>().ok());
    let _out_of = (words.next(), words.next());
    let want = words.next().and_then(|w| w.parse::<u32>().ok());
    matches!((have, want), (Some(h), Some(w)) if h < w)
}

fn crypto(msg: &str) -> Hit {
    // crypto/testmgr.c: "alg: skcipher: Test 1 failed ... for cbc-aes-aesni",
    // "alg: self-tests for X (Y) failed (rc=-22)"; "... passed" and "No test for"
    // are ordinary.
    let rest = msg.strip_prefix("alg: ")?;
    if !rest.contains("failed") {
        return None;
    }
    let driver = between(rest, " for ", &[' ', ':', ',']);
    Some((Class::CryptoDriver, driver))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(msg: &str) -> Option<Class> {
        classify(msg).map(|(c, _)| c)
    }

    fn device(msg: &str) -> Option<String> {
        classify(msg).and_then(|(_, d)| d)
    }

    #[test]
    fn ata_resets_name_the_port() {
        let l = "ata1: hard resetting link";
        assert_eq!(class(l), Some(Class::AtaLinkReset));
        assert_eq!(device(l).as_deref(), Some("ata1"));
        let l = "ata2.00: exception Emask 0x0 SAct 0x0 SErr 0x0 action 0x6 frozen";
        assert_eq!(device(l).as_deref(), Some("ata2"));
        assert_eq!(
            class("ata3: limiting SATA link speed to 1.5 Gbps"),
            Some(Class::AtaLinkReset)
        );
        assert_eq!(class("ata1.00: error: { UNC }"), Some(Class::IoError));
        // Boot: an empty port and a working link.
        assert_eq!(class("ata3: SATA link down (SStatus 0 SControl 300)"), None);
        assert_eq!(
            class("ata1: SATA link up 6.0 Gbps (SStatus 133 SControl 300)"),
            None
        );
        assert_eq!(class("ata1.00: configured for UDMA/133"), None);
    }

    #[test]
    fn usb_resets_and_enumeration_failures() {
        let l = "usb 1-1.3: reset high-speed USB device number 4 using dwc_otg";
        assert_eq!(class(l), Some(Class::UsbReset));
        assert_eq!(device(l).as_deref(), Some("usb 1-1.3"));
        assert_eq!(
            class("usb 4-1: reset SuperSpeed Plus Gen 2x1 USB device number 2 using xhci-hcd"),
            Some(Class::UsbReset)
        );
        assert_eq!(
            class("usb 1-1: device descriptor read/64, error -71"),
            Some(Class::UsbReset)
        );
        assert_eq!(
            class("usb 1-1: new high-speed USB device number 2 using xhci_hcd"),
            None
        );
        assert_eq!(class("usb 2-1: USB disconnect, device number 2"), None);
    }

    #[test]
    fn uas_aborts_name_the_disk() {
        let l = "sd 0:0:0:0: [sda] tag#26 uas_eh_abort_handler 0 uas-tag 10 inflight: CMD IN";
        assert_eq!(class(l), Some(Class::UasAbort));
        assert_eq!(device(l).as_deref(), Some("sda"));
        assert_eq!(
            class("scsi host0: uas_eh_device_reset_handler start"),
            Some(Class::UasAbort)
        );
        assert_eq!(
            class("scsi host0: uas_eh_device_reset_handler success"),
            None
        );
        assert_eq!(class("sd 0:0:0:0: [sda] Attached SCSI disk"), None);
    }

    #[test]
    fn block_layer_io_errors() {
        let l = "blk_update_request: I/O error, dev sda, sector 5901219408 op 0x0:(READ) flags 0x80700 phys_seg 70 prio class 0";
        assert_eq!(class(l), Some(Class::IoError));
        assert_eq!(device(l).as_deref(), Some("sda"));
        assert_eq!(
            device("I/O error, dev sdb, sector 8 op 0x1:(WRITE)").as_deref(),
            Some("sdb")
        );
        assert_eq!(
            device("Buffer I/O error on dev sda2, logical block 0, lost sync page write")
                .as_deref(),
            Some("sda2")
        );
        assert_eq!(
            class("sd 1:0:0:0: [sdb] tag#0 Sense Key : Medium Error [current]"),
            Some(Class::IoError)
        );
    }

    #[test]
    fn filesystem_errors_but_not_mounts() {
        let l = "EXT4-fs error (device sda2): __ext4_find_entry:1612: inode #2: comm ls: reading directory lblock 0";
        assert_eq!(class(l), Some(Class::FsError));
        assert_eq!(device(l).as_deref(), Some("sda2"));
        assert_eq!(
            device("EXT4-fs (sda7): error count since last fsck: 627").as_deref(),
            Some("sda7")
        );
        assert_eq!(
            device("BTRFS error (device dm-0): bdev /dev/mapper/root errs: wr 0, rd 1").as_deref(),
            Some("dm-0")
        );
        assert_eq!(
            device("XFS (vda4): Unmount and run xfs_repair").as_deref(),
            Some("vda4")
        );
        assert_eq!(
            class("EXT4-fs (mmcblk0p2): mounted filesystem with ordered data mode. Opts: (null)"),
            None
        );
        assert_eq!(
            class("BTRFS info (device sda1): disk space caching is enabled"),
            None
        );
        assert_eq!(class("XFS (sdb1): Ending clean mount"), None);
    }

    #[test]
    fn oom_counts_kills_once() {
        assert_eq!(
            class("Out of memory: Killed process 360 (polkitd) total-vm:236348kB, anon-rss:3020kB"),
            Some(Class::Oom)
        );
        assert_eq!(
            class("Memory cgroup out of memory: Killed process 77 (java)"),
            Some(Class::Oom)
        );
        assert_eq!(
            class("python3 invoked oom-killer: gfp_mask=0x15080c0, order=1"),
            None
        );
    }

    #[test]
    fn undervoltage_and_throttling() {
        assert_eq!(
            class("Under-voltage detected! (0x00050005)"),
            Some(Class::UndervoltageThrottle)
        );
        assert_eq!(
            class("hwmon hwmon1: Undervoltage detected!"),
            Some(Class::UndervoltageThrottle)
        );
        assert_eq!(class("Voltage normalised (0x00000000)"), None);
        assert_eq!(class("hwmon hwmon1: Voltage normalised"), None);
    }

    #[test]
    fn nic_link_downs_and_driver_errors() {
        let l = "r8169 0000:01:00.0 enp1s0: Link is Down";
        assert_eq!(class(l), Some(Class::NicLink));
        assert_eq!(device(l).as_deref(), Some("enp1s0"));
        assert_eq!(
            device("e1000e 0000:00:19.0 eth0: NIC Link is Down").as_deref(),
            Some("eth0")
        );
        assert_eq!(
            device("mv643xx_eth_port mv643xx_eth_port.0 eth0: link down").as_deref(),
            Some("eth0")
        );
        assert_eq!(
            class(
                "stmmaceth 18140000.ethernet eth0: Link is Up - 100Mbps/Full - flow control rx/tx"
            ),
            None
        );
        let l = "NETDEV WATCHDOG: eth0 (bcmgenet): transmit queue 3 timed out";
        assert_eq!(class(l), Some(Class::NicDriverError));
        assert_eq!(device(l).as_deref(), Some("eth0"));
        let l =
            "r8125 0000:22:04.0 eth4: NETDEV WATCHDOG: CPU: 3: transmit queue 0 timed out 5010 ms";
        assert_eq!(device(l).as_deref(), Some("eth4"));
        let l = "r8169 0000:02:00.0 enp2s0: rtl_rxtx_empty_cond == 0 (loop: 42, delay: 100).";
        assert_eq!(device(l).as_deref(), Some("enp2s0"));
        let l = "mvneta f1070000.ethernet eth0: bad rx status 0f830000 (overrun error), size=1536";
        assert_eq!(class(l), Some(Class::NicDriverError));
        assert_eq!(device(l).as_deref(), Some("eth0"));
    }

    #[test]
    fn md_failures_degraded_and_resync() {
        let l = "md/raid1:md0: Disk failure on sdb1, disabling device.";
        assert_eq!(class(l), Some(Class::MdRaid));
        assert_eq!(device(l).as_deref(), Some("md0"));
        assert_eq!(
            class("md/raid1:md0: active with 1 out of 2 mirrors"),
            Some(Class::MdRaid)
        );
        assert_eq!(class("md/raid1:md0: active with 2 out of 2 mirrors"), None);
        assert_eq!(
            device("md: resync of RAID array md0").as_deref(),
            Some("md0")
        );
        assert_eq!(class("md: data-check of RAID array md0"), None);
        assert_eq!(class("md: md0: resync done."), None);
    }

    #[test]
    fn crypto_self_test_failures_not_passes() {
        let l = "alg: skcipher: Test 1 failed (invalid result) on encryption for cbc-aes-aesni";
        assert_eq!(class(l), Some(Class::CryptoDriver));
        assert_eq!(device(l).as_deref(), Some("cbc-aes-aesni"));
        assert_eq!(
            class("alg: self-tests for drbg_nopr_sha256 (stdrng) passed"),
            None
        );
        assert_eq!(class("alg: No test for stdrng (krng)"), None);
    }

    /// The held-out corpus: lines real boards printed, from public threads.
    #[test]
    fn real_lines_are_classified() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/kmsg/real-lines.tsv"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let (mut problems, mut right, mut ordinary) = (0, 0, 0);
        let mut wrong = Vec::new();
        for row in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let cols: Vec<&str> = row.split('\t').collect();
            assert_eq!(cols.len(), 3, "{row}");
            assert!(cols[2].starts_with("http"), "{row}");
            let got = class(cols[1]);
            if cols[0] == "none" {
                ordinary += 1;
                assert_eq!(got, None, "ordinary line flagged: {}", cols[1]);
            } else {
                problems += 1;
                let want = Class::from_name(cols[0]).unwrap();
                if got == Some(want) {
                    right += 1;
                } else {
                    wrong.push(format!("{} -> {got:?}: {}", cols[0], cols[1]));
                }
            }
        }
        eprintln!(
            "{right} of {problems} problem lines right, {ordinary} ordinary lines unflagged; wrong: {wrong:#?}"
        );
        assert!(
            problems >= 40 && ordinary >= 40,
            "{problems} problem, {ordinary} ordinary"
        );
        assert!(
            right * 100 >= problems * 90,
            "{right} of {problems} right; wrong: {wrong:#?}"
        );
    }

    #[test]
    fn class_names_round_trip() {
        for c in Class::ALL {
            assert_eq!(Class::from_name(c.name()), Some(c));
            assert_eq!(serde_json::to_value(c).unwrap(), c.name());
        }
    }
}
