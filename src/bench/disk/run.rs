//! Runs one test: settle, start the jobs together, sample CPU and diskstats at
//! the edges of the measured window, merge the jobs, repeat for `--loops`.

use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use super::buffers::Buffers;
use super::engine::{self, EngineKind};
use super::job::{self, DirCounts, JobPlan, JobResult};
use super::target::Target;
use super::verify::{self, VerifyResult, WrittenBlocks};
use super::{
    DirResult, LatencyStats, PassSummary, Spread, SyncResult, TestResult, TestStatus, Workload,
};
use crate::bench::cpu::{self, CpuUsage};
use crate::bench::diskstats::{self, Layer, LayerIo};
use crate::bench::interrupt;
use crate::bench::validity::{self, Guard, GuardPlan};
use crate::probe::diskstats::read_diskstats;
use crate::root::Root;
use crate::timeline::cause::DIRTY_REACHED;
use crate::timeline::{self, Sampler, Timeline};

/// What a test runs on.
pub struct Bench<'a> {
    pub root: &'a Root,
    pub target: &'a Target,
    pub engine: EngineKind,
    pub layers: &'a [Layer],
    /// Pause after `sync` before each pass, so the last test's writeback does not leak in.
    pub settle: Duration,
    /// Several targets measured at once meet here after settling, so their
    /// jobs start together.
    pub start: Option<&'a StartGate>,
    /// Per-interval throughput and counters (`--interval`); `None` keeps one
    /// figure per test.
    pub interval: Option<Duration>,
    /// `--until-steady`: stop a pass once its rate has settled (with `interval`).
    pub until_steady: bool,
}

/// Where several targets' passes wait for each other. Unlike a `Barrier` it
/// lets everyone go on Ctrl-C, so a target that stopped early never strands
/// the others.
pub struct StartGate {
    arrived: AtomicUsize,
    parties: usize,
}

impl StartGate {
    pub fn new(parties: usize) -> Self {
        StartGate {
            arrived: AtomicUsize::new(0),
            parties,
        }
    }

    fn wait(&self) {
        self.arrived.fetch_add(1, Ordering::SeqCst);
        while self.arrived.load(Ordering::SeqCst) < self.parties && !interrupt::interrupted() {
            thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Progress of the running test: 0.0 to 1.0 of its planned time.
pub type Progress<'p> = &'p mut dyn FnMut(&str, f64);

struct Pass {
    jobs: JobResult,
    elapsed: Duration,
    cpu: CpuUsage,
    devices: Vec<LayerIo>,
    verify: Option<VerifyResult>,
    timeline: Option<Timeline>,
}

fn settle(b: &Bench<'_>) {
    // SAFETY: sync(2) has no preconditions.
    unsafe { libc::sync() };
    b.target.invalidate_cache();
    thread::sleep(b.settle);
}

fn merge_dir(into: &mut DirCounts, from: &DirCounts) {
    into.clat_ns.merge(&from.clat_ns);
    into.bytes += from.bytes;
    into.ios += from.ios;
    into.short_ios += from.short_ios;
}

fn merge_jobs(into: &mut JobResult, from: &JobResult) {
    merge_dir(&mut into.read, &from.read);
    merge_dir(&mut into.write, &from.write);
    into.sync_ns.merge(&from.sync_ns);
    into.window = into.window.max(from.window);
    into.warmup_bytes += from.warmup_bytes;
    match (&mut into.buckets, &from.buckets) {
        (Some(a), Some(b)) => a.merge(b),
        (None, Some(b)) => into.buckets = Some(b.clone()),
        _ => {}
    }
    match (&mut into.written, &from.written) {
        (Some(a), Some(b)) => a.merge(b),
        (None, Some(b)) => into.written = Some(b.clone()),
        _ => {}
    }
}

fn sum_layers(into: &mut Vec<LayerIo>, from: &[LayerIo]) {
    for l in from {
        match into.iter_mut().find(|x| x.name == l.name) {
            Some(x) => {
                x.reads += l.reads;
                x.read_bytes += l.read_bytes;
                x.writes += l.writes;
                x.write_bytes += l.write_bytes;
                x.flushes += l.flushes;
            }
            None => into.push(l.clone()),
        }
    }
}

fn run_pass(
    b: &Bench<'_>,
    name: &str,
    w: &Workload,
    pass: u32,
    progress: Progress<'_>,
) -> Result<Pass, String> {
    settle(b);
    if let Some(start) = b.start {
        start.wait();
    }
    let stop = AtomicBool::new(false);
    let done = AtomicU32::new(0);
    let barrier = Barrier::new(w.numjobs as usize + 1);
    let planned = (w.ramp_time + w.runtime).as_secs_f64().max(0.001);
    let read_stats = || read_diskstats(b.root).ok();

    thread::scope(|s| {
        let handles: Vec<_> = (0..w.numjobs)
            .map(|j| {
                let (stop, barrier, done) = (&stop, &barrier, &done);
                s.spawn(move || {
                    let setup = (|| {
                        let file = b.target.open_for_io(w.direct, w.rw.writes()).map_err(|e| {
                            format!("cannot open '{}': {e}", b.target.path.display())
                        })?;
                        let bufs = Buffers::new(
                            w.iodepth as usize,
                            w.bs as usize,
                            b.target.memory_align_bytes as usize,
                            0x9e37_79b9 ^ u64::from(j) << 32 ^ u64::from(pass),
                        )
                        .map_err(|e| e.to_string())?;
                        engine::open(b.engine, file, bufs).map_err(|e| {
                            format!("cannot set up the {} engine: {e}", b.engine.name())
                        })
                    })();
                    // Everyone meets at the barrier, even a job that failed to set up.
                    barrier.wait();
                    let mut eng = setup?;
                    let start = Instant::now();
                    let plan = JobPlan {
                        workload: w,
                        index: j,
                        size: b.target.size_bytes,
                        ramp_end: start + w.ramp_time,
                        end: start + w.ramp_time + w.runtime,
                        stop,
                        seed: 0x2545_f491 ^ u64::from(j) << 40 ^ u64::from(pass) << 8 ^ 1,
                        interval: b.interval,
                        done: b.until_steady.then_some(done),
                    };
                    let r = job::run(eng.as_mut(), &plan).map_err(|e| e.to_string());
                    if r.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    // The engine goes back to the caller, which drops it after the
                    // window closes: tearing down an io_uring is kernel work
                    // (iou_exit) that is not part of the I/O being measured.
                    r.map(|r| (r, eng))
                })
            })
            .collect();

        // Without warm-up, sample before the jobs start so no I/O escapes the window.
        let mut before = w
            .ramp_time
            .is_zero()
            .then(|| (cpu::sample_start(b.root), read_stats(), Instant::now()));
        barrier.wait();
        let start = Instant::now();
        while before.is_none() {
            let t = start.elapsed();
            if t >= w.ramp_time
                || interrupt::interrupted()
                || handles.iter().all(|h| h.is_finished())
            {
                before = Some((cpu::sample_start(b.root), read_stats(), Instant::now()));
            } else {
                progress(name, t.as_secs_f64() / planned);
                thread::sleep(Duration::from_millis(50).min(w.ramp_time - t));
            }
        }
        // The counters beside the series: sampled at each interval's end,
        // from where the jobs' measured window begins.
        let mut sampler = b
            .interval
            .map(|i| Sampler::start(b.root, b.target.device.clone(), i, start + w.ramp_time));
        let mut steady = b.until_steady.then(|| Steady::new(w));
        while !handles.iter().all(|h| h.is_finished()) {
            progress(name, (start.elapsed().as_secs_f64() / planned).min(1.0));
            let tick = Duration::from_millis(100);
            match sampler.as_mut() {
                Some(s) => {
                    if s.poll()
                        && let Some(st) = steady.as_mut()
                        && st.settled(s, done.load(Ordering::Relaxed))
                    {
                        stop.store(true, Ordering::Relaxed);
                    }
                    thread::sleep(tick.min(s.until_next()).max(Duration::from_millis(1)));
                }
                None => thread::sleep(tick),
            }
        }
        let sampled = sampler.map(Sampler::finish);
        let mut merged = JobResult::default();
        let mut first_err = None;
        let mut engines = Vec::new();
        for h in handles {
            match h.join() {
                Ok(Ok((r, eng))) => {
                    merge_jobs(&mut merged, &r);
                    engines.push(eng);
                }
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert("a job thread panicked".to_string());
                }
            }
        }
        let end = Instant::now();
        let (cpu_before, stats_before, t0) = before.ok_or("no start sample")?;
        let stats_after = read_stats();
        let cpu_after = cpu::sample_end(b.root);
        drop(engines);
        progress(name, 1.0);
        if let Some(e) = first_err {
            return Err(e);
        }
        let devices = match (stats_before, stats_after) {
            (Some(x), Some(y)) => diskstats::layer_io(b.layers, &x, &y),
            _ => Vec::new(),
        };
        let verify = match &merged.written {
            Some(written) if !interrupt::interrupted() => Some(verify_pass(b, w, written)?),
            _ => None,
        };
        // The jobs' own window: `end` comes up to one progress tick late.
        let elapsed = if merged.window.is_zero() {
            end - t0
        } else {
            merged.window
        };
        let timeline = match (b.interval, &merged.buckets, sampled) {
            (Some(i), Some(buckets), Some(sampled)) => {
                let points = buckets.points(elapsed, &sampled.samples);
                let ctx = timeline::Context {
                    buffered_writes: !w.direct && w.rw.writes(),
                };
                let mut t = Timeline::judge(i, points, sampled, ctx);
                t.steady_ms = steady.and_then(|s| s.at_ms);
                Some(t)
            }
            _ => None,
        };
        Ok(Pass {
            timeline,
            elapsed,
            cpu: cpu::usage(&cpu_before, &cpu_after),
            devices,
            verify,
            jobs: merged,
        })
    })
}

fn verify_pass(
    b: &Bench<'_>,
    w: &Workload,
    written: &WrittenBlocks,
) -> Result<VerifyResult, String> {
    let file = b
        .target
        .open_for_io(w.direct, false)
        .map_err(|e| format!("verify: cannot open '{}': {e}", b.target.path.display()))?;
    verify::verify(
        &file,
        written,
        w.bs as usize,
        b.target.memory_align_bytes as usize,
    )
    .map_err(|e| format!("verify: reading back failed: {e}"))
}

fn dir_result(d: &DirCounts, elapsed: Duration) -> Option<DirResult> {
    if d.ios == 0 {
        return None;
    }
    let secs = elapsed.as_secs_f64().max(1e-9);
    Some(DirResult {
        io_bytes: d.bytes,
        total_ios: d.ios,
        short_ios: d.short_ios,
        bw_bytes: d.bytes as f64 / secs,
        iops: d.ios as f64 / secs,
        runtime_ms: elapsed.as_millis() as u64,
        clat_ns: LatencyStats::from_histogram(&d.clat_ns),
    })
}

fn spread(passes: &[PassSummary]) -> Option<Spread> {
    if passes.len() < 2 {
        return None;
    }
    let bws: Vec<f64> = passes.iter().map(|p| p.bw_bytes).collect();
    let n = bws.len() as f64;
    let mean = bws.iter().sum::<f64>() / n;
    let var = bws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some(Spread {
        passes: passes.to_vec(),
        bw_min: bws.iter().copied().fold(f64::INFINITY, f64::min),
        bw_max: bws.iter().copied().fold(0.0, f64::max),
        bw_mean: mean,
        bw_stddev_pct: if mean > 0.0 {
            var.sqrt() * 100.0 / mean
        } else {
            0.0
        },
    })
}

/// The live rate of a pass for `--until-steady`, one point per sample.
struct Steady {
    bs: u64,
    buffered_writes: bool,
    last_ios: u32,
    rates: Vec<f64>,
    past_cache: bool,
    /// When the pass was found settled, ms into the window.
    at_ms: Option<u64>,
}

impl Steady {
    fn new(w: &Workload) -> Self {
        let buffered_writes = !w.direct && w.rw.writes();
        Steady {
            bs: u64::from(w.bs),
            buffered_writes,
            last_ios: 0,
            rates: Vec::new(),
            past_cache: !buffered_writes,
            at_ms: None,
        }
    }

    /// Takes the sample `s` just took and the jobs' I/O count; true once settled.
    fn settled(&mut self, s: &Sampler<'_>, ios: u32) -> bool {
        let n = ios.wrapping_sub(self.last_ios);
        self.last_ios = ios;
        let secs = s.interval().as_secs_f64();
        self.rates.push(f64::from(n) * self.bs as f64 / secs);
        if self.buffered_writes
            && let (Some(c), Some(d)) = (s.last(), s.dirty())
        {
            let dirty = c.dirty_bytes.unwrap_or(0) + c.writeback_bytes.unwrap_or(0);
            self.past_cache |= dirty as f64 >= d.background_bytes as f64 * DIRTY_REACHED;
        }
        let done = timeline::steady::is_steady(&self.rates, s.interval(), self.past_cache);
        if done && self.at_ms.is_none() {
            self.at_ms = Some((self.rates.len() as f64 * secs * 1000.0) as u64);
        }
        done
    }
}

/// Said when the engine cannot keep several I/Os in flight but more were asked
/// for; an engine doing no I/O measures only itself, so its depth means nothing.
fn depth_note(engine: &engine::Registered, iodepth: u32) -> Option<String> {
    (engine.caps.does_io && !engine.caps.queues && iodepth > 1).then(|| {
        format!(
            "{} runs one I/O at a time: --iodepth {iodepth} had no effect",
            engine.name
        )
    })
}

/// Runs `loops` passes of a workload and summarises them.
pub fn run_test(
    b: &Bench<'_>,
    name: &str,
    w: &Workload,
    loops: u32,
    settle_s: f64,
    progress: Progress<'_>,
) -> TestResult {
    let guard = Guard::start(
        b.root,
        GuardPlan {
            settle_s,
            devices: b.target.device.iter().cloned().collect(),
            io: true,
            ..GuardPlan::default()
        },
    );
    let mut total = JobResult::default();
    let mut elapsed = Duration::ZERO;
    let mut devices: Vec<LayerIo> = Vec::new();
    let mut summaries = Vec::new();
    let (mut user_ns, mut sys_ns, mut busy_ns) = (0u64, 0u64, 0u64);
    let mut last_cpu: Option<CpuUsage> = None;
    let mut verify: Option<VerifyResult> = None;
    let mut passes = 0;
    let mut first_timeline: Option<Timeline> = None;
    for pass in 0..loops.max(1) {
        if interrupt::interrupted() {
            break;
        }
        let label = if loops > 1 {
            format!("{name} ({}/{loops})", pass + 1)
        } else {
            name.to_string()
        };
        let p = match run_pass(b, &label, w, pass, progress) {
            Ok(p) => p,
            Err(e) => {
                drop(guard);
                return TestResult::not_run(name.to_string(), w.clone(), TestStatus::Failed, e);
            }
        };
        passes += 1;
        let ios = p.jobs.read.ios + p.jobs.write.ios;
        let secs = p.elapsed.as_secs_f64().max(1e-9);
        summaries.push(PassSummary {
            bw_bytes: (p.jobs.read.bytes + p.jobs.write.bytes) as f64 / secs,
            iops: ios as f64 / secs,
        });
        merge_jobs(&mut total, &p.jobs);
        elapsed += p.elapsed;
        sum_layers(&mut devices, &p.devices);
        user_ns += p.cpu.process_user_ns;
        sys_ns += p.cpu.process_sys_ns;
        busy_ns += p.cpu.system.map_or(0, |s| s.busy_ns);
        if let Some(v) = p.verify {
            let acc = verify.get_or_insert_with(VerifyResult::default);
            acc.blocks_checked += v.blocks_checked;
            acc.mismatches += v.mismatches;
            if acc.first_mismatch.is_none() {
                acc.first_mismatch = v.first_mismatch;
            }
        }
        last_cpu = Some(p.cpu);
        // The first pass's series: later passes start from the same settled
        // state, and one series per test keeps the document small.
        if first_timeline.is_none() {
            first_timeline = p.timeline;
        }
    }
    let moved = total.read.bytes + total.write.bytes;
    // The guard watched the device from before the first warm-up to after the
    // last read-back: all of that is ours, not only the measured windows.
    let verified = verify
        .as_ref()
        .map_or(0, |v| v.blocks_checked * u64::from(w.bs));
    let validity = guard.finish(
        b.root,
        validity::Outcome {
            own_device_bytes: w.direct.then_some(moved + total.warmup_bytes + verified),
            buffered_file_bytes: (!w.direct).then_some(b.target.size_bytes),
            measuring_thread: None,
        },
    );
    let ios = total.read.ios + total.write.ios;
    let secs = elapsed.as_secs_f64().max(1e-9);
    let per_io = |ns: u64| (ios > 0).then(|| ns as f64 / ios as f64);
    let mut notes = Vec::new();
    notes.extend(depth_note(engine::entry(b.engine), w.iodepth));
    if let Some(v) = &verify
        && v.mismatches > 0
    {
        notes.push(format!("verify found {} bad blocks", v.mismatches));
    }
    let ram = mem_total_bytes(b.root);
    let page_cache = served_by_page_cache(w.direct, b.target.size_bytes, ram);
    if page_cache {
        notes.push(format!(
            "buffered I/O on {} MiB with {} MiB of RAM: the page cache answered, not the disk \
             (use --direct, or a file larger than RAM)",
            b.target.size_bytes >> 20,
            ram.unwrap_or(0) >> 20
        ));
    }
    let status = if interrupt::interrupted() {
        TestStatus::Interrupted
    } else {
        TestStatus::Ok
    };
    let sync = (total.sync_ns.count() > 0).then(|| SyncResult {
        total_syncs: total.sync_ns.count(),
        lat_ns: LatencyStats::from_histogram(&total.sync_ns),
    });
    TestResult {
        name: name.to_string(),
        status,
        reason: None,
        workload: w.clone(),
        passes,
        read: dir_result(&total.read, elapsed),
        write: dir_result(&total.write, elapsed),
        sync,
        job_runtime_ms: elapsed.as_millis() as u64,
        usr_cpu: user_ns as f64 / 1e9 / secs * 100.0,
        sys_cpu: sys_ns as f64 / 1e9 / secs * 100.0,
        cpu_ns_per_io: per_io(user_ns + sys_ns),
        system_cpu_ns_per_io: last_cpu
            .as_ref()
            .and_then(|c| c.system.as_ref())
            .and_then(|_| per_io(busy_ns)),
        cpu: last_cpu,
        devices,
        spread: spread(&summaries),
        verify,
        notes,
        page_cache,
        validity: Some(validity),
        timeline: first_timeline,
    }
}

/// Whether buffered I/O on `size_bytes` of a target is served by the page
/// cache: the whole target fits in RAM, so after the first touch (or at once,
/// for writes that never wait for the disk) the kernel answers from memory.
fn served_by_page_cache(direct: bool, size_bytes: u64, mem_total_bytes: Option<u64>) -> bool {
    !direct && mem_total_bytes.is_some_and(|ram| size_bytes < ram)
}

fn mem_total_bytes(root: &crate::root::Root) -> Option<u64> {
    let text = root.read_string("proc/meminfo").ok()?;
    crate::probe::memory::parse_meminfo(&text)
        .ok()
        .map(|m| m.total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::histogram::Histogram;

    #[test]
    fn only_an_engine_without_a_queue_notes_an_ignored_depth() {
        use super::engine::EngineKind;
        let psync = engine::entry(EngineKind::Psync);
        assert_eq!(
            depth_note(psync, 32).as_deref(),
            Some("psync runs one I/O at a time: --iodepth 32 had no effect")
        );
        assert_eq!(depth_note(psync, 1), None);
        assert_eq!(depth_note(engine::entry(EngineKind::Null), 32), None);
        assert_eq!(depth_note(engine::entry(EngineKind::IoUring), 32), None);
    }

    #[test]
    fn only_buffered_io_on_a_target_smaller_than_ram_is_the_page_cache() {
        const G: u64 = 1 << 30;
        assert!(served_by_page_cache(false, 32 << 20, Some(G)));
        assert!(!served_by_page_cache(true, 32 << 20, Some(G)));
        assert!(!served_by_page_cache(false, 4 * G, Some(G)));
        // Unknown RAM: not claimed either way.
        assert!(!served_by_page_cache(false, 32 << 20, None));
    }

    #[test]
    fn spread_needs_two_passes() {
        let p = |bw| PassSummary {
            bw_bytes: bw,
            iops: 1.0,
        };
        assert!(spread(&[p(1.0)]).is_none());
        let s = spread(&[p(90.0), p(100.0), p(110.0)]).unwrap();
        assert_eq!((s.bw_min, s.bw_max, s.bw_mean), (90.0, 110.0, 100.0));
        assert!((s.bw_stddev_pct - 10.0).abs() < 1e-9);
    }

    #[test]
    fn direction_rates_use_the_window() {
        let mut d = DirCounts::default();
        assert!(dir_result(&d, Duration::from_secs(1)).is_none());
        let mut h = Histogram::new();
        h.record(1000);
        d.clat_ns = h;
        d.bytes = 8192;
        d.ios = 2;
        let r = dir_result(&d, Duration::from_secs(2)).unwrap();
        assert_eq!((r.bw_bytes, r.iops, r.runtime_ms), (4096.0, 1.0, 2000));
    }
}
