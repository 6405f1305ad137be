//! `nastune net serve`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::values;
use crate::net::params::Caps;
use crate::net::server::{ServeConfig, Timeouts};
use crate::net::{allow, auth, handshake};

pub const LONG_ABOUT: &str = "Network services for tests from other machines.\n\nExamples:\n  \
nastune net serve                      # port 5201, 2 sessions, private peers only\n  \
nastune net serve --psk-file /etc/nastune.psk --allow 192.168.1.0/24";

#[derive(Debug, Args)]
pub struct NetArgs {
    #[command(subcommand)]
    pub command: NetCommand,
}

#[derive(Debug, Subcommand)]
pub enum NetCommand {
    /// Serve iperf3 and nastune clients (several tests at once, busy answered at once)
    Serve(NetServeArgs),
}

#[derive(Debug, Args)]
pub struct NetServeArgs {
    /// TCP and UDP port to listen on
    #[arg(short = 'p', long, default_value_t = 5201, value_parser = values::port)]
    pub port: u16,
    /// Address to bind
    #[arg(short = 'B', long, default_value = "0.0.0.0", value_name = "ADDR")]
    pub bind: std::net::IpAddr,
    /// Tests that may run at the same time; one more gets ACCESS_DENIED at once
    #[arg(long, default_value_t = 2, value_parser = values::whole("sessions", 1..=64))]
    pub max_sessions: u32,
    /// Longest test (time plus omit) a client may ask for, in seconds
    #[arg(long, default_value_t = 60, value_name = "SECS", value_parser = values::whole("seconds", 1..=86400))]
    pub max_duration: u32,
    /// Most parallel streams per test
    #[arg(long, default_value_t = 16, value_parser = values::whole("streams", 1..=128))]
    pub max_streams: u32,
    /// Highest per-stream bitrate a client may ask for (e.g. 1G); unlimited if unset
    #[arg(long, value_name = "RATE", value_parser = crate::net::units::parse_rate)]
    pub max_bitrate: Option<u64>,
    /// Peers allowed to test (repeatable) [default: loopback and private ranges]
    #[arg(long, value_name = "CIDR")]
    pub allow: Vec<crate::net::allow::Cidr>,
    /// Require clients to prove this pre-shared key (HMAC-SHA256 challenge)
    #[arg(long, value_name = "FILE")]
    pub psk_file: Option<PathBuf>,
    /// Seconds a connection may take from connect to complete parameters, in all
    #[arg(long, default_value_t = crate::net::handshake::HANDSHAKE_DEADLINE_SECS, value_name = "SECS", value_parser = values::whole("seconds", 1..=300))]
    pub handshake_timeout: u32,
    /// One JSON line per finished session instead of a text line
    #[arg(long)]
    pub json: bool,
    /// Exit after this many sessions (for scripts and tests)
    #[arg(long, value_name = "N", value_parser = values::whole("sessions", 1..=1_000_000))]
    pub sessions: Option<u32>,
}

impl NetServeArgs {
    /// The server's limits, peers and key; reads the --psk-file.
    pub fn plan(&self) -> anyhow::Result<ServeConfig> {
        let psk = match &self.psk_file {
            Some(p) => Some(auth::load_psk(p)?),
            None => None,
        };
        let allow = if self.allow.is_empty() {
            allow::default_allow()
        } else {
            self.allow.clone()
        };
        Ok(ServeConfig {
            caps: Caps {
                max_duration_secs: self.max_duration,
                max_streams: self.max_streams,
                max_bitrate: self.max_bitrate.unwrap_or(0),
            },
            max_sessions: self.max_sessions as usize,
            allow,
            psk,
            timeouts: Timeouts {
                handshake: Duration::from_secs(self.handshake_timeout.into()),
                ..Timeouts::default()
            },
            max_pending: handshake::MAX_PENDING,
            max_pending_per_addr: handshake::MAX_PENDING_PER_ADDR,
        })
    }
}
