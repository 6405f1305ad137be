//! Human formatting of base units, and of text that came from outside.

pub use crate::escape::{shown, shown_text};

/// Bytes in binary units: `512 B`, `1.5 KiB`, `118.2 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// A data rate in decimal megabytes a second, `189.3 MB/s`: the one unit
/// every text and page gives a rate in, as fio, iperf3 and disk vendors
/// count (10^6 bytes). `--json` keeps bytes per second.
pub fn rate(bytes_per_sec: f64) -> String {
    format!("{:.1} MB/s", bytes_per_sec / 1e6)
}

/// Seconds as `3d 4h 5m`.
pub fn duration(secs: f64) -> String {
    let s = secs.max(0.0) as u64;
    let (d, h, m) = (s / 86_400, (s % 86_400) / 3600, (s % 3600) / 60);
    if d > 0 {
        format!("{d}d {h}h {m}m")
    } else if h > 0 {
        format!("{h}h {m}m")
    } else {
        format!("{m}m {}s", s % 60)
    }
}

/// kHz as MHz or GHz.
pub fn khz(k: u64) -> String {
    if k >= 1_000_000 {
        format!("{:.2} GHz", k as f64 / 1e6)
    } else {
        format!("{} MHz", k / 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(128 * 1024 * 1024), "128.0 MiB");
        assert_eq!(duration(90061.0), "1d 1h 1m");
        assert_eq!(rate(189_300_000.0), "189.3 MB/s");
        assert_eq!(rate(1_742_900_000.0), "1742.9 MB/s");
        assert_eq!(khz(800_000), "800 MHz");
        assert_eq!(khz(1_800_000), "1.80 GHz");
    }
}
