//! Network throughput and latency: an iperf3-compatible client and server
//! (`nastune bench net`, `nastune net serve`) with several sessions at once,
//! deadlines on every state, PSK auth, TCP_INFO and system CPU per interval.

pub mod allow;
pub mod auth;
pub mod client;
pub mod cpu;
pub mod doc;
pub mod engine;
pub mod fuzz;
pub mod handshake;
mod measured;
pub mod params;
pub mod plan;
pub mod protocol;
pub mod results;
pub mod rr;
pub mod series;
pub mod server;
pub mod sockopt;
pub mod tcp_info;
pub mod udp;
pub mod units;
