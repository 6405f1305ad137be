//! Network rules: TCP buffer semantics and flags, queues and qdiscs, softnet and
//! NIC drops, offloads, and the link itself.

use super::sysctl_conf::{persist_hint, set_at, sysctl, triple, value_u64};
use super::{Change, Context, Finding, Risk, Rule, RuleInfo, Severity};
use crate::probe::net::{Interface, SoftnetCpu};

pub static RULES: &[&Rule] = &[
    &TCP_BUFFER_MAX_LOWERED,
    &CORE_BUFFER_MAX_RAISED,
    &TCP_MEM_VS_RAM,
    &TCP_TIMESTAMPS_OFF,
    &TCP_SACK_OFF,
    &TCP_WINDOW_SCALING_OFF,
    &SLOW_START_AFTER_IDLE_OFF,
    &TXQUEUELEN_LARGE,
    &QDISC_PFIFO_FAST,
    &BACKLOG_RAISED_WITHOUT_DROPS,
    &SOFTNET_DROPS,
    &RX_RING_OVERFLOW,
    &RX_DROPPED_HARMLESS,
    &COUNTERS_32BIT,
    &OFFLOADS_OFF,
    &LINK_DEGRADED,
    &CARRIER_FLAPPING,
];

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;
/// Link speed assumed for BDP arithmetic when no physical NIC reports one.
const ASSUMED_LINK_MBIT: u64 = 1000;
/// A LAN round trip; BDP = speed × this.
const LAN_RTT_MS: f64 = 1.0;
/// A typical WAN round trip (remote backup, VPN) for the BDP comparison.
const WAN_RTT_MS: f64 = 50.0;

/// Interfaces backed by hardware (not lo, bridges, veth, tunnels).
fn physical<'a>(ctx: &Context<'a>) -> Vec<&'a Interface> {
    ctx.snapshot
        .network
        .data()
        .map(|n| n.interfaces.iter().filter(|i| !i.is_virtual).collect())
        .unwrap_or_default()
}

/// Fastest negotiated speed of a physical NIC, or the assumption.
fn link_mbit(ctx: &Context) -> (u64, bool) {
    physical(ctx)
        .iter()
        .filter_map(|i| i.speed_mbit_per_sec)
        .max()
        .map_or((ASSUMED_LINK_MBIT, true), |s| (s, false))
}

fn softnet<'a>(ctx: &Context<'a>) -> Option<&'a [SoftnetCpu]> {
    ctx.snapshot
        .network
        .data()?
        .softnet
        .data()
        .map(|v| v.as_slice())
}

/// The kernel's boot-time tcp_[rw]mem[2]: min(cap, RAM/128) but at least the
/// floor (net/ipv4/tcp.c tcp_init, which uses free buffer pages; RAM is an upper
/// estimate, so the caller allows slack).
fn kernel_default_tcp_max(total_ram: u64, cap: u64, floor: u64) -> u64 {
    (total_ram / 128).min(cap).max(floor)
}

/// Below this share of the kernel default counts as "lowered" (free buffer pages
/// at boot are less than RAM, so the estimate runs a little high).
const LOWERED_PERCENT: u64 = 75;

static TCP_BUFFER_MAX_LOWERED: Rule = Rule {
    info: RuleInfo {
        id: "tcp-buffer-max-lowered",
        area: "network",
        title: "tcp_rmem/tcp_wmem maximum lowered below the kernel default",
        severity: Severity::Warning,
        risk: Risk::RuntimeSafe,
        checks: "The third value of net.ipv4.tcp_rmem or tcp_wmem (the ceiling of TCP \
                 autotuning) is below 75% of what the kernel picks for this RAM (6 MiB / 4 MiB, \
                 less on small boards): transfers over longer round trips are capped.",
        references: &[
            "https://docs.kernel.org/networking/ip-sysctl.html#tcp-variables",
            "https://github.com/oracle/bpftune/blob/main/docs/bpftune-tcp-buffer.rst",
        ],
    },
    evaluate: |info, ctx| {
        let Some(mem) = ctx.snapshot.memory.data() else {
            return Vec::new();
        };
        let (mbit, assumed) = link_mbit(ctx);
        let bytes_per_sec = mbit * 1_000_000 / 8;
        [
            ("net.ipv4.tcp_rmem", 6 * MIB, 128 * KIB, "receive"),
            ("net.ipv4.tcp_wmem", 4 * MIB, 64 * KIB, "send"),
        ]
        .into_iter()
        .filter_map(|(key, cap, floor, dir)| {
            let [min, default, max] = triple(ctx, key)?;
            let kernel = kernel_default_tcp_max(mem.total_bytes, cap, floor);
            if max * 100 >= kernel * LOWERED_PERCENT {
                return None;
            }
            let rtt_ms = max as f64 * 1000.0 / bytes_per_sec as f64;
            let wan_bdp = (bytes_per_sec as f64 * WAN_RTT_MS / 1000.0) as u64;
            let lan_bdp = (bytes_per_sec as f64 * LAN_RTT_MS / 1000.0) as u64;
            Some(
                Finding::of(
                    info,
                    format!("{key} max {max} is below the kernel default {kernel}"),
                    format!(
                        "The third value of {key} is the most TCP autotuning may grow a \
                         socket's {dir} buffer to; it is not a target, the kernel only grows \
                         buffers that fill. The kernel would choose {kernel} bytes for {} MiB \
                         of RAM. A window of {max} bytes keeps a {mbit} Mbit/s{} link full \
                         only up to {max} B / {} B/s = {rtt_ms:.1} ms round trip. The LAN \
                         needs {mbit} Mbit/s × {LAN_RTT_MS} ms = {lan_bdp} B, so the LAN \
                         never gained from lowering it; a WAN peer at {WAN_RTT_MS} ms needs \
                         {wan_bdp} B and is now capped at {:.0} Mbit/s. Restore the kernel \
                         value (old guides computed these from net.core.*mem_max and \
                         tcp_adv_win_scale, which is obsolete since 6.6).",
                        mem.total_bytes / MIB,
                        if assumed { " (assumed)" } else { "" },
                        bytes_per_sec,
                        max as f64 * 8.0 / (WAN_RTT_MS / 1000.0) / 1e6
                    ),
                )
                .evidence(key, format!("{min} {default} {max}"))
                .evidence("kernel default max", kernel)
                .evidence("link", format!("{mbit} Mbit/s"))
                .setting(format!("sysctl:{key}"))
                .change(Change::Sysctl {
                    key: key.into(),
                    value: format!("{min} {default} {kernel}"),
                })
                .change(Change::AdviceOnly {
                    action: persist_hint(ctx, key),
                }),
            )
        })
        .collect()
    },
};

/// The kernel's net.core.[rw]mem_max default (SK_WMEM_MAX on 64-bit; 32-bit is a bit less).
const CORE_MEM_MAX_DEFAULT: u64 = 212_992;

static CORE_BUFFER_MAX_RAISED: Rule = Rule {
    info: RuleInfo {
        id: "core-buffer-max-raised",
        area: "network",
        title: "net.core.rmem_max/wmem_max raised: only caps explicit SO_RCVBUF/SO_SNDBUF",
        severity: Severity::Info,
        risk: Risk::RuntimeSafe,
        checks: "A sysctl file raises net.core.rmem_max or wmem_max. These bound only buffers an \
                 application sets itself; TCP autotuning is bounded by tcp_rmem/tcp_wmem and \
                 may exceed them.",
        references: &[
            "https://docs.kernel.org/admin-guide/sysctl/net.html#rmem-max",
            "https://docs.kernel.org/networking/ip-sysctl.html#tcp-variables",
        ],
    },
    evaluate: |info, ctx| {
        ["net.core.rmem_max", "net.core.wmem_max"]
            .into_iter()
            .filter_map(|key| {
                let at = set_at(ctx, key)?;
                let v = value_u64(ctx, key)?;
                if v <= CORE_MEM_MAX_DEFAULT {
                    return None;
                }
                let tcp_key = if key.contains("rmem") {
                    "net.ipv4.tcp_rmem"
                } else {
                    "net.ipv4.tcp_wmem"
                };
                let tcp_max = triple(ctx, tcp_key).map(|t| t[2]);
                Some(
                    Finding::of(
                        info,
                        format!("{key} = {v} (set at {at}) does not affect TCP autotuning"),
                        format!(
                            "{key} is only the largest value an application may request with \
                             setsockopt(SO_RCVBUF/SO_SNDBUF); a socket that does so loses \
                             autotuning. TCP transfers that leave buffers alone grow up to \
                             {tcp_key}[2]{}, whatever {key} says, so the folklore 'TCP \
                             maximums can be no larger than core' is wrong. Keep the raise only \
                             if an application is clamped (it logs a smaller buffer than it \
                             asked for); Samba should not set SO_RCVBUF/SO_SNDBUF at all.",
                            tcp_max.map(|m| format!(" = {m}")).unwrap_or_default()
                        ),
                    )
                    .evidence(key, v)
                    .evidence(format!("{key} set at"), at)
                    .evidence("kernel default", CORE_MEM_MAX_DEFAULT)
                    .setting(format!("sysctl:{key}"))
                    .change(Change::AdviceOnly {
                        action: format!(
                            "leave it unless an application sets {} explicitly",
                            if key.contains("rmem") {
                                "SO_RCVBUF"
                            } else {
                                "SO_SNDBUF"
                            }
                        ),
                    }),
                )
            })
            .collect()
    },
};

/// bpftune caps tcp_mem[2] at 25% of RAM; the kernel default is about 9%.
const TCP_MEM_MAX_PERCENT_OF_RAM: u64 = 25;
/// tcp_mem is in pages; 4 KiB on every board we target (arm64 64 KiB kernels aside).
const PAGE_BYTES: u64 = 4096;

static TCP_MEM_VS_RAM: Rule = Rule {
    info: RuleInfo {
        id: "tcp-mem-exceeds-ram-share",
        area: "network",
        title: "net.ipv4.tcp_mem lets TCP take too much of RAM",
        severity: Severity::Warning,
        risk: Risk::RuntimeSafe,
        checks: "The pressure ceiling of tcp_mem (third value, in pages) is above 25% of RAM: \
                 many busy sockets can push the box into reclaim or the OOM killer before TCP \
                 backs off.",
        references: &[
            "https://docs.kernel.org/networking/ip-sysctl.html#tcp-variables",
            "https://github.com/oracle/bpftune/blob/main/docs/bpftune-tcp-buffer.rst",
        ],
    },
    evaluate: |info, ctx| {
        let (Some(mem), Some(t)) = (ctx.snapshot.memory.data(), triple(ctx, "net.ipv4.tcp_mem"))
        else {
            return Vec::new();
        };
        let max_bytes = t[2].saturating_mul(PAGE_BYTES);
        if mem.total_bytes == 0 || max_bytes * 100 <= mem.total_bytes * TCP_MEM_MAX_PERCENT_OF_RAM {
            return Vec::new();
        }
        // The kernel's own: limit = pages/16, tcp_mem = {3/4, 1, 3/2} × limit.
        let pages = mem.total_bytes / PAGE_BYTES;
        let limit = pages / 16;
        let default = [limit / 4 * 3, limit, limit / 4 * 6];
        vec![
            Finding::of(
                info,
                format!(
                    "tcp_mem max {} pages = {} MiB, {:.0}% of RAM",
                    t[2],
                    max_bytes / MIB,
                    max_bytes as f64 * 100.0 / mem.total_bytes as f64
                ),
                format!(
                    "tcp_mem[2] = {} pages × {PAGE_BYTES} B = {} MiB is when TCP starts \
                     refusing memory; on {} MiB of RAM that is above the \
                     {TCP_MEM_MAX_PERCENT_OF_RAM}% bpftune treats as the safe ceiling. The \
                     kernel sizes it at boot to about 9% ({} {} {} pages here). Raising it \
                     does not make single transfers faster (tcp_rmem/tcp_wmem bound those).",
                    t[2],
                    max_bytes / MIB,
                    mem.total_bytes / MIB,
                    default[0],
                    default[1],
                    default[2]
                ),
            )
            .evidence("net.ipv4.tcp_mem", format!("{} {} {}", t[0], t[1], t[2]))
            .evidence("MemTotal", format!("{} MiB", mem.total_bytes / MIB))
            .setting("sysctl:net.ipv4.tcp_mem")
            .change(Change::Sysctl {
                key: "net.ipv4.tcp_mem".into(),
                value: format!("{} {} {}", default[0], default[1], default[2]),
            }),
        ]
    },
};

/// A TCP feature flag that old guides turned off; default and healthy is 1.
fn tcp_flag_off(info: &RuleInfo, ctx: &Context, key: &str, why: &str) -> Vec<Finding> {
    if value_u64(ctx, key) != Some(0) {
        return Vec::new();
    }
    vec![
        Finding::of(
            info,
            format!("{key} is 0"),
            format!("{why} The default is 1; set it back."),
        )
        .evidence(key, 0)
        .evidence(
            format!("{key} set at"),
            set_at(ctx, key).unwrap_or_else(|| "no sysctl file (set at runtime)".into()),
        )
        .setting(format!("sysctl:{key}"))
        .change(Change::Sysctl {
            key: key.into(),
            value: "1".into(),
        })
        .change(Change::AdviceOnly {
            action: persist_hint(ctx, key),
        }),
    ]
}

static TCP_TIMESTAMPS_OFF: Rule = Rule {
    info: RuleInfo {
        id: "tcp-timestamps-off",
        area: "network",
        title: "TCP timestamps disabled",
        severity: Severity::Warning,
        risk: Risk::RuntimeSafe,
        checks: "net.ipv4.tcp_timestamps is 0 (old advice 'to save CPU').",
        references: &[
            "https://docs.kernel.org/networking/ip-sysctl.html#tcp-variables",
            "https://www.rfc-editor.org/rfc/rfc7323",
        ],
    },
    evaluate: |info, ctx| {
        tcp_flag_off(
            info,
            ctx,
            "net.ipv4.tcp_timestamps",
            "Timestamps give TCP an RTT sample on every ACK (better retransmit timers and \
             congestion control) and PAWS protection against wrapped sequence numbers, which a \
             gigabit link wraps in 34 s. They cost 12 bytes per segment (0.8% of 1448) and \
             no measurable CPU on any board since the 2000s; the kernel already randomises \
             their offset per connection.",
        )
    },
};

static TCP_SACK_OFF: Rule = Rule {
    info: RuleInfo {
        id: "tcp-sack-off",
        area: "network",
        title: "TCP selective acknowledgements disabled",
        severity: Severity::Warning,
        risk: Risk::RuntimeSafe,
        checks: "net.ipv4.tcp_sack is 0.",
        references: &[
            "https://docs.kernel.org/networking/ip-sysctl.html#tcp-variables",
            "https://www.rfc-editor.org/rfc/rfc2018",
        ],
    },
    evaluate: |info, ctx| {
        tcp_flag_off(
            info,
            ctx,
            "net.ipv4.tcp_sack",
            "Without SACK one lost segment makes the sender resend everything after it, \
             or wait a whole RTT per loss; with Wi-Fi clients or any WAN loss throughput \
             collapses. The 2019 SACK CVEs are long fixed in every 6.x kernel.",
        )
    },
};

static TCP_WINDOW_SCALING_OFF: Rule = Rule {
    info: RuleInfo {
        id: "tcp-window-scaling-off",
        area: "network",
        title: "TCP window scaling disabled",
        severity: Severity::Warning,
        risk: Risk::RuntimeSafe,
        checks: "net.ipv4.tcp_window_scaling is 0: windows are capped at 64 KiB.",
        references: &[
            "https://docs.kernel.org/networking/ip-sysctl.html#tcp-variables",
            "https://www.rfc-editor.org/rfc/rfc7323",
        ],
    },
    evaluate: |info, ctx| {
        tcp_flag_off(
            info,
            ctx,
            "net.ipv4.tcp_window_scaling",
            "Without window scaling no TCP window exceeds 65535 bytes: at 1 ms LAN RTT that \
             caps a stream at 65535 B / 1 ms = 524 Mbit/s, and at 50 ms WAN RTT at 10.5 \
             Mbit/s, whatever tcp_rmem allows.",
        )
    },
};

static SLOW_START_AFTER_IDLE_OFF: Rule = Rule {
    info: RuleInfo {
        id: "tcp-slow-start-after-idle-off",
        area: "network",
        title: "tcp_slow_start_after_idle disabled (harmless, rarely useful)",
        severity: Severity::Info,
        risk: Risk::RuntimeSafe,
        checks: "net.ipv4.tcp_slow_start_after_idle is 0. This only matters for long-lived \
                 connections that idle and then burst over a long RTT.",
        references: &["https://docs.kernel.org/networking/ip-sysctl.html#tcp-variables"],
    },
    evaluate: |info, ctx| {
        if value_u64(ctx, "net.ipv4.tcp_slow_start_after_idle") != Some(0) {
            return Vec::new();
        }
        vec![
            Finding::of(
                info,
                "tcp_slow_start_after_idle is 0",
                "With 0 an idle connection resumes at its old congestion window instead of \
                 restarting slow start. On a LAN the window regrows in a few 1 ms round trips, \
                 so there is nothing to gain or lose; over a WAN it can burst into a queue. \
                 Either value is acceptable; the default is 1.",
            )
            .evidence("net.ipv4.tcp_slow_start_after_idle", 0)
            .setting("sysctl:net.ipv4.tcp_slow_start_after_idle")
            .change(Change::AdviceOnly {
                action: "none needed".into(),
            }),
        ]
    },
};

/// From here a transmit queue is bufferbloat, not smoothing (old guides: 5000+).
const TXQUEUELEN_WARN: u32 = 5000;
/// Ethernet frame on the wire incl. header, for drain-time arithmetic.
const FRAME_BYTES: u64 = 1514;

static TXQUEUELEN_LARGE: Rule = Rule {
    info: RuleInfo {
        id: "txqueuelen-large",
        area: "network",
        title: "Very long transmit queue (bufferbloat)",
        severity: Severity::Warning,
        risk: Risk::RuntimeSafe,
        checks: "An interface's txqueuelen is 5000 packets or more: a full queue delays every \
                 packet behind it; BQL and TSQ already keep the NIC fed.",
        references: &[
            "https://docs.kernel.org/networking/ip-sysctl.html",
            "https://www.bufferbloat.net/projects/codel/wiki/Best_practices_for_benchmarking_Codel_and_FQ_Codel/",
        ],
    },
    evaluate: |info, ctx| {
        physical(ctx)
            .into_iter()
            .filter_map(|i| {
                let q = i.tx_queue_len_packets?;
                if q < TXQUEUELEN_WARN {
                    return None;
                }
                let mbit = i.speed_mbit_per_sec.unwrap_or(ASSUMED_LINK_MBIT);
                let target: u32 = if mbit <= 100 { 500 } else { 1000 };
                let drain_ms = |n: u32| (n as u64 * FRAME_BYTES * 8) as f64 / (mbit as f64 * 1e3);
                Some(
                    Finding::of(
                        info,
                        format!("{} txqueuelen is {q}", i.name),
                        format!(
                            "A full queue of {q} frames × {FRAME_BYTES} B at {mbit} Mbit/s \
                             takes {:.0} ms to drain, and every SMB or SSH packet waits behind \
                             it. Byte queue limits and TCP small queues already keep the NIC \
                             busy, so a long queue adds only latency. {target} packets drains \
                             in {:.0} ms.",
                            drain_ms(q),
                            drain_ms(target)
                        ),
                    )
                    .evidence(format!("{} tx_queue_len", i.name), q)
                    .evidence(format!("{} speed", i.name), format!("{mbit} Mbit/s"))
                    .setting(format!("sysfs:class/net/{}/tx_queue_len", i.name))
                    .change(Change::SysfsAttribute {
                        path: format!("class/net/{}/tx_queue_len", i.name),
                        value: target.to_string(),
                    }),
                )
            })
            .collect()
    },
};

static QDISC_PFIFO_FAST: Rule = Rule {
    info: RuleInfo {
        id: "qdisc-pfifo-fast",
        area: "network",
        title: "Physical NIC uses pfifo_fast instead of fq_codel",
        severity: Severity::Notice,
        risk: Risk::RuntimeSafe,
        checks: "The root qdisc of a physical NIC is pfifo_fast (or mq whose children come \
                 from net.core.default_qdisc = pfifo_fast): one FIFO, no fairness, no AQM.",
        references: &[
            "https://docs.kernel.org/admin-guide/sysctl/net.html#default-qdisc",
            "https://www.rfc-editor.org/rfc/rfc8290",
        ],
    },
    evaluate: |info, ctx| {
        let default = sysctl(ctx)
            .and_then(|s| s.values.get("net.core.default_qdisc"))
            .map(String::as_str);
        physical(ctx)
            .into_iter()
            .filter(|i| match i.qdisc.as_deref() {
                Some("pfifo_fast") => true,
                Some("mq") => default == Some("pfifo_fast"),
                _ => false,
            })
            .map(|i| {
                let root = i.qdisc.as_deref().unwrap_or("?");
                let recreate = if root == "mq" {
                    format!(
                        "after setting the default: tc qdisc del dev {0} root (the kernel \
                         re-attaches mq with fq_codel children)",
                        i.name
                    )
                } else {
                    format!(
                        "after setting the default: tc qdisc replace dev {} root fq_codel",
                        i.name
                    )
                };
                Finding::of(
                    info,
                    format!(
                        "{} root qdisc {root} (net.core.default_qdisc = {})",
                        i.name,
                        default.unwrap_or("?")
                    ),
                    format!(
                        "pfifo_fast is one tail-drop FIFO: a bulk SMB copy fills it and an \
                         interactive packet waits behind up to txqueuelen {} packets. fq_codel \
                         gives each flow its own queue and keeps the standing delay near 5 ms; \
                         it is the default systemd and Debian 13 ship. Changing \
                         net.core.default_qdisc only affects qdiscs created afterwards, so the \
                         existing root must be re-created.",
                        i.tx_queue_len_packets
                            .map_or("?".to_string(), |q| q.to_string())
                    ),
                )
                .evidence(format!("{} root qdisc", i.name), root)
                .evidence("net.core.default_qdisc", default.unwrap_or("?"))
                .setting("sysctl:net.core.default_qdisc")
                .change(Change::Sysctl {
                    key: "net.core.default_qdisc".into(),
                    value: "fq_codel".into(),
                })
                .change(Change::AdviceOnly { action: recreate })
            })
            .collect()
    },
};

const BACKLOG_DEFAULT: u64 = 1000;

fn softnet_totals(cpus: &[SoftnetCpu]) -> (u64, u64, u64) {
    cpus.iter().fold((0, 0, 0), |(p, d, s), c| {
        (
            p.saturating_add(c.processed),
            d.saturating_add(c.dropped),
            s.saturating_add(c.time_squeeze),
        )
    })
}

static BACKLOG_RAISED_WITHOUT_DROPS: Rule = Rule {
    info: RuleInfo {
        id: "netdev-backlog-raised-without-drops",
        area: "network",
        title: "netdev_max_backlog raised although the backlog (almost) never overflowed",
        severity: Severity::Notice,
        risk: Risk::RuntimeSafe,
        checks: "net.core.netdev_max_backlog is above the default 1000 while /proc/net/softnet_stat \
                 shows fewer than one backlog drop per million packets.",
        references: &[
            "https://docs.kernel.org/admin-guide/sysctl/net.html#netdev-max-backlog",
            "https://docs.kernel.org/networking/scaling.html",
        ],
    },
    evaluate: |info, ctx| {
        let (Some(v), Some(cpus)) = (value_u64(ctx, "net.core.netdev_max_backlog"), softnet(ctx))
        else {
            return Vec::new();
        };
        let (processed, dropped, _) = softnet_totals(cpus);
        let per_million = dropped as f64 * 1e6 / processed.max(1) as f64;
        if v <= BACKLOG_DEFAULT || per_million >= SOFTNET_DROP_NOTICE_PER_MILLION {
            return Vec::new();
        }
        vec![
            Finding::of(
                info,
                format!("netdev_max_backlog {v} with {dropped} backlog drops"),
                format!(
                    "The per-CPU input backlog overflowed {dropped} times in {processed} \
                     packets since boot ({per_million:.2} per million, softnet_stat column 2), \
                     below the {SOFTNET_DROP_NOTICE_PER_MILLION} per million worth acting on, \
                     so the raise from {BACKLOG_DEFAULT} to {v} buys nothing but worst-case \
                     queueing. It matters at 10 Gbit/s, rarely at 1 Gbit/s or below. Remove \
                     it; raise in steps only while drops grow."
                ),
            )
            .evidence("net.core.netdev_max_backlog", v)
            .evidence("softnet dropped", dropped)
            .setting("sysctl:net.core.netdev_max_backlog")
            .change(Change::Sysctl {
                key: "net.core.netdev_max_backlog".into(),
                value: BACKLOG_DEFAULT.to_string(),
            })
            .change(Change::AdviceOnly {
                action: set_at(ctx, "net.core.netdev_max_backlog")
                    .map_or("nothing to remove from sysctl files".into(), |at| {
                        format!("delete the line at {at}")
                    }),
            }),
        ]
    },
};

/// Below one drop per million packets the backlog is not worth touching.
const SOFTNET_DROP_NOTICE_PER_MILLION: f64 = 1.0;

static SOFTNET_DROPS: Rule = Rule {
    info: RuleInfo {
        id: "softnet-backlog-drops",
        area: "network",
        title: "Packets dropped because the per-CPU input backlog was full",
        severity: Severity::Notice,
        risk: Risk::RuntimeSafe,
        checks: "/proc/net/softnet_stat shows backlog drops (column 2). Notice from one drop per \
                 million packets, info below.",
        references: &[
            "https://docs.kernel.org/admin-guide/sysctl/net.html#netdev-max-backlog",
            "https://docs.kernel.org/networking/scaling.html",
            "https://github.com/oracle/bpftune/blob/main/docs/bpftune-net-buffer.rst",
        ],
    },
    evaluate: |info, ctx| {
        let (Some(v), Some(cpus)) = (value_u64(ctx, "net.core.netdev_max_backlog"), softnet(ctx))
        else {
            return Vec::new();
        };
        let (processed, dropped, squeeze) = softnet_totals(cpus);
        if dropped == 0 {
            return Vec::new();
        }
        let per_million = dropped as f64 * 1e6 / processed.max(1) as f64;
        let severity = if per_million >= SOFTNET_DROP_NOTICE_PER_MILLION {
            Severity::Notice
        } else {
            Severity::Info
        };
        let budget = value_u64(ctx, "net.core.netdev_budget").unwrap_or(300);
        let busiest = cpus.iter().max_by_key(|c| c.dropped).map_or(0, |c| c.cpu);
        let advice = if severity == Severity::Info {
            " That is negligible (TCP recovers such losses unnoticed); leave the backlog and \
             re-check if the rate grows."
                .to_string()
        } else {
            format!(
                " Raise netdev_max_backlog in steps ({v} → {}) and re-check the counter; on \
                 single-queue ARM NICs spread receive work with RPS/IRQ affinity first.{}",
                v * 2,
                if squeeze > dropped {
                    format!(
                        " time_squeeze {squeeze} > drops: the softirq ran out of its budget \
                         ({budget} packets) more often than the backlog overflowed, so raise \
                         net.core.netdev_budget ({budget} → {}) as well.",
                        budget * 2
                    )
                } else {
                    String::new()
                }
            )
        };
        let mut f = Finding::of(
            info,
            format!(
                "{dropped} backlog drops in {processed} packets ({per_million:.2} per million)"
            ),
            format!(
                "{dropped} packets were dropped because a CPU's input backlog \
                 (netdev_max_backlog = {v}) was full: {per_million:.2} per million packets \
                 since boot, most on cpu {busiest} (time_squeeze {squeeze}).{advice}"
            ),
        )
        .severity(severity)
        .evidence("softnet dropped", dropped)
        .evidence("softnet processed", processed)
        .evidence("softnet time_squeeze", squeeze)
        .evidence("net.core.netdev_max_backlog", v)
        .setting("sysctl:net.core.netdev_max_backlog");
        if severity == Severity::Notice {
            f = f.change(Change::Sysctl {
                key: "net.core.netdev_max_backlog".into(),
                value: (v * 2).to_string(),
            });
            if squeeze > dropped {
                f = f
                    .setting("sysctl:net.core.netdev_budget")
                    .change(Change::Sysctl {
                        key: "net.core.netdev_budget".into(),
                        value: (budget * 2).to_string(),
                    });
            }
        } else {
            f = f.change(Change::AdviceOnly {
                action: "none needed; watch the counter".into(),
            });
        }
        vec![f]
    },
};

static RX_RING_OVERFLOW: Rule = Rule {
    info: RuleInfo {
        id: "nic-rx-ring-overflow",
        area: "network",
        title: "NIC dropped frames because its receive ring was full",
        severity: Severity::Notice,
        risk: Risk::RuntimeSafe,
        checks: "rx_missed_errors or rx_fifo_errors are non-zero on a physical NIC: frames \
                 arrived while the RX ring had no free descriptor. Recommends the maximum ring \
                 size ethtool reports when the current one is smaller.",
        references: &[
            "https://docs.kernel.org/networking/statistics.html",
            "https://man7.org/linux/man-pages/man8/ethtool.8.html",
        ],
    },
    evaluate: |info, ctx| {
        physical(ctx)
            .into_iter()
            .filter_map(|i| {
                let missed = i.counters.rx_missed_errors.unwrap_or(0);
                let fifo = i.counters.rx_fifo_errors.unwrap_or(0);
                if missed == 0 && fifo == 0 {
                    return None;
                }
                let rings = i.ethtool.data().and_then(|e| e.rings.data());
                let packets = i.counters.rx_packets.unwrap_or(0);
                let mut f = Finding::of(
                    info,
                    format!(
                        "{} missed {} frames for lack of RX descriptors",
                        i.name,
                        missed + fifo
                    ),
                    format!(
                        "rx_missed_errors = {missed} and rx_fifo_errors = {fifo} (of {packets} \
                         frames): the NIC had nowhere to put them, usually because the CPU \
                         serviced the interrupt late. {}",
                        match rings {
                            Some(r) if r.rx_pending < r.rx_max => format!(
                                "The RX ring holds {} of a possible {} descriptors; at \
                                 {} frames it absorbs {:.1} ms of a 1 Gbit/s burst instead of \
                                 {:.1} ms. Raise it (costs {} KiB of RAM at 2 KiB per buffer).",
                                r.rx_pending,
                                r.rx_max,
                                r.rx_max,
                                r.rx_max as f64 * 12.3 / 1000.0,
                                r.rx_pending as f64 * 12.3 / 1000.0,
                                (r.rx_max - r.rx_pending) as u64 * 2
                            ),
                            Some(r) => format!(
                                "The RX ring is already at its maximum {}: spread interrupt \
                                 load (IRQ affinity, RPS) or find what keeps the CPU busy.",
                                r.rx_max
                            ),
                            None => "The driver does not report ring sizes.".into(),
                        }
                    ),
                )
                .evidence(format!("{} rx_missed_errors", i.name), missed)
                .evidence(format!("{} rx_fifo_errors", i.name), fifo)
                .setting(format!("ethtool:{}:rx-ring", i.name));
                f = match rings {
                    Some(r) if r.rx_pending < r.rx_max => f
                        .evidence(
                            format!("{} rx ring", i.name),
                            format!("{} of max {}", r.rx_pending, r.rx_max),
                        )
                        .change(Change::Ethtool {
                            interface: i.name.clone(),
                            setting: "rx".into(),
                            value: r.rx_max.to_string(),
                        }),
                    _ => f.change(Change::AdviceOnly {
                        action: "check IRQ affinity and RPS for this NIC".into(),
                    }),
                };
                Some(f)
            })
            .collect()
    },
};

static RX_DROPPED_HARMLESS: Rule = Rule {
    info: RuleInfo {
        id: "rx-dropped-unknown-protocol",
        area: "network",
        title: "rx_dropped counts frames nobody wanted (harmless)",
        severity: Severity::Info,
        risk: Risk::AdviceOnly,
        checks: "A physical NIC's rx_dropped is non-zero while it reports no missed/FIFO \
                 errors and no CPU dropped from its backlog: the frames were for protocols or \
                 VLANs this host does not run.",
        references: &["https://docs.kernel.org/networking/statistics.html"],
    },
    evaluate: |info, ctx| {
        let backlog_drops = softnet(ctx).map_or(0, |c| softnet_totals(c).1);
        physical(ctx)
            .into_iter()
            .filter_map(|i| {
                let dropped = i.counters.rx_dropped.filter(|d| *d > 0)?;
                if i.counters.rx_missed_errors.unwrap_or(0) > 0
                    || i.counters.rx_fifo_errors.unwrap_or(0) > 0
                    || backlog_drops > 0
                {
                    return None;
                }
                let packets = i.counters.rx_packets.unwrap_or(0);
                Some(
                    Finding::of(
                        info,
                        format!("{} rx_dropped {dropped} are unwanted frames", i.name),
                        format!(
                            "{dropped} of {packets} received frames were dropped, but the NIC \
                             missed none (rx_missed_errors/rx_fifo_errors 0) and no CPU backlog \
                             overflowed, so these are frames the stack discarded on purpose: \
                             unknown ethertypes (LLDP, EAPOL, IPv6 when disabled), VLAN tags \
                             without a VLAN interface, or multicast nobody joined. Nothing to \
                             tune."
                        ),
                    )
                    .evidence(format!("{} rx_dropped", i.name), dropped)
                    .evidence("softnet dropped", backlog_drops)
                    .setting(format!("ethtool:{}:statistics", i.name))
                    .change(Change::AdviceOnly {
                        action: "none needed".into(),
                    }),
                )
            })
            .collect()
    },
};

static COUNTERS_32BIT: Rule = Rule {
    info: RuleInfo {
        id: "net-counters-32bit",
        area: "network",
        title: "Interface counters wrap at 4 GiB on this 32-bit kernel",
        severity: Severity::Info,
        risk: Risk::AdviceOnly,
        checks: "The kernel is 32-bit, so byte counters of a physical NIC wrap at 2^32; totals \
                 and rates from samples further apart than the wrap time are wrong.",
        references: &["https://docs.kernel.org/networking/statistics.html"],
    },
    evaluate: |info, ctx| {
        physical(ctx)
            .into_iter()
            .filter(|i| i.counter_bits == Some(32))
            .map(|i| {
                let mbit = i.speed_mbit_per_sec.unwrap_or(ASSUMED_LINK_MBIT);
                let wrap_s = (1u64 << 32) as f64 * 8.0 / (mbit as f64 * 1e6);
                Finding::of(
                    info,
                    format!(
                        "{} byte counters wrap every {wrap_s:.0} s at {mbit} Mbit/s",
                        i.name
                    ),
                    format!(
                        "{}. rx_bytes/tx_bytes wrap after 2^32 B = 4 GiB, which at line \
                         rate {mbit} Mbit/s is 2^32 × 8 / {mbit}e6 = {wrap_s:.0} s. Totals \
                         since boot are meaningless and rates need samples less than \
                         {wrap_s:.0} s apart (nastune bench measures over seconds).",
                        i.counter_bits_reason
                    ),
                )
                .evidence(format!("{} counter bits", i.name), 32)
                .evidence(
                    format!("{} rx_bytes", i.name),
                    i.counters.rx_bytes.unwrap_or(0),
                )
                .setting(format!("sysfs:class/net/{}/statistics", i.name))
                .change(Change::AdviceOnly {
                    action: format!("sample counters at intervals under {wrap_s:.0} s"),
                })
            })
            .collect()
    },
};

/// Offloads worth having on; (kernel feature name, what ethtool -k calls it).
const OFFLOADS: &[(&str, &str)] = &[
    ("tx-tcp-segmentation", "TSO"),
    ("tx-generic-segmentation", "GSO"),
    ("rx-gro", "GRO"),
    ("rx-checksum", "RX checksumming"),
    ("tx-checksum-ipv4", "TX checksumming (IPv4)"),
    ("tx-checksum-ip-generic", "TX checksumming"),
    ("tx-scatter-gather", "scatter-gather"),
];

static OFFLOADS_OFF: Rule = Rule {
    info: RuleInfo {
        id: "nic-offloads-off",
        area: "network",
        title: "Segmentation/checksum offloads turned off on a physical NIC",
        severity: Severity::Notice,
        risk: Risk::RuntimeSafe,
        checks: "TSO, GSO, GRO, checksum or scatter-gather offload is off on a physical NIC \
                 although the driver can turn it on (not 'fixed'): the CPU does per-packet \
                 work the NIC or the batched software path would do.",
        references: &[
            "https://docs.kernel.org/networking/segmentation-offloads.html",
            "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git/commit/?id=3ae8f4e0b98b",
        ],
    },
    evaluate: |info, ctx| {
        physical(ctx)
            .into_iter()
            .filter_map(|i| {
                let features = i.ethtool.data()?.features.data()?;
                let off: Vec<(&str, &str)> = OFFLOADS
                    .iter()
                    .copied()
                    .filter(|(name, _)| {
                        features
                            .iter()
                            .any(|f| f.name == *name && !f.active && !f.fixed)
                    })
                    .collect();
                if off.is_empty() {
                    return None;
                }
                let driver = i.driver.as_deref().unwrap_or("?");
                let names: Vec<&str> = off.iter().map(|(_, label)| *label).collect();
                let mv643xx = if driver.starts_with("mv643xx")
                    && off.iter().any(|(n, _)| *n == "tx-tcp-segmentation")
                {
                    " The old Kirkwood/Pogoplug advice 'GSO on, TSO off for mv643xx_eth' predates \
                     the driver's software TSO (2014, commit 3ae8f4e0b98b)."
                } else {
                    ""
                };
                let mut f = Finding::of(
                    info,
                    format!("{} ({driver}) has {} off", i.name, names.join(", ")),
                    format!(
                        "With segmentation offload the stack hands the driver 64 KiB at once \
                         instead of 45 × 1448-byte segments, and GRO merges received segments \
                         the same way, so per-packet CPU cost falls by an order of magnitude — \
                         the scarce resource on a small ARM board.{mv643xx} Turn them back on \
                         and compare with iperf3 in both directions plus CPU%; on a headless \
                         box apply behind a revert timer, and persist in a systemd .link file \
                         or an ethtool post-up hook."
                    ),
                )
                .evidence(format!("{} driver", i.name), driver)
                .evidence(format!("{} offloads off", i.name), names.join(", "));
                for (name, _) in &off {
                    f = f
                        .setting(format!("ethtool:{}:{name}", i.name))
                        .change(Change::Ethtool {
                            interface: i.name.clone(),
                            setting: (*name).to_string(),
                            value: "on".into(),
                        });
                }
                Some(f)
            })
            .collect()
    },
};

/// Drivers of gigabit MACs on the boards we target (and common PCIe ones).
const GIGABIT_DRIVERS: &[&str] = &[
    "mv643xx_eth",
    "mv643xx_eth_port",
    "mvneta",
    "st_gmac",
    "stmmaceth",
    "rk_gmac-dwmac",
    "r8169",
    "e1000e",
    "igb",
    "bcmgenet",
    "lan78xx",
];

static LINK_DEGRADED: Rule = Rule {
    info: RuleInfo {
        id: "link-degraded",
        area: "network",
        title: "Link negotiated below the NIC's speed or at half duplex",
        severity: Severity::Warning,
        risk: Risk::AdviceOnly,
        checks: "A physical NIC runs at half duplex, or a known gigabit NIC negotiated 100 or \
                 10 Mbit/s: usually a bad cable (a broken pair), a 100 Mbit switch port, or \
                 forced settings on one side.",
        references: &["https://man7.org/linux/man-pages/man8/ethtool.8.html"],
    },
    evaluate: |info, ctx| {
        physical(ctx)
            .into_iter()
            .filter(|i| i.carrier == Some(true))
            .filter_map(|i| {
                let speed = i.speed_mbit_per_sec;
                let half = i.duplex.as_deref() == Some("half");
                let gigabit = i.driver.as_deref().is_some_and(|d| GIGABIT_DRIVERS.contains(&d));
                let slow = gigabit && speed.is_some_and(|s| s < 1000);
                if !half && !slow {
                    return None;
                }
                let speed = speed.map_or("?".to_string(), |s| s.to_string());
                let mut why = Vec::new();
                if slow {
                    why.push(format!(
                        "{} is a gigabit NIC but negotiated {speed} Mbit/s: at most {:.1} MB/s \
                         instead of ~110 MB/s for file copies. Gigabit needs all four pairs; a \
                         cable with one bad pair or a 100 Mbit switch port falls back to 100.",
                        i.driver.as_deref().unwrap_or("?"),
                        speed.parse::<f64>().map_or(0.0, |s| s / 8.0 * 0.94)
                    ));
                }
                if half {
                    why.push(
                        "Half duplex means collisions and a fraction of the throughput; it \
                         happens when one side is forced to a fixed speed and the other \
                         autonegotiates."
                            .to_string(),
                    );
                }
                Some(
                    Finding::of(
                        info,
                        format!(
                            "{} link at {speed} Mbit/s {} duplex",
                            i.name,
                            i.duplex.as_deref().unwrap_or("?")
                        ),
                        format!("{} Swap the cable, try another switch port, and leave both sides on autonegotiation.", why.join(" ")),
                    )
                    .evidence(format!("{} speed", i.name), format!("{speed} Mbit/s"))
                    .evidence(format!("{} duplex", i.name), i.duplex.as_deref().unwrap_or("?"))
                    .setting(format!("ethtool:{}:speed", i.name))
                    .change(Change::AdviceOnly {
                        action: "replace the cable / switch port; keep autonegotiation on".into(),
                    }),
                )
            })
            .collect()
    },
};

/// Boot and a cable replug give a handful; more than this is a flapping link.
const CARRIER_CHANGES_NOTICE: u64 = 10;

static CARRIER_FLAPPING: Rule = Rule {
    info: RuleInfo {
        id: "carrier-flapping",
        area: "network",
        title: "Link went down and up repeatedly",
        severity: Severity::Notice,
        risk: Risk::AdviceOnly,
        checks: "A physical NIC's carrier_changes exceeds 10 since boot (each drop counts down \
                 and up): a marginal cable, connector or switch port, or power saving (EEE) \
                 misbehaving.",
        references: &["https://docs.kernel.org/networking/statistics.html"],
    },
    evaluate: |info, ctx| {
        let uptime = ctx
            .snapshot
            .host
            .data()
            .and_then(|h| h.uptime_seconds)
            .filter(|u| *u > 0.0);
        physical(ctx)
            .into_iter()
            .filter_map(|i| {
                let changes = i.counters.carrier_changes?;
                if changes <= CARRIER_CHANGES_NOTICE {
                    return None;
                }
                let drops = changes / 2;
                let rate = uptime.map_or(String::new(), |u| {
                    format!(
                        " over {:.1} days of uptime ({:.1} per day)",
                        u / 86400.0,
                        drops as f64 / (u / 86400.0)
                    )
                });
                Some(
                    Finding::of(
                        info,
                        format!("{} carrier changed {changes} times", i.name),
                        format!(
                            "carrier_changes {changes} means the link dropped about {drops} \
                             times{rate}. Each drop stalls SMB/NFS clients for the \
                             renegotiation (1-3 s) and may reset connections. Check the cable \
                             and port; if the switch supports EEE, try disabling it \
                             (ethtool --set-eee {} eee off).",
                            i.name
                        ),
                    )
                    .evidence(format!("{} carrier_changes", i.name), changes)
                    .setting(format!("sysfs:class/net/{}/carrier_changes", i.name))
                    .change(Change::AdviceOnly {
                        action: "check cable, connector and switch port".into(),
                    }),
                )
            })
            .collect()
    },
};

#[cfg(test)]
mod tests {
    use super::super::sysctl_conf::test_edit::{configure, set};
    use super::*;
    use crate::advise::test_support::snapshot_of;
    use crate::probe::{Outcome, Snapshot};

    fn run(rule: &Rule, snap: &Snapshot) -> Vec<Finding> {
        (rule.evaluate)(&rule.info, &Context { snapshot: snap })
    }

    fn eth0(snap: &mut Snapshot) -> &mut Interface {
        let Outcome::Ok { data } = &mut snap.network else {
            panic!("no network section");
        };
        data.interfaces
            .iter_mut()
            .find(|i| i.name == "eth0")
            .expect("eth0")
    }

    fn softnet_mut(snap: &mut Snapshot) -> &mut Vec<SoftnetCpu> {
        let Outcome::Ok { data } = &mut snap.network else {
            panic!("no network section");
        };
        let Outcome::Ok { data } = &mut data.softnet else {
            panic!("no softnet");
        };
        data
    }

    #[test]
    fn tcp_buffer_max_lowered_with_bdp_arithmetic() {
        let mut snap = snapshot_of("rk3399-raid5");
        assert!(run(&TCP_BUFFER_MAX_LOWERED, &snap).is_empty());
        // The pogoplug's kernel-chosen 864000 on 120 MiB is not "lowered".
        assert!(run(&TCP_BUFFER_MAX_LOWERED, &snapshot_of("pogoplug-v4")).is_empty());
        // Raising is not this rule's business (buildhost has 32 MiB).
        assert!(run(&TCP_BUFFER_MAX_LOWERED, &snapshot_of("buildhost")).is_empty());
        set(&mut snap, "net.ipv4.tcp_rmem", "4096 87380 1048576");
        let f = run(&TCP_BUFFER_MAX_LOWERED, &snap);
        assert_eq!(f.len(), 1, "{f:?}");
        // 1048576 B / 125000000 B/s = 8.4 ms; 50 ms WAN → 1048576 × 8 / 0.05 = 168 Mbit/s.
        assert!(f[0].rationale.contains("= 8.4 ms"), "{}", f[0].rationale);
        assert!(
            f[0].rationale.contains("capped at 168 Mbit/s"),
            "{}",
            f[0].rationale
        );
        assert_eq!(
            f[0].recommendation[0],
            Change::Sysctl {
                key: "net.ipv4.tcp_rmem".into(),
                value: "4096 87380 6291456".into()
            }
        );
    }

    #[test]
    fn core_buffer_raise_is_info_only_when_configured() {
        let f = run(&CORE_BUFFER_MAX_RAISED, &snapshot_of("pogoplug-v4"));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].title.contains("60-nas.conf:5"), "{}", f[0].title);
        // buildhost's 4 MiB comes from no sysctl file we can name: silent.
        assert!(run(&CORE_BUFFER_MAX_RAISED, &snapshot_of("buildhost")).is_empty());
    }

    #[test]
    fn tcp_mem_above_a_quarter_of_ram() {
        let mut snap = snapshot_of("pogoplug-v4");
        assert!(run(&TCP_MEM_VS_RAM, &snap).is_empty());
        // A guide's "65536 131072 262144" pages = 1 GiB on a 120 MiB box.
        set(&mut snap, "net.ipv4.tcp_mem", "65536 131072 262144");
        let f = run(&TCP_MEM_VS_RAM, &snap);
        assert_eq!(f.len(), 1);
        assert!(f[0].title.contains("1024 MiB"), "{}", f[0].title);
    }

    #[test]
    fn tcp_flags_off_are_warnings_and_on_is_silent() {
        for (rule, key) in [
            (&TCP_TIMESTAMPS_OFF, "net.ipv4.tcp_timestamps"),
            (&TCP_SACK_OFF, "net.ipv4.tcp_sack"),
            (&TCP_WINDOW_SCALING_OFF, "net.ipv4.tcp_window_scaling"),
        ] {
            let mut snap = snapshot_of("rk3399-raid5");
            assert!(run(rule, &snap).is_empty(), "{key}");
            set(&mut snap, key, "0");
            configure(&mut snap, key, "/etc/sysctl.conf", 40, "0");
            let f = run(rule, &snap);
            assert_eq!(f.len(), 1, "{key}");
            assert_eq!(f[0].severity, Severity::Warning);
            assert_eq!(
                f[0].recommendation,
                vec![
                    Change::Sysctl {
                        key: key.into(),
                        value: "1".into()
                    },
                    Change::AdviceOnly {
                        action: "edit /etc/sysctl.conf:40".into()
                    }
                ]
            );
        }
    }

    #[test]
    fn slow_start_after_idle_zero_is_only_info() {
        let mut snap = snapshot_of("rk3399-raid5");
        assert!(run(&SLOW_START_AFTER_IDLE_OFF, &snap).is_empty());
        set(&mut snap, "net.ipv4.tcp_slow_start_after_idle", "0");
        assert_eq!(
            run(&SLOW_START_AFTER_IDLE_OFF, &snap)[0].severity,
            Severity::Info
        );
    }

    #[test]
    fn txqueuelen_5000_with_drain_time() {
        let mut snap = snapshot_of("rpi2-luks");
        assert!(run(&TXQUEUELEN_LARGE, &snap).is_empty());
        eth0(&mut snap).tx_queue_len_packets = Some(5000);
        let f = run(&TXQUEUELEN_LARGE, &snap);
        assert_eq!(f.len(), 1);
        // 5000 × 1514 B × 8 / 100 Mbit/s = 606 ms; 500 packets = 61 ms.
        assert!(f[0].rationale.contains("606 ms"), "{}", f[0].rationale);
        assert_eq!(
            f[0].recommendation[0],
            Change::SysfsAttribute {
                path: "class/net/eth0/tx_queue_len".into(),
                value: "500".into()
            }
        );
    }

    #[test]
    fn pfifo_fast_root_or_mq_children_but_not_fq_codel() {
        let f = run(&QDISC_PFIFO_FAST, &snapshot_of("pogoplug-v4"));
        assert_eq!(f.len(), 1);
        assert!(f[0].recommendation.iter().any(|c| matches!(c,
            Change::AdviceOnly { action } if action.contains("tc qdisc replace dev eth0 root fq_codel"))));
        let mut snap = snapshot_of("rk3399-raid5");
        assert_eq!(
            run(&QDISC_PFIFO_FAST, &snap).len(),
            1,
            "mq with pfifo_fast children"
        );
        set(&mut snap, "net.core.default_qdisc", "fq_codel");
        assert!(run(&QDISC_PFIFO_FAST, &snap).is_empty());
        let mut snap = snapshot_of("pogoplug-v4");
        eth0(&mut snap).qdisc = Some("fq_codel".into());
        assert!(run(&QDISC_PFIFO_FAST, &snap).is_empty());
    }

    #[test]
    fn backlog_raise_and_softnet_drops() {
        let mut snap = snapshot_of("pogoplug-v4");
        assert!(
            run(&BACKLOG_RAISED_WITHOUT_DROPS, &snap).is_empty(),
            "default 1000"
        );
        assert!(run(&SOFTNET_DROPS, &snap).is_empty(), "0 drops");
        set(&mut snap, "net.core.netdev_max_backlog", "5000");
        assert_eq!(run(&BACKLOG_RAISED_WITHOUT_DROPS, &snap).len(), 1);
        // Real drops: 200 in 188689009 packets ≈ 1.06 per million → raise, not remove.
        softnet_mut(&mut snap)[0].dropped = 200;
        assert!(run(&BACKLOG_RAISED_WITHOUT_DROPS, &snap).is_empty());
        let f = run(&SOFTNET_DROPS, &snap);
        assert_eq!(f[0].severity, Severity::Notice);
        assert!(f[0].recommendation.contains(&Change::Sysctl {
            key: "net.core.netdev_max_backlog".into(),
            value: "10000".into()
        }));
        // time_squeeze 452 > 200 drops: the budget is the knob too.
        assert!(f[0].recommendation.contains(&Change::Sysctl {
            key: "net.core.netdev_budget".into(),
            value: "600".into()
        }));
        // rk3399's 59 in 716 M is info.
        let f = run(&SOFTNET_DROPS, &snapshot_of("rk3399-raid5"));
        assert_eq!(f[0].severity, Severity::Info);
    }

    #[test]
    fn rx_drops_explained_by_ring_or_as_harmless() {
        let mut snap = snapshot_of("pogoplug-v4");
        assert!(run(&RX_RING_OVERFLOW, &snap).is_empty());
        let f = run(&RX_DROPPED_HARMLESS, &snap);
        assert_eq!(f.len(), 1);
        assert!(f[0].title.contains("112"), "{}", f[0].title);
        eth0(&mut snap).counters.rx_missed_errors = Some(5000);
        assert!(run(&RX_DROPPED_HARMLESS, &snap).is_empty());
        let f = run(&RX_RING_OVERFLOW, &snap);
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].recommendation[0],
            Change::Ethtool {
                interface: "eth0".into(),
                setting: "rx".into(),
                value: "4096".into()
            }
        );
        // Softnet drops present: rx_dropped is not "harmless" without a look.
        assert!(run(&RX_DROPPED_HARMLESS, &snapshot_of("rk3399-raid5")).is_empty());
    }

    #[test]
    fn counters_32bit_only_on_32bit_kernels() {
        let f = run(&COUNTERS_32BIT, &snapshot_of("rpi2-luks"));
        assert_eq!(f.len(), 1);
        // 2^32 × 8 / 100e6 = 344 s.
        assert!(f[0].title.contains("344 s"), "{}", f[0].title);
        assert!(run(&COUNTERS_32BIT, &snapshot_of("rk3399-raid5")).is_empty());
    }

    #[test]
    fn offloads_off_but_not_fixed_off() {
        let mut snap = snapshot_of("pogoplug-v4");
        assert!(run(&OFFLOADS_OFF, &snap).is_empty());
        // rk3399 has TSO fixed off (hardware cannot): not a finding.
        assert!(run(&OFFLOADS_OFF, &snapshot_of("rk3399-raid5")).is_empty());
        if let Outcome::Ok { data } = &mut eth0(&mut snap).ethtool
            && let Outcome::Ok { data } = &mut data.features
        {
            for f in data.iter_mut().filter(|f| f.name == "tx-tcp-segmentation") {
                f.active = false;
            }
        }
        let f = run(&OFFLOADS_OFF, &snap);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].rationale.contains("3ae8f4e0b98b"),
            "{}",
            f[0].rationale
        );
    }

    #[test]
    fn degraded_link_and_flapping() {
        let mut snap = snapshot_of("pogoplug-v4");
        assert!(run(&LINK_DEGRADED, &snap).is_empty());
        assert!(run(&CARRIER_FLAPPING, &snap).is_empty());
        // The Pi's smsc95xx is a 100 Mbit NIC: 100 is its best.
        assert!(run(&LINK_DEGRADED, &snapshot_of("rpi2-luks")).is_empty());
        eth0(&mut snap).speed_mbit_per_sec = Some(100);
        let f = run(&LINK_DEGRADED, &snap);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].rationale.contains("at most 11.8 MB/s"),
            "{}",
            f[0].rationale
        );
        eth0(&mut snap).counters.carrier_changes = Some(40);
        let f = run(&CARRIER_FLAPPING, &snap);
        assert_eq!(f.len(), 1);
        assert!(f[0].rationale.contains("about 20"), "{}", f[0].rationale);
    }
}
