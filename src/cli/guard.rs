//! The validity guard's flags, shared by every command that measures
//! (`bench disk|net|crypto|http`, `check`, `tune try`).

use clap::Args;

use super::values;
use crate::bench::validity::DEFAULT_SETTLE_S;

#[derive(Debug, Clone, Args)]
pub struct GuardArgs {
    /// Seconds to wait for an idle box before measuring (0 = don't wait); a box that
    /// never goes idle makes the run 'disturbed'
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_SETTLE_S,
          value_parser = values::real("seconds", 0.0..=600.0))]
    pub settle: f64,
    /// Exit 1 when the run was disturbed (other processes' CPU, swapping,
    /// throttling, a syncing array, the page cache …; see the result's validity)
    #[arg(long)]
    pub strict: bool,
}

impl Default for GuardArgs {
    fn default() -> Self {
        GuardArgs {
            settle: DEFAULT_SETTLE_S,
            strict: false,
        }
    }
}
