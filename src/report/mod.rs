//! Presentation: plain data in, text out. Nothing here reads the system.

pub mod bench_disk_text;
pub mod format;
pub mod probe_text;
