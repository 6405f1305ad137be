//! What `bench net` runs: the client test and the server it runs against,
//! built from the command line (src/cli/bench_net.rs) or by `check`.

use std::net::TcpListener;
use std::time::Duration;

use super::client::ClientConfig;
use super::engine::{Interval, ReceiveMethod, SendMethod};
use super::params::Caps;
use super::{allow, handshake, server};

/// iperf3's port, which `nastune net serve` also listens on by default.
pub const DEFAULT_PORT: u16 = 5201;

#[derive(Debug, Clone)]
pub struct Plan {
    /// Start a server in this process and test against it on 127.0.0.1; the
    /// client's host and port are then those of that server.
    pub loopback: bool,
    pub client: ClientConfig,
}

impl Plan {
    /// One TCP stream to `host:port` for `secs` seconds, with every other
    /// setting at `bench net`'s default.
    pub fn tcp(host: &str, port: u16, secs: u32) -> Plan {
        Plan {
            loopback: false,
            client: ClientConfig {
                host: host.to_string(),
                port,
                udp: false,
                streams: 1,
                duration_secs: secs,
                omit_secs: 0,
                interval: Duration::from_secs(1),
                block_bytes: None,
                rate_bits_per_sec: None,
                window_bytes: 0,
                mss_bytes: 0,
                nodelay: false,
                reverse: false,
                bidir: false,
                udp_counters_64bit: false,
                send: SendMethod::Sendfile,
                receive: ReceiveMethod::MsgTrunc,
                psk: None,
                rr: None,
                connect_timeout: Duration::from_secs(5),
            },
        }
    }

    /// Like [`Plan::tcp`] against a server of our own on 127.0.0.1.
    pub fn loopback(secs: u32) -> Plan {
        Plan {
            loopback: true,
            ..Plan::tcp("127.0.0.1", DEFAULT_PORT, secs)
        }
    }

    /// Starts the loopback server when the plan asks for one; the client
    /// configuration to run, pointing at the server.
    pub fn start(&self) -> std::io::Result<ClientConfig> {
        let mut cfg = self.client.clone();
        if self.loopback {
            cfg.host = String::from("127.0.0.1");
            cfg.port = start_loopback_server(cfg.psk.clone())?;
        }
        Ok(cfg)
    }
}

/// How far the test is after interval `i`: its end over warm-up plus test time.
pub fn done_fraction(i: &Interval, cfg: &ClientConfig) -> f64 {
    let end = i.streams.iter().map(|s| s.end).fold(0.0, f64::max);
    end / f64::from(cfg.omit_secs + cfg.duration_secs).max(1.0)
}

/// Our own server on an ephemeral 127.0.0.1 port, in a thread of this process.
fn start_loopback_server(psk: Option<Vec<u8>>) -> std::io::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot listen on 127.0.0.1: {e}")))?;
    let port = listener.local_addr()?.port();
    let cfg = server::ServeConfig {
        caps: Caps {
            max_duration_secs: 86_400,
            max_streams: 128,
            max_bitrate: 0,
        },
        max_sessions: 1,
        allow: allow::default_allow(),
        psk,
        timeouts: server::Timeouts::default(),
        max_pending: handshake::MAX_PENDING,
        max_pending_per_addr: handshake::MAX_PENDING_PER_ADDR,
    };
    std::thread::Builder::new()
        .name("loopback-server".into())
        .spawn(move || server::serve(listener, cfg, Box::new(|_| {})))?;
    Ok(port)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_those_of_bench_net() {
        let p = Plan::tcp("nas.local", DEFAULT_PORT, 5);
        assert!(!p.loopback);
        let c = &p.client;
        assert_eq!((c.host.as_str(), c.port), ("nas.local", 5201));
        assert_eq!((c.streams, c.duration_secs, c.omit_secs), (1, 5, 0));
        assert_eq!(c.interval, Duration::from_secs(1));
        assert!(!c.udp && !c.reverse && !c.bidir && c.rr.is_none());
        assert_eq!(c.send, SendMethod::Sendfile);
        let l = Plan::loopback(2);
        assert!(l.loopback);
        assert_eq!(l.client.duration_secs, 2);
    }

    #[test]
    fn a_loopback_plan_starts_its_server_and_points_at_it() {
        let cfg = Plan::loopback(1).start().unwrap();
        assert_eq!(cfg.host, "127.0.0.1");
        assert_ne!(cfg.port, 0);
        assert!(std::net::TcpStream::connect(("127.0.0.1", cfg.port)).is_ok());
    }
}
