//! Named sets of tests. `quick` and `nas` follow CrystalDiskMark's presets;
//! `cache` shows what the page cache does to a dd-style test; `durability`
//! measures flushes and the drive's write cache.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::workload::{Rw, Workload};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Suite {
    /// SEQ1M Q8T1 and RND4K Q32T1, read and write (under a minute)
    Quick,
    /// SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1, RND4K Q1T1, read and write
    Nas,
    /// Direct against buffered sequential read and write
    Cache,
    /// 4K random writes with fsync each; sequential writes with the drive's write cache on and off
    Durability,
}

impl Suite {
    pub fn name(self) -> &'static str {
        match self {
            Suite::Quick => "quick",
            Suite::Nas => "nas",
            Suite::Cache => "cache",
            Suite::Durability => "durability",
        }
    }
}

/// Something a test needs besides its workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    /// Run with the drive's volatile write cache turned off (and restored after).
    WriteCacheOff,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    pub name: String,
    pub workload: Workload,
    pub special: Option<Special>,
}

fn shape(base: &Workload, rw: Rw, bs: u32, iodepth: u32, direct: bool) -> Workload {
    Workload {
        rw,
        bs,
        iodepth,
        numjobs: 1,
        direct,
        // Writes end with a timed flush, as KDiskMark's end_fsync=1: data in a
        // volatile cache has not been written yet.
        end_fsync: rw.writes(),
        fsync: 0,
        fdatasync: 0,
        verify: base.verify && rw.writes() && !rw.reads(),
        ..base.clone()
    }
}

fn planned(w: Workload) -> Planned {
    Planned {
        name: w.label(),
        workload: w,
        special: None,
    }
}

/// The tests of a suite. `base` carries runtime, ramp time, direct and verify.
pub fn plan(suite: Suite, base: &Workload) -> Vec<Planned> {
    const M: u32 = 1 << 20;
    const K4: u32 = 4096;
    let d = base.direct;
    let pair = |rw_read: Rw, rw_write: Rw, bs: u32, q: u32| {
        [
            planned(shape(base, rw_read, bs, q, d)),
            planned(shape(base, rw_write, bs, q, d)),
        ]
    };
    match suite {
        Suite::Quick => [
            pair(Rw::Read, Rw::Write, M, 8),
            pair(Rw::Randread, Rw::Randwrite, K4, 32),
        ]
        .concat(),
        Suite::Nas => [
            pair(Rw::Read, Rw::Write, M, 8),
            pair(Rw::Read, Rw::Write, M, 1),
            pair(Rw::Randread, Rw::Randwrite, K4, 32),
            pair(Rw::Randread, Rw::Randwrite, K4, 1),
        ]
        .concat(),
        Suite::Cache => {
            let mut out = Vec::new();
            for rw in [Rw::Read, Rw::Write] {
                for direct in [true, false] {
                    let w = shape(base, rw, M, 1, direct);
                    let how = if direct { "direct" } else { "buffered" };
                    out.push(Planned {
                        name: format!("{} {how}", w.label()),
                        workload: w,
                        special: None,
                    });
                }
            }
            out
        }
        Suite::Durability => {
            let mut fsync_each = shape(base, Rw::Randwrite, K4, 1, d);
            fsync_each.fsync = 1;
            let seq = shape(base, Rw::Write, M, 1, d);
            vec![
                Planned {
                    name: format!("{} fsync each", fsync_each.label()),
                    workload: fsync_each,
                    special: None,
                },
                Planned {
                    name: format!("{} write cache as is", seq.label()),
                    workload: seq.clone(),
                    special: None,
                },
                Planned {
                    name: format!("{} write cache off", seq.label()),
                    workload: seq,
                    special: Some(Special::WriteCacheOff),
                },
            ]
        }
    }
}

/// Seconds each suite test runs unless `--runtime` says otherwise.
pub const DEFAULT_RUNTIME: Duration = Duration::from_secs(5);
pub const DEFAULT_RAMP: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Workload {
        Workload {
            rw: Rw::Read,
            rwmixread: 50,
            bs: 4096,
            iodepth: 1,
            numjobs: 1,
            direct: true,
            runtime: DEFAULT_RUNTIME,
            ramp_time: DEFAULT_RAMP,
            fsync: 0,
            fdatasync: 0,
            end_fsync: false,
            verify: false,
        }
    }

    #[test]
    fn nas_suite_is_crystaldiskmark_standard() {
        let names: Vec<String> = plan(Suite::Nas, &base())
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(
            names,
            [
                "SEQ1M Q8T1 read",
                "SEQ1M Q8T1 write",
                "SEQ1M Q1T1 read",
                "SEQ1M Q1T1 write",
                "RND4K Q32T1 read",
                "RND4K Q32T1 write",
                "RND4K Q1T1 read",
                "RND4K Q1T1 write",
            ]
        );
    }

    #[test]
    fn quick_fits_in_a_minute_and_writes_end_with_a_flush() {
        let p = plan(Suite::Quick, &base());
        let secs: u64 = p
            .iter()
            .map(|t| (t.workload.runtime + t.workload.ramp_time).as_secs())
            .sum();
        assert!(secs <= 60, "{secs}");
        assert!(
            p.iter()
                .all(|t| t.workload.end_fsync == t.workload.rw.writes())
        );
    }

    #[test]
    fn cache_and_durability_shapes() {
        let c = plan(Suite::Cache, &base());
        assert_eq!(c.iter().filter(|t| t.workload.direct).count(), 2);
        assert_eq!(c.len(), 4);
        let d = plan(Suite::Durability, &base());
        assert_eq!(d[0].workload.fsync, 1);
        assert_eq!(d[0].workload.rw, Rw::Randwrite);
        assert_eq!(d[2].special, Some(Special::WriteCacheOff));
    }
}
