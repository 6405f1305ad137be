//! The smb judge: `smb://HOST[:PORT]/SHARE[/DIR]`, one `bench smb` sequential
//! write (or, with `--smb-read`, a write then the timed read) per run, with
//! the security the server asks for (the client offers plain and does what
//! the server requires). Throughput, IOPS, the p99 of request latency, and
//! CPU per GB: this process's, plus smbd's and the kernel's when the server is
//! this box.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use super::judge::{JudgeError, JudgeOptions, Sample};
#[cfg(feature = "smb")]
use super::judge::{cpu_seconds_per_gb, p99_ns};
use crate::bench::smb::{Plan, Settings, Target, Workload};
use crate::bench::validity::GuardPlan;
use crate::smb::Credentials;
#[cfg(feature = "smb")]
use crate::smb::Security;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmbJudge {
    pub target: Target,
}

impl SmbJudge {
    pub fn parse(s: &str) -> Result<SmbJudge, JudgeError> {
        let rest = s.strip_prefix("smb:").unwrap_or(s);
        Target::parse(rest)
            .map(|target| SmbJudge { target })
            .map_err(|e| JudgeError::Target {
                kind: "smb",
                target: s.to_string(),
                why: e.to_string(),
            })
    }

    pub fn prepare(&self, opts: &JudgeOptions) -> Result<PreparedSmb, JudgeError> {
        let workload = if opts.smb_read {
            Workload::SeqRead
        } else {
            Workload::SeqWrite
        };
        let plan = Plan {
            target: self.target.clone(),
            credentials: opts
                .smb_credentials
                .clone()
                .unwrap_or(Credentials::Anonymous),
            settings: Settings::sequential(
                &self.target,
                match &opts.smb_credentials {
                    Some(Credentials::User { user, .. }) => Some(user.clone()),
                    _ => None,
                },
                vec![workload],
                opts.smb_size,
            ),
            timeout: Duration::from_secs(30),
        };
        let (addr, local) = resolve(&plan).map_err(|why| JudgeError::Target {
            kind: "smb",
            target: self.to_string(),
            why,
        })?;
        Ok(PreparedSmb {
            spec: self.clone(),
            workload,
            plan,
            addr,
            local,
        })
    }
}

#[cfg(feature = "smb")]
fn resolve(plan: &Plan) -> Result<(SocketAddr, bool), String> {
    crate::bench::smb::engine::resolve(plan).map_err(|e| e.to_string())
}

#[cfg(not(feature = "smb"))]
fn resolve(_: &Plan) -> Result<(SocketAddr, bool), String> {
    Err("this nastune was built without the 'smb' feature".into())
}

impl fmt::Display for SmbJudge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "smb:{}", self.target.display())
    }
}

pub struct PreparedSmb {
    spec: SmbJudge,
    workload: Workload,
    plan: Plan,
    addr: SocketAddr,
    /// The server is this box.
    pub local: bool,
}

impl PreparedSmb {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    #[cfg(feature = "smb")]
    pub fn measure(&self) -> Result<Sample, JudgeError> {
        let root = crate::root::Root::live();
        let failed = |reason: String| JudgeError::Run {
            judge: "smb",
            target: self.spec.to_string(),
            reason,
        };
        let run = crate::bench::smb::engine::run_security(
            &self.plan,
            self.addr,
            self.local,
            Security::Plain,
            &root,
            &mut |_| {},
        )
        .map_err(|e| failed(e.to_string()))?;
        let r = run
            .results
            .iter()
            .find(|r| r.workload == self.workload)
            .ok_or_else(|| failed(format!("no {} result", self.workload.name())))?;
        let server_ns: u64 = r
            .server
            .iter()
            .flat_map(|s| &s.stages)
            .map(|s| s.cpu_ns)
            .sum();
        Ok(Sample {
            bw: Some(r.bw_bytes / 1e6),
            iops: Some(r.iops),
            p99: p99_ns(r.clat_ns.as_ref()).map(|ns| ns / 1e3),
            cpu_per_gb: cpu_seconds_per_gb(r.client_cpu_ns + server_ns, r.bytes),
            ..Sample::default()
        })
    }

    #[cfg(not(feature = "smb"))]
    pub fn measure(&self) -> Result<Sample, JudgeError> {
        let _ = (&self.spec, self.workload, &self.plan);
        Err(JudgeError::Run {
            judge: "smb",
            target: self.spec.to_string(),
            reason: "this nastune was built without the 'smb' feature".into(),
        })
    }

    /// A local smbd (every process named smbd: it forks per client) and its
    /// disk I/O are part of the work.
    pub fn guard_plan(&self) -> GuardPlan {
        GuardPlan {
            io: self.local,
            peer_names: if self.local {
                vec!["smbd".into()]
            } else {
                Vec::new()
            },
            ..GuardPlan::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_parse_and_print() {
        let j = SmbJudge::parse("smb://nas.local/data/bench").unwrap();
        assert_eq!(j.target.host, "nas.local");
        assert_eq!(j.target.port, 445);
        assert_eq!(j.to_string(), "smb://nas.local/data/bench");
        let e = SmbJudge::parse("smb://nas.local").unwrap_err().to_string();
        assert!(
            e.starts_with("'smb://nas.local' is not a valid smb judge:"),
            "{e}"
        );
    }
}
