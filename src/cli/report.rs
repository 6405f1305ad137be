//! `nastune report`.

use std::path::PathBuf;

use clap::Args;

use crate::store::RunId;

pub const LONG_ABOUT: &str = "Write stored runs as one self-contained HTML file (inline CSS \
and SVG charts; no script, no network: it opens anywhere and can be mailed) or as Markdown \
for a forum post.\n\nThe page shows the box (from a probe snapshot), the findings of an \
advise run, the bottleneck when one was named, bar charts per benchmark with one bar per run \
(give the before and after runs to see the change), latency percentile curves, and for a \
watch run every counter that moved over time (increase since the first sample, wraps and \
resets marked; at most 500 points per chart). Markdown gives the same as tables. Without RUN \
the newest stored run is used.\n\nExamples:\n  nastune report --html \
box.html\n  nastune report 3 7 9 --html before-after.html\n  nastune report 7 --markdown post.md\n  nastune history list --kind watch && nastune report 12 --html counters.html";

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("format").required(true).args(["html", "markdown"])))]
pub struct ReportArgs {
    /// Run ids to include (from `history list`) [default: the newest run]
    #[arg(value_parser = crate::cli::values::run_id)]
    pub runs: Vec<RunId>,
    /// Write the HTML page to FILE ('-' for stdout)
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write Markdown to FILE ('-' for stdout)
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}
