//! `nastune compare` and `nastune report` on real runs: a loop device slowed
//! between runs, and the HTML page rendered by headless Chromium.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{Need, QUICK_CRYPTO, nastune, require, run_with_db, skip, stderr, stdout};

fn sh(cmd: &str) {
    let o = Command::new("sh").args(["-c", cmd]).output().unwrap();
    assert!(o.status.success(), "'{cmd}' failed: {}", stderr(&o));
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let o = run_with_db(dir, args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    stdout(&o)
}

fn compare_json(dir: &Path, a: &str, b: &str) -> serde_json::Value {
    serde_json::from_str(&ok(dir, &["compare", a, b, "--json"])).unwrap()
}

fn verdict(c: &serde_json::Value, quantity: &str) -> String {
    c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["quantity"] == quantity)
        .unwrap_or_else(|| panic!("no '{quantity}' row in {c}"))["verdict"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Where cgroup v1 mounts the blkio controller (absent on a cgroup v2-only system).
const BLKIO: &str = "/sys/fs/cgroup/blkio";

/// Where a group that caps one device's reads can be made: cgroup v1's blkio
/// throttle, else cgroup v2's io controller (io.max), Debian 12's default.
enum Controller {
    V1Blkio(PathBuf),
    V2Io(PathBuf),
}

/// The cgroup2 mount point in /proc/self/mountinfo text (`/sys/fs/cgroup` on a v2-only
/// system, `/sys/fs/cgroup/unified` on a hybrid one).
fn cgroup2_mount(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        if right.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        left.split_whitespace().nth(4).map(PathBuf::from)
    })
}

fn controller() -> Result<Controller, String> {
    let v1 = Path::new(BLKIO);
    if v1.join("blkio.throttle.read_iops_device").exists() {
        return Ok(Controller::V1Blkio(v1.to_path_buf()));
    }
    let no_v1 = format!("no cgroup v1 blkio controller at '{BLKIO}'");
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let Some(v2) = cgroup2_mount(&mountinfo) else {
        return Err(format!("{no_v1} and no cgroup2 mount"));
    };
    let controllers = std::fs::read_to_string(v2.join("cgroup.controllers")).unwrap_or_default();
    if !controllers.split_whitespace().any(|c| c == "io") {
        return Err(format!(
            "{no_v1}, and cgroup v2 at '{}' has no io controller (it has '{}')",
            v2.display(),
            controllers.trim()
        ));
    }
    Ok(Controller::V2Io(v2))
}

/// A cgroup that limits reads from one device, removed on drop.
struct Throttle(PathBuf);

impl Throttle {
    fn new(dev: &str, read_iops: u32) -> Result<Throttle, String> {
        let o = Command::new("lsblk")
            .args(["-dno", "MAJ:MIN", dev])
            .output()
            .map_err(|e| format!("lsblk: {e}"))?;
        let majmin = stdout(&o).trim().to_string();
        let name = format!("nastune-test-{}", std::process::id());
        let write = |path: PathBuf, text: String| {
            std::fs::write(&path, &text)
                .map_err(|e| format!("cannot write '{text}' to '{}': {e}", path.display()))
        };
        let (parent, file, limit) = match controller()? {
            Controller::V1Blkio(base) => (
                base,
                "blkio.throttle.read_iops_device",
                format!("{majmin} {read_iops}"),
            ),
            Controller::V2Io(root) => {
                // The group's parent must hand the io controller down; the root
                // cgroup may hold processes while doing so, other cgroups may not.
                let subtree = root.join("cgroup.subtree_control");
                let enabled = std::fs::read_to_string(&subtree).unwrap_or_default();
                if !enabled.split_whitespace().any(|c| c == "io") {
                    write(subtree, "+io".into())?;
                }
                (root, "io.max", format!("{majmin} riops={read_iops}"))
            }
        };
        let dir = parent.join(name);
        std::fs::create_dir(&dir).map_err(|e| format!("cannot create '{}': {e}", dir.display()))?;
        let group = Throttle(dir);
        write(group.0.join(file), limit)?;
        Ok(group)
    }

    /// Runs `cmd` inside the group: the child joins it before exec.
    fn run(&self, mut cmd: Command) -> std::process::Output {
        use std::os::unix::process::CommandExt;
        let procs =
            std::ffi::CString::new(self.0.join("cgroup.procs").to_str().unwrap().as_bytes())
                .unwrap();
        // SAFETY: only async-signal-safe calls (open, write, close) between fork
        // and exec; writing "0" moves the calling process.
        unsafe {
            cmd.pre_exec(move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let n = libc::write(fd, b"0".as_ptr().cast(), 1);
                libc::close(fd);
                if n != 1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        cmd.output().unwrap()
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        // Every process that joined has exited by now, so the group is empty.
        let _ = std::fs::remove_dir(&self.0);
    }
}

struct LoopDev(String);

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

#[test]
fn compare_sees_a_slowed_loop_device_and_not_a_repeat() {
    let throttling = || controller().map(|_| ());
    if !require(&[
        Need::Root,
        Need::Tool("losetup"),
        Need::Tool("blockdev"),
        Need::Tool("lsblk"),
        Need::Feature(
            "cgroup read throttling (v1 blkio or v2 io.max)",
            &throttling,
        ),
    ]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("disk.img");
    // Real data, not a sparse file: holes would be read without touching the disk.
    sh(&format!(
        "dd if=/dev/urandom of={} bs=1M count=64 status=none && sync",
        img.display()
    ));
    let o = Command::new("losetup")
        .args(["--find", "--show"])
        .arg(&img)
        .output()
        .unwrap();
    if !o.status.success() {
        skip(&format!("losetup failed: {}", stderr(&o)));
        return;
    }
    let dev = LoopDev(stdout(&o).trim().to_string());
    let bench = [
        "bench",
        "disk",
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--direct",
        "--ramp-time",
        "200ms",
        "--runtime",
        "300ms",
        "--loops",
        "8",
        &dev.0,
    ];
    // The slowed runs go into a cgroup that caps this device at a few
    // hundred reads/s: a slowdown of well over 10x that no load on the machine
    // can hide or fake.
    let cgroup = match Throttle::new(&dev.0, 300) {
        Ok(group) => group,
        Err(why) => {
            skip(&format!("cannot throttle {}: {why}", dev.0));
            return;
        }
    };
    // Welch's test is right 95 % of the time by design, and a loaded machine
    // drifts between runs; retries keep a true failure visible without
    // failing on the expected rate of false alarms.
    let mut verdicts = Vec::new();
    let mut quiet_attempts = 0;
    // One throw-away run in another store: the first run after the file was
    // written measured ~15 % slower than the next, every time.
    sh(&format!("cat {} > /dev/null", img.display()));
    let warm = tempfile::tempdir().unwrap();
    ok(warm.path(), &bench);
    for attempt in 0..3 {
        // The backing file in the page cache: the loop device answers from memory.
        sh(&format!(
            "blockdev --setra 256 {0} && cat {1} > /dev/null",
            dev.0,
            img.display()
        ));
        ok(dir.path(), &bench);
        ok(dir.path(), &bench);
        // Read-ahead changes too, so the settings diff has a line.
        sh(&format!("blockdev --setra 16 {0}", dev.0));
        let mut cmd = nastune();
        cmd.args(bench)
            .arg("--db")
            .arg(dir.path().join("nastune.db"));
        let o = cgroup.run(cmd);
        assert!(o.status.success(), "throttled bench: {}", stderr(&o));
        let first = (attempt * 3 + 1).to_string();
        let (second, third) = ((attempt * 3 + 2).to_string(), (attempt * 3 + 3).to_string());
        let same = compare_json(dir.path(), &first, &second);
        assert_eq!(same["schema_version"], 1);
        let slowed = compare_json(dir.path(), &first, &third);
        let got = (verdict(&same, "bandwidth"), verdict(&slowed, "bandwidth"));
        verdicts.push(got.clone());
        // Pass-to-pass spread of the baseline: above 30 % the box is too busy
        // (other jobs on these 2 cores) for any benchmark to show a 4x change.
        let cv = |c: &serde_json::Value| {
            let a = &c["rows"][0]["a"];
            a["variance"].as_f64().unwrap().sqrt() / a["mean"].as_f64().unwrap()
        };
        if cv(&same) <= 0.3 && cv(&slowed) <= 0.3 {
            quiet_attempts += 1;
        }
        if got == ("within_noise".to_string(), "worse".to_string()) {
            check_slowed(dir.path(), &dev.0, &slowed, &first, &third);
            return;
        }
        let row = |c: &serde_json::Value| {
            let r = &c["rows"][0];
            format!(
                "{} -> {} B/s, change {}% CI [{}, {}]",
                r["a"]["mean"], r["b"]["mean"], r["change_pct"], r["ci_low_pct"], r["ci_high_pct"]
            )
        };
        println!(
            "attempt {attempt}: {got:?}; repeat: {}; slowed: {}",
            row(&same),
            row(&slowed)
        );
    }
    if quiet_attempts == 0 {
        // Load is not something CI can promise, so this stays a printed skip
        // even under NASTUNE_REQUIRE_ALL; a wrong verdict on a quiet pass fails.
        println!(
            "SKIP compare_sees_a_slowed_loop_device_and_not_a_repeat: the machine is too busy to measure (pass-to-pass spread above 30 % in every attempt; verdicts {verdicts:?})"
        );
        return;
    }
    panic!("expected (within_noise, worse) for (repeat, slowed); got {verdicts:?}");
}

fn check_slowed(dir: &Path, dev: &str, slowed: &serde_json::Value, a: &str, b: &str) {
    assert!(slowed["rows"][0]["change_pct"].as_f64().unwrap() < 0.0);
    let name = dev.trim_start_matches("/dev/");
    let changed = slowed["settings"]["changed"].as_array().unwrap();
    assert!(
        changed
            .iter()
            .any(|c| c["setting"] == format!("queue {name} read_ahead_bytes") && c["b"] == "8192"),
        "read-ahead change missing: {changed:?}"
    );
    let text = ok(dir, &["compare", a, b]);
    assert!(
        text.contains("worse") && text.contains("read_ahead_bytes"),
        "{text}"
    );

    let html = dir.join("r.html");
    ok(dir, &["report", "1", "3", "--html", html.to_str().unwrap()]);
    check_html(&html, 2);
}

#[test]
fn single_numbers_need_repeats_and_report_renders() {
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &QUICK_CRYPTO);
    ok(dir.path(), &QUICK_CRYPTO);
    let c = compare_json(dir.path(), "1", "2");
    assert_eq!(verdict(&c, "encrypt"), "needs_repeats", "{c:#}");
    assert!(c["rows"][0]["ci_low_pct"].is_null());
    // Both runs stored a snapshot, so the settings diff was made.
    assert!(c["settings"]["unavailable"].is_null(), "{c:#}");
    let text = ok(dir.path(), &["compare", "1", "2"]);
    assert!(text.contains("needs repeats"), "{text}");

    let md = ok(dir.path(), &["report", "1", "2", "--markdown", "-"]);
    assert!(md.contains("### Encryption speed"), "{md}");
    assert!(
        md.contains("| run 1 (bench-crypto) | run 2 (bench-crypto) |"),
        "{md}"
    );
    let html = dir.path().join("r.html");
    ok(
        dir.path(),
        &["report", "1", "2", "--html", html.to_str().unwrap()],
    );
    check_html(&html, 1);
}

#[test]
fn unknown_runs_and_missing_format_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let o = run_with_db(dir.path(), &["compare", "1", "2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("history list"), "{}", stderr(&o));
    let o = run_with_db(dir.path(), &["report", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--html"), "{}", stderr(&o));
}

/// Self-contained, every SVG well-formed XML, and (with Chromium installed)
/// rendered without console errors into a non-blank picture.
pub fn check_html(path: &Path, min_svgs: usize) {
    let html = std::fs::read_to_string(path).unwrap();
    assert!(!html.contains("<script"), "the page must not need script");
    assert!(
        !html.contains("src=\"http"),
        "the page must not load from the network"
    );
    let mut svgs = 0;
    let mut rest = html.as_str();
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..].find("</svg>").expect("closed svg") + start + 6;
        roxmltree::Document::parse(&rest[start..end]).expect("well-formed SVG");
        svgs += 1;
        rest = &rest[end..];
    }
    assert!(
        svgs >= min_svgs,
        "{svgs} SVGs, expected at least {min_svgs}"
    );

    if !require(&[Need::Tool("chromium")]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("shot.png");
    let o = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1200,2000",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("profile").display()
        ))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", path.display()))
        .output()
        .unwrap();
    let log = stderr(&o);
    assert!(o.status.success(), "chromium failed: {log}");
    assert!(
        !log.contains("Uncaught") && !log.contains("ERROR:CONSOLE"),
        "console errors: {log}"
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = &buf[..info.buffer_size()];
    let n = px.len() as f64;
    let mean = px.iter().map(|&b| f64::from(b)).sum::<f64>() / n;
    let var = px
        .iter()
        .map(|&b| (f64::from(b) - mean).powi(2))
        .sum::<f64>()
        / n;
    // A blank page is one colour (variance 0); text and charts are not.
    assert!(var > 50.0, "screenshot looks blank: variance {var:.1}");
}

/// The `points` of every `<polyline>` in the SVG whose title starts with `title`.
fn chart_points(html: &str, title: &str) -> Vec<Vec<(f64, f64)>> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..].find("</svg>").expect("closed svg") + start + 6;
        let doc = roxmltree::Document::parse(&rest[start..end]).expect("well-formed SVG");
        let t = doc
            .root_element()
            .children()
            .find(|n| n.has_tag_name("title"))
            .and_then(|n| n.text())
            .unwrap_or("");
        if t.starts_with(title) {
            for l in doc.descendants().filter(|n| n.has_tag_name("polyline")) {
                out.push(
                    l.attribute("points")
                        .unwrap()
                        .split(' ')
                        .map(|p| {
                            let (x, y) = p.split_once(',').unwrap();
                            (x.parse().unwrap(), y.parse().unwrap())
                        })
                        .collect(),
                );
            }
        }
        rest = &rest[end..];
    }
    out
}

fn watch_replay(dir: &Path, steps: &[crate::watch::Step], extra: &[&str]) {
    let mut args = vec!["watch", "--json", "--no-smart"];
    args.extend_from_slice(extra);
    args.push("--replay");
    let dirs: Vec<String> = steps.iter().map(|s| s.dir.display().to_string()).collect();
    args.extend(dirs.iter().map(String::as_str));
    ok(dir, &args);
}

#[test]
fn report_draws_the_counters_of_a_watch_run() {
    let d = tempfile::tempdir().unwrap();
    let steps = crate::watch::wrap_steps(d.path());
    watch_replay(d.path(), &steps, &[]);
    let list = ok(d.path(), &["history", "list", "--json"]);
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list["runs"][0]["kind"], "watch", "{list}");
    assert_eq!(list["runs"][0]["status"], "ok", "{list}");

    let html = d.path().join("w.html");
    ok(d.path(), &["report", "1", "--html", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("10 samples (replayed trees)"), "{page}");
    // rx_bytes: the first sample at 0, then one point per sample that changed
    // it (sample 3 had no eth0): 1 + 8 points, rising except at the new NIC.
    let bytes = chart_points(&page, "eth0: bytes received");
    assert_eq!(bytes.len(), 1, "one chart for rx_bytes");
    assert_eq!(bytes[0].len(), 9, "{:?}", bytes[0]);
    assert!(
        bytes[0]
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 >= w[1].1)
    );
    // The series in words, not its key.
    assert!(!page.contains("net_rx_bytes{"), "{page}");
    let title = "eth0: bytes received: +4.0 GiB, 2 wraps, 1 reset, 1 reboot, 1 new identity";
    assert!(page.contains(title), "{page}");
    assert_eq!(page.matches("wrap at 2026-").count(), 2);
    // rx_dropped: the start, a reset (sample 2), +7 (4), +10 after the reboot
    // (7), the new NIC (8), and flat to the last sample (9).
    let drops = chart_points(&page, "eth0: received packets dropped");
    assert_eq!(drops.len(), 1);
    assert_eq!(drops[0].len(), 6, "{drops:?}");
    assert!(
        page.contains("eth0: received packets dropped: +17, 1 reset, 1 reboot, 1 new identity"),
        "{page}"
    );
    // Counters that never moved get no chart.
    assert!(chart_points(&page, "net_tx_errors").is_empty());
    check_html(&html, 2);

    let md = ok(d.path(), &["report", "1", "--markdown", "-"]);
    assert!(md.contains("### Counters over time: run 1 (watch)"), "{md}");
    assert!(
        md.contains("| `net_rx_bytes{device=\"eth0\"}` | 4.0 GiB |"),
        "{md}"
    );
    assert!(
        md.contains("2 wraps, 1 reset, 1 reboot, 1 new identity"),
        "{md}"
    );
    // One drop in two hours is a rate per hour, not "0.000".
    assert!(
        md.contains("| `net_rx_dropped{device=\"eth0\"}` | 17 | 5.00/h |"),
        "{md}"
    );
}

#[test]
fn watch_points_age_out_with_keep_days() {
    let d = tempfile::tempdir().unwrap();
    let steps = crate::watch::wrap_steps(d.path());
    // 0.2 days is 4.8 h: at the last write only the last three samples (4 h)
    // are young enough to keep.
    watch_replay(d.path(), &steps, &["--keep-days", "0.2"]);
    let html = ok(d.path(), &["report", "1", "--html", "-"]);
    let bytes = chart_points(&html, "eth0: bytes received");
    // The start of the run, then the three kept points.
    assert_eq!(bytes[0].len(), 1 + 3, "{bytes:?}");
    let o = run_with_db(d.path(), &["watch", "--keep-days", "0", "--replay", "/"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--keep-days '0'"), "{}", stderr(&o));
}

#[test]
fn report_draws_request_response_latency_percentiles() {
    let d = tempfile::tempdir().unwrap();
    ok(
        d.path(),
        &["bench", "net", "--loopback", "--rr", "-t", "1", "--json"],
    );
    let html = ok(d.path(), &["report", "1", "--html", "-"]);
    let curves = chart_points(&html, "Latency by percentile");
    // p50, p90 and p99 of the one RR test, rising with the percentile.
    assert_eq!(curves.len(), 1, "{html}");
    assert_eq!(curves[0].len(), 3, "{curves:?}");
    assert!(
        curves[0]
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 >= w[1].1)
    );
    let md = ok(d.path(), &["report", "1", "--markdown", "-"]);
    let row = md
        .lines()
        .find(|l| l.starts_with("| run 1 net rr "))
        .unwrap_or_else(|| panic!("no RR row: {md}"));
    // p50, p90, p99 measured; no p99.9 from an RR test.
    assert_eq!(
        row.matches(" us |").count() + row.matches(" ms |").count() + row.matches(" ns |").count(),
        3,
        "{row}"
    );
    assert!(row.ends_with("| - |"), "{row}");
}

#[test]
fn the_cgroup2_mount_is_found_on_v2_only_and_hybrid_systems() {
    let v2_only = "24 30 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n";
    assert_eq!(
        cgroup2_mount(v2_only),
        Some(PathBuf::from("/sys/fs/cgroup"))
    );
    let hybrid = "\
25 24 0:23 / /sys/fs/cgroup/blkio rw,relatime shared:10 - cgroup cgroup rw,blkio
26 24 0:24 / /sys/fs/cgroup/unified rw,relatime shared:11 - cgroup2 cgroup2 rw
";
    assert_eq!(
        cgroup2_mount(hybrid),
        Some(PathBuf::from("/sys/fs/cgroup/unified"))
    );
    assert_eq!(cgroup2_mount(&hybrid[..hybrid.find("26 ").unwrap()]), None);
}

/// The Pogoplug's check: the page says the verdict once as a phrase, not
/// "Limited by likely limited by CPU (…)".
#[test]
fn report_says_a_hedged_bottleneck_verdict_once() {
    let d = tempfile::tempdir().unwrap();
    let tree = crate::util::fixtures().join("boxes/pogoplug-v4");
    ok(d.path(), &["check", "--root", tree.to_str().unwrap()]);
    let html = ok(d.path(), &["report", "--html", "-"]);
    assert!(
        html.contains("<p><b>likely limited by the CPU (36.4-55.2 MB/s est.)</b>.</p>"),
        "{html}"
    );
    assert!(!html.contains("Limited by"), "{html}");
    let md = ok(d.path(), &["report", "--markdown", "-"]);
    assert!(
        md.contains("**write to /srv**: likely limited by the CPU (23.5-33.3 MB/s est.)\n"),
        "{md}"
    );
}
