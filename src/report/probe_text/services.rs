//! Text for the `file_services` and `smart` sections.

use std::fmt::Write;

use super::super::format;
use crate::probe::Outcome;
use crate::probe::file_services::FileServices;
use crate::probe::smart::Smart;
use crate::probe::smb::SmbParam;

/// Global parameters shown in the summary; the rest are in `--json`.
const GLOBAL_SHOWN: usize = 12;

pub fn file_services(out: &mut String, f: &FileServices) {
    match (&f.samba, &f.samba_absent) {
        (Some(s), _) => {
            let _ = writeln!(out, "  samba         {}", s.files_read.join(", "));
            let shown: Vec<&SmbParam> = s.global.iter().take(GLOBAL_SHOWN).collect();
            for p in &shown {
                let _ = writeln!(out, "    {} = {}", p.name, p.value);
            }
            if s.global.len() > shown.len() {
                let _ = writeln!(
                    out,
                    "    ({} more global parameters)",
                    s.global.len() - shown.len()
                );
            }
            for share in &s.shares {
                let _ = writeln!(
                    out,
                    "  share         [{}] {} ({} parameters)",
                    share.name,
                    share.path.as_deref().unwrap_or("-"),
                    share.params.len()
                );
            }
            for i in &s.includes {
                let _ = writeln!(
                    out,
                    "  include       {} ({}:{}) {}",
                    i.target, i.file, i.line, i.status
                );
            }
            for p in &s.problems {
                let _ = writeln!(out, "  problem       {}:{}: {}", p.file, p.line, p.message);
            }
        }
        (None, Some(why)) => {
            let _ = writeln!(out, "  samba         none: {why}");
        }
        (None, None) => {}
    }
    match (&f.nfs, &f.nfs_absent) {
        (Some(n), _) => {
            let _ = writeln!(out, "  nfs           {}", n.files_read.join(", "));
            for e in &n.exports {
                let clients: Vec<String> = e
                    .clients
                    .iter()
                    .map(|c| format!("{}({})", c.host, c.options.join(",")))
                    .collect();
                let _ = writeln!(out, "  export        {} {}", e.path, clients.join(" "));
            }
            for p in &n.problems {
                let _ = writeln!(out, "  problem       {}:{}: {}", p.file, p.line, p.message);
            }
        }
        (None, Some(why)) => {
            let _ = writeln!(out, "  nfs           none: {why}");
        }
        (None, None) => {}
    }
}

pub fn smart(out: &mut String, s: &Smart) {
    let _ = writeln!(out, "  smartctl      {}", s.smartctl);
    for d in &s.devices {
        match &d.health {
            Outcome::Ok { data: h } => {
                let kind = match h.rotation_rate_rpm {
                    Some(0) => "SSD".to_string(),
                    Some(rpm) => format!("{rpm} rpm"),
                    None => h.protocol.clone(),
                };
                let _ = writeln!(
                    out,
                    "  {:<13} {} ({}, {}) {}",
                    d.name,
                    h.model.as_deref().unwrap_or("?"),
                    kind,
                    h.capacity_bytes
                        .map(format::bytes)
                        .unwrap_or_else(|| "?".into()),
                    match h.smart_passed {
                        Some(true) => "health PASSED",
                        Some(false) => "health FAILED",
                        None => "health unknown",
                    }
                );
                let mut facts = Vec::new();
                if let Some(hours) = h.power_on_hours {
                    facts.push(format!("{hours} h on"));
                }
                if let Some(t) = h.temperature_celsius {
                    facts.push(format!("{t} °C"));
                }
                for a in h.ata_attributes.iter().filter(|a| a.raw_value > 0) {
                    facts.push(format!("{} {} (id {})", a.name, a.raw_value, a.id));
                }
                if let Some(n) = &h.nvme {
                    facts.push(format!(
                        "critical_warning {} media_errors {} error log entries {}",
                        n.critical_warning, n.media_errors, n.num_err_log_entries
                    ));
                }
                if !facts.is_empty() {
                    let _ = writeln!(out, "  {:<13} {}", "", facts.join(", "));
                }
            }
            other => {
                let _ = writeln!(
                    out,
                    "  {:<13} {}: {}",
                    d.name,
                    other.status(),
                    other.problem().unwrap_or("")
                );
            }
        }
    }
    if !s.skipped.is_empty() {
        // Storage lists every device by name already; 25 loop devices named a
        // second time here hid the one disk that was skipped for a reason.
        let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
        for k in &s.skipped {
            match groups.iter_mut().find(|(reason, _)| *reason == k.reason) {
                Some((_, names)) => names.push(&k.name),
                None => groups.push((&k.reason, vec![&k.name])),
            }
        }
        let text: Vec<String> = groups
            .iter()
            .map(|(reason, names)| match names.as_slice() {
                [one] => format!("{one} ({reason})"),
                many => format!("{} x {reason}", many.len()),
            })
            .collect();
        let _ = writeln!(out, "  skipped       {}", text.join(", "));
    }
}
