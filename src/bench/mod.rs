//! Measurements of what the box does. Pieces every bench shares live here:
//! latency histograms, CPU sampling, block-device counters, Ctrl-C handling.

pub mod cpu;
pub mod crypto;
pub mod disk;
pub mod diskstats;
pub use crate::histogram;
pub mod http;
pub mod interrupt;
pub mod smb;
pub mod validity;
