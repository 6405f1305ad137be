//! Presentation: plain data in, text out. Nothing here reads the system.

pub mod advise_text;
pub mod bench_disk_text;
pub mod check_text;
pub mod compare_text;
pub mod counter_series;
pub mod crypto_text;
pub use crate::format;
pub mod history_text;
pub mod html;
pub mod http_text;
pub mod markdown;
pub mod net_text;
pub mod netsys_text;
pub mod probe_text;
pub mod runs;
pub mod smb_text;
pub mod svg;
pub mod timeline_html;
pub mod timeline_text;
pub mod tune_folklore_text;
pub mod tune_text;
pub mod tune_try_text;
pub mod validity_text;
pub mod watch_text;
