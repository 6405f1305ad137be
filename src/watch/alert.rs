//! Alert rules. Besides a rate threshold, "increased N times within W" catches
//! the slow leaks (one rx_dropped every two hours) that ratio and per-second
//! thresholds in node_exporter, netdata and Munin never see. Every alert says
//! what the counter means and how to split it into causes.

use std::collections::BTreeSet;

use serde::Serialize;

use super::counter::{Observation, Tracker};
use super::sample::Gauge;
use crate::probe::nic_stats::{DropCounters, NicStat, explain_drops};

#[derive(Debug, Clone, PartialEq)]
pub struct AlertConfig {
    /// Alert when an error counter increased in at least this many samples...
    pub increases: usize,
    /// ...within this many seconds.
    pub within_s: f64,
    /// Alert when an error counter grows faster than this per second.
    pub max_rate_per_sec: f64,
    /// Alert at or above this temperature.
    pub max_celsius: f64,
}

impl Default for AlertConfig {
    /// One rx_dropped every two hours gives 12 increases a day; 3 within a day
    /// alerts after six hours, and a single stray drop stays quiet.
    fn default() -> Self {
        AlertConfig {
            increases: 3,
            within_s: 86_400.0,
            max_rate_per_sec: 1.0,
            max_celsius: 80.0,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alert {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub time_unix_s: f64,
    /// `increased_repeatedly`, `rate_above`, `md_degraded`, `temperature_above`.
    pub rule: &'static str,
    pub series: String,
    pub message: String,
    pub value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub increases_in_window: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_per_sec: Option<f64>,
    /// What the counter counts.
    pub meaning: String,
    /// How to tell its causes apart.
    pub how_to_split: String,
    /// The split as measured, from the related counters since watching began.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

/// What a watched counter means and how to split it; `None` for counters that
/// are not errors (bytes, packets, I/O time) and so never alert.
pub fn explain(metric: &str) -> Option<(&'static str, &'static str)> {
    Some(match metric {
        "net_rx_dropped" => (
            "packets the kernel received but dropped before any socket saw them",
            "it sums several causes: softnet backlog overflow (compare softnet_dropped: if it grew too, \
             raise net.core.netdev_max_backlog or spread RX with RPS), driver drops (ring full: \
             rx_missed_errors and rx_fifo_errors, then the driver's own counters in 'ethtool -S'), \
             frames for an inactive bond port (rx_nohandler), and frames for a protocol nobody \
             handles (VLAN tags without a VLAN device, IPv6 frames with IPv6 off, LLDP or STP from a \
             switch), which only rx_dropped counts: harmless, but known only when nothing else moved; \
             the evidence line says which moved",
        ),
        "net_rx_missed_errors" | "net_rx_fifo_errors" | "net_rx_over_errors" => (
            "frames the NIC could not put into the RX ring or its FIFO: the host did not empty it in time",
            "grow the RX ring ('ethtool -G IF rx N'), check interrupt coalescing and which CPU takes \
             the NIC's IRQ; if softnet time_squeeze grows too, raise net.core.netdev_budget",
        ),
        "net_rx_crc_errors" => (
            "frames that arrived damaged (bad Ethernet checksum)",
            "a physical layer fault: swap the cable, try another switch port, check duplex mismatch; \
             on USB NICs a flaky USB bridge or power supply shows up here too",
        ),
        "net_rx_errors" => (
            "all receive errors the driver counted (CRC, length, frame, FIFO, missed)",
            "look at which of rx_crc_errors, rx_fifo_errors, rx_missed_errors and rx_over_errors grew; \
             'ethtool -S' names the driver's own counters",
        ),
        "net_tx_errors" | "net_tx_carrier_errors" | "net_collisions" => (
            "frames that could not be sent: carrier lost, collisions, aborted transmissions",
            "collisions and carrier errors on full-duplex links mean a duplex mismatch or a bad cable; \
             check 'ethtool IF' on both ends",
        ),
        "net_tx_dropped" => (
            "packets dropped on the way out: queue full or no route to the device",
            "check the qdisc statistics ('tc -s qdisc show dev IF') and txqueuelen",
        ),
        "net_carrier_changes" => (
            "link up/down transitions",
            "each down+up is two changes: a loose cable, a switch port resetting, energy-efficient \
             Ethernet trouble or a USB NIC reset (see the kernel log)",
        ),
        "softnet_dropped" => (
            "packets dropped because this CPU's input backlog (netdev_max_backlog) was full",
            "raise net.core.netdev_max_backlog, or spread receive work over CPUs with RPS; these drops \
             also appear in rx_dropped",
        ),
        "softnet_time_squeeze" => (
            "NAPI polls that ended with work left because the budget or time ran out",
            "raise net.core.netdev_budget / netdev_budget_usecs; persistent growth means the CPU is \
             too slow for the packet rate",
        ),
        "smart_attribute_raw" => (
            "a SMART event count (5 reallocated, 187 reported uncorrectable, 197 pending, \
             198 offline uncorrectable, 199 UDMA CRC errors)",
            "5/187/197/198 growing means the medium is failing: back up and plan a replacement; 199 \
             alone is the link: cable, backplane or USB-SATA bridge, not the platters",
        ),
        "nvme_media_errors" => (
            "unrecovered data integrity errors reported by the NVMe drive",
            "back up; compare percentage_used and available_spare ('smartctl -a'); media errors are \
             the drive, not the link",
        ),
        "nvme_error_log_entries" => (
            "entries in the NVMe error information log",
            "many are benign (unsupported commands from tools); read them with 'smartctl -l error' or \
             'nvme error-log' and check the status field",
        ),
        m if m.starts_with("kernel_log_") => return kernel_log_meaning(m),
        _ => return None,
    })
}

/// Kernel-log counters (`kernel_log_<class>`): what the lines say and what to
/// check, in the words of the matching advise rule.
fn kernel_log_meaning(metric: &str) -> Option<(&'static str, &'static str)> {
    Some(match metric.strip_prefix("kernel_log_")? {
        "ata_link_reset" => (
            "libata stopped a SATA link to recover it (exception, hard reset, lower speed)",
            "reseat or replace the SATA cable and check the disks' power; SMART 199 (UDMA CRC) grows with a bad cable",
        ),
        "usb_reset" | "uas_abort" => (
            "a USB disk stopped answering: commands aborted or the device reset",
            "power first (a powered hub or the disk's own supply: umbrel's UAS resets were power); only then \
             usb-storage.quirks=VID:PID:u",
        ),
        "io_error" => (
            "the block layer failed reads or writes on this device",
            "back up, then 'smartctl -a': pending/reallocated sectors are the medium, UDMA CRC errors the cable or bridge",
        ),
        "fs_error" => (
            "the filesystem found corruption or could not write its metadata",
            "look for I/O errors on the same disk first; then unmount and fsck",
        ),
        "oom" => (
            "the OOM killer killed a process",
            "the line names the process; limit it, stop a service or add zram swap",
        ),
        "undervoltage_throttle" => (
            "the supply sagged (Raspberry Pi under-voltage), the CPU throttled or a thermal zone reached its critical temperature",
            "use a supply that holds 5.1 V under load and power USB disks separately; for heat, the cooling",
        ),
        "nic_link" => (
            "a NIC's link went down or came up below its speed (a PHY downshift)",
            "one down is a plug or a switch reboot; repeated downs are a cable, a port or EEE: swap them, try 'ethtool --set-eee IF eee off'",
        ),
        "nic_driver_error" => (
            "the NIC driver timed out or reset its hardware (NETDEV WATCHDOG, tx timeout)",
            "update the kernel or driver; check the driver's own counters with 'ethtool -S'",
        ),
        "md_raid" => (
            "md lost a member, ran degraded or started a resync/recovery",
            "see /proc/mdstat; a failed member needs its SMART data and cable checked before 'mdadm --add'",
        ),
        "crypto_driver" => (
            "a crypto driver failed the kernel's self-test",
            "the kernel will not use it; a crypto benchmark then measures the software fallback",
        ),
        _ => return None,
    })
}

/// Increases that make an alert: a kernel-log problem alerts on its first
/// line; a link down, like the other counters, only when it repeats.
fn increases_needed(cfg: &AlertConfig, metric: &str) -> usize {
    if metric.starts_with("kernel_log_") && metric != "kernel_log_nic_link" {
        1
    } else {
        cfg.increases
    }
}

/// Remembers which conditions are on, so each alert fires when its condition
/// starts and again only after it cleared.
#[derive(Debug, Default)]
pub struct Alerter {
    active: BTreeSet<(String, &'static str)>,
}

impl Alerter {
    pub fn evaluate(
        &mut self,
        cfg: &AlertConfig,
        time: f64,
        observations: &[(&'static str, Observation)],
        gauges: &[Gauge],
        tracker: &Tracker,
    ) -> Vec<Alert> {
        let mut out = Vec::new();
        for (metric, o) in observations {
            let Some((meaning, split)) = explain(metric) else {
                continue;
            };
            let increases = tracker
                .get(&o.series)
                .map(|s| s.increases_since(time - cfg.within_s))
                .unwrap_or(0);
            let leaking = increases >= increases_needed(cfg, metric);
            if self.edge(&o.series, "increased_repeatedly", leaking) {
                out.push(Alert {
                    kind: "alert",
                    time_unix_s: time,
                    rule: "increased_repeatedly",
                    series: o.series.clone(),
                    message: format!(
                        "{} increased {increases} times within {} (now {}, +{} since watching)",
                        o.series,
                        human_window(cfg.within_s),
                        o.value,
                        o.total
                    ),
                    value: o.value as f64,
                    increases_in_window: Some(increases),
                    window_s: Some(cfg.within_s),
                    rate_per_sec: o.rate_per_sec,
                    meaning: meaning.into(),
                    how_to_split: split.into(),
                    evidence: evidence(metric, &o.series, tracker),
                });
            }
            let fast = o.rate_per_sec.is_some_and(|r| r > cfg.max_rate_per_sec);
            if self.edge(&o.series, "rate_above", fast) {
                out.push(Alert {
                    kind: "alert",
                    time_unix_s: time,
                    rule: "rate_above",
                    series: o.series.clone(),
                    message: format!(
                        "{} grows at {:.3}/s, above {}/s",
                        o.series,
                        o.rate_per_sec.unwrap_or(0.0),
                        cfg.max_rate_per_sec
                    ),
                    value: o.value as f64,
                    increases_in_window: None,
                    window_s: None,
                    rate_per_sec: o.rate_per_sec,
                    meaning: meaning.into(),
                    how_to_split: split.into(),
                    evidence: evidence(metric, &o.series, tracker),
                });
            }
        }
        for g in gauges {
            let (rule, on, meaning, split) = match g.metric {
                "md_degraded" => (
                    "md_degraded",
                    g.value > 0.0,
                    "the md array runs without redundancy: a member failed or is missing",
                    "see /proc/mdstat for the missing member ((F) = failed); check its SMART data and \
                     cable before 'mdadm --add'",
                ),
                "temperature_celsius" => (
                    "temperature_above",
                    g.value >= cfg.max_celsius,
                    "a sensor reads at or above the alert temperature",
                    "hwmon drive sensors point at airflow around the disks; SoC thermal zones at the \
                     heatsink or a busy CPU (see PSI and load)",
                ),
                _ => continue,
            };
            let key = g.key();
            if self.edge(&key, rule, on) {
                out.push(Alert {
                    kind: "alert",
                    time_unix_s: time,
                    rule,
                    message: format!("{key} is {}", g.value),
                    series: key,
                    value: g.value,
                    increases_in_window: None,
                    window_s: None,
                    rate_per_sec: None,
                    meaning: meaning.into(),
                    how_to_split: split.into(),
                    evidence: None,
                });
            }
        }
        out
    }

    /// True when `on` turns on for this series and rule.
    fn edge(&mut self, series: &str, rule: &'static str, on: bool) -> bool {
        let key = (series.to_string(), rule);
        if on {
            self.active.insert(key)
        } else {
            self.active.remove(&key);
            false
        }
    }
}

/// For rx_dropped and rx_errors: what moved with them since watching began,
/// and the cause that makes (the same words as `rx-dropped-unknown-protocol`).
/// Softnet backlog drops are per CPU, not per device: an upper bound for this
/// interface's share.
fn evidence(metric: &str, series: &str, tracker: &Tracker) -> Option<String> {
    let labels = ["net_rx_dropped", "net_rx_errors"]
        .iter()
        .find(|m| **m == metric)
        .and_then(|m| series.strip_prefix(m))?;
    let total = |key: String| tracker.get(&key).map_or(0, |s| s.total);
    let sum_of = |prefix: &str| -> Vec<(String, u64)> {
        tracker
            .states()
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(k, s)| (k.clone(), s.total))
            .collect()
    };
    // net_driver_counter{device="eth0",counter="rx_drops"}
    let driver_prefix = format!("net_driver_counter{},", labels.trim_end_matches('}'));
    let driver: Vec<NicStat> = sum_of(&driver_prefix)
        .into_iter()
        .map(|(k, value)| NicStat {
            name: k
                .split("counter=\"")
                .nth(1)
                .unwrap_or("")
                .trim_end_matches("\"}")
                .to_string(),
            value,
        })
        .collect();
    let grown = DropCounters {
        rx_dropped: total(format!("net_rx_dropped{labels}")),
        rx_errors: total(format!("net_rx_errors{labels}")),
        rx_nohandler: total(format!("net_rx_nohandler{labels}")),
        ring_full: total(format!("net_rx_missed_errors{labels}"))
            + total(format!("net_rx_fifo_errors{labels}")),
        softnet_dropped: sum_of("softnet_dropped{").iter().map(|(_, v)| v).sum(),
        kernel_log_events: total(format!("kernel_log_nic_driver_error{labels}")),
        driver: (!driver.is_empty()).then_some(driver),
    };
    let start = DropCounters {
        driver: grown.driver.as_ref().map(|_| Vec::new()),
        ..Default::default()
    };
    let why = explain_drops(&start, &grown);
    let moved: Vec<String> = why.moved.iter().map(|(n, v)| format!("{n} +{v}")).collect();
    Some(format!(
        "since watching: rx_dropped +{}, rx_errors +{}; moved with them: {}; cause: {}",
        grown.rx_dropped,
        grown.rx_errors,
        if moved.is_empty() {
            "nothing".to_string()
        } else {
            moved.join(", ")
        },
        why.text
    ))
}

fn human_window(s: f64) -> String {
    if s >= 3600.0 && (s % 3600.0) == 0.0 {
        format!("{} h", s / 3600.0)
    } else {
        format!("{s} s")
    }
}

#[cfg(test)]
mod drop_tests {
    use crate::watch::Watcher;
    use crate::watch::sample::{Reading, Sample};

    fn reading(metric: &'static str, extra: Option<&str>, value: u64) -> Reading {
        let mut labels = vec![("device", "eth0".to_string())];
        if let Some(c) = extra {
            labels.push(("counter", c.to_string()));
        }
        Reading {
            metric,
            labels,
            identity: "mac=x".into(),
            stable_identity: "mac=x".into(),
            boot_scoped: true,
            resets_only: false,
            value,
        }
    }

    /// The evidence of the rx_dropped alert after rx_dropped went 100 -> 200
    /// and the driver's rx_drops 3 -> `driver_after` within 10 s.
    fn evidence(driver_after: u64) -> String {
        let mut w = Watcher::new(Default::default(), Default::default());
        let mut alerts = Vec::new();
        for (t, dropped, driver) in [(0.0, 100, 3), (10.0, 200, driver_after)] {
            let report = w.step(Sample {
                time_unix_s: t,
                boot_id: "b".into(),
                counters: vec![
                    reading("net_rx_dropped", None, dropped),
                    reading("net_rx_nohandler", None, 0),
                    reading("net_driver_counter", Some("rx_drops"), driver),
                ],
                gauges: Vec::new(),
                problems: Vec::new(),
                smart_read: false,
            });
            alerts.extend(report.alerts);
        }
        assert_eq!(alerts.len(), 1, "{alerts:?}");
        alerts[0].evidence.clone().unwrap()
    }

    #[test]
    fn the_rx_dropped_alert_names_the_driver_counter_that_moved() {
        let e = evidence(90);
        assert!(e.contains("driver rx_drops +87"), "{e}");
        assert!(e.contains("'rx_drops' grew +87"), "{e}");
        assert!(!e.contains("harmless"), "{e}");
    }

    #[test]
    fn the_rx_dropped_alert_calls_drops_harmless_only_when_nothing_else_moved() {
        let e = evidence(3);
        assert!(e.contains("moved with them: nothing"), "{e}");
        assert!(e.contains("by elimination"), "{e}");
        assert!(e.contains("harmless"), "{e}");
    }
}
