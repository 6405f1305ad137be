//! What compare and report take from an SMB bench: bandwidth (or operations
//! per second where no data moved) and mean completion latency per workload,
//! phase and security mode, under the same block, depth and file settings.

use super::SmbReport;
use crate::doc::metrics::Metric;
use crate::doc::metrics::{Chart, Measured, latency_mean, single};

impl Measured for SmbReport {
    const KIND: &'static str = "smb";
    const CHARTS: &'static [Chart] = &[
        Chart {
            title: "SMB throughput",
            quantity: "smb bandwidth",
            unit: "bytes/s",
        },
        Chart {
            title: "SMB metadata and small files",
            quantity: "smb ops",
            unit: "ops/s",
        },
    ];

    /// Per workload (and phase) and security mode: bandwidth where data
    /// moved, operations per second otherwise, and the mean completion
    /// latency with every request or file as a sample.
    fn metrics(&self, out: &mut Vec<Metric>) {
        let s = &self.settings;
        for run in &self.runs {
            for r in &run.results {
                let sec = run.security.name();
                let id = format!(
                    "smb {} {} security={sec} block={} depth={} files={}x{}",
                    s.target,
                    r.label(),
                    run.block_bytes,
                    s.depth,
                    s.small_files,
                    s.small_file_bytes
                );
                let label = format!("{} {sec}", r.label());
                out.extend(if r.bytes > 0 {
                    single(&id, &label, "smb bandwidth", "bytes/s", r.bw_bytes)
                } else {
                    single(&id, &label, "smb ops", "ops/s", r.iops)
                });
                out.extend(latency_mean(
                    &id,
                    &label,
                    "completion latency mean",
                    r.clat_ns.as_ref(),
                    "per-request latency",
                ));
            }
        }
    }
}
