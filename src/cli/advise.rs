//! `nastune advise`.

use std::path::PathBuf;

use clap::Args;

pub const LONG_ABOUT: &str = "Turn a probe of this box into findings: what is misconfigured or \
outdated for Linux 6.x and Samba 4.x, why, and the typed change that fixes it.\n\n\
Exit codes: 0 ok, 1 a finding at or above --fail-on, 2 usage or runtime error.\n\nExamples:\n  \
nastune advise\n  nastune advise --list\n  nastune advise --json --fail-on warning";

#[derive(Debug, Args)]
pub struct AdviseArgs {
    /// Read the system from this tree (with proc/, sys/, etc/) instead of /
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Print the rule registry instead of evaluating it
    #[arg(long)]
    pub list: bool,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
    /// Exit with status 1 when a finding is at or above this severity
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<crate::advise::Severity>,
}
