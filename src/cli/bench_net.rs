//! `nastune bench net`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::values;
use crate::net::auth;
use crate::net::client::ClientConfig;
use crate::net::engine::{ReceiveMethod, SendMethod};
use crate::net::params::{RrMode, RrParams};
use crate::net::plan::Plan;

pub const LONG_ABOUT: &str = "Measure the network against 'nastune net serve' or an unmodified 'iperf3 -s'.\n\n\
Throughput is what the receiver counted. CPU is shown both as iperf3 does (this \
process, % of one core) and system-wide including softirq, on both ends when the \
server is nastune.\n\nExamples:\n  nastune bench net nas.local\n  \
nastune bench net nas.local -P 2 -R -t 5\n  nastune bench net nas.local -u -b 100M\n  \
nastune bench net nas.local --rr     # transactions/s and p50/p99 latency\n  \
nastune bench net --loopback         # this box's own TCP ceiling";

#[derive(Debug, Args)]
pub struct BenchNetArgs {
    /// Server to test against (omit with --loopback)
    #[arg(required_unless_present = "loopback", conflicts_with = "loopback")]
    pub host: Option<String>,
    /// Run a server in this process and test against it on 127.0.0.1
    #[arg(long)]
    pub loopback: bool,
    /// Server port
    #[arg(short = 'p', long, default_value_t = 5201, value_parser = values::port)]
    pub port: u16,
    /// Seconds to transmit
    #[arg(short = 't', long, default_value_t = 10, value_parser = values::whole("seconds", 1..=86400))]
    pub time: u32,
    /// Parallel streams
    #[arg(short = 'P', long, default_value_t = 1, value_parser = values::whole("streams", 1..=128))]
    pub parallel: u32,
    /// Server sends, client receives
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    pub reverse: bool,
    /// Both directions at once
    #[arg(long)]
    pub bidir: bool,
    /// Seconds of warm-up left out of the totals
    #[arg(short = 'O', long, default_value_t = 0, value_parser = values::whole("seconds", 0..=600))]
    pub omit: u32,
    /// Seconds between interval reports (0 = none)
    #[arg(short = 'i', long, default_value_t = 1.0, value_name = "SECS", value_parser = values::real("seconds", 0.0..=86_400.0))]
    pub interval: f64,
    /// UDP instead of TCP
    #[arg(short = 'u', long)]
    pub udp: bool,
    /// Target bitrate per stream in bits/s (K/M/G = 1000ⁿ) [UDP default: 1M]
    #[arg(short = 'b', long, value_name = "RATE", value_parser = crate::net::units::parse_rate)]
    pub bitrate: Option<u64>,
    /// Socket buffer size (K/M = 1024ⁿ)
    #[arg(short = 'w', long, value_name = "SIZE", value_parser = crate::net::units::parse_size)]
    pub window: Option<u32>,
    /// Block size per write (TCP default 128K, UDP 1448)
    #[arg(short = 'l', long, value_name = "SIZE", value_parser = crate::net::units::parse_block_size)]
    pub length: Option<u32>,
    /// TCP maximum segment size
    #[arg(short = 'M', long = "set-mss", value_name = "BYTES")]
    pub mss: Option<u32>,
    /// TCP_NODELAY on the data connections
    #[arg(short = 'N', long)]
    pub no_delay: bool,
    /// 64-bit UDP packet counters
    #[arg(long)]
    pub udp_counters_64bit: bool,
    /// Plain write()/read() instead of sendfile() and recv(MSG_TRUNC)
    #[arg(long)]
    pub copy: bool,
    /// Request/response latency test on kept-open connections (nastune server only)
    #[arg(long, conflicts_with_all = ["crr", "udp", "reverse", "bidir"])]
    pub rr: bool,
    /// Connect+request+response per transaction (nastune server only)
    #[arg(long, conflicts_with_all = ["udp", "reverse", "bidir"])]
    pub crr: bool,
    /// Request size for --rr/--crr
    #[arg(long, default_value = "64", value_name = "SIZE", value_parser = crate::net::units::parse_size)]
    pub request_size: u32,
    /// Response size for --rr/--crr
    #[arg(long, default_value = "64", value_name = "SIZE", value_parser = crate::net::units::parse_size)]
    pub response_size: u32,
    /// Pre-shared key file for a server started with --psk-file
    #[arg(long, value_name = "FILE")]
    pub psk_file: Option<PathBuf>,
    /// Print the versioned JSON document (iperf3 key names) instead of text
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub guard: crate::cli::guard::GuardArgs,
}

impl BenchNetArgs {
    /// The test these arguments ask for; reads the --psk-file.
    pub fn plan(&self) -> anyhow::Result<Plan> {
        if !(self.interval == 0.0 || (0.1..=60.0).contains(&self.interval)) {
            anyhow::bail!(
                "--interval '{}' must be 0 or between 0.1 and 60 seconds",
                self.interval
            );
        }
        let psk = match &self.psk_file {
            Some(p) => Some(auth::load_psk(p)?),
            None => None,
        };
        let rr = (self.rr || self.crr).then_some(RrParams {
            mode: if self.crr { RrMode::Crr } else { RrMode::Rr },
            request_bytes: self.request_size,
            response_bytes: self.response_size,
        });
        let copy = self.copy || self.udp;
        let base = if self.loopback {
            Plan::loopback(self.time)
        } else {
            Plan::tcp(
                self.host.as_deref().unwrap_or_default(),
                self.port,
                self.time,
            )
        };
        Ok(Plan {
            loopback: self.loopback,
            client: ClientConfig {
                udp: self.udp,
                streams: self.parallel,
                omit_secs: self.omit,
                interval: Duration::from_secs_f64(self.interval),
                block_bytes: self.length,
                rate_bits_per_sec: self.bitrate,
                window_bytes: self.window.unwrap_or(0),
                mss_bytes: self.mss.unwrap_or(0),
                nodelay: self.no_delay,
                reverse: self.reverse,
                bidir: self.bidir,
                udp_counters_64bit: self.udp_counters_64bit,
                send: if copy {
                    SendMethod::Copy
                } else {
                    SendMethod::Sendfile
                },
                receive: if copy {
                    ReceiveMethod::Copy
                } else {
                    ReceiveMethod::MsgTrunc
                },
                psk,
                rr,
                ..base.client
            },
        })
    }
}
