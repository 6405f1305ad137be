//! The terminal table for `bench disk`.

use std::fmt::Write;

use crate::bench::disk::shared::{SCALING_THRESHOLD, totals};
use crate::bench::disk::stack::LayerRun;
use crate::bench::disk::{DirResult, DiskBench, TestResult, TestStatus};
use crate::report::format;
use crate::store::RunId;

/// Nanoseconds as `850 ns`, `85.2 µs`, `12.3 ms`, `1.50 s`.
pub fn latency(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..1_000_000 => format!("{:.1} µs", ns as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

/// Bytes per second in MB/s (10^6, as disk vendors and CrystalDiskMark count).
pub fn rate(bytes_per_sec: f64) -> String {
    format::rate(bytes_per_sec)
}

fn row(out: &mut String, name: &str, dir: &str, d: &DirResult, cpu: Option<f64>) {
    let p = |q: f64| {
        d.clat_ns
            .as_ref()
            .and_then(|c| c.at(q))
            .map_or("-".into(), latency)
    };
    let max = d.clat_ns.as_ref().map_or("-".into(), |c| latency(c.max));
    let cpu = cpu.map_or("-".into(), |ns| format!("{:.1} µs", ns / 1e3));
    let _ = writeln!(
        out,
        "{name:<30} {dir:<5} {:>12} {:>10.0} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        rate(d.bw_bytes),
        d.iops,
        p(50.0),
        p(99.0),
        p(99.9),
        p(99.99),
        max,
        cpu
    );
}

/// `each_validity`: say a test's own validity (a suite; one test has the run's).
fn test(out: &mut String, t: &TestResult, each_validity: bool) {
    match t.status {
        TestStatus::Skipped | TestStatus::Failed => {
            let what = if t.status == TestStatus::Skipped {
                "skipped"
            } else {
                "FAILED"
            };
            let _ = writeln!(
                out,
                "{:<30} {what}: {}",
                t.label(),
                t.reason.as_deref().unwrap_or("")
            );
            return;
        }
        TestStatus::Ok | TestStatus::Interrupted => {}
    }
    let label = t.label();
    let mut first = true;
    for (dir, d) in [("read", &t.read), ("write", &t.write)] {
        if let Some(d) = d {
            let name = if first { label.as_str() } else { "" };
            row(
                out,
                name,
                dir,
                d,
                if first { t.cpu_ns_per_io } else { None },
            );
            first = false;
        }
    }
    if first {
        let _ = writeln!(out, "{:<30} no I/O completed", label);
    }
    if let Some(s) = t.sync.as_ref().and_then(|s| s.lat_ns.as_ref()) {
        let _ = writeln!(
            out,
            "{:<30} sync  {:>12} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "",
            format!("{} calls", s.n),
            "",
            s.at(50.0).map_or("-".into(), latency),
            s.at(99.0).map_or("-".into(), latency),
            s.at(99.9).map_or("-".into(), latency),
            s.at(99.99).map_or("-".into(), latency),
            latency(s.max)
        );
    }
    let mut detail = Vec::new();
    if let Some(sys) = t.cpu.as_ref().and_then(|c| c.system.as_ref()) {
        detail.push(format!(
            "system cpu: usr {:.1}% sys {:.1}% iowait {:.1}% irq {:.1}% softirq {:.1}%",
            sys.user_pct, sys.sys_pct, sys.iowait_pct, sys.irq_pct, sys.softirq_pct
        ));
    }
    if let Some(c) = &t.cpu
        && !c.kernel_threads.is_empty()
    {
        let k: Vec<String> = c
            .kernel_threads
            .iter()
            .map(|k| format!("{} {}", k.comm, latency(k.cpu_ns)))
            .collect();
        detail.push(format!("kernel threads: {}", k.join(", ")));
    }
    for l in &t.devices {
        detail.push(format!(
            "{}{} ({}): read {} in {} I/Os, wrote {} in {} I/Os, {} flushes",
            "  ".repeat(l.depth as usize),
            l.name,
            l.kind,
            format::bytes(l.read_bytes),
            l.reads,
            format::bytes(l.write_bytes),
            l.writes,
            l.flushes
        ));
    }
    if let Some(s) = &t.spread {
        detail.push(format!(
            "{} passes: {} to {} (mean {}, ±{:.1}%)",
            s.passes.len(),
            rate(s.bw_min),
            rate(s.bw_max),
            rate(s.bw_mean),
            s.bw_stddev_pct
        ));
    }
    if let Some(v) = &t.verify {
        detail.push(format!(
            "verify: {} blocks checked, {} bad",
            v.blocks_checked, v.mismatches
        ));
    }
    detail.extend(t.notes.iter().cloned());
    if let Some(v) = t
        .validity
        .as_ref()
        .filter(|v| each_validity && !v.is_clean())
    {
        // The reasons are the run's, said once under the table.
        detail.push(super::validity_text::short(v));
    }
    for d in detail {
        let _ = writeln!(out, "    {d}");
    }
}

/// A result's bandwidth, or why there is none.
fn figure(t: &TestResult) -> String {
    match t.status {
        TestStatus::Ok | TestStatus::Interrupted => rate(totals(t).0),
        TestStatus::Skipped => "skipped".into(),
        TestStatus::Failed => "FAILED".into(),
    }
}

/// Several targets: each alone and together, the aggregate and the verdict.
fn shared(out: &mut String, doc: &DiskBench) {
    let name = doc.tests.first().map_or("", |t| t.name.as_str());
    let _ = writeln!(
        out,
        "test: {name}, on each target alone, then on all {} together\n",
        doc.targets.len()
    );
    let _ = writeln!(out, "{:<30} {:>12} {:>12}", "target", "alone", "together");
    for r in &doc.targets {
        let _ = writeln!(
            out,
            "{:<30} {:>12} {:>12}",
            r.target.path.display().to_string(),
            figure(&r.alone),
            figure(&r.together)
        );
        for t in [&r.alone, &r.together] {
            if let Some(reason) = t.reason.as_deref() {
                let _ = writeln!(out, "    {reason}");
            }
        }
    }
    let Some(t) = &doc.together else {
        return;
    };
    let _ = writeln!(
        out,
        "{:<30} {:>12} {:>12}",
        "sum",
        rate(t.sum_alone_bw_bytes),
        rate(t.bw_bytes)
    );
    let verdict = match t.shared_ceiling_bytes_per_sec {
        Some(c) => format!(
            "shared ceiling {}: together the targets reach {:.0} % of their alone sum \
             (below {:.0} %: they share a bus, controller or backing store)",
            rate(c),
            t.scaling * 100.0,
            SCALING_THRESHOLD * 100.0
        ),
        None => format!(
            "no shared ceiling: together the targets reach {:.0} % of their alone sum",
            t.scaling * 100.0
        ),
    };
    let _ = writeln!(out, "\n{verdict}");
}

/// The layer walk: one row per layer, what it costs against the one below.
fn stack(out: &mut String, rows: &[LayerRun]) {
    let name = rows
        .first()
        .and_then(|r| r.tests.first())
        .map_or("", |t| t.name.as_str());
    let _ = writeln!(out, "test: {name}, at every layer, top first\n");
    let _ = writeln!(
        out,
        "{:<24} {:<10} {:>12} {:>10} {:>14}",
        "layer", "kind", "bandwidth", "IOPS", "cost vs below"
    );
    for r in rows {
        let indent = "  ".repeat(r.depth as usize);
        let bw = match r.tests.iter().find(|t| t.status == TestStatus::Failed) {
            Some(_) => "FAILED".to_string(),
            None => rate(r.bw_bytes),
        };
        let _ = writeln!(
            out,
            "{:<24} {:<10} {:>12} {:>10.0} {:>14}",
            format!("{indent}{}", r.name),
            r.kind,
            bw,
            r.iops,
            r.cost_pct.map_or("-".into(), |c| format!("{c:.1} %"))
        );
        for reason in r.tests.iter().filter_map(|t| t.reason.as_deref()) {
            let _ = writeln!(out, "    {reason}");
        }
    }
}

/// `run` is the stored run's id, `None` with `--no-store`.
pub fn render(doc: &DiskBench, run: Option<RunId>) -> String {
    let mut out = String::new();
    let t = &doc.target;
    let _ = writeln!(
        out,
        "target: {} ({:?}, {}, block {} B){}",
        t.path.display(),
        t.kind,
        format::bytes(t.size_bytes),
        t.logical_block_bytes,
        t.device
            .as_deref()
            .map_or(String::new(), |d| format!(" on {d}"))
    );
    if let Some(n) = &t.network_fs {
        let _ = writeln!(
            out,
            "file service: {} on {} (client, network, server and its disks together)",
            n.describe(),
            n.mount_point
        );
    }
    let _ = writeln!(
        out,
        "engine: {}{}",
        doc.engine.name,
        doc.engine
            .note
            .as_deref()
            .map_or(String::new(), |n| format!(" ({n})"))
    );
    if !doc.targets.is_empty() {
        shared(&mut out, doc);
    } else if !doc.stack.is_empty() {
        stack(&mut out, &doc.stack);
    } else {
        let _ = writeln!(
            out,
            "\n{:<30} {:<5} {:>12} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "test", "dir", "bandwidth", "IOPS", "p50", "p99", "p99.9", "p99.99", "max", "cpu/IO"
        );
        for test_result in &doc.tests {
            test(&mut out, test_result, doc.tests.len() > 1);
        }
        super::timeline_text::render(&mut out, &doc.tests);
    }
    if let Some(v) = &doc.validity {
        let _ = writeln!(out, "\n{}", super::validity_text::line(v));
    }
    if doc.interrupted {
        let _ = writeln!(out, "\ninterrupted: results above are partial");
    }
    let _ = match run {
        Some(id) => writeln!(
            out,
            "\nstored as run {id}; 'nastune history show {id}' shows it"
        ),
        None => writeln!(out, "\nnot stored (--no-store)"),
    };
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    use crate::bench::disk::shared::{self, TargetRun};
    use crate::bench::disk::stack::{self, LayerRun};

    fn doc() -> DiskBench {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/docs/disk-loops.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn at(t: &TestResult, bw: f64) -> TestResult {
        let mut t = t.clone();
        t.write = None;
        let r = t.read.get_or_insert(DirResult {
            io_bytes: 0,
            total_ios: 0,
            short_ios: 0,
            bw_bytes: 0.0,
            iops: 0.0,
            runtime_ms: 1000,
            clat_ns: None,
        });
        r.bw_bytes = bw;
        r.iops = bw / 1e6;
        t
    }

    /// Three targets at 62 MB/s each alone and 20 together; a walk over a loop device.
    pub(crate) fn shared_and_stack() -> (DiskBench, DiskBench) {
        let mut d = doc();
        let t = d.tests[0].clone();
        d.targets = ["/dev/loop0", "/dev/loop1", "/dev/loop2"]
            .iter()
            .map(|p| {
                let mut target = d.target.clone();
                target.path = p.into();
                TargetRun {
                    target,
                    layers: Vec::new(),
                    alone: at(&t, 62e6),
                    together: at(&t, 20e6),
                }
            })
            .collect();
        d.together = Some(shared::summarize(&d.targets));
        let mut s = doc();
        let row = |name: &str, kind: &str, depth: u32, bw: f64| LayerRun {
            name: name.into(),
            kind: kind.into(),
            depth,
            paths: Vec::new(),
            tests: vec![at(&t, bw)],
            bw_bytes: bw,
            iops: bw / 1e6,
            cost_pct: None,
        };
        s.stack = vec![row("file", "file", 0, 90e6), row("loop0", "loop", 1, 100e6)];
        stack::costs(&mut s.stack);
        (d, s)
    }

    #[test]
    fn several_targets_show_alone_together_and_the_ceiling() {
        let (d, s) = shared_and_stack();
        let text = render(&d, None);
        let words = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
        let lines: Vec<String> = text.lines().map(words).collect();
        assert!(
            lines.contains(&"/dev/loop1 62.0 MB/s 20.0 MB/s".to_string()),
            "{text}"
        );
        assert!(
            lines.contains(&"sum 186.0 MB/s 60.0 MB/s".to_string()),
            "{text}"
        );
        assert!(
            text.contains(
                "shared ceiling 60.0 MB/s: together the targets reach 32 % of their alone sum"
            ),
            "{text}"
        );
        let text = render(&s, None);
        assert!(text.contains("  loop0"), "{text}");
        assert!(text.contains("90.0 MB/s"), "{text}");
        assert!(text.contains("10.0 %"), "{text}");
    }

    /// A suite on a busy box: every test disturbed by the same condition.
    /// Its reason is said once, under the table, with the run's id.
    #[test]
    fn a_disturbed_suite_says_each_reason_once_and_its_run() {
        use crate::bench::validity::{Condition, Validity, Verdict};
        let mut d = doc();
        let t = d.tests[0].clone();
        d.tests = ["1.18", "1.37"]
            .iter()
            .map(|cores| {
                let reason = format!("other processes used {cores} cores during the run: rustc");
                let mut t = at(&t, 50e6);
                t.validity = Some(Validity {
                    verdict: Verdict::Disturbed,
                    reasons: vec![reason.clone()],
                    conditions: vec![Condition {
                        name: "other_cpu".into(),
                        figure: format!("{cores} cores"),
                        verdict: Verdict::Disturbed,
                        reason: Some(reason),
                    }],
                });
                t
            })
            .collect();
        d.validity = Validity::worst(d.tests.iter().filter_map(|t| t.validity.as_ref()));
        let text = render(&d, Some(7));
        assert_eq!(text.matches("other processes used").count(), 1, "{text}");
        assert!(
            text.contains("validity: disturbed (other cpu 1.37 cores)"),
            "{text}"
        );
        assert!(text.contains("rerun when the box is idle"), "{text}");
        assert!(
            text.contains("stored as run 7; 'nastune history show 7' shows it"),
            "{text}"
        );
        assert!(render(&d, None).contains("not stored (--no-store)"));
    }

    #[test]
    fn units() {
        assert_eq!(latency(850), "850 ns");
        assert_eq!(latency(85_200), "85.2 µs");
        assert_eq!(latency(12_300_000), "12.3 ms");
        assert_eq!(latency(1_500_000_000), "1.50 s");
        assert_eq!(rate(123_456_789.0), "123.5 MB/s");
    }
}
