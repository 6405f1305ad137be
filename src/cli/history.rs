//! `nastune history list|show|rm`.

use clap::{Args, Subcommand};

use super::values;

#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// List stored runs, newest first
    List(HistoryListArgs),
    /// Show one run: its record, then its results as its command printed them
    Show(HistoryShowArgs),
    /// Remove runs and their documents from the store
    Rm(HistoryRmArgs),
    /// Write runs with their documents as one JSON file (to stdout), to compare or report them on another box
    Export(HistoryExportArgs),
    /// Read runs written by 'history export' into this store (all or nothing)
    Import(HistoryImportArgs),
}

#[derive(Debug, Args)]
pub struct HistoryExportArgs {
    /// Run ids to export (from `history list`)
    #[arg(required = true, num_args = 1.., value_parser = values::run_id)]
    pub runs: Vec<i64>,
}

#[derive(Debug, Args)]
pub struct HistoryImportArgs {
    /// A file written by 'nastune history export' (at most 4 MiB)
    #[arg(value_name = "FILE")]
    pub file: std::path::PathBuf,
}

#[derive(Debug, Args)]
pub struct HistoryListArgs {
    /// Only runs of this kind
    #[arg(long, value_name = "KIND", value_enum)]
    pub kind: Option<crate::store::RunKind>,
    /// At most this many runs
    #[arg(long, default_value_t = 50, value_name = "N", value_parser = values::whole("runs", 1..=1_000_000))]
    pub limit: u32,
    /// JSON instead of a table
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct HistoryShowArgs {
    /// The run id (from `history list`)
    #[arg(value_parser = values::run_id)]
    pub run: i64,
    /// JSON instead of a summary
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct HistoryRmArgs {
    /// Run ids to remove
    #[arg(required = true, num_args = 1.., value_parser = values::run_id)]
    pub runs: Vec<i64>,
}
