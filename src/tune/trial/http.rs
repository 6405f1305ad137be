//! The http judge: `http:URL`, one `bench http` keep-alive GET load per run
//! (4 connections on one thread): requests per second, body MiB/s, the p99 of
//! the whole request, and the load generator's CPU per GB of body.

use std::fmt;
use std::net::SocketAddr;

use super::judge::{JudgeError, JudgeOptions, Sample, cpu_seconds_per_gb, p99_ns};
use crate::bench::http::engine::ConnMode;
use crate::bench::http::target::{RequestSpec, Url};
use crate::bench::http::{self, Settings, tls};
use crate::bench::validity::GuardPlan;
use crate::root::Root;

#[derive(Debug, Clone, PartialEq)]
pub struct HttpJudge {
    pub url: Url,
}

impl HttpJudge {
    pub fn parse(s: &str) -> Result<HttpJudge, JudgeError> {
        Url::parse(s)
            .map(|url| HttpJudge { url })
            .map_err(|e| JudgeError::Target {
                kind: "http",
                target: s.to_string(),
                why: e.to_string(),
            })
    }

    pub fn prepare(&self, opts: &JudgeOptions) -> Result<PreparedHttp, JudgeError> {
        let addr = http::resolve(&self.url).map_err(|e| JudgeError::Target {
            kind: "http",
            target: self.to_string(),
            why: e.to_string(),
        })?;
        let settings = Settings {
            threads: 1,
            connections: 4,
            duration_secs: opts.runtime.as_secs_f64(),
            warmup_secs: 0.0,
            timeout_secs: 10.0,
            rate_per_sec: None,
            request: RequestSpec {
                method: "GET".into(),
                headers: Vec::new(),
                body_bytes: 0,
                body: Vec::new(),
            },
            trust: tls::Trust::System,
            insecure: false,
        };
        Ok(PreparedHttp {
            spec: self.clone(),
            addr,
            settings,
        })
    }
}

impl fmt::Display for HttpJudge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "http:{}", self.url.display())
    }
}

pub struct PreparedHttp {
    spec: HttpJudge,
    pub addr: SocketAddr,
    settings: Settings,
}

impl PreparedHttp {
    pub fn measure(&self) -> Result<Sample, JudgeError> {
        let r = http::measure(
            &self.spec.url,
            ConnMode::KeepAlive,
            &self.settings,
            &Root::live(),
        )
        .map_err(|e| JudgeError::Run {
            judge: "http",
            target: self.spec.to_string(),
            reason: e.to_string(),
        })?;
        Ok(Sample {
            bw: Some(r.body_bytes_per_sec / 1e6),
            iops: Some(r.requests_per_sec),
            p99: p99_ns(r.latency.total_ns.as_ref()).map(|ns| ns / 1e3),
            cpu_per_gb: cpu_seconds_per_gb(
                r.cpu.process_user_ns + r.cpu.process_sys_ns,
                r.body_bytes,
            ),
            ..Sample::default()
        })
    }

    pub fn guard_plan(&self) -> GuardPlan {
        GuardPlan::peer(&Root::live(), 0.0, &self.spec.url.host, self.spec.url.port)
    }
}
