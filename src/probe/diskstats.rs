//! /proc/diskstats: what each block device has done since boot. The one parser
//! of the file; `bench disk` diffs it around a measurement (per layer of the
//! device stack, in bench::diskstats) and `watch` samples it.

use std::collections::BTreeMap;

use crate::root::{ReadError, Root};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DevCounters {
    pub reads: u64,
    pub read_sectors: u64,
    pub writes: u64,
    pub write_sectors: u64,
    pub flushes: u64,
    /// Milliseconds spent on reads and writes (fields 7 and 11), and with any
    /// I/O in flight (field 13, `io_ticks`): latency and utilisation for `watch`.
    pub read_ms: u64,
    pub write_ms: u64,
    pub io_ticks_ms: u64,
    /// The device number, which stays while the name could be reused.
    pub major: u32,
    pub minor: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum DiskstatsError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("malformed /proc/diskstats line '{0}'")]
    BadLine(String),
}

/// Parses /proc/diskstats into counters by device name.
pub fn parse_diskstats(text: &str) -> Result<BTreeMap<String, DevCounters>, DiskstatsError> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| -> Result<u64, DiskstatsError> {
            f.get(i)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| DiskstatsError::BadLine(line.to_string()))
        };
        let name = f
            .get(2)
            .ok_or_else(|| DiskstatsError::BadLine(line.to_string()))?;
        out.insert(
            name.to_string(),
            DevCounters {
                reads: num(3)?,
                read_sectors: num(5)?,
                writes: num(7)?,
                write_sectors: num(9)?,
                // Kernel 5.5+ appends flush counts (field 19); older kernels lack them.
                flushes: if f.len() >= 20 { num(18)? } else { 0 },
                read_ms: num(6)?,
                write_ms: num(10)?,
                io_ticks_ms: num(12)?,
                major: u32::try_from(num(0)?)
                    .map_err(|_| DiskstatsError::BadLine(line.to_string()))?,
                minor: u32::try_from(num(1)?)
                    .map_err(|_| DiskstatsError::BadLine(line.to_string()))?,
            },
        );
    }
    Ok(out)
}

pub fn read_diskstats(root: &Root) -> Result<BTreeMap<String, DevCounters>, DiskstatsError> {
    parse_diskstats(&root.read_string("proc/diskstats")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATS: &str = "   7       0 loop0 120 0 2048 10 30 0 4096 20 0 40 30 0 0 0 0 2 1\n\
   8       0 sda 5 1 80 3 6 2 96 7 0 9 10\n\
   8       1 sda1 4 0 64 2 5 0 88 6 0 8 9\n";

    #[test]
    fn parses_old_and_new_formats() {
        let s = parse_diskstats(STATS).unwrap();
        assert_eq!(s["loop0"].read_sectors, 2048);
        assert_eq!(s["loop0"].write_sectors, 4096);
        assert_eq!(s["loop0"].flushes, 2);
        assert_eq!(s["sda"].writes, 6);
        assert_eq!(s["sda"].flushes, 0);
        assert!(matches!(
            parse_diskstats("8 0 sda x"),
            Err(DiskstatsError::BadLine(_))
        ));
    }
}
