//! `--replay DIR...`: each captured tree (from `nastune probe --capture` or a
//! previous live watch) is one sample, taken in the order given. A tree's time
//! is `.nastune/timestamp.json`, else proc/stat `btime` + proc/uptime, else
//! `--interval` after the tree before (`sample::read_replayed`).

use std::path::PathBuf;

use crate::root::{ReadError, Root};

/// Opens every tree first, so a typo fails before any sample is taken.
pub fn open_trees(dirs: &[PathBuf]) -> Result<Vec<Root>, ReadError> {
    dirs.iter().map(|d| Root::tree(d)).collect()
}
