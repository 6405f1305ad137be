//! The net judge: `net:HOST[:PORT]`, one `bench net` TCP test per run against a
//! peer running `nastune net serve` (or iperf3 -s): throughput in MB/s and
//! this box's CPU per GB; with `--rr`, request/response transactions per
//! second and their p99 latency (nastune's server only).

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};

use super::Better;
use super::judge::{JudgeError, JudgeOptions, Metric, Sample, cpu_seconds_per_gb};
use crate::bench::validity::GuardPlan;
use crate::net::client::{self, ClientConfig};
use crate::net::params::{RrMode, RrParams};
use crate::net::plan::{DEFAULT_PORT, Plan};
use crate::root::Root;

pub const BW: Metric = Metric {
    name: "mb_per_sec",
    unit: "MB/s",
    better: Better::Higher,
};

pub const TPS: Metric = Metric {
    name: "transactions_per_sec",
    unit: "trans/s",
    better: Better::Higher,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetJudge {
    pub host: String,
    pub port: u16,
}

impl NetJudge {
    /// `HOST`, `HOST:PORT` or `[V6]:PORT`.
    pub fn parse(s: &str) -> Result<NetJudge, JudgeError> {
        let bad = |why: &str| JudgeError::Target {
            kind: "net",
            target: s.to_string(),
            why: why.to_string(),
        };
        let (host, port) = match s.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') || h.ends_with(']') => (
                h.trim_matches(['[', ']']),
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| bad("the port is not 1 to 65535"))?,
            ),
            _ => (s.trim_matches(['[', ']']), DEFAULT_PORT),
        };
        if host.is_empty() {
            return Err(bad("write net:HOST[:PORT], e.g. net:192.168.1.5"));
        }
        Ok(NetJudge {
            host: host.to_string(),
            port,
        })
    }

    pub fn prepare(&self, opts: &JudgeOptions) -> Result<PreparedNet, JudgeError> {
        let addr = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| JudgeError::Target {
                kind: "net",
                target: self.to_string(),
                why: format!("cannot resolve '{}'", self.host),
            })?;
        // bench net counts whole seconds.
        let secs = opts.runtime.as_secs_f64().ceil().max(1.0) as u32;
        let mut cfg = Plan::tcp(&self.host, self.port, secs).client;
        cfg.rr = opts.rr.then_some(RrParams {
            mode: RrMode::Rr,
            request_bytes: 64,
            response_bytes: 64,
        });
        Ok(PreparedNet {
            spec: self.clone(),
            addr,
            cfg,
        })
    }
}

impl fmt::Display for NetJudge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "net:[{}]:{}", self.host, self.port)
        } else {
            write!(f, "net:{}:{}", self.host, self.port)
        }
    }
}

pub struct PreparedNet {
    spec: NetJudge,
    pub addr: SocketAddr,
    cfg: ClientConfig,
}

impl PreparedNet {
    pub fn measure(&self) -> Result<Sample, JudgeError> {
        let failed = |reason: String| JudgeError::Run {
            judge: "net",
            target: self.spec.to_string(),
            reason,
        };
        let r = client::run(&self.cfg, &mut |_| {}).map_err(|e| failed(e.to_string()))?;
        if let Some(rr) = &r.end.rr {
            return Ok(Sample {
                iops: Some(rr.transactions_per_sec),
                p99: Some(rr.latency_p99_ns as f64 / 1e3),
                ..Sample::default()
            });
        }
        let sum = r
            .end
            .sum_received
            .as_ref()
            .or(r.end.sum_sent.as_ref())
            .ok_or_else(|| failed("no stream totals in the result".into()))?;
        let cpu = &r.end.cpu_utilization_percent;
        // Percent of one CPU over the test, as iperf3 counts it.
        let cpu_ns = (cpu.host_total / 100.0 * sum.seconds * 1e9).max(0.0) as u64;
        Ok(Sample {
            bw: Some(sum.bits_per_second / 8e6),
            cpu_per_gb: cpu_seconds_per_gb(cpu_ns, sum.bytes),
            ..Sample::default()
        })
    }

    /// A peer on this box is part of the work.
    pub fn guard_plan(&self) -> GuardPlan {
        GuardPlan::peer(&Root::live(), 0.0, &self.spec.host, self.spec.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_ports_parse() {
        let j = NetJudge::parse("nas.local").unwrap();
        assert_eq!((j.host.as_str(), j.port), ("nas.local", 5201));
        let j = NetJudge::parse("10.0.0.2:7000").unwrap();
        assert_eq!((j.host.as_str(), j.port), ("10.0.0.2", 7000));
        let j = NetJudge::parse("[fe80::1]:7000").unwrap();
        assert_eq!((j.host.as_str(), j.port), ("fe80::1", 7000));
        assert_eq!(j.to_string(), "net:[fe80::1]:7000");
        let e = NetJudge::parse("h:0").unwrap_err().to_string();
        assert_eq!(
            e,
            "'h:0' is not a valid net judge: the port is not 1 to 65535"
        );
    }
}
