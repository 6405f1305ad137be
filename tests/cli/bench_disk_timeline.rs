//! `bench disk`'s throughput over time on real devices: the series adds up to
//! the test's bytes, the device's counters ride along, and `--until-steady`
//! ends a throttled write once its rate settles. (The writeback cliff, which
//! depends on every other writer's dirty pages, is judged in the quiet binary.)

use std::process::Output;

use crate::loopdev::loop_dev;
use crate::util::*;
use crate::writeback::{THROTTLE, Throttle};

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "exit {:?}: {}", o.status, stderr(o));
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

fn sum(points: &[serde_json::Value], key: &str) -> u64 {
    points.iter().map(|p| p[key].as_u64().unwrap_or(0)).sum()
}

/// A 64 KiB direct write test on device `d` in 200 ms points.
fn direct_write(d: &str, more: &[&str]) -> Output {
    nastune()
        .args([
            "bench",
            "disk",
            "--no-store",
            "--rw",
            "write",
            "--bs",
            "64k",
        ])
        .args(["--direct", "--interval", "0.2", "--destroy-data", d])
        .args(more)
        .arg(d)
        .output()
        .unwrap()
}

#[test]
fn the_series_adds_up_to_the_tests_bytes_and_carries_the_devices_counters() {
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(l) = loop_dev(64, &[]) else { return };
    let d = l.dev.clone();
    let o = direct_write(&d, &["--runtime", "1", "--json"]);
    let v = json(&o);
    let t = &v["tests"][0];
    let tl = &t["timeline"];
    assert_eq!(tl["interval_ms"], 200, "{tl}");
    assert_eq!(tl["device"], l.name(), "{tl}");
    let points = tl["points"].as_array().unwrap();
    // 1 s in 200 ms points (the window may close a few ms late: a sixth,
    // short one; a busy box's last completion can come later still).
    assert!((5..=8).contains(&points.len()), "{tl}");
    let ours = t["write"]["io_bytes"].as_u64().unwrap();
    assert_eq!(sum(points, "bytes"), ours, "{tl}");
    assert_eq!(
        sum(points, "ops"),
        t["write"]["total_ios"].as_u64().unwrap()
    );
    // The device's completions, sampled apart from ours, tell the same story:
    // all but the I/O in flight when the first sample was read.
    let dev = sum(points, "dev_bytes");
    assert!(
        dev <= ours + (4 << 20) && dev * 10 >= ours * 9,
        "device {dev} vs ours {ours}: {tl}"
    );
    assert!(points.iter().all(|p| p["dirty_bytes"].is_u64()), "{tl}");
    // The text shows a sparkline row for the test.
    let o = direct_write(&d, &["--runtime", "600ms"]);
    let text = stdout(&o);
    assert!(
        text.contains("throughput over time (0.2 s per point"),
        "{text}"
    );
    assert!(
        text.lines()
            // The fastest column is a full bar: the line scales to its maximum.
            .any(|l| l.starts_with("SEQ64K Q1T1 write")
                && l.contains('█')
                && l.contains("MB/s to")),
        "{text}"
    );
}

#[test]
fn an_interval_out_of_range_is_refused_naming_the_value() {
    let o = nastune()
        .args(["bench", "disk", "--no-store", "--interval", "0.01", "."])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("'0.01' is not a number of seconds from 0.1 to 3600"),
        "{}",
        stderr(&o)
    );
}

/// The tests here that throttle a device run one at a time, and apart from
/// the one that counts a device's bytes: each one's figures depend on that.
/// (Those that change the dirty limits run in the quiet binary.)
static MACHINE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `--until-steady` stops once the last 10 s of rates are within ±15 %: a
/// direct write to a device throttled to 8 MiB/s is steady from the start, so
/// the test ends after the 10 s window and the 5 points before it (15 s at
/// 1 s a point), not at its 60 s cap.
#[test]
fn until_steady_stops_a_throttled_write_once_its_rate_settles() {
    if !require(&[Need::Path(THROTTLE)]) {
        return;
    }
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(l) = loop_dev(256, &[]) else { return };
    let guard = Throttle::set(&l.dev, 8 << 20);
    let d = l.dev.clone();
    let o = nastune()
        .args([
            "bench",
            "disk",
            "--no-store",
            "--rw",
            "write",
            "--bs",
            "64k",
        ])
        .args([
            "--direct",
            "--interval",
            "1",
            "--until-steady",
            "--runtime",
            "60",
        ])
        .args(["--settle", "0", "--destroy-data", &d, "--json", &d])
        .output()
        .unwrap();
    drop(guard);
    let v = json(&o);
    let t = &v["tests"][0];
    let steady = t["timeline"]["steady_ms"].as_u64();
    let ran = t["job_runtime_ms"].as_u64().unwrap();
    // 15 s when every interval is in the band; a busy box may push one
    // out and the window restarts, but the run ends well before its cap.
    let steady = steady.unwrap_or_else(|| panic!("never steady: {t}"));
    assert!(
        (15_000..=45_000).contains(&steady),
        "steady at {steady} ms: {t}"
    );
    assert!(ran < steady + 2_000, "ran {ran} ms: {t}");
    // The rate is the throttle's.
    let bw = t["write"]["bw_bytes"].as_f64().unwrap();
    assert!((bw - 8.0 * 1048576.0).abs() < 1048576.0, "{bw} B/s");
}
