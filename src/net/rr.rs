//! Request/response latency (netperf's TCP_RR and TCP_CRR): what a NAS user
//! feels when opening a folder, not how fast a bulk copy runs. Negotiated with the
//! `nastune.rr` parameter key, so plain iperf3 peers never see it.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::params::RrMode;
use super::protocol::COOKIE_SIZE;

/// Log-linear histogram: 16 sub-buckets per power of two (≤ 6.25 % error), a
/// fixed 1 KiB of counters however long the test runs.
#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u32>,
    total: u64,
    min: u64,
    max: u64,
    sum: u128,
}

const SUB: u64 = 16;

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; 64 * SUB as usize],
            total: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
        }
    }
}

fn bucket(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let exp = 63 - u64::from(v.leading_zeros()); // ≥ 4
    let sub = (v >> (exp - 4)) & (SUB - 1);
    ((exp - 3) * SUB + sub) as usize
}

fn bucket_high(i: usize) -> u64 {
    let i = i as u64;
    if i < SUB {
        return i;
    }
    let exp = i / SUB + 3;
    let sub = i % SUB;
    // Past 2^63 ns (292 years) the edge saturates.
    (SUB + sub + 1)
        .checked_shl((exp - 4) as u32)
        .filter(|v| v.leading_zeros() > 0 || exp < 63)
        .map_or(u64::MAX, |v| v - 1)
}

impl Histogram {
    pub fn record(&mut self, v: u64) {
        let b = bucket(v).min(self.counts.len() - 1);
        self.counts[b] = self.counts[b].saturating_add(1);
        self.total += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += u128::from(v);
    }

    pub fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a = a.saturating_add(*b);
        }
        self.total += o.total;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.sum += o.sum;
    }

    /// The upper edge of the bucket holding quantile `q`, clamped to the max seen.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0u64;
        for (i, c) in self.counts.iter().enumerate() {
            seen += u64::from(*c);
            if seen >= rank {
                return bucket_high(i).clamp(self.min, self.max);
            }
        }
        self.max
    }

    pub fn count(&self) -> u64 {
        self.total
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RrResult {
    pub mode: RrMode,
    pub streams: u32,
    pub request_bytes: u32,
    pub response_bytes: u32,
    pub seconds: f64,
    pub transactions: u64,
    pub transactions_per_sec: f64,
    pub latency_min_ns: u64,
    pub latency_mean_ns: u64,
    pub latency_p50_ns: u64,
    pub latency_p90_ns: u64,
    pub latency_p99_ns: u64,
    pub latency_max_ns: u64,
    pub errors: u64,
}

pub fn summarize(
    mode: RrMode,
    streams: u32,
    req: u32,
    resp: u32,
    seconds: f64,
    h: &Histogram,
    errors: u64,
) -> RrResult {
    let n = h.count();
    RrResult {
        mode,
        streams,
        request_bytes: req,
        response_bytes: resp,
        seconds,
        transactions: n,
        transactions_per_sec: if seconds > 0.0 {
            n as f64 / seconds
        } else {
            0.0
        },
        latency_min_ns: if n == 0 { 0 } else { h.min },
        latency_mean_ns: if n == 0 {
            0
        } else {
            (h.sum / u128::from(n)) as u64
        },
        latency_p50_ns: h.quantile(0.50),
        latency_p90_ns: h.quantile(0.90),
        latency_p99_ns: h.quantile(0.99),
        latency_max_ns: h.max,
        errors,
    }
}

/// Server side of one transaction: read the request, write the response.
pub fn serve_one<S: Read + Write>(sock: &mut S, req: u32, resp: u32) -> io::Result<()> {
    let mut buf = vec![0u8; req.max(resp) as usize];
    sock.read_exact(&mut buf[..req as usize])?;
    sock.write_all(&buf[..resp as usize])
}

/// Server side of RR: one echo loop per kept-open connection until the client
/// closes, each transaction counted in `served`.
pub fn serve_streams(
    sockets: Vec<TcpStream>,
    req: u32,
    resp: u32,
    served: &Arc<AtomicUsize>,
) -> Vec<JoinHandle<()>> {
    sockets
        .into_iter()
        .filter_map(|mut s| {
            let _ = s.set_nodelay(true);
            // A client that stops mid-test must not pin this thread forever.
            let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
            let served = Arc::clone(served);
            std::thread::Builder::new()
                .name("rr-serve".into())
                .spawn(move || {
                    while serve_one(&mut s, req, resp).is_ok() {
                        served.fetch_add(1, Ordering::Relaxed);
                    }
                })
                .ok()
        })
        .collect()
}

fn transact(sock: &mut TcpStream, buf: &mut [u8], req: u32, resp: u32) -> io::Result<()> {
    sock.write_all(&buf[..req as usize])?;
    sock.read_exact(&mut buf[..resp as usize])
}

/// Client side of RR on kept-open connections, one thread each, for `duration`.
pub fn run_rr(
    sockets: Vec<TcpStream>,
    req: u32,
    resp: u32,
    duration: Duration,
) -> (Histogram, u64) {
    let handles: Vec<_> = sockets
        .into_iter()
        .filter_map(|mut s| {
            let _ = s.set_nodelay(true);
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            std::thread::Builder::new()
                .name("rr".into())
                .spawn(move || {
                    let mut h = Histogram::default();
                    let mut buf = vec![0x5au8; req.max(resp) as usize];
                    let end = Instant::now() + duration;
                    let mut errors = 0;
                    while Instant::now() < end {
                        let t0 = Instant::now();
                        match transact(&mut s, &mut buf, req, resp) {
                            Ok(()) => h.record(t0.elapsed().as_nanos() as u64),
                            Err(_) => {
                                errors += 1;
                                break;
                            }
                        }
                    }
                    (h, errors)
                })
                .ok()
        })
        .collect();
    join_all(handles)
}

/// Client side of CRR: connect, cookie, request, response, close, per transaction.
pub fn run_crr(
    addr: SocketAddr,
    cookie: [u8; COOKIE_SIZE],
    streams: u32,
    req: u32,
    resp: u32,
    duration: Duration,
) -> (Histogram, u64) {
    let handles: Vec<_> = (0..streams)
        .filter_map(|_| {
            std::thread::Builder::new()
                .name("crr".into())
                .spawn(move || {
                    let mut h = Histogram::default();
                    let mut buf = vec![0x5au8; req.max(resp) as usize];
                    let end = Instant::now() + duration;
                    let mut errors = 0;
                    while Instant::now() < end {
                        let t0 = Instant::now();
                        let r = (|| {
                            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
                            s.set_nodelay(true)?;
                            s.set_read_timeout(Some(Duration::from_secs(5)))?;
                            s.write_all(&cookie)?;
                            transact(&mut s, &mut buf, req, resp)
                        })();
                        match r {
                            Ok(()) => h.record(t0.elapsed().as_nanos() as u64),
                            Err(_) => errors += 1,
                        }
                    }
                    (h, errors)
                })
                .ok()
        })
        .collect();
    join_all(handles)
}

fn join_all(handles: Vec<JoinHandle<(Histogram, u64)>>) -> (Histogram, u64) {
    let mut all = Histogram::default();
    let mut errors = 0;
    for h in handles {
        match h.join() {
            Ok((hist, e)) => {
                all.merge(&hist);
                errors += e;
            }
            Err(_) => errors += 1,
        }
    }
    (all, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_are_within_bucket_error() {
        let mut h = Histogram::default();
        for v in 1..=10_000u64 {
            h.record(v * 1000);
        }
        let p50 = h.quantile(0.5) as f64;
        let p99 = h.quantile(0.99) as f64;
        assert!((p50 / 5_000_000.0 - 1.0).abs() < 0.07, "{p50}");
        assert!((p99 / 9_900_000.0 - 1.0).abs() < 0.07, "{p99}");
        assert_eq!(h.quantile(1.0), 10_000_000);
        assert_eq!(Histogram::default().quantile(0.5), 0);
    }

    #[test]
    fn bucket_edges_are_monotonic() {
        let mut last = 0;
        for i in 0..((62 - 3) * SUB as usize) {
            let hi = bucket_high(i);
            assert!(hi >= last, "{i}");
            assert_eq!(bucket(hi), i, "{i} {hi}");
            last = hi;
        }
    }
}
