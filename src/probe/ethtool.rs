//! Driver info, offload features, ring sizes and interrupt coalescing through the
//! `SIOCETHTOOL` ioctl.
//! The ioctl works on old vendor NAS kernels where ethtool-over-netlink (5.6+) does
//! not; libc has the request number but not the structs, so they are here, laid
//! out as in `include/uapi/linux/ethtool.h`.
//!
//! Each item is asked separately: a driver that lacks ring sizes (lo, veth, usbnet)
//! still reports its features, and the reason it lacks rings is kept per item.

use serde::{Deserialize, Serialize};

use super::Outcome;

/// Features worth showing: the kernel names behind `ethtool -k`'s rx/tx checksum,
/// scatter-gather, TSO, GSO, GRO and LRO lines. The full set (~60) is noise here.
pub const INTERESTING_FEATURES: &[&str] = &[
    "rx-checksum",
    "tx-checksum-ipv4",
    "tx-checksum-ip-generic",
    "tx-checksum-ipv6",
    "tx-scatter-gather",
    "tx-tcp-segmentation",
    "tx-tcp6-segmentation",
    "tx-generic-segmentation",
    "tx-udp-segmentation",
    "rx-gro",
    "rx-gro-hw",
    "rx-lro",
    "rx-hashing",
];

/// What the ethtool ioctl told about one interface; stored as
/// `.nastune/ethtool/<ifname>.json` in a capture.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Ethtool {
    pub driver_info: Outcome<DriverInfo>,
    pub rings: Outcome<Rings>,
    pub features: Outcome<Vec<Feature>>,
    /// `None` in captures made before nastune read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coalesce: Option<Outcome<Coalesce>>,
}

/// `ETHTOOL_GCOALESCE`: how long (µs) and how many frames the NIC waits before
/// it interrupts, per direction, and whether the driver adapts that itself
/// (ethtool -c: rx-usecs, rx-frames, tx-usecs, tx-frames, adaptive-rx/tx).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Coalesce {
    pub rx_usecs: u32,
    pub rx_frames: u32,
    pub tx_usecs: u32,
    pub tx_frames: u32,
    pub adaptive_rx: bool,
    pub adaptive_tx: bool,
}

/// The coalescing settings by their `ethtool -C` names.
pub const COALESCE_SETTINGS: [&str; 6] = [
    "rx-usecs",
    "rx-frames",
    "tx-usecs",
    "tx-frames",
    "adaptive-rx",
    "adaptive-tx",
];

impl Coalesce {
    /// The value of a setting of [`COALESCE_SETTINGS`] as `ethtool -c` shows it
    /// (a number, or on/off for adaptive-rx/tx).
    pub fn get(&self, setting: &str) -> Option<String> {
        let on_off = |b: bool| if b { "on" } else { "off" }.to_string();
        Some(match setting {
            "rx-usecs" => self.rx_usecs.to_string(),
            "rx-frames" => self.rx_frames.to_string(),
            "tx-usecs" => self.tx_usecs.to_string(),
            "tx-frames" => self.tx_frames.to_string(),
            "adaptive-rx" => on_off(self.adaptive_rx),
            "adaptive-tx" => on_off(self.adaptive_tx),
            _ => return None,
        })
    }
}

/// `struct ethtool_coalesce`: 23 u32 (92 bytes); only the first twelve are
/// named, the rest (adaptive low/high thresholds) are kept as read.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct EthtoolCoalesce {
    pub cmd: u32,
    pub rx_coalesce_usecs: u32,
    pub rx_max_coalesced_frames: u32,
    pub rx_coalesce_usecs_irq: u32,
    pub rx_max_coalesced_frames_irq: u32,
    pub tx_coalesce_usecs: u32,
    pub tx_max_coalesced_frames: u32,
    pub tx_coalesce_usecs_irq: u32,
    pub tx_max_coalesced_frames_irq: u32,
    pub stats_block_coalesce_usecs: u32,
    pub use_adaptive_rx_coalesce: u32,
    pub use_adaptive_tx_coalesce: u32,
    pub rest: [u32; 11],
}

impl EthtoolCoalesce {
    fn coalesce(&self) -> Coalesce {
        Coalesce {
            rx_usecs: self.rx_coalesce_usecs,
            rx_frames: self.rx_max_coalesced_frames,
            tx_usecs: self.tx_coalesce_usecs,
            tx_frames: self.tx_max_coalesced_frames,
            adaptive_rx: self.use_adaptive_rx_coalesce != 0,
            adaptive_tx: self.use_adaptive_tx_coalesce != 0,
        }
    }

    /// Sets one setting of [`COALESCE_SETTINGS`]; `None` for another name.
    pub fn set(&mut self, setting: &str, value: u32) -> Option<()> {
        let field = match setting {
            "rx-usecs" => &mut self.rx_coalesce_usecs,
            "rx-frames" => &mut self.rx_max_coalesced_frames,
            "tx-usecs" => &mut self.tx_coalesce_usecs,
            "tx-frames" => &mut self.tx_max_coalesced_frames,
            "adaptive-rx" => &mut self.use_adaptive_rx_coalesce,
            "adaptive-tx" => &mut self.use_adaptive_tx_coalesce,
            _ => return None,
        };
        *field = value;
        Some(())
    }
}

/// `ETHTOOL_GDRVINFO`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DriverInfo {
    pub driver: String,
    pub version: String,
    pub firmware_version: String,
    pub bus_info: String,
}

/// `ETHTOOL_GRINGPARAM`: descriptors per ring, current and the hardware maximum.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Rings {
    pub rx_pending: u32,
    pub rx_max: u32,
    pub tx_pending: u32,
    pub tx_max: u32,
}

/// One offload feature: whether it is on, and whether it can be changed at all
/// (ethtool's `[fixed]`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Feature {
    pub name: String,
    pub active: bool,
    pub fixed: bool,
}

// Command numbers and sizes from include/uapi/linux/ethtool.h.
const ETHTOOL_GDRVINFO: u32 = 0x03;
const ETHTOOL_GRINGPARAM: u32 = 0x10;
const ETHTOOL_GSTRINGS: u32 = 0x1b;
const ETHTOOL_GSSET_INFO: u32 = 0x37;
const ETHTOOL_GFEATURES: u32 = 0x3a;
const ETHTOOL_SRINGPARAM: u32 = 0x11;
const ETHTOOL_SFEATURES: u32 = 0x3b;
const ETHTOOL_GSTATS: u32 = 0x1d;
const ETHTOOL_GCOALESCE: u32 = 0x0e;
const ETHTOOL_SCOALESCE: u32 = 0x0f;
const ETH_SS_STATS: u32 = 1;
const ETH_SS_FEATURES: u32 = 4;
const ETH_GSTRING_LEN: usize = 32;
/// No kernel has more than a few hundred feature bits or driver counters;
/// refuse absurd counts.
const MAX_STRINGS: u32 = 4096;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct EthtoolDrvinfo {
    pub cmd: u32,
    pub driver: [u8; 32],
    pub version: [u8; 32],
    pub fw_version: [u8; 32],
    pub bus_info: [u8; 32],
    pub erom_version: [u8; 32],
    pub reserved2: [u8; 12],
    pub n_priv_flags: u32,
    pub n_stats: u32,
    pub testinfo_len: u32,
    pub eedump_len: u32,
    pub regdump_len: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct EthtoolRingparam {
    pub cmd: u32,
    pub rx_max_pending: u32,
    pub rx_mini_max_pending: u32,
    pub rx_jumbo_max_pending: u32,
    pub tx_max_pending: u32,
    pub rx_pending: u32,
    pub rx_mini_pending: u32,
    pub rx_jumbo_pending: u32,
    pub tx_pending: u32,
}

/// Header of `struct ethtool_sset_info`; one `u32` count per set bit follows.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct EthtoolSsetInfo {
    pub cmd: u32,
    pub reserved: u32,
    pub sset_mask: u64,
    pub data: [u32; 1],
}

/// Header of `struct ethtool_gstrings`; `len` strings of 32 bytes follow.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct EthtoolGstrings {
    pub cmd: u32,
    pub string_set: u32,
    pub len: u32,
}

/// Header of `struct ethtool_gfeatures`; `size` blocks follow.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct EthtoolGfeatures {
    pub cmd: u32,
    pub size: u32,
}

/// `struct ethtool_get_features_block`: one 32-feature slice of the bitmaps.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FeaturesBlock {
    pub available: u32,
    pub requested: u32,
    pub active: u32,
    pub never_changed: u32,
}

/// Reads everything for `ifname` on the running system (in the caller's network
/// namespace). `Err` only when no ioctl can be made at all.
pub fn live_ethtool(ifname: &str) -> Result<Ethtool, String> {
    let sock = Socket::new()?;
    let req = Request::new(&sock, ifname)?;
    Ok(Ethtool {
        driver_info: item("driver info", req.drvinfo()),
        rings: item("ring sizes", req.rings()),
        features: item("offload features", req.features()),
        coalesce: Some(item(
            "interrupt coalescing",
            req.coalesce_raw().map(|c| c.coalesce()),
        )),
    })
}

/// Turns an ioctl result into a per-item outcome: "the driver does not do this"
/// is unsupported, anything else failed.
pub(crate) fn item<T>(what: &str, r: std::io::Result<T>) -> Outcome<T> {
    match r {
        Ok(data) => Outcome::Ok { data },
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Outcome::Unsupported {
            reason: format!("the driver does not report {what} (EOPNOTSUPP)"),
        },
        Err(e) => Outcome::Failed {
            error: format!("ethtool ioctl for {what} failed: {e}"),
        },
    }
}

/// A socket for interface ioctls, in the caller's network namespace; also used
/// by `tune::netdev` to change what is read here.
pub(crate) struct Socket(libc::c_int);

impl Socket {
    pub(crate) fn new() -> Result<Self, String> {
        // SAFETY: plain socket(2) call; the fd is owned by Socket and closed on drop.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(format!(
                "cannot open a socket for ethtool ioctls: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(Socket(fd))
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        // SAFETY: we own the fd.
        unsafe { libc::close(self.0) };
    }
}

pub(crate) struct Request<'a> {
    sock: &'a Socket,
    name: [libc::c_char; libc::IFNAMSIZ],
}

impl<'a> Request<'a> {
    pub(crate) fn new(sock: &'a Socket, ifname: &str) -> Result<Self, String> {
        let bytes = ifname.as_bytes();
        if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
            return Err(format!(
                "'{ifname}' is not a valid interface name (1 to 15 bytes, no NUL)"
            ));
        }
        let mut name = [0 as libc::c_char; libc::IFNAMSIZ];
        for (d, s) in name.iter_mut().zip(bytes) {
            *d = *s as libc::c_char;
        }
        Ok(Request { sock, name })
    }

    /// Runs one ethtool command whose struct starts at `data`.
    ///
    /// # Safety
    /// `data` must point to a buffer laid out as the kernel expects for the
    /// command in its first `u32`, large enough for what the kernel writes back.
    pub(crate) unsafe fn ioctl(&self, data: *mut u8) -> std::io::Result<()> {
        let mut ifr = self.ifreq();
        ifr.ifr_ifru.ifru_data = data.cast();
        // SAFETY: SIOCETHTOOL reads ifr and the buffer it points to; the caller
        // guarantees the buffer's layout and size.
        unsafe { self.ifreq_ioctl(libc::SIOCETHTOOL, &mut ifr) }
    }

    fn ifreq(&self) -> libc::ifreq {
        // SAFETY: ifreq is plain old data.
        let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
        ifr.ifr_name = self.name;
        ifr
    }

    /// # Safety
    /// `ifr` must be what `request` expects (for SIOCETHTOOL, a valid buffer).
    unsafe fn ifreq_ioctl(
        &self,
        request: libc::c_ulong,
        ifr: &mut libc::ifreq,
    ) -> std::io::Result<()> {
        // SAFETY: the caller matched ifr to the request.
        let rc = unsafe { libc::ioctl(self.sock.0, request as _, ifr as *mut libc::ifreq) };
        if rc < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// An integer interface setting: SIOCGIFMTU, SIOCGIFTXQLEN. Every int member
    /// of the ifreq union (mtu, qlen) sits at offset 0, so one field serves all.
    pub(crate) fn get_int(&self, request: libc::c_ulong) -> std::io::Result<i32> {
        let mut ifr = self.ifreq();
        // SAFETY: these requests read the name and write one int.
        unsafe { self.ifreq_ioctl(request, &mut ifr)? };
        // SAFETY: the kernel wrote the int member.
        Ok(unsafe { ifr.ifr_ifru.ifru_mtu })
    }

    /// SIOCSIFMTU, SIOCSIFTXQLEN.
    pub(crate) fn set_int(&self, request: libc::c_ulong, value: i32) -> std::io::Result<()> {
        let mut ifr = self.ifreq();
        ifr.ifr_ifru.ifru_mtu = value;
        // SAFETY: these requests read the name and one int.
        unsafe { self.ifreq_ioctl(request, &mut ifr) }
    }

    fn drvinfo(&self) -> std::io::Result<DriverInfo> {
        // SAFETY: all-zero is a valid EthtoolDrvinfo.
        let mut d: EthtoolDrvinfo = unsafe { std::mem::zeroed() };
        d.cmd = ETHTOOL_GDRVINFO;
        // SAFETY: d is a complete struct ethtool_drvinfo.
        unsafe { self.ioctl((&raw mut d).cast())? };
        Ok(DriverInfo {
            driver: c_text(&d.driver),
            version: c_text(&d.version),
            firmware_version: c_text(&d.fw_version),
            bus_info: c_text(&d.bus_info),
        })
    }

    fn ringparam(&self) -> std::io::Result<EthtoolRingparam> {
        let mut r = EthtoolRingparam {
            cmd: ETHTOOL_GRINGPARAM,
            ..Default::default()
        };
        // SAFETY: r is a complete struct ethtool_ringparam.
        unsafe { self.ioctl((&raw mut r).cast())? };
        Ok(r)
    }

    pub(crate) fn rings(&self) -> std::io::Result<Rings> {
        let r = self.ringparam()?;
        Ok(Rings {
            rx_pending: r.rx_pending,
            rx_max: r.rx_max_pending,
            tx_pending: r.tx_pending,
            tx_max: r.tx_max_pending,
        })
    }

    /// The whole coalescing struct, as the driver reports it.
    pub(crate) fn coalesce_raw(&self) -> std::io::Result<EthtoolCoalesce> {
        let mut c = EthtoolCoalesce {
            cmd: ETHTOOL_GCOALESCE,
            ..Default::default()
        };
        // SAFETY: c is a complete struct ethtool_coalesce.
        unsafe { self.ioctl((&raw mut c).cast())? };
        Ok(c)
    }

    /// The coalescing settings.
    pub(crate) fn coalesce(&self) -> std::io::Result<Coalesce> {
        self.coalesce_raw().map(|c| c.coalesce())
    }

    /// Writes the coalescing struct back (read it with [`Self::coalesce_raw`]
    /// and change one field, so everything else stays as the driver had it).
    pub(crate) fn set_coalesce(&self, mut c: EthtoolCoalesce) -> std::io::Result<()> {
        c.cmd = ETHTOOL_SCOALESCE;
        // SAFETY: c is a complete struct ethtool_coalesce.
        unsafe { self.ioctl((&raw mut c).cast()) }
    }

    /// Sets the rx and tx ring sizes; the mini and jumbo rings keep their sizes.
    pub(crate) fn set_rings(&self, rx: u32, tx: u32) -> std::io::Result<()> {
        let mut r = self.ringparam()?;
        r.cmd = ETHTOOL_SRINGPARAM;
        r.rx_pending = rx;
        r.tx_pending = tx;
        // SAFETY: r is a complete struct ethtool_ringparam.
        unsafe { self.ioctl((&raw mut r).cast()) }
    }

    /// How many strings a string set has (`ETHTOOL_GSSET_INFO`); EOPNOTSUPP
    /// when the driver has none.
    fn string_set_len(&self, set: u32) -> std::io::Result<u32> {
        let mut s = EthtoolSsetInfo {
            cmd: ETHTOOL_GSSET_INFO,
            sset_mask: 1 << set,
            ..Default::default()
        };
        // SAFETY: one set is asked for, so the kernel writes one u32 into data.
        unsafe { self.ioctl((&raw mut s).cast())? };
        if s.sset_mask & (1 << set) == 0 {
            return Err(std::io::Error::from_raw_os_error(libc::EOPNOTSUPP));
        }
        if s.data[0] > MAX_STRINGS {
            return Err(std::io::Error::other(format!(
                "kernel reports '{}' names in string set {set}; more than {MAX_STRINGS} is not plausible",
                s.data[0]
            )));
        }
        Ok(s.data[0])
    }

    /// The names of a string set (`ETHTOOL_GSTRINGS`): features, statistics.
    fn strings(&self, set: u32, count: u32) -> std::io::Result<Vec<String>> {
        let header = size_of::<EthtoolGstrings>();
        let mut buf = AlignedBuf::new(header + count as usize * ETH_GSTRING_LEN);
        buf.put(EthtoolGstrings {
            cmd: ETHTOOL_GSTRINGS,
            string_set: set,
            len: count,
        });
        // SAFETY: the buffer holds the header and `count` strings.
        unsafe { self.ioctl(buf.as_mut_ptr())? };
        let bytes = buf.bytes();
        Ok(bytes[header..]
            .chunks_exact(ETH_GSTRING_LEN)
            .take(count as usize)
            .map(c_text)
            .collect())
    }

    /// The driver's own counters with their names (`ETHTOOL_GSTRINGS` of
    /// ETH_SS_STATS + `ETHTOOL_GSTATS`), as `ethtool -S` shows them.
    pub(crate) fn stats(&self) -> std::io::Result<Vec<(String, u64)>> {
        let count = self.string_set_len(ETH_SS_STATS)?;
        let names = self.strings(ETH_SS_STATS, count)?;
        // struct ethtool_stats { u32 cmd; u32 n_stats; u64 data[]; }
        let header = 8;
        let mut buf = AlignedBuf::new(header + count as usize * 8);
        buf.put_u32(0, ETHTOOL_GSTATS);
        buf.put_u32(4, count);
        // SAFETY: the buffer holds the header and `count` u64 values.
        unsafe { self.ioctl(buf.as_mut_ptr())? };
        let values = buf.bytes()[header..]
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8])));
        Ok(names.into_iter().zip(values).collect())
    }

    fn features(&self) -> std::io::Result<Vec<Feature>> {
        let (names, blocks) = self.feature_bits()?;
        Ok(select_features(&names, &blocks))
    }

    /// Every feature name with its bit blocks (feature `i` is bit `i % 32` of block `i / 32`).
    pub(crate) fn feature_bits(&self) -> std::io::Result<(Vec<String>, Vec<FeaturesBlock>)> {
        let count = self.string_set_len(ETH_SS_FEATURES)?;
        let names = self.strings(ETH_SS_FEATURES, count)?;
        let blocks = count.div_ceil(32);
        let header = size_of::<EthtoolGfeatures>();
        let mut buf = AlignedBuf::new(header + blocks as usize * size_of::<FeaturesBlock>());
        buf.put(EthtoolGfeatures {
            cmd: ETHTOOL_GFEATURES,
            size: blocks,
        });
        // SAFETY: the buffer holds the header and `blocks` feature blocks.
        unsafe { self.ioctl(buf.as_mut_ptr())? };
        let parsed = parse_feature_blocks(&buf.bytes()[header..], blocks as usize);
        Ok((names, parsed))
    }

    /// Asks the driver to turn feature `index` on or off (`ETHTOOL_SFEATURES`).
    /// The kernel may keep it as it was (a dependency, a fixed bit) without an
    /// error, so callers read the result back.
    pub(crate) fn set_feature(&self, index: usize, blocks: u32, on: bool) -> std::io::Result<()> {
        let header = size_of::<EthtoolGfeatures>();
        let mut buf = AlignedBuf::new(header + blocks as usize * 8);
        buf.put(EthtoolGfeatures {
            cmd: ETHTOOL_SFEATURES,
            size: blocks,
        });
        // struct ethtool_set_features_block { u32 valid; u32 requested; }
        let block = header + (index / 32) * 8;
        let bit = 1u32 << (index % 32);
        buf.put_u32(block, bit);
        buf.put_u32(block + 4, if on { bit } else { 0 });
        // SAFETY: the buffer holds the header and `blocks` set-feature blocks.
        unsafe { self.ioctl(buf.as_mut_ptr()) }
    }
}

/// A zeroed byte buffer aligned for the u64 inside ethtool structs.
pub(crate) struct AlignedBuf {
    words: Vec<u64>,
    len: usize,
}

impl AlignedBuf {
    pub(crate) fn new(len: usize) -> Self {
        AlignedBuf {
            words: vec![0; len.div_ceil(8)],
            len,
        }
    }

    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.words.as_mut_ptr().cast()
    }

    /// Writes a header struct at the start.
    pub(crate) fn put<T: Copy>(&mut self, header: T) {
        assert!(size_of::<T>() <= self.len, "header larger than buffer");
        // SAFETY: the buffer is at least size_of::<T>() bytes and 8-aligned.
        unsafe { std::ptr::write(self.words.as_mut_ptr().cast::<T>(), header) };
    }

    /// Writes a native-endian u32 at byte `offset`.
    fn put_u32(&mut self, offset: usize, value: u32) {
        assert!(offset + 4 <= self.len, "u32 beyond the buffer");
        // SAFETY: in bounds (checked above); the Vec<u64> is initialised memory.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<u8>(), self.len)
        };
        bytes[offset..offset + 4].copy_from_slice(&value.to_ne_bytes());
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: the Vec holds at least `len` initialised bytes.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len) }
    }
}

/// Reads `n` feature blocks (4 native-endian u32 each) from kernel bytes.
pub fn parse_feature_blocks(bytes: &[u8], n: usize) -> Vec<FeaturesBlock> {
    let word = |c: &[u8], i: usize| {
        let mut w = [0u8; 4];
        w.copy_from_slice(&c[i * 4..i * 4 + 4]);
        u32::from_ne_bytes(w)
    };
    bytes
        .chunks_exact(size_of::<FeaturesBlock>())
        .take(n)
        .map(|c| FeaturesBlock {
            available: word(c, 0),
            requested: word(c, 1),
            active: word(c, 2),
            never_changed: word(c, 3),
        })
        .collect()
}

/// Pairs feature names with their bits and keeps [`INTERESTING_FEATURES`], in
/// that order. Fixed means what ethtool prints as `[fixed]`: not changeable.
pub fn select_features(names: &[String], blocks: &[FeaturesBlock]) -> Vec<Feature> {
    INTERESTING_FEATURES
        .iter()
        .filter_map(|want| {
            let i = names.iter().position(|n| n == want)?;
            let block = blocks.get(i / 32)?;
            let bit = 1u32 << (i % 32);
            Some(Feature {
                name: want.to_string(),
                active: block.active & bit != 0,
                fixed: block.available & bit == 0 || block.never_changed & bit != 0,
            })
        })
        .collect()
}

/// A NUL-padded C string field as text (lossy: drivers put odd bytes there).
fn c_text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    /// Sizes and offsets from pahole on the kernel's uapi structs; they are the
    /// same on 32- and 64-bit ABIs (the u64 in sset_info sits at offset 8 either way).
    #[test]
    fn structs_match_the_kernel_abi() {
        assert_eq!(size_of::<EthtoolDrvinfo>(), 196);
        assert_eq!(offset_of!(EthtoolDrvinfo, driver), 4);
        assert_eq!(offset_of!(EthtoolDrvinfo, bus_info), 100);
        assert_eq!(offset_of!(EthtoolDrvinfo, n_priv_flags), 176);
        assert_eq!(offset_of!(EthtoolDrvinfo, regdump_len), 192);
        assert_eq!(size_of::<EthtoolRingparam>(), 36);
        assert_eq!(offset_of!(EthtoolRingparam, rx_pending), 20);
        assert_eq!(offset_of!(EthtoolRingparam, tx_pending), 32);
        assert_eq!(offset_of!(EthtoolSsetInfo, sset_mask), 8);
        assert_eq!(offset_of!(EthtoolSsetInfo, data), 16);
        assert_eq!(size_of::<EthtoolGstrings>(), 12);
        assert_eq!(size_of::<EthtoolGfeatures>(), 8);
        assert_eq!(size_of::<FeaturesBlock>(), 16);
        assert_eq!(size_of::<EthtoolCoalesce>(), 92);
        assert_eq!(offset_of!(EthtoolCoalesce, tx_coalesce_usecs), 20);
        assert_eq!(offset_of!(EthtoolCoalesce, use_adaptive_rx_coalesce), 40);
    }

    fn block_bytes(blocks: &[[u32; 4]]) -> Vec<u8> {
        blocks
            .iter()
            .flat_map(|b| b.iter().flat_map(|w| w.to_ne_bytes()))
            .collect()
    }

    #[test]
    fn features_pair_names_with_bits() {
        // Bit 0 sg (changeable, on), bit 1 tso (fixed off), bit 33 rx-gro (on, 2nd block).
        let mut names: Vec<String> = (0..40).map(|i| format!("f{i}")).collect();
        names[0] = "tx-scatter-gather".into();
        names[1] = "tx-tcp-segmentation".into();
        names[33] = "rx-gro".into();
        let bytes = block_bytes(&[[0b01, 0b01, 0b01, 0], [0b10, 0b10, 0b10, 0]]);
        let blocks = parse_feature_blocks(&bytes, 2);
        assert_eq!(blocks.len(), 2);
        let f = select_features(&names, &blocks);
        assert_eq!(
            f,
            vec![
                Feature {
                    name: "tx-scatter-gather".into(),
                    active: true,
                    fixed: false
                },
                Feature {
                    name: "tx-tcp-segmentation".into(),
                    active: false,
                    fixed: true
                },
                Feature {
                    name: "rx-gro".into(),
                    active: true,
                    fixed: false
                },
            ]
        );
    }

    #[test]
    fn short_kernel_replies_drop_features_instead_of_panicking() {
        let names = vec!["rx-gro".to_string(); 1];
        let blocks = parse_feature_blocks(&[1, 2, 3], 1);
        assert!(blocks.is_empty());
        assert!(select_features(&names, &blocks).is_empty());
    }

    #[test]
    fn c_text_stops_at_nul() {
        assert_eq!(c_text(b"veth\0\0junk"), "veth");
        assert_eq!(c_text(b"full"), "full");
    }

    #[test]
    fn interface_names_are_checked() {
        let sock = Socket::new().unwrap();
        assert!(Request::new(&sock, "").is_err());
        assert!(Request::new(&sock, "a-name-longer-than-15").is_err());
        assert!(Request::new(&sock, "eth0").is_ok());
    }

    #[test]
    fn loopback_has_features_but_no_rings() {
        let e = live_ethtool("lo").unwrap();
        assert!(
            matches!(e.rings, Outcome::Unsupported { .. }),
            "lo rings: {:?}",
            e.rings
        );
        let f = e.features.data().expect("lo reports features");
        assert!(f.iter().any(|f| f.name == "tx-scatter-gather"), "{f:?}");
        // lo has no interrupts to coalesce: unsupported, not failed.
        assert!(
            matches!(e.coalesce, Some(Outcome::Unsupported { ref reason }) if reason.contains("interrupt coalescing")),
            "lo coalescing: {:?}",
            e.coalesce
        );
    }

    #[test]
    fn coalescing_settings_by_their_ethtool_names() {
        let mut raw = EthtoolCoalesce {
            rx_coalesce_usecs: 3,
            rx_max_coalesced_frames: 1,
            use_adaptive_rx_coalesce: 1,
            ..Default::default()
        };
        let c = raw.coalesce();
        assert_eq!(c.get("rx-usecs").as_deref(), Some("3"));
        assert_eq!(c.get("adaptive-rx").as_deref(), Some("on"));
        assert_eq!(c.get("adaptive-tx").as_deref(), Some("off"));
        assert_eq!(c.get("rx-bogus"), None);
        for (i, name) in COALESCE_SETTINGS.iter().enumerate() {
            raw.set(name, 100 + i as u32).unwrap();
        }
        assert_eq!(
            (
                raw.rx_coalesce_usecs,
                raw.rx_max_coalesced_frames,
                raw.tx_coalesce_usecs
            ),
            (100, 101, 102)
        );
        assert_eq!(raw.tx_max_coalesced_frames, 103);
        assert_eq!(raw.use_adaptive_tx_coalesce, 105);
        assert_eq!(raw.set("rx", 1), None);
    }
}
