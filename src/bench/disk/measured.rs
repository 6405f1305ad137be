//! What compare and report take from a disk bench: bandwidth and IOPS per
//! workload (each pass a sample with --loops), and per-I/O latency without.

use super::shared::totals;
use super::{DiskBench, TestResult, TestStatus};
use crate::doc::metrics::Metric;
use crate::doc::metrics::{Chart, Measured, latency_mean};
use crate::stats::Summary;

impl Measured for DiskBench {
    const KIND: &'static str = "disk";
    const CHARTS: &'static [Chart] = &[
        Chart {
            title: "Disk bandwidth",
            quantity: "bandwidth",
            unit: "bytes/s",
        },
        Chart {
            title: "Disk IOPS",
            quantity: "iops",
            unit: "IO/s",
        },
        Chart {
            title: "Disks alone vs together",
            quantity: "bandwidth alone vs together",
            unit: "bytes/s",
        },
        Chart {
            title: "Disk layer walk",
            quantity: "bandwidth per layer",
            unit: "bytes/s",
        },
    ];

    fn engine(&self) -> Option<&str> {
        Some(&self.engine.name)
    }

    fn metrics(&self, out: &mut Vec<Metric>) {
        self.shared_metrics(out);
        self.stack_metrics(out);
        for test in &self.tests {
            if test.status != TestStatus::Ok {
                continue;
            }
            // On a network filesystem the bench measured a file service: its
            // figures compare with other runs on such a mount, never a disk's.
            let (id, label) = match &self.target.network_fs {
                Some(n) => (
                    format!("file-service {} {}", n.fs_type, test.workload.identity()),
                    format!("{} ({})", test.label(), n.fs_type),
                ),
                None => (test.workload.identity(), test.label()),
            };
            let label = &label;
            let passes = test.spread.as_ref().map_or(&[][..], |s| &s.passes[..]);
            for (quantity, unit) in [("bandwidth", "bytes/s"), ("iops", "IO/s")] {
                let pick = |bw: f64, iops: f64| if quantity == "iops" { iops } else { bw };
                let (samples, from): (Vec<f64>, _) = if passes.len() > 1 {
                    let s = passes.iter().map(|p| pick(p.bw_bytes, p.iops)).collect();
                    (s, "passes (--loops)")
                } else {
                    let total = [&test.read, &test.write]
                        .into_iter()
                        .flatten()
                        .map(|d| pick(d.bw_bytes, d.iops))
                        .sum();
                    (vec![total], "single value")
                };
                if let Some(summary) = Summary::of(&samples) {
                    out.push(Metric {
                        benchmark: id.clone(),
                        label: label.clone(),
                        quantity,
                        unit,
                        higher_is_better: true,
                        summary,
                        samples_from: from,
                    });
                }
            }
            // Without passes, completion latency is the only noise estimate: every
            // I/O is a sample. I/Os are not independent, so this overstates
            // confidence; passes win.
            if passes.len() > 1 {
                continue;
            }
            let per_io = "per-I/O latency (use --loops for a sturdier verdict)";
            for (dir, quantity) in [
                (&test.read, "read latency mean"),
                (&test.write, "write latency mean"),
            ] {
                let stats = dir.as_ref().and_then(|d| d.clat_ns.as_ref());
                out.extend(latency_mean(&id, label, quantity, stats, per_io));
            }
        }
    }
}

/// One bandwidth bar: a single value, identified by `id`.
fn bar(id: String, label: String, quantity: &'static str, bw: f64) -> Option<Metric> {
    Some(Metric {
        benchmark: id,
        label,
        quantity,
        unit: "bytes/s",
        higher_is_better: true,
        summary: Summary::of(&[bw])?,
        samples_from: "single value",
    })
}

fn ran(t: &TestResult) -> bool {
    t.status == TestStatus::Ok
}

impl DiskBench {
    /// Each target alone and together, and the aggregate against the alone sum.
    fn shared_metrics(&self, out: &mut Vec<Metric>) {
        const Q: &str = "bandwidth alone vs together";
        let Some(first) = self.tests.first() else {
            return;
        };
        let w = first.workload.identity();
        for r in &self.targets {
            let dev = r.target.path.display().to_string();
            for (phase, t) in [("alone", &r.alone), ("together", &r.together)] {
                if ran(t) {
                    out.extend(bar(
                        format!("{w} {dev} {phase}"),
                        format!("{dev} {phase}"),
                        Q,
                        totals(t).0,
                    ));
                }
            }
        }
        if let Some(t) = &self.together {
            out.extend(bar(
                format!("{w} sum alone"),
                "sum alone".into(),
                Q,
                t.sum_alone_bw_bytes,
            ));
            out.extend(bar(
                format!("{w} all together"),
                "all together".into(),
                Q,
                t.bw_bytes,
            ));
        }
    }

    /// One bar per layer of a `--stack` walk.
    fn stack_metrics(&self, out: &mut Vec<Metric>) {
        for r in &self.stack {
            if r.tests.iter().all(ran) {
                let w = r
                    .tests
                    .first()
                    .map(|t| t.workload.identity())
                    .unwrap_or_default();
                out.extend(bar(
                    format!("{w} layer {} {}", r.depth, r.name),
                    format!("{} ({})", r.name, r.kind),
                    "bandwidth per layer",
                    r.bw_bytes,
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::doc::metrics::Measured;

    #[test]
    fn several_targets_and_a_walk_give_their_chart_bars() {
        let (d, s) = crate::report::bench_disk_text::tests::shared_and_stack();
        let mut out = Vec::new();
        d.metrics(&mut out);
        let bars: Vec<(&str, f64)> = out
            .iter()
            .filter(|m| m.quantity == "bandwidth alone vs together")
            .map(|m| (m.label.as_str(), m.summary.mean))
            .collect();
        assert_eq!(bars.len(), 8, "{bars:?}");
        assert!(bars.contains(&("/dev/loop2 together", 20e6)));
        assert!(bars.contains(&("all together", 60e6)));
        assert!(bars.contains(&("sum alone", 186e6)));
        let mut out = Vec::new();
        s.metrics(&mut out);
        let layers: Vec<&str> = out
            .iter()
            .filter(|m| m.quantity == "bandwidth per layer")
            .map(|m| m.label.as_str())
            .collect();
        assert_eq!(layers, ["file (file)", "loop0 (loop)"]);
    }
}
