//! One sample: every watched counter and gauge read through a [`Root`], so a
//! captured tree is one sample. Reuses the probe's readers and parsers; a
//! section that cannot be read becomes a problem string, never a failed sample.

use std::collections::BTreeMap;

use serde::Serialize;

use super::thermal;
use crate::probe::net::{self, CounterSource};
use crate::probe::{Outcome, diskstats, md, memory, nic_stats, proc_stat, smart};
use crate::root::Root;

/// SMART attributes that are plain event counts (raw value = a count), by id:
/// reallocated, reported uncorrectable, pending, offline uncorrectable, UDMA CRC.
pub const SMART_COUNT_IDS: [u32; 5] = [5, 187, 197, 198, 199];

/// A monotonic kernel or drive counter.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub metric: &'static str,
    pub labels: Vec<(&'static str, String)>,
    /// Who this is within one boot (MAC + ifindex, disk serial + dev number).
    pub identity: String,
    /// Who this is across reboots (MAC, disk serial).
    pub stable_identity: String,
    /// Starts again from 0 when the kernel boots (not true of SMART counts).
    pub boot_scoped: bool,
    /// Read where the counter's width is unknown (/proc without sysfs): every
    /// decrease is a reset, never guessed to be a wrap.
    pub resets_only: bool,
    pub value: u64,
}

impl Reading {
    /// `metric{label="value",...}`: the series key, also its Prometheus selector.
    pub fn key(&self) -> String {
        series_key(self.metric, &self.labels)
    }
}

/// A value that goes up and down.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gauge {
    pub metric: &'static str,
    #[serde(skip)]
    pub labels: Vec<(&'static str, String)>,
    pub value: f64,
}

impl Gauge {
    pub fn key(&self) -> String {
        series_key(self.metric, &self.labels)
    }
}

pub fn series_key(metric: &str, labels: &[(&'static str, String)]) -> String {
    if labels.is_empty() {
        return metric.to_string();
    }
    let inner: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
        .collect();
    format!("{metric}{{{}}}", inner.join(","))
}

/// Prometheus label escaping: backslash, double quote and newline.
pub fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub time_unix_s: f64,
    pub boot_id: String,
    pub counters: Vec<Reading>,
    pub gauges: Vec<Gauge>,
    /// Sections that could not be read, with the reason.
    pub problems: Vec<String>,
    /// Whether SMART was read in this sample (it runs at a slower interval).
    pub smart_read: bool,
}

/// Reads one sample. `with_smart` runs smartctl (slow: spins up nothing, but
/// takes tens of milliseconds per disk), so the caller asks for it rarely.
pub fn read_sample(root: &Root, with_smart: bool) -> Result<Sample, String> {
    let time_unix_s = sample_time(root)?;
    let boot_id = root
        .read_value("proc/sys/kernel/random/boot_id")
        .map_err(|e| format!("{e}; the boot id tells a reboot from a counter reset"))?;
    read_counters(root, with_smart, time_unix_s, boot_id)
}

/// The boot id of replayed trees that record none: they count as one boot, so
/// a counter that goes down between them is a reset.
pub const UNRECORDED_BOOT: &str = "unrecorded";

/// One sample of a captured tree (`--replay`). A tree without a boot id is
/// taken as the same boot as the others without one; a tree without a time
/// gets `unrecorded_time` (from `--interval`), or it is refused.
pub fn read_replayed(root: &Root, unrecorded_time: Option<f64>) -> Result<Sample, String> {
    let time_unix_s = match (sample_time(root), unrecorded_time) {
        (Ok(t), _) => t,
        (Err(_), Some(t)) => t,
        (Err(e), None) => {
            return Err(format!(
                "{e}; or give --interval SECS to take the trees as that far apart"
            ));
        }
    };
    let boot_id = root
        .read_optional("proc/sys/kernel/random/boot_id")
        .ok()
        .flatten()
        .map(|b| b.trim().to_string())
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| UNRECORDED_BOOT.to_string());
    read_counters(root, false, time_unix_s, boot_id)
}

fn read_counters(
    root: &Root,
    with_smart: bool,
    time_unix_s: f64,
    boot_id: String,
) -> Result<Sample, String> {
    let mut s = Sample {
        time_unix_s,
        boot_id,
        counters: Vec::new(),
        gauges: Vec::new(),
        problems: Vec::new(),
        smart_read: false,
    };
    read_net(root, &mut s);
    read_softnet(root, &mut s);
    let blocks = read_disks(root, &mut s);
    read_md(root, &blocks, &mut s);
    read_pressure(root, &mut s);
    for t in thermal::read_temperatures(root, &mut s.problems) {
        s.gauges.push(Gauge {
            metric: "temperature_celsius",
            labels: vec![("sensor", t.sensor)],
            value: t.celsius,
        });
    }
    if with_smart {
        add_smart(root, &mut s);
    }
    Ok(s)
}

/// Now on the live box (recorded as `.nastune/timestamp.json` when the root
/// records, so `probe --capture` trees replay at the time they were taken);
/// the recorded time in a tree.
pub fn capture_time(root: &Root) -> Result<f64, String> {
    root.captured("timestamp", || {
        Ok(std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0))
    })
}

/// When the sample was taken: now on the live box; in a captured tree,
/// `.nastune/timestamp.json` (written when a live watch or probe records it),
/// else `btime` from proc/stat plus proc/uptime.
fn sample_time(root: &Root) -> Result<f64, String> {
    let recorded = match capture_time(root) {
        Ok(t) => return Ok(t),
        Err(e) => e,
    };
    let btime = root
        .read_optional("proc/stat")
        .ok()
        .flatten()
        .and_then(|t| proc_stat::parse_stat(&t).ok())
        .and_then(|s| s.btime)
        .map(|b| b as f64);
    let uptime = root
        .read_optional("proc/uptime")
        .ok()
        .flatten()
        .and_then(|t| {
            t.split_whitespace()
                .next()
                .and_then(|v| v.parse::<f64>().ok())
        });
    match (btime, uptime) {
        (Some(b), Some(u)) => Ok(b + u),
        _ => Err(format!(
            "'{}' has no sample time: add .nastune/timestamp.json ({{\"value\": UNIX_SECONDS}}) \
             or proc/stat with btime and proc/uptime (timestamp: {recorded})",
            root.base().display()
        )),
    }
}

fn read_net(root: &Root, s: &mut Sample) {
    let names = match root.read_dir_optional("sys/class/net") {
        Ok(n) if !n.is_empty() => n,
        Ok(_) => return read_proc_net_dev(root, s),
        Err(e) => {
            s.problems.push(format!("network: {e}"));
            return;
        }
    };
    let mut proc_dev: Option<Vec<net::ProcNetDev>> = None;
    for name in names {
        let mut counters = match net::read_sysfs_counters(root, &name) {
            Ok(c) => c,
            Err(e) => {
                s.problems.push(format!("{name}: {e}"));
                continue;
            }
        };
        s.problems.append(&mut counters.problems);
        if counters.source == CounterSource::None {
            let rows = proc_dev.get_or_insert_with(|| {
                root.read_optional("proc/net/dev")
                    .ok()
                    .flatten()
                    .and_then(|t| net::parse_proc_net_dev(&t).ok())
                    .unwrap_or_default()
            });
            if let Some(row) = rows.iter().find(|r| r.name == name) {
                counters = net::counters_from_proc_net_dev(row, counters.carrier_changes);
            }
        }
        let dir = format!("sys/class/net/{name}");
        let attr = |a: &str| net::link_attr(root, &format!("{dir}/{a}")).ok().flatten();
        let mac = attr("address").unwrap_or_default();
        let ifindex = attr("ifindex").unwrap_or_default();
        let identity = format!("mac={mac},ifindex={ifindex}");
        let stable = format!("mac={mac}");
        for (counter, value) in counters.named() {
            let (Some(value), Some(metric)) = (value, net_metric(counter)) else {
                continue;
            };
            s.counters.push(Reading {
                metric,
                labels: vec![("device", name.clone())],
                identity: identity.clone(),
                stable_identity: stable.clone(),
                boot_scoped: true,
                resets_only: false,
                value,
            });
        }
        // The driver's own drop counters, so an rx_dropped alert can say which moved.
        let physical = root
            .read_link(&dir)
            .is_ok_and(|t| !t.to_string_lossy().contains("devices/virtual"));
        if physical && let Some(stats) = nic_stats::read_driver_stats(root, &name).data() {
            for stat in stats {
                s.counters.push(Reading {
                    metric: "net_driver_counter",
                    labels: vec![("device", name.clone()), ("counter", stat.name.clone())],
                    identity: identity.clone(),
                    stable_identity: stable.clone(),
                    boot_scoped: true,
                    resets_only: false,
                    value: stat.value,
                });
            }
        }
    }
}

/// Without sysfs (a /proc-only tree), as node_exporter does: every interface of
/// /proc/net/dev by name. The counters' width is unknown there, so a decrease
/// is a reset, not a guessed wrap.
fn read_proc_net_dev(root: &Root, s: &mut Sample) {
    let rows = match root.read_optional("proc/net/dev") {
        Ok(Some(t)) => match net::parse_proc_net_dev(&t) {
            Ok(r) => r,
            Err(e) => return s.problems.push(format!("network: {e}")),
        },
        Ok(None) => {
            return s
                .problems
                .push("network: neither sys/class/net nor proc/net/dev".into());
        }
        Err(e) => return s.problems.push(format!("network: {e}")),
    };
    for row in rows {
        let counters = net::counters_from_proc_net_dev(&row, None);
        let identity = format!("name={}", row.name);
        for (counter, value) in counters.named() {
            let (Some(value), Some(metric)) = (value, net_metric(counter)) else {
                continue;
            };
            s.counters.push(Reading {
                metric,
                labels: vec![("device", row.name.clone())],
                identity: identity.clone(),
                stable_identity: identity.clone(),
                boot_scoped: true,
                resets_only: true,
                value,
            });
        }
    }
}

/// The watched interface counters. Bytes and packets are kept for rates and
/// ratios; the rest are the error and drop counters alerts look at.
fn net_metric(counter: &str) -> Option<&'static str> {
    Some(match counter {
        "rx_bytes" => "net_rx_bytes",
        "rx_packets" => "net_rx_packets",
        "rx_errors" => "net_rx_errors",
        "rx_dropped" => "net_rx_dropped",
        "rx_missed_errors" => "net_rx_missed_errors",
        "rx_fifo_errors" => "net_rx_fifo_errors",
        "rx_crc_errors" => "net_rx_crc_errors",
        "rx_over_errors" => "net_rx_over_errors",
        "rx_nohandler" => "net_rx_nohandler",
        "tx_bytes" => "net_tx_bytes",
        "tx_packets" => "net_tx_packets",
        "tx_errors" => "net_tx_errors",
        "tx_dropped" => "net_tx_dropped",
        "tx_carrier_errors" => "net_tx_carrier_errors",
        "collisions" => "net_collisions",
        "carrier_changes" => "net_carrier_changes",
        _ => return None,
    })
}

fn read_softnet(root: &Root, s: &mut Sample) {
    let rows = match root.read_optional("proc/net/softnet_stat") {
        Ok(Some(t)) => match net::parse_softnet_stat(&t) {
            Ok(r) => r,
            Err(e) => {
                s.problems.push(format!("softnet: {e}"));
                return;
            }
        },
        Ok(None) => return,
        Err(e) => {
            s.problems.push(format!("softnet: {e}"));
            return;
        }
    };
    for row in rows {
        for (metric, value) in [
            ("softnet_dropped", row.dropped),
            ("softnet_time_squeeze", row.time_squeeze),
        ] {
            s.counters.push(Reading {
                metric,
                labels: vec![("cpu", row.cpu.to_string())],
                identity: format!("cpu={}", row.cpu),
                stable_identity: format!("cpu={}", row.cpu),
                boot_scoped: true,
                resets_only: false,
                value,
            });
        }
    }
}

/// Whole disks, md and dm devices from /proc/diskstats; partitions, loop and
/// ram devices are left out (their I/O shows on the disk). Returns the names in
/// /sys/block for the md reader.
fn read_disks(root: &Root, s: &mut Sample) -> Vec<String> {
    let blocks = root.read_dir_optional("sys/block").unwrap_or_default();
    let stats = match root.read_optional("proc/diskstats") {
        Ok(Some(t)) => match diskstats::parse_diskstats(&t) {
            Ok(v) => v,
            Err(e) => {
                s.problems.push(format!("diskstats: {e}"));
                return blocks;
            }
        },
        Ok(None) => return blocks,
        Err(e) => {
            s.problems.push(format!("diskstats: {e}"));
            return blocks;
        }
    };
    // Without sys/block (a /proc-only tree), whole devices are told from
    // partitions by name, as node_exporter's default filter does.
    let proc_only = blocks.is_empty();
    for (name, c) in &stats {
        let listed = if proc_only {
            !is_partition_name(name)
        } else {
            blocks.contains(name)
        };
        if !listed || ["loop", "ram", "zram"].iter().any(|p| name.starts_with(p)) {
            continue;
        }
        let serial = disk_serial(root, name);
        let stable = match &serial {
            Some(id) => format!("id={id}"),
            None => format!("name={name}"),
        };
        let identity = format!("{stable},dev={}:{}", c.major, c.minor);
        for (metric, value) in [
            ("disk_reads", c.reads),
            ("disk_writes", c.writes),
            ("disk_read_time_ms", c.read_ms),
            ("disk_write_time_ms", c.write_ms),
            ("disk_io_time_ms", c.io_ticks_ms),
        ] {
            s.counters.push(Reading {
                metric,
                labels: vec![("device", name.clone())],
                identity: identity.clone(),
                stable_identity: stable.clone(),
                boot_scoped: true,
                resets_only: proc_only,
                value,
            });
        }
    }
    blocks
}

/// A partition's kernel name: sda1, vdb2, xvda1, hdc3, nvme0n1p1, mmcblk0p2.
fn is_partition_name(name: &str) -> bool {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return false;
    }
    let stem = &name[..name.len() - digits];
    if let Some(base) = stem.strip_suffix('p') {
        // nvme0n1p1, mmcblk0p1: the stem before 'p' ends in the disk's number.
        return base.ends_with(|c: char| c.is_ascii_digit());
    }
    ["sd", "vd", "xvd", "hd"].iter().any(|p| {
        stem.strip_prefix(p)
            .is_some_and(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_lowercase()))
    })
}

/// WWN or serial from sysfs (NVMe and SCSI expose them; USB bridges often not).
fn disk_serial(root: &Root, name: &str) -> Option<String> {
    ["wwid", "device/wwid", "device/serial", "serial"]
        .iter()
        .find_map(|f| {
            root.read_optional(&format!("sys/block/{name}/{f}"))
                .ok()
                .flatten()
                .filter(|v| !v.is_empty())
        })
}

fn read_md(root: &Root, blocks: &[String], s: &mut Sample) {
    let (arrays, problem) = md::read_md_arrays(root, blocks);
    if let Some(p) = problem {
        s.problems.push(format!("md: {p}"));
    }
    for a in arrays {
        let labels = vec![("array", a.name.clone())];
        s.gauges.push(Gauge {
            metric: "md_degraded",
            labels: labels.clone(),
            value: if a.degraded { 1.0 } else { 0.0 },
        });
        if let Some(d) = a.degraded_disks {
            s.gauges.push(Gauge {
                metric: "md_degraded_disks",
                labels: labels.clone(),
                value: d as f64,
            });
        }
        if let Some(m) = a.mismatch_cnt {
            s.gauges.push(Gauge {
                metric: "md_mismatch_sectors",
                labels: labels.clone(),
                value: m as f64,
            });
        }
        if let Some(state) = a.state {
            s.gauges.push(Gauge {
                metric: "md_state_info",
                labels: vec![("array", a.name.clone()), ("state", state)],
                value: 1.0,
            });
        }
    }
}

fn read_pressure(root: &Root, s: &mut Sample) {
    for resource in ["cpu", "io", "memory"] {
        let text = match root.read_optional(&format!("proc/pressure/{resource}")) {
            Ok(Some(t)) => t,
            Ok(None) => continue,
            Err(e) => {
                s.problems.push(format!("pressure: {e}"));
                continue;
            }
        };
        let p = match memory::parse_pressure(resource, &text) {
            Ok(p) => p,
            Err(e) => {
                s.problems.push(format!("pressure: {e}"));
                continue;
            }
        };
        let labels = vec![("resource", resource.to_string())];
        let psi = |metric, value| Reading {
            metric,
            labels: labels.clone(),
            identity: String::new(),
            stable_identity: String::new(),
            boot_scoped: true,
            resets_only: false,
            value,
        };
        s.counters
            .push(psi("pressure_some_stalled_us", p.some_total_us));
        if let Some(full) = p.full_total_us {
            s.counters.push(psi("pressure_full_stalled_us", full));
        }
        s.gauges.push(Gauge {
            metric: "pressure_some_avg10_percent",
            labels,
            value: p.some_avg10,
        });
    }
}

/// Adds the SMART counts (runs smartctl on the live box).
pub fn add_smart(root: &Root, s: &mut Sample) {
    let smart = match smart::read_smart(root) {
        Ok(Outcome::Ok { data }) => data,
        Ok(Outcome::Unsupported { reason }) => {
            s.problems.push(format!("smart: {reason}"));
            return;
        }
        Ok(Outcome::Failed { error }) => {
            s.problems.push(format!("smart: {error}"));
            return;
        }
        Err(e) => {
            s.problems.push(format!("smart: {e}"));
            return;
        }
    };
    s.smart_read = true;
    for dev in smart.devices {
        let Outcome::Ok { data: h } = dev.health else {
            continue;
        };
        // SMART counts live on the drive: keyed on its serial, not the boot.
        let stable = format!("serial={}", h.serial.as_deref().unwrap_or(&dev.name));
        let mut push = |metric, labels: Vec<(&'static str, String)>, value| {
            s.counters.push(Reading {
                metric,
                labels,
                identity: stable.clone(),
                stable_identity: stable.clone(),
                boot_scoped: false,
                resets_only: false,
                value,
            })
        };
        for a in h
            .ata_attributes
            .iter()
            .filter(|a| SMART_COUNT_IDS.contains(&a.id))
        {
            push(
                "smart_attribute_raw",
                vec![("device", dev.name.clone()), ("id", a.id.to_string())],
                a.raw_value,
            );
        }
        if let Some(n) = &h.nvme {
            push(
                "nvme_media_errors",
                vec![("device", dev.name.clone())],
                n.media_errors,
            );
            push(
                "nvme_error_log_entries",
                vec![("device", dev.name.clone())],
                n.num_err_log_entries,
            );
        }
    }
}

/// Gauges by key, for the JSON line of a sample.
pub fn gauges_by_key(gauges: &[Gauge]) -> BTreeMap<String, f64> {
    BTreeMap::from_iter(gauges.iter().map(|g| (g.key(), g.value)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_told_by_name_without_sysfs() {
        for p in ["sda1", "vdb12", "xvda1", "hdc3", "nvme0n1p1", "mmcblk0p2"] {
            assert!(is_partition_name(p), "{p}");
        }
        for d in ["sda", "vdb", "nvme0n1", "mmcblk0", "md0", "dm-3", "sr0"] {
            assert!(!is_partition_name(d), "{d}");
        }
    }

    #[test]
    fn tree_time_is_btime_plus_uptime_without_a_timestamp() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::tree(dir.path()).unwrap();
        assert!(sample_time(&root).unwrap_err().contains("btime"));
        std::fs::create_dir(dir.path().join("proc")).unwrap();
        std::fs::write(dir.path().join("proc/uptime"), "12.5 20.0\n").unwrap();
        std::fs::write(
            dir.path().join("proc/stat"),
            "cpu  1 2 3 4 5 6 7 0 0 0\nctxt 9\nbtime 1700000000\n",
        )
        .unwrap();
        assert_eq!(sample_time(&root).unwrap(), 1_700_000_012.5);
        // A tree may carry only the boot time.
        std::fs::write(dir.path().join("proc/stat"), "btime 1700000000\n").unwrap();
        assert_eq!(sample_time(&root).unwrap(), 1_700_000_012.5);
    }
}
