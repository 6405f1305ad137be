//! `nastune bench http`.

use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::bench::http::target::{self, RequestSpec, Url};
use crate::bench::http::{ConnMode, Plan, Settings, tls};

pub const LONG_ABOUT: &str = "Load a web server with HTTP/1.1 requests over TCP or TLS and \
measure requests per second and latency, split into connect, TLS handshake, time to first \
byte and total, with percentiles; responses by status class, socket errors by kind, and the \
TLS version, cipher suite, key exchange and certificate key type negotiated.\n\n\
Closed loop by default: each connection sends its next request when the response ends. With \
--rate R the load is open loop: R requests per second in total, each due at a fixed time, \
and latency counts from that intended time, so a stalled server cannot hide its queue (no \
coordinated omission); the report shows the achieved rate and how many requests went out late.\n\n\
Connection modes (--mode, comma-separated to run several): keep-alive (many requests per \
connection), close (a new connection and a full TLS handshake per request) and resume (a new \
connection per request, resuming the TLS session). With --compare URL2 every mode runs \
against both URLs and the report gives the slowdown factor, e.g. http:// against https:// of \
the same server.\n\n\
Certificates are verified against the system roots in /etc/ssl/certs, or only against \
--cacert FILE, in which a self-signed server certificate is trusted as it is (byte for byte, \
also one marked CA:TRUE; its name and dates are still checked); --insecure accepts any certificate (handshake signatures are still checked, \
so the cost is real). The first request is sent alone first: if it fails, the error says why \
and no load starts. --timeout bounds each request from its start to its last byte, so a \
server that trickles bytes or never ends a body counts as timeouts; requests the end of the \
run cuts off are counted by phase, and a run in which no response completed exits 1.\n\nExamples:\n  nastune bench http http://nas.local/\n  \
nastune bench http https://nas.local/ -t 2 -c 50 -d 10 --mode keep-alive,close,resume\n  \
nastune bench http http://nas.local/ --compare https://nas.local/ --insecure --mode keep-alive,close\n  \
nastune bench http https://nas.local/api -X POST -H 'Content-Type: application/json' --body '{}'\n  \
nastune bench http http://nas.local/ --rate 2000 -c 100 --json";

#[derive(Debug, Args)]
pub struct HttpArgs {
    /// The URL to load (http:// or https://)
    pub url: String,
    /// Threads, each with its own event loop
    #[arg(short = 't', long, default_value_t = 2, value_parser = crate::cli::values::whole("threads", 1..=256))]
    pub threads: u32,
    /// Connections in total, spread over the threads
    #[arg(short = 'c', long, default_value_t = 10, value_parser = crate::cli::values::whole("connections", 1..=65536))]
    pub connections: u32,
    /// Seconds of measured load (after the warm-up)
    #[arg(short = 'd', long, value_name = "SECS", default_value_t = 10.0, value_parser = parse_secs)]
    pub duration: f64,
    /// Seconds of load before measuring starts
    #[arg(long, value_name = "SECS", default_value_t = 1.0, value_parser = parse_secs_or_zero)]
    pub warmup: f64,
    /// Seconds a request may take, connect to last byte, before it counts as a timeout
    #[arg(long, value_name = "SECS", default_value_t = 5.0, value_parser = parse_secs)]
    pub timeout: f64,
    /// Open loop: this many requests per second in total, latency from the intended send time
    #[arg(long, value_name = "REQ_PER_SEC", value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// Connection modes to run, comma-separated
    #[arg(long, value_enum, value_delimiter = ',', default_value = "keep-alive")]
    pub mode: Vec<ConnMode>,
    /// Run the same load against this URL too and report the slowdown factor per mode
    #[arg(long, value_name = "URL2")]
    pub compare: Option<String>,
    /// Request method
    #[arg(short = 'X', long, default_value = "GET")]
    pub method: String,
    /// Extra request header 'Name: value' (repeatable)
    #[arg(short = 'H', long = "header", value_name = "HEADER", value_parser = target::parse_header)]
    pub headers: Vec<(String, String)>,
    /// Request body
    #[arg(long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Request body read from a file (at most 1 MiB)
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    /// Trust only the certificates in this PEM file (CAs, or the server's own)
    #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
    pub cacert: Option<PathBuf>,
    /// Accept any server certificate (self-signed home servers)
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// Print the versioned JSON document instead of the summary
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub guard: crate::cli::guard::GuardArgs,
}

fn parse_secs_in(s: &str, min: f64) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds (e.g. 10 or 0.5)"))?;
    if !(min..=86_400.0).contains(&v) || (min == 0.0 && v < 0.0) {
        return Err(format!("'{s}' is out of range: use {min} to 86400 seconds"));
    }
    Ok(v)
}

fn parse_secs(s: &str) -> Result<f64, String> {
    parse_secs_in(s, 0.1)
}

fn parse_secs_or_zero(s: &str) -> Result<f64, String> {
    parse_secs_in(s, 0.0)
}

fn parse_rate(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a rate in requests per second (e.g. 1000)"))?;
    if !(0.1..=10_000_000.0).contains(&v) {
        return Err(format!(
            "'{s}' is out of range: use 0.1 to 10000000 requests per second"
        ));
    }
    Ok(v)
}

/// Largest request body; bodies are sent from memory on every request.
const MAX_BODY_BYTES: u64 = 1024 * 1024;

fn read_body(args: &HttpArgs) -> anyhow::Result<Vec<u8>> {
    if let Some(b) = &args.body {
        return Ok(b.clone().into_bytes());
    }
    let Some(path) = &args.body_file else {
        return Ok(Vec::new());
    };
    let context = || format!("cannot read --body-file '{}'", path.display());
    // Its errors name the file and say why ("cannot read 'F': …").
    let file = crate::root::open_regular(path).context("--body-file")?;
    let len = file.metadata().with_context(context)?.len();
    if len > MAX_BODY_BYTES {
        anyhow::bail!(
            "--body-file '{}' is {len} bytes; the limit is {MAX_BODY_BYTES} (1 MiB)",
            path.display()
        );
    }
    let mut body = Vec::new();
    file.take(MAX_BODY_BYTES)
        .read_to_end(&mut body)
        .with_context(context)?;
    Ok(body)
}

fn validate_method(m: &str) -> anyhow::Result<String> {
    if m.is_empty() || !m.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-') {
        anyhow::bail!("method '{m}' is not an HTTP method (e.g. GET, POST, HEAD)");
    }
    Ok(m.to_ascii_uppercase())
}

impl HttpArgs {
    /// The plan: URLs and settings, validated before any connection is made.
    pub fn plan(&self) -> anyhow::Result<Plan> {
        let mut urls = vec![Url::parse(&self.url)?];
        if let Some(other) = &self.compare {
            urls.push(Url::parse(other)?);
        }
        let mut modes: Vec<ConnMode> = Vec::new();
        for m in &self.mode {
            if !modes.contains(m) {
                modes.push(*m);
            }
        }
        if modes.contains(&ConnMode::Resume) && urls.iter().all(|u| !u.tls) {
            anyhow::bail!("--mode 'resume' resumes TLS sessions; it needs an https:// URL");
        }
        let body = read_body(self)?;
        let settings = Settings {
            threads: self.threads,
            connections: self.connections,
            duration_secs: self.duration,
            warmup_secs: self.warmup,
            timeout_secs: self.timeout,
            rate_per_sec: self.rate,
            request: RequestSpec {
                method: validate_method(&self.method)?,
                headers: self.headers.clone(),
                body_bytes: body.len(),
                body,
            },
            trust: if self.insecure {
                tls::Trust::Insecure
            } else if let Some(ca) = &self.cacert {
                tls::Trust::CaFile(ca.clone())
            } else {
                tls::Trust::System
            },
            insecure: self.insecure,
        };
        Ok(Plan {
            urls,
            modes,
            settings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_and_rates_are_bounded() {
        assert_eq!(parse_secs("2.5"), Ok(2.5));
        assert!(parse_secs("0").unwrap_err().contains("out of range"));
        assert_eq!(parse_secs_or_zero("0"), Ok(0.0));
        assert!(parse_secs_or_zero("-1").unwrap_err().contains("'-1'"));
        assert!(parse_rate("fast").unwrap_err().contains("'fast'"));
        assert!(parse_rate("0").is_err());
    }

    #[test]
    fn methods_are_tokens() {
        assert_eq!(validate_method("post").unwrap(), "POST");
        assert!(
            validate_method("GET /x")
                .unwrap_err()
                .to_string()
                .contains("'GET /x'")
        );
    }
}
