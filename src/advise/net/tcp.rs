//! TCP rules: buffer ceilings and what each bounds (with BDP arithmetic),
//! tcp_mem against RAM, and feature flags old guides turned off.

use super::super::sysctl_conf::{attribution, boot_setting, persist_hint, triple, value_u64};
use super::super::{Change, Context, Finding, Risk, Rule, RuleInfo, Severity};
use super::link_mbit;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;
/// A LAN round trip; BDP = speed × this.
const LAN_RTT_MS: f64 = 1.0;
/// A typical WAN round trip (remote backup, VPN) for the BDP comparison.
const WAN_RTT_MS: f64 = 50.0;

/// The kernel's boot-time tcp_[rw]mem[2]: min(cap, RAM/128) but at least the
/// floor (net/ipv4/tcp.c tcp_init, which uses free buffer pages; RAM is an upper
/// estimate, so the caller allows slack).
fn kernel_default_tcp_max(total_ram: u64, cap: u64, floor: u64) -> u64 {
    (total_ram / 128).min(cap).max(floor)
}

/// Below this share of the kernel default counts as "lowered" (free buffer pages
/// at boot are less than RAM, so the estimate runs a little high).
const LOWERED_PERCENT: u64 = 75;

pub(super) static TCP_BUFFER_MAX_LOWERED: Rule = Rule {
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

pub(super) static CORE_BUFFER_MAX_RAISED: Rule = Rule {
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
                let at = attribution(ctx, key)?;
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
                        format!("{key} = {v} ({at}) does not affect TCP autotuning"),
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
                    .evidence(format!("{key} source"), at)
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

pub(super) static TCP_MEM_VS_RAM: Rule = Rule {
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
/// A TCP feature switched off in the kernel now, or by a file at the next boot.
fn tcp_flag_off(info: &RuleInfo, ctx: &Context, key: &str, why: &str) -> Vec<Finding> {
    let live_off = value_u64(ctx, key) == Some(0);
    let file = boot_setting(ctx, key);
    let file_off = file.is_some_and(|c| c.value.trim().parse::<u64>() == Ok(0));
    if !live_off && !file_off {
        return Vec::new();
    }
    let title = match file {
        Some(c) if file_off && !live_off => format!(
            "{key} = 0 in {}:{} (not live yet: the next boot applies it)",
            c.file, c.line
        ),
        _ => format!("{key} is 0"),
    };
    let mut f = Finding::of(info, title, format!("{why} The default is 1; set it back."))
        .evidence(
            format!("{key} in the kernel"),
            value_u64(ctx, key).map_or("not read".into(), |v| v.to_string()),
        )
        .evidence(
            format!("{key} source"),
            attribution(ctx, key).unwrap_or_else(|| "no sysctl file (set at runtime)".into()),
        )
        .setting(format!("sysctl:{key}"));
    if live_off {
        f = f.change(Change::Sysctl {
            key: key.into(),
            value: "1".into(),
        });
    }
    vec![f.change(Change::AdviceOnly {
        action: persist_hint(ctx, key),
    })]
}

pub(super) static TCP_TIMESTAMPS_OFF: Rule = Rule {
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

pub(super) static TCP_SACK_OFF: Rule = Rule {
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

pub(super) static TCP_WINDOW_SCALING_OFF: Rule = Rule {
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

pub(super) static SLOW_START_AFTER_IDLE_OFF: Rule = Rule {
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

#[cfg(test)]
mod tests {
    use super::super::super::sysctl_conf::test_edit::{configure, set};
    use super::super::test_edit::*;
    use super::*;
    use crate::advise::test_support::snapshot_of;

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

    /// A file that sets tcp_timestamps=0 was once ignored until it was live,
    /// so the next boot's regression went unsaid.
    #[test]
    fn tcp_flag_off_in_a_file_only_is_flagged_for_the_next_boot() {
        let mut snap = snapshot_of("rk3399-raid5");
        configure(
            &mut snap,
            "net.ipv4.tcp_timestamps",
            "/etc/sysctl.conf",
            9,
            "0",
        );
        let f = run(&TCP_TIMESTAMPS_OFF, &snap);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            f[0].title,
            "net.ipv4.tcp_timestamps = 0 in /etc/sysctl.conf:9 (not live yet: the next boot \
             applies it)"
        );
        assert_eq!(
            f[0].recommendation,
            vec![Change::AdviceOnly {
                action: "edit /etc/sysctl.conf:9".into()
            }]
        );
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
}
