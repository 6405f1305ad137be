//! The counters sampled at the end of each interval, which say why a rate
//! fell: dirty and writeback memory against the dirty thresholds, the
//! device's completions and queue, the CPU clock and temperature, and
//! storage lines in the kernel log. `read_*` does the I/O, `parse_*` is pure.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::probe::kernel_log::{Bounded, Class, Event as KlogEvent, kmsg::Follower};
use crate::root::Root;

/// What one interval's end showed. Device figures are the interval's
/// differences; memory, clock and temperature are the values at its end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// /proc/meminfo `Dirty` and `Writeback`, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirty_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writeback_bytes: Option<u64>,
    /// Bytes the device completed (read and written) in the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dev_bytes: Option<u64>,
    /// I/Os the device completed in the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dev_ios: Option<u64>,
    /// The device's mean queue: I/Os in flight on average over the interval
    /// (the weighted time in queue over the interval's length).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dev_queue: Option<f64>,
    /// The fastest CPU's current clock, kHz (cpufreq `scaling_cur_freq`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_khz: Option<u64>,
    /// The hottest thermal zone, millidegrees Celsius.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp_mc: Option<i64>,
}

/// The dirty-page thresholds in bytes, and where each came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirtyLimits {
    /// Writers are throttled towards the disk's speed from halfway between
    /// the background threshold and this (the kernel's "freerun" point) and
    /// held at it.
    pub limit_bytes: u64,
    /// Flusher threads start writing back here.
    pub background_bytes: u64,
    /// "vm.dirty_bytes" or "vm.dirty_ratio 20 % of 21 GiB dirtyable".
    pub limit_from: String,
    pub background_from: String,
}

impl DirtyLimits {
    /// Where balance_dirty_pages starts throttling writers (mm/page-writeback.c
    /// `dirty_freerun_ceiling`): halfway between background and limit.
    pub fn freerun_bytes(&self) -> u64 {
        (self.limit_bytes + self.background_bytes) / 2
    }
}

/// A storage-relevant kernel-log line written during a test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEvent {
    /// ms into the measured window (at the interval it was read in).
    pub t_ms: u64,
    pub class: Class,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    pub line: String,
}

/// Classes that explain a storage rate falling.
const STORAGE_CLASSES: [Class; 5] = [
    Class::AtaLinkReset,
    Class::UsbReset,
    Class::UasAbort,
    Class::IoError,
    Class::UndervoltageThrottle,
];
/// Log events kept per test: a resetting link logs a few lines a second.
const MAX_LOG_EVENTS: usize = 50;

/// `key: N kB` fields of /proc/meminfo, in bytes, in the order of `keys`.
pub fn parse_meminfo_fields(text: &str, keys: &[&str]) -> Vec<Option<u64>> {
    let mut out = vec![None; keys.len()];
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        if let Some(i) = keys.iter().position(|x| *x == k.trim()) {
            let v = v.trim();
            out[i] = v
                .strip_suffix("kB")
                .unwrap_or(v)
                .trim()
                .parse::<u64>()
                .ok()
                .map(|kib| kib.saturating_mul(1024));
        }
    }
    out
}

/// The thresholds from the four sysctls (a non-zero `*_bytes` wins over its
/// ratio, as in the kernel) and the dirtyable memory the ratios apply to
/// (free plus file pages: mm/page-writeback.c `global_dirtyable_memory`).
pub fn parse_dirty_limits(
    dirty_bytes: u64,
    dirty_ratio: u64,
    background_bytes: u64,
    background_ratio: u64,
    dirtyable: u64,
) -> DirtyLimits {
    let of = |ratio: u64| (u128::from(dirtyable) * u128::from(ratio) / 100) as u64;
    let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
    let (limit_bytes, limit_from) = if dirty_bytes > 0 {
        (dirty_bytes, "vm.dirty_bytes".to_string())
    } else {
        (
            of(dirty_ratio),
            format!(
                "vm.dirty_ratio {dirty_ratio} % of {:.1} GiB dirtyable",
                gib(dirtyable)
            ),
        )
    };
    let (mut background_bytes, background_from) = if background_bytes > 0 {
        (background_bytes, "vm.dirty_background_bytes".to_string())
    } else {
        (
            of(background_ratio),
            format!(
                "vm.dirty_background_ratio {background_ratio} % of {:.1} GiB dirtyable",
                gib(dirtyable)
            ),
        )
    };
    // The kernel halves a background threshold at or above the limit.
    if background_bytes >= limit_bytes {
        background_bytes = limit_bytes / 2;
    }
    DirtyLimits {
        limit_bytes,
        background_bytes,
        limit_from,
        background_from,
    }
}

fn read_u64(root: &Root, rel: &str) -> Option<u64> {
    root.read_optional(rel).ok()??.trim().parse().ok()
}

/// The dirty thresholds now; `None` without /proc/sys/vm (a fixture tree).
pub fn read_dirty_limits(root: &Root) -> Option<DirtyLimits> {
    let text = root.read_string("proc/meminfo").ok()?;
    let f = parse_meminfo_fields(&text, &["MemFree", "Active(file)", "Inactive(file)"]);
    let dirtyable = f.iter().map(|v| v.unwrap_or(0)).sum();
    Some(parse_dirty_limits(
        read_u64(root, "proc/sys/vm/dirty_bytes")?,
        read_u64(root, "proc/sys/vm/dirty_ratio")?,
        read_u64(root, "proc/sys/vm/dirty_background_bytes")?,
        read_u64(root, "proc/sys/vm/dirty_background_ratio")?,
        dirtyable,
    ))
}

/// One block device's cumulative counters (/sys/class/block/X/stat).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DevStat {
    pub ios: u64,
    pub sectors: u64,
    /// Weighted milliseconds in queue (field 11): its growth over an
    /// interval, divided by the interval, is the mean number in flight.
    pub queue_ms: u64,
}

/// Parses a block device's `stat` file (the fields of Documentation/block/stat.rst).
pub fn parse_dev_stat(text: &str) -> Option<DevStat> {
    let f: Vec<u64> = text
        .split_whitespace()
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    if f.len() < 11 {
        return None;
    }
    Some(DevStat {
        ios: f[0] + f[4],
        sectors: f[2] + f[6],
        queue_ms: f[10],
    })
}

/// The fastest CPU's clock in kHz from each CPU's `scaling_cur_freq`.
pub fn parse_max_number(texts: &[String]) -> Option<i64> {
    texts
        .iter()
        .filter_map(|t| t.trim().parse::<i64>().ok())
        .max()
}

fn read_all_of(root: &Root, dir: &str, prefix: &str, file: &str) -> Vec<String> {
    root.read_dir_optional(dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| {
            n.strip_prefix(prefix)
                .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|n| root.read_optional(&format!("{dir}/{n}/{file}")).ok()?)
        .collect()
}

/// What the sampler gathered besides the per-interval counters.
#[derive(Debug, Clone, Default)]
pub struct Sampled {
    pub device: Option<String>,
    pub dirty: Option<DirtyLimits>,
    pub log_events: Vec<LogEvent>,
    pub samples: Vec<Counters>,
}

/// Samples the counters at each interval's end while a pass runs.
pub struct Sampler<'a> {
    root: &'a Root,
    device: Option<String>,
    interval: Duration,
    start: Instant,
    next: Instant,
    last_dev: Option<DevStat>,
    last_t: Instant,
    log: Option<Follower>,
    out: Sampled,
}

impl<'a> Sampler<'a> {
    /// Starts at `start` (the measured window's beginning), watching `device`.
    pub fn start(
        root: &'a Root,
        device: Option<String>,
        interval: Duration,
        start: Instant,
    ) -> Self {
        let interval = interval.max(super::MIN_INTERVAL);
        // Open the kernel log and skip what is already there: only lines
        // written during the test explain it.
        let log = root
            .is_live()
            .then(|| {
                let mut f = Follower::open().ok()?;
                let mut old = Bounded::default();
                f.drain(&mut old).ok()?;
                Some(f)
            })
            .flatten();
        let mut s = Sampler {
            root,
            last_dev: None,
            last_t: start,
            log,
            interval,
            start,
            next: start + interval,
            out: Sampled {
                dirty: read_dirty_limits(root),
                device: device.clone(),
                ..Sampled::default()
            },
            device,
        };
        s.last_dev = s.read_dev();
        s
    }

    fn read_dev(&self) -> Option<DevStat> {
        let d = self.device.as_deref()?;
        parse_dev_stat(
            &self
                .root
                .read_string(&format!("sys/class/block/{d}/stat"))
                .ok()?,
        )
    }

    /// How long until the next sample is due.
    pub fn until_next(&self) -> Duration {
        self.next.saturating_duration_since(Instant::now())
    }

    /// Samples if an interval ended (then true); call often (every 100 ms or sooner).
    pub fn poll(&mut self) -> bool {
        let now = Instant::now();
        if now < self.next || self.out.samples.len() >= super::MAX_POINTS {
            return false;
        }
        self.sample(now);
        // A late poll skips no interval's number, only its exact timing.
        self.next += self.interval;
        true
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// The latest sample.
    pub fn last(&self) -> Option<&Counters> {
        self.out.samples.last()
    }

    /// The dirty thresholds when sampling began.
    pub fn dirty(&self) -> Option<&DirtyLimits> {
        self.out.dirty.as_ref()
    }

    fn sample(&mut self, now: Instant) {
        let meminfo = self.root.read_string("proc/meminfo").ok();
        let mem = meminfo
            .as_deref()
            .map(|t| parse_meminfo_fields(t, &["Dirty", "Writeback"]))
            .unwrap_or_else(|| vec![None, None]);
        let dev = self.read_dev();
        let ms = now.duration_since(self.last_t).as_secs_f64() * 1000.0;
        let (dev_bytes, dev_ios, dev_queue) = match (self.last_dev, dev) {
            (Some(a), Some(b)) => (
                Some(b.sectors.saturating_sub(a.sectors) * 512),
                Some(b.ios.saturating_sub(a.ios)),
                Some(b.queue_ms.saturating_sub(a.queue_ms) as f64 / ms.max(1.0)),
            ),
            _ => (None, None, None),
        };
        self.last_dev = dev.or(self.last_dev);
        self.last_t = now;
        let khz = read_all_of(
            self.root,
            "sys/devices/system/cpu",
            "cpu",
            "cpufreq/scaling_cur_freq",
        );
        let temps = read_all_of(self.root, "sys/class/thermal", "thermal_zone", "temp");
        self.out.samples.push(Counters {
            dirty_bytes: mem[0],
            writeback_bytes: mem[1],
            dev_bytes,
            dev_ios,
            dev_queue,
            cpu_khz: parse_max_number(&khz).and_then(|v| u64::try_from(v).ok()),
            temp_mc: parse_max_number(&temps),
        });
        self.read_log(now);
    }

    fn read_log(&mut self, now: Instant) {
        let Some(f) = self.log.as_mut() else {
            return;
        };
        let mut read = Bounded::default();
        if f.drain(&mut read).is_err() {
            return;
        }
        let t_ms = now.duration_since(self.start).as_millis() as u64;
        for line in &read.lines {
            let Some(e) = KlogEvent::of(line) else {
                continue;
            };
            if STORAGE_CLASSES.contains(&e.class) && self.out.log_events.len() < MAX_LOG_EVENTS {
                self.out.log_events.push(LogEvent {
                    t_ms,
                    class: e.class,
                    device: e.device,
                    line: e.line,
                });
            }
        }
    }

    /// The samples still due, and everything gathered. The jobs may end
    /// between an interval's end and the poll that would sample it; that
    /// interval gets its sample now, and the short last one (the window closes
    /// a few ms past an interval's end) one more, so every point has counters.
    pub fn finish(mut self) -> Sampled {
        let now = Instant::now();
        while now >= self.next && self.out.samples.len() < super::MAX_POINTS {
            self.sample(now);
            self.next += self.interval;
        }
        self.sample(now);
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_fields_are_bytes_in_the_asked_order() {
        let text = "MemTotal:       24683520 kB\nDirty:            524288 kB\nWriteback:          1024 kB\nActive(file):    100 kB\n";
        assert_eq!(
            parse_meminfo_fields(
                text,
                &["Writeback", "Dirty", "Inactive(file)", "Active(file)"]
            ),
            vec![Some(1 << 20), Some(512 << 20), None, Some(102_400)]
        );
    }

    #[test]
    fn dirty_bytes_win_over_ratios_and_a_high_background_is_halved() {
        const G: u64 = 1 << 30;
        let d = parse_dirty_limits(0, 20, 0, 10, 20 * G);
        assert_eq!((d.limit_bytes, d.background_bytes), (4 * G, 2 * G));
        assert_eq!(d.limit_from, "vm.dirty_ratio 20 % of 20.0 GiB dirtyable");
        assert_eq!(d.freerun_bytes(), 3 * G);
        let d = parse_dirty_limits(512 << 20, 20, 0, 10, 20 * G);
        assert_eq!(d.limit_from, "vm.dirty_bytes");
        // 10 % of 20 GiB is above the 512 MiB limit: the kernel uses half the limit.
        assert_eq!(d.background_bytes, 256 << 20);
        let d = parse_dirty_limits(512 << 20, 20, 64 << 20, 10, 20 * G);
        assert_eq!(
            (d.background_bytes, d.background_from.as_str()),
            (64 << 20, "vm.dirty_background_bytes")
        );
    }

    #[test]
    fn a_device_stat_gives_completions_sectors_and_queue_time() {
        let text = "    1000      0   8000    500     2000      0  16000   1500        3     900     2100        0        0        0        0      10       40\n";
        assert_eq!(
            parse_dev_stat(text),
            Some(DevStat {
                ios: 3000,
                sectors: 24000,
                queue_ms: 2100
            })
        );
        assert_eq!(parse_dev_stat("1 2 3"), None);
        assert_eq!(parse_dev_stat("1 2 x 4 5 6 7 8 9 10 11"), None);
    }

    #[test]
    fn the_largest_readable_number_wins() {
        let t = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            parse_max_number(&t(&["1500000\n", "600000\n", "junk"])),
            Some(1_500_000)
        );
        assert_eq!(parse_max_number(&t(&[])), None);
    }

    #[test]
    fn a_fixture_tree_samples_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let w = |rel: &str, text: &str| {
            let p = d.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        w(
            "proc/meminfo",
            "MemTotal: 1000 kB\nMemFree: 100 kB\nDirty: 2 kB\nWriteback: 1 kB\n",
        );
        w("proc/sys/vm/dirty_bytes", "0\n");
        w("proc/sys/vm/dirty_ratio", "20\n");
        w("proc/sys/vm/dirty_background_bytes", "0\n");
        w("proc/sys/vm/dirty_background_ratio", "10\n");
        w("sys/class/block/sdb/stat", "1 0 8 0 1 0 8 0 0 1 1\n");
        w(
            "sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq",
            "600000\n",
        );
        w(
            "sys/devices/system/cpu/cpu1/cpufreq/scaling_cur_freq",
            "1200000\n",
        );
        w("sys/class/thermal/thermal_zone0/temp", "71000\n");
        let root = Root::tree(d).unwrap();
        let s = Sampler::start(
            &root,
            Some("sdb".into()),
            Duration::from_millis(100),
            Instant::now(),
        );
        let out = s.finish();
        assert_eq!(out.dirty.as_ref().unwrap().limit_bytes, 102_400 * 20 / 100);
        let c = &out.samples[0];
        assert_eq!((c.dirty_bytes, c.writeback_bytes), (Some(2048), Some(1024)));
        assert_eq!((c.dev_bytes, c.dev_ios), (Some(0), Some(0)));
        assert_eq!((c.cpu_khz, c.temp_mc), (Some(1_200_000), Some(71_000)));
    }
}
