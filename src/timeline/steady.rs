//! `--until-steady`: when a long write has settled, so the run can stop. Pure:
//! the live rates per interval in, the verdict out.

use std::time::Duration;

/// The settled stretch: the last 10 s of intervals (5 at least). A cache
/// cliff comes after tens of seconds at most on the disks this is for (SLC
/// caches of 4-40 GB at 400 MB/s+), and 10 s of one rate is what the
/// sustained figure is read from.
pub const STEADY_WINDOW: Duration = Duration::from_secs(10);
pub const STEADY_MIN_POINTS: usize = 5;
/// Every interval of the stretch within this share of its mean: ±15 %, a
/// busy 2-core box's own noise on a steady loop device was ±10 %.
pub const STEADY_BAND: f64 = 0.15;
/// How long `--until-steady` runs at most when `--runtime` does not say.
pub const DEFAULT_CAP: Duration = Duration::from_secs(300);

/// Whether the rates (bytes/s, one per `interval`, oldest first) have
/// settled. `past_cache`: for buffered writes, whether dirty memory has
/// reached the background threshold; until then the page cache's own steady
/// speed is not the disk's.
pub fn is_steady(rates: &[f64], interval: Duration, past_cache: bool) -> bool {
    if !past_cache {
        return false;
    }
    let n = (STEADY_WINDOW.as_millis() as usize)
        .div_ceil(interval.as_millis().max(1) as usize)
        .max(STEADY_MIN_POINTS);
    // The stretch must follow something (a cliff or a warm-up): a run that
    // is steady from its first interval still waits one window more.
    if rates.len() < n + STEADY_MIN_POINTS {
        return false;
    }
    let last = &rates[rates.len() - n..];
    let mean = last.iter().sum::<f64>() / n as f64;
    mean > 0.0 && last.iter().all(|r| (r - mean).abs() <= mean * STEADY_BAND)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn ten_seconds_within_fifteen_percent_after_a_cliff_is_steady() {
        let mut r = vec![400.0; 5];
        r.extend([
            100.0, 95.0, 110.0, 90.0, 105.0, 100.0, 98.0, 102.0, 107.0, 93.0,
        ]);
        assert!(is_steady(&r, S, true));
        // Not while the page cache still takes the writes.
        assert!(!is_steady(&r, S, false));
        // One interval out of the band (a stall) is not settled.
        r[12] = 50.0;
        assert!(!is_steady(&r, S, true));
    }

    #[test]
    fn a_short_run_or_a_falling_rate_is_not_steady() {
        assert!(!is_steady(&[100.0; 14], S, true));
        assert!(is_steady(&[100.0; 15], S, true));
        let falling: Vec<f64> = (0..20).map(|i| 200.0 - 8.0 * f64::from(i)).collect();
        assert!(!is_steady(&falling, S, true));
        // At 250 ms a point, the window is 40 points.
        assert!(!is_steady(&[100.0; 44], Duration::from_millis(250), true));
        assert!(is_steady(&[100.0; 45], Duration::from_millis(250), true));
        assert!(!is_steady(&[0.0; 20], S, true));
    }
}
