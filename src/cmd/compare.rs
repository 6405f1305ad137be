//! `nastune compare A B`: the same benchmarks in two stored runs side by side,
//! with a verdict per metric, and the settings that differed.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::bail;
use clap::Args;

use crate::cli::GlobalArgs;
use crate::store::{RunDocs, RunId, Store};

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

pub fn run(args: &CompareArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let Some(store) = super::open_store_to_read(global)? else {
        bail!("'compare' reads the store; drop --no-store");
    };
    let docs_a = load_documents(&store, args.a)?;
    let docs_b = load_documents(&store, args.b)?;
    let cmp = crate::compare::compare(args.a, &docs_a, args.b, &docs_b)?;
    let out = if args.json {
        let mut s = serde_json::to_string_pretty(&cmp)?;
        s.push('\n');
        s
    } else {
        crate::report::compare_text::render(&cmp, color_stdout())
    };
    crate::output::write_stdout(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// A run's documents, decoded; fails when the run does not exist.
pub fn load_documents(store: &Store, id: RunId) -> anyhow::Result<RunDocs> {
    store.run(id)?;
    Ok(store.load(id)?)
}

/// Colour only on a terminal, and never when NO_COLOR is set (no-color.org).
pub fn color_stdout() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}
