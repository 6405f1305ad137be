//! `nastune watch`: replayed sequences of captured-style trees (a fixture box
//! copied once per step with its counters edited), the store baselines, --exec
//! and the Prometheus endpoint.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{fixtures, nastune, stderr, stdout};

const T0: u64 = 1_790_000_000;
const TWO_HOURS: u64 = 7_200;
const ETH0: &str = "sys/class/net/eth0";

/// One step of a replay: a copy of a fixture box.
pub struct Step {
    pub dir: PathBuf,
}

impl Step {
    pub fn new(base: &Path, box_name: &str, i: usize) -> Step {
        let dir = base.join(format!("t{i:02}"));
        let st = std::process::Command::new("cp")
            .arg("-a")
            .arg(fixtures().join("boxes").join(box_name))
            .arg(&dir)
            .status()
            .unwrap();
        assert!(st.success());
        Step { dir }
    }

    pub fn write(&self, rel: &str, value: &str) -> &Step {
        let p = self.dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("{value}\n")).unwrap();
        self
    }

    pub fn time(&self, t: u64) -> &Step {
        self.write(".nastune/timestamp.json", &format!("{{\"value\": {t}}}"))
    }

    pub fn boot(&self, id: &str) -> &Step {
        self.write("proc/sys/kernel/random/boot_id", id)
    }

    pub fn stat(&self, counter: &str, v: u64) -> &Step {
        self.write(&format!("{ETH0}/statistics/{counter}"), &v.to_string())
    }
}

/// `n` rpi2-luks steps two hours apart, eth0 with a MAC, rx_dropped = `drops(i)`.
fn leak_steps(base: &Path, n: usize, first: usize, drops: impl Fn(usize) -> u64) -> Vec<Step> {
    (first..first + n)
        .map(|i| {
            let s = Step::new(base, "rpi2-luks", i);
            s.time(T0 + i as u64 * TWO_HOURS)
                .write(&format!("{ETH0}/address"), "b8:27:eb:00:00:01")
                .stat("rx_dropped", drops(i));
            s
        })
        .collect()
}

fn replay(steps: &[Step], extra: &[&str]) -> std::process::Output {
    let mut c = nastune();
    c.args(["watch", "--json", "--no-smart"])
        .args(extra)
        .arg("--replay");
    for s in steps {
        c.arg(&s.dir);
    }
    c.output().unwrap()
}

fn lines(out: &std::process::Output) -> Vec<Value> {
    assert!(out.status.success(), "stderr: {}", stderr(out));
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn alerts<'a>(lines: &'a [Value], series: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "alert" && l["series"] == series)
        .collect()
}

fn change<'a>(sample: &'a Value, series: &str) -> Option<&'a Value> {
    sample["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["series"] == series)
}

const RX_DROPPED: &str = "net_rx_dropped{device=\"eth0\"}";
const RX_BYTES: &str = "net_rx_bytes{device=\"eth0\"}";

#[test]
fn watch_replay_alerts_on_one_drop_every_two_hours() {
    let d = tempfile::tempdir().unwrap();
    // 13 samples over 24 h, rx_dropped +1 each: 0.00014 drops/s, far below
    // any rate threshold.
    let steps = leak_steps(d.path(), 13, 0, |i| 2871 + i as u64);
    let out = lines(&replay(&steps, &["--no-store"]));
    let samples: Vec<&Value> = out.iter().filter(|l| l["type"] == "sample").collect();
    assert_eq!(samples.len(), 13);
    for s in &samples[1..] {
        let c = change(s, RX_DROPPED).expect("rx_dropped changed");
        assert_eq!(c["step"], "increase");
        assert_eq!(c["delta"], 1);
    }
    let a = alerts(&out, RX_DROPPED);
    assert_eq!(a.len(), 1, "fires once while the leak goes on: {a:?}");
    assert_eq!(a[0]["rule"], "increased_repeatedly");
    assert_eq!(a[0]["increases_in_window"], 3);
    // Third increase: sample 3, six hours in.
    assert_eq!(
        a[0]["time_unix_s"].as_f64(),
        Some((T0 + 3 * TWO_HOURS) as f64)
    );
    assert!(
        a[0]["how_to_split"].as_str().unwrap().contains("softnet"),
        "{}",
        a[0]
    );
    assert!(
        out.iter().all(|l| l["rule"] != "rate_above"),
        "no rate alert at this rate"
    );

    // 12 increases in the day: a rule asking for 13 stays quiet.
    let out = lines(&replay(&steps, &["--no-store", "--increases", "13"]));
    assert!(alerts(&out, RX_DROPPED).is_empty());
    // And the window matters: 3 increases within 3 h never happen at this pace.
    let out = lines(&replay(&steps, &["--no-store", "--within", "10800"]));
    assert!(alerts(&out, RX_DROPPED).is_empty());
}

/// 2040-01-01T00:00:00Z: past the 32-bit time_t limit (2038-01-19).
const T2040: u64 = 2_208_988_800;

/// A 10 GbE link's 64-bit byte counter after 2038: 10 GB a second, more than a
/// 32-bit rate or size can hold, at times a 32-bit time_t cannot. dist/smoke runs
/// this against the armv7 and armv5te binaries (NASTUNE_TEST_BIN) under qemu-user.
#[test]
fn watch_replay_rates_above_4_gb_per_s_after_2038() {
    let d = tempfile::tempdir().unwrap();
    let steps = leak_steps(d.path(), 3, 0, |_| 10);
    for (i, s) in steps.iter().enumerate() {
        s.time(T2040 + i as u64)
            .stat("rx_bytes", 5_000_000_000 + i as u64 * 10_000_000_000);
    }
    let out = lines(&replay(&steps, &["--no-store"]));
    let samples: Vec<&Value> = out.iter().filter(|l| l["type"] == "sample").collect();
    assert_eq!(samples.len(), 3);
    for (i, s) in samples.iter().enumerate().skip(1) {
        let c = change(s, RX_BYTES).unwrap_or_else(|| panic!("sample {i}: no rx_bytes change"));
        assert_eq!(c["step"], "increase", "sample {i}: {c}");
        assert_eq!(c["delta"], 10_000_000_000u64, "sample {i}: {c}");
        assert_eq!(c["rate_per_sec"], 1e10, "sample {i}: {c}");
    }
    assert_eq!(
        change(samples[2], RX_BYTES).unwrap()["total"],
        20_000_000_000u64
    );
    let t = |i: usize| samples[i]["time_unix_s"].as_f64();
    assert_eq!((t(0), t(2)), (Some(T2040 as f64), Some(T2040 as f64 + 2.0)));
}

/// Ten samples two hours apart: eth0's rx_bytes wraps at 32 bits twice, eth0
/// is gone for one sample, the box reboots, another NIC takes the name and
/// then resets; rx_dropped resets (a driver reload) at sample 2.
pub fn wrap_steps(base: &Path) -> Vec<Step> {
    let steps = leak_steps(base, 10, 0, |_| 10);
    let bytes = [
        4_294_967_000u64, // 32-bit counter near its top
        200,              // wrap: +496
        1_000,            // +800
        0,                // (eth0 gone)
        5_000,            // back, same MAC and ifindex: +4000
        4_294_967_290,    // +4294962290
        5,                // wrap: +11
        100,              // new boot: +100 since boot
        50,               // another NIC now called eth0 (new MAC): new baseline
        40,               // then a reset on that NIC
    ];
    for (s, b) in steps.iter().zip(bytes) {
        s.stat("rx_bytes", b).boot("boot-a");
    }
    steps[2].stat("rx_dropped", 3); // 10 -> 3: a reset (driver reload)
    std::fs::remove_file(steps[3].dir.join(ETH0)).unwrap();
    for s in &steps[7..] {
        s.boot("boot-b");
    }
    for s in &steps[8..] {
        s.write(&format!("{ETH0}/address"), "00:e0:4c:00:00:02")
            .write(&format!("{ETH0}/ifindex"), "5");
    }
    steps
}

#[test]
fn watch_replay_wraps_resets_churn_and_reboot() {
    let d = tempfile::tempdir().unwrap();
    let steps = wrap_steps(d.path());
    let out = lines(&replay(&steps, &["--no-store"]));
    let samples: Vec<&Value> = out.iter().filter(|l| l["type"] == "sample").collect();
    assert_eq!(samples.len(), 10);
    let step = |i: usize| change(samples[i], RX_BYTES).cloned();
    let expect = |i: usize, kind: &str, delta: Option<u64>| {
        let c = step(i).unwrap_or_else(|| panic!("sample {i}: no rx_bytes change"));
        assert_eq!(c["step"], kind, "sample {i}: {c}");
        if let Some(d) = delta {
            assert_eq!(c["delta"], d, "sample {i}: {c}");
        }
    };
    expect(1, "wrap", Some(496));
    assert_eq!(step(1).unwrap()["bits"], 32);
    expect(2, "increase", Some(800));
    assert!(step(3).is_none(), "eth0 absent in sample 3");
    expect(4, "increase", Some(4_000));
    expect(6, "wrap", Some(11));
    expect(7, "reboot", Some(100));
    expect(8, "new_identity", None);
    expect(9, "reset", None);
    let dropped = change(samples[2], RX_DROPPED).unwrap();
    assert_eq!(dropped["step"], "reset");
    // Every wrap counted, every reset flagged, per sample and in total.
    let wraps: u64 = samples.iter().map(|s| s["wraps"].as_u64().unwrap()).sum();
    let resets: u64 = samples.iter().map(|s| s["resets"].as_u64().unwrap()).sum();
    assert_eq!((wraps, resets), (2, 2));
    // The total never falls within one device: 496+800+4000+4294962290+11+100.
    assert_eq!(step(7).unwrap()["total"], 4_294_967_697u64);
    for s in &samples {
        for c in s["changes"].as_array().unwrap() {
            if let Some(r) = c["rate_per_sec"].as_f64() {
                assert!(r >= 0.0, "negative rate: {c}");
            }
        }
    }
}

#[test]
fn watch_baselines_survive_restarts_in_the_store() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("nastune.db");
    let steps = leak_steps(d.path(), 4, 0, |i| 100 + i as u64);
    let run = |s: &[Step]| {
        let mut c = nastune();
        c.args(["watch", "--json", "--no-smart", "--db"])
            .arg(&db)
            .arg("--replay");
        for x in s {
            c.arg(&x.dir);
        }
        lines(&c.output().unwrap())
    };
    // Two separate runs of two samples: 1 increase in each, but 3 in total
    // (run 2's first sample grows from run 1's stored last value).
    let first = run(&steps[..2]);
    assert!(alerts(&first, RX_DROPPED).is_empty());
    let second = run(&steps[2..]);
    let s0 = second.iter().find(|l| l["type"] == "sample").unwrap();
    assert_eq!(change(s0, RX_DROPPED).unwrap()["delta"], 1);
    assert_eq!(alerts(&second, RX_DROPPED).len(), 1, "{second:?}");
    // Without the store the second run alone sees one increase.
    let alone = lines(&replay(&steps[2..], &["--no-store"]));
    assert!(alerts(&alone, RX_DROPPED).is_empty());
}

#[test]
fn watch_replay_smart_md_and_temperatures() {
    let d = tempfile::tempdir().unwrap();
    let steps: Vec<Step> = (0..4)
        .map(|i| {
            let s = Step::new(d.path(), "rk3399-raid5", i);
            s.time(T0 + i as u64 * 3600).boot("boot-r");
            s
        })
        .collect();
    // sda's UDMA CRC count (id 199) grows on every sample: a cable or backplane.
    for (i, s) in steps.iter().enumerate() {
        let p = s.dir.join(".nastune/smartctl/sda.json");
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        for a in v["value"]["ata_smart_attributes"]["table"]
            .as_array_mut()
            .unwrap()
        {
            if a["id"] == 199 {
                a["raw"]["value"] = (i as u64 * 2).into();
                a["raw"]["string"] = (i * 2).to_string().into();
            }
        }
        std::fs::write(&p, v.to_string()).unwrap();
        s.write("sys/class/hwmon/hwmon0/name", "drivetemp").write(
            "sys/class/hwmon/hwmon0/temp1_input",
            if i == 3 { "85000" } else { "41000" },
        );
    }
    // md0 loses a member in the last sample.
    steps[3]
        .write("sys/block/md0/md/degraded", "1")
        .write("proc/mdstat", "Personalities : [raid5]\nmd0 : active raid5 dm-2[2] dm-1[1] dm-0[0]\n      11720607744 blocks super 1.2 level 5, 512k chunk, algorithm 2 [4/3] [UUU_]\n\nunused devices: <none>\n");
    let mut c = nastune();
    c.args([
        "watch",
        "--json",
        "--no-store",
        "--smart-interval",
        "3600",
        "--replay",
    ]);
    for s in &steps {
        c.arg(&s.dir);
    }
    let out = lines(&c.output().unwrap());
    let samples: Vec<&Value> = out.iter().filter(|l| l["type"] == "sample").collect();
    assert!(
        samples.iter().all(|s| s["smart_read"] == true),
        "{samples:?}"
    );
    let crc = "smart_attribute_raw{device=\"sda\",id=\"199\"}";
    assert_eq!(change(samples[1], crc).unwrap()["delta"], 2);
    let a = alerts(&out, crc);
    assert_eq!(a.len(), 1, "{out:?}");
    assert!(
        a[0]["how_to_split"].as_str().unwrap().contains("cable"),
        "{}",
        a[0]
    );
    assert_eq!(samples[0]["gauges"]["md_degraded{array=\"md0\"}"], 0.0);
    assert_eq!(samples[3]["gauges"]["md_degraded{array=\"md0\"}"], 1.0);
    assert_eq!(alerts(&out, "md_degraded{array=\"md0\"}").len(), 1);
    let t = "temperature_celsius{sensor=\"hwmon/drivetemp/temp1\"}";
    assert_eq!(samples[0]["gauges"][t], 41.0);
    assert_eq!(alerts(&out, t).len(), 1);
}

#[test]
fn watch_exec_gets_the_alert_on_stdin_and_is_time_bounded() {
    let d = tempfile::tempdir().unwrap();
    let steps = leak_steps(d.path(), 4, 0, |i| i as u64);
    let sink = d.path().join("alerts.jsonl");
    let cmd = format!("cat >> '{}'", sink.display());
    let out = replay(&steps, &["--no-store", "--exec", &cmd]);
    assert!(out.status.success(), "{}", stderr(&out));
    let got = std::fs::read_to_string(&sink).unwrap();
    let alert: Value = serde_json::from_str(got.lines().next().unwrap()).unwrap();
    assert_eq!(alert["series"], RX_DROPPED);
    assert_eq!(alert["rule"], "increased_repeatedly");

    let started = Instant::now();
    let out = replay(
        &steps,
        &["--no-store", "--exec", "sleep 30", "--exec-timeout", "0.3"],
    );
    assert!(out.status.success());
    assert!(stderr(&out).contains("was killed"), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn watch_rejects_bad_flags_and_trees() {
    for (args, needle) in [
        (vec!["--interval", "0"], "--interval '0'"),
        (vec!["--increases", "0"], "'0' is out of range: give 1 to"),
        (vec!["--count", "0"], "--count '0'"),
        (vec!["--replay", "/nonexistent/tree"], "/nonexistent/tree"),
        (
            vec!["--metrics-listen", "256.0.0.1:1"],
            "cannot listen on '256.0.0.1:1'",
        ),
    ] {
        let out = nastune()
            .arg("watch")
            .arg("--no-store")
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
    // A tree without a time: the error names the fix.
    let d = tempfile::tempdir().unwrap();
    let s = Step::new(d.path(), "rpi2-luks", 0);
    std::fs::remove_file(s.dir.join("proc/uptime")).unwrap();
    let out = replay(&[s], &["--no-store"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(".nastune/timestamp.json"),
        "{}",
        stderr(&out)
    );
}

/// A strict reader of the Prometheus text format 0.0.4 (promtool is in the
/// 96 MB `prometheus` package, too heavy for CI here): every sample line
/// belongs to a family declared with HELP then TYPE, names and labels are
/// valid, label values are properly escaped, values parse, no duplicates.
fn check_exposition(text: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let valid_name = |n: &str| {
        let mut c = n.chars();
        c.next()
            .is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == ':')
            && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == ':')
    };
    let mut families: std::collections::HashMap<String, String> = Default::default();
    let mut helped: std::collections::HashSet<String> = Default::default();
    let mut seen: std::collections::HashSet<String> = Default::default();
    if !text.ends_with('\n') {
        errors.push("no final newline".into());
    }
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap_or("");
            if !valid_name(name) || !helped.insert(name.into()) {
                errors.push(format!("bad or repeated HELP: {line}"));
            }
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut p = rest.split(' ');
            let (name, kind) = (p.next().unwrap_or(""), p.next().unwrap_or(""));
            if !helped.contains(name) || families.contains_key(name) {
                errors.push(format!("TYPE without HELP or repeated: {line}"));
            }
            if !["counter", "gauge", "untyped", "summary", "histogram"].contains(&kind) {
                errors.push(format!("bad type: {line}"));
            }
            if kind == "counter" && !name.ends_with("_total") {
                errors.push(format!("counter not named *_total: {line}"));
            }
            families.insert(name.into(), kind.into());
        } else if line.starts_with('#') || line.is_empty() {
            errors.push(format!("unexpected line: {line:?}"));
        } else {
            let (series, value) = match line.rsplit_once(' ') {
                Some(x) => x,
                None => {
                    errors.push(format!("no value: {line}"));
                    continue;
                }
            };
            let (name, labels) = match series.split_once('{') {
                Some((n, l)) => (n, l.strip_suffix('}')),
                None => (series, Some("")),
            };
            if !families.contains_key(name) {
                errors.push(format!("sample before its TYPE: {line}"));
            }
            let Some(mut l) = labels else {
                errors.push(format!("unclosed labels: {line}"));
                continue;
            };
            while !l.is_empty() {
                let Some((k, rest)) = l.split_once("=\"") else {
                    errors.push(format!("bad label: {line}"));
                    break;
                };
                if !valid_name(k) || k.starts_with("__") {
                    errors.push(format!("bad label name {k:?}: {line}"));
                }
                let mut end = None;
                let mut chars = rest.char_indices();
                while let Some((i, ch)) = chars.next() {
                    match ch {
                        '\\' => match chars.next() {
                            Some((_, '\\' | '"' | 'n')) => {}
                            _ => errors.push(format!("bad escape: {line}")),
                        },
                        '"' => {
                            end = Some(i);
                            break;
                        }
                        '\n' => errors.push(format!("raw newline: {line}")),
                        _ => {}
                    }
                }
                let Some(end) = end else {
                    errors.push(format!("unterminated label value: {line}"));
                    break;
                };
                l = &rest[end + 1..];
                l = l.strip_prefix(',').unwrap_or(l);
            }
            let ok = value.parse::<f64>().is_ok() || ["NaN", "+Inf", "-Inf"].contains(&value);
            if !ok {
                errors.push(format!("bad value: {line}"));
            }
            if families.get(name).is_some_and(|k| k == "counter")
                && value.parse::<f64>().is_ok_and(|v| v < 0.0)
            {
                errors.push(format!("negative counter: {line}"));
            }
            if !seen.insert(series.to_string()) {
                errors.push(format!("duplicate series: {line}"));
            }
        }
    }
    errors
}

#[test]
fn watch_metrics_endpoint_serves_valid_prometheus_text() {
    assert!(
        !check_exposition("x_total 1\n").is_empty(),
        "the checker rejects untyped lines"
    );
    assert!(
        !check_exposition("# HELP a_total a\n# TYPE a_total counter\na_total{b=\"\\q\"} 1\n")
            .is_empty()
    );
    let d = tempfile::tempdir().unwrap();
    let (child, addr) = metrics_watch(d.path());
    let get = |path: &str| {
        let mut s = TcpStream::connect(&addr).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut r = String::new();
        s.read_to_string(&mut r).unwrap();
        r
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let body = loop {
        let r = get("/metrics");
        let (head, body) = r.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
        assert!(head.contains("text/plain; version=0.0.4"), "{head}");
        // Wait for a second sample so counters have totals.
        if body.contains("nastune_watch_samples_total 2") || Instant::now() > deadline {
            break body.to_string();
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(get("/other").starts_with("HTTP/1.1 404"));
    drop(child);
    let errors = check_exposition(&body);
    assert!(errors.is_empty(), "{errors:#?}\n{body}");
    assert!(
        body.contains("# TYPE nastune_net_rx_dropped_total counter"),
        "{body}"
    );
    assert!(
        body.contains("nastune_net_rx_dropped_total{device=\"lo\"}"),
        "{body}"
    );
    assert!(
        body.contains("nastune_counter_wraps_total{metric="),
        "{body}"
    );
    // promtool, when installed, must agree.
    if let Ok(mut p) = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        p.stdin.take().unwrap().write_all(body.as_bytes()).unwrap();
        let o = p.wait_with_output().unwrap();
        assert!(
            o.status.success(),
            "promtool: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    } else {
        println!("promtool not installed: checked with the strict in-test parser only");
    }
}

#[test]
fn watch_replays_trees_from_probe_capture() {
    let d = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..2).map(|i| d.path().join(format!("c{i}"))).collect();
    for dir in &dirs {
        let o = nastune()
            .args(["probe", "--no-store", "--capture"])
            .arg(dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(dir.join(".nastune/timestamp.json").is_file());
    }
    let mut c = nastune();
    c.args(["watch", "--json", "--no-store", "--no-smart", "--replay"])
        .args(&dirs);
    let out = lines(&c.output().unwrap());
    let times: Vec<f64> = out
        .iter()
        .filter(|l| l["type"] == "sample")
        .map(|l| l["time_unix_s"].as_f64().unwrap())
        .collect();
    assert_eq!(times.len(), 2);
    assert!(times[0] > 1.7e9 && times[1] >= times[0], "{times:?}");
}

/// A /proc-only tree (no sys, no boot id, no time): /proc/net/dev and
/// /proc/diskstats with these rx bytes and sda reads.
fn proc_only_tree(base: &Path, i: usize, rx_bytes: u64, reads: u64) -> PathBuf {
    let dir = base.join(format!("p{i}"));
    std::fs::create_dir_all(dir.join("proc")).unwrap();
    std::fs::create_dir_all(dir.join("proc/net")).unwrap();
    std::fs::write(
        dir.join("proc/net/dev"),
        format!(
            "Inter-|   Receive                                                |  Transmit\n \
             face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n  \
             eth0: {rx_bytes} 1000 0 0 0 0 0 0 5000 50 0 0 0 0 0 0\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("proc/diskstats"),
        format!(
            "   8       0 sda {reads} 0 800 40 10 0 80 20 0 60 60 0 0 0 0\n   \
             8       1 sda1 {reads} 0 800 40 10 0 80 20 0 60 60 0 0 0 0\n"
        ),
    )
    .unwrap();
    dir
}

#[test]
fn watch_replay_of_proc_only_trees_reads_proc_and_flags_decreases_as_resets() {
    let d = tempfile::tempdir().unwrap();
    // rx_bytes falls from 4_000_000_000 to 100: a 2^32 "wrap" by netdata's guess,
    // but the width is unknown without sysfs, so it is a reset.
    let trees = [
        proc_only_tree(d.path(), 0, 3_000_000_000, 100),
        proc_only_tree(d.path(), 1, 4_000_000_000, 150),
        proc_only_tree(d.path(), 2, 100, 200),
    ];
    let run = |extra: &[&str]| {
        let mut c = nastune();
        c.args(["watch", "--json", "--no-smart", "--no-store"])
            .args(extra)
            .arg("--replay");
        for t in &trees {
            c.arg(t);
        }
        c.output().unwrap()
    };
    // Without a time in the trees and without --interval: refused, naming both fixes.
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--interval SECS"), "{}", stderr(&out));

    let all = lines(&run(&["--interval", "5"]));
    let samples: Vec<&Value> = all.iter().filter(|l| l["type"] == "sample").collect();
    assert_eq!(samples.len(), 3);
    assert_eq!(samples[1]["time_unix_s"], 5.0);
    assert_eq!(samples[2]["boot_id"], samples[0]["boot_id"]);
    let rx = change(samples[1], RX_BYTES).expect("rx bytes read from /proc/net/dev");
    assert_eq!(rx["step"], "increase");
    assert_eq!(rx["rate_per_sec"], 200_000_000.0);
    let reads = change(samples[1], "disk_reads{device=\"sda\"}").expect("sda from diskstats");
    assert_eq!(reads["step"], "increase");
    assert!(
        change(samples[1], "disk_reads{device=\"sda1\"}").is_none(),
        "a partition is not a disk: {}",
        samples[1]
    );
    assert_eq!(change(samples[2], RX_BYTES).unwrap()["step"], "reset");
    assert_eq!(samples[2]["wraps"], 0);
}

/// Kernel-log lines new since the last tree alert at once (a class never seen
/// before counts from 0), and the rx_dropped alert names the driver counter
/// that moved with it, as `advise` would.
#[test]
fn watch_replay_alerts_on_new_kernel_log_lines_and_explains_drops() {
    let base = tempfile::tempdir().unwrap();
    let kmsg = std::fs::read_to_string(fixtures().join("boxes/rpi2-luks/.nastune/kmsg")).unwrap();
    let steps: Vec<Step> = (0..2)
        .map(|i| {
            let s = Step::new(base.path(), "rpi2-luks", i);
            let (dropped, driver) = [(100, 5), (400, 300)][i];
            s.time(T0 + i as u64 * 60)
                .write(&format!("{ETH0}/address"), "b8:27:eb:00:00:01")
                .stat("rx_dropped", dropped)
                .write(
                    ".nastune/ethtool-stats/eth0.json",
                    &format!("{{\"value\": [{{\"name\": \"rx_drops\", \"value\": {driver}}}]}}"),
                );
            if i == 1 {
                s.write(
                    ".nastune/kmsg",
                    &format!(
                        "{kmsg}[ 9000.000000] usb 1-1.3: reset high-speed USB device number 4 using dwc_otg\n\
                         [ 9001.000000] Out of memory: Killed process 360 (smbd) total-vm:236348kB"
                    ),
                );
            }
            s
        })
        .collect();
    let l = lines(&replay(&steps, &["--no-store"]));
    assert_eq!(
        alerts(&l, "kernel_log_usb_reset{device=\"usb 1-1.3\"}").len(),
        1,
        "{l:#?}"
    );
    assert_eq!(alerts(&l, "kernel_log_oom").len(), 1, "{l:#?}");
    // The under-voltage lines were there before watching began: no alert.
    assert!(alerts(&l, "kernel_log_undervoltage_throttle").is_empty());
    let drop = alerts(&l, "net_rx_dropped{device=\"eth0\"}");
    assert!(!drop.is_empty(), "{l:#?}");
    let evidence = drop[0]["evidence"].as_str().unwrap();
    assert!(evidence.contains("'rx_drops' grew +295"), "{evidence}");
    assert!(!evidence.contains("harmless"), "{evidence}");
}

/// A child process killed when the test ends, however it ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `watch --metrics-listen` on a free loopback port; returns the child
/// and the address it serves.
fn metrics_watch(dir: &Path) -> (Killed, String) {
    let mut child = nastune()
        .args(["watch", "--no-store", "--no-smart", "--interval", "0.5"])
        .args(["--count", "120", "--metrics-listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .current_dir(dir)
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    let addr = first
        .trim()
        .strip_prefix("serving Prometheus metrics at http://")
        .and_then(|a| a.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("unexpected stderr: {first}"))
        .to_string();
    (Killed(child), addr)
}

/// One request; the answer and how long it took (at most 3 s, then it fails).
fn timed_request(addr: &str, request: &[u8]) -> (String, Duration) {
    let t = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let _ = s.write_all(request);
    let mut r = Vec::new();
    let got = s.read_to_end(&mut r);
    assert!(got.is_ok(), "no answer within 3 s: {got:?}");
    (String::from_utf8_lossy(&r).into_owned(), t.elapsed())
}

fn scrape_within(addr: &str, limit: Duration, what: &str) {
    let (r, took) = timed_request(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 200 OK"), "{what}: {r}");
    eprintln!("scrape with {what}: {took:?}");
    assert!(took < limit, "{what}: the scrape took {took:?}");
}

/// Repro: one connection at a time with a 5 s read timeout made a scrape wait
/// 4.6 s behind one idle connection and past 90 s behind thirty, or behind one
/// client sending a byte every 2 s. Now each scrape is answered at once.
#[test]
fn watch_metrics_scrapes_are_not_held_up_by_idle_slow_or_many_clients() {
    let d = tempfile::tempdir().unwrap();
    let (_child, addr) = metrics_watch(d.path());
    let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    scrape_within(&addr, Duration::from_millis(500), "no other client");

    // Thirty idle connections from thirty addresses, five that drip a byte
    // every 2 s, and one that stops half-way through its head.
    let idle: Vec<TcpStream> = (0..30u8)
        .map(|i| crate::util::connect_from([127, 0, 3, 1 + i], port).unwrap())
        .collect();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let drippers: Vec<_> = (0..5)
        .map(|_| {
            let (addr, stop) = (addr.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(&addr).unwrap();
                for &b in b"GET /metrics HTTP/1.1\r\n".iter() {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) || s.write_all(&[b]).is_err()
                    {
                        break;
                    }
                    std::thread::sleep(Duration::from_secs(2));
                }
            })
        })
        .collect();
    let mut half = TcpStream::connect(&addr).unwrap();
    half.write_all(b"GET /metrics HTTP/1.1\r\nHost:").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    scrape_within(
        &addr,
        Duration::from_millis(500),
        "30 idle, 5 dripping, 1 half-sent",
    );
    std::thread::sleep(Duration::from_millis(2500));
    scrape_within(&addr, Duration::from_millis(500), "the same 2.5 s later");
    // The slow ones were closed at their request deadline (2 s).
    half.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let mut b = Vec::new();
    assert_eq!(
        half.read_to_end(&mut b).ok(),
        Some(0),
        "half-sent head still open"
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for h in drippers {
        h.join().unwrap();
    }
    drop(idle);

    // A flood: 600 connections from 100 addresses, held open, against a table of
    // 64; the scrape that follows evicts the oldest and is answered.
    let flood: Vec<TcpStream> = (0..600u16)
        .filter_map(|i| crate::util::connect_from([127, 0, 4, 1 + (i % 100) as u8], port).ok())
        .collect();
    assert!(flood.len() > 500, "{} flood connections", flood.len());
    scrape_within(
        &addr,
        Duration::from_secs(1),
        "600 flood connections held open",
    );
    drop(flood);

    // Bad requests get their status, also through the real binary.
    let mut huge = b"GET /metrics HTTP/1.1\r\n".to_vec();
    huge.extend(std::iter::repeat_n(b"X-Pad: aaaaaaaaaaaaaaaa\r\n".as_slice(), 2000).flatten());
    let (r, _) = timed_request(&addr, &huge);
    assert!(r.starts_with("HTTP/1.1 431 "), "{r}");
    let (r, _) = timed_request(&addr, b"GET /metrics\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 400 Bad Request"), "{r}");
    assert!(r.contains("malformed request line 'GET /metrics'"), "{r}");
    let (r, _) = timed_request(&addr, b"GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 400 Bad Request"), "{r}");
}

#[test]
fn watch_names_the_counters_that_grew_and_sums_up_at_the_end() {
    let t = tempfile::tempdir().unwrap();
    let steps: Vec<Step> = (0..3)
        .map(|i| {
            let s = Step::new(t.path(), "rpi2-luks", i);
            let i = i as u64;
            s.time(T0 + i * 10)
                .write(&format!("{ETH0}/address"), "b8:27:eb:00:00:01")
                .stat("rx_bytes", 1_000 + i * 4_000_000)
                .stat("tx_bytes", 1_000 + i * 300);
            s
        })
        .collect();
    let mut c = nastune();
    c.args(["watch", "--no-smart", "--no-store", "--replay"]);
    for s in &steps {
        c.arg(&s.dir);
    }
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    // Each sample line names the biggest growth, not only a count of them.
    let second = out.lines().nth(1).unwrap_or_default();
    assert!(
        second.contains(&format!("most: {RX_BYTES} +4000000")),
        "{out}"
    );
    // And the end sums up the whole watch: samples, span, what grew most.
    let tail: Vec<&str> = out.lines().rev().take(2).collect();
    assert!(
        tail[1].starts_with("watch: 3 sample(s) replayed from trees")
            && tail[1].contains("(0m 20s)"),
        "{out}"
    );
    assert!(
        tail[0].contains(&format!("grew most: {RX_BYTES} +8000000")),
        "{out}"
    );
}
