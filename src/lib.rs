//! nastune: probe, measure, advise and tune small Linux servers and NAS boxes.
//!
//! The data path: a [`root::Root`] is read by [`probe`] into a plain
//! [`probe::Snapshot`]; [`report`] turns plain data into text; [`store`] keeps every
//! run. Collection never prints and presentation never reads the system.

pub mod advise;
pub mod bench;
pub mod check;
pub mod cli;
pub mod cmd;
pub mod compare;
pub mod doc;
pub mod escape;
pub mod format;
pub mod histogram;
pub mod json;
pub mod net;
pub mod output;
pub mod probe;
pub mod progress;
pub mod report;
pub mod root;
pub mod runs;
pub mod smb;
pub mod stats;
pub mod store;
pub mod time;
pub mod timeline;
pub mod tune;
pub mod watch;

#[cfg(test)]
mod tests;
