//! Presentation: plain data in, text out. Nothing here reads the system.

pub mod crypto_text;
pub mod format;
pub mod probe_text;
