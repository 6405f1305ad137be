//! `bench smb` through a relay to a private smbd that breaks the run's
//! connection: junk in place of the server's answer, or every connection
//! stalled. The run's directory is removed over a fresh session, within a
//! bounded time; what even that cannot remove, the next run removes.

#![cfg(feature = "smb")]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::bench_smb::leftovers;
use crate::smbd::{PASSWORD, Smbd, USER};
use crate::util::stderr;

const PASS: u8 = 0;
/// The first connection's next server bytes become a frame of junk, once.
const JUNK: u8 = 1;
/// Nothing is relayed on any connection, new ones included.
const STALL: u8 = 2;
/// Stalled connections are closed; new ones are relayed.
const RELEASED: u8 = 3;

/// A relay on 127.0.0.1 to `target`; `mode` says what it does now.
struct Relay {
    port: u16,
    mode: Arc<AtomicU8>,
}

impl Relay {
    fn start(target: std::net::SocketAddr) -> Relay {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let mode = Arc::new(AtomicU8::new(PASS));
        let m = mode.clone();
        let count = Arc::new(AtomicU32::new(0));
        std::thread::spawn(move || {
            for client in l.incoming().flatten() {
                let Ok(server) = TcpStream::connect(target) else {
                    continue;
                };
                let first = count.fetch_add(1, Ordering::Relaxed) == 0;
                for (from, to, answers) in [
                    (
                        client.try_clone().unwrap(),
                        server.try_clone().unwrap(),
                        false,
                    ),
                    (server, client, true),
                ] {
                    let m = m.clone();
                    std::thread::spawn(move || pump(from, to, &m, first && answers));
                }
            }
        });
        Relay { port, mode }
    }

    fn set(&self, mode: u8) {
        self.mode.store(mode, Ordering::Relaxed);
    }
}

/// Copies `from` to `to` as the relay's mode says, until either side closes.
fn pump(mut from: TcpStream, mut to: TcpStream, mode: &AtomicU8, may_junk: bool) {
    from.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match mode.load(Ordering::Relaxed) {
            STALL => {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            RELEASED => {
                let _ = from.shutdown(Shutdown::Both);
                let _ = to.shutdown(Shutdown::Both);
                return;
            }
            JUNK if may_junk => {
                // A whole frame that is no SMB2 message.
                let mut junk = vec![0, 0, 0, 64];
                junk.extend([0xAB; 64]);
                let _ = to.write_all(&junk);
                mode.store(PASS, Ordering::Relaxed);
            }
            _ => {}
        }
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

fn bench(port: u16, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nastune"));
    c.args(["--no-store", "bench", "smb"])
        .arg(format!("//127.0.0.1:{port}/rw"))
        .args(["--user", USER, "--timeout", "2"])
        .args(extra)
        .env("NASTUNE_SMB_PASSWORD", PASSWORD)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// A long sequential write through the relay, once its directory exists.
fn writing(relay: &Relay, share: &Path) -> Child {
    let child = bench(relay.port, &["--size", "4G", "--workload", "seq-write"])
        .args(["--block", "64K", "--depth", "1"])
        .spawn()
        .unwrap();
    let start = Instant::now();
    while leftovers(share).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the run never created its directory"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    child
}

/// Waits for `child`, which must end within `limit`; its exit code and stderr.
fn ends_within(mut child: Child, limit: Duration) -> (Option<i32>, String) {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("the run still went on {limit:?} after the fault");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    (o.status.code(), stderr(&o))
}

#[test]
fn junk_from_the_server_is_an_error_and_a_fresh_session_cleans_up() {
    let Some(s) = Smbd::start("") else { return };
    let share = s.share_path("rw");
    let relay = Relay::start(s.addr());
    let child = writing(&relay, &share);
    relay.set(JUNK);
    let (code, err) = ends_within(child, Duration::from_secs(30));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("protocol violation"), "{err}");
    assert!(leftovers(&share).is_empty(), "{:?}", leftovers(&share));
}

#[test]
fn a_stalled_server_ends_the_run_in_bounded_time_and_the_next_run_cleans_up() {
    let Some(s) = Smbd::start("") else { return };
    let share = s.share_path("rw");
    let relay = Relay::start(s.addr());
    let child = writing(&relay, &share);
    relay.set(STALL);
    // Timeouts of 2 s: the write's, the fresh session's connect; some slack.
    let (code, err) = ends_within(child, Duration::from_secs(15));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no answer"), "{err}");
    let left = leftovers(&share);
    assert_eq!(left.len(), 1, "nothing to clean up: {left:?}");
    // Once the stalled connections are gone, the next run removes it: its
    // run is over.
    relay.set(RELEASED);
    std::thread::sleep(Duration::from_millis(300));
    let o = bench(s.port, &["--size", "1M", "--workload", "seq-write"])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains(&format!("removed '{}'", left[0])), "{err}");
    assert!(leftovers(&share).is_empty(), "{:?}", leftovers(&share));
}

#[test]
fn directories_not_surely_of_a_run_that_is_gone_are_left_alone() {
    let Some(s) = Smbd::start("") else { return };
    let share = s.share_path("rw");
    // Another host's on this boot (whose runs cannot be seen from here), one
    // of the old name without a host, and a person's folder of a like name.
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let boot: String = boot
        .chars()
        .filter(char::is_ascii_hexdigit)
        .take(8)
        .collect();
    let kept = [
        format!("nastune-bench-ffffffff-{boot}-1-0"),
        "nastune-bench-1732700000-4242".to_string(),
        "nastune-bench-notes".to_string(),
    ];
    for k in &kept {
        std::fs::create_dir(share.join(k)).unwrap();
        std::fs::write(share.join(k).join("seq.bin"), "keep").unwrap();
    }
    // Writable for the share's user, so only the rule keeps them.
    for k in &kept {
        let _ = Command::new("chmod")
            .args(["-R", "a+rwX"])
            .arg(share.join(k))
            .status();
    }
    let o = bench(s.port, &["--size", "1M", "--workload", "seq-write"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let mut left = leftovers(&share);
    left.sort();
    let mut want = kept.to_vec();
    want.sort();
    assert_eq!(left, want);
}
