//! Wall-clock time without a date library: Unix seconds and RFC 3339 in UTC.

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

static COMMAND_STARTED: OnceLock<u64> = OnceLock::new();

/// When this command started, in Unix seconds: its run's start. The first call
/// fixes it, and `main` makes that call before anything else, so a bench that
/// creates its run record once it has measured (a minute later) still records
/// when it began, not "(0 s)".
pub fn command_started_unix() -> u64 {
    *COMMAND_STARTED.get_or_init(now_unix)
}

pub fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Formats Unix seconds as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Unix seconds of a UTC date and time; `None` for a date that does not exist
/// or one before 1970.
pub fn unix_from_civil(y: u32, m: u32, d: u32, h: u32, min: u32, s: u32) -> Option<u64> {
    if !(1..=12).contains(&m) || d == 0 || h > 23 || min > 59 || s > 60 {
        return None;
    }
    // Howard Hinnant's days-from-civil, the inverse of civil_from_days.
    let y = i64::from(y) - i64::from(m <= 2);
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from(if m > 2 { m - 3 } else { m + 9 });
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    // A 31st of a 30-day month comes back as the 1st of the next.
    if civil_from_days(days).2 != d {
        return None;
    }
    let secs = days * 86_400 + i64::from(h * 3600 + min * 60 + s);
    u64::try_from(secs).ok()
}

/// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_utc(1_795_305_600), "2026-11-22T00:00:00Z");
    }

    #[test]
    fn civil_times_round_trip() {
        assert_eq!(unix_from_civil(1970, 1, 1, 0, 0, 0), Some(0));
        assert_eq!(unix_from_civil(2000, 2, 29, 0, 0, 0), Some(951_782_400));
        assert_eq!(unix_from_civil(2026, 11, 22, 0, 0, 1), Some(1_795_305_601));
        assert_eq!(
            unix_from_civil(2001, 2, 29, 0, 0, 0),
            None,
            "not a leap year"
        );
        assert_eq!(unix_from_civil(2024, 4, 31, 0, 0, 0), None);
        assert_eq!(unix_from_civil(2024, 13, 1, 0, 0, 0), None);
        assert_eq!(unix_from_civil(1969, 12, 31, 0, 0, 0), None);
        for secs in [0, 86_399, 951_782_400, 4_102_444_800] {
            let t = rfc3339_utc(secs);
            let n = |a: usize, b: usize| t[a..b].parse().unwrap();
            let back = unix_from_civil(n(0, 4), n(5, 7), n(8, 10), n(11, 13), n(14, 16), n(17, 19));
            assert_eq!(back, Some(secs), "{t}");
        }
    }
}
