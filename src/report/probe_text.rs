//! The readable summary of `nastune probe`.

use std::fmt::Write;

use std::borrow::Cow;

use super::{format, netsys_text};
use crate::probe::{Outcome, Snapshot, cpu::Cpu, host::Host, memory::Memory};

mod doctors;
mod services;
mod storage;

/// A section's title and its text when it is ok, keyed by its `Snapshot` field (so a
/// row cannot name a section that does not exist). A probe section without a row
/// here is shown by its name and status only.
type Body = fn(&mut String, &Snapshot);

macro_rules! bodies {
    ($($field:ident: $title:literal => $body:path,)+) => {
        const BODIES: &[(&str, &str, Body)] =
            &[$((stringify!($field), $title, |o, s| ok(o, &s.$field, $body))),+];
    };
}

bodies! {
    host: "Host" => host,
    cpu: "CPU" => cpu,
    memory: "Memory" => memory,
    network: "Network" => netsys_text::network,
    sysctl: "Sysctl" => netsys_text::sysctl,
    kernel_crypto: "Kernel crypto" => netsys_text::kernel_crypto,
    kernel_config: "Kernel config" => kernel_config,
    storage: "Storage" => storage::storage,
    filesystems: "Filesystems" => storage::filesystems,
    file_services: "File services" => services::file_services,
    smart: "SMART" => services::smart,
    config_files: "Config files" => config_files,
    usb: "USB" => doctors::usb,
    links: "Links" => doctors::links,
    kernel_log: "Kernel log" => kernel_log,
    irq: "IRQ placement" => doctors::irq,
}

pub fn render(s: &Snapshot) -> String {
    let mut out = String::new();
    let statuses = s.section_statuses();
    for (name, status, problem) in &statuses {
        let custom = BODIES.iter().find(|(n, _, _)| n == name);
        let _ = writeln!(out, "{}", custom.map_or(*name, |(_, title, _)| title));
        match (problem, custom) {
            (Some(why), _) => {
                let _ = writeln!(out, "  {status}: {}", format::shown(why));
            }
            (None, Some((_, _, body))) => body(&mut out, s),
            (None, None) => {
                let _ = writeln!(out, "  ok");
            }
        }
        out.push('\n');
    }
    let problems: Vec<_> = statuses
        .into_iter()
        .filter(|(_, status, _)| *status != "ok")
        .collect();
    if !problems.is_empty() {
        let _ = writeln!(out, "Not probed");
        for (name, status, why) in problems {
            let why = format::shown(why.unwrap_or(""));
            let _ = writeln!(out, "  {name:<12} {status}: {why}");
        }
    }
    out
}

/// Writes the body of a section that is ok (the caller has written the others).
fn ok<T>(out: &mut String, o: &Outcome<T>, body: fn(&mut String, &T)) {
    if let Some(data) = o.data() {
        body(out, data);
    }
}

/// An optional string read from the box, shown escaped (see `format::shown`).
fn opt(v: &Option<String>) -> Cow<'_, str> {
    v.as_deref().map_or(Cow::Borrowed("-"), format::shown)
}

fn host(out: &mut String, h: &Host) {
    let _ = writeln!(out, "  hostname      {}", opt(&h.hostname));
    let _ = writeln!(out, "  model         {}", opt(&h.model));
    let _ = writeln!(out, "  os            {}", opt(&h.os));
    let _ = writeln!(
        out,
        "  kernel        {} ({})",
        format::shown(&h.kernel_release),
        opt(&h.architecture)
    );
    if let Some(up) = h.uptime_seconds {
        let _ = writeln!(out, "  uptime        {}", format::duration(up));
    }
}

fn cpu(out: &mut String, c: &Cpu) {
    let _ = writeln!(
        out,
        "  model         {}, {} logical CPUs{}",
        opt(&c.model),
        c.logical_cpus,
        c.hardware
            .as_ref()
            .map(|h| format!(" on {}", format::shown(h)))
            .unwrap_or_default()
    );
    let _ = writeln!(
        out,
        "  features      {} (AES instructions: {})",
        if c.flags.is_empty() {
            "-".to_string()
        } else {
            c.flags.join(" ")
        },
        if c.has_aes { "yes" } else { "no" }
    );
    for p in &c.frequency_policies {
        let _ = writeln!(
            out,
            "  {:<13} cpus {} governor {} {}..{} (now {})",
            p.name,
            p.cpus,
            opt(&p.governor),
            p.min_khz.map(format::khz).unwrap_or_else(|| "?".into()),
            p.max_khz.map(format::khz).unwrap_or_else(|| "?".into()),
            p.cur_khz.map(format::khz).unwrap_or_else(|| "?".into()),
        );
    }
}

fn memory(out: &mut String, m: &Memory) {
    let _ = writeln!(
        out,
        "  total         {} ({} available)",
        format::bytes(m.total_bytes),
        m.available_bytes
            .map(format::bytes)
            .unwrap_or_else(|| "?".into())
    );
    if m.swaps.is_empty() {
        let _ = writeln!(out, "  swap          none");
    }
    for s in &m.swaps {
        let _ = writeln!(
            out,
            "  swap          {} ({}) {} used of {}, priority {}",
            format::shown(&s.device),
            format::shown(&s.kind),
            format::bytes(s.used_bytes),
            format::bytes(s.size_bytes),
            s.priority
        );
    }
    match (&m.pressure, &m.pressure_unavailable) {
        (Some(ps), _) => {
            for p in ps {
                let _ = writeln!(
                    out,
                    "  pressure      {:<6} some avg10 {:.2}% avg60 {:.2}%",
                    p.resource, p.some_avg10, p.some_avg60
                );
            }
        }
        (None, Some(why)) => {
            let _ = writeln!(out, "  pressure      unavailable: {why}");
        }
        (None, None) => {}
    }
}

fn config_files(out: &mut String, c: &crate::probe::config_files::ConfigFiles) {
    fn count<T>(v: &Option<Vec<T>>) -> String {
        v.as_ref()
            .map_or("absent".to_string(), |v| v.len().to_string())
    }
    let _ = writeln!(
        out,
        "  fstab entries {}, udev attribute assignments {}, rc.local tuning commands {}, problems {}",
        count(&c.fstab),
        c.udev_assignments.len(),
        count(&c.rc_local),
        c.problems.len()
    );
}

/// Where the answers came from, then one option a line.
fn kernel_config(out: &mut String, k: &crate::probe::kernel_config::KernelConfig) {
    let _ = writeln!(
        out,
        "  from {}",
        k.path
            .as_deref()
            .map_or("nowhere readable".into(), format::shown)
    );
    for o in crate::probe::kernel_config::KernelOption::ALL {
        let _ = writeln!(out, "  {:<26} {}", o.config_name(), k.get(o).describe());
    }
    for p in &k.problems {
        let _ = writeln!(out, "  problem: {}", format::shown(p));
    }
}

/// One line per class and device, with the latest line of each class.
fn kernel_log(out: &mut String, k: &crate::probe::kernel_log::KernelLog) {
    let _ = writeln!(
        out,
        "  {} lines since boot ({} dropped, {} lost)",
        k.lines_read, k.lines_dropped, k.records_lost
    );
    if k.counts.is_empty() {
        let _ = writeln!(out, "  no problem lines");
    }
    for c in &k.counts {
        let _ = writeln!(
            out,
            "  {:<22} {:<12} {:>5}x  {:.0}-{:.0} s after boot",
            c.class.name(),
            opt(&c.device),
            c.count,
            c.first_s,
            c.last_s
        );
    }
    for latest in k
        .examples
        .iter()
        .filter(|e| k.examples.iter().rfind(|x| x.class == e.class) == Some(e))
    {
        let _ = writeln!(
            out,
            "    [{:.1}] {}",
            latest.time_s,
            format::shown(&latest.line)
        );
    }
}
