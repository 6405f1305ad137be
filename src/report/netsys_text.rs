//! Readable lines for the network, sysctl and kernel-crypto probe sections.

use std::fmt::Write;

use super::format;
use crate::probe::Outcome;
use crate::probe::crypto::{Engine, KernelCrypto};
use crate::probe::net::{Interface, Network};
use crate::probe::sysctl::Sysctl;

/// Algorithm names worth a line in the summary; the rest are in `--json`.
const SHOWN_ALGORITHMS: &[&str] = &["aes", "sha", "chacha", "adiantum", "md5", "crc32c"];

/// Renders an item's data, or its label and the reason it is missing.
fn either<T>(out: &mut String, label: &str, o: &Outcome<T>, body: impl FnOnce(&mut String, &T)) {
    match o {
        Outcome::Ok { data } => body(out, data),
        other => {
            let _ = writeln!(out, "{label}{}", other.problem().unwrap_or(""));
        }
    }
}

fn opt_num<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "?".into())
}

pub fn network(out: &mut String, n: &Network) {
    for i in &n.interfaces {
        interface(out, i);
    }
    if let Some(why) = &n.qdisc_unavailable {
        let _ = writeln!(out, "  qdisc         unavailable: {why}");
    }
    either(out, "  softnet       ", &n.softnet, |out, cpus| {
        for c in cpus {
            let _ = writeln!(
                out,
                "  softnet cpu{:<3} processed {} dropped {} time_squeeze {}",
                c.cpu, c.processed, c.dropped, c.time_squeeze
            );
        }
    });
}

fn interface(out: &mut String, i: &Interface) {
    let link = match (i.carrier, i.speed_mbit_per_sec) {
        (Some(true), Some(s)) => format!("link {s} Mbit/s {}", i.duplex.as_deref().unwrap_or("?")),
        (Some(true), None) => "link up".to_string(),
        (Some(false), _) => "no carrier".to_string(),
        (None, _) => i.operstate.as_deref().unwrap_or("state ?").to_string(),
    };
    let _ = writeln!(
        out,
        "  {:<13} {}{}, {link}, mtu {}, txqueuelen {}, qdisc {}",
        i.name,
        i.driver.as_deref().unwrap_or("-"),
        if i.is_virtual { " (virtual)" } else { "" },
        opt_num(i.mtu_bytes),
        opt_num(i.tx_queue_len_packets),
        i.qdisc.as_deref().unwrap_or("?"),
    );
    let pad = "                ";
    either(out, &format!("{pad}ethtool "), &i.ethtool, |out, e| {
        if let Some(d) = e.driver_info.data() {
            let bus = if d.bus_info.is_empty() {
                String::new()
            } else {
                format!(" bus {}", d.bus_info)
            };
            let _ = writeln!(out, "{pad}ethtool driver {} {}{bus}", d.driver, d.version);
        }
        either(out, &format!("{pad}rings "), &e.rings, |out, r| {
            let _ = writeln!(
                out,
                "{pad}rings rx {}/{} tx {}/{} (current/max)",
                r.rx_pending, r.rx_max, r.tx_pending, r.tx_max
            );
        });
        if let Some(c) = &e.coalesce {
            either(out, &format!("{pad}coalescing "), c, |out, c| {
                let on_off = |b: bool| if b { "on" } else { "off" };
                let _ = writeln!(
                    out,
                    "{pad}coalescing rx-usecs {} rx-frames {} tx-usecs {} tx-frames {} adaptive-rx {} adaptive-tx {}",
                    c.rx_usecs,
                    c.rx_frames,
                    c.tx_usecs,
                    c.tx_frames,
                    on_off(c.adaptive_rx),
                    on_off(c.adaptive_tx)
                );
            });
        }
        either(out, &format!("{pad}offloads "), &e.features, |out, f| {
            let on: Vec<&str> = f
                .iter()
                .filter(|f| f.active)
                .map(|f| f.name.as_str())
                .collect();
            let off: Vec<String> = f
                .iter()
                .filter(|f| !f.active)
                .map(|f| format!("{}{}", f.name, if f.fixed { " [fixed]" } else { "" }))
                .collect();
            let _ = writeln!(out, "{pad}offloads on: {}", on.join(" "));
            let _ = writeln!(out, "{pad}offloads off: {}", off.join(", "));
        });
    });
    let c = &i.counters;
    let bytes = |v: Option<u64>| v.map(format::bytes).unwrap_or_else(|| "?".into());
    let _ = writeln!(
        out,
        "{pad}rx {} {} packets, errors {} dropped {} missed {}; tx {} {} packets, errors {} dropped {}",
        bytes(c.rx_bytes),
        opt_num(c.rx_packets),
        opt_num(c.rx_errors),
        opt_num(c.rx_dropped),
        opt_num(c.rx_missed_errors),
        bytes(c.tx_bytes),
        opt_num(c.tx_packets),
        opt_num(c.tx_errors),
        opt_num(c.tx_dropped),
    );
    for (dir, b, p) in [
        ("rx", c.rx_bytes, c.rx_packets),
        ("tx", c.tx_bytes, c.tx_packets),
    ] {
        if let Some(avg) = crate::probe::net::evidently_wrapped(b, p) {
            let _ = writeln!(
                out,
                "{pad}{dir} bytes evidently wrapped: {avg:.1} B a packet is smaller than any \
                 packet, so the byte total is not what moved since boot"
            );
        }
    }
    for p in &c.problems {
        let _ = writeln!(out, "{pad}counter problem: {p}");
    }
    if let Some(bits) = i.counter_bits {
        let _ = writeln!(out, "{pad}{bits}-bit counters: {}", i.counter_bits_reason);
    }
}

pub fn sysctl(out: &mut String, s: &Sysctl) {
    for (key, value) in &s.values {
        // The last assignment boot applies; a `-key` exclude line sets nothing.
        let set_by = s
            .configured
            .get(key)
            .and_then(|v| v.iter().rev().find(|c| !c.exclude))
            .map(|c| {
                let same = c.value.split_whitespace().eq(value.split_whitespace());
                if same {
                    format!("  (set by {}:{})", c.file, c.line)
                } else {
                    format!(
                        "  ({}:{} sets {}: not applied or overridden)",
                        c.file, c.line, c.value
                    )
                }
            })
            .unwrap_or_default();
        let _ = writeln!(out, "  {key:<42} {value}{set_by}");
    }
    if !s.absent.is_empty() {
        let _ = writeln!(out, "  absent: {}", s.absent.join(" "));
    }
    let _ = writeln!(
        out,
        "  config files: {}",
        if s.config_files.is_empty() {
            "none".to_string()
        } else {
            s.config_files.join(" ")
        }
    );
    for p in &s.config_problems {
        let _ = writeln!(out, "  config problem: {p}");
    }
}

pub fn kernel_crypto(out: &mut String, k: &KernelCrypto) {
    let mut hidden = 0;
    for a in &k.algorithms {
        if !SHOWN_ALGORITHMS.iter().any(|s| a.name.contains(s)) {
            hidden += 1;
            continue;
        }
        let selected = a
            .drivers
            .iter()
            .find(|d| Some(&d.driver) == a.selected_driver.as_ref());
        let others: Vec<&str> = a
            .drivers
            .iter()
            .filter(|d| Some(&d.driver) != a.selected_driver.as_ref() && !d.internal)
            .map(|d| d.driver.as_str())
            .collect();
        let _ = writeln!(
            out,
            "  {:<26} {}{}",
            a.name,
            match selected {
                Some(d) => format!(
                    "{} ({}, priority {}, {})",
                    d.driver,
                    engine(d.engine),
                    d.priority,
                    d.module
                ),
                None => "no usable driver".into(),
            },
            if others.is_empty() {
                String::new()
            } else {
                format!("; also {}", others.join(", "))
            }
        );
    }
    if hidden > 0 {
        let _ = writeln!(out, "  ({hidden} more algorithms in --json)");
    }
}

fn engine(e: Engine) -> &'static str {
    match e {
        Engine::Hardware => "hardware engine",
        Engine::Cpu => "cpu",
        Engine::Unknown => "engine unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::sysctl::ConfigSetting;

    fn setting(line: u32, value: &str, exclude: bool) -> ConfigSetting {
        ConfigSetting {
            file: "/etc/sysctl.d/sysctl.conf".into(),
            line,
            value: value.into(),
            ignore_failure: exclude,
            exclude,
        }
    }

    #[test]
    fn a_file_is_credited_only_with_the_value_the_kernel_has() {
        let mut s = Sysctl {
            values: Default::default(),
            absent: Vec::new(),
            config_files: Vec::new(),
            configured: Default::default(),
            config_problems: Vec::new(),
        };
        s.values
            .insert("net.core.rmem_max".into(), "1048576".into());
        s.values
            .insert("net.ipv4.tcp_rmem".into(), "4096 131072 6291456".into());
        s.configured.insert(
            "net.core.rmem_max".into(),
            vec![setting(1, "2801664", false), setting(2, "", true)],
        );
        s.configured.insert(
            "net.ipv4.tcp_rmem".into(),
            vec![setting(3, "4096\t131072  6291456", false)],
        );
        let mut out = String::new();
        sysctl(&mut out, &s);
        assert!(
            out.contains(
                "1048576  (/etc/sysctl.d/sysctl.conf:1 sets 2801664: not applied or overridden)"
            ),
            "{out}"
        );
        assert!(
            out.contains("6291456  (set by /etc/sysctl.d/sysctl.conf:3)"),
            "{out}"
        );
    }
}
