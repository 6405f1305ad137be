//! Network interfaces: link state, MTU, queue, qdisc, ethtool offloads and rings,
//! counters (and how wide they are), and the per-CPU softnet backlog statistics
//! that later explain `rx_dropped`.
//!
//! Everything is read in the probing process's network namespace: /sys reflects
//! the namespace that mounted it, which `ip netns exec` arranges.

use serde::{Deserialize, Serialize};

use super::ethtool::{self, Ethtool};
use super::qdisc::{self, RootQdisc};
use super::text::parse_u64;
use super::{Outcome, ParseError, ProbeError};
use crate::root::{ReadError, Root};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Network {
    pub interfaces: Vec<Interface>,
    /// Why no interface has a qdisc, when the rtnetlink dump was not possible.
    pub qdisc_unavailable: Option<String>,
    /// /proc/net/softnet_stat, one entry per online CPU.
    pub softnet: Outcome<Vec<SoftnetCpu>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Interface {
    pub name: String,
    pub ifindex: Option<u32>,
    /// Hardware address (sysfs `address`); with `ifindex` it tells a returning
    /// interface from a new one of the same name.
    pub mac_address: Option<String>,
    /// lo, veth, bridges, bonds, tunnels: the sysfs link points under devices/virtual.
    pub is_virtual: bool,
    /// The kernel driver bound to the device (`device/driver` link name).
    pub driver: Option<String>,
    pub operstate: Option<String>,
    /// `None` when the kernel cannot say (interface down: EINVAL).
    pub carrier: Option<bool>,
    /// `None` when unknown: the kernel says -1 or refuses (EINVAL) on a down link.
    pub speed_mbit_per_sec: Option<u64>,
    pub duplex: Option<String>,
    pub mtu_bytes: Option<u32>,
    pub tx_queue_len_packets: Option<u32>,
    /// Root qdisc kind (`fq_codel`, `pfifo_fast`, `tbf`, `noqueue`, `mq`).
    pub qdisc: Option<String>,
    pub ethtool: Outcome<Ethtool>,
    /// The driver's own drop and error counters (`ethtool -S`), physical NICs only.
    #[serde(default = "super::not_probed")]
    pub driver_stats: Outcome<Vec<super::nic_stats::NicStat>>,
    pub counters: Counters,
    /// Width at which this kernel's interface counters may wrap, when known.
    pub counter_bits: Option<u32>,
    pub counter_bits_reason: String,
}

/// Where the counters came from.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CounterSource {
    Sysfs,
    /// /proc/net/dev, when sysfs has no statistics directory. It sums some
    /// counters: its `drop` (our `rx_dropped`) includes `rx_missed_errors`, and it
    /// has no CRC, over or missed column.
    ProcNetDev,
    None,
}

/// Raw interface counters as the kernel reports them (they may wrap, see
/// `counter_bits`). Missing ones are `None`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Counters {
    pub source: CounterSource,
    pub rx_bytes: Option<u64>,
    pub rx_packets: Option<u64>,
    pub rx_errors: Option<u64>,
    pub rx_dropped: Option<u64>,
    pub rx_missed_errors: Option<u64>,
    pub rx_fifo_errors: Option<u64>,
    pub rx_crc_errors: Option<u64>,
    pub rx_over_errors: Option<u64>,
    /// Frames dropped because no handler wanted them on a device that takes
    /// exact delivery (an inactive bond port); kernels since 4.6.
    #[serde(default)]
    pub rx_nohandler: Option<u64>,
    pub tx_bytes: Option<u64>,
    pub tx_packets: Option<u64>,
    pub tx_errors: Option<u64>,
    pub tx_dropped: Option<u64>,
    pub tx_carrier_errors: Option<u64>,
    pub collisions: Option<u64>,
    /// Link up/down transitions since boot (sysfs `carrier_changes`).
    pub carrier_changes: Option<u64>,
    /// Counters that could not be read as a number (left `None`): one bad
    /// file costs that counter, not the interface or the whole section.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// The sysfs `statistics/` files we keep.
const STATISTICS: &[&str] = &[
    "rx_bytes",
    "rx_packets",
    "rx_errors",
    "rx_dropped",
    "rx_missed_errors",
    "rx_fifo_errors",
    "rx_crc_errors",
    "rx_over_errors",
    "rx_nohandler",
    "tx_bytes",
    "tx_packets",
    "tx_errors",
    "tx_dropped",
    "tx_carrier_errors",
    "collisions",
];

impl Counters {
    fn empty(source: CounterSource) -> Self {
        Counters {
            source,
            rx_bytes: None,
            rx_packets: None,
            rx_errors: None,
            rx_dropped: None,
            rx_missed_errors: None,
            rx_fifo_errors: None,
            rx_crc_errors: None,
            rx_over_errors: None,
            rx_nohandler: None,
            tx_bytes: None,
            tx_packets: None,
            tx_errors: None,
            tx_dropped: None,
            tx_carrier_errors: None,
            collisions: None,
            carrier_changes: None,
            problems: Vec::new(),
        }
    }

    /// Every counter by its sysfs name, in a fixed order.
    pub fn named(&self) -> [(&'static str, Option<u64>); 16] {
        [
            ("rx_bytes", self.rx_bytes),
            ("rx_packets", self.rx_packets),
            ("rx_errors", self.rx_errors),
            ("rx_dropped", self.rx_dropped),
            ("rx_missed_errors", self.rx_missed_errors),
            ("rx_fifo_errors", self.rx_fifo_errors),
            ("rx_crc_errors", self.rx_crc_errors),
            ("rx_over_errors", self.rx_over_errors),
            ("rx_nohandler", self.rx_nohandler),
            ("tx_bytes", self.tx_bytes),
            ("tx_packets", self.tx_packets),
            ("tx_errors", self.tx_errors),
            ("tx_dropped", self.tx_dropped),
            ("tx_carrier_errors", self.tx_carrier_errors),
            ("collisions", self.collisions),
            ("carrier_changes", self.carrier_changes),
        ]
    }

    fn slot(&mut self, name: &str) -> Option<&mut Option<u64>> {
        Some(match name {
            "rx_bytes" => &mut self.rx_bytes,
            "rx_packets" => &mut self.rx_packets,
            "rx_errors" => &mut self.rx_errors,
            "rx_dropped" => &mut self.rx_dropped,
            "rx_missed_errors" => &mut self.rx_missed_errors,
            "rx_fifo_errors" => &mut self.rx_fifo_errors,
            "rx_crc_errors" => &mut self.rx_crc_errors,
            "rx_over_errors" => &mut self.rx_over_errors,
            "rx_nohandler" => &mut self.rx_nohandler,
            "tx_bytes" => &mut self.tx_bytes,
            "tx_packets" => &mut self.tx_packets,
            "tx_errors" => &mut self.tx_errors,
            "tx_dropped" => &mut self.tx_dropped,
            "tx_carrier_errors" => &mut self.tx_carrier_errors,
            "collisions" => &mut self.collisions,
            "carrier_changes" => &mut self.carrier_changes,
            _ => return None,
        })
    }
}

/// One row of /proc/net/softnet_stat.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SoftnetCpu {
    pub cpu: u32,
    /// Packets taken off the backlog by this CPU.
    pub processed: u64,
    /// Packets dropped because the input backlog was full (netdev_max_backlog).
    pub dropped: u64,
    /// NAPI runs that ended with work left (netdev_budget or its time ran out).
    pub time_squeeze: u64,
}

/// The columns of /proc/net/dev, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcNetDev {
    pub name: String,
    pub values: [u64; 16],
}

pub fn read_network(root: &Root, architecture: Option<&str>) -> Result<Network, ProbeError> {
    let names = root.read_dir("sys/class/net")?;
    let (qdiscs, qdisc_unavailable) = match root.captured("qdisc", qdisc::live_root_qdiscs) {
        Ok(q) => (q, None),
        Err(reason) => (Vec::new(), Some(reason)),
    };
    let (counter_bits, counter_bits_reason) = counter_bits(architecture);
    let mut proc_net_dev: Option<Vec<ProcNetDev>> = None;
    let mut interfaces = Vec::with_capacity(names.len());
    for name in names {
        let mut iface = read_interface(root, &name, &qdiscs)?;
        if iface.counters.source == CounterSource::None {
            if proc_net_dev.is_none() {
                proc_net_dev = Some(match root.read_optional("proc/net/dev")? {
                    Some(text) => parse_proc_net_dev(&text)?,
                    None => Vec::new(),
                });
            }
            if let Some(row) = proc_net_dev.iter().flatten().find(|r| r.name == name) {
                iface.counters = counters_from_proc(row, iface.counters.carrier_changes);
            }
        }
        iface.counter_bits = counter_bits;
        iface.counter_bits_reason = counter_bits_reason.clone();
        interfaces.push(iface);
    }
    let softnet = match root.read_optional("proc/net/softnet_stat") {
        Ok(Some(text)) => parse_softnet_stat(&text).into(),
        Ok(None) => Outcome::Unsupported {
            reason: "this kernel has no /proc/net/softnet_stat".into(),
        },
        Err(e) => Outcome::Failed {
            error: e.to_string(),
        },
    };
    Ok(Network {
        interfaces,
        qdisc_unavailable,
        softnet,
    })
}

fn read_interface(root: &Root, name: &str, qdiscs: &[RootQdisc]) -> Result<Interface, ProbeError> {
    let dir = format!("sys/class/net/{name}");
    let is_virtual = root
        .read_link(&dir)
        .map(|t| t.to_string_lossy().contains("devices/virtual/"))
        .unwrap_or(false);
    let driver = match root.read_link_name(&format!("{dir}/device/driver")) {
        Ok(d) => Some(d),
        Err(e) if e.is_not_found() => None,
        Err(e) => return Err(e.into()),
    };
    let number = |file: &str| -> Result<Option<u64>, ProbeError> {
        match link_attr(root, &format!("{dir}/{file}"))? {
            Some(v) => Ok(Some(parse_u64(&format!("{dir}/{file}"), &v)?)),
            None => Ok(None),
        }
    };
    let ifindex = number("ifindex")?.and_then(|v| u32::try_from(v).ok());
    let speed = match link_attr(root, &format!("{dir}/speed"))? {
        Some(v) => parse_speed(&format!("{dir}/speed"), &v)?,
        None => None,
    };
    let carrier = match link_attr(root, &format!("{dir}/carrier"))? {
        Some(v) => Some(super::text::parse_bool01(&format!("{dir}/carrier"), &v)?),
        None => None,
    };
    let counters = read_sysfs_counters(root, name)?;
    let ethtool = match root.captured(&format!("ethtool/{name}"), || ethtool::live_ethtool(name)) {
        Ok(data) => Outcome::Ok { data },
        Err(reason) => Outcome::Unsupported { reason },
    };
    Ok(Interface {
        name: name.to_string(),
        qdisc: ifindex.and_then(|i| {
            qdiscs
                .iter()
                .find(|q| i64::from(q.ifindex) == i64::from(i))
                .map(|q| q.kind.clone())
        }),
        ifindex,
        mac_address: link_attr(root, &format!("{dir}/address"))?,
        is_virtual,
        driver,
        operstate: link_attr(root, &format!("{dir}/operstate"))?,
        carrier,
        speed_mbit_per_sec: speed,
        duplex: link_attr(root, &format!("{dir}/duplex"))?,
        mtu_bytes: number("mtu")?.and_then(|v| u32::try_from(v).ok()),
        tx_queue_len_packets: number("tx_queue_len")?.and_then(|v| u32::try_from(v).ok()),
        ethtool,
        driver_stats: if is_virtual {
            Outcome::Unsupported {
                reason: "virtual interface".into(),
            }
        } else {
            super::nic_stats::read_driver_stats(root, name)
        },
        counters,
        counter_bits: None,
        counter_bits_reason: String::new(),
    })
}

/// The sysfs `statistics/` counters and `carrier_changes` of one interface;
/// source `None` when the statistics directory is missing (then /proc/net/dev
/// has them, see [`counters_from_proc_net_dev`]).
pub fn read_sysfs_counters(root: &Root, name: &str) -> Result<Counters, ProbeError> {
    let dir = format!("sys/class/net/{name}");
    let mut counters = Counters::empty(CounterSource::Sysfs);
    let mut any = false;
    for stat in STATISTICS {
        let value = sysfs_counter(root, &format!("{dir}/statistics/{stat}"), &mut counters)?;
        any |= value.is_some();
        if let Some(slot) = counters.slot(stat) {
            *slot = value.flatten();
        }
    }
    if !any {
        counters.source = CounterSource::None;
    }
    counters.carrier_changes =
        sysfs_counter(root, &format!("{dir}/carrier_changes"), &mut counters)?.flatten();
    Ok(counters)
}

/// One counter file: `None` when absent, `Some(None)` when present but not a
/// number (noted in `counters.problems`, so one bad file costs only itself).
fn sysfs_counter(
    root: &Root,
    rel: &str,
    counters: &mut Counters,
) -> Result<Option<Option<u64>>, ProbeError> {
    let Some(text) = link_attr(root, rel)? else {
        return Ok(None);
    };
    Ok(Some(match parse_u64(rel, &text) {
        Ok(v) => Some(v),
        Err(e) => {
            counters
                .problems
                .push(format!("{e}; this counter is left out"));
            None
        }
    }))
}

/// Counters from a /proc/net/dev row, for interfaces without sysfs statistics.
pub fn counters_from_proc_net_dev(row: &ProcNetDev, carrier_changes: Option<u64>) -> Counters {
    counters_from_proc(row, carrier_changes)
}

/// A net sysfs attribute. Missing is `None`; so is an I/O error, because the
/// kernel answers EINVAL for speed, duplex and carrier while a link is down, and
/// that means "unknown", not a broken probe.
pub fn link_attr(root: &Root, rel: &str) -> Result<Option<String>, ProbeError> {
    match root.read_value(rel) {
        Ok(v) => Ok(Some(v)),
        Err(ReadError::NotFound { .. } | ReadError::Io { .. } | ReadError::Refused { .. }) => {
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// sysfs `speed`: Mbit/s, or -1 (and on some kernels 4294967295) for unknown.
pub fn parse_speed(what: &str, value: &str) -> Result<Option<u64>, ParseError> {
    let v = super::text::parse_i64(what, value)?;
    if v < 0 || v == i64::from(u32::MAX) {
        Ok(None)
    } else {
        Ok(Some(v as u64))
    }
}

/// How wide the kernel's interface counters are, from the architecture: on a
/// 32-bit kernel many drivers keep `unsigned long` counters that wrap at 2^32.
pub fn counter_bits(architecture: Option<&str>) -> (Option<u32>, String) {
    let Some(arch) = architecture else {
        return (
            None,
            "architecture unknown, so the counter width is unknown".into(),
        );
    };
    let bits = match arch {
        a if a.starts_with("armv") || a == "arm" => 32,
        "i386" | "i486" | "i586" | "i686" | "mips" | "mipsel" | "ppc" | "sh4" => 32,
        "x86_64" | "aarch64" | "arm64" | "riscv64" | "ppc64" | "ppc64le" | "s390x" | "mips64"
        | "loongarch64" => 64,
        other => {
            return (
                None,
                format!(
                    "architecture '{other}' is not known to nastune, so the counter width is unknown"
                ),
            );
        }
    };
    let reason = if bits == 32 {
        format!(
            "32-bit kernel ({arch}): drivers keep counters in unsigned long, which wraps at 2^32"
        )
    } else {
        format!("64-bit kernel ({arch}): counters are 64-bit")
    };
    (Some(bits), reason)
}

/// No packet is smaller than an IPv4 header; fewer bytes a packet than this
/// means the byte counter wrapped (at 2^32 on a 32-bit kernel) and restarted.
const MIN_BYTES_PER_PACKET: u64 = 20;

/// The average bytes a packet when `bytes` over `packets` is too small for any
/// packet: the byte counter has evidently wrapped, so its total is not what
/// moved. `None` when the ratio is plausible or not known.
pub fn evidently_wrapped(bytes: Option<u64>, packets: Option<u64>) -> Option<f64> {
    let (bytes, packets) = (bytes?, packets?);
    (packets > 0 && bytes < packets.saturating_mul(MIN_BYTES_PER_PACKET))
        .then(|| bytes as f64 / packets as f64)
}

/// Parses /proc/net/dev: two header lines, then `name: 16 numbers`.
pub fn parse_proc_net_dev(text: &str) -> Result<Vec<ProcNetDev>, ParseError> {
    const WHAT: &str = "/proc/net/dev";
    let mut rows = Vec::new();
    for line in text.lines().skip(2) {
        if line.trim().is_empty() {
            continue;
        }
        let (name, rest) = line
            .split_once(':')
            .ok_or_else(|| ParseError::value(WHAT, line))?;
        let mut values = [0u64; 16];
        let mut n = 0;
        for word in rest.split_whitespace() {
            if n == 16 {
                return Err(ParseError::value(WHAT, line));
            }
            values[n] = parse_u64(WHAT, word)?;
            n += 1;
        }
        if n != 16 {
            return Err(ParseError::value(WHAT, line));
        }
        rows.push(ProcNetDev {
            name: name.trim().to_string(),
            values,
        });
    }
    Ok(rows)
}

fn counters_from_proc(row: &ProcNetDev, carrier_changes: Option<u64>) -> Counters {
    let v = &row.values;
    let mut c = Counters::empty(CounterSource::ProcNetDev);
    c.rx_bytes = Some(v[0]);
    c.rx_packets = Some(v[1]);
    c.rx_errors = Some(v[2]);
    c.rx_dropped = Some(v[3]);
    c.rx_fifo_errors = Some(v[4]);
    c.tx_bytes = Some(v[8]);
    c.tx_packets = Some(v[9]);
    c.tx_errors = Some(v[10]);
    c.tx_dropped = Some(v[11]);
    c.collisions = Some(v[13]);
    c.carrier_changes = carrier_changes;
    c
}

/// Parses /proc/net/softnet_stat: hex columns, one row per online CPU. Kernels
/// since 5.10 print the CPU number in column 13; older ones have fewer columns,
/// and then the row number is the CPU (exact only if no CPU is offline).
pub fn parse_softnet_stat(text: &str) -> Result<Vec<SoftnetCpu>, ParseError> {
    const WHAT: &str = "/proc/net/softnet_stat";
    let hex = |w: &str| u64::from_str_radix(w, 16).map_err(|_| ParseError::value(WHAT, w));
    let mut rows = Vec::new();
    for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() < 3 {
            return Err(ParseError::value(WHAT, line));
        }
        let cpu = match cols.get(12) {
            Some(w) => u32::try_from(hex(w)?).map_err(|_| ParseError::value(WHAT, *w))?,
            None => i as u32,
        };
        rows.push(SoftnetCpu {
            cpu,
            processed: hex(cols[0])?,
            dropped: hex(cols[1])?,
            time_squeeze: hex(cols[2])?,
        });
    }
    if rows.is_empty() {
        return Err(ParseError::missing(WHAT, "a row per CPU"));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROC_NET_DEV: &str = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:    3193      29    0    0    0     0          0         0     3193      29    0    0    0     0       0          0
  eth0: 4294967290 6023    1    7    2     0          0         0   402972    4307    0    3    0     5       0          0
";

    #[test]
    fn proc_net_dev_columns() {
        let rows = parse_proc_net_dev(PROC_NET_DEV).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].name, "eth0");
        let c = counters_from_proc(&rows[1], Some(3));
        assert_eq!(c.source, CounterSource::ProcNetDev);
        assert_eq!(c.rx_bytes, Some(4_294_967_290));
        assert_eq!(c.rx_errors, Some(1));
        assert_eq!(c.rx_dropped, Some(7));
        assert_eq!(c.rx_fifo_errors, Some(2));
        assert_eq!(c.tx_dropped, Some(3));
        assert_eq!(c.collisions, Some(5));
        assert_eq!(c.rx_crc_errors, None);
        assert_eq!(c.carrier_changes, Some(3));
    }

    #[test]
    fn proc_net_dev_rejects_short_or_garbled_rows() {
        assert!(parse_proc_net_dev("h\nh\n eth0: 1 2 3\n").is_err());
        assert!(parse_proc_net_dev("h\nh\n eth0 1 2 3\n").is_err());
        let bad = PROC_NET_DEV.replace("6023", "60x3");
        let e = parse_proc_net_dev(&bad).unwrap_err().to_string();
        assert!(e.contains("'60x3'"), "{e}");
    }

    #[test]
    fn softnet_with_cpu_column() {
        let t = "00000010 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
00001794 0000000a 00000003 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000002 00000000 00000000
";
        let s = parse_softnet_stat(t).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(
            s[1],
            SoftnetCpu {
                cpu: 2,
                processed: 0x1794,
                dropped: 10,
                time_squeeze: 3
            }
        );
        assert_eq!(s[0].processed, 16);
    }

    #[test]
    fn softnet_old_kernel_without_cpu_column() {
        let t = "0036b0f5 00000000 00000014 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n";
        let s = parse_softnet_stat(t).unwrap();
        assert_eq!(s[0].cpu, 0);
        assert_eq!(s[0].time_squeeze, 0x14);
        assert!(parse_softnet_stat("").is_err());
        assert!(parse_softnet_stat("zz 00 00\n").is_err());
    }

    #[test]
    fn speed_unknown_values() {
        assert_eq!(parse_speed("s", "1000").unwrap(), Some(1000));
        assert_eq!(parse_speed("s", "-1").unwrap(), None);
        assert_eq!(parse_speed("s", "4294967295").unwrap(), None);
        assert!(parse_speed("s", "fast").is_err());
    }

    /// A tree without statistics/ falls back to /proc/net/dev; a replayed EINVAL on
    /// speed is "unknown"; a missing ethtool capture is unsupported, not a failure.
    #[test]
    fn tree_without_sysfs_statistics_uses_proc_net_dev() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        let dev = p.join("sys/devices/virtual/net/eth0");
        std::fs::create_dir_all(&dev).unwrap();
        std::fs::create_dir_all(p.join("sys/class/net")).unwrap();
        std::os::unix::fs::symlink(
            "../../devices/virtual/net/eth0",
            p.join("sys/class/net/eth0"),
        )
        .unwrap();
        for (f, v) in [("ifindex", "2"), ("mtu", "1500"), ("carrier", "1")] {
            std::fs::write(dev.join(f), v).unwrap();
        }
        std::fs::create_dir_all(p.join("proc/net")).unwrap();
        std::fs::write(p.join("proc/net/dev"), PROC_NET_DEV).unwrap();
        std::fs::create_dir_all(p.join(".nastune")).unwrap();
        std::fs::write(
            p.join(".nastune/read-errors.json"),
            r#"{"sys/class/net/eth0/speed": "Invalid argument (os error 22)"}"#,
        )
        .unwrap();
        std::fs::write(
            p.join(".nastune/qdisc.json"),
            r#"{"unavailable": "cannot open a NETLINK_ROUTE socket: denied"}"#,
        )
        .unwrap();
        let n = read_network(&Root::tree(p).unwrap(), Some("armv7l")).unwrap();
        let i = &n.interfaces[0];
        assert!(i.is_virtual);
        assert_eq!(i.speed_mbit_per_sec, None);
        assert_eq!(i.carrier, Some(true));
        assert_eq!(i.mtu_bytes, Some(1500));
        assert_eq!(i.counters.source, CounterSource::ProcNetDev);
        assert_eq!(i.counters.rx_bytes, Some(4_294_967_290));
        assert_eq!(i.counter_bits, Some(32));
        assert_eq!(i.qdisc, None);
        assert!(
            n.qdisc_unavailable
                .as_deref()
                .unwrap()
                .contains("NETLINK_ROUTE")
        );
        assert!(
            matches!(&i.ethtool, Outcome::Unsupported { reason } if reason.contains("--capture"))
        );
        assert!(matches!(n.softnet, Outcome::Unsupported { .. }));
    }

    #[test]
    fn counter_width_from_architecture() {
        assert_eq!(counter_bits(Some("armv5tel")).0, Some(32));
        // The rpi2-luks capture: 19.2 MiB over 9113204 packets is 2.2 B a packet.
        let avg = evidently_wrapped(Some(20_132_659), Some(9_113_204)).unwrap();
        assert!((avg - 2.2).abs() < 0.05, "{avg}");
        assert_eq!(evidently_wrapped(Some(60 * 1000), Some(1000)), None);
        assert_eq!(evidently_wrapped(Some(0), Some(0)), None);
        assert_eq!(evidently_wrapped(None, Some(5)), None);
        assert_eq!(counter_bits(Some("armv7l")).0, Some(32));
        assert_eq!(counter_bits(Some("aarch64")).0, Some(64));
        assert_eq!(counter_bits(Some("x86_64")).0, Some(64));
        assert!(counter_bits(Some("armv7l")).1.contains("2^32"));
        assert_eq!(counter_bits(None).0, None);
        assert!(counter_bits(Some("vax")).1.contains("'vax'"));
    }
}
