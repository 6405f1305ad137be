//! The host: kernel, architecture, board or system model, boot id, uptime.

use serde::{Deserialize, Serialize};

use super::ProbeError;
use super::text::parse_f64;
use crate::root::Root;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Host {
    pub hostname: Option<String>,
    pub os: Option<String>,
    pub kernel_release: String,
    pub kernel_version: Option<String>,
    pub architecture: Option<String>,
    /// Board or system model, from the device tree (ARM boards) or DMI (PCs).
    pub model: Option<String>,
    pub model_source: Option<String>,
    pub boot_id: Option<String>,
    pub uptime_seconds: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Uname {
    machine: String,
}

pub fn read_host(root: &Root) -> Result<Host, ProbeError> {
    let kernel_release = root.read_value("proc/sys/kernel/osrelease")?;
    let (model, model_source) = read_model(root)?;
    let uptime_seconds = match root.read_optional("proc/uptime")? {
        Some(text) => Some(parse_uptime(&text)?),
        None => None,
    };
    let architecture = root
        .captured("uname", live_uname)
        .ok()
        .map(|u: Uname| u.machine);
    let os = root
        .read_optional("etc/os-release")?
        .and_then(|t| parse_os_release_name(&t));
    Ok(Host {
        hostname: root.read_optional("proc/sys/kernel/hostname")?,
        os,
        kernel_release,
        kernel_version: root.read_optional("proc/sys/kernel/version")?,
        architecture,
        model,
        model_source,
        boot_id: root.read_optional("proc/sys/kernel/random/boot_id")?,
        uptime_seconds,
    })
}

fn read_model(root: &Root) -> Result<(Option<String>, Option<String>), ProbeError> {
    for path in [
        "proc/device-tree/model",
        "sys/firmware/devicetree/base/model",
    ] {
        if let Some(m) = root.read_optional(path)? {
            let m = m.trim_end_matches('\0').trim().to_string();
            if !m.is_empty() {
                return Ok((Some(m), Some("device-tree".into())));
            }
        }
    }
    let vendor = root.read_optional("sys/class/dmi/id/sys_vendor")?;
    let product = root.read_optional("sys/class/dmi/id/product_name")?;
    let model = match (vendor, product) {
        (Some(v), Some(p)) => Some(format!("{v} {p}")),
        (None, Some(p)) => Some(p),
        (Some(v), None) => Some(v),
        (None, None) => None,
    };
    let source = model.as_ref().map(|_| "dmi".to_string());
    Ok((model, source))
}

fn live_uname() -> Result<Uname, String> {
    // SAFETY: utsname is plain old data; uname fills it and NUL-terminates fields.
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut uts) } != 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    let bytes: Vec<u8> = uts
        .machine
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| *c as u8)
        .collect();
    Ok(Uname {
        machine: String::from_utf8_lossy(&bytes).into_owned(),
    })
}

/// `/proc/uptime`: "seconds-up idle-seconds".
pub fn parse_uptime(text: &str) -> Result<f64, super::ParseError> {
    let first = text.split_whitespace().next().unwrap_or("");
    parse_f64("/proc/uptime", first)
}

/// PRETTY_NAME (or NAME) from os-release.
pub fn parse_os_release_name(text: &str) -> Option<String> {
    let mut name = None;
    for line in text.lines() {
        if let Some((k, v)) = line.split_once('=') {
            let v = v.trim().trim_matches('"').to_string();
            match k.trim() {
                "PRETTY_NAME" => return Some(v),
                "NAME" => name = Some(v),
                _ => {}
            }
        }
    }
    name
}

/// A stable id for the box that does not reveal its machine-id: FNV-1a of it.
pub fn read_host_id(root: &Root) -> String {
    let seed = root
        .read_optional("etc/machine-id")
        .ok()
        .flatten()
        .filter(|s| !s.is_empty());
    match seed {
        Some(id) => format!("{:016x}", fnv1a64(format!("nastune:{id}").as_bytes())),
        None => "unknown".to_string(),
    }
}

pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uptime_and_os_release() {
        assert_eq!(parse_uptime("350735.47 234388.90\n").unwrap(), 350735.47);
        assert!(parse_uptime("").is_err());
        let osr = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\n";
        assert_eq!(
            parse_os_release_name(osr).as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(
            parse_os_release_name("NAME=Arch\n").as_deref(),
            Some("Arch")
        );
    }

    #[test]
    fn fnv_is_stable() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
