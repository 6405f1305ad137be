//! One job's I/O loop (fio's `numjobs` runs several in threads): keep
//! `iodepth` I/Os in flight, time each from queueing to reaping, count bytes per
//! direction, flush every N writes, stop at the deadline or on Ctrl-C. Warm-up
//! I/O before `ramp_end` runs but is not counted.
//!
//! Latency (`clat_ns`) takes one clock read per batch, not two per I/O: an I/O
//! starts when the loop turn that queues it begins, and ends when the batch
//! holding its completion has been reaped, so it includes the time its
//! completion waited for the reap (as fio's clat, which is also stamped when
//! fio reaps). The error is at most one loop turn (the queueing of one batch).

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::buffers::Rng;
use super::engine::{Completion, Dir, Engine, result_error};
use super::verify::{Stamp, WrittenBlocks};
use super::workload::Workload;
use crate::bench::histogram::Histogram;
use crate::timeline::Buckets;

#[derive(Debug, Clone, Default)]
pub struct DirCounts {
    pub clat_ns: Histogram,
    pub bytes: u64,
    pub ios: u64,
    pub short_ios: u64,
}

#[derive(Debug, Clone, Default)]
pub struct JobResult {
    pub read: DirCounts,
    pub write: DirCounts,
    /// fsync/fdatasync latencies (including `--end-fsync`).
    pub sync_ns: Histogram,
    pub written: Option<WrittenBlocks>,
    /// The measured window as the job saw it: from the end of the warm-up to
    /// its last completion (or final flush). Rates divide by this, as fio's
    /// per-job runtime, not by a window the caller closes later.
    pub window: Duration,
    /// Bytes moved during the warm-up: not counted above, yet the device saw
    /// them, so the validity guard must not take them for someone else's I/O.
    pub warmup_bytes: u64,
    /// Bytes and I/Os per interval of the measured window (`--interval`).
    pub buckets: Option<Buckets>,
}

#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("{dir} at offset {offset} failed: {cause}")]
    Io {
        dir: &'static str,
        offset: u64,
        cause: io::Error,
    },
    #[error("engine '{engine}' failed: {cause}")]
    Engine {
        engine: &'static str,
        cause: io::Error,
    },
    #[error("{what} failed: {cause}")]
    Sync {
        what: &'static str,
        cause: io::Error,
    },
}

/// Where and when a job runs.
pub struct JobPlan<'a> {
    pub workload: &'a Workload,
    pub index: u32,
    /// Bytes of the target the job may touch, from offset 0.
    pub size: u64,
    pub ramp_end: Instant,
    pub end: Instant,
    pub stop: &'a AtomicBool,
    pub seed: u64,
    /// Per-interval counts of the measured window, when asked for.
    pub interval: Option<Duration>,
    /// I/Os completed in the measured window, shared with the caller for a
    /// live rate (`--until-steady`); 32 bits wrapping: the caller takes
    /// differences over one interval, far below 2^32 I/Os.
    pub done: Option<&'a AtomicU32>,
}

struct Slot {
    dir: Dir,
    offset: u64,
    start: Instant,
}

/// In-flight bookkeeping and the counts, updated on every completion.
struct Tally<'a> {
    slots: Vec<Slot>,
    free: Vec<u32>,
    done: Vec<Completion>,
    inflight: usize,
    writes_since_sync: u32,
    measuring: bool,
    bs: u64,
    written: Option<WrittenBlocks>,
    res: JobResult,
    live: Option<&'a AtomicU32>,
}

impl Tally<'_> {
    /// Reaps at least `min` completions and accounts for them.
    fn reap(&mut self, engine: &mut dyn Engine, min: u32) -> Result<(), JobError> {
        let name = engine.name();
        engine
            .reap(min, &mut self.done)
            .map_err(|source| JobError::Engine {
                engine: name,
                cause: source,
            })?;
        let t = Instant::now();
        let mut done = std::mem::take(&mut self.done);
        for c in done.drain(..) {
            self.complete(c, t)?;
        }
        self.done = done;
        Ok(())
    }

    fn complete(&mut self, c: Completion, t: Instant) -> Result<(), JobError> {
        let s = &self.slots[c.slot as usize];
        self.inflight -= 1;
        self.free.push(c.slot);
        if let Some(source) = result_error(c.result) {
            let dir = if s.dir == Dir::Read { "read" } else { "write" };
            return Err(JobError::Io {
                dir,
                offset: s.offset,
                cause: source,
            });
        }
        if s.dir == Dir::Write {
            self.writes_since_sync += 1;
            if let Some(wb) = self.written.as_mut() {
                wb.mark(s.offset / self.bs);
            }
        }
        if !self.measuring {
            self.res.warmup_bytes += c.result as u64;
        } else {
            let d = if s.dir == Dir::Read {
                &mut self.res.read
            } else {
                &mut self.res.write
            };
            d.clat_ns
                .record(t.duration_since(s.start).as_nanos() as u64);
            d.bytes += c.result as u64;
            d.ios += 1;
            if let Some(b) = self.res.buckets.as_mut() {
                b.record(t, c.result as u64);
            }
            if let Some(n) = self.live {
                n.fetch_add(1, Ordering::Relaxed);
            }
            if (c.result as u64) < self.bs {
                d.short_ios += 1;
            }
        }
        Ok(())
    }
}

pub fn run(engine: &mut dyn Engine, plan: &JobPlan<'_>) -> Result<JobResult, JobError> {
    let w = plan.workload;
    let bs = u64::from(w.bs);
    let blocks = plan.size / bs;
    let depth = if engine.caps().queues { w.iodepth } else { 1 } as usize;
    let engine_name = engine.name();

    let mut rng = Rng::new(plan.seed);
    // Sequential jobs start at evenly spread places so they do not all read the same blocks.
    let mut next_block = blocks * u64::from(plan.index) / u64::from(w.numjobs.max(1));
    let read_share = u64::from(w.rw.read_share(w.rwmixread));
    let sync_every = if w.fsync > 0 { w.fsync } else { w.fdatasync };
    let data_only = w.fsync == 0;

    let stamps: Option<Vec<Stamp>> = w.verify.then(|| {
        (0..depth)
            .map(|s| Stamp::for_buffer(engine.buffers().slot(s)))
            .collect()
    });
    let mut window_start = Instant::now();
    let mut st = Tally {
        slots: (0..depth)
            .map(|_| Slot {
                dir: Dir::Read,
                offset: 0,
                start: plan.end,
            })
            .collect(),
        free: (0..depth as u32).rev().collect(),
        done: Vec::with_capacity(depth),
        inflight: 0,
        writes_since_sync: 0,
        measuring: Instant::now() >= plan.ramp_end,
        bs,
        written: w.verify.then(|| WrittenBlocks::new(blocks)),
        res: JobResult::default(),
        live: plan.done,
    };
    if st.measuring {
        st.res.buckets = plan.interval.map(|i| Buckets::new(window_start, i));
    }

    loop {
        let now = Instant::now();
        let stopping = now >= plan.end
            || plan.stop.load(Ordering::Relaxed)
            || crate::bench::interrupt::interrupted();
        if !st.measuring && now >= plan.ramp_end {
            st.measuring = true;
            window_start = now;
            st.res.buckets = plan.interval.map(|i| Buckets::new(now, i));
        }
        if !stopping {
            while let Some(slot) = st.free.pop() {
                let dir =
                    if read_share == 100 || (read_share > 0 && rng.next_u64() % 100 < read_share) {
                        Dir::Read
                    } else {
                        Dir::Write
                    };
                let block = if w.rw.random() {
                    rng.next_u64() % blocks
                } else {
                    let b = next_block % blocks;
                    next_block = b + 1;
                    b
                };
                let offset = block * bs;
                if let (Dir::Write, Some(stamps)) = (dir, &stamps) {
                    stamps[slot as usize].apply(engine.buffers().slot_mut(slot as usize), offset);
                }
                st.slots[slot as usize] = Slot {
                    dir,
                    offset,
                    start: now,
                };
                engine
                    .queue(slot, dir, offset)
                    .map_err(|source| JobError::Engine {
                        engine: engine_name,
                        cause: source,
                    })?;
                st.inflight += 1;
            }
        }
        if st.inflight == 0 {
            break;
        }
        st.reap(engine, 1)?;
        if sync_every > 0 && st.writes_since_sync >= sync_every {
            // Like fio, a flush covers the writes before it: let them finish first.
            while st.inflight > 0 {
                st.reap(engine, st.inflight as u32)?;
            }
            let t0 = Instant::now();
            let what = if data_only { "fdatasync" } else { "fsync" };
            engine.sync(data_only).map_err(|source| JobError::Sync {
                what,
                cause: source,
            })?;
            if st.measuring {
                st.res.sync_ns.record(t0.elapsed().as_nanos() as u64);
            }
            st.writes_since_sync = 0;
        }
    }
    // The final flush is part of the measured window, as fio's end_fsync.
    if w.end_fsync && w.rw.writes() && st.measuring {
        let t0 = Instant::now();
        engine.sync(false).map_err(|source| JobError::Sync {
            what: "end fsync",
            cause: source,
        })?;
        st.res.sync_ns.record(t0.elapsed().as_nanos() as u64);
    }
    st.res.written = st.written;
    if st.measuring {
        st.res.window = window_start.elapsed();
    }
    Ok(st.res)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::disk::buffers::Buffers;
    use crate::bench::disk::null::Null;
    use crate::bench::disk::workload::Rw;

    #[test]
    fn the_window_is_the_measured_time_without_the_warm_up() {
        let w = Workload {
            rw: Rw::Randread,
            rwmixread: 50,
            bs: 4096,
            iodepth: 4,
            numjobs: 1,
            direct: false,
            runtime: Duration::from_millis(200),
            ramp_time: Duration::from_millis(200),
            fsync: 0,
            fdatasync: 0,
            end_fsync: false,
            verify: false,
        };
        let mut engine = Null::new(Buffers::new(4, 4096, 4096, 1).unwrap());
        let stop = AtomicBool::new(false);
        let start = Instant::now();
        let plan = JobPlan {
            workload: &w,
            index: 0,
            size: 1 << 20,
            ramp_end: start + w.ramp_time,
            end: start + w.ramp_time + w.runtime,
            stop: &stop,
            seed: 3,
            interval: None,
            done: None,
        };
        let r = run(&mut engine, &plan).unwrap();
        let elapsed = start.elapsed();
        assert!(r.read.ios > 0);
        assert_eq!(r.read.clat_ns.count(), r.read.ios);
        // About the 200 ms runtime, never the warm-up's 200 ms too: the window
        // ends by the time run() returned and starts no earlier than the ramp's
        // end, however late a loaded machine let the thread finish.
        assert!(r.window >= Duration::from_millis(100), "{:?}", r.window);
        assert!(
            r.window <= elapsed.saturating_sub(w.ramp_time),
            "{:?} of {elapsed:?}",
            r.window
        );
    }
}
