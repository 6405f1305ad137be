//! Memory: totals from /proc/meminfo, swap devices and their kind, and pressure
//! stall information (PSI) when the kernel has it.

use serde::{Deserialize, Serialize};

use super::text::{parse_f64, parse_i64, parse_u64, split_colon};
use super::{ParseError, ProbeError};
use crate::root::Root;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Memory {
    pub total_bytes: u64,
    pub available_bytes: Option<u64>,
    pub free_bytes: Option<u64>,
    pub cached_bytes: Option<u64>,
    pub dirty_bytes: Option<u64>,
    pub swap_total_bytes: u64,
    pub swap_free_bytes: u64,
    pub swaps: Vec<Swap>,
    /// PSI per resource; `None` when the kernel has no /proc/pressure.
    pub pressure: Option<Vec<Pressure>>,
    pub pressure_unavailable: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Swap {
    pub device: String,
    /// `zram`, `partition` or `file`.
    pub kind: String,
    pub size_bytes: u64,
    pub used_bytes: u64,
    pub priority: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Pressure {
    pub resource: String,
    pub some_avg10: f64,
    pub some_avg60: f64,
    pub some_total_us: u64,
    pub full_avg10: Option<f64>,
    pub full_avg60: Option<f64>,
    pub full_total_us: Option<u64>,
}

/// The fields of /proc/meminfo we use, in bytes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemInfo {
    pub total: u64,
    pub available: Option<u64>,
    pub free: Option<u64>,
    pub cached: Option<u64>,
    pub dirty: Option<u64>,
    pub swap_total: u64,
    pub swap_free: u64,
}

pub fn read_memory(root: &Root) -> Result<Memory, ProbeError> {
    let info = parse_meminfo(&root.read_string("proc/meminfo")?)?;
    let swaps = match root.read_optional("proc/swaps")? {
        Some(t) => parse_swaps(&t)?,
        None => Vec::new(),
    };
    let (pressure, pressure_unavailable) = read_pressure(root);
    Ok(Memory {
        total_bytes: info.total,
        available_bytes: info.available,
        free_bytes: info.free,
        cached_bytes: info.cached,
        dirty_bytes: info.dirty,
        swap_total_bytes: info.swap_total,
        swap_free_bytes: info.swap_free,
        swaps,
        pressure,
        pressure_unavailable,
    })
}

fn read_pressure(root: &Root) -> (Option<Vec<Pressure>>, Option<String>) {
    if !root.exists("proc/pressure") {
        return (
            None,
            Some("the kernel has no /proc/pressure (CONFIG_PSI off, or older than 4.20)".into()),
        );
    }
    let mut out = Vec::new();
    for resource in ["cpu", "memory", "io"] {
        let text = match root.read_string(&format!("proc/pressure/{resource}")) {
            Ok(t) => t,
            // psi=0 on the command line leaves the files but reading fails.
            Err(e) => return (None, Some(format!("{e} (PSI disabled with psi=0?)"))),
        };
        match parse_pressure(resource, &text) {
            Ok(p) => out.push(p),
            Err(e) => return (None, Some(e.to_string())),
        }
    }
    (Some(out), None)
}

/// Parses /proc/meminfo; values are in KiB there and bytes here.
pub fn parse_meminfo(text: &str) -> Result<MemInfo, ParseError> {
    let mut m = MemInfo::default();
    let mut total = None;
    for line in text.lines() {
        let Some((key, value)) = split_colon(line) else {
            continue;
        };
        let field = match key {
            "MemTotal" | "MemAvailable" | "MemFree" | "Cached" | "Dirty" | "SwapTotal"
            | "SwapFree" => key,
            _ => continue,
        };
        let number = value.strip_suffix("kB").unwrap_or(value);
        let bytes = parse_u64(&format!("/proc/meminfo {field}"), number)?.saturating_mul(1024);
        match field {
            "MemTotal" => total = Some(bytes),
            "MemAvailable" => m.available = Some(bytes),
            "MemFree" => m.free = Some(bytes),
            "Cached" => m.cached = Some(bytes),
            "Dirty" => m.dirty = Some(bytes),
            "SwapTotal" => m.swap_total = bytes,
            _ => m.swap_free = bytes,
        }
    }
    m.total = total.ok_or_else(|| ParseError::missing("/proc/meminfo", "MemTotal"))?;
    Ok(m)
}

/// Parses /proc/swaps (header line, then one device a line; sizes in KiB).
pub fn parse_swaps(text: &str) -> Result<Vec<Swap>, ParseError> {
    let mut out = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.is_empty() {
            continue;
        }
        if f.len() < 5 {
            return Err(ParseError::value("/proc/swaps line", line));
        }
        // The name may contain escaped spaces (\040) but never a real space.
        let device = f[0].replace("\\040", " ");
        let kind = if device.starts_with("/dev/zram") {
            "zram"
        } else if f[1] == "file" {
            "file"
        } else {
            "partition"
        };
        out.push(Swap {
            device,
            kind: kind.to_string(),
            size_bytes: parse_u64("/proc/swaps size", f[2])?.saturating_mul(1024),
            used_bytes: parse_u64("/proc/swaps used", f[3])?.saturating_mul(1024),
            priority: parse_i64("/proc/swaps priority", f[4])?,
        });
    }
    Ok(out)
}

/// Parses one /proc/pressure file (`some ...` and, except older cpu files, `full ...`).
pub fn parse_pressure(resource: &str, text: &str) -> Result<Pressure, ParseError> {
    let what = format!("/proc/pressure/{resource}");
    let mut some = None;
    let mut full = None;
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let kind = words.next();
        let mut avg10 = None;
        let mut avg60 = None;
        let mut total = None;
        for w in words {
            let Some((k, v)) = w.split_once('=') else {
                return Err(ParseError::value(&what, w));
            };
            match k {
                "avg10" => avg10 = Some(parse_f64(&what, v)?),
                "avg60" => avg60 = Some(parse_f64(&what, v)?),
                "total" => total = Some(parse_u64(&what, v)?),
                _ => {}
            }
        }
        let triple = (
            avg10.ok_or_else(|| ParseError::missing(&what, "avg10"))?,
            avg60.ok_or_else(|| ParseError::missing(&what, "avg60"))?,
            total.ok_or_else(|| ParseError::missing(&what, "total"))?,
        );
        match kind {
            Some("some") => some = Some(triple),
            Some("full") => full = Some(triple),
            _ => return Err(ParseError::value(&what, line)),
        }
    }
    let some = some.ok_or_else(|| ParseError::missing(&what, "some"))?;
    Ok(Pressure {
        resource: resource.to_string(),
        some_avg10: some.0,
        some_avg60: some.1,
        some_total_us: some.2,
        full_avg10: full.map(|f| f.0),
        full_avg60: full.map(|f| f.1),
        full_total_us: full.map(|f| f.2),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_in_bytes() {
        let t = "MemTotal:         124012 kB\nMemFree:           10312 kB\nMemAvailable:      80100 kB\nCached:  1 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n";
        let m = parse_meminfo(t).unwrap();
        assert_eq!(m.total, 124_012 * 1024);
        assert_eq!(m.available, Some(80_100 * 1024));
        assert!(parse_meminfo("MemFree: 1 kB\n").is_err());
        let e = parse_meminfo("MemTotal: many kB\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("'many'"), "{e}");
    }

    #[test]
    fn swaps_kinds() {
        let t = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
/dev/zram0                              partition\t61996\t\t0\t\t100\n\
/dev/sda2                               partition\t1048572\t\t2048\t\t-2\n\
/var/swap                               file\t\t102396\t\t0\t\t-3\n";
        let s = parse_swaps(t).unwrap();
        let kinds: Vec<&str> = s.iter().map(|s| s.kind.as_str()).collect();
        assert_eq!(kinds, vec!["zram", "partition", "file"]);
        assert_eq!(s[1].used_bytes, 2048 * 1024);
        assert_eq!(s[1].priority, -2);
        assert!(parse_swaps("h\n/dev/x partition\n").is_err());
    }

    #[test]
    fn pressure_with_and_without_full() {
        let t = "some avg10=0.12 avg60=0.05 avg300=0.00 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=42\n";
        let p = parse_pressure("io", t).unwrap();
        assert_eq!(p.some_total_us, 123456);
        assert_eq!(p.full_total_us, Some(42));
        let cpu =
            parse_pressure("cpu", "some avg10=1.00 avg60=0.50 avg300=0.10 total=9\n").unwrap();
        assert_eq!(cpu.full_avg10, None);
        assert!(parse_pressure("cpu", "some avg10=x\n").is_err());
        assert!(parse_pressure("cpu", "").is_err());
    }
}
