//! The validity guard against known truth: the same disk bench on an idle box
//! is `clean`, and with two busy loops on this box's cores is `disturbed`,
//! naming them. Its own test binary: cargo runs test binaries one after
//! another, so no other test of ours shares the CPU with it.

// Helpers say what they skipped or measured to the test harness, which
// captures stdout and stderr; nastune's own output rules do not apply here.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::{Child, Command};

fn bench(dir: &std::path::Path) -> serde_json::Value {
    let (code, doc) = bench_with(dir, &[]);
    assert_eq!(code, Some(0));
    doc
}

/// Exit code and document of a short direct random-read bench on `dir`.
fn bench_with(dir: &std::path::Path, extra: &[&str]) -> (Option<i32>, serde_json::Value) {
    let o = Command::new(env!("CARGO_BIN_EXE_nastune"))
        .args([
            "--no-store",
            "bench",
            "disk",
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--iodepth",
            "8",
            "--direct",
            "--runtime",
            "2",
            "--size",
            "64M",
            "--json",
        ])
        .args(extra)
        .arg(dir)
        .output()
        .expect("run nastune");
    let doc = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code(), doc)
}

struct Hogs(Vec<Child>);

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

#[test]
fn a_disk_bench_is_clean_on_an_idle_box_and_disturbed_beside_busy_loops() {
    // Direct I/O needs a filesystem that supports O_DIRECT: not tmpfs.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");

    // Idle: a chance background job (cron, journald) may disturb one attempt;
    // three in a row would mean the guard is wrong, or the box is not idle.
    let mut attempts = Vec::new();
    for _ in 0..3 {
        let doc = bench(dir.path());
        let v = doc["validity"].clone();
        if v["verdict"] == "clean" {
            attempts.clear();
            break;
        }
        attempts.push(v["reasons"].to_string());
    }
    assert!(
        attempts.is_empty(),
        "idle box judged disturbed: {attempts:#?}"
    );

    // One busy loop per core, started before the bench so settling sees them.
    let hogs = Hogs(
        (0..cores())
            .map(|_| {
                Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .spawn()
                    .expect("sh")
            })
            .collect(),
    );
    // --strict: a disturbed run still prints (and stores) its result, and exits 1.
    let (code, doc) = bench_with(dir.path(), &["--strict"]);
    drop(hogs);
    assert_eq!(code, Some(1), "--strict exits 1 on a disturbed run");
    let v = &doc["validity"];
    assert_eq!(v["verdict"], "disturbed", "{v:#}");
    let reasons = v["reasons"].to_string();
    assert!(
        reasons.contains("never became idle") && reasons.contains("other processes used"),
        "{reasons}"
    );
    assert!(
        reasons.contains("sh (pid"),
        "the busy loops are named: {reasons}"
    );
    // Each test carries its own verdict too.
    assert_eq!(doc["tests"][0]["validity"]["verdict"], "disturbed");
}
