//! `nastune net serve`: listen, print where and how, serve until stopped.

use std::net::{SocketAddr, TcpListener};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::Context;

use crate::cli::NetServeArgs;
use crate::net::server;

pub fn serve(args: &NetServeArgs) -> anyhow::Result<ExitCode> {
    let cfg = args.plan()?;
    let addr = SocketAddr::new(args.bind, args.port);
    let listener = TcpListener::bind(addr).with_context(|| {
        format!("cannot listen on '{addr}'; is another server (iperf3 -s?) using the port? try -p")
    })?;
    crate::note!(
        "nastune net serve: listening on '{}' (TCP and UDP), {} sessions at once, auth: {}, allowed: {}",
        listener.local_addr()?,
        cfg.max_sessions,
        if cfg.psk.is_some() {
            "pre-shared key"
        } else {
            "none"
        },
        if args.allow.is_empty() {
            "loopback and private ranges".to_string()
        } else {
            format!("{} ranges", args.allow.len())
        }
    );
    let json = args.json;
    let done = Arc::new(AtomicU32::new(0));
    let limit = args.sessions;
    let counter = Arc::clone(&done);
    let report = Box::new(move |r: server::SessionReport| {
        let line = if json {
            crate::json::to_string(&SessionLine {
                schema_version: crate::net::doc::SCHEMA_VERSION,
                session: &r,
            })
            .unwrap_or_else(|e| format!("{{\"error\":\"session report: {e}\"}}"))
        } else {
            crate::report::net_text::session_line(&r)
        };
        let _ = crate::output::write_result(&format!("{line}\n"), json);
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        if limit.is_some_and(|l| n >= l) {
            std::process::exit(0);
        }
    });
    server::serve(listener, cfg, report)?;
    Ok(ExitCode::SUCCESS)
}

/// One `net serve --json` line: the session with the schema version.
#[derive(serde::Serialize)]
struct SessionLine<'a> {
    schema_version: u32,
    #[serde(flatten)]
    session: &'a server::SessionReport,
}
