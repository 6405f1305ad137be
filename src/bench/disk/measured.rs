//! What compare and report take from a disk bench: bandwidth and IOPS per
//! workload (each pass a sample with --loops), and per-I/O latency without.

use super::{DiskBench, TestStatus};
use crate::compare::Metric;
use crate::compare::metrics::{Chart, Measured, latency_mean};
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
    ];

    fn engine(&self) -> Option<&str> {
        Some(&self.engine.name)
    }

    fn metrics(&self, out: &mut Vec<Metric>) {
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
