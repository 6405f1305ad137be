//! `nastune probe`.

use std::path::PathBuf;

use clap::Args;

pub const LONG_ABOUT: &str = "Inventory the box: host, CPU, memory, network interfaces, the \
storage stack, filesystems, sysctls, kernel crypto, file services and SMART.\n\n\
Each section reports ok, unsupported (with the reason) or failed (with the error); one \
unreadable file never fails the probe.\n\nExamples:\n  nastune probe\n  nastune probe --json\n  \
nastune probe --capture /tmp/mybox    # send this tree with a bug report\n  \
nastune probe --root /tmp/mybox       # read a captured tree back";

#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// Read the system from this tree (with proc/, sys/, etc/) instead of /
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Print the versioned JSON document instead of the summary
    #[arg(long)]
    pub json: bool,
    /// Copy every file the probe reads into DIR (must be new or empty)
    #[arg(long, value_name = "DIR")]
    pub capture: Option<PathBuf>,
}
