//! Why a test's rate fell, from the counters sampled alongside: dirty memory
//! at the throttling point (writeback), a device slower at the same queue
//! (its cache ran out, or it is throttled), a falling CPU clock (thermal), or
//! a link that reset. Pure: the points, the event and the samples in.

use serde::{Deserialize, Serialize};

use super::counters::Sampled;
use super::detect::{CLIFF_SHARE, Event};
use super::{Context, Point};
use crate::probe::kernel_log::Class;

/// Dirty + Writeback at this share of the background threshold counts as
/// having reached it: the sample is taken up to one interval off the moment
/// the flushers started, and they drain a little meanwhile. Writers slow from
/// there, before the kernel holds them at the freerun point: on ext4 over a
/// 4 MiB/s device, a 620 MB/s writer fell to 30 MB/s at 243 MiB dirty of a
/// 256 MiB background threshold, and to 4 MiB/s past the 384 MiB freerun.
pub const DIRTY_REACHED: f64 = 0.9;
/// The device still had this share of its queue after the event: the same
/// load, so the device itself got slower.
pub const SAME_QUEUE: f64 = 0.5;
/// A CPU clock under this share of its clock before the event is throttling
/// (ondemand governors move in steps of 10-20 %, a thermal cap halves it).
pub const CLOCK_DROP: f64 = 0.8;
/// Seconds of the sustained rate a dirty limit should hold: the writer then
/// waits in steps of about this long, not for the whole backlog (the value
/// the dirty-limit advice uses).
pub const DIRTY_SECONDS: f64 = 3.0;
/// The smallest dirty limit suggested: below it the flushers write in pieces
/// too small for a disk's sequential speed.
const MIN_DIRTY_BYTES: u64 = 16 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CauseKind {
    /// Dirty pages reached the threshold: the writer waits for the disk.
    Writeback,
    /// The device itself got slower at the same queue.
    Device,
    /// The CPU clock fell (thermal or power throttling).
    Thermal,
    /// The disk's link reset, or I/O errors, during the test.
    LinkReset,
    /// No event, and the run never reached the dirty threshold.
    TooShort,
    /// An event no sampled counter explains.
    Unknown,
}

/// The cause with its figures, and the fix where there is one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cause {
    pub kind: CauseKind,
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

fn mib(b: f64) -> String {
    format!("{:.0} MiB", b / f64::from(1u32 << 20))
}

/// MB/s (10^6), the unit every rate in nastune's text is in.
fn rate(b: f64) -> String {
    format!("{:.1} MB/s", b / 1e6)
}

fn secs(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

fn mean(v: impl Iterator<Item = f64>) -> Option<f64> {
    let (n, s) = v.fold((0u32, 0.0), |(n, s), x| (n + 1, s + x));
    (n > 0).then(|| s / f64::from(n))
}

/// The cause of an event in a series sampled without counters (a network
/// stream, an SMB file): `unknown`, with `why` saying what was not sampled.
pub fn unsampled(event: Option<&Event>, why: &str) -> Option<Cause> {
    event.map(|_| Cause {
        kind: CauseKind::Unknown,
        summary: why.to_string(),
        fix: None,
    })
}

/// The cause of `event` (or, without one, why none could show).
pub fn judge(
    points: &[Point],
    event: Option<&Event>,
    sampled: &Sampled,
    ctx: Context,
) -> Option<Cause> {
    let dirty_of = |p: &Point| {
        p.counters
            .dirty_bytes
            .map(|d| d + p.counters.writeback_bytes.unwrap_or(0))
    };
    let Some(e) = event else {
        // No event: say so when a buffered write never got near the point
        // where writeback starts, so "no cliff" is not read as "this disk
        // has none".
        let limits = sampled.dirty.as_ref().filter(|_| ctx.buffered_writes)?;
        let peak = points.iter().filter_map(dirty_of).max()?;
        if (peak as f64) >= limits.background_bytes as f64 * DIRTY_REACHED {
            return None;
        }
        let written: u64 = points.iter().map(|p| p.bytes).sum();
        return Some(Cause {
            kind: CauseKind::TooShort,
            summary: format!(
                "too short to reach the dirty limit: the test wrote {} and dirty memory peaked \
                 at {}, under the {} background threshold where writeback starts ({}; the \
                 limit is {} from {})",
                mib(written as f64),
                mib(peak as f64),
                mib(limits.background_bytes as f64),
                limits.background_from,
                mib(limits.limit_bytes as f64),
                limits.limit_from,
            ),
            fix: Some(format!(
                "write more than {} to see where this disk's writes fall: --until-steady with \
                 a --size above it",
                mib(limits.limit_bytes as f64)
            )),
        });
    };
    let i = points
        .iter()
        .position(|p| p.t_ms > e.start_ms)
        .unwrap_or(points.len());
    let (before, after) = points.split_at(i);

    let resets: Vec<_> = sampled
        .log_events
        .iter()
        .filter(|l| {
            matches!(
                l.class,
                Class::AtaLinkReset | Class::UsbReset | Class::UasAbort | Class::IoError
            )
        })
        .collect();
    if let Some(first) = resets.first() {
        return Some(Cause {
            kind: CauseKind::LinkReset,
            summary: format!(
                "the disk's link: {} kernel-log line(s) of {} during the test, the first at {}{}: '{}'",
                resets.len(),
                first.class.name(),
                secs(first.t_ms),
                first
                    .device
                    .as_deref()
                    .map(|d| format!(" on {d}"))
                    .unwrap_or_default(),
                first.line
            ),
            fix: Some(
                "check the cable and the disk's power supply (a USB disk on a board's port \
                 often browns out under load); for a USB bridge that resets with UAS, try \
                 usb-storage.quirks=VID:PID:u"
                    .into(),
            ),
        });
    }

    let dev_rate = |ps: &[Point]| {
        mean(ps.iter().filter_map(|p| {
            p.counters
                .dev_bytes
                .map(|b| b as f64 * 1000.0 / p.ms.max(1) as f64)
        }))
    };

    // Writeback: dirty memory past the background threshold around the event's start.
    if ctx.buffered_writes
        && let Some(limits) = &sampled.dirty
    {
        let near = &points[i.saturating_sub(1)..(i + 2).min(points.len())];
        if let Some(peak) = near.iter().filter_map(dirty_of).max()
            && peak as f64 >= limits.background_bytes as f64 * DIRTY_REACHED
        {
            // The disk's pace: what the device completed after the event (the
            // writer may stand still meanwhile), else the writer's own rate.
            let disk = dev_rate(after).filter(|r| *r > 0.0).unwrap_or(e.rate_after);
            let suggest = ((disk * DIRTY_SECONDS) as u64).max(MIN_DIRTY_BYTES);
            return Some(Cause {
                kind: CauseKind::Writeback,
                summary: format!(
                    "writeback: Dirty + Writeback reached {} at {}, past the {} background \
                     threshold ({}) toward the {} dirty limit ({}; writers are held from {}); \
                     {} written before, then the writer managed {} while the disk completed {}",
                    mib(peak as f64),
                    secs(e.start_ms),
                    mib(limits.background_bytes as f64),
                    limits.background_from,
                    mib(limits.limit_bytes as f64),
                    limits.limit_from,
                    mib(limits.freerun_bytes() as f64),
                    mib(e.bytes_before as f64),
                    rate(e.rate_after),
                    rate(disk)
                ),
                fix: Some(format!(
                    "sysctl vm.dirty_bytes={suggest} vm.dirty_background_bytes={}: about {} s \
                     of this disk's {}, so writers wait in short steps instead of one long stall \
                     ('nastune tune try' measures it)",
                    suggest / 2,
                    DIRTY_SECONDS,
                    rate(disk)
                )),
            });
        }
    }

    // Thermal: the CPU clock fell with the rate.
    let clock = |ps: &[Point]| {
        mean(
            ps.iter()
                .filter_map(|p| p.counters.cpu_khz.map(|k| k as f64)),
        )
    };
    let hottest = points.iter().filter_map(|p| p.counters.temp_mc).max();
    let throttle_log = sampled
        .log_events
        .iter()
        .find(|l| l.class == Class::UndervoltageThrottle);
    if let (Some(b), Some(a)) = (clock(before), clock(after))
        && (a < b * CLOCK_DROP || throttle_log.is_some())
    {
        return Some(Cause {
            kind: CauseKind::Thermal,
            summary: format!(
                "CPU throttling: the clock fell from {:.0} MHz to {:.0} MHz with the rate{}{}",
                b / 1000.0,
                a / 1000.0,
                hottest
                    .map(|t| format!(" (hottest zone {:.0} °C)", t as f64 / 1000.0))
                    .unwrap_or_default(),
                throttle_log
                    .map(|l| format!("; kernel log: '{}'", l.line))
                    .unwrap_or_default()
            ),
            fix: Some(
                "cooling (a heatsink or fan) and a power supply that holds the voltage under load"
                    .into(),
            ),
        });
    }

    // Device: it completed less while it had as much to do.
    let queue = |ps: &[Point]| mean(ps.iter().filter_map(|p| p.counters.dev_queue));
    if let (Some(rb), Some(ra), Some(qb), Some(qa), Some(dev)) = (
        dev_rate(before),
        dev_rate(after),
        queue(before),
        queue(after),
        sampled.device.as_deref(),
    ) && rb > 0.0
        && ra < rb * CLIFF_SHARE
        && qb > 0.0
        && qa >= qb * SAME_QUEUE
    {
        return Some(Cause {
            kind: CauseKind::Device,
            summary: format!(
                "the device {dev} itself: it completed {} before {} and {} after, with {:.1} \
                 I/Os in flight on average before and {:.1} after: the same load on a slower \
                 device (its write cache filled, or it is throttled)",
                rate(rb),
                secs(e.start_ms),
                rate(ra),
                qb,
                qa
            ),
            fix: Some(format!(
                "nothing to tune: the disk sustains {} once {} are written; size bursts under \
                 that, or use a disk whose sustained rate is enough",
                rate(ra),
                mib(e.bytes_before as f64)
            )),
        });
    }
    Some(Cause {
        kind: CauseKind::Unknown,
        summary: "no sampled counter moved with it: dirty memory stayed under the throttling \
                  point, the device's rate and queue fell together (less was asked of it), \
                  the clock held and the kernel log was quiet"
            .into(),
        fix: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::counters::{DirtyLimits, LogEvent};
    use crate::timeline::detect::{detect, tests::series};

    const M: u64 = 1 << 20;

    fn limits(limit: u64, background: u64) -> DirtyLimits {
        DirtyLimits {
            limit_bytes: limit,
            background_bytes: background,
            limit_from: "vm.dirty_bytes".into(),
            background_from: "vm.dirty_background_bytes".into(),
        }
    }

    fn sampled(dirty: Option<DirtyLimits>) -> Sampled {
        Sampled {
            device: Some("sdb".into()),
            dirty,
            ..Sampled::default()
        }
    }

    const BUFFERED: Context = Context {
        buffered_writes: true,
    };
    const DIRECT: Context = Context {
        buffered_writes: false,
    };

    #[test]
    fn dirty_memory_at_the_limit_names_writeback_and_a_smaller_limit() {
        let mut p = series(1000, &[500.0, 500.0, 8.0, 8.0, 8.0, 8.0]);
        let dirty = [300, 500, 510, 505, 500, 500];
        for (p, d) in p.iter_mut().zip(dirty) {
            p.counters.dirty_bytes = Some(d * M);
            p.counters.writeback_bytes = Some(4 * M);
        }
        let e = detect(&p).unwrap();
        let s = sampled(Some(limits(512 * M, 256 * M)));
        let c = judge(&p, Some(&e), &s, BUFFERED).unwrap();
        assert_eq!(c.kind, CauseKind::Writeback, "{c:?}");
        assert!(
            c.summary
                .contains("514 MiB at 2.0 s, past the 256 MiB background threshold"),
            "{}",
            c.summary
        );
        // 3 s of 8 MB/s.
        assert!(c.fix.unwrap().contains("vm.dirty_bytes=24000000 "));
        // The same series with O_DIRECT writes never blames the page cache.
        assert_ne!(
            judge(&p, Some(&e), &s, DIRECT).unwrap().kind,
            CauseKind::Writeback
        );
    }

    #[test]
    fn a_device_slower_at_the_same_queue_is_the_device() {
        let mut p = series(1000, &[100.0, 100.0, 100.0, 30.0, 30.0, 30.0]);
        for p in &mut p {
            p.counters.dev_bytes = Some(p.bytes);
            p.counters.dev_queue = Some(if p.bytes > 50_000_000 { 1.0 } else { 0.95 });
        }
        let e = detect(&p).unwrap();
        let c = judge(&p, Some(&e), &sampled(None), DIRECT).unwrap();
        assert_eq!(c.kind, CauseKind::Device, "{c:?}");
        assert!(
            c.summary.starts_with(
                "the device sdb itself: it completed 100.0 MB/s before 3.0 s and 30.0 MB/s after"
            ),
            "{}",
            c.summary
        );
        // When the queue emptied too, less was asked of the device: not its fault.
        for p in &mut p[3..] {
            p.counters.dev_queue = Some(0.1);
        }
        assert_eq!(
            judge(&p, Some(&e), &sampled(None), DIRECT).unwrap().kind,
            CauseKind::Unknown
        );
    }

    #[test]
    fn a_falling_clock_is_thermal_and_a_reset_wins_over_everything() {
        let mut p = series(1000, &[100.0, 100.0, 100.0, 40.0, 40.0, 40.0]);
        for (i, p) in p.iter_mut().enumerate() {
            p.counters.cpu_khz = Some(if i < 3 { 1_500_000 } else { 600_000 });
            p.counters.temp_mc = Some(85_000);
        }
        let e = detect(&p).unwrap();
        let c = judge(&p, Some(&e), &sampled(None), DIRECT).unwrap();
        assert_eq!(c.kind, CauseKind::Thermal);
        assert!(
            c.summary.contains("1500 MHz to 600 MHz") && c.summary.contains("85 °C"),
            "{}",
            c.summary
        );
        let mut s = sampled(None);
        s.log_events.push(LogEvent {
            t_ms: 3000,
            class: Class::UsbReset,
            device: Some("2-1".into()),
            line: "usb 2-1: reset high-speed USB device number 2 using ehci-platform".into(),
        });
        let c = judge(&p, Some(&e), &s, DIRECT).unwrap();
        assert_eq!(c.kind, CauseKind::LinkReset);
        assert!(
            c.summary
                .contains("usb_reset during the test, the first at 3.0 s on 2-1"),
            "{}",
            c.summary
        );
    }

    #[test]
    fn a_run_that_never_reached_the_throttling_point_says_it_was_too_short() {
        // 1 GiB written, dirty peaked at 1 GiB, the background threshold is 2 GiB.
        let mut p = series(1000, &[268.0, 268.0, 268.0, 268.0]);
        for (i, p) in p.iter_mut().enumerate() {
            p.counters.dirty_bytes = Some(256 * M * (i as u64 + 1));
        }
        assert_eq!(detect(&p), None);
        let s = sampled(Some(limits(4096 * M, 2048 * M)));
        let c = judge(&p, None, &s, BUFFERED).unwrap();
        assert_eq!(c.kind, CauseKind::TooShort);
        assert!(
            c.summary
                .contains("peaked at 1024 MiB, under the 2048 MiB background"),
            "{}",
            c.summary
        );
        // Direct I/O, or a run that reached it without falling: nothing to say.
        assert_eq!(judge(&p, None, &s, DIRECT), None);
        let s = sampled(Some(limits(2048 * M, 1024 * M)));
        assert_eq!(judge(&p, None, &s, BUFFERED), None);
    }
}
