//! `nastune compare`.

use clap::Args;

use crate::store::RunId;

pub const LONG_ABOUT: &str = "Compare two stored runs (ids from 'nastune history list'): \
every benchmark present in both, matched by its workload (rw, block size, queue depth, jobs, \
direct ...; not by runtime), with the change in percent, the 95 % confidence interval of the \
change (Welch's t-test) and a verdict: better, worse or within noise. Samples are the passes \
of 'bench disk --loops N' for bandwidth and IOPS, every I/O for mean completion latency, and \
the reporting intervals of 'bench net' (-i) for sent and received throughput. Where a run kept \
only one number (a single pass, crypto points, --rr transactions/s) the verdict is 'needs \
repeats': one number has no noise to judge against.\n\nThen the settings that differ between \
the two runs' probe snapshots: sysctls, block queues, mount options, NIC settings.\n\n\
Examples:\n  nastune bench disk --loops 5 /srv   # run twice, change something in between\n  \
nastune compare 12 14\n  nastune compare 12 14 --json";

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline run id
    #[arg(value_parser = crate::cli::values::run_id)]
    pub a: RunId,
    /// The run compared against it
    #[arg(value_parser = crate::cli::values::run_id)]
    pub b: RunId,
    /// Print the versioned JSON document instead of the table
    #[arg(long)]
    pub json: bool,
}
