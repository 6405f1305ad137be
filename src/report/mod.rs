//! Presentation: plain data in, text out. Nothing here reads the system.

pub mod format;
pub mod net_text;
pub mod probe_text;
