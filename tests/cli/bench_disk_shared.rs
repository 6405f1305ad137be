//! `bench disk` with several targets and `--stack`, on real loop devices
//! (root): a known shared ceiling found within 10 %, per-device
//! `--destroy-data`, and the layer walk of a file on ext4 on a loop device.

use std::path::Path;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use crate::util::*;

/// The backing store's read limit: 60 MiB/s shared by every loop device.
const LIMIT_BYTES_PER_SEC: f64 = 60.0 * 1048576.0;

fn bench(args: &[&str]) -> Output {
    nastune()
        .args(["bench", "disk", "--no-store", "--settle", "0", "--json"])
        .args(args)
        .output()
        .unwrap()
}

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "exit {:?}: {}", o.status, stderr(o));
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

fn losetup(args: &[&str]) -> String {
    let o = Command::new("losetup").args(args).output().unwrap();
    assert!(o.status.success(), "losetup {args:?}: {}", stderr(&o));
    stdout(&o).trim().to_string()
}

/// Loop devices detached and the storage daemon stopped on drop.
struct Throttled {
    loops: Vec<String>,
    daemon: Child,
    export: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Throttled {
    fn drop(&mut self) {
        for l in &self.loops {
            let _ = Command::new("losetup").args(["-d", l]).output();
        }
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
        let _ = Command::new("fusermount")
            .arg("-u")
            .arg(&self.export)
            .output();
    }
}

fn mounted(path: &Path) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(path.to_str().unwrap_or("")))
}

/// A raw image exported through qemu-storage-daemon's FUSE export behind one
/// `throttle-group` (reads capped at the limit), and `n` read-only loop
/// devices with direct I/O at different offsets of that one file. Each alone
/// reaches the limit; together they share it: the truth is the limit.
fn throttled_loops(n: usize, mib_each: u64) -> Option<Throttled> {
    if !require(&[
        Need::Root,
        Need::Path("/dev/fuse"),
        Need::Path("/dev/loop-control"),
        Need::Tool("qemu-storage-daemon"),
        Need::Tool("losetup"),
        Need::Tool("fusermount"),
    ]) {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let (img, export) = (dir.path().join("img.raw"), dir.path().join("export.raw"));
    std::fs::File::create(&img)
        .unwrap()
        .set_len((n as u64 * mib_each) << 20)
        .unwrap();
    std::fs::File::create(&export).unwrap();
    let daemon = Command::new("qemu-storage-daemon")
        .args([
            "--object",
            &format!(
                "throttle-group,id=tg0,x-bps-read={}",
                LIMIT_BYTES_PER_SEC as u64
            ),
            "--blockdev",
            &format!(
                "driver=file,filename={},node-name=file0,cache.direct=on",
                img.display()
            ),
            "--blockdev",
            "driver=throttle,throttle-group=tg0,file=file0,node-name=thr0",
            "--export",
            &format!(
                "type=fuse,id=exp0,node-name=thr0,mountpoint={},writable=off",
                export.display()
            ),
        ])
        .spawn()
        .unwrap();
    let mut t = Throttled {
        loops: Vec::new(),
        daemon,
        export: export.clone(),
        _dir: dir,
    };
    let start = Instant::now();
    while !mounted(&export) {
        if start.elapsed() > Duration::from_secs(10) {
            skip("qemu-storage-daemon's FUSE export did not appear in 10 s");
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let e = export.to_str().unwrap();
    for i in 0..n as u64 {
        let (off, len) = (format!("{}M", i * mib_each), format!("{}M", mib_each));
        t.loops.push(losetup(&[
            "-f",
            "--show",
            "-r",
            "--direct-io=on",
            "-o",
            &off,
            "--sizelimit",
            &len,
            e,
        ]));
    }
    Some(t)
}

fn bw(test: &serde_json::Value) -> f64 {
    test["read"]["bw_bytes"].as_f64().unwrap_or(0.0)
}

/// Known truth: three loop devices over one backing store throttled to
/// 60 MiB/s. Each alone is near the limit (far above a third of it); together
/// they add up to the limit, and the shared ceiling is found within 10 %.
#[test]
fn bench_disk_finds_the_shared_ceiling_of_three_loops_on_one_throttled_store() {
    let Some(t) = throttled_loops(3, 256) else {
        return;
    };
    let mut args = vec![
        "--rw",
        "read",
        "--bs",
        "1m",
        "--iodepth",
        "4",
        "--direct",
        "--runtime",
        "3",
    ];
    args.extend(t.loops.iter().map(String::as_str));
    let doc = json(&bench(&args));
    let targets = doc["targets"].as_array().expect("targets[]");
    assert_eq!(targets.len(), 3, "{doc}");
    for (r, l) in targets.iter().zip(&t.loops) {
        assert_eq!(r["target"]["path"], l.as_str());
        let alone = bw(&r["alone"]);
        assert!(
            alone > 0.8 * LIMIT_BYTES_PER_SEC,
            "{l} alone: {alone} B/s, expected near the {LIMIT_BYTES_PER_SEC} limit"
        );
        assert!(bw(&r["together"]) > 0.0, "{r}");
    }
    let together = &doc["together"];
    let ceiling = together["shared_ceiling_bytes_per_sec"]
        .as_f64()
        .unwrap_or_else(|| panic!("no shared ceiling found: {together}"));
    let err = (ceiling - LIMIT_BYTES_PER_SEC).abs() / LIMIT_BYTES_PER_SEC;
    assert!(
        err < 0.10,
        "ceiling {ceiling} B/s is {:.1} % off the {LIMIT_BYTES_PER_SEC} limit",
        err * 100.0
    );
    eprintln!("shared ceiling {ceiling:.0} B/s against the {LIMIT_BYTES_PER_SEC} B/s limit");
    assert_eq!(together["bw_bytes"].as_f64(), Some(ceiling));
    // The single-target fields hold the first target's alone run.
    assert_eq!(doc["target"]["path"], t.loops[0].as_str());
    assert_eq!(doc["tests"].as_array().map(Vec::len), Some(1));
}

/// A blank loop device over a sparse file (detached on drop).
struct Loop(String, tempfile::TempDir);

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg(self.1.path().join("mnt"))
            .output();
        let _ = Command::new("losetup").args(["-d", &self.0]).output();
    }
}

fn loop_dev(mib: u64) -> Loop {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("disk.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(mib << 20)
        .unwrap();
    std::fs::create_dir(dir.path().join("mnt")).unwrap();
    Loop(losetup(&["-f", "--show", img.to_str().unwrap()]), dir)
}

/// Root, loop devices and mkfs.ext4 (the reason printed when not).
fn can_make_ext4_loops() -> bool {
    require(&[
        Need::Root,
        Need::Path("/dev/loop-control"),
        Need::Tool("losetup"),
        Need::Tool("mkfs.ext4"),
    ])
}

fn sh(cmd: &str) {
    let o = Command::new("sh").args(["-c", cmd]).output().unwrap();
    assert!(o.status.success(), "'{cmd}' failed: {}", stderr(&o));
}

/// Writes to several devices: a blank one needs nothing, one holding a
/// filesystem needs its own --destroy-data, and a mounted one is refused
/// whatever is named.
#[test]
fn bench_disk_several_targets_take_destroy_data_per_device() {
    if !can_make_ext4_loops() {
        return;
    }
    let (a, b) = (loop_dev(64), loop_dev(64));
    sh(&format!("mkfs.ext4 -q {}", b.0));
    let write = |extra: &[&str]| {
        let mut args = vec!["--rw", "write", "--runtime", "200ms"];
        args.extend(extra);
        args.extend([a.0.as_str(), b.0.as_str()]);
        bench(&args)
    };
    let o = write(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains(&format!("pass --destroy-data {}", b.0)),
        "{}",
        stderr(&o)
    );
    // Naming the blank one only does not cover the other.
    let o = write(&["--destroy-data", &a.0]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains(&format!("refusing to write to '{}'", b.0)));
    let doc = json(&write(&["--destroy-data", &b.0]));
    assert_eq!(doc["targets"].as_array().map(Vec::len), Some(2), "{doc}");
    let mnt = b.1.path().join("mnt");
    sh(&format!(
        "mkfs.ext4 -q {} && mount {} {}",
        b.0,
        b.0,
        mnt.display()
    ));
    let o = write(&["--destroy-data", &a.0, "--destroy-data", &b.0]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("even with --destroy-data"),
        "{}",
        stderr(&o)
    );
}

/// The layer walk of a file on ext4 on a loop device: the file, then the
/// loop device, each read alone, with the file's cost against the device.
#[test]
fn bench_disk_stack_walks_a_file_on_ext4_on_a_loop_device() {
    if !can_make_ext4_loops() {
        return;
    }
    let l = loop_dev(96);
    let mnt = l.1.path().join("mnt");
    sh(&format!(
        "mkfs.ext4 -q {} && mount {} {}",
        l.0,
        l.0,
        mnt.display()
    ));
    let file = mnt.join("big");
    sh(&format!(
        "dd if=/dev/urandom of={} bs=1M count=32 status=none",
        file.display()
    ));
    let f = file.to_str().unwrap();
    let doc = json(&bench(&[
        "--stack",
        "--rw",
        "read",
        "--bs",
        "128k",
        "--direct",
        "--runtime",
        "500ms",
        f,
    ]));
    let rows = doc["stack"].as_array().expect("stack[]");
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    let dev = l.0.trim_start_matches("/dev/");
    assert_eq!(names, ["file", dev], "{doc}");
    assert_eq!(rows[0]["kind"], "file");
    assert_eq!(rows[1]["kind"], "loop");
    assert_eq!(rows[1]["paths"][0], l.0.as_str());
    for r in rows {
        assert!(r["bw_bytes"].as_f64().unwrap() > 0.0, "{r}");
    }
    let (top, below) = (
        rows[0]["bw_bytes"].as_f64().unwrap(),
        rows[1]["bw_bytes"].as_f64().unwrap(),
    );
    let cost = rows[0]["cost_pct"].as_f64().expect("the file's cost");
    assert!(
        (cost - (below - top) / below * 100.0).abs() < 1e-6,
        "{cost}"
    );
    assert!(
        rows[1]["cost_pct"].is_null(),
        "the bottom has nothing below"
    );
    // Writes are refused before anything runs.
    let o = nastune()
        .args(["bench", "disk", "--no-store", "--stack", "--rw", "write", f])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--rw read"), "{}", stderr(&o));
}
