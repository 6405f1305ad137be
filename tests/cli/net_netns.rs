//! Goodput through a veth pair between two network namespaces, shaped with tbf:
//! measured goodput must be within 10 % of the shaped rate. Needs root, `ip` and
//! `tc`; skips with the reason otherwise. A guard deletes the namespaces even
//! when an assertion fails.

use std::process::Command;

use serde_json::Value;

use crate::util::*;

use crate::netns_pair::sh;
pub use crate::netns_pair::{serve, shaped_pair_or_skip};

fn goodput(tag: &str, rate: &str, burst: &str, rate_bps: f64, reverse: bool) {
    let _serial = crate::net::heavy();
    let Some(ns) = shaped_pair_or_skip(tag, rate, burst) else {
        return;
    };
    let bin = env!("CARGO_BIN_EXE_nastune");
    let _server = serve(&ns, 2);
    // One retry: other jobs on a 2-core machine can starve one short run.
    let mut ratio = 0.0;
    for attempt in 1..=2 {
        ratio = measure(&ns.client, bin, 2, reverse) / rate_bps;
        eprintln!(
            "{tag}: shaped {rate}, attempt {attempt}: goodput {:.1} % of the rate",
            ratio * 100.0
        );
        if (0.9..=1.1).contains(&ratio) {
            break;
        }
    }
    assert!(
        (0.9..=1.1).contains(&ratio),
        "{tag}: goodput is {:.1} % of {rate}, not within 10 %",
        ratio * 100.0
    );
}

/// Received bits/s of one `secs` test (after 1 s of omitted warm-up) from `client_ns`.
pub fn measure(client_ns: &str, bin: &str, secs: u32, reverse: bool) -> f64 {
    let secs = secs.to_string();
    let mut args = vec!["-t", &secs, "-O", "1"];
    if reverse {
        args.push("-R");
    }
    bench_from(client_ns, bin, &args)["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap()
}

/// The JSON document of `bench net 10.77.0.1 ARGS` run in `client_ns`.
fn bench_from(client_ns: &str, bin: &str, args: &[&str]) -> Value {
    let o = Command::new("ip")
        .args(["netns", "exec", client_ns, bin, "bench", "net", "10.77.0.1"])
        .args(args)
        .args(["--json", "--no-store"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn netns_tbf_100mbit_goodput_within_10_percent() {
    goodput("a", "100mbit", "64kb", 100e6, false);
}

#[test]
fn netns_tbf_1gbit_goodput_within_10_percent_reverse() {
    goodput("b", "1gbit", "1mb", 1e9, true);
}

/// `-b` holds its rate over a veth pair (shaped at 1 Gbit/s, above the pace),
/// as sent and as received, without interval reports: the pacer waits between
/// blocks instead of the control loop spinning, and the sender's clock runs from
/// its first write to the stop.
#[test]
fn netns_paced_300mbit_holds_its_rate_within_3_percent() {
    let _serial = crate::net::heavy();
    let Some(ns) = shaped_pair_or_skip("p", "1gbit", "1mb") else {
        return;
    };
    let _server = serve(&ns, 2);
    // One retry: other jobs on a 2-core machine can starve one short run.
    let mut worst = 0.0;
    for attempt in 1..=2 {
        let args = ["-t", "3", "-b", "300M", "-i", "0"];
        let v = bench_from(&ns.client, env!("CARGO_BIN_EXE_nastune"), &args);
        let ratio = |key: &str| v["end"][key]["bits_per_second"].as_f64().unwrap() / 300e6;
        let (sent, received) = (ratio("sum_sent"), ratio("sum_received"));
        eprintln!(
            "attempt {attempt}: sent {:.1} %, received {:.1} % of 300 Mbit/s",
            sent * 100.0,
            received * 100.0
        );
        worst = f64::max((sent - 1.0).abs(), (received - 1.0).abs());
        if worst <= 0.03 {
            break;
        }
    }
    assert!(
        worst <= 0.03,
        "the paced rate is {:.1} % off 300 Mbit/s",
        worst * 100.0
    );
}

/// Changes both egresses of the pair made with `tag` to `rate` (the server's
/// first: it carries a reverse test's data).
pub fn reshape(ns: &crate::netns_pair::Netns, tag: &str, rate: &str) {
    for (dev_ns, dev) in [(&ns.server, "vs"), (&ns.client, "vc")] {
        let dev = format!("{dev}{tag}{}", std::process::id() % 100_000);
        sh(&[
            "ip", "netns", "exec", dev_ns, "tc", "qdisc", "change", "dev", &dev, "root", "tbf",
            "rate", rate, "burst", "64kb", "latency", "20ms",
        ])
        .unwrap();
    }
}

/// `compare` of two stored `bench net` runs: the reporting intervals are the
/// samples, so a link shaped down from 100 to 20 Mbit/s between the runs is
/// judged worse with an interval that excludes zero.
#[test]
fn compare_judges_a_slower_link_worse_from_net_intervals() {
    let _serial = crate::net::heavy();
    let Some(ns) = shaped_pair_or_skip("cmp", "100mbit", "64kb") else {
        return;
    };
    let _server = serve(&ns, 2);
    let db = tempfile::tempdir().unwrap();
    let dbfile = db.path().join("nastune.db");
    let run = || {
        let o = Command::new("ip")
            .args(["netns", "exec", &ns.client, env!("CARGO_BIN_EXE_nastune")])
            .args([
                "bench",
                "net",
                "10.77.0.1",
                "-t",
                "3",
                "-O",
                "1",
                "-i",
                "0.5",
            ])
            .arg("--db")
            .arg(&dbfile)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    };
    run();
    reshape(&ns, "cmp", "20mbit");
    run();
    let o = Command::new(env!("CARGO_BIN_EXE_nastune"))
        .args(["compare", "1", "2", "--json", "--db"])
        .arg(&dbfile)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    let row = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["quantity"] == "sent")
        .unwrap_or_else(|| panic!("no 'sent' row: {c}"))
        .clone();
    assert!(
        row["benchmark"]
            .as_str()
            .unwrap()
            .starts_with("net tcp send to 10.77.0.1 streams=1"),
        "{row}"
    );
    assert_eq!(row["verdict"], "worse", "{row}");
    let (a, b) = (
        row["a"]["mean"].as_f64().unwrap(),
        row["b"]["mean"].as_f64().unwrap(),
    );
    assert!(b < a / 3.0, "20 Mbit/s is not a third of 100 Mbit/s: {row}");
    assert!(row["a"]["n"].as_u64().unwrap() >= 4, "{row}");
    // The report charts both runs' throughput side by side.
    let o = Command::new(env!("CARGO_BIN_EXE_nastune"))
        .args(["report", "1", "2", "--markdown", "-", "--db"])
        .arg(&dbfile)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let md = stdout(&o);
    assert!(md.contains("Network throughput sent"), "{md}");
    // In decimal MB/s, as check gives the network's rate, not in bits.
    assert!(md.contains(" MB/s"), "{md}");
    assert!(!md.contains("bit/s"), "{md}");
}

/// A link shaped down from 100 to 20 Mbit/s partway through one `bench net`
/// run: the cliff is found in its interval reports within one interval of the
/// change, drawn in its text and charted in the HTML report.
#[test]
fn a_link_shaped_down_mid_run_is_a_cliff_within_one_interval() {
    use std::io::{BufRead, BufReader, Read};
    use std::time::{Duration, Instant};
    let _serial = crate::net::heavy();
    let Some(ns) = shaped_pair_or_skip("clf", "100mbit", "64kb") else {
        return;
    };
    let _server = serve(&ns, 1);
    let db = tempfile::tempdir().unwrap();
    let dbfile = db.path().join("nastune.db");
    // Reverse: the server sends through its own tbf, and this end's reports
    // are of bytes received, which follow the link without a send buffer.
    let mut child = Command::new("ip")
        .args(["netns", "exec", &ns.client, env!("CARGO_BIN_EXE_nastune")])
        .args(["bench", "net", "10.77.0.1", "-t", "8", "-i", "0.5", "-R"])
        .arg("--db")
        .arg(&dbfile)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    // The first report is printed at 0.5 s into the test (plus a sampling
    // lag of at most the client's 50 ms tick): the test began before this.
    let began = Instant::now() - Duration::from_millis(500);
    assert!(first.contains("0.00-0.50"), "{first}");
    std::thread::sleep(Duration::from_secs(3));
    let changed = began.elapsed().as_secs_f64();
    reshape(&ns, "clf", "20mbit");
    let mut text = String::new();
    out.read_to_string(&mut text).unwrap();
    assert!(child.wait().unwrap().success(), "{text}");
    let line = text
        .lines()
        .find(|l| l.contains("cliff at "))
        .unwrap_or_else(|| panic!("no cliff found:\n{text}"));
    let at: f64 = line
        .split("cliff at ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    eprintln!("shaped down at {changed:.2} s, cliff found at {at:.1} s: {line}");
    // The interval holding the change may still be half fast: the cliff
    // begins at its start or the next one's, 0.5 s either side; 0.1 s more
    // for the report's sampling lag.
    assert!(
        at >= changed - 0.5 && at <= changed + 0.6,
        "cliff at {at} s, the link changed at {changed:.2} s:\n{text}"
    );
    assert!(text.contains("received "), "{text}");
    assert!(
        text.contains("cause: bench net samples no counter"),
        "{text}"
    );
    let o = Command::new(env!("CARGO_BIN_EXE_nastune"))
        .args(["report", "1", "--html", "-", "--db"])
        .arg(&dbfile)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let html = stdout(&o);
    assert!(html.contains("Throughput over time"), "{html}");
    assert!(html.contains("net to 10.77.0.1 received"), "{html}");
    assert!(html.contains(&format!("cliff at {at:.1} s")), "{html}");
}
