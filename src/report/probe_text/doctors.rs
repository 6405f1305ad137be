//! Text for the `usb`, `links` and `irq` sections: each disk's USB link, each
//! NIC's and PCIe controller's negotiated link against what it could be, and
//! which cores take each NIC's interrupts.

use std::fmt::Write;

use crate::probe::Outcome;
use crate::probe::irq::Irq;
use crate::probe::links::{Links, NicLink};
use crate::probe::usb::{Usb, bus_ceiling, format_mbit};

fn mbit(v: Option<f64>) -> String {
    v.map_or("?".to_string(), format_mbit)
}

pub fn usb(out: &mut String, u: &Usb) {
    let hubs = u.devices.iter().filter(|d| d.is_hub).count();
    let _ = writeln!(
        out,
        "  devices       {} ({hubs} hubs); usb-storage quirks: {}",
        u.devices.len(),
        u.quirks_parameter.as_deref().unwrap_or("none")
    );
    for d in &u.disks {
        let ceiling = d
            .negotiated_mbit_per_sec
            .map(|s| format!("; bus ceiling {}", bus_ceiling(s).basis))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {:<13} {} bridge {} on {}, {} Mbit/s (device can {}, port {} by {}){ceiling}",
            d.disk,
            d.device,
            d.bridge.as_deref().unwrap_or("?"),
            d.driver.as_deref().unwrap_or("no driver"),
            mbit(d.negotiated_mbit_per_sec),
            mbit(d.device_capable_mbit_per_sec),
            mbit(d.port_capable_mbit_per_sec),
            d.port_limited_by.as_deref().unwrap_or("?"),
        );
        if !d.quirks.is_empty() {
            let q: Vec<String> = d
                .quirks
                .iter()
                .map(|q| format!("{} {}", q.flag, q.name))
                .collect();
            let _ = writeln!(out, "                quirks: {}", q.join(", "));
        }
        if let Some(k) = &d.known_bridge {
            let _ = writeln!(
                out,
                "                known bridge: {}: {} ({})",
                k.chip,
                k.trouble,
                k.sources.join(", ")
            );
        }
        if !d.shares_link_with.is_empty() {
            let _ = writeln!(
                out,
                "                shares its link with {}",
                d.shares_link_with.join(", ")
            );
        }
    }
}

fn outcome<T>(o: &Outcome<T>, show: impl Fn(&T) -> String) -> String {
    match o {
        Outcome::Ok { data } => show(data),
        other => format!("{}: {}", other.status(), other.problem().unwrap_or("")),
    }
}

fn nic(out: &mut String, n: &NicLink) {
    let Some(e) = n.ethtool.data() else {
        let _ = writeln!(
            out,
            "  {:<13} {}",
            n.interface,
            n.ethtool.problem().unwrap_or("")
        );
        return;
    };
    let modes = outcome(&e.modes, |m| {
        format!(
            "{} {}, best common mode {}{}",
            m.speed_mbit_per_sec
                .map_or("speed unknown".into(), |s| format!("{s} Mbit/s")),
            m.duplex.as_deref().unwrap_or("duplex unknown"),
            n.best_common_mode.as_deref().unwrap_or("unknown"),
            if n.downshifted {
                ": downshifted — check the cable"
            } else {
                ""
            }
        )
    });
    let _ = writeln!(out, "  {:<13} {modes}", n.interface);
    if let Some(m) = e.modes.data() {
        let list = |v: &[String]| {
            if v.is_empty() {
                "-".to_string()
            } else {
                v.join(" ")
            }
        };
        let _ = writeln!(
            out,
            "                advertised {}; partner {}",
            list(&m.advertised),
            list(&m.partner_advertised)
        );
    }
    let eee = outcome(&e.eee, |x| {
        format!(
            "{}{}",
            if x.enabled { "enabled" } else { "disabled" },
            if x.active { ", active" } else { "" }
        )
    });
    let pause = outcome(&e.pause, |p| {
        let on = |b: bool| if b { "on" } else { "off" };
        format!(
            "autoneg {}, rx {}, tx {}",
            on(p.autoneg),
            on(p.rx),
            on(p.tx)
        )
    });
    let _ = writeln!(out, "                eee {eee}; pause {pause}");
}

pub fn links(out: &mut String, l: &Links) {
    if l.nics.is_empty() && l.pcie.is_empty() {
        let _ = writeln!(
            out,
            "  no physical NIC and no PCIe NIC, SATA or NVMe controller"
        );
    }
    for n in &l.nics {
        nic(out, n);
    }
    let gt = |v: Option<f64>| v.map_or("?".to_string(), |g| g.to_string());
    let w = |v: Option<u32>| v.map_or("?".to_string(), |g| g.to_string());
    for p in &l.pcie {
        let _ = writeln!(
            out,
            "  pcie          {} {} ({}): {} GT/s x{} of {} GT/s x{} (port {} GT/s x{}){}",
            p.address,
            p.kind,
            p.driver.as_deref().unwrap_or("no driver"),
            gt(p.current_gt_per_sec),
            w(p.current_width),
            gt(p.max_gt_per_sec),
            w(p.max_width),
            gt(p.port_max_gt_per_sec),
            w(p.port_max_width),
            if p.downgraded { ": downgraded" } else { "" }
        );
    }
}

/// `0-3,6` for a sorted CPU list.
fn cpu_list(cpus: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", cpus[i], cpus[j])
        } else {
            cpus[i].to_string()
        });
        i = j + 1;
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(",")
    }
}

pub fn irq(out: &mut String, irq: &Irq) {
    if irq.nics.is_empty() {
        let _ = writeln!(out, "  no physical NIC");
    }
    for n in &irq.nics {
        if n.queues.is_empty() {
            let _ = writeln!(
                out,
                "  {:<13} no interrupt line of its own (a USB or virtual NIC)",
                n.interface
            );
        }
        for q in &n.queues {
            let _ = writeln!(
                out,
                "  {:<13} irq {} ({}): {}; may go to {}",
                n.interface,
                q.irq,
                q.action,
                if q.cores_taking.is_empty() {
                    "none taken yet".to_string()
                } else {
                    format!("taken by CPU {}", cpu_list(&q.cores_taking))
                },
                q.affinity.as_deref().map_or("?".into(), cpu_list)
            );
        }
        let rps: Vec<String> = n
            .rps
            .iter()
            .filter(|r| !r.cpus.is_empty())
            .map(|r| format!("{} -> CPU {}", r.queue, cpu_list(&r.cpus)))
            .collect();
        if !rps.is_empty() {
            let _ = writeln!(out, "                rps {}", rps.join("; "));
        }
    }
    for p in &irq.problems {
        let _ = writeln!(out, "  problem       {p}");
    }
}
