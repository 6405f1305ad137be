//! The kernel log since boot: read from /dev/kmsg without blocking and within a
//! bound, each line classified ([`classify`]). A capture stores what was read as
//! `.nastune/kmsg` in dmesg's `[seconds] message` format, and `--root` reads
//! that back.

pub mod classify;
pub mod format;
pub mod prefix;

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

pub use classify::{Class, classify};

use super::{Outcome, ParseError};
use crate::root::Root;

/// Lines kept at most; the oldest go first. 20000 lines cover days of a quiet box.
pub const MAX_LINES: usize = 20_000;
/// Bytes of message text kept at most (128 MiB boxes).
pub const MAX_BYTES: usize = 2 * 1024 * 1024;
/// Latest examples kept per class.
pub const EXAMPLES_PER_CLASS: usize = 3;

/// One line of the kernel log.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// The record's sequence number (live /dev/kmsg only).
    pub seq: Option<u64>,
    pub time_us: u64,
    pub message: String,
}

/// A classified line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub class: Class,
    pub device: Option<String>,
    /// Seconds since boot.
    pub time_s: f64,
    pub line: String,
}

impl Event {
    pub fn of(line: &Line) -> Option<Event> {
        let (class, device) = classify(&line.message)?;
        Some(Event {
            class,
            device,
            time_s: line.time_us as f64 / 1e6,
            line: line.message.clone(),
        })
    }
}

/// Events of one class on one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassCount {
    pub class: Class,
    pub device: Option<String>,
    pub count: u64,
    pub first_s: f64,
    pub last_s: f64,
}

/// The `kernel_log` probe section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelLog {
    pub lines_read: u64,
    /// Oldest lines dropped to stay within [`MAX_LINES`] / [`MAX_BYTES`].
    pub lines_dropped: u64,
    /// Records the kernel overwrote before they were read (EPIPE).
    pub records_lost: u64,
    pub counts: Vec<ClassCount>,
    /// The latest [`EXAMPLES_PER_CLASS`] events of each class, oldest first.
    pub examples: Vec<Event>,
}

impl KernelLog {
    /// Events of `class` per device.
    pub fn of_class(&self, class: Class) -> impl Iterator<Item = &ClassCount> {
        self.counts.iter().filter(move |c| c.class == class)
    }
}

/// Lines within the bounds, oldest dropped first.
#[derive(Debug, Default)]
pub struct Bounded {
    pub lines: VecDeque<Line>,
    bytes: usize,
    pub dropped: u64,
    pub lost: u64,
}

impl Bounded {
    pub fn push(&mut self, line: Line) {
        self.bytes += line.message.len();
        self.lines.push_back(line);
        while self.lines.len() > MAX_LINES || self.bytes > MAX_BYTES {
            let Some(old) = self.lines.pop_front() else {
                break;
            };
            self.bytes -= old.message.len();
            self.dropped += 1;
        }
    }
}

/// Counts and examples of the classified lines.
pub fn summarize(read: &Bounded) -> KernelLog {
    let mut counts: BTreeMap<(Class, Option<String>), ClassCount> = BTreeMap::new();
    let mut examples: BTreeMap<Class, VecDeque<Event>> = BTreeMap::new();
    for e in read.lines.iter().filter_map(Event::of) {
        counts
            .entry((e.class, e.device.clone()))
            .and_modify(|c| {
                c.count += 1;
                c.last_s = e.time_s;
            })
            .or_insert(ClassCount {
                class: e.class,
                device: e.device.clone(),
                count: 1,
                first_s: e.time_s,
                last_s: e.time_s,
            });
        let kept = examples.entry(e.class).or_default();
        if kept.len() == EXAMPLES_PER_CLASS {
            kept.pop_front();
        }
        kept.push_back(e);
    }
    KernelLog {
        lines_read: read.lines.len() as u64 + read.dropped,
        lines_dropped: read.dropped,
        records_lost: read.lost,
        counts: counts.into_values().collect(),
        examples: examples.into_values().flatten().collect(),
    }
}

/// Parses one /dev/kmsg record: `prio,seq,usec,flags[,...];message` followed by
/// continuation lines (` KEY=value`) that are dropped.
pub fn parse_record(record: &str) -> Result<Line, ParseError> {
    let what = "/dev/kmsg record";
    let (head, rest) = record
        .split_once(';')
        .ok_or_else(|| ParseError::value(what, record))?;
    let message = rest.split('\n').next().unwrap_or("").to_string();
    let mut fields = head.split(',');
    let mut number = |name: &str| -> Result<u64, ParseError> {
        let f = fields
            .next()
            .ok_or_else(|| ParseError::missing(what, name))?;
        f.trim().parse().map_err(|_| ParseError::value(what, head))
    };
    let _prio = number("prio")?;
    let seq = number("seq")?;
    let time_us = number("usec")?;
    Ok(Line {
        seq: Some(seq),
        time_us,
        message,
    })
}

/// Parses dmesg's `[    2.404694] message` lines. A line without a timestamp
/// (a continuation) keeps the time of the line before.
pub fn parse_dmesg(text: &str) -> Bounded {
    let mut out = Bounded::default();
    let mut last_us = 0;
    for raw in text.lines().filter(|l| !l.trim().is_empty()) {
        let parsed = raw.trim_start().strip_prefix('[').and_then(|r| {
            let (t, msg) = r.split_once(']')?;
            let us = seconds_to_us(t.trim())?;
            Some((us, msg.strip_prefix(' ').unwrap_or(msg)))
        });
        let (time_us, message) = parsed.unwrap_or((last_us, raw));
        last_us = time_us;
        out.push(Line {
            seq: None,
            time_us,
            message: message.to_string(),
        });
    }
    out
}

fn seconds_to_us(t: &str) -> Option<u64> {
    let (s, frac) = t.split_once('.').unwrap_or((t, "0"));
    let s: u64 = s.parse().ok()?;
    let digits: String = frac.chars().take(6).collect();
    let frac: u64 = format!("{digits:0<6}").parse().ok()?;
    Some(s * 1_000_000 + frac)
}

/// dmesg's format, as a capture stores it.
pub fn to_dmesg<'a>(lines: impl Iterator<Item = &'a Line>) -> String {
    let mut out = String::new();
    for l in lines {
        out.push_str(&format!(
            "[{:5}.{:06}] {}\n",
            l.time_us / 1_000_000,
            l.time_us % 1_000_000,
            l.message
        ));
    }
    out
}

/// What a live read drops or loses, kept beside `.nastune/kmsg` so a capture
/// reads back to the same section.
#[derive(Debug, Default, Serialize, Deserialize)]
struct ReadLosses {
    lines_dropped: u64,
    records_lost: u64,
}

/// The `kernel_log` section.
pub fn read_kernel_log(root: &Root) -> Outcome<KernelLog> {
    let mut losses = ReadLosses::default();
    let text = root.captured_text("kmsg", || {
        let read = kmsg::read_all()?;
        losses = ReadLosses {
            lines_dropped: read.dropped,
            records_lost: read.lost,
        };
        Ok(to_dmesg(read.lines.iter()))
    });
    let text = match text {
        Ok(t) => t,
        Err(reason) => return Outcome::Unsupported { reason },
    };
    let mut read = parse_dmesg(&text);
    let stored = root.captured("kmsg-losses", || Ok(std::mem::take(&mut losses)));
    let stored = stored.unwrap_or_default();
    read.dropped += stored.lines_dropped;
    read.lost += stored.records_lost;
    Outcome::Ok {
        data: summarize(&read),
    }
}

/// Reading /dev/kmsg itself.
pub mod kmsg {
    use std::fs::File;
    use std::io::{self, Read};
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;

    use super::{Bounded, parse_record};

    /// A record is at most about 8 KiB (message plus dictionary); a smaller
    /// buffer makes read() fail with EINVAL.
    const RECORD_BUF: usize = 16 * 1024;

    /// An open /dev/kmsg: each `drain` returns the records written since the last.
    pub struct Follower {
        file: File,
    }

    impl Follower {
        /// Opens /dev/kmsg at its first record (or after the last `dmesg -C`).
        pub fn open() -> Result<Self, String> {
            let file = File::options()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open("/dev/kmsg")
                .map_err(|e| reason(&e))?;
            // SEEK_DATA: the first record after the last clear, as dmesg shows.
            // SAFETY: lseek on a descriptor we own.
            unsafe { libc::lseek(file.as_raw_fd(), 0, libc::SEEK_DATA) };
            Ok(Follower { file })
        }

        /// Reads until the kernel has nothing more (EAGAIN). Records overwritten
        /// before they were read (EPIPE) are counted and skipped.
        pub fn drain(&mut self, out: &mut Bounded) -> Result<(), String> {
            let mut buf = vec![0u8; RECORD_BUF];
            loop {
                match self.file.read(&mut buf) {
                    Ok(0) => return Ok(()),
                    Ok(n) => {
                        let text = String::from_utf8_lossy(&buf[..n]);
                        if let Ok(line) = parse_record(&text) {
                            out.push(line);
                        }
                    }
                    Err(e) => match e.raw_os_error() {
                        Some(libc::EAGAIN) => return Ok(()),
                        Some(libc::EPIPE) => out.lost += 1,
                        Some(libc::EINTR) => {}
                        _ => return Err(reason(&e)),
                    },
                }
            }
        }
    }

    /// Every record since boot, within the bounds.
    pub fn read_all() -> Result<Bounded, String> {
        let mut out = Bounded::default();
        Follower::open()?.drain(&mut out)?;
        Ok(out)
    }

    fn reason(e: &io::Error) -> String {
        match e.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => {
                format!("cannot read '/dev/kmsg': {e}; run as root (kernel.dmesg_restrict is set)")
            }
            _ => format!("cannot read '/dev/kmsg': {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kmsg_records_with_continuation_lines() {
        let r = "6,339,5140900,-;NET: Registered protocol family 10\n SUBSYSTEM=net\n DEVICE=n1\n";
        let l = parse_record(r).unwrap();
        assert_eq!(l.seq, Some(339));
        assert_eq!(l.time_us, 5_140_900);
        assert_eq!(l.message, "NET: Registered protocol family 10");
        let r = "3,1234,98765432,c,caller=T12;blk_update_request: I/O error, dev sda, sector 8\n";
        let l = parse_record(r).unwrap();
        assert_eq!(l.seq, Some(1234));
        assert_eq!(
            l.message,
            "blk_update_request: I/O error, dev sda, sector 8"
        );
        assert!(parse_record("no separator").is_err());
        assert!(parse_record("x,1,2,-;m").is_err());
    }

    #[test]
    fn dmesg_text_round_trips() {
        let text = "[    2.404694] usb 1-1: new high-speed USB device number 2 using xhci_hcd\n\
                    [ 3741.927786] Under-voltage detected! (0x00050005)\n";
        let read = parse_dmesg(text);
        assert_eq!(read.lines.len(), 2);
        assert_eq!(read.lines[1].time_us, 3_741_927_786);
        assert_eq!(to_dmesg(read.lines.iter()), text);
    }

    #[test]
    fn bounds_drop_the_oldest_and_count_them() {
        let mut b = Bounded::default();
        for i in 0..(MAX_LINES + 5) {
            b.push(Line {
                seq: Some(i as u64),
                time_us: i as u64,
                message: "x".into(),
            });
        }
        assert_eq!(b.lines.len(), MAX_LINES);
        assert_eq!(b.dropped, 5);
        assert_eq!(b.lines[0].seq, Some(5));
        let mut b = Bounded::default();
        for _ in 0..3 {
            b.push(Line {
                seq: None,
                time_us: 0,
                message: "y".repeat(MAX_BYTES / 2),
            });
        }
        assert_eq!(b.lines.len(), 2);
        assert_eq!(b.dropped, 1);
    }

    #[test]
    fn summary_counts_by_class_and_device_and_keeps_latest_examples() {
        let mut text = String::new();
        for i in 0..5 {
            text.push_str(&format!("[{i:5}.000000] ata1: hard resetting link\n"));
        }
        text.push_str("[   10.500000] blk_update_request: I/O error, dev sdb, sector 8\n");
        text.push_str("[   11.000000] EXT4-fs (sda1): mounted filesystem with ordered data mode\n");
        let log = summarize(&parse_dmesg(&text));
        assert_eq!(log.lines_read, 7);
        assert_eq!(log.counts.len(), 2);
        let ata = &log.counts[0];
        assert_eq!(
            (ata.class, ata.device.as_deref(), ata.count),
            (Class::AtaLinkReset, Some("ata1"), 5)
        );
        assert_eq!((ata.first_s, ata.last_s), (0.0, 4.0));
        let examples: Vec<f64> = log
            .examples
            .iter()
            .filter(|e| e.class == Class::AtaLinkReset)
            .map(|e| e.time_s)
            .collect();
        assert_eq!(examples, vec![2.0, 3.0, 4.0]);
        assert!(
            log.examples
                .iter()
                .any(|e| e.class == Class::IoError && e.time_s == 10.5)
        );
    }
}
