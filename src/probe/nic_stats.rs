//! Why a NIC drops: the driver's own counters (`ethtool -S`, through the
//! ETHTOOL_GSTRINGS/GSTATS ioctls) beside rx_nohandler, softnet backlog drops
//! and the kernel log, and [`explain_drops`], which says which of them moved
//! with rx_dropped. The advise rule `rx-dropped-unknown-protocol` and the
//! watch alert on `net_rx_dropped` both word their cause with it.
//!
//! Checked on a 6.x kernel with a veth pair: frames of an unknown ethertype
//! raise rx_dropped, not rx_nohandler (that one counts only frames on devices
//! that take exact delivery, such as an inactive bond port). So an unknown
//! protocol is known only by elimination: nothing else moved while the
//! driver's counters were readable.

use serde::{Deserialize, Serialize};

use super::Outcome;
use super::ethtool::{Request, Socket};
use crate::root::Root;

/// Driver counters kept per interface at most (some drivers have hundreds,
/// per queue); only drop and error counters are kept at all.
pub const MAX_STATS: usize = 64;

/// One of the driver's own counters.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NicStat {
    pub name: String,
    pub value: u64,
}

/// Names of driver counters that count lost or failed frames.
pub fn is_drop_counter(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "drop",
        "miss",
        "discard",
        "err",
        "fifo",
        "over",
        "no_buf",
        "nobuf",
        "alloc_fail",
        "timeout",
    ]
    .iter()
    .any(|k| n.contains(k))
}

/// The drop and error counters of `ifname`'s driver on the running system.
pub fn live_driver_stats(ifname: &str) -> Result<Vec<NicStat>, String> {
    let sock = Socket::new()?;
    let req = Request::new(&sock, ifname)?;
    let all = req.stats().map_err(|e| match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) => "the driver has no statistics (EOPNOTSUPP)".to_string(),
        _ => format!("ethtool statistics of '{ifname}' failed: {e}"),
    })?;
    Ok(all
        .into_iter()
        .filter(|(n, _)| is_drop_counter(n))
        .take(MAX_STATS)
        .map(|(name, value)| NicStat { name, value })
        .collect())
}

/// Live, or from `.nastune/ethtool-stats/<ifname>.json` in a tree.
pub fn read_driver_stats(root: &Root, ifname: &str) -> Outcome<Vec<NicStat>> {
    match root.captured(&format!("ethtool-stats/{ifname}"), || {
        live_driver_stats(ifname)
    }) {
        Ok(data) => Outcome::Ok { data },
        Err(reason) => Outcome::Unsupported { reason },
    }
}

/// The counters that can explain one NIC's receive drops, at one moment (or,
/// as watch uses it, their growth since watching began).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DropCounters {
    pub rx_dropped: u64,
    pub rx_errors: u64,
    pub rx_nohandler: u64,
    /// rx_missed_errors + rx_fifo_errors: the RX ring was full.
    pub ring_full: u64,
    /// softnet_stat drops of all CPUs (per CPU, not per NIC: an upper bound).
    pub softnet_dropped: u64,
    /// `None` when the driver's counters could not be read.
    pub driver: Option<Vec<NicStat>>,
    /// Kernel-log lines about this NIC (driver errors, link downs).
    pub kernel_log_events: u64,
}

/// What moved with the drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// rx_dropped and rx_errors did not grow.
    Nothing,
    NoHandler,
    Backlog,
    RingFull,
    DriverCounter,
    KernelLog,
    /// By elimination: nothing else moved and the driver's counters were read.
    UnknownProtocol,
    /// Nothing else moved, but the driver's counters could not be read.
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    pub cause: Cause,
    /// Only when the stack dropped frames nobody asked for.
    pub harmless: bool,
    /// Growth of rx_dropped + rx_errors.
    pub grew: u64,
    /// The related counters that grew, with their growth.
    pub moved: Vec<(String, u64)>,
    /// One sentence naming the cause, shared by advise and watch.
    pub text: String,
}

/// Says which counters moved with rx_dropped/rx_errors between `before` and
/// `after`, and what that makes the cause.
pub fn explain_drops(before: &DropCounters, after: &DropCounters) -> Explanation {
    let d = |a: u64, b: u64| a.saturating_sub(b);
    let grew = d(after.rx_dropped, before.rx_dropped) + d(after.rx_errors, before.rx_errors);
    let mut moved: Vec<(String, u64)> = [
        ("rx_nohandler", d(after.rx_nohandler, before.rx_nohandler)),
        (
            "rx_missed_errors+rx_fifo_errors",
            d(after.ring_full, before.ring_full),
        ),
        (
            "softnet dropped",
            d(after.softnet_dropped, before.softnet_dropped),
        ),
        (
            "kernel log lines",
            d(after.kernel_log_events, before.kernel_log_events),
        ),
    ]
    .into_iter()
    .map(|(n, v)| (n.to_string(), v))
    .collect();
    let driver_moved: Vec<(String, u64)> = after
        .driver
        .iter()
        .flatten()
        .filter_map(|s| {
            let old = before
                .driver
                .iter()
                .flatten()
                .find(|o| o.name == s.name)
                .map_or(0, |o| o.value);
            Some((format!("driver {}", s.name), d(s.value, old))).filter(|(_, v)| *v > 0)
        })
        .collect();
    moved.extend(driver_moved.iter().cloned());
    moved.retain(|(_, v)| *v > 0);
    let of = |name: &str| moved.iter().find(|(n, _)| n == name).map_or(0, |(_, v)| *v);
    let top_driver = driver_moved.iter().max_by_key(|(_, v)| *v);
    let candidates = [
        (Cause::Backlog, of("softnet dropped")),
        (Cause::RingFull, of("rx_missed_errors+rx_fifo_errors")),
        (Cause::DriverCounter, top_driver.map_or(0, |(_, v)| *v)),
    ];
    let cause = if grew == 0 {
        Cause::Nothing
    } else if of("rx_nohandler") >= grew {
        Cause::NoHandler
    } else if let Some((c, _)) = candidates
        .iter()
        .filter(|(_, v)| *v > 0)
        .max_by_key(|(_, v)| *v)
    {
        *c
    } else if of("kernel log lines") > 0 {
        Cause::KernelLog
    } else if after.driver.is_some() {
        Cause::UnknownProtocol
    } else {
        Cause::Unknown
    };
    let text = match cause {
        Cause::Nothing => "rx_dropped and rx_errors did not grow".to_string(),
        Cause::NoHandler => format!(
            "rx_nohandler grew +{} with {grew} drops: frames for an inactive bond or team port, \
             dropped on purpose; harmless",
            of("rx_nohandler")
        ),
        Cause::Backlog => format!(
            "the CPU input backlog overflowed (softnet dropped +{}): raise \
             net.core.netdev_max_backlog or spread receive work with RPS",
            of("softnet dropped")
        ),
        Cause::RingFull => format!(
            "the NIC's RX ring was full (rx_missed_errors+rx_fifo_errors +{}): grow it with \
             'ethtool -G IF rx N' and check which CPU takes the IRQ",
            of("rx_missed_errors+rx_fifo_errors")
        ),
        Cause::DriverCounter => {
            let (name, v) = top_driver.cloned().unwrap_or_default();
            format!(
                "the driver's own counter '{}' grew +{v} with them: the drops are inside the \
                 driver ('ethtool -S' names them), not unwanted frames",
                name.trim_start_matches("driver ")
            )
        }
        Cause::KernelLog => format!(
            "the kernel logged {} driver errors or link downs for this NIC meanwhile: the drops \
             come with a NIC reset or a lost link",
            of("kernel log lines")
        ),
        Cause::UnknownProtocol => format!(
            "{grew} drops while no ring, backlog or driver counter moved: by elimination frames no \
             protocol here handles (LLDP or other unknown ethertypes, VLAN tags without a VLAN \
             device, IPv6 while disabled), which the stack counts in rx_dropped; harmless"
        ),
        Cause::Unknown => format!(
            "{grew} drops while no ring or backlog counter moved, but the driver's own counters \
             could not be read, so drops inside the driver are not ruled out ('ethtool -S')"
        ),
    };
    Explanation {
        cause,
        harmless: matches!(cause, Cause::NoHandler | Cause::UnknownProtocol),
        grew,
        moved,
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(name: &str, value: u64) -> NicStat {
        NicStat {
            name: name.into(),
            value,
        }
    }

    fn base() -> DropCounters {
        DropCounters {
            rx_dropped: 100,
            rx_errors: 0,
            rx_nohandler: 5,
            ring_full: 0,
            softnet_dropped: 7,
            driver: Some(vec![
                stat("rx_queue_0_drops", 3),
                stat("rx_no_buffer_count", 0),
            ]),
            kernel_log_events: 1,
        }
    }

    #[test]
    fn nothing_grew() {
        let e = explain_drops(&base(), &base());
        assert_eq!((e.cause, e.harmless, e.grew), (Cause::Nothing, false, 0));
    }

    #[test]
    fn nohandler_accounting_for_all_drops_is_harmless() {
        let mut after = base();
        after.rx_dropped = 140;
        after.rx_nohandler = 45;
        let e = explain_drops(&base(), &after);
        assert_eq!((e.cause, e.harmless, e.grew), (Cause::NoHandler, true, 40));
        // Nohandler covering only part of the drops is not enough.
        after.rx_nohandler = 20;
        after.driver = Some(vec![
            stat("rx_queue_0_drops", 28),
            stat("rx_no_buffer_count", 0),
        ]);
        let e = explain_drops(&base(), &after);
        assert_eq!(e.cause, Cause::DriverCounter);
        assert!(!e.harmless);
        assert!(e.text.contains("'rx_queue_0_drops' grew +25"), "{}", e.text);
    }

    #[test]
    fn the_largest_mover_is_the_cause() {
        let mut after = base();
        after.rx_dropped = 400;
        after.softnet_dropped = 307;
        after.ring_full = 12;
        let e = explain_drops(&base(), &after);
        assert_eq!(e.cause, Cause::Backlog);
        assert!(e.text.contains("+300"), "{}", e.text);
        assert!(
            e.moved
                .contains(&("rx_missed_errors+rx_fifo_errors".to_string(), 12))
        );
        after.softnet_dropped = 7;
        assert_eq!(explain_drops(&base(), &after).cause, Cause::RingFull);
    }

    #[test]
    fn kernel_log_when_no_counter_moved() {
        let mut after = base();
        after.rx_errors = 9;
        after.kernel_log_events = 3;
        let e = explain_drops(&base(), &after);
        assert_eq!((e.cause, e.grew), (Cause::KernelLog, 9));
        assert!(e.text.contains("2 driver errors"), "{}", e.text);
    }

    #[test]
    fn elimination_needs_the_driver_counters() {
        let mut after = base();
        after.rx_dropped = 160;
        let e = explain_drops(&base(), &after);
        assert_eq!((e.cause, e.harmless), (Cause::UnknownProtocol, true));
        let mut before = base();
        before.driver = None;
        after.driver = None;
        let e = explain_drops(&before, &after);
        assert_eq!((e.cause, e.harmless), (Cause::Unknown, false));
    }

    #[test]
    fn drop_counter_names() {
        for n in [
            "rx_queue_0_drops",
            "rx_missed",
            "rx_no_buffer_count",
            "rx_fifo_errors",
            "tx_timeout_count",
        ] {
            assert!(is_drop_counter(n), "{n}");
        }
        for n in [
            "rx_packets",
            "tx_bytes",
            "rx_queue_0_xdp_packets",
            "peer_ifindex",
        ] {
            assert!(!is_drop_counter(n), "{n}");
        }
    }
}
