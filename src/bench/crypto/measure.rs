//! Wall clock plus process CPU for one measured loop. CPU comes from
//! getrusage(RUSAGE_SELF) (user + system, all threads), so work the kernel does
//! on our behalf counts and work a hardware engine does does not: that is the
//! point of CPU seconds per GiB.

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
        }
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
    let (wall, cpu) = clock.stop();
    Ok(Rate::new(ops * request_bytes as u64, wall, cpu))
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
    let results: Vec<Result<u64, E>> = std::thread::scope(|scope| {
        let handles: Vec<_> = states
            .iter_mut()
            .map(|s| {
                let op = &op;
                let clock = &clock;
                scope.spawn(move || -> Result<u64, E> {
                    let mut ops = 0u64;
                    loop {
                        for _ in 0..batch {
                            op(s)?;
                        }
                        ops += u64::from(batch);
                        if clock.elapsed() >= duration {
                            return Ok(ops);
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
    for r in results {
        ops += r?;
    }
    Ok(Rate::new(ops * request_bytes as u64, wall, cpu))
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
