//! SMART health through `smartctl --json`, the one external tool nastune runs
//! (smartmontools knows every drive quirk and USB bridge; re-implementing the
//! ATA/NVMe pass-through would be worse). Each run goes through
//! [`Root::captured`], so a capture stores smartctl's JSON and a tree replays it.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{Outcome, ProbeError};
use crate::root::Root;

/// smartctl's JSON for one disk is a few tens of KiB; more means something is wrong.
pub const MAX_OUTPUT_BYTES: u64 = 1024 * 1024;
/// A USB bridge that hangs must not hang the probe.
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// ATA attributes that are plain counts of errors (monitoring.md §4, §7.8).
pub const ATA_ERROR_ATTRIBUTES: [u32; 6] = [5, 187, 188, 197, 198, 199];

/// Name (under `.nastune/`) of the captured smartctl location.
const BINARY_CAPTURE: &str = "smartctl-binary";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Smart {
    /// Where smartctl was found.
    pub smartctl: String,
    pub devices: Vec<SmartDevice>,
    /// Block devices not asked, with the reason.
    pub skipped: Vec<SkippedDevice>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SmartDevice {
    /// Kernel name (`sda`).
    pub name: String,
    #[serde(flatten)]
    pub health: Outcome<DiskHealth>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SkippedDevice {
    pub name: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DiskHealth {
    /// `ATA`, `NVMe` or `SCSI`.
    pub protocol: String,
    /// smartctl's device type (`sat` behind a USB bridge, `nvme`, `ata`).
    pub device_type: String,
    pub model: Option<String>,
    pub serial: Option<String>,
    pub firmware: Option<String>,
    pub capacity_bytes: Option<u64>,
    /// 0 for solid state.
    pub rotation_rate_rpm: Option<u64>,
    pub power_on_hours: Option<u64>,
    pub temperature_celsius: Option<i64>,
    /// The drive's own overall assessment.
    pub smart_passed: Option<bool>,
    /// smartctl's exit status bitmask (smartctl(8) "RETURN VALUES").
    pub exit_status: u32,
    /// Error-count attributes (ids 5, 187, 188, 197, 198, 199) that the drive has.
    pub ata_attributes: Vec<AtaAttribute>,
    pub nvme: Option<NvmeHealth>,
    pub smartctl_version: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AtaAttribute {
    pub id: u32,
    pub name: String,
    pub value: u32,
    pub worst: u32,
    pub threshold: u32,
    pub raw_value: u64,
    /// `""`, `past` or `now`.
    pub when_failed: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NvmeHealth {
    pub critical_warning: u64,
    pub media_errors: u64,
    pub num_err_log_entries: u64,
    pub percentage_used: Option<u64>,
    pub available_spare: Option<u64>,
    pub unsafe_shutdowns: Option<u64>,
}

/// Why SMART's answer for a device does not describe the disk the kernel sees
/// there (different serial, not compared behind USB, or a size more than 1 % off): a USB bridge that
/// answers for another disk, or a capture mixed up. `None` when nothing
/// known disagrees.
pub fn identity_mismatch(
    sysfs: &crate::probe::block::BlockDevice,
    smart: &DiskHealth,
) -> Option<String> {
    let norm = |s: &str| s.trim().to_ascii_uppercase();
    // A USB disk's sysfs serial is the bridge's, never the drive's: size only.
    if let (Some(a), Some(b)) = (&sysfs.serial, &smart.serial)
        && sysfs.transport != "usb"
        && !a.trim().is_empty()
        && norm(a) != norm(b)
    {
        return Some(format!(
            "serial '{}' in sysfs, '{}' in SMART",
            a.trim(),
            b.trim()
        ));
    }
    let smart_bytes = smart.capacity_bytes?;
    let (a, b) = (sysfs.size_bytes, smart_bytes);
    (a > 0 && a.abs_diff(b) * 100 > a.max(b))
        .then(|| format!("size {a} B in sysfs, {b} B in SMART"))
}

/// Runs smartctl on every physical disk. Unsupported when smartctl is missing.
pub fn read_smart(root: &Root) -> Result<Outcome<Smart>, ProbeError> {
    let smartctl = match root.captured(BINARY_CAPTURE, find_smartctl) {
        Ok(path) => path,
        Err(reason) => return Ok(Outcome::Unsupported { reason }),
    };
    let mut devices = Vec::new();
    let mut skipped = Vec::new();
    for name in root.read_dir("sys/block")? {
        if let Some(reason) = skip_reason(&name) {
            skipped.push(SkippedDevice {
                name,
                reason: reason.into(),
            });
            continue;
        }
        if root
            .read_optional(&format!("sys/block/{name}/size"))?
            .as_deref()
            == Some("0")
        {
            skipped.push(SkippedDevice {
                name,
                reason: "no medium (size 0)".into(),
            });
            continue;
        }
        let bin = PathBuf::from(&smartctl);
        let json: Result<serde_json::Value, String> = root
            .captured(&format!("smartctl/{name}"), || {
                run_smartctl(&bin, &name, TIMEOUT)
            });
        let health = match json {
            Ok(v) => health_from_json(&v),
            Err(reason) => Outcome::Unsupported { reason },
        };
        devices.push(SmartDevice { name, health });
    }
    Ok(Outcome::Ok {
        data: Smart {
            smartctl,
            devices,
            skipped,
        },
    })
}

/// Why a block device is not asked for SMART data, by kernel name.
pub fn skip_reason(name: &str) -> Option<&'static str> {
    const RULES: &[(&str, &str)] = &[
        ("loop", "loop device"),
        ("ram", "RAM disk"),
        ("zram", "compressed RAM disk"),
        ("md", "md RAID array (its member disks are asked)"),
        (
            "dm-",
            "device-mapper device (its underlying disks are asked)",
        ),
        ("mmcblk", "SD/eMMC cards have no SMART"),
        ("mtdblock", "raw flash has no SMART"),
        ("nbd", "network block device"),
        ("sr", "optical drive"),
        ("zd", "ZFS volume"),
        ("drbd", "DRBD replicated device"),
    ];
    RULES.iter().find_map(|(prefix, reason)| {
        let rest = name.strip_prefix(prefix)?;
        // `md0`, `md127` but not `mda`; `sr0` but not `srv`-like names.
        let numbered = rest.chars().next().is_none_or(|c| c.is_ascii_digit());
        (numbered || prefix.ends_with('-')).then_some(*reason)
    })
}

/// Locates smartctl on PATH and in the sbin directories root's PATH may lack.
fn find_smartctl() -> Result<String, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    for d in ["/usr/sbin", "/sbin", "/usr/local/sbin"] {
        dirs.push(PathBuf::from(d));
    }
    dirs.iter()
        .map(|d| d.join("smartctl"))
        .find(|p| is_executable(p))
        .map(|p| p.to_string_lossy().into_owned())
        .ok_or_else(|| "smartctl not installed: apt install smartmontools".to_string())
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs `smartctl --json=c -x -n standby /dev/NAME` with a time and size limit.
/// `-n standby` keeps sleeping disks asleep: smartctl then exits with status 2.
fn run_smartctl(bin: &Path, name: &str, timeout: Duration) -> Result<serde_json::Value, String> {
    let dev = format!("/dev/{name}");
    let mut child = Command::new(bin)
        .args(["--json=c", "-x", "-n", "standby", &dev])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run '{}': {e}", bin.display()))?;
    let Some(stdout) = child.stdout.take() else {
        return Err("smartctl's output was not captured".into());
    };
    // A reader thread, so a silent, hung smartctl can still be timed out. Its end
    // (smartctl exited, or the size limit closed the pipe) wakes the wait below at
    // once: polling alone cost a whole poll interval per disk, most of a probe.
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let result = stdout.take(MAX_OUTPUT_BYTES + 1).read_to_end(&mut buf);
        let _ = done_tx.send(());
        result.map(|_| buf)
    });
    let deadline = Instant::now() + timeout;
    let _ = done_rx.recv_timeout(timeout);
    let mut poll = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(poll);
                poll = (poll * 2).min(Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = reader.join();
                return Err(format!(
                    "smartctl did not finish within {} ms on '{dev}'",
                    timeout.as_millis()
                ));
            }
            Err(e) => return Err(format!("waiting for smartctl on '{dev}': {e}")),
        }
    }
    let buf = reader
        .join()
        .map_err(|_| "smartctl output reader failed".to_string())?
        .map_err(|e| format!("reading smartctl output for '{dev}': {e}"))?;
    if buf.len() as u64 > MAX_OUTPUT_BYTES {
        return Err(format!(
            "smartctl printed more than {MAX_OUTPUT_BYTES} bytes for '{dev}'; not parsed"
        ));
    }
    serde_json::from_slice(&buf).map_err(|e| {
        format!("smartctl printed no JSON for '{dev}' ({e}); smartmontools 7.0 or newer is needed")
    })
}

/// smartctl's JSON, only the parts we use; every field may be missing.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SmartctlJson {
    smartctl: SmartctlMeta,
    device: DeviceJson,
    model_name: Option<String>,
    serial_number: Option<String>,
    firmware_version: Option<String>,
    user_capacity: Option<CapacityJson>,
    rotation_rate: Option<u64>,
    power_on_time: Option<PowerOnJson>,
    temperature: Option<TemperatureJson>,
    smart_status: Option<StatusJson>,
    ata_smart_attributes: Option<AtaTableJson>,
    nvme_smart_health_information_log: Option<NvmeLogJson>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SmartctlMeta {
    version: Vec<u32>,
    exit_status: u32,
    messages: Vec<MessageJson>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct MessageJson {
    string: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct DeviceJson {
    #[serde(rename = "type")]
    kind: String,
    protocol: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CapacityJson {
    bytes: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PowerOnJson {
    hours: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct TemperatureJson {
    current: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct StatusJson {
    passed: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AtaTableJson {
    table: Vec<AtaAttributeJson>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AtaAttributeJson {
    id: u32,
    name: String,
    value: u32,
    worst: u32,
    thresh: u32,
    when_failed: String,
    raw: RawJson,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawJson {
    value: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct NvmeLogJson {
    critical_warning: u64,
    media_errors: u64,
    num_err_log_entries: u64,
    percentage_used: Option<u64>,
    available_spare: Option<u64>,
    unsafe_shutdowns: Option<u64>,
}

/// smartctl exit bits 0-2: bad command line, device open failed, SMART or
/// identify command failed. With these the JSON has no health data.
const EXIT_NO_DATA: u32 = 0b111;

/// Turns one device's smartctl JSON into its health, or the reason there is none.
pub fn health_from_json(v: &serde_json::Value) -> Outcome<DiskHealth> {
    let j = match serde_json::from_value::<SmartctlJson>(v.clone()) {
        Ok(j) => j,
        Err(e) => {
            return Outcome::Failed {
                error: format!("unexpected smartctl JSON: {e}"),
            };
        }
    };
    let messages: Vec<&str> = j
        .smartctl
        .messages
        .iter()
        .map(|m| m.string.trim())
        .filter(|m| !m.is_empty())
        .collect();
    if j.smartctl.exit_status & EXIT_NO_DATA != 0 {
        let said = if messages.is_empty() {
            "no message".to_string()
        } else {
            messages.join("; ")
        };
        return Outcome::Unsupported {
            reason: format!("smartctl exit status {}: {said}", j.smartctl.exit_status),
        };
    }
    let ata_attributes = j
        .ata_smart_attributes
        .map(|t| t.table)
        .unwrap_or_default()
        .into_iter()
        .filter(|a| ATA_ERROR_ATTRIBUTES.contains(&a.id))
        .map(|a| AtaAttribute {
            id: a.id,
            name: a.name,
            value: a.value,
            worst: a.worst,
            threshold: a.thresh,
            raw_value: a.raw.value,
            when_failed: a.when_failed,
        })
        .collect();
    let version = &j.smartctl.version;
    Outcome::Ok {
        data: DiskHealth {
            protocol: j.device.protocol,
            device_type: j.device.kind,
            model: j.model_name,
            serial: j.serial_number,
            firmware: j.firmware_version,
            capacity_bytes: j.user_capacity.map(|c| c.bytes).filter(|b| *b > 0),
            rotation_rate_rpm: j.rotation_rate,
            power_on_hours: j.power_on_time.map(|p| p.hours),
            temperature_celsius: j.temperature.and_then(|t| t.current),
            smart_passed: j.smart_status.and_then(|s| s.passed),
            exit_status: j.smartctl.exit_status,
            ata_attributes,
            nvme: j.nvme_smart_health_information_log.map(|n| NvmeHealth {
                critical_warning: n.critical_warning,
                media_errors: n.media_errors,
                num_err_log_entries: n.num_err_log_entries,
                percentage_used: n.percentage_used,
                available_spare: n.available_spare,
                unsafe_shutdowns: n.unsafe_shutdowns,
            }),
            smartctl_version: (!version.is_empty()).then(|| {
                version
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(".")
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ATA_HDD: &str = include_str!("../../tests/fixtures/smartctl/ata-hdd-crc-errors.json");
    const NVME: &str = include_str!("../../tests/fixtures/smartctl/nvme.json");
    const USB_FAIL: &str =
        include_str!("../../tests/fixtures/smartctl/usb-bridge-unsupported.json");

    fn health(text: &str) -> Outcome<DiskHealth> {
        health_from_json(&serde_json::from_str(text).unwrap())
    }

    #[test]
    fn devices_round_trip_byte_for_byte_with_their_health_in_line() {
        let devices: Vec<SmartDevice> = [ATA_HDD, NVME, USB_FAIL]
            .iter()
            .zip(["sda", "nvme0n1", "sdb"])
            .map(|(text, name)| SmartDevice {
                name: name.into(),
                health: health(text),
            })
            .collect();
        assert!(devices.iter().any(|d| d.health.data().is_none()));
        let json = serde_json::to_string(&devices).unwrap();
        assert!(json.starts_with(r#"[{"name":"sda","status":"ok","data":{"protocol":"ATA""#));
        let back: Vec<SmartDevice> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, devices);
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
        let e = serde_json::from_str::<SmartDevice>(r#"{"status": "failed", "error": "x"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("missing field `name`"), "{e}");
        let e = serde_json::from_str::<SmartDevice>(r#"{"name": "sda", "status": "ok"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("missing field `data`"), "{e}");
    }

    #[test]
    fn ata_hdd_with_crc_errors() {
        let h = health(ATA_HDD);
        let d = h.data().expect("ok");
        assert_eq!(d.protocol, "ATA");
        assert_eq!(d.device_type, "sat");
        assert_eq!(d.model.as_deref(), Some("WDC WD20EFRX-68EUZN0"));
        assert_eq!(d.rotation_rate_rpm, Some(5400));
        assert_eq!(d.power_on_hours, Some(31234));
        assert_eq!(d.temperature_celsius, Some(36));
        assert_eq!(d.smart_passed, Some(true));
        assert_eq!(d.exit_status, 64);
        let ids: Vec<u32> = d.ata_attributes.iter().map(|a| a.id).collect();
        assert_eq!(ids, vec![5, 197, 198, 199], "only error-count attributes");
        let crc = d.ata_attributes.iter().find(|a| a.id == 199).unwrap();
        assert_eq!(crc.raw_value, 12);
        assert!(d.nvme.is_none());
        assert_eq!(d.smartctl_version.as_deref(), Some("7.3"));
    }

    #[test]
    fn nvme_health_log() {
        let h = health(NVME);
        let d = h.data().expect("ok");
        assert_eq!(d.protocol, "NVMe");
        assert_eq!(d.rotation_rate_rpm, None);
        let n = d.nvme.as_ref().unwrap();
        assert_eq!(n.media_errors, 0);
        assert_eq!(n.num_err_log_entries, 14);
        assert_eq!(n.percentage_used, Some(3));
        assert!(d.ata_attributes.is_empty());
    }

    #[test]
    fn usb_bridge_failure_is_unsupported_with_smartctl_message() {
        let h = health(USB_FAIL);
        assert_eq!(h.status(), "unsupported");
        let why = h.problem().unwrap();
        assert!(why.contains("exit status 2"), "{why}");
        assert!(why.contains("Unknown USB bridge"), "{why}");
    }

    #[test]
    fn missing_fields_do_not_fail_but_wrong_types_do() {
        let h = health_from_json(&serde_json::json!({"smartctl": {"exit_status": 0}}));
        let d = h.data().expect("ok");
        assert_eq!(d.model, None);
        assert!(d.ata_attributes.is_empty());
        let bad = health_from_json(&serde_json::json!({"smartctl": {"exit_status": "x"}}));
        assert_eq!(bad.status(), "failed");
        let none = health_from_json(&serde_json::json!({"smartctl": {"exit_status": 4}}));
        assert!(none.problem().unwrap().contains("no message"));
    }

    #[test]
    fn which_devices_are_skipped() {
        for (name, skipped) in [
            ("sda", false),
            ("nvme0n1", false),
            ("vda", false),
            ("mda", false),
            ("loop0", true),
            ("zram0", true),
            ("md127", true),
            ("dm-3", true),
            ("mmcblk0", true),
            ("sr0", true),
            ("ram15", true),
        ] {
            assert_eq!(skip_reason(name).is_some(), skipped, "{name}");
        }
        assert!(skip_reason("mmcblk1").unwrap().contains("SD"));
    }

    #[test]
    fn runner_reports_a_missing_binary_and_non_json_output() {
        let t = Duration::from_secs(10);
        let e = run_smartctl(Path::new("/nonexistent/smartctl"), "sda", t).unwrap_err();
        assert!(e.contains("/nonexistent/smartctl"), "{e}");
        // `true` prints nothing: not JSON.
        let e = run_smartctl(Path::new("/bin/true"), "sda", t).unwrap_err();
        assert!(e.contains("no JSON"), "{e}");
    }

    #[test]
    fn runner_bounds_output_size_and_time() {
        let dir = tempfile::tempdir().unwrap();
        let script = |name: &str, body: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
            let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
            std::fs::set_permissions(&path, mode).unwrap();
            path
        };
        // A script just written can be briefly busy (ETXTBSY) while another
        // test thread forks; retry that, nothing else.
        let run = |bin: &Path, timeout: Duration| {
            for _ in 0..20 {
                match run_smartctl(bin, "sda", timeout) {
                    Err(e) if e.contains("busy") => std::thread::sleep(Duration::from_millis(50)),
                    other => return other,
                }
            }
            Err("script stayed busy".into())
        };
        // Endless output is cut at the size limit.
        let endless = script("endless", "exec yes");
        let e = run(&endless, Duration::from_secs(20)).unwrap_err();
        assert!(e.contains("more than 1048576 bytes"), "{e}");
        // A tool that hangs silently is killed at the deadline.
        let hang = script("hang", "exec sleep 30");
        let start = Instant::now();
        let e = run(&hang, Duration::from_millis(300)).unwrap_err();
        assert!(e.contains("did not finish within 300 ms"), "{e}");
        assert!(start.elapsed() < Duration::from_secs(10));
    }
}
