//! Two network namespaces joined by a tbf-shaped veth, and `nastune net
//! serve` in one of them; shared by the test binaries.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

pub struct Netns {
    pub server: String,
    pub client: String,
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting a namespace also deletes its end of the veth pair.
        for ns in [&self.server, &self.client] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

pub fn sh(args: &[&str]) -> Result<(), String> {
    let o = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args[0]))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "'{}' failed: {}",
            args.join(" "),
            stderr(&o).trim()
        ))
    }
}

/// Two namespaces joined by veth, both egresses shaped to `rate`.
fn shaped_pair(tag: &str, rate: &str, burst: &str) -> Result<Netns, String> {
    let id = std::process::id();
    let ns = Netns {
        server: format!("nt-s-{tag}-{id}"),
        client: format!("nt-c-{tag}-{id}"),
    };
    let (vs, vc) = (
        format!("vs{tag}{}", id % 100_000),
        format!("vc{tag}{}", id % 100_000),
    );
    sh(&["ip", "netns", "add", &ns.server])?;
    sh(&["ip", "netns", "add", &ns.client])?;
    sh(&[
        "ip", "link", "add", &vs, "netns", &ns.server, "type", "veth", "peer", "name", &vc,
        "netns", &ns.client,
    ])?;
    for (n, dev, addr) in [
        (&ns.server, &vs, "10.77.0.1/24"),
        (&ns.client, &vc, "10.77.0.2/24"),
    ] {
        sh(&["ip", "-n", n, "addr", "add", addr, "dev", dev])?;
        sh(&["ip", "-n", n, "link", "set", dev, "up"])?;
        sh(&["ip", "-n", n, "link", "set", "lo", "up"])?;
        sh(&[
            "ip", "netns", "exec", n, "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate",
            rate, "burst", burst, "latency", "20ms",
        ])?;
    }
    Ok(ns)
}

/// The shaped pair, or None after saying why this machine cannot make one.
pub fn shaped_pair_or_skip(tag: &str, rate: &str, burst: &str) -> Option<Netns> {
    if !require(&[Need::Root, Need::Tool("ip"), Need::Tool("tc")]) {
        return None;
    }
    shaped_pair(tag, rate, burst)
        .map_err(|e| skip(&format!("network namespaces with tbf: {e}")))
        .ok()
}

/// A child process killed when the test ends, however it ends.
pub struct Kill(std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `nastune net serve` in the server namespace for `sessions` tests, once it listens.
pub fn serve(ns: &Netns, sessions: u32) -> Kill {
    let server = Command::new("ip")
        .args(["netns", "exec", &ns.server, env!("CARGO_BIN_EXE_nastune")])
        .args([
            "net",
            "serve",
            "-B",
            "10.77.0.1",
            "--no-store",
            "--sessions",
        ])
        .arg(sessions.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Kill(server);
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        let o = Command::new("ip")
            .args(["netns", "exec", &ns.server, "ss", "-Hltn", "sport = :5201"])
            .output()
            .unwrap();
        if !stdout(&o).trim().is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}
