//! Runs the workloads of a [`Plan`] under each security mode. Everything is
//! written inside a fresh `nastune-bench-<id>` directory, which must not exist
//! and is always removed: after the workloads, on an error and on Ctrl-C. A
//! broken connection is not used for that: a fresh session removes it, and
//! what even that could not remove (a server that still holds the files open
//! for the broken session) the next run on the share removes, once the run
//! that made it is gone; see [`Owner`].

use std::net::ToSocketAddrs;
use std::time::{Duration, Instant};

use crate::timeline::{Buckets, Timeline};

use super::server::{self, Sampler};
use super::{Plan, SecurityRun, Workload, WorkloadResult};
use crate::bench::cpu;
use crate::bench::disk::LatencyStats;
use crate::bench::histogram::Histogram;
use crate::bench::interrupt;
use crate::root::Root;
use crate::smb::client::Open;
use crate::smb::{Client, Config, Error, Security};

/// The default sequential size when the share has room: 1 GiB.
pub const DEFAULT_SIZE: u64 = 1 << 30;

/// Where the run writes, relative to the share.
fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}\\{name}")
    }
}

/// Whose a bench directory is: `nastune-bench-HOST-BOOT-PID-N`, HOST the
/// first 8 hex digits of this host's id (from /etc/machine-id), BOOT those of
/// the kernel's boot id, PID the process and N its count of directories.
/// Only a name of exactly this shape, of this host, whose process is gone
/// (another boot, or no `nastune` with that id) is ever removed by another
/// run: a person's folder does not look like it, and another host's runs
/// and a live run are left alone.
#[derive(Debug, Clone, PartialEq)]
pub struct Owner {
    host: String,
    boot: String,
    pid: u32,
}

const BENCH_PREFIX: &str = "nastune-bench-";

impl Owner {
    /// This process.
    pub fn this(root: &Root) -> Owner {
        let boot = root
            .read_value("proc/sys/kernel/random/boot_id")
            .unwrap_or_default()
            .replace('-', "");
        Owner {
            host: hex8(&crate::probe::host::read_host_id(root)),
            boot: hex8(&boot),
            pid: std::process::id(),
        }
    }

    fn dir_name(&self, n: u32) -> String {
        format!("{BENCH_PREFIX}{}-{}-{}-{n}", self.host, self.boot, self.pid)
    }

    /// The owner a directory name says, if it has exactly the shape above.
    pub fn of_name(name: &str) -> Option<Owner> {
        let mut parts = name.strip_prefix(BENCH_PREFIX)?.split('-');
        let (host, boot, pid, n) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let is_hex8 = |s: &str| s.len() == 8 && s.bytes().all(|b| b.is_ascii_hexdigit());
        let is_num =
            |s: &str| !s.is_empty() && s.len() <= 10 && s.bytes().all(|b| b.is_ascii_digit());
        if parts.next().is_some() || !is_hex8(host) || !is_hex8(boot) || !is_num(pid) || !is_num(n)
        {
            return None;
        }
        Some(Owner {
            host: host.to_string(),
            boot: boot.to_string(),
            pid: pid.parse().ok()?,
        })
    }

    /// Whether `other`'s run is over for sure, seen from this process:
    /// the same host, and another boot or no such process running nastune.
    pub fn outlived(&self, other: &Owner, running: impl Fn(u32) -> bool) -> bool {
        other.host == self.host
            && (other.boot != self.boot || (other.pid != self.pid && !running(other.pid)))
    }
}

/// The first 8 characters of a hex id, or `00000000` for none (an id that
/// cannot be read makes names no other run of this host matches, since no
/// run of another host is ever removed).
fn hex8(id: &str) -> String {
    let h: String = id.chars().filter(char::is_ascii_hexdigit).take(8).collect();
    format!("{h:0>8}").to_ascii_lowercase()
}

/// Whether process `pid` runs nastune (its comm; the kernel keeps 15 bytes).
fn runs_nastune(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.starts_with("nastune"))
}

/// A name no run, earlier or at the same time, has: see [`Owner`].
pub fn bench_dir_name(root: &Root) -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    Owner::this(root).dir_name(N.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

/// Removes the bench directories in `dir` that runs now gone left behind
/// (see [`Owner`]); gives the names removed. Best effort: what cannot be
/// removed now stays for a later run.
fn remove_stale(c: &mut Client, dir: &str, root: &Root) -> Vec<String> {
    let me = Owner::this(root);
    let listing = c.create(dir, Open::Dir).and_then(|h| {
        let entries = c.list(&h, dir);
        let _ = c.close(&h);
        entries
    });
    let Ok(entries) = listing else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for e in entries {
        let stale = e.attributes & crate::smb::wire::ATTR_DIRECTORY != 0
            && Owner::of_name(&e.name).is_some_and(|o| me.outlived(&o, runs_nastune));
        if stale && remove_tree(c, &join(dir, &e.name), 0).is_ok() {
            removed.push(e.name);
        }
    }
    removed
}

/// How long each step of removing the directory over a fresh session may
/// take, at most: a server that let the run's connection break may be slow
/// to answer, but a clean-up that waits for the run's whole timeout (30 s by
/// default) per file would keep a broken run going for minutes.
const CLEANUP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// An error after which the connection cannot be trusted with more requests.
fn broken(e: &Error) -> bool {
    matches!(
        e,
        Error::Timeout { .. } | Error::Closed { .. } | Error::Io { .. } | Error::Protocol(_)
    )
}

/// Removes `dir` over a fresh session, each step within [`CLEANUP_TIMEOUT`].
fn remove_fresh(
    plan: &Plan,
    addr: std::net::SocketAddr,
    security: Security,
    dir: &str,
) -> Result<(), Error> {
    let mut quick = plan.clone();
    quick.timeout = plan.timeout.min(CLEANUP_TIMEOUT);
    let mut c = connect(&quick, addr, security)?;
    let r = remove_tree(&mut c, dir, 0);
    if r.as_ref().is_err_and(broken) {
        return r;
    }
    c.logoff();
    r
}

/// Resolves the target and says whether it is this box.
pub fn resolve(plan: &Plan) -> Result<(std::net::SocketAddr, bool), Error> {
    let addr = (plan.target.host.as_str(), plan.target.port)
        .to_socket_addrs()
        .map_err(|source| Error::Connect {
            addr: format!("{}:{}", plan.target.host, plan.target.port),
            cause: source,
        })?
        .next()
        .ok_or_else(|| Error::Connect {
            addr: plan.target.host.clone(),
            cause: std::io::ErrorKind::NotFound.into(),
        })?;
    Ok((addr, server::is_local(&crate::root::Root::live(), &addr)))
}

/// Connects and logs on with the plan's credentials under `security`.
pub fn connect(
    plan: &Plan,
    addr: std::net::SocketAddr,
    security: Security,
) -> Result<Client, Error> {
    let mut cfg = Config::new(addr, &plan.target.host, plan.credentials.clone(), security);
    cfg.dialects = plan.settings.dialects.clone();
    cfg.timeout = plan.timeout;
    let mut c = Client::connect(cfg)?;
    c.tree_connect(&plan.target.share)?;
    Ok(c)
}

/// Runs every workload under one security mode.
pub fn run_security(
    plan: &Plan,
    addr: std::net::SocketAddr,
    local: bool,
    security: Security,
    root: &Root,
    progress: &mut dyn FnMut(&str),
) -> Result<SecurityRun, Error> {
    let mut c = connect(plan, addr, security)?;
    for name in remove_stale(&mut c, &plan.target.dir, root) {
        crate::note!(
            "nastune: removed '{name}', which an earlier run that is gone left on the share"
        );
    }
    let dir = join(&plan.target.dir, &bench_dir_name(root));
    let d = c.create(&dir, Open::NewDir)?;
    c.close(&d)?;
    let result = workloads(&mut c, plan, &dir, local, security, root, progress);
    // Clean up whatever happened; an interrupt or error is reported after. A
    // broken connection is dropped unused: each request on it would wait for
    // the timeout, and a desynchronised one answers nothing sensible.
    let mut cleaned = Err(Error::Interrupted);
    if !result.as_ref().is_err_and(broken) {
        c.drain();
        cleaned = remove_tree(&mut c, &dir, 0);
        if !cleaned.as_ref().is_err_and(broken) {
            c.logoff();
        }
    }
    if cleaned.is_err() {
        // Once more, over a fresh session: what failed may have been the
        // connection, and a new one is not bound by its state.
        cleaned = remove_fresh(plan, addr, security, &dir);
    }
    let run = result?;
    cleaned?;
    Ok(run)
}

#[allow(clippy::too_many_arguments)]
fn workloads(
    c: &mut Client,
    plan: &Plan,
    dir: &str,
    local: bool,
    security: Security,
    root: &Root,
    progress: &mut dyn FnMut(&str),
) -> Result<SecurityRun, Error> {
    let s = &plan.settings;
    let block = s.block_bytes.min(c.max_write()).min(c.max_read());
    let size = match s.size_bytes {
        Some(n) => n,
        None => {
            let r = c.create(&plan.target.dir, Open::Root)?;
            let free = c.free_space(&r);
            c.close(&r)?;
            // Leave a fifth of the free space to others.
            DEFAULT_SIZE.min(free? / 5 * 4)
        }
    };
    let size = (size / u64::from(block)).max(1) * u64::from(block);
    let mut results = Vec::new();
    let big = join(dir, "seq.bin");
    let sample = |root: &Root| local.then(|| Sampler::start(root));
    // This box's smbd: its share directory lets the read start cold.
    let share_dir = local
        .then(|| super::local::served_here(root, plan))
        .flatten()
        .and_then(|s| s.share_path);
    let interval = s.interval_ms.map(Duration::from_millis);
    for w in &s.workloads {
        check_interrupt()?;
        progress(&format!("{} {}", security.name(), w.name()));
        match w {
            Workload::SeqWrite => {
                let smp = sample(root);
                let mut r = seq(c, &big, size, block, s.depth, true, interval)?;
                r.server = smp.map(|x| x.finish(root, r.bytes));
                results.push(r);
            }
            Workload::SeqRead => {
                if !s.workloads.contains(&Workload::SeqWrite) {
                    seq(c, &big, size, block, s.depth, true, None)?;
                }
                // A user's copy of a large file reads it from the disk, not
                // from the memory the write just filled.
                let cold = local.then(|| match &share_dir {
                    Some(d) => {
                        let file = super::local::local_file(d, &big);
                        match super::local::evict(&file) {
                            Ok(()) => super::ColdCache::Evicted,
                            Err(e) => super::ColdCache::NotEvicted(e),
                        }
                    }
                    None => super::ColdCache::NotEvicted(
                        "the share's directory on this box is unknown (smbd's configuration \
                         was not readable)"
                            .into(),
                    ),
                });
                let smp = sample(root);
                let mut r = seq(c, &big, size, block, s.depth, false, interval)?;
                r.server = smp.map(|x| x.finish(root, r.bytes));
                r.cold_cache = cold;
                results.push(r);
            }
            Workload::SmallFiles => {
                let sub = join(dir, "small");
                let d = c.create(&sub, Open::NewDir)?;
                c.close(&d)?;
                for phase in [Phase::Write, Phase::Read, Phase::Delete] {
                    check_interrupt()?;
                    let smp = sample(root);
                    let files = (s.small_files, s.small_file_bytes);
                    let mut r = small_files(c, &sub, files, phase, interval)?;
                    r.server = smp.map(|x| x.finish(root, r.bytes));
                    results.push(r);
                }
            }
            Workload::Metadata => {
                let sub = join(dir, "meta");
                make_tree(c, &sub, s.metadata_dirs, s.metadata_files_per_dir)?;
                let smp = sample(root);
                let mut r = list_stat(c, &sub)?;
                r.server = smp.map(|x| x.finish(root, 0));
                results.push(r);
            }
        }
    }
    Ok(SecurityRun {
        security,
        session: c.info(),
        size_bytes: size,
        block_bytes: block,
        results,
    })
}

fn check_interrupt() -> Result<(), Error> {
    if interrupt::interrupted() {
        Err(Error::Interrupted)
    } else {
        Ok(())
    }
}

/// Incompressible-looking bytes, so no layer can cheat with zeros.
fn pattern(len: usize) -> Vec<u8> {
    let mut rng = crate::bench::disk::buffers::Rng::new(0x5eed_5eb0);
    (0..len).map(|_| rng.next_u64() as u8).collect()
}

struct Meter {
    start: Instant,
    cpu: cpu::ProcessCpu,
    hist: Histogram,
    buckets: Option<Buckets>,
}

impl Meter {
    fn start() -> Meter {
        let start = Instant::now();
        Meter {
            cpu: cpu::process_cpu(),
            start,
            hist: Histogram::new(),
            buckets: None,
        }
    }

    /// A meter that also counts bytes per `interval` by completion time.
    fn with_interval(interval: Option<Duration>) -> Meter {
        let mut m = Meter::start();
        m.buckets = interval.map(|i| Buckets::new(m.start, i));
        m
    }

    fn finish(
        self,
        workload: Workload,
        phase: Option<&str>,
        bytes: u64,
        ops: u64,
    ) -> WorkloadResult {
        let elapsed = self.start.elapsed();
        let after = cpu::process_cpu();
        let timeline = self.buckets.map(|b| {
            Timeline::unsampled(
                b.interval(),
                b.points(elapsed, &[]),
                "bench smb samples no counter that says why the rate fell (the server's \
                 disk or cache, the network, another client)",
            )
        });
        let secs = elapsed.as_secs_f64().max(1e-9);
        WorkloadResult {
            workload,
            phase: phase.map(str::to_string),
            bytes,
            ops,
            elapsed_ns: elapsed.as_nanos() as u64,
            bw_bytes: bytes as f64 / secs,
            iops: ops as f64 / secs,
            files_per_sec: None,
            clat_ns: LatencyStats::from_histogram(&self.hist),
            client_cpu_ns: (after.user_ns + after.sys_ns)
                .saturating_sub(self.cpu.user_ns + self.cpu.sys_ns),
            server: None,
            cold_cache: None,
            timeline,
        }
    }
}

/// Sequential write (creating the file) or read of `size` bytes in `block`
/// requests, `depth` in flight within the credits granted.
fn seq(
    c: &mut Client,
    path: &str,
    size: u64,
    block: u32,
    depth: u32,
    write: bool,
    interval: Option<Duration>,
) -> Result<WorkloadResult, Error> {
    let f = if write {
        c.create(path, Open::NewFile).or_else(|e| match e {
            Error::Exists { .. } => {
                let old = c.create(path, Open::Existing)?;
                c.delete_on_close(&old, path)?;
                c.close(&old)?;
                c.create(path, Open::NewFile)
            }
            e => Err(e),
        })?
    } else {
        c.create(path, Open::ReadFile)?
    };
    let data = if write {
        pattern(block as usize)
    } else {
        Vec::new()
    };
    let blocks = size / u64::from(block);
    let mut m = Meter::with_interval(interval);
    let result = (|| {
        let (mut next, mut done, mut bytes) = (0u64, 0u64, 0u64);
        while done < blocks {
            while next < blocks && c.in_flight() < depth as usize && c.can_send(block as usize) {
                check_interrupt()?;
                let off = next * u64::from(block);
                if write {
                    c.submit_write(&f, off, &data)?;
                } else {
                    c.submit_read(&f, off, block)?;
                }
                next += 1;
            }
            let r = c.complete()?;
            m.hist.record(r.sent.elapsed().as_nanos() as u64);
            let n = if write {
                c.write_result(&r, path)? as usize
            } else {
                c.read_result(&r, block, path)?.len()
            };
            c.recycle(r);
            if n != block as usize {
                return Err(Error::Protocol(format!(
                    "short {} of {n} bytes in '{path}'",
                    if write { "write" } else { "read" }
                )));
            }
            bytes += n as u64;
            done += 1;
            if let Some(b) = &mut m.buckets {
                b.record(Instant::now(), n as u64);
            }
        }
        Ok(bytes)
    })();
    let bytes = match result {
        Ok(b) => b,
        Err(e) => {
            c.drain();
            let _ = c.close(&f);
            return Err(e);
        }
    };
    let w = if write {
        Workload::SeqWrite
    } else {
        Workload::SeqRead
    };
    let r = m.finish(w, None, bytes, blocks);
    c.close(&f)?;
    Ok(r)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Write,
    Read,
    Delete,
}

/// One phase of the "copy a photo folder" case: create+write+close each
/// file, read each back, or delete each. Files/s and MB/s.
fn small_files(
    c: &mut Client,
    dir: &str,
    (files, file_bytes): (u32, u32),
    phase: Phase,
    interval: Option<Duration>,
) -> Result<WorkloadResult, Error> {
    let data = pattern(file_bytes as usize);
    // The write and read phases move bytes, a file at a time: their rate
    // per interval is the series (a server's cache filling shows there as
    // on a large file). Deleting moves none: no series.
    let mut m = Meter::with_interval(interval.filter(|_| phase != Phase::Delete));
    let mut bytes = 0u64;
    let mut buf = Vec::with_capacity(file_bytes as usize);
    for i in 0..files {
        check_interrupt()?;
        let path = join(dir, &format!("f{i:06}.bin"));
        let t = Instant::now();
        match phase {
            Phase::Write => {
                let f = c.create(&path, Open::NewFile)?;
                c.write_all_at(&f, 0, &data, &path)?;
                c.close(&f)?;
                bytes += data.len() as u64;
            }
            Phase::Read => {
                let f = c.create(&path, Open::ReadFile)?;
                buf.clear();
                while buf.len() < file_bytes as usize {
                    let off = buf.len() as u64;
                    if c.read_at(&f, off, file_bytes - buf.len() as u32, &mut buf, &path)? == 0 {
                        break;
                    }
                }
                c.close(&f)?;
                if buf != data {
                    return Err(Error::Protocol(format!(
                        "'{path}' read back differs from what was written"
                    )));
                }
                bytes += buf.len() as u64;
            }
            Phase::Delete => {
                let f = c.create(&path, Open::Existing)?;
                c.delete_on_close(&f, &path)?;
                c.close(&f)?;
            }
        }
        m.hist.record(t.elapsed().as_nanos() as u64);
        if let Some(b) = &mut m.buckets {
            b.record(Instant::now(), u64::from(file_bytes));
        }
    }
    let name = match phase {
        Phase::Write => "write",
        Phase::Read => "read",
        Phase::Delete => "delete",
    };
    let mut r = m.finish(Workload::SmallFiles, Some(name), bytes, u64::from(files));
    r.files_per_sec = Some(r.iops);
    Ok(r)
}

/// The tree metadata lists: `dirs` directories of `files` empty files (set-up, not measured).
fn make_tree(c: &mut Client, dir: &str, dirs: u32, files: u32) -> Result<(), Error> {
    let d = c.create(dir, Open::NewDir)?;
    c.close(&d)?;
    for i in 0..dirs {
        let sub = join(dir, &format!("d{i:03}"));
        let d = c.create(&sub, Open::NewDir)?;
        c.close(&d)?;
        for j in 0..files {
            check_interrupt()?;
            let f = c.create(&join(&sub, &format!("e{j:04}")), Open::NewFile)?;
            c.close(&f)?;
        }
    }
    Ok(())
}

/// Lists the tree and stats every entry (open, QUERY_INFO, close): ops/s.
fn list_stat(c: &mut Client, dir: &str) -> Result<WorkloadResult, Error> {
    let mut m = Meter::start();
    let mut ops = 0u64;
    let mut pending = vec![dir.to_string()];
    while let Some(d) = pending.pop() {
        check_interrupt()?;
        let h = c.create(&d, Open::Dir)?;
        let entries = c.list(&h, &d);
        c.close(&h)?;
        for e in entries? {
            if e.name == "." || e.name == ".." {
                continue;
            }
            let path = join(&d, &e.name);
            let t = Instant::now();
            let f = c.create(&path, Open::Existing)?;
            c.stat(&f, &path)?;
            c.close(&f)?;
            m.hist.record(t.elapsed().as_nanos() as u64);
            ops += 1;
            if e.attributes & crate::smb::wire::ATTR_DIRECTORY != 0 {
                pending.push(path);
            }
        }
    }
    Ok(m.finish(Workload::Metadata, Some("list-stat"), 0, ops))
}

/// Deletes `dir` and everything under it (depth-bounded).
pub fn remove_tree(c: &mut Client, dir: &str, depth: u32) -> Result<(), Error> {
    if depth > 16 {
        return Err(Error::Protocol(format!(
            "'{dir}' nests deeper than this run created"
        )));
    }
    let h = c.create(dir, Open::Dir)?;
    let entries = c.list(&h, dir);
    let listed = entries.and_then(|entries| {
        for e in entries.iter().filter(|e| e.name != "." && e.name != "..") {
            let path = join(dir, &e.name);
            if e.attributes & crate::smb::wire::ATTR_DIRECTORY != 0 {
                remove_tree(c, &path, depth + 1)?;
            } else {
                let f = c.create(&path, Open::Existing)?;
                c.delete_on_close(&f, &path)?;
                c.close(&f)?;
            }
        }
        Ok(())
    });
    let deleted = listed.and_then(|()| c.delete_on_close(&h, dir));
    c.close(&h)?;
    deleted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(host: &str, boot: &str, pid: u32) -> Owner {
        Owner {
            host: host.into(),
            boot: boot.into(),
            pid,
        }
    }

    #[test]
    fn only_names_of_exactly_our_shape_are_owned() {
        let me = owner("0123abcd", "feedf00d", 400);
        let name = me.dir_name(3);
        assert_eq!(name, "nastune-bench-0123abcd-feedf00d-400-3");
        assert_eq!(Owner::of_name(&name), Some(me));
        for other in [
            "nastune-bench-1732700000-400",
            "nastune-bench-0123abcd-feedf00d-400",
            "nastune-bench-0123abcd-feedf00d-400-3-x",
            "nastune-bench-0123abcX-feedf00d-400-3",
            "nastune-bench-0123abc-feedf00d-400-3",
            "nastune-bench-0123abcd-feedf00d--3",
            "nastune-bench-0123abcd-feedf00d-99999999999-3",
            "Nastune-bench-0123abcd-feedf00d-400-3",
            "my nastune-bench-0123abcd-feedf00d-400-3",
        ] {
            assert_eq!(Owner::of_name(other), None, "{other}");
        }
    }

    #[test]
    fn a_run_is_outlived_only_on_this_host_when_gone() {
        let me = owner("0123abcd", "feedf00d", 400);
        let nobody = |_: u32| false;
        let everybody = |_: u32| true;
        // Same boot: gone only when no nastune runs with its id; never ourselves.
        assert!(me.outlived(&owner("0123abcd", "feedf00d", 401), nobody));
        assert!(!me.outlived(&owner("0123abcd", "feedf00d", 401), everybody));
        assert!(!me.outlived(&owner("0123abcd", "feedf00d", 400), nobody));
        // Another boot: every process of it is gone.
        assert!(me.outlived(&owner("0123abcd", "00000001", 401), everybody));
        // Another host: never ours to judge.
        assert!(!me.outlived(&owner("99999999", "00000001", 401), nobody));
    }

    #[test]
    fn ids_become_eight_lowercase_hex_digits() {
        assert_eq!(hex8("6F1C2D3E4A5B6C7D"), "6f1c2d3e");
        assert_eq!(hex8("b1e2-33"), "00b1e233");
        assert_eq!(hex8("unknown"), "00000000");
        assert_eq!(hex8(""), "00000000");
    }
}
