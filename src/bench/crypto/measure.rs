//! Wall clock, process CPU and the measuring thread's own CPU for one measured
//! loop. Process CPU comes from getrusage(RUSAGE_SELF) (user + system, all
//! threads), so work the kernel does on our behalf counts and work a hardware
//! engine does does not: that is the point of CPU seconds per GiB.
//!
//! The thread's CPU (CLOCK_THREAD_CPUTIME_ID) and its run-queue wait
//! (/proc/thread-self/schedstat) are what make a figure survive a busy box: a
//! cipher run on the CPU costs the same CPU-seconds per byte whether the thread
//! got a whole core or a fifth of one, while bytes per wall-clock second fall
//! fivefold. The wait says how much of a core the thread got.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// User + system CPU seconds this process has used so far (0 if getrusage fails,
/// which it does not for RUSAGE_SELF with a valid pointer).
pub fn process_cpu_secs() -> f64 {
    // SAFETY: getrusage writes one `rusage` into the zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a live `rusage`.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// CPU seconds (user + system) the calling thread has used so far.
pub fn thread_cpu_secs() -> f64 {
    // Not a struct literal: 32-bit musl's timespec has private padding fields
    // (64-bit time_t), so only zeroed memory builds on every target.
    // SAFETY: zero is a valid timespec.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: clock_gettime writes one `timespec` we own; the clock id is a constant.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// The run-queue wait of `/proc/<pid>/task/<tid>/schedstat` ("run_ns wait_ns
/// timeslices", Documentation/scheduler/sched-stats.rst), in seconds: time the
/// thread was ready to run while another task had its CPU.
pub fn parse_schedstat_wait(text: &str) -> Option<f64> {
    let wait_ns: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(wait_ns as f64 / 1e9)
}

/// The calling thread's run-queue wait so far; `None` on kernels without
/// CONFIG_SCHED_INFO (or before 3.17, which lack /proc/thread-self).
pub fn thread_wait_secs() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    parse_schedstat_wait(&text)
}

/// What the measuring thread(s) got during a span: their CPU, and what they
/// wanted (CPU + run-queue wait, or the wall clock where the wait is unknown).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ThreadUse {
    pub cpu_secs: f64,
    pub wanted_secs: f64,
    /// Run-queue wait, when the kernel keeps it.
    pub wait_secs: Option<f64>,
}

impl ThreadUse {
    /// Several workers' use summed (a wait is known only if every worker's is).
    pub fn sum(all: impl IntoIterator<Item = ThreadUse>) -> ThreadUse {
        let mut out = ThreadUse {
            wait_secs: Some(0.0),
            ..ThreadUse::default()
        };
        for u in all {
            out.cpu_secs += u.cpu_secs;
            out.wanted_secs += u.wanted_secs;
            out.wait_secs = out.wait_secs.zip(u.wait_secs).map(|(a, b)| a + b);
        }
        out
    }

    /// Share of a core the thread got while it wanted one (1.0 on an idle box).
    pub fn share(&self) -> Option<f64> {
        (self.wanted_secs > 0.0).then(|| (self.cpu_secs / self.wanted_secs).min(1.0))
    }
}

/// Start of one thread's measured span: its CPU and run-queue wait. Each
/// worker thread keeps its own (the clocks are per thread).
pub struct ThreadClock {
    wall: Instant,
    cpu: f64,
    wait: Option<f64>,
}

impl ThreadClock {
    pub fn start() -> ThreadClock {
        ThreadClock {
            wait: thread_wait_secs(),
            cpu: thread_cpu_secs(),
            wall: Instant::now(),
        }
    }

    /// What this thread got since start; call it from the same thread.
    pub fn stop(&self) -> ThreadUse {
        let wall = self.wall.elapsed().as_secs_f64();
        let cpu = (thread_cpu_secs() - self.cpu).max(0.0);
        let wait = self
            .wait
            .zip(thread_wait_secs())
            .map(|(a, b)| (b - a).max(0.0));
        ThreadUse {
            cpu_secs: cpu,
            // A thread that sleeps (waiting for a hardware engine) does not
            // want the CPU then: only the run-queue wait counts against it.
            wanted_secs: wait.map_or(wall, |w| cpu + w),
            wait_secs: wait,
        }
    }
}

/// Start of a measured span: wall and CPU.
pub struct Clock {
    wall: Instant,
    cpu: f64,
}

impl Clock {
    pub fn start() -> Clock {
        Clock {
            wall: Instant::now(),
            cpu: process_cpu_secs(),
        }
    }

    pub fn elapsed(&self) -> Duration {
        self.wall.elapsed()
    }

    /// Wall and CPU seconds since start.
    pub fn stop(&self) -> (f64, f64) {
        let wall = self.wall.elapsed().as_secs_f64();
        let cpu = (process_cpu_secs() - self.cpu).max(0.0);
        (wall, cpu)
    }
}

/// Throughput of one direction at one request size.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Rate {
    pub bytes: u64,
    pub wall_secs: f64,
    pub cpu_secs: f64,
    pub bytes_per_sec: f64,
    /// Process CPU seconds spent per GiB processed.
    pub cpu_secs_per_gib: f64,
    /// CPU seconds of the measuring thread(s) alone, summed over workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_cpu_secs: Option<f64>,
    /// Bytes per CPU-second of the measuring thread(s): the speed of work
    /// whose cost is CPU, which other load on the box does not lower (it
    /// lowers `bytes_per_sec`). Per core for several workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_cpu_sec: Option<f64>,
    /// Share of a core the measuring thread(s) got while they wanted one:
    /// CPU / (CPU + run-queue wait), or CPU / wall where the kernel keeps no
    /// wait. Below 1 others took the CPU and `bytes_per_sec` is low by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_cpu_share: Option<f64>,
    /// Seconds the measuring thread(s) were runnable but not running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_queue_wait_secs: Option<f64>,
}

impl Rate {
    pub fn new(bytes: u64, wall_secs: f64, cpu_secs: f64) -> Rate {
        let per_sec = if wall_secs > 0.0 {
            bytes as f64 / wall_secs
        } else {
            0.0
        };
        let per_gib = if bytes > 0 {
            cpu_secs / (bytes as f64 / GIB)
        } else {
            0.0
        };
        Rate {
            bytes,
            wall_secs,
            cpu_secs,
            bytes_per_sec: per_sec,
            cpu_secs_per_gib: per_gib,
            thread_cpu_secs: None,
            bytes_per_cpu_sec: None,
            thread_cpu_share: None,
            run_queue_wait_secs: None,
        }
    }

    /// The rate with what the measuring thread(s) got.
    pub fn with_thread(mut self, used: ThreadUse) -> Rate {
        self.thread_cpu_secs = Some(used.cpu_secs);
        self.bytes_per_cpu_sec = (used.cpu_secs > 0.0).then(|| self.bytes as f64 / used.cpu_secs);
        self.thread_cpu_share = used.share();
        self.run_queue_wait_secs = used.wait_secs;
        self
    }

    /// The figure to state: bytes per CPU-second when the CPU does the work
    /// (`cpu_bound`) and it was measured, else bytes per wall-clock second (a
    /// hardware engine's speed is its own, not the CPU's).
    pub fn headline(&self, cpu_bound: bool) -> f64 {
        match self.bytes_per_cpu_sec {
            Some(v) if cpu_bound => v,
            _ => self.bytes_per_sec,
        }
    }

    /// What the measuring thread got, for the validity guard.
    pub fn thread_use(&self) -> Option<ThreadUse> {
        let cpu = self.thread_cpu_secs?;
        let share = self.thread_cpu_share?;
        Some(ThreadUse {
            cpu_secs: cpu,
            wanted_secs: if share > 0.0 {
                cpu / share
            } else {
                self.wall_secs
            },
            wait_secs: self.run_queue_wait_secs,
        })
    }
}

/// Operations between two looks at the clock: enough that reading the clock
/// costs nothing next to the work, few enough to stop near the deadline.
fn batch_for(request_bytes: usize) -> u32 {
    (64 * 1024 / request_bytes.max(1)).clamp(1, 256) as u32
}

/// Runs `op` (one request of `request_bytes`) after one warm-up call, for at
/// least `duration`, and returns the rate. The first error stops the loop.
pub fn run_for<E>(
    duration: Duration,
    request_bytes: usize,
    mut op: impl FnMut() -> Result<(), E>,
) -> Result<Rate, E> {
    op()?; // page in buffers, expand keys, instantiate kernel templates
    let batch = batch_for(request_bytes);
    let clock = Clock::start();
    let thread = ThreadClock::start();
    let mut ops: u64 = 0;
    loop {
        for _ in 0..batch {
            op()?;
        }
        ops += u64::from(batch);
        if clock.elapsed() >= duration {
            break;
        }
    }
    let used = thread.stop();
    let (wall, cpu) = clock.stop();
    Ok(Rate::new(ops * request_bytes as u64, wall, cpu).with_thread(used))
}

/// Like [`run_for`] with `workers` threads, each driving its own state made by
/// `make` (e.g. its own AF_ALG op socket), so that `workers` requests are in
/// flight at once. CPU is the whole process's.
pub fn run_parallel<S, E, M, F>(
    duration: Duration,
    request_bytes: usize,
    workers: u32,
    make: M,
    op: F,
) -> Result<Rate, E>
where
    S: Send,
    M: Fn() -> Result<S, E> + Sync,
    F: Fn(&mut S) -> Result<(), E> + Sync,
    E: Send,
{
    let batch = batch_for(request_bytes);
    let mut states = Vec::new();
    for _ in 0..workers {
        let mut s = make()?;
        op(&mut s)?; // warm-up before the clock starts
        states.push(s);
    }
    let clock = Clock::start();
    let results: Vec<Result<(u64, ThreadUse), E>> = std::thread::scope(|scope| {
        let handles: Vec<_> = states
            .iter_mut()
            .map(|s| {
                let op = &op;
                let clock = &clock;
                scope.spawn(move || -> Result<(u64, ThreadUse), E> {
                    let thread = ThreadClock::start();
                    let mut ops = 0u64;
                    loop {
                        for _ in 0..batch {
                            op(s)?;
                        }
                        ops += u64::from(batch);
                        if clock.elapsed() >= duration {
                            return Ok((ops, thread.stop()));
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    let (wall, cpu) = clock.stop();
    let mut ops = 0u64;
    let mut used = Vec::new();
    for r in results {
        let (n, u) = r?;
        ops += n;
        used.push(u);
    }
    Ok(Rate::new(ops * request_bytes as u64, wall, cpu).with_thread(ThreadUse::sum(used)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_arithmetic() {
        let r = Rate::new(1 << 30, 2.0, 0.5);
        assert_eq!(r.bytes_per_sec, (1u64 << 29) as f64);
        assert_eq!(r.cpu_secs_per_gib, 0.5);
        let zero = Rate::new(0, 0.0, 0.0);
        assert_eq!(zero.bytes_per_sec, 0.0);
        assert_eq!(zero.cpu_secs_per_gib, 0.0);
    }

    #[test]
    fn schedstat_wait_is_the_second_field() {
        assert_eq!(
            parse_schedstat_wait("2500000000 1500000000 731\n"),
            Some(1.5)
        );
        assert_eq!(parse_schedstat_wait("12"), None);
        assert_eq!(parse_schedstat_wait("1 x 2"), None);
    }

    #[test]
    fn thread_figures_per_cpu_second_and_share() {
        let used = ThreadUse {
            cpu_secs: 0.5,
            wanted_secs: 1.0,
            wait_secs: Some(0.5),
        };
        let r = Rate::new(1 << 30, 1.0, 0.6).with_thread(used);
        assert_eq!(r.bytes_per_cpu_sec, Some((1u64 << 31) as f64));
        assert_eq!(r.thread_cpu_share, Some(0.5));
        assert_eq!(r.headline(true), (1u64 << 31) as f64);
        assert_eq!(r.headline(false), (1u64 << 30) as f64);
        assert_eq!(r.thread_use(), Some(used));
        let both = ThreadUse::sum([
            used,
            ThreadUse {
                cpu_secs: 1.0,
                wanted_secs: 1.0,
                wait_secs: None,
            },
        ]);
        assert_eq!((both.cpu_secs, both.wanted_secs), (1.5, 2.0));
        assert_eq!(both.wait_secs, None);
    }

    #[test]
    fn a_busy_loop_gets_its_thread_cpu_counted() {
        let mut x = 0u64;
        let r = run_for::<()>(Duration::from_millis(50), 4096, || {
            for i in 0..1000 {
                x = std::hint::black_box(x.wrapping_add(i));
            }
            Ok(())
        })
        .unwrap();
        let cpu = r.thread_cpu_secs.unwrap();
        // The loop never sleeps: its CPU is at most its wall clock, and some of it.
        assert!(cpu > 0.0 && cpu <= r.wall_secs * 1.05, "{r:?}");
        assert!(
            r.bytes_per_cpu_sec.unwrap() >= r.bytes_per_sec * 0.95,
            "{r:?}"
        );
    }

    #[test]
    fn loop_runs_for_the_duration_and_counts_bytes() {
        let mut calls = 0u64;
        let r = run_for::<()>(Duration::from_millis(30), 4096, || {
            calls += 1;
            std::hint::black_box(calls);
            Ok(())
        })
        .unwrap();
        assert!(r.wall_secs >= 0.03, "{r:?}");
        // One warm-up call is not counted.
        assert_eq!(r.bytes, (calls - 1) * 4096);
    }

    #[test]
    fn an_error_stops_the_loop() {
        let mut n = 0;
        let r = run_for(Duration::from_secs(5), 512, || {
            n += 1;
            if n == 3 { Err("broken") } else { Ok(()) }
        });
        assert_eq!(r, Err("broken"));
    }

    #[test]
    fn parallel_workers_all_count() {
        let r = run_parallel::<u64, (), _, _>(
            Duration::from_millis(20),
            512,
            3,
            || Ok(0),
            |s| {
                *s += 1;
                Ok(())
            },
        )
        .unwrap();
        assert!(r.bytes >= 3 * 128 * 512, "{r:?}");
        assert!(process_cpu_secs() > 0.0);
    }
}
